//! Binary protobuf of every request message (the gRPC binding's input): the first byte picks
//! the message type, the rest is decoded with `prost::Message::decode`. A decoded value must
//! re-encode to exactly `encoded_len()` bytes and decode back to itself, and its ProtoJSON
//! serialization must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use trident_fuzz::{assert_same, with_request_type};

fn check<T: Message + Default + PartialEq + std::fmt::Debug + serde::Serialize>(bytes: &[u8]) {
    let Ok(value) = T::decode(bytes) else {
        return;
    };
    let encoded = value.encode_to_vec();
    assert_eq!(encoded.len(), value.encoded_len(), "encoded_len");
    let again = T::decode(encoded.as_slice()).expect("re-encoded message decodes");
    assert_same(&value, &again, "protobuf");
    let _ = serde_json::to_vec(&value);
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    with_request_type!(selector, T => check::<T>(bytes));
});
