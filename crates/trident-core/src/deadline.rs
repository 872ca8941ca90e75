//! Deadlines and cancellation of client calls, the same on every binding.
//!
//! A caller states how long it waits in [`CallContext::deadline`] and that it went away with
//! [`CallContext::cancelled`]. Every client runs its exchange through [`bounded`] (and a
//! stream through [`bounded_stream`]): when the token fires the request is dropped (its
//! connection closed, or its HTTP/2 stream reset) and the call ends; when the deadline passes it
//! ends with [`ErrorKind::DeadlineExceeded`]. The remaining time travels to the agent as
//! [`TIMEOUT_HEADER`] on every binding, so a gateway passes the caller's deadline on to its
//! upstream whatever the two bindings are.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::{A2aError, CallContext, ErrorKind, EventStream};

/// The header (gRPC metadata key) that carries a call's remaining time: gRPC's own
/// `grpc-timeout`, in its format (at most 8 digits and a unit, `H M S m u n`). The JSON-RPC and
/// HTTP+JSON bindings read and send it too: A2A defines no deadline header for HTTP, and this
/// one is what gRPC-aware proxies and transcoders already carry.
pub const TIMEOUT_HEADER: &str = "grpc-timeout";

/// Parses a [`TIMEOUT_HEADER`] value: at most 8 digits and a unit (`H M S m u n`).
///
/// ```
/// use std::time::Duration;
/// use trident_core::deadline::parse_timeout;
/// assert_eq!(parse_timeout("250m"), Some(Duration::from_millis(250)));
/// assert_eq!(parse_timeout("250"), None);
/// ```
pub fn parse_timeout(v: &str) -> Option<Duration> {
    let v = v.trim();
    let split = v.len().checked_sub(1)?;
    if !v.is_char_boundary(split) {
        return None;
    }
    let (digits, unit) = v.split_at(split);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The error for a [`TIMEOUT_HEADER`] value that [`parse_timeout`] refuses: `InvalidRequest`
/// (gRPC `INVALID_ARGUMENT`), quoting at most 32 bytes of it. Servers refuse such a call rather
/// than run it without the caller's deadline. (grpc-go answers `INTERNAL` "malformed
/// grpc-timeout"; the A2A table's row for a request the caller got wrong is this one.)
pub fn malformed_timeout(raw: &[u8]) -> A2aError {
    let shown: String = String::from_utf8_lossy(raw).chars().take(32).collect();
    A2aError::new(
        ErrorKind::InvalidRequest,
        format!(
            "malformed {TIMEOUT_HEADER} {shown:?}: send 1 to 8 digits and a unit \
             (H, M, S, m, u or n), e.g. 250m"
        ),
    )
}

/// Formats `d` as a [`TIMEOUT_HEADER`] value, in the finest unit whose count fits in 8 digits
/// (rounded down; longer than 99999999 hours is written as that).
///
/// ```
/// use std::time::Duration;
/// use trident_core::deadline::format_timeout;
/// assert_eq!(format_timeout(Duration::from_millis(1500)), "1500000u");
/// assert_eq!(format_timeout(Duration::from_secs(3600 * 24 * 365)), "31536000S");
/// ```
pub fn format_timeout(d: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = d.as_nanos();
    for (per, unit) in units {
        let n = nanos / per;
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}

/// The error of a call whose deadline passed: `DeadlineExceeded`, raised here (no agent said
/// so).
pub fn deadline_exceeded(what: impl fmt::Display) -> A2aError {
    A2aError::local(
        ErrorKind::DeadlineExceeded,
        format!("{what}: the caller's deadline passed before the agent answered"),
    )
}

/// The error of a call whose caller went away ([`CallContext::cancelled`] fired).
pub fn cancelled(what: impl fmt::Display) -> A2aError {
    A2aError::transport(format!("{what}: the call was cancelled by its caller"))
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
        None => std::future::pending().await,
    }
}

/// Runs `exchange` (a client's whole request and reading of its answer) until it completes,
/// the caller's token fires, or the deadline passes, whichever comes first. The other two drop
/// `exchange`, which drops its request. A deadline already past fails before anything is sent.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::{Duration, Instant};
/// use trident_core::{CallContext, ErrorKind, deadline::bounded};
/// let cx = CallContext::new().with_deadline(Instant::now() + Duration::from_millis(10));
/// let never = std::future::pending::<Result<(), trident_core::A2aError>>();
/// let e = bounded(&cx, "GetTask", never).await.unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::DeadlineExceeded);
/// # }
/// ```
pub async fn bounded<T>(
    cx: &CallContext,
    what: impl fmt::Display,
    exchange: impl Future<Output = Result<T, A2aError>>,
) -> Result<T, A2aError> {
    if cx.deadline.is_some_and(|d| d <= Instant::now()) {
        return Err(deadline_exceeded(what));
    }
    if cx.cancelled.is_cancelled() {
        return Err(cancelled(what));
    }
    tokio::select! {
        r = exchange => r,
        () = cx.cancelled.cancelled() => Err(cancelled(what)),
        () = sleep_until(cx.deadline) => Err(deadline_exceeded(what)),
    }
}

/// Bounds a stream the way [`bounded`] bounds a call: it ends when the caller's token fires,
/// and ends with a `DeadlineExceeded` item when the deadline passes; either way `events` (and
/// so the response it reads) is dropped at once, not when the caller drops the stream. Events
/// that arrive in time pass through unchanged.
pub fn bounded_stream(
    cx: &CallContext,
    what: impl fmt::Display,
    events: EventStream,
) -> EventStream {
    let what = what.to_string();
    let state = (Some(events), cx.cancelled.clone(), cx.deadline);
    futures::stream::unfold(state, move |(events, token, deadline)| {
        let what = what.clone();
        async move {
            let mut events = events?;
            tokio::select! {
                biased;
                () = token.cancelled() => None,
                () = sleep_until(deadline) => Some((Err(deadline_exceeded(what)), (None, token, deadline))),
                item = events.next() => item.map(|item| (item, (Some(events), token, deadline))),
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests;
