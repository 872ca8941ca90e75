//! Engine unit tests: what the engine hands its store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt as _;
use prost::Message as _;
use trident_proto as pb;

use crate::Engine;
use crate::store::{
    EventLog, LoggedEvent, MemoryStore, Scope, StoreError, Stores, TaskPage, TaskQuery, TaskRecord,
    TaskStore,
};
use trident_core::{A2aError, A2aService, AgentExecutor, CallContext, EventSink, RequestContext};

/// The in-memory store, counting the encoded bytes it is handed (a snapshot per `commit`, the
/// events of every write) and refusing every write once `failing` is set.
#[derive(Default)]
struct Counting {
    inner: MemoryStore,
    snapshot_bytes: AtomicUsize,
    event_bytes: AtomicUsize,
    snapshots: AtomicUsize,
    appends: AtomicUsize,
    failing: std::sync::atomic::AtomicBool,
    /// While above zero, each write is refused as a conflict (another process wrote the task
    /// first) and the count goes down by one.
    conflicts: AtomicUsize,
    /// When set, every write first signals the gate's `entered` and then waits for its
    /// `release`.
    gate: std::sync::Mutex<Option<Gate>>,
}

/// Stops the store's writes halfway, for as long as a test wants.
#[derive(Clone, Default)]
struct Gate {
    entered: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

impl Counting {
    /// The stored events of task `id` after `seq` (the default scope's).
    async fn events_after(&self, id: &str, seq: u64) -> Vec<LoggedEvent> {
        self.read(&Scope::new("", ""), id, seq, 100)
            .await
            .expect("read the log")
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("the disk is gone".into()));
        }
        let conflicted = self
            .conflicts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if conflicted.is_ok() {
            return Err(StoreError::Conflict);
        }
        Ok(())
    }

    /// Waits at the gate, when one is set.
    async fn pass_gate(&self) {
        let gate = crate::store::lock_std(&self.gate).clone();
        if let Some(gate) = gate {
            gate.entered.notify_one();
            gate.release.notified().await;
        }
    }

    fn count_events(&self, events: &[LoggedEvent]) {
        let n: usize = events.iter().map(|e| e.event.encoded_len()).sum();
        self.event_bytes.fetch_add(n, Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl TaskStore for Counting {
    async fn commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.check()?;
        self.pass_gate().await;
        self.snapshot_bytes
            .fetch_add(record.task.encoded_len(), Ordering::Relaxed);
        self.snapshots.fetch_add(1, Ordering::Relaxed);
        self.count_events(events);
        self.inner.commit(scope, record, expected_seq, events).await
    }

    async fn append(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.check()?;
        self.pass_gate().await;
        self.count_events(events);
        self.appends.fetch_add(1, Ordering::Relaxed);
        self.inner.append(scope, record, expected_seq, events).await
    }

    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        // A disk that is gone fails it; it never conflicts (it is not conditional).
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("the disk is gone".into()));
        }
        self.pass_gate().await;
        self.inner.append_final(scope, task_id, event).await
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(scope, id).await
    }

    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list(scope, query).await
    }

    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError> {
        self.inner.renew_leases(node, until_ms).await
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.inner.lapsed_leases(before_ms, limit).await
    }
}

#[async_trait::async_trait]
impl EventLog for Counting {
    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.inner.read(scope, task_id, after, limit).await
    }

    fn hold(&self, scope: &Scope, task_id: &str) -> Option<crate::store::LogHold> {
        self.inner.hold(scope, task_id)
    }
}

const CHUNKS: usize = 5000;
const CHUNK: &str = "0123456789abcdef";

/// Appends `CHUNKS` chunks of 16 bytes to one artifact, then completes.
struct Chunker;

#[async_trait::async_trait]
impl AgentExecutor for Chunker {
    async fn execute(&self, _ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        for i in 0..CHUNKS {
            let artifact = pb::Artifact::new("answer", vec![pb::Part::text(CHUNK)]);
            sink.artifact_chunk(artifact, i > 0, i + 1 == CHUNKS)
                .await?;
        }
        sink.complete().await
    }
}

/// Issue 12: each appended chunk used to hand the store the whole task (5 000 chunks of 16
/// bytes: ~250 MB of snapshots for 80 KB of content). The bytes handed to the store must stay
/// proportional to the content: the events, plus snapshots whose total is bounded by them.
#[tokio::test]
async fn streamed_chunks_hand_the_store_bytes_linear_in_the_content() {
    let store = Arc::new(Counting::default());
    let stores = Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: Arc::new(MemoryStore::new()),
    };
    let engine = Engine::builder(Arc::new(Chunker)).stores(stores).build();
    let cx = CallContext::new();
    let request = pb::SendMessageRequest {
        message: Some(pb::Message::user("m1", vec![pb::Part::text("go")])),
        ..Default::default()
    };
    let mut stream = engine
        .send_streaming_message(&cx, request)
        .await
        .expect("stream");
    let mut task_id = String::new();
    let mut received = 0;
    while let Some(event) = stream.next().await {
        let event = event.expect("event");
        received += 1;
        if let Some(pb::stream_response::Payload::Task(t)) = &event.response.payload {
            task_id.clone_from(&t.id);
        }
    }
    // The task, WORKING, every chunk, COMPLETED.
    assert_eq!(received, CHUNKS + 3);
    let task = get(&engine, &cx, &task_id).await.expect("get");
    assert_eq!(task.state(), pb::TaskState::Completed);
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(
        task.artifacts[0].parts.len(),
        CHUNKS,
        "every chunk is in the task"
    );

    let content = CHUNKS * CHUNK.len();
    let snapshots = store.snapshot_bytes.load(Ordering::Relaxed);
    let events = store.event_bytes.load(Ordering::Relaxed);
    let final_len = task.encoded_len();
    // Each event is the chunk plus its ids (~7x a 16-byte chunk); each snapshot follows at
    // least its own size in events, so snapshots add up to about the events' bytes.
    assert!(
        snapshots <= 2 * events + 2 * final_len,
        "{snapshots} snapshot bytes for {events} event bytes ({} snapshots)",
        store.snapshots.load(Ordering::Relaxed)
    );
    assert!(
        snapshots + events < 30 * content,
        "{} bytes handed to the store for {content} bytes of chunks",
        snapshots + events
    );
}

/// First turn: asks for input. Follow-up turn: reports it is working, then waits for its
/// cancellation and says so on `heard` (whatever its sink calls return meanwhile).
struct Patient {
    heard: tokio::sync::mpsc::UnboundedSender<&'static str>,
}

#[async_trait::async_trait]
impl AgentExecutor for Patient {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        if ctx.task.is_none() {
            return sink.input_required("more, please").await;
        }
        let _ = self.heard.send("started");
        // The artifact may be refused (a failing store); the turn must be stopped either way.
        let _ = sink
            .artifact(pb::Artifact::new("a", vec![pb::Part::text("x")]))
            .await;
        ctx.cancelled().await;
        let _ = self.heard.send("cancelled");
        Ok(())
    }
}

/// Sends a new user message `text` (id `m1`, blocking) and returns the task it answers with.
async fn send_text(engine: &Engine, cx: &CallContext, text: &str) -> pb::Task {
    let answer = engine
        .send_message(
            cx,
            pb::SendMessageRequest {
                message: Some(pb::Message::user("m1", vec![pb::Part::text(text)])),
                ..Default::default()
            },
        )
        .await
        .expect("send");
    let Some(pb::send_message_response::Payload::Task(task)) = answer.payload else {
        panic!("expected a task, got {answer:?}");
    };
    task
}

/// Creates a task with `Patient`, answers its question with `return_immediately`, and returns
/// the task id and the receiver of what the executor heard (after "started").
async fn follow_up_running(
    engine: &Engine,
    mut heard: tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<&'static str>) {
    let cx = CallContext::new();
    let task = send_text(engine, &cx, "go").await;
    assert_eq!(task.state(), pb::TaskState::InputRequired);
    let mut answer = pb::Message::user("m2", vec![pb::Part::text("here")]);
    answer.task_id.clone_from(&task.id);
    engine
        .send_message(
            &cx,
            pb::SendMessageRequest {
                message: Some(answer),
                configuration: Some(pb::SendMessageConfiguration {
                    return_immediately: true,
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .expect("follow-up");
    assert_eq!(heard.recv().await, Some("started"));
    (task.id, heard)
}

/// Issue 15: a follow-up turn has one cancel token, and CancelTask reaches its executor.
#[tokio::test]
async fn cancel_task_reaches_the_executor_of_a_follow_up_turn() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let engine = Engine::builder(Arc::new(Patient { heard: tx })).build();
    let (id, mut heard) = follow_up_running(&engine, rx).await;
    let task = cancel(&engine, &CallContext::new(), &id)
        .await
        .expect("cancel");
    assert_eq!(task.state(), pb::TaskState::Canceled);
    let said = said_within(
        &mut heard,
        "the executor of the follow-up turn was never cancelled",
    )
    .await;
    assert_eq!(said, Some("cancelled"));
}

/// Issue 15: when a follow-up turn's progress can no longer be stored, the engine stops the
/// turn — through the same token CancelTask uses, so the executor hears it.
#[tokio::test]
async fn a_store_failure_stops_the_executor_of_a_follow_up_turn() {
    let store = Arc::new(Counting::default());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let patient = Patient { heard: tx };
    // Writes fail from the follow-up turn's first agent event on: the executor reports
    // "started" before it publishes, so the switch is set in a wrapper around it.
    struct FailAfterStart {
        patient: Patient,
        store: Arc<Counting>,
    }
    #[async_trait::async_trait]
    impl AgentExecutor for FailAfterStart {
        async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
            if ctx.task.is_some() {
                self.store.failing.store(true, Ordering::SeqCst);
            }
            self.patient.execute(ctx, sink).await
        }
    }
    let agent = FailAfterStart {
        patient,
        store: store.clone(),
    };
    let engine = Engine::builder(Arc::new(agent))
        .stores(stores_of(&store))
        .build();
    let (_id, mut heard) = follow_up_running(&engine, rx).await;
    let said = said_within(
        &mut heard,
        "the executor of the follow-up turn was never stopped",
    )
    .await;
    assert_eq!(said, Some("cancelled"));
    store.failing.store(false, Ordering::SeqCst);
}

/// Issue 15: a blocking SendMessage whose agent never waits (the echo agent: an artifact, then
/// COMPLETED) is one store write, holding the whole turn: the task as submitted, the artifact
/// and the final status.
#[tokio::test]
async fn a_turn_that_never_waits_is_one_store_write() {
    let store = Arc::new(Counting::default());
    let stores = Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: Arc::new(crate::store::MemoryStore::new()),
    };
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo))
        .stores(stores)
        .build();
    let task = send_text(&engine, &CallContext::new(), "hi").await;
    assert_eq!(task.state(), pb::TaskState::Completed);
    assert_eq!(store.snapshots.load(Ordering::Relaxed), 1, "one commit");
    assert_eq!(store.appends.load(Ordering::Relaxed), 0, "no other write");
    let events = store
        .read(&Scope::new("", ""), &task.id, 0, 10)
        .await
        .expect("read the log");
    assert_eq!(
        events.len(),
        3,
        "submitted, artifact, completed: {events:?}"
    );
}

/// Issue 15: the blocking caller of a turn that ran inline to its end answers with the task it
/// held last (moved, not copied) and leaves nothing in memory: the answer is the task as
/// stored, and the task is read back from the store.
#[tokio::test]
async fn an_inline_turn_answers_with_the_stored_task_and_keeps_nothing_live() {
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo)).build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "hi").await;
    assert_eq!(task.state(), pb::TaskState::Completed);
    assert_eq!(task.artifacts.len(), 1, "the echo's artifact: {task:?}");
    assert_eq!(engine.stats().live_tasks, 0, "nothing held in memory");
    let read = get(&engine, &cx, &task.id).await.expect("get");
    assert_eq!(read, task, "the answer is the task as stored");
    assert_eq!(engine.stats().live_tasks, 0);
}

/// The stores of `store`, with push configurations in memory.
fn stores_of(store: &Arc<Counting>) -> Stores {
    Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: Arc::new(MemoryStore::new()),
    }
}

/// Store writes so far (commits and appends).
fn writes(store: &Counting) -> usize {
    store.snapshots.load(Ordering::Relaxed) + store.appends.load(Ordering::Relaxed)
}

/// First turn: asks for input. Follow-up turns: say "started" on `heard` (when given), wait
/// for `go` (when given), then publish an artifact and complete.
#[derive(Default)]
struct Asker {
    go: Option<Arc<tokio::sync::Notify>>,
    heard: Option<tokio::sync::mpsc::UnboundedSender<&'static str>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Asker {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        if ctx.task.is_none() {
            return sink.input_required("more, please").await;
        }
        if let Some(heard) = &self.heard {
            let _ = heard.send("started");
        }
        if let Some(go) = &self.go {
            go.notified().await;
        }
        sink.artifact(pb::Artifact::new("a", vec![pb::Part::text("x")]))
            .await?;
        sink.complete().await
    }
}

/// CancelTask of task `id`.
async fn cancel(engine: &Engine, cx: &CallContext, id: &str) -> Result<pb::Task, A2aError> {
    engine
        .cancel_task(
            cx,
            pb::CancelTaskRequest {
                id: id.to_owned(),
                ..Default::default()
            },
        )
        .await
}

/// What the executor says next on `heard`, within 20 s (else the test fails with `silent`).
async fn said_within(
    heard: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>,
    silent: &str,
) -> Option<&'static str> {
    tokio::time::timeout(std::time::Duration::from_secs(20), heard.recv())
        .await
        .expect(silent)
}

/// GetTask of task `id`, with its whole history.
async fn get(engine: &Engine, cx: &CallContext, id: &str) -> Result<pb::Task, A2aError> {
    engine
        .get_task(
            cx,
            pb::GetTaskRequest {
                id: id.to_owned(),
                ..Default::default()
            },
        )
        .await
}

/// Answers task `id`'s question with a blocking SendMessage (message id `m2`).
async fn answer(engine: &Engine, cx: &CallContext, id: &str) -> Result<pb::Task, A2aError> {
    let mut message = pb::Message::user("m2", vec![pb::Part::text("here")]);
    message.task_id = id.to_owned();
    let answer = engine
        .send_message(
            cx,
            pb::SendMessageRequest {
                message: Some(message),
                ..Default::default()
            },
        )
        .await?;
    match answer.payload {
        Some(pb::send_message_response::Payload::Task(task)) => Ok(task),
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Issue 15: a blocking follow-up whose agent never waits runs inline like a new task's turn:
/// one store write for the whole turn (WORKING with the message, the artifact, COMPLETED), an
/// answer that is the task as stored, and nothing left in memory.
#[tokio::test]
async fn an_inline_follow_up_is_one_store_write_and_keeps_nothing_live() {
    let store = Arc::new(Counting::default());
    let engine = Engine::builder(Arc::new(Asker::default()))
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "go").await;
    assert_eq!(task.state(), pb::TaskState::InputRequired);
    let (before, seq) = (writes(&store), store.events_after(&task.id, 0).await.len());
    let done = answer(&engine, &cx, &task.id).await.expect("follow-up");
    assert_eq!(done.state(), pb::TaskState::Completed);
    assert_eq!(done.artifacts.len(), 1, "{done:?}");
    assert!(
        done.history.iter().any(|m| m.message_id == "m2"),
        "the follow-up joined the history: {done:?}"
    );
    assert_eq!(writes(&store) - before, 1, "one store write for the turn");
    let events = store.events_after(&task.id, seq as u64).await;
    assert_eq!(events.len(), 3, "working, artifact, completed: {events:?}");
    assert_eq!(engine.stats().live_tasks, 0, "nothing held in memory");
    let read = get(&engine, &cx, &task.id).await.expect("get");
    assert_eq!(read, done, "the answer is the task as stored");
}

/// Issue 15: a blocking follow-up whose agent waits moves to the background, stores what its
/// turn held (the task is WORKING in the store while it waits), and its caller still gets the
/// settled task.
#[tokio::test]
async fn a_follow_up_that_waits_moves_to_the_background_and_its_caller_gets_the_settled_task() {
    let store = Arc::new(Counting::default());
    let go = Arc::new(tokio::sync::Notify::new());
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let agent = Asker {
        go: Some(go.clone()),
        heard: Some(tx),
    };
    let engine = Engine::builder(Arc::new(agent))
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "go").await;
    let caller = tokio::spawn({
        let (engine, id) = (engine.clone(), task.id.clone());
        async move { answer(&engine, &CallContext::new(), &id).await }
    });
    assert_eq!(heard.recv().await, Some("started"));
    // The turn left its caller's task: what it held reaches the store without anyone asking.
    let stored = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            let record = store
                .get(&Scope::new("", ""), &task.id)
                .await
                .expect("read")
                .expect("the task is stored");
            if record.task.state() == pb::TaskState::Working {
                return record;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the waiting turn's WORKING was never stored");
    assert!(stored.task.history.iter().any(|m| m.message_id == "m2"));
    go.notify_one();
    let done = caller.await.expect("join").expect("follow-up");
    assert_eq!(done.state(), pb::TaskState::Completed);
    assert_eq!(done.artifacts.len(), 1, "{done:?}");
    assert_eq!(engine.stats().live_tasks, 0, "nothing held in memory");
}

/// Issue 15: a subscriber attached to a task sees every event of an inline follow-up turn, in
/// order, as it is committed (a watched turn holds nothing back).
#[tokio::test]
async fn a_subscriber_sees_every_event_of_an_inline_follow_up_in_order() {
    let store = Arc::new(Counting::default());
    let engine = Engine::builder(Arc::new(Asker::default()))
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "go").await;
    let mut stream = engine
        .subscribe_to_task(
            &cx,
            pb::SubscribeToTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribe");
    let before = writes(&store);
    let done = answer(&engine, &cx, &task.id).await.expect("follow-up");
    assert_eq!(done.state(), pb::TaskState::Completed);
    assert!(
        writes(&store) - before > 1,
        "a watched turn stores each commit as it happens"
    );
    use pb::stream_response::Payload;
    let mut seen = Vec::new();
    let mut last_seq = 0;
    while let Some(event) = stream.next().await {
        let event = event.expect("event");
        let seq = event.seq.expect("a task event has a sequence number");
        assert!(
            seq > last_seq || seen.is_empty(),
            "in order: {seq} after {last_seq}"
        );
        last_seq = seq;
        seen.push(match &event.response.payload {
            Some(Payload::Task(t)) => format!("task {}", t.state().as_str_name()),
            Some(Payload::StatusUpdate(u)) => format!(
                "status {}",
                u.status.as_ref().map_or("-", |s| s.state().as_str_name())
            ),
            Some(Payload::ArtifactUpdate(_)) => "artifact".to_owned(),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(
        seen,
        [
            "task TASK_STATE_INPUT_REQUIRED",
            "status TASK_STATE_WORKING",
            "artifact",
            "status TASK_STATE_COMPLETED"
        ]
    );
}

/// Follow-up turns: looks at the task through the engine (GetTask) and in the store while its
/// turn runs inline, then completes.
struct Peeker {
    engine: std::sync::Mutex<Option<Engine>>,
    store: Arc<Counting>,
    seen: std::sync::Mutex<Vec<(pb::TaskState, pb::TaskState)>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Peeker {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        if ctx.task.is_none() {
            return sink.input_required("more, please").await;
        }
        let engine = crate::store::lock_std(&self.engine).clone();
        if let Some(engine) = engine {
            let got = get(&engine, &CallContext::new(), &ctx.task_id).await?;
            let stored = self
                .store
                .get(&Scope::new("", ""), &ctx.task_id)
                .await
                .map_err(|e| A2aError::internal(e.to_string()))?
                .ok_or_else(|| A2aError::task_not_found(&ctx.task_id))?;
            crate::store::lock_std(&self.seen).push((got.state(), stored.task.state()));
        }
        sink.complete().await
    }
}

/// Issue 15: a request that reaches a task whose inline follow-up turn holds commits stores
/// them before it looks: what it sees is in the store (the durability promise).
#[tokio::test]
async fn a_request_reaching_a_held_follow_up_turn_sees_only_what_is_stored() {
    let store = Arc::new(Counting::default());
    let peeker = Arc::new(Peeker {
        engine: std::sync::Mutex::new(None),
        store: store.clone(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let engine = Engine::builder(peeker.clone())
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "go").await;
    *crate::store::lock_std(&peeker.engine) = Some(engine.clone());
    let done = answer(&engine, &cx, &task.id).await.expect("follow-up");
    // The agent holds the engine: let it go (no cycle outlives the test).
    crate::store::lock_std(&peeker.engine).take();
    assert_eq!(done.state(), pb::TaskState::Completed);
    let seen = crate::store::lock_std(&peeker.seen).clone();
    assert_eq!(
        seen,
        [(pb::TaskState::Working, pb::TaskState::Working)],
        "GetTask during the turn answers with the WORKING task, which the store holds"
    );
}

/// Issue 15: CancelTask reaches the executor of a blocking follow-up turn that started inline
/// and waits, and the blocking caller answers with the canceled task.
#[tokio::test]
async fn cancel_task_reaches_a_blocking_follow_up_turn_and_its_caller() {
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let engine = Engine::builder(Arc::new(Patient { heard: tx })).build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "go").await;
    let caller = tokio::spawn({
        let (engine, id) = (engine.clone(), task.id.clone());
        async move { answer(&engine, &CallContext::new(), &id).await }
    });
    assert_eq!(heard.recv().await, Some("started"));
    let canceled = cancel(&engine, &cx, &task.id).await.expect("cancel");
    assert_eq!(canceled.state(), pb::TaskState::Canceled);
    let said = said_within(
        &mut heard,
        "the executor of the follow-up turn was never cancelled",
    )
    .await;
    assert_eq!(said, Some("cancelled"));
    let answered = caller.await.expect("join").expect("follow-up");
    assert_eq!(answered.state(), pb::TaskState::Canceled);
}

/// A blocking follow-up whose caller goes away while its held turn is being stored (the
/// client disconnected: the request's future is dropped halfway through the store write)
/// still stores the whole turn: the task is COMPLETED in the store and for every reader, not
/// left INPUT_REQUIRED with the agent's work lost, nor WORKING in memory with events nobody
/// published.
#[tokio::test]
async fn a_follow_up_whose_caller_leaves_while_its_turn_is_stored_is_stored_whole() {
    let store = Arc::new(Counting::default());
    let engine = Engine::builder(Arc::new(Asker::default()))
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "go").await;
    assert_eq!(task.state(), pb::TaskState::InputRequired);
    let gate = Gate::default();
    *crate::store::lock_std(&store.gate) = Some(gate.clone());
    let caller = tokio::spawn({
        let (engine, cx, id) = (engine.clone(), cx.clone(), task.id.clone());
        async move { answer(&engine, &cx, &id).await }
    });
    // The turn ran inline and its one write is in the store, stopped at the gate: the
    // caller leaves now.
    gate.entered.notified().await;
    caller.abort();
    assert!(caller.await.is_err_and(|e| e.is_cancelled()));
    crate::store::lock_std(&store.gate).take();
    gate.release.notify_one();
    let stored = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let read = get(&engine, &cx, &task.id).await.expect("get");
            if read.state() != pb::TaskState::InputRequired {
                return read;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the turn's write goes on without its caller");
    assert_eq!(stored.state(), pb::TaskState::Completed, "{stored:?}");
    assert!(stored.history.iter().any(|m| m.message_id == "m2"));
    assert_eq!(stored.artifacts.len(), 1, "{stored:?}");
    let events = store.events_after(&task.id, 0).await;
    let states: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event.payload {
            Some(pb::stream_response::Payload::StatusUpdate(s)) => {
                s.status.as_ref().map(|s| s.state())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        states.last(),
        Some(&pb::TaskState::Completed),
        "the log ends with the turn's COMPLETED: {states:?}"
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while engine.stats().live_tasks != 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("nothing stays live once the write is done");
}

/// CancelTask on a shared store whose task another process keeps writing (every conditional
/// commit conflicts for a while) does not retry at a sequence number read anew, which a task
/// streaming back to back could overtake every time (it gave up with `Unavailable`, first
/// after six immediate attempts, then after 5 s of retries): after one conflict it appends
/// the cancel where the log ends (`TaskStore::append_final`), which cannot conflict.
#[tokio::test]
async fn cancel_task_outlasts_a_run_of_conflicting_writes() {
    let store = Arc::new(Counting::default());
    let engine = Engine::builder(Arc::new(Asker::default()))
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let task = send_text(&engine, &cx, "hi").await;
    assert_eq!(task.state(), pb::TaskState::InputRequired);
    store.conflicts.store(12, Ordering::SeqCst);
    let canceled = cancel(&engine, &cx, &task.id)
        .await
        .expect("canceled after the conflicts");
    assert_eq!(canceled.state(), pb::TaskState::Canceled);
    assert_eq!(
        store.conflicts.load(Ordering::SeqCst),
        11,
        "one conditional commit, then the cancel appended at the end"
    );
    let read = get(&engine, &cx, &task.id).await.expect("get");
    assert_eq!(read.state(), pb::TaskState::Canceled, "as stored");
}

/// Says WORKING, then publishes an artifact once `go` is notified, then waits to be cancelled.
struct ArtifactOnCue {
    go: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for ArtifactOnCue {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        self.go.notified().await;
        let _ = sink
            .artifact(pb::Artifact::new("a", vec![pb::Part::text("x")]))
            .await;
        ctx.cancelled().await;
        Ok(())
    }
}

/// GetTask answers with the task as stored. A commit that fails leaves its change in the
/// writer's record (applied before the write), marked stale: GetTask used to answer with it —
/// an artifact, or a FAILED status, that no store holds and that a later read contradicts.
#[tokio::test]
async fn get_task_never_answers_a_change_that_was_not_stored() {
    let store = Arc::new(Counting::default());
    let go = Arc::new(tokio::sync::Notify::new());
    let engine = Engine::builder(Arc::new(ArtifactOnCue { go: go.clone() }))
        .stores(stores_of(&store))
        .build();
    let cx = CallContext::new();
    let mut stream = engine
        .send_streaming_message(
            &cx,
            pb::SendMessageRequest {
                message: Some(pb::Message::user("m1", vec![pb::Part::text("hi")])),
                ..Default::default()
            },
        )
        .await
        .expect("stream");
    let first = stream.next().await.expect("an event").expect("ok");
    let Some(pb::stream_response::Payload::Task(task)) = &first.response.payload else {
        panic!("the task first: {first:?}");
    };
    let id = task.id.clone();
    let working = stream.next().await.expect("an event").expect("ok");
    assert_eq!(working.seq, Some(2), "WORKING: {working:?}");
    store.failing.store(true, Ordering::SeqCst);
    go.notify_one();
    // The artifact's commit fails: the stream ends with the error.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        let mut last = None;
        while let Some(item) = stream.next().await {
            last = Some(item);
        }
        last
    })
    .await
    .expect("the stream ends");
    assert!(matches!(ended, Some(Err(_))), "{ended:?}");
    let read = get(&engine, &cx, &id).await.expect("get");
    let stored = store
        .get(&Scope::new("", ""), &id)
        .await
        .expect("read the store")
        .expect("the task is stored");
    assert_eq!(
        stored.task.generation as u64, stored.last_seq,
        "a task's generation is its last sequence number"
    );
    // A 1.0 caller's answer carries no generation.
    let stored_task = pb::Task {
        generation: 0,
        ..stored.task
    };
    assert_eq!(read, stored_task, "GetTask answers with the task as stored");
    assert!(read.artifacts.is_empty(), "the artifact was never stored");
    store.failing.store(false, Ordering::SeqCst);
}

/// The A2A 1.1 preview, in process: `1.1` is refused until the engine offers it; then a
/// preview caller's GetTask carries the generation (the last sequence number) while a 1.0
/// caller's does not, and a long poll on a task that does not move answers with it as it is
/// once the engine's own wait ends.
#[tokio::test]
async fn a_long_poll_answers_with_the_task_as_it_is_when_its_wait_ends() {
    let cx11 = || {
        let mut cx = CallContext::new();
        cx.version = Some(trident_core::PREVIEW_VERSION.to_owned());
        cx
    };
    let asked = |engine: Engine| async move {
        engine
            .send_message(
                &CallContext::new(),
                pb::SendMessageRequest {
                    message: Some(pb::Message::user("m1", vec![pb::Part::text("hi")])),
                    ..Default::default()
                },
            )
            .await
            .expect("send")
    };
    let plain = Engine::builder(Arc::new(Asker::default())).build();
    let Some(pb::send_message_response::Payload::Task(task)) = asked(plain.clone()).await.payload
    else {
        panic!("a task");
    };
    let refused = get(&plain, &cx11(), &task.id)
        .await
        .expect_err("1.1 is refused");
    assert_eq!(refused.kind(), trident_core::ErrorKind::VersionNotSupported);

    let engine = Engine::builder(Arc::new(Asker::default()))
        .config(crate::EngineConfig {
            preview: Some(crate::Preview {
                long_poll_timeout: std::time::Duration::from_millis(200),
            }),
            ..Default::default()
        })
        .build();
    let Some(pb::send_message_response::Payload::Task(task)) = asked(engine.clone()).await.payload
    else {
        panic!("a task");
    };
    assert_eq!(task.state(), pb::TaskState::InputRequired);
    assert_eq!(task.generation, 0, "a 1.0 caller's answer has none");
    let seen = get(&engine, &cx11(), &task.id).await.expect("get");
    // Created (1), then INPUT_REQUIRED (2).
    assert_eq!(seen.generation, 2, "{seen:?}");
    let started = std::time::Instant::now();
    let polled = engine
        .get_task(
            &cx11(),
            pb::GetTaskRequest {
                id: task.id.clone(),
                current_generation: Some(seen.generation),
                ..Default::default()
            },
        )
        .await
        .expect("the long poll answers at its timeout");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(200),
        "it waited for the task to move"
    );
    assert_eq!(polled, seen, "nothing moved: the task as it is");
}
