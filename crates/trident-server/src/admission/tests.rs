use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{Request, StatusCode, header};
use tower::ServiceExt;
use trident_core::Peer;
use trident_engine::Engine;

use super::{Gate, admit};
use crate::{CARD_PATH, CallerLimits, Limited};

/// A router behind the edge layer charging a burst of `burst` and (nearly) no refill.
fn edge(burst: u32) -> axum::Router {
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo)).build();
    let limits = CallerLimits {
        rate: 0.001,
        burst,
        max_streams: 0,
    };
    let gate = Gate {
        authenticator: None,
        allow_anonymous: false,
        limits: Some(Arc::new(Limited::new(Arc::new(engine), limits))),
        jsonrpc_max_body: 1024,
    };
    axum::Router::new()
        .route("/known", axum::routing::get(|| async { "ok" }))
        .route(CARD_PATH, axum::routing::get(|| async { "card" }))
        .route(
            "/grpc.health.v1.Health/Check",
            axum::routing::post(|| async { "serving" }),
        )
        .layer(axum::middleware::from_fn_with_state(gate, admit))
}

async fn status(router: &axum::Router, method: &str, path: &str, from: &str) -> StatusCode {
    let peer: SocketAddr = from.parse().expect("an address");
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .body(axum::body::Body::empty())
        .expect("a request");
    request.extensions_mut().insert(Peer(peer));
    let response = router.clone().oneshot(request).await.expect("an answer");
    if response.status() == StatusCode::TOO_MANY_REQUESTS {
        assert!(
            response.headers().contains_key(header::RETRY_AFTER),
            "a 429 says when to retry"
        );
    }
    response.status()
}

/// Every request is charged once, answered or not (an unknown route too); the card and the
/// health service are not charged; callers at other addresses are not affected.
#[tokio::test]
async fn every_request_is_charged_once_at_the_edge() {
    let router = edge(3);
    let alice = "10.0.0.1:4000";
    for _ in 0..5 {
        assert_eq!(
            status(&router, "GET", CARD_PATH, alice).await,
            StatusCode::OK
        );
        assert_eq!(
            status(&router, "POST", "/grpc.health.v1.Health/Check", alice).await,
            StatusCode::OK
        );
    }
    assert_eq!(
        status(&router, "GET", "/known", alice).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&router, "GET", "/nowhere", alice).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        status(&router, "GET", "/known", alice).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&router, "GET", "/known", alice).await,
        StatusCode::TOO_MANY_REQUESTS,
        "three requests spent the burst"
    );
    assert_eq!(
        status(&router, "GET", "/known", "10.0.0.2:4000").await,
        StatusCode::OK
    );
}

/// A refusal before any adapter reads the request answers gRPC-Web in gRPC-Web: the status in
/// the headers of an empty answer, under a gRPC-Web `content-type` (browser clients refuse an
/// `application/grpc` answer before reading its status); plain gRPC keeps `application/grpc`.
#[test]
fn grpc_web_refusals_say_grpc_web() {
    use super::Wire;
    let error = trident_core::A2aError::new(trident_core::ErrorKind::Unauthenticated, "who?");
    let uri: axum::http::Uri = "/lf.a2a.v1.A2AService/GetTask".parse().expect("uri");
    for (sent, wire, answered) in [
        (
            "application/grpc-web-text",
            Wire::GrpcWeb,
            "application/grpc-web+proto",
        ),
        (
            "application/grpc-web+proto",
            Wire::GrpcWeb,
            "application/grpc-web+proto",
        ),
        ("application/grpc", Wire::Grpc, "application/grpc"),
    ] {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, sent.parse().expect("value"));
        assert_eq!(Wire::of(&axum::http::Method::POST, &uri, &headers), wire);
        let response = wire.answer(&error, b"");
        assert_eq!(response.headers()[header::CONTENT_TYPE], answered, "{sent}");
        assert_eq!(response.headers()["grpc-status"], "16", "{sent}");
    }
}
