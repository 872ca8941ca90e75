//! The in-process state of a task that has an executor, a subscriber or a webhook worker: its
//! single writer, a bounded tail of recent events, and a progress signal.
//!
//! Readers never block the writer: they follow the task with a cursor (a sequence number),
//! take events from the tail while they keep up, and read back from the event log when they
//! fall behind it. Memory per task is the tail plus one batch per reader, however slow.
//!
//! [`Live`] is one type with private state: the writer's state ([`Writer`]) is changed only
//! through the methods here, under the writer's lock. Two parts of it have files of their
//! own: `follow.rs`, the streams that read a live task ([`follow`]), and `outbox.rs`, its
//! push delivery worker, which a commit starts when the task has webhooks.

mod follow;
mod outbox;

pub(crate) use follow::{Follow, StreamEnd, follow};

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use prost::Message;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use trident_proto as pb;

use super::Inner;
use crate::store::{BusWatch, LoggedEvent, Scope, SharedEvent, StoreError, TaskRecord, lock_std};
use trident_core::{A2aError, ErrorKind};

/// Events a reader takes per step.
const BATCH: usize = 64;

/// Bytes of events a task's log may hold after its last stored snapshot before a commit
/// stores a new one, when the snapshot is smaller than this.
const COMPACT_MIN_BYTES: usize = 64 * 1024;

/// The latest committed position of a task.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    pub(crate) seq: u64,
    pub(crate) state: pb::TaskState,
    /// A commit of the running turn failed: the task's progress is no longer being stored
    /// ([`Live::fault`]). Readers end with the error; waiting callers get it.
    pub(crate) fault: bool,
}

/// The single writer's state. Held (through the async mutex) across the store writes of a
/// commit, so a task's events are ordered and its snapshot never races. Read through its
/// getters; changed only by its own methods and [`Live`]'s.
#[derive(Debug)]
pub(crate) struct Writer {
    record: TaskRecord,
    /// An executor is running a turn.
    running: bool,
    /// Increments per turn; a sink of an ended turn is refused.
    turn: u64,
    /// Cancels the running turn: the token [`Writer::start_turn`] was given (none before
    /// the first turn this process runs, so a task loaded to be read allocates none).
    cancel: Option<CancellationToken>,
    /// Whether the task has push configurations (`None`: not looked up yet).
    has_push: Option<bool>,
    /// A webhook worker is delivering this task's events.
    pushing: bool,
    /// `record` may be behind the store: a store write failed midway, or events another
    /// process committed were published here without reloading the task ([`Live::catch_up`]).
    /// [`Live::sync`] reloads it before the next write.
    stale: bool,
    /// Encoded bytes of the events committed since the last stored snapshot (as far as this
    /// process knows: 0 after loading the task).
    unsnapshotted: usize,
    /// Encoded size of the task when its last snapshot was stored (or loaded).
    snapshot_len: usize,
    /// Events committed but not stored yet (see [`Hold`]): applied to `record` and numbered,
    /// seen by nobody.
    held: Vec<LoggedEvent>,
    /// Encoded bytes of `held`.
    held_bytes: usize,
    /// The held events do not describe every change (a snapshot must be stored with them).
    held_snapshot: bool,
    /// The task has never been stored: nobody but its turn knows it, and it is not in the
    /// registry (see [`Live::new_unstored`]).
    unstored: bool,
    /// Which commits may be held back.
    hold: Hold,
    /// A flusher stores the turn's commits behind it ([`Live::commit_behind`]): it takes
    /// what `held` has before it stops, so commits made meanwhile need not start another.
    flying: bool,
}

/// Whether a task keeps its commits in memory instead of storing them at once. A held event is
/// in nobody's sight: it is not published (no reader, waiting caller or webhook worker sees it)
/// and the task is not registered, so no request finds it. Everything held is stored in one
/// commit before anyone could observe it: the durability promise (an event anyone has seen is
/// in the store) holds, and a turn nobody watches costs one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Every commit is stored at once.
    Off,
    /// Every commit is held: the turn runs inline on its blocking caller's task. A new task's
    /// caller alone will learn the task's id; a follow-up's task is held only while nobody
    /// else holds it in memory (no subscriber, no webhook worker, no other request), on a
    /// store no other process shares, and with no push configuration, and any request that
    /// reaches it meanwhile stores what is held before it looks ([`Live::lock_seen`]). The
    /// caller stores what is held when the turn returns ([`Live::end_hold`]); a turn that
    /// waits on something stores it as it moves to the background (`Run::leave_caller`), and
    /// commits at once from then on.
    Turn,
}

/// Held events beyond this many bytes are stored at once (memory per held task stays bounded).
const HOLD_MAX_BYTES: usize = 64 * 1024;

/// Room the first commit of a writer makes in its list of held events.
const HELD_INITIAL: usize = 4;

impl Writer {
    /// Marks the task's current turn (`record.turn`) as running, stopped by `cancel`: the
    /// turn's one token, the executor's [`trident_core::RequestContext::cancelled`]. Returns
    /// the turn.
    pub(crate) fn start_turn(&mut self, cancel: CancellationToken) -> u64 {
        self.running = true;
        self.turn = self.record.turn;
        self.cancel = Some(cancel);
        self.turn
    }

    /// Cancels the turn this process runs (or ran last) on the task, if any.
    pub(crate) fn cancel_turn(&self) {
        if let Some(cancel) = &self.cancel {
            cancel.cancel();
        }
    }

    /// The task as this process last committed or loaded it, and its position.
    pub(crate) fn record(&self) -> &TaskRecord {
        &self.record
    }

    /// The task (`record().task`).
    pub(crate) fn task(&self) -> &pb::Task {
        &self.record.task
    }

    /// Whether an executor of this process is running a turn of the task.
    pub(crate) fn running(&self) -> bool {
        self.running
    }

    /// Whether `turn` is the task's turn (the stored record's) and the one this process
    /// started last ([`Writer::start_turn`]), running or not.
    pub(crate) fn is_turn(&self, turn: u64) -> bool {
        self.turn == turn && self.record.turn == turn
    }

    /// Whether the record may be behind the store (see [`Live::sync`]).
    pub(crate) fn is_stale(&self) -> bool {
        self.stale
    }

    /// Whether events the turn committed are kept here, not stored yet, while its commits are
    /// no longer held ([`Live::commit_behind`]): a flusher is storing them, or will.
    pub(crate) fn keeps_behind(&self) -> bool {
        self.flying || (self.hold == Hold::Off && !self.held.is_empty())
    }

    /// Applies `event` to the task, as the stores rebuild it ([`crate::store::apply`]): the
    /// events a commit stores describe exactly what it changed. Commit it next.
    pub(crate) fn apply(&mut self, event: &pb::StreamResponse) {
        crate::store::apply(&mut self.record.task, event);
    }

    /// Moves the task to `status` ([`super::set_status`]) and returns the event that says so,
    /// to commit.
    pub(crate) fn set_status(
        &mut self,
        status: pb::TaskStatus,
        metadata: Option<trident_proto::wkt::Struct>,
    ) -> pb::StreamResponse {
        super::set_status(&mut self.record.task, status, metadata)
    }

    /// Takes the task out of the writer, for the last holder of a live task nobody can find
    /// any more ([`Inner::release_sole`]), which answers with it instead of a copy.
    pub(crate) fn take_task(&mut self) -> pb::Task {
        std::mem::take(&mut self.record.task)
    }

    /// No delivery worker runs for the task any more ([`outbox`]): the next commit starts one
    /// if there is something to deliver.
    fn stop_pushing(&mut self) {
        self.pushing = false;
    }

    /// The task has a push configuration now (one was just stored).
    pub(crate) fn push_configured(&mut self) {
        self.has_push = Some(true);
    }

    /// Whether the task has push configurations is unknown (one was deleted): looked up again
    /// at the next commit that may deliver.
    pub(crate) fn forget_push(&mut self) {
        self.has_push = None;
    }

    /// Numbers `events` after the record's last, keeps them in `held` (see [`Hold`]) and moves
    /// the record's position to the last; `snapshot` says they do not describe every change
    /// (a snapshot must be stored with them). Returns the new position. Each event is
    /// measured here, once ([`SharedEvent::measured`]): `held_bytes` needs its size, and the
    /// store that encodes it gets the size with it.
    fn hold_events(
        &mut self,
        events: impl ExactSizeIterator<Item = SharedEvent>,
        snapshot: bool,
    ) -> u64 {
        let prev = self.record.last_seq;
        if self.held.capacity() == 0 {
            // A held turn commits a few events (an echo: three in two commits): room for them
            // at once rather than a reallocation on the second commit.
            self.held.reserve(events.len().max(HELD_INITIAL));
        }
        let mut bytes = 0;
        self.held.extend(events.zip(prev + 1..).map(|(event, seq)| {
            bytes += event.encoded_len();
            LoggedEvent { seq, event }
        }));
        self.held_bytes += bytes;
        self.held_snapshot |= snapshot;
        let last = self.held.last().map_or(prev, |e| e.seq);
        self.record.last_seq = last;
        last
    }

    /// Takes `record` as the stored state, its task as the last snapshot.
    fn reset(&mut self, record: TaskRecord) {
        self.held.clear();
        self.held_bytes = 0;
        self.held_snapshot = false;
        self.snapshot_len = record.task.encoded_len();
        self.unsnapshotted = 0;
        self.record = record;
    }

    /// Whether a commit of `bytes` more bytes of events should store a snapshot: once the
    /// events since the last one outweigh it (and [`COMPACT_MIN_BYTES`]). Each snapshot
    /// then follows at least its predecessor's size in events, so the snapshots written add
    /// up to O(events), and a read applies at most that many bytes of events to the last one.
    fn compaction_due(&self, bytes: usize) -> bool {
        self.unsnapshotted + bytes > self.snapshot_len.max(COMPACT_MIN_BYTES)
    }
}

#[derive(Debug)]
struct Tail {
    events: VecDeque<LoggedEvent>,
    /// Sequence number the next published event gets.
    next: u64,
}

/// One live task.
#[derive(Debug)]
pub(crate) struct Live {
    scope: Scope,
    task_id: Arc<str>,
    writer: tokio::sync::Mutex<Writer>,
    /// Signalled when a turn's executor has returned.
    turn_ended: tokio::sync::Notify,
    tail: Mutex<Tail>,
    progress: watch::Sender<Progress>,
    capacity: usize,
    /// Why the task's progress could not be stored, while that lasts (see [`Live::fault`]).
    /// Boxed: a fault is rare, and every live task (one per idle stream) carries this slot.
    fault: Mutex<Option<Box<A2aError>>>,
    /// News of commits made elsewhere, waiting for the writer ([`Live::post`]), and the
    /// task's watch on the engine's bus.
    inbox: Mutex<Inbox>,
    /// The store write the flusher has in flight, and how the last one ended (see
    /// [`Live::commit_behind`]).
    flight: Mutex<Flight>,
    /// Signalled when a flusher's store write has ended and its events are published.
    landed: tokio::sync::Notify,
}

/// The flusher's store write (see [`Live::commit_behind`]).
#[derive(Debug, Default)]
struct Flight {
    /// A write is in flight: its events are taken from the writer and not published yet.
    busy: bool,
    /// How the last write ended, until the writer takes it into account ([`Live::absorb`]).
    landed: Option<Landing>,
}

/// How a flusher's store write ended.
#[derive(Debug)]
struct Landing {
    result: Result<(), StoreError>,
    /// Encoded bytes of its events.
    bytes: usize,
    /// It stored a snapshot of this encoded size.
    snapshot_len: Option<usize>,
}

/// What other processes committed to a task, as this process heard of it: the task's
/// [`Live::catch_up`] publishes it in order, from the news itself or from the log.
#[derive(Debug)]
pub(crate) enum News {
    /// These events, consecutive and in order (from an [`EventBus`](crate::store::EventBus)).
    Events(Vec<LoggedEvent>),
    /// The log holds events up to this sequence number (a store's notice).
    Upto(u64),
    /// Perhaps something: read the log to its end (a reconnected feed, the sweep).
    Unknown,
}

/// News waiting for a task's writer (see [`News`]), and its watch on the engine's bus.
#[derive(Default)]
struct Inbox {
    /// Events other processes published, in the order they came.
    events: Vec<LoggedEvent>,
    /// The log holds events up to here, which `events` may not bring (`u64::MAX`: read the
    /// log to its end).
    upto: u64,
    /// A catch-up is scheduled, and takes what is here when it runs.
    scheduled: bool,
    /// Delivers the events other processes publish for the task to this process, while the
    /// task is registered ([`Live::watch`]).
    watch: Option<BusWatch>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("events", &self.events.len())
            .field("upto", &self.upto)
            .field("scheduled", &self.scheduled)
            .field("watched", &self.watch.is_some())
            .finish()
    }
}

/// Events an inbox keeps; news beyond them is read back from the log (memory per followed
/// task stays bounded however far its catch-up falls behind).
const INBOX_MAX: usize = 1024;

impl Live {
    pub(crate) fn new(
        scope: Scope,
        record: TaskRecord,
        capacity: usize,
        recent: Vec<LoggedEvent>,
    ) -> Self {
        let task_id = record.task.id.as_str().into();
        let snapshot_len = record.task.encoded_len();
        let state = record.task.state();
        Self::with(
            scope,
            task_id,
            record,
            state,
            snapshot_len,
            capacity,
            recent,
        )
    }

    /// A live task whose progress says `state`.
    fn with(
        scope: Scope,
        task_id: Arc<str>,
        record: TaskRecord,
        state: pb::TaskState,
        snapshot_len: usize,
        capacity: usize,
        recent: Vec<LoggedEvent>,
    ) -> Self {
        let progress = Progress {
            seq: record.last_seq,
            state,
            fault: false,
        };
        let next = record.last_seq + 1;
        Self {
            scope,
            task_id,
            writer: tokio::sync::Mutex::new(Writer {
                record,
                running: false,
                turn: 0,
                cancel: None,
                has_push: None,
                pushing: false,
                stale: false,
                unsnapshotted: 0,
                snapshot_len,
                held: Vec::new(),
                held_bytes: 0,
                held_snapshot: false,
                unstored: false,
                hold: Hold::Off,
                flying: false,
            }),
            turn_ended: tokio::sync::Notify::new(),
            tail: Mutex::new(Tail {
                events: recent.into(),
                next,
            }),
            progress: watch::Sender::new(progress),
            capacity: capacity.max(1),
            fault: Mutex::new(None),
            inbox: Mutex::new(Inbox::default()),
            flight: Mutex::new(Flight::default()),
            landed: tokio::sync::Notify::new(),
        }
    }

    /// Whose task it is.
    pub(crate) fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The task's id.
    pub(crate) fn task_id(&self) -> &Arc<str> {
        &self.task_id
    }

    /// Locks the writer as it is: for the task's own turn and its bookkeeping (the writer may
    /// keep events nobody has seen yet). A request that reads or changes the task beside its
    /// turn locks it with [`Live::lock_seen`] or [`Live::lock_current`] instead.
    pub(crate) async fn lock(&self) -> tokio::sync::MutexGuard<'_, Writer> {
        self.writer.lock().await
    }

    /// Resolves once the turn that runs now has ended ([`Live::end_turn`]); enable it before
    /// letting the writer go, so the end is not missed.
    pub(crate) fn turn_ended(&self) -> tokio::sync::futures::Notified<'_> {
        self.turn_ended.notified()
    }

    /// Ends turn `turn` in `w`, if it is the one running: the task is not running any more,
    /// and whoever waits for the turn's end ([`Live::turn_ended`]) is woken.
    pub(crate) fn end_turn(&self, w: &mut Writer, turn: u64) {
        if w.turn == turn {
            w.running = false;
            self.turn_ended.notify_waiters();
        }
    }

    /// Reads the task again from the store, whatever the writer thinks of its record
    /// ([`Live::sync`] of a stale writer): for a request that must judge the stored task
    /// (recovery of an orphan).
    pub(crate) async fn reload(&self, inner: &Inner, w: &mut Writer) -> Result<(), A2aError> {
        w.stale = true;
        self.sync(inner, w).await
    }

    /// Starts a worker delivering the task's events after `from` to its webhooks, if it has
    /// any and no worker delivers them yet ([`outbox`]): a commit does after it stores, and so
    /// do a new push configuration and the sweep that resumes undelivered notifications.
    pub(crate) async fn deliver_from(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        from: u64,
    ) {
        if w.pushing || !self.has_push(inner, w).await {
            return;
        }
        w.pushing = true;
        let guard = LiveGuard::new(inner.clone(), self.clone());
        tokio::spawn(outbox::deliver_all(guard, from));
    }

    /// Whether the task's events go to webhooks: the engine delivers them and the task has
    /// push configurations (looked up once, then known to the writer; an unreadable list
    /// counts as some).
    pub(crate) async fn has_push(&self, inner: &Inner, w: &mut Writer) -> bool {
        if inner.webhooks.is_none() {
            return false;
        }
        if w.has_push.is_none() {
            let found = inner
                .stores
                .push
                .list(&self.scope, &self.task_id, None, 1)
                .await;
            w.has_push = Some(found.map(|(c, _)| !c.is_empty()).unwrap_or(true));
        }
        w.has_push == Some(true)
    }

    /// Keeps the task watched on the engine's bus until [`Live::unwatch`] (see
    /// [`Inbox::watch`]).
    pub(crate) fn watch(&self, watch: BusWatch) {
        lock_std(&self.inbox).watch = Some(watch);
    }

    /// Stops watching the task on the engine's bus (it is no longer registered). Returns the
    /// watch, for the caller to drop outside its locks.
    pub(crate) fn unwatch(&self) -> Option<BusWatch> {
        lock_std(&self.inbox).watch.take()
    }

    /// Takes `news` for the next [`Live::catch_up`]. Returns whether the caller must schedule
    /// one: none is scheduled yet (a scheduled one takes this news too, so news coming in a
    /// burst is published by one catch-up, in order).
    pub(crate) fn post(&self, news: News) -> bool {
        let mut inbox = lock_std(&self.inbox);
        match news {
            News::Events(events) => {
                if inbox.events.len() + events.len() <= INBOX_MAX {
                    inbox.events.extend(events);
                } else if let Some(last) = last_seq(&events) {
                    // Too much waiting: these are read back from the log instead.
                    inbox.upto = inbox.upto.max(last);
                }
            }
            News::Upto(seq) => inbox.upto = inbox.upto.max(seq),
            News::Unknown => inbox.upto = u64::MAX,
        }
        !std::mem::replace(&mut inbox.scheduled, true)
    }

    /// A task about to be created from `record` (`last_seq` 0, its creating events not
    /// committed yet), not stored and not registered: its first stored commit stores the
    /// snapshot and registers it (see [`Hold`]), and sets `snapshot_len`. `task_id` is
    /// `record.task.id`.
    pub(crate) fn new_unstored(
        scope: Scope,
        task_id: Arc<str>,
        record: TaskRecord,
        capacity: usize,
        hold: Hold,
        has_push: bool,
    ) -> Self {
        let submitted = pb::TaskState::Submitted;
        let mut live = Self::with(scope, task_id, record, submitted, 0, capacity, Vec::new());
        let w = live.writer.get_mut();
        w.unstored = true;
        w.hold = hold;
        w.has_push = Some(has_push);
        live
    }

    /// The error readers and waiting callers get while a fault lasts.
    pub(crate) fn fault_error(&self) -> Option<A2aError> {
        lock_std(&self.fault).as_deref().cloned()
    }

    /// A commit of the running turn failed for a reason other than a conflict (a full disk,
    /// a lost database): nobody may wait for progress that will not be stored. The turn's
    /// executor is cancelled, every reader ends with `error` and every waiting caller gets
    /// it, and a background task records the task as `FAILED` as soon as the store accepts
    /// writes again (a process that stops first leaves a lease, which the next start or
    /// another replica's sweeper recovers). Called with the writer held.
    pub(crate) fn fault(self: &Arc<Self>, inner: &Arc<Inner>, w: &mut Writer, error: A2aError) {
        w.cancel_turn();
        self.fault_turn(inner, w.unstored, error);
    }

    /// [`Live::fault`] once the turn is cancelled, for a writer that stored nothing of the task
    /// yet (`unstored`) or not.
    fn fault_turn(self: &Arc<Self>, inner: &Arc<Inner>, unstored: bool, error: A2aError) {
        let first = {
            let mut fault = lock_std(&self.fault);
            let first = fault.is_none();
            if first {
                *fault = Some(Box::new(A2aError::new(
                    ErrorKind::Internal,
                    format!(
                        "task {}: its progress could not be stored ({}); the turn was stopped",
                        self.task_id,
                        error.message()
                    ),
                )));
            }
            first
        };
        self.progress.send_modify(|p| p.fault = true);
        if first && unstored {
            // Nothing of the task was stored, so nobody has seen any of it: its waiting caller
            // gets the error and nothing is left to recover.
            tracing::error!(task = %self.task_id, error = %error, "the first commit of a task failed; stopping the turn");
        } else if first {
            tracing::error!(task = %self.task_id, error = %error, "a commit failed; stopping the turn and failing the task");
            let guard = LiveGuard::new(inner.clone(), self.clone());
            tokio::spawn(recover_fault(guard, error));
        }
    }

    /// Records the task as `FAILED` with an agent message saying `why` (a commit like any
    /// other, so subscribers and webhooks see it), then starts push delivery.
    pub(crate) async fn fail(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        why: String,
    ) -> Result<(), StoreError> {
        let task = &w.record.task;
        let message = super::agent_text(&task.id, &task.context_id, why);
        let event = w.set_status(
            pb::TaskStatus::now(pb::TaskState::Failed, Some(message)),
            None,
        );
        self.commit(inner, w, vec![event]).await?;
        Ok(())
    }

    /// Ends the task with `event` (a status update to a terminal state: a cancel) at the end
    /// of its log as the store has it, whatever another process committed since this one
    /// last read it ([`TaskStore::append_final`]): for a task whose turn another process
    /// runs, whose commits a commit conditional on the sequence number read here can lose to
    /// every time. Then catches up with the store ([`Live::sync`]: the events this process
    /// had not published, the new one included, in order), hands the new event to the other
    /// processes on the bus and starts push delivery, as [`Live::commit`] does. Returns
    /// whether the event was appended (`false`: the task had ended already; the writer's
    /// record says how). The other process's next commit conflicts, which ends its turn.
    ///
    /// [`TaskStore::append_final`]: crate::store::TaskStore::append_final
    pub(crate) async fn append_final(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        event: pb::StreamResponse,
    ) -> Result<bool, A2aError> {
        let appended = inner
            .stores
            .tasks
            .append_final(&self.scope, &self.task_id, &event)
            .await;
        // Whatever the outcome, the record here is behind the store's now.
        w.stale = true;
        let seq = appended.map_err(super::store_error)?;
        self.sync(inner, w).await?;
        let Some(seq) = seq else {
            return Ok(false);
        };
        if let Some(bus) = &inner.bus {
            let logged = [LoggedEvent {
                seq,
                event: event.into(),
            }];
            bus.publish(&self.scope, &self.task_id, &logged).await;
        }
        self.deliver_from(inner, w, seq - 1).await;
        Ok(true)
    }

    /// Begins the next turn of this existing task: `WORKING`, with `message` (a follow-up)
    /// joining the history, committed at once (the turn is visible before its executor
    /// runs). The one place a turn on an existing task begins; [`super::run::Run::spawn_existing`]
    /// then runs it. `hold` says whether the turn's commits, this one first, are held (see
    /// [`Hold`]; off again when this commit fails). Returns the sequence number of the
    /// `WORKING` event.
    pub(crate) async fn begin_turn(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        message: Option<pb::Message>,
        hold: Hold,
    ) -> Result<u64, StoreError> {
        w.hold = hold;
        w.record.turn += 1;
        let event = super::set_status(
            &mut w.record.task,
            pb::TaskStatus::now(pb::TaskState::Working, None),
            None,
        );
        // A message joining the history is a change the status event does not describe: the
        // commit stores the snapshot.
        let snapshot = message.is_some();
        if let Some(m) = message {
            w.record.task.history.push(m);
        }
        let committed = self.commit_as(inner, w, vec![event], snapshot).await;
        if committed.is_err() {
            w.hold = Hold::Off;
        }
        committed
    }

    fn clear_fault(&self) {
        *lock_std(&self.fault) = None;
        self.progress.send_modify(|p| p.fault = false);
    }

    /// Events held in the tail.
    pub(crate) fn buffered(&self) -> usize {
        lock_std(&self.tail).events.len()
    }

    pub(crate) fn progress(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// The latest committed position.
    pub(crate) fn progress_now(&self) -> Progress {
        *self.progress.borrow()
    }

    /// Commits `events`, which the caller already applied to the task in `w` with
    /// [`crate::store::apply`]: numbers them, then persists and publishes them (nobody sees an
    /// event before it is durable) and starts push delivery when the task has webhooks. The
    /// writer's [`Hold`] may keep them back instead, unseen, until a later commit or
    /// [`Live::end_hold`] stores them all at once. The store gets the events alone
    /// ([`TaskStore::append`], O(events)) unless a snapshot is due: when the events since the
    /// last one outweigh it, or when the task leaves `SUBMITTED`/`WORKING` (a finished or
    /// interrupted task is then read and listed from its snapshot alone). The lease follows
    /// the state: held while the task is in progress, dropped once it is interrupted or
    /// terminal. A `Conflict` means another process wrote the task: the writer is marked
    /// stale and the next [`Live::sync`] catches up.
    ///
    /// [`TaskStore::append`]: crate::store::TaskStore::append
    pub(crate) async fn commit(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        events: Vec<pb::StreamResponse>,
    ) -> Result<u64, StoreError> {
        self.commit_as(inner, w, events, false).await
    }

    async fn commit_as(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        events: Vec<pb::StreamResponse>,
        snapshot: bool,
    ) -> Result<u64, StoreError> {
        let last = w.hold_events(events.into_iter().map(SharedEvent::measured), snapshot);
        self.store_unless_held(inner, w).await?;
        Ok(last)
    }

    /// [`Live::commit`] of one event already shared (and measured), or of none: what `w`
    /// holds is stored unless held.
    pub(crate) async fn commit_shared(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        event: Option<SharedEvent>,
    ) -> Result<u64, StoreError> {
        let last = w.hold_events(event.into_iter(), false);
        self.store_unless_held(inner, w).await?;
        Ok(last)
    }

    /// Commits a new task's first events, as [`Live::commit`] does: `submitted`, the task as
    /// submitted (a snapshot event, perhaps held encoded: [`SharedEvent::task_snapshot`]),
    /// then `first`, which the caller applied to the task in `w`.
    pub(crate) async fn commit_creation(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        submitted: SharedEvent,
        first: pb::StreamResponse,
    ) -> Result<u64, StoreError> {
        let events = [submitted, SharedEvent::measured(first)];
        let last = w.hold_events(events.into_iter(), false);
        self.store_unless_held(inner, w).await?;
        Ok(last)
    }

    /// Stores what `w` holds unless its [`Hold`] keeps it (and it stays within
    /// [`HOLD_MAX_BYTES`]).
    async fn store_unless_held(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
    ) -> Result<(), StoreError> {
        if w.hold == Hold::Off || w.held_bytes > HOLD_MAX_BYTES {
            self.store(inner, w, true).await?;
        }
        Ok(())
    }

    /// Commits an event of the running turn, which the caller applied to the task in `w`, as
    /// [`Live::commit`] does, but without waiting for the store when the task allows
    /// (write-behind): the event is numbered and kept in `held`, unseen, and a flusher task
    /// stores what is kept, one store write at a time, each taking every event kept while
    /// the previous one was in flight; it publishes them once stored. An agent streaming
    /// events thus has them committed in batches as large as the store is slow, instead of
    /// waiting for a round trip per event. Anyone else who locks the writer to look at the
    /// task or change it ([`Live::lock_seen`], [`Live::commit`], the turn's end) first waits
    /// for the write in flight and stores what is kept: nobody sees an event before it is
    /// durable, and a task's events are stored and published in order.
    ///
    /// Only on a shared store (where a write is a round trip to a database), for a registered
    /// task in progress without webhooks and holding nothing back (see [`Hold`]); otherwise
    /// it is [`Live::commit`]. A store write that fails is the next commit's error (its
    /// events are lost with the turn: a conflict ends the turn, anything else faults the task
    /// as [`Live::commit`]'s caller would). Call it when [`Live::may_commit_behind`] says so.
    /// Returns whether the caller should wait for the flusher ([`Live::wait_flight`], with the
    /// writer unlocked) before its next event: the events kept exceed [`HOLD_MAX_BYTES`]
    /// (memory per task stays bounded). Not `async`: the agent's per-event future stays small.
    pub(crate) fn commit_behind(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        event: pb::StreamResponse,
    ) -> Result<bool, StoreError> {
        // A write that failed fails this commit, as a write of its own would have.
        self.absorb(w)?;
        w.hold_events(std::iter::once(SharedEvent::measured(event)), false);
        if !w.flying {
            w.flying = true;
            let guard = LiveGuard::new(inner.clone(), self.clone());
            tokio::spawn(fly(guard));
        }
        Ok(w.held_bytes > HOLD_MAX_BYTES)
    }

    /// Whether the turn's next event may be committed behind it ([`Live::commit_behind`]): on
    /// a store that asks for it (a shared one, or one whose commit is a disk flush:
    /// `TaskStore::commits_behind`), for a registered task in progress without webhooks,
    /// holding nothing back, whose writer is current and not faulted.
    pub(crate) fn may_commit_behind(&self, inner: &Inner, w: &Writer) -> bool {
        inner.stores.tasks.commits_behind()
            && w.hold == Hold::Off
            && !w.unstored
            && !w.stale
            && w.has_push == Some(false)
            && w.record.task.state().is_in_progress()
            && lock_std(&self.fault).is_none()
    }

    /// Waits until no flusher's write is in flight (see [`Live::commit_behind`]).
    pub(crate) async fn wait_flight(&self) {
        loop {
            let landed = self.landed.notified();
            tokio::pin!(landed);
            landed.as_mut().enable();
            if !lock_std(&self.flight).busy {
                return;
            }
            landed.await;
        }
    }

    /// Waits for the flusher's write in flight, if any, and takes how it ended into account
    /// ([`Live::absorb`]).
    async fn settle(&self, w: &mut Writer) -> Result<(), StoreError> {
        self.wait_flight().await;
        self.absorb(w)
    }

    /// Takes how the flusher's last write ended into account: the snapshot bookkeeping of a
    /// write that stored, or, of one that failed, its error, with the writer marked stale (the
    /// flusher has already ended the turn: see [`fly`]).
    fn absorb(&self, w: &mut Writer) -> Result<(), StoreError> {
        let Some(landing) = lock_std(&self.flight).landed.take() else {
            return Ok(());
        };
        match landing.result {
            Ok(()) => {
                match landing.snapshot_len {
                    Some(len) => {
                        w.snapshot_len = len;
                        w.unsnapshotted = 0;
                    }
                    None => w.unsnapshotted += landing.bytes,
                }
                Ok(())
            }
            Err(e) => {
                w.stale = true;
                Err(e)
            }
        }
    }

    /// Stores what the turn committed behind ([`Live::commit_behind`]) and waits for it: for
    /// whoever is about to look at the task. A conflict leaves the writer stale (the turn has
    /// ended; [`Live::sync`] reloads the task); any other failure faults the task.
    async fn drain(self: &Arc<Self>, inner: &Arc<Inner>, w: &mut Writer) -> Result<(), A2aError> {
        // `store` waits for the write in flight first.
        let stored = if w.hold == Hold::Off {
            self.store(inner, w, true).await
        } else {
            self.settle(w).await
        };
        match stored {
            Ok(()) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => {
                let error = super::store_error(e);
                self.fault(inner, w, error.clone());
                Err(error)
            }
        }
    }

    /// Locks the writer for a request that reads or changes the task beside its running turn
    /// (GetTask, CancelTask, SubscribeToTask, a push configuration, another message, the
    /// blocking caller answering, recovery): someone observes the task from now on, so what
    /// the turn holds is stored first ([`Live::end_hold_detached`]), and it holds nothing
    /// more (see [`Hold`]). When that store fails, the turn is stopped ([`Live::fault`]) and
    /// the error returned.
    pub(crate) async fn lock_seen(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
    ) -> Result<tokio::sync::MutexGuard<'_, Writer>, A2aError> {
        loop {
            let mut w = self.writer.lock().await;
            if w.hold == Hold::Off {
                if w.flying || !w.held.is_empty() {
                    // What the turn committed behind it is stored before anyone looks.
                    self.drain(inner, &mut w).await?;
                }
                return Ok(w);
            }
            drop(w);
            self.end_hold_detached(inner).await?;
        }
    }

    /// [`Live::lock_seen`], with the writer's record current ([`Live::sync`]): for a request
    /// that answers from the record, or writes after it.
    pub(crate) async fn lock_current(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
    ) -> Result<tokio::sync::MutexGuard<'_, Writer>, A2aError> {
        let mut w = self.lock_seen(inner).await?;
        self.sync(inner, &mut w).await?;
        Ok(w)
    }

    /// Stores what the turn holds ([`Live::end_hold`]) on a task of its own and waits for it.
    /// The request that asks may go away meanwhile (its future dropped when its client
    /// disconnects): stopped halfway, the store would have taken the held events from the
    /// writer and never published them — perhaps never stored them — while the turn's caller
    /// waits for them. When the store fails, the turn is stopped ([`Live::fault`]) and the
    /// error returned.
    pub(crate) async fn end_hold_detached(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
    ) -> Result<(), A2aError> {
        // A guard, not a bare reference: when the asker has gone, the store's task is the
        // last to hold the live task and lets it go from the registry as it ends.
        let guard = LiveGuard::new(inner.clone(), self.clone());
        let stored = tokio::spawn(async move {
            let (inner, live) = (guard.inner(), guard.live());
            let mut w = live.writer.lock().await;
            live.end_hold(inner, &mut w).await
        });
        stored.await.unwrap_or_else(|_| {
            Err(A2aError::internal(
                "storing the events the turn held stopped before it ended",
            ))
        })
    }

    /// Stops holding commits (someone may observe the task from now on) and stores what is
    /// held. When that store fails, the turn is stopped ([`Live::fault`]: its events were
    /// taken from the writer and cannot be stored any more) and the error returned.
    pub(crate) async fn end_hold(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
    ) -> Result<(), A2aError> {
        self.store_held_or_stop(inner, w, true).await
    }

    /// [`Live::end_hold`] for the blocking caller of a new task whose turn ran inline to its
    /// end and who answers with the task and lets it go: a task stored for the first time is
    /// not registered. Nothing runs it any more (its executor returned), nothing pushes (an
    /// inline turn has no webhook) and only this caller knows its id, so registering it
    /// would only be undone when the caller drops it: requests that come later read it
    /// from the store, as they would once it was released.
    pub(crate) async fn end_hold_finished(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
    ) -> Result<(), A2aError> {
        self.store_held_or_stop(inner, w, false).await
    }

    /// Ends the hold and stores what is held ([`Live::store`]); stops the turn when that
    /// fails (see [`Live::end_hold`]).
    async fn store_held_or_stop(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        register: bool,
    ) -> Result<(), A2aError> {
        w.hold = Hold::Off;
        match self.store(inner, w, register).await {
            Ok(()) => Ok(()),
            // Another process wrote the task (on a shared store, whose turns commit behind
            // them: a cancel elsewhere): this turn is over, and what it kept was never seen.
            // The writer is stale; whoever looks next reloads the task.
            Err(StoreError::Conflict) if !w.unstored => {
                w.cancel_turn();
                Ok(())
            }
            Err(e) => {
                let error = super::store_error(e);
                self.fault(inner, w, error.clone());
                Err(error)
            }
        }
    }

    /// Stores, publishes and delivers the held events (see [`Live::commit`]). A task stored
    /// for the first time is registered (unless `register` is false, see
    /// [`Live::end_hold_finished`]), and holds no more commits: requests can find it now.
    /// With an [`EventBus`](crate::store::EventBus), the stored events then go to the other
    /// processes too: only once stored (an event is durable before anyone sees it), and under
    /// the writer's lock (the bus gets each task's events in order).
    async fn store(
        self: &Arc<Self>,
        inner: &Arc<Inner>,
        w: &mut Writer,
        register: bool,
    ) -> Result<(), StoreError> {
        if w.flying {
            // Every write of the task waits for the flusher's write in flight (see
            // [`Live::commit_behind`]): the events held here follow its events.
            Box::pin(self.settle(w)).await?;
        }
        let Some(first) = w.held.first().map(|e| e.seq) else {
            return Ok(());
        };
        let logged = std::mem::take(&mut w.held);
        let bytes = std::mem::take(&mut w.held_bytes);
        let prev = first - 1;
        let state = w.record.task.state();
        let settles = state != self.progress.borrow().state && !state.is_in_progress();
        let snapshot = std::mem::take(&mut w.held_snapshot)
            || w.unstored
            || settles
            || w.compaction_due(bytes);
        if state.is_in_progress() && inner.clock_unmeasured() {
            // Boxed: a cold branch (once per process) whose future, inline, would size every
            // commit's.
            Box::pin(inner.sync_clock()).await;
        }
        w.record.lease = inner.lease_for(state);
        let tasks = &inner.stores.tasks;
        let stored = if snapshot {
            let expected = (!w.unstored).then_some(prev);
            tasks
                .commit(&self.scope, &w.record, expected, &logged)
                .await
        } else {
            tasks.append(&self.scope, &w.record, prev, &logged).await
        };
        if let Err(e) = stored {
            w.stale = true;
            return Err(e);
        }
        if snapshot {
            // Only the compaction of later commits reads it: a terminal task takes no more
            // events (as a rule; 0 then merely compacts by `COMPACT_MIN_BYTES`), so its
            // encoding is not measured again.
            w.snapshot_len = if state.is_terminal() {
                0
            } else {
                w.record.task.encoded_len()
            };
            w.unsnapshotted = 0;
        } else {
            w.unsnapshotted += bytes;
        }
        if w.unstored {
            w.unstored = false;
            w.hold = Hold::Off;
            if register {
                inner.register(self);
            }
        }
        if register {
            self.publish_stored(inner, logged, state).await;
        } else {
            // Stored for its blocking caller alone (see [`Live::end_hold_finished`]): no
            // reader can ever follow this live task, so its events skip the tail (and the bus:
            // no other process can know the task yet); its progress still says how far it
            // got (the caller's wait reads it).
            let last = last_seq(&logged);
            if let Some(last) = last {
                lock_std(&self.tail).next = last + 1;
            }
            self.advance(last, state);
        }
        if state.is_terminal() && lock_std(&self.fault).is_some() {
            // The task was stored as ended after all (the store came back): nothing waits.
            self.clear_fault();
        }
        self.deliver_from(inner, w, prev).await;
        Ok(())
    }

    /// Publishes events this process just stored, leaving the task in `state`: here first
    /// (local readers need not wait for the bus), then, with an
    /// [`EventBus`](crate::store::EventBus), to the other processes. The caller holds the
    /// task's only store write at the time (the writer's lock, or the flusher's flight), so
    /// the bus gets each task's events in order.
    async fn publish_stored(&self, inner: &Inner, logged: Vec<LoggedEvent>, state: pb::TaskState) {
        match &inner.bus {
            Some(bus) => {
                self.publish(logged.clone(), state);
                bus.publish(&self.scope, &self.task_id, &logged).await;
            }
            None => self.publish(logged, state),
        }
    }

    /// Publishes what other processes committed to the task since the last event published
    /// here, as the news posted to it says ([`Live::post`]): the events the news brings, as
    /// they are, and what it does not bring (a gap before them, a notice that only says how
    /// far the log goes) read from the log by sequence number. Never an event twice, never out
    /// of order, and never the whole task: the state readers see follows from the events. The
    /// writer's record is not read again, only marked stale, so the next write reloads it
    /// first ([`Live::sync`]); except when this process runs the task's turn, which another
    /// process may have cancelled or superseded: then the task is reloaded at once, and the
    /// turn stopped if so (rare: a task is written elsewhere while its turn runs here only to
    /// end or supersede it).
    pub(crate) async fn catch_up(&self, inner: &Inner, w: &mut Writer) -> Result<(), A2aError> {
        if w.flying {
            // This process's own write goes first (it may be before the news).
            let _ = self.settle(w).await;
        }
        let (events, mut upto) = {
            let mut inbox = lock_std(&self.inbox);
            inbox.scheduled = false;
            (
                std::mem::take(&mut inbox.events),
                std::mem::take(&mut inbox.upto),
            )
        };
        let before = self.published();
        let mut state = self.progress.borrow().state;
        let caught = self
            .publish_news(inner, events, &mut upto, &mut state)
            .await;
        if let Err(e) = caught {
            // What is left is read from the log by the next catch-up (the sweep's at latest).
            let mut inbox = lock_std(&self.inbox);
            inbox.upto = inbox.upto.max(upto);
            drop(inbox);
            if self.published() > before {
                w.stale = true;
            }
            return Err(e);
        }
        if self.published() > before {
            w.stale = true;
            if w.running {
                self.sync(inner, w).await?;
            }
        }
        Ok(())
    }

    /// [`Live::catch_up`]'s publishing: `events` as they are, after the log's events before
    /// them, then the log's up to `upto`. On failure `upto` says how far the news went.
    async fn publish_news(
        &self,
        inner: &Inner,
        events: Vec<LoggedEvent>,
        upto: &mut u64,
        state: &mut pb::TaskState,
    ) -> Result<(), A2aError> {
        // Whatever the events do not bring is in the log.
        *upto = (*upto).max(last_seq(&events).unwrap_or(0));
        let mut pos = self.published();
        let mut batch: Vec<LoggedEvent> = Vec::new();
        for e in events {
            if e.seq <= pos {
                // Published already (this process's own, or a repeat).
                continue;
            }
            if e.seq > pos + 1 {
                // A gap (the bus lost something): the log has it.
                self.publish(std::mem::take(&mut batch), *state);
                pos = self.publish_log(inner, pos, e.seq - 1, state).await?;
                if e.seq != pos + 1 {
                    // The log does not reach the event (yet): the rest is read from it below.
                    break;
                }
            }
            *state = state_after(*state, &e.event);
            pos = e.seq;
            batch.push(e);
        }
        self.publish(batch, *state);
        if *upto > pos {
            self.publish_log(inner, pos, *upto, state).await?;
        }
        Ok(())
    }

    /// Publishes the logged events after `pos` up to `upto` (or the log's end, if sooner);
    /// `state` is the task's state at `pos`, and after them on return. Returns the last
    /// sequence number published.
    async fn publish_log(
        &self,
        inner: &Inner,
        mut pos: u64,
        upto: u64,
        state: &mut pb::TaskState,
    ) -> Result<u64, A2aError> {
        while pos < upto {
            let mut events = inner
                .stores
                .events
                .read(&self.scope, &self.task_id, pos, BATCH)
                .await
                .map_err(super::store_error)?;
            let full = events.len() == BATCH;
            events.retain(|e| e.seq <= upto);
            let Some(last) = last_seq(&events) else {
                break;
            };
            *state = events.iter().fold(*state, |s, e| state_after(s, &e.event));
            self.publish(events, *state);
            pos = last;
            if !full {
                // The log ended there.
                break;
            }
        }
        Ok(pos)
    }

    /// Catches up with writes made elsewhere (another process, or a write whose outcome is
    /// unknown): when the writer is stale, reloads the snapshot, publishes the events this
    /// process has not seen, and stops a local turn that another process superseded or ended.
    pub(crate) async fn sync(&self, inner: &Inner, w: &mut Writer) -> Result<(), A2aError> {
        if w.flying {
            // A failed write marks the writer stale (and is reloaded over below); one that
            // stored is published before the log is read.
            let _ = self.settle(w).await;
        }
        if !w.stale {
            return Ok(());
        }
        let record = inner
            .stores
            .tasks
            .get(&self.scope, &self.task_id)
            .await
            .map_err(super::store_error)?
            .ok_or_else(|| A2aError::task_not_found(&self.task_id))?;
        let mut published = self.published();
        while published < record.last_seq {
            let events = inner
                .stores
                .events
                .read(&self.scope, &self.task_id, published, BATCH)
                .await
                .map_err(super::store_error)?;
            let Some(last) = events.last().map(|e| e.seq.min(record.last_seq)) else {
                break;
            };
            let events: Vec<_> = events.into_iter().filter(|e| e.seq <= last).collect();
            let state = if last == record.last_seq {
                record.task.state()
            } else {
                let state = self.progress.borrow().state;
                events.iter().fold(state, |s, e| state_after(s, &e.event))
            };
            self.publish(events, state);
            published = last;
        }
        if w.running && (record.turn != w.turn || record.task.state().is_terminal()) {
            w.cancel_turn();
        }
        w.reset(record);
        w.stale = false;
        Ok(())
    }

    /// Sequence number of the last event published here.
    pub(crate) fn published(&self) -> u64 {
        lock_std(&self.tail).next - 1
    }

    fn publish(&self, events: Vec<LoggedEvent>, state: pb::TaskState) {
        let Some(last) = last_seq(&events) else {
            return;
        };
        {
            let mut tail = lock_std(&self.tail);
            for e in events {
                if tail.events.len() == self.capacity {
                    tail.events.pop_front();
                }
                tail.events.push_back(e);
            }
            tail.next = last + 1;
        }
        self.advance(Some(last), state);
    }

    /// Moves the progress to `last` (when some event was committed) and `state`. Receivers
    /// are woken only when there are any: a receiver subscribing meanwhile reads the value
    /// after this write (the write holds the value's lock), so it misses nothing.
    fn advance(&self, last: Option<u64>, state: pb::TaskState) {
        let Some(last) = last else {
            return;
        };
        self.progress.send_if_modified(|p| {
            p.seq = last;
            p.state = state;
            self.progress.receiver_count() > 0
        });
    }

    /// Events after `cursor` from the tail, or `None` when the tail no longer reaches back
    /// that far (the reader must read the log).
    fn take_from_tail(&self, cursor: u64, out: &mut VecDeque<LoggedEvent>) -> bool {
        let tail = lock_std(&self.tail);
        let first = tail.next - tail.events.len() as u64;
        if cursor + 1 < first {
            return false;
        }
        let skip = usize::try_from(cursor + 1 - first).unwrap_or(usize::MAX);
        out.extend(tail.events.iter().skip(skip).take(BATCH).cloned());
        true
    }

    /// The next events after `cursor`, from the tail or the log; empty when caught up.
    async fn read_after(
        &self,
        inner: &Inner,
        cursor: u64,
        out: &mut VecDeque<LoggedEvent>,
    ) -> Result<(), A2aError> {
        if !self.take_from_tail(cursor, out) {
            let events = inner
                .stores
                .events
                .read(&self.scope, &self.task_id, cursor, BATCH)
                .await
                .map_err(super::store_error)?;
            out.extend(events);
        }
        Ok(())
    }
}

/// Sequence number of the last of `events`.
fn last_seq(events: &[LoggedEvent]) -> Option<u64> {
    events.last().map(|e| e.seq)
}

/// The task's state after `event`, `state` before it: what [`crate::store::apply`] does to
/// the state, without the task.
fn state_after(state: pb::TaskState, event: &pb::StreamResponse) -> pb::TaskState {
    use pb::stream_response::Payload;
    match &event.payload {
        Some(Payload::Task(t)) => t.state(),
        Some(Payload::StatusUpdate(u)) => u.status.as_ref().map_or(state, |s| {
            pb::TaskState::try_from(s.state).unwrap_or(pb::TaskState::Unspecified)
        }),
        _ => state,
    }
}

/// Keeps a [`Live`] registered while held; the last holder's drop unregisters it.
pub(crate) struct LiveGuard {
    inner: Arc<Inner>,
    /// Only the drop takes it, to let it go under the registry's lock ([`Inner::release`]).
    live: Option<Arc<Live>>,
}

impl LiveGuard {
    pub(crate) fn new(inner: Arc<Inner>, live: Arc<Live>) -> Self {
        Self {
            inner,
            live: Some(live),
        }
    }

    /// The engine the task is registered with.
    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// The task.
    pub(crate) fn live(&self) -> &Arc<Live> {
        self.live
            .as_ref()
            .expect("a guard holds its task until it is dropped")
    }

    /// Another guard of the same task.
    pub(crate) fn another(&self) -> Self {
        Self::new(self.inner.clone(), self.live().clone())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            self.inner.release(live);
        }
    }
}

/// Records a faulted task as `FAILED` once the store accepts writes again: retries with
/// backoff (100 ms doubling to 5 s) while the process runs. Ends when the task is terminal,
/// however it got there.
async fn recover_fault(guard: LiveGuard, cause: A2aError) {
    let (inner, live) = (guard.inner(), guard.live());
    let mut backoff = std::time::Duration::from_millis(100);
    loop {
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
        let mut w = live.writer.lock().await;
        if let Err(e) = live.sync(inner, &mut w).await {
            tracing::debug!(task = %live.task_id, error = %e, "store still unavailable");
            continue;
        }
        if w.record.task.state().is_terminal() {
            live.clear_fault();
            return;
        }
        let why = format!(
            "the task failed: its progress could not be stored ({})",
            cause.message()
        );
        match live.fail(inner, &mut w, why).await {
            Ok(()) => {
                tracing::info!(task = %live.task_id, "the store accepts writes again; the task is FAILED");
                live.clear_fault();
                return;
            }
            Err(e) => {
                // The failed commit left the writer stale: the next attempt re-reads the task.
                tracing::debug!(task = %live.task_id, error = %e, "store still refuses writes");
            }
        }
    }
}

/// The flusher of a task's commits behind its turn (see [`Live::commit_behind`]): stores what
/// the writer keeps, one write at a time and each write all that is kept, and publishes it
/// once stored, until nothing is kept. It takes the writer's lock only to take the events
/// (and to settle the previous write), never across a write, so the turn goes on committing
/// meanwhile; whoever else locks the writer waits for the write in flight
/// ([`Live::wait_flight`]) and stores the rest itself.
async fn fly(guard: LiveGuard) {
    let (inner, live) = (guard.inner(), guard.live());
    loop {
        let (logged, record, snapshot, bytes, state, cancel) = {
            let mut w = live.writer.lock().await;
            if live.absorb(&mut w).is_err()
                || w.held.is_empty()
                || w.hold != Hold::Off
                || w.stale
                || w.unstored
            {
                w.flying = false;
                return;
            }
            let logged = std::mem::take(&mut w.held);
            let bytes = std::mem::take(&mut w.held_bytes);
            let state = w.record.task.state();
            let snapshot = std::mem::take(&mut w.held_snapshot)
                || !state.is_in_progress()
                || w.compaction_due(bytes);
            w.record.lease = inner.lease_for(state);
            // Only the small columns unless a snapshot is due (`TaskStore::append` reads no
            // more): a copy of the whole task per write would cost O(task) per batch.
            let record = if snapshot {
                w.record.clone()
            } else {
                TaskRecord {
                    task: pb::Task {
                        id: w.record.task.id.clone(),
                        context_id: w.record.task.context_id.clone(),
                        status: w.record.task.status.clone(),
                        ..Default::default()
                    },
                    last_seq: w.record.last_seq,
                    turn: w.record.turn,
                    lease: w.record.lease.clone(),
                }
            };
            lock_std(&live.flight).busy = true;
            (logged, record, snapshot, bytes, state, w.cancel.clone())
        };
        let prev = logged.first().map_or(0, |e| e.seq - 1);
        let tasks = &inner.stores.tasks;
        let stored = if snapshot {
            tasks
                .commit(&live.scope, &record, Some(prev), &logged)
                .await
        } else {
            tasks.append(&live.scope, &record, prev, &logged).await
        };
        match &stored {
            Ok(()) => live.publish_stored(inner, logged, state).await,
            Err(StoreError::Conflict) => {
                // Another process wrote the task (a cancel, a newer turn): this turn is over.
                if let Some(cancel) = &cancel {
                    cancel.cancel();
                }
            }
            Err(e) => {
                if let Some(cancel) = &cancel {
                    cancel.cancel();
                }
                live.fault_turn(inner, false, super::store_error(e.clone()));
            }
        }
        let snapshot_len = (snapshot && stored.is_ok()).then(|| {
            if state.is_terminal() {
                0
            } else {
                record.task.encoded_len()
            }
        });
        {
            let mut flight = lock_std(&live.flight);
            flight.busy = false;
            flight.landed = Some(Landing {
                result: stored,
                bytes,
                snapshot_len,
            });
        }
        live.landed.notify_waiters();
    }
}
