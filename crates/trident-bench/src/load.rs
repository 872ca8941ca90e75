//! A closed-loop load generator for blocking SendMessage.
//!
//! `connections` workers each keep exactly one request in flight, sending the next as soon as
//! the previous answer is read:
//! - HTTP+JSON and JSON-RPC: one HTTP/1.1 keep-alive connection per worker (hyper's
//!   connection-level client: no pool, no extra tasks besides the connection's);
//! - gRPC: one tonic `Channel` (one HTTP/2 connection) shared by all workers, so up to
//!   `connections` streams are in flight on it.
//!
//! [`Load::start_across`] spreads the workers over several servers (the replicas of a
//! cluster), round-robin; gRPC then has one connection per server.
//!
//! Every request has a fresh message id `m-<n>`. A request counts as a success only when its
//! answer is right: every gRPC answer is decoded and checked in full; every JSON answer must
//! be `200 OK` and name `TASK_STATE_COMPLETED`, and one in [`SAMPLE_EVERY`] is decoded and
//! checked in full (a completed task, the `echo` artifact holding the text, the message in
//! its history, and for JSON-RPC the envelope with the request's id).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use trident_proto::a2a_service_client::A2aServiceClient;

use crate::payload;

/// One in this many JSON answers is decoded and checked in full.
pub const SAMPLE_EVERY: u64 = 32;

/// The A2A binding to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Binding {
    /// HTTP+JSON: `POST /message:send`, HTTP/1.1.
    Rest,
    /// JSON-RPC 2.0: `POST /`, HTTP/1.1.
    Jsonrpc,
    /// gRPC: `/lf.a2a.v1.A2AService/SendMessage`, h2c.
    Grpc,
}

impl Binding {
    /// Every binding, in report order.
    pub const ALL: [Binding; 3] = [Binding::Rest, Binding::Jsonrpc, Binding::Grpc];

    /// Lowercase name, as on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Binding::Rest => "rest",
            Binding::Jsonrpc => "jsonrpc",
            Binding::Grpc => "grpc",
        }
    }
}

/// Where a server answers each binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// HTTP/1.1 address of HTTP+JSON and JSON-RPC.
    pub http: SocketAddr,
    /// h2c address of gRPC.
    pub grpc: SocketAddr,
    /// Path of JSON-RPC requests.
    pub jsonrpc_path: String,
    /// Prefix of the HTTP+JSON routes (empty: at the root).
    pub rest_prefix: String,
}

impl Target {
    /// Every binding on one port, as Trident and the raw echo serve them: JSON-RPC at `/`,
    /// HTTP+JSON at the root.
    pub fn single(addr: SocketAddr) -> Target {
        Target {
            http: addr,
            grpc: addr,
            jsonrpc_path: "/".to_owned(),
            rest_prefix: String::new(),
        }
    }

    fn path(&self, binding: Binding) -> String {
        match binding {
            Binding::Jsonrpc => self.jsonrpc_path.clone(),
            _ => format!("{}/message:send", self.rest_prefix),
        }
    }
}

/// Latency histogram: [`SUB`] linear buckets per power of two of microseconds (about 3 %
/// resolution), atomics so that workers record without a lock.
#[derive(Debug)]
struct Latencies {
    buckets: Vec<AtomicU64>,
}

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            buckets: (0..(64 * SUB)).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Latencies {
    fn index(us: u64) -> usize {
        if us < SUB {
            return us as usize;
        }
        let exp = 63 - us.leading_zeros();
        let shift = exp - SUB_BITS;
        let sub = (us >> shift) - SUB;
        (((u64::from(shift) + 1) << SUB_BITS) + sub) as usize
    }

    /// The upper bound (µs) of bucket `i`.
    fn upper(i: usize) -> u64 {
        let i = i as u64;
        if i < SUB {
            return i;
        }
        let shift = (i >> SUB_BITS) - 1;
        let sub = i & (SUB - 1);
        ((SUB + sub + 1) << shift) - 1
    }

    fn record(&self, elapsed: Duration) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let i = Self::index(us).min(self.buckets.len() - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Vec<u64> {
        self.buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }
}

/// The `q` quantile (0..1) of the latencies recorded between two snapshots.
fn quantile(before: &[u64], after: &[u64], q: f64) -> Option<Duration> {
    let counts: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(Duration::from_micros(Latencies::upper(i)));
        }
    }
    None
}

/// What the workers share.
#[derive(Debug, Default)]
struct Counters {
    next_id: AtomicU64,
    latencies: Latencies,
    ok: AtomicU64,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
    response_bytes: AtomicU64,
    stop: AtomicBool,
    /// Request ids from this one on are not sent (a counted load).
    limit: Option<u64>,
}

impl Counters {
    fn fail(&self, error: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut first) = self.first_error.lock() {
            first.get_or_insert(error);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The id of the next request to send, or `None` once the load is stopped or has sent
    /// its count.
    fn next(&self) -> Option<u64> {
        if self.stopped() {
            return None;
        }
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        match self.limit {
            Some(limit) if n >= limit => None,
            _ => Some(n),
        }
    }
}

/// A running load: workers are sending until [`Load::stop`].
#[derive(Debug)]
pub struct Load {
    counters: Arc<Counters>,
    workers: Vec<JoinHandle<()>>,
}

/// Totals of a load once stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Requests answered correctly.
    pub ok: u64,
    /// Requests that failed or were answered wrongly.
    pub errors: u64,
    /// The first error seen.
    pub first_error: Option<String>,
    /// Size of a recent answer's body (the protobuf message for gRPC), in bytes.
    pub response_bytes: u64,
}

impl Load {
    /// Opens the connections to `target` and starts `connections` workers on `binding`.
    pub async fn start(
        binding: Binding,
        target: &Target,
        connections: usize,
    ) -> Result<Load, String> {
        Self::start_with(
            binding,
            std::slice::from_ref(target),
            connections,
            Counters::default(),
        )
        .await
    }

    /// Like [`Load::start`], with the workers spread over several servers (replicas of one
    /// agent): worker `i` sends to `targets[i % targets.len()]` (over HTTP/1.1 its own
    /// connection; over gRPC one h2c connection per server, shared by that server's workers).
    pub async fn start_across(
        binding: Binding,
        targets: &[Target],
        connections: usize,
    ) -> Result<Load, String> {
        Self::start_with(binding, targets, connections, Counters::default()).await
    }

    /// Like [`Load::start`], but the workers send `requests` requests in all and then end
    /// ([`Load::finish`] waits for them).
    pub async fn start_counted(
        binding: Binding,
        target: &Target,
        connections: usize,
        requests: u64,
    ) -> Result<Load, String> {
        let counters = Counters {
            limit: Some(requests),
            ..Counters::default()
        };
        Self::start_with(binding, std::slice::from_ref(target), connections, counters).await
    }

    async fn start_with(
        binding: Binding,
        targets: &[Target],
        connections: usize,
        counters: Counters,
    ) -> Result<Load, String> {
        if targets.is_empty() {
            return Err("no server to load".to_owned());
        }
        let counters = Arc::new(counters);
        let mut workers = Vec::with_capacity(connections);
        match binding {
            Binding::Rest | Binding::Jsonrpc => {
                for i in 0..connections {
                    let target = &targets[i % targets.len()];
                    let sender = http1_connect(target.http).await?;
                    let counters = counters.clone();
                    let authority = target.http.to_string();
                    workers.push(tokio::spawn(http_worker(
                        binding,
                        sender,
                        authority,
                        target.path(binding),
                        counters,
                    )));
                }
            }
            Binding::Grpc => {
                let mut channels = Vec::with_capacity(targets.len());
                for target in targets {
                    channels.push(grpc_connect(target.grpc).await?);
                }
                for i in 0..connections {
                    let channel = channels[i % channels.len()].clone();
                    workers.push(tokio::spawn(grpc_worker(channel, counters.clone())));
                }
            }
        }
        Ok(Load { counters, workers })
    }

    /// Requests answered correctly so far.
    pub fn completed(&self) -> u64 {
        self.counters.ok.load(Ordering::Relaxed)
    }

    fn latencies(&self) -> Vec<u64> {
        self.counters.latencies.snapshot()
    }

    /// Failed requests so far.
    pub fn errors(&self) -> u64 {
        self.counters.errors.load(Ordering::Relaxed)
    }

    /// Stops sending, waits for the requests in flight and returns the totals.
    pub async fn stop(self) -> Summary {
        self.counters.stop.store(true, Ordering::Relaxed);
        self.finish().await
    }

    /// Waits for the workers to end (a counted load's end once all are sent) and returns the
    /// totals.
    pub async fn finish(self) -> Summary {
        for worker in self.workers {
            if let Err(e) = worker.await {
                self.counters.fail(format!("worker ended abnormally: {e}"));
            }
        }
        let c = &self.counters;
        Summary {
            ok: c.ok.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            first_error: c.first_error.lock().ok().and_then(|e| e.clone()),
            response_bytes: c.response_bytes.load(Ordering::Relaxed),
        }
    }
}

/// One measurement window of a running load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Requests answered correctly within the window.
    pub requests: u64,
    /// Requests failed within the window.
    pub errors: u64,
    /// Wall time of the window.
    pub elapsed: Duration,
    /// CPU time the server process used within the window (when its pid was given).
    pub server_cpu: Option<Duration>,
    /// 99th percentile latency of the requests answered within the window.
    pub p99: Option<Duration>,
}

impl Window {
    /// Requests per second.
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// Server CPU per request, in microseconds.
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        let cpu = self.server_cpu?;
        (self.requests > 0).then(|| cpu.as_secs_f64() * 1e6 / self.requests as f64)
    }

    /// Server CPU time over wall time (1.0 = one core busy all the time).
    pub fn server_utilization(&self) -> Option<f64> {
        Some(self.server_cpu?.as_secs_f64() / self.elapsed.as_secs_f64())
    }
}

/// Lets `load` run for `duration` and returns what happened meanwhile. With `server`, reads
/// that process's CPU time at both ends of the window.
pub async fn measure(
    load: &Load,
    duration: Duration,
    server: Option<(u32, crate::cpu::Clock)>,
) -> Result<Window, String> {
    let ticks = |pid| crate::cpu::process_ticks(pid);
    let cpu_before = server.map(|(pid, _)| ticks(pid)).transpose()?;
    let lat_before = load.latencies();
    let (ok_before, err_before, start) = (load.completed(), load.errors(), Instant::now());
    tokio::time::sleep(duration).await;
    let (ok_after, err_after, elapsed) = (load.completed(), load.errors(), start.elapsed());
    let lat_after = load.latencies();
    let cpu_after = server.map(|(pid, _)| ticks(pid)).transpose()?;
    let server_cpu = match (server, cpu_before, cpu_after) {
        (Some((_, clock)), Some(before), Some(after)) => Some(clock.duration(after - before)),
        _ => None,
    };
    Ok(Window {
        requests: ok_after - ok_before,
        errors: err_after - err_before,
        elapsed,
        server_cpu,
        p99: quantile(&lat_before, &lat_after, 0.99),
    })
}

/// Sends one request of `binding` to `target` and checks the answer in full: is this server
/// really answering SendMessage there (before any load is counted)?
pub async fn probe(binding: Binding, target: &Target) -> Result<(), String> {
    const N: u64 = 1;
    match binding {
        Binding::Rest | Binding::Jsonrpc => {
            let mut sender = http1_connect(target.http).await?;
            let body = match binding {
                Binding::Jsonrpc => payload::jsonrpc_body(N),
                _ => payload::rest_body(N),
            };
            let (status, body) = http_call(
                &mut sender,
                &target.path(binding),
                &target.http.to_string(),
                body,
            )
            .await?;
            if status != http::StatusCode::OK {
                return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
            }
            if !payload::looks_completed(&body) {
                return Err(format!(
                    "not a completed task: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            match binding {
                Binding::Jsonrpc => payload::check_jsonrpc_body(&body, N),
                _ => payload::check_rest_body(&body, N),
            }
        }
        Binding::Grpc => {
            let mut client = A2aServiceClient::new(grpc_connect(target.grpc).await?);
            let response = client
                .send_message(grpc_request(N))
                .await
                .map_err(|status| format!("gRPC {status}"))?;
            payload::check_response(&response.into_inner(), N)
        }
    }
}

async fn grpc_connect(target: SocketAddr) -> Result<Channel, String> {
    tonic::transport::Endpoint::from_shared(format!("http://{target}"))
        .map_err(|e| e.to_string())?
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| format!("gRPC connect {target}: {e}"))
}

fn grpc_request(n: u64) -> tonic::Request<trident_proto::SendMessageRequest> {
    let mut request = tonic::Request::new(payload::grpc_request(n));
    request.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("1.0"),
    );
    request
}

pub(crate) async fn http1_connect(target: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = tokio::net::TcpStream::connect(target)
        .await
        .map_err(|e| format!("connect {target}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP/1.1 handshake with {target}: {e}"))?;
    tokio::spawn(async move {
        // Ends when the sender is dropped or the server closes the connection; a failure shows
        // up as an error of the request in flight.
        let _ = connection.await;
    });
    Ok(sender)
}

async fn http_worker(
    binding: Binding,
    mut sender: SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    counters: Arc<Counters>,
) {
    while let Some(n) = counters.next() {
        let body = match binding {
            Binding::Jsonrpc => payload::jsonrpc_body(n),
            _ => payload::rest_body(n),
        };
        let sent = Instant::now();
        match http_call(&mut sender, &path, &authority, body).await {
            Ok((status, body)) => {
                let latency = sent.elapsed();
                let verdict = if status != http::StatusCode::OK {
                    Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)))
                } else if n.is_multiple_of(SAMPLE_EVERY) {
                    match binding {
                        Binding::Jsonrpc => payload::check_jsonrpc_body(&body, n),
                        _ => payload::check_rest_body(&body, n),
                    }
                } else if payload::looks_completed(&body) {
                    Ok(())
                } else {
                    Err(format!(
                        "not a completed task: {}",
                        String::from_utf8_lossy(&body)
                    ))
                };
                counters
                    .response_bytes
                    .store(body.len() as u64, Ordering::Relaxed);
                match verdict {
                    Ok(()) => {
                        counters.latencies.record(latency);
                        counters.ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => counters.fail(e),
                }
            }
            Err(e) => {
                // The connection is unusable after a transport error.
                counters.fail(e);
                return;
            }
        }
    }
}

async fn http_call(
    sender: &mut SendRequest<Full<Bytes>>,
    path: &str,
    authority: &str,
    body: String,
) -> Result<(http::StatusCode, Bytes), String> {
    let request = http::Request::post(path)
        .header(http::header::HOST, authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header("a2a-version", "1.0")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

async fn grpc_worker(channel: Channel, counters: Arc<Counters>) {
    let mut client = A2aServiceClient::new(channel);
    while let Some(n) = counters.next() {
        let sent = Instant::now();
        match client.send_message(grpc_request(n)).await {
            Ok(response) => {
                let latency = sent.elapsed();
                let response = response.into_inner();
                if n.is_multiple_of(SAMPLE_EVERY) {
                    let len = prost::Message::encoded_len(&response) as u64;
                    counters.response_bytes.store(len, Ordering::Relaxed);
                }
                match payload::check_response(&response, n) {
                    Ok(()) => {
                        counters.latencies.record(latency);
                        counters.ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => counters.fail(e),
                }
            }
            Err(status) => counters.fail(format!("gRPC {status}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_bound_their_values_within_a_few_percent() {
        for us in [
            0u64,
            1,
            31,
            32,
            33,
            63,
            64,
            100,
            999,
            12_345,
            1_000_000,
            987_654_321,
        ] {
            let i = Latencies::index(us);
            let upper = Latencies::upper(i);
            assert!(upper >= us, "{us} µs in bucket {i} bounded by {upper}");
            assert!(
                upper as f64 <= us as f64 * 1.04 + 1.0,
                "{us} µs in bucket {i} bounded by {upper}"
            );
            if i > 0 {
                assert!(
                    Latencies::upper(i - 1) < us,
                    "{us} µs belongs below bucket {i}"
                );
            }
        }
    }

    #[test]
    fn the_quantile_is_read_from_the_window_only() {
        let latencies = Latencies::default();
        for _ in 0..1000 {
            latencies.record(Duration::from_millis(50));
        }
        let before = latencies.snapshot();
        for us in 1..=100 {
            latencies.record(Duration::from_micros(us * 10));
        }
        let after = latencies.snapshot();
        let p99 = quantile(&before, &after, 0.99).expect("100 samples");
        assert!((980..=1020).contains(&p99.as_micros()), "{p99:?}");
        assert_eq!(quantile(&after, &after, 0.99), None);
    }
}
