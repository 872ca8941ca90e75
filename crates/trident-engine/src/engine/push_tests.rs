//! Push delivery unit tests: what holds a task in memory while its webhooks are served.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use trident_proto as pb;

use crate::store::{
    ConfigCount, MemoryStore, PushConfigStore, Scope, StoreError, Stores, TaskStore,
};
use trident_core::Generation;

use crate::{Engine, EngineConfig, WebhookError, WebhookPolicy, WebhookRequest, WebhookTransport};
use trident_core::{A2aService, CallContext};

/// A webhook whose first POST waits for `first` and then succeeds, and whose later POSTs never
/// answer; each of those, when dropped unanswered (its lane stopped), says so on `abandoned`.
struct Stuck {
    posts: AtomicUsize,
    first: tokio::sync::Notify,
    abandoned: tokio::sync::mpsc::UnboundedSender<u64>,
}

/// Sends the event's seq on drop: a POST given up while it waited.
struct Abandoned(tokio::sync::mpsc::UnboundedSender<u64>, u64);

impl Drop for Abandoned {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

#[async_trait::async_trait]
impl WebhookTransport for Stuck {
    async fn post(&self, request: &WebhookRequest) -> Result<(), WebhookError> {
        if self.posts.fetch_add(1, Ordering::SeqCst) == 0 {
            self.first.notified().await;
            return Ok(());
        }
        let _note = Abandoned(self.abandoned.clone(), request.seq);
        std::future::pending().await
    }
}

/// The in-memory push store, except that the delivery claim is always lost when the cursor
/// moves (another process took it over), counting how often.
struct LosesClaim {
    inner: MemoryStore,
    lost: AtomicUsize,
}

#[async_trait::async_trait]
impl PushConfigStore for LosesClaim {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), StoreError> {
        self.inner.put(scope, config, generation).await
    }
    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<(pb::TaskPushNotificationConfig, Generation)>, StoreError> {
        PushConfigStore::get(&self.inner, scope, task_id, id).await
    }
    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        PushConfigStore::list(&self.inner, scope, task_id, after, limit).await
    }
    async fn delete(&self, scope: &Scope, task_id: &str, id: &str) -> Result<bool, StoreError> {
        self.inner.delete(scope, task_id, id).await
    }
    async fn count(&self, scope: &Scope, task_id: &str) -> Result<ConfigCount, StoreError> {
        self.inner.count(scope, task_id).await
    }
    async fn claim_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        until_ms: i64,
        from: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.inner
            .claim_delivery(scope, task_id, node, until_ms, from)
            .await
    }
    async fn delivered(
        &self,
        _scope: &Scope,
        _task_id: &str,
        _node: &str,
        _seq: u64,
        _until_ms: i64,
    ) -> Result<bool, StoreError> {
        self.lost.fetch_add(1, Ordering::SeqCst);
        Ok(false)
    }
    async fn release_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), StoreError> {
        self.inner.release_delivery(scope, task_id, node).await
    }
    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.inner.pending_deliveries(now_ms, limit).await
    }
}

/// Waits (yielding, up to 10 s) until `done` holds.
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done().await {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not within 10 s: {what}"));
}

/// A webhook lane that outlives its task's delivery worker lets the task go: it holds the task
/// by a guard of its own (commit ef9833d). Here the worker stops on a lost claim while its lane
/// waits on a webhook, aborts the lane and returns; on this single-threaded runtime the worker
/// lets its guard go before the runtime drops the aborted lane, so the lane is the task's last
/// holder. With a bare `Arc` there, the worker's release counted the lane's reference and left
/// the task registered, and the lane dropped its reference without looking: the task stayed
/// in memory for good.
#[tokio::test]
async fn a_webhook_lane_that_outlives_its_worker_unregisters_the_task() {
    let memory = Arc::new(MemoryStore::new());
    let push = Arc::new(LosesClaim {
        inner: MemoryStore::new(),
        lost: AtomicUsize::new(0),
    });
    let (abandoned, mut abandons) = tokio::sync::mpsc::unbounded_channel();
    let webhook = Arc::new(Stuck {
        posts: AtomicUsize::new(0),
        first: tokio::sync::Notify::new(),
        abandoned,
    });
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo))
        .stores(Stores {
            tasks: memory.clone(),
            events: memory.clone(),
            push: push.clone(),
        })
        .webhooks(webhook.clone())
        .config(EngineConfig {
            webhook_policy: WebhookPolicy::new().allow("hooks.example").expect("policy"),
            ..Default::default()
        })
        .build();
    let cx = CallContext::new();
    let answer = engine
        .send_message(
            &cx,
            pb::SendMessageRequest {
                message: Some(pb::Message::user("m1", vec![pb::Part::text("hi")])),
                configuration: Some(pb::SendMessageConfiguration {
                    return_immediately: true,
                    task_push_notification_config: Some(pb::TaskPushNotificationConfig {
                        url: "https://hooks.example/hook".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .expect("send");
    let Some(pb::send_message_response::Payload::Task(task)) = answer.payload else {
        panic!("expected a task, got {answer:?}");
    };
    // The turn ends while the first POST waits: the lane has more events to send after it.
    until("the task completes", async || {
        let read = TaskStore::get(&*memory, &Scope::new("", ""), &task.id)
            .await
            .expect("read the task");
        read.is_some_and(|r| r.task.state() == pb::TaskState::Completed)
    })
    .await;
    assert_eq!(engine.stats().live_tasks, 1, "the delivery holds the task");
    webhook.first.notify_one();
    // The first event delivered, moving the cursor loses the claim: the worker stops and
    // aborts the lane, which waits on its second POST.
    let seq = tokio::time::timeout(Duration::from_secs(10), abandons.recv())
        .await
        .expect("the lane is stopped within 10 s")
        .expect("a POST given up");
    assert!(seq > 1, "the lane was sending a later event: {seq}");
    assert!(push.lost.load(Ordering::SeqCst) >= 1, "the claim was lost");
    until("nothing stays live once every holder let go", async || {
        engine.stats().live_tasks == 0
    })
    .await;
}
