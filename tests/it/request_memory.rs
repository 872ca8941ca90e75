//! Memory a client can make the server hold with requests it never finishes (issue 27): an
//! HTTP/1.1 request head is refused at `max_header_bytes` (hyper alone buffered about 400 KiB
//! of one), stalled request bodies share one budget per listener (`max_inflight_body_bytes`)
//! that cuts the stalest off for fresher bytes, and on the default limits a flood of both
//! keeps a real `trident serve` under a fixed resident-memory bound while callers are served
//! over every binding.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use trident_client::Binding;
use trident_core::A2aService;
use trident_server::{ConnectionLimits, DEFAULT_MAX_HEADER_BYTES, ServerOptions};

use crate::harness::{cx, msg, req};
use crate::process::Trident;
use crate::slowloris::{MARGIN, connect, read_until_closed, relaxed, serve, still_open};
use crate::wait::until;

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

/// A SendMessage over each binding's client succeeds.
async fn served_over_every_binding(clients: &[(&str, Arc<dyn A2aService>)]) {
    for (binding, client) in clients {
        client
            .send_message(&cx(), req(msg("hello")))
            .await
            .unwrap_or_else(|e| panic!("{binding}: SendMessage during the flood: {e}"));
    }
}

/// Waits until the server listening on `port` has read everything sent to it.
async fn server_has_read(port: u16) {
    until("the server has read what was sent", || {
        let unread = unread_by_server(port);
        async move { (unread == 0).then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_past_the_body_budget_are_cut_off_and_callers_are_served() {
    const BUDGET: usize = 1 << 20;
    const SENT: usize = 300 << 10;
    // The body timeout is a minute: only the budget can end these quickly.
    let server = serve(
        ConnectionLimits {
            max_inflight_body_bytes: Some(BUDGET),
            ..relaxed()
        },
        ServerOptions::default(),
    )
    .await;
    let port = server.addr.port();
    // First, and so the stalest: a gRPC SendMessage over h2c whose one message promises
    // 1 MiB and stops after 300 KiB.
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(1u32 << 20).to_be_bytes());
    frame.extend_from_slice(&[0x0a; SENT]);
    let stalled_grpc = futures::stream::once(async move { Ok::<_, std::io::Error>(frame) })
        .chain(futures::stream::pending());
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let grpc = tokio::spawn(
        h2.post(format!(
            "{}/lf.a2a.v1.A2AService/SendMessage",
            server.interfaces.rest
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(reqwest::Body::wrap_stream(stalled_grpc))
        .send(),
    );
    server_has_read(port).await;
    // Then eight JSON bodies over HTTP/1.1, to JSON-RPC and HTTP+JSON in turn, each 300 KiB
    // of 1 MiB promised, one after the other: 2.6 MiB held without a budget. Of 1 MiB, the
    // three freshest fit; the gRPC body and the five oldest are cut off, oldest first.
    let body = vec![b' '; SENT];
    let mut stalled = Vec::new();
    for i in 0..8 {
        let path = if i % 2 == 0 { "/" } else { "/message:send" };
        let mut socket = connect(server.addr).await;
        send(&mut socket, &body_head(path, 1 << 20)).await;
        send(&mut socket, &body).await;
        server_has_read(port).await;
        stalled.push((path, socket));
    }
    let grpc = tokio::time::timeout(MARGIN, grpc)
        .await
        .expect("the gRPC call is answered, not held")
        .expect("the request task")
        .expect("a response");
    assert_eq!(
        grpc.headers().get("grpc-status").map(|v| v.as_bytes()),
        Some(&b"8"[..]),
        "gRPC: RESOURCE_EXHAUSTED: {:?}",
        grpc.headers()
    );
    let outcomes =
        futures::future::join_all(stalled.into_iter().map(|(path, mut socket)| async move {
            let (response, closed) = read_until_closed(&mut socket, MARGIN).await;
            (path, response, closed, socket)
        }))
        .await;
    let closed: Vec<bool> = outcomes.iter().map(|o| o.2).collect();
    assert_eq!(
        closed,
        [true, true, true, true, true, false, false, false],
        "the five oldest bodies are cut off, the three freshest held"
    );
    for (path, response, _, _) in outcomes.iter().filter(|o| o.2) {
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

/// `VmRSS` and `VmHWM` (peak) of process `pid`, in bytes.
fn resident(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb << 10)
            .unwrap_or_else(|| panic!("{name} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Bytes sent to `port` that the server has not read yet: the receive queues of its sockets
/// and the send queues of their peers (IPv4 loopback, from `/proc/net/tcp`).
fn unread_by_server(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let port_of = |address: &str| {
        address
            .rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (tx, rx) = fields.get(4)?.split_once(':')?;
            let queue = if port_of(fields.get(1)?)? == port {
                rx
            } else if port_of(fields.get(2)?)? == port {
                tx
            } else {
                return None;
            };
            u64::from_str_radix(queue, 16).ok()
        })
        .sum()
}

/// A `trident serve --store memory` process on the default limits, and its address.
async fn serve_process() -> (Trident, SocketAddr) {
    let server = Trident::serve(&["--store", "memory"]).await;
    let addr = server
        .origin
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    (server, addr)
}

/// `n` connections to `addr`, each sent `len` bytes of an unfinished request head.
async fn unfinished_heads(addr: SocketAddr, n: usize, len: usize) -> Vec<TcpStream> {
    let head = unfinished_head(len);
    futures::future::join_all((0..n).map(|_| async {
        let mut socket = connect(addr).await;
        send(&mut socket, &head).await;
        socket
    }))
    .await
}

/// The resident-memory bound docs/security.md states for the flood below.
const FLOOD_BOUND: u64 = 448 << 20;

/// The done-when test of issue 27: a real `trident serve` on the default limits, flooded with
/// 300 unfinished 384 KiB request heads and 128 request bodies stalled 16 bytes short of
/// 4 MiB (624 MiB offered: hyper alone would buffer the heads whole, and without a budget
/// every body stays held until the body timeout), stays under [`FLOOD_BOUND`] of peak
/// resident memory while a SendMessage over each binding succeeds during the flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unfinished_heads_and_stalled_bodies_stays_under_a_memory_bound() {
    let (server, addr) = serve_process().await;
    let clients: Vec<(&str, Arc<dyn A2aService>)> = vec![
        ("JSON-RPC", server.client(Binding::JsonRpc).await),
        ("HTTP+JSON", server.client(Binding::Rest).await),
        ("gRPC", server.client(Binding::Grpc).await),
    ];
    let heads = unfinished_heads(addr, 300, 384 << 10);
    const LENGTH: usize = 4 << 20;
    let body = Arc::new(vec![b' '; LENGTH - 16]);
    let bodies = futures::future::join_all((0..128).map(|i| {
        let body = body.clone();
        async move {
            let path = if i % 2 == 0 { "/" } else { "/message:send" };
            let mut socket = connect(addr).await;
            send(&mut socket, &body_head(path, LENGTH)).await;
            send(&mut socket, &body).await;
            socket
        }
    }));
    let (heads, bodies) = tokio::join!(heads, bodies);
    // Written is not read: wait until the server has taken in what the kernel holds for it,
    // so that the memory measured is the memory the flood makes it hold.
    until("the server has read the flood", || {
        let unread = unread_by_server(addr.port());
        async move { (unread < 64 << 10).then_some(()) }
    })
    .await;
    served_over_every_binding(&clients).await;
    let (rss, peak) = resident(server.pid());
    println!(
        "flood: peak resident memory {} MiB, now {} MiB (bound {} MiB)",
        peak >> 20,
        rss >> 20,
        FLOOD_BOUND >> 20
    );
    assert!(
        peak < FLOOD_BOUND,
        "peak resident memory {} MiB (now {} MiB) over the bound of {} MiB",
        peak >> 20,
        rss >> 20,
        FLOOD_BOUND >> 20
    );
    drop((heads, bodies));
}

/// Memory a burst of connections held goes back to the system once they close (issue 27: 791
/// MB of 1.86 GB stayed resident after a flood of unfinished heads closed): 3 000 connections
/// each holding 15 KB of an unfinished head, under the head limit, then closed. glibc's
/// allocator kept nearly all of it before (90 of 92 MB for 3 000 such connections); the server
/// now trims its arenas after a burst of closes, so most of that memory goes back to the
/// system.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_held_by_closed_connections_goes_back_to_the_system() {
    let (server, addr) = serve_process().await;
    served_over_every_binding(&[("HTTP+JSON", server.client(Binding::Rest).await)]).await;
    let (idle, _) = resident(server.pid());
    let sockets = unfinished_heads(addr, 3000, 15 << 10).await;
    server_has_read(addr.port()).await;
    let (held, _) = resident(server.pid());
    assert!(
        held > idle + (8 << 20),
        "the flood holds memory: {} MiB idle, {} MiB held",
        idle >> 20,
        held >> 20
    );
    drop(sockets);
    // At least half of what the flood took comes back. Not all of it: what is still allocated
    // (runtime and allocator bookkeeping, buffers reused since) pins the pages it sits on, and
    // where it landed varies from run to run (measured on a loaded machine: 0 to 40 % of the
    // flood's memory stayed, against 98 % before the server trimmed).
    let back = idle + (held - idle) / 2;
    let after = until(
        "resident memory falls back after the connections close",
        || {
            let (rss, _) = resident(server.pid());
            async move { (rss <= back).then_some(rss) }
        },
    )
    .await;
    println!(
        "closed connections: {} MiB idle, {} MiB held, {} MiB after",
        idle >> 20,
        held >> 20,
        after >> 20
    );
}
