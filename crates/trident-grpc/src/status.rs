//! The one mapping between [`A2aError`] and `tonic::Status` (spec §5.3): the code from
//! [`ErrorKind::wire`], a `google.rpc.ErrorInfo` (reason, domain [`ERROR_DOMAIN`], metadata) and,
//! for field violations, a `google.rpc.BadRequest`, all in `grpc-status-details-bin`.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use trident_core::{A2aError, ERROR_DOMAIN, ErrorKind};

/// Encodes an error as the gRPC status of an RPC.
pub fn status(e: &A2aError) -> Status {
    let wire = e.wire();
    let metadata: HashMap<String, String> = e
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut details = ErrorDetails::with_error_info(wire.reason, ERROR_DOMAIN, metadata);
    for v in e.violations() {
        details.add_bad_request_violation(v.field.clone(), v.description.clone());
    }
    if let Some(seconds) = e.retry_after() {
        details.set_retry_info(Some(std::time::Duration::from_secs(seconds)));
    }
    Status::with_error_details(Code::from_i32(wire.grpc), e.message(), details)
}

/// Decodes a gRPC status into an error: the kind from the A2A `ErrorInfo` reason, else from the
/// status code; the message, `ErrorInfo` metadata and `BadRequest` violations are kept.
///
/// Statuses without an A2A kind (`UNKNOWN`, `CANCELLED`, ...) become `Unavailable` when they
/// come from the local transport (connection refused or reset) and `Internal` otherwise;
/// `OUT_OF_RANGE` (a message over the client's size limit) is `InvalidAgentResponse`. A
/// status raised by the local transport keeps its cause: the message spells out the whole chain
/// and [`source`](std::error::Error::source) returns the status.
pub fn error(s: &Status) -> A2aError {
    let details = s.get_error_details();
    let info = details.error_info();
    // tonic enforces the `grpc-timeout` we send itself, and may notice before we do.
    let timed_out = {
        let mut next = std::error::Error::source(s);
        let mut found = false;
        while let Some(e) = next {
            found |= e.is::<tonic::TimeoutExpired>();
            next = e.source();
        }
        found
    };
    let kind = timed_out
        .then_some(ErrorKind::DeadlineExceeded)
        .or_else(|| {
            info.filter(|i| i.domain == ERROR_DOMAIN)
                .and_then(|i| ErrorKind::from_reason(&i.reason))
        })
        .or_else(|| ErrorKind::from_grpc(s.code() as i32))
        .unwrap_or(match s.code() {
            Code::Cancelled | Code::Aborted | Code::ResourceExhausted => ErrorKind::Unavailable,
            // What tonic says of a message over the decoder's limit (A2A agents never answer
            // OUT_OF_RANGE themselves): the HTTP bindings call it an invalid agent response.
            Code::OutOfRange => ErrorKind::InvalidAgentResponse,
            _ if std::error::Error::source(s).is_some() => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        });
    let message = if s.message().is_empty() {
        kind.wire().message
    } else {
        s.message()
    };
    // No A2A ErrorInfo and a local cause: the exchange failed here, no agent answered.
    let local = info.is_none() && std::error::Error::source(s).is_some();
    let mut err = if local && matches!(kind, ErrorKind::Unavailable | ErrorKind::DeadlineExceeded) {
        let chain = std::error::Error::source(s)
            .map(trident_core::error_chain)
            .filter(|c| !message.contains(c.as_str()))
            .map(|c| format!("{message}: {c}"))
            .unwrap_or_else(|| message.to_owned());
        A2aError::local(kind, chain).with_source(s.clone())
    } else {
        A2aError::new(kind, message)
    };
    if let Some(info) = info {
        // HashMap order is arbitrary; A2aError keeps a sorted map anyway.
        for (k, v) in &info.metadata {
            err = err.with_meta(k.clone(), v.clone());
        }
    }
    if let Some(bad) = details.bad_request() {
        for v in &bad.field_violations {
            err = err.with_violation(v.field.clone(), v.description.clone());
        }
    }
    err
}
