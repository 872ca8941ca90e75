//! An HTTP+JSON request, decoded as the REST adapter does. Input layout (text, so seeds and
//! the dictionary stay readable):
//!
//! ```text
//! METHOD SP REQUEST-TARGET LF
//! CONTENT-TYPE LF            (an empty line: no Content-Type header)
//! BODY
//! ```
//!
//! The method, target and header go through the `http` crate as hyper hands them to axum
//! (invalid ones never reach the adapter); then route matching (`/{tenant}` prefix, `:verb`
//! suffix, percent-decoding), query parameters typed by the descriptor, the content-type
//! check, and `dispatch_json` (`parse_request` + binding of the path variables).
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use trident_fuzz::dispatch;
use trident_rest::fuzzing::RestDecoder;

static DECODER: LazyLock<RestDecoder> =
    LazyLock::new(|| RestDecoder::new().expect("route and query tables"));

fn line(input: &[u8]) -> (&[u8], &[u8]) {
    match input.iter().position(|&b| b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[]),
    }
}

fuzz_target!(|input: &[u8]| {
    let (request_line, rest) = line(input);
    let (content_type, body) = line(rest);
    let Some(space) = request_line.iter().position(|&b| b == b' ') else {
        return;
    };
    let Ok(method) = http::Method::from_bytes(&request_line[..space]) else {
        return;
    };
    let Ok(uri) = http::Uri::try_from(&request_line[space + 1..]) else {
        return;
    };
    let mut headers = http::HeaderMap::new();
    if !content_type.is_empty() {
        let Ok(value) = http::HeaderValue::from_bytes(content_type) else {
            return;
        };
        headers.insert(http::header::CONTENT_TYPE, value);
    }
    let Ok((op, json, tenant, vars)) =
        DECODER.decode(method.as_str(), uri.path(), uri.query(), &headers, body)
    else {
        return;
    };
    // Path variables are never bound empty (an empty segment does not match).
    assert!(vars.id.as_deref() != Some(""), "empty id bound");
    assert!(vars.task_id.as_deref() != Some(""), "empty task_id bound");
    let _ = tenant;
    let _ = dispatch(op, &json, vars);
});
