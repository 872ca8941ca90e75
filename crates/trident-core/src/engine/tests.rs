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

/// The in-memory store, counting the encoded bytes it is handed: a snapshot per `commit`,
/// the events of every write.
#[derive(Default)]
struct Counting {
    inner: MemoryStore,
    snapshot_bytes: AtomicUsize,
    event_bytes: AtomicUsize,
    snapshots: AtomicUsize,
}

impl Counting {
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
        self.count_events(events);
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
