//! Connection hygiene under abuse (issue 12, "Slowloris"): partial request heads and bodies
//! are cut off at their timeouts, a flood of idle connections past the connection limit sheds
//! the idle-longest ones while real callers keep being served, and none of it cuts a long
//! response stream.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use trident_core::A2aService;
use trident_engine::Engine;
use trident_proto as pb;
use trident_server::{ConnectionLimits, Interfaces, ServerOptions};
use trident_testkit::agents::Demo;

use crate::harness::{cx, send_task};
use crate::process::Trident;
use crate::wait::until;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Generous slack for a loaded CI machine: "closed within the timeout plus this".
pub(crate) const MARGIN: Duration = Duration::from_secs(5);

/// Limits that never get in the way unless a test lowers one.
pub(crate) fn relaxed() -> ConnectionLimits {
    ConnectionLimits {
        header_timeout: Some(Duration::from_secs(60)),
        body_timeout: Some(Duration::from_secs(60)),
        idle_timeout: Some(Duration::from_secs(60)),
        h2_keep_alive: Some(Duration::from_secs(60)),
        max_connections: Some(10_000),
        ..ConnectionLimits::default()
    }
}

pub(crate) struct Server {
    engine: Engine,
    pub(crate) interfaces: Interfaces,
    pub(crate) addr: SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The demo agent served by `trident_server::serve_with` on 127.0.0.1:0.
pub(crate) async fn serve(limits: ConnectionLimits, options: ServerOptions) -> Server {
    let engine = Engine::builder(Arc::new(Demo)).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let interfaces = Interfaces::local(addr);
    let card = trident_server::card_with_interfaces(engine.card().clone(), &interfaces);
    let app = trident_server::app(Arc::new(engine.clone()), &card, &options).expect("app");
    let task = tokio::spawn(trident_server::serve_with(
        listener,
        app,
        std::future::pending(),
        Duration::from_secs(1),
        limits,
    ));
    Server {
        engine,
        interfaces,
        addr,
        task,
    }
}

/// Reads (and discards) until the server closes the connection; `false` if it is still
/// open after `wait`.
async fn closed_within(mut socket: TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(wait, async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Everything the server sends until it closes, or what it sent within `wait`.
pub(crate) async fn read_until_closed(socket: &mut TcpStream, wait: Duration) -> (String, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(wait, async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&out).into_owned(), closed)
}

/// Whether `socket` is still open: nothing to read and no EOF for a short while.
pub(crate) async fn still_open(socket: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1];
    tokio::time::timeout(ms(200), socket.read(&mut buf))
        .await
        .is_err()
}

pub(crate) async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.expect("connect")
}

/// A connection that starts a request head and never finishes it.
async fn partial_head(addr: SocketAddr) -> TcpStream {
    let mut socket = connect(addr).await;
    socket
        .write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .expect("write");
    socket
}

async fn card_status(http: &reqwest::Client, server: &Server) -> reqwest::StatusCode {
    http.get(format!(
        "{}{}",
        server.interfaces.rest,
        trident_server::CARD_PATH
    ))
    .send()
    .await
    .expect("the card request is served")
    .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_request_heads_are_closed_at_the_header_timeout() {
    let header_timeout = ms(500);
    let server = serve(
        ConnectionLimits {
            header_timeout: Some(header_timeout),
            ..relaxed()
        },
        ServerOptions::default(),
    )
    .await;
    let mut sockets = Vec::new();
    for _ in 0..60 {
        sockets.push(partial_head(server.addr).await);
    }
    let started = Instant::now();
    let closed = futures::future::join_all(
        sockets
            .into_iter()
            .map(|s| closed_within(s, header_timeout + MARGIN)),
    )
    .await;
    assert_eq!(
        closed.iter().filter(|c| !**c).count(),
        0,
        "every partial head is closed within the header timeout plus margin"
    );
    assert!(started.elapsed() < header_timeout + MARGIN);
    // The server still serves.
    assert!(
        card_status(&reqwest::Client::new(), &server)
            .await
            .is_success()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_content_length_is_refused_at_the_body_timeout() {
    let body_timeout = ms(500);
    let server = serve(
        ConnectionLimits {
            body_timeout: Some(body_timeout),
            ..relaxed()
        },
        ServerOptions::default(),
    )
    .await;
    // JSON-RPC and HTTP+JSON over HTTP/1.1: 11 of 100 000 promised bytes.
    for path in ["/", "/message:send"] {
        let mut socket = connect(server.addr).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             A2A-Version: 1.0\r\nContent-Length: 100000\r\n\r\n{{\"jsonrpc\":"
        );
        socket.write_all(head.as_bytes()).await.expect("write");
        let started = Instant::now();
        let (response, closed) = read_until_closed(&mut socket, body_timeout + MARGIN).await;
        assert!(closed, "{path}: the connection is closed, not held");
        assert!(
            response.starts_with("HTTP/1.1 408"),
            "{path}: a 408 before the close: {response:?}"
        );
        assert!(started.elapsed() < body_timeout + MARGIN);
    }
    // JSON-RPC over h2c with a body that stalls after 11 bytes.
    let http2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let stalled =
        futures::stream::once(async { Ok::<_, std::io::Error>(b"{\"jsonrpc\":".to_vec()) })
            .chain(futures::stream::pending());
    let started = Instant::now();
    let response = tokio::time::timeout(
        body_timeout + MARGIN,
        http2
            .post(&server.interfaces.jsonrpc)
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(stalled))
            .send(),
    )
    .await
    .expect("answered in time")
    .expect("a response");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), reqwest::StatusCode::REQUEST_TIMEOUT);
    assert!(started.elapsed() < body_timeout + MARGIN);
    // gRPC: a message frame header promising 100 000 bytes, then 6 of them.
    let mut frame = vec![0u8];
    frame.extend_from_slice(&100_000u32.to_be_bytes());
    frame.extend_from_slice(b"\x0a\x04abcd");
    let stalled = futures::stream::once(async move { Ok::<_, std::io::Error>(frame) })
        .chain(futures::stream::pending());
    let started = Instant::now();
    let response = tokio::time::timeout(
        body_timeout + MARGIN,
        http2
            .post(format!(
                "{}/lf.a2a.v1.A2AService/SendMessage",
                server.interfaces.rest
            ))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(reqwest::Body::wrap_stream(stalled))
            .send(),
    )
    .await
    .expect("answered in time")
    .expect("a response");
    assert_eq!(
        response.headers().get("grpc-status").map(|v| v.as_bytes()),
        Some(&b"4"[..]),
        "DEADLINE_EXCEEDED: {:?}",
        response.headers()
    );
    assert!(started.elapsed() < body_timeout + MARGIN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_past_the_connection_limit_sheds_the_idle_longest_and_callers_are_served() {
    const MAX: usize = 64;
    let mut options = ServerOptions::default();
    options.rest.keep_alive = Duration::from_secs(60);
    let server = serve(
        ConnectionLimits {
            max_connections: Some(MAX),
            ..relaxed()
        },
        options,
    )
    .await;
    // An established caller: a stream open throughout (in flight, so never shed).
    let waiting = send_task(&server.engine, &cx(), "auth").await;
    let rest = trident_rest::RestClient::new(&server.interfaces.rest).expect("client");
    let mut stream = rest
        .subscribe_to_task(
            &cx(),
            pb::SubscribeToTaskRequest {
                id: waiting.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribe");
    assert!(stream.next().await.expect("the snapshot").is_ok());
    // Fill the listener with idle connections, alternately silent and partial heads. No
    // pause is needed for the server to see them in order: the kernel queues connections in
    // the order they are made and the one accept loop admits them in that order, so
    // "admitted the longest ago" is "connected first" however far behind the loop runs.
    let mut first = Vec::new();
    for i in 0..MAX - 1 {
        first.push(if i % 2 == 0 {
            connect(server.addr).await
        } else {
            partial_head(server.addr).await
        });
    }
    // 16 more: the 16 idle the longest (the first 16) are shed for them.
    let mut flood = Vec::new();
    for _ in 0..16 {
        flood.push(connect(server.addr).await);
    }
    let survivors = first.split_off(16);
    let shed = futures::future::join_all(first.into_iter().map(|s| closed_within(s, MARGIN))).await;
    assert!(
        shed.iter().all(|c| *c),
        "the 16 oldest idle are shed: {shed:?}"
    );
    let mut survivors = survivors;
    let open = futures::future::join_all(survivors.iter_mut().map(still_open)).await;
    assert!(
        open.iter().all(|o| *o),
        "the newer idle connections stay: {open:?}"
    );
    // A real caller keeps being served while the flood goes on (a new connection per
    // request, each admitted by shedding an idle one).
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    for round in 0..40 {
        for _ in 0..3 {
            flood.push(if round % 2 == 0 {
                connect(server.addr).await
            } else {
                partial_head(server.addr).await
            });
        }
        assert!(
            card_status(&http, &server).await.is_success(),
            "round {round}"
        );
    }
    // The established stream was never cut: it still delivers the task's next event.
    server
        .engine
        .cancel_task(
            &cx(),
            pb::CancelTaskRequest {
                id: waiting.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("cancel");
    assert_canceled(stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_full_of_busy_connections_refuses_new_ones_until_one_ends() {
    let mut options = ServerOptions::default();
    options.rest.keep_alive = Duration::from_secs(60);
    let server = serve(
        ConnectionLimits {
            max_connections: Some(2),
            ..relaxed()
        },
        options,
    )
    .await;
    let waiting = send_task(&server.engine, &cx(), "auth").await;
    let subscribe = |client: trident_rest::RestClient| {
        let id = waiting.id.clone();
        async move {
            let mut stream = client
                .subscribe_to_task(
                    &cx(),
                    pb::SubscribeToTaskRequest {
                        id,
                        ..Default::default()
                    },
                )
                .await
                .expect("subscribe");
            assert!(stream.next().await.expect("the snapshot").is_ok());
            (client, stream)
        }
    };
    let one = subscribe(trident_rest::RestClient::new(&server.interfaces.rest).expect("c")).await;
    let two = subscribe(trident_rest::RestClient::new(&server.interfaces.rest).expect("c")).await;
    assert!(
        closed_within(connect(server.addr).await, MARGIN).await,
        "both connections are busy: the third is refused"
    );
    drop(one);
    // Once a stream ends its connection goes; a new one is admitted again.
    let http = reqwest::Client::new();
    let card = format!("{}{}", server.interfaces.rest, trident_server::CARD_PATH);
    until("a new connection is admitted after a stream ended", || {
        let request = http.get(&card).send();
        async move {
            match request.await {
                Ok(r) if r.status().is_success() => Some(()),
                _ => None,
            }
        }
    })
    .await;
    drop(two);
}

/// Reads `stream` to its end and checks the task was canceled.
async fn assert_canceled(mut stream: trident_core::EventStream) {
    let mut canceled = false;
    while let Some(event) = tokio::time::timeout(MARGIN, stream.next())
        .await
        .expect("the stream is alive and ends in time")
    {
        let event = event.expect("an event");
        if let Some(pb::stream_response::Payload::StatusUpdate(u)) = &event.response.payload {
            canceled |= u.status.as_ref().map(|s| s.state()) == Some(pb::TaskState::Canceled);
        }
    }
    assert!(canceled, "the stream delivered the cancellation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_outlive_the_idle_body_and_header_timeouts() {
    let short = ms(300);
    let mut options = ServerOptions::default();
    // No keep-alive comments: nothing crosses the connections while the streams wait.
    options.rest.keep_alive = Duration::from_secs(60);
    options.jsonrpc.keep_alive = Duration::from_secs(60);
    let server = serve(
        ConnectionLimits {
            header_timeout: Some(short),
            body_timeout: Some(short),
            idle_timeout: Some(short),
            h2_keep_alive: Some(short),
            max_connections: Some(64),
            ..ConnectionLimits::default()
        },
        options,
    )
    .await;
    // The limits are live: an idle connection is closed.
    assert!(closed_within(connect(server.addr).await, short + MARGIN).await);
    let waiting = send_task(&server.engine, &cx(), "auth").await;
    let clients: Vec<(&str, Arc<dyn A2aService>)> = vec![
        (
            "HTTP+JSON",
            Arc::new(trident_rest::RestClient::new(&server.interfaces.rest).expect("rest")),
        ),
        (
            "JSON-RPC",
            Arc::new(
                trident_jsonrpc::JsonRpcClient::new(&server.interfaces.jsonrpc).expect("jsonrpc"),
            ),
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
    let mut streams = Vec::new();
    for (binding, client) in &clients {
        let mut stream = client
            .subscribe_to_task(
                &cx(),
                pb::SubscribeToTaskRequest {
                    id: waiting.id.clone(),
                    ..Default::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{binding}: subscribe: {e}"));
        assert!(
            stream.next().await.expect("the snapshot").is_ok(),
            "{binding}"
        );
        streams.push(stream);
    }
    // Well past every timeout.
    tokio::time::sleep(short * 5).await;
    server
        .engine
        .cancel_task(
            &cx(),
            pb::CancelTaskRequest {
                id: waiting.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("cancel");
    for stream in streams {
        assert_canceled(stream).await;
    }
}

/// The flags reach the server: `trident serve` with the header timeout from a config file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trident_serve_takes_its_connection_limits_from_flags_and_the_config_file() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(["serve", "--help"])
        .output()
        .expect("trident serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--header-timeout <HEADER_TIMEOUT>",
        "[default: 10]",
        "--body-timeout",
        "--idle-timeout",
        "--max-connections",
        "--max-header-bytes <MAX_HEADER_BYTES>",
        "[default: 16384]",
        "--max-inflight-body-bytes <MAX_INFLIGHT_BODY_BYTES>",
        "[default: 268435456]",
    ] {
        assert!(help.contains(flag), "{flag} in --help:\n{help}");
    }
    let dir = crate::process::TempDir::new("trident-slowloris");
    let file = dir.0.join("trident.toml");
    std::fs::write(&file, "header_timeout = 0.3\nstore = \"memory\"\n").expect("write");
    let config = file.display().to_string();
    let server = Trident::serve(&["--config", &config]).await;
    let addr: SocketAddr = server
        .origin
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let started = Instant::now();
    assert!(
        closed_within(partial_head(addr).await, ms(300) + MARGIN).await,
        "the header timeout from the file applies"
    );
    assert!(started.elapsed() < ms(300) + MARGIN);
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_trident"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--idle-timeout=-1",
        ])
        .output()
        .expect("run");
    assert!(!bad.status.success(), "a negative timeout is refused");
}

/// Out of file descriptors (`EMFILE` on accept), the accept loop neither dies nor stalls: it
/// closes idle connections to make room and keeps serving. Lowers the running server's limit
/// with util-linux `prlimit`; skipped where that is not available.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_file_descriptors_the_server_sheds_idle_connections_and_keeps_serving() {
    // No connection limit: running out of descriptors is what stops the accepts.
    let mut server = Trident::serve(&["--store", "memory", "--max-connections", "0"]).await;
    let lowered = std::process::Command::new("prlimit")
        .args(["--pid", &server.pid().to_string(), "--nofile=64:64"])
        .status();
    if !matches!(lowered, Ok(s) if s.success()) {
        eprintln!("skipped: cannot lower the server's RLIMIT_NOFILE with prlimit");
        return;
    }
    let addr: SocketAddr = server
        .origin
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(connect(addr).await);
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    for i in 0..5 {
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            http.get(format!("{}{}", server.origin, trident_server::CARD_PATH))
                .send(),
        )
        .await
        .unwrap_or_else(|_| panic!("request {i} served in time"))
        .unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert!(response.status().is_success(), "request {i}");
    }
    assert!(server.running(), "the server is still up");
    drop(idle);
}
