//! A JSON-RPC request body, read as the endpoint reads it: the envelope parser, then the
//! params of the method through `dispatch_json` (`parse_request` + path-free binding), then the
//! reply envelope (which must be JSON, the request's raw id spliced in).
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_http::{JsonReply, PathVars};
use trident_fuzz::{assert_json, dispatch};
use trident_jsonrpc::fuzzing::{error_envelope, parse_envelope, success_envelope};

fuzz_target!(|body: &[u8]| {
    match parse_envelope(body) {
        Err((id, e)) => assert_json(error_envelope(id, &e).as_bytes(), "error reply"),
        Ok((id, op, params)) => match dispatch(op, params, PathVars::default()) {
            Ok(JsonReply::Unary(result)) => {
                assert_json(&success_envelope(id, &result), "success reply")
            }
            Ok(JsonReply::Stream(_)) => {}
            Err(e) => assert_json(error_envelope(id, &e).as_bytes(), "error reply"),
        },
    }
});
