//! The pre-scan against messages built with the generated types.

use prost::Message as _;
use serde_json::json;

use super::{Bounds, ScanError, request_messages, scan};
use crate::wkt::{Struct, Value};
use crate::{Message, Part, SendMessageRequest};

const BOUNDS: Bounds = Bounds {
    values: 65_536,
    depth: 64,
};

fn send_request() -> super::MessageDescriptor {
    request_messages()
        .expect("descriptors")
        .into_iter()
        .find(|(path, _)| path == "/lf.a2a.v1.A2AService/SendMessage")
        .map(|(_, m)| m)
        .expect("SendMessage")
}

fn request(parts: Vec<Part>) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message::user("m", parts)),
        ..Default::default()
    }
}

#[test]
fn every_method_has_its_request_message() {
    let methods = request_messages().expect("descriptors");
    assert_eq!(methods.len(), 11);
    assert_eq!(send_request().full_name(), "lf.a2a.v1.SendMessageRequest");
    let create = methods
        .iter()
        .find(|(p, _)| p.ends_with("/CreateTaskPushNotificationConfig"))
        .expect("create");
    assert_eq!(create.1.full_name(), "lf.a2a.v1.TaskPushNotificationConfig");
}

#[test]
fn counts_every_field_occurrence_at_every_level() {
    // message (1) + message_id, role, parts (3) + the part's text (1).
    let bytes = request(vec![Part::text("hi")]).encode_to_vec();
    assert_eq!(scan(&send_request(), &bytes, BOUNDS), Ok(5));
    // Bytes are not entered, even when they happen to be protobuf.
    let inner = request(vec![Part::text("x"); 50]).encode_to_vec();
    let bytes = request(vec![Part::raw(inner, "application/x-protobuf")]).encode_to_vec();
    // The raw content and the media type.
    assert_eq!(scan(&send_request(), &bytes, BOUNDS), Ok(6));
    // An empty message is no values at all.
    assert_eq!(scan(&send_request(), &[], BOUNDS), Ok(0));
}

#[test]
fn three_hundred_thousand_empty_parts_are_refused() {
    let bytes = request(vec![Part::default(); 300_000]).encode_to_vec();
    // Two bytes a part on the wire.
    assert!(bytes.len() < 700_000, "{}", bytes.len());
    assert_eq!(
        scan(&send_request(), &bytes, BOUNDS),
        Err(ScanError::TooManyValues(65_536))
    );
    assert_eq!(
        ScanError::TooManyValues(65_536).to_string(),
        "the message holds more than 65536 protobuf values"
    );
}

#[test]
fn an_ordinary_message_with_256_parts_and_metadata_passes() {
    let metadata = |i: usize| {
        Struct::from_json(
            json!({"index": i, "tags": ["a", "b"], "nested": {"k": "v"}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
    };
    let parts = (0..256)
        .map(|i| Part {
            metadata: Some(metadata(i)),
            ..Part::text(format!("part {i}"))
        })
        .collect();
    let mut req = request(parts);
    if let Some(m) = req.message.as_mut() {
        m.metadata = Some(metadata(0));
    }
    let bytes = req.encode_to_vec();
    let values = scan(&send_request(), &bytes, BOUNDS).expect("within bounds");
    assert!((256 * 10..20_000).contains(&values), "{values}");
}

/// `depth` nested list values inside a data part.
fn nested(depth: usize) -> Vec<u8> {
    let mut value = json!("leaf");
    for _ in 0..depth {
        value = json!([value]);
    }
    request(vec![Part {
        content: Some(crate::part::Content::Data(Value::from_json(value))),
        ..Default::default()
    }])
    .encode_to_vec()
}

#[test]
fn nesting_is_bounded() {
    assert!(scan(&send_request(), &nested(10), BOUNDS).is_ok());
    // Each list level is a Value and a ListValue: two message levels.
    assert_eq!(
        scan(&send_request(), &nested(40), BOUNDS),
        Err(ScanError::TooDeep(64))
    );
}

#[test]
fn unknown_fields_count_but_are_not_entered() {
    // Field 99, length-delimited, holding what would be many fields if entered.
    let mut bytes = request(vec![Part::text("hi")]).encode_to_vec();
    let hidden = request(vec![Part::default(); 1000]).encode_to_vec();
    prost::encoding::bytes::encode(99, &hidden, &mut bytes);
    assert_eq!(scan(&send_request(), &bytes, BOUNDS), Ok(6));
}

#[test]
fn malformed_bytes_are_refused_like_prost_refuses_them() {
    let bytes = request(vec![Part::text("hello")]).encode_to_vec();
    for cut in 1..bytes.len() {
        let truncated = &bytes[..cut];
        let scanned = scan(&send_request(), truncated, BOUNDS);
        let decoded = SendMessageRequest::decode(truncated);
        assert_eq!(
            scanned.is_err(),
            decoded.is_err(),
            "cut at {cut}: {scanned:?} vs {decoded:?}"
        );
        if let Err(e) = scanned {
            assert!(matches!(e, ScanError::Malformed(_)), "{e}");
        }
    }
    // Wire type 7, field number 0, an end-group without a start.
    for bad in [&[0x0f_u8, 0][..], &[0x00, 0], &[0x0c]] {
        assert!(matches!(
            scan(&send_request(), bad, BOUNDS),
            Err(ScanError::Malformed(_))
        ));
    }
}

#[test]
fn groups_are_walked_and_counted() {
    // Field 20 as a group holding two varints, then the closing end-group.
    let bytes = [0xa3, 0x01, 0x08, 0x01, 0x10, 0x02, 0xa4, 0x01];
    assert_eq!(scan(&send_request(), &bytes, BOUNDS), Ok(3));
    assert!(SendMessageRequest::decode(&bytes[..]).is_ok());
    // Unterminated.
    assert_eq!(
        scan(&send_request(), &bytes[..6], BOUNDS),
        Err(ScanError::Malformed("unterminated group"))
    );
}
