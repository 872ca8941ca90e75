//! The SSE reader both HTTP clients use: the WHATWG "event stream" interpretation
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>)
//! as an incremental decoder with a size bound, and [`sse_events`], the same over a stream of
//! body chunks.
//!
//! Ours rather than a crate's: eventsource-stream 0.2 panicked on a body opening with a
//! UTF-8 BOM (found by `fuzz/`'s `sse_parser`) and buffers a line without limit, so a server
//! that never ends a line grows the client's memory until it dies. Here an event (its data,
//! type and ID, decoded, plus the line being read) is capped at [`SseDecoder::new`]'s `max_event_bytes` and going
//! over it is an error, never a crash.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use futures::{Stream, StreamExt};

use crate::body::BodyError;

const BOM: &[u8] = "\u{feff}".as_bytes();

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type: the last `event` field, or `message` when it had none.
    pub event: String,
    /// The `data` fields, joined with line feeds.
    pub data: String,
    /// The stream's last event ID when the event was dispatched (the spec keeps it across
    /// events until an `id` field changes it). Shared, not copied, between the events.
    pub id: Arc<str>,
}

/// The incremental SSE decoder: [`feed`](Self::feed) it the body's bytes, cut anywhere, and
/// it queues every event completed so far. Bytes after the last empty line are an event not
/// yet complete; the spec drops them when the body ends, so there is no `finish`.
#[derive(Debug)]
pub struct SseDecoder {
    /// The body's first bytes while they could still be a byte-order mark; `None` once decided.
    head: Option<Vec<u8>>,
    /// The current line, when a chunk ended inside it.
    line: Vec<u8>,
    /// The last byte fed was a CR: an LF opening the next chunk belongs to the same line end.
    after_cr: bool,
    data: String,
    event: String,
    last_id: Arc<str>,
    retry: Option<u64>,
    max: usize,
}

impl SseDecoder {
    /// A decoder refusing events (data, type and ID, plus the line being read) over
    /// `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            head: Some(Vec::new()),
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            event: String::new(),
            last_id: Arc::from(""),
            retry: None,
            max: max_event_bytes,
        }
    }

    /// The reconnection time the stream last set with a `retry` field, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Reads `chunk`, pushing the events it completes onto `out`. After an error the decoder
    /// must not be fed again (the events it had completed are already in `out`).
    pub fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut VecDeque<SseEvent>,
    ) -> Result<(), BodyError<Infallible>> {
        let Some(mut head) = self.head.take() else {
            return self.lines(chunk, out);
        };
        // The spec's UTF-8 decode skips one BOM at the start of the stream.
        head.extend_from_slice(chunk);
        if head.len() < BOM.len() && BOM.starts_with(&head) {
            self.head = Some(head);
            return Ok(());
        }
        let skip = if head.starts_with(BOM) { BOM.len() } else { 0 };
        self.lines(&head[skip..], out)
    }

    fn lines(
        &mut self,
        mut rest: &[u8],
        out: &mut VecDeque<SseEvent>,
    ) -> Result<(), BodyError<Infallible>> {
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.is_empty() {
                self.field(&rest[..end], out)?;
            } else {
                self.bound(self.line.len() + end)?;
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..end]);
                let done = self.field(&line, out);
                line.clear();
                self.line = line;
                done?;
            }
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.bound(self.line.len() + rest.len())?;
        self.line.extend_from_slice(rest);
        Ok(())
    }

    /// Refuses a line that would make the event larger than allowed: what the event holds so
    /// far (data, type and the last event ID, decoded) plus the line's bytes.
    fn bound(&self, line: usize) -> Result<(), BodyError<Infallible>> {
        self.check(
            self.data
                .len()
                .saturating_add(self.event.len())
                .saturating_add(self.last_id.len())
                .saturating_add(line),
        )
    }

    fn check(&self, total: usize) -> Result<(), BodyError<Infallible>> {
        if total > self.max {
            return Err(BodyError::TooLarge { limit: self.max });
        }
        Ok(())
    }

    /// One line, without its terminator.
    fn field(
        &mut self,
        line: &[u8],
        out: &mut VecDeque<SseEvent>,
    ) -> Result<(), BodyError<Infallible>> {
        self.bound(line.len())?;
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        // Field names are compared as bytes: a name with invalid UTF-8 decodes to U+FFFD,
        // which matches no field either. CR and LF are never part of a UTF-8 sequence, so
        // decoding line by line is the spec's decoding of the whole stream.
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return Ok(()),
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        // Decoding may grow a value (each invalid byte becomes a three-byte U+FFFD), so the
        // bound is checked again on what is kept.
        match name {
            b"data" => {
                let value = String::from_utf8_lossy(value);
                self.bound(value.len() + 1)?;
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"event" => {
                let value = String::from_utf8_lossy(value);
                self.check(self.data.len() + self.last_id.len() + value.len())?;
                self.event = value.into_owned();
            }
            b"id" if !value.contains(&0) => {
                let value = String::from_utf8_lossy(value);
                self.check(self.data.len() + self.event.len() + value.len())?;
                self.last_id = Arc::from(&*value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits, so only overflow fails; the spec leaves that case open: ignored.
                if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut VecDeque<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        out.push_back(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
        });
    }
}

struct Reader<S, E> {
    body: std::pin::Pin<Box<S>>,
    decoder: SseDecoder,
    ready: VecDeque<SseEvent>,
    /// The error ending the stream, reported once the events completed before it are out.
    failed: Option<BodyError<E>>,
}

/// The events of an SSE body given as a stream of chunks, each event at most
/// `max_event_bytes`. The stream ends after the first error; an event the body ends in the
/// middle of is dropped, as the spec says.
pub fn sse_events<S, B, E>(
    body: S,
    max_event_bytes: usize,
) -> impl Stream<Item = Result<SseEvent, BodyError<E>>> + use<S, B, E>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let reader = Reader {
        body: Box::pin(body),
        decoder: SseDecoder::new(max_event_bytes),
        ready: VecDeque::new(),
        failed: None,
    };
    futures::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        loop {
            if let Some(event) = reader.ready.pop_front() {
                return Some((Ok(event), Some(reader)));
            }
            if let Some(e) = reader.failed.take() {
                return Some((Err(e), None));
            }
            match reader.body.next().await? {
                Err(e) => reader.failed = Some(BodyError::Body(e)),
                Ok(chunk) => {
                    if let Err(e) = reader.decoder.feed(chunk.as_ref(), &mut reader.ready) {
                        reader.failed = Some(match e {
                            BodyError::TooLarge { limit } => BodyError::TooLarge { limit },
                            BodyError::Body(never) => match never {},
                        });
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests;
