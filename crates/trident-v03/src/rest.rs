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
use trident_core::{A2aError, A2aReply, A2aRequest, ErrorKind, EventStream};
use trident_proto as pb;
use trident_proto::v03;

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

fn parse<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, A2aError> {
    if body.trim_ascii().is_empty() {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            A2aError::new(ErrorKind::ParseError, format!("invalid JSON: {e}"))
        } else {
            invalid(format!("invalid body: {e}"))
        }
    })
}

/// The 1.0 request of a v0.3 route, its `query` pairs and `body`.
pub fn request(
    route: &Route,
    query: &[(String, String)],
    body: &[u8],
) -> Result<A2aRequest, A2aError> {
    Ok(match route {
        Route::Send => {
            A2aRequest::SendMessage(parse::<v03::SendMessageRequest>(body)?.try_to_v1()?)
        }
        Route::Stream => {
            A2aRequest::SendStreamingMessage(parse::<v03::SendMessageRequest>(body)?.try_to_v1()?)
        }
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
