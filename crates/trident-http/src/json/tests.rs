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

#[test]
fn the_shape_count_skips_strings_as_the_byte_at_a_time_count_did() {
    // (values, deepest nesting) as the byte-at-a-time count it replaced found them.
    let sent = send(3);
    let cases: [(&[u8], (usize, usize)); 12] = [
        (b"", (0, 0)),
        (br#"{"a":[1,2,{"b":"x,y]"}]}"#, (5, 3)),
        (br#"{"a":"\"[{,"}"#, (1, 1)),
        (br#"{"a":"\\",[1,2]}"#, (4, 2)),
        (br#"{"a":"unterminated [,{"#, (1, 1)),
        (br#"{"a":"ends in a backslash\"#, (1, 1)),
        (br#""\"#, (0, 0)),
        (br#"[[[["\\\"",[]]]]]"#, (6, 5)),
        (br#"}}}]]],,,"#, (3, 0)),
        (br#"{"x":"a\\\\"}, [1]"#, (3, 1)),
        (b"\"\\", (0, 0)),
        (sent.as_bytes(), (10, 4)),
    ];
    for (case, counted) in cases {
        assert_eq!(
            json_shape(case),
            counted,
            "{}",
            String::from_utf8_lossy(case)
        );
    }
    assert_eq!(json_shape(br#"{"a":[1,{"b":"]"}]}"#), (4, 3));
}
