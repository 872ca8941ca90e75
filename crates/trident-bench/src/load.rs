//! A closed-loop load generator for blocking SendMessage.
//!
//! `connections` workers each keep exactly one request in flight, sending the next as soon as
//! the previous answer is read:
//! - HTTP+JSON and JSON-RPC: one HTTP/1.1 keep-alive connection per worker (hyper's
//!   connection-level client: no pool, no extra tasks besides the connection's);
//! - gRPC: one tonic `Channel` (one HTTP/2 connection) shared by all workers, so up to
//!   `connections` streams are in flight on it.
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

/// What the workers share.
#[derive(Debug, Default)]
struct Counters {
    next_id: AtomicU64,
    ok: AtomicU64,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
    response_bytes: AtomicU64,
    stop: AtomicBool,
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
        target: SocketAddr,
        connections: usize,
    ) -> Result<Load, String> {
        let counters = Arc::new(Counters::default());
        let mut workers = Vec::with_capacity(connections);
        match binding {
            Binding::Rest | Binding::Jsonrpc => {
                for _ in 0..connections {
                    let sender = http1_connect(target).await?;
                    let counters = counters.clone();
                    let authority = target.to_string();
                    workers.push(tokio::spawn(http_worker(
                        binding, sender, authority, counters,
                    )));
                }
            }
            Binding::Grpc => {
                let channel = tonic::transport::Endpoint::from_shared(format!("http://{target}"))
                    .map_err(|e| e.to_string())?
                    .tcp_nodelay(true)
                    .connect()
                    .await
                    .map_err(|e| format!("gRPC connect {target}: {e}"))?;
                for _ in 0..connections {
                    workers.push(tokio::spawn(grpc_worker(channel.clone(), counters.clone())));
                }
            }
        }
        Ok(Load { counters, workers })
    }

    /// Requests answered correctly so far.
    pub fn completed(&self) -> u64 {
        self.counters.ok.load(Ordering::Relaxed)
    }

    /// Failed requests so far.
    pub fn errors(&self) -> u64 {
        self.counters.errors.load(Ordering::Relaxed)
    }

    /// Stops sending, waits for the requests in flight and returns the totals.
    pub async fn stop(self) -> Summary {
        self.counters.stop.store(true, Ordering::Relaxed);
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
    let (ok_before, err_before, start) = (load.completed(), load.errors(), Instant::now());
    tokio::time::sleep(duration).await;
    let (ok_after, err_after, elapsed) = (load.completed(), load.errors(), start.elapsed());
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
    })
}

async fn http1_connect(target: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
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
    counters: Arc<Counters>,
) {
    let path = match binding {
        Binding::Jsonrpc => "/",
        _ => "/message:send",
    };
    while !counters.stopped() {
        let n = counters.next_id.fetch_add(1, Ordering::Relaxed);
        let body = match binding {
            Binding::Jsonrpc => payload::jsonrpc_body(n),
            _ => payload::rest_body(n),
        };
        match http_call(&mut sender, path, &authority, body).await {
            Ok((status, body)) => {
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
    while !counters.stopped() {
        let n = counters.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = tonic::Request::new(payload::grpc_request(n));
        request.metadata_mut().insert(
            "a2a-version",
            tonic::metadata::MetadataValue::from_static("1.0"),
        );
        match client.send_message(request).await {
            Ok(response) => {
                let response = response.into_inner();
                if n.is_multiple_of(SAMPLE_EVERY) {
                    let len = prost::Message::encoded_len(&response) as u64;
                    counters.response_bytes.store(len, Ordering::Relaxed);
                }
                match payload::check_response(&response, n) {
                    Ok(()) => {
                        counters.ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => counters.fail(e),
                }
            }
            Err(status) => counters.fail(format!("gRPC {status}")),
        }
    }
}
