//! [`A2aError`], its [`ErrorKind`]s, and the one table that gives every kind its wire codes.
//!
//! **Invariant:** [`ErrorKind::wire`] is the only place in the workspace where a JSON-RPC code,
//! HTTP status, gRPC code or ErrorInfo reason is written down. Bindings read it to encode and
//! search it (through [`ErrorKind::from_reason`] and friends) to decode.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The ErrorInfo `domain` of every A2A error.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// Every error an A2A operation can end with, on any binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The task (or push configuration) does not exist or is not visible to the caller.
    TaskNotFound,
    /// The task is in a state that cannot be canceled.
    TaskNotCancelable,
    /// The agent does not support push notifications.
    PushNotificationNotSupported,
    /// The operation is not supported (terminal task, capability off, busy task, ...).
    UnsupportedOperation,
    /// A part's media type is not supported.
    ContentTypeNotSupported,
    /// The agent produced a response that violates the protocol.
    InvalidAgentResponse,
    /// The card declares an extended card but none is configured.
    ExtendedAgentCardNotConfigured,
    /// The card marks an extension required and the request did not activate it.
    ExtensionSupportRequired,
    /// The requested `A2A-Version` is not supported.
    VersionNotSupported,
    /// A2A 1.1 preview: a message's `ifGenerationMatch` is not the task's generation (the
    /// task changed since the client last saw it).
    TaskGenerationMismatch,
    /// The body is not valid JSON.
    ParseError,
    /// The request is not a valid request object.
    InvalidRequest,
    /// Unknown method or route.
    MethodNotFound,
    /// The parameters fail validation.
    InvalidParams,
    /// An unexpected server failure.
    Internal,
    /// The caller is not authenticated.
    Unauthenticated,
    /// The caller is authenticated but not allowed.
    PermissionDenied,
    /// The server is temporarily unable to serve the request.
    Unavailable,
    /// The caller exceeded a limit (request rate, concurrent streams; retry later) or a quota
    /// (push configurations per task or principal; free some first).
    ResourceExhausted,
    /// The caller's deadline passed before the call completed (raised by a client whose
    /// [`CallContext::deadline`](crate::CallContext::deadline) passed, or by an upstream).
    DeadlineExceeded,
}

/// The wire representation of an [`ErrorKind`] on each binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// JSON-RPC `error.code`.
    pub jsonrpc: i32,
    /// HTTP status of an HTTP+JSON error response.
    pub http: u16,
    /// gRPC status code (numeric, as in `google.rpc.Code`).
    pub grpc: i32,
    /// Canonical gRPC status name, used as `error.status` in HTTP+JSON bodies.
    pub status: &'static str,
    /// `google.rpc.ErrorInfo.reason`.
    pub reason: &'static str,
    /// Default human-readable message.
    pub message: &'static str,
}

impl ErrorKind {
    /// Every kind, in table order.
    pub const ALL: [ErrorKind; 20] = [
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::TaskGenerationMismatch,
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::Unauthenticated,
        ErrorKind::PermissionDenied,
        ErrorKind::Unavailable,
        ErrorKind::ResourceExhausted,
        ErrorKind::DeadlineExceeded,
    ];

    /// THE wire table (spec Appendix A). Unauthenticated/permission-denied JSON-RPC codes are
    /// not in the spec; we use the Go SDK's -31401/-31403. `Unavailable` shares -32603 with
    /// `Internal` on JSON-RPC and is told apart by its reason.
    pub const fn wire(self) -> Wire {
        use ErrorKind::*;
        let (jsonrpc, http, grpc, status, reason, message) = match self {
            TaskNotFound => (
                -32001,
                404,
                5,
                "NOT_FOUND",
                "TASK_NOT_FOUND",
                "Task not found",
            ),
            TaskNotCancelable => (
                -32002,
                400,
                9,
                "FAILED_PRECONDITION",
                "TASK_NOT_CANCELABLE",
                "Task cannot be canceled",
            ),
            PushNotificationNotSupported => (
                -32003,
                400,
                9,
                "FAILED_PRECONDITION",
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "Push notifications are not supported",
            ),
            UnsupportedOperation => (
                -32004,
                400,
                9,
                "FAILED_PRECONDITION",
                "UNSUPPORTED_OPERATION",
                "This operation is not supported",
            ),
            ContentTypeNotSupported => (
                -32005,
                400,
                3,
                "INVALID_ARGUMENT",
                "CONTENT_TYPE_NOT_SUPPORTED",
                "Incompatible content types",
            ),
            InvalidAgentResponse => (
                -32006,
                500,
                13,
                "INTERNAL",
                "INVALID_AGENT_RESPONSE",
                "Invalid agent response",
            ),
            ExtendedAgentCardNotConfigured => (
                -32007,
                400,
                9,
                "FAILED_PRECONDITION",
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card is not configured",
            ),
            ExtensionSupportRequired => (
                -32008,
                400,
                9,
                "FAILED_PRECONDITION",
                "EXTENSION_SUPPORT_REQUIRED",
                "A required extension was not requested",
            ),
            VersionNotSupported => (
                -32009,
                400,
                9,
                "FAILED_PRECONDITION",
                "VERSION_NOT_SUPPORTED",
                "This A2A version is not supported",
            ),
            // A2A 1.1 preview (dev-1.1 branch, upstream #1810).
            TaskGenerationMismatch => (
                -32010,
                409,
                10,
                "ABORTED",
                "TASK_GENERATION_MISMATCH",
                "The task's generation does not match",
            ),
            ParseError => (
                -32700,
                400,
                3,
                "INVALID_ARGUMENT",
                "PARSE_ERROR",
                "Invalid JSON payload",
            ),
            InvalidRequest => (
                -32600,
                400,
                3,
                "INVALID_ARGUMENT",
                "INVALID_REQUEST",
                "Request payload validation error",
            ),
            MethodNotFound => (
                -32601,
                404,
                12,
                "UNIMPLEMENTED",
                "METHOD_NOT_FOUND",
                "Method not found",
            ),
            InvalidParams => (
                -32602,
                400,
                3,
                "INVALID_ARGUMENT",
                "INVALID_PARAMS",
                "Invalid parameters",
            ),
            Internal => (
                -32603,
                500,
                13,
                "INTERNAL",
                "INTERNAL_ERROR",
                "Internal error",
            ),
            Unauthenticated => (
                -31401,
                401,
                16,
                "UNAUTHENTICATED",
                "UNAUTHENTICATED",
                "Authentication required",
            ),
            PermissionDenied => (
                -31403,
                403,
                7,
                "PERMISSION_DENIED",
                "UNAUTHORIZED",
                "Permission denied",
            ),
            Unavailable => (
                -32603,
                503,
                14,
                "UNAVAILABLE",
                "UNAVAILABLE",
                "Service unavailable",
            ),
            // Not in the spec: HTTP 429, gRPC RESOURCE_EXHAUSTED, and a JSON-RPC code in the
            // style of the Go SDK's -31401/-31403.
            ResourceExhausted => (
                -31429,
                429,
                8,
                "RESOURCE_EXHAUSTED",
                "RESOURCE_EXHAUSTED",
                "Too many requests",
            ),
            // Not in the spec: gRPC DEADLINE_EXCEEDED, HTTP 504 (what a gateway answers when
            // its upstream did not in time), a JSON-RPC code in the same style as above.
            DeadlineExceeded => (
                -31504,
                504,
                4,
                "DEADLINE_EXCEEDED",
                "DEADLINE_EXCEEDED",
                "Deadline exceeded",
            ),
        };
        Wire {
            jsonrpc,
            http,
            grpc,
            status,
            reason,
            message,
        }
    }

    /// The kind whose ErrorInfo reason is `reason`.
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.wire().reason == reason)
    }

    /// The kind of a JSON-RPC error code (the first in table order when codes are shared).
    pub fn from_jsonrpc(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.wire().jsonrpc == code)
    }

    /// Kinds in the order a bare code (without ErrorInfo) is best read as: the generic kinds
    /// first, so a plain `INVALID_ARGUMENT` or HTTP 400 is `InvalidParams`, not one of the A2A
    /// errors that happen to share the code.
    const GUESS_ORDER: [ErrorKind; 20] = [
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::TaskNotFound,
        ErrorKind::UnsupportedOperation,
        ErrorKind::MethodNotFound,
        ErrorKind::Unauthenticated,
        ErrorKind::PermissionDenied,
        ErrorKind::Unavailable,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::TaskGenerationMismatch,
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::ResourceExhausted,
        ErrorKind::DeadlineExceeded,
    ];

    /// The most likely kind of a gRPC status code without ErrorInfo.
    pub fn from_grpc(code: i32) -> Option<Self> {
        Self::GUESS_ORDER
            .into_iter()
            .find(|k| k.wire().grpc == code)
    }

    /// The most likely kind of an HTTP status without ErrorInfo.
    pub fn from_http(status: u16) -> Option<Self> {
        Self::GUESS_ORDER
            .into_iter()
            .find(|k| k.wire().http == status)
    }
}

/// One invalid field, as in `google.rpc.BadRequest.FieldViolation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    /// Path of the field, e.g. `message.parts`.
    pub field: String,
    /// What is wrong with it.
    pub description: String,
}

/// The underlying error of an [`A2aError`] (an I/O, DNS, TLS or HTTP failure): shared so the
/// error stays cheap to clone, and behind one thin pointer so it stays small.
type ErrorSource = Arc<Box<dyn std::error::Error + Send + Sync + 'static>>;

/// An error of an A2A operation: a kind, a message, and the optional details every binding
/// carries (ErrorInfo metadata, BadRequest field violations).
///
/// An error a client raised because the exchange failed also keeps its cause:
/// [`source`](std::error::Error::source) returns it, and the message already spells out its
/// whole chain (`… : tcp connect error: Connection refused (os error 111)`), so printing the
/// error with `{}` says why. Two errors are equal when everything but the source is.
#[derive(Debug, Clone)]
pub struct A2aError {
    kind: ErrorKind,
    message: String,
    metadata: BTreeMap<String, String>,
    violations: Vec<FieldViolation>,
    transport: bool,
    source: Option<ErrorSource>,
}

impl PartialEq for A2aError {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.message == other.message
            && self.metadata == other.metadata
            && self.violations == other.violations
            && self.transport == other.transport
    }
}

impl Eq for A2aError {}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::convert::Infallible> for A2aError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl std::error::Error for A2aError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| &**e as &(dyn std::error::Error + 'static))
    }
}

/// `e` and its sources, `: `-joined, each source once: many errors (reqwest's, hyper's) say
/// little at the top and the reason several levels down, and some repeat their source's text.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let part = s.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = s.source();
    }
    text
}

impl A2aError {
    /// An error of `kind` with its own message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            metadata: BTreeMap::new(),
            violations: Vec::new(),
            transport: false,
            source: None,
        }
    }

    /// A failure of the transport itself, raised by a client in this process (connection
    /// refused, reset, an unreadable reply): `Unavailable`, but no agent said so.
    pub fn transport(message: impl Into<String>) -> Self {
        Self::local(ErrorKind::Unavailable, message)
    }

    /// An error of `kind` raised by a client in this process rather than decoded from an
    /// agent's answer ([`is_transport`](Self::is_transport) is true): for example
    /// `DeadlineExceeded` when the caller's deadline passes before the agent answers.
    pub fn local(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            transport: true,
            ..Self::new(kind, message)
        }
    }

    /// A transport failure caused by `source`: `Unavailable`, or `DeadlineExceeded` when
    /// `timed_out`; the message is `context: ` followed by the source's whole chain
    /// ([`error_chain`]), and [`source`](std::error::Error::source) returns it.
    pub fn caused_by(
        context: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
        timed_out: bool,
    ) -> Self {
        let kind = if timed_out {
            ErrorKind::DeadlineExceeded
        } else {
            ErrorKind::Unavailable
        };
        let message = format!("{context}: {}", error_chain(&source));
        Self::local(kind, message).with_source(source)
    }

    /// Keeps `source` as this error's cause (its text is not added to the message).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(Box::new(source)));
        self
    }

    /// Whether a client raised this error because the exchange failed (or the caller's
    /// deadline passed), rather than decoding it from the agent's answer.
    pub fn is_transport(&self) -> bool {
        self.transport
    }

    /// An error of `kind` with the table's default message.
    pub fn of(kind: ErrorKind) -> Self {
        Self::new(kind, kind.wire().message)
    }

    /// Adds an ErrorInfo metadata entry.
    pub fn with_meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds a field violation (sent as `google.rpc.BadRequest`).
    pub fn with_violation(
        mut self,
        field: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        self.violations.push(FieldViolation {
            field: field.into(),
            description: description.into(),
        });
        self
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// ErrorInfo metadata.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// Field violations.
    pub fn violations(&self) -> &[FieldViolation] {
        &self.violations
    }

    /// The wire codes of this error's kind.
    pub fn wire(&self) -> Wire {
        self.kind.wire()
    }

    /// `TaskNotFound` for `task_id`.
    pub fn task_not_found(task_id: &str) -> Self {
        Self::new(ErrorKind::TaskNotFound, format!("task {task_id} not found"))
            .with_meta("taskId", task_id)
    }

    /// `InvalidParams` with one field violation.
    pub fn invalid_field(field: &str, description: impl Into<String>) -> Self {
        let description = description.into();
        Self::new(ErrorKind::InvalidParams, format!("{field}: {description}"))
            .with_violation(field, description)
    }

    /// `UnsupportedOperation` with a message.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::UnsupportedOperation, message)
    }

    /// `Internal` with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Says when a retry may succeed: whole seconds, in the ErrorInfo metadata under
    /// [`RETRY_AFTER_SECONDS`]; the HTTP+JSON binding also sends it as `Retry-After` and gRPC
    /// as a `google.rpc.RetryInfo`.
    pub fn with_retry_after(self, seconds: u64) -> Self {
        self.with_meta(RETRY_AFTER_SECONDS, seconds.to_string())
    }

    /// Whole seconds after which a retry may succeed, when the error says.
    pub fn retry_after(&self) -> Option<u64> {
        self.metadata.get(RETRY_AFTER_SECONDS)?.parse().ok()
    }
}

/// ErrorInfo metadata key: whole seconds until a retry may succeed (see
/// [`A2aError::with_retry_after`]).
pub const RETRY_AFTER_SECONDS: &str = "retryAfterSeconds";

/// `@type` of `google.rpc.ErrorInfo` in JSON details.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `@type` of `google.rpc.BadRequest` in JSON details.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

impl A2aError {
    /// The JSON `details` array both JSON bindings send (JSON-RPC `error.data`, HTTP+JSON
    /// `error.details`): a `google.rpc.ErrorInfo` and, for field violations, a
    /// `google.rpc.BadRequest`.
    pub fn details_json(&self) -> serde_json::Value {
        let mut details = vec![serde_json::json!({
            "@type": ERROR_INFO_TYPE,
            "reason": self.kind.wire().reason,
            "domain": ERROR_DOMAIN,
            "metadata": self.metadata,
        })];
        if !self.violations.is_empty() {
            let violations: Vec<_> = self
                .violations
                .iter()
                .map(|v| serde_json::json!({"field": v.field, "description": v.description}))
                .collect();
            details.push(
                serde_json::json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations}),
            );
        }
        serde_json::Value::Array(details)
    }

    /// Rebuilds an error from its wire form: the kind from the ErrorInfo reason when there is
    /// one (else `fallback`), metadata and field violations from the details.
    pub fn from_wire(
        fallback: ErrorKind,
        message: impl Into<String>,
        details: &[serde_json::Value],
    ) -> Self {
        let mut err = Self::new(fallback, message);
        for d in details {
            match d.get("@type").and_then(|t| t.as_str()) {
                Some(ERROR_INFO_TYPE) => {
                    if let Some(kind) = d
                        .get("reason")
                        .and_then(|r| r.as_str())
                        .and_then(ErrorKind::from_reason)
                    {
                        err.kind = kind;
                    }
                    if let Some(meta) = d.get("metadata").and_then(|m| m.as_object()) {
                        for (k, v) in meta {
                            if let Some(v) = v.as_str() {
                                err.metadata.insert(k.clone(), v.to_owned());
                            }
                        }
                    }
                }
                Some(BAD_REQUEST_TYPE) => {
                    for v in d
                        .get("fieldViolations")
                        .and_then(|v| v.as_array())
                        .into_iter()
                        .flatten()
                    {
                        let field = v.get("field").and_then(|f| f.as_str()).unwrap_or_default();
                        let description = v
                            .get("description")
                            .and_then(|f| f.as_str())
                            .unwrap_or_default();
                        err.violations.push(FieldViolation {
                            field: field.to_owned(),
                            description: description.to_owned(),
                        });
                    }
                }
                _ => {}
            }
        }
        err
    }
}

#[cfg(test)]
mod tests;
