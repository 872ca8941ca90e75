//! Stream hygiene over the wire: keep-alive comments on idle streams, and a client that goes
//! away frees its stream on the server.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use trident_core::A2aService;
use trident_engine::Engine;
use trident_proto as pb;
use trident_testkit::agents::Demo;

use crate::harness::{cx, send_task, spawn_server_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sse_streams_get_keep_alive_comments() {
    let engine = Engine::builder(Arc::new(Demo)).build();
    let mut options = trident_server::ServerOptions::default();
    options.rest.keep_alive = Duration::from_millis(100);
    options.jsonrpc.keep_alive = Duration::from_millis(100);
    let (interfaces, server) = spawn_server_with(engine.clone(), options).await;
    let waiting = send_task(&engine, &cx(), "auth").await;
    let http = reqwest::Client::new();
    let rest = http
        .post(format!(
            "{}/tasks/{}:subscribe",
            interfaces.rest, waiting.id
        ))
        .send();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": waiting.id}});
    let jsonrpc = http.post(&interfaces.jsonrpc).json(&body).send();
    for response in [rest.await.expect("rest"), jsonrpc.await.expect("jsonrpc")] {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut bytes = response.bytes_stream();
        let mut text = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !text.contains("\n:") && !text.starts_with(':') {
            let chunk = tokio::time::timeout_at(deadline, bytes.next())
                .await
                .expect("keep-alive in time")
                .expect("open")
                .expect("chunk");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(
            text.starts_with("data:") || text.starts_with("id:"),
            "the snapshot comes first: {text}"
        );
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_frees_its_stream() {
    let engine = Engine::builder(Arc::new(Demo)).build();
    let (interfaces, server) = spawn_server_with(engine.clone(), Default::default()).await;
    // AUTH_REQUIRED keeps streams open and runs no executor: only the stream holds the task.
    let waiting = send_task(&engine, &cx(), "auth").await;
    for client in [
        Arc::new(trident_rest::RestClient::new(&interfaces.rest).expect("rest"))
            as Arc<dyn A2aService>,
        Arc::new(trident_jsonrpc::JsonRpcClient::new(&interfaces.jsonrpc).expect("jsonrpc")),
        Arc::new(
            trident_grpc::GrpcClient::connect(&interfaces.grpc)
                .await
                .expect("grpc"),
        ),
    ] {
        let mut stream = client
            .subscribe_to_task(
                &cx(),
                pb::SubscribeToTaskRequest {
                    id: waiting.id.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("subscribe");
        let first = stream.next().await.expect("snapshot").expect("ok");
        assert!(matches!(
            first.response.payload,
            Some(pb::stream_response::Payload::Task(_))
        ));
        assert_eq!(
            engine.stats().live_tasks,
            1,
            "the open stream holds the task"
        );
        drop(stream);
        drop(client);
        crate::wait::until(
            "the server noticed the client left and released the stream",
            || {
                let idle = engine.stats().live_tasks == 0;
                async move { idle.then_some(()) }
            },
        )
        .await;
    }
    server.abort();
}

/// A server that never ends its body: an SSE event whose line never ends, or a unary
/// response that never ends. Every request gets `body` then endless `x`s.
async fn endless_server(content_type: &'static str, head: &'static str) -> String {
    use axum::body::{Body, Bytes};
    let app = axum::Router::new().fallback(move || async move {
        let tail = futures::stream::repeat_with(|| {
            Ok::<_, std::convert::Infallible>(Bytes::from_static(&[b'x'; 16 << 10]))
        });
        let body = futures::stream::once(async move { Ok(Bytes::from_static(head.as_bytes())) })
            .chain(tail);
        ([("content-type", content_type)], Body::from_stream(body))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// eventsource-stream buffered a line without limit; ours stops at the client's bound, on
/// both HTTP clients, for a stream's event and for a unary response alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_ends_a_body_cannot_grow_the_clients_memory() {
    use trident_core::ErrorKind;
    let limit = 1 << 20;
    let sse = endless_server("text/event-stream", "id: 1\ndata: {\"task\":").await;
    let json = endless_server("application/json", "{\"id\":\"").await;
    let clients = |url: &str| -> Vec<(&'static str, Arc<dyn A2aService>)> {
        vec![
            (
                "HTTP+JSON",
                Arc::new(
                    trident_rest::RestClient::new(url)
                        .expect("client")
                        .with_max_response_size(limit),
                ),
            ),
            (
                "JSON-RPC",
                Arc::new(
                    trident_jsonrpc::JsonRpcClient::new(url)
                        .expect("client")
                        .with_max_response_size(limit),
                ),
            ),
        ]
    };
    let message = pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: "m".into(),
            role: pb::Role::User.into(),
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("hi".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let wait = Duration::from_secs(20);
    for (binding, client) in clients(&sse) {
        let mut events =
            tokio::time::timeout(wait, client.send_streaming_message(&cx(), message.clone()))
                .await
                .expect("in time")
                .expect("the stream opens");
        let first = tokio::time::timeout(wait, events.next())
            .await
            .expect("in time")
            .expect("an item");
        let e = first.expect_err("an event over the bound is an error");
        assert_eq!(e.kind(), ErrorKind::InvalidAgentResponse, "{binding}: {e}");
        assert!(
            e.to_string().contains("limit of 1048576 bytes"),
            "{binding}: {e}"
        );
        assert!(events.next().await.is_none(), "{binding}: the stream ends");
    }
    for (binding, client) in clients(&json) {
        let e = tokio::time::timeout(wait, client.send_message(&cx(), message.clone()))
            .await
            .expect("in time")
            .expect_err("a response over the bound is an error");
        assert_eq!(e.kind(), ErrorKind::InvalidAgentResponse, "{binding}: {e}");
    }
}

/// SubscribeToTask works on any non-terminal task and ends at a terminal state (spec §3.1.6):
/// three subscribers of an INPUT_REQUIRED task stay open across a fourth client's follow-up
/// and all see the same events in the same order until COMPLETED, then their streams close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_of_an_interrupted_task_follow_it_to_the_end_on_every_binding() {
    use crate::harness::{Fixture, Transport, Variant, follow_up, state_of};
    for transport in [
        Transport::InProcess,
        Transport::Grpc,
        Transport::JsonRpc,
        Transport::Rest,
    ] {
        let f = Fixture::new(transport, Variant::default()).await;
        let task = send_task(&*f.svc, &cx(), "input").await;
        assert_eq!(task.state(), pb::TaskState::InputRequired, "{transport:?}");
        let mut subscribers = Vec::new();
        for _ in 0..3 {
            let mut s = f
                .svc
                .subscribe_to_task(
                    &cx(),
                    pb::SubscribeToTaskRequest {
                        id: task.id.clone(),
                        ..Default::default()
                    },
                )
                .await
                .expect("subscribe");
            let first = s.next().await.expect("the snapshot").expect("ok");
            assert_eq!(
                state_of(&first),
                Some(pb::TaskState::InputRequired),
                "{transport:?}"
            );
            subscribers.push(s);
        }
        follow_up(&*f.svc, &cx(), &task, "Ada")
            .await
            .expect("follow-up");
        let mut seen = Vec::new();
        for s in subscribers {
            let events = tokio::time::timeout(Duration::from_secs(10), s.collect::<Vec<_>>())
                .await
                .unwrap_or_else(|_| panic!("{transport:?}: the stream closes after COMPLETED"));
            let events: Vec<_> = events
                .into_iter()
                .map(|e| e.expect("event"))
                .map(|e| (e.seq, e.response))
                .collect();
            seen.push(events);
        }
        let states: Vec<_> = seen[0]
            .iter()
            .map(|(_, r)| {
                crate::harness::state_of(&trident_core::StreamEvent {
                    seq: None,
                    response: r.clone(),
                })
            })
            .collect();
        assert_eq!(
            states,
            [
                Some(pb::TaskState::Working),
                None,
                Some(pb::TaskState::Completed)
            ],
            "{transport:?}: the follow-up turn, to the end"
        );
        assert!(
            seen.iter().all(|s| s == &seen[0]),
            "{transport:?}: every subscriber saw the same events in the same order"
        );
    }
}

/// A `Last-Event-ID` that is not a sequence number (`-1`, `abc`, 10²³ — past `u64` — or `1e3`)
/// was read as absent, so a client resuming a live task's stream silently got the whole
/// stream again from its snapshot. It is refused, on every binding, as `InvalidParams` naming
/// the header; a valid one still resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_last_event_id_is_refused_on_every_binding() {
    use crate::harness::{Fixture, Transport, Variant};
    use serde_json::{Value, json};
    let f = Fixture::new(Transport::Rest, Variant::default()).await;
    let interfaces = f.interfaces.clone().expect("server");
    let task = send_task(&*f.svc, &cx(), "input").await;
    assert_eq!(task.state(), pb::TaskState::InputRequired, "a live task");
    let http = reqwest::Client::new();
    let rest = format!("{}/tasks/{}:subscribe", interfaces.rest, task.id);
    let rpc = json!({
        "jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": task.id}
    });
    let reason = |details: &Value| {
        details
            .as_array()
            .and_then(|d| d.iter().find_map(|x| x.get("reason").cloned()))
            .unwrap_or(Value::Null)
    };
    let mut grpc = trident_proto::a2a_service_client::A2aServiceClient::connect(format!(
        "http://{}",
        interfaces.grpc
    ))
    .await
    .expect("gRPC");
    for bad in ["-1", "abc", "100000000000000000000000", "1e3"] {
        for method in [reqwest::Method::GET, reqwest::Method::POST] {
            let response = http
                .request(method.clone(), &rest)
                .header("a2a-version", "1.0")
                .header("last-event-id", bad)
                .send()
                .await
                .expect("HTTP");
            // (Checked before the body is read: a stream that opened would not end.)
            assert_eq!(
                response.status().as_u16(),
                400,
                "HTTP+JSON {method} Last-Event-ID {bad:?}: {:?}",
                response.headers()
            );
            let body: Value = response.json().await.expect("an AIP-193 body");
            assert_eq!(
                reason(&body["error"]["details"]),
                "INVALID_PARAMS",
                "{body}"
            );
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("Last-Event-ID"), "{body}");
        }
        let response = http
            .post(&interfaces.jsonrpc)
            .header("a2a-version", "1.0")
            .header("last-event-id", bad)
            .json(&rpc)
            .send()
            .await
            .expect("HTTP");
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "JSON-RPC Last-Event-ID {bad:?}: an error, not a stream"
        );
        let body: Value = response.json().await.expect("a JSON-RPC error");
        assert_eq!(body["id"], 7, "{body}");
        assert_eq!(body["error"]["code"], -32602, "JSON-RPC {bad:?}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("Last-Event-ID"), "{body}");

        let mut request = tonic::Request::new(pb::SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert("last-event-id", bad.parse().expect("ASCII"));
        request
            .metadata_mut()
            .insert("a2a-version", "1.0".parse().expect("ASCII"));
        let status = grpc
            .subscribe_to_task(request)
            .await
            .err()
            .unwrap_or_else(|| panic!("gRPC Last-Event-ID {bad:?} is refused"));
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains("Last-Event-ID"), "{status:?}");
    }
    // A sequence number resumes after it: the stream opens.
    let response = http
        .post(&rest)
        .header("a2a-version", "1.0")
        .header("last-event-id", "1")
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
}
