//! `trident serve` on SQLite survives `kill -9`: what a client received is in the log,
//! completed tasks are intact, the task that was working ends FAILED (the documented policy for
//! a task whose process stopped), and resubscribing from the last seen sequence number
//! continues without loss or duplicate.

use std::time::Duration;

use futures::StreamExt;
use trident_client::Binding;
use trident_core::{A2aService, CallContext, StreamEvent};
use trident_proto as pb;

use crate::harness::{collect, cx, msg, req, send_task, state_of, wait_for};
use crate::process::{TempDir, Trident};

fn subscribe_req(id: &str) -> pb::SubscribeToTaskRequest {
    pb::SubscribeToTaskRequest {
        id: id.into(),
        ..Default::default()
    }
}

/// Every event of a task's log, replayed from the start.
pub async fn replay(svc: &dyn A2aService, id: &str) -> Vec<StreamEvent> {
    let stream = svc
        .subscribe_to_task(&CallContext::new().with_last_event_id(0), subscribe_req(id))
        .await
        .expect("replay from 0");
    collect(stream).await
}

pub fn seqs(events: &[StreamEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq.expect("sequenced")).collect()
}

async fn sqlite_kill_9_over(binding: Binding) {
    let dir = TempDir::new("trident-crash");
    let store = format!("sqlite:{}", dir.0.join("trident.db").display());
    let args = ["--agent", "demo", "--store", &store];
    let mut server = Trident::serve(&args).await;
    let svc = server.client(binding).await;

    let done = send_task(svc.as_ref(), &cx(), "hello before the crash").await;
    assert_eq!(done.state(), pb::TaskState::Completed);

    // 10,000 chunks 20 ms apart: still working when the process dies.
    let mut stream = svc
        .send_streaming_message(&cx(), req(msg("stream 10000 20")))
        .await
        .expect("stream");
    let mut received = Vec::new();
    while received.len() < 12 {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("an event in time")
            .expect("stream open")
            .expect("event");
        received.push(event);
    }
    let task_id = match received[0].response.payload.as_ref() {
        Some(pb::stream_response::Payload::Task(t)) => t.id.clone(),
        other => panic!("a stream starts with the task, got {other:?}"),
    };
    server.kill();
    drop(stream);

    let server = Trident::serve(&args).await;
    let svc = server.client(binding).await;
    let get = |id: &str| pb::GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    assert_eq!(
        svc.get_task(&cx(), get(&done.id)).await.expect("get"),
        done,
        "a completed task is intact after kill -9"
    );
    let failed = wait_for(svc.as_ref(), &cx(), &task_id, |t| {
        t.state() == pb::TaskState::Failed
    })
    .await;
    let why = failed
        .status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .map(|m| m.text())
        .unwrap_or_default();
    assert!(
        why.contains("stopped before it finished"),
        "the FAILED status says why: {why:?}"
    );

    let log = replay(svc.as_ref(), &task_id).await;
    let n = log.len() as u64;
    assert_eq!(seqs(&log), (1..=n).collect::<Vec<_>>(), "a gapless log");
    assert_eq!(
        log[..received.len()],
        received[..],
        "every event a client received before the crash is in the log, unchanged"
    );
    assert_eq!(
        log.last().and_then(state_of),
        Some(pb::TaskState::Failed),
        "the log ends with the recovery's FAILED event"
    );

    let last_seen = received.last().and_then(|e| e.seq).expect("sequenced");
    let resumed = collect(
        svc.subscribe_to_task(
            &CallContext::new().with_last_event_id(last_seen),
            subscribe_req(&task_id),
        )
        .await
        .expect("resubscribe"),
    )
    .await;
    assert_eq!(
        seqs(&resumed),
        (last_seen + 1..=n).collect::<Vec<_>>(),
        "resuming after the last seen event: nothing lost, nothing repeated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_kill_9_rest() {
    sqlite_kill_9_over(Binding::Rest).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_kill_9_grpc() {
    sqlite_kill_9_over(Binding::Grpc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_kill_9_jsonrpc() {
    sqlite_kill_9_over(Binding::JsonRpc).await;
}

/// How a second process reaches the first one's database file.
#[derive(Debug, Clone, Copy)]
enum Link {
    Symbolic,
    Hard,
}

/// A second `trident serve` on a SQLite file another one serves is refused, whatever name
/// it reaches the file by: the lock is on the file, not on a name derived from its path.
/// (Through a symbolic link the second used to start and fail the first's running tasks as
/// orphans; through a hard link both wrote, each with its own WAL, until the file failed
/// its integrity check.) The first keeps serving, its running task untouched.
async fn a_second_process_through_a_link_is_refused(link: Link) {
    let dir = TempDir::new("trident-link");
    let file = dir.0.join("trident.db");
    let store = format!("sqlite:{}", file.display());
    let server = Trident::serve(&["--agent", "demo", "--store", &store]).await;
    let svc = server.client(Binding::Rest).await;
    let mut running = svc
        .send_streaming_message(&cx(), req(msg("stream 100000 20")))
        .await
        .expect("stream");
    let first = running.next().await.expect("an event").expect("the task");
    let id = match first.response.payload.as_ref() {
        Some(pb::stream_response::Payload::Task(t)) => t.id.clone(),
        other => panic!("a stream starts with the task, got {other:?}"),
    };

    let other = dir.0.join("other.db");
    match link {
        Link::Symbolic => std::os::unix::fs::symlink(&file, &other).expect("symlink"),
        Link::Hard => std::fs::hard_link(&file, &other).expect("hard link"),
    }
    let other_store = format!("sqlite:{}", other.display());
    let refusal = Trident::serve_refused(&["--agent", "demo", "--store", &other_store]).await;
    assert!(
        refusal.contains("other.db") && refusal.contains("in use by"),
        "the refusal names the file and says it is in use ({link:?}): {refusal}"
    );
    assert!(
        refusal.contains(&format!("process {}", server.pid())),
        "the refusal names the holder ({link:?}): {refusal}"
    );

    // The first process's task runs on, untouched: more chunks arrive, and it is WORKING.
    for _ in 0..3 {
        tokio::time::timeout(crate::wait::CEILING, running.next())
            .await
            .expect("the first process keeps streaming")
            .expect("stream open")
            .expect("event");
    }
    let task = svc
        .get_task(
            &cx(),
            pb::GetTaskRequest {
                id,
                ..Default::default()
            },
        )
        .await
        .expect("get");
    assert_eq!(task.state(), pb::TaskState::Working, "{link:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_through_a_symbolic_link_is_refused() {
    a_second_process_through_a_link_is_refused(Link::Symbolic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_through_a_hard_link_is_refused() {
    a_second_process_through_a_link_is_refused(Link::Hard).await;
}

/// On SQLite a streaming turn's events are committed behind its agent, many to a write (the
/// store asks for it: `TaskStore::commits_behind`), and nothing changes for a reader: the
/// stream carries every event once, in order, and the log holds exactly what it carried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_commits_a_streaming_turn_behind_its_agent() {
    use std::sync::Arc;
    let dir = TempDir::new("trident-behind");
    let store = Arc::new(
        trident_store::SqliteStore::open(dir.0.join("tasks.db"))
            .await
            .expect("open"),
    );
    let engine = trident_engine::Engine::builder(Arc::new(trident_testkit::agents::Demo))
        .stores(trident_core::store::Stores::of(store.clone()))
        .build();
    let before = store.stats();
    let stream = engine
        .send_streaming_message(&cx(), req(msg("stream 2000 0")))
        .await
        .expect("stream");
    let events = collect(stream).await;
    let writes = store.stats().requests - before.requests;
    let seen = seqs(&events);
    assert_eq!(
        seen,
        (1..=seen.len() as u64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert!(events.len() > 2000, "{} events", events.len());
    assert!(
        (writes as usize) * 2 < events.len(),
        "{writes} writes for {} events: not committed behind the agent",
        events.len()
    );
    let id = match events[0].response.payload.as_ref() {
        Some(pb::stream_response::Payload::Task(t)) => t.id.clone(),
        other => panic!("a stream starts with the task, got {other:?}"),
    };
    assert_eq!(
        seqs(&replay(&engine, &id).await),
        seen,
        "the log holds them all"
    );
}
