//! Malformed requests count against the caller's rate (issue 12: parse errors bypassed the
//! rate limiter). A real `trident serve` with a burst of 3 and a slow refill (one token per
//! 20 s); an anonymous caller on its own 127.x address sends malformed requests — bad JSON to
//! JSON-RPC, a bad body to HTTP+JSON, a garbage protobuf to gRPC — and after its burst gets
//! `ResourceExhausted` in the binding's own format, saying when to retry, while a caller on
//! another address is served. Authenticated callers are charged once per request, by
//! principal.

use std::net::IpAddr;

use prost::Message as _;
use serde_json::{Value, json};
use tonic::Code;

use crate::process::Trident;

const BURST: usize = 3;

/// A server whose callers may make [`BURST`] requests, then one per 20 s.
async fn server(extra: &[&str]) -> Trident {
    let mut args = vec![
        "--agent",
        "echo",
        "--store",
        "memory",
        "--rate-limit",
        "0.05",
        "--rate-burst",
        "3",
    ];
    args.extend_from_slice(extra);
    Trident::serve(&args).await
}

fn address(last: u8) -> IpAddr {
    [127, 0, 0, last].into()
}

/// An HTTP client whose connections come from `ip` (any 127.x reaches 127.0.0.1).
fn http_from(ip: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip)
        .build()
        .expect("http client")
}

/// The `retryAfterSeconds` of a JSON-RPC error's `data` (its `ErrorInfo` metadata).
fn retry_after_seconds(reply: &Value) -> Option<u64> {
    reply["error"]["data"]
        .as_array()?
        .iter()
        .find_map(|detail| detail["metadata"]["retryAfterSeconds"].as_str())
        .and_then(|s| s.parse().ok())
}

async fn json_rpc(client: &reqwest::Client, server: &Trident, body: String) -> Value {
    client
        .post(format!("{}/", server.origin))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body)
        .send()
        .await
        .expect("HTTP")
        .json()
        .await
        .expect("a JSON-RPC reply")
}

fn list_tasks_rpc() -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {}}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_bad_json_on_json_rpc_is_rate_limited() {
    let server = server(&[]).await;
    let noisy = http_from(address(30));
    let mut codes = Vec::new();
    let mut last = Value::Null;
    for _ in 0..BURST + 3 {
        last = json_rpc(&noisy, &server, "{\"jsonrpc\": \"2.0\", \"id\": 1, ".into()).await;
        codes.push(last["error"]["code"].as_i64());
    }
    assert_eq!(&codes[..BURST], &[Some(-32700); BURST], "{codes:?}");
    assert_eq!(&codes[BURST..], &[Some(-31429); 3], "{codes:?}");
    assert!(
        retry_after_seconds(&last).is_some_and(|s| (1..=20).contains(&s)),
        "retryAfterSeconds: {last}"
    );
    // Its well-formed calls share the spent budget; the refusal echoes their id.
    let reply = json_rpc(&noisy, &server, list_tasks_rpc()).await;
    assert_eq!(reply["error"]["code"], -31429, "{reply}");
    assert_eq!(reply["id"], 7, "{reply}");
    // Another address is unaffected, and is charged once per call: exactly its burst.
    let quiet = http_from(address(31));
    let mut served = Vec::new();
    for _ in 0..BURST + 1 {
        let reply = json_rpc(&quiet, &server, list_tasks_rpc()).await;
        served.push(reply.get("result").is_some());
    }
    assert_eq!(served, [true, true, true, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_bad_bodies_on_http_json_is_rate_limited() {
    let server = server(&[]).await;
    let noisy = http_from(address(40));
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..BURST + 3 {
        let response = noisy
            .post(format!("{}/message:send", server.origin))
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .body("{\"message\": [")
            .send()
            .await
            .expect("HTTP");
        statuses.push(response.status().as_u16());
        retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
    }
    assert_eq!(&statuses[..BURST], &[400; BURST], "{statuses:?}");
    assert_eq!(&statuses[BURST..], &[429; 3], "{statuses:?}");
    assert!(
        retry_after.is_some_and(|s| (1..=20).contains(&s)),
        "Retry-After: {retry_after:?}"
    );
    // The agent card is not charged: the spent caller can still discover the agent.
    for _ in 0..5 {
        let card = noisy
            .get(format!("{}/.well-known/agent-card.json", server.origin))
            .send()
            .await
            .expect("HTTP");
        assert_eq!(card.status(), 200);
    }
    // Another address is served.
    let quiet = http_from(address(41));
    let response = quiet
        .get(format!("{}/tasks", server.origin))
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status(), 200);
}

/// One length-prefixed, uncompressed gRPC message frame.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0];
    f.extend_from_slice(&u32::try_from(payload.len()).expect("small").to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// The status of a raw h2c gRPC call from `ip` (every answer here is trailers-only).
async fn grpc_call(server: &Trident, ip: IpAddr, method: &str, message: &[u8]) -> tonic::Status {
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .local_address(ip)
        .build()
        .expect("client");
    let response = client
        .post(format!("{}/lf.a2a.v1.A2AService/{method}", server.origin))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0")
        .body(frame(message))
        .send()
        .await
        .expect("a response");
    tonic::Status::from_header_map(response.headers())
        .unwrap_or_else(|| panic!("a trailers-only answer: {:?}", response.headers()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_garbage_protobuf_on_grpc_is_rate_limited() {
    let server = server(&[]).await;
    // Field 1 as a length-delimited value longer than the message: not a SendMessageRequest.
    let garbage = [0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01];
    let mut statuses = Vec::new();
    for _ in 0..BURST + 3 {
        statuses.push(grpc_call(&server, address(50), "SendMessage", &garbage).await);
    }
    let codes: Vec<Code> = statuses.iter().map(tonic::Status::code).collect();
    assert_eq!(
        &codes[..BURST],
        &[Code::InvalidArgument; BURST],
        "{statuses:?}"
    );
    assert_eq!(
        &codes[BURST..],
        &[Code::ResourceExhausted; 3],
        "{statuses:?}"
    );
    let details = tonic_types::StatusExt::get_error_details(&statuses[BURST + 2]);
    assert!(
        details.retry_info().and_then(|r| r.retry_delay).is_some(),
        "RetryInfo: {details:?}"
    );
    // The health service is not charged: a load balancer probing from that address still
    // gets an answer (a served Check has its status in trailers, not a refusal in headers).
    let probe = reqwest::Client::builder()
        .http2_prior_knowledge()
        .local_address(address(50))
        .build()
        .expect("client")
        .post(format!("{}/grpc.health.v1.Health/Check", server.origin))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(frame(&[]))
        .send()
        .await
        .expect("a response");
    assert_eq!(probe.status(), 200);
    assert!(
        tonic::Status::from_header_map(probe.headers()).is_none(),
        "not refused: {:?}",
        probe.headers()
    );
    let body = probe.bytes().await.expect("the answer");
    assert!(body.len() > 5, "a HealthCheckResponse: {body:?}");
    // Another address is served: its GetTask of an unknown task is answered NOT_FOUND.
    let get_task = trident_proto::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let status = grpc_call(&server, address(51), "GetTask", &get_task).await;
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
}

/// An authenticated caller is its principal: each of its requests is charged once (its
/// burst is exactly its number of requests), malformed ones included, and another principal
/// from the same address keeps its own budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authenticated_caller_is_charged_once_per_request_by_principal() {
    let server = server(&["--bearer", "alice=token-a", "--bearer", "bob=token-b"]).await;
    let http = reqwest::Client::new();
    let list = |token: &'static str| {
        http.get(format!("{}/tasks", server.origin))
            .header("a2a-version", "1.0")
            .bearer_auth(token)
            .send()
    };
    let bad = |token: &'static str| {
        http.post(format!("{}/message:send", server.origin))
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .bearer_auth(token)
            .body("{\"message\": [")
            .send()
    };
    // Bob: his burst of well-formed calls, each charged once, then refused.
    let mut bob = Vec::new();
    for _ in 0..BURST + 1 {
        bob.push(list("token-b").await.expect("HTTP").status().as_u16());
    }
    assert_eq!(bob, [200, 200, 200, 429]);
    // Alice: two malformed requests and one call spend her burst.
    let mut alice = Vec::new();
    for _ in 0..2 {
        alice.push(bad("token-a").await.expect("HTTP").status().as_u16());
    }
    for _ in 0..2 {
        alice.push(list("token-a").await.expect("HTTP").status().as_u16());
    }
    assert_eq!(alice, [400, 400, 200, 429]);
}
