use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tonic::Code;
use tonic::transport::{Channel, Endpoint};
use tonic_types::StatusExt;
use trident_core::{A2aError, A2aService, CallContext, ERROR_DOMAIN, ErrorKind, EventStream};
use trident_engine::Engine;
use trident_proto as pb;
use trident_proto::a2a_service_client::A2aServiceClient;
use trident_proto::stream_response::Payload;
use trident_testkit::agents;

use crate::{GrpcClient, GrpcOptions, error, routes, status};

fn engine() -> Arc<dyn A2aService> {
    Arc::new(Engine::builder(Arc::new(agents::Demo)).build())
}

async fn serve_router(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        axum::serve(listener, router).await.expect("serve");
    });
    addr
}

async fn serve(svc: Arc<dyn A2aService>) -> SocketAddr {
    serve_router(routes(svc)).await
}

async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect")
}

fn send(message_id: &str, text: &str) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message::user(message_id, vec![pb::Part::text(text)])),
        ..Default::default()
    }
}

fn cx() -> CallContext {
    CallContext::new()
}

/// Asserts the wire form of an A2A error status: code and ErrorInfo from the table.
fn assert_wire(s: &tonic::Status, kind: ErrorKind) {
    assert_eq!(s.code() as i32, kind.wire().grpc, "{s:?}");
    let details = s.get_error_details();
    let info = details
        .error_info()
        .expect("ErrorInfo in the status details");
    assert_eq!(info.domain, ERROR_DOMAIN);
    assert_eq!(info.reason, kind.wire().reason);
}

#[tokio::test]
async fn blocking_send_echoes() {
    let client = GrpcClient::connect(&serve(engine()).await.to_string())
        .await
        .expect("connect");
    let resp = client
        .send_message(&cx(), send("m-1", "hello over grpc"))
        .await
        .expect("send");
    let Some(pb::send_message_response::Payload::Task(task)) = resp.payload else {
        panic!("expected a task, got {resp:?}");
    };
    assert_eq!(task.state(), pb::TaskState::Completed);
    let texts: Vec<String> = task
        .artifacts
        .iter()
        .flat_map(|a| {
            a.parts
                .iter()
                .filter_map(|p| p.as_text().map(str::to_owned))
        })
        .collect();
    assert_eq!(texts, ["hello over grpc"]);

    let again = client
        .get_task(
            &cx(),
            pb::GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("get");
    assert_eq!(again.id, task.id);
    assert_eq!(again.state(), pb::TaskState::Completed);
}

#[tokio::test]
async fn direct_reply_is_a_message() {
    let addr = serve(engine()).await;
    let client = GrpcClient::connect(&format!("http://{addr}"))
        .await
        .expect("connect");
    let resp = client
        .send_message(&cx(), send("m-r", "reply hi"))
        .await
        .expect("send");
    assert!(
        matches!(
            resp.payload,
            Some(pb::send_message_response::Payload::Message(_))
        ),
        "{resp:?}"
    );
}

#[tokio::test]
async fn streaming_send_ends_completed() {
    let client = GrpcClient::connect(&serve(engine()).await.to_string())
        .await
        .expect("connect");
    let events: Vec<_> = client
        .send_streaming_message(&cx(), send("m-2", "stream 3"))
        .await
        .expect("stream")
        .collect()
        .await;
    let events: Vec<_> = events
        .into_iter()
        .map(|e| e.expect("no error event"))
        .collect();
    assert!(events.len() >= 5, "{events:?}");
    // Numbered from the trident-first-seq header: the task is event 1, then consecutive.
    let seqs: Vec<_> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).map(Some).collect::<Vec<_>>()
    );
    assert!(
        matches!(events[0].response.payload, Some(Payload::Task(_))),
        "first event is the task: {:?}",
        events[0]
    );
    let chunks = events
        .iter()
        .filter(|e| matches!(e.response.payload, Some(Payload::ArtifactUpdate(_))))
        .count();
    assert_eq!(chunks, 3);
    let Some(Payload::StatusUpdate(last)) = &events[events.len() - 1].response.payload else {
        panic!("last event is a status update: {events:?}");
    };
    assert_eq!(
        last.status.as_ref().map(|s| s.state),
        Some(pb::TaskState::Completed as i32)
    );
}

#[tokio::test]
async fn errors_round_trip_with_codes_and_error_info() {
    let addr = serve(engine()).await;
    let client = GrpcClient::connect(&addr.to_string())
        .await
        .expect("connect");
    let mut raw = A2aServiceClient::new(channel(addr).await);

    // TaskNotFound: NOT_FOUND + ErrorInfo, metadata kept by the client.
    let get = pb::GetTaskRequest {
        id: "no-such-task".to_owned(),
        ..Default::default()
    };
    let e = client
        .get_task(&cx(), get.clone())
        .await
        .expect_err("unknown");
    assert_eq!(e.kind(), ErrorKind::TaskNotFound);
    assert_eq!(
        e.metadata().get("taskId").map(String::as_str),
        Some("no-such-task")
    );
    let mut req = tonic::Request::new(get);
    req.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("1.0"),
    );
    let s = raw.get_task(req).await.expect_err("unknown");
    assert_eq!(s.code(), Code::NotFound);
    assert_wire(&s, ErrorKind::TaskNotFound);

    // InvalidParams with a field violation: INVALID_ARGUMENT + BadRequest.
    let e = client
        .send_message(&cx(), send("", "no id"))
        .await
        .expect_err("empty messageId");
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    assert!(
        e.violations()
            .iter()
            .any(|v| v.field.contains("messageId") && !v.description.is_empty()),
        "{e:?}"
    );
    let s = raw
        .send_message(send("", "no id"))
        .await
        .expect_err("empty messageId");
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_wire(&s, ErrorKind::InvalidParams);
    let bad = s.get_error_details();
    let bad = bad.bad_request().expect("BadRequest");
    assert!(
        bad.field_violations
            .iter()
            .any(|v| v.field.contains("messageId"))
    );

    // VersionNotSupported: only a raw client can send another version.
    let mut req = tonic::Request::new(send("m-v", "hello"));
    req.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("0.3"),
    );
    let s = raw.send_message(req).await.expect_err("0.3");
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert_wire(&s, ErrorKind::VersionNotSupported);
    let e = error(&s);
    assert_eq!(e.kind(), ErrorKind::VersionNotSupported);
    assert_eq!(
        e.metadata().get("requestedVersion").map(String::as_str),
        Some("0.3")
    );

    // UnsupportedOperation: the default card has no extended card. Same gRPC code as
    // VersionNotSupported; the reason tells them apart.
    let e = client
        .get_extended_agent_card(&cx(), pb::GetExtendedAgentCardRequest::default())
        .await
        .expect_err("no extended card");
    assert_eq!(e.kind(), ErrorKind::UnsupportedOperation);
    let s = raw
        .get_extended_agent_card(pb::GetExtendedAgentCardRequest::default())
        .await
        .expect_err("no extended card");
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert_wire(&s, ErrorKind::UnsupportedOperation);
}

#[tokio::test]
async fn streaming_error_before_first_event_is_the_status() {
    let client = GrpcClient::connect(&serve(engine()).await.to_string())
        .await
        .expect("connect");
    let e = client
        .subscribe_to_task(
            &cx(),
            pb::SubscribeToTaskRequest {
                id: "no-such-task".to_owned(),
                ..Default::default()
            },
        )
        .await
        .err()
        .expect("unknown task");
    assert_eq!(e.kind(), ErrorKind::TaskNotFound);
}

#[tokio::test]
async fn subscribe_resumes_after_last_event_id() {
    let client = GrpcClient::connect(&serve(engine()).await.to_string())
        .await
        .expect("connect");
    let resp = client
        .send_message(&cx(), send("m-s", "stream 2"))
        .await
        .expect("send");
    let Some(pb::send_message_response::Payload::Task(task)) = resp.payload else {
        panic!("expected a task");
    };
    // Terminal task: subscribing without a resume point is refused, with one it replays.
    let sub = pb::SubscribeToTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let e = client
        .subscribe_to_task(&cx(), sub.clone())
        .await
        .err()
        .expect("terminal");
    assert_eq!(e.kind(), ErrorKind::UnsupportedOperation);
    let replay: Vec<_> = client
        .subscribe_to_task(&cx().with_last_event_id(1), sub)
        .await
        .expect("resume")
        .collect()
        .await;
    assert!(!replay.is_empty());
    assert!(replay.iter().all(Result::is_ok), "{replay:?}");
    assert!(
        !replay
            .iter()
            .flatten()
            .any(|e| matches!(e.response.payload, Some(Payload::Task(_)))),
        "events after seq 1 do not include the creation snapshot: {replay:?}"
    );
}

#[tokio::test]
async fn health_reports_serving() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

    let mut health = HealthClient::new(channel(serve(engine()).await).await);
    for service in ["", pb::SERVICE_NAME] {
        let resp = health
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .expect("check")
            .into_inner();
        assert_eq!(resp.status, ServingStatus::Serving as i32, "{service:?}");
    }
}

#[tokio::test]
async fn reflection_lists_the_service() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

    let mut reflection = ServerReflectionClient::new(channel(serve(engine()).await).await);
    let ask = |r: MessageRequest| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(r),
    };
    let requests = futures::stream::iter([
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(
            pb::SERVICE_NAME.to_owned(),
        )),
    ]);
    let responses: Vec<ServerReflectionResponse> = reflection
        .server_reflection_info(requests)
        .await
        .expect("reflection")
        .into_inner()
        .map(|r| r.expect("response"))
        .collect()
        .await;
    let Some(MessageResponse::ListServicesResponse(list)) = &responses[0].message_response else {
        panic!("{responses:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&pb::SERVICE_NAME), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");
    let Some(MessageResponse::FileDescriptorResponse(files)) = &responses[1].message_response
    else {
        panic!("{responses:?}");
    };
    assert!(!files.file_descriptor_proto.is_empty());
}

#[tokio::test]
async fn routes_merge_into_a_router_with_a_fallback() {
    let rest = axum::Router::new()
        .route("/ping", axum::routing::get(|| async { "pong" }))
        .fallback(|| async { (axum::http::StatusCode::NOT_FOUND, "rest 404") });
    let addr = serve_router(rest.merge(routes(engine()))).await;
    let client = GrpcClient::connect(&addr.to_string())
        .await
        .expect("connect");
    client
        .send_message(&cx(), send("m-3", "hello"))
        .await
        .expect("gRPC through the merged router");
    // The REST side keeps its own fallback (no gRPC catch-all was merged in).
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("tcp");
    let body = http1_get(&mut stream, "/nothing-here").await;
    assert!(body.starts_with("HTTP/1.1 404"), "{body}");
    assert!(body.ends_with("rest 404"), "{body}");
}

async fn http1_get(stream: &mut tokio::net::TcpStream, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.expect("write");
    let mut out = String::new();
    stream.read_to_string(&mut out).await.expect("read");
    out
}

#[tokio::test]
async fn connect_failures_are_unavailable_and_bad_targets_invalid() {
    // A port nobody listens on: bind, note it, drop.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let e = GrpcClient::connect(&format!("127.0.0.1:{port}"))
        .await
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Unavailable);

    let lazy = GrpcClient::connect_lazy(&format!("127.0.0.1:{port}"), &GrpcOptions::default())
        .expect("lazy");
    let e = lazy
        .get_task(&cx(), pb::GetTaskRequest::default())
        .await
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e:?}");

    for bad in ["ftp://x:1", "not a uri"] {
        let e = GrpcClient::connect(bad).await.expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{bad}: {e:?}");
    }
    // https:// is TLS (feature `tls`): tried, and unreachable like any other target.
    let e = GrpcClient::connect(&format!("https://127.0.0.1:{port}"))
        .await
        .expect_err("refused");
    let expected = if cfg!(feature = "tls") {
        ErrorKind::Unavailable
    } else {
        ErrorKind::InvalidParams
    };
    assert_eq!(e.kind(), expected, "{e:?}");
}

#[test]
fn every_kind_round_trips_through_a_status() {
    for kind in ErrorKind::ALL {
        let e = A2aError::new(kind, format!("about {kind:?}"))
            .with_meta("taskId", "t-1")
            .with_meta("other", "x")
            .with_violation("message.parts", "must not be empty");
        let s = status(&e);
        assert_eq!(s.code() as i32, kind.wire().grpc);
        assert_wire(&s, kind);
        // Through the bytes a peer would see.
        let http = s.clone().into_http::<()>();
        let back = error(&tonic::Status::from_header_map(http.headers()).expect("a status"));
        assert_eq!(back, e);
    }
}

#[test]
fn statuses_without_error_info_fall_back_to_the_code() {
    let e = error(&tonic::Status::not_found("gone"));
    assert_eq!(e.kind(), ErrorKind::TaskNotFound);
    assert_eq!(e.message(), "gone");
    let e = error(&tonic::Status::unimplemented(""));
    assert_eq!(e.kind(), ErrorKind::MethodNotFound);
    assert_eq!(e.message(), ErrorKind::MethodNotFound.wire().message);
    assert_eq!(
        error(&tonic::Status::deadline_exceeded("late")).kind(),
        ErrorKind::DeadlineExceeded
    );
    assert_eq!(
        error(&tonic::Status::unknown("?")).kind(),
        ErrorKind::Internal
    );
    // tonic's own enforcement of the grpc-timeout we sent: the caller's deadline passed here.
    let late = error(&tonic::Status::from_error(Box::new(tonic::TimeoutExpired(
        (),
    ))));
    assert_eq!(late.kind(), ErrorKind::DeadlineExceeded);
    assert!(late.is_transport(), "{late:?}");
    assert!(std::error::Error::source(&late).is_some());
    let big = error(&tonic::Status::out_of_range(
        "decoded message length too large",
    ));
    assert_eq!(big.kind(), ErrorKind::InvalidAgentResponse);
}

/// Records the context of `get_task`; every other RPC is unsupported.
#[derive(Default)]
struct Probe {
    seen: Mutex<Option<CallContext>>,
}

#[async_trait::async_trait]
impl A2aService for Probe {
    async fn send_message(
        &self,
        _: &CallContext,
        _: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn send_streaming_message(
        &self,
        _: &CallContext,
        _: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        *self.seen.lock().expect("lock") = Some(cx.clone());
        Ok(pb::Task {
            id: req.id,
            ..Default::default()
        })
    }
    async fn list_tasks(
        &self,
        _: &CallContext,
        _: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn cancel_task(
        &self,
        _: &CallContext,
        _: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn subscribe_to_task(
        &self,
        _: &CallContext,
        _: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        // One event, then an error item: the client sees the event, then the error, then the end.
        let ev = trident_core::StreamEvent {
            seq: Some(7),
            response: Arc::new(pb::StreamResponse::new(Payload::Task(pb::Task::default()))),
        };
        Ok(futures::stream::iter([Ok(ev), Err(A2aError::internal("broke mid-stream"))]).boxed())
    }
    async fn create_task_push_notification_config(
        &self,
        _: &CallContext,
        _: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn get_task_push_notification_config(
        &self,
        _: &CallContext,
        _: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn list_task_push_notification_configs(
        &self,
        _: &CallContext,
        _: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn get_extended_agent_card(
        &self,
        _: &CallContext,
        _: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        Err(A2aError::unsupported("probe"))
    }
    async fn delete_task_push_notification_config(
        &self,
        _: &CallContext,
        _: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        Ok(())
    }
}

#[tokio::test]
async fn service_parameters_travel_as_metadata() {
    let probe = Arc::new(Probe::default());
    let client = GrpcClient::connect(&serve(probe.clone()).await.to_string())
        .await
        .expect("connect");
    let mut cx = CallContext::new()
        .with_extensions_header("https://ext.example/a/v1, https://ext.example/b/v2")
        .with_last_event_id(42);
    cx.deadline = Some(std::time::Instant::now() + Duration::from_secs(30));
    let task = client
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: "t".to_owned(),
                ..Default::default()
            },
        )
        .await
        .expect("get");
    assert_eq!(task.id, "t");
    let seen = probe.seen.lock().expect("lock").clone().expect("called");
    assert_eq!(
        seen.version.as_deref(),
        Some(trident_core::PROTOCOL_VERSION)
    );
    assert_eq!(
        seen.extensions,
        ["https://ext.example/a/v1", "https://ext.example/b/v2"]
    );
    assert_eq!(seen.last_event_id, Some(42));
    let left = seen
        .deadline
        .expect("deadline from grpc-timeout")
        .saturating_duration_since(std::time::Instant::now());
    assert!(
        left > Duration::from_secs(20) && left <= Duration::from_secs(30),
        "{left:?}"
    );

    // Delete answers Empty; a mid-stream error arrives after the events, then the stream ends.
    client
        .delete_task_push_notification_config(&cx, Default::default())
        .await
        .expect("delete");
    let items: Vec<_> = client
        .subscribe_to_task(&CallContext::new(), Default::default())
        .await
        .expect("stream")
        .collect()
        .await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        items[0].as_ref().is_ok_and(|e| e.seq == Some(7)),
        "the first seq travels in the header"
    );
    assert_eq!(
        items[1].as_ref().err().map(A2aError::kind),
        Some(ErrorKind::Internal)
    );
}
