//! gRPC request hygiene (issue 12): what reaches the A2A service over gRPC is one well-framed
//! protobuf message of the declared content type, within the size limit and of a bounded
//! number of values. Each case is a raw h2c request; refusals are trailers-only responses, so
//! the status is read from the response headers.

use prost::Message as _;
use serde_json::json;
use tonic::{Code, Status};
use trident_engine::Engine;
use trident_proto as pb;
use trident_proto::a2a_service_client::A2aServiceClient;
use trident_server::{Interfaces, ServerOptions};
use trident_testkit::agents::Demo;

use crate::harness::spawn_server_with;

struct Server {
    interfaces: Interfaces,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn server() -> Server {
    let engine = Engine::builder(std::sync::Arc::new(Demo)).build();
    let (interfaces, task) = spawn_server_with(engine, ServerOptions::default()).await;
    Server { interfaces, task }
}

/// One length-prefixed gRPC message frame.
fn frame(compressed: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![compressed];
    f.extend_from_slice(&u32::try_from(payload.len()).expect("small").to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A GetTask request for a task that does not exist: served, it answers NOT_FOUND.
fn get_task() -> Vec<u8> {
    pb::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    }
    .encode_to_vec()
}

struct Answer {
    http: reqwest::StatusCode,
    headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// The status of a trailers-only response (grpc-status in the headers).
    fn status(&self) -> Status {
        Status::from_header_map(&self.headers).unwrap_or_else(|| {
            panic!(
                "a trailers-only gRPC answer: {} {:?}",
                self.http, self.headers
            )
        })
    }
}

/// POSTs `body` to `method` of the A2A service over h2c with the given content type.
async fn post(server: &Server, method: &str, content_type: Option<&str>, body: Vec<u8>) -> Answer {
    post_with(server, method, content_type, &[], body).await
}

async fn post_with(
    server: &Server,
    method: &str,
    content_type: Option<&str>,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let mut request = client
        .post(format!(
            "{}/lf.a2a.v1.A2AService/{method}",
            server.interfaces.rest
        ))
        .header("te", "trailers")
        .header("a2a-version", "1.0");
    if let Some(ct) = content_type {
        request = request.header("content-type", ct);
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.body(body).send().await.expect("a response");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    Answer {
        http: response.status(),
        headers: response.headers().clone(),
    }
}

fn assert_status(answer: &Answer, code: Code, needle: &str) {
    let status = answer.status();
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().contains(needle),
        "{:?} should mention {needle:?}",
        status.message()
    );
}

#[tokio::test]
async fn a_well_formed_request_is_served() {
    let server = server().await;
    let answer = post(
        &server,
        "GetTask",
        Some("application/grpc"),
        frame(0, &get_task()),
    )
    .await;
    assert_eq!(answer.http, reqwest::StatusCode::OK);
    assert_eq!(answer.status().code(), Code::NotFound);
    // `+proto` and parameters are the same content type.
    let answer = post(
        &server,
        "GetTask",
        Some("application/grpc+proto; charset=utf-8"),
        frame(0, &get_task()),
    )
    .await;
    assert_eq!(answer.status().code(), Code::NotFound);
}

#[tokio::test]
async fn a_wrong_content_type_is_415() {
    let server = server().await;
    // gRPC-Web (`application/grpc-web`, `-text`, `+proto`) is served, through tonic-web
    // (tests/it/browser.rs); its JSON form is not.
    for ct in [
        "text/plain",
        "application/json",
        "application/grpc-web+json",
        "application/grpc+json",
    ] {
        let answer = post(&server, "GetTask", Some(ct), frame(0, &get_task())).await;
        assert_eq!(
            answer.http,
            reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{ct}: {:?}",
            answer.headers
        );
        assert_status(&answer, Code::InvalidArgument, "application/grpc");
    }
}

#[tokio::test]
async fn a_missing_content_type_is_415() {
    let server = server().await;
    let answer = post(&server, "GetTask", None, frame(0, &get_task())).await;
    assert_eq!(answer.http, reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_status(&answer, Code::InvalidArgument, "application/grpc");
}

#[tokio::test]
async fn a_message_over_max_request_size_is_resource_exhausted() {
    let server = server().await;
    let limit = trident_server::GrpcOptions::default().max_request_size;
    let request = pb::SendMessageRequest {
        message: Some(pb::Message::user(
            "big",
            vec![pb::Part::text("x".repeat(limit))],
        )),
        ..Default::default()
    }
    .encode_to_vec();
    assert!(request.len() > limit);
    let answer = post(
        &server,
        "SendMessage",
        Some("application/grpc"),
        frame(0, &request),
    )
    .await;
    assert_status(&answer, Code::ResourceExhausted, &limit.to_string());
}

#[tokio::test]
async fn a_compressed_frame_without_grpc_encoding_is_invalid_argument() {
    let server = server().await;
    let answer = post(
        &server,
        "GetTask",
        Some("application/grpc"),
        frame(1, &get_task()),
    )
    .await;
    assert_status(&answer, Code::InvalidArgument, "compressed");
    // An undefined flag value.
    let answer = post(
        &server,
        "GetTask",
        Some("application/grpc"),
        frame(2, &get_task()),
    )
    .await;
    assert_status(&answer, Code::InvalidArgument, "flag");
}

#[tokio::test]
async fn a_truncated_frame_header_at_the_end_is_invalid_argument() {
    let server = server().await;
    let answer = post(&server, "GetTask", Some("application/grpc"), vec![0, 0, 0]).await;
    assert_status(&answer, Code::InvalidArgument, "header");
}

#[tokio::test]
async fn a_length_prefix_past_the_end_of_the_body_is_invalid_argument() {
    let server = server().await;
    let mut body = frame(0, &get_task());
    // Announce ten bytes more than follow.
    let announced = u32::try_from(get_task().len() + 10).expect("small");
    body[1..5].copy_from_slice(&announced.to_be_bytes());
    let answer = post(&server, "GetTask", Some("application/grpc"), body).await;
    assert_status(&answer, Code::InvalidArgument, &announced.to_string());
}

#[tokio::test]
async fn two_messages_in_a_unary_request_are_invalid_argument() {
    let server = server().await;
    let mut body = frame(0, &get_task());
    body.extend(frame(0, &get_task()));
    let answer = post(&server, "GetTask", Some("application/grpc"), body).await;
    assert_status(&answer, Code::InvalidArgument, "one message");
    // Server streaming methods take one request message too.
    let request = pb::SubscribeToTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let mut body = frame(0, &request);
    body.extend(frame(0, &request));
    let answer = post(&server, "SubscribeToTask", Some("application/grpc"), body).await;
    assert_status(&answer, Code::InvalidArgument, "one message");
}

#[tokio::test]
async fn an_empty_body_is_invalid_argument() {
    let server = server().await;
    let answer = post(&server, "GetTask", Some("application/grpc"), Vec::new()).await;
    assert_status(&answer, Code::InvalidArgument, "no message");
}

#[tokio::test]
async fn a_grpc_encoding_the_server_does_not_accept_is_unimplemented() {
    let server = server().await;
    let answer = post_with(
        &server,
        "GetTask",
        Some("application/grpc"),
        &[("grpc-encoding", "gzip")],
        frame(1, &get_task()),
    )
    .await;
    assert_eq!(answer.status().code(), Code::Unimplemented);
}

#[tokio::test]
async fn three_hundred_thousand_empty_parts_are_refused_before_decoding() {
    let server = server().await;
    let request = pb::SendMessageRequest {
        message: Some(pb::Message::user(
            "many",
            vec![pb::Part::default(); 300_000],
        )),
        ..Default::default()
    }
    .encode_to_vec();
    // ~2 bytes a part: far below the size limit.
    assert!(request.len() < 1024 * 1024, "{}", request.len());
    let answer = post(
        &server,
        "SendMessage",
        Some("application/grpc"),
        frame(0, &request),
    )
    .await;
    assert_status(&answer, Code::InvalidArgument, "65536");
}

#[tokio::test]
async fn an_ordinary_message_with_256_parts_and_metadata_passes() {
    let server = server().await;
    let parts: Vec<pb::Part> = (0..256)
        .map(|i| {
            let mut part = pb::Part::text(format!("part {i}"));
            part.metadata = Some(pb::wkt::Struct::from_json(
                json!({"index": i, "tags": ["a", "b"], "nested": {"k": "v"}})
                    .as_object()
                    .expect("object")
                    .clone(),
            ));
            part
        })
        .collect();
    let mut message = pb::Message::user(uuid::Uuid::new_v4().to_string(), parts);
    message.metadata = Some(pb::wkt::Struct::from_json(
        json!({"source": "grpc_hygiene", "n": 256})
            .as_object()
            .expect("object")
            .clone(),
    ));
    let mut client = A2aServiceClient::connect(format!("http://{}", server.interfaces.grpc))
        .await
        .expect("connect");
    let mut request = tonic::Request::new(pb::SendMessageRequest {
        message: Some(message),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    let response = client.send_message(request).await.expect("served");
    assert!(response.into_inner().payload.is_some());
}

/// POSTs a gRPC request over HTTP/1.1 to `path`.
async fn post_http1(server: &Server, path: &str, body: Vec<u8>) -> reqwest::Response {
    let client = reqwest::Client::builder()
        .http1_only()
        .build()
        .expect("client");
    let response = client
        .post(format!("{}{path}", server.interfaces.rest))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0")
        .body(body)
        .send()
        .await
        .expect("a response");
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    response
}

/// gRPC needs HTTP/2 (its status travels in trailers, which HTTP/1.1 responses here do not
/// carry): a gRPC request over HTTP/1.1 was served and answered 200 with no `grpc-status` at
/// all, a success to a careless client. It is refused before anything runs, as grpc-go refuses
/// it: HTTP 505 saying so, with the status in the headers for clients that read them.
#[tokio::test]
async fn grpc_over_http1_is_505_with_a_status() {
    let server = server().await;
    for path in [
        "/lf.a2a.v1.A2AService/GetTask",
        "/grpc.health.v1.Health/Check",
    ] {
        let body = if path.contains("Health") {
            frame(0, &[])
        } else {
            frame(0, &get_task())
        };
        let response = post_http1(&server, path, body).await;
        let http = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        assert_eq!(http.as_u16(), 505, "{path}: {headers:?} {text:?}");
        assert!(text.contains("HTTP/2"), "{path}: {text:?}");
        let status = Status::from_header_map(&headers).expect("grpc-status in the headers");
        assert_eq!(status.code(), Code::InvalidArgument, "{path}: {status:?}");
    }
}

/// A `grpc-timeout` that is not 1-8 digits and a unit was ignored: the call ran without the
/// caller's deadline. It is refused, INVALID_ARGUMENT naming the header, on every gRPC service
/// (health included) before the request is decoded.
#[tokio::test]
async fn a_malformed_grpc_timeout_is_invalid_argument() {
    let server = server().await;
    for timeout in ["abc", "5", "5s", "123456789S", "-1S", "1.5m"] {
        let answer = post_with(
            &server,
            "GetTask",
            Some("application/grpc"),
            &[("grpc-timeout", timeout)],
            frame(0, &get_task()),
        )
        .await;
        assert_status(&answer, Code::InvalidArgument, "grpc-timeout");
        let answer = post_path(
            &server,
            "/grpc.health.v1.Health/Check",
            &[("grpc-timeout", timeout)],
            frame(0, &[]),
        )
        .await;
        assert_status(&answer, Code::InvalidArgument, "grpc-timeout");
    }
    // A well-formed one is served (NOT_FOUND: the task does not exist; health: SERVING).
    let answer = post_with(
        &server,
        "GetTask",
        Some("application/grpc"),
        &[("grpc-timeout", "30S")],
        frame(0, &get_task()),
    )
    .await;
    assert_eq!(answer.http, reqwest::StatusCode::OK);
    let answer = post_path(
        &server,
        "/grpc.health.v1.Health/Check",
        &[("grpc-timeout", "30S")],
        frame(0, &[]),
    )
    .await;
    assert_eq!(answer.http, reqwest::StatusCode::OK);
    assert!(
        Status::from_header_map(&answer.headers).is_none(),
        "health answers with a message, not a trailers-only status: {:?}",
        answer.headers
    );
}

/// POSTs a gRPC request to any `path` over h2c.
async fn post_path(server: &Server, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let mut request = client
        .post(format!("{}{path}", server.interfaces.rest))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.body(body).send().await.expect("a response");
    Answer {
        http: response.status(),
        headers: response.headers().clone(),
    }
}
