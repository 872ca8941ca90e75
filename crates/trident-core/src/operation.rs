//! [`Operation`]: the RPCs as data, and [`dispatch_json`], the one place that turns a JSON
//! request of any operation into an [`A2aService`] call. The JSON-RPC and HTTP+JSON bindings
//! differ only in how they find the operation and where its fields come from.

use trident_proto as pb;

use crate::{A2aError, A2aService, CallContext, ErrorKind, EventStream};

/// One RPC of `lf.a2a.v1.A2AService`. `name()` is also the JSON-RPC method name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `SendMessage`
    SendMessage,
    /// `SendStreamingMessage`
    SendStreamingMessage,
    /// `GetTask`
    GetTask,
    /// `ListTasks`
    ListTasks,
    /// `CancelTask`
    CancelTask,
    /// `SubscribeToTask`
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`
    ListTaskPushNotificationConfigs,
    /// `GetExtendedAgentCard`
    GetExtendedAgentCard,
    /// `DeleteTaskPushNotificationConfig`
    DeleteTaskPushNotificationConfig,
}

impl Operation {
    /// Every operation, in proto declaration order.
    pub const ALL: [Operation; 11] = [
        Operation::SendMessage,
        Operation::SendStreamingMessage,
        Operation::GetTask,
        Operation::ListTasks,
        Operation::CancelTask,
        Operation::SubscribeToTask,
        Operation::CreateTaskPushNotificationConfig,
        Operation::GetTaskPushNotificationConfig,
        Operation::ListTaskPushNotificationConfigs,
        Operation::GetExtendedAgentCard,
        Operation::DeleteTaskPushNotificationConfig,
    ];

    /// The RPC name (and JSON-RPC method name).
    pub const fn name(self) -> &'static str {
        match self {
            Operation::SendMessage => "SendMessage",
            Operation::SendStreamingMessage => "SendStreamingMessage",
            Operation::GetTask => "GetTask",
            Operation::ListTasks => "ListTasks",
            Operation::CancelTask => "CancelTask",
            Operation::SubscribeToTask => "SubscribeToTask",
            Operation::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Operation::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Operation::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Operation::GetExtendedAgentCard => "GetExtendedAgentCard",
            Operation::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
        }
    }

    /// The operation named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation answers with a stream.
    pub const fn is_streaming(self) -> bool {
        matches!(
            self,
            Operation::SendStreamingMessage | Operation::SubscribeToTask
        )
    }
}

/// Request fields bound outside the JSON body (HTTP+JSON path variables). They override the
/// body's values.
#[derive(Debug, Clone, Default)]
pub struct PathVars {
    /// `{id}`: a task id, or a push configuration id in `…/pushNotificationConfigs/{id}`.
    pub id: Option<String>,
    /// `{task_id}`.
    pub task_id: Option<String>,
}

/// What an operation answers.
pub enum JsonReply {
    /// The ProtoJSON of the response message.
    Unary(Vec<u8>),
    /// The events of a streaming operation.
    Stream(EventStream),
}

impl std::fmt::Debug for JsonReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonReply::Unary(b) => f
                .debug_tuple("Unary")
                .field(&String::from_utf8_lossy(b))
                .finish(),
            JsonReply::Stream(_) => f.write_str("Stream"),
        }
    }
}

/// JSON values (objects, arrays and their elements) one request body may hold. Decoding
/// allocates per value — a `Part` costs some 280 bytes decoded for 13 bytes of JSON — so a
/// 4 MiB body of tiny parts would take ~80 MiB before any limit on parts could apply; with
/// this bound decoding one body costs at most a few MiB whatever its shape.
pub const MAX_JSON_VALUES: usize = 65_536;

/// Nesting depth of a request body's JSON.
pub const MAX_JSON_DEPTH: usize = 64;

/// Counts what decoding `json` would allocate — objects, arrays and their elements outside
/// strings — without allocating, and refuses a body over [`MAX_JSON_VALUES`] or nested
/// deeper than [`MAX_JSON_DEPTH`] before it is decoded. Malformed JSON passes: the parser
/// reports it properly.
fn check_json_shape(json: &[u8]) -> Result<(), A2aError> {
    let (mut values, mut depth, mut max_depth) = (0usize, 0usize, 0usize);
    let mut in_string = false;
    let mut escaped = false;
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                values += 1;
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => values += 1,
            _ => {}
        }
    }
    if values > MAX_JSON_VALUES {
        return Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!("the request holds more than {MAX_JSON_VALUES} JSON values"),
        )
        .with_meta("maxValues", MAX_JSON_VALUES.to_string()));
    }
    if max_depth > MAX_JSON_DEPTH {
        return Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!("the request nests JSON deeper than {MAX_JSON_DEPTH} levels"),
        )
        .with_meta("maxDepth", MAX_JSON_DEPTH.to_string()));
    }
    Ok(())
}

/// Parses the ProtoJSON of a request; an empty body or `null` is the empty request. Malformed
/// JSON is `ParseError`, well-formed JSON of the wrong shape `InvalidParams`, and so is a body
/// whose decoding would allocate out of proportion to its size ([`MAX_JSON_VALUES`],
/// [`MAX_JSON_DEPTH`]).
pub fn parse_request<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, A2aError> {
    let trimmed = body.trim_ascii();
    if trimmed.is_empty() || trimmed == b"null" {
        return Ok(T::default());
    }
    check_json_shape(trimmed)?;
    serde_json::from_slice(trimmed).map_err(|e| match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            A2aError::new(ErrorKind::ParseError, format!("invalid JSON: {e}"))
        }
        _ => A2aError::new(ErrorKind::InvalidParams, format!("invalid parameters: {e}")),
    })
}

/// Serializes a response as ProtoJSON.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, A2aError> {
    serde_json::to_vec(value)
        .map_err(|e| A2aError::internal(format!("cannot encode the response: {e}")))
}

fn bind(field: &mut String, value: Option<String>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// Decodes `body` as the request of `op`, binds `vars`, calls `svc`, encodes the answer.
pub async fn dispatch_json(
    svc: &dyn A2aService,
    cx: &CallContext,
    op: Operation,
    body: &[u8],
    vars: PathVars,
) -> Result<JsonReply, A2aError> {
    use JsonReply::{Stream, Unary};
    Ok(match op {
        Operation::SendMessage => {
            Unary(to_json(&svc.send_message(cx, parse_request(body)?).await?)?)
        }
        Operation::SendStreamingMessage => {
            Stream(svc.send_streaming_message(cx, parse_request(body)?).await?)
        }
        Operation::GetTask => {
            let mut r: pb::GetTaskRequest = parse_request(body)?;
            bind(&mut r.id, vars.id);
            Unary(to_json(&svc.get_task(cx, r).await?)?)
        }
        Operation::ListTasks => Unary(to_json(&svc.list_tasks(cx, parse_request(body)?).await?)?),
        Operation::CancelTask => {
            let mut r: pb::CancelTaskRequest = parse_request(body)?;
            bind(&mut r.id, vars.id);
            Unary(to_json(&svc.cancel_task(cx, r).await?)?)
        }
        Operation::SubscribeToTask => {
            let mut r: pb::SubscribeToTaskRequest = parse_request(body)?;
            bind(&mut r.id, vars.id);
            Stream(svc.subscribe_to_task(cx, r).await?)
        }
        Operation::CreateTaskPushNotificationConfig => {
            let mut r: pb::TaskPushNotificationConfig = parse_request(body)?;
            bind(&mut r.task_id, vars.task_id);
            Unary(to_json(
                &svc.create_task_push_notification_config(cx, r).await?,
            )?)
        }
        Operation::GetTaskPushNotificationConfig => {
            let mut r: pb::GetTaskPushNotificationConfigRequest = parse_request(body)?;
            bind(&mut r.task_id, vars.task_id);
            bind(&mut r.id, vars.id);
            Unary(to_json(
                &svc.get_task_push_notification_config(cx, r).await?,
            )?)
        }
        Operation::ListTaskPushNotificationConfigs => {
            let mut r: pb::ListTaskPushNotificationConfigsRequest = parse_request(body)?;
            bind(&mut r.task_id, vars.task_id);
            Unary(to_json(
                &svc.list_task_push_notification_configs(cx, r).await?,
            )?)
        }
        Operation::GetExtendedAgentCard => Unary(to_json(
            &svc.get_extended_agent_card(cx, parse_request(body)?)
                .await?,
        )?),
        Operation::DeleteTaskPushNotificationConfig => {
            let mut r: pb::DeleteTaskPushNotificationConfigRequest = parse_request(body)?;
            bind(&mut r.task_id, vars.task_id);
            bind(&mut r.id, vars.id);
            svc.delete_task_push_notification_config(cx, r).await?;
            Unary(b"{}".to_vec())
        }
    })
}

#[cfg(test)]
mod tests;
