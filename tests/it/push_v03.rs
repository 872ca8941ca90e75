//! Push notifications in the shape of the protocol generation a configuration was created
//! through, against a real HTTP receiver on loopback and a server built with the facade (which
//! hands the engine the v0.3 encoder). A configuration created by a v0.3 request — over
//! JSON-RPC, HTTP+JSON or gRPC, or given with a v0.3 `message/send` — receives the task itself
//! in v0.3's JSON (`kind: "task"`, lower-case states, `parts` with `kind`) as
//! `application/json` with `X-A2A-Notification-Token`, as the v0.3 SDKs' senders POST it; a
//! configuration created through 1.0 on the same task still receives one `StreamResponse` per
//! event.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use trident::{Server, WebhookPolicy};
use trident_proto as pb;
use trident_proto::v03;
use trident_proto::v03::a2a_service_client::A2aServiceClient;

/// One POST the receiver took: which hook, its headers, its body as JSON.
#[derive(Debug)]
struct Hit {
    hook: String,
    headers: HeaderMap,
    body: Value,
}

impl Hit {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn take(
    State(tx): State<mpsc::UnboundedSender<Hit>>,
    Path(hook): Path<String>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let _ = tx.send(Hit {
        hook,
        headers,
        body,
    });
    StatusCode::OK
}

/// A receiver on loopback: `{base}/{hook}` for any hook name.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Hit>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new()
        .route("/hook/{name}", axum::routing::post(take))
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), rx)
}

/// The demo agent served by the facade, webhooks to loopback allowed; (origin, gRPC target).
async fn server() -> (String, String, tokio::sync::oneshot::Sender<()>) {
    let server = Server::builder_shared(Arc::new(trident_testkit::agents::Demo))
        .webhook_policy(WebhookPolicy::new().allow("127.0.0.1").expect("entry"))
        // A list of more than two 1.0 pages on one task (the default limit is one page).
        .engine_config(trident::EngineConfig {
            push_limits: trident::PushLimits {
                per_task: 1000,
                ..Default::default()
            },
            ..Default::default()
        })
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let origin = server.interfaces().rest.clone();
    let grpc = server.interfaces().grpc.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.with_graceful_shutdown(async {
        let _ = stopped.await;
    }));
    (origin, grpc, stop)
}

async fn post(http: &reqwest::Client, url: &str, headers: &[(&str, &str)], body: Value) -> Value {
    let mut rb = http.post(url).json(&body);
    for (k, v) in headers {
        rb = rb.header(*k, *v);
    }
    let r = rb.send().await.expect("request");
    let status = r.status();
    let text = r.text().await.expect("body");
    assert!(status.is_success(), "{url}: HTTP {status}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"))
}

/// A v0.3 JSON-RPC call's `result` (failing on an error).
async fn rpc03(http: &reqwest::Client, origin: &str, method: &str, params: Value) -> Value {
    let v = post(
        http,
        &format!("{origin}/"),
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )
    .await;
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

fn user03(id: &str, text: &str, task: Option<&str>) -> Value {
    let mut m = json!({"kind": "message", "messageId": id, "role": "user",
                       "parts": [{"kind": "text", "text": text}]});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

/// The next POST to `hook` (others are kept for later).
async fn next_for(rx: &mut mpsc::UnboundedReceiver<Hit>, kept: &mut Vec<Hit>, hook: &str) -> Hit {
    if let Some(i) = kept.iter().position(|h| h.hook == hook) {
        return kept.remove(i);
    }
    loop {
        let hit = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("a notification to {hook} in time"))
            .expect("receiver open");
        if hit.hook == hook {
            return hit;
        }
        kept.push(hit);
    }
}

/// POSTs to `hook` until one says the task is `done` (v0.3 body: `status.state`; 1.0 body:
/// a status update or task in that state); all of them, in order.
async fn until_state(
    rx: &mut mpsc::UnboundedReceiver<Hit>,
    kept: &mut Vec<Hit>,
    hook: &str,
    done: &str,
) -> Vec<Hit> {
    let mut hits = Vec::new();
    loop {
        let hit = next_for(rx, kept, hook).await;
        let state = hit
            .body
            .pointer("/status/state")
            .or_else(|| hit.body.pointer("/statusUpdate/status/state"))
            .or_else(|| hit.body.pointer("/task/status/state"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        hits.push(hit);
        if state.as_deref() == Some(done) {
            return hits;
        }
    }
}

/// Every v0.3 notification: the task itself, v0.3 headers.
fn check_v03(hits: &[Hit], task: &str, token: &str) {
    for hit in hits {
        assert_eq!(
            hit.header("content-type"),
            Some("application/json"),
            "{hit:?}"
        );
        assert_eq!(
            hit.header("x-a2a-notification-token"),
            Some(token),
            "{hit:?}"
        );
        assert_eq!(
            hit.header("a2a-notification-token"),
            None,
            "v0.3 names one token header: {hit:?}"
        );
        assert!(
            notification_seq(hit, task).is_some(),
            "A2A-Notification-Id {{taskId}}:{{seq}}: {hit:?}"
        );
        assert_eq!(hit.body["kind"], "task", "{hit:?}");
        assert_eq!(hit.body["id"], task, "{hit:?}");
        let state = hit.body["status"]["state"].as_str().unwrap_or_default();
        assert!(
            ["submitted", "working", "input-required", "completed"].contains(&state),
            "a v0.3 state: {hit:?}"
        );
    }
}

/// The last v0.3 notification of the follow-up: the whole completed task in v0.3's JSON.
fn check_completed_v03(last: &Hit, task: &str) {
    let body = &last.body;
    assert_eq!(body["status"]["state"], "completed", "{body}");
    assert_eq!(body["contextId"].as_str().map(str::is_empty), Some(false));
    assert_eq!(
        body["artifacts"],
        json!([{"artifactId": "greeting", "parts": [{"kind": "text", "text": "Hello, Ada!"}]}]),
        "{body}"
    );
    let history = body["history"].as_array().expect("history");
    assert!(
        history.iter().all(|m| m["kind"] == "message"
            && m["taskId"] == task
            && ["user", "agent"].contains(&m["role"].as_str().unwrap_or_default())),
        "{body}"
    );
    assert!(
        history
            .iter()
            .any(|m| m["parts"] == json!([{"kind": "text", "text": "Ada"}])),
        "the follow-up is in the history: {body}"
    );
}

/// The sequence number of a notification's `A2A-Notification-Id: {task}:{seq}`.
fn notification_seq(hit: &Hit, task: &str) -> Option<u64> {
    hit.header("a2a-notification-id")?
        .strip_prefix(task)?
        .strip_prefix(':')?
        .parse()
        .ok()
}

/// Every 1.0 notification: one `StreamResponse` per event, 1.0 headers, each with its own
/// `A2A-Notification-Id`.
fn check_v1(hits: &[Hit], task: &str) {
    let seqs: Vec<Option<u64>> = hits.iter().map(|h| notification_seq(h, task)).collect();
    assert!(
        seqs.windows(2).all(|w| w[0].is_some() && w[0] < w[1]),
        "increasing {{taskId}}:{{seq}} ids: {seqs:?}"
    );
    for hit in hits {
        assert_eq!(
            hit.header("content-type"),
            Some("application/a2a+json"),
            "{hit:?}"
        );
        assert_eq!(hit.header("x-a2a-notification-token"), Some("tok-v1"));
        assert_eq!(hit.header("a2a-notification-token"), Some("tok-v1"));
        let event: pb::StreamResponse =
            serde_json::from_value(hit.body.clone()).expect("a 1.0 StreamResponse");
        let id = match event.payload.expect("payload") {
            pb::stream_response::Payload::StatusUpdate(u) => u.task_id,
            pb::stream_response::Payload::ArtifactUpdate(u) => u.task_id,
            pb::stream_response::Payload::Task(t) => t.id,
            pb::stream_response::Payload::Message(m) => m.task_id,
        };
        assert_eq!(id, task);
    }
}

/// How a v0.3 client creates its configuration.
#[derive(Debug, Clone, Copy)]
enum Via {
    JsonRpc,
    Rest,
    Grpc,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v03_configs_get_the_task_in_v03_json_and_1_0_configs_get_events() {
    let (base, mut rx) = receiver().await;
    let (origin, grpc, _stop) = server().await;
    let http = reqwest::Client::new();
    let mut kept = Vec::new();
    for via in [Via::JsonRpc, Via::Rest, Via::Grpc] {
        // A task waiting for input, created by a v0.3 client.
        let task = rpc03(
            &http,
            &origin,
            "message/send",
            json!({"message": user03(&format!("m-{via:?}"), "input", None)}),
        )
        .await;
        assert_eq!(task["status"]["state"], "input-required", "{task}");
        let id = task["id"].as_str().expect("task id").to_owned();
        let hook03 = format!("v03-{via:?}");
        let url03 = format!("{base}/{hook03}");
        let token = format!("tok-{via:?}");
        match via {
            Via::JsonRpc => {
                rpc03(
                    &http,
                    &origin,
                    "tasks/pushNotificationConfig/set",
                    json!({"taskId": id, "pushNotificationConfig":
                           {"id": "c03", "url": url03, "token": token}}),
                )
                .await;
            }
            Via::Rest => {
                post(
                    &http,
                    &format!("{origin}/v1/tasks/{id}/pushNotificationConfigs"),
                    &[],
                    json!({"parent": format!("tasks/{id}"), "configId": "c03",
                           "config": {"pushNotificationConfig": {"url": url03, "token": token}}}),
                )
                .await;
            }
            Via::Grpc => {
                let mut c = A2aServiceClient::connect(format!("http://{grpc}"))
                    .await
                    .expect("gRPC connect");
                c.create_task_push_notification_config(
                    v03::CreateTaskPushNotificationConfigRequest {
                        parent: format!("tasks/{id}"),
                        config_id: "c03".into(),
                        config: Some(v03::TaskPushNotificationConfig {
                            name: String::new(),
                            push_notification_config: Some(v03::PushNotificationConfig {
                                id: "c03".into(),
                                url: url03.clone(),
                                token: token.clone(),
                                authentication: None,
                            }),
                        }),
                    },
                )
                .await
                .expect("v0.3 gRPC create");
            }
        }
        // A 1.0 client's configuration on the same task.
        let hook1 = format!("v1-{via:?}");
        let created = post(
            &http,
            &format!("{origin}/"),
            &[("a2a-version", "1.0")],
            json!({"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig",
                   "params": {"taskId": id, "id": "c1", "url": format!("{base}/{hook1}"),
                              "token": "tok-v1"}}),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");

        // The follow-up completes the task.
        let done = rpc03(
            &http,
            &origin,
            "message/send",
            json!({"message": user03(&format!("m2-{via:?}"), "Ada", Some(&id))}),
        )
        .await;
        assert_eq!(done["status"]["state"], "completed", "{done}");

        let hits03 = until_state(&mut rx, &mut kept, &hook03, "completed").await;
        check_v03(&hits03, &id, &token);
        check_completed_v03(hits03.last().expect("a notification"), &id);
        let hits1 = until_state(&mut rx, &mut kept, &hook1, "TASK_STATE_COMPLETED").await;
        check_v1(&hits1, &id);
        assert!(
            hits1.iter().any(|h| h.body.get("artifactUpdate").is_some()),
            "1.0 gets each event, the artifact too"
        );
    }
}

/// A configuration given with a v0.3 `message/send` (`configuration.pushNotificationConfig`)
/// is created with the task: its notifications are v0.3's from the first event on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_given_with_a_v03_send_is_notified_in_v03_shape() {
    let (base, mut rx) = receiver().await;
    let (origin, _grpc, _stop) = server().await;
    let http = reqwest::Client::new();
    let mut kept = Vec::new();
    let task = rpc03(
        &http,
        &origin,
        "message/send",
        json!({"message": user03("m-inline", "input", None),
               "configuration": {"blocking": true, "pushNotificationConfig":
                                 {"url": format!("{base}/inline"), "token": "tok-inline"}}}),
    )
    .await;
    let id = task["id"].as_str().expect("task id").to_owned();
    let waiting = until_state(&mut rx, &mut kept, "inline", "input-required").await;
    check_v03(&waiting, &id, "tok-inline");
    let first = &waiting[0].body;
    assert_eq!(
        first["history"][0]["parts"],
        json!([{"kind": "text", "text": "input"}]),
        "{first}"
    );
    rpc03(
        &http,
        &origin,
        "message/send",
        json!({"message": user03("m-inline-2", "Ada", Some(&id))}),
    )
    .await;
    let done = until_state(&mut rx, &mut kept, "inline", "completed").await;
    check_v03(&done, &id, "tok-inline");
    check_completed_v03(done.last().expect("a notification"), &id);
}

/// v0.3's push-config lists have no pages: over each binding a v0.3 client gets every
/// configuration of a task with more than one page of them (the 1.0 list pages by 100).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v03_lists_answer_every_config_on_each_binding() {
    const CONFIGS: usize = 230;
    let (origin, grpc, _stop) = server().await;
    let http = reqwest::Client::new();
    // A completed task: its configurations are never notified.
    let task = rpc03(
        &http,
        &origin,
        "message/send",
        json!({"message": user03("m-list", "hello", None)}),
    )
    .await;
    let id = task["id"].as_str().expect("task id").to_owned();
    for i in 0..CONFIGS {
        let created = post(
            &http,
            &format!("{origin}/"),
            &[("a2a-version", "1.0")],
            json!({"jsonrpc": "2.0", "id": i, "method": "CreateTaskPushNotificationConfig",
                   "params": {"taskId": id, "id": format!("c{i:03}"),
                              "url": format!("http://127.0.0.1:9/{i}")}}),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
    }
    let want: Vec<String> = (0..CONFIGS).map(|i| format!("c{i:03}")).collect();
    // The 1.0 list pages.
    let page = post(
        &http,
        &format!("{origin}/"),
        &[("a2a-version", "1.0")],
        json!({"jsonrpc": "2.0", "id": 1, "method": "ListTaskPushNotificationConfigs",
               "params": {"taskId": id}}),
    )
    .await;
    assert_eq!(
        page["result"]["configs"].as_array().map(Vec::len),
        Some(100),
        "{page}"
    );

    let jsonrpc = rpc03(
        &http,
        &origin,
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
    )
    .await;
    let ids: Vec<String> = jsonrpc
        .as_array()
        .expect("a bare array")
        .iter()
        .map(|c| {
            c["pushNotificationConfig"]["id"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(ids, want, "JSON-RPC");

    let rest: Value = http
        .get(format!("{origin}/v1/tasks/{id}/pushNotificationConfigs"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(rest.get("nextPageToken"), None, "{rest}");
    let ids: Vec<String> = rest["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .map(|c| {
            c["pushNotificationConfig"]["id"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(ids, want, "HTTP+JSON");

    let mut c = A2aServiceClient::connect(format!("http://{grpc}"))
        .await
        .expect("gRPC connect");
    let listed = c
        .list_task_push_notification_config(v03::ListTaskPushNotificationConfigRequest {
            parent: format!("tasks/{id}"),
            page_size: 10,
            page_token: String::new(),
        })
        .await
        .expect("v0.3 gRPC list")
        .into_inner();
    assert_eq!(listed.next_page_token, "");
    let ids: Vec<String> = listed
        .configs
        .iter()
        .map(|c| {
            c.push_notification_config
                .as_ref()
                .map(|p| p.id.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(ids, want, "gRPC");
}

/// A v0.3 create (`tasks/pushNotificationConfig/set`, its HTTP+JSON and gRPC forms) answers
/// without the configuration's secrets, as 1.0's Create, Get and List do: `token` and
/// `authentication.credentials` are write-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v03_creates_do_not_echo_push_secrets() {
    let (origin, grpc, _stop) = server().await;
    let http = reqwest::Client::new();
    let task = rpc03(
        &http,
        &origin,
        "message/send",
        json!({"message": user03("m-secret", "input", None)}),
    )
    .await;
    let id = task["id"].as_str().expect("task id").to_owned();
    let config = json!({"url": "http://127.0.0.1:9/hook", "token": "opaque-123",
                        "authentication": {"schemes": ["Bearer"], "credentials": "hook-secret"}});
    let mut answers = Vec::new();
    let mut rpc_config = config.clone();
    rpc_config["id"] = json!("c-rpc");
    answers.push((
        "JSON-RPC",
        rpc03(
            &http,
            &origin,
            "tasks/pushNotificationConfig/set",
            json!({"taskId": id, "pushNotificationConfig": rpc_config}),
        )
        .await,
    ));
    answers.push((
        "HTTP+JSON",
        post(
            &http,
            &format!("{origin}/v1/tasks/{id}/pushNotificationConfigs"),
            &[],
            json!({"parent": format!("tasks/{id}"), "configId": "c-rest",
                   "config": {"pushNotificationConfig": config}}),
        )
        .await,
    ));
    for (via, answer) in &answers {
        let p = &answer["pushNotificationConfig"];
        assert_eq!(p["url"], "http://127.0.0.1:9/hook", "{via}: {answer}");
        assert!(
            p.get("token").is_none_or(|t| t == ""),
            "{via}: token echoed: {answer}"
        );
        assert!(
            p["authentication"]
                .get("credentials")
                .is_none_or(|c| c == ""),
            "{via}: credentials echoed: {answer}"
        );
    }
    let mut c = A2aServiceClient::connect(format!("http://{grpc}"))
        .await
        .expect("gRPC connect");
    let created = c
        .create_task_push_notification_config(v03::CreateTaskPushNotificationConfigRequest {
            parent: format!("tasks/{id}"),
            config_id: "c-grpc".into(),
            config: Some(v03::TaskPushNotificationConfig {
                name: String::new(),
                push_notification_config: Some(v03::PushNotificationConfig {
                    id: "c-grpc".into(),
                    url: "http://127.0.0.1:9/hook".into(),
                    token: "opaque-123".into(),
                    authentication: Some(v03::AuthenticationInfo {
                        schemes: vec!["Bearer".into()],
                        credentials: "hook-secret".into(),
                    }),
                }),
            }),
        })
        .await
        .expect("v0.3 gRPC create")
        .into_inner();
    let p = created.push_notification_config.expect("config");
    assert_eq!(p.url, "http://127.0.0.1:9/hook");
    assert_eq!(p.token, "", "gRPC: token echoed");
    assert_eq!(
        p.authentication.map(|a| a.credentials).unwrap_or_default(),
        "",
        "gRPC: credentials echoed"
    );
}
