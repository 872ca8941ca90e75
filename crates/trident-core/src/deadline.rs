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
use std::time::Instant;

use futures::StreamExt;

pub use crate::timeout::{TIMEOUT_HEADER, format_timeout, malformed_timeout, parse_timeout};
use crate::{A2aError, CallContext, ErrorKind, EventStream};

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
