//! Unit tests of the generated types against the A2A v1.0 digest
//! (`/work/shared/spec/A2A-V1-DIGEST.md`):
//!
//! - `descriptor`: `FILE_DESCRIPTOR_SET` against the digest tables (messages, fields, REQUIRED,
//!   service, HTTP rules, enums); the field table itself is in `facts`,
//! - `golden`: exact ProtoJSON output and lossless round trips of the digest's examples,
//! - `lenient`: inputs ProtoJSON parsers must accept (snake_case, unknown fields, `null`, enum
//!   numbers, timestamp offsets, base64 alphabets, explicit presence),
//! - `wkt`: our Timestamp/Struct/Value newtypes,
//! - `ext`: the helpers of `src/ext.rs`,
//! - `builders`: the builders of `src/builders.rs`, and the JSON they produce.

mod builders;
mod descriptor;
mod ext;
mod facts;
mod golden;
mod lenient;
mod wkt;

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::wkt::{Struct, Timestamp};

/// 2026-01-05T10:00:00Z in seconds since the Unix epoch.
const JAN5_10H: i64 = 1_767_607_200;
/// 2026-01-05T10:05:00Z.
const JAN5_10H05: i64 = 1_767_607_500;
/// 2026-01-01T00:00:00Z.
const JAN1: i64 = 1_767_225_600;

/// The golden check: `value` serializes to `json` (compared as JSON values, so key order and
/// whitespace do not matter, but `1` and `1.0` do), and `json` parses back to `value`.
#[track_caller]
fn golden<T>(value: &T, json: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let expected: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("invalid golden JSON ({e}): {json}"));
    let text = serde_json::to_string(value).expect("the value serializes");
    let actual: serde_json::Value = serde_json::from_str(&text).expect("the output is JSON");
    assert_eq!(
        actual, expected,
        "serialized form\n  actual: {text}\nexpected: {json}"
    );
    let parsed: T = parse(json);
    assert_eq!(&parsed, value, "parsing {json}");
}

/// Parses `json` as a `T`, panicking with the input on error.
#[track_caller]
fn parse<T: DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("does not parse ({e}): {json}"))
}

/// Serializes `value` to a JSON value.
#[track_caller]
fn to_json<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("the value serializes")
}

/// A timestamp from seconds and nanoseconds since the Unix epoch.
fn ts(seconds: i64, nanos: i32) -> Timestamp {
    Timestamp(pbjson_types::Timestamp { seconds, nanos })
}

/// A `Struct` from a JSON object literal.
#[track_caller]
fn object(value: serde_json::Value) -> Struct {
    match value {
        serde_json::Value::Object(map) => Struct::from_json(map),
        other => panic!("not a JSON object: {other}"),
    }
}

/// Found by `fuzz/`'s protojson_requests: serde_json's default number parser is not correctly
/// rounded, so a metadata number changed each time it went through ProtoJSON and back.
#[test]
fn struct_numbers_survive_protojson_round_trips() {
    let json = r#"{"id":"t","metadata":{"n":-1.09007199296666666666,"m":-1.0900719929666667}}"#;
    let first: crate::CancelTaskRequest = parse(json);
    let again: crate::CancelTaskRequest =
        parse(&serde_json::to_string(&first).expect("serializes"));
    assert_eq!(first, again);
    let number = |r: &crate::CancelTaskRequest, k: &str| match r
        .metadata
        .as_ref()
        .and_then(|m| m.fields.get(k))
        .and_then(|v| v.kind.clone())
    {
        Some(pbjson_types::value::Kind::NumberValue(n)) => n,
        other => panic!("{other:?}"),
    };
    let exact: f64 = "-1.09007199296666666666".parse().expect("f64");
    assert_eq!(number(&first, "n"), exact);
    assert_eq!(number(&first, "m"), exact);
}
