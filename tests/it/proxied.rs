//! Anonymous callers behind a proxy (issue 12): a real `trident serve` with a low rate limit,
//! reached through a fake proxy (a task on 127.0.0.1 that writes a PROXY protocol header naming
//! a client — 10.x addresses exist only inside the header — then relays the connection), and
//! directly with forwarding headers from trusted and untrusted 127.x addresses.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use trident_client::Binding;
use trident_core::{A2aService, CallContext, ErrorKind};

use crate::harness::{msg, req};
use crate::process::Trident;

const LOCALHOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// What `n` SendMessage calls in a row come to.
async fn outcomes(svc: &dyn A2aService, n: usize) -> Vec<Result<(), ErrorKind>> {
    let mut outcomes = Vec::new();
    for _ in 0..n {
        outcomes.push(
            svc.send_message(&CallContext::new(), req(msg("hi")))
                .await
                .map(|_| ())
                .map_err(|e| e.kind()),
        );
    }
    outcomes
}

/// A caller that exhausts its burst (2) is refused…
async fn exhausts(svc: &dyn A2aService, who: &str) {
    let outcomes = outcomes(svc, 4).await;
    assert!(
        outcomes.contains(&Err(ErrorKind::ResourceExhausted)),
        "{who} is limited: {outcomes:?}"
    );
}

/// …while one with a bucket of its own is served.
async fn is_served(svc: &dyn A2aService, who: &str) {
    for n in 0..2 {
        svc.send_message(&CallContext::new(), req(msg("hi")))
            .await
            .unwrap_or_else(|e| panic!("{who}: request {n}: {e}"));
    }
}

/// A server with a slow refill (one token per 10 s) and a burst of 2.
async fn limited(extra: &[&str]) -> Trident {
    let mut args = vec![
        "--agent",
        "echo",
        "--store",
        "memory",
        "--rate-limit",
        "0.1",
        "--rate-burst",
        "2",
    ];
    args.extend_from_slice(extra);
    Trident::serve(&args).await
}

fn addr_of(server: &Trident) -> SocketAddr {
    server
        .origin
        .trim_start_matches("http://")
        .parse()
        .expect("a 127.0.0.1 origin")
}

/// A PROXY protocol v2 header: PROXY command, TCP over `client`'s family.
fn v2(client: SocketAddr, server: SocketAddr) -> Vec<u8> {
    let mut header = b"\r\n\r\n\0\r\nQUIT\n\x21".to_vec();
    let mut addresses = Vec::new();
    match (client.ip(), server.ip()) {
        (IpAddr::V4(c), IpAddr::V4(s)) => {
            header.push(0x11);
            addresses.extend_from_slice(&c.octets());
            addresses.extend_from_slice(&s.octets());
        }
        (c, s) => {
            header.push(0x21);
            let v6 = |ip: IpAddr| match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            };
            addresses.extend_from_slice(&v6(c).octets());
            addresses.extend_from_slice(&v6(s).octets());
        }
    }
    addresses.extend_from_slice(&client.port().to_be_bytes());
    addresses.extend_from_slice(&server.port().to_be_bytes());
    let len = u16::try_from(addresses.len()).expect("short");
    header.extend_from_slice(&len.to_be_bytes());
    header.extend_from_slice(&addresses);
    header
}

/// A PROXY protocol v1 line for an IPv4 client.
fn v1(client: SocketAddr, server: SocketAddr) -> Vec<u8> {
    format!(
        "PROXY TCP4 {} {} {} {}\r\n",
        client.ip(),
        server.ip(),
        client.port(),
        server.port()
    )
    .into_bytes()
}

/// A fake proxy: every connection to `origin` is relayed to the server after `header`.
struct FakeProxy {
    origin: String,
    task: tokio::task::JoinHandle<()>,
}

impl FakeProxy {
    async fn start(server: SocketAddr, header: Vec<u8>) -> Self {
        let listener = TcpListener::bind((LOCALHOST, 0)).await.expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let mut relays = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                let header = header.clone();
                relays.spawn(async move {
                    let Ok(mut upstream) = TcpStream::connect(server).await else {
                        return;
                    };
                    if upstream.write_all(&header).await.is_ok() {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut upstream).await;
                    }
                });
            }
        });
        Self { origin, task }
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        // The relays are in the task's JoinSet: they end with it.
        self.task.abort();
    }
}

/// A client of `origin` over `binding`, connecting from `local` and sending `headers` (HTTP
/// bindings only).
async fn client(
    binding: Binding,
    origin: &str,
    local: IpAddr,
    headers: &[(&'static str, &str)],
) -> Arc<dyn A2aService> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        map.append(*name, value.parse().expect("a header value"));
    }
    let http = reqwest::Client::builder()
        .local_address(local)
        .default_headers(map)
        .build()
        .expect("http client");
    match binding {
        Binding::Rest => {
            Arc::new(trident_rest::RestClient::with_client(http, origin).expect("client"))
        }
        Binding::JsonRpc => Arc::new(trident_jsonrpc::JsonRpcClient::with_client(
            http,
            &format!("{origin}/"),
        )),
        Binding::Grpc => {
            assert!(headers.is_empty(), "no headers on this gRPC client");
            let channel = tonic::transport::Endpoint::from_shared(origin.to_owned())
                .expect("endpoint")
                .local_address(Some(local))
                .connect()
                .await
                .expect("connect");
            Arc::new(trident_grpc::GrpcClient::from_channel(
                channel,
                &trident_grpc::GrpcOptions::default(),
            ))
        }
    }
}

/// Two clients behind the same proxy get a bucket each, on every binding, whether the proxy
/// speaks v2 (IPv4 or IPv6 clients) or v1; a client's own X-Forwarded-For, relayed unchanged by
/// the proxy, is not believed (the header's source is not a trusted proxy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_behind_a_proxy_protocol_proxy_get_a_bucket_each() {
    let server = limited(&["--trusted-proxy", "127.0.0.1", "--proxy-protocol"]).await;
    let at = addr_of(&server);
    for (i, binding) in [Binding::Rest, Binding::JsonRpc, Binding::Grpc]
        .into_iter()
        .enumerate()
    {
        let i = u8::try_from(i).expect("few bindings");
        let noisy_client = SocketAddr::from(([10, 1, 2, 3 + i], 40000));
        let noisy = FakeProxy::start(at, v2(noisy_client, at)).await;
        let quiet_header = match binding {
            Binding::Rest => v2(
                SocketAddr::new(format!("2001:db8::{}", 7 + i).parse().expect("v6"), 4711),
                at,
            ),
            Binding::JsonRpc => v1(SocketAddr::from(([10, 9, 9, 9 + i], 40001)), at),
            Binding::Grpc => v2(SocketAddr::from(([10, 9, 9, 9 + i], 40001)), at),
        };
        let quiet = FakeProxy::start(at, quiet_header).await;
        exhausts(
            &*client(binding, &noisy.origin, LOCALHOST, &[]).await,
            &format!("{binding:?}: the noisy proxied client"),
        )
        .await;
        // The quiet client claims to be the noisy one: a claim from an untrusted client.
        let claim = noisy_client.ip().to_string();
        let headers: &[(&'static str, &str)] = match binding {
            Binding::Grpc => &[],
            _ => &[("x-forwarded-for", &claim)],
        };
        is_served(
            &*client(binding, &quiet.origin, LOCALHOST, headers).await,
            &format!("{binding:?}: another client behind the same proxy"),
        )
        .await;
    }
}

/// What the server sends back on a raw connection from `local` that starts with `bytes`
/// (empty: it closed the connection without a response).
async fn raw(server: SocketAddr, local: IpAddr, bytes: &[u8]) -> Vec<u8> {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(local, 0)).expect("bind");
    let mut stream = socket.connect(server).await.expect("connect");
    // The server may close (and reset) before everything is written.
    let _ = stream.write_all(bytes).await;
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("the server answers or closes");
    if read.is_err() {
        // Reset: nothing was answered.
        response.clear();
    }
    response
}

const GET_CARD: &[u8] =
    b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// A PROXY protocol listener closes, without a response, connections from untrusted addresses
/// and connections from its proxy without a valid header (missing, malformed, truncated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_protocol_listener_closes_what_it_cannot_trust() {
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--trusted-proxy",
        "127.0.0.1",
        "--proxy-protocol",
        "--header-timeout",
        "1",
    ])
    .await;
    let at = addr_of(&server);
    let with = |header: Vec<u8>| [header, GET_CARD.to_vec()].concat();
    let client = SocketAddr::from(([10, 1, 2, 3], 40000));
    // The controls: a valid header, and LOCAL (a health check), are served.
    let served = raw(at, LOCALHOST, &with(v2(client, at))).await;
    assert!(
        served.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&served)
    );
    let local = b"\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00".to_vec();
    let served = raw(at, LOCALHOST, &with(local)).await;
    assert!(
        served.starts_with(b"HTTP/1.1 200"),
        "LOCAL: {:?}",
        String::from_utf8_lossy(&served)
    );
    let mut bad_version = v2(client, at);
    bad_version[12] = 0x31;
    let mut truncated = v2(client, at);
    truncated.truncate(20);
    let cases: [(&str, IpAddr, Vec<u8>); 5] = [
        (
            "an untrusted address",
            [127, 0, 0, 2].into(),
            GET_CARD.to_vec(),
        ),
        (
            "an untrusted address with a header",
            [127, 0, 0, 2].into(),
            with(v2(client, at)),
        ),
        ("no header", LOCALHOST, GET_CARD.to_vec()),
        ("a malformed header", LOCALHOST, with(bad_version)),
        // Closed at the header timeout.
        ("a truncated header", LOCALHOST, truncated),
    ];
    for (case, from, bytes) in cases {
        let response = raw(at, from, &bytes).await;
        assert!(
            response.is_empty(),
            "{case}: {:?}",
            String::from_utf8_lossy(&response)
        );
    }
}

/// X-Forwarded-For names the client only when a trusted proxy sends it: an untrusted caller
/// spoofing it keeps its own bucket whatever it claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_forwarded_for_is_believed_only_from_a_trusted_proxy() {
    let server = limited(&["--trusted-proxy", "127.0.0.1"]).await;
    let origin = &server.origin;
    for binding in [Binding::Rest, Binding::JsonRpc] {
        let (a, b) = match binding {
            Binding::Rest => ("10.0.0.1", "10.0.0.2"),
            _ => ("10.0.0.3", "10.0.0.4"),
        };
        let spoofer: IpAddr = match binding {
            Binding::Rest => [127, 0, 0, 3].into(),
            _ => [127, 0, 0, 4].into(),
        };
        // Untrusted: the bucket is 127.0.0.x's, so a new claim does not buy a new one.
        exhausts(
            &*client(binding, origin, spoofer, &[("x-forwarded-for", a)]).await,
            &format!("{binding:?}: the spoofer"),
        )
        .await;
        let again = outcomes(
            &*client(binding, origin, spoofer, &[("x-forwarded-for", b)]).await,
            1,
        )
        .await;
        assert_eq!(
            again,
            [Err(ErrorKind::ResourceExhausted)],
            "{binding:?}: a spoofed X-Forwarded-For from an untrusted peer changes nothing"
        );
        // Trusted: each named client has a bucket (a spoofed entry left of it is not read).
        let through = |entries: &'static str| async move {
            client(binding, origin, LOCALHOST, &[("x-forwarded-for", entries)]).await
        };
        let (c, d) = match binding {
            Binding::Rest => ("6.6.6.6, 10.1.0.1", "6.6.6.6, 10.1.0.2"),
            _ => ("6.6.6.6, 10.1.0.3", "6.6.6.6, 10.1.0.4"),
        };
        exhausts(&*through(c).await, &format!("{binding:?}: {c}")).await;
        is_served(&*through(d).await, &format!("{binding:?}: {d}")).await;
    }
}

/// With `--forwarded-header forwarded`, RFC 7239 `for=` from a trusted proxy names the client
/// (IPv4 or a quoted IPv6 with a port); X-Forwarded-For is then the client's own and ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_from_a_trusted_proxy_names_the_client() {
    let server = limited(&[
        "--trusted-proxy",
        "127.0.0.1,10.0.0.0/8",
        "--forwarded-header",
        "forwarded",
    ])
    .await;
    let origin = &server.origin;
    let via = |value: &'static str| async move {
        client(Binding::Rest, origin, LOCALHOST, &[("forwarded", value)]).await
    };
    // 10.0.0.9 is a trusted proxy too: skipped.
    exhausts(&*via("for=192.0.2.1, for=10.0.0.9").await, "192.0.2.1").await;
    is_served(&*via(r#"for="[2001:db8::7]:4711""#).await, "2001:db8::7").await;
    is_served(&*via("for=192.0.2.2;proto=http").await, "192.0.2.2").await;
    // X-Forwarded-For is not the configured header: these callers are 127.0.0.1 itself.
    let xff = |value: &'static str| async move {
        client(
            Binding::JsonRpc,
            origin,
            LOCALHOST,
            &[("x-forwarded-for", value)],
        )
        .await
    };
    exhausts(
        &*xff("192.0.2.3").await,
        "127.0.0.1 (X-Forwarded-For 192.0.2.3)",
    )
    .await;
    let again = outcomes(&*xff("192.0.2.4").await, 1).await;
    assert_eq!(
        again,
        [Err(ErrorKind::ResourceExhausted)],
        "X-Forwarded-For is ignored"
    );
}
