//! Persistence traits ([`TaskStore`], [`EventLog`], [`PushConfigStore`]). The in-memory
//! implementation lives in `trident-engine`, the durable ones in `trident-store`; all must pass
//! the contract suite of `trident-testkit`.
//!
//! Every access is scoped by a [`Scope`] (tenant, owner): a store never returns a record of
//! another scope, so a caller cannot see, list, cancel or subscribe to another principal's task.

use std::sync::Arc;

use trident_proto as pb;

pub use crate::context::Generation;
pub use event::{EventKind, SharedEvent};

mod event;

/// Whose data a call may touch: a tenant and an owning principal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The tenant ("" when none).
    pub tenant: Arc<str>,
    /// The owning principal ("" for anonymous callers).
    pub owner: Arc<str>,
}

impl Scope {
    /// A scope.
    pub fn new(tenant: impl Into<Arc<str>>, owner: impl Into<Arc<str>>) -> Self {
        Self {
            tenant: tenant.into(),
            owner: owner.into(),
        }
    }

    /// The scope of `tenant` and `owner` as a request names them: an empty one (no tenant, an
    /// anonymous caller) is one shared string rather than an allocation per request.
    pub fn of(tenant: &str, owner: &str) -> Self {
        fn shared(s: &str) -> Arc<str> {
            static EMPTY: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| "".into());
            if s.is_empty() {
                EMPTY.clone()
            } else {
                s.into()
            }
        }
        Self {
            tenant: shared(tenant),
            owner: shared(owner),
        }
    }
}

/// A stored task: its snapshot, the sequence number of the last event applied to it (also its
/// version for optimistic concurrency), its turn counter and who executes it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The task as of `last_seq`.
    pub task: pb::Task,
    /// Sequence number of the last event included in `task`.
    pub last_seq: u64,
    /// Turns started on the task (1 for the creating message; each follow-up adds one). A
    /// writer holding an older turn has been superseded.
    pub turn: u64,
    /// The process executing the current turn, while the task is `SUBMITTED` or `WORKING`.
    pub lease: Option<Lease>,
}

impl TaskRecord {
    /// A record of a new task at `last_seq`, turn 1, without a lease.
    pub fn new(task: pb::Task, last_seq: u64) -> Self {
        Self {
            task,
            last_seq,
            turn: 1,
            lease: None,
        }
    }
}

/// A claim by one process (a node) to execute a task, valid until `until_ms` unless renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The node's id (unique per process start).
    pub node: Arc<str>,
    /// Expiry in milliseconds since the Unix epoch, by the store's clock
    /// ([`TaskStore::clock_ms`]).
    pub until_ms: i64,
}

/// Milliseconds since the Unix epoch, now, by this process's clock.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .saturating_add(CLOCK_SKEW_MS.load(std::sync::atomic::Ordering::Relaxed))
}

/// How far [`now_ms`] is shifted from the system clock in this process ([`skew_clock`]).
static CLOCK_SKEW_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// A test seam: shifts [`now_ms`] by `ms` for this whole process, as if its system clock were
/// that far ahead (behind, when negative). The cluster tests run a replica whose clock is
/// wrong with it (the `trident` binary reads `TRIDENT_TEST_CLOCK_SKEW_MS`); never useful in
/// production.
#[doc(hidden)]
pub fn skew_clock(ms: i64) {
    CLOCK_SKEW_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// What a shared store, or the [`EventBus`] beside it, tells a process about commits made by
/// other processes.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// Another process committed task `task_id` up to event `seq`.
    Committed {
        /// The task's scope.
        scope: Scope,
        /// The task.
        task_id: String,
        /// Its last sequence number after the commit.
        seq: u64,
    },
    /// Another process committed these events of task `task_id`: consecutive sequence
    /// numbers, in order, already durable in the shared store. Carried by an [`EventBus`], so
    /// that a process following the task publishes them without reading the store (it reads
    /// the log only to fill a gap before the first of them).
    Events {
        /// The task's scope.
        scope: Scope,
        /// The task.
        task_id: String,
        /// The events, in order.
        events: Vec<LoggedEvent>,
    },
    /// Notices may have been missed (the feed reconnected): re-read every task of interest.
    Resync,
}

/// A stream of [`Notice`]s.
pub type NoticeFeed = futures::stream::BoxStream<'static, Notice>;

/// One event of a task's ordered log.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedEvent {
    /// Per-task sequence number, starting at 1, without gaps.
    pub seq: u64,
    /// The event (shared; its encoded size carried once measured).
    pub event: SharedEvent,
}

/// Position in the ListTasks order (status timestamp descending, then task id ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    /// Status timestamp in nanoseconds since the epoch (0 when the task has none).
    pub timestamp: i128,
    /// Task id.
    pub id: String,
}

impl ListCursor {
    /// The cursor of a task.
    pub fn of(task: &pb::Task) -> Self {
        Self {
            timestamp: status_nanos(task),
            id: task.id.clone(),
        }
    }

    /// Whether `task` comes strictly after this cursor in list order.
    pub fn precedes(&self, task: &pb::Task) -> bool {
        self.precedes_key(status_nanos(task), &task.id)
    }

    /// Whether the task with status timestamp `timestamp` and id `id` comes strictly after
    /// this cursor in list order.
    pub fn precedes_key(&self, timestamp: i128, id: &str) -> bool {
        timestamp < self.timestamp || (timestamp == self.timestamp && id > self.id.as_str())
    }
}

/// Status timestamp of a task in nanoseconds (0 when unset).
pub fn status_nanos(task: &pb::Task) -> i128 {
    task.status
        .as_ref()
        .and_then(|s| s.timestamp.as_ref())
        .map_or(0, |t| t.unix_nanos())
}

/// Applies one event of a task's log to the task: what the engine does to its task when it
/// publishes the event, and how a store rebuilds a task from an older snapshot and the events
/// logged after it ([`TaskStore::append`]).
///
/// - a `Task` replaces the task;
/// - a status update sets the status, and the message of the status it replaces moves into
///   the history (so a question asked at `INPUT_REQUIRED` sits before the answer);
/// - an artifact update adds the artifact, or replaces the one with the same id, or with
///   `append` adds its parts to that one (adds it when there is none);
/// - a message (never in a task's log) changes nothing.
///
/// Every event but a message also moves the task's `generation` (the A2A 1.1 preview's
/// counter) on by one, a `Task` from the generation of the task it replaces (0 for none). A
/// task's log holds nothing but such events, numbered from 1 without gaps, so a task's
/// generation is the sequence number of the last event it includes
/// ([`TaskRecord::last_seq`]), and an event's is its own sequence number. The events logged
/// never carry a generation themselves: they are what 1.0 callers read.
///
/// Costs O(event), not O(task): an appended chunk copies the chunk's parts only.
pub fn apply(task: &mut pb::Task, event: &pb::StreamResponse) {
    use pb::stream_response::Payload;
    match &event.payload {
        Some(Payload::Task(t)) => {
            let generation = task.generation;
            *task = t.clone();
            task.generation = generation;
        }
        Some(Payload::StatusUpdate(u)) => {
            if let Some(status) = &u.status
                && let Some(previous) = task.status.replace(status.clone()).and_then(|s| s.message)
            {
                task.history.push(previous);
            }
        }
        Some(Payload::ArtifactUpdate(u)) => {
            if let Some(artifact) = &u.artifact {
                match task
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == artifact.artifact_id)
                {
                    Some(existing) if u.append => {
                        existing.parts.extend(artifact.parts.iter().cloned());
                    }
                    Some(existing) => *existing = artifact.clone(),
                    None => task.artifacts.push(artifact.clone()),
                }
            }
        }
        Some(Payload::Message(_)) | None => return,
    }
    task.generation += 1;
}

/// The terminal state `event` moves a task to, as [`TaskStore::append_final`] takes it: a
/// status update to a terminal state, or a `Backend` error naming what it is instead.
pub fn final_state(event: &pb::StreamResponse) -> Result<pb::TaskState, StoreError> {
    use pb::stream_response::Payload;
    let state = match &event.payload {
        Some(Payload::StatusUpdate(u)) => u.status.as_ref().map(pb::TaskStatus::state),
        _ => None,
    };
    match state {
        Some(s) if s.is_terminal() => Ok(s),
        _ => Err(StoreError::Backend(
            "append_final takes a status update to a terminal state".into(),
        )),
    }
}

/// Whether `events` continue a log that ends at `stored` without a gap and end at `last`: the
/// shape [`TaskStore::commit`] requires.
pub fn events_continue(stored: u64, last: u64, events: &[LoggedEvent]) -> bool {
    events.iter().zip(stored + 1..).all(|(e, seq)| e.seq == seq)
        && stored + events.len() as u64 == last
}

/// Filters and page of a task listing.
#[derive(Debug, Clone, Default)]
pub struct TaskQuery {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<pb::TaskState>,
    /// Only tasks whose status timestamp is at or after this instant (nanoseconds).
    pub updated_since: Option<i128>,
    /// Start after this position.
    pub after: Option<ListCursor>,
    /// Page size (at least 1).
    pub limit: usize,
}

impl TaskQuery {
    /// Whether `task` passes the filters (not the cursor).
    pub fn matches(&self, task: &pb::Task) -> bool {
        self.context_id
            .as_ref()
            .is_none_or(|c| &task.context_id == c)
            && self.state.is_none_or(|s| task.state() == s)
            && self.updated_since.is_none_or(|t| status_nanos(task) >= t)
    }
}

/// One page of tasks.
#[derive(Debug, Clone, Default)]
pub struct TaskPage {
    /// Tasks in list order.
    pub tasks: Vec<pb::Task>,
    /// Number of tasks matching the filters, over all pages.
    pub total: usize,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<ListCursor>,
}

/// What [`PushConfigStore::count`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConfigCount {
    /// Configurations of the task.
    pub task: u64,
    /// Configurations of the principal's tasks that have not ended (the task's included,
    /// unless it ended).
    pub active: u64,
}

/// Store failures. The engine maps them to `Internal`/`Unavailable`, except `Conflict`, which
/// means another writer got there first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A record with this key already exists.
    #[error("already exists")]
    AlreadyExists,
    /// The record is not there.
    #[error("not found")]
    NotFound,
    /// The record's version is not the expected one.
    #[error("version conflict")]
    Conflict,
    /// The backend failed.
    #[error("store backend: {0}")]
    Backend(String),
}

/// Task snapshots and their commits.
#[async_trait::async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Atomically stores `record` (its task as the task's new snapshot) and appends `events`
    /// to the task's log: nothing is visible unless everything is. With `expected_seq == None`
    /// the task is new (`AlreadyExists` if the id is taken in this scope); otherwise the stored
    /// `last_seq` must equal it (`Conflict` if not, `NotFound` if the task is absent). `events`
    /// carry the sequence numbers after the stored ones, without gaps, ending at
    /// `record.last_seq`. Costs O(task): the engine calls it when a task is created, when a
    /// change is not described by its events (a follow-up message joins the history), and to
    /// compact a task's log (see [`TaskStore::append`]).
    async fn commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError>;
    /// Atomically appends `events` to the log of an existing task and updates its record,
    /// without storing a snapshot: `record.task` must be what [`apply`]ing `events` in order
    /// to the stored task gives. The store keeps the record's small fields (`last_seq`,
    /// `turn`, `lease`, the task's state, context and status timestamp) and the events, and
    /// [`get`](Self::get) and [`list`](Self::list) rebuild the task from its last snapshot and
    /// the events after it. Conditions and errors as [`commit`](Self::commit) with
    /// `Some(expected_seq)`. Must cost O(events), whatever the size of the task: this is how
    /// streamed artifact chunks are stored.
    async fn append(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError>;
    /// Atomically appends `event`, a status update to a terminal state, at the end of the
    /// task's log as it stands when the store writes it — not at an expected sequence number —
    /// unless the task has already ended. Returns the sequence number the event got (the
    /// stored `last_seq` + 1), or `None` when the task was already terminal (nothing is
    /// written); `NotFound` if the task is absent; a `Backend` error for an event that is not
    /// such a status update ([`final_state`]). The record becomes what [`apply`]ing the event
    /// gives: its state and status timestamp the event's, no lease, the same turn and context.
    /// A store may store no snapshot (reads rebuild the task from the last one and the
    /// events); it must decide and write under one lock on the task (a row lock, the single
    /// writer), so that no commit lands between the end it reads and the event it appends.
    ///
    /// How a process ends a task another process is writing (CancelTask through a replica
    /// that does not run the task): a commit conditional on the sequence number it read can
    /// lose every race against a writer committing back to back; this cannot, and that
    /// writer's next commit conflicts, which ends its turn.
    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError>;
    /// Reads a task.
    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError>;
    /// Lists tasks of a scope: filters, order (status timestamp desc, id asc), keyset page.
    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError>;
    /// Extends every lease `node` holds to `until_ms`; returns how many.
    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError>;
    /// Up to `limit` tasks whose lease expired before `before_ms` (their node stopped).
    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError>;
    /// Milliseconds since the Unix epoch by the clock leases and delivery claims are written
    /// and judged in. A store that several processes share answers with its own (the
    /// database server's), which each process measures its clock against
    /// (`Inner::sync_clock` in the engine): their leases then agree however far apart their
    /// clocks are. The default is this process's clock ([`now_ms`]); a store that wraps
    /// another forwards it, as it forwards [`shared`](Self::shared).
    async fn clock_ms(&self) -> Result<i64, StoreError> {
        Ok(now_ms())
    }
    /// Whether other processes may use this store at the same time. A store that is not
    /// shared belongs to one process, so every lease found at start-up is an orphan.
    fn shared(&self) -> bool {
        false
    }
    /// Whether a streaming turn's events are better committed behind its agent, many to a
    /// write (the engine's write-behind), than one write each: true for a store whose commit
    /// costs a round trip or a disk flush. A shared store always is. The default, `false`,
    /// suits a store whose commit is a memory update; a store that wraps another forwards it,
    /// as it forwards [`shared`](Self::shared).
    fn commits_behind(&self) -> bool {
        self.shared()
    }
    /// Commits by other processes, for a shared store.
    fn notices(&self) -> Option<NoticeFeed> {
        None
    }
}

/// Keeps a task watched on an [`EventBus`] while held; dropping it stops the watch.
pub type BusWatch = Box<dyn std::any::Any + Send + Sync>;

/// Carries committed events between the processes that share a store (cluster mode), so that
/// a process serving a stream of a task another process runs gets its events without polling
/// or re-reading the store. The store stays the one durable log: an event is published only
/// after its commit, and whatever a bus loses is read back from the [`EventLog`] by sequence
/// number. Implemented outside the engine (NATS JetStream in `trident-nats`).
#[async_trait::async_trait]
pub trait EventBus: Send + Sync + 'static {
    /// Hands the other processes events of a task that are already committed to the shared
    /// store. Called by the task's single writer, in order; the bus keeps that order per task.
    /// Never fails: a publish the bus cannot make is logged, and the processes that miss it
    /// catch up from the log (after a [`Notice::Resync`] or a later event's gap). May wait
    /// (back-pressure) but for a bounded time.
    async fn publish(&self, scope: &Scope, task_id: &str, events: &[LoggedEvent]);
    /// Delivers to [`feed`](Self::feed), as [`Notice::Events`], the events other processes
    /// publish for this task from now until the returned watch is dropped.
    fn watch(&self, scope: &Scope, task_id: &str) -> BusWatch;
    /// The events of watched tasks, and [`Notice::Resync`] whenever some may have been lost
    /// (the connection to the bus dropped and came back). Taken once, by the engine.
    fn feed(&self) -> NoticeFeed;
}

/// Keeps a task's log readable while held (see [`EventLog::hold`]); dropping it lets go.
pub type LogHold = Box<dyn std::any::Any + Send + Sync>;

/// Per-task ordered event logs, written by [`TaskStore::commit`].
#[async_trait::async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Reads up to `limit` events with a sequence number greater than `after`, in order.
    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError>;

    /// Keeps the task and its log from being dropped by the store's own retention until the
    /// returned hold is dropped: the engine holds one for every stream still reading the log,
    /// so a stream that falls behind a task which then ends and would be evicted still reads
    /// every event. Stores that never drop tasks by themselves keep this default (`None`).
    fn hold(&self, scope: &Scope, task_id: &str) -> Option<LogHold> {
        let _ = (scope, task_id);
        None
    }
}

/// Push-notification configurations, keyed by (scope, task id, config id), and each task's
/// delivery cursor (the outbox: events after it are still to be sent).
#[async_trait::async_trait]
pub trait PushConfigStore: Send + Sync + 'static {
    /// Creates or replaces a configuration (`task_id` and `id` must be set), recording the
    /// protocol generation it was created through (its notifications' payload shape).
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), StoreError>;
    /// Reads one configuration and the generation it was created through.
    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<(pb::TaskPushNotificationConfig, Generation)>, StoreError>;
    /// Lists a task's configurations ordered by id, starting after `after`; returns at most
    /// `limit` and whether more follow.
    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError>;
    /// Deletes a configuration; `true` if it existed.
    async fn delete(&self, scope: &Scope, task_id: &str, id: &str) -> Result<bool, StoreError>;
    /// How many configurations `scope` holds on task `task_id`, and on all of its tasks that
    /// have not ended (whose configurations can still be notified); what the engine's push limits are
    /// checked against before it adds one.
    async fn count(&self, scope: &Scope, task_id: &str) -> Result<ConfigCount, StoreError>;
    /// Claims delivery of a task's notifications for `node` until `until_ms`, unless another
    /// node holds an unexpired claim (`None`; expiry judged by the clock of
    /// [`TaskStore::clock_ms`]). Creates the cursor at `from` when the task has
    /// none. Returns the sequence number delivered so far.
    async fn claim_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        until_ms: i64,
        from: u64,
    ) -> Result<Option<u64>, StoreError>;
    /// Moves the cursor to `seq` and extends the claim; `false` if `node` lost the claim.
    async fn delivered(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        seq: u64,
        until_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Gives up `node`'s claim.
    async fn release_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), StoreError>;
    /// Up to `limit` tasks whose cursor is behind their log and whose claim is free or expired
    /// before `now_ms`.
    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError>;
}

/// The three stores an engine needs.
#[derive(Clone)]
pub struct Stores {
    /// Task snapshots.
    pub tasks: Arc<dyn TaskStore>,
    /// Event logs.
    pub events: Arc<dyn EventLog>,
    /// Push configurations.
    pub push: Arc<dyn PushConfigStore>,
}

impl Stores {
    /// All three backed by one store that implements them all.
    pub fn of<S: TaskStore + EventLog + PushConfigStore>(store: Arc<S>) -> Self {
        Self {
            tasks: store.clone(),
            events: store.clone(),
            push: store,
        }
    }
}

#[cfg(test)]
mod tests;
