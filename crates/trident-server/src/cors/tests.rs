use std::sync::Arc;

use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use tower::ServiceExt;

use super::{Cors, CorsError, layer};

const PAGE: &str = "http://127.0.0.1:4000";

/// A route answering 200 with `Vary: A2A-Version` (as the card does), behind the layer.
fn app(cors: Cors) -> axum::Router {
    axum::Router::new()
        .route(
            "/",
            axum::routing::post(|| async { ([(header::VARY, "A2A-Version")], "answer") }),
        )
        .layer(axum::middleware::from_fn_with_state(Arc::new(cors), layer))
}

async fn send(cors: Cors, request: Request<axum::body::Body>) -> axum::response::Response {
    app(cors).oneshot(request).await.expect("infallible")
}

fn preflight(origin: &str) -> Request<axum::body::Body> {
    Request::builder()
        .method(Method::OPTIONS)
        .uri("/")
        .header(header::ORIGIN, origin)
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .header(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            "content-type, a2a-version, authorization",
        )
        .body(axum::body::Body::empty())
        .expect("request")
}

fn post(origin: Option<&str>) -> Request<axum::body::Body> {
    let mut request = Request::post("/");
    if let Some(origin) = origin {
        request = request.header(header::ORIGIN, origin);
    }
    request.body(axum::body::Body::empty()).expect("request")
}

fn values(response: &axum::response::Response, name: header::HeaderName) -> Vec<&str> {
    response
        .headers()
        .get_all(name)
        .iter()
        .map(|v| v.to_str().expect("ASCII"))
        .collect()
}

#[test]
fn origins_are_checked_when_configured() {
    assert!(Cors::new(["https://app.example.com"]).is_ok());
    assert!(Cors::new(["HTTP://127.0.0.1:4000/"]).is_ok());
    assert!(Cors::new(["http://[::1]:8080"]).is_ok());
    assert!(Cors::new(["*"]).is_ok());
    for bad in [
        "app.example.com",
        "https://app.example.com/path",
        "https://",
        "https://a:",
        "https://a:x1",
        "https://user@a",
        "null",
        "1http://a",
    ] {
        assert_eq!(
            Cors::new([bad]),
            Err(CorsError::Origin(bad.to_owned())),
            "{bad}"
        );
    }
    assert_eq!(Cors::new(Vec::<String>::new()), Err(CorsError::Empty));
}

/// An allowed origin's preflight is answered by the layer: 204, the methods, the headers it
/// asked for, the cache time, what it varies on; no credentials.
#[tokio::test]
async fn allowed_preflight_is_answered() {
    let cors = Cors::new([PAGE])
        .expect("origin")
        .with_max_age(std::time::Duration::from_secs(42));
    let response = send(cors, preflight(PAGE)).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        values(&response, header::ACCESS_CONTROL_ALLOW_ORIGIN),
        [PAGE]
    );
    assert_eq!(
        values(&response, header::ACCESS_CONTROL_ALLOW_METHODS),
        ["GET, POST, DELETE"]
    );
    assert_eq!(
        values(&response, header::ACCESS_CONTROL_ALLOW_HEADERS),
        ["content-type, a2a-version, authorization"]
    );
    assert_eq!(values(&response, header::ACCESS_CONTROL_MAX_AGE), ["42"]);
    assert!(values(&response, header::VARY)[0].contains("Origin"));
    assert!(
        response
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_CREDENTIALS)
            .is_none()
    );
}

/// Another origin's preflight is not answered by the layer: it reaches the routes (here 405)
/// and gets no CORS header.
#[tokio::test]
async fn other_origins_get_no_cors_headers() {
    let cors = Cors::new([PAGE]).expect("origin");
    let response = send(cors.clone(), preflight("http://127.0.0.1:4001")).await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        response
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none()
    );
    let response = send(cors, post(Some("http://127.0.0.1:4001"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response
            .headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control-")),
        "{:?}",
        response.headers()
    );
    assert_eq!(values(&response, header::VARY), ["A2A-Version", "Origin"]);
}

/// An answer to an allowed origin names it, exposes what clients read, and varies on
/// `Origin` beside what the route varies on.
#[tokio::test]
async fn answers_to_allowed_origins_are_readable() {
    let response = send(Cors::new([PAGE]).expect("origin"), post(Some(PAGE))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        values(&response, header::ACCESS_CONTROL_ALLOW_ORIGIN),
        [PAGE]
    );
    let exposed = values(&response, header::ACCESS_CONTROL_EXPOSE_HEADERS)[0];
    for name in [
        "a2a-version",
        "a2a-extensions",
        "grpc-status",
        "grpc-message",
    ] {
        assert!(exposed.contains(name), "{exposed}");
    }
    assert_eq!(values(&response, header::VARY), ["A2A-Version", "Origin"]);

    // `*`: any origin, as `*` (never with credentials).
    let response = send(Cors::new(["*"]).expect("any"), post(Some("https://x.test"))).await;
    assert_eq!(
        values(&response, header::ACCESS_CONTROL_ALLOW_ORIGIN),
        ["*"]
    );
    // No Origin: not a CORS request.
    let response = send(Cors::new(["*"]).expect("any"), post(None)).await;
    assert!(
        response
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none()
    );
    // A header value that is not the origin's text is compared as bytes, never panics.
    let mut request = post(None);
    request.headers_mut().insert(
        header::ORIGIN,
        HeaderValue::from_bytes(b"http://\xff").expect("opaque bytes"),
    );
    let response = send(Cors::new([PAGE]).expect("origin"), request).await;
    assert_eq!(response.status(), StatusCode::OK);
}
