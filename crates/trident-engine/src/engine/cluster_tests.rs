//! Two engines on one shared store (two processes of a cluster, in one): what a process
//! following a task that the other runs reads from the store, and what reaches the process
//! running it. Connected by an in-process event bus ([`LocalHub`]), or by the store's own
//! notices (as PostgreSQL's `NOTIFY` would).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use trident_proto as pb;
use trident_testkit::bus::LocalHub;

use crate::store::{
    EventLog, LoggedEvent, MemoryStore, Notice, NoticeFeed, Scope, StoreError, Stores, TaskPage,
    TaskQuery, TaskRecord, TaskStore,
};
use crate::{Engine, EngineConfig};
use trident_core::{
    A2aError, A2aService, AgentExecutor, CallContext, EventSink, EventStream, RequestContext,
    StreamEvent,
};

/// How long a test waits for something that should happen at once.
const PATIENCE: Duration = Duration::from_secs(20);

/// The store's own notices, between the views of one store (see [`View::notifying`]).
#[derive(Default)]
struct Notices {
    feeds: Mutex<Vec<(usize, tokio::sync::mpsc::UnboundedSender<Notice>)>>,
}

/// One process's view of a store shared with others: every call goes to the one store,
/// `get` and `read` are counted, and the store says it is shared.
struct View {
    id: usize,
    store: Arc<MemoryStore>,
    gets: AtomicUsize,
    reads: AtomicUsize,
    /// With [`Notices`], each commit through this view tells the other views.
    notices: Option<Arc<Notices>>,
    feed: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Notice>>>,
    /// When set, each `get` reads the task, then signals `entered` and waits for `release`
    /// before it answers (with what it read).
    gate: Mutex<Option<Gate>>,
    /// When set, each `append` signals `entered` and waits for `release` before it writes.
    append_gate: Mutex<Option<Gate>>,
    /// `commit` and `append` calls.
    writes: AtomicUsize,
}

/// Holds a `get`'s answer back for as long as a test wants.
#[derive(Clone, Default)]
struct Gate {
    entered: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

impl View {
    fn of(store: &Arc<MemoryStore>, id: usize) -> Arc<Self> {
        Self::with(store, id, None)
    }

    /// A view whose commits notify the other views of `notices`, and which hears theirs.
    fn notifying(store: &Arc<MemoryStore>, id: usize, notices: &Arc<Notices>) -> Arc<Self> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        crate::store::lock_std(&notices.feeds).push((id, tx));
        Self::with(store, id, Some((notices.clone(), rx)))
    }

    fn with(
        store: &Arc<MemoryStore>,
        id: usize,
        notifying: Option<(Arc<Notices>, tokio::sync::mpsc::UnboundedReceiver<Notice>)>,
    ) -> Arc<Self> {
        let (notices, feed) = notifying.unzip();
        Arc::new(Self {
            id,
            store: store.clone(),
            gets: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            notices,
            feed: Mutex::new(feed),
            gate: Mutex::new(None),
            append_gate: Mutex::new(None),
            writes: AtomicUsize::new(0),
        })
    }

    fn stores(self: &Arc<Self>) -> Stores {
        Stores {
            tasks: self.clone(),
            events: self.clone(),
            push: self.store.clone(),
        }
    }

    fn gets(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }

    fn notify(&self, scope: &Scope, record: &TaskRecord) {
        self.notify_at(scope, &record.task.id, record.last_seq);
    }

    fn notify_at(&self, scope: &Scope, task_id: &str, seq: u64) {
        if let Some(notices) = &self.notices {
            for (id, feed) in crate::store::lock_std(&notices.feeds).iter() {
                if *id != self.id {
                    let _ = feed.send(Notice::Committed {
                        scope: scope.clone(),
                        task_id: task_id.to_owned(),
                        seq,
                    });
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for View {
    async fn commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.store
            .commit(scope, record, expected_seq, events)
            .await?;
        self.notify(scope, record);
        Ok(())
    }

    async fn append(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let gate = crate::store::lock_std(&self.append_gate).clone();
        if let Some(gate) = gate {
            gate.entered.notify_one();
            gate.release.notified().await;
        }
        self.store
            .append(scope, record, expected_seq, events)
            .await?;
        self.notify(scope, record);
        Ok(())
    }

    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        let appended = self.store.append_final(scope, task_id, event).await?;
        if let Some(seq) = appended {
            self.notify_at(scope, task_id, seq);
        }
        Ok(appended)
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        let read = self.store.get(scope, id).await;
        let gate = crate::store::lock_std(&self.gate).clone();
        if let Some(gate) = gate {
            gate.entered.notify_one();
            gate.release.notified().await;
        }
        read
    }

    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.store.list(scope, query).await
    }

    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError> {
        self.store.renew_leases(node, until_ms).await
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.store.lapsed_leases(before_ms, limit).await
    }

    fn shared(&self) -> bool {
        true
    }

    fn notices(&self) -> Option<NoticeFeed> {
        let mut rx = crate::store::lock_std(&self.feed).take()?;
        Some(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed())
    }
}

#[async_trait::async_trait]
impl EventLog for View {
    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.store.read(scope, task_id, after, limit).await
    }
}

/// Says WORKING, then streams one chunk each time the test lets it (`go`), then completes
/// once it may go once more. A cancellation ends the turn (`heard` hears "cancelled").
struct Paced {
    go: Arc<tokio::sync::Semaphore>,
    chunks: usize,
    heard: tokio::sync::mpsc::UnboundedSender<&'static str>,
    /// Chunks the sink has taken.
    sent: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl AgentExecutor for Paced {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        for i in 0..=self.chunks {
            tokio::select! {
                permit = self.go.acquire() => permit.map_err(|_| A2aError::internal("closed"))?.forget(),
                () = ctx.cancelled() => {
                    let _ = self.heard.send("cancelled");
                    return Ok(());
                }
            }
            if i == self.chunks {
                return sink.complete().await;
            }
            let artifact = pb::Artifact::new("answer", vec![pb::Part::text(format!("{i} "))]);
            sink.artifact_chunk(artifact, i > 0, i + 1 == self.chunks)
                .await?;
            self.sent.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Two processes of a cluster: engines on one store, each through its own view.
struct Cluster {
    a: Engine,
    b: Engine,
    view_a: Arc<View>,
    view_b: Arc<View>,
    store: Arc<MemoryStore>,
    go: Arc<tokio::sync::Semaphore>,
    heard: tokio::sync::mpsc::UnboundedReceiver<&'static str>,
    /// Chunks A's and B's agents have sent.
    sent: Arc<AtomicUsize>,
}

/// Settings that keep the sweeper out of the way: only the news under test catches up.
fn config() -> EngineConfig {
    EngineConfig {
        lease_ttl: Duration::from_secs(600),
        ..EngineConfig::default()
    }
}

impl Cluster {
    /// Two engines connected by `hub` (or by the store's notices, when `None`), running
    /// [`Paced`] with `chunks` chunks.
    fn new(hub: Option<&LocalHub>, chunks: usize) -> Self {
        let store = Arc::new(MemoryStore::new());
        let notices = Arc::new(Notices::default());
        let (view_a, view_b) = match hub {
            Some(_) => (View::of(&store, 0), View::of(&store, 1)),
            None => (
                View::notifying(&store, 0, &notices),
                View::notifying(&store, 1, &notices),
            ),
        };
        let go = Arc::new(tokio::sync::Semaphore::new(0));
        let (tx, heard) = tokio::sync::mpsc::unbounded_channel();
        let sent = Arc::new(AtomicUsize::new(0));
        let engine = |view: &Arc<View>| {
            let executor = Paced {
                go: go.clone(),
                chunks,
                heard: tx.clone(),
                sent: sent.clone(),
            };
            let mut builder = Engine::builder(Arc::new(executor))
                .stores(view.stores())
                .config(config());
            if let Some(hub) = hub {
                builder = builder.bus(hub.join());
            }
            builder.build()
        };
        Self {
            a: engine(&view_a),
            b: engine(&view_b),
            view_a,
            view_b,
            store,
            go,
            heard,
            sent,
        }
    }

    /// Starts a task on engine A: its id and A's stream of it, past WORKING.
    async fn start(&self) -> (String, EventStream) {
        let mut stream = self
            .a
            .send_streaming_message(
                &CallContext::new(),
                pb::SendMessageRequest {
                    message: Some(pb::Message::user("m1", vec![pb::Part::text("go")])),
                    ..Default::default()
                },
            )
            .await
            .expect("stream");
        let first = next(&mut stream).await;
        let Some(pb::stream_response::Payload::Task(task)) = &first.response.payload else {
            panic!("a new task's stream starts with the task: {first:?}");
        };
        let id = task.id.clone();
        let working = next(&mut stream).await;
        assert_eq!(state_of(&working), Some(pb::TaskState::Working));
        (id, stream)
    }

    /// The stored log of task `id`.
    async fn log(&self, id: &str) -> Vec<LoggedEvent> {
        let mut log = Vec::new();
        loop {
            let after = log.last().map_or(0, |e: &LoggedEvent| e.seq);
            let more = self
                .store
                .read(&Scope::new("", ""), id, after, 100)
                .await
                .expect("read the log");
            if more.is_empty() {
                return log;
            }
            log.extend(more);
        }
    }
}

/// The next event of `stream`, within [`PATIENCE`].
async fn next(stream: &mut EventStream) -> StreamEvent {
    tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
        .expect("an event, not an error")
}

/// Reads `stream` until it passes sequence number `seq`.
async fn read_to(stream: &mut EventStream, seq: u64) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    while events.last().and_then(|e: &StreamEvent| e.seq) < Some(seq) {
        events.push(next(stream).await);
    }
    events
}

/// Reads `stream` to its end.
async fn read_all(stream: &mut EventStream) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("the stream ends in time")
        {
            Some(event) => events.push(event.expect("an event, not an error")),
            None => return events,
        }
    }
}

fn state_of(event: &StreamEvent) -> Option<pb::TaskState> {
    match &event.response.payload {
        Some(pb::stream_response::Payload::StatusUpdate(u)) => u.status.as_ref().map(|s| s.state()),
        Some(pb::stream_response::Payload::Task(t)) => Some(t.state()),
        _ => None,
    }
}

/// Subscribes to task `id` on `engine`: the snapshot's sequence number and the stream after it.
async fn subscribe(engine: &Engine, id: &str) -> (u64, EventStream) {
    let mut stream = engine
        .subscribe_to_task(
            &CallContext::new(),
            pb::SubscribeToTaskRequest {
                id: id.to_owned(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribe");
    let lead = next(&mut stream).await;
    assert!(
        matches!(
            lead.response.payload,
            Some(pb::stream_response::Payload::Task(_))
        ),
        "a subscription starts with the task: {lead:?}"
    );
    (lead.seq.expect("the snapshot's seq"), stream)
}

/// What a follower's stream must be: every logged event after `from`, once each, in order.
fn assert_follows_log(events: &[StreamEvent], log: &[LoggedEvent], from: u64) {
    let after: Vec<_> = log.iter().filter(|e| e.seq > from).collect();
    let seqs: Vec<_> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<_> = after.iter().map(|e| Some(e.seq)).collect();
    assert_eq!(seqs, expected, "the follower's sequence numbers");
    for (got, logged) in events.iter().zip(after) {
        assert_eq!(got.response, logged.event.shared(), "event {}", logged.seq);
    }
    assert_eq!(
        events.last().and_then(state_of),
        Some(pb::TaskState::Completed),
        "the follower's stream ends with the task"
    );
}

/// Polls `done` until it holds, within [`PATIENCE`].
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: not within {PATIENCE:?}"));
}

/// Issue 30: a process following a task that another process runs used to read the whole
/// task on every commit notice (O(task) per event). With a bus, the follower publishes the
/// events it is handed, never reads the task after its subscription's snapshot, and reads
/// what the bus lost back from the log: every event once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_gets_every_event_once_in_order_without_reading_the_task() {
    let hub = LocalHub::new();
    let cluster = Cluster::new(Some(&hub), 60);
    let (id, mut on_a) = cluster.start().await;
    let (from, mut on_b) = subscribe(&cluster.b, &id).await;
    let gets = cluster.view_b.gets();
    let scope = Scope::new("", "");
    assert_eq!(
        hub.watchers(&scope, &id),
        2,
        "both processes watch the task"
    );

    // Twenty chunks on the bus, twenty lost, then the rest on the bus again: the first event
    // after the loss finds a gap, which the log fills.
    cluster.go.add_permits(20);
    let seen = read_to(&mut on_a, from + 20).await;
    hub.drop_messages(true);
    cluster.go.add_permits(20);
    read_to(&mut on_a, seen.last().and_then(|e| e.seq).unwrap_or(0) + 20).await;
    // A publishes to the bus after its own readers (whose events its flusher stored): the
    // last of the twenty may reach the bus a moment after A's stream has them.
    until("the bus lost the middle chunks", || hub.dropped() >= 20).await;
    hub.drop_messages(false);
    let reads = cluster.view_b.reads.load(Ordering::SeqCst);
    cluster.go.add_permits(21);
    read_all(&mut on_a).await;

    let events = read_all(&mut on_b).await;
    assert_follows_log(&events, &cluster.log(&id).await, from);
    assert!(hub.dropped() >= 20, "the bus lost the middle chunks");
    assert!(
        cluster.view_b.reads.load(Ordering::SeqCst) > reads,
        "the follower read the lost events from the log"
    );
    assert_eq!(
        cluster.view_b.gets(),
        gets,
        "the follower never read the task after the snapshot"
    );

    // Nothing holds the task any more: neither process keeps it, nor watches it.
    drop((on_a, on_b));
    until("both processes let the task go", || {
        cluster.a.stats().live_tasks == 0 && cluster.b.stats().live_tasks == 0
    })
    .await;
    assert_eq!(hub.watchers(&scope, &id), 0, "nobody watches the task");
}

/// Events the bus lost with nothing after them to reveal the gap (here, the task's end) are
/// read from the log when the bus says it reconnected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_lost_at_the_end_are_read_back_on_resync() {
    let hub = LocalHub::new();
    let cluster = Cluster::new(Some(&hub), 5);
    let (id, mut on_a) = cluster.start().await;
    let (from, mut on_b) = subscribe(&cluster.b, &id).await;
    let gets = cluster.view_b.gets();
    cluster.go.add_permits(2);
    let mut events = read_to(&mut on_b, from + 2).await;
    hub.drop_messages(true);
    cluster.go.add_permits(4);
    read_all(&mut on_a).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(200), on_b.next())
            .await
            .is_err(),
        "the follower heard nothing of the lost events"
    );
    hub.drop_messages(false);
    hub.resync();
    events.extend(read_all(&mut on_b).await);
    assert_follows_log(&events, &cluster.log(&id).await, from);
    assert_eq!(cluster.view_b.gets(), gets, "the task was not read again");
}

/// The store's own notices (PostgreSQL's `NOTIFY`) only say how far a task's log goes: the
/// follower reads the log after its position, never the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_of_store_notices_reads_only_the_log() {
    let cluster = Cluster::new(None, 30);
    let (id, mut on_a) = cluster.start().await;
    let (from, mut on_b) = subscribe(&cluster.b, &id).await;
    let gets = cluster.view_b.gets();
    cluster.go.add_permits(31);
    read_all(&mut on_a).await;
    let events = read_all(&mut on_b).await;
    assert_follows_log(&events, &cluster.log(&id).await, from);
    assert_eq!(cluster.view_b.gets(), gets, "the task was not read again");
}

/// A cancel made through another process reaches the executor running the turn here: the
/// cancel's event comes over the bus, and the process running the turn stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_made_elsewhere_stops_the_running_turn() {
    let hub = LocalHub::new();
    let mut cluster = Cluster::new(Some(&hub), 5);
    let (id, mut on_a) = cluster.start().await;
    let canceled = cluster
        .b
        .cancel_task(
            &CallContext::new(),
            pb::CancelTaskRequest {
                id: id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("cancel through B");
    assert_eq!(canceled.state(), pb::TaskState::Canceled);
    let heard = tokio::time::timeout(PATIENCE, cluster.heard.recv())
        .await
        .expect("A's executor hears of the cancel in time");
    assert_eq!(heard, Some("cancelled"));
    let rest = read_all(&mut on_a).await;
    assert_eq!(
        rest.last().and_then(state_of),
        Some(pb::TaskState::Canceled),
        "A's stream ends with the cancel made through B: {rest:?}"
    );
}

/// Whether a task's log ends with a terminal state.
fn ended(log: &[LoggedEvent]) -> bool {
    use pb::stream_response::Payload;
    log.last().is_some_and(|e| match &e.event.payload {
        Some(Payload::StatusUpdate(u)) => {
            u.status.as_ref().is_some_and(|s| s.state().is_terminal())
        }
        _ => false,
    })
}

/// A cancel through B of a task whose turn runs on A, with A committing a chunk between every
/// read of the task B makes and B's commit after it (what a busy stream does on a loaded
/// machine): B's commit conflicts, and the cancel is appended where the log ends instead of
/// retrying at a sequence number A has passed again (which lost every race until it gave up
/// with `Unavailable`). A's turn stops; the log and A's stream end CANCELED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_elsewhere_is_not_starved_by_a_busy_turn() {
    let hub = LocalHub::new();
    let mut cluster = Cluster::new(Some(&hub), 1000);
    let (id, mut on_a) = cluster.start().await;
    let gate = Gate::default();
    *crate::store::lock_std(&cluster.view_b.gate) = Some(gate.clone());
    let request = pb::CancelTaskRequest {
        id: id.clone(),
        ..Default::default()
    };
    let cx = CallContext::new();
    let cancel = cluster.b.cancel_task(&cx, request);
    tokio::pin!(cancel);
    let mut overtaken = 0;
    let canceled = tokio::time::timeout(PATIENCE, async {
        loop {
            tokio::select! {
                canceled = &mut cancel => break canceled,
                () = gate.entered.notified() => {
                    // B has read the task: while the task runs, A commits a chunk before B
                    // may go on (B waits here, so it cannot end the task meanwhile).
                    let log = cluster.log(&id).await;
                    if !ended(&log) {
                        cluster.go.add_permits(1);
                        while cluster.log(&id).await.len() == log.len() {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        overtaken += 1;
                    }
                    gate.release.notify_one();
                }
            }
        }
    })
    .await
    .expect("the cancel answers in time")
    .expect("the cancel through B succeeds");
    *crate::store::lock_std(&cluster.view_b.gate) = None;
    gate.release.notify_one();
    assert_eq!(canceled.state(), pb::TaskState::Canceled);
    assert!(overtaken > 0, "A committed between B's read and B's commit");
    let heard = tokio::time::timeout(PATIENCE, cluster.heard.recv())
        .await
        .expect("A's executor hears of the cancel in time");
    assert_eq!(heard, Some("cancelled"));
    let rest = read_all(&mut on_a).await;
    assert_eq!(
        rest.last().and_then(state_of),
        Some(pb::TaskState::Canceled),
        "A's stream ends with the cancel made through B: {rest:?}"
    );
    let log = cluster.log(&id).await;
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=log.len() as u64).collect::<Vec<_>>(),
        "the log is gapless"
    );
    assert_eq!(
        rest.last().and_then(|e| e.seq),
        log.last().map(|e| e.seq),
        "nothing follows CANCELED"
    );
}

/// News of a commit that comes while a process loads the task (after its read, before the
/// task is registered there) finds no task to tell: the process sees that news went unclaimed
/// meanwhile and reads the log after its snapshot, rather than wait for the next news or sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn news_that_comes_while_a_task_loads_is_not_lost() {
    let hub = LocalHub::new();
    let cluster = Cluster::new(Some(&hub), 3);
    let (id, mut on_a) = cluster.start().await;
    let gate = Gate::default();
    *crate::store::lock_std(&cluster.view_b.gate) = Some(gate.clone());
    let b = cluster.b.clone();
    let task = id.clone();
    let subscribing = tokio::spawn(async move { subscribe(&b, &task).await });
    tokio::time::timeout(PATIENCE, gate.entered.notified())
        .await
        .expect("B reads the task");
    // The task ends while B holds its read: the news of it comes before B registers it.
    cluster.go.add_permits(4);
    read_all(&mut on_a).await;
    let unclaimed = &cluster.b.inner.unclaimed_news;
    until("the news reaches B, which holds no task to tell", || {
        unclaimed.load(Ordering::SeqCst) > 0
    })
    .await;
    *crate::store::lock_std(&cluster.view_b.gate) = None;
    gate.release.notify_one();
    let (from, mut on_b) = subscribing.await.expect("subscribed");
    let events = read_all(&mut on_b).await;
    assert_follows_log(&events, &cluster.log(&id).await, from);
}

/// Issue 30: on a shared store, where a write is a round trip to a database, an agent's events
/// are committed behind it. While one write is in flight the agent goes on, and the events it
/// sends meanwhile are stored by the next write, all at once; nobody sees one before it is
/// stored, and every reader gets each once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_turn_is_committed_behind_its_agent_in_batches_unseen_until_stored() {
    let cluster = Cluster::new(None, 40);
    let (id, mut on_a) = cluster.start().await;
    let stored_before = cluster.log(&id).await.len();

    // The first chunk's write is held in flight.
    let gate = Gate::default();
    *crate::store::lock_std(&cluster.view_a.append_gate) = Some(gate.clone());
    cluster.go.add_permits(1);
    gate.entered.notified().await;
    *crate::store::lock_std(&cluster.view_a.append_gate) = None;
    let writes = cluster.view_a.writes.load(Ordering::SeqCst);

    // The agent sends 30 more chunks meanwhile, without waiting for the store.
    cluster.go.add_permits(30);
    until("the agent streams on while a write is in flight", || {
        cluster.sent.load(Ordering::SeqCst) == 31
    })
    .await;
    // Nobody has seen any of them: nothing is stored, nothing published.
    assert_eq!(cluster.log(&id).await.len(), stored_before);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), on_a.next())
            .await
            .is_err(),
        "an event was published before it was stored"
    );
    let (_, mut on_b) = subscribe(&cluster.b, &id).await;

    gate.release.notify_one();
    cluster.go.add_permits(10);
    let events = read_all(&mut on_a).await;
    assert_follows_log(&events, &cluster.log(&id).await, stored_before as u64);
    let on_b = read_all(&mut on_b).await;
    assert_eq!(
        on_b.last().and_then(state_of),
        Some(pb::TaskState::Completed),
        "B's subscriber follows to the end"
    );
    // The first write, then the 30 chunks kept meanwhile in one (the last ten and the
    // completion in a few more).
    let more = cluster.view_a.writes.load(Ordering::SeqCst) - writes;
    assert!(more <= 12, "{more} writes for 40 chunks");
}
