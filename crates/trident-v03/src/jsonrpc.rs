//! v0.3's JSON-RPC methods: their params read into the one 1.0 [`A2aRequest`] (through the
//! v0.3 model and [`TryToV1`]) and the 1.0 [`A2aReply`] written back as v0.3 results.

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use trident_core::{A2aError, A2aReply, A2aRequest, ErrorKind, JsonLimits, Operation, check_json};
use trident_proto as pb;
use trident_proto::v03;

use crate::client::{Answer, Call};
use crate::convert::{ToV03, TryToV1, config_name, task_name};
use crate::json::{Shape, decode, encode, string_field};

/// A v0.3 JSON-RPC method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `message/send` → `SendMessage`.
    MessageSend,
    /// `message/stream` → `SendStreamingMessage`.
    MessageStream,
    /// `tasks/get` → `GetTask`.
    TasksGet,
    /// `tasks/cancel` → `CancelTask`.
    TasksCancel,
    /// `tasks/resubscribe` → `SubscribeToTask`.
    TasksResubscribe,
    /// `tasks/pushNotificationConfig/set` → `CreateTaskPushNotificationConfig`.
    PushConfigSet,
    /// `tasks/pushNotificationConfig/get` → `GetTaskPushNotificationConfig`.
    PushConfigGet,
    /// `tasks/pushNotificationConfig/list` → `ListTaskPushNotificationConfigs`.
    PushConfigList,
    /// `tasks/pushNotificationConfig/delete` → `DeleteTaskPushNotificationConfig`.
    PushConfigDelete,
    /// `agent/getAuthenticatedExtendedCard` → `GetExtendedAgentCard`.
    GetExtendedCard,
}

impl Method {
    /// Every v0.3 method.
    pub const ALL: [Method; 10] = [
        Method::MessageSend,
        Method::MessageStream,
        Method::TasksGet,
        Method::TasksCancel,
        Method::TasksResubscribe,
        Method::PushConfigSet,
        Method::PushConfigGet,
        Method::PushConfigList,
        Method::PushConfigDelete,
        Method::GetExtendedCard,
    ];

    /// The v0.3 method name.
    pub const fn name(self) -> &'static str {
        match self {
            Method::MessageSend => "message/send",
            Method::MessageStream => "message/stream",
            Method::TasksGet => "tasks/get",
            Method::TasksCancel => "tasks/cancel",
            Method::TasksResubscribe => "tasks/resubscribe",
            Method::PushConfigSet => "tasks/pushNotificationConfig/set",
            Method::PushConfigGet => "tasks/pushNotificationConfig/get",
            Method::PushConfigList => "tasks/pushNotificationConfig/list",
            Method::PushConfigDelete => "tasks/pushNotificationConfig/delete",
            Method::GetExtendedCard => "agent/getAuthenticatedExtendedCard",
        }
    }

    /// The method called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The 1.0 operation this method is.
    pub const fn operation(self) -> Operation {
        match self {
            Method::MessageSend => Operation::SendMessage,
            Method::MessageStream => Operation::SendStreamingMessage,
            Method::TasksGet => Operation::GetTask,
            Method::TasksCancel => Operation::CancelTask,
            Method::TasksResubscribe => Operation::SubscribeToTask,
            Method::PushConfigSet => Operation::CreateTaskPushNotificationConfig,
            Method::PushConfigGet => Operation::GetTaskPushNotificationConfig,
            Method::PushConfigList => Operation::ListTaskPushNotificationConfigs,
            Method::PushConfigDelete => Operation::DeleteTaskPushNotificationConfig,
            Method::GetExtendedCard => Operation::GetExtendedAgentCard,
        }
    }
}

fn invalid(message: impl Into<String>) -> A2aError {
    A2aError::new(ErrorKind::InvalidParams, message)
}

/// An optional integer member (`historyLength`).
fn opt_i32(v: &Value, key: &str) -> Result<i32, A2aError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(n) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .ok_or_else(|| invalid(format!("\"{key}\" must be a non-negative integer"))),
    }
}

/// An optional string member.
fn opt_string(v: &Value, key: &str) -> Result<Option<String>, A2aError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("\"{key}\" must be a string"))),
    }
}

/// Reads the `params` of a v0.3 `method` into the 1.0 request, after [`check_json`] (within
/// `limits`, no key twice in an object).
pub fn request(method: Method, params: &[u8], limits: JsonLimits) -> Result<A2aRequest, A2aError> {
    check_json(params, limits)?;
    let v: Value = serde_json::from_slice(params)
        .map_err(|e| invalid(format!("params are not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(invalid("params must be an object"));
    }
    Ok(match method {
        Method::MessageSend | Method::MessageStream => {
            let r: v03::SendMessageRequest = decode(Shape::SendParams, v)?;
            let r = r.try_to_v1()?;
            if method == Method::MessageSend {
                A2aRequest::SendMessage(r)
            } else {
                A2aRequest::SendStreamingMessage(r)
            }
        }
        Method::TasksGet => A2aRequest::GetTask(
            v03::GetTaskRequest {
                name: task_name(&string_field(&v, "id")?),
                history_length: opt_i32(&v, "historyLength")?,
            }
            .try_to_v1()?,
        ),
        Method::TasksCancel => A2aRequest::CancelTask(
            v03::CancelTaskRequest {
                name: task_name(&string_field(&v, "id")?),
            }
            .try_to_v1()?,
        ),
        Method::TasksResubscribe => A2aRequest::SubscribeToTask(
            v03::TaskSubscriptionRequest {
                name: task_name(&string_field(&v, "id")?),
            }
            .try_to_v1()?,
        ),
        Method::PushConfigSet => {
            // The task is `taskId`'s (the config's own `id` may be absent: v0.3 allowed it).
            let parent = task_name(&string_field(&v, "taskId")?);
            let config: v03::TaskPushNotificationConfig = decode(Shape::TaskPushConfig, v)?;
            A2aRequest::CreateTaskPushNotificationConfig(
                v03::CreateTaskPushNotificationConfigRequest {
                    parent,
                    config_id: String::new(),
                    config: Some(config),
                }
                .try_to_v1()?,
            )
        }
        Method::PushConfigGet => {
            let task_id = string_field(&v, "id")?;
            // v0.3 allowed leaving the config id out: the config created without an id, whose
            // id is the task's.
            let config_id = opt_string(&v, "pushNotificationConfigId")?
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| task_id.clone());
            A2aRequest::GetTaskPushNotificationConfig(
                v03::GetTaskPushNotificationConfigRequest {
                    name: config_name(&task_id, &config_id),
                }
                .try_to_v1()?,
            )
        }
        Method::PushConfigList => A2aRequest::ListTaskPushNotificationConfigs(
            v03::ListTaskPushNotificationConfigRequest {
                parent: task_name(&string_field(&v, "id")?),
                ..Default::default()
            }
            .try_to_v1()?,
        ),
        Method::PushConfigDelete => A2aRequest::DeleteTaskPushNotificationConfig(
            v03::DeleteTaskPushNotificationConfigRequest {
                name: config_name(
                    &string_field(&v, "id")?,
                    &string_field(&v, "pushNotificationConfigId")?,
                ),
            }
            .try_to_v1()?,
        ),
        Method::GetExtendedCard => {
            A2aRequest::GetExtendedAgentCard(v03::GetAgentCardRequest {}.try_to_v1()?)
        }
    })
}

/// A v0.3 JSON-RPC answer: a `result`, or (streaming methods) the `result` of each event with
/// its sequence number.
pub enum Reply {
    /// The `result` member.
    Unary(Value),
    /// One `result` per event.
    Stream(BoxStream<'static, Result<(Option<u64>, Value), A2aError>>),
}

/// The v0.3 form of a streamed event: the bare object with its `kind`.
pub fn event(response: &pb::StreamResponse) -> Result<Value, A2aError> {
    encode(Shape::Event, &response.clone().to_v03())
}

/// Writes the 1.0 answer as v0.3 results.
pub fn reply(reply: A2aReply) -> Result<Reply, A2aError> {
    Ok(Reply::Unary(match reply {
        A2aReply::SendMessage(r) => encode(Shape::TaskOrMessage, &r.to_v03())?,
        A2aReply::SendStreamingMessage(events) | A2aReply::SubscribeToTask(events) => {
            return Ok(Reply::Stream(
                events
                    .map(|item| item.and_then(|ev| Ok((ev.seq, event(&ev.response)?))))
                    .boxed(),
            ));
        }
        A2aReply::GetTask(t) | A2aReply::CancelTask(t) => encode(Shape::Task, &t.to_v03())?,
        A2aReply::CreateTaskPushNotificationConfig(c)
        | A2aReply::GetTaskPushNotificationConfig(c) => encode(Shape::TaskPushConfig, &c.to_v03())?,
        A2aReply::ListTaskPushNotificationConfigs(list) => {
            let items = list
                .configs
                .into_iter()
                .map(|c| encode(Shape::TaskPushConfig, &c.to_v03()))
                .collect::<Result<Vec<_>, _>>()?;
            Value::Array(items)
        }
        A2aReply::DeleteTaskPushNotificationConfig(()) => Value::Null,
        A2aReply::GetExtendedAgentCard(card) => crate::card::json(&card.to_v03())?,
        A2aReply::ListTasks(_) => {
            return Err(A2aError::new(
                ErrorKind::MethodNotFound,
                "v0.3 has no tasks/list method",
            ));
        }
    }))
}

/// The v0.3 JSON-RPC error envelope echoing `id_json` (the id as written).
pub fn error_envelope(id_json: &str, e: &A2aError) -> String {
    let object = crate::error::error_object(e);
    format!(r#"{{"jsonrpc":"2.0","id":{id_json},"error":{object}}}"#)
}

/// The v0.3 JSON-RPC success envelope echoing `id_json`.
pub fn success_envelope(id_json: &str, result: &Value) -> String {
    let result = json!(result);
    format!(r#"{{"jsonrpc":"2.0","id":{id_json},"result":{result}}}"#)
}

/// The agent's answer could not be read as v0.3.
fn unreadable(what: &str, e: A2aError) -> A2aError {
    A2aError::new(
        ErrorKind::InvalidAgentResponse,
        format!("the v0.3 agent's {what}: {}", e.message()),
    )
}

/// Client side: the v0.3 method and `params` of `call`.
pub fn client_params(call: &Call) -> Result<(Method, Value), A2aError> {
    let id = call.task_id();
    Ok(match call {
        Call::Send(r) => (Method::MessageSend, encode(Shape::SendParams, r)?),
        Call::Stream(r) => (Method::MessageStream, encode(Shape::SendParams, r)?),
        Call::GetTask(r) => {
            let mut params = json!({ "id": id });
            if r.history_length > 0 {
                params["historyLength"] = json!(r.history_length);
            }
            (Method::TasksGet, params)
        }
        Call::Cancel(_) => (Method::TasksCancel, json!({ "id": id })),
        Call::Subscribe(_) => (Method::TasksResubscribe, json!({ "id": id })),
        Call::CreateConfig(r) => {
            let config = r
                .config
                .as_ref()
                .and_then(|c| c.push_notification_config.clone())
                .unwrap_or_default();
            (
                Method::PushConfigSet,
                json!({ "taskId": id, "pushNotificationConfig": crate::json::push_config(&config)? }),
            )
        }
        Call::GetConfig(_) => (
            Method::PushConfigGet,
            json!({ "id": id, "pushNotificationConfigId": call.config_id() }),
        ),
        Call::ListConfigs(_) => (Method::PushConfigList, json!({ "id": id })),
        Call::DeleteConfig(_) => (
            Method::PushConfigDelete,
            json!({ "id": id, "pushNotificationConfigId": call.config_id() }),
        ),
        Call::Card(_) => (Method::GetExtendedCard, json!({})),
    })
}

/// Client side: the `result` of a unary `call`, read as v0.3.
pub fn client_answer(call: &Call, result: Value) -> Result<Answer, A2aError> {
    let read = |e| unreadable("result", e);
    Ok(match call {
        Call::Send(_) => Answer::SendMessage(decode(Shape::TaskOrMessage, result).map_err(read)?),
        Call::GetTask(_) | Call::Cancel(_) => {
            Answer::Task(decode(Shape::Task, result).map_err(read)?)
        }
        Call::CreateConfig(_) | Call::GetConfig(_) => {
            Answer::Config(decode_config(call, result).map_err(read)?)
        }
        Call::ListConfigs(_) => {
            let items = match result {
                Value::Array(items) => items,
                Value::Null => Vec::new(),
                _ => return Err(read(A2aError::internal("a config list must be an array"))),
            };
            Answer::Configs(
                items
                    .into_iter()
                    .map(|c| decode_config(call, c))
                    .collect::<Result<_, _>>()
                    .map_err(read)?,
            )
        }
        Call::DeleteConfig(_) => Answer::Empty,
        Call::Card(_) => Answer::Card(Box::new(
            crate::card::from_json(result).map_err(|e| unreadable("card", e))?,
        )),
        Call::Stream(_) | Call::Subscribe(_) => {
            return Err(A2aError::internal("a streaming call has no unary answer"));
        }
    })
}

/// A config result: `{taskId, pushNotificationConfig}`; an agent that leaves `taskId` out
/// answered about the task asked.
fn decode_config(call: &Call, mut v: Value) -> Result<v03::TaskPushNotificationConfig, A2aError> {
    if let Some(m) = v.as_object_mut()
        && !matches!(m.get("taskId"), Some(Value::String(s)) if !s.is_empty())
    {
        m.insert("taskId".to_owned(), json!(call.task_id()));
    }
    decode(Shape::TaskPushConfig, v)
}

/// Client side: one streamed `result` (a bare event with its `kind`).
pub fn client_event(result: Value) -> Result<v03::StreamResponse, A2aError> {
    decode(Shape::Event, result).map_err(|e| unreadable("stream event", e))
}

/// Client side: a v0.3 JSON-RPC error object (code, message, free-form `data`).
pub fn client_error(error: &Value) -> A2aError {
    crate::client::error_from_code(
        error.get("code").and_then(Value::as_i64),
        error.get("message").and_then(Value::as_str),
        error.get("data"),
    )
}
