//! The SSE writer both JSON bindings answer a stream with: [`SseWriter`] turns an
//! [`EventStream`] into body chunks, each event encoded once, straight into the chunk's bytes
//! (no intermediate string per event), and every event ready at once gathered into one chunk
//! (one write to the socket for a burst instead of one per event), with a keep-alive comment
//! (`:` and a blank line) after each interval without an event.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use trident_core::{A2aError, EventStream, StreamEvent};

/// A chunk gathers events until it holds this many bytes (it may pass it by one event).
const CHUNK_BYTES: usize = 16 * 1024;

/// What a chunk's buffer starts with: one small event fits without growing.
const CHUNK_START: usize = 512;

/// The keep-alive comment.
const KEEP_ALIVE: &[u8] = b":\n\n";

/// Writes one event (a stream item) as one complete SSE event into the chunk being built.
pub trait EncodeEvent: Send + 'static {
    /// Appends the SSE event of `item` to `out`.
    fn encode(&mut self, item: Result<StreamEvent, A2aError>, out: &mut Vec<u8>);
}

impl<F> EncodeEvent for F
where
    F: FnMut(Result<StreamEvent, A2aError>, &mut Vec<u8>) + Send + 'static,
{
    fn encode(&mut self, item: Result<StreamEvent, A2aError>, out: &mut Vec<u8>) {
        self(item, out)
    }
}

/// Appends one SSE event to `out`: `event: NAME` when given, then `data: ` and what `data`
/// writes, then `id: ID` when given, then the blank line. `data` writes one JSON text, which
/// holds no line break; should it hold one anyway, each of its lines becomes a `data:` line
/// (what a reader joins back with `\n`). When `data` fails, nothing is appended and its error
/// is returned.
pub fn write_event<E>(
    out: &mut Vec<u8>,
    event: Option<&str>,
    id: Option<u64>,
    data: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let start = out.len();
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    let data_start = out.len();
    if let Err(e) = data(out) {
        out.truncate(start);
        return Err(e);
    }
    let written = &out[data_start..];
    if written.contains(&b'\n') || written.contains(&b'\r') {
        split_data_lines(out, data_start);
    }
    out.push(b'\n');
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(itoa_u64(id).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    Ok(())
}

/// Rewrites the data after `from` so that each of its lines (split at `\r\n`, `\n` or `\r`)
/// is a `data:` line of its own.
fn split_data_lines(out: &mut Vec<u8>, from: usize) {
    let data = out.split_off(from);
    let mut first = true;
    let mut rest = &data[..];
    loop {
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(rest.len());
        if !first {
            out.extend_from_slice(b"\ndata: ");
        }
        first = false;
        out.extend_from_slice(&rest[..end]);
        if end == rest.len() {
            break;
        }
        let skip = if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
    }
}

/// The decimal digits of a `u64`, without allocating.
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn itoa_u64(mut n: u64) -> Digits {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    Digits { buf, start: i }
}

/// An [`EventStream`] as SSE body chunks (see the module docs). It ends when the events end.
pub struct SseWriter<E> {
    events: EventStream,
    encode: E,
    interval: Duration,
    /// Armed once the stream first waits for an event; reset by every chunk.
    keep_alive: Option<Pin<Box<tokio::time::Sleep>>>,
    done: bool,
}

impl<E: EncodeEvent> SseWriter<E> {
    /// The events of `events`, each written by `encode`, with a keep-alive comment after
    /// every `keep_alive` without an event.
    pub fn new(events: EventStream, keep_alive: Duration, encode: E) -> Self {
        Self {
            events,
            encode,
            interval: keep_alive,
            keep_alive: None,
            done: false,
        }
    }
}

impl<E: EncodeEvent + Unpin> Stream for SseWriter<E> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut chunk: Vec<u8> = Vec::new();
        while !this.done && chunk.len() < CHUNK_BYTES {
            match this.events.poll_next_unpin(cx) {
                Poll::Ready(Some(item)) => {
                    if chunk.capacity() == 0 {
                        chunk.reserve(CHUNK_START);
                    }
                    this.encode.encode(item, &mut chunk);
                }
                Poll::Ready(None) => this.done = true,
                Poll::Pending => break,
            }
        }
        let deadline = || tokio::time::Instant::now() + this.interval;
        if !chunk.is_empty() {
            if let Some(timer) = this.keep_alive.as_mut() {
                timer.as_mut().reset(deadline());
            }
            return Poll::Ready(Some(Ok(Bytes::from(chunk))));
        }
        if this.done {
            return Poll::Ready(None);
        }
        let timer = this
            .keep_alive
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline())));
        if timer.as_mut().poll(cx).is_ready() {
            timer.as_mut().reset(deadline());
            return Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
#[path = "sse_writer/tests.rs"]
mod tests;
