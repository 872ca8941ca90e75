//! Regression tests from the adversarial run (issue 12): what a hostile or careless client
//! sent and the server must refuse, on every binding.

use std::time::Duration;

use serde_json::{Value, json};
use trident_core::{CallContext, ErrorKind};
use trident_proto as pb;

use crate::harness::{Fixture, Transport, Variant, cx, msg, req, send_task, task_of};
use crate::wait::until;

const BINDINGS: [Transport; 3] = [Transport::Grpc, Transport::JsonRpc, Transport::Rest];

/// Tenants that must be refused: too long (the run sent 3 MB and grew SQLite by 101 MB), NUL,
/// ESC, a newline, a space, a slash (it cannot be one HTTP+JSON path segment), non-ASCII.
fn bad_tenants() -> Vec<(&'static str, String)> {
    vec![
        ("4 KiB", "t".repeat(4 << 10)),
        ("129 bytes", "t".repeat(129)),
        ("NUL", "a\u{0}b".into()),
        ("ESC", "a\u{1b}[31mb".into()),
        ("newline", "a\nb".into()),
        ("space", "a b".into()),
        ("slash", "a/b".into()),
        ("non-ASCII", "caf\u{e9}".into()),
    ]
}

#[tokio::test]
async fn unbounded_or_unprintable_tenants_are_refused_on_every_binding() {
    for transport in BINDINGS {
        let f = Fixture::new(transport, Variant::default()).await;
        for (what, tenant) in bad_tenants() {
            let mut request = req(msg("hello"));
            request.tenant = tenant.clone();
            let err = f
                .svc
                .send_message(&cx(), request)
                .await
                .expect_err(&format!("{transport:?}: a {what} tenant"));
            // (The messages are cut: a refused tenant may be long.)
            let text: String = err.to_string().chars().take(300).collect();
            assert_eq!(
                err.kind(),
                ErrorKind::InvalidParams,
                "{transport:?}, {what} tenant: {text}"
            );
            assert!(
                err.message().contains("tenant"),
                "{transport:?}, {what}: the error names the field: {text}"
            );
            let err = f
                .svc
                .get_task(
                    &cx(),
                    pb::GetTaskRequest {
                        tenant: tenant.clone(),
                        id: "x".into(),
                        ..Default::default()
                    },
                )
                .await
                .expect_err(what);
            assert_eq!(
                err.kind(),
                ErrorKind::InvalidParams,
                "{transport:?}: {what}"
            );
        }
        // An ordinary tenant still works, and scopes its tasks.
        let mut request = req(msg("hello"));
        request.tenant = "acme-1.eu_west:prod".into();
        let task = task_of(f.svc.send_message(&cx(), request).await.expect("tenant"));
        let found = f
            .svc
            .get_task(
                &cx(),
                pb::GetTaskRequest {
                    tenant: "acme-1.eu_west:prod".into(),
                    id: task.id.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("found in its tenant");
        assert_eq!(found.id, task.id);
    }
}

async fn post(
    url: &str,
    content_type: Option<&str>,
    body: &str,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut rb = reqwest::Client::new().post(url).body(body.to_owned());
    if let Some(ct) = content_type {
        rb = rb.header("content-type", ct);
    }
    let response = tokio::time::timeout(Duration::from_secs(20), rb.send())
        .await
        .expect("answered")
        .expect("HTTP");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        headers,
    )
}

/// The ErrorInfo of an error's details (JSON-RPC `data` or AIP-193 `details`).
fn error_info(details: &Value) -> Value {
    details
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|x| x["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .cloned()
        .unwrap_or(Value::Null)
}

async fn task_count(f: &Fixture) -> usize {
    f.svc
        .list_tasks(&cx(), pb::ListTasksRequest::default())
        .await
        .expect("list")
        .tasks
        .len()
}

/// A body that is not JSON is refused before it is parsed — a `text/plain` POST is what any
/// web page may send cross-origin without a preflight — and the call never runs.
#[tokio::test]
async fn a_body_that_is_not_json_is_refused_before_parsing() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    let rpc = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
                     "params": {"message": {"messageId": "m1", "role": "ROLE_USER",
                                            "parts": [{"text": "hi"}]}}})
    .to_string();
    let rest = json!({"message": {"messageId": "m2", "role": "ROLE_USER",
                                  "parts": [{"text": "hi"}]}})
    .to_string();
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
        None,
    ] {
        let (status, body, _) = post(&interfaces.jsonrpc, content_type, &rpc).await;
        assert_eq!(status, 200, "{content_type:?}");
        assert_eq!(
            body["id"],
            Value::Null,
            "{content_type:?}: not parsed, so no id"
        );
        assert_eq!(body["error"]["code"], -32005, "{content_type:?}: {body}");
        let info = error_info(&body["error"]["data"]);
        assert_eq!(info["reason"], "CONTENT_TYPE_NOT_SUPPORTED", "{body}");
        assert_eq!(info["metadata"]["header"], "Content-Type", "{body}");
        assert_eq!(
            info["metadata"]["received"],
            content_type.unwrap_or(""),
            "{body}"
        );

        let (status, body, _) = post(
            &format!("{}/message:send", interfaces.rest),
            content_type,
            &rest,
        )
        .await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert_eq!(body["error"]["code"], 415, "{body}");
        let info = error_info(&body["error"]["details"]);
        assert_eq!(info["reason"], "CONTENT_TYPE_NOT_SUPPORTED", "{body}");
        assert_eq!(info["metadata"]["header"], "Content-Type", "{body}");
    }
    assert_eq!(task_count(&f).await, 0, "no refused request ran");
    // An empty body needs no Content-Type (`curl -X POST …:cancel`): it is the empty request.
    let (status, body, _) = post(&format!("{}/tasks/nope:cancel", interfaces.rest), None, "").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        error_info(&body["error"]["details"])["reason"],
        "TASK_NOT_FOUND",
        "{body}"
    );
    // JSON in any of its names is accepted.
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/A2A+JSON",
    ] {
        let (status, body, _) = post(&interfaces.jsonrpc, Some(content_type), &rpc).await;
        assert_eq!(status, 200);
        assert!(body.get("result").is_some(), "{content_type}: {body}");
        let (status, body, _) = post(
            &format!("{}/message:send", interfaces.rest),
            Some(content_type),
            &rest,
        )
        .await;
        assert_eq!(status, 200, "{content_type}: {body}");
    }
}

/// `method` on `url` is 405 with `Allow: allow`; returns the JSON body.
async fn assert_405(http: &reqwest::Client, method: &str, url: &str, allow: &str) -> Value {
    let response = http
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).expect("method"),
            url,
        )
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status().as_u16(), 405, "{method} {url}");
    assert_eq!(
        response
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok()),
        Some(allow),
        "{method} {url}"
    );
    response.json().await.expect("JSON body")
}

/// HTTP+JSON: a known path with another method is 405 with `Allow`; a body over the limit is
/// 413. Both keep the AIP-193 body.
#[tokio::test]
async fn rest_answers_405_with_allow_and_413_for_an_oversize_body() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let rest = f.interfaces.clone().expect("server").rest;
    let http = reqwest::Client::new();
    for (method, path, allow) in [
        ("DELETE", "/message:send", "POST"),
        ("GET", "/message:stream", "POST"),
        ("PUT", "/tasks/abc", "GET"),
        (
            "PATCH",
            "/tasks/abc/pushNotificationConfigs/c1",
            "DELETE, GET",
        ),
        ("DELETE", "/acme/tasks", "GET"),
    ] {
        let body = assert_405(&http, method, &format!("{rest}{path}"), allow).await;
        assert_eq!(body["error"]["code"], 405, "{body}");
        assert_eq!(
            error_info(&body["error"]["details"])["reason"],
            "METHOD_NOT_FOUND"
        );
    }
    let response = http
        .get(format!("{rest}/no/such/route"))
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status().as_u16(), 404, "an unknown path stays 404");

    let big = format!(
        r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{}"}}]}}}}"#,
        "x".repeat(5 << 20)
    );
    let (status, body, _) = post(
        &format!("{rest}/message:send"),
        Some("application/json"),
        &big,
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], 413, "{body}");
    assert_eq!(
        error_info(&body["error"]["details"])["reason"],
        "INVALID_REQUEST"
    );
}

/// An `A2A-Version` that is not ASCII was read as absent (so as 1.0): it is refused.
#[tokio::test]
async fn a_version_header_that_is_not_ascii_is_refused() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    let raw = reqwest::header::HeaderValue::from_bytes(b"1.0\xc3\xa9").expect("opaque bytes");
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let body: Value = reqwest::Client::new()
        .post(&interfaces.jsonrpc)
        .header("a2a-version", raw.clone())
        .json(&rpc)
        .send()
        .await
        .expect("HTTP")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        error_info(&body["error"]["data"])["reason"],
        "VERSION_NOT_SUPPORTED",
        "{body}"
    );
    let response = reqwest::Client::new()
        .get(format!("{}/tasks", interfaces.rest))
        .header("a2a-version", raw.clone())
        .send()
        .await
        .expect("HTTP");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(
        error_info(&body["error"]["details"])["reason"],
        "VERSION_NOT_SUPPORTED",
        "{status} {body}"
    );

    let target = &interfaces.grpc;
    let mut client =
        trident_proto::a2a_service_client::A2aServiceClient::connect(format!("http://{target}"))
            .await
            .expect("gRPC");
    let mut request = tonic::Request::new(pb::ListTasksRequest::default());
    request.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::try_from(&b"1.0\xc3\xa9"[..]).expect("opaque bytes"),
    );
    let status = client.list_tasks(request).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains("A2A-Version"), "{status:?}");
}

/// Push credentials are write-only: Create, Get and List never return `token` or
/// `authentication.credentials`; delivery still uses them (see `push.rs`).
#[tokio::test]
async fn push_secrets_are_not_read_back_on_any_binding() {
    for transport in [
        Transport::InProcess,
        Transport::Grpc,
        Transport::JsonRpc,
        Transport::Rest,
    ] {
        let f = Fixture::new(transport, Variant::default()).await;
        let task = send_task(&*f.svc, &cx(), "input").await;
        let created = f
            .svc
            .create_task_push_notification_config(
                &cx(),
                pb::TaskPushNotificationConfig {
                    task_id: task.id.clone(),
                    id: "c1".into(),
                    url: "https://hooks.example.com/a2a".into(),
                    token: "opaque-123".into(),
                    authentication: Some(pb::AuthenticationInfo {
                        scheme: "Bearer".into(),
                        credentials: "hook-secret".into(),
                    }),
                    ..Default::default()
                },
            )
            .await
            .expect("create");
        assert_eq!(created.id, "c1");
        let got = f
            .svc
            .get_task_push_notification_config(
                &CallContext::new(),
                pb::GetTaskPushNotificationConfigRequest {
                    task_id: task.id.clone(),
                    id: "c1".into(),
                    ..Default::default()
                },
            )
            .await
            .expect("get");
        let listed = f
            .svc
            .list_task_push_notification_configs(
                &cx(),
                pb::ListTaskPushNotificationConfigsRequest {
                    task_id: task.id.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("list")
            .configs;
        assert_eq!(listed.len(), 1);
        for read in [&created, &got, &listed[0]] {
            assert_eq!(read.url, "https://hooks.example.com/a2a", "{transport:?}");
            assert_eq!(read.token, "", "{transport:?}: token read back");
            let auth = read.authentication.as_ref().expect("scheme kept");
            assert_eq!(auth.scheme, "Bearer", "{transport:?}");
            assert_eq!(auth.credentials, "", "{transport:?}: credentials read back");
        }
    }
}

/// A task store whose commits fail while `failing` is set (a full disk, a lost database);
/// reads keep working.
struct FlakyTasks {
    inner: std::sync::Arc<trident_engine::store::MemoryStore>,
    failing: std::sync::atomic::AtomicBool,
    /// Writes refused so far.
    refused: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl trident_core::store::TaskStore for FlakyTasks {
    async fn commit(
        &self,
        scope: &trident_core::store::Scope,
        record: &trident_core::store::TaskRecord,
        expected_seq: Option<u64>,
        events: &[trident_core::store::LoggedEvent],
    ) -> Result<(), trident_core::store::StoreError> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            self.refused
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Err(trident_core::store::StoreError::Backend(
                "database or disk is full (injected)".into(),
            ));
        }
        self.inner.commit(scope, record, expected_seq, events).await
    }
    async fn append(
        &self,
        scope: &trident_core::store::Scope,
        record: &trident_core::store::TaskRecord,
        expected_seq: u64,
        events: &[trident_core::store::LoggedEvent],
    ) -> Result<(), trident_core::store::StoreError> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            self.refused
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Err(trident_core::store::StoreError::Backend(
                "database or disk is full (injected)".into(),
            ));
        }
        self.inner.append(scope, record, expected_seq, events).await
    }
    async fn append_final(
        &self,
        scope: &trident_core::store::Scope,
        task_id: &str,
        event: &trident_proto::StreamResponse,
    ) -> Result<Option<u64>, trident_core::store::StoreError> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            self.refused
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Err(trident_core::store::StoreError::Backend(
                "database or disk is full (injected)".into(),
            ));
        }
        self.inner.append_final(scope, task_id, event).await
    }
    async fn get(
        &self,
        scope: &trident_core::store::Scope,
        id: &str,
    ) -> Result<Option<trident_core::store::TaskRecord>, trident_core::store::StoreError> {
        trident_core::store::TaskStore::get(&*self.inner, scope, id).await
    }
    async fn list(
        &self,
        scope: &trident_core::store::Scope,
        query: &trident_core::store::TaskQuery,
    ) -> Result<trident_core::store::TaskPage, trident_core::store::StoreError> {
        trident_core::store::TaskStore::list(&*self.inner, scope, query).await
    }
    async fn renew_leases(
        &self,
        node: &str,
        until_ms: i64,
    ) -> Result<u64, trident_core::store::StoreError> {
        self.inner.renew_leases(node, until_ms).await
    }
    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(trident_core::store::Scope, String)>, trident_core::store::StoreError> {
        self.inner.lapsed_leases(before_ms, limit).await
    }
}

/// Works on a task, one artifact chunk every 20 ms, until it is cancelled; ignores refused
/// events, so only the cancellation can stop it.
struct Ticker {
    cancelled: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Return when cancelled; otherwise note it and carry on (an agent that ignores it).
    honour_cancel: bool,
}

#[async_trait::async_trait]
impl trident_core::AgentExecutor for Ticker {
    async fn execute(
        &self,
        ctx: trident_core::RequestContext,
        sink: trident_core::EventSink,
    ) -> Result<(), trident_core::A2aError> {
        sink.working().await?;
        let mut noted = false;
        for i in 0u32.. {
            tokio::select! {
                () = ctx.cancelled(), if !noted => {
                    self.cancelled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    noted = true;
                    if self.honour_cancel {
                        return Ok(());
                    }
                }
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            let chunk = pb::Artifact {
                artifact_id: "out".into(),
                parts: vec![pb::Part::text(format!("{i} "))],
                ..Default::default()
            };
            let _ = sink.artifact_chunk(chunk, i > 0, false).await;
        }
        Ok(())
    }
}

/// A commit that fails mid-turn left the task WORKING forever: the blocking caller never got
/// an answer and the stream sent keep-alives forever. Now the caller gets an error at once,
/// the stream ends with an error, the executor is cancelled, and the task ends FAILED as soon
/// as the store accepts writes again.
#[tokio::test]
async fn a_failed_commit_stops_the_turn_and_fails_the_task_once_the_store_recovers() {
    failed_commit(true).await;
}

/// The same with an agent that ignores the cancellation: the task still ends FAILED once the
/// store is back, and the agent's later events are refused.
#[tokio::test]
async fn a_failed_commit_fails_the_task_even_when_the_agent_ignores_cancellation() {
    failed_commit(false).await;
}

async fn failed_commit(honour_cancel: bool) {
    use futures::StreamExt;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    let memory = Arc::new(trident_engine::store::MemoryStore::new());
    let tasks = Arc::new(FlakyTasks {
        inner: memory.clone(),
        failing: false.into(),
        refused: 0.into(),
    });
    let cancelled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let engine: Arc<dyn trident_core::A2aService> = Arc::new(
        trident_engine::Engine::builder(Arc::new(Ticker {
            cancelled: cancelled.clone(),
            honour_cancel,
        }))
        .stores(trident_core::store::Stores {
            tasks: tasks.clone(),
            events: memory.clone(),
            push: memory,
        })
        .build(),
    );
    // A streaming caller, a subscriber, and a blocking caller on a second task.
    let mut stream = engine
        .send_streaming_message(&cx(), req(msg("stream")))
        .await
        .expect("stream");
    let first = stream.next().await.expect("first event").expect("ok");
    let streamed_id = match &first.response.payload {
        Some(pb::stream_response::Payload::Task(t)) => t.id.clone(),
        other => panic!("a Task first, got {other:?}"),
    };
    let mut subscriber = engine
        .subscribe_to_task(
            &cx(),
            pb::SubscribeToTaskRequest {
                id: streamed_id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribe");
    let blocking = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.send_message(&cx(), req(msg("block"))).await })
    };
    // Both turns are under way.
    until("both tasks are working and streaming chunks", || {
        let engine = engine.clone();
        async move {
            let listed = engine
                .list_tasks(
                    &cx(),
                    pb::ListTasksRequest {
                        include_artifacts: Some(true),
                        ..Default::default()
                    },
                )
                .await
                .expect("list");
            let under_way = listed.tasks.len() == 2
                && listed
                    .tasks
                    .iter()
                    .all(|t| t.state() == pb::TaskState::Working && !t.artifacts.is_empty());
            under_way.then_some(())
        }
    })
    .await;

    tasks.failing.store(true, Ordering::SeqCst);

    let answer = tokio::time::timeout(Duration::from_secs(10), blocking)
        .await
        .expect("the blocking caller is answered")
        .expect("joined");
    let err = answer.expect_err("an error, not a task that never ends");
    assert_eq!(err.kind(), ErrorKind::Internal, "{err}");
    assert!(err.message().contains("could not be stored"), "{err}");
    for (name, s) in [("stream", &mut stream), ("subscriber", &mut subscriber)] {
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
            let mut last = None;
            while let Some(item) = s.next().await {
                last = Some(item);
            }
            last
        })
        .await
        .unwrap_or_else(|_| panic!("the {name} ends"));
        match ended {
            Some(Err(e)) => assert!(e.message().contains("could not be stored"), "{name}: {e}"),
            other => panic!("the {name} ends with an error event, got {other:?}"),
        }
    }
    crate::wait::until("both executors are told to stop", || {
        let n = cancelled.load(Ordering::SeqCst);
        async move { (n >= 2).then_some(()) }
    })
    .await;
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        2,
        "both executors are told to stop"
    );
    if !honour_cancel {
        // Still refusing writes for a while: the stubborn agents keep trying.
        let before = tasks.refused.load(Ordering::SeqCst);
        crate::wait::until("the stubborn agents try more writes", || {
            let refused = tasks.refused.load(Ordering::SeqCst);
            async move { (refused >= before + 4).then_some(()) }
        })
        .await;
    }

    // Space is freed: both tasks end FAILED, saying why.
    tasks.failing.store(false, Ordering::SeqCst);
    let listed = engine
        .list_tasks(&cx(), pb::ListTasksRequest::default())
        .await
        .expect("list");
    assert_eq!(listed.tasks.len(), 2);
    for t in listed.tasks {
        let failed = crate::harness::wait_for(&*engine, &cx(), &t.id, |t| {
            t.state() == pb::TaskState::Failed
        })
        .await;
        let status = failed.status.expect("status");
        let text = status
            .message
            .and_then(|m| m.parts.into_iter().next())
            .map(|p| format!("{p:?}"))
            .unwrap_or_default();
        assert!(text.contains("could not be stored"), "{text}");
    }
    // The task is terminal now: a new subscriber is refused as for any ended task.
    let refused = engine
        .subscribe_to_task(
            &cx(),
            pb::SubscribeToTaskRequest {
                id: streamed_id,
                ..Default::default()
            },
        )
        .await
        .err()
        .map(|e| e.kind());
    assert_eq!(refused, Some(ErrorKind::UnsupportedOperation));
}

/// The four JSON routes of one server (1.0 and v0.3, JSON-RPC and HTTP+JSON) and what each
/// answers a SendMessage whose `message` is `message` (1.0), `message_v03` (v0.3 JSON-RPC's
/// shape) or `message_v03_rest` (v0.3 HTTP+JSON's), as written: (route, HTTP status, JSON-RPC
/// code or HTTP+JSON error code, error message, ErrorInfo's metadata — v0.3's free-form
/// `data`).
async fn send_raw_everywhere(
    interfaces: &trident_server::Interfaces,
    message: &str,
    message_v03: &str,
    message_v03_rest: &str,
) -> Vec<(&'static str, u16, Value, String, Value)> {
    let calls = [
        (
            "JSON-RPC",
            interfaces.jsonrpc.clone(),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{message}}}}}"#
            ),
        ),
        (
            "HTTP+JSON",
            format!("{}/message:send", interfaces.rest),
            format!(r#"{{"message":{message}}}"#),
        ),
        (
            "v0.3 JSON-RPC",
            interfaces.jsonrpc.clone(),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{message_v03}}}}}"#
            ),
        ),
        (
            "v0.3 HTTP+JSON",
            format!("{}/v1/message:send", interfaces.rest),
            format!(r#"{{"message":{message_v03_rest}}}"#),
        ),
    ];
    let mut answers = Vec::new();
    for (route, url, body) in calls {
        let (status, answer, _) = post(&url, Some("application/json"), &body).await;
        // v0.3's HTTP+JSON error body is the error object itself.
        let error = if answer["error"].is_null() {
            &answer
        } else {
            &answer["error"]
        };
        let meta = if route.starts_with("v0.3") {
            error["data"].clone()
        } else if error["details"].is_null() {
            error_info(&error["data"])["metadata"].clone()
        } else {
            error_info(&error["details"])["metadata"].clone()
        };
        answers.push((
            route,
            status,
            error["code"].clone(),
            error["message"].as_str().unwrap_or_default().to_owned(),
            meta,
        ));
    }
    answers
}

/// The HTTP status and error code of InvalidParams on `route`: JSON-RPC's -32602 (in HTTP 200;
/// v0.3's HTTP+JSON with 400), HTTP+JSON's 400.
fn invalid_params(route: &str) -> (u16, Value) {
    match route {
        "HTTP+JSON" => (400, json!(400)),
        "v0.3 HTTP+JSON" => (400, json!(-32602)),
        _ => (200, json!(-32602)),
    }
}

/// A key given twice in a JSON object — message metadata, a part, the message itself — was
/// read as the last of the two, so what the agent saw was not what the client's JSON said.
/// Every JSON route refuses it as InvalidParams naming the key and where it is, and the call
/// never runs.
#[tokio::test]
async fn a_key_twice_in_a_json_object_is_refused_on_every_json_route() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    // (message as 1.0 / v0.3 HTTP+JSON write it, as v0.3 JSON-RPC writes it, key, path)
    let cases = [
        (
            r#"{"messageId":"m1","role":"ROLE_USER","content":[{"text":"hi"}],"parts":[{"text":"hi"}],"metadata":{"tier":"free","tier":"paid"}}"#,
            r#"{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}],"metadata":{"tier":"free","tier":"paid"}}"#,
            "tier",
            "message.metadata",
        ),
        (
            r#"{"messageId":"m2","role":"ROLE_USER","content":[{"text":"a"}],"parts":[{"text":"a","metadata":{"x":{"y":1,"\u0079":2}}}]}"#,
            r#"{"kind":"message","messageId":"m2","role":"user","parts":[{"kind":"text","text":"a","metadata":{"x":{"y":1,"\u0079":2}}}]}"#,
            "y",
            "message.parts[0].metadata.x",
        ),
        (
            r#"{"messageId":"m3","messageId":"m4","role":"ROLE_USER","content":[{"text":"a"}],"parts":[{"text":"a"}]}"#,
            r#"{"kind":"message","messageId":"m3","messageId":"m4","role":"user","parts":[{"kind":"text","text":"a"}]}"#,
            "messageId",
            "message",
        ),
    ];
    for (message, message_v03, key, path) in cases {
        for (route, status, code, text, meta) in
            send_raw_everywhere(&interfaces, message, message_v03, message).await
        {
            let what = format!("{route}, {key} at {path}");
            assert_eq!((status, code), invalid_params(route), "{what}: {text}");
            assert!(
                text.contains(&format!("duplicate key {key:?}")) && text.contains(path),
                "{what}: the error names the key and where: {text}"
            );
            assert_eq!(meta["duplicateKey"], key, "{what}: {meta}");
            assert_eq!(meta["path"], path, "{what}: {meta}");
        }
    }
    // The envelope's own members twice: its derived decoder refuses them (InvalidRequest).
    let params = r#"{"message":{"messageId":"m0","role":"ROLE_USER","parts":[{"text":"a"}]}}"#;
    for envelope in [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{params},"params":{params}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"SendMessage","params":{params}}}"#
        ),
    ] {
        let (status, body, _) =
            post(&interfaces.jsonrpc, Some("application/json"), &envelope).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (200, &json!(-32600)),
            "{body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("duplicate field"),
            "{body}"
        );
    }
    assert_eq!(task_count(&f).await, 0, "no refused request ran");
    // The same key in different objects, or a value equal to a key, is no repeat.
    let ok = r#"{"messageId":"m5","role":"ROLE_USER","content":[{"text":"a"}],"parts":[{"text":"a","metadata":{"a":{"a":1}}}],"metadata":{"a":"a"}}"#;
    let ok_v03 = r#"{"kind":"message","messageId":"m6","role":"user","parts":[{"kind":"text","text":"a","metadata":{"a":{"a":1}}}],"metadata":{"a":"a"}}"#;
    for (route, status, code, text, _) in send_raw_everywhere(&interfaces, ok, ok_v03, ok).await {
        assert_eq!((status, &code), (200, &Value::Null), "{route}: {text}");
    }
}

/// A message (1.0 and v0.3 HTTP+JSON, v0.3 JSON-RPC) with 60 000 metadata keys in 700 KB:
/// within the 65 536 values, beyond 4 × its size + 1 MiB once decoded.
fn dense_messages() -> (String, String) {
    let keys: Vec<String> = (0..60_000).map(|i| format!(r#""k{i}":0"#)).collect();
    let keys = keys.join(",");
    (
        format!(
            r#"{{"messageId":"m1","role":"ROLE_USER","content":[{{"text":"a"}}],"parts":[{{"text":"a"}}],"metadata":{{{keys}}}}}"#
        ),
        format!(
            r#"{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"text","text":"a"}}],"metadata":{{{keys}}}}}"#
        ),
    )
}

/// A body of many small values decodes into many times its size (65 k metadata keys in 4 MB
/// peaked at 32-65 MB a request), and the v0.3 routes did not bound values at all: every JSON
/// route refuses, before decoding, a body whose values would take more than 4 × its size and
/// 1 MiB (`--json-memory-factor`), and one of more than 65 536 values.
#[tokio::test]
async fn a_body_that_would_decode_out_of_proportion_is_refused_on_every_json_route() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    let (dense, dense_v03) = dense_messages();
    for (route, status, code, text, meta) in
        send_raw_everywhere(&interfaces, &dense, &dense_v03, &dense).await
    {
        assert_eq!((status, code), invalid_params(route), "{route}: {text}");
        assert!(text.contains("more JSON values"), "{route}: {text}");
        assert_eq!(meta["memoryFactor"], "4", "{route}: {meta}");
    }
    // More than 65 536 values (over the memory budget as well).
    let parts = vec![r#"{"text":""}"#; 140_000].join(",");
    let many = format!(r#"{{"messageId":"m2","role":"ROLE_USER","parts":[{parts}]}}"#);
    let many_v03_rest = format!(r#"{{"messageId":"m2","role":"ROLE_USER","content":[{parts}]}}"#);
    let parts_v03 = vec![r#"{"kind":"text","text":""}"#; 140_000].join(",");
    let many_v03 =
        format!(r#"{{"kind":"message","messageId":"m2","role":"user","parts":[{parts_v03}]}}"#);
    for (route, status, code, text, _) in
        send_raw_everywhere(&interfaces, &many, &many_v03, &many_v03_rest).await
    {
        assert_eq!((status, code), invalid_params(route), "{route}: {text}");
        // Refused by the scan, not after decoding by the engine's bound on parts (which is
        // how the v0.3 routes refused it, having decoded 140 k parts).
        assert!(text.contains("JSON values"), "{route}: {text}");
    }
    assert_eq!(task_count(&f).await, 0, "no refused request ran");
}

/// The memory budget is the server's to set (`ServerBuilder::json_limits`, what
/// `--json-memory-factor` and `--json-memory-slack` set): with a larger factor the dense body
/// refused by default is decoded and answered on every JSON route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_memory_budget_is_the_servers_to_set() {
    let server =
        trident::Server::builder_shared(std::sync::Arc::new(trident_testkit::agents::Echo))
            .bind("127.0.0.1:0")
            .json_limits(trident::JsonLimits {
                memory_factor: 64,
                ..Default::default()
            })
            .build()
            .await
            .expect("build")
            .spawn();
    let (dense, dense_v03) = dense_messages();
    let answers = send_raw_everywhere(server.interfaces(), &dense, &dense_v03, &dense).await;
    assert_eq!(answers.len(), 4);
    for (route, status, code, text, _) in answers {
        assert_eq!((status, &code), (200, &Value::Null), "{route}: {text}");
    }
}

/// A `:verb` route with another method is 405 with `Allow`, like every other route: the
/// request used to fall through to the verb-less route of the same path, so `GET
/// /tasks/ID:cancel` was GetTask of a task named `ID:cancel` (404).
#[tokio::test]
async fn a_colon_verb_route_with_another_method_is_405() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let rest = f.interfaces.clone().expect("server").rest;
    let task = task_of(
        f.svc
            .send_message(&cx(), req(msg("hello")))
            .await
            .expect("a task"),
    );
    let http = reqwest::Client::new();
    let id = &task.id;
    for (method, path, allow) in [
        ("GET", format!("/tasks/{id}:cancel"), "POST"),
        ("DELETE", format!("/tasks/{id}:cancel"), "POST"),
        ("GET", format!("/acme/tasks/{id}:cancel"), "POST"),
        ("DELETE", format!("/tasks/{id}:subscribe"), "GET, POST"),
        ("PUT", format!("/acme/tasks/{id}:subscribe"), "GET, POST"),
        // A v0.3 path (`/v1/...`) that v0.3 does not route is the 1.0 route of tenant `v1`.
        ("GET", format!("/v1/tasks/{id}:cancel"), "POST"),
    ] {
        let body = assert_405(&http, method, &format!("{rest}{path}"), allow).await;
        assert_eq!(body["error"]["code"], 405, "{method} {path}: {body}");
    }
    // The task is untouched, and the verb-less route of the same id still answers.
    let response = http
        .get(format!("{rest}/tasks/{id}"))
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status().as_u16(), 200);
}

/// Sends `head` (and `body`) on a fresh connection to `addr` and reads the whole answer: the
/// request says `Connection: close` where it is served, and a refusal closes the connection.
async fn raw_exchange(addr: &str, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

fn status_of(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP answer: {answer:?}"))
}

/// RFC 9112: an HTTP/1.1 request without `Host`, any request with two (or an invalid one), and
/// `chunked` applied twice (`chunked, chunked`, or two `Transfer-Encoding` lines) were all
/// served — hyper checks none of them, so a proxy in front that reads them otherwise could
/// route or frame the request differently from us. They are 400 (a coding other than chunked
/// 501), in the binding's format, and close the connection. HTTP/1.0 may omit `Host`.
#[tokio::test]
async fn requests_without_one_host_or_with_chunked_twice_are_refused() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    let addr = interfaces.grpc.clone();
    let rpc = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#;
    let chunk = format!("{:x}\r\n{rpc}\r\n0\r\n\r\n", rpc.len());
    let get = |host_lines: &str| {
        format!("GET /tasks HTTP/1.1\r\n{host_lines}a2a-version: 1.0\r\nconnection: close\r\n\r\n")
    };
    let post = |host_lines: &str, te_lines: &str| {
        format!(
            "POST / HTTP/1.1\r\n{host_lines}{te_lines}content-type: application/json\r\n\
             a2a-version: 1.0\r\nconnection: close\r\n\r\n{chunk}"
        )
    };
    let host = format!("host: {addr}\r\n");
    let cases: Vec<(&str, String, u16)> = vec![
        ("HTTP+JSON, no Host", get(""), 400),
        ("HTTP+JSON, two Hosts", get(&format!("{host}{host}")), 400),
        (
            "HTTP+JSON, a Host that is not host:port",
            get("host: a b@c\r\n"),
            400,
        ),
        (
            "JSON-RPC, two Hosts",
            post(
                &format!("{host}host: elsewhere\r\n"),
                "transfer-encoding: chunked\r\n",
            ),
            400,
        ),
        (
            "JSON-RPC, chunked, chunked",
            post(&host, "transfer-encoding: chunked, chunked\r\n"),
            400,
        ),
        (
            "JSON-RPC, two chunked lines",
            post(
                &host,
                "transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n",
            ),
            400,
        ),
        (
            "JSON-RPC, gzip then chunked",
            post(&host, "transfer-encoding: gzip, chunked\r\n"),
            501,
        ),
    ];
    for (what, request, expected) in cases {
        let answer = raw_exchange(&addr, request.as_bytes()).await;
        assert_eq!(status_of(&answer), expected, "{what}: {answer}");
        let lower = answer.to_ascii_lowercase();
        assert!(lower.contains("connection: close"), "{what}: {answer}");
        if what.starts_with("JSON-RPC") {
            assert!(
                answer.contains("-32600"),
                "{what}: a JSON-RPC error: {answer}"
            );
        } else {
            assert!(
                answer.contains("INVALID_REQUEST"),
                "{what}: an AIP-193 body: {answer}"
            );
        }
    }
    // Served: one Host (chunked once too), and HTTP/1.0 without Host.
    for (what, request) in [
        ("GET with Host", get(&host)),
        (
            "chunked POST with Host",
            post(&host, "transfer-encoding: chunked\r\n"),
        ),
        (
            "HTTP/1.0 without Host",
            "GET /tasks HTTP/1.0\r\na2a-version: 1.0\r\n\r\n".to_owned(),
        ),
    ] {
        let answer = raw_exchange(&addr, request.as_bytes()).await;
        assert_eq!(status_of(&answer), 200, "{what}: {answer}");
    }
}

/// The JSON bindings read the caller's deadline from `grpc-timeout` too: a malformed one was
/// ignored (the call ran without a deadline). It is `InvalidRequest` naming the header.
#[tokio::test]
async fn a_malformed_grpc_timeout_is_refused_on_the_json_bindings() {
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    let http = reqwest::Client::new();
    for timeout in ["abc", "5", "5s", "123456789S"] {
        let response = http
            .get(format!("{}/tasks", interfaces.rest))
            .header("a2a-version", "1.0")
            .header("grpc-timeout", timeout)
            .send()
            .await
            .expect("HTTP");
        assert_eq!(response.status().as_u16(), 400, "HTTP+JSON {timeout:?}");
        let body: Value = response.json().await.expect("AIP-193");
        assert_eq!(
            error_info(&body["error"]["details"])["reason"],
            "INVALID_REQUEST",
            "{body}"
        );
        let body: Value = http
            .post(&interfaces.jsonrpc)
            .header("a2a-version", "1.0")
            .header("grpc-timeout", timeout)
            .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}}))
            .send()
            .await
            .expect("HTTP")
            .json()
            .await
            .expect("JSON");
        assert_eq!(
            body["error"]["code"], -32600,
            "JSON-RPC {timeout:?}: {body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("grpc-timeout")),
            "{body}"
        );
    }
    // A well-formed one is a deadline, and the call is served.
    let response = http
        .get(format!("{}/tasks", interfaces.rest))
        .header("a2a-version", "1.0")
        .header("grpc-timeout", "30S")
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status().as_u16(), 200);
}
