//! A schema-aware pre-scan of protobuf bytes: counts what decoding them would allocate before
//! prost decodes anything.
//!
//! Decoding allocates per value, and protobuf is compact: an empty `Part` is two bytes on the
//! wire and over a hundred decoded, so a 4 MiB request of empty parts would take hundreds of MiB
//! before any limit on parts could apply. [`scan`] walks the wire format with the message's
//! descriptor (from [`FILE_DESCRIPTOR_SET`](crate::FILE_DESCRIPTOR_SET)), counting every field
//! occurrence at every level (and every element of a packed repeated field), recursing only into
//! fields whose type is a message, and stops as soon as a [`Bounds`] is passed. It allocates
//! nothing and reads every byte at most once.
//!
//! Unknown fields are counted but not entered (prost skips them without allocating); groups,
//! which proto3 has no use for, are walked like unknown messages.

use std::sync::LazyLock;

pub use prost_reflect::{DescriptorError, DescriptorPool, MessageDescriptor};
use prost_reflect::{FieldDescriptor, Kind};

/// How much one message may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Field occurrences (and packed elements), counted across every level of nesting.
    pub values: usize,
    /// Nesting depth: the top-level message's fields are at depth 1.
    pub depth: usize,
}

/// Why [`scan`] refused a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// More values than [`Bounds::values`].
    #[error("the message holds more than {0} protobuf values")]
    TooManyValues(usize),
    /// Nested deeper than [`Bounds::depth`].
    #[error("the message is nested deeper than {0} levels")]
    TooDeep(usize),
    /// Not valid protobuf wire format (so not decodable either).
    #[error("the message is not valid protobuf: {0}")]
    Malformed(&'static str),
}

/// The descriptors of [`FILE_DESCRIPTOR_SET`](crate::FILE_DESCRIPTOR_SET), decoded once.
pub fn descriptor_pool() -> Result<&'static DescriptorPool, &'static DescriptorError> {
    static POOL: LazyLock<Result<DescriptorPool, DescriptorError>> =
        LazyLock::new(|| DescriptorPool::decode(crate::FILE_DESCRIPTOR_SET));
    POOL.as_ref()
}

/// The request message of every `A2AService` method, by gRPC path
/// (`/lf.a2a.v1.A2AService/SendMessage` → `lf.a2a.v1.SendMessageRequest`).
pub fn request_messages() -> Result<Vec<(String, MessageDescriptor)>, &'static DescriptorError> {
    let pool = descriptor_pool()?;
    Ok(pool
        .get_service_by_name(crate::SERVICE_NAME)
        .into_iter()
        .flat_map(|service| {
            service
                .methods()
                .map(|m| (format!("/{}/{}", crate::SERVICE_NAME, m.name()), m.input()))
                .collect::<Vec<_>>()
        })
        .collect())
}

/// Walks `bytes`, a message of type `message`, and returns how many values it holds; refuses
/// it past `bounds` or when it is not well-formed protobuf.
pub fn scan(message: &MessageDescriptor, bytes: &[u8], bounds: Bounds) -> Result<usize, ScanError> {
    let mut walker = Walker {
        bytes,
        pos: 0,
        values: 0,
        bounds,
    };
    walker.message(Some(message), bytes.len(), 1, None)?;
    Ok(walker.values)
}

struct Walker<'a> {
    bytes: &'a [u8],
    pos: usize,
    values: usize,
    bounds: Bounds,
}

/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const START_GROUP: u64 = 3;
const END_GROUP: u64 = 4;
const FIXED32: u64 = 5;

impl Walker<'_> {
    fn count(&mut self, n: usize) -> Result<(), ScanError> {
        self.values = self.values.saturating_add(n);
        if self.values > self.bounds.values {
            return Err(ScanError::TooManyValues(self.bounds.values));
        }
        Ok(())
    }

    fn varint(&mut self, end: usize) -> Result<u64, ScanError> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = *self
                .bytes
                .get(self.pos)
                .filter(|_| self.pos < end)
                .ok_or(ScanError::Malformed("truncated varint"))?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ScanError::Malformed("varint longer than 10 bytes"))
    }

    fn skip(&mut self, n: usize, end: usize) -> Result<(), ScanError> {
        match self.pos.checked_add(n) {
            Some(next) if next <= end => {
                self.pos = next;
                Ok(())
            }
            _ => Err(ScanError::Malformed(
                "field runs past the end of its message",
            )),
        }
    }

    /// The fields of one message (or group) ending at `end` whose fields sit at `depth`;
    /// `message` is its type when known.
    fn message(
        &mut self,
        message: Option<&MessageDescriptor>,
        end: usize,
        depth: usize,
        group: Option<u64>,
    ) -> Result<(), ScanError> {
        if depth > self.bounds.depth {
            return Err(ScanError::TooDeep(self.bounds.depth));
        }
        while self.pos < end {
            let key = self.varint(end)?;
            let (number, wire_type) = (key >> 3, key & 7);
            if number == 0 || number > u64::from(u32::MAX >> 3) {
                return Err(ScanError::Malformed("invalid field number"));
            }
            if wire_type == END_GROUP {
                return match group {
                    Some(g) if g == number => Ok(()),
                    _ => Err(ScanError::Malformed("unexpected end-group")),
                };
            }
            self.count(1)?;
            let field = message.and_then(|m| m.get_field(u32::try_from(number).ok()?));
            match wire_type {
                VARINT => {
                    self.varint(end)?;
                }
                FIXED64 => self.skip(8, end)?,
                FIXED32 => self.skip(4, end)?,
                LEN => {
                    let len = usize::try_from(self.varint(end)?)
                        .map_err(|_| ScanError::Malformed("length out of range"))?;
                    let start = self.pos;
                    self.skip(len, end)?;
                    self.length_delimited(field.as_ref(), start, self.pos, depth)?;
                }
                START_GROUP => {
                    let inner = field.as_ref().and_then(message_type);
                    self.message(inner.as_ref(), end, depth + 1, Some(number))?;
                }
                _ => return Err(ScanError::Malformed("invalid wire type")),
            }
        }
        if group.is_some() {
            return Err(ScanError::Malformed("unterminated group"));
        }
        Ok(())
    }

    /// The payload `start..end` of a length-delimited field: entered when it is a message,
    /// counted element by element when it is a packed repeated scalar, skipped otherwise.
    fn length_delimited(
        &mut self,
        field: Option<&FieldDescriptor>,
        start: usize,
        end: usize,
        depth: usize,
    ) -> Result<(), ScanError> {
        let Some(field) = field else {
            return Ok(());
        };
        let kind = field.kind();
        if let Kind::Message(inner) = &kind {
            let resume = self.pos;
            self.pos = start;
            self.message(Some(inner), end, depth + 1, None)?;
            self.pos = resume;
            return Ok(());
        }
        if !field.is_list() {
            return Ok(());
        }
        let payload = self.bytes.get(start..end).unwrap_or_default();
        let elements = match kind {
            Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => payload.len() / 8,
            Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => payload.len() / 4,
            Kind::Int32
            | Kind::Int64
            | Kind::Uint32
            | Kind::Uint64
            | Kind::Sint32
            | Kind::Sint64
            | Kind::Bool
            | Kind::Enum(_) => payload.iter().filter(|b| **b & 0x80 == 0).count(),
            Kind::String | Kind::Bytes | Kind::Message(_) => 0,
        };
        self.count(elements)
    }
}

fn message_type(field: &FieldDescriptor) -> Option<MessageDescriptor> {
    match field.kind() {
        Kind::Message(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
