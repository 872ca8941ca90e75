//! v0.3's error forms, derived from the one [`ErrorKind`] table ([`ErrorKind::wire`]).
//!
//! v0.3 has the same JSON-RPC codes as 1.0 for everything it knows (-32001…-32007, -32007 being
//! v0.3's `AuthenticatedExtendedCardNotConfiguredError`); the two errors 1.0 added are sent as
//! the generic error closest to them. Its `error.data` is a free-form object (we send the
//! ErrorInfo reason and metadata there); its HTTP+JSON errors are `{code, message, data}`
//! bodies (the JS SDK's form; the Python SDK reads only the status and `message`).

use serde_json::{Map, Value, json};
use trident_core::{A2aError, ErrorKind};

/// The v0.3 JSON-RPC code of `kind`.
pub fn jsonrpc_code(kind: ErrorKind) -> i32 {
    match kind {
        // -32008 and -32009 are 1.0's: a v0.3 client knows neither.
        ErrorKind::ExtensionSupportRequired | ErrorKind::VersionNotSupported => {
            ErrorKind::InvalidRequest.wire().jsonrpc
        }
        other => other.wire().jsonrpc,
    }
}

/// The free-form v0.3 `error.data`: `{"reason": …, <metadata>…}`.
pub fn error_data(e: &A2aError) -> Value {
    let mut data = Map::new();
    data.insert("reason".to_owned(), json!(e.wire().reason));
    for (k, v) in e.metadata() {
        data.insert(k.clone(), json!(v));
    }
    if !e.violations().is_empty() {
        let list: Vec<Value> = e
            .violations()
            .iter()
            .map(|v| json!({"field": v.field, "description": v.description}))
            .collect();
        data.insert("fieldViolations".to_owned(), Value::Array(list));
    }
    Value::Object(data)
}

/// The v0.3 JSON-RPC error object (also v0.3's HTTP+JSON error body).
pub fn error_object(e: &A2aError) -> Value {
    json!({
        "code": jsonrpc_code(e.kind()),
        "message": e.message(),
        "data": error_data(e),
    })
}

/// The HTTP status of a v0.3 HTTP+JSON error (the 1.0 table's).
pub fn http_status(e: &A2aError) -> u16 {
    e.wire().http
}

/// The error kind a v0.3 SDK names at the start of a gRPC status message
/// (`"TaskNotFoundError: Task not found"`: the v0.3 Python SDK's gRPC handler names the v0.3
/// error type there, and its status codes do not tell the kinds apart — UNIMPLEMENTED is
/// TaskNotCancelable, PushNotificationNotSupported, UnsupportedOperation and
/// ContentTypeNotSupported alike), with the message after the name.
pub fn kind_named_in(message: &str) -> Option<(ErrorKind, &str)> {
    let (name, rest) = message.split_once(": ")?;
    let kind = match name {
        "JSONParseError" => ErrorKind::ParseError,
        "InvalidRequestError" => ErrorKind::InvalidRequest,
        "MethodNotFoundError" => ErrorKind::MethodNotFound,
        "InvalidParamsError" => ErrorKind::InvalidParams,
        "InternalError" => ErrorKind::Internal,
        "TaskNotFoundError" => ErrorKind::TaskNotFound,
        "TaskNotCancelableError" => ErrorKind::TaskNotCancelable,
        "PushNotificationNotSupportedError" => ErrorKind::PushNotificationNotSupported,
        "UnsupportedOperationError" => ErrorKind::UnsupportedOperation,
        "ContentTypeNotSupportedError" => ErrorKind::ContentTypeNotSupported,
        "InvalidAgentResponseError" => ErrorKind::InvalidAgentResponse,
        "AuthenticatedExtendedCardNotConfiguredError" => ErrorKind::ExtendedAgentCardNotConfigured,
        _ => return None,
    };
    Some((kind, rest))
}
