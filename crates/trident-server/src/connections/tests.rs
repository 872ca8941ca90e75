use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{StatusCode, Version};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};

use super::{
    MAX_CONNECTIONS_CAP, Throttle, TimedBody, body_timeout_response, max_connections_for,
    soft_open_files_limit,
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
