//! Engine unit tests: what the engine hands its store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt as _;
use prost::Message as _;
use trident_proto as pb;

use crate::store::{
    EventLog, LoggedEvent, MemoryStore, Scope, StoreError, Stores, TaskPage, TaskQuery, TaskRecord,
    TaskStore,
};
use crate::{A2aError, A2aService, AgentExecutor, CallContext, Engine, EventSink, RequestContext};

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
}

impl Counting {
    fn check(&self) -> Result<(), StoreError> {
        if self.failing.load(Ordering::SeqCst) {
            Err(StoreError::Backend("the disk is gone".into()))
        } else {
            Ok(())
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
        self.count_events(events);
        self.appends.fetch_add(1, Ordering::Relaxed);
        self.inner.append(scope, record, expected_seq, events).await
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
    let task = engine
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: task_id,
                ..Default::default()
            },
        )
        .await
        .expect("get");
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
    let task = engine
        .cancel_task(
            &CallContext::new(),
            pb::CancelTaskRequest {
                id,
                ..Default::default()
            },
        )
        .await
        .expect("cancel");
    assert_eq!(task.state(), pb::TaskState::Canceled);
    let said = tokio::time::timeout(std::time::Duration::from_secs(20), heard.recv())
        .await
        .expect("the executor of the follow-up turn was never cancelled");
    assert_eq!(said, Some("cancelled"));
}

/// Issue 15: when a follow-up turn's progress can no longer be stored, the engine stops the
/// turn — through the same token CancelTask uses, so the executor hears it.
#[tokio::test]
async fn a_store_failure_stops_the_executor_of_a_follow_up_turn() {
    let store = Arc::new(Counting::default());
    let stores = Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: Arc::new(MemoryStore::new()),
    };
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
    let engine = Engine::builder(Arc::new(agent)).stores(stores).build();
    let (_id, mut heard) = follow_up_running(&engine, rx).await;
    let said = tokio::time::timeout(std::time::Duration::from_secs(20), heard.recv())
        .await
        .expect("the executor of the follow-up turn was never stopped");
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
    let read = engine
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("get");
    assert_eq!(read, task, "the answer is the task as stored");
    assert_eq!(engine.stats().live_tasks, 0);
}
