//! The SSE reader of our clients (`trident_http::SseDecoder`), checked two ways.
//!
//! 1. Against a reference: the SSE spec's interpretation written the plain way (decode the
//!    whole body, then split lines), which must give the same events as the incremental
//!    decoder fed the body cut into chunks anywhere.
//! 2. As both clients use it (`trident_{rest,jsonrpc}::fuzzing::sse_events`: the decoder over
//!    the HTTP chunks with a small event bound, then each `data` as a `StreamResponse`, bare or
//!    in a JSON-RPC response): cutting the body anywhere must give the same events and errors.
//!
//! Input: the first byte `n`, then `n % 8` bytes choosing where the body is cut, then the body.
#![no_main]

use std::collections::VecDeque;
use std::convert::Infallible;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use trident_core::{A2aError, StreamEvent};
use trident_http::{SseDecoder, SseEvent};
use trident_fuzz::assert_same;

type Events = Vec<Result<StreamEvent, A2aError>>;

/// The bound the client-level check reads with: small, so inputs cross it.
const MAX_EVENT: usize = 512;

/// The spec's event stream interpretation, over the whole body at once.
fn reference(body: &[u8]) -> Vec<SseEvent> {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                lines.push(std::mem::take(&mut line));
            }
            '\n' => lines.push(std::mem::take(&mut line)),
            c => line.push(c),
        }
    }
    // What follows the last line end is never dispatched.
    let (mut data, mut event, mut id) = (String::new(), String::new(), String::new());
    let mut events = Vec::new();
    for line in lines {
        if line.is_empty() {
            if data.is_empty() {
                event.clear();
                continue;
            }
            data.pop();
            let kind = if event.is_empty() { "message".to_owned() } else { std::mem::take(&mut event) };
            events.push(SseEvent { event: kind, data: std::mem::take(&mut data), id: id.as_str().into() });
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (name, value) = match line.split_once(':') {
            Some((n, v)) => (n, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match name {
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            "event" => event = value.to_owned(),
            "id" if !value.contains('\0') => id = value.to_owned(),
            _ => {}
        }
    }
    events
}

fn decode(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new(usize::MAX);
    let mut out = VecDeque::new();
    for chunk in chunks {
        if decoder.feed(chunk, &mut out).is_err() {
            panic!("an unbounded decoder refused input");
        }
    }
    out.into()
}

fn run<S>(events: S) -> Events
where
    S: futures::Stream<Item = Result<StreamEvent, A2aError>>,
{
    futures::executor::block_on(events.collect())
}

fn compare(whole: &Events, cut: &Events, what: &str) {
    assert_eq!(whole.len(), cut.len(), "{what}: event count depends on chunking");
    for (a, b) in whole.iter().zip(cut) {
        match (a, b) {
            (Ok(a), Ok(b)) => assert_same(a, b, what),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}: errors differ"),
            _ => panic!("{what}: chunking changed an event: {a:?} vs {b:?}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 8).min(rest.len());
    let (cut_bytes, body) = rest.split_at(n);
    let mut cuts: Vec<usize> = cut_bytes
        .iter()
        .map(|&c| usize::from(c) * (body.len() + 1) / 256)
        .collect();
    cuts.sort_unstable();
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in &cuts {
        chunks.push(&body[start..cut]);
        start = cut;
    }
    chunks.push(&body[start..]);

    let expected = reference(body);
    assert_eq!(decode(&[body]), expected, "the decoder disagrees with the reference");
    assert_eq!(decode(&chunks), expected, "chunking changed the decoded events");

    let whole = || futures::stream::iter([Ok::<_, Infallible>(body)]);
    let parts = || futures::stream::iter(chunks.iter().copied().map(Ok::<_, Infallible>));
    let rest_whole = run(trident_rest::fuzzing::sse_events(whole(), MAX_EVENT));
    let rest_cut = run(trident_rest::fuzzing::sse_events(parts(), MAX_EVENT));
    compare(&rest_whole, &rest_cut, "HTTP+JSON");
    let rpc_whole = run(trident_jsonrpc::fuzzing::sse_events(whole(), MAX_EVENT));
    let rpc_cut = run(trident_jsonrpc::fuzzing::sse_events(parts(), MAX_EVENT));
    compare(&rpc_whole, &rpc_cut, "JSON-RPC");
    for ev in rest_whole.iter().chain(&rpc_whole).flatten() {
        let _ = serde_json::to_vec(&*ev.response);
    }
});
