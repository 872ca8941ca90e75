//! Bounded reads of HTTP bodies for the clients: a peer must not be able to make a client
//! buffer without limit.

use std::fmt;

use futures::{Stream, StreamExt};

/// What a client reads at most of one response or one SSE event by default: as much as the
/// gRPC client decodes of one message (16 MiB), so no binding is stricter than another.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 << 20;

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError<E> {
    /// The body stream failed.
    Body(E),
    /// The body (or one SSE event of it) grew past the reader's bound.
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
}

impl<E: fmt::Display> fmt::Display for BodyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Body(e) => e.fmt(f),
            BodyError::TooLarge { limit } => {
                write!(f, "larger than the client's limit of {limit} bytes")
            }
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for BodyError<E> {}

impl<E: fmt::Display> BodyError<E> {
    /// The error a client reports for `what` (say "HTTP+JSON response"): a body that failed
    /// to arrive is a transport error; one over the bound is the agent's
    /// (`InvalidAgentResponse`).
    pub fn into_error(self, what: impl fmt::Display) -> trident_core::A2aError {
        match self {
            BodyError::Body(e) => trident_core::A2aError::transport(format!("{what}: {e}")),
            e @ BodyError::TooLarge { .. } => trident_core::A2aError::new(
                trident_core::ErrorKind::InvalidAgentResponse,
                format!("{what}: {e}"),
            ),
        }
    }
}

impl<E: Into<trident_core::A2aError>> BodyError<E> {
    /// The error a client reports for `what` when the body's own failures are already
    /// [`A2aError`](trident_core::A2aError)s described with their cause: those pass through
    /// unchanged; a body over the bound is the agent's (`InvalidAgentResponse`).
    pub fn into_described(self, what: impl fmt::Display) -> trident_core::A2aError {
        match self {
            BodyError::Body(e) => e.into(),
            BodyError::TooLarge { limit } => {
                BodyError::<trident_core::A2aError>::TooLarge { limit }.into_error(what)
            }
        }
    }
}

/// Reads a whole body given as a stream of chunks, refusing it once it passes `limit` bytes.
pub async fn read_body<S, B, E>(body: S, limit: usize) -> Result<Vec<u8>, BodyError<E>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let mut body = std::pin::pin!(body);
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(BodyError::Body)?;
        let chunk = chunk.as_ref();
        if out.len().saturating_add(chunk.len()) > limit {
            return Err(BodyError::TooLarge { limit });
        }
        out.extend_from_slice(chunk);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use futures::stream;

    use super::{BodyError, read_body};

    fn read(chunks: Vec<Result<&'static [u8], &'static str>>, limit: usize) -> String {
        match futures::executor::block_on(read_body(stream::iter(chunks), limit)) {
            Ok(body) => String::from_utf8_lossy(&body).into_owned(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn reads_up_to_the_limit_and_no_further() {
        assert_eq!(read(vec![Ok(b"abc"), Ok(b""), Ok(b"de")], 5), "abcde");
        assert_eq!(
            read(vec![Ok(b"abc"), Ok(b"def")], 5),
            "error: larger than the client's limit of 5 bytes"
        );
        assert_eq!(read(vec![Ok(b"a"), Err("reset")], 5), "error: reset");
        assert_eq!(read(vec![], 0), "");
        let e: BodyError<&str> = BodyError::TooLarge { limit: 1 };
        assert_ne!(e, BodyError::Body("x"));
    }
}
