//! JSON-RPC 2.0 (spec digest §3): envelopes of the eleven methods, SSE framing, error objects.

use serde_json::{Value, json};

use super::{
    Call, Check, Names, Reply, SseReader, bad_request, error_info, origin, read, send, server,
};
use crate::harness::{REQUIRED_EXT, Variant};

/// A JSON-RPC endpoint spoken to with raw HTTP POSTs.
struct Rpc {
    http: reqwest::Client,
    origin: String,
    names: Names,
    check: Check,
}

impl Rpc {
    fn new(origin: String) -> Self {
        Self {
            http: reqwest::Client::new(),
            origin,
            names: Names::default(),
            check: Check::new(),
        }
    }

    /// POSTs `body` (names filled in) to the endpoint `/`.
    async fn post(&self, headers: &[(&str, &str)], body: String) -> reqwest::Response {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        send(
            &self.http,
            &self.origin,
            &self.names,
            Call {
                method: "POST",
                path: "/",
                headers: &all,
                body: Some(body),
            },
        )
        .await
    }

    async fn call(&self, headers: &[(&str, &str)], request: &Value) -> Reply {
        read(self.post(headers, request.to_string()).await).await
    }

    /// Sends `request`, learns `(pointer, name)` values from the raw answer, then checks the
    /// whole answer: HTTP 200, `application/json`, body `expected`.
    async fn exchange(
        &mut self,
        case: &str,
        headers: &[(&str, &str)],
        request: Value,
        learn: &[(&str, &str)],
        expected: Value,
    ) -> Value {
        let reply = self.call(headers, &request).await;
        let raw = reply.json();
        for (ptr, name) in learn {
            if raw.pointer(ptr).and_then(Value::as_str).is_some() {
                self.names.learn_at(&raw, ptr, name);
            }
        }
        self.check.eq(
            case,
            &reply.summary(&self.names),
            &json!({"status": 200, "contentType": "application/json", "body": expected}),
        );
        raw
    }

    /// Sends raw `body` text and checks the whole answer against an error envelope.
    async fn raw_error(
        &mut self,
        case: &str,
        headers: &[(&str, &str)],
        body: &str,
        expected: Value,
    ) {
        let reply = read(self.post(headers, body.to_owned()).await).await;
        self.check.eq(
            case,
            &reply.summary(&self.names),
            &json!({"status": 200, "contentType": "application/json", "body": expected}),
        );
    }

    /// Opens a stream and checks the SSE response headers.
    async fn stream(&mut self, case: &str, headers: &[(&str, &str)], request: Value) -> SseReader {
        let sse = SseReader::new(self.post(headers, request.to_string()).await);
        self.check.eq(
            format!("{case}: response head"),
            &json!({"status": sse.status, "contentType": sse.header("content-type"), "cacheControl": sse.header("cache-control")}),
            &json!({"status": 200, "contentType": "text/event-stream", "cacheControl": "no-cache"}),
        );
        sse
    }

    fn frames(&self, frames: &[super::Frame]) -> Value {
        Value::Array(frames.iter().map(|f| f.to_json(&self.names)).collect())
    }
}

/// (case, headers, request, expected answer)
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Value, Value);
/// (case, headers, raw request body, expected answer)
type RawCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, String, Value);

fn envelope(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
}

fn user(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// The user message `id` with `text` as the engine stores it in a task.
fn stored_user(id: &str, text: &str, task: &str, ctx: &str) -> Value {
    json!({"messageId": id, "contextId": ctx, "taskId": task, "role": "ROLE_USER", "parts": [{"text": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_eleven_methods_and_their_envelopes() {
    let f = server(Variant::default()).await;
    let mut rpc = Rpc::new(origin(&f));

    // SendMessage, numeric id: a blocking send answered with the completed task.
    rpc.exchange(
        "SendMessage (echo)",
        &[("a2a-version", "1.0")],
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
               "params": {"message": user("m-1", "hello")}}),
        &[
            ("/result/task/id", "<task>"),
            ("/result/task/contextId", "<ctx>"),
        ],
        envelope(
            json!(1),
            json!({"task": {
                "id": "<task>",
                "contextId": "<ctx>",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
                "artifacts": [{"artifactId": "echo", "parts": [{"text": "hello"}]}],
                "history": [stored_user("m-1", "hello", "<task>", "<ctx>")],
            }}),
        ),
    )
    .await;

    // SendMessage, string id: a direct reply, no task; the client's contextId is kept.
    rpc.exchange(
        "SendMessage (direct reply)",
        &[],
        json!({"jsonrpc": "2.0", "id": "req-2", "method": "SendMessage",
               "params": {"message": {"messageId": "m-2", "contextId": "ctx-fixed",
                                       "role": "ROLE_USER", "parts": [{"text": "reply hi"}]}}}),
        &[],
        envelope(
            json!("req-2"),
            json!({"message": {
                "messageId": "<uuid>",
                "contextId": "ctx-fixed",
                "role": "ROLE_AGENT",
                "parts": [{"text": "reply hi"}],
            }}),
        ),
    )
    .await;

    // A second task in another context, so ListTasks has two pages of one.
    rpc.exchange(
        "SendMessage (second echo, returnImmediately false, historyLength 0)",
        &[],
        json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage",
               "params": {"message": user("m-3", "again"),
                          "configuration": {"returnImmediately": false, "historyLength": 0}}}),
        &[
            ("/result/task/id", "<task2>"),
            ("/result/task/contextId", "<ctx2>"),
        ],
        envelope(
            json!(3),
            json!({"task": {
                "id": "<task2>",
                "contextId": "<ctx2>",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
                "artifacts": [{"artifactId": "echo", "parts": [{"text": "again"}]}],
            }}),
        ),
    )
    .await;

    rpc.exchange(
        "GetTask (historyLength 0)",
        &[],
        json!({"jsonrpc": "2.0", "id": "get", "method": "GetTask",
               "params": {"id": "<task>", "historyLength": 0}}),
        &[],
        envelope(
            json!("get"),
            json!({
                "id": "<task>",
                "contextId": "<ctx>",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
                "artifacts": [{"artifactId": "echo", "parts": [{"text": "hello"}]}],
            }),
        ),
    )
    .await;

    // ListTasks: most recent first, a cursor for the next page, artifacts left out by default.
    rpc.exchange(
        "ListTasks (page 1)",
        &[],
        json!({"jsonrpc": "2.0", "id": 5, "method": "ListTasks",
               "params": {"pageSize": 1, "status": "TASK_STATE_COMPLETED"}}),
        &[("/result/nextPageToken", "<page-2>")],
        envelope(
            json!(5),
            json!({
                "tasks": [{
                    "id": "<task2>",
                    "contextId": "<ctx2>",
                    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
                    "history": [stored_user("m-3", "again", "<task2>", "<ctx2>")],
                }],
                "nextPageToken": "<page-2>",
                "pageSize": 1,
                "totalSize": 2,
            }),
        ),
    )
    .await;
    rpc.exchange(
        "ListTasks (page 2, includeArtifacts, historyLength 0)",
        &[],
        json!({"jsonrpc": "2.0", "id": 6, "method": "ListTasks",
               "params": {"pageSize": 1, "status": "TASK_STATE_COMPLETED", "pageToken": "<page-2>",
                          "includeArtifacts": true, "historyLength": 0}}),
        &[],
        envelope(
            json!(6),
            json!({
                "tasks": [{
                    "id": "<task>",
                    "contextId": "<ctx>",
                    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
                    "artifacts": [{"artifactId": "echo", "parts": [{"text": "hello"}]}],
                }],
                "nextPageToken": "",
                "pageSize": 1,
                "totalSize": 2,
            }),
        ),
    )
    .await;

    // SendStreamingMessage: every event a full response with the request's id; `id:` = seq.
    let mut sse = rpc
        .stream(
            "SendStreamingMessage",
            &[],
            json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage",
                   "params": {"message": user("m-7", "stream 2")}}),
        )
        .await;
    let frames = sse.rest().await;
    if let Some(id) = frames
        .first()
        .and_then(|f| serde_json::from_str::<Value>(f.data.first()?).ok())
    {
        if let Some(t) = id.pointer("/result/task/id").and_then(Value::as_str) {
            rpc.names.learn(t, "<stream>");
        }
        if let Some(c) = id.pointer("/result/task/contextId").and_then(Value::as_str) {
            rpc.names.learn(c, "<stream-ctx>");
        }
    }
    let got = rpc.frames(&frames);
    let status = |state: &str| {
        json!({"statusUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "status": {"state": state, "timestamp": "<ts>"}}})
    };
    let chunk = |i: usize, append: bool, last: bool| {
        let mut e = json!({"taskId": "<stream>", "contextId": "<stream-ctx>",
                           "artifact": {"artifactId": "stream",
                                        "parts": [{"text": format!("chunk {i} of stream 2")}]}});
        if append {
            e["append"] = json!(true);
        }
        if last {
            e["lastChunk"] = json!(true);
        }
        json!({"artifactUpdate": e})
    };
    rpc.check.eq(
        "SendStreamingMessage: frames",
        &got,
        &json!([
            {"id": "1", "data": envelope(json!(7), json!({"task": {
                "id": "<stream>", "contextId": "<stream-ctx>",
                "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": "<ts>"},
                "history": [stored_user("m-7", "stream 2", "<stream>", "<stream-ctx>")],
            }}))},
            {"id": "2", "data": envelope(json!(7), status("TASK_STATE_WORKING"))},
            {"id": "3", "data": envelope(json!(7), chunk(0, false, false))},
            {"id": "4", "data": envelope(json!(7), chunk(1, true, true))},
            {"id": "5", "data": envelope(json!(7), status("TASK_STATE_COMPLETED"))},
        ]),
    );

    // A direct reply on a stream: one event, no sequence number.
    let mut sse = rpc
        .stream(
            "SendStreamingMessage (direct reply)",
            &[],
            json!({"jsonrpc": "2.0", "id": "s-reply", "method": "SendStreamingMessage",
                   "params": {"message": {"messageId": "m-8", "contextId": "ctx-fixed",
                                          "role": "ROLE_USER", "parts": [{"text": "reply yo"}]}}}),
        )
        .await;
    let got = rpc.frames(&sse.rest().await);
    rpc.check.eq(
        "SendStreamingMessage (direct reply): frames",
        &got,
        &json!([{"data": envelope(json!("s-reply"), json!({"message": {
            "messageId": "<uuid>", "contextId": "ctx-fixed", "role": "ROLE_AGENT",
            "parts": [{"text": "reply yo"}],
        }}))}]),
    );

    // SubscribeToTask on a working task, then CancelTask ends it.
    rpc.exchange(
        "SendMessage (slow, returnImmediately)",
        &[],
        json!({"jsonrpc": "2.0", "id": 9, "method": "SendMessage",
               "params": {"message": user("m-9", "slow"), "configuration": {"returnImmediately": true}}}),
        &[("/result/task/id", "<slow>"), ("/result/task/contextId", "<slow-ctx>")],
        envelope(json!(9), json!({"task": {
            "id": "<slow>", "contextId": "<slow-ctx>",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"},
            "history": [stored_user("m-9", "slow", "<slow>", "<slow-ctx>")],
        }})),
    )
    .await;
    let mut sse = rpc
        .stream(
            "SubscribeToTask",
            &[],
            json!({"jsonrpc": "2.0", "id": "sub", "method": "SubscribeToTask",
                   "params": {"id": "<slow>"}}),
        )
        .await;
    let first = sse.next().await.into_iter().collect::<Vec<_>>();
    rpc.exchange(
        "CancelTask",
        &[],
        json!({"jsonrpc": "2.0", "id": 10, "method": "CancelTask", "params": {"id": "<slow>"}}),
        &[],
        envelope(
            json!(10),
            json!({
                "id": "<slow>", "contextId": "<slow-ctx>",
                "status": {"state": "TASK_STATE_CANCELED", "timestamp": "<ts>"},
                "history": [stored_user("m-9", "slow", "<slow>", "<slow-ctx>")],
            }),
        ),
    )
    .await;
    let mut frames = first;
    frames.extend(sse.rest().await);
    let got = rpc.frames(&frames);
    rpc.check.eq(
        "SubscribeToTask: frames",
        &got,
        &json!([
            {"id": "2", "data": envelope(json!("sub"), json!({"task": {
                "id": "<slow>", "contextId": "<slow-ctx>",
                "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"},
                "history": [stored_user("m-9", "slow", "<slow>", "<slow-ctx>")],
            }}))},
            {"id": "3", "data": envelope(json!("sub"), json!({"statusUpdate": {
                "taskId": "<slow>", "contextId": "<slow-ctx>",
                "status": {"state": "TASK_STATE_CANCELED", "timestamp": "<ts>"},
            }}))},
        ]),
    );

    // Push notification configurations.
    // Answered without its secrets: `token` and `credentials` are write-only (Create too).
    let config = json!({
        "id": "cfg-1", "taskId": "<task>", "url": "https://client.example.com/hook",
        "authentication": {"scheme": "Bearer"},
    });
    rpc.exchange(
        "CreateTaskPushNotificationConfig",
        &[],
        json!({"jsonrpc": "2.0", "id": 11, "method": "CreateTaskPushNotificationConfig",
               "params": {"taskId": "<task>", "id": "cfg-1", "url": "https://client.example.com/hook",
                          "token": "opaque-123",
                          "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}}}),
        &[],
        envelope(json!(11), config.clone()),
    )
    .await;
    rpc.exchange(
        "CreateTaskPushNotificationConfig (url only)",
        &[],
        json!({"jsonrpc": "2.0", "id": 12, "method": "CreateTaskPushNotificationConfig",
               "params": {"taskId": "<task>", "id": "cfg-2", "url": "https://client.example.com/other"}}),
        &[],
        envelope(json!(12), json!({"id": "cfg-2", "taskId": "<task>",
                                   "url": "https://client.example.com/other"})),
    )
    .await;
    rpc.exchange(
        "CreateTaskPushNotificationConfig (server-generated id)",
        &[],
        json!({"jsonrpc": "2.0", "id": "gen", "method": "CreateTaskPushNotificationConfig",
               "params": {"taskId": "<task2>", "url": "https://client.example.com/other"}}),
        &[("/result/id", "<cfg-gen>")],
        envelope(
            json!("gen"),
            json!({"id": "<cfg-gen>", "taskId": "<task2>",
                                      "url": "https://client.example.com/other"}),
        ),
    )
    .await;
    rpc.check.that(
        "server-generated config id",
        uuid::Uuid::parse_str(rpc.names.get("<cfg-gen>")).is_ok(),
        "is a UUID",
    );
    // Read back without its secrets: `token` and `credentials` are write-only.
    let read_back = json!({
        "id": "cfg-1", "taskId": "<task>", "url": "https://client.example.com/hook",
        "authentication": {"scheme": "Bearer"},
    });
    rpc.exchange(
        "GetTaskPushNotificationConfig",
        &[],
        json!({"jsonrpc": "2.0", "id": 13, "method": "GetTaskPushNotificationConfig",
               "params": {"taskId": "<task>", "id": "cfg-1"}}),
        &[],
        envelope(json!(13), read_back.clone()),
    )
    .await;
    rpc.exchange(
        "ListTaskPushNotificationConfigs",
        &[],
        json!({"jsonrpc": "2.0", "id": 14, "method": "ListTaskPushNotificationConfigs",
               "params": {"taskId": "<task>"}}),
        &[],
        envelope(
            json!(14),
            json!({"configs": [
                read_back.clone(),
                {"id": "cfg-2", "taskId": "<task>", "url": "https://client.example.com/other"},
            ]}),
        ),
    )
    .await;
    rpc.exchange(
        "DeleteTaskPushNotificationConfig",
        &[],
        json!({"jsonrpc": "2.0", "id": 15, "method": "DeleteTaskPushNotificationConfig",
               "params": {"taskId": "<task>", "id": "cfg-1"}}),
        &[],
        envelope(json!(15), json!({})),
    )
    .await;
    rpc.exchange(
        "DeleteTaskPushNotificationConfig (again: idempotent)",
        &[],
        json!({"jsonrpc": "2.0", "id": 16, "method": "DeleteTaskPushNotificationConfig",
               "params": {"taskId": "<task>", "id": "cfg-1"}}),
        &[],
        envelope(json!(16), json!({})),
    )
    .await;

    // GetExtendedAgentCard with the capability off (the success golden is in the variants).
    rpc.exchange(
        "GetExtendedAgentCard (capability off), no params",
        &[],
        json!({"jsonrpc": "2.0", "id": 17, "method": "GetExtendedAgentCard"}),
        &[],
        error(
            json!(17),
            -32004,
            "this agent has no extended agent card",
            json!([error_info("UNSUPPORTED_OPERATION", json!({}))]),
        ),
    )
    .await;

    rpc.check.finish();
}

/// The card a variant serves to authenticated callers.
pub fn extended_card() -> trident_proto::AgentCard {
    use trident_proto as pb;
    pb::AgentCard {
        name: "Demo (extended)".into(),
        description: "What authenticated callers see".into(),
        version: "2.0.0".into(),
        supported_interfaces: vec![pb::AgentInterface {
            url: "https://agent.example.com/".into(),
            protocol_binding: "JSONRPC".into(),
            tenant: String::new(),
            protocol_version: "1.0".into(),
        }],
        capabilities: Some(pb::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extended_agent_card: Some(true),
            extensions: Vec::new(),
        }),
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![pb::AgentSkill {
            id: "secret".into(),
            name: "Secret skill".into(),
            description: "Only for members".into(),
            tags: vec!["members".into()],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The JSON of [`extended_card`].
pub fn extended_card_json() -> Value {
    json!({
        "name": "Demo (extended)",
        "description": "What authenticated callers see",
        "supportedInterfaces": [{"url": "https://agent.example.com/", "protocolBinding": "JSONRPC",
                                 "protocolVersion": "1.0"}],
        "version": "2.0.0",
        "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "secret", "name": "Secret skill", "description": "Only for members",
                    "tags": ["members"]}],
    })
}

fn info(reason: &str, metadata: Value) -> Value {
    json!([error_info(reason, metadata)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_error_envelopes() {
    let f = server(Variant::default()).await;
    let mut rpc = Rpc::new(origin(&f));
    rpc.exchange(
        "setup: a completed task",
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
               "params": {"message": user("m-1", "hello"), "configuration": {"historyLength": 0}}}),
        &[
            ("/result/task/id", "<task>"),
            ("/result/task/contextId", "<ctx>"),
        ],
        envelope(
            json!(1),
            json!({"task": {
                "id": "<task>", "contextId": "<ctx>",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
                "artifacts": [{"artifactId": "echo", "parts": [{"text": "hello"}]}],
            }}),
        ),
    )
    .await;

    // (case, headers, raw request body, expected response envelope); HTTP 200 for all.
    let cases: Vec<RawCase> = vec![
        (
            "parse error: id is null",
            vec![],
            r#"{"jsonrpc": "2.0", "id": 1, "method": "#.into(),
            error(Value::Null, -32700, "invalid JSON: EOF while parsing a value at line 1 column 37",
                  info("PARSE_ERROR", json!({}))),
        ),
        (
            "invalid request: no jsonrpc member, id kept",
            vec![],
            json!({"id": 7, "method": "GetTask", "params": {"id": "x"}}).to_string(),
            error(json!(7), -32600, "\"jsonrpc\" must be \"2.0\"", info("INVALID_REQUEST", json!({}))),
        ),
        (
            "invalid request: jsonrpc 1.0",
            vec![],
            json!({"jsonrpc": "1.0", "id": "v1", "method": "GetTask"}).to_string(),
            error(json!("v1"), -32600, "\"jsonrpc\" must be \"2.0\"", info("INVALID_REQUEST", json!({}))),
        ),
        (
            "invalid request: no method",
            vec![],
            json!({"jsonrpc": "2.0", "id": 8}).to_string(),
            error(json!(8), -32600, "\"method\" must be a string", info("INVALID_REQUEST", json!({}))),
        ),
        (
            "invalid request: batch array",
            vec![],
            json!([{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}]).to_string(),
            error(Value::Null, -32600, "batch requests are not supported", info("INVALID_REQUEST", json!({}))),
        ),
        (
            // Neither 1.0 nor v0.3 (whose names are served too, wire::v03) has `tasks/list`.
            "method not found: tasks/list",
            vec![],
            json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/list",
                   "params": {}}).to_string(),
            error(json!(9), -32601, "method \"tasks/list\" does not exist", info("METHOD_NOT_FOUND", json!({}))),
        ),
        (
            "invalid params: empty messageId",
            vec![],
            json!({"jsonrpc": "2.0", "id": "p", "method": "SendMessage",
                   "params": {"message": user("", "hi")}}).to_string(),
            error(json!("p"), -32602, "message.messageId: is required", json!([
                error_info("INVALID_PARAMS", json!({})),
                bad_request(&[("message.messageId", "is required")]),
            ])),
        ),
        (
            "invalid params: pageSize out of range",
            vec![],
            json!({"jsonrpc": "2.0", "id": 10, "method": "ListTasks", "params": {"pageSize": 150}}).to_string(),
            error(json!(10), -32602, "pageSize: must be between 1 and 100, got 150", json!([
                error_info("INVALID_PARAMS", json!({})),
                bad_request(&[("pageSize", "must be between 1 and 100, got 150")]),
            ])),
        ),
        (
            "invalid params: negative historyLength",
            vec![],
            json!({"jsonrpc": "2.0", "id": 11, "method": "GetTask",
                   "params": {"id": "<task>", "historyLength": -1}}).to_string(),
            error(json!(11), -32602, "historyLength: must not be negative, got -1", json!([
                error_info("INVALID_PARAMS", json!({})),
                bad_request(&[("historyLength", "must not be negative, got -1")]),
            ])),
        ),
        (
            "invalid params: params is an array",
            vec![],
            json!({"jsonrpc": "2.0", "id": "arr", "method": "GetTask", "params": ["nope"]}).to_string(),
            error(json!("arr"), -32602,
                  "invalid parameters: invalid type: sequence, expected struct lf.a2a.v1.GetTaskRequest at line 1 column 1",
                  info("INVALID_PARAMS", json!({}))),
        ),
        (
            "invalid params: a member of the wrong type",
            vec![],
            json!({"jsonrpc": "2.0", "id": "typ", "method": "SendMessage", "params": {"message": 5}}).to_string(),
            error(json!("typ"), -32602,
                  "invalid parameters: invalid type: integer `5`, expected struct lf.a2a.v1.Message at line 1 column 12",
                  info("INVALID_PARAMS", json!({}))),
        ),
        (
            "task not found",
            vec![],
            json!({"jsonrpc": "2.0", "id": 12, "method": "GetTask", "params": {"id": "nope"}}).to_string(),
            error(json!(12), -32001, "task nope not found", info("TASK_NOT_FOUND", json!({"taskId": "nope"}))),
        ),
        (
            "task not cancelable",
            vec![],
            json!({"jsonrpc": "2.0", "id": 13, "method": "CancelTask", "params": {"id": "<task>"}}).to_string(),
            error(json!(13), -32002, "task <task> is TASK_STATE_COMPLETED",
                  info("TASK_NOT_CANCELABLE", json!({"taskId": "<task>"}))),
        ),
        (
            "unsupported operation: message to a terminal task",
            vec![],
            json!({"jsonrpc": "2.0", "id": 14, "method": "SendMessage",
                   "params": {"message": {"messageId": "m-14", "taskId": "<task>", "role": "ROLE_USER",
                                          "parts": [{"text": "more"}]}}}).to_string(),
            error(json!(14), -32004, "task <task> is TASK_STATE_COMPLETED and accepts no more messages",
                  info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"}))),
        ),
        (
            "unsupported operation: subscribe to a terminal task",
            vec![],
            json!({"jsonrpc": "2.0", "id": 15, "method": "SubscribeToTask", "params": {"id": "<task>"}}).to_string(),
            error(json!(15), -32004,
                  "task <task> is TASK_STATE_COMPLETED; subscribe to tasks that are still running",
                  info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"}))),
        ),
        (
            "content type not supported (agent refuses before any task)",
            vec![],
            json!({"jsonrpc": "2.0", "id": 16, "method": "SendMessage",
                   "params": {"message": user("m-16", "refuse")}}).to_string(),
            error(json!(16), -32005, "the demo agent refuses this content",
                  info("CONTENT_TYPE_NOT_SUPPORTED", json!({}))),
        ),
        (
            "content type not supported on a stream: a plain JSON error, no SSE",
            vec![],
            json!({"jsonrpc": "2.0", "id": 17, "method": "SendStreamingMessage",
                   "params": {"message": user("m-17", "refuse")}}).to_string(),
            error(json!(17), -32005, "the demo agent refuses this content",
                  info("CONTENT_TYPE_NOT_SUPPORTED", json!({}))),
        ),
        (
            "version not supported: A2A-Version 0.3",
            vec![("A2A-Version", "0.3")],
            json!({"jsonrpc": "2.0", "id": 18, "method": "GetTask", "params": {"id": "<task>"}}).to_string(),
            error(json!(18), -32009, "A2A-Version 0.3 is not supported; this server speaks 1.0",
                  info("VERSION_NOT_SUPPORTED", json!({"requestedVersion": "0.3", "supportedVersions": "1.0"}))),
        ),
        (
            "unauthenticated caller: extended card capability off comes first",
            vec![],
            json!({"jsonrpc": "2.0", "id": 19, "method": "GetExtendedAgentCard", "params": {}}).to_string(),
            error(json!(19), -32004, "this agent has no extended agent card",
                  info("UNSUPPORTED_OPERATION", json!({}))),
        ),
    ];
    for (case, headers, body, expected) in cases {
        rpc.raw_error(case, &headers, &body, expected).await;
    }
    rpc.check.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_ids_echo_unchanged() {
    let f = server(Variant::default()).await;
    let mut rpc = Rpc::new(origin(&f));
    // (id sent, id expected back): JSON-RPC ids are strings or numbers, echoed unchanged.
    let ids = [
        (json!(0), json!(0)),
        (json!(42), json!(42)),
        (json!("a string id"), json!("a string id")),
        (json!(""), json!("")),
        (
            json!(18446744073709551615_u64),
            json!(18446744073709551615_u64),
        ),
        (Value::Null, Value::Null),
    ];
    for (sent, back) in ids {
        rpc.raw_error(
            &format!("id {sent}"),
            &[],
            &json!({"jsonrpc": "2.0", "id": sent, "method": "GetTask", "params": {"id": "nope"}})
                .to_string(),
            error(
                back,
                -32001,
                "task nope not found",
                info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
            ),
        )
        .await;
    }
    // Not ids: answered -32600 with a null id.
    let not_ids = [
        (
            "no id (a notification, which A2A does not use)",
            json!({"jsonrpc": "2.0", "method": "GetTask"}),
            "\"id\" is required: A2A methods always answer",
        ),
        (
            "an object id",
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "GetTask"}),
            "\"id\" must be a string, a number or null",
        ),
    ];
    for (case, request, message) in not_ids {
        rpc.raw_error(
            case,
            &[],
            &request.to_string(),
            error(
                Value::Null,
                -32600,
                message,
                info("INVALID_REQUEST", json!({})),
            ),
        )
        .await;
    }
    rpc.check.finish();
}

/// JSON-RPC 2.0 allows any Number as an id: negative and fractional ids are echoed unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_negative_ids_echo_unchanged() {
    let f = server(Variant::default()).await;
    let mut rpc = Rpc::new(origin(&f));
    rpc.raw_error(
        "id -1",
        &[],
        &json!({"jsonrpc": "2.0", "id": -1, "method": "GetTask", "params": {"id": "nope"}})
            .to_string(),
        error(
            json!(-1),
            -32001,
            "task nope not found",
            info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
        ),
    )
    .await;
    rpc.check.finish();
}

/// One server per variant, each with its table of (case, headers, request, expected envelope).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_variant_errors() {
    let get_card = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"});
    let create = json!({"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig",
                        "params": {"taskId": "t-1", "url": "https://client.example.com/hook"}});
    let get_task =
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "nope"}});
    let stream = json!({"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage",
                        "params": {"message": user("m-4", "stream 1")}});
    let alice = ("authorization", "Bearer token-alice");
    let variants: Vec<(&str, Variant, Vec<Case>)> = vec![
        (
            "push off",
            Variant {
                no_push: true,
                ..Default::default()
            },
            vec![(
                "CreateTaskPushNotificationConfig",
                vec![],
                create.clone(),
                error(
                    json!(2),
                    -32003,
                    "Push notifications are not supported",
                    info("PUSH_NOTIFICATION_NOT_SUPPORTED", json!({})),
                ),
            )],
        ),
        (
            "streaming off",
            Variant {
                no_streaming: true,
                ..Default::default()
            },
            vec![(
                "SendStreamingMessage",
                vec![],
                stream.clone(),
                error(
                    json!(4),
                    -32004,
                    "this agent does not support streaming",
                    info("UNSUPPORTED_OPERATION", json!({})),
                ),
            )],
        ),
        (
            "extended card declared, not configured",
            Variant {
                extended_card: Some(None),
                ..Default::default()
            },
            vec![
                (
                    "anonymous caller",
                    vec![],
                    get_card.clone(),
                    error(
                        json!(1),
                        -31401,
                        "the extended agent card requires authentication",
                        info("UNAUTHENTICATED", json!({})),
                    ),
                ),
                (
                    "authenticated caller",
                    vec![alice],
                    get_card.clone(),
                    error(
                        json!(1),
                        -32007,
                        "Extended agent card is not configured",
                        info("EXTENDED_AGENT_CARD_NOT_CONFIGURED", json!({})),
                    ),
                ),
            ],
        ),
        (
            "extended card configured",
            Variant {
                extended_card: Some(Some(extended_card())),
                ..Default::default()
            },
            vec![(
                "authenticated caller",
                vec![alice],
                get_card.clone(),
                envelope(json!(1), extended_card_json()),
            )],
        ),
        (
            "required extension",
            Variant {
                required_extension: Some(REQUIRED_EXT),
                ..Default::default()
            },
            vec![
                (
                    "not activated",
                    vec![],
                    get_task.clone(),
                    error(
                        json!(3),
                        -32008,
                        &format!("extension {REQUIRED_EXT} is required"),
                        info(
                            "EXTENSION_SUPPORT_REQUIRED",
                            json!({"extension": REQUIRED_EXT}),
                        ),
                    ),
                ),
                (
                    "activated",
                    vec![("A2A-Extensions", REQUIRED_EXT)],
                    get_task.clone(),
                    error(
                        json!(3),
                        -32001,
                        "task nope not found",
                        info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
                    ),
                ),
            ],
        ),
        (
            "strict version",
            Variant {
                strict_version: true,
                ..Default::default()
            },
            vec![
                (
                    "no A2A-Version header",
                    vec![],
                    get_task.clone(),
                    error(
                        json!(3),
                        -32009,
                        "A2A-Version is missing, which means 0.3; this server speaks 1.0",
                        info("VERSION_NOT_SUPPORTED", json!({"supportedVersions": "1.0"})),
                    ),
                ),
                (
                    "A2A-Version 1.0",
                    vec![("A2A-Version", "1.0")],
                    get_task.clone(),
                    error(
                        json!(3),
                        -32001,
                        "task nope not found",
                        info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
                    ),
                ),
            ],
        ),
    ];
    let mut check = Check::new();
    for (variant_name, variant, cases) in variants {
        let f = server(variant).await;
        let mut rpc = Rpc::new(origin(&f));
        for (case, headers, request, expected) in cases {
            rpc.raw_error(
                &format!("{variant_name}: {case}"),
                &headers,
                &request.to_string(),
                expected,
            )
            .await;
        }
        check.absorb(rpc.check);
    }
    check.finish();
}

/// A body over `jsonrpc.max_body` is refused with a JSON-RPC error envelope like any other
/// invalid request (the HTTP+JSON binding answers 400 INVALID_REQUEST for the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_body_over_the_limit() {
    let engine =
        trident_engine::Engine::builder(std::sync::Arc::new(trident_testkit::agents::Demo)).build();
    let card = engine.card().clone();
    let options = trident_server::ServerOptions {
        jsonrpc: trident_server::JsonRpcOptions {
            max_body: 256,
            ..Default::default()
        },
        ..Default::default()
    };
    let app = trident_server::app(std::sync::Arc::new(engine), &card, &options).expect("app");
    let app = super::serve_app(app).await;
    let mut rpc = Rpc::new(app.origin.clone());
    rpc.exchange(
        "under the limit",
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}),
        &[],
        error(
            json!(1),
            -32001,
            "task nope not found",
            info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
        ),
    )
    .await;
    rpc.exchange(
        "over the limit",
        &[],
        json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage",
               "params": {"message": user("m-2", &"x".repeat(256))}}),
        &[],
        error(
            Value::Null,
            -32600,
            "the body exceeds 256 bytes",
            info("INVALID_REQUEST", json!({})),
        ),
    )
    .await;
    rpc.check.finish();
}
