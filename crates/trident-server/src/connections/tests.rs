use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{StatusCode, Version};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{
    ConnectionLimits, H2_PREFACE, MAX_CONNECTIONS_CAP, PUSH_DELIVERIES_CAP, Protocol, Throttle,
    TimedBody, body_timeout_response, fit_event_stream_headers, max_connections_for, protocol_of,
    push_deliveries_for, serve_with, soft_open_files_limit,
};

const LIMITS: &str = "\
Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
";

#[test]
fn reads_the_soft_open_files_limit() {
    assert_eq!(soft_open_files_limit(LIMITS), Some(1024));
    assert_eq!(
        soft_open_files_limit(
            "Max open files            unlimited            unlimited            files\n"
        ),
        None
    );
    assert_eq!(soft_open_files_limit("nothing here"), None);
}

#[test]
fn the_default_limit_leaves_descriptors_for_everything_else() {
    assert_eq!(max_connections_for(Some(1024)), 768);
    assert_eq!(max_connections_for(Some(300)), 150, "at least half");
    assert_eq!(max_connections_for(Some(1)), 1);
    assert_eq!(max_connections_for(Some(1 << 20)), MAX_CONNECTIONS_CAP);
    assert_eq!(max_connections_for(None), MAX_CONNECTIONS_CAP);
    assert!(super::default_max_connections() >= 1);
    // Webhook calls in flight take half of what the connections leave.
    assert_eq!(push_deliveries_for(Some(1024)), 128);
    assert_eq!(push_deliveries_for(Some(300)), 75);
    assert_eq!(push_deliveries_for(Some(1)), 1);
    assert_eq!(push_deliveries_for(None), PUSH_DELIVERIES_CAP);
    for soft in [1, 2, 300, 1024, 4096, 1 << 20] {
        assert!(
            (max_connections_for(Some(soft)) + push_deliveries_for(Some(soft))) as u64
                <= soft.max(2),
            "{soft}"
        );
    }
}

#[test]
fn the_throttle_lets_one_warning_a_second_through_and_counts_the_rest() {
    let mut throttle = Throttle::default();
    assert_eq!(throttle.ready(), Some(0));
    assert_eq!(throttle.ready(), None);
    assert_eq!(throttle.ready(), None);
    throttle.last = throttle
        .last
        .and_then(|t| t.checked_sub(Duration::from_secs(2)));
    assert_eq!(throttle.ready(), Some(2));
}

#[tokio::test]
async fn a_body_that_arrives_in_time_passes_through_untouched() {
    let flag = Arc::new(AtomicBool::new(false));
    let body = TimedBody::new(
        Full::new(Bytes::from_static(b"hello")),
        Duration::from_millis(50),
        flag.clone(),
    );
    let bytes = body.collect().await.expect("a body").to_bytes();
    assert_eq!(bytes, "hello");
    assert!(!flag.load(Ordering::Acquire));
}

#[tokio::test]
async fn a_body_that_stalls_fails_at_the_deadline_and_says_so() {
    let flag = Arc::new(AtomicBool::new(false));
    let stalled = StreamBody::new(futures::stream::pending::<Result<Frame<Bytes>, Infallible>>());
    let started = std::time::Instant::now();
    let body = TimedBody::new(stalled, Duration::from_millis(50), flag.clone());
    let e = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the deadline ends the wait")
        .expect_err("a timeout");
    assert!(e.to_string().contains("did not arrive within"), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert!(
        flag.load(Ordering::Acquire),
        "the request is marked timed out"
    );
}

#[test]
fn a_timed_out_body_is_a_408_or_deadline_exceeded() {
    let timeout = Duration::from_millis(500);
    let h1 = body_timeout_response(Version::HTTP_11, false, timeout);
    assert_eq!(h1.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(h1.headers()["connection"], "close");
    let h2 = body_timeout_response(Version::HTTP_2, false, timeout);
    assert_eq!(h2.status(), StatusCode::REQUEST_TIMEOUT);
    assert!(
        !h2.headers().contains_key("connection"),
        "no connection headers on h2"
    );
    let grpc = body_timeout_response(Version::HTTP_2, true, timeout);
    assert_eq!(grpc.status(), StatusCode::OK);
    assert_eq!(grpc.headers()["grpc-status"], "4");
    assert_eq!(
        grpc.headers()["grpc-message"],
        "the request body did not arrive within 0.5s"
    );
}

/// A response built the way handlers build them: by inserts into an empty map.
fn response_with(content_type: &'static str) -> http::Response<axum::body::Body> {
    let mut response = http::Response::new(axum::body::Body::empty());
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    headers.append("x-note", http::HeaderValue::from_static("a"));
    headers.append("x-note", http::HeaderValue::from_static("b"));
    response
}

#[test]
fn an_event_streams_headers_are_fitted_and_kept_whole() {
    let built = response_with("text/event-stream");
    let wanted = built.headers().clone();
    assert!(built.headers().capacity() > wanted.keys_len());
    let fitted = fit_event_stream_headers(built);
    let headers = fitted.headers();
    assert_eq!(*headers, wanted);
    let values: Vec<_> = headers.get_all("x-note").iter().collect();
    assert_eq!(values, ["a", "b"]);
    // Room for the three names (the second note is an extra value, kept beside them).
    assert!(headers.capacity() <= 3, "capacity {}", headers.capacity());
}

#[test]
fn other_responses_keep_their_header_map() {
    let built = response_with("application/json");
    let capacity = built.headers().capacity();
    let kept = fit_event_stream_headers(built);
    assert_eq!(kept.headers().capacity(), capacity);
}

#[test]
fn the_first_bytes_tell_http1_from_the_h2_preface() {
    assert_eq!(protocol_of(b"GET / HTTP/1.1\r\n"), Protocol::Http1);
    assert_eq!(protocol_of(b"P"), Protocol::Unknown, "PUT or PRI: read on");
    assert_eq!(protocol_of(b"POST /a2a HTTP/1.1"), Protocol::Http1);
    assert_eq!(protocol_of(b"PRI * HTTP/2.0\r\n"), Protocol::Unknown);
    assert_eq!(protocol_of(H2_PREFACE), Protocol::Http2);
    assert_eq!(
        protocol_of(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\x0a"),
        Protocol::Http2
    );
    assert_eq!(
        protocol_of(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"),
        Protocol::Http1
    );
    assert_eq!(protocol_of(b""), Protocol::Unknown, "EOF");
}

/// A server on a local port answering `GET /` with `ok`.
async fn serve_ok() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("an address");
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    tokio::spawn(serve_with(
        listener,
        app,
        std::future::pending(),
        Duration::ZERO,
        ConnectionLimits::default(),
    ));
    addr
}

/// Writes `pieces` with a pause between them, then reads until the peer closes or what
/// arrived is `done`.
async fn exchange(
    addr: std::net::SocketAddr,
    pieces: &[&[u8]],
    done: impl Fn(&[u8]) -> bool,
) -> Vec<u8> {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    for piece in pieces {
        socket.write_all(piece).await.expect("write");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !done(&got) {
        let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buf))
            .await
            .expect("an answer in time")
            .expect("read");
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    got
}

#[tokio::test]
async fn http1_and_h2c_are_told_apart_however_their_first_bytes_arrive() {
    let addr = serve_ok().await;
    let request: &[u8] = b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    for pieces in [vec![request], vec![&request[..1], &request[1..]]] {
        let got = exchange(addr, &pieces, |got| got.ends_with(b"\r\n\r\nok")).await;
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nok"), "{text}");
    }
    // The preface whole, or split where a peek cannot decide yet: the server's SETTINGS frame
    // (type 4 on stream 0) comes back either way.
    let settings: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
    for split in [H2_PREFACE.len(), 3, 16] {
        let (head, tail) = H2_PREFACE.split_at(split);
        let tail = [tail, settings].concat();
        let got = exchange(addr, &[head, &tail], |got| got.len() >= 9).await;
        assert!(got.len() >= 9, "a frame: {got:?}");
        assert_eq!((got[3], &got[5..9]), (4, &[0u8; 4][..]), "{got:?}");
    }
}
