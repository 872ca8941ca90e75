//! The accept loop behind [`serve_with`]: our own, over hyper-util's HTTP/1.1 + h2c connection
//! builder, because `axum::serve` can bound neither how long a client takes nor how many
//! connections it holds (issue 12, "Slowloris"). What each limit bounds: [`ConnectionLimits`].
//!
//! Accept errors other than a peer's aborted handshake (typically `EMFILE`, out of file
//! descriptors) are logged at most once a second; the loop then closes the idle-longest
//! connection to free a descriptor and pauses briefly (10 ms, or 100 ms when nothing is idle)
//! instead of spinning.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Version, header};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tower::ServiceExt;

use trident_core::{A2aError, ErrorKind};

use crate::admission::Wire;
use crate::budget::{Budget, Cut, Place, Refused};
use crate::proxy::{ProxyHeader, ProxyOptions};
use crate::registry::{Admission, ConnId, Registry};

/// The connection limits [`serve_with`] enforces. `None` disables a timeout or the
/// connection limit.
///
/// What a connection may do, with the defaults:
///
/// - **Request head** (`header_timeout`, 10 s): an HTTP/1.1 request's head must be complete
///   within it of the server starting to wait for one — at the connection's first bytes (once
///   they show it is not HTTP/2), and after each response on a keep-alive connection (so an
///   HTTP/1.1 connection with no new request also closes after it). hyper enforces this by
///   closing the connection (without a response).
/// - **Request body** (`body_timeout`, 60 s): the whole body must arrive within it of the
///   request head, a total rather than per-read deadline (a per-read one is defeated by a byte
///   every few seconds). A handler still waiting for the body then gets an error, and the
///   client `408 Request Timeout` (`Connection: close` on HTTP/1.1) or, on gRPC,
///   `DEADLINE_EXCEEDED`. Only a body somebody reads can time out, and responses are never
///   timed: SSE and gRPC server streams stay open as long as they last.
/// - **Idle connection** (`idle_timeout`, 60 s): a connection with no request in flight for
///   that long is closed (HTTP/2 with a `GOAWAY`). A request is in flight from its complete
///   head until its response — a stream included — has ended. A connection that sends nothing
///   at all is idle from its accept.
/// - **HTTP/2 liveness** (`h2_keep_alive`, 30 s): a `PING` that often; a peer that does not
///   answer within as long is dropped, so a dead client cannot hold a stream open forever.
/// - **Request head size** (`max_header_bytes`, 16 KiB): an HTTP/1.1 request line and headers
///   larger than this are answered `431 Request Header Fields Too Large` and the connection
///   closed (hyper's own answer); what hyper buffers of a head is bounded by it (never less
///   than hyper's 8 KiB read buffer), instead of hyper's default of about 400 KiB. On HTTP/2
///   it is the `SETTINGS_MAX_HEADER_LIST_SIZE` the server announces and enforces (a stream
///   over it gets `431` and `REFUSED_STREAM`; hyper's default is the same 16 KiB).
/// - **Request bodies in flight** (`max_inflight_body_bytes`, 256 MiB): the bytes of request
///   bodies received and not yet complete, over all the listener's requests. Past it the
///   requests that received bytes the longest ago (stalled bodies first) are cut off for the
///   new bytes: each is answered `ResourceExhausted` in its binding's format (HTTP 429 with
///   `Retry-After`, JSON-RPC -31429, gRPC `RESOURCE_EXHAUSTED`; `Connection: close` on
///   HTTP/1.1) and its bytes freed; a body larger than the whole budget is refused so. A
///   request holds budget from its first body bytes until its body is complete, fails or is
///   dropped (the client gone, the body timeout, the handler done with it).
/// - **Connection count** (`max_connections`, see [`default_max_connections`]): at the limit
///   the connection idle the longest is closed to admit the new one; when none is idle the new
///   connection is refused (closed at once). Established callers with requests in flight are
///   never shed. The limit is per listener.
///
/// - **Proxies** ([`ProxyOptions`], see [`crate::proxy`]): with the PROXY protocol on, a
///   connection from a trusted proxy must start with the header within `header_timeout` (10 s
///   when that is off), and connections from other addresses are refused at accept; a
///   forwarding header is read from trusted peers only. Either way the client so found is the
///   request's `ConnectInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take to send an HTTP/1.1 request head, counted from when the
    /// server starts waiting for one (the connection's first bytes, or the end of the previous
    /// response). Default 10 s.
    pub header_timeout: Option<Duration>,
    /// How long a request body may take to arrive in full, counted from its head; a handler
    /// still waiting then fails the request with 408 (gRPC: `DEADLINE_EXCEEDED`). Default 60 s.
    pub body_timeout: Option<Duration>,
    /// How long a connection with no request (or stream) in flight stays open. Default 60 s.
    pub idle_timeout: Option<Duration>,
    /// HTTP/2 keep-alive: `PING` interval, and how long the peer has to answer. Default 30 s.
    pub h2_keep_alive: Option<Duration>,
    /// Most connections open at once on the listener. At the limit the connection idle the
    /// longest is closed to admit a new one, or the new one is refused if none is idle.
    /// Default: [`default_max_connections`].
    pub max_connections: Option<usize>,
    /// Largest request head: an HTTP/1.1 request line and headers, in bytes (`431` and the
    /// connection closed past it), and an HTTP/2 header list as HTTP/2 counts it (names,
    /// values and 32 bytes per field). Default [`DEFAULT_MAX_HEADER_BYTES`]; `None`: hyper's
    /// defaults (about 400 KiB on HTTP/1.1, 16 KiB on HTTP/2).
    pub max_header_bytes: Option<usize>,
    /// Most bytes of request bodies received and not yet complete, over all the listener's
    /// requests; past it the requests that received bytes the longest ago are cut off
    /// (answered `ResourceExhausted`). Default [`DEFAULT_MAX_INFLIGHT_BODY_BYTES`]; `None`:
    /// unbounded (connections × the largest body).
    pub max_inflight_body_bytes: Option<usize>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Some(Duration::from_secs(10)),
            body_timeout: Some(Duration::from_secs(60)),
            idle_timeout: Some(Duration::from_secs(60)),
            h2_keep_alive: Some(Duration::from_secs(30)),
            max_connections: Some(default_max_connections()),
            max_header_bytes: Some(DEFAULT_MAX_HEADER_BYTES),
            max_inflight_body_bytes: Some(DEFAULT_MAX_INFLIGHT_BODY_BYTES),
        }
    }
}

/// The default [`ConnectionLimits::max_inflight_body_bytes`]: 256 MiB, 64 bodies of the
/// default 4 MiB largest.
pub const DEFAULT_MAX_INFLIGHT_BODY_BYTES: usize = 256 << 20;

/// The default [`ConnectionLimits::max_header_bytes`]: 16 KiB, what hyper allows an HTTP/2
/// header list (and Node.js an HTTP/1.1 head).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 16 << 10;

/// hyper's smallest HTTP/1 read buffer limit (`max_buf_size` panics below it).
const HYPER_MIN_BUF: usize = 8 << 10;

/// The most connections the default limit ever allows.
pub const MAX_CONNECTIONS_CAP: usize = 10_000;
/// File descriptors the default connection limit leaves to everything else: half of them to
/// webhook calls in flight ([`default_push_deliveries`]), half to stores, agent processes,
/// the gRPC listener and the like.
const FD_HEADROOM: u64 = 256;

/// The most webhook calls in flight the default allows: half of the 256 file descriptors the
/// default connection limit leaves to everything else.
pub const PUSH_DELIVERIES_CAP: usize = 128;

/// The default bound on webhook calls in flight (`PushConcurrency::global`), from the same
/// descriptor budget as [`default_max_connections`]: half of what the connection limit leaves
/// of the soft `RLIMIT_NOFILE`, at most [`PUSH_DELIVERIES_CAP`]. Each call in flight holds one
/// connection (the sender keeps none idle), so both defaults together stay under the limit.
pub fn default_push_deliveries() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| soft_open_files_limit(&text));
    push_deliveries_for(soft)
}

fn push_deliveries_for(soft_limit: Option<u64>) -> usize {
    let Some(soft) = soft_limit else {
        return PUSH_DELIVERIES_CAP;
    };
    let connections = max_connections_for(Some(soft)) as u64;
    let left = soft.saturating_sub(connections) / 2;
    usize::try_from(left).map_or(PUSH_DELIVERIES_CAP, |n| n.clamp(1, PUSH_DELIVERIES_CAP))
}

/// The default connection limit: the process's soft `RLIMIT_NOFILE` (read from
/// `/proc/self/limits`) minus 256 descriptors of headroom (but at least half the limit),
/// capped at [`MAX_CONNECTIONS_CAP`]; the cap itself where the limit cannot be read.
pub fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| soft_open_files_limit(&text));
    max_connections_for(soft)
}

/// The soft "Max open files" of a `/proc/self/limits` text (`None`: unlimited or absent).
fn soft_open_files_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn max_connections_for(soft_limit: Option<u64>) -> usize {
    let Some(soft) = soft_limit else {
        return MAX_CONNECTIONS_CAP;
    };
    let usable = soft.saturating_sub(FD_HEADROOM).max(soft / 2).max(1);
    usize::try_from(usable).map_or(MAX_CONNECTIONS_CAP, |n| n.min(MAX_CONNECTIONS_CAP))
}

/// After an accept error, how long the loop pauses when it could close an idle connection
/// to free a descriptor…
const ACCEPT_RETRY: Duration = Duration::from_millis(10);
/// …and when it could not.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long a trusted proxy has to send the PROXY header when `header_timeout` is off.
const PROXY_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection told to close (idle expiry, shed) has to do so gracefully before it
/// is dropped — if it still has nothing in flight.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What the accept loop and every connection task share.
struct Shared {
    registry: Mutex<Registry<Arc<Notify>>>,
}

impl Shared {
    fn registry(&self) -> MutexGuard<'_, Registry<Arc<Notify>>> {
        // The registry is plain bookkeeping: a panic elsewhere leaves it consistent.
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Logs a repeated warning at most once a second.
#[derive(Default)]
struct Throttle {
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    /// `Some(suppressed since the last one)` when a warning may be logged now.
    fn ready(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` completes; then stops
/// accepting, lets open requests finish for up to `drain`, closes what is left and returns.
/// Every request carries its peer, as [`trident_core::Peer`] (what the adapters read) and as
/// [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo), and
/// every accepted socket has `TCP_NODELAY`. The connections are tasks of this future:
/// dropping it closes them all.
pub async fn serve_with(
    listener: TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    serve_with_proxies(
        listener,
        app,
        shutdown,
        drain,
        limits,
        ProxyOptions::default(),
    )
    .await
}

/// [`serve_with`] behind the proxies of `proxies`: each request's peer ([`trident_core::Peer`]
/// and [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo)) is the client they name (the
/// PROXY protocol header, then a forwarding header; see [`crate::proxy`]), and with the PROXY
/// protocol on, connections from addresses that are not trusted proxies are refused.
pub async fn serve_with_proxies(
    listener: TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
    limits: ConnectionLimits,
    proxies: ProxyOptions,
) -> std::io::Result<()> {
    let proxies = Arc::new(proxies);
    let proxy_header_timeout = limits.header_timeout.unwrap_or(PROXY_HEADER_TIMEOUT);
    let shared = Arc::new(Shared {
        registry: Mutex::new(Registry::new(limits.max_connections, limits.idle_timeout)),
    });
    let builders = Arc::new(Builders::new(&limits));
    let budget = limits
        .max_inflight_body_bytes
        .map(|max| Arc::new(Budget::new(max)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    // In a set of its own, so that it ends with this function even when it is dropped.
    let mut sweeper = JoinSet::new();
    sweeper.spawn(sweep(shared.clone()));
    let mut shutdown = pin!(shutdown);
    let mut accept_errors = Throttle::default();
    let mut refusals = Throttle::default();
    let mut bypasses = Throttle::default();
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_per_connection(&e) => continue,
            Err(e) => {
                if let Some(suppressed) = accept_errors.ready() {
                    tracing::warn!(
                        error = %e,
                        suppressed,
                        "accept error; closing the connection idle the longest and pausing"
                    );
                }
                // Free a descriptor if we can; retry soon if we did, later if not.
                let shed = shared.registry().shed_idlest();
                let pause = match shed {
                    Some(close) => {
                        close.notify_one();
                        ACCEPT_RETRY
                    }
                    None => ACCEPT_BACKOFF,
                };
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(pause) => continue,
                }
            }
        };
        if proxies.proxy_protocol && !proxies.is_trusted(peer.ip()) {
            if let Some(suppressed) = bypasses.ready() {
                tracing::warn!(
                    %peer,
                    suppressed,
                    "refusing a connection from an address that is not a trusted proxy \
                     (the listener expects the PROXY protocol)"
                );
            }
            drop(tcp);
            continue;
        }
        // Without TCP_NODELAY, Nagle plus delayed ACKs stall pipelined h2 streams (~40 ms each).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let close = Arc::new(Notify::new());
        let admission = shared.registry().admit(close.clone(), Instant::now());
        match admission {
            Admission::Refused => {
                if let Some(suppressed) = refusals.ready() {
                    tracing::warn!(
                        %peer,
                        suppressed,
                        max_connections = ?limits.max_connections,
                        "at the connection limit with every connection busy: refusing connections"
                    );
                }
                drop(tcp);
            }
            Admission::Admitted { id, shed } => {
                if let Some(shed) = shed {
                    tracing::debug!(%peer, "at the connection limit: closing the connection idle the longest");
                    shed.notify_one();
                }
                connections.spawn(connection(Connection {
                    tcp,
                    peer,
                    id,
                    close,
                    shared: shared.clone(),
                    builders: builders.clone(),
                    app: app.clone(),
                    body_timeout: limits.body_timeout,
                    budget: budget.clone(),
                    stop: stop_rx.clone(),
                    proxies: proxies.clone(),
                    proxy_header_timeout,
                }));
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(drain, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            ?drain,
            "streams still open after the drain period; stopping anyway"
        );
    }
    // Dropping the sets aborts what is left.
    drop(connections);
    drop(sweeper);
    Ok(())
}

/// Errors of one incoming connection, not of the listener: just accept the next.
fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    )
}

/// The connection builders, one per way a connection's protocol is known.
///
/// hyper-util's auto-detecting builder reads the connection's first bytes (at most the 24 of
/// the HTTP/2 preface) into a buffer of its own and replays them to hyper, so hyper's first
/// read of an HTTP/1.1 request returns those few bytes and its 8 KiB read buffer then grows,
/// by `Vec` doubling, to 16 KiB — kept for the connection's life (an idle SSE stream's largest
/// allocation). Peeking at the first bytes instead ([`sniff`]) lets hyper read them itself;
/// the auto builder only serves what a peek cannot tell apart (a partial preface, an EOF).
/// HTTP/1.1 is served by hyper's own HTTP/1 builder (configured as the auto builder's), whose
/// connection is half the size of the auto builder's (which has room for an HTTP/2 one).
#[derive(Clone)]
struct Builders {
    auto: auto::Builder<TokioExecutor>,
    http1: hyper::server::conn::http1::Builder,
    http2: auto::Builder<TokioExecutor>,
}

impl Builders {
    fn new(limits: &ConnectionLimits) -> Self {
        let auto = builder(limits);
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout);
        if let Some(max) = limits.max_header_bytes {
            // The head's exact limit, and the read buffer's (hyper's floor is 8 KiB): a head
            // never holds more than this of the connection's memory.
            http1
                .max_header_size(max)
                .max_buf_size(max.max(HYPER_MIN_BUF));
        }
        Self {
            http1,
            http2: auto.clone().http2_only(),
            auto,
        }
    }

    /// Serves `tcp`, whose first bytes showed `protocol`, with `service`. Boxed, so that an
    /// HTTP/1.1 connection takes only its own size.
    fn serve<'a, S>(
        &'a self,
        protocol: Protocol,
        tcp: TcpStream,
        service: S,
    ) -> Pin<Box<dyn Serving + Send + 'a>>
    where
        S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        let io = TokioIo::new(tcp);
        match protocol {
            Protocol::Http1 => Box::pin(self.http1.serve_connection(io, service)),
            Protocol::Http2 => Box::pin(self.http2.serve_connection(io, service)),
            Protocol::Unknown => Box::pin(self.auto.serve_connection(io, service)),
        }
    }
}

/// Why a connection ended with an error (only ever logged).
type ConnectionError = Box<dyn std::error::Error + Send + Sync>;

/// A connection being served, whatever its builder.
trait Serving {
    /// Drives the connection; ready when it has ended.
    fn poll_serve(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ConnectionError>>;
    /// Stops taking new requests and ends the connection once those in flight are answered.
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<S> Serving for hyper::server::conn::http1::Connection<TokioIo<TcpStream>, S>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>,
{
    fn poll_serve(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ConnectionError>> {
        self.poll(cx).map_err(Into::into)
    }

    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http1::Connection::graceful_shutdown(self);
    }
}

impl<S> Serving for auto::Connection<'_, TokioIo<TcpStream>, S, TokioExecutor>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    fn poll_serve(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ConnectionError>> {
        self.poll(cx)
    }

    fn graceful_shutdown(self: Pin<&mut Self>) {
        auto::Connection::graceful_shutdown(self);
    }
}

/// What a connection's first bytes show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// Not the HTTP/2 preface: HTTP/1.x.
    Http1,
    /// The whole HTTP/2 preface (h2c with prior knowledge).
    Http2,
    /// A prefix of the preface, an EOF or an error: the auto builder reads on and decides.
    Unknown,
}

/// The HTTP/2 connection preface (RFC 9113, section 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The protocol of the bytes a connection starts with (as far as they arrived).
fn protocol_of(first: &[u8]) -> Protocol {
    if first.is_empty() {
        Protocol::Unknown
    } else if !H2_PREFACE.starts_with(first) {
        Protocol::Http1
    } else if first.len() == H2_PREFACE.len() {
        Protocol::Http2
    } else {
        Protocol::Unknown
    }
}

/// Waits for the connection's first bytes and tells its protocol from them, without reading
/// them (one `MSG_PEEK`).
async fn sniff(tcp: &TcpStream) -> Protocol {
    let mut first = [0u8; H2_PREFACE.len()];
    match tcp.peek(&mut first).await {
        Ok(n) => protocol_of(&first[..n]),
        Err(_) => Protocol::Unknown,
    }
}

fn builder(limits: &ConnectionLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    let mut http1 = builder.http1();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    if let Some(max) = limits.max_header_bytes {
        // hyper-util's HTTP/1 builder has no head limit of its own: the read buffer's is it.
        http1.max_buf_size(max.max(HYPER_MIN_BUF));
    }
    let mut http2 = builder.http2();
    http2.timer(TokioTimer::new());
    if let Some(max) = limits.max_header_bytes {
        http2.max_header_list_size(u32::try_from(max).unwrap_or(u32::MAX));
    }
    if let Some(interval) = limits.h2_keep_alive {
        http2
            .keep_alive_interval(interval)
            .keep_alive_timeout(interval);
    }
    builder
}

/// Closes the connections idle for the idle timeout, as they expire.
async fn sweep(shared: Arc<Shared>) {
    loop {
        let (expired, next) = shared.registry().expire(Instant::now());
        if !expired.is_empty() {
            tracing::debug!(connections = expired.len(), "closing idle connections");
        }
        for close in expired {
            close.notify_one();
        }
        let Some(next) = next else { return };
        tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
    }
}

/// One accepted connection and what it needs.
struct Connection {
    tcp: TcpStream,
    peer: SocketAddr,
    id: ConnId,
    /// Notified when the connection is to close (idle expiry or shed).
    close: Arc<Notify>,
    shared: Arc<Shared>,
    builders: Arc<Builders>,
    app: axum::Router,
    body_timeout: Option<Duration>,
    budget: Option<Arc<Budget>>,
    stop: watch::Receiver<bool>,
    proxies: Arc<ProxyOptions>,
    proxy_header_timeout: Duration,
}

/// Serves one connection until it ends or is told to close.
///
/// Not an `async fn`: its argument would sit in the future beside the fields taken out of it,
/// for as long as the connection lives (every idle stream's). The future captures the fields
/// alone, and the work before serving (a PROXY header, the protocol sniff) is a boxed future of
/// its own, so that its state does not size the connection's.
fn connection(c: Connection) -> impl Future<Output = ()> + Send {
    let Connection {
        mut tcp,
        peer,
        id,
        close,
        shared,
        builders,
        app,
        body_timeout,
        budget,
        mut stop,
        proxies,
        proxy_header_timeout,
    } = c;
    async move {
        let opened = Box::pin(opening(
            &mut tcp,
            peer,
            &close,
            &mut stop,
            &proxies,
            proxy_header_timeout,
        ))
        .await;
        let Some((peer, protocol)) = opened else {
            shared.registry().remove(id);
            crate::trim::connection_closed();
            return;
        };
        let service = hyper::service::service_fn({
            let shared = shared.clone();
            move |request: Request<Incoming>| {
                let limits = RequestLimits {
                    body_timeout,
                    budget: budget.as_ref(),
                };
                handle(request, peer, id, &shared, &app, limits, &proxies)
            }
        });
        let conn = builders.serve(protocol, tcp, service);
        serve_connection(conn, peer, id, &close, &shared, &mut stop).await;
        shared.registry().remove(id);
        crate::trim::connection_closed();
    }
}

/// What a connection's first bytes say: the client (from the PROXY header when the protocol
/// is on) and the protocol. `None` when the connection is to close instead (a bad or late
/// PROXY header, told to close, the server stopping).
async fn opening(
    tcp: &mut TcpStream,
    peer: SocketAddr,
    close: &Notify,
    stop: &mut watch::Receiver<bool>,
    proxies: &ProxyOptions,
    proxy_header_timeout: Duration,
) -> Option<(SocketAddr, Protocol)> {
    let peer = if proxies.proxy_protocol {
        let read = tokio::time::timeout(proxy_header_timeout, crate::proxy::read_header(tcp));
        let outcome = tokio::select! {
            outcome = read => outcome,
            () = close.notified() => return None,
            _ = stop.wait_for(|stopped| *stopped) => return None,
        };
        match outcome {
            Ok(Ok(ProxyHeader::Client(client))) => client,
            Ok(Ok(ProxyHeader::Local)) => peer,
            Ok(Err(e)) => {
                tracing::warn!(%peer, error = %e, "closing a connection from a trusted proxy: bad PROXY header");
                return None;
            }
            Err(_) => {
                tracing::warn!(%peer, timeout = ?proxy_header_timeout, "closing a connection from a trusted proxy: no PROXY header in time");
                return None;
            }
        }
    } else {
        peer
    };
    tokio::select! {
        protocol = sniff(tcp) => Some((peer, protocol)),
        () = close.notified() => None,
        _ = stop.wait_for(|stopped| *stopped) => None,
    }
}

/// Drives `conn` until it ends, or closes it when told to: gracefully, then, after
/// [`CLOSE_GRACE`], by force when nothing is in flight.
async fn serve_connection(
    mut conn: Pin<Box<dyn Serving + Send + '_>>,
    peer: SocketAddr,
    id: ConnId,
    close: &Notify,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
) {
    let mut graceful = false;
    let mut stopping = false;
    // Boxed, and only once told to close: most connections never are, and the timer would
    // otherwise take its room in every connection's future.
    let mut force: Option<Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        tokio::select! {
            result = std::future::poll_fn(|cx| conn.as_mut().poll_serve(cx)) => {
                if let Err(e) = result {
                    tracing::trace!(%peer, error = %e, "connection ended");
                }
                break;
            }
            _ = stop.wait_for(|stopped| *stopped), if !stopping => {
                stopping = true;
                if !graceful {
                    graceful = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = close.notified(), if force.is_none() => {
                force = Some(Box::pin(tokio::time::sleep(CLOSE_GRACE)));
                if !graceful {
                    graceful = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = async { if let Some(force) = force.as_mut() { force.await } }, if force.is_some() => {
                // Told to close and still open: drop it, unless a request raced in (then it
                // finishes, and the connection closes after it).
                if shared.registry().in_flight(id) == 0 {
                    tracing::trace!(%peer, "dropping a connection that did not close");
                    break;
                }
                if let Some(force) = force.as_mut() {
                    force.as_mut().reset(tokio::time::Instant::now() + CLOSE_GRACE);
                }
            }
        }
    }
}

/// What bounds a request's body: its deadline and the listener's budget.
#[derive(Clone, Copy)]
struct RequestLimits<'a> {
    body_timeout: Option<Duration>,
    budget: Option<&'a Arc<Budget>>,
}

/// One request: counted in flight until its response ends, given the client's address (the
/// connection's peer, or whom a trusted proxy names), the body deadline and the body budget,
/// answered by `app`.
fn handle(
    request: Request<Incoming>,
    peer: SocketAddr,
    id: ConnId,
    shared: &Arc<Shared>,
    app: &axum::Router,
    limits: RequestLimits<'_>,
    proxies: &ProxyOptions,
) -> Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>> {
    let RequestLimits {
        body_timeout,
        budget,
    } = limits;
    shared.registry().start(id);
    let guard = InFlight {
        shared: shared.clone(),
        id,
    };
    let version = request.version();
    let wire = Wire::of_request(&request);
    let grpc = match wire {
        Wire::Grpc => Some("application/grpc"),
        Wire::GrpcWeb => Some("application/grpc-web+proto"),
        Wire::JsonRpc | Wire::Rest => None,
    };
    let (mut parts, body) = request.into_parts();
    let peer = proxies.client(&parts.headers, peer);
    // The peer as the adapters read it (`trident_http::call_context`), and as axum's
    // extractor does for handlers added to the router.
    parts.extensions.insert(trident_core::Peer(peer));
    parts.extensions.insert(ConnectInfo(peer));
    // What ended the body early, if anything (timed out, or cut off by the budget): one
    // flag for both, allocated only for a body that has something to watch.
    let mut watched = None;
    // A request without a body (most GETs, h2 HEADERS with END_STREAM) needs neither a timer
    // nor budget.
    let body =
        if http_body::Body::is_end_stream(&body) || (body_timeout.is_none() && budget.is_none()) {
            Body::new(body)
        } else {
            let verdict = Arc::new(AtomicU8::new(WITHIN_BUDGET));
            watched = Some((verdict.clone(), budget.map_or(0, |b| b.max())));
            match (body_timeout, budget) {
                (Some(timeout), Some(budget)) => Body::new(Budgeted::new(
                    TimedBody::new(body, timeout, verdict.clone()),
                    budget.clone(),
                    verdict,
                )),
                (Some(timeout), None) => Body::new(TimedBody::new(body, timeout, verdict)),
                (None, Some(budget)) => Body::new(Budgeted::new(body, budget.clone(), verdict)),
                (None, None) => Body::new(body),
            }
        };
    let request = Request::from_parts(parts, body);
    let app = app.clone();
    // Boxed: hyper keeps a slot the size of this future for the connection's life (an idle
    // SSE stream's connection included); boxed, the slot is a pointer and the future's memory
    // goes with the request.
    Box::pin(async move {
        let response = match app.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let verdict = watched.map(|(verdict, max)| (verdict.load(Ordering::Acquire), max));
        let response = match (verdict, body_timeout) {
            (None | Some((WITHIN_BUDGET, _)), _) => response,
            (Some((TIMED_OUT, _)), Some(timeout)) => {
                tracing::debug!(%peer, ?timeout, "request body timed out");
                body_timeout_response(version, grpc, timeout)
            }
            (Some((why, max)), _) => {
                tracing::debug!(%peer, max, "request body cut off: the body budget is full");
                over_budget_response(version, wire, why == TOO_LARGE, max)
            }
        };
        let response = if version <= Version::HTTP_11 {
            fit_event_stream_headers(response)
        } else {
            response
        };
        Ok(response.map(|body| {
            Body::new(Guarded {
                inner: body,
                guard: Some(guard),
            })
        }))
    })
}

/// An event stream's response with its header map at its exact size.
///
/// hyper's HTTP/1 connection keeps the header map of the response it last wrote (emptied, its
/// room kept, to parse the next request into) for the rest of the connection's life, and an
/// event stream's connection lives as long as the stream. A map filled by inserts has room for
/// six headers (about 600 bytes), three times what an SSE response's two or three need: handed
/// over fitted, an idle stream keeps only what it used. Other responses keep theirs: their
/// connection serves the next request with it.
fn fit_event_stream_headers(response: Response<Body>) -> Response<Body> {
    let headers = response.headers();
    let event_stream = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !event_stream || headers.capacity() <= headers.keys_len() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut fitted = HeaderMap::with_capacity(parts.headers.keys_len());
    fitted.extend(std::mem::take(&mut parts.headers));
    parts.headers = fitted;
    Response::from_parts(parts, body)
}

/// The answer to a request whose body did not arrive in time, whatever the handler made of
/// the error: `408` (and `Connection: close` on HTTP/1.x, as the rest of the body is still
/// owed), or a trailers-only `DEADLINE_EXCEEDED` to a gRPC client.
///
/// `grpc` is the `content-type` of a gRPC (or gRPC-Web) answer, `None` for the others.
fn body_timeout_response(
    version: Version,
    grpc: Option<&'static str>,
    timeout: Duration,
) -> Response<Body> {
    let message = format!(
        "the request body did not arrive within {}s",
        timeout.as_secs_f64()
    );
    if let Some(content_type) = grpc {
        let mut response = Response::new(Body::empty());
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        // DEADLINE_EXCEEDED
        headers.insert("grpc-status", HeaderValue::from_static("4"));
        if let Ok(v) = HeaderValue::try_from(message) {
            headers.insert("grpc-message", v);
        }
        return response;
    }
    let mut response = Response::new(Body::from(message));
    *response.status_mut() = StatusCode::REQUEST_TIMEOUT;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if version <= Version::HTTP_11 {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The answer to a request whose body the budget refused, whatever the handler made of the
/// error: `ResourceExhausted` in its binding's format (gRPC status, JSON-RPC error with a
/// null id — the body was never read whole — or the HTTP+JSON error, 429 with
/// `Retry-After`), and `Connection: close` on HTTP/1.x, as the rest of the body is still owed.
fn over_budget_response(
    version: Version,
    wire: Wire,
    too_large: bool,
    max: usize,
) -> Response<Body> {
    let error = if too_large {
        A2aError::new(
            ErrorKind::ResourceExhausted,
            format!(
                "the request body is larger than the server's request-body budget of {max} bytes"
            ),
        )
    } else {
        A2aError::new(
            ErrorKind::ResourceExhausted,
            format!(
                "the server holds its most request-body bytes ({max}) and this request's body \
                 had received nothing for the longest; retry in 1 s"
            ),
        )
        .with_retry_after(1)
    };
    let mut response = wire.answer(&error, b"");
    if version <= Version::HTTP_11 && wire != Wire::Grpc {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// What ended a request body early, as [`Budgeted`] and [`TimedBody`] record it for
/// [`handle`] to read once the handler has answered (the first cause wins): nothing.
const WITHIN_BUDGET: u8 = 0;
/// Cut off for other requests' bytes.
const CUT_OFF: u8 = 1;
/// Larger than the whole budget.
const TOO_LARGE: u8 = 2;
/// Not complete by its deadline.
const TIMED_OUT: u8 = 3;

/// Records `why` a body ended early in `verdict`, unless an earlier cause was recorded.
fn record(verdict: &AtomicU8, why: u8) {
    let _ = verdict.compare_exchange(WITHIN_BUDGET, why, Ordering::AcqRel, Ordering::Acquire);
}

/// A body's error, whatever its cause.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a request body read failed: the body budget cut it off.
#[derive(Debug, thiserror::Error)]
#[error("the request body was cut off: the server's request-body budget is full")]
pub(crate) struct OverBudget;

/// A request body whose bytes are charged to the listener's [`Budget`] as they arrive, until
/// it is complete, fails or is dropped; cut off (its next read fails) when the budget needs
/// the room for fresher bytes.
struct Budgeted<B> {
    inner: B,
    budget: Arc<Budget>,
    /// The request's place in the budget while it holds bytes.
    place: Option<Place>,
    /// Allocated at the first charge: a body that never holds bytes is never cut off.
    cut: Option<Arc<Cut>>,
    verdict: Arc<AtomicU8>,
}

impl<B> Budgeted<B> {
    fn new(inner: B, budget: Arc<Budget>, verdict: Arc<AtomicU8>) -> Self {
        Self {
            inner,
            budget,
            place: None,
            cut: None,
            verdict,
        }
    }

    fn release(&mut self) {
        if let Some(place) = self.place.take() {
            self.budget.release(place);
        }
    }

    /// Ends the body with [`OverBudget`], leaving `verdict` for [`handle`].
    fn refuse(&mut self, verdict: u8) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.release();
        record(&self.verdict, verdict);
        Poll::Ready(Some(Err(Box::new(OverBudget))))
    }
}

impl<B> Drop for Budgeted<B> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<B> http_body::Body for Budgeted<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Some(cut) = &this.cut
            && cut.register(cx.waker())
        {
            this.place = None;
            return this.refuse(CUT_OFF);
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let frame = match polled {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(other) => {
                // Complete, or failed: it holds nothing any more.
                this.release();
                return Poll::Ready(other.map(|r| r.map_err(Into::into)));
            }
        };
        let bytes = frame.data_ref().map_or(0, Bytes::len);
        if bytes > 0 {
            let cut = this.cut.get_or_insert_with(|| {
                let cut = Arc::new(Cut::default());
                cut.register(cx.waker());
                cut
            });
            match this.budget.charge(this.place, cut, bytes) {
                Ok(place) => this.place = Some(place),
                Err(refused) => {
                    this.place = None;
                    let verdict = match refused {
                        Refused::TooLarge => TOO_LARGE,
                        Refused::Cut => CUT_OFF,
                    };
                    return this.refuse(verdict);
                }
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A request in flight on a connection; dropping it ends the request in the registry.
struct InFlight {
    shared: Arc<Shared>,
    id: ConnId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.shared.registry().finish(self.id, Instant::now());
    }
}

/// A response body that keeps its request in flight until it ends or is dropped.
struct Guarded {
    inner: Body,
    guard: Option<InFlight>,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            this.guard = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a request body read failed: it did not arrive within the body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub(crate) struct BodyTimeout(pub(crate) Duration);

/// A request body that must arrive in full by a deadline (set when the head arrived). The
/// timer exists only while a reader waits for a frame that has not come.
struct TimedBody<B> {
    inner: B,
    timeout: Duration,
    deadline: tokio::time::Instant,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Where [`TIMED_OUT`] is recorded.
    verdict: Arc<AtomicU8>,
}

impl<B> TimedBody<B> {
    fn new(inner: B, timeout: Duration, verdict: Arc<AtomicU8>) -> Self {
        let now = tokio::time::Instant::now();
        Self {
            inner,
            timeout,
            // A timeout too large for the clock: about 30 years.
            deadline: now
                .checked_add(timeout)
                .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400)),
            sleep: None,
            verdict,
        }
    }
}

impl<B> http_body::Body for TimedBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if frame.is_none() {
                this.sleep = None;
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                record(&this.verdict, TIMED_OUT);
                Poll::Ready(Some(Err(Box::new(BodyTimeout(this.timeout)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests;
