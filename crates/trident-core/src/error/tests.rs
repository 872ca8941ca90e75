use super::*;

/// The spec's Appendix A, rows 1-9 and the standard codes, restated as data.
#[test]
fn wire_table_matches_spec_appendix_a() {
    let expected: [(ErrorKind, i32, u16, i32, &str); 15] = [
        (ErrorKind::TaskNotFound, -32001, 404, 5, "TASK_NOT_FOUND"),
        (
            ErrorKind::TaskNotCancelable,
            -32002,
            400,
            9,
            "TASK_NOT_CANCELABLE",
        ),
        (
            ErrorKind::PushNotificationNotSupported,
            -32003,
            400,
            9,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            ErrorKind::UnsupportedOperation,
            -32004,
            400,
            9,
            "UNSUPPORTED_OPERATION",
        ),
        (
            ErrorKind::ContentTypeNotSupported,
            -32005,
            400,
            3,
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        (
            ErrorKind::InvalidAgentResponse,
            -32006,
            500,
            13,
            "INVALID_AGENT_RESPONSE",
        ),
        (
            ErrorKind::ExtendedAgentCardNotConfigured,
            -32007,
            400,
            9,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ),
        (
            ErrorKind::ExtensionSupportRequired,
            -32008,
            400,
            9,
            "EXTENSION_SUPPORT_REQUIRED",
        ),
        (
            ErrorKind::VersionNotSupported,
            -32009,
            400,
            9,
            "VERSION_NOT_SUPPORTED",
        ),
        (
            ErrorKind::TaskGenerationMismatch,
            -32010,
            409,
            10,
            "TASK_GENERATION_MISMATCH",
        ),
        (ErrorKind::ParseError, -32700, 400, 3, "PARSE_ERROR"),
        (ErrorKind::InvalidRequest, -32600, 400, 3, "INVALID_REQUEST"),
        (
            ErrorKind::MethodNotFound,
            -32601,
            404,
            12,
            "METHOD_NOT_FOUND",
        ),
        (ErrorKind::InvalidParams, -32602, 400, 3, "INVALID_PARAMS"),
        (ErrorKind::Internal, -32603, 500, 13, "INTERNAL_ERROR"),
    ];
    for (kind, jsonrpc, http, grpc, reason) in expected {
        let w = kind.wire();
        assert_eq!(
            (w.jsonrpc, w.http, w.grpc, w.reason),
            (jsonrpc, http, grpc, reason),
            "{kind:?}"
        );
    }
}

#[test]
fn every_kind_decodes_back_from_its_reason() {
    for kind in ErrorKind::ALL {
        assert_eq!(ErrorKind::from_reason(kind.wire().reason), Some(kind));
    }
    let reasons: std::collections::HashSet<_> =
        ErrorKind::ALL.iter().map(|k| k.wire().reason).collect();
    assert_eq!(reasons.len(), ErrorKind::ALL.len(), "reasons are unique");
}

#[test]
fn a2a_codes_decode_from_jsonrpc() {
    for kind in &ErrorKind::ALL[..10] {
        assert_eq!(ErrorKind::from_jsonrpc(kind.wire().jsonrpc), Some(*kind));
    }
}

#[test]
fn bare_codes_guess_the_generic_kind() {
    assert_eq!(ErrorKind::from_grpc(3), Some(ErrorKind::InvalidParams));
    assert_eq!(ErrorKind::from_grpc(13), Some(ErrorKind::Internal));
    assert_eq!(ErrorKind::from_http(400), Some(ErrorKind::InvalidParams));
    assert_eq!(ErrorKind::from_http(500), Some(ErrorKind::Internal));
    let mut guessed: Vec<_> = ErrorKind::GUESS_ORDER.to_vec();
    guessed.sort_by_key(|k| format!("{k:?}"));
    let mut all = ErrorKind::ALL.to_vec();
    all.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(guessed, all, "the guess order lists every kind once");
}

#[test]
fn a_generation_mismatch_is_the_only_aborted_and_the_only_409() {
    let w = ErrorKind::TaskGenerationMismatch.wire();
    assert_eq!(
        ErrorKind::from_grpc(w.grpc),
        Some(ErrorKind::TaskGenerationMismatch)
    );
    assert_eq!(
        ErrorKind::from_http(w.http),
        Some(ErrorKind::TaskGenerationMismatch)
    );
}

#[test]
fn deadline_exceeded_has_a_row_of_its_own() {
    let w = ErrorKind::DeadlineExceeded.wire();
    assert_eq!((w.http, w.grpc, w.status), (504, 4, "DEADLINE_EXCEEDED"));
    assert_eq!(ErrorKind::from_grpc(4), Some(ErrorKind::DeadlineExceeded));
    assert_eq!(ErrorKind::from_http(504), Some(ErrorKind::DeadlineExceeded));
    assert_eq!(
        ErrorKind::from_jsonrpc(w.jsonrpc),
        Some(ErrorKind::DeadlineExceeded)
    );
}

#[derive(Debug)]
struct Layer(&'static str, Option<Box<Layer>>);

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Layer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.1.as_deref().map(|l| l as _)
    }
}

#[test]
fn a_caused_error_keeps_its_chain_in_the_message_and_as_source() {
    let io = Layer("Connection refused (os error 111)", None);
    let connect = Layer("tcp connect error", Some(Box::new(io)));
    // A wrapper that repeats its source's text is not said twice.
    let repeat = Layer("tcp connect error", Some(Box::new(connect)));
    let top = Layer("error sending request", Some(Box::new(repeat)));
    let e = A2aError::caused_by("JSON-RPC SendMessage", top, false);
    assert_eq!(
        e.to_string(),
        "JSON-RPC SendMessage: error sending request: tcp connect error: \
         Connection refused (os error 111)"
    );
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.is_transport());
    let source = std::error::Error::source(&e).expect("the cause is kept");
    assert_eq!(source.to_string(), "error sending request");
    // Equality ignores the source; clones share it.
    let plain = A2aError::transport(e.message());
    assert_eq!(e, plain);
    assert!(std::error::Error::source(&e.clone()).is_some());

    let timed_out = A2aError::caused_by("GetTask", Layer("operation timed out", None), true);
    assert_eq!(timed_out.kind(), ErrorKind::DeadlineExceeded);
}
