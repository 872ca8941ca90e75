//! A2A v0.3 on the JSON-RPC endpoint and the `/v1/...` HTTP+JSON routes (the compatibility
//! layer, `trident-v03`): whole bodies in v0.3's shapes, as the v0.3 SDKs (a2a-sdk 0.3.26,
//! @a2a-js/sdk 0.3.14) write and read them. gRPC's `a2a.v1.A2AService` is driven by the real
//! v0.3 Python client in interop/python03.

use serde_json::{Value, json};

use super::{Call, Check, Names, origin, parse_sse, read, send, server};
use crate::harness::Variant;

fn user(id: &str, text: &str) -> Value {
    json!({"kind": "message", "messageId": id, "role": "user",
           "parts": [{"kind": "text", "text": text}]})
}

async fn post(
    http: &reqwest::Client,
    origin: &str,
    names: &Names,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> super::Reply {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    read(
        send(
            http,
            origin,
            names,
            Call {
                method: "POST",
                path,
                headers: &all,
                body: Some(body.to_string()),
            },
        )
        .await,
    )
    .await
}

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_v03_methods_frames_and_errors() {
    let f = server(Variant::default()).await;
    let origin = origin(&f);
    let http = reqwest::Client::new();
    let mut names = Names::default();
    let mut check = Check::new();

    // message/send: the bare task with `kind`, lower-case state, `parts`.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(1, "message/send", json!({"message": user("m-1", "hello")})),
    )
    .await;
    let raw = r.json();
    names.learn_at(&raw, "/result/id", "<task>");
    names.learn_at(&raw, "/result/contextId", "<ctx>");
    let stored = json!({"kind": "message", "messageId": "m-1", "role": "user", "taskId": "<task>",
                        "contextId": "<ctx>", "parts": [{"kind": "text", "text": "hello"}]});
    check.eq(
        "message/send",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
        "jsonrpc": "2.0", "id": 1, "result": {
            "kind": "task", "id": "<task>", "contextId": "<ctx>",
            "status": {"state": "completed", "timestamp": "<ts>"},
            "artifacts": [{"artifactId": "echo", "parts": [{"kind": "text", "text": "hello"}]}],
            "history": [stored.clone()],
        }}}),
    );

    // message/send answered by a direct message.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            2,
            "message/send",
            json!({"message": user("m-2", "reply hi")}),
        ),
    )
    .await;
    check.eq(
        "message/send (direct message)",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
        "jsonrpc": "2.0", "id": 2, "result": {
            "kind": "message", "messageId": "<uuid>", "contextId": "<uuid>", "role": "agent",
            "parts": [{"kind": "text", "text": "reply hi"}],
        }}}),
    );

    // tasks/get with historyLength.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(3, "tasks/get", json!({"id": "<task>", "historyLength": 1})),
    )
    .await;
    check.eq(
        "tasks/get",
        &r.summary(&names)["body"]["result"]["history"],
        &json!([stored]),
    );

    // message/stream: SSE, each `data:` a JSON-RPC response holding one bare event; the last
    // status update says `final: true`.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            4,
            "message/stream",
            json!({"message": user("m-4", "stream 2 1")}),
        ),
    )
    .await;
    check.eq(
        "message/stream content type",
        &json!(r.header("content-type")),
        &json!("text/event-stream"),
    );
    let frames = parse_sse(&r.text);
    let results: Vec<Value> = frames
        .iter()
        .filter_map(|f| f.data.first())
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .map(|v| v["result"].clone())
        .collect();
    let kinds: Vec<&str> = results.iter().filter_map(|r| r["kind"].as_str()).collect();
    check.eq(
        "message/stream kinds",
        &json!(kinds),
        &json!([
            "task",
            "status-update",
            "artifact-update",
            "artifact-update",
            "status-update"
        ]),
    );
    let finals: Vec<Value> = results
        .iter()
        .filter(|r| r["kind"] == "status-update")
        .map(|r| json!([r["status"]["state"], r["final"]]))
        .collect();
    check.eq(
        "message/stream final",
        &json!(finals),
        &json!([["working", false], ["completed", true]]),
    );

    // Push configs: set, get, list, delete (list answers the bare array; delete null).
    let hook = json!({"id": "c-1", "url": "https://client.example.com/hook"});
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            5,
            "tasks/pushNotificationConfig/set",
            json!({"taskId": "<task>", "pushNotificationConfig": hook}),
        ),
    )
    .await;
    check.eq(
        "tasks/pushNotificationConfig/set",
        &r.summary(&names)["body"],
        &json!({"jsonrpc": "2.0", "id": 5, "result": {"taskId": "<task>", "pushNotificationConfig": hook}}),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            6,
            "tasks/pushNotificationConfig/get",
            json!({"id": "<task>", "pushNotificationConfigId": "c-1"}),
        ),
    )
    .await;
    check.eq(
        "tasks/pushNotificationConfig/get",
        &r.summary(&names)["body"]["result"],
        &json!({"taskId": "<task>", "pushNotificationConfig": hook}),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            7,
            "tasks/pushNotificationConfig/list",
            json!({"id": "<task>"}),
        ),
    )
    .await;
    check.eq(
        "tasks/pushNotificationConfig/list",
        &r.summary(&names)["body"]["result"],
        &json!([{"taskId": "<task>", "pushNotificationConfig": hook}]),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            8,
            "tasks/pushNotificationConfig/delete",
            json!({"id": "<task>", "pushNotificationConfigId": "c-1"}),
        ),
    )
    .await;
    check.eq(
        "tasks/pushNotificationConfig/delete",
        &r.summary(&names)["body"],
        &json!({"jsonrpc": "2.0", "id": 8, "result": null}),
    );

    // Errors: v0.3 codes, free-form data.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(9, "tasks/get", json!({"id": "nope"})),
    )
    .await;
    check.eq(
        "tasks/get unknown task",
        &json!([
            r.json()["error"]["code"],
            r.json()["error"]["data"]["reason"]
        ]),
        &json!([-32001, "TASK_NOT_FOUND"]),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(10, "tasks/cancel", json!({"id": "<task>"})),
    )
    .await;
    check.eq(
        "tasks/cancel completed task",
        &r.json()["error"]["code"],
        &json!(-32002),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[("a2a-version", "1.0")],
        rpc(11, "tasks/get", json!({"id": "<task>"})),
    )
    .await;
    check.eq(
        "v0.3 method with A2A-Version 1.0",
        &json!([
            r.json()["error"]["code"],
            r.json()["error"]["data"]["reason"]
        ]),
        &json!([-32600, "VERSION_NOT_SUPPORTED"]),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            12,
            "message/send",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
        ),
    )
    .await;
    check.eq(
        "1.0 role on a v0.3 method",
        &r.json()["error"]["code"],
        &json!(-32602),
    );
    check.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_v03_routes_and_errors() {
    let f = server(Variant::default()).await;
    let origin = origin(&f);
    let http = reqwest::Client::new();
    let mut names = Names::default();
    let mut check = Check::new();

    // v0.3 HTTP+JSON bodies are ProtoJSON of the v0.3 schema: `content`, ROLE_/TASK_STATE_ enums.
    let body = json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "hi"}]},
                      "configuration": {"blocking": true}});
    let r = post(&http, &origin, &names, "/v1/message:send", &[], body).await;
    let raw = r.json();
    names.learn_at(&raw, "/task/id", "<task>");
    names.learn_at(&raw, "/task/contextId", "<ctx>");
    let stored = json!({"messageId": "m-1", "role": "ROLE_USER", "taskId": "<task>", "contextId": "<ctx>",
                        "content": [{"text": "hi"}]});
    check.eq(
        "POST /v1/message:send",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {"task": {
            "id": "<task>", "contextId": "<ctx>",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
            "artifacts": [{"artifactId": "echo", "parts": [{"text": "hi"}]}],
            "history": [stored],
        }}}),
    );
    let r = read(
        send(
            &http,
            &origin,
            &names,
            Call {
                method: "GET",
                path: "/v1/tasks/<task>?historyLength=1",
                headers: &[],
                body: None,
            },
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/tasks/{id}",
        &r.summary(&names)["body"]["id"],
        &json!("<task>"),
    );

    let r = post(
        &http,
        &origin,
        &names,
        "/v1/tasks/<task>/pushNotificationConfigs",
        &[],
        json!({"parent": "tasks/<task>", "configId": "c-1",
               "config": {"pushNotificationConfig": {"url": "https://client.example.com/h"}}}),
    )
    .await;
    check.eq(
        "POST /v1/tasks/{id}/pushNotificationConfigs",
        &r.summary(&names)["body"],
        &json!({"name": "tasks/<task>/pushNotificationConfigs/c-1",
                "pushNotificationConfig": {"id": "c-1", "url": "https://client.example.com/h"}}),
    );
    let r = read(
        send(
            &http,
            &origin,
            &names,
            Call {
                method: "GET",
                path: "/v1/tasks/<task>/pushNotificationConfigs",
                headers: &[],
                body: None,
            },
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/tasks/{id}/pushNotificationConfigs",
        &r.summary(&names)["body"]["configs"][0]["name"],
        &json!("tasks/<task>/pushNotificationConfigs/c-1"),
    );

    // Streams: `data:` is the v0.3 StreamResponse.
    let r = post(&http, &origin, &names, "/v1/message:stream", &[],
        json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "content": [{"text": "stream 1 1"}]}})).await;
    let keys: Vec<String> = parse_sse(&r.text)
        .iter()
        .filter_map(|f| f.data.first())
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| v.as_object().and_then(|o| o.keys().next().cloned()))
        .collect();
    check.eq(
        "POST /v1/message:stream",
        &json!(keys),
        &json!(["task", "statusUpdate", "artifactUpdate", "statusUpdate"]),
    );

    // Errors: {code, message, data} with the HTTP status.
    let r = read(
        send(
            &http,
            &origin,
            &names,
            Call {
                method: "GET",
                path: "/v1/tasks/nope",
                headers: &[],
                body: None,
            },
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/tasks/{unknown}",
        &json!([r.status, r.json()["code"], r.json()["data"]["reason"]]),
        &json!([404, -32001, "TASK_NOT_FOUND"]),
    );
    // The same path saying A2A-Version 1.0 is the 1.0 route under a tenant named "v1".
    let r = read(
        send(
            &http,
            &origin,
            &names,
            Call {
                method: "GET",
                path: "/v1/tasks/<task>",
                headers: &[("a2a-version", "1.0")],
                body: None,
            },
        )
        .await,
    )
    .await;
    check.that(
        "1.0 reading of /v1/...",
        r.json().get("error").is_some() || r.json().get("id").is_some(),
        r.text.clone(),
    );
    check.finish();
}

/// With `--protocols 1.0` the v0.3 methods do not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v03_off_is_method_not_found() {
    let engine =
        trident_engine::Engine::builder(std::sync::Arc::new(trident_testkit::agents::Demo)).build();
    let card = engine.card().clone();
    let options = trident_server::ServerOptions {
        protocols: trident_server::Protocols::V1_ONLY,
        ..Default::default()
    };
    let app = trident_server::app(std::sync::Arc::new(engine), &card, &options).expect("app");
    let app = super::serve_app(app).await;
    let http = reqwest::Client::new();
    let names = Names::default();
    let r = post(
        &http,
        &app.origin,
        &names,
        "/",
        &[],
        rpc(1, "tasks/get", json!({"id": "t"})),
    )
    .await;
    assert_eq!(r.json()["error"]["code"], json!(-32601), "{}", r.text);
    let card = read(
        send(
            &http,
            &app.origin,
            &names,
            Call {
                method: "GET",
                path: "/.well-known/agent-card.json",
                headers: &[],
                body: None,
            },
        )
        .await,
    )
    .await;
    assert!(
        card.json().get("protocolVersion").is_none(),
        "{}",
        card.text
    );
}
