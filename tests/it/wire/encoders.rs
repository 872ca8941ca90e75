//! The three error encoders for every `ErrorKind`, against the spec's Appendix A restated here
//! (digest §3.4, §4.4, §5.3; the rows marked [SDK] there follow the Go SDK).

use serde_json::{Value, json};
use trident_core::{A2aError, ErrorKind};

use super::grpc::status_json;
use super::{Check, bad_request, error_info};

/// One row of Appendix A: kind, JSON-RPC code, HTTP status, gRPC status (= `error.status` of
/// HTTP+JSON bodies), ErrorInfo reason, default message.
struct Row {
    kind: ErrorKind,
    jsonrpc: i64,
    http: u16,
    grpc: &'static str,
    reason: &'static str,
    message: &'static str,
}

const fn row(
    kind: ErrorKind,
    jsonrpc: i64,
    http: u16,
    grpc: &'static str,
    reason: &'static str,
    message: &'static str,
) -> Row {
    Row {
        kind,
        jsonrpc,
        http,
        grpc,
        reason,
        message,
    }
}

#[rustfmt::skip]
const APPENDIX_A: [Row; 20] = [
    // The nine A2A errors [SPEC].
    row(ErrorKind::TaskNotFound,                   -32001, 404, "NOT_FOUND",           "TASK_NOT_FOUND",                     "Task not found"),
    row(ErrorKind::TaskNotCancelable,              -32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE",                "Task cannot be canceled"),
    row(ErrorKind::PushNotificationNotSupported,   -32003, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED",    "Push notifications are not supported"),
    row(ErrorKind::UnsupportedOperation,           -32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION",              "This operation is not supported"),
    row(ErrorKind::ContentTypeNotSupported,        -32005, 400, "INVALID_ARGUMENT",    "CONTENT_TYPE_NOT_SUPPORTED",         "Incompatible content types"),
    row(ErrorKind::InvalidAgentResponse,           -32006, 500, "INTERNAL",            "INVALID_AGENT_RESPONSE",             "Invalid agent response"),
    row(ErrorKind::ExtendedAgentCardNotConfigured, -32007, 400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "Extended agent card is not configured"),
    row(ErrorKind::ExtensionSupportRequired,       -32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED",         "A required extension was not requested"),
    row(ErrorKind::VersionNotSupported,            -32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED",              "This A2A version is not supported"),
    // The A2A 1.1 preview (dev-1.1 branch, upstream #1810).
    row(ErrorKind::TaskGenerationMismatch,         -32010, 409, "ABORTED",             "TASK_GENERATION_MISMATCH",           "The task's generation does not match"),
    // The standard JSON-RPC errors [SPEC codes and messages; SDK reasons].
    row(ErrorKind::ParseError,                     -32700, 400, "INVALID_ARGUMENT",    "PARSE_ERROR",                        "Invalid JSON payload"),
    row(ErrorKind::InvalidRequest,                 -32600, 400, "INVALID_ARGUMENT",    "INVALID_REQUEST",                    "Request payload validation error"),
    row(ErrorKind::MethodNotFound,                 -32601, 404, "UNIMPLEMENTED",       "METHOD_NOT_FOUND",                   "Method not found"),
    row(ErrorKind::InvalidParams,                  -32602, 400, "INVALID_ARGUMENT",    "INVALID_PARAMS",                     "Invalid parameters"),
    row(ErrorKind::Internal,                       -32603, 500, "INTERNAL",            "INTERNAL_ERROR",                     "Internal error"),
    // Not in the spec's code tables: the Go SDK's codes and reasons.
    row(ErrorKind::Unauthenticated,                -31401, 401, "UNAUTHENTICATED",     "UNAUTHENTICATED",                    "Authentication required"),
    row(ErrorKind::PermissionDenied,               -31403, 403, "PERMISSION_DENIED",   "UNAUTHORIZED",                       "Permission denied"),
    // HTTP 503 / gRPC UNAVAILABLE [SPEC examples]; JSON-RPC shares -32603, told apart by reason.
    row(ErrorKind::Unavailable,                    -32603, 503, "UNAVAILABLE",         "UNAVAILABLE",                        "Service unavailable"),
    // Ours: per-caller limits (HTTP 429, gRPC RESOURCE_EXHAUSTED).
    row(ErrorKind::ResourceExhausted,              -31429, 429, "RESOURCE_EXHAUSTED",  "RESOURCE_EXHAUSTED",                 "Too many requests"),
    // Ours: a caller's deadline that passed (HTTP 504, gRPC DEADLINE_EXCEEDED).
    row(ErrorKind::DeadlineExceeded,               -31504, 504, "DEADLINE_EXCEEDED",   "DEADLINE_EXCEEDED",                  "Deadline exceeded"),
];

#[test]
fn the_table_covers_every_kind_in_order() {
    let kinds: Vec<ErrorKind> = APPENDIX_A.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, ErrorKind::ALL);
}

/// Each kind twice: bare (default message, empty metadata) and with metadata and a field
/// violation (BadRequest follows ErrorInfo).
fn samples(r: &Row) -> [(A2aError, &'static str, Value); 2] {
    [
        (
            A2aError::of(r.kind),
            r.message,
            json!([error_info(r.reason, json!({}))]),
        ),
        (
            A2aError::new(r.kind, "custom message")
                .with_meta("taskId", "t-1")
                .with_meta("attempt", "2")
                .with_violation("message.parts", "at least one part is required")
                .with_violation("pageSize", "must be between 1 and 100"),
            "custom message",
            json!([
                error_info(r.reason, json!({"taskId": "t-1", "attempt": "2"})),
                bad_request(&[
                    ("message.parts", "at least one part is required"),
                    ("pageSize", "must be between 1 and 100"),
                ]),
            ]),
        ),
    ]
}

#[test]
fn every_error_kind_through_the_three_encoders() {
    let mut check = Check::new();
    for r in &APPENDIX_A {
        for (e, message, details) in samples(r) {
            let case = format!("{:?} ({message})", r.kind);
            let jsonrpc = serde_json::to_value(trident_jsonrpc::error_object(&e)).expect("JSON");
            check.eq(
                format!("{case}: JSON-RPC error object"),
                &jsonrpc,
                &json!({"code": r.jsonrpc, "message": message, "data": details}),
            );
            check.eq(
                format!("{case}: HTTP+JSON body"),
                &trident_rest::error_body(&e),
                &json!({"error": {"code": r.http, "status": r.grpc, "message": message,
                                  "details": details}}),
            );
            check.eq(
                format!("{case}: gRPC status"),
                &status_json(&trident_grpc::status(&e)),
                &json!({"code": r.grpc, "message": message, "details": details}),
            );
        }
    }
    check.finish();
}

/// The decoders invert the encoders: reason first, so kinds sharing a code survive.
#[test]
fn every_error_kind_round_trips() {
    let mut check = Check::new();
    for r in &APPENDIX_A {
        for (e, _, _) in samples(r) {
            let body = trident_rest::error_body(&e).to_string();
            let back = trident_rest::decode_error(r.http, body.as_bytes());
            check.that(
                format!("{:?}: HTTP+JSON", r.kind),
                back == e,
                format!("decoded {back:?}"),
            );
            let back = trident_grpc::error(&trident_grpc::status(&e));
            check.that(
                format!("{:?}: gRPC", r.kind),
                back == e,
                format!("decoded {back:?}"),
            );
        }
    }
    check.finish();
}
