use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http::{Request, StatusCode, Version, header};
use prost::Message;
use tower::ServiceExt;
use trident_core::A2aService;
use trident_engine::Engine;
use trident_proto as pb;
use trident_testkit::agents;

use crate::{GrpcOptions, routes, routes_with};

fn engine() -> Arc<dyn A2aService> {
    Arc::new(Engine::builder(Arc::new(agents::Demo)).build())
}

/// One length-prefixed message.
fn frame(message: &impl Message) -> Vec<u8> {
    let payload = message.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&u32::try_from(payload.len()).expect("small").to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

/// The frames of a gRPC-Web body: (flag, payload).
fn frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        out.push((body[0], body[5..5 + len].to_vec()));
        body = &body[5 + len..];
    }
    assert!(body.is_empty(), "a partial frame at the end: {body:?}");
    out
}

fn send(text: &str) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message::user("m-web", vec![pb::Part::text(text)])),
        ..Default::default()
    }
}

async fn call(
    router: axum::Router,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (http::response::Parts, Bytes) {
    call_over(Version::HTTP_11, router, path, content_type, body).await
}

async fn call_over(
    version: Version,
    router: axum::Router,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (http::response::Parts, Bytes) {
    let request = Request::post(path)
        .version(version)
        .header(header::CONTENT_TYPE, content_type)
        .header("a2a-version", "1.0")
        .header(header::ACCEPT, content_type)
        .body(axum::body::Body::from(body))
        .expect("request");
    let response = router.oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("response body");
    (parts, body)
}

/// The trailers frame of a gRPC-Web body, as text (`grpc-status:0\r\n…`).
fn trailers(frames: &[(u8, Vec<u8>)]) -> String {
    let (flag, payload) = frames.last().expect("a trailers frame");
    assert_eq!(*flag, 0x80, "the last frame holds the trailers");
    String::from_utf8(payload.clone()).expect("ASCII trailers")
}

/// A unary call in binary gRPC-Web over HTTP/1.1: the message, then the status as a trailers
/// frame in the body.
#[tokio::test]
async fn unary_call_in_grpc_web_over_http1() {
    let path = format!("/{}/SendMessage", pb::SERVICE_NAME);
    let (parts, body) = call(
        routes(engine()),
        &path,
        "application/grpc-web+proto",
        frame(&send("hello web")),
    )
    .await;
    assert_eq!(parts.status, StatusCode::OK);
    assert_eq!(
        parts.headers[header::CONTENT_TYPE],
        "application/grpc-web+proto"
    );
    let frames = frames(&body);
    assert_eq!(frames.len(), 2, "one message and the trailers: {frames:?}");
    let answer = pb::SendMessageResponse::decode(frames[0].1.as_slice()).expect("a response");
    let Some(pb::send_message_response::Payload::Task(task)) = answer.payload else {
        panic!("the demo agent answers a task: {answer:?}");
    };
    assert_eq!(
        task.status.map(|s| s.state),
        Some(pb::TaskState::Completed as i32)
    );
    assert!(
        trailers(&frames).contains("grpc-status:0"),
        "{}",
        trailers(&frames)
    );
}

/// `application/grpc-web-text`: request and answer (as the browser's `Accept` asks) in base64.
#[tokio::test]
async fn unary_call_in_grpc_web_text() {
    let b64 = base64::engine::general_purpose::STANDARD;
    let path = format!("/{}/SendMessage", pb::SERVICE_NAME);
    let (parts, body) = call(
        routes(engine()),
        &path,
        "application/grpc-web-text",
        b64.encode(frame(&send("hello text"))).into_bytes(),
    )
    .await;
    assert_eq!(parts.status, StatusCode::OK);
    let content_type = parts.headers[header::CONTENT_TYPE].to_str().expect("ASCII");
    assert!(
        content_type.starts_with("application/grpc-web-text"),
        "{content_type}"
    );
    // Each encoded chunk is padded base64 of its own.
    let mut decoded = Vec::new();
    let text = std::str::from_utf8(&body).expect("base64 is ASCII");
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find('=').map_or(rest.len(), |i| {
            i + rest[i..].chars().take_while(|c| *c == '=').count()
        });
        decoded.extend(b64.decode(&rest[..end]).expect("base64"));
        rest = &rest[end..];
    }
    let frames = frames(&decoded);
    assert!(trailers(&frames).contains("grpc-status:0"));
    let answer = pb::SendMessageResponse::decode(frames[0].1.as_slice()).expect("a response");
    assert!(answer.payload.is_some());
}

/// An error maps as on gRPC: an unknown task is NOT_FOUND (5), in the headers of a
/// trailers-only answer or in the trailers frame.
#[tokio::test]
async fn errors_carry_the_grpc_status() {
    let path = format!("/{}/GetTask", pb::SERVICE_NAME);
    let request = pb::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    };
    let (parts, body) = call(
        routes(engine()),
        &path,
        "application/grpc-web",
        frame(&request),
    )
    .await;
    assert_eq!(parts.status, StatusCode::OK);
    let status = match parts.headers.get("grpc-status") {
        Some(v) => v.to_str().expect("ASCII").to_owned(),
        None => trailers(&frames(&body))
            .lines()
            .find_map(|l| l.trim().strip_prefix("grpc-status:").map(str::to_owned))
            .expect("grpc-status in the trailers"),
    };
    assert_eq!(status, "5", "NOT_FOUND");
}

/// What is not gRPC-Web is untouched: plain gRPC over HTTP/1.1 is still refused (505), and
/// with `web` off a gRPC-Web call is not gRPC (415).
#[tokio::test]
async fn plain_grpc_is_untouched_and_web_can_be_off() {
    let path = format!("/{}/SendMessage", pb::SERVICE_NAME);
    let (parts, _) = call(
        routes(engine()),
        &path,
        "application/grpc",
        frame(&send("h1")),
    )
    .await;
    assert_eq!(parts.status, StatusCode::HTTP_VERSION_NOT_SUPPORTED);

    let off = GrpcOptions {
        web: false,
        ..GrpcOptions::default()
    };
    let (parts, _) = call(
        routes_with(engine(), &off).0,
        &path,
        "application/grpc-web",
        frame(&send("off")),
    )
    .await;
    assert_eq!(parts.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

/// A server stream in gRPC-Web over HTTP/2 (as over HTTP/1.1): every event as a message of
/// the body, in order, then the trailers frame.
#[tokio::test]
async fn server_stream_in_grpc_web_over_http2() {
    let path = format!("/{}/SendStreamingMessage", pb::SERVICE_NAME);
    let (parts, body) = call_over(
        Version::HTTP_2,
        routes(engine()),
        &path,
        "application/grpc-web",
        frame(&send("stream 2 1")),
    )
    .await;
    assert_eq!(parts.status, StatusCode::OK);
    let frames = frames(&body);
    assert!(trailers(&frames).contains("grpc-status:0"));
    let kinds: Vec<&str> = frames[..frames.len() - 1]
        .iter()
        .map(|(flag, payload)| {
            assert_eq!(*flag, 0, "a message frame");
            let event = pb::StreamResponse::decode(payload.as_slice()).expect("an event");
            match event.payload {
                Some(pb::stream_response::Payload::Task(_)) => "task",
                Some(pb::stream_response::Payload::StatusUpdate(_)) => "status",
                Some(pb::stream_response::Payload::ArtifactUpdate(_)) => "artifact",
                _ => "other",
            }
        })
        .collect();
    assert_eq!(kinds, ["task", "status", "artifact", "artifact", "status"]);
}

/// SubscribeToTask in gRPC-Web: resuming a finished task after its first event replays the
/// rest as messages of the body (the creation snapshot not among them), then status OK.
#[tokio::test]
async fn subscribe_to_task_in_grpc_web() {
    let svc = engine();
    let sent = svc
        .send_message(&trident_core::CallContext::new(), send("stream 2 1"))
        .await
        .expect("send");
    let Some(pb::send_message_response::Payload::Task(task)) = sent.payload else {
        panic!("a task: {sent:?}");
    };
    let request = Request::post(format!("/{}/SubscribeToTask", pb::SERVICE_NAME))
        .version(Version::HTTP_11)
        .header(header::CONTENT_TYPE, "application/grpc-web+proto")
        .header("a2a-version", "1.0")
        .header("last-event-id", "1")
        .body(axum::body::Body::from(frame(&pb::SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })))
        .expect("request");
    let response = routes(svc).oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    let frames = frames(&body);
    assert!(
        trailers(&frames).contains("grpc-status:0"),
        "{}",
        trailers(&frames)
    );
    let events: Vec<pb::StreamResponse> = frames[..frames.len() - 1]
        .iter()
        .map(|(_, payload)| pb::StreamResponse::decode(payload.as_slice()).expect("an event"))
        .collect();
    assert!(!events.is_empty(), "the replay holds events");
    assert!(
        events
            .iter()
            .all(|e| !matches!(e.payload, Some(pb::stream_response::Payload::Task(_)))),
        "{events:?}"
    );
    assert!(matches!(
        &events.last().and_then(|e| e.payload.clone()),
        Some(pb::stream_response::Payload::StatusUpdate(u))
            if u.status.as_ref().map(|s| s.state) == Some(pb::TaskState::Completed as i32)
    ));
}
