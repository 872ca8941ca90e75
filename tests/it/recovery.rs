//! What an engine does with the work of a process that stopped: tasks left in progress under
//! its lease, and push notifications it had not delivered. The stores are real (SQLite files,
//! and PostgreSQL when `TRIDENT_TEST_POSTGRES` is set); the stopped process is simulated by
//! writing its state into the store before the engine starts.

use std::sync::Arc;
use std::time::Duration;

use trident_core::store::{Lease, LoggedEvent, Scope, SharedEvent, Stores, TaskRecord, now_ms};
use trident_core::{A2aError, A2aService, AgentExecutor, EventSink, RequestContext};
use trident_engine::{Engine, EngineConfig};
use trident_http::HttpWebhooks;
use trident_proto as pb;
use trident_testkit::agents::Echo;

use crate::durability::{replay, seqs};
use crate::harness::{cx, state_of, wait_for};
use crate::process::TempDir;
use crate::push::{next, receiver};

/// Echo, declared safe to run again after a crash.
struct RetrySafeEcho;

#[async_trait::async_trait]
impl AgentExecutor for RetrySafeEcho {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        Echo.execute(ctx, sink).await
    }

    fn retry_safe(&self) -> bool {
        true
    }
}

fn event(payload: pb::stream_response::Payload, seq: u64) -> LoggedEvent {
    LoggedEvent {
        seq,
        event: SharedEvent::new(pb::StreamResponse::new(payload)),
    }
}

/// Writes what a process that died mid-turn leaves behind: a WORKING task (Task + WORKING
/// events) leased by `node` until `until_ms`.
async fn orphan(stores: &Stores, scope: &Scope, node: &str, until_ms: i64) -> pb::Task {
    let id = uuid::Uuid::new_v4().to_string();
    let mut message = pb::Message::user("m1", vec![pb::Part::text("echo me")]);
    message.task_id = id.clone();
    message.context_id = "ctx".into();
    let mut task = pb::Task {
        id: id.clone(),
        context_id: "ctx".into(),
        status: Some(pb::TaskStatus::now(pb::TaskState::Submitted, None)),
        history: vec![message],
        ..Default::default()
    };
    let created = event(pb::stream_response::Payload::Task(task.clone()), 1);
    let working = pb::TaskStatus::now(pb::TaskState::Working, None);
    task.status = Some(working.clone());
    let update = event(
        pb::stream_response::Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
            task_id: id.clone(),
            context_id: "ctx".into(),
            status: Some(working),
            metadata: None,
            generation: 0,
        }),
        2,
    );
    let mut record = TaskRecord::new(task.clone(), 2);
    record.lease = Some(Lease {
        node: node.into(),
        until_ms,
    });
    stores
        .tasks
        .commit(scope, &record, None, &[created, update])
        .await
        .expect("write the orphan");
    task
}

async fn sqlite(dir: &TempDir) -> Stores {
    trident_store::open(&format!("sqlite:{}", dir.0.join("t.db").display()))
        .await
        .expect("open sqlite")
}

fn engine(stores: Stores, executor: Arc<dyn AgentExecutor>) -> Arc<dyn A2aService> {
    Arc::new(
        Engine::builder(executor)
            .stores(stores)
            .config(EngineConfig {
                lease_ttl: Duration::from_millis(600),
                ..Default::default()
            })
            .build(),
    )
}

fn failure_text(task: &pb::Task) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_orphaned_task_fails_at_start_up() {
    let dir = TempDir::new("trident-recovery");
    let stores = sqlite(&dir).await;
    // Unexpired, but a SQLite store has one process: every lease at start-up is an orphan.
    let task = orphan(&stores, &Scope::new("", ""), "dead-node", now_ms() + 60_000).await;
    let svc = engine(stores, Arc::new(Echo));
    let failed = wait_for(svc.as_ref(), &cx(), &task.id, |t| {
        t.state() == pb::TaskState::Failed
    })
    .await;
    assert!(
        failure_text(&failed).contains("dead-node"),
        "the message names the stopped process: {:?}",
        failure_text(&failed)
    );
    let log = replay(svc.as_ref(), &task.id).await;
    assert_eq!(seqs(&log), [1, 2, 3]);
    assert_eq!(log.last().and_then(state_of), Some(pb::TaskState::Failed));
}

#[tokio::test]
async fn a_retry_safe_executor_runs_an_orphan_again() {
    let dir = TempDir::new("trident-recovery");
    let stores = sqlite(&dir).await;
    let task = orphan(&stores, &Scope::new("", ""), "dead-node", now_ms() + 60_000).await;
    let svc = engine(stores, Arc::new(RetrySafeEcho));
    let done = wait_for(svc.as_ref(), &cx(), &task.id, |t| {
        t.state() == pb::TaskState::Completed
    })
    .await;
    let echoed: Vec<String> = done
        .artifacts
        .iter()
        .flat_map(|a| {
            a.parts.iter().filter_map(|p| match &p.content {
                Some(pb::part::Content::Text(t)) => Some(t.clone()),
                _ => None,
            })
        })
        .collect();
    assert!(
        echoed.iter().any(|t| t.contains("echo me")),
        "the re-run answered the last user message: {echoed:?}"
    );
    let states: Vec<_> = replay(svc.as_ref(), &task.id)
        .await
        .iter()
        .filter_map(state_of)
        .collect();
    assert_eq!(
        states.first().copied(),
        Some(pb::TaskState::Submitted),
        "{states:?}"
    );
    assert_eq!(
        states.last().copied(),
        Some(pb::TaskState::Completed),
        "{states:?}"
    );
}

#[tokio::test]
async fn undelivered_push_notifications_resume_at_start_up() {
    let dir = TempDir::new("trident-recovery");
    let stores = sqlite(&dir).await;
    let scope = Scope::new("", "");
    let (url, mut rx) = receiver(0).await;
    // A completed task whose deliverer died after event 1.
    let mut task = orphan(&stores, &scope, "dead-node", now_ms() + 60_000).await;
    task.status = Some(pb::TaskStatus::now(pb::TaskState::Completed, None));
    let done = event(
        pb::stream_response::Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            metadata: None,
            generation: 0,
        }),
        3,
    );
    stores
        .tasks
        .commit(&scope, &TaskRecord::new(task.clone(), 3), Some(2), &[done])
        .await
        .expect("complete");
    stores
        .push
        .put(
            &scope,
            &pb::TaskPushNotificationConfig {
                id: "hook".into(),
                task_id: task.id.clone(),
                url,
                ..Default::default()
            },
            trident_core::Generation::V1,
        )
        .await
        .expect("config");
    assert_eq!(
        stores
            .push
            // Still valid when the engine starts: it is resumed once it lapses.
            .claim_delivery(&scope, &task.id, "dead-node", now_ms() + 300, 1)
            .await
            .expect("claim"),
        Some(1)
    );
    let policy = trident_engine::WebhookPolicy::new()
        .allow("127.0.0.1")
        .expect("policy");
    let webhooks =
        HttpWebhooks::with_policy(Duration::from_secs(5), policy.clone()).expect("client");
    let _engine = Engine::builder(Arc::new(Echo))
        .stores(stores)
        .webhooks(Arc::new(webhooks))
        .config(EngineConfig {
            lease_ttl: Duration::from_millis(600),
            webhook_policy: policy,
            ..Default::default()
        })
        .build();
    let kinds = [next(&mut rx).await.body, next(&mut rx).await.body];
    let states: Vec<_> = kinds
        .iter()
        .map(|b| match &b.payload {
            Some(pb::stream_response::Payload::StatusUpdate(u)) => u
                .status
                .as_ref()
                .and_then(|s| pb::TaskState::try_from(s.state).ok()),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [Some(pb::TaskState::Working), Some(pb::TaskState::Completed)],
        "events 2 and 3, in order, after the delivered event 1"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "nothing else"
    );
}

/// On a shared store a lease is an orphan only once it expires: a live process elsewhere keeps
/// its task.
#[tokio::test]
async fn on_postgres_only_expired_leases_are_recovered() {
    let Some(url) = crate::harness::postgres_url("on_postgres_only_expired_leases_are_recovered")
    else {
        return;
    };
    let schema = format!("trident_it_{}", uuid::Uuid::new_v4().simple());
    let sep = if url.contains('?') { '&' } else { '?' };
    let stores = trident_store::open(&format!("{url}{sep}schema={schema}"))
        .await
        .expect("open postgres");
    let scope = Scope::new("", "");
    let alive = orphan(&stores, &scope, "alive-node", now_ms() + 60_000).await;
    // Store calls are counted, to know when the sweeper has looked for lapsed leases.
    let metrics = Arc::new(trident_server::Metrics::new());
    let counted = trident_server::observed_stores(stores.clone(), metrics.clone());
    let svc = engine(counted, Arc::new(Echo));
    // Two whole sweeps (every lease_ttl / 2 = 300 ms) have passed once a third begins.
    crate::wait::until("three sweeps for lapsed leases", || {
        let sweeps = lapsed_lease_lookups(&metrics);
        async move { (sweeps >= 3).then_some(()) }
    })
    .await;
    let get = pb::GetTaskRequest {
        id: alive.id.clone(),
        ..Default::default()
    };
    assert_eq!(
        svc.get_task(&cx(), get).await.expect("get").state(),
        pb::TaskState::Working,
        "a task whose process renews its lease is left alone"
    );
    // The other process stops renewing: its lease lapses.
    stores
        .tasks
        .renew_leases("alive-node", now_ms() - 1)
        .await
        .expect("expire");
    let failed = wait_for(svc.as_ref(), &cx(), &alive.id, |t| {
        t.state() == pb::TaskState::Failed
    })
    .await;
    assert!(failure_text(&failed).contains("alive-node"));
    drop(svc);
    let _ = std::process::Command::new("psql")
        .args([
            url.as_str(),
            "-qc",
            &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
        ])
        .output();
}

#[tokio::test]
async fn every_orphan_is_recovered_not_only_the_first_batch() {
    let dir = TempDir::new("trident-recovery");
    let stores = sqlite(&dir).await;
    let scope = Scope::new("", "");
    let orphans = futures::future::join_all(
        (0..250).map(|_| orphan(&stores, &scope, "dead-node", now_ms() + 60_000)),
    )
    .await;
    let svc = engine(stores, Arc::new(Echo));
    for task in &orphans {
        wait_for(svc.as_ref(), &cx(), &task.id, |t| {
            t.state() == pb::TaskState::Failed
        })
        .await;
    }
}

/// How many times the engine has asked the store for lapsed leases (one per sweep, more when
/// a sweep finds a full batch), read from the store latency histogram's count.
fn lapsed_lease_lookups(metrics: &trident_server::Metrics) -> u64 {
    metrics
        .render()
        .lines()
        .find_map(|line| {
            line.strip_prefix("trident_store_duration_seconds_count{op=\"lapsed_leases\"} ")
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
