use super::*;
use trident_core::{ErrorKind, JSON_MEMORY_SLACK};

fn send(parts: usize) -> String {
    let parts = vec![r#"{"text":""}"#; parts].join(",");
    format!(r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{parts}]}}}}"#)
}

fn parse(body: &[u8]) -> Result<pb::SendMessageRequest, A2aError> {
    parse_request(body, JsonLimits::default())
}

#[test]
fn a_body_of_many_tiny_values_is_refused_before_decoding() {
    // The adversarial run: 300 k empty parts in 3.9 MB peaked at 84 MB decoded.
    let err = parse(send(300_000).as_bytes()).expect_err("too many values");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.metadata().contains_key("maxValues"), "{err}");
    // With no memory budget, the bound on values still holds.
    let unbounded = JsonLimits::UNBOUNDED;
    let err = parse_request::<pb::SendMessageRequest>(send(300_000).as_bytes(), unbounded)
        .expect_err("too many values");
    assert_eq!(
        err.metadata().get("maxValues").map(String::as_str),
        Some("65536")
    );
    // Many values in an array of strings count too.
    let ids = vec![r#""""#; 70_000].join(",");
    let body = format!(r#"{{"message":{{"messageId":"m","extensions":[{ids}]}}}}"#);
    assert!(parse(body.as_bytes()).is_err());
}

#[test]
fn ordinary_bodies_and_punctuation_inside_strings_pass() {
    let ok = parse(send(256).as_bytes()).expect("256 parts");
    assert_eq!(ok.message.map(|m| m.parts.len()), Some(256));
    // Brackets, commas and escaped quotes inside a string are text, not values.
    let text = r#"[{,}]\" ,,, {[\\"#.repeat(20_000);
    let body = format!(
        r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}"#
    );
    let ok = parse(body.as_bytes()).expect("one long text");
    assert_eq!(ok.message.map(|m| m.parts.len()), Some(1));
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!(
        r#"{{"message":{{"messageId":"m","metadata":{}1{}}}}}"#,
        r#"{"a":"#.repeat(70),
        "}".repeat(70)
    );
    let err = parse(deep.as_bytes()).expect_err("too deep");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("deeper"), "{err}");
}

#[test]
fn a_key_twice_in_metadata_is_refused_naming_it() {
    let body = br#"{"message":{"messageId":"m","parts":[{"text":"x","metadata":{"a":1,"b":{"c":1,"c":2}}}]}}"#;
    let err = parse(body).expect_err("a duplicate key");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains(r#""c""#), "{err}");
    assert!(
        err.message().contains("message.parts[0].metadata.b"),
        "{err}"
    );
    // What the pre-scan lets through (no scan when a caller decodes by itself), the decoder
    // refuses too.
    let err = serde_json::from_str::<pb::wkt::Struct>(r#"{"a":1,"a":2}"#).expect_err("dup");
    assert!(err.to_string().contains("duplicate key"), "{err}");
}

/// The peak of the bytes allocated on this thread while `f` runs.
fn peak<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let mut out = None;
    let info = allocation_counter::measure(|| out = Some(f()));
    let out = out.expect("measured");
    (out, usize::try_from(info.bytes_max).unwrap_or(usize::MAX))
}

/// A SendMessage body whose message metadata holds `keys` members, each value a string of
/// `len` bytes.
fn metadata(keys: usize, len: usize) -> String {
    let v = "v".repeat(len);
    let members: Vec<String> = (0..keys).map(|i| format!(r#""k{i:06}":"{v}""#)).collect();
    format!(
        r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"x"}}],"metadata":{{{}}}}}}}"#,
        members.join(",")
    )
}

#[test]
fn decoding_a_body_takes_at_most_four_times_its_size_and_a_mebibyte() {
    let limits = JsonLimits::default();
    let numbers = vec!["1"; 60_000].join(",");
    let empty_objects: Vec<String> = (0..30_000).map(|i| format!(r#""{i}":{{}}"#)).collect();
    let parts = vec![format!(r#"{{"text":"{}"}}"#, "t".repeat(200)); 10_000].join(",");
    // (what, body, decoded rather than refused)
    let cases: Vec<(&str, String, bool)> = vec![
        // The report: 65 k metadata keys in 4 MB peaked at 32-65 MB per request.
        ("65 k keys in 4 MB", metadata(65_000, 48), false),
        ("65 k keys, empty values", metadata(65_000, 0), false),
        ("30 k keys in 4 MB", metadata(30_000, 120), true),
        ("15 k keys in 4 MB", metadata(15_000, 250), true),
        // Where the map of a Struct grows (past 57 344 members) and its old table is still
        // held: the most a member costs.
        ("57 k keys in 6 MB", metadata(57_345, 90), true),
        ("60 k empty parts", send(60_000), false),
        (
            "10 k parts of 200 bytes",
            format!(r#"{{"message":{{"messageId":"m","parts":[{parts}]}}}}"#),
            true,
        ),
        (
            "60 k numbers in a data part",
            format!(r#"{{"message":{{"messageId":"m","parts":[{{"data":[{numbers}]}}]}}}}"#),
            false,
        ),
        (
            "30 k empty objects",
            format!(
                r#"{{"message":{{"messageId":"m","metadata":{{{}}}}}}}"#,
                empty_objects.join(",")
            ),
            false,
        ),
        ("1 500 empty parts", send(1_500), true),
        // An embedding: 4 096 numbers in a data part (37 KB), each element weighed as half a
        // value.
        (
            "4 096 numbers in a data part",
            format!(
                r#"{{"message":{{"messageId":"m","parts":[{{"data":[{}]}}]}}}}"#,
                vec!["0.123456"; 4_096].join(",")
            ),
            true,
        ),
        (
            "7 k short strings in a data part",
            format!(
                r#"{{"message":{{"messageId":"m","parts":[{{"data":[{}]}}]}}}}"#,
                vec![r#""abc""#; 7_000].join(",")
            ),
            true,
        ),
    ];
    for (what, body, decodes) in cases {
        let (result, peak) = peak(|| parse(body.as_bytes()).map(|_| ()));
        let budget = limits.budget(body.len()).expect("a budget");
        assert!(
            peak <= budget,
            "{what}: decoding {} bytes peaked at {peak} bytes, over 4 × the body + \
             {JSON_MEMORY_SLACK}",
            body.len()
        );
        match result {
            Ok(()) => assert!(decodes, "{what}: decoded"),
            Err(e) => {
                assert!(!decodes, "{what}: {e}");
                assert_eq!(e.kind(), ErrorKind::InvalidParams, "{what}: {e}");
                assert_eq!(
                    e.metadata().get("memoryFactor").map(String::as_str),
                    Some("4"),
                    "{what}: {e}"
                );
            }
        }
    }
}
