use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use trident_core::{A2aError, StreamEvent};
use trident_proto as pb;

use super::*;

fn event(seq: u64) -> Result<StreamEvent, A2aError> {
    Ok(StreamEvent {
        seq: Some(seq),
        response: Arc::new(pb::StreamResponse::default()),
    })
}

/// Writes `{"seq":N}` for an event and an `error` event for an error.
fn encode(item: Result<StreamEvent, A2aError>, out: &mut Vec<u8>) {
    let written = match item {
        Ok(ev) => write_event(out, None, ev.seq, |out| {
            out.extend_from_slice(format!(r#"{{"seq":{}}}"#, ev.seq.unwrap_or(0)).as_bytes());
            Ok::<_, ()>(())
        }),
        Err(e) => write_event(out, Some("error"), None, |out| {
            out.extend_from_slice(e.message().as_bytes());
            Ok(())
        }),
    };
    assert!(written.is_ok());
}

#[test]
fn an_event_is_its_fields_then_a_blank_line() {
    let mut out = Vec::new();
    write_event(&mut out, None, Some(42), |o| {
        o.extend_from_slice(b"{\"a\":1}");
        Ok::<_, ()>(())
    })
    .expect("test value");
    write_event(&mut out, Some("error"), None, |o| {
        o.extend_from_slice(b"{}");
        Ok::<_, ()>(())
    })
    .expect("test value");
    write_event(&mut out, None, Some(0), |_| Ok::<_, ()>(())).expect("test value");
    assert_eq!(
        String::from_utf8(out).expect("test value"),
        "data: {\"a\":1}\nid: 42\n\nevent: error\ndata: {}\n\ndata: \nid: 0\n\n"
    );
}

#[test]
fn line_breaks_in_data_become_data_lines() {
    let mut out = Vec::new();
    write_event(&mut out, None, Some(u64::MAX), |o| {
        o.extend_from_slice(b"a\nb\r\nc\rd");
        Ok::<_, ()>(())
    })
    .expect("test value");
    assert_eq!(
        String::from_utf8(out).expect("test value"),
        "data: a\ndata: b\ndata: c\ndata: d\nid: 18446744073709551615\n\n"
    );
}

#[test]
fn a_failed_encoding_appends_nothing() {
    let mut out = b"before".to_vec();
    let failed = write_event(&mut out, Some("x"), Some(1), |o| {
        o.extend_from_slice(b"half");
        Err("no")
    });
    assert_eq!(failed, Err("no"));
    assert_eq!(out, b"before");
}

#[tokio::test]
async fn events_ready_together_share_one_chunk() {
    let events =
        futures::stream::iter(vec![event(1), event(2), Err(A2aError::internal("stop"))]).boxed();
    let chunks: Vec<Bytes> = SseWriter::new(events, Duration::from_secs(3600), encode)
        .map(|c| c.expect("test value"))
        .collect()
        .await;
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert_eq!(
        std::str::from_utf8(&chunks[0]).expect("test value"),
        "data: {\"seq\":1}\nid: 1\n\ndata: {\"seq\":2}\nid: 2\n\nevent: error\ndata: stop\n\n"
    );
}

#[tokio::test]
async fn a_burst_is_split_into_bounded_chunks() {
    let n = 5000;
    let events = futures::stream::iter((1..=n).map(event)).boxed();
    let chunks: Vec<Bytes> = SseWriter::new(events, Duration::from_secs(3600), encode)
        .map(|c| c.expect("test value"))
        .collect()
        .await;
    assert!(chunks.len() > 1);
    let biggest = chunks.iter().map(Bytes::len).max().expect("test value");
    assert!(biggest < CHUNK_BYTES + 100, "a chunk of {biggest} bytes");
    let text: String = chunks
        .iter()
        .map(|c| std::str::from_utf8(c).expect("test value"))
        .collect();
    let expected: String = (1..=n)
        .map(|i| format!("data: {{\"seq\":{i}}}\nid: {i}\n\n"))
        .collect();
    assert_eq!(text, expected);
}

#[tokio::test]
async fn a_waiting_stream_sends_keep_alive_comments() {
    let events = futures::stream::pending().boxed();
    let mut sse = SseWriter::new(events, Duration::from_millis(5), encode);
    for _ in 0..2 {
        let chunk = tokio::time::timeout(Duration::from_secs(30), sse.next())
            .await
            .expect("a keep-alive comes")
            .expect("the stream goes on")
            .expect("test value");
        assert_eq!(&chunk[..], b":\n\n");
    }
}
