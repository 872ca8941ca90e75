//! The JSON dispatch both JSON bindings share: [`dispatch_json`] turns the ProtoJSON request
//! of any operation into one [`A2aService`] call and its answer back into ProtoJSON (or
//! events). JSON-RPC and HTTP+JSON differ only in how they find the operation (method name vs
//! route) and where fields come from (params vs body, path and query: [`PathVars`]).
//!
//! Written per RPC from the one list, `trident_proto::for_each_rpc!`: decoding a request
//! ([`request_from_json`]) and encoding an answer ([`reply_into_json`]) are generated, and
//! binding path variables ([`bind_path`]) is an exhaustive match, so an RPC added to the proto
//! fails to compile here until it is handled.

use trident_core::{
    A2aError, A2aReply, A2aRequest, A2aService, CallContext, ErrorKind, EventStream, JsonLimits,
    Operation, check_json,
};
use trident_proto as pb;

/// An answer of `kind` as JSON.
macro_rules! reply_json {
    (unary, $r:expr) => {
        JsonReply::Unary(to_json(&$r)?)
    };
    (stream, $r:expr) => {
        JsonReply::Stream($r)
    };
    (empty, $r:expr) => {{
        let () = $r;
        JsonReply::Unary(b"{}".to_vec())
    }};
}

macro_rules! json_rpcs {
    ($({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident })*) => {
        /// Parses `body` as the ProtoJSON request of `op` ([`parse_request`]).
        pub fn request_from_json(
            op: Operation,
            body: &[u8],
            limits: JsonLimits,
        ) -> Result<A2aRequest, A2aError> {
            Ok(match op {
                $(Operation::$op => A2aRequest::$op(parse_request::<pb::$req>(body, limits)?),)*
            })
        }

        /// The answer as ProtoJSON (`{}` for `google.protobuf.Empty`), or its events.
        pub fn reply_into_json(reply: A2aReply) -> Result<JsonReply, A2aError> {
            Ok(match reply {
                $(A2aReply::$op(r) => reply_json!($kind, r),)*
            })
        }
    };
}

trident_proto::for_each_rpc!(json_rpcs);

/// Request fields bound outside the JSON body (HTTP+JSON path variables). They override the
/// body's values.
#[derive(Debug, Clone, Default)]
pub struct PathVars {
    /// `{id}`: a task id, or a push configuration id in `…/pushNotificationConfigs/{id}`.
    pub id: Option<String>,
    /// `{task_id}`.
    pub task_id: Option<String>,
}

/// Binds HTTP+JSON path variables into the request's fields (they override the body's).
pub fn bind_path(req: &mut A2aRequest, vars: PathVars) {
    let PathVars { id, task_id } = vars;
    match req {
        A2aRequest::GetTask(r) => bind(&mut r.id, id),
        A2aRequest::CancelTask(r) => bind(&mut r.id, id),
        A2aRequest::SubscribeToTask(r) => bind(&mut r.id, id),
        A2aRequest::CreateTaskPushNotificationConfig(r) => bind(&mut r.task_id, task_id),
        A2aRequest::GetTaskPushNotificationConfig(r) => {
            bind(&mut r.task_id, task_id);
            bind(&mut r.id, id);
        }
        A2aRequest::ListTaskPushNotificationConfigs(r) => bind(&mut r.task_id, task_id),
        A2aRequest::DeleteTaskPushNotificationConfig(r) => {
            bind(&mut r.task_id, task_id);
            bind(&mut r.id, id);
        }
        A2aRequest::SendMessage(_)
        | A2aRequest::SendStreamingMessage(_)
        | A2aRequest::ListTasks(_)
        | A2aRequest::GetExtendedAgentCard(_) => {}
    }
}

fn bind(field: &mut String, value: Option<String>) {
    if let Some(v) = value {
        *field = v;
    }
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

/// Parses the ProtoJSON of a request; an empty body or `null` is the empty request. Malformed
/// JSON is `ParseError`, well-formed JSON of the wrong shape `InvalidParams`, and so is a body
/// that [`check_json`] refuses before it is decoded: one whose decoding would allocate out of
/// proportion to its size ([`MAX_JSON_VALUES`](trident_core::MAX_JSON_VALUES),
/// [`MAX_JSON_DEPTH`](trident_core::MAX_JSON_DEPTH), `limits`), or with an object that has a
/// key twice.
pub fn parse_request<T: serde::de::DeserializeOwned + Default>(
    body: &[u8],
    limits: JsonLimits,
) -> Result<T, A2aError> {
    let trimmed = body.trim_ascii();
    if trimmed.is_empty() || trimmed == b"null" {
        return Ok(T::default());
    }
    check_json(trimmed, limits)?;
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

/// Decodes `body` as the request of `op` (within `limits`), binds `vars`, calls `svc`,
/// encodes the answer.
pub async fn dispatch_json(
    svc: &dyn A2aService,
    cx: &CallContext,
    op: Operation,
    body: &[u8],
    vars: PathVars,
    limits: JsonLimits,
) -> Result<JsonReply, A2aError> {
    let mut req = request_from_json(op, body, limits)?;
    bind_path(&mut req, vars);
    reply_into_json(svc.call(cx, req).await?)
}

#[cfg(test)]
mod tests;
