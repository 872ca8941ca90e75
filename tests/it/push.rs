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
}

async fn hook(State(r): State<Receiver>, headers: HeaderMap, body: String) -> StatusCode {
    if r.refuse.load(Ordering::SeqCst) > 0 {
        r.refuse.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let body: pb::StreamResponse = serde_json::from_str(&body).expect("body is a StreamResponse");
    let _ = r.tx.send(Received { headers, body });
    StatusCode::OK
}

pub(crate) async fn receiver(refuse: usize) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let state = Receiver {
        tx,
        refuse: Arc::new(AtomicUsize::new(refuse)),
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), rx)
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

/// Push configurations whose listing fails `fail` more times.
struct FlakyListing {
    inner: Arc<trident_engine::store::MemoryStore>,
    fail: AtomicUsize,
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
        trident_core::store::PushConfigStore::list(&*self.inner, scope, task_id, after, limit).await
    }
    async fn delete(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        id: &str,
    ) -> Result<bool, trident_core::store::StoreError> {
        self.inner.delete(scope, task_id, id).await
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
    let push = Arc::new(FlakyListing {
        inner: memory.clone(),
        fail: AtomicUsize::new(2),
    });
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
