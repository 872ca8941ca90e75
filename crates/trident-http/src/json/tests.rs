use super::*;
use trident_core::ErrorKind;

fn send(parts: usize) -> String {
    let parts = vec![r#"{"text":""}"#; parts].join(",");
    format!(r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{parts}]}}}}"#)
}

#[test]
fn a_body_of_many_tiny_values_is_refused_before_decoding() {
    // The adversarial run: 300 k empty parts in 3.9 MB peaked at 84 MB decoded.
    let err = parse_request::<pb::SendMessageRequest>(send(300_000).as_bytes())
        .expect_err("too many values");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(
        err.metadata().get("maxValues").map(String::as_str),
        Some("65536")
    );
    // Many values in an array of strings count too.
    let ids = vec![r#""""#; 70_000].join(",");
    let body = format!(r#"{{"message":{{"messageId":"m","extensions":[{ids}]}}}}"#);
    assert!(parse_request::<pb::SendMessageRequest>(body.as_bytes()).is_err());
}

#[test]
fn ordinary_bodies_and_punctuation_inside_strings_pass() {
    let ok: pb::SendMessageRequest = parse_request(send(256).as_bytes()).expect("256 parts");
    assert_eq!(ok.message.map(|m| m.parts.len()), Some(256));
    // Brackets, commas and escaped quotes inside a string are text, not values.
    let text = r#"[{,}]\" ,,, {[\\"#.repeat(20_000);
    let body = format!(
        r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}"#
    );
    let ok: pb::SendMessageRequest = parse_request(body.as_bytes()).expect("one long text");
    assert_eq!(ok.message.map(|m| m.parts.len()), Some(1));
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!(
        r#"{{"message":{{"messageId":"m","metadata":{}1{}}}}}"#,
        r#"{"a":"#.repeat(70),
        "}".repeat(70)
    );
    let err = parse_request::<pb::SendMessageRequest>(deep.as_bytes()).expect_err("too deep");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("deeper"), "{err}");
}

/// The byte-at-a-time count the string-skipping [`json_shape`] replaced.
fn reference_shape(json: &[u8]) -> (usize, usize) {
    let (mut values, mut depth, mut max_depth) = (0usize, 0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                values += 1;
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => values += 1,
            _ => {}
        }
    }
    (values, max_depth)
}

#[test]
fn the_shape_count_skips_strings_as_the_byte_at_a_time_count_did() {
    let sent = send(3);
    let cases: [&[u8]; 12] = [
        b"",
        br#"{"a":[1,2,{"b":"x,y]"}]}"#,
        br#"{"a":"\"[{,"}"#,
        br#"{"a":"\\",[1,2]}"#,
        br#"{"a":"unterminated [,{"#,
        br#"{"a":"ends in a backslash\"#,
        br#""\"#,
        br#"[[[["\\\"",[]]]]]"#,
        br#"}}}]]],,,"#,
        br#"{"x":"a\\\\"}, [1]"#,
        b"\"\\",
        sent.as_bytes(),
    ];
    for case in cases {
        assert_eq!(
            json_shape(case),
            reference_shape(case),
            "{}",
            String::from_utf8_lossy(case)
        );
    }
    assert_eq!(json_shape(br#"{"a":[1,{"b":"]"}]}"#), (4, 3));
}
