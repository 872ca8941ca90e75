//! Push delivery against a real HTTP receiver on loopback: every event, in order, with the
//! configured Authorization and both token headers; retried after failures; nothing after the
//! configuration is deleted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use tokio::sync::mpsc;
use trident_core::A2aService;
use trident_engine::{Engine, EngineConfig, RetryPolicy};
use trident_http::HttpWebhooks;
use trident_proto as pb;
use trident_testkit::agents::Demo;

use crate::harness::{cx, follow_up, msg, req_with, task_of};

pub(crate) struct Received {
    pub headers: HeaderMap,
    pub body: pb::StreamResponse,
}

#[derive(Clone)]
struct Receiver {
    tx: mpsc::UnboundedSender<Received>,
    /// Requests to refuse with 503 before accepting.
    refuse: Arc<AtomicUsize>,
    /// The `A2A-Notification-Id` of every request, refused ones too, in arrival order.
    attempts: Attempts,
}

/// The `A2A-Notification-Id` of every request a receiver took, in arrival order.
type Attempts = Arc<std::sync::Mutex<Vec<String>>>;

async fn hook(State(r): State<Receiver>, headers: HeaderMap, body: String) -> StatusCode {
    let id = headers
        .get("a2a-notification-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    r.attempts.lock().expect("attempts").push(id);
    if r.refuse.load(Ordering::SeqCst) > 0 {
        r.refuse.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let body: pb::StreamResponse = serde_json::from_str(&body).expect("body is a StreamResponse");
    let _ = r.tx.send(Received { headers, body });
    StatusCode::OK
}

pub(crate) async fn receiver(refuse: usize) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (url, rx, _) = logged_receiver(refuse).await;
    (url, rx)
}

/// A receiver that refuses the first `refuse` requests with 503, and the ids of every request.
async fn logged_receiver(refuse: usize) -> (String, mpsc::UnboundedReceiver<Received>, Attempts) {
    let (tx, rx) = mpsc::unbounded_channel();
    let attempts = Attempts::default();
    let state = Receiver {
        tx,
        refuse: Arc::new(AtomicUsize::new(refuse)),
        attempts: attempts.clone(),
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), rx, attempts)
}

fn engine() -> Arc<dyn A2aService> {
    let retry = RetryPolicy {
        attempts: 4,
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
    };
    // The receiver is on loopback, which the default policy refuses.
    let policy = trident_engine::WebhookPolicy::new()
        .allow("127.0.0.1")
        .expect("policy");
    let webhooks =
        HttpWebhooks::with_policy(Duration::from_secs(5), policy.clone()).expect("client");
    Arc::new(
        Engine::builder(Arc::new(Demo))
            .webhooks(Arc::new(webhooks))
            .config(EngineConfig {
                push_retry: retry,
                webhook_policy: policy,
                ..Default::default()
            })
            .build(),
    )
}

pub(crate) async fn next(rx: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("notification in time")
        .expect("open")
}

/// The kinds of the next `n` notifications.
async fn next_kinds(
    rx: &mut mpsc::UnboundedReceiver<Received>,
    n: usize,
) -> Vec<(&'static str, Option<pb::TaskState>)> {
    let mut kinds = Vec::with_capacity(n);
    for _ in 0..n {
        kinds.push(kind(&next(rx).await));
    }
    kinds
}

fn kind(r: &Received) -> (&'static str, Option<pb::TaskState>) {
    use pb::stream_response::Payload;
    match r.body.payload.as_ref().expect("payload") {
        Payload::Task(t) => ("task", Some(t.state())),
        Payload::StatusUpdate(u) => (
            "status",
            u.status
                .as_ref()
                .and_then(|s| pb::TaskState::try_from(s.state).ok()),
        ),
        Payload::ArtifactUpdate(_) => ("artifact", None),
        Payload::Message(_) => ("message", None),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_is_posted_in_order_with_credentials_and_tokens() {
    let (url, mut rx) = receiver(1).await;
    let svc = engine();
    let cfg = pb::SendMessageConfiguration {
        task_push_notification_config: Some(pb::TaskPushNotificationConfig {
            url,
            token: "tok-123".into(),
            authentication: Some(pb::AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "hook-secret".into(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let asked = task_of(
        svc.send_message(&cx(), req_with(msg("input"), cfg))
            .await
            .expect("send"),
    );
    let first = next(&mut rx).await;
    assert_eq!(
        kind(&first),
        ("task", Some(pb::TaskState::Submitted)),
        "the first (retried) notification is the task"
    );
    assert_eq!(first.headers["authorization"], "Bearer hook-secret");
    assert_eq!(first.headers["x-a2a-notification-token"], "tok-123");
    assert_eq!(first.headers["a2a-notification-token"], "tok-123");
    assert_eq!(first.headers["content-type"], "application/a2a+json");
    assert_eq!(
        kind(&next(&mut rx).await),
        ("status", Some(pb::TaskState::InputRequired))
    );

    follow_up(&*svc, &cx(), &asked, "Ada")
        .await
        .expect("follow-up");
    let rest: Vec<_> = next_kinds(&mut rx, 3).await;
    assert_eq!(
        rest,
        [
            ("status", Some(pb::TaskState::Working)),
            ("artifact", None),
            ("status", Some(pb::TaskState::Completed))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_added_later_get_later_events_and_deleted_ones_get_nothing() {
    let (url, mut rx) = receiver(0).await;
    let svc = engine();
    let asked = task_of(
        svc.send_message(&cx(), req_with(msg("input"), Default::default()))
            .await
            .expect("send"),
    );
    let created = svc
        .create_task_push_notification_config(
            &cx(),
            pb::TaskPushNotificationConfig {
                task_id: asked.id.clone(),
                url,
                ..Default::default()
            },
        )
        .await
        .expect("create");
    follow_up(&*svc, &cx(), &asked, "Ada")
        .await
        .expect("follow-up");
    let got: Vec<_> = next_kinds(&mut rx, 3).await;
    assert_eq!(
        got,
        [
            ("status", Some(pb::TaskState::Working)),
            ("artifact", None),
            ("status", Some(pb::TaskState::Completed))
        ],
        "only events after creation"
    );
    assert!(got.iter().all(|(k, _)| *k != "task"));

    let second = task_of(
        svc.send_message(&cx(), req_with(msg("input"), Default::default()))
            .await
            .expect("send"),
    );
    let cfg = svc
        .create_task_push_notification_config(
            &cx(),
            pb::TaskPushNotificationConfig {
                task_id: second.id.clone(),
                url: created.url.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("create");
    svc.delete_task_push_notification_config(
        &cx(),
        pb::DeleteTaskPushNotificationConfigRequest {
            task_id: second.id.clone(),
            id: cfg.id,
            ..Default::default()
        },
    )
    .await
    .expect("delete");
    follow_up(&*svc, &cx(), &second, "Bob")
        .await
        .expect("follow-up");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "no notification after delete"
    );
}

/// Every notification carries `A2A-Notification-Id: {taskId}:{seq}`, the same on every
/// attempt: delivery is at-least-once (a retry, or another process resuming the outbox after a
/// crash, sends an event again), and receivers deduplicate on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_event_carries_the_same_notification_id() {
    // The first two attempts are refused: the first event is sent three times.
    let (url, mut rx, attempts) = logged_receiver(2).await;
    let svc = engine();
    let cfg = pb::SendMessageConfiguration {
        task_push_notification_config: Some(pb::TaskPushNotificationConfig {
            url,
            ..Default::default()
        }),
        ..Default::default()
    };
    let asked = task_of(
        svc.send_message(&cx(), req_with(msg("input"), cfg))
            .await
            .expect("send"),
    );
    let first = next(&mut rx).await;
    let second = next(&mut rx).await;
    let id_of = |r: &Received| {
        r.headers
            .get("a2a-notification-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(id_of(&first), format!("{}:1", asked.id), "the task, seq 1");
    assert_eq!(
        id_of(&second),
        format!("{}:2", asked.id),
        "the next event, seq 2"
    );
    let seen = attempts.lock().expect("attempts").clone();
    assert_eq!(
        seen[..4],
        [id_of(&first), id_of(&first), id_of(&first), id_of(&second)],
        "retries of an event carry its id"
    );
}

/// A webhook on loopback is refused when the configuration is created, unless allow-listed.
#[tokio::test]
async fn loopback_webhooks_are_refused_unless_allow_listed() {
    let strict: Arc<dyn A2aService> = Arc::new(Engine::builder(Arc::new(Demo)).build());
    let task = task_of(
        strict
            .send_message(&cx(), crate::harness::req(msg("input")))
            .await
            .expect("send"),
    );
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://[::1]:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/hook",
        // Spellings the HTTP client normalises to the same addresses.
        "http://127.0.0.1.:9/hook",
        "http://%31%32%37.0.0.1:9/hook",
        "http://0x7f.1:9/hook",
        "http://2130706433:9/hook",
        "http://[::ffff:7f00:1]:9/hook",
        "http://169.254.169.254./latest/meta-data",
        "http://0xa9.0xfe.0xa9.0xfe/latest/meta-data",
        "http://2852039166/latest/meta-data",
        "http://%31%30.0.0.1/hook",
        "http://012.0.0.1/hook",
        "http://10.1/hook",
        "http://[fe80::1%25eth0]/hook",
    ] {
        let refused = strict
            .create_task_push_notification_config(
                &cx(),
                pb::TaskPushNotificationConfig {
                    task_id: task.id.clone(),
                    url: url.into(),
                    ..Default::default()
                },
            )
            .await
            .expect_err(url);
        assert_eq!(
            refused.kind(),
            trident_core::ErrorKind::InvalidParams,
            "{url}: {refused}"
        );
    }
    let allowed: Arc<dyn A2aService> = Arc::new(
        Engine::builder(Arc::new(Demo))
            .config(EngineConfig {
                webhook_policy: trident_engine::WebhookPolicy::new()
                    .allow("127.0.0.1")
                    .expect("policy"),
                ..Default::default()
            })
            .build(),
    );
    let task = task_of(
        allowed
            .send_message(&cx(), crate::harness::req(msg("input")))
            .await
            .expect("send"),
    );
    allowed
        .create_task_push_notification_config(
            &cx(),
            pb::TaskPushNotificationConfig {
                task_id: task.id.clone(),
                url: "http://127.0.0.1:9/hook".into(),
                ..Default::default()
            },
        )
        .await
        .expect("allow-listed");
}

/// The sender checks every connection: a name that resolves to a private address is refused
/// when connecting (a name public at configuration time may be rebound later), and so is a
/// literal one.
#[tokio::test]
async fn the_sender_refuses_private_addresses_at_connect_time() {
    let (url, mut rx) = receiver(0).await;
    let port = url
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .expect("port")
        .to_owned();
    let sender = HttpWebhooks::new(Duration::from_secs(2)).expect("client");
    for target in [
        format!("http://localhost:{port}/hook"),
        format!("http://localhost.:{port}/hook"),
        format!("http://127.0.0.1:{port}/hook"),
        // Each of these reached the receiver before the sender parsed URLs as reqwest does.
        format!("http://127.0.0.1.:{port}/hook"),
        format!("http://%31%32%37.0.0.1:{port}/hook"),
        format!("http://0x7f.1:{port}/hook"),
        format!("http://0177.0.0.1:{port}/hook"),
        format!("http://2130706433:{port}/hook"),
        format!("http://127.1:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
    ] {
        let err = trident_engine::WebhookTransport::post(
            &sender,
            &trident_engine::WebhookRequest {
                url: target.clone(),
                headers: vec![("authorization", "Bearer secret".to_owned())],
                body: b"{}".to_vec(),
                task_id: "t".into(),
                seq: 1,
            },
        )
        .await
        .expect_err(&target);
        assert!(err.to_string().contains("loopback"), "{target}: {err}");
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "nothing reached the receiver"
    );
    // Allow-listed, the same sender delivers.
    let open = HttpWebhooks::with_policy(
        Duration::from_secs(2),
        trident_engine::WebhookPolicy::new()
            .allow("localhost")
            .expect("policy"),
    )
    .expect("client");
    trident_engine::WebhookTransport::post(
        &open,
        &trident_engine::WebhookRequest {
            url: format!("http://localhost:{port}/hook"),
            headers: vec![("content-type", "application/a2a+json".to_owned())],
            body: br#"{"task":{"id":"t","contextId":"c"}}"#.to_vec(),
            task_id: "t".into(),
            seq: 1,
        },
    )
    .await
    .expect("allow-listed delivery");
    next(&mut rx).await;
}

/// Webhooks over HTTPS: the sender speaks TLS (here to a plain-HTTP listener, so the
/// handshake fails — with a TLS error, not "scheme not supported").
#[tokio::test]
async fn https_webhooks_use_tls() {
    let (url, _rx) = receiver(0).await;
    let https = url.replacen("http://", "https://", 1);
    let sender = HttpWebhooks::with_policy(
        Duration::from_secs(2),
        trident_engine::WebhookPolicy::allow_any(),
    )
    .expect("client");
    let err = trident_engine::WebhookTransport::post(
        &sender,
        &trident_engine::WebhookRequest {
            url: https,
            headers: Vec::new(),
            body: b"{}".to_vec(),
            task_id: "t".into(),
            seq: 1,
        },
    )
    .await
    .expect_err("not a TLS server");
    let text = err.to_string().to_ascii_lowercase();
    assert!(
        !text.contains("scheme") && !text.contains("builder"),
        "TLS was attempted: {text}"
    );
}

/// A webhook that answers after `delay`; counts the requests that arrived.
async fn slow_receiver(delay: Duration) -> (String, Arc<AtomicUsize>) {
    let arrived = Arc::new(AtomicUsize::new(0));
    let counter = arrived.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), arrived)
}

/// Webhooks of one task are delivered independently: a slow one (each answer takes 3 s) does
/// not hold back a fast one, which gets every event while the slow one is still on its
/// first; each still gets the events in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_webhook_does_not_delay_another_on_the_same_task() {
    let (slow, arrived) = slow_receiver(Duration::from_secs(3)).await;
    let (fast, mut rx) = receiver(0).await;
    let svc = engine();
    // The slow configuration is created first (ids order the listing), with the task.
    let cfg = pb::SendMessageConfiguration {
        task_push_notification_config: Some(pb::TaskPushNotificationConfig {
            id: "a-slow".into(),
            url: slow,
            ..Default::default()
        }),
        ..Default::default()
    };
    let asked = task_of(
        svc.send_message(&cx(), req_with(msg("input"), cfg))
            .await
            .expect("send"),
    );
    svc.create_task_push_notification_config(
        &cx(),
        pb::TaskPushNotificationConfig {
            task_id: asked.id.clone(),
            id: "b-fast".into(),
            url: fast,
            ..Default::default()
        },
    )
    .await
    .expect("second config");
    follow_up(&*svc, &cx(), &asked, "Ada")
        .await
        .expect("follow-up");
    // The fast webhook gets the follow-up turn's events, in order, while the slow one has
    // not finished its first request.
    let mut kinds = Vec::new();
    while kinds.last() != Some(&("status", Some(pb::TaskState::Completed))) {
        kinds.push(kind(&next(&mut rx).await));
    }
    assert!(
        kinds.ends_with(&[
            ("status", Some(pb::TaskState::Working)),
            ("artifact", None),
            ("status", Some(pb::TaskState::Completed))
        ]),
        "{kinds:?}"
    );
    assert!(
        arrived.load(Ordering::SeqCst) <= 1,
        "the slow webhook is still on its first event: {}",
        arrived.load(Ordering::SeqCst)
    );
}

/// Push configurations whose listing fails `fail` more times, counting what is read.
struct FlakyListing {
    inner: Arc<trident_engine::store::MemoryStore>,
    fail: AtomicUsize,
    /// Configurations returned by `list` so far.
    listed: AtomicUsize,
    /// `get` calls so far.
    gets: AtomicUsize,
}

impl FlakyListing {
    fn new(inner: Arc<trident_engine::store::MemoryStore>, fail: usize) -> Self {
        Self {
            inner,
            fail: AtomicUsize::new(fail),
            listed: AtomicUsize::new(0),
            gets: AtomicUsize::new(0),
        }
    }
}

#[async_trait::async_trait]
impl trident_core::store::PushConfigStore for FlakyListing {
    async fn put(
        &self,
        scope: &trident_core::store::Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: trident_core::Generation,
    ) -> Result<(), trident_core::store::StoreError> {
        self.inner.put(scope, config, generation).await
    }
    async fn get(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        id: &str,
    ) -> Result<
        Option<(pb::TaskPushNotificationConfig, trident_core::Generation)>,
        trident_core::store::StoreError,
    > {
        self.gets.fetch_add(1, Ordering::SeqCst);
        trident_core::store::PushConfigStore::get(&*self.inner, scope, task_id, id).await
    }
    async fn list(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), trident_core::store::StoreError> {
        if limit > 1
            && self
                .fail
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(trident_core::store::StoreError::Backend(
                "listing failed (injected)".into(),
            ));
        }
        let listed =
            trident_core::store::PushConfigStore::list(&*self.inner, scope, task_id, after, limit)
                .await?;
        self.listed.fetch_add(listed.0.len(), Ordering::SeqCst);
        Ok(listed)
    }
    async fn delete(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        id: &str,
    ) -> Result<bool, trident_core::store::StoreError> {
        self.inner.delete(scope, task_id, id).await
    }
    async fn count(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
    ) -> Result<trident_core::store::ConfigCount, trident_core::store::StoreError> {
        self.inner.count(scope, task_id).await
    }
    async fn claim_delivery(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        node: &str,
        until_ms: i64,
        from: u64,
    ) -> Result<Option<u64>, trident_core::store::StoreError> {
        self.inner
            .claim_delivery(scope, task_id, node, until_ms, from)
            .await
    }
    async fn delivered(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        node: &str,
        seq: u64,
        until_ms: i64,
    ) -> Result<bool, trident_core::store::StoreError> {
        self.inner
            .delivered(scope, task_id, node, seq, until_ms)
            .await
    }
    async fn release_delivery(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), trident_core::store::StoreError> {
        self.inner.release_delivery(scope, task_id, node).await
    }
    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(trident_core::store::Scope, String)>, trident_core::store::StoreError> {
        self.inner.pending_deliveries(now_ms, limit).await
    }
}

/// A delivery worker whose listing of the configurations fails keeps the outbox cursor where
/// it is and retries: no event is counted delivered that no webhook had (found in review).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_listing_of_configurations_loses_no_event() {
    let (url, mut rx) = receiver(0).await;
    let memory = Arc::new(trident_engine::store::MemoryStore::new());
    let push = Arc::new(FlakyListing::new(memory.clone(), 2));
    let policy = trident_engine::WebhookPolicy::new()
        .allow("127.0.0.1")
        .expect("policy");
    let webhooks =
        HttpWebhooks::with_policy(Duration::from_secs(5), policy.clone()).expect("client");
    let svc: Arc<dyn A2aService> = Arc::new(
        Engine::builder(Arc::new(Demo))
            .webhooks(Arc::new(webhooks))
            .stores(trident_core::store::Stores {
                tasks: memory.clone(),
                events: memory,
                push,
            })
            .config(EngineConfig {
                webhook_policy: policy,
                ..Default::default()
            })
            .build(),
    );
    let cfg = pb::SendMessageConfiguration {
        task_push_notification_config: Some(pb::TaskPushNotificationConfig {
            url,
            ..Default::default()
        }),
        ..Default::default()
    };
    svc.send_message(&cx(), req_with(msg("input"), cfg))
        .await
        .expect("send");
    assert_eq!(
        next_kinds(&mut rx, 2).await,
        [
            ("task", Some(pb::TaskState::Submitted)),
            ("status", Some(pb::TaskState::InputRequired))
        ],
        "every event, after the failed listings"
    );
}

/// Counts webhook calls; every call succeeds at once.
#[derive(Default)]
struct CountingTransport {
    posts: AtomicUsize,
}

#[async_trait::async_trait]
impl trident_engine::WebhookTransport for CountingTransport {
    async fn post(
        &self,
        _request: &trident_engine::WebhookRequest,
    ) -> Result<(), trident_engine::WebhookError> {
        self.posts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// What delivering one three-event turn to `configs` webhooks of one task reads from the
/// push store: (configurations listed, configurations read one by one).
async fn delivery_reads(configs: usize) -> (usize, usize) {
    let memory = Arc::new(trident_engine::store::MemoryStore::new());
    let push = Arc::new(FlakyListing::new(memory.clone(), 0));
    let transport = Arc::new(CountingTransport::default());
    let svc: Arc<dyn A2aService> = Arc::new(
        Engine::builder(Arc::new(Demo))
            .webhooks(transport.clone())
            .stores(trident_core::store::Stores {
                tasks: memory.clone(),
                events: memory,
                push: push.clone(),
            })
            .config(EngineConfig {
                webhook_policy: trident_engine::WebhookPolicy::new()
                    .allow("hooks.example")
                    .expect("policy"),
                push_limits: trident_engine::PushLimits {
                    per_task: configs,
                    per_principal: configs,
                },
                ..Default::default()
            })
            .build(),
    );
    let asked = task_of(
        svc.send_message(&cx(), req_with(msg("input"), Default::default()))
            .await
            .expect("send"),
    );
    for i in 0..configs {
        svc.create_task_push_notification_config(
            &cx(),
            pb::TaskPushNotificationConfig {
                task_id: asked.id.clone(),
                id: format!("c{i:05}"),
                url: format!("http://hooks.example/{i}"),
                ..Default::default()
            },
        )
        .await
        .expect("create");
    }
    // Each create starts a delivery worker unless one runs (it finds nothing to deliver);
    // the one still running may list the configurations once more.
    let listed = push.listed.load(Ordering::SeqCst);
    let gets = push.gets.load(Ordering::SeqCst);
    follow_up(&*svc, &cx(), &asked, "Ada")
        .await
        .expect("follow-up");
    // WORKING, the artifact, COMPLETED: three events per webhook.
    crate::wait::until("every webhook has the turn's three events", || async {
        (transport.posts.load(Ordering::SeqCst) >= 3 * configs).then_some(())
    })
    .await;
    (
        push.listed.load(Ordering::SeqCst) - listed,
        push.gets.load(Ordering::SeqCst) - gets,
    )
}

/// Push fan-out costs O(configurations × events): delivering a three-event turn to N and to 4N
/// webhooks reads each configuration a bounded number of times per event (a listing per new
/// event, a read before each POST), not once per listing per lane report (which made 2 000
/// configurations take minutes of CPU).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_fan_out_reads_each_configuration_a_bounded_number_of_times_per_event() {
    const EVENTS: usize = 3;
    for configs in [50, 200] {
        let (listed, gets) = delivery_reads(configs).await;
        // At most two listings per event (a worker started for an event may list just
        // before it is published, then again), one more by the worker a create started: a
        // bound per configuration that does not grow with their number (before the fix: 56
        // per configuration at 50, growing with N).
        assert!(
            listed <= configs * (2 * EVENTS + 3),
            "{configs} configurations: {listed} listed ({} per configuration)",
            listed as f64 / configs as f64
        );
        assert!(
            gets <= configs * EVENTS,
            "{configs} configurations: {gets} read one by one"
        );
    }
}

/// Push configurations are limited per task and per principal (its tasks in progress), over
/// every binding and store: one more is `ResourceExhausted`, naming the limit; replacing one
/// (the same id) is not limited; configurations of ended tasks and other principals' do not
/// count; a configuration given with SendMessage counts too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configurations_are_limited_per_task_and_per_principal() {
    use crate::harness::{Fixture, Transport, Variant};
    let mut transports = vec![
        Transport::InProcess,
        Transport::Sqlite,
        Transport::Grpc,
        Transport::JsonRpc,
        Transport::Rest,
    ];
    if crate::harness::postgres_url("push_limits").is_some() {
        transports.push(Transport::Postgres);
    }
    for transport in transports {
        let config = EngineConfig {
            push_limits: trident_engine::PushLimits {
                per_task: 3,
                per_principal: 5,
            },
            ..Default::default()
        };
        let f = Fixture::configured(transport, Variant::default(), config).await;
        let svc = &*f.svc;
        let me = cx();
        let create = |task: &str, id: &str| {
            svc.create_task_push_notification_config(
                &me,
                pb::TaskPushNotificationConfig {
                    task_id: task.to_owned(),
                    id: id.to_owned(),
                    url: "https://hooks.example.com/a2a".into(),
                    ..Default::default()
                },
            )
        };
        let waiting = || async {
            task_of(
                svc.send_message(&cx(), req_with(msg("input"), Default::default()))
                    .await
                    .expect("send"),
            )
        };
        let a = waiting().await;
        for id in ["a1", "a2", "a3"] {
            create(&a.id, id).await.expect("within the task's limit");
        }
        let refused = create(&a.id, "a4").await.expect_err("a fourth on one task");
        assert_eq!(
            refused.kind(),
            trident_core::ErrorKind::ResourceExhausted,
            "{transport:?}: {refused:?}"
        );
        assert!(
            refused.message().contains("(3)"),
            "{transport:?}: names the limit: {refused:?}"
        );
        create(&a.id, "a2")
            .await
            .expect("replacing one needs no room");

        let b = waiting().await;
        create(&b.id, "b1").await.expect("the principal's fourth");
        create(&b.id, "b2").await.expect("the principal's fifth");
        let refused = create(&b.id, "b3")
            .await
            .expect_err("a sixth for the principal");
        assert_eq!(
            refused.kind(),
            trident_core::ErrorKind::ResourceExhausted,
            "{transport:?}: {refused:?}"
        );
        // Given with a message, for a new task: refused before the task is created.
        let cfg = pb::SendMessageConfiguration {
            task_push_notification_config: Some(pb::TaskPushNotificationConfig {
                url: "https://hooks.example.com/a2a".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let refused = svc
            .send_message(&cx(), req_with(msg("input"), cfg.clone()))
            .await
            .expect_err("a configuration with a new task, over the principal's limit");
        assert_eq!(
            refused.kind(),
            trident_core::ErrorKind::ResourceExhausted,
            "{transport:?}: {refused:?}"
        );
        // Another principal has room of its own.
        let other = crate::harness::cx_as("bob");
        let theirs = task_of(
            svc.send_message(&other, req_with(msg("input"), cfg.clone()))
                .await
                .expect("another principal's configuration"),
        );
        assert!(!theirs.id.is_empty());
        // Once task A ends, its three configurations no longer count.
        follow_up(svc, &cx(), &a, "Ada").await.expect("follow-up");
        create(&b.id, "b3")
            .await
            .expect("room again once a task ended");
    }
}

/// A webhook receiver that accepts connections and never answers: how many connections are
/// open now and at most.
#[derive(Clone, Default)]
struct Hanging {
    open: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Hanging {
    async fn start(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let counts = self.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let counts = counts.clone();
                let now = counts.open.fetch_add(1, Ordering::SeqCst) + 1;
                counts.most.fetch_max(now, Ordering::SeqCst);
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    // Read (the request) until the client gives up and closes.
                    let mut buf = [0u8; 1024];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    counts.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        format!("http://{addr}/hook")
    }
}

/// Webhook calls in flight are bounded per host and in all: many webhooks that hang never
/// hold more connections than that, and a webhook on another host still gets its events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_webhooks_hold_at_most_the_bound_and_others_still_get_events() {
    const PER_HOST: usize = 4;
    const GLOBAL: usize = 6;
    const TASKS: usize = 12;
    let policy = trident_engine::WebhookPolicy::new()
        .allow("127.0.0.1")
        .expect("policy");
    // Longer than the test: a hanging call holds its slot throughout.
    let webhooks =
        HttpWebhooks::with_policy(Duration::from_secs(120), policy.clone()).expect("client");
    let svc: Arc<dyn A2aService> = Arc::new(
        Engine::builder(Arc::new(Demo))
            .webhooks(Arc::new(webhooks))
            .config(EngineConfig {
                webhook_policy: policy,
                push_concurrency: trident_engine::PushConcurrency {
                    global: GLOBAL,
                    per_host: PER_HOST,
                },
                ..Default::default()
            })
            .build(),
    );
    let send_with = |url: String| {
        let svc = svc.clone();
        async move {
            let cfg = pb::SendMessageConfiguration {
                task_push_notification_config: Some(pb::TaskPushNotificationConfig {
                    url,
                    ..Default::default()
                }),
                ..Default::default()
            };
            task_of(
                svc.send_message(&cx(), req_with(msg("input"), cfg))
                    .await
                    .expect("send"),
            )
        }
    };
    let first = Hanging::default();
    let first_url = first.start().await;
    for _ in 0..TASKS {
        send_with(first_url.clone()).await;
    }
    crate::wait::until("the hanging host's slots are taken", || async {
        (first.open.load(Ordering::SeqCst) == PER_HOST).then_some(())
    })
    .await;
    // Another host's webhook is not held up by them.
    let (url, mut rx) = receiver(0).await;
    send_with(url).await;
    assert_eq!(
        kind(&next(&mut rx).await),
        ("task", Some(pb::TaskState::Submitted))
    );
    // A second hanging host takes the global slots left, and no more.
    let second = Hanging::default();
    let second_url = second.start().await;
    for _ in 0..TASKS {
        send_with(second_url.clone()).await;
    }
    crate::wait::until("every global slot is taken", || async {
        (first.open.load(Ordering::SeqCst) + second.open.load(Ordering::SeqCst) == GLOBAL)
            .then_some(())
    })
    .await;
    crate::wait::holds_for(
        "no more connections than the bounds",
        Duration::from_millis(500),
        || async {
            first.open.load(Ordering::SeqCst) + second.open.load(Ordering::SeqCst) <= GLOBAL
        },
    )
    .await;
    assert_eq!(first.most.load(Ordering::SeqCst), PER_HOST, "per host");
    assert!(
        second.most.load(Ordering::SeqCst) <= PER_HOST,
        "per host: {}",
        second.most.load(Ordering::SeqCst)
    );
}

/// A webhook call this process could not make for want of its own resources (`EMFILE`) is
/// retried until it goes out, without counting as one of the webhook's attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_that_hits_local_exhaustion_is_retried_not_given_up() {
    /// Fails the first `exhausted` calls as `Local`, then records each request.
    struct Exhausted {
        exhausted: AtomicUsize,
        sent: mpsc::UnboundedSender<u64>,
    }
    #[async_trait::async_trait]
    impl trident_engine::WebhookTransport for Exhausted {
        async fn post(
            &self,
            request: &trident_engine::WebhookRequest,
        ) -> Result<(), trident_engine::WebhookError> {
            if self
                .exhausted
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err(trident_engine::WebhookError::Local(
                    "Too many open files (os error 24)".into(),
                ));
            }
            let _ = self.sent.send(request.seq);
            Ok(())
        }
    }
    let (sent, mut delivered) = mpsc::unbounded_channel();
    let svc: Arc<dyn A2aService> = Arc::new(
        Engine::builder(Arc::new(Demo))
            .webhooks(Arc::new(Exhausted {
                exhausted: AtomicUsize::new(5),
                sent,
            }))
            .config(EngineConfig {
                webhook_policy: trident_engine::WebhookPolicy::new()
                    .allow("hooks.example")
                    .expect("policy"),
                // One attempt per event: a counted failure would give the event up.
                push_retry: RetryPolicy {
                    attempts: 1,
                    initial_backoff: Duration::from_millis(10),
                    max_backoff: Duration::from_millis(50),
                },
                ..Default::default()
            })
            .build(),
    );
    let cfg = pb::SendMessageConfiguration {
        task_push_notification_config: Some(pb::TaskPushNotificationConfig {
            url: "http://hooks.example/hook".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    svc.send_message(&cx(), req_with(msg("input"), cfg))
        .await
        .expect("send");
    let mut seqs = Vec::new();
    for _ in 0..2 {
        seqs.push(
            tokio::time::timeout(crate::wait::CEILING, delivered.recv())
                .await
                .expect("delivered in time")
                .expect("open"),
        );
    }
    assert_eq!(
        seqs,
        [1, 2],
        "the first event too, after five local failures"
    );
}

/// `trident serve` raises its soft open-files limit to the hard limit at start (before the
/// connection and delivery bounds are computed from it): started with a soft limit of 256, it
/// runs with the hard limit.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn serve_raises_its_open_files_limit_to_the_hard_limit() {
    use std::io::BufRead;
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
    let Some(hard) = hard.filter(|h| *h > 256) else {
        return; // Nothing to raise to.
    };
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -Sn 256 && exec \"$0\" serve --store memory --listen 127.0.0.1:0",
            env!("CARGO_BIN_EXE_trident"),
        ])
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start trident serve");
    let stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let ready = tokio::task::spawn_blocking(move || {
        let mut lines = stdout.lines();
        let started = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|line| line.trim().starts_with("agent card"));
        // Keep draining so the child never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        started
    });
    let started = tokio::time::timeout(crate::wait::CEILING, ready).await;
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id()));
    let _ = child.kill();
    let _ = child.wait();
    assert!(matches!(started, Ok(Ok(true))), "trident serve started");
    let limits = limits.expect("/proc/PID/limits");
    let soft: Option<u64> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| {
            l.trim_start_matches("Max open files")
                .split_whitespace()
                .next()
        })
        .and_then(|v| v.parse().ok());
    assert_eq!(soft, Some(hard), "{limits}");
}
