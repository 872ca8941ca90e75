//! v0.3's HTTP+JSON routes (`/v1/...`): matching, request bodies (ProtoJSON of the v0.3 model)
//! into the one 1.0 [`A2aRequest`], and answers back into v0.3 bodies.
//!
//! | route | RPC |
//! |---|---|
//! | `POST /v1/message:send` | `SendMessage` |
//! | `POST /v1/message:stream` | `SendStreamingMessage` (SSE, `data:` = `StreamResponse`) |
//! | `GET /v1/tasks/{id}?historyLength=` | `GetTask` |
//! | `POST /v1/tasks/{id}:cancel` | `CancelTask` |
//! | `GET` or `POST /v1/tasks/{id}:subscribe` | `SubscribeToTask` (SSE) |
//! | `POST /v1/tasks/{id}/pushNotificationConfigs` | `CreateTaskPushNotificationConfig` |
//! | `GET /v1/tasks/{id}/pushNotificationConfigs` | `ListTaskPushNotificationConfigs` |
//! | `GET /v1/tasks/{id}/pushNotificationConfigs/{cid}` | `GetTaskPushNotificationConfig` |
//! | `DELETE /v1/tasks/{id}/pushNotificationConfigs/{cid}` | `DeleteTaskPushNotificationConfig` |
//! | `GET /v1/card` | `GetExtendedAgentCard` |

use serde_json::Value;
use trident_core::{
    A2aError, A2aReply, A2aRequest, ErrorKind, EventStream, JsonLimits, check_json,
};
use trident_proto as pb;
use trident_proto::v03;

use crate::client::{Answer, Call};
use crate::convert::{ToV03, TryToV1, config_name, task_name};

/// A matched v0.3 route: what to call, with the path's variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/message:send`.
    Send,
    /// `POST /v1/message:stream`.
    Stream,
    /// `GET /v1/tasks/{id}`.
    GetTask(String),
    /// `POST /v1/tasks/{id}:cancel`.
    Cancel(String),
    /// `GET|POST /v1/tasks/{id}:subscribe`.
    Subscribe(String),
    /// `POST /v1/tasks/{id}/pushNotificationConfigs`.
    CreateConfig(String),
    /// `GET /v1/tasks/{id}/pushNotificationConfigs`.
    ListConfigs(String),
    /// `GET /v1/tasks/{id}/pushNotificationConfigs/{cid}`.
    GetConfig(String, String),
    /// `DELETE /v1/tasks/{id}/pushNotificationConfigs/{cid}`.
    DeleteConfig(String, String),
    /// `GET /v1/card`.
    Card,
}

impl Route {
    /// Whether the request carries a body to read.
    pub fn has_body(&self) -> bool {
        matches!(
            self,
            Route::Send | Route::Stream | Route::Cancel(_) | Route::CreateConfig(_)
        )
    }
}

fn segment(s: &str) -> Option<String> {
    let decoded = percent_decode(s)?;
    (!decoded.is_empty() && !decoded.contains('/')).then_some(decoded)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The v0.3 route of `method` and `path`, if it is one.
pub fn match_route(method: &str, path: &str) -> Option<Route> {
    let rest = path.strip_prefix("/v1/")?;
    match (method, rest) {
        ("POST", "message:send") => return Some(Route::Send),
        ("POST", "message:stream") => return Some(Route::Stream),
        ("GET", "card") => return Some(Route::Card),
        _ => {}
    }
    let tail = rest.strip_prefix("tasks/")?;
    let parts: Vec<&str> = tail.split('/').collect();
    match (method, parts.as_slice()) {
        (_, [one]) => {
            if let Some(id) = one.strip_suffix(":cancel") {
                (method == "POST").then(|| segment(id).map(Route::Cancel))?
            } else if let Some(id) = one.strip_suffix(":subscribe") {
                matches!(method, "GET" | "POST").then(|| segment(id).map(Route::Subscribe))?
            } else {
                (method == "GET").then(|| segment(one).map(Route::GetTask))?
            }
        }
        ("POST", [id, "pushNotificationConfigs"]) => segment(id).map(Route::CreateConfig),
        ("GET", [id, "pushNotificationConfigs"]) => segment(id).map(Route::ListConfigs),
        ("GET", [id, "pushNotificationConfigs", cid]) => {
            Some(Route::GetConfig(segment(id)?, segment(cid)?))
        }
        ("DELETE", [id, "pushNotificationConfigs", cid]) => {
            Some(Route::DeleteConfig(segment(id)?, segment(cid)?))
        }
        _ => None,
    }
}

fn invalid(message: impl Into<String>) -> A2aError {
    A2aError::new(ErrorKind::InvalidParams, message)
}

fn parse<T: serde::de::DeserializeOwned + Default>(
    body: &[u8],
    limits: JsonLimits,
) -> Result<T, A2aError> {
    if body.trim_ascii().is_empty() {
        return Ok(T::default());
    }
    check_json(body, limits)?;
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            A2aError::new(ErrorKind::ParseError, format!("invalid JSON: {e}"))
        } else {
            invalid(format!("invalid body: {e}"))
        }
    })
}

/// The 1.0 request of a v0.3 route, its `query` pairs and `body` (read after [`check_json`]
/// within `limits`).
pub fn request(
    route: &Route,
    query: &[(String, String)],
    body: &[u8],
    limits: JsonLimits,
) -> Result<A2aRequest, A2aError> {
    Ok(match route {
        Route::Send => {
            A2aRequest::SendMessage(parse::<v03::SendMessageRequest>(body, limits)?.try_to_v1()?)
        }
        Route::Stream => A2aRequest::SendStreamingMessage(
            parse::<v03::SendMessageRequest>(body, limits)?.try_to_v1()?,
        ),
        Route::GetTask(id) => {
            let history = query
                .iter()
                .find(|(k, _)| k == "historyLength" || k == "history_length")
                .map(|(_, v)| {
                    v.parse::<i32>()
                        .ok()
                        .filter(|n| *n >= 0)
                        .ok_or_else(|| invalid(format!("historyLength {v:?} is not a count")))
                })
                .transpose()?
                .unwrap_or(0);
            A2aRequest::GetTask(
                v03::GetTaskRequest {
                    name: task_name(id),
                    history_length: history,
                }
                .try_to_v1()?,
            )
        }
        Route::Cancel(id) => A2aRequest::CancelTask(
            v03::CancelTaskRequest {
                name: task_name(id),
            }
            .try_to_v1()?,
        ),
        Route::Subscribe(id) => A2aRequest::SubscribeToTask(
            v03::TaskSubscriptionRequest {
                name: task_name(id),
            }
            .try_to_v1()?,
        ),
        Route::CreateConfig(id) => {
            // The v0.3 SDKs send `CreateTaskPushNotificationConfigRequest`; a bare
            // `TaskPushNotificationConfig` is read too. The task is the path's.
            let v: Value = if body.trim_ascii().is_empty() {
                Value::Object(Default::default())
            } else {
                check_json(body, limits)?;
                serde_json::from_slice(body).map_err(|e| {
                    A2aError::new(ErrorKind::ParseError, format!("invalid JSON: {e}"))
                })?
            };
            let mut req: v03::CreateTaskPushNotificationConfigRequest = if v.get("config").is_some()
            {
                serde_json::from_value(v).map_err(|e| invalid(format!("invalid body: {e}")))?
            } else {
                v03::CreateTaskPushNotificationConfigRequest {
                    config: Some(
                        serde_json::from_value(v)
                            .map_err(|e| invalid(format!("invalid body: {e}")))?,
                    ),
                    ..Default::default()
                }
            };
            req.parent = task_name(id);
            A2aRequest::CreateTaskPushNotificationConfig(req.try_to_v1()?)
        }
        Route::ListConfigs(id) => A2aRequest::ListTaskPushNotificationConfigs(
            v03::ListTaskPushNotificationConfigRequest {
                parent: task_name(id),
                ..Default::default()
            }
            .try_to_v1()?,
        ),
        Route::GetConfig(id, cid) => A2aRequest::GetTaskPushNotificationConfig(
            v03::GetTaskPushNotificationConfigRequest {
                name: config_name(id, cid),
            }
            .try_to_v1()?,
        ),
        Route::DeleteConfig(id, cid) => A2aRequest::DeleteTaskPushNotificationConfig(
            v03::DeleteTaskPushNotificationConfigRequest {
                name: config_name(id, cid),
            }
            .try_to_v1()?,
        ),
        Route::Card => A2aRequest::GetExtendedAgentCard(v03::GetAgentCardRequest {}.try_to_v1()?),
    })
}

/// A v0.3 HTTP+JSON answer.
pub enum Reply {
    /// A JSON body.
    Body(Vec<u8>),
    /// Events; each `data:` is [`event_body`].
    Stream(EventStream),
}

fn to_vec<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, A2aError> {
    serde_json::to_vec(v).map_err(|e| A2aError::internal(format!("encode: {e}")))
}

/// The `data:` of one streamed event: ProtoJSON of the v0.3 `StreamResponse`.
pub fn event_body(response: &pb::StreamResponse) -> Result<Vec<u8>, A2aError> {
    to_vec(&response.clone().to_v03())
}

/// The v0.3 body of a 1.0 answer.
pub fn reply(reply: A2aReply) -> Result<Reply, A2aError> {
    Ok(Reply::Body(match reply {
        A2aReply::SendMessage(r) => to_vec(&r.to_v03())?,
        A2aReply::SendStreamingMessage(events) | A2aReply::SubscribeToTask(events) => {
            return Ok(Reply::Stream(events));
        }
        A2aReply::GetTask(t) | A2aReply::CancelTask(t) => to_vec(&t.to_v03())?,
        A2aReply::CreateTaskPushNotificationConfig(c)
        | A2aReply::GetTaskPushNotificationConfig(c) => to_vec(&c.to_v03())?,
        A2aReply::ListTaskPushNotificationConfigs(l) => to_vec(&l.to_v03())?,
        A2aReply::DeleteTaskPushNotificationConfig(()) => b"{}".to_vec(),
        A2aReply::GetExtendedAgentCard(card) => to_vec(&card.to_v03())?,
        A2aReply::ListTasks(_) => {
            return Err(A2aError::new(
                ErrorKind::MethodNotFound,
                "v0.3 has no task list route",
            ));
        }
    }))
}

/// Client side: one v0.3 HTTP+JSON request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path under the interface's URL (`/v1/...`).
    pub path: String,
    /// Query parameters.
    pub query: Vec<(String, String)>,
    /// The JSON body, for routes that take one.
    pub body: Option<String>,
    /// Whether the answer is an SSE stream.
    pub stream: bool,
}

/// A path segment, percent-encoded but for RFC 3986's unreserved characters.
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn body_of<T: serde::Serialize>(v: &T) -> Result<Option<String>, A2aError> {
    serde_json::to_string(v)
        .map(Some)
        .map_err(|e| A2aError::internal(format!("encode: {e}")))
}

/// Client side: the v0.3 route, query and body of `call` (the v0.3 SDKs' forms: the cancel
/// body names the task, a push config is created with `CreateTaskPushNotificationConfigRequest`,
/// resubscription is a `GET`).
pub fn client_request(call: &Call) -> Result<HttpCall, A2aError> {
    let task = encode_segment(call.task_id());
    let config = encode_segment(call.config_id());
    let http = |method, path: String, body, stream| HttpCall {
        method,
        path,
        query: Vec::new(),
        body,
        stream,
    };
    Ok(match call {
        Call::Send(r) => http("POST", "/v1/message:send".into(), body_of(r)?, false),
        Call::Stream(r) => http("POST", "/v1/message:stream".into(), body_of(r)?, true),
        Call::GetTask(r) => {
            let mut c = http("GET", format!("/v1/tasks/{task}"), None, false);
            if r.history_length > 0 {
                c.query
                    .push(("historyLength".to_owned(), r.history_length.to_string()));
            }
            c
        }
        Call::Cancel(r) => http(
            "POST",
            format!("/v1/tasks/{task}:cancel"),
            body_of(r)?,
            false,
        ),
        Call::Subscribe(_) => http("GET", format!("/v1/tasks/{task}:subscribe"), None, true),
        Call::CreateConfig(r) => http(
            "POST",
            format!("/v1/tasks/{task}/pushNotificationConfigs"),
            body_of(r)?,
            false,
        ),
        Call::GetConfig(_) => http(
            "GET",
            format!("/v1/tasks/{task}/pushNotificationConfigs/{config}"),
            None,
            false,
        ),
        Call::ListConfigs(_) => http(
            "GET",
            format!("/v1/tasks/{task}/pushNotificationConfigs"),
            None,
            false,
        ),
        Call::DeleteConfig(_) => http(
            "DELETE",
            format!("/v1/tasks/{task}/pushNotificationConfigs/{config}"),
            None,
            false,
        ),
        Call::Card(_) => http("GET", "/v1/card".into(), None, false),
    })
}

fn unreadable(what: &str, e: impl std::fmt::Display) -> A2aError {
    A2aError::new(
        ErrorKind::InvalidAgentResponse,
        format!("the v0.3 agent's {what}: {e}"),
    )
}

fn read<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, A2aError> {
    let body: &[u8] = if body.trim_ascii().is_empty() {
        b"{}"
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| unreadable("answer", e))
}

/// Client side: the body of a successful answer to a unary `call`, read as v0.3.
pub fn client_answer(call: &Call, body: &[u8]) -> Result<Answer, A2aError> {
    Ok(match call {
        Call::Send(_) => Answer::SendMessage(read(body)?),
        Call::GetTask(_) | Call::Cancel(_) => Answer::Task(read(body)?),
        Call::CreateConfig(_) | Call::GetConfig(_) => Answer::Config(read(body)?),
        Call::ListConfigs(_) => {
            // The response message; a bare array is read too.
            let v: Value = read(body)?;
            let list: v03::ListTaskPushNotificationConfigResponse = match v {
                Value::Array(items) => v03::ListTaskPushNotificationConfigResponse {
                    configs: serde_json::from_value(Value::Array(items))
                        .map_err(|e| unreadable("answer", e))?,
                    next_page_token: String::new(),
                },
                other => serde_json::from_value(other).map_err(|e| unreadable("answer", e))?,
            };
            Answer::Configs(list.configs)
        }
        Call::DeleteConfig(_) => Answer::Empty,
        Call::Card(_) => Answer::Card(Box::new(crate::card::from_json(read(body)?)?)),
        Call::Stream(_) | Call::Subscribe(_) => {
            return Err(A2aError::internal("a streaming call has no unary answer"));
        }
    })
}

/// Client side: the `data:` of one streamed event (ProtoJSON of the v0.3 `StreamResponse`).
pub fn client_event(data: &str) -> Result<v03::StreamResponse, A2aError> {
    serde_json::from_str(data).map_err(|e| unreadable("stream event", e))
}

/// Client side: a v0.3 HTTP+JSON error. Bodies are `{code, message, data}` (ours, the JS
/// SDK's) or `{message}` (the Python SDK's); without a code the HTTP status decides, read as
/// the v0.3 Python SDK maps its errors (409 not cancelable, 422 invalid params, 501
/// unsupported, 502 invalid agent response, 404 task not found when the body has a message,
/// else no such route; 405 no such method on that route).
pub fn client_error(status: u16, body: &[u8]) -> A2aError {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    let v = v.as_ref().filter(|v| v.is_object());
    let code = v.and_then(|v| v.get("code")).and_then(Value::as_i64);
    let message = v.and_then(|v| v.get("message")).and_then(Value::as_str);
    let data = v.and_then(|v| v.get("data"));
    let has_reason = data.and_then(|d| d.get("reason")).is_some();
    if code.is_some() || has_reason {
        return crate::client::error_from_code(code, message, data);
    }
    let kind = match status {
        404 if message.is_some() => ErrorKind::TaskNotFound,
        // No such route, or not with this method (the v0.3 Python SDK serves no DELETE of
        // push configs): either way the agent does not offer the operation there.
        404 | 405 => ErrorKind::MethodNotFound,
        409 => ErrorKind::TaskNotCancelable,
        422 => ErrorKind::InvalidParams,
        501 => ErrorKind::UnsupportedOperation,
        502 => ErrorKind::InvalidAgentResponse,
        415 => ErrorKind::ContentTypeNotSupported,
        other => ErrorKind::from_http(other).unwrap_or(ErrorKind::Internal),
    };
    let text = match message {
        Some(m) => m.to_owned(),
        None => format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ),
    };
    A2aError::new(kind, text)
}
