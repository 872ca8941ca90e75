//! The tap's redaction: by header name, by query parameter, by value; and what it writes.

use std::sync::{Arc, Mutex};

use super::{REDACTED, WireTap};

/// A tap writing into a vector, and the vector.
fn tap() -> (WireTap, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let tap = WireTap::new(move |l| sink.lock().expect("lines").push(l.to_owned()));
    (tap, lines)
}

#[test]
fn credential_headers_are_redacted_by_name_in_any_case_and_by_the_sensitive_mark() {
    let (tap, _) = tap();
    let tap = tap.secret_header("X-Team-Key");
    assert_eq!(
        tap.header("Authorization", b"Bearer abc", false),
        format!("Authorization: {REDACTED}")
    );
    assert_eq!(
        tap.header("cookie", b"k=v", false),
        format!("cookie: {REDACTED}")
    );
    assert_eq!(
        tap.header("x-team-key", b"k-1", false),
        format!("x-team-key: {REDACTED}")
    );
    assert_eq!(
        tap.header("x-other", b"secret", true),
        format!("x-other: {REDACTED}")
    );
    assert_eq!(tap.header("a2a-version", b"1.0", false), "a2a-version: 1.0");
}

#[test]
fn secret_query_parameters_are_redacted_in_urls() {
    let (tap, _) = tap();
    let tap = tap.secret_query("team key");
    assert_eq!(
        tap.url("http://h/rpc?a=1&team%20key=k-123&b=2#f"),
        format!("http://h/rpc?a=1&team%20key={REDACTED}&b=2#f")
    );
    assert_eq!(
        tap.url("http://h/rpc?team+key=k-123"),
        format!("http://h/rpc?team+key={REDACTED}")
    );
    assert_eq!(tap.url("http://h/rpc?%zz=1&%"), "http://h/rpc?%zz=1&%");
    assert_eq!(tap.url("http://h/rpc"), "http://h/rpc");
}

#[test]
fn secret_values_never_reach_the_sink_and_lines_are_split_and_escaped() {
    let (tap, lines) = tap();
    let tap = tap
        .secret_value("tok-123")
        .secret_value("tok-123456")
        .secret_value("ab");
    tap.line("body {\"token\":\"tok-123456\",\"other\":\"tok-123\"}\r\nsecond \u{1b}[31mred ab");
    let lines = lines.lock().expect("lines").clone();
    assert_eq!(
        lines,
        [
            format!("body {{\"token\":\"{REDACTED}\",\"other\":\"{REDACTED}\"}}"),
            "second \\u{1b}[31mred ab".to_owned(),
        ]
    );
}

#[test]
fn clones_share_the_sink_and_a_builder_step_leaves_the_original_alone() {
    let (tap, lines) = tap();
    let stricter = tap.clone().secret_value("zzzz");
    tap.line("zzzz");
    stricter.line("zzzz");
    assert_eq!(*lines.lock().expect("lines"), ["zzzz", REDACTED]);
}
