//! ProtoJSON of every request message (the JSON-RPC params and HTTP+JSON bodies): the first
//! byte picks the message type, the rest goes to `serde_json::from_slice` into the pbjson
//! type. A decoded value must serialize without panicking; what it serializes to must parse
//! back to the same value, and its protobuf encoding must round-trip too.
//!
//! With `TRIDENT_FUZZ_PROTO_SEEDS=DIR` set, it also writes the protobuf encoding of each input
//! it decodes to `DIR` (selector byte first): `run.sh --seeds` makes the proto_requests seeds
//! so.
#![no_main]

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use trident_fuzz::{assert_same, with_request_type};

static PROTO_SEEDS: LazyLock<Option<PathBuf>> =
    LazyLock::new(|| std::env::var_os("TRIDENT_FUZZ_PROTO_SEEDS").map(PathBuf::from));

fn emit_proto_seed(selector: u8, encoded: &[u8]) {
    if let Some(dir) = PROTO_SEEDS.as_ref() {
        let mut seed = vec![selector];
        seed.extend_from_slice(encoded);
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        std::fs::write(dir.join(format!("{:016x}", h.finish())), seed).expect("write a seed");
    }
}

fn check<T>(selector: u8, json: &[u8])
where
    T: Message + Default + PartialEq + std::fmt::Debug,
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let Ok(value) = serde_json::from_slice::<T>(json) else {
        return;
    };
    if let Ok(out) = serde_json::to_vec(&value) {
        match serde_json::from_slice::<T>(&out) {
            Ok(again) => assert_same(&value, &again, "ProtoJSON"),
            Err(e) => panic!(
                "our own ProtoJSON does not parse back ({e}): {}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    let encoded = value.encode_to_vec();
    let again = T::decode(encoded.as_slice()).expect("protobuf re-decode");
    assert_same(&value, &again, "protobuf");
    emit_proto_seed(selector, &encoded);
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, json)) = data.split_first() else {
        return;
    };
    with_request_type!(selector, T => check::<T>(selector % 10, json));
});
