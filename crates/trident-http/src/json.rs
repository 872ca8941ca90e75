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
    A2aError, A2aReply, A2aRequest, A2aService, CallContext, ErrorKind, EventStream,
    MAX_JSON_DEPTH, MAX_JSON_VALUES, Operation,
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
        pub fn request_from_json(op: Operation, body: &[u8]) -> Result<A2aRequest, A2aError> {
            Ok(match op {
                $(Operation::$op => A2aRequest::$op(parse_request::<pb::$req>(body)?),)*
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

/// Counts what decoding `json` would allocate — objects, arrays and their elements outside
/// strings — without allocating, and refuses a body over [`MAX_JSON_VALUES`] or nested
/// deeper than [`MAX_JSON_DEPTH`] before it is decoded. Malformed JSON passes: the parser
/// reports it properly.
fn check_json_shape(json: &[u8]) -> Result<(), A2aError> {
    let (values, max_depth) = json_shape(json);
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

/// The values (objects, arrays and their elements outside strings) and the deepest nesting
/// of `json`, in one pass; malformed JSON is counted as far as it goes.
fn json_shape(json: &[u8]) -> (usize, usize) {
    let (mut values, mut depth, mut max_depth) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while let Some(&b) = json.get(i) {
        match b {
            b'"' => {
                // Skip the string: up to the next quote not escaped by a backslash.
                i += 1;
                while let Some(&c) = json.get(i) {
                    match c {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b'{' | b'[' => {
                values += 1;
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => values += 1,
            _ => {}
        }
        i += 1;
    }
    (values, max_depth)
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

/// Decodes `body` as the request of `op`, binds `vars`, calls `svc`, encodes the answer.
pub async fn dispatch_json(
    svc: &dyn A2aService,
    cx: &CallContext,
    op: Operation,
    body: &[u8],
    vars: PathVars,
) -> Result<JsonReply, A2aError> {
    let mut req = request_from_json(op, body)?;
    bind_path(&mut req, vars);
    reply_into_json(req.call(svc, cx).await?)
}

#[cfg(test)]
mod tests;
