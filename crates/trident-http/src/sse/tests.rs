use std::collections::VecDeque;

use futures::StreamExt;

use super::{SseDecoder, SseEvent, sse_events};
use crate::body::BodyError;

fn ev(event: &str, data: &str, id: &str) -> SseEvent {
    SseEvent {
        event: event.to_owned(),
        data: data.to_owned(),
        id: id.into(),
    }
}

fn msg(data: &str, id: &str) -> SseEvent {
    ev("message", data, id)
}

/// Decodes `body` whole, then cut at every one and every pair of positions, checking each
/// cut gives the same events as the whole.
fn decode(body: &[u8]) -> Vec<SseEvent> {
    let whole = decode_chunks(&[body]);
    for i in 0..=body.len() {
        let (a, b) = body.split_at(i);
        assert_eq!(decode_chunks(&[a, b]), whole, "cut at {i}");
        for j in i..=body.len() {
            let chunks = [&body[..i], &body[i..j], &body[j..]];
            assert_eq!(decode_chunks(&chunks), whole, "cut at {i} and {j}");
        }
    }
    whole
}

fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new(1 << 20);
    let mut out = VecDeque::new();
    for chunk in chunks {
        decoder.feed(chunk, &mut out).expect("within the bound");
    }
    out.into()
}

#[test]
fn the_specs_examples() {
    assert_eq!(
        decode(b"data: YHOO\ndata: +2\ndata: 10\n\n"),
        [msg("YHOO\n+2\n10", "")]
    );
    // Comments, an id kept across events, a bare `id` clearing it, an unfinished event.
    assert_eq!(
        decode(
            b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n\
              data:  third event\n"
        ),
        [msg("first event", "1"), msg("second event", "")]
    );
    // A bare `data` appends an empty line; the unterminated last line is dropped.
    assert_eq!(
        decode(b"data\n\ndata\ndata\n\ndata:"),
        [msg("", ""), msg("\n", "")]
    );
    // One space after the colon is dropped, no more.
    assert_eq!(
        decode(b"data:test\n\ndata: test\n\ndata:  test\n\n"),
        [msg("test", ""), msg("test", ""), msg(" test", "")]
    );
}

#[test]
fn every_line_ending_and_any_cut() {
    for body in [
        &b"event: a\nid: 7\ndata: x\n\n"[..],
        b"event: a\rid: 7\rdata: x\r\r",
        b"event: a\r\nid: 7\r\ndata: x\r\n\r\n",
        b"event: a\r\nid: 7\rdata: x\n\r\n",
    ] {
        assert_eq!(decode(body), [ev("a", "x", "7")], "{body:?}");
    }
    // CR then LF is one line end, LF then CR two: an empty line in between dispatches.
    assert_eq!(decode(b"data: a\r\ndata: b\n\r"), [msg("a\nb", "")]);
}

#[test]
fn event_types_reset_after_each_event_and_without_data_nothing_is_sent() {
    assert_eq!(
        decode(b"event: x\n\nevent: y\ndata: 1\n\ndata: 2\n\n"),
        [ev("y", "1", ""), msg("2", "")]
    );
    assert_eq!(decode(b"id: 3\n\n\n\n: only comments\n\n"), []);
}

#[test]
fn one_leading_bom_is_skipped_wherever_the_body_is_cut() {
    assert_eq!(decode("\u{feff}data: x\n\n".as_bytes()), [msg("x", "")]);
    // Only one: the second BOM is part of the field name, which then names no field.
    assert_eq!(
        decode("\u{feff}\u{feff}data: x\n\ndata: y\n\n".as_bytes()),
        [msg("y", "")]
    );
    // A BOM later in the body is data.
    assert_eq!(
        decode("data: \u{feff}x\n\n".as_bytes()),
        [msg("\u{feff}x", "")]
    );
    // A body shorter than a BOM, or a broken one.
    assert_eq!(decode(b"\xef\xbb"), []);
    // A broken one is part of the first field name (decoded as U+FFFD), which names no field.
    assert_eq!(decode(b"\xef\xbbdata: x\n\ndata: y\n\n"), [msg("y", "")]);
}

#[test]
fn ids_with_nul_and_malformed_retry_are_ignored() {
    let mut decoder = SseDecoder::new(1024);
    let mut out = VecDeque::new();
    decoder
        .feed(
            b"id: 1\nid: a\0b\nretry: 250\nretry: 9x\nretry\nretry: 99999999999999999999999\ndata: d\n\n",
            &mut out,
        )
        .expect("within the bound");
    assert_eq!(Vec::from(out), [msg("d", "1")]);
    assert_eq!(decoder.retry(), Some(250));
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    assert_eq!(
        decode(b"data: a\xffb\xe2\n\n"),
        [msg("a\u{fffd}b\u{fffd}", "")]
    );
    // A field name that is not UTF-8 names no field.
    assert_eq!(decode(b"dat\xe1: x\n\ndata: y\n\n"), [msg("y", "")]);
}

#[test]
fn a_line_or_an_event_over_the_bound_is_an_error() {
    let mut out = VecDeque::new();
    // A line that never ends.
    let mut decoder = SseDecoder::new(16);
    decoder
        .feed(b"data: 0123456789", &mut out)
        .expect("within the bound");
    assert_eq!(
        decoder.feed(b"x", &mut out),
        Err(BodyError::TooLarge { limit: 16 })
    );
    // Many short lines making one big event; the events before it are kept.
    let mut decoder = SseDecoder::new(16);
    let r = decoder.feed(
        b"data: ok\n\ndata: 01234\ndata: 56789\ndata: abcde\n",
        &mut out,
    );
    assert_eq!(r, Err(BodyError::TooLarge { limit: 16 }));
    assert_eq!(Vec::from(std::mem::take(&mut out)), [msg("ok", "")]);
    // Exactly at the bound is fine, data plus line.
    let mut decoder = SseDecoder::new(16);
    decoder
        .feed(b"data: 0123456789", &mut out)
        .expect("within the bound");
    decoder.feed(b"\n\n", &mut out).expect("within the bound");
    assert_eq!(Vec::from(out), [msg("0123456789", "")]);
}

/// Found in review: an ID is kept for every later event, so it must be shared, and it counts
/// toward the bound like the data; and decoding that grows a value is bounded too.
#[test]
fn ids_event_types_and_decoded_growth_count_toward_the_bound() {
    let mut out = VecDeque::new();
    // A long id, then many tiny events: every event shares the one id.
    let mut decoder = SseDecoder::new(1 << 10);
    let mut body = b"id: ".to_vec();
    body.extend([b'7'; 1000]);
    body.extend_from_slice(b"\n");
    body.extend(b"data\n\n".repeat(100));
    decoder.feed(&body, &mut out).expect("within the bound");
    assert_eq!(out.len(), 100);
    assert!(
        out.iter()
            .all(|e| std::sync::Arc::ptr_eq(&e.id, &out[0].id))
    );
    // The id and the event type leave less room for data.
    let mut decoder = SseDecoder::new(16);
    assert_eq!(
        decoder.feed(b"id: 0123456789\ndata: 012345\n", &mut out),
        Err(BodyError::TooLarge { limit: 16 })
    );
    let mut decoder = SseDecoder::new(16);
    assert_eq!(
        decoder.feed(b"event: 0123456789\nid: 012345\n", &mut out),
        Err(BodyError::TooLarge { limit: 16 })
    );
    // Ten invalid bytes are 10 raw bytes but 30 decoded ones.
    let mut decoder = SseDecoder::new(24);
    assert_eq!(
        decoder.feed(b"data:\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\n", &mut out),
        Err(BodyError::TooLarge { limit: 24 })
    );
}

fn read(chunks: Vec<Result<&'static [u8], &'static str>>, max: usize) -> Vec<String> {
    let events = sse_events(futures::stream::iter(chunks), max).map(|r| match r {
        Ok(e) => format!("event {}", e.data),
        Err(e) => format!("error {e}"),
    });
    futures::executor::block_on(events.collect())
}

#[test]
fn the_stream_reports_completed_events_before_the_error_that_ends_it() {
    assert_eq!(
        read(
            vec![Ok(b"data: a\n\ndata: b\n\ndata: 0123456789abcdef")],
            16
        ),
        [
            "event a",
            "event b",
            "error larger than the client's limit of 16 bytes"
        ]
    );
    assert_eq!(
        read(
            vec![Ok(b"data: a\n\n"), Err("reset"), Ok(b"data: b\n\n")],
            16
        ),
        ["event a", "error reset"]
    );
    assert_eq!(
        read(vec![Ok(b"data: a\n"), Ok(b"\n"), Ok(b"data: cut")], 16),
        ["event a"]
    );
    let nothing: Vec<Result<&'static [u8], &'static str>> = Vec::new();
    assert_eq!(read(nothing, 16), Vec::<String>::new());
}

#[test]
fn the_decoder_is_infallible_for_bodies_within_the_bound() {
    // Every two-byte body over the interesting bytes, so no state is missed.
    let bytes = [b'\r', b'\n', b':', b' ', b'd', 0xef, 0xbb, 0xbf, 0xff];
    for a in bytes {
        for b in bytes {
            for c in bytes {
                let body = [b'd', b'a', b't', b'a', a, b, c, b'\n', b'\n'];
                let _ = decode(&body);
            }
        }
    }
}
