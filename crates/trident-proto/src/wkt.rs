//! Well-known types whose canonical ProtoJSON we write ourselves.
//!
//! pbjson-types gets two things wrong on output: `Timestamp` comes out with a `+00:00` offset
//! (the spec requires `Z`), and integral numbers inside `Struct`/`Value` come out as `1.0`. These
//! newtypes wrap the pbjson-types values unchanged (same protobuf encoding, same parser) and only
//! replace the serializer. The generated A2A messages use them through `extern_path`.

use std::collections::hash_map::Entry;
use std::ops::{Deref, DerefMut};

use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! wkt_newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Default, Debug)]
        pub struct $name(pub $inner);

        impl prost::Message for $name {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                self.0.encode_raw(buf)
            }
            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), prost::DecodeError> {
                self.0.merge_field(tag, wire_type, buf, ctx)
            }
            fn encoded_len(&self) -> usize {
                self.0.encoded_len()
            }
            fn clear(&mut self) {
                self.0.clear()
            }
        }

        impl Deref for $name {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.0
            }
        }

        impl DerefMut for $name {
            fn deref_mut(&mut self) -> &mut $inner {
                &mut self.0
            }
        }

        impl From<$inner> for $name {
            fn from(inner: $inner) -> Self {
                Self(inner)
            }
        }

        impl From<$name> for $inner {
            fn from(outer: $name) -> Self {
                outer.0
            }
        }
    };
}

wkt_newtype!(
    /// `google.protobuf.Timestamp`, written as RFC 3339 in UTC with `Z` and 0, 3, 6 or 9
    /// fractional digits; any RFC 3339 offset is accepted on input.
    Timestamp(pbjson_types::Timestamp)
);
wkt_newtype!(
    /// `google.protobuf.Struct`: a JSON object.
    Struct(pbjson_types::Struct)
);
wkt_newtype!(
    /// `google.protobuf.Value`: any JSON value.
    Value(pbjson_types::Value)
);

/// The range of a `Timestamp` (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z): the
/// pbjson-types parser takes an offset that moves a time out of it (`0000-01-01T00:00:00+01:00`
/// read as year -1, which chrono would then print as `-0001-…`, found by `fuzz/`'s
/// protojson_requests), so both directions check it.
const MIN_SECONDS: i64 = -62_135_596_800;
const MAX_SECONDS: i64 = 253_402_300_799;
const OUT_OF_RANGE: &str =
    "a Timestamp must lie from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z";

fn in_range(t: &pbjson_types::Timestamp) -> bool {
    (MIN_SECONDS..=MAX_SECONDS).contains(&t.seconds) && (0..1_000_000_000).contains(&t.nanos)
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = pbjson_types::Timestamp::deserialize(d)?;
        if !in_range(&t) {
            return Err(serde::de::Error::custom(OUT_OF_RANGE));
        }
        Ok(Self(t))
    }
}

// `Struct` and `Value` are read with visitors of our own rather than with the pbjson-types
// parser: that parser reads a JSON `null` (a struct member, a list element) as a `Value` with
// no `kind` instead of `NullValue` (invalid on the protobuf wire: Go's protojson refuses to
// print it), and keeps the last of a key given twice. Ours build the pbjson-types values
// straight from the parser, with no `serde_json::Value` in between (which took as much memory
// again as the result while it was converted), and refuse a repeated key.

impl<'de> Deserialize<'de> for Struct {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ValueVisitor).and_then(|v| match v.kind {
            Some(pbjson_types::value::Kind::StructValue(s)) => Ok(Self(s)),
            _ => Err(serde::de::Error::custom("a Struct must be a JSON object")),
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(Self)
    }
}

/// Reads any JSON value as a `google.protobuf.Value`.
struct ValueVisitor;

/// A `Value` of `kind`.
fn value(kind: pbjson_types::value::Kind) -> pbjson_types::Value {
    pbjson_types::Value { kind: Some(kind) }
}

/// Reads a `google.protobuf.Value` (with [`ValueVisitor`]) where a seed is asked for.
struct ValueSeed;

impl<'de> serde::de::DeserializeSeed<'de> for ValueSeed {
    type Value = pbjson_types::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueVisitor {
    type Value = pbjson_types::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::NullValue(0)))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::BoolValue(b)))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::NumberValue(n as f64)))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::NumberValue(n as f64)))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::NumberValue(n)))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::StringValue(s.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(value(pbjson_types::value::Kind::StringValue(s)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(ValueSeed)? {
            values.push(v);
        }
        Ok(value(pbjson_types::value::Kind::ListValue(
            pbjson_types::ListValue { values },
        )))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields =
            std::collections::HashMap::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(ValueSeed)?;
            match fields.entry(key) {
                Entry::Occupied(e) => {
                    return Err(serde::de::Error::custom(format!(
                        "duplicate key {:?}",
                        e.key()
                    )));
                }
                Entry::Vacant(e) => {
                    e.insert(v);
                }
            }
        }
        Ok(value(pbjson_types::value::Kind::StructValue(
            pbjson_types::Struct { fields },
        )))
    }
}

impl Eq for Timestamp {}

impl std::hash::Hash for Timestamp {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.hash(h)
    }
}

impl Timestamp {
    /// The current time, truncated to milliseconds (the precision the spec asks for).
    pub fn now() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self::from_unix_nanos(now.as_nanos() as i128 / 1_000_000 * 1_000_000)
    }

    /// Builds a timestamp from nanoseconds since the Unix epoch.
    pub fn from_unix_nanos(nanos: i128) -> Self {
        Self(pbjson_types::Timestamp {
            seconds: nanos.div_euclid(1_000_000_000) as i64,
            nanos: nanos.rem_euclid(1_000_000_000) as i32,
        })
    }

    /// Nanoseconds since the Unix epoch (a total order over timestamps).
    pub fn unix_nanos(&self) -> i128 {
        i128::from(self.0.seconds) * 1_000_000_000 + i128::from(self.0.nanos)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !in_range(&self.0) {
            return Err(serde::ser::Error::custom(OUT_OF_RANGE));
        }
        let t: chrono::DateTime<chrono::Utc> =
            self.0.try_into().map_err(serde::ser::Error::custom)?;
        s.serialize_str(&t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
    }
}

impl Serialize for Struct {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StructRef(&self.0).serialize(s)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ValueRef(&self.0).serialize(s)
    }
}

impl Struct {
    /// Converts a JSON object into a `Struct`.
    pub fn from_json(map: serde_json::Map<String, serde_json::Value>) -> Self {
        Self(pbjson_types::Struct {
            fields: map
                .into_iter()
                .map(|(k, v)| (k, Value::from_json(v).0))
                .collect(),
        })
    }
}

impl Value {
    /// Converts any JSON value into a `Value`.
    pub fn from_json(v: serde_json::Value) -> Self {
        use pbjson_types::value::Kind;
        let kind = match v {
            serde_json::Value::Null => Kind::NullValue(0),
            serde_json::Value::Bool(b) => Kind::BoolValue(b),
            serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
            serde_json::Value::String(s) => Kind::StringValue(s),
            serde_json::Value::Array(a) => Kind::ListValue(pbjson_types::ListValue {
                values: a.into_iter().map(|v| Value::from_json(v).0).collect(),
            }),
            serde_json::Value::Object(o) => Kind::StructValue(Struct::from_json(o).0),
        };
        Self(pbjson_types::Value { kind: Some(kind) })
    }
}

struct StructRef<'a>(&'a pbjson_types::Struct);
struct ValueRef<'a>(&'a pbjson_types::Value);

impl Serialize for StructRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.fields.len()))?;
        for (k, v) in &self.0.fields {
            map.serialize_entry(k, &ValueRef(v))?;
        }
        map.end()
    }
}

/// Largest integer an f64 holds exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

impl Serialize for ValueRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use pbjson_types::value::Kind;
        match &self.0.kind {
            None | Some(Kind::NullValue(_)) => s.serialize_unit(),
            Some(Kind::BoolValue(b)) => s.serialize_bool(*b),
            Some(Kind::NumberValue(n)) if !n.is_finite() => {
                Err(serde::ser::Error::custom("a JSON number must be finite"))
            }
            Some(Kind::NumberValue(n)) if n.fract() == 0.0 && n.abs() <= MAX_EXACT => {
                s.serialize_i64(*n as i64)
            }
            Some(Kind::NumberValue(n)) => s.serialize_f64(*n),
            Some(Kind::StringValue(v)) => s.serialize_str(v),
            Some(Kind::StructValue(v)) => StructRef(v).serialize(s),
            Some(Kind::ListValue(l)) => {
                let mut seq = s.serialize_seq(Some(l.values.len()))?;
                for v in &l.values {
                    seq.serialize_element(&ValueRef(v))?;
                }
                seq.end()
            }
        }
    }
}
