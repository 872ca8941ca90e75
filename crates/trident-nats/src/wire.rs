//! What travels on the bus: the subject of a task and the message of a publish.
//!
//! A message is a small protobuf, [`Envelope`]:
//!
//! ```text
//! message Envelope {
//!   string tenant = 1;            // the task's scope and id, so that the receiver filters
//!   string owner = 2;             //   out another task whose subject hash collides
//!   string task_id = 3;
//!   bytes origin = 4;             // the publishing bus (16 random bytes per process)
//!   repeated Entry events = 5;    // in order
//!   uint64 omitted_through = 6;   // set instead of events too large for one NATS message
//! }
//! message Entry { uint64 seq = 1; lf.a2a.v1.StreamResponse event = 2; }
//! ```
//!
//! The events are the generated [`pb::StreamResponse`], encoded as they are (no second model of
//! the A2A types). The encoder writes the fields by hand from borrowed events (the log holds
//! them in `Arc`s; building an owned `Envelope` would copy each one); the decoder is the
//! derived [`Envelope`], and a test checks that the two agree.

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message as _;
use prost::encoding::{self, WireType};
use trident_core::store::{LoggedEvent, Scope};
use trident_proto as pb;

/// A bus message as decoded (the layout the encoder writes).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Envelope {
    #[prost(string, tag = "1")]
    pub(crate) tenant: String,
    #[prost(string, tag = "2")]
    pub(crate) owner: String,
    #[prost(string, tag = "3")]
    pub(crate) task_id: String,
    #[prost(bytes = "vec", tag = "4")]
    pub(crate) origin: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub(crate) events: Vec<Entry>,
    #[prost(uint64, tag = "6")]
    pub(crate) omitted_through: u64,
}

/// One event of an [`Envelope`].
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Entry {
    #[prost(uint64, tag = "1")]
    pub(crate) seq: u64,
    #[prost(message, optional, tag = "2")]
    pub(crate) event: Option<pb::StreamResponse>,
}

/// What a well-formed message carries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// Events, in increasing sequence order.
    Events(Vec<LoggedEvent>),
    /// The task was committed through this sequence number, but the events were too large
    /// for a NATS message: the receiver reads them from the store.
    Omitted(u64),
}

/// A decoded message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decoded {
    pub(crate) tenant: String,
    pub(crate) owner: String,
    pub(crate) task_id: String,
    pub(crate) origin: Vec<u8>,
    pub(crate) body: Body,
}

impl Decoded {
    /// Whether this message is about that task (and not one whose subject hash collides).
    pub(crate) fn is_about(&self, scope: &Scope, task_id: &str) -> bool {
        self.task_id == task_id && *self.tenant == *scope.tenant && *self.owner == *scope.owner
    }
}

/// Why a message was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("not a bus message: {0}")]
    Protobuf(#[from] prost::DecodeError),
    #[error("an event without a body (seq {0})")]
    MissingEvent(u64),
    #[error("sequence numbers not increasing ({previous} then {next})")]
    Order { previous: u64, next: u64 },
    #[error("neither events nor an omitted range")]
    Empty,
}

/// Reads a bus message.
pub(crate) fn decode(payload: &[u8]) -> Result<Decoded, DecodeError> {
    let envelope = Envelope::decode(payload)?;
    let body = if envelope.events.is_empty() {
        if envelope.omitted_through == 0 {
            return Err(DecodeError::Empty);
        }
        Body::Omitted(envelope.omitted_through)
    } else {
        let mut events = Vec::with_capacity(envelope.events.len());
        let mut previous = 0;
        for entry in envelope.events {
            if entry.seq <= previous {
                return Err(DecodeError::Order {
                    previous,
                    next: entry.seq,
                });
            }
            previous = entry.seq;
            let event = entry.event.ok_or(DecodeError::MissingEvent(entry.seq))?;
            events.push(LoggedEvent {
                seq: entry.seq,
                event: event.into(),
            });
        }
        Body::Events(events)
    };
    Ok(Decoded {
        tenant: envelope.tenant,
        owner: envelope.owner,
        task_id: envelope.task_id,
        origin: envelope.origin,
        body,
    })
}

/// One NATS message of a publish: its payload and the sequence numbers it covers.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub(crate) first: u64,
    pub(crate) last: u64,
    /// Events carried (0 for an omitted range).
    pub(crate) events: usize,
    pub(crate) payload: Bytes,
}

fn put_bytes(tag: u32, value: &[u8], buf: &mut impl BufMut) {
    encoding::encode_key(tag, WireType::LengthDelimited, buf);
    encoding::encode_varint(value.len() as u64, buf);
    buf.put_slice(value);
}

fn bytes_len(tag: u32, value: &[u8]) -> usize {
    encoding::key_len(tag) + encoding::encoded_len_varint(value.len() as u64) + value.len()
}

/// Encodes `events` of a task as one message, or as several when they do not fit in `limit`
/// bytes. An event that does not fit in a message of its own is replaced by an omitted range
/// (the receiver reads it from the store).
pub(crate) fn encode(
    scope: &Scope,
    task_id: &str,
    origin: &[u8],
    events: &[LoggedEvent],
    limit: usize,
) -> Vec<Chunk> {
    let header_len = bytes_len(1, scope.tenant.as_bytes())
        + bytes_len(2, scope.owner.as_bytes())
        + bytes_len(3, task_id.as_bytes())
        + bytes_len(4, origin);
    let header = |buf: &mut BytesMut| {
        put_bytes(1, scope.tenant.as_bytes(), buf);
        put_bytes(2, scope.owner.as_bytes(), buf);
        put_bytes(3, task_id.as_bytes(), buf);
        put_bytes(4, origin, buf);
    };
    let mut parts = Vec::new();
    let mut buf = BytesMut::new();
    // (first, last, count) of the message being filled.
    let mut open: Option<(u64, u64, usize)> = None;
    let close =
        |buf: &mut BytesMut, open: &mut Option<(u64, u64, usize)>, parts: &mut Vec<Chunk>| {
            if let Some((first, last, events)) = open.take() {
                parts.push(Chunk {
                    first,
                    last,
                    events,
                    payload: buf.split().freeze(),
                });
            }
        };
    for e in events {
        let entry_len = encoding::uint64::encoded_len(1, &e.seq)
            + encoding::key_len(2)
            + e.event.length_delimited_len();
        let item_len =
            encoding::key_len(5) + encoding::encoded_len_varint(entry_len as u64) + entry_len;
        if header_len + item_len > limit {
            close(&mut buf, &mut open, &mut parts);
            tracing::warn!(
                task_id,
                seq = e.seq,
                bytes = item_len,
                limit,
                "an event is larger than a NATS message may be: published as an omitted range"
            );
            header(&mut buf);
            encoding::uint64::encode(6, &e.seq, &mut buf);
            parts.push(Chunk {
                first: e.seq,
                last: e.seq,
                events: 0,
                payload: buf.split().freeze(),
            });
            continue;
        }
        if open.is_some() && buf.len() + item_len > limit {
            close(&mut buf, &mut open, &mut parts);
        }
        match &mut open {
            Some((_, last, count)) => {
                *last = e.seq;
                *count += 1;
            }
            None => {
                buf.reserve(header_len + item_len);
                header(&mut buf);
                open = Some((e.seq, e.seq, 1));
            }
        }
        encoding::encode_key(5, WireType::LengthDelimited, &mut buf);
        encoding::encode_varint(entry_len as u64, &mut buf);
        encoding::uint64::encode(1, &e.seq, &mut buf);
        // The event as its store got it (an encoded one is copied, not decoded and encoded).
        encoding::encode_key(2, WireType::LengthDelimited, &mut buf);
        e.event.encode_length_delimited(&mut buf);
    }
    close(&mut buf, &mut open, &mut parts);
    parts
}

/// A stable 64-bit hash of a task's identity (FNV-1a over the tenant, the owner and the id,
/// the first two length-prefixed so that no two identities write the same bytes): the same in
/// every process and every build, unlike `std`'s `DefaultHasher`.
pub(crate) fn task_hash(scope: &Scope, task_id: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(PRIME);
        }
    };
    feed(&(scope.tenant.len() as u64).to_le_bytes());
    feed(scope.tenant.as_bytes());
    feed(&(scope.owner.len() as u64).to_le_bytes());
    feed(scope.owner.as_bytes());
    feed(task_id.as_bytes());
    hash
}
