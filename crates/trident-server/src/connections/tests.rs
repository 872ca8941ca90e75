use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{StatusCode, Version};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{
    BoxError, Budgeted, CUT_OFF, ConnectionLimits, H2_PREFACE, MAX_CONNECTIONS_CAP,
    PUSH_DELIVERIES_CAP, Protocol, TIMED_OUT, TOO_LARGE, Throttle, TimedBody, WITHIN_BUDGET,
    body_timeout_response, fit_event_stream_headers, max_connections_for, over_budget_response,
    protocol_of, push_deliveries_for, serve_with, soft_open_files_limit,
};
use crate::admission::Wire;
use crate::budget::Budget;

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
    let flag = verdict();
    let body = TimedBody::new(
        Full::new(Bytes::from_static(b"hello")),
        Duration::from_millis(50),
        flag.clone(),
    );
    let bytes = body.collect().await.expect("a body").to_bytes();
    assert_eq!(bytes, "hello");
    assert_eq!(flag.load(Ordering::Acquire), WITHIN_BUDGET);
}

#[tokio::test]
async fn a_body_that_stalls_fails_at_the_deadline_and_says_so() {
    let flag = verdict();
    let stalled = StreamBody::new(futures::stream::pending::<Result<Frame<Bytes>, Infallible>>());
    let started = std::time::Instant::now();
    let body = TimedBody::new(stalled, Duration::from_millis(50), flag.clone());
    let e = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the deadline ends the wait")
        .expect_err("a timeout");
    assert!(e.to_string().contains("did not arrive within"), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(
        flag.load(Ordering::Acquire),
        TIMED_OUT,
        "the request is marked timed out"
    );
}

#[test]
fn a_timed_out_body_is_a_408_or_deadline_exceeded() {
    let timeout = Duration::from_millis(500);
    let h1 = body_timeout_response(Version::HTTP_11, None, timeout);
    assert_eq!(h1.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(h1.headers()["connection"], "close");
    let h2 = body_timeout_response(Version::HTTP_2, None, timeout);
    assert_eq!(h2.status(), StatusCode::REQUEST_TIMEOUT);
    assert!(
        !h2.headers().contains_key("connection"),
        "no connection headers on h2"
    );
    let web = body_timeout_response(
        Version::HTTP_11,
        Some("application/grpc-web+proto"),
        timeout,
    );
    assert_eq!(web.status(), StatusCode::OK);
    assert_eq!(web.headers()["content-type"], "application/grpc-web+proto");
    assert_eq!(web.headers()["grpc-status"], "4");
    let grpc = body_timeout_response(Version::HTTP_2, Some("application/grpc"), timeout);
    assert_eq!(grpc.status(), StatusCode::OK);
    assert_eq!(grpc.headers()["content-type"], "application/grpc");
    assert_eq!(grpc.headers()["grpc-status"], "4");
    assert_eq!(
        grpc.headers()["grpc-message"],
        "the request body did not arrive within 0.5s"
    );
}

/// A body's frames, as a test writes them.
type TestBody = StreamBody<futures::stream::BoxStream<'static, Result<Frame<Bytes>, BoxError>>>;

/// A body of `frames`, then `end`: the end of the body (`None`), an error, or nothing ever
/// more (a stalled body).
fn body_of(frames: &[&'static str], end: Option<Option<&'static str>>) -> TestBody {
    use futures::StreamExt;
    let frames = futures::stream::iter(
        frames
            .iter()
            .map(|f| Ok(Frame::data(Bytes::from_static(f.as_bytes()))))
            .collect::<Vec<_>>(),
    );
    let tail = match end {
        None => futures::stream::pending().boxed(),
        Some(None) => futures::stream::empty().boxed(),
        Some(Some(e)) => {
            let e: BoxError = e.into();
            futures::stream::iter([Err(e)]).boxed()
        }
    };
    StreamBody::new(frames.chain(tail).boxed())
}

/// A waker that counts its wakes.
#[derive(Default)]
struct WakeCount(std::sync::atomic::AtomicUsize);

impl std::task::Wake for WakeCount {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn verdict() -> Arc<std::sync::atomic::AtomicU8> {
    Arc::new(std::sync::atomic::AtomicU8::new(WITHIN_BUDGET))
}

/// Reads one frame, failing if none comes in time.
async fn next<B: http_body::Body + Unpin>(
    body: &mut B,
) -> Option<Result<Frame<B::Data>, B::Error>> {
    tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("a frame or the end in time")
}

#[tokio::test]
async fn a_budgeted_body_holds_its_bytes_until_it_ends_fails_times_out_or_is_dropped() {
    let budget = Arc::new(Budget::new(1 << 20));
    // Complete: held while it arrives, released at its end.
    let mut body = Budgeted::new(
        body_of(&["hello", "world"], Some(None)),
        budget.clone(),
        verdict(),
    );
    assert!(next(&mut body).await.is_some());
    assert_eq!(budget.used(), 5);
    assert!(next(&mut body).await.is_some());
    assert_eq!(budget.used(), 10);
    assert!(next(&mut body).await.is_none());
    assert_eq!(budget.used(), 0, "released at the end");
    // Failed (the client sent garbage, or the connection broke).
    let mut body = Budgeted::new(
        body_of(&["hello"], Some(Some("broken"))),
        budget.clone(),
        verdict(),
    );
    assert!(next(&mut body).await.is_some());
    assert!(matches!(next(&mut body).await, Some(Err(_))));
    assert_eq!(budget.used(), 0, "released on an error");
    // Dropped halfway (the client gone, or the handler done with it).
    let mut body = Budgeted::new(body_of(&["hello"], None), budget.clone(), verdict());
    assert!(next(&mut body).await.is_some());
    assert_eq!(budget.used(), 5);
    drop(body);
    assert_eq!(budget.used(), 0, "released on drop");
    // Timed out.
    let timed_out = verdict();
    let timed = TimedBody::new(
        body_of(&["hello"], None),
        Duration::from_millis(50),
        timed_out.clone(),
    );
    let mut body = Budgeted::new(timed, budget.clone(), verdict());
    assert!(next(&mut body).await.is_some());
    assert!(matches!(next(&mut body).await, Some(Err(_))));
    assert_eq!(timed_out.load(Ordering::Acquire), TIMED_OUT);
    assert_eq!(budget.used(), 0, "released at the body timeout");
}

#[tokio::test]
async fn a_stalled_body_is_cut_off_for_fresher_bytes_and_its_reader_woken() {
    let budget = Arc::new(Budget::new(10));
    let stalled_verdict = verdict();
    let mut stalled = Budgeted::new(
        body_of(&["1234567"], None),
        budget.clone(),
        stalled_verdict.clone(),
    );
    assert!(next(&mut stalled).await.is_some());
    // Its reader waits for more.
    let wakes = Arc::new(WakeCount::default());
    let waker = std::task::Waker::from(wakes.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(http_body::Body::poll_frame(std::pin::Pin::new(&mut stalled), &mut cx).is_pending());
    let fresh_verdict = verdict();
    let mut fresh = Budgeted::new(
        body_of(&["abcdef"], Some(None)),
        budget.clone(),
        fresh_verdict.clone(),
    );
    assert!(next(&mut fresh).await.is_some());
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        1,
        "the stalled body's reader is woken"
    );
    match http_body::Body::poll_frame(std::pin::Pin::new(&mut stalled), &mut cx) {
        std::task::Poll::Ready(Some(Err(e))) => assert!(e.to_string().contains("budget"), "{e}"),
        other => panic!("cut off, not {:?}", other.map(|f| f.map(|r| r.is_ok()))),
    }
    assert_eq!(stalled_verdict.load(Ordering::Acquire), CUT_OFF);
    assert_eq!(fresh_verdict.load(Ordering::Acquire), WITHIN_BUDGET);
    assert_eq!(budget.used(), 6, "only the fresh body's bytes");
    // Larger than the whole budget: refused, holding nothing.
    let too_large = verdict();
    let mut body = Budgeted::new(
        body_of(&["0123456789a"], Some(None)),
        budget.clone(),
        too_large.clone(),
    );
    assert!(matches!(next(&mut body).await, Some(Err(_))));
    assert_eq!(too_large.load(Ordering::Acquire), TOO_LARGE);
    assert_eq!(budget.used(), 6);
}

#[test]
fn a_body_over_budget_is_resource_exhausted_in_its_bindings_format() {
    let rest = over_budget_response(Version::HTTP_11, Wire::Rest, false, 1024);
    assert_eq!(rest.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(rest.headers()["retry-after"], "1");
    assert_eq!(rest.headers()["connection"], "close");
    let jsonrpc = over_budget_response(Version::HTTP_11, Wire::JsonRpc, false, 1024);
    assert_eq!(jsonrpc.status(), StatusCode::OK);
    assert_eq!(jsonrpc.headers()["connection"], "close");
    let h2 = over_budget_response(Version::HTTP_2, Wire::JsonRpc, true, 1024);
    assert!(
        !h2.headers().contains_key("connection"),
        "no connection headers on h2"
    );
    let grpc = over_budget_response(Version::HTTP_2, Wire::Grpc, false, 1024);
    assert_eq!(grpc.status(), StatusCode::OK);
    assert_eq!(grpc.headers()["grpc-status"], "8", "RESOURCE_EXHAUSTED");
}

#[tokio::test]
async fn the_json_rpc_refusal_is_a_resource_exhausted_error_with_a_null_id() {
    let jsonrpc = over_budget_response(Version::HTTP_11, Wire::JsonRpc, true, 1024);
    let body = jsonrpc
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let reply: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(reply["id"], serde_json::Value::Null);
    assert_eq!(reply["error"]["code"], -31429);
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1024 bytes")),
        "{reply}"
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
