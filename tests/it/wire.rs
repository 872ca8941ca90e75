//! Golden wire tests: exact bytes-level expectations of what each binding sends, against a real
//! server on an ephemeral port (the one combined listener), spoken to with raw HTTP (reqwest)
//! and the raw generated tonic client — never through our own binding clients, so an encoder
//! and its decoder cannot agree on a mistake.
//!
//! Every body is compared whole (not as a subset) after [`Names::apply`]: generated ids become
//! `<uuid>` (or a name the test chose, such as `<task>`), RFC 3339 UTC timestamps become `<ts>`.
//! A renamed field, an extra field or a wrong code fails. Each test collects every mismatch in
//! a [`Check`] and reports them all at the end.
//!
//! - `jsonrpc`: the eleven methods, SSE framing, every error envelope we can trigger.
//! - `rest`: every route (and a tenant-prefixed one), query parameters, SSE, AIP-193 errors.
//! - `grpc`: success messages, `trident-first-seq`, status codes and decoded
//!   `grpc-status-details-bin`.
//! - `encoders`: every `ErrorKind` through the three encoders, against the spec's Appendix A.
//! - `v03`: A2A v0.3 on the JSON-RPC endpoint and the `/v1/...` routes (every method and route,
//!   SSE frames, error bodies); `v03_grpc`: v0.3's `a2a.v1.A2AService` (every RPC, streams,
//!   statuses).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Fixture, Transport, Variant};

mod encoders;
mod grpc;
mod jsonrpc;
mod rest;
mod v03;
mod v03_grpc;

// ---- normalization ----

/// Replaces generated values: UUID-shaped substrings by `<uuid>`, RFC 3339 UTC timestamps by
/// `<ts>`.
pub fn normalize(v: Value) -> Value {
    Names::default().apply(v)
}

/// Generated values a test has learnt and named (a task id as `<task>`, a page token as
/// `<page-2>`): [`apply`](Self::apply) writes the names into a response before
/// [`normalize`]'s generic rules, [`fill_str`](Self::fill_str) writes the values into a request.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// (actual value, placeholder)
    pairs: Vec<(String, String)>,
}

impl Names {
    /// Names `actual` as `placeholder`.
    pub fn learn(&mut self, actual: &str, placeholder: &str) {
        assert!(
            !actual.is_empty(),
            "cannot name an empty value {placeholder}"
        );
        self.pairs.push((actual.to_owned(), placeholder.to_owned()));
    }

    /// Names the string at JSON pointer `ptr` of `v` (`learn_at(v, "/result/task/id", "<t>")`).
    pub fn learn_at(&mut self, v: &Value, ptr: &str, placeholder: &str) {
        let actual = v
            .pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no string at {ptr} in {v}"));
        self.learn(actual, placeholder);
    }

    /// The value named `placeholder`.
    pub fn get(&self, placeholder: &str) -> &str {
        self.pairs
            .iter()
            .find(|(_, p)| p == placeholder)
            .map(|(a, _)| a.as_str())
            .unwrap_or_else(|| panic!("{placeholder} was never learnt"))
    }

    /// A response with named values replaced by their names, then normalized.
    pub fn apply(&self, v: Value) -> Value {
        map_strings(v, &|s| {
            let mut s = s.to_owned();
            for (actual, name) in &self.pairs {
                s = s.replace(actual.as_str(), name);
            }
            replace_timestamps(&replace_uuids(&s))
        })
    }

    /// A path or header with names replaced by their values.
    pub fn fill_str(&self, s: &str) -> String {
        let mut s = s.to_owned();
        for (actual, name) in &self.pairs {
            s = s.replace(name.as_str(), actual);
        }
        s
    }
}

fn map_strings(v: Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, map_strings(v, f))).collect())
        }
        other => other,
    }
}

/// Replaces every 8-4-4-4-12 hex group (not part of a longer alphanumeric run) by `<uuid>`.
fn replace_uuids(s: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let b = s.as_bytes();
    let is_uuid_at = |i: usize| {
        if i + 36 > b.len() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            return false;
        }
        if b.get(i + 36).is_some_and(u8::is_ascii_alphanumeric) {
            return false;
        }
        let mut at = i;
        for (n, len) in SHAPE.iter().enumerate() {
            if !b[at..at + len].iter().all(u8::is_ascii_hexdigit) {
                return false;
            }
            at += len;
            if n < 4 {
                if b[at] != b'-' {
                    return false;
                }
                at += 1;
            }
        }
        true
    };
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if is_uuid_at(i) {
            out.push_str("<uuid>");
            i += 36;
        } else {
            let ch = s[i..].chars().next().expect("char boundary");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Replaces every `YYYY-MM-DDTHH:MM:SS[.f+]Z` by `<ts>`. Timestamps with another offset are
/// left alone, so they fail the comparison (ProtoJSON emits UTC with `Z` only).
fn replace_timestamps(s: &str) -> String {
    let b = s.as_bytes();
    let ts_len = |i: usize| -> Option<usize> {
        let pattern = b"dddd-dd-ddTdd:dd:dd";
        if i + pattern.len() > b.len() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            return None;
        }
        for (k, p) in pattern.iter().enumerate() {
            let c = b[i + k];
            let ok = if *p == b'd' {
                c.is_ascii_digit()
            } else {
                c == *p
            };
            if !ok {
                return None;
            }
        }
        let mut at = i + pattern.len();
        if b.get(at) == Some(&b'.') {
            let digits = b[at + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if digits == 0 {
                return None;
            }
            at += 1 + digits;
        }
        (b.get(at) == Some(&b'Z')).then_some(at + 1 - i)
    };
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(len) = ts_len(i) {
            out.push_str("<ts>");
            i += len;
        } else {
            let ch = s[i..].chars().next().expect("char boundary");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

#[test]
fn normalize_replaces_generated_values_only() {
    let v = json!({
        "id": "0190f3c2-7a1b-4c3d-9e8f-0123456789ab",
        "message": "task 0190F3C2-7A1B-4C3D-9E8F-0123456789AB not found",
        "timestamp": "2026-01-05T10:00:00.123Z",
        "whole": "2026-01-05T10:00:00Z",
        "offset": "2026-01-05T10:00:00+01:00",
        "notUuid": "x0190f3c2-7a1b-4c3d-9e8f-0123456789ab",
        "list": [1, "m-1", null],
    });
    assert_eq!(
        normalize(v),
        json!({
            "id": "<uuid>",
            "message": "task <uuid> not found",
            "timestamp": "<ts>",
            "whole": "<ts>",
            "offset": "2026-01-05T10:00:00+01:00",
            "notUuid": "x0190f3c2-7a1b-4c3d-9e8f-0123456789ab",
            "list": [1, "m-1", null],
        })
    );
    let mut names = Names::default();
    names.learn("0190f3c2-7a1b-4c3d-9e8f-0123456789ab", "<task>");
    assert_eq!(
        names.apply(json!([
            "0190f3c2-7a1b-4c3d-9e8f-0123456789ab",
            "11111111-2222-3333-4444-555555555555"
        ])),
        json!(["<task>", "<uuid>"])
    );
    assert_eq!(
        names.fill_str("/tasks/<task>:cancel"),
        "/tasks/0190f3c2-7a1b-4c3d-9e8f-0123456789ab:cancel"
    );
}

// ---- collecting mismatches ----

/// Collects every mismatch of a test and panics with all of them at the end.
#[derive(Debug, Default)]
#[must_use = "call finish()"]
pub struct Check {
    cases: usize,
    failures: Vec<String>,
}

impl Check {
    pub fn new() -> Self {
        Self::default()
    }

    /// `actual` must equal `expected` exactly.
    pub fn eq(&mut self, case: impl std::fmt::Display, actual: &Value, expected: &Value) {
        self.cases += 1;
        if actual != expected {
            self.failures.push(format!(
                "{case}\n  expected: {}\n  actual:   {}",
                pretty(expected),
                pretty(actual)
            ));
        }
    }

    /// Fails `case` with `why` unless `ok`.
    pub fn that(&mut self, case: impl std::fmt::Display, ok: bool, why: impl std::fmt::Display) {
        self.cases += 1;
        if !ok {
            self.failures.push(format!("{case}: {why}"));
        }
    }

    /// Takes over `other`'s cases and failures (one report for several servers).
    pub fn absorb(&mut self, other: Check) {
        self.cases += other.cases;
        self.failures.extend(other.failures);
    }

    pub fn finish(self) {
        if !self.failures.is_empty() {
            let mut report = format!(
                "{} of {} wire checks failed:\n",
                self.failures.len(),
                self.cases
            );
            for f in &self.failures {
                let _ = writeln!(report, "\n--- {f}");
            }
            panic!("{report}");
        }
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v)
        .unwrap_or_default()
        .replace('\n', "\n            ")
}

// ---- servers ----

/// A real server of the Demo agent with `variant`'s card, on the one combined listener.
pub async fn server(variant: Variant) -> Fixture {
    Fixture::new(Transport::Rest, variant).await
}

/// `http://127.0.0.1:port` of a fixture's server.
pub fn origin(f: &Fixture) -> String {
    f.interfaces.as_ref().expect("a server").rest.clone()
}

/// A server of `app` (for [`trident_server::app`] with non-default options); aborted on drop.
pub struct App {
    pub origin: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for App {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve_app(app: axum::Router) -> App {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = trident_server::serve(listener, app, std::future::pending(), Duration::ZERO).await;
    });
    App { origin, task }
}

// ---- raw HTTP ----

/// An HTTP answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON, or as a JSON string holding the raw text when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|_| Value::String(self.text.clone()))
    }

    /// `{"status": …, "contentType": …, "body": …}` with `names` applied to the body: one value
    /// to compare whole.
    pub fn summary(&self, names: &Names) -> Value {
        json!({
            "status": self.status,
            "contentType": self.header("content-type"),
            "body": names.apply(self.json()),
        })
    }
}

/// One request: method, path (with names filled in), headers, raw body.
pub struct Call<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Option<String>,
}

pub async fn send(
    http: &reqwest::Client,
    origin: &str,
    names: &Names,
    call: Call<'_>,
) -> reqwest::Response {
    let method = reqwest::Method::from_bytes(call.method.as_bytes()).expect("method");
    let url = format!("{origin}{}", names.fill_str(call.path));
    let mut rb = http.request(method, url);
    for (k, v) in call.headers {
        rb = rb.header(*k, names.fill_str(v));
    }
    if let Some(body) = call.body {
        rb = rb.body(names.fill_str(&body));
    }
    tokio::time::timeout(Duration::from_secs(20), rb.send())
        .await
        .expect("answered in time")
        .expect("HTTP request")
}

pub async fn read(response: reqwest::Response) -> Reply {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .expect("body read in time")
        .expect("body");
    Reply {
        status,
        headers,
        text,
    }
}

// ---- SSE ----

/// One server-sent event as written on the wire.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Vec<String>,
    /// Lines that are neither fields we know nor comments.
    pub other: Vec<String>,
}

impl Frame {
    /// `{"id": …, "event": …, "data": <JSON>}` (absent fields left out). A frame with several
    /// `data:` lines shows them as an array of raw strings, so it fails any golden.
    pub fn to_json(&self, names: &Names) -> Value {
        let mut o = serde_json::Map::new();
        if let Some(id) = &self.id {
            o.insert("id".into(), Value::String(id.clone()));
        }
        if let Some(event) = &self.event {
            o.insert("event".into(), Value::String(event.clone()));
        }
        let data = match self.data.as_slice() {
            [one] => names
                .apply(serde_json::from_str(one).unwrap_or_else(|_| Value::String(one.clone()))),
            many => json!(many),
        };
        o.insert("data".into(), data);
        if !self.other.is_empty() {
            o.insert("other".into(), json!(self.other));
        }
        Value::Object(o)
    }
}

/// Parses complete SSE text (events separated by blank lines; `:` comments skipped).
pub fn parse_sse(text: &str) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut current = Frame::default();
    let mut any = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if any {
                frames.push(std::mem::take(&mut current));
                any = false;
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        any = true;
        match field {
            "id" => current.id = Some(value.to_owned()),
            "event" => current.event = Some(value.to_owned()),
            "data" => current.data.push(value.to_owned()),
            _ => current.other.push(line.to_owned()),
        }
    }
    if any {
        current.other.push("<unterminated event>".to_owned());
        frames.push(current);
    }
    frames
}

/// An SSE response read event by event (to act between events).
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
    /// Keep-alive comments reset a per-chunk timeout, so the whole stream has one.
    deadline: tokio::time::Instant,
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            response,
            buffer: String::new(),
            deadline: tokio::time::Instant::now() + Duration::from_secs(30),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The next event, `None` at the end of the body.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                match parse_sse(&block).into_iter().next() {
                    Some(frame) => return Some(frame),
                    None => continue, // only comments
                }
            }
            let chunk = tokio::time::timeout_at(self.deadline, self.response.chunk())
                .await
                .expect("SSE stream ended in time")
                .expect("SSE body");
            match chunk {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => {
                    // Whatever is left is not a complete event: show it raw, once.
                    let rest = std::mem::take(&mut self.buffer);
                    return (!rest.trim().is_empty()).then(|| Frame {
                        other: vec![format!("<unterminated> {rest}")],
                        ..Frame::default()
                    });
                }
            }
        }
    }

    /// Every remaining event.
    pub async fn rest(&mut self) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(f) = self.next().await {
            out.push(f);
        }
        out
    }
}

/// The ErrorInfo detail every A2A error carries, as JSON.
pub fn error_info(reason: &str, metadata: Value) -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": reason,
        "domain": "a2a-protocol.org",
        "metadata": metadata,
    })
}

/// A BadRequest detail with `(field, description)` violations, as JSON.
pub fn bad_request(violations: &[(&str, &str)]) -> Value {
    let v: Vec<Value> = violations
        .iter()
        .map(|(f, d)| json!({"field": f, "description": d}))
        .collect();
    json!({
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": v,
    })
}
