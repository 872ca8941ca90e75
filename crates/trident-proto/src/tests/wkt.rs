//! The Timestamp/Struct/Value newtypes of `src/wkt.rs`: canonical JSON and unchanged protobuf.

use prost::Message as _;
use serde_json::json;

use super::{JAN5_10H, golden, object, to_json, ts};
use crate::wkt::{Struct, Timestamp, Value};
use crate::{Message, Part, Task, TaskState, TaskStatus};

#[test]
fn timestamp_json_forms() {
    // RFC 3339 in UTC with `Z`, and 0, 3, 6 or 9 fractional digits.
    let cases = [
        (ts(JAN5_10H, 0), "2026-01-05T10:00:00Z"),
        (ts(JAN5_10H, 123_000_000), "2026-01-05T10:00:00.123Z"),
        (ts(JAN5_10H, 100_000_000), "2026-01-05T10:00:00.100Z"),
        (ts(JAN5_10H, 123_456_000), "2026-01-05T10:00:00.123456Z"),
        (ts(JAN5_10H, 123_456_789), "2026-01-05T10:00:00.123456789Z"),
        (ts(0, 0), "1970-01-01T00:00:00Z"),
        (ts(-1, 999_999_999), "1969-12-31T23:59:59.999999999Z"),
        (ts(253_402_300_799, 0), "9999-12-31T23:59:59Z"),
    ];
    for (value, text) in cases {
        golden(&value, &format!("\"{text}\""));
    }
}

/// Found by `fuzz/`'s protojson_requests: an offset moved a time out of the Timestamp range,
/// and we then wrote `"-0001-12-31T23:00:00Z"`, which no ProtoJSON parser (ours included)
/// reads. Out-of-range times are refused both ways.
#[test]
fn timestamp_range() {
    let read = |text: &str| serde_json::from_str::<Timestamp>(&format!("\"{text}\""));
    for text in [
        "0000-01-01T00:00:00+01:00",
        "0000-12-31T23:59:59Z",
        "9999-12-31T23:59:59-00:01",
    ] {
        assert!(read(text).is_err(), "{text}");
    }
    assert_eq!(
        read("0001-01-01T00:00:00Z").ok(),
        Some(ts(-62_135_596_800, 0))
    );
    assert_eq!(
        read("9999-12-31T23:59:59.999999999Z").ok(),
        Some(ts(253_402_300_799, 999_999_999))
    );
    for bad in [
        ts(-62_135_596_801, 0),
        ts(253_402_300_800, 0),
        ts(0, -1),
        ts(0, 1_000_000_000),
    ] {
        assert!(serde_json::to_string(&bad).is_err(), "{bad:?}");
    }
}

#[test]
fn timestamp_nanos() {
    for nanos in [0, 1, -1, 1_767_607_200_123_000_000, -1_000_000_001] {
        assert_eq!(Timestamp::from_unix_nanos(nanos).unix_nanos(), nanos);
    }
    assert_eq!(Timestamp::from_unix_nanos(-1), ts(-1, 999_999_999));
    assert_eq!(
        Timestamp::from_unix_nanos(1_767_607_200_123_000_000),
        ts(JAN5_10H, 123_000_000)
    );

    // `now` is truncated to milliseconds, so it prints with 0 or 3 fractional digits.
    let now = Timestamp::now();
    assert_eq!(now.nanos % 1_000_000, 0);
    assert!(now.seconds > JAN5_10H - 365 * 86_400);
    let text = to_json(&now);
    let text = text.as_str().expect("a string");
    assert!(text.ends_with('Z'), "{text}");
    assert!(text.len() == 20 || text.len() == 24, "{text}");
}

#[test]
fn value_numbers() {
    let cases = [
        (json!(0), "0"),
        (json!(-0.0), "0"),
        (json!(1.0), "1"),
        (json!(-7), "-7"),
        (json!(0.25), "0.25"),
        (json!(9_007_199_254_740_992_u64), "9007199254740992"), // 2^53, the largest exact integer
        (json!(1e300), "1e+300"),
        (json!(-1.5e-7), "-1.5e-7"),
    ];
    for (input, output) in cases {
        let value = Value::from_json(input.clone());
        assert_eq!(
            serde_json::to_string(&value).expect("serializes"),
            output,
            "{input}"
        );
    }
    // Non-finite numbers have no JSON form.
    let nan = Value(pbjson_types::Value {
        kind: Some(pbjson_types::value::Kind::NumberValue(f64::NAN)),
    });
    assert!(serde_json::to_string(&nan).is_err());
    // An unset kind is written as null.
    assert_eq!(
        serde_json::to_string(&Value::default()).expect("serializes"),
        "null"
    );
}

#[test]
fn struct_and_value_round_trip() {
    let doc = json!({"a": [1, 2.5, "x", true, null, {"b": []}], "c": {}, "d": -3});
    golden(&object(doc.clone()), &doc.to_string());
    golden(&Value::from_json(doc.clone()), &doc.to_string());
    golden(&Struct::default(), "{}");
    // Deref reaches the pbjson-types value.
    assert_eq!(object(doc).fields.len(), 3);
}

#[test]
fn struct_and_value_are_read_as_from_json_reads_them_and_refuse_a_repeated_key() {
    // Read straight from the parser, with no serde_json::Value in between, they are what
    // from_json makes of the same document: nulls are NullValue, numbers f64.
    let doc = json!({"a": [1, -2, 2.5, 1e300, "x", true, null, {"b": [], "c": null}], "c": {},
                     "d": 18446744073709551615u64, "e": "\u{e9}"});
    let text = doc.to_string();
    let read: Struct = serde_json::from_str(&text).expect("a Struct");
    assert_eq!(read, object(doc.clone()));
    let read: Value = serde_json::from_str(&text).expect("a Value");
    assert_eq!(read, Value::from_json(doc.clone()));
    // From a serde_json::Value as well (the v0.3 layer reads through one).
    let read: Struct = serde_json::from_value(doc.clone()).expect("a Struct");
    assert_eq!(read, object(doc));
    // A Struct is an object.
    assert!(serde_json::from_str::<Struct>("[1]").is_err());
    // A key twice, at any level, is an error.
    for repeated in [r#"{"a":1,"a":2}"#, r#"{"x":[{"a":1,"b":0,"a":1}]}"#] {
        let e = serde_json::from_str::<Struct>(repeated).expect_err(repeated);
        assert!(e.to_string().contains(r#"duplicate key "a""#), "{e}");
        let e = serde_json::from_str::<Value>(repeated).expect_err(repeated);
        assert!(e.to_string().contains(r#"duplicate key "a""#), "{e}");
    }
}

#[test]
fn protobuf_encoding_is_unchanged() {
    // The newtypes encode like the wrapped pbjson-types messages...
    let stamp = ts(JAN5_10H, 123_000_000);
    assert_eq!(stamp.encode_to_vec(), stamp.0.encode_to_vec());
    let metadata = object(json!({"k": [1, "v"]}));
    assert_eq!(metadata.encode_to_vec(), metadata.0.encode_to_vec());

    // ... and a message using them survives a binary round trip.
    let task = Task {
        id: "t".into(),
        status: Some(TaskStatus {
            state: TaskState::Working as i32,
            message: Some(Message::agent(
                "m",
                vec![Part::data(json!({"rows": [1, 2, 3]}))],
            )),
            timestamp: Some(stamp),
        }),
        metadata: Some(metadata),
        ..Default::default()
    };
    let decoded = Task::decode(task.encode_to_vec().as_slice()).expect("decodes");
    assert_eq!(decoded, task);
}
