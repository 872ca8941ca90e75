//! Retention of the in-memory store: bounded by count and by age, oldest terminal first,
//! never what is unfinished or still being delivered, and list pages stay consistent across
//! evictions. Deterministic: small bounds and a clock the tests move.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use trident_proto as pb;
use trident_proto::wkt::Timestamp;

use super::{MemoryStore, Retention};
use crate::store::{
    EventLog, LoggedEvent, PushConfigStore, Scope, SharedEvent, TaskQuery, TaskRecord, TaskStore,
};

fn task(id: &str, state: pb::TaskState, ts_ms: i64) -> pb::Task {
    pb::Task {
        id: id.to_owned(),
        context_id: "ctx".to_owned(),
        status: Some(pb::TaskStatus {
            state: state as i32,
            message: None,
            timestamp: Some(Timestamp::from_unix_nanos(i128::from(ts_ms) * 1_000_000)),
        }),
        ..Default::default()
    }
}

fn event(task: &pb::Task, seq: u64) -> LoggedEvent {
    LoggedEvent {
        seq,
        event: SharedEvent::new(pb::StreamResponse::new(pb::stream_response::Payload::Task(
            task.clone(),
        ))),
    }
}

/// Creates a task in `state` with one event.
async fn create(store: &MemoryStore, scope: &Scope, id: &str, state: pb::TaskState, ts: i64) {
    let t = task(id, state, ts);
    let ev = event(&t, 1);
    store
        .commit(scope, &TaskRecord::new(t, 1), None, &[ev])
        .await
        .expect("create");
}

/// Moves a task to `state` (one appended event).
async fn finish(store: &MemoryStore, scope: &Scope, id: &str, state: pb::TaskState, ts: i64) {
    let t = task(id, state, ts);
    let ev = event(&t, 2);
    store
        .append(scope, &TaskRecord::new(t, 2), 1, &[ev])
        .await
        .expect("finish");
}

fn scope() -> Scope {
    Scope::new("", "owner")
}

fn capped(max: usize) -> MemoryStore {
    MemoryStore::with_retention(Retention {
        max_tasks: Some(max),
        terminal_ttl: None,
    })
}

#[tokio::test]
async fn a_flood_of_tasks_keeps_the_count_bounded_oldest_terminal_first() {
    let store = capped(10);
    let s = scope();
    for i in 0..1_000 {
        create(&store, &s, &format!("t{i:04}"), pb::TaskState::Completed, i).await;
        assert!(store.held() <= 10, "{} tasks held after {i}", store.held());
    }
    assert_eq!(store.held(), 10);
    for i in 0..990 {
        let id = format!("t{i:04}");
        assert_eq!(
            TaskStore::get(&store, &s, &id).await.expect("get"),
            None,
            "{id} evicted"
        );
        assert!(
            EventLog::read(&store, &s, &id, 0, 10)
                .await
                .expect("read")
                .is_empty(),
            "{id}'s events went with it"
        );
    }
    for i in 990..1_000 {
        let id = format!("t{i:04}");
        assert!(
            TaskStore::get(&store, &s, &id)
                .await
                .expect("get")
                .is_some(),
            "{id} kept"
        );
    }
    let page = TaskStore::list(
        &store,
        &s,
        &TaskQuery {
            limit: 100,
            ..Default::default()
        },
    )
    .await
    .expect("list");
    assert_eq!(page.total, 10);
    assert_eq!(page.tasks.len(), 10);
}

#[tokio::test]
async fn unfinished_tasks_are_never_evicted_and_the_bound_is_restored_as_they_end() {
    let store = capped(3);
    let s = scope();
    create(&store, &s, "done-1", pb::TaskState::Completed, 1).await;
    for i in 0..5 {
        create(
            &store,
            &s,
            &format!("open-{i}"),
            pb::TaskState::Working,
            10 + i,
        )
        .await;
    }
    // Only unfinished tasks remain: the store keeps them all (a soft bound).
    assert_eq!(
        TaskStore::get(&store, &s, "done-1").await.expect("get"),
        None
    );
    assert_eq!(store.held(), 5);
    create(&store, &s, "waiting", pb::TaskState::InputRequired, 20).await;
    assert_eq!(store.held(), 6);
    for i in 0..5 {
        let id = format!("open-{i}");
        assert!(
            TaskStore::get(&store, &s, &id)
                .await
                .expect("get")
                .is_some(),
            "{id} kept"
        );
    }
    // As tasks end, the oldest ended goes first, down to the bound.
    finish(&store, &s, "open-3", pb::TaskState::Completed, 30).await;
    finish(&store, &s, "open-1", pb::TaskState::Failed, 31).await;
    finish(&store, &s, "open-0", pb::TaskState::Canceled, 32).await;
    assert_eq!(store.held(), 3);
    for id in ["open-3", "open-1", "open-0"] {
        assert_eq!(
            TaskStore::get(&store, &s, id).await.expect("get"),
            None,
            "{id} evicted"
        );
    }
    for id in ["open-2", "open-4", "waiting"] {
        assert!(
            TaskStore::get(&store, &s, id).await.expect("get").is_some(),
            "{id} kept"
        );
    }
}

#[tokio::test]
async fn a_leased_or_undelivered_task_stays_and_its_configs_go_with_it() {
    let store = capped(1);
    let s = scope();
    // A terminal task whose notifications are not all delivered yet.
    create(&store, &s, "pushed", pb::TaskState::Completed, 1).await;
    let config = pb::TaskPushNotificationConfig {
        id: "cfg".into(),
        task_id: "pushed".into(),
        url: "http://127.0.0.1:9/hook".into(),
        ..Default::default()
    };
    store
        .put(&s, &config, trident_core::Generation::V1)
        .await
        .expect("put");
    assert_eq!(
        store
            .claim_delivery(&s, "pushed", "node", i64::MAX, 0)
            .await
            .expect("claim"),
        Some(0)
    );
    // A terminal task still leased (its executor has not let go).
    let t = task("leased", pb::TaskState::Completed, 2);
    let mut record = TaskRecord::new(t.clone(), 1);
    record.lease = Some(crate::store::Lease {
        node: "node".into(),
        until_ms: i64::MAX,
    });
    store
        .commit(&s, &record, None, &[event(&t, 1)])
        .await
        .expect("create leased");
    create(&store, &s, "plain", pb::TaskState::Completed, 3).await;
    create(&store, &s, "plain-2", pb::TaskState::Completed, 4).await;
    assert!(
        TaskStore::get(&store, &s, "pushed")
            .await
            .expect("get")
            .is_some()
    );
    assert!(
        TaskStore::get(&store, &s, "leased")
            .await
            .expect("get")
            .is_some()
    );
    assert_eq!(
        TaskStore::get(&store, &s, "plain").await.expect("get"),
        None
    );

    // Delivered and released: the next eviction takes it, configs and cursor too.
    assert!(
        store
            .delivered(&s, "pushed", "node", 1, i64::MAX)
            .await
            .expect("delivered")
    );
    store
        .release_delivery(&s, "pushed", "node")
        .await
        .expect("release");
    create(&store, &s, "plain-3", pb::TaskState::Completed, 5).await;
    assert_eq!(
        TaskStore::get(&store, &s, "pushed").await.expect("get"),
        None
    );
    assert_eq!(
        PushConfigStore::get(&store, &s, "pushed", "cfg")
            .await
            .expect("config"),
        None,
        "the evicted task's push configs are gone"
    );
    assert_eq!(
        store
            .claim_delivery(&s, "pushed", "node", i64::MAX, 7)
            .await
            .expect("claim"),
        Some(7),
        "the evicted task's delivery cursor is gone"
    );
    assert!(
        TaskStore::get(&store, &s, "leased")
            .await
            .expect("get")
            .is_some()
    );
}

#[tokio::test]
async fn terminal_tasks_expire_after_their_ttl() {
    let now = Arc::new(AtomicI64::new(1_000_000));
    let clock = now.clone();
    let store = MemoryStore::with_retention(Retention {
        max_tasks: None,
        terminal_ttl: Some(Duration::from_secs(60)),
    })
    .with_clock(Arc::new(move || clock.load(Ordering::Relaxed)));
    let s = scope();
    create(&store, &s, "early", pb::TaskState::Completed, 1).await;
    create(&store, &s, "open", pb::TaskState::Working, 2).await;
    now.fetch_add(30_000, Ordering::Relaxed);
    create(&store, &s, "later", pb::TaskState::Rejected, 3).await;
    now.fetch_add(29_999, Ordering::Relaxed);
    assert!(
        TaskStore::get(&store, &s, "early")
            .await
            .expect("get")
            .is_some(),
        "59.999 s old"
    );
    now.fetch_add(1, Ordering::Relaxed);
    assert_eq!(
        TaskStore::get(&store, &s, "early").await.expect("get"),
        None,
        "60 s old"
    );
    assert!(
        TaskStore::get(&store, &s, "later")
            .await
            .expect("get")
            .is_some()
    );
    now.fetch_add(3_600_000, Ordering::Relaxed);
    assert_eq!(
        TaskStore::get(&store, &s, "later").await.expect("get"),
        None
    );
    assert!(
        TaskStore::get(&store, &s, "open")
            .await
            .expect("get")
            .is_some(),
        "an unfinished task has no age limit"
    );
    assert_eq!(store.held(), 1);
}

#[tokio::test]
async fn list_pages_across_evictions_have_no_duplicate_and_no_phantom() {
    let store = capped(50);
    let s = scope();
    let mut created = HashSet::new();
    // 50 ended tasks; list order is newest first, so the oldest (first evicted) come last.
    for i in 0..50 {
        let id = format!("a{i:03}");
        create(&store, &s, &id, pb::TaskState::Completed, 1_000 + i).await;
        created.insert(id);
    }
    let mut seen = Vec::new();
    let mut query = TaskQuery {
        limit: 10,
        ..Default::default()
    };
    let first = TaskStore::list(&store, &s, &query).await.expect("page 1");
    seen.extend(first.tasks.iter().map(|t| t.id.clone()));
    query.after = first.next.clone();
    assert!(query.after.is_some());

    // 30 newer tasks evict the 30 oldest, all not yet listed.
    for i in 0..30 {
        let id = format!("b{i:03}");
        create(&store, &s, &id, pb::TaskState::Completed, 5_000 + i).await;
        created.insert(id);
    }
    // The next page, and then evictions between every page.
    let mut extra = 0;
    while query.after.is_some() {
        let page = TaskStore::list(&store, &s, &query).await.expect("page");
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        query.after = page.next;
        let id = format!("c{extra:03}");
        create(&store, &s, &id, pb::TaskState::Completed, 9_000 + extra).await;
        created.insert(id);
        extra += 1;
        assert!(extra < 50, "paging ends");
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no task twice: {seen:?}");
    for id in &seen {
        assert!(created.contains(id), "{id} is a phantom");
    }
    // Every task older than page 1 that outlived the paging was listed (nothing skipped).
    for i in 0..50 {
        let id = format!("a{i:03}");
        if !seen.contains(&id)
            && TaskStore::get(&store, &s, &id)
                .await
                .expect("get")
                .is_some()
        {
            panic!("{id} exists and was skipped");
        }
    }
    assert_eq!(
        &seen[..10],
        &(40..50)
            .rev()
            .map(|i| format!("a{i:03}"))
            .collect::<Vec<_>>()[..]
    );
}

#[tokio::test]
async fn unlimited_keeps_everything() {
    let store = MemoryStore::with_retention(Retention::unlimited());
    let s = scope();
    for i in 0..300 {
        create(&store, &s, &format!("t{i}"), pb::TaskState::Completed, i).await;
    }
    assert_eq!(store.held(), 300);
    assert!(
        TaskStore::get(&store, &s, "t0")
            .await
            .expect("get")
            .is_some()
    );
}

#[tokio::test]
async fn a_bounded_store_passes_the_contract() {
    let store = Arc::new(MemoryStore::with_retention(Retention {
        max_tasks: Some(1_000),
        terminal_ttl: Some(Duration::from_secs(3600)),
    }));
    let stores = crate::store::Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: store,
    };
    trident_testkit::contract::run(&stores).await;
}

#[tokio::test]
async fn a_held_task_is_not_evicted_until_its_last_hold_is_dropped() {
    let store = capped(1);
    let s = scope();
    create(&store, &s, "read", pb::TaskState::Working, 1).await;
    let first = store.hold(&s, "read").expect("a bounded store holds");
    let second = store.hold(&s, "read").expect("a bounded store holds");
    finish(&store, &s, "read", pb::TaskState::Completed, 2).await;
    // Unfinished tasks (never evicted) push the store over its bound of 1.
    create(&store, &s, "next", pb::TaskState::Working, 3).await;
    assert_eq!(store.held(), 2, "the held task stays beyond the bound");
    assert_eq!(store.read(&s, "read", 0, 10).await.expect("read").len(), 2);
    drop(first);
    create(&store, &s, "more", pb::TaskState::Working, 4).await;
    assert!(
        TaskStore::get(&store, &s, "read")
            .await
            .expect("get")
            .is_some(),
        "one hold is left"
    );
    drop(second);
    create(&store, &s, "last", pb::TaskState::Working, 5).await;
    assert!(
        TaskStore::get(&store, &s, "read")
            .await
            .expect("get")
            .is_none(),
        "evicted once nobody holds it"
    );
    assert_eq!(store.held(), 3, "only the unfinished tasks are left");
    assert!(
        MemoryStore::with_retention(Retention::unlimited())
            .hold(&s, "read")
            .is_none(),
        "a store that never evicts needs no hold"
    );
}

/// Emits `n` artifact chunks, completes, then says so on `done`.
struct Burst {
    n: usize,
    done: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl trident_core::AgentExecutor for Burst {
    async fn execute(
        &self,
        _ctx: trident_core::RequestContext,
        sink: trident_core::EventSink,
    ) -> Result<(), trident_core::A2aError> {
        sink.working().await?;
        for i in 0..self.n {
            let artifact = pb::Artifact::new("answer", vec![pb::Part::text(format!("{i} "))]);
            sink.artifact_chunk(artifact, i > 0, i + 1 == self.n)
                .await?;
        }
        sink.complete().await?;
        self.done.notify_one();
        Ok(())
    }
}

/// The retention gap of issue 15: a stream that fell behind (its events are no longer in the
/// engine's in-memory tail) on a task that then ends and would be evicted must still read
/// every event to the end, and the task goes once the stream is done.
#[tokio::test]
async fn a_stream_draining_an_ended_task_keeps_it_from_eviction() {
    use futures::StreamExt as _;
    use trident_core::A2aService as _;

    // More than a reader fetches at once (64), far more than the tail holds (4).
    const CHUNKS: usize = 300;
    let store = Arc::new(capped(1));
    let stores = crate::store::Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: store.clone(),
    };
    let done = Arc::new(tokio::sync::Notify::new());
    let engine = crate::Engine::builder(Arc::new(Burst {
        n: CHUNKS,
        done: done.clone(),
    }))
    .stores(stores)
    .config(crate::EngineConfig {
        tail_capacity: 4,
        ..Default::default()
    })
    .build();
    let cx = trident_core::CallContext::new();
    let request = |id: &str| pb::SendMessageRequest {
        message: Some(pb::Message::user(id, vec![pb::Part::text("go")])),
        ..Default::default()
    };
    let mut stream = engine
        .send_streaming_message(&cx, request("watched"))
        .await
        .expect("stream");
    let first = stream.next().await.expect("an event").expect("no error");
    let Some(pb::stream_response::Payload::Task(task)) = &first.response.payload else {
        panic!("the stream starts with the task: {first:?}");
    };
    let watched = task.id.clone();
    // The task ends while the stream has read only its first event.
    done.notified().await;
    // Other tasks end after it: the bound (1) wants the oldest ended task, the watched one, out.
    for n in 0..3 {
        let reply = engine
            .send_message(&cx, request(&format!("flood-{n}")))
            .await
            .expect("send");
        assert!(matches!(
            reply.payload,
            Some(pb::send_message_response::Payload::Task(ref t)) if t.state() == pb::TaskState::Completed
        ));
    }
    let kept = engine
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: watched.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("the watched task is kept while its stream reads it");
    assert_eq!(kept.state(), pb::TaskState::Completed);
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(30), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends instead of waiting for events that are gone");
    let rest: Vec<_> = rest
        .into_iter()
        .map(|e| e.expect("every event is read"))
        .collect();
    // WORKING, every chunk, COMPLETED.
    assert_eq!(rest.len(), CHUNKS + 2, "{rest:?}");
    assert!(matches!(
        rest.last().and_then(|e| e.response.payload.as_ref()),
        Some(pb::stream_response::Payload::StatusUpdate(u))
            if u.status.as_ref().is_some_and(|s| s.state == pb::TaskState::Completed as i32)
    ));
    // Without a reader the next commit evicts it.
    engine
        .send_message(&cx, request("after"))
        .await
        .expect("send");
    let gone = engine
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: watched,
                ..Default::default()
            },
        )
        .await;
    assert!(gone.is_err(), "evicted once the stream is done: {gone:?}");
    assert_eq!(store.held(), 1);
    engine.shutdown().await;
}

/// A packed (terminal) log reads the same as the open one from every position and batch size,
/// across the boundaries of its index.
#[test]
fn a_packed_log_reads_like_the_open_one_from_every_position() {
    use super::{Log, PACK_STRIDE};
    let t = task("packed", pb::TaskState::Working, 1);
    for len in [
        0,
        1,
        PACK_STRIDE - 1,
        PACK_STRIDE,
        PACK_STRIDE + 1,
        3 * PACK_STRIDE + 5,
    ] {
        let events: Vec<LoggedEvent> = (1..=len as u64)
            .map(|seq| {
                let mut t = t.clone();
                t.context_id = format!("c{seq}");
                event(&t, seq)
            })
            .collect();
        let open = Log::Open(events.clone());
        // Events of unknown size and events that carry it (the engine's) pack the same.
        let measured: Vec<LoggedEvent> = events
            .iter()
            .map(|e| LoggedEvent {
                seq: e.seq,
                event: SharedEvent::measured((*e.event).clone()),
            })
            .collect();
        for events in [&events, &measured] {
            let packed = Log::pack(events);
            for after in 0..=len as u64 + 2 {
                for limit in [1, 7, PACK_STRIDE, usize::MAX] {
                    let want = open.read(after, limit);
                    let got = packed.read(after, limit);
                    assert_eq!(
                        got.iter().map(|e| e.seq).collect::<Vec<_>>(),
                        want.iter().map(|e| e.seq).collect::<Vec<_>>(),
                        "len {len}, after {after}, limit {limit}"
                    );
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g.event, w.event, "seq {}", g.seq);
                    }
                }
            }
        }
    }
}

/// `memory?…` specs: each parameter, `0`/`none` lifting a limit, the default for what is not
/// given, a clear error naming the accepted forms for anything else; and the bound a spec
/// sets holds in the store it opens.
#[tokio::test]
async fn memory_specs_set_the_retention() {
    let parse = Retention::from_params;
    assert_eq!(parse("").expect("empty"), Retention::default());
    assert_eq!(
        parse("max_tasks=5&terminal_ttl=60").expect("both"),
        Retention {
            max_tasks: Some(5),
            terminal_ttl: Some(Duration::from_secs(60)),
        }
    );
    assert_eq!(
        parse("terminal_ttl=30").expect("ttl"),
        Retention {
            max_tasks: Some(Retention::DEFAULT_MAX_TASKS),
            terminal_ttl: Some(Duration::from_secs(30)),
        }
    );
    assert_eq!(
        parse("max_tasks=none&terminal_ttl=0").expect("unlimited"),
        Retention::unlimited()
    );
    for bad in ["max_tasks=-1", "ttl=5", "max_tasks", "terminal_ttl=1h"] {
        let err = parse(bad).expect_err("refused");
        assert!(err.to_string().contains("max_tasks=N"), "{bad}: {err}");
    }
    assert!(crate::store::open_memory("sqlite:x.db").is_none());
    assert!(matches!(
        crate::store::open_memory("memory?ttl=5"),
        Some(Err(_))
    ));
    let stores = crate::store::open_memory("memory")
        .expect("a memory spec")
        .expect("memory");
    assert!(!stores.tasks.shared());

    // The spec's bound holds: two ended tasks at most.
    let stores = crate::store::open_memory("memory?max_tasks=2")
        .expect("a memory spec")
        .expect("memory with a bound");
    let scope = Scope::new("", "o");
    for i in 0..5 {
        let task = pb::Task {
            id: format!("t{i}"),
            context_id: "c".into(),
            status: Some(pb::TaskStatus::now(pb::TaskState::Completed, None)),
            ..Default::default()
        };
        stores
            .tasks
            .commit(&scope, &TaskRecord::new(task, 0), None, &[])
            .await
            .expect("commit");
    }
    for i in 0..5 {
        let held = stores
            .tasks
            .get(&scope, &format!("t{i}"))
            .await
            .expect("get");
        assert_eq!(held.is_some(), i >= 3, "t{i}");
    }
}
