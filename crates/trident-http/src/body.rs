//! Bounded reads of HTTP bodies, for the clients and the JSON bindings' servers: a peer must
//! not be able to make either buffer without limit.

use std::fmt;

use bytes::{Bytes, BytesMut};
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

/// Reads a whole request body given as a stream of [`Bytes`] chunks, refusing it once it
/// passes `limit` bytes: what the JSON bindings' servers do with a request. A body that
/// arrives in one chunk (a small request usually does) is that chunk, neither copied nor
/// gathered in a list; several are joined into one buffer.
pub async fn read_request_body<S, E>(body: S, limit: usize) -> Result<Bytes, BodyError<E>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut body = std::pin::pin!(body);
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(BodyError::Body)?;
        let so_far = joined.as_ref().map_or(first.len(), BytesMut::len);
        if so_far.saturating_add(chunk.len()) > limit {
            return Err(BodyError::TooLarge { limit });
        }
        match &mut joined {
            Some(buf) => buf.extend_from_slice(&chunk),
            None if first.is_empty() => first = chunk,
            None => {
                let mut buf = BytesMut::with_capacity(first.len() + chunk.len());
                buf.extend_from_slice(&first);
                buf.extend_from_slice(&chunk);
                joined = Some(buf);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::stream;

    use super::{BodyError, read_body, read_request_body};

    fn read_request(
        chunks: &[&'static [u8]],
        limit: usize,
    ) -> Result<Bytes, BodyError<&'static str>> {
        let chunks = chunks
            .iter()
            .map(|c| Ok(Bytes::from_static(c)))
            .collect::<Vec<_>>();
        futures::executor::block_on(read_request_body(stream::iter(chunks), limit))
    }

    #[test]
    fn a_request_body_is_its_one_chunk_or_its_chunks_joined_up_to_the_limit() {
        let one: &'static [u8] = b"{\"a\":1}";
        let body = read_request(&[one], 7).expect("within the limit");
        assert_eq!(body, one);
        assert_eq!(body.as_ptr(), one.as_ptr(), "one chunk is not copied");
        assert_eq!(
            read_request(&[b"ab", b"", b"cd", b"e"], 5).as_deref(),
            Ok(&b"abcde"[..])
        );
        assert_eq!(read_request(&[b"", b"ab"], 5).as_deref(), Ok(&b"ab"[..]));
        assert_eq!(read_request(&[], 5).as_deref(), Ok(&b""[..]));
        assert_eq!(
            read_request(&[b"abc", b"def"], 5),
            Err(BodyError::TooLarge { limit: 5 })
        );
        assert_eq!(
            read_request(&[b"abcdef"], 5),
            Err(BodyError::TooLarge { limit: 5 })
        );
        let failed = futures::executor::block_on(read_request_body(
            stream::iter(vec![Ok(Bytes::from_static(b"ab")), Err("reset")]),
            5,
        ));
        assert_eq!(failed, Err(BodyError::Body("reset")));
    }

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
