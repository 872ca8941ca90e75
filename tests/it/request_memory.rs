//! Memory a client can make the server hold with requests it never finishes (issue 27): an
//! HTTP/1.1 request head is refused at `max_header_bytes` (hyper alone buffered about 400 KiB
//! of one), stalled request bodies share one budget per listener (`max_inflight_body_bytes`)
//! that cuts the stalest off for fresher bytes.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use trident_core::A2aService;
use trident_server::{ConnectionLimits, DEFAULT_MAX_HEADER_BYTES, ServerOptions};

use crate::harness::{cx, msg, req};
use crate::slowloris::{MARGIN, connect, read_until_closed, relaxed, serve, still_open};

/// Exactly `len` bytes of an HTTP/1.1 request head that never ends (no blank line).
fn unfinished_head(len: usize) -> Vec<u8> {
    let mut head = b"POST / HTTP/1.1\r\nHost: x\r\n".to_vec();
    while head.len() < len {
        let room = len - head.len();
        let line = format!("X-Pad: {}\r\n", "a".repeat(1000));
        head.extend_from_slice(&line.as_bytes()[..line.len().min(room)]);
    }
    head
}

/// The head of a JSON request to `path` promising `length` bytes of body.
fn body_head(path: &str, length: usize) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nContent-Length: {length}\r\n\r\n"
    )
    .into_bytes()
}

/// Writes `bytes`, ignoring a server that already closed the connection (it may refuse
/// before the client is done).
async fn send(socket: &mut TcpStream, bytes: &[u8]) {
    let _ = socket.write_all(bytes).await;
}

/// A card request with one header of `len` bytes over `client`.
async fn card_with_header(
    client: &reqwest::Client,
    origin: &str,
    len: usize,
) -> reqwest::StatusCode {
    client
        .get(format!("{origin}{}", trident_server::CARD_PATH))
        .header("x-pad", "a".repeat(len))
        .send()
        .await
        .expect("a response")
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_at_the_head_limit_is_answered_431_and_closed() {
    // The header timeout is a minute: only the head limit can end these quickly.
    let server = serve(relaxed(), ServerOptions::default()).await;
    let mut socket = connect(server.addr).await;
    send(&mut socket, &unfinished_head(DEFAULT_MAX_HEADER_BYTES)).await;
    let (response, closed) = read_until_closed(&mut socket, MARGIN).await;
    assert!(
        closed,
        "a head at the limit is not buffered on: the connection closes"
    );
    assert!(
        response.starts_with("HTTP/1.1 431"),
        "431 Request Header Fields Too Large first: {response:?}"
    );
    // Under the limit, an unfinished head waits for the rest (until the header timeout).
    let mut under = connect(server.addr).await;
    send(
        &mut under,
        &unfinished_head(DEFAULT_MAX_HEADER_BYTES - 4096),
    )
    .await;
    assert!(still_open(&mut under).await);
    // HTTP/2: a header list over the limit is refused for its stream (431).
    let h1 = reqwest::Client::new();
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    assert_eq!(
        card_with_header(&h2, &server.interfaces.rest, 20_000).await,
        reqwest::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert!(
        card_with_header(&h1, &server.interfaces.rest, 8_000)
            .await
            .is_success()
    );
    // The limit is the server's to set, for both protocols.
    let roomy = serve(
        ConnectionLimits {
            max_header_bytes: Some(64 << 10),
            ..relaxed()
        },
        ServerOptions::default(),
    )
    .await;
    for (name, client) in [("HTTP/1.1", &h1), ("HTTP/2", &h2)] {
        assert!(
            card_with_header(client, &roomy.interfaces.rest, 40_000)
                .await
                .is_success(),
            "{name}: a 40 KB header under a 64 KiB limit"
        );
    }
}

/// Connections that each send the head and `sent` bytes of a `length`-byte JSON body (to
/// JSON-RPC and HTTP+JSON in turn), then stall.
async fn stalled_bodies(
    addr: SocketAddr,
    count: usize,
    length: usize,
    sent: usize,
) -> Vec<(&'static str, TcpStream)> {
    let body = vec![b' '; sent];
    let mut stalled = Vec::new();
    for i in 0..count {
        let path = if i % 2 == 0 { "/" } else { "/message:send" };
        let mut socket = connect(addr).await;
        send(&mut socket, &body_head(path, length)).await;
        send(&mut socket, &body).await;
        stalled.push((path, socket));
    }
    stalled
}

/// A SendMessage over each binding's client succeeds.
async fn served_over_every_binding(clients: &[(&str, Arc<dyn A2aService>)]) {
    for (binding, client) in clients {
        client
            .send_message(&cx(), req(msg("hello")))
            .await
            .unwrap_or_else(|e| panic!("{binding}: SendMessage during the flood: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_past_the_body_budget_are_cut_off_and_callers_are_served() {
    const BUDGET: usize = 1 << 20;
    // The body timeout is a minute: only the budget can end these quickly.
    let server = serve(
        ConnectionLimits {
            max_inflight_body_bytes: Some(BUDGET),
            ..relaxed()
        },
        ServerOptions::default(),
    )
    .await;
    // Eight bodies of 256 KiB received (of 1 MiB promised): twice the budget.
    let stalled = stalled_bodies(server.addr, 8, 1 << 20, 256 << 10).await;
    let outcomes =
        futures::future::join_all(stalled.into_iter().map(|(path, mut socket)| async move {
            let (response, closed) = read_until_closed(&mut socket, MARGIN).await;
            (path, response, closed, socket)
        }))
        .await;
    let cut: Vec<_> = outcomes.iter().filter(|o| o.2).collect();
    assert!(
        cut.len() >= 4,
        "at most 1 MiB of the 2 MiB stays held: {} of 8 cut off",
        cut.len()
    );
    assert!(cut.len() < 8, "the freshest body is kept");
    for (path, response, _, _) in &cut {
        let lower = response.to_ascii_lowercase();
        assert!(lower.contains("connection: close"), "{path}: {response:?}");
        if *path == "/" {
            assert!(
                response.starts_with("HTTP/1.1 200") && response.contains("-31429"),
                "JSON-RPC: a ResourceExhausted error: {response:?}"
            );
        } else {
            assert!(
                response.starts_with("HTTP/1.1 429") && lower.contains("retry-after: 1"),
                "HTTP+JSON: 429 with Retry-After: {response:?}"
            );
        }
    }
    // Callers with whole bodies are served (their bytes cut the stalest off if need be).
    let clients: Vec<(&str, Arc<dyn A2aService>)> = vec![
        (
            "JSON-RPC",
            Arc::new(
                trident_jsonrpc::JsonRpcClient::new(&server.interfaces.jsonrpc).expect("jsonrpc"),
            ),
        ),
        (
            "HTTP+JSON",
            Arc::new(trident_rest::RestClient::new(&server.interfaces.rest).expect("rest")),
        ),
        (
            "gRPC",
            Arc::new(
                trident_grpc::GrpcClient::connect(&server.interfaces.grpc)
                    .await
                    .expect("grpc"),
            ),
        ),
    ];
    served_over_every_binding(&clients).await;
    drop(outcomes);
}
