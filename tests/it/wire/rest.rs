//! HTTP+JSON (spec digest §4): every route, query parameters, SSE, AIP-193 error bodies.

use std::sync::Arc;

use serde_json::{Value, json};

use super::jsonrpc::{extended_card, extended_card_json};
use super::{
    Call, Check, Frame, Names, SseReader, bad_request, error_info, origin, read, send, serve_app,
    server,
};
use crate::harness::{REQUIRED_EXT, Variant};

/// An HTTP+JSON server spoken to with raw requests.
struct Rest {
    http: reqwest::Client,
    origin: String,
    names: Names,
    check: Check,
}

/// One request of a table: method, path (names filled in), headers, body.
struct Req<'a> {
    method: &'a str,
    path: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    body: Option<String>,
}

/// (request, HTTP status, body)
type Case<'a> = (Req<'a>, u16, Value);

fn get(path: &str) -> Req<'_> {
    Req {
        method: "GET",
        path,
        headers: Vec::new(),
        body: None,
    }
}

fn delete(path: &str) -> Req<'_> {
    Req {
        method: "DELETE",
        path,
        headers: Vec::new(),
        body: None,
    }
}

/// A POST of JSON `body` with `Content-Type: application/json`.
fn post(path: &str, body: Value) -> Req<'_> {
    post_raw(path, &body.to_string())
}

fn post_raw<'a>(path: &'a str, body: &str) -> Req<'a> {
    Req {
        method: "POST",
        path,
        headers: vec![("content-type", "application/json")],
        body: Some(body.to_owned()),
    }
}

impl<'a> Req<'a> {
    fn header(mut self, name: &'a str, value: &'a str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name, value));
        self
    }
}

impl Rest {
    fn new(origin: String) -> Self {
        Self {
            http: reqwest::Client::new(),
            origin,
            names: Names::default(),
            check: Check::new(),
        }
    }

    async fn send(&self, req: &Req<'_>) -> reqwest::Response {
        send(
            &self.http,
            &self.origin,
            &self.names,
            Call {
                method: req.method,
                path: req.path,
                headers: &req.headers,
                body: req.body.clone(),
            },
        )
        .await
    }

    /// Sends `req`, learns `(pointer, name)` values from the raw answer, then checks status,
    /// content type and the whole body.
    async fn exchange(
        &mut self,
        req: Req<'_>,
        learn: &[(&str, &str)],
        status: u16,
        expected: Value,
    ) -> Value {
        let case = format!("{} {}", req.method, req.path);
        let reply = read(self.send(&req).await).await;
        let raw = reply.json();
        for (ptr, name) in learn {
            if raw.pointer(ptr).and_then(Value::as_str).is_some() {
                self.names.learn_at(&raw, ptr, name);
            }
        }
        self.check.eq(
            case,
            &reply.summary(&self.names),
            &json!({"status": status, "contentType": "application/json", "body": expected}),
        );
        raw
    }

    /// Opens a stream and checks the SSE response head.
    async fn stream(&mut self, req: Req<'_>) -> SseReader {
        let case = format!("{} {}: response head", req.method, req.path);
        let sse = SseReader::new(self.send(&req).await);
        self.check.eq(
            case,
            &json!({"status": sse.status, "contentType": sse.header("content-type"),
                    "cacheControl": sse.header("cache-control")}),
            &json!({"status": 200, "contentType": "text/event-stream", "cacheControl": "no-cache"}),
        );
        sse
    }

    fn frames(&self, frames: &[Frame]) -> Value {
        Value::Array(frames.iter().map(|f| f.to_json(&self.names)).collect())
    }
}

fn user(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

fn stored_user(id: &str, text: &str, task: &str, ctx: &str) -> Value {
    json!({"messageId": id, "contextId": ctx, "taskId": task, "role": "ROLE_USER",
           "parts": [{"text": text}]})
}

/// A completed echo task of `text` as the engine returns it.
fn echo_task(task: &str, ctx: &str, message_id: &str, text: &str, history: bool) -> Value {
    let mut t = json!({
        "id": task, "contextId": ctx,
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
        "artifacts": [{"artifactId": "echo", "parts": [{"text": text}]}],
    });
    if history {
        t["history"] = json!([stored_user(message_id, text, task, ctx)]);
    }
    t
}

/// An AIP-193 error body.
fn aip193(code: u16, status: &str, message: &str, details: Value) -> Value {
    json!({"error": {"code": code, "status": status, "message": message, "details": details}})
}

fn info(reason: &str, metadata: Value) -> Value {
    json!([error_info(reason, metadata)])
}

fn invalid_params(message: &str, field: &str, description: &str) -> Value {
    aip193(
        400,
        "INVALID_ARGUMENT",
        message,
        json!([
            error_info("INVALID_PARAMS", json!({})),
            bad_request(&[(field, description)])
        ]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_every_route_and_its_body() {
    let f = server(Variant::default()).await;
    let mut rest = Rest::new(origin(&f));

    rest.exchange(
        post("/message:send", json!({"message": user("m-1", "hello")})),
        &[("/task/id", "<task>"), ("/task/contextId", "<ctx>")],
        200,
        json!({"task": echo_task("<task>", "<ctx>", "m-1", "hello", true)}),
    )
    .await;
    rest.exchange(
        post(
            "/message:send",
            json!({"message": {"messageId": "m-2", "contextId": "ctx-fixed", "role": "ROLE_USER",
                           "parts": [{"text": "reply hi"}]}}),
        )
        .header("content-type", "application/a2a+json"),
        &[],
        200,
        json!({"message": {"messageId": "<uuid>", "contextId": "ctx-fixed", "role": "ROLE_AGENT",
                           "parts": [{"text": "reply hi"}]}}),
    )
    .await;
    rest.exchange(
        post(
            "/message:send",
            json!({"message": user("m-3", "again"), "configuration": {"historyLength": 0}}),
        ),
        &[("/task/id", "<task2>"), ("/task/contextId", "<ctx2>")],
        200,
        json!({"task": echo_task("<task2>", "<ctx2>", "m-3", "again", false)}),
    )
    .await;

    // GetTask, with and without historyLength.
    rest.exchange(
        get("/tasks/<task>"),
        &[],
        200,
        echo_task("<task>", "<ctx>", "m-1", "hello", true),
    )
    .await;
    rest.exchange(
        get("/tasks/<task>?historyLength=0"),
        &[],
        200,
        echo_task("<task>", "<ctx>", "m-1", "hello", false),
    )
    .await;

    // ListTasks: query parameters by JSON name and by proto name.
    let listed = |task: &str, ctx: &str, id: &str, text: &str| {
        json!({"id": task, "contextId": ctx,
               "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
               "history": [stored_user(id, text, task, ctx)]})
    };
    rest.exchange(
        get("/tasks?pageSize=1&status=TASK_STATE_COMPLETED"),
        &[("/nextPageToken", "<page-2>")],
        200,
        json!({"tasks": [listed("<task2>", "<ctx2>", "m-3", "again")],
               "nextPageToken": "<page-2>", "pageSize": 1, "totalSize": 2}),
    )
    .await;
    rest.exchange(
        get(
            "/tasks?pageSize=1&status=TASK_STATE_COMPLETED&pageToken=<page-2>&includeArtifacts=true&historyLength=0",
        ),
        &[],
        200,
        json!({"tasks": [echo_task("<task>", "<ctx>", "m-1", "hello", false)],
               "nextPageToken": "", "pageSize": 1, "totalSize": 2}),
    )
    .await;
    rest.exchange(
        get("/tasks?context_id=<ctx>&include_artifacts=1&history_length=1"),
        &[],
        200,
        json!({"tasks": [echo_task("<task>", "<ctx>", "m-1", "hello", true)],
               "nextPageToken": "", "pageSize": 50, "totalSize": 1}),
    )
    .await;

    // SendStreamingMessage: bare StreamResponse data, `id:` = sequence number.
    let mut sse = rest
        .stream(post(
            "/message:stream",
            json!({"message": user("m-4", "stream 2")}),
        ))
        .await;
    let frames = sse.rest().await;
    if let Some(first) = frames
        .first()
        .and_then(|f| serde_json::from_str::<Value>(f.data.first()?).ok())
    {
        rest.names.learn_at(&first, "/task/id", "<stream>");
        rest.names
            .learn_at(&first, "/task/contextId", "<stream-ctx>");
    }
    let status = |state: &str| {
        json!({"statusUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "status": {"state": state, "timestamp": "<ts>"}}})
    };
    let got = rest.frames(&frames);
    rest.check.eq(
        "POST /message:stream: frames",
        &got,
        &json!([
            {"id": "1", "data": {"task": {
                "id": "<stream>", "contextId": "<stream-ctx>",
                "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": "<ts>"},
                "history": [stored_user("m-4", "stream 2", "<stream>", "<stream-ctx>")],
            }}},
            {"id": "2", "data": status("TASK_STATE_WORKING")},
            {"id": "3", "data": {"artifactUpdate": {
                "taskId": "<stream>", "contextId": "<stream-ctx>",
                "artifact": {"artifactId": "stream", "parts": [{"text": "chunk 0 of stream 2"}]},
            }}},
            {"id": "4", "data": {"artifactUpdate": {
                "taskId": "<stream>", "contextId": "<stream-ctx>",
                "artifact": {"artifactId": "stream", "parts": [{"text": "chunk 1 of stream 2"}]},
                "append": true, "lastChunk": true,
            }}},
            {"id": "5", "data": status("TASK_STATE_COMPLETED")},
        ]),
    );
    let mut sse = rest
        .stream(post(
            "/message:stream",
            json!({"message": {"messageId": "m-5", "contextId": "ctx-fixed", "role": "ROLE_USER",
                           "parts": [{"text": "reply yo"}]}}),
        ))
        .await;
    let got = rest.frames(&sse.rest().await);
    rest.check.eq(
        "POST /message:stream (direct reply): one frame, no id",
        &got,
        &json!([{"data": {"message": {"messageId": "<uuid>", "contextId": "ctx-fixed",
                                      "role": "ROLE_AGENT", "parts": [{"text": "reply yo"}]}}}]),
    );

    // SubscribeToTask by GET (proto) and POST (prose), then CancelTask ends both streams.
    rest.exchange(
        post(
            "/message:send",
            json!({"message": user("m-6", "slow"), "configuration": {"returnImmediately": true}}),
        ),
        &[("/task/id", "<slow>"), ("/task/contextId", "<slow-ctx>")],
        200,
        json!({"task": {"id": "<slow>", "contextId": "<slow-ctx>",
                        "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"},
                        "history": [stored_user("m-6", "slow", "<slow>", "<slow-ctx>")]}}),
    )
    .await;
    let mut by_get = rest.stream(get("/tasks/<slow>:subscribe")).await;
    let mut by_post = rest.stream(post_raw("/tasks/<slow>:subscribe", "")).await;
    let mut frames_get: Vec<Frame> = by_get.next().await.into_iter().collect();
    let mut frames_post: Vec<Frame> = by_post.next().await.into_iter().collect();
    let canceled = json!({"id": "<slow>", "contextId": "<slow-ctx>",
                          "status": {"state": "TASK_STATE_CANCELED", "timestamp": "<ts>"},
                          "history": [stored_user("m-6", "slow", "<slow>", "<slow-ctx>")]});
    rest.exchange(
        post("/tasks/<slow>:cancel", json!({})),
        &[],
        200,
        canceled.clone(),
    )
    .await;
    frames_get.extend(by_get.rest().await);
    frames_post.extend(by_post.rest().await);
    let expected = json!([
        {"id": "2", "data": {"task": {"id": "<slow>", "contextId": "<slow-ctx>",
                                      "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"},
                                      "history": [stored_user("m-6", "slow", "<slow>", "<slow-ctx>")]}}},
        {"id": "3", "data": {"statusUpdate": {"taskId": "<slow>", "contextId": "<slow-ctx>",
                                              "status": {"state": "TASK_STATE_CANCELED", "timestamp": "<ts>"}}}},
    ]);
    let got = rest.frames(&frames_get);
    rest.check
        .eq("GET /tasks/{id}:subscribe: frames", &got, &expected);
    let got = rest.frames(&frames_post);
    rest.check
        .eq("POST /tasks/{id}:subscribe: frames", &got, &expected);
    // Canceling a canceled task returns it again (empty body accepted).
    rest.exchange(post_raw("/tasks/<slow>:cancel", ""), &[], 200, canceled)
        .await;

    // Resuming a stream after sequence number 1 (SSE `Last-Event-ID`) replays the log, even of
    // a task that has ended since; a resume point past the end is invalid.
    let mut resumed = rest
        .stream(get("/tasks/<slow>:subscribe").header("last-event-id", "1"))
        .await;
    let got = rest.frames(&resumed.rest().await);
    rest.check.eq(
        "GET /tasks/{id}:subscribe with Last-Event-ID 1: frames",
        &got,
        &json!([
            {"id": "2", "data": {"statusUpdate": {"taskId": "<slow>", "contextId": "<slow-ctx>",
                                                  "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"}}}},
            {"id": "3", "data": {"statusUpdate": {"taskId": "<slow>", "contextId": "<slow-ctx>",
                                                  "status": {"state": "TASK_STATE_CANCELED", "timestamp": "<ts>"}}}},
        ]),
    );
    rest.exchange(
        get("/tasks/<slow>:subscribe").header("last-event-id", "9"),
        &[],
        400,
        invalid_params(
            "Last-Event-ID: task <slow> has no event 9",
            "Last-Event-ID",
            "task <slow> has no event 9",
        ),
    )
    .await;

    // Push notification configurations: create, get, list, delete (200 `{}`).
    // Answered without its secrets: `token` and `credentials` are write-only (Create too).
    let config = json!({"id": "cfg-1", "taskId": "<task>", "url": "https://client.example.com/hook",
                        "authentication": {"scheme": "Bearer"}});
    rest.exchange(
        post(
            "/tasks/<task>/pushNotificationConfigs",
            json!({"id": "cfg-1", "url": "https://client.example.com/hook", "token": "opaque-123",
                   "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}}),
        ),
        &[],
        200,
        config.clone(),
    )
    .await;
    // Read back without its secrets: `token` and `credentials` are write-only.
    let read_back = json!({"id": "cfg-1", "taskId": "<task>", "url": "https://client.example.com/hook",
                           "authentication": {"scheme": "Bearer"}});
    rest.exchange(
        get("/tasks/<task>/pushNotificationConfigs/cfg-1"),
        &[],
        200,
        read_back.clone(),
    )
    .await;
    rest.exchange(
        get("/tasks/<task>/pushNotificationConfigs"),
        &[],
        200,
        json!({"configs": [read_back]}),
    )
    .await;
    rest.exchange(
        delete("/tasks/<task>/pushNotificationConfigs/cfg-1"),
        &[],
        200,
        json!({}),
    )
    .await;
    rest.exchange(
        get("/tasks/<task>/pushNotificationConfigs/cfg-1"),
        &[],
        404,
        aip193(
            404,
            "NOT_FOUND",
            "task <task> has no push notification config cfg-1",
            info(
                "TASK_NOT_FOUND",
                json!({"taskId": "<task>", "configId": "cfg-1"}),
            ),
        ),
    )
    .await;
    rest.exchange(
        get("/tasks/<task>/pushNotificationConfigs"),
        &[],
        200,
        json!({}),
    )
    .await;

    // GetExtendedAgentCard with the capability off (success in the variants test).
    rest.exchange(
        get("/extendedAgentCard"),
        &[],
        400,
        aip193(
            400,
            "FAILED_PRECONDITION",
            "this agent has no extended agent card",
            info("UNSUPPORTED_OPERATION", json!({})),
        ),
    )
    .await;

    // Tenant prefix: the same routes under /{tenant}, scoped to that tenant.
    rest.exchange(
        post(
            "/acme/message:send",
            json!({"message": user("m-7", "tenant")}),
        ),
        &[("/task/id", "<acme>"), ("/task/contextId", "<acme-ctx>")],
        200,
        json!({"task": echo_task("<acme>", "<acme-ctx>", "m-7", "tenant", true)}),
    )
    .await;
    rest.exchange(
        get("/acme/tasks/<acme>?historyLength=0"),
        &[],
        200,
        echo_task("<acme>", "<acme-ctx>", "m-7", "tenant", false),
    )
    .await;
    rest.exchange(
        get("/acme/tasks?includeArtifacts=true"),
        &[],
        200,
        json!({"tasks": [echo_task("<acme>", "<acme-ctx>", "m-7", "tenant", true)],
               "nextPageToken": "", "pageSize": 50, "totalSize": 1}),
    )
    .await;
    rest.exchange(
        get("/tasks?tenant=acme&historyLength=0"),
        &[],
        200,
        json!({"tasks": [{"id": "<acme>", "contextId": "<acme-ctx>",
                          "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"}}],
               "nextPageToken": "", "pageSize": 50, "totalSize": 1}),
    )
    .await;
    rest.exchange(
        get("/acme/tasks/<acme>:subscribe"),
        &[],
        400,
        aip193(
            400,
            "FAILED_PRECONDITION",
            "task <acme> is TASK_STATE_COMPLETED; subscribe to tasks that are still running",
            info("UNSUPPORTED_OPERATION", json!({"taskId": "<acme>"})),
        ),
    )
    .await;
    rest.exchange(
        get("/tasks/<acme>"),
        &[],
        404,
        aip193(
            404,
            "NOT_FOUND",
            "task <acme> not found",
            info("TASK_NOT_FOUND", json!({"taskId": "<acme>"})),
        ),
    )
    .await;
    rest.exchange(
        post(
            "/acme/message:send",
            json!({"tenant": "other", "message": user("m-8", "x")}),
        ),
        &[],
        400,
        invalid_params(
            "tenant: \"other\" does not match the path tenant \"acme\"",
            "tenant",
            "\"other\" does not match the path tenant \"acme\"",
        ),
    )
    .await;

    rest.check.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_error_bodies() {
    let f = server(Variant::default()).await;
    let mut rest = Rest::new(origin(&f));
    rest.exchange(
        post(
            "/message:send",
            json!({"message": user("m-1", "hello"), "configuration": {"historyLength": 0}}),
        ),
        &[("/task/id", "<task>"), ("/task/contextId", "<ctx>")],
        200,
        json!({"task": echo_task("<task>", "<ctx>", "m-1", "hello", false)}),
    )
    .await;

    let not_found = aip193(
        404,
        "NOT_FOUND",
        "task nope not found",
        info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
    );
    // (request, HTTP status, AIP-193 body); every one `application/json`.
    let cases: Vec<Case> = vec![
        (get("/tasks/nope"), 404, not_found.clone()),
        (
            post("/tasks/<task>:cancel", json!({})),
            400,
            aip193(
                400,
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED",
                info("TASK_NOT_CANCELABLE", json!({"taskId": "<task>"})),
            ),
        ),
        (
            post(
                "/message:send",
                json!({"message": {"messageId": "m-2", "taskId": "<task>", "role": "ROLE_USER",
                               "parts": [{"text": "more"}]}}),
            ),
            400,
            aip193(
                400,
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED and accepts no more messages",
                info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"})),
            ),
        ),
        (
            get("/tasks/<task>:subscribe"),
            400,
            aip193(
                400,
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED; subscribe to tasks that are still running",
                info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"})),
            ),
        ),
        (
            post("/message:send", json!({"message": user("m-3", "refuse")})),
            400,
            aip193(
                400,
                "INVALID_ARGUMENT",
                "the demo agent refuses this content",
                info("CONTENT_TYPE_NOT_SUPPORTED", json!({})),
            ),
        ),
        (
            // Known before the first event: a plain HTTP error, not an SSE stream.
            post("/message:stream", json!({"message": user("m-4", "refuse")})),
            400,
            aip193(
                400,
                "INVALID_ARGUMENT",
                "the demo agent refuses this content",
                info("CONTENT_TYPE_NOT_SUPPORTED", json!({})),
            ),
        ),
        (
            post("/message:send", json!({"message": user("", "hi")})),
            400,
            invalid_params(
                "message.messageId: is required",
                "message.messageId",
                "is required",
            ),
        ),
        (
            post(
                "/message:send",
                json!({"message": {"messageId": "m-5", "role": "ROLE_USER", "parts": []}}),
            ),
            400,
            invalid_params(
                "message.parts: at least one part is required",
                "message.parts",
                "at least one part is required",
            ),
        ),
        (
            get("/tasks?pageSize=0"),
            400,
            invalid_params(
                "pageSize: must be between 1 and 100, got 0",
                "pageSize",
                "must be between 1 and 100, got 0",
            ),
        ),
        (
            get("/tasks?pageSize=101"),
            400,
            invalid_params(
                "pageSize: must be between 1 and 100, got 101",
                "pageSize",
                "must be between 1 and 100, got 101",
            ),
        ),
        (
            get("/tasks?includeArtifacts=maybe"),
            400,
            invalid_params(
                "includeArtifacts: \"maybe\" is not a boolean",
                "includeArtifacts",
                "\"maybe\" is not a boolean",
            ),
        ),
        (
            get("/tasks?pageToken=garbage"),
            400,
            invalid_params(
                "pageToken: is not a token this server issued",
                "pageToken",
                "is not a token this server issued",
            ),
        ),
        (
            get("/tasks/<task>?historyLength=-1"),
            400,
            invalid_params(
                "historyLength: must not be negative, got -1",
                "historyLength",
                "must not be negative, got -1",
            ),
        ),
        (
            get("/tasks?status=TASK_STATE_BOGUS"),
            400,
            aip193(
                400,
                "INVALID_ARGUMENT",
                "invalid parameters: unknown variant `TASK_STATE_BOGUS`, expected one of `TASK_STATE_UNSPECIFIED`, `TASK_STATE_SUBMITTED`, `TASK_STATE_WORKING`, `TASK_STATE_COMPLETED`, `TASK_STATE_FAILED`, `TASK_STATE_CANCELED`, `TASK_STATE_INPUT_REQUIRED`, `TASK_STATE_REJECTED`, `TASK_STATE_AUTH_REQUIRED` at line 1 column 28",
                info("INVALID_PARAMS", json!({})),
            ),
        ),
        (
            post_raw("/message:send", r#"{"message": "#),
            400,
            aip193(
                400,
                "INVALID_ARGUMENT",
                "invalid JSON: EOF while parsing a value at line 1 column 11",
                info("PARSE_ERROR", json!({})),
            ),
        ),
        (
            post_raw("/message:send", "[1, 2]"),
            400,
            aip193(
                400,
                "INVALID_ARGUMENT",
                "invalid parameters: invalid type: sequence, expected struct lf.a2a.v1.SendMessageRequest at line 1 column 1",
                info("INVALID_PARAMS", json!({})),
            ),
        ),
        (
            get("/nope"),
            404,
            aip193(
                404,
                "UNIMPLEMENTED",
                "no A2A operation at /nope",
                info("METHOD_NOT_FOUND", json!({})),
            ),
        ),
        (
            // A path prefix reads as a tenant, which has no such task. (`/v1/...` is v0.3's,
            // served by the compatibility layer unless the request says A2A-Version 1.x.)
            get("/v2/tasks/<task>"),
            404,
            aip193(
                404,
                "NOT_FOUND",
                "task <task> not found",
                info("TASK_NOT_FOUND", json!({"taskId": "<task>"})),
            ),
        ),
        (
            // `<task>:frobnicate` reads as a task id, which only GET takes.
            post("/tasks/<task>:frobnicate", json!({})),
            405,
            aip193(
                405,
                "UNIMPLEMENTED",
                "POST is not allowed on /tasks/<task>:frobnicate; allowed: GET",
                info("METHOD_NOT_FOUND", json!({})),
            ),
        ),
        (
            delete("/message:send"),
            405,
            aip193(
                405,
                "UNIMPLEMENTED",
                "DELETE is not allowed on /message:send; allowed: POST",
                info("METHOD_NOT_FOUND", json!({})),
            ),
        ),
        (
            post("/message:send", json!({"message": user("m-6", "hi")}))
                .header("content-type", "text/plain"),
            415,
            aip193(
                415,
                "INVALID_ARGUMENT",
                "Content-Type text/plain: the body must be application/json or application/a2a+json",
                info(
                    "CONTENT_TYPE_NOT_SUPPORTED",
                    json!({"header": "Content-Type", "received": "text/plain"}),
                ),
            ),
        ),
        (
            get("/tasks/nope").header("A2A-Version", "0.3"),
            400,
            aip193(
                400,
                "FAILED_PRECONDITION",
                "A2A-Version 0.3 is not supported; this server speaks 1.0",
                info(
                    "VERSION_NOT_SUPPORTED",
                    json!({"requestedVersion": "0.3", "supportedVersions": "1.0"}),
                ),
            ),
        ),
        (
            get("/tasks/nope?A2A-Version=0.3"),
            400,
            aip193(
                400,
                "FAILED_PRECONDITION",
                "A2A-Version 0.3 is not supported; this server speaks 1.0",
                info(
                    "VERSION_NOT_SUPPORTED",
                    json!({"requestedVersion": "0.3", "supportedVersions": "1.0"}),
                ),
            ),
        ),
        (
            get("/tasks/nope").header("A2A-Version", "1.0"),
            404,
            not_found.clone(),
        ),
    ];
    for (req, status, body) in cases {
        rest.exchange(req, &[], status, body).await;
    }
    rest.check.finish();
}

/// One server per variant, each with its table of (request, HTTP status, body).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_variant_errors() {
    let create = || {
        post(
            "/tasks/t-1/pushNotificationConfigs",
            json!({"url": "https://client.example.com/hook"}),
        )
    };
    let alice = ("authorization", "Bearer token-alice");
    let not_found = aip193(
        404,
        "NOT_FOUND",
        "task nope not found",
        info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
    );
    let variants: Vec<(&str, Variant, Vec<Case>)> = vec![
        (
            "push off",
            Variant {
                no_push: true,
                ..Default::default()
            },
            vec![
                (
                    create(),
                    400,
                    aip193(
                        400,
                        "FAILED_PRECONDITION",
                        "Push notifications are not supported",
                        info("PUSH_NOTIFICATION_NOT_SUPPORTED", json!({})),
                    ),
                ),
                (
                    get("/tasks/t-1/pushNotificationConfigs"),
                    400,
                    aip193(
                        400,
                        "FAILED_PRECONDITION",
                        "Push notifications are not supported",
                        info("PUSH_NOTIFICATION_NOT_SUPPORTED", json!({})),
                    ),
                ),
            ],
        ),
        (
            "streaming off",
            Variant {
                no_streaming: true,
                ..Default::default()
            },
            vec![(
                post(
                    "/message:stream",
                    json!({"message": user("m-1", "stream 1")}),
                ),
                400,
                aip193(
                    400,
                    "FAILED_PRECONDITION",
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
                    get("/extendedAgentCard"),
                    401,
                    aip193(
                        401,
                        "UNAUTHENTICATED",
                        "the extended agent card requires authentication",
                        info("UNAUTHENTICATED", json!({})),
                    ),
                ),
                (
                    get("/extendedAgentCard").header(alice.0, alice.1),
                    400,
                    aip193(
                        400,
                        "FAILED_PRECONDITION",
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
            vec![
                (
                    get("/extendedAgentCard").header(alice.0, alice.1),
                    200,
                    extended_card_json(),
                ),
                (
                    get("/acme/extendedAgentCard").header(alice.0, alice.1),
                    200,
                    extended_card_json(),
                ),
            ],
        ),
        (
            "required extension",
            Variant {
                required_extension: Some(REQUIRED_EXT),
                ..Default::default()
            },
            vec![
                (
                    get("/tasks/nope"),
                    400,
                    aip193(
                        400,
                        "FAILED_PRECONDITION",
                        &format!("extension {REQUIRED_EXT} is required"),
                        info(
                            "EXTENSION_SUPPORT_REQUIRED",
                            json!({"extension": REQUIRED_EXT}),
                        ),
                    ),
                ),
                (
                    get("/tasks/nope").header("A2A-Extensions", REQUIRED_EXT),
                    404,
                    not_found.clone(),
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
                    get("/tasks/nope"),
                    400,
                    aip193(
                        400,
                        "FAILED_PRECONDITION",
                        "A2A-Version is missing, which means 0.3; this server speaks 1.0",
                        info("VERSION_NOT_SUPPORTED", json!({"supportedVersions": "1.0"})),
                    ),
                ),
                (get("/tasks/nope?A2A-Version=1.0"), 404, not_found.clone()),
                (
                    get("/tasks/nope").header("A2A-Version", "1.0"),
                    404,
                    not_found.clone(),
                ),
            ],
        ),
    ];
    let mut check = Check::new();
    for (name, variant, cases) in variants {
        let f = server(variant).await;
        let mut rest = Rest::new(origin(&f));
        for (req, status, body) in cases {
            rest.exchange(req, &[], status, body).await;
        }
        for failure in &mut rest.check.failures {
            *failure = format!("[{name}] {failure}");
        }
        check.absorb(rest.check);
    }
    check.finish();
}

/// The body limit of both JSON bindings, on a server built with small limits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_body_over_the_limit() {
    let engine = trident_engine::Engine::builder(Arc::new(trident_testkit::agents::Demo)).build();
    let card = engine.card().clone();
    let options = trident_server::ServerOptions {
        rest: trident_server::RestOptions {
            max_body: 128,
            ..Default::default()
        },
        ..Default::default()
    };
    let app = trident_server::app(Arc::new(engine), &card, &options).expect("app");
    let app = serve_app(app).await;
    let mut rest = Rest::new(app.origin.clone());
    let small = json!({"message": user("m-1", "hi")});
    let large = json!({"message": user("m-2", &"x".repeat(128))});
    rest.exchange(
        post("/message:send", small),
        &[("/task/id", "<task>"), ("/task/contextId", "<ctx>")],
        200,
        json!({"task": echo_task("<task>", "<ctx>", "m-1", "hi", true)}),
    )
    .await;
    rest.exchange(
        post("/message:send", large),
        &[],
        413,
        aip193(
            413,
            "INVALID_ARGUMENT",
            "the body exceeds 128 bytes",
            info("INVALID_REQUEST", json!({"maxBodyBytes": "128"})),
        ),
    )
    .await;
    rest.check.finish();
}
