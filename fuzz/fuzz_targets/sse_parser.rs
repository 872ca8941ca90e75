//! An SSE response body, read as our clients read it (eventsource-stream over the HTTP
//! chunks, then each event's `data` as a `StreamResponse`: bare for HTTP+JSON, inside a
//! JSON-RPC response for JSON-RPC). Input: the first byte `n`, then `n % 8` bytes choosing
//! where the body is cut into chunks, then the body. Cutting the body anywhere must give the
//! same events as one chunk.
#![no_main]

use std::convert::Infallible;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use trident_core::{A2aError, StreamEvent};
use trident_fuzz::assert_same;

type Events = Vec<Result<StreamEvent, A2aError>>;

fn run<S>(events: S) -> Events
where
    S: futures::Stream<Item = Result<StreamEvent, A2aError>>,
{
    futures::executor::block_on(events.collect())
}

fn chunked(body: &[u8], cuts: &[usize]) -> Vec<Result<Vec<u8>, Infallible>> {
    let mut chunks = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        chunks.push(Ok(body[start..cut].to_vec()));
        start = cut;
    }
    chunks.push(Ok(body[start..].to_vec()));
    chunks
}

fn compare(whole: &Events, cut: &Events, what: &str) {
    assert_eq!(
        whole.len(),
        cut.len(),
        "{what}: event count depends on chunking"
    );
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

    let whole = || futures::stream::iter([Ok::<_, Infallible>(body.to_vec())]);
    let parts = || futures::stream::iter(chunked(body, &cuts));

    let rest_whole = run(trident_rest::fuzzing::sse_events(whole()));
    let rest_cut = run(trident_rest::fuzzing::sse_events(parts()));
    compare(&rest_whole, &rest_cut, "HTTP+JSON");
    let rpc_whole = run(trident_jsonrpc::fuzzing::sse_events(whole()));
    let rpc_cut = run(trident_jsonrpc::fuzzing::sse_events(parts()));
    compare(&rpc_whole, &rpc_cut, "JSON-RPC");
    for ev in rest_whole.iter().chain(&rpc_whole).flatten() {
        let _ = serde_json::to_vec(&*ev.response);
    }
});
