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

/// `tasks/resubscribe` on a working task (its SSE frames whole, ended by `tasks/cancel`), the
/// frames of `message/stream` whole, and `agent/getAuthenticatedExtendedCard`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_v03_resubscribe_frames_and_extended_card() {
    let f = server(Variant::default()).await;
    let origin = origin(&f);
    let http = reqwest::Client::new();
    let mut names = Names::default();
    let mut check = Check::new();

    // message/stream, every frame: `id:` is the event's sequence number, `data:` a JSON-RPC
    // response echoing the request's id with one bare event.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            1,
            "message/stream",
            json!({"message": user("m-1", "stream 2")}),
        ),
    )
    .await;
    let frames = parse_sse(&r.text);
    if let Some(first) = frames
        .first()
        .and_then(|f| f.data.first())
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
    {
        names.learn_at(&first, "/result/id", "<stream>");
        names.learn_at(&first, "/result/contextId", "<stream-ctx>");
    }
    let frames: Vec<Value> = frames.iter().map(|f| f.to_json(&names)).collect();
    let frame = |id: u64, result: Value| json!({"id": id.to_string(), "data": {"jsonrpc": "2.0", "id": 1, "result": result}});
    let status = |state: &str, last: bool| {
        json!({"kind": "status-update", "taskId": "<stream>", "contextId": "<stream-ctx>",
               "status": {"state": state, "timestamp": "<ts>"}, "final": last})
    };
    let chunk = |i: u32, more: Value| {
        let mut v = json!({"kind": "artifact-update", "taskId": "<stream>",
                           "contextId": "<stream-ctx>",
                           "artifact": {"artifactId": "stream", "parts": [
                               {"kind": "text", "text": format!("chunk {i} of stream 2")}]}});
        if let (Some(o), Some(extra)) = (v.as_object_mut(), more.as_object()) {
            o.extend(extra.clone());
        }
        v
    };
    check.eq(
        "message/stream frames",
        &json!(frames),
        &json!([
            frame(
                1,
                json!({"kind": "task", "id": "<stream>", "contextId": "<stream-ctx>",
                            "status": {"state": "submitted", "timestamp": "<ts>"},
                            "history": [{"kind": "message", "messageId": "m-1", "role": "user",
                                         "taskId": "<stream>", "contextId": "<stream-ctx>",
                                         "parts": [{"kind": "text", "text": "stream 2"}]}]})
            ),
            frame(2, status("working", false)),
            frame(3, chunk(0, json!({}))),
            frame(4, chunk(1, json!({"append": true, "lastChunk": true}))),
            frame(5, status("completed", true)),
        ]),
    );

    // tasks/resubscribe to a working task: the task, then what happens to it (here its
    // cancellation, the final event).
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(
            2,
            "message/send",
            json!({"message": user("m-2", "slow"), "configuration": {"blocking": false}}),
        ),
    )
    .await;
    let raw = r.json();
    names.learn_at(&raw, "/result/id", "<slow>");
    names.learn_at(&raw, "/result/contextId", "<slow-ctx>");
    let working = json!({"kind": "task", "id": "<slow>", "contextId": "<slow-ctx>",
                         "status": {"state": "working", "timestamp": "<ts>"},
                         "history": [{"kind": "message", "messageId": "m-2", "role": "user",
                                      "taskId": "<slow>", "contextId": "<slow-ctx>",
                                      "parts": [{"kind": "text", "text": "slow"}]}]});
    check.eq(
        "message/send (not blocking)",
        &r.summary(&names)["body"],
        &json!({"jsonrpc": "2.0", "id": 2, "result": working}),
    );
    let subscription = send(
        &http,
        &origin,
        &names,
        Call {
            method: "POST",
            path: "/",
            headers: &[("content-type", "application/json")],
            body: Some(rpc(3, "tasks/resubscribe", json!({"id": "<slow>"})).to_string()),
        },
    )
    .await;
    let mut canceled = working.clone();
    canceled["status"]["state"] = json!("canceled");
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(4, "tasks/cancel", json!({"id": "<slow>"})),
    )
    .await;
    check.eq(
        "tasks/cancel",
        &r.summary(&names)["body"],
        &json!({"jsonrpc": "2.0", "id": 4, "result": canceled}),
    );
    let r = read(subscription).await;
    check.eq(
        "tasks/resubscribe content type",
        &json!(r.header("content-type")),
        &json!("text/event-stream"),
    );
    let frames: Vec<Value> = parse_sse(&r.text)
        .iter()
        .map(|f| f.to_json(&names))
        .collect();
    check.eq(
        "tasks/resubscribe frames",
        &json!(frames),
        &json!([
            {"id": "2", "data": {"jsonrpc": "2.0", "id": 3, "result": working}},
            {"id": "3", "data": {"jsonrpc": "2.0", "id": 3, "result": {
                "kind": "status-update", "taskId": "<slow>", "contextId": "<slow-ctx>",
                "status": {"state": "canceled", "timestamp": "<ts>"}, "final": true}}},
        ]),
    );

    // tasks/resubscribe to an unknown task: the error as the JSON-RPC answer.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(5, "tasks/resubscribe", json!({"id": "nope"})),
    )
    .await;
    check.eq(
        "tasks/resubscribe unknown task",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
            "jsonrpc": "2.0", "id": 5, "error": {"code": -32001, "message": "task nope not found",
                                                 "data": {"reason": "TASK_NOT_FOUND",
                                                          "taskId": "nope"}}}}),
    );

    // agent/getAuthenticatedExtendedCard: not declared here.
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(6, "agent/getAuthenticatedExtendedCard", json!({})),
    )
    .await;
    check.eq(
        "agent/getAuthenticatedExtendedCard (no extended card)",
        &r.summary(&names)["body"],
        // v0.3 clients call it only when the card says `supportsAuthenticatedExtendedCard`: an
        // agent without one answers as 1.0 does.
        &json!({"jsonrpc": "2.0", "id": 6, "error": {
            "code": -32004, "message": "this agent has no extended agent card",
            "data": {"reason": "UNSUPPORTED_OPERATION"}}}),
    );

    // With an extended card: anonymous callers are refused, authenticated ones get the v0.3
    // card (`url`, `preferredTransport`, `protocolVersion`, no 1.0 members).
    let f = server(Variant {
        extended_card: Some(Some(super::jsonrpc::extended_card())),
        ..Default::default()
    })
    .await;
    let origin = super::origin(&f);
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[],
        rpc(7, "agent/getAuthenticatedExtendedCard", json!({})),
    )
    .await;
    check.eq(
        "agent/getAuthenticatedExtendedCard (anonymous)",
        &r.summary(&names)["body"],
        &json!({"jsonrpc": "2.0", "id": 7, "error": {
            "code": -31401, "message": "the extended agent card requires authentication",
            "data": {"reason": "UNAUTHENTICATED"}}}),
    );
    let r = post(
        &http,
        &origin,
        &names,
        "/",
        &[("authorization", "Bearer token-alice")],
        rpc(8, "agent/getAuthenticatedExtendedCard", json!({})),
    )
    .await;
    check.eq(
        "agent/getAuthenticatedExtendedCard",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
        "jsonrpc": "2.0", "id": 8, "result": {
            "protocolVersion": "0.3.0",
            "name": "Demo (extended)",
            "description": "What authenticated callers see",
            "url": "https://agent.example.com/",
            "preferredTransport": "JSONRPC",
            "additionalInterfaces": [{"url": "https://agent.example.com/", "transport": "JSONRPC"}],
            "version": "2.0.0",
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "secret", "name": "Secret skill",
                        "description": "Only for members", "tags": ["members"]}],
            "supportsAuthenticatedExtendedCard": true,
        }}}),
    );
    check.finish();
}

/// The `/v1/...` routes the first REST test leaves out, whole: cancel, subscribe (GET and
/// POST), one push config read and deleted, the extended card, and their errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_v03_remaining_routes() {
    let f = server(Variant {
        extended_card: Some(Some(super::jsonrpc::extended_card())),
        ..Default::default()
    })
    .await;
    let origin = origin(&f);
    let http = reqwest::Client::new();
    let mut names = Names::default();
    let mut check = Check::new();
    let get = |path: &'static str, headers: &'static [(&'static str, &'static str)]| Call {
        method: "GET",
        path,
        headers,
        body: None,
    };

    // A working task, subscribed to over GET and POST, then canceled.
    let body = json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "slow"}]},
                      "configuration": {"blocking": false}});
    let r = post(&http, &origin, &names, "/v1/message:send", &[], body).await;
    let raw = r.json();
    names.learn_at(&raw, "/task/id", "<slow>");
    names.learn_at(&raw, "/task/contextId", "<ctx>");
    let working = json!({"id": "<slow>", "contextId": "<ctx>",
                         "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"},
                         "history": [{"messageId": "m-1", "role": "ROLE_USER", "taskId": "<slow>",
                                      "contextId": "<ctx>", "content": [{"text": "slow"}]}]});
    check.eq(
        "POST /v1/message:send (not blocking)",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {"task": working}}),
    );
    let by_get = send(
        &http,
        &origin,
        &names,
        get("/v1/tasks/<slow>:subscribe", &[]),
    )
    .await;
    let by_post = send(
        &http,
        &origin,
        &names,
        Call {
            method: "POST",
            path: "/v1/tasks/<slow>:subscribe",
            headers: &[],
            body: None,
        },
    )
    .await;
    let mut canceled = working.clone();
    canceled["status"]["state"] = json!("TASK_STATE_CANCELLED");
    let r = post(
        &http,
        &origin,
        &names,
        "/v1/tasks/<slow>:cancel",
        &[],
        json!({}),
    )
    .await;
    check.eq(
        "POST /v1/tasks/{id}:cancel",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": canceled}),
    );
    let frames = json!([
        {"id": "2", "data": {"task": working}},
        {"id": "3", "data": {"statusUpdate": {"taskId": "<slow>", "contextId": "<ctx>",
                                              "status": {"state": "TASK_STATE_CANCELLED",
                                                         "timestamp": "<ts>"},
                                              "final": true}}},
    ]);
    for (case, response) in [
        ("GET /v1/tasks/{id}:subscribe", by_get),
        ("POST /v1/tasks/{id}:subscribe", by_post),
    ] {
        let r = read(response).await;
        let got: Vec<Value> = parse_sse(&r.text)
            .iter()
            .map(|f| f.to_json(&names))
            .collect();
        check.eq(
            case,
            &json!({"contentType": r.header("content-type"), "frames": got}),
            &json!({"contentType": "text/event-stream", "frames": frames}),
        );
    }

    // One push config: created, read (without its secrets), deleted.
    let r = post(
        &http,
        &origin,
        &names,
        "/v1/tasks/<slow>/pushNotificationConfigs",
        &[],
        json!({"parent": "tasks/<slow>", "configId": "c-1",
               "config": {"pushNotificationConfig": {"url": "https://client.example.com/h",
                                                     "token": "secret-token"}}}),
    )
    .await;
    check.eq(
        "POST /v1/tasks/{id}/pushNotificationConfigs",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
            "name": "tasks/<slow>/pushNotificationConfigs/c-1",
            "pushNotificationConfig": {"id": "c-1", "url": "https://client.example.com/h"}}}),
    );
    let r = read(
        send(
            &http,
            &origin,
            &names,
            get("/v1/tasks/<slow>/pushNotificationConfigs/c-1", &[]),
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/tasks/{id}/pushNotificationConfigs/{cid}",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
            "name": "tasks/<slow>/pushNotificationConfigs/c-1",
            "pushNotificationConfig": {"id": "c-1", "url": "https://client.example.com/h"}}}),
    );
    let delete = Call {
        method: "DELETE",
        path: "/v1/tasks/<slow>/pushNotificationConfigs/c-1",
        headers: &[],
        body: None,
    };
    let r = read(send(&http, &origin, &names, delete).await).await;
    check.eq(
        "DELETE /v1/tasks/{id}/pushNotificationConfigs/{cid}",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {}}),
    );
    let r = read(
        send(
            &http,
            &origin,
            &names,
            get("/v1/tasks/<slow>/pushNotificationConfigs/c-1", &[]),
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/tasks/{id}/pushNotificationConfigs/{deleted}",
        &r.summary(&names),
        &json!({"status": 404, "contentType": "application/json", "body": {
            "code": -32001, "message": "task <slow> has no push notification config c-1",
            "data": {"reason": "TASK_NOT_FOUND", "taskId": "<slow>", "configId": "c-1"}}}),
    );
    let r = read(
        send(
            &http,
            &origin,
            &names,
            get("/v1/tasks/<slow>/pushNotificationConfigs", &[]),
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/tasks/{id}/pushNotificationConfigs (none)",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {}}),
    );

    // Errors of the task routes.
    let r = post(
        &http,
        &origin,
        &names,
        "/v1/tasks/<slow>:cancel",
        &[],
        json!({}),
    )
    .await;
    check.eq(
        "POST /v1/tasks/{canceled}:cancel",
        &r.summary(&names),
        // Canceling a canceled task answers it again (the engine's documented choice).
        &json!({"status": 200, "contentType": "application/json", "body": canceled}),
    );
    let r = read(send(&http, &origin, &names, get("/v1/tasks/nope:subscribe", &[])).await).await;
    check.eq(
        "GET /v1/tasks/{unknown}:subscribe",
        &r.summary(&names),
        &json!({"status": 404, "contentType": "application/json", "body": {
            "code": -32001, "message": "task nope not found",
            "data": {"reason": "TASK_NOT_FOUND", "taskId": "nope"}}}),
    );

    // GET /v1/card: the extended card, v0.3's form, for authenticated callers only.
    let r = read(send(&http, &origin, &names, get("/v1/card", &[])).await).await;
    check.eq(
        "GET /v1/card (anonymous)",
        &r.summary(&names),
        &json!({"status": 401, "contentType": "application/json", "body": {
            "code": -31401, "message": "the extended agent card requires authentication",
            "data": {"reason": "UNAUTHENTICATED"}}}),
    );
    let r = read(
        send(
            &http,
            &origin,
            &names,
            get("/v1/card", &[("authorization", "Bearer token-alice")]),
        )
        .await,
    )
    .await;
    check.eq(
        "GET /v1/card",
        &r.summary(&names),
        &json!({"status": 200, "contentType": "application/json", "body": {
            "protocolVersion": "0.3.0",
            "name": "Demo (extended)",
            "description": "What authenticated callers see",
            "url": "https://agent.example.com/",
            "preferredTransport": "JSONRPC",
            "additionalInterfaces": [{"url": "https://agent.example.com/", "transport": "JSONRPC"}],
            "version": "2.0.0",
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "secret", "name": "Secret skill",
                        "description": "Only for members", "tags": ["members"]}],
            "supportsAuthenticatedExtendedCard": true,
        }}),
    );
    check.finish();
}
