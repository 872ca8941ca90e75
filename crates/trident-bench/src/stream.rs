//! `trident-bench stream`: streaming figures of `trident serve`'s stack, over each binding.
//!
//! - **Events per second through one stream**: a server process running Trident with
//!   [`Chunks`] (every message streams as many artifact chunks as its text says, 16 bytes each,
//!   as fast as the engine takes them, then completes) gets one streaming SendMessage per
//!   binding; this process reads the stream to its end (SSE over HTTP/1.1 for HTTP+JSON and
//!   JSON-RPC, a server stream over h2c for gRPC), checks that every event arrived (the task,
//!   `WORKING`, every chunk, `COMPLETED` last) and reports events ÷ wall time, and the server's
//!   CPU per event (utime+stime from `/proc`).
//! - **Idle streams' memory**: a fresh server running [`Idle`] (tasks stay `WORKING`) gets
//!   `--idle` concurrent streaming SendMessages per binding (one HTTP/1.1 connection each; gRPC
//!   100 streams per h2c connection), each read until its first event; the server's resident
//!   set growth divided by the streams (after a first hundred, so runtime start-up is not
//!   counted) is the memory one idle stream costs, its task, connection and buffers included.
//!
//! Servers are pinned to core 0 and this process to core 1 when pinning, as in `run`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{FutureExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full};
use trident_core::{A2aError, AgentExecutor, EventSink, RequestContext};
use trident_proto as pb;
use trident_proto::a2a_service_client::A2aServiceClient;

use crate::cpu::{Clock, process_ticks};
use crate::load::Binding;
use crate::peers::{parse_ready, rss};

/// Streams as many 16-byte artifact chunks as the message's text says (1 000 when it is not a
/// number, at most 10 million), as fast as the engine takes them, then completes.
pub struct Chunks;

/// Text of every chunk.
pub const CHUNK: &str = "0123456789abcdef";

#[async_trait::async_trait]
impl AgentExecutor for Chunks {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let n = ctx
            .text()
            .trim()
            .parse::<usize>()
            .unwrap_or(1000)
            .min(10_000_000);
        sink.working().await?;
        for i in 0..n {
            let artifact = pb::Artifact::new("stream", vec![pb::Part::text(CHUNK)]);
            sink.artifact_chunk(artifact, i > 0, i + 1 == n).await?;
        }
        sink.complete().await
    }
}

/// Marks the task `WORKING` and waits until it is canceled.
pub struct Idle;

#[async_trait::async_trait]
impl AgentExecutor for Idle {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        ctx.cancelled().await;
        Ok(())
    }
}

/// Settings of a `stream` run.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// Chunks in the one stream of each throughput case.
    pub events: usize,
    /// Idle streams held at once per binding (0: skip).
    pub idle: usize,
    /// Rounds of the throughput cases.
    pub rounds: usize,
    /// Pin the servers to core 0.
    pub pin: bool,
}

/// A server child process, killed on drop.
struct Child {
    child: std::process::Child,
    _stdout: std::io::BufReader<std::process::ChildStdout>,
    addr: std::net::SocketAddr,
}

impl Child {
    fn start(mode: &str, pin: bool) -> Result<Child, String> {
        use std::io::BufRead as _;
        let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
        let mut cmd = if pin {
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", "0"]).arg(exe);
            cmd
        } else {
            Command::new(exe)
        };
        cmd.args(["server", "--listen", "127.0.0.1:0", "--runtime", "default"])
            .args(["--mode", mode, "--store", "memory"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().map_err(|e| format!("spawn server: {e}"))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            return Err("no stdout pipe".to_owned());
        };
        let mut child = Child {
            child,
            _stdout: std::io::BufReader::new(stdout),
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let mut line = String::new();
        child
            ._stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading the server's address: {e}"))?;
        child.addr = parse_ready(&line)
            .ok_or_else(|| format!("the server said {line:?} instead of its address"))?
            .0;
        Ok(child)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An opened streaming SendMessage, before any event is read.
enum Opened {
    Http(
        hyper::body::Incoming,
        hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    ),
    Grpc(tonic::Streaming<pb::StreamResponse>),
}

fn stream_request(binding: Binding, text: &str, id: u64) -> (&'static str, String) {
    let params = format!(
        r#"{{"message":{{"messageId":"s-{id}","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}"#
    );
    match binding {
        Binding::Jsonrpc => (
            "/",
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"SendStreamingMessage","params":{params}}}"#
            ),
        ),
        _ => ("/message:stream", params),
    }
}

async fn open_http(
    binding: Binding,
    target: std::net::SocketAddr,
    text: &str,
    id: u64,
) -> Result<Opened, String> {
    let stream = tokio::net::TcpStream::connect(target)
        .await
        .map_err(|e| format!("connect {target}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let (path, body) = stream_request(binding, text, id);
    let request = http::Request::post(path)
        .header(http::header::HOST, target.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "text/event-stream")
        .header("a2a-version", "1.0")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != http::StatusCode::OK {
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
    }
    Ok(Opened::Http(response.into_body(), sender))
}

async fn open_grpc(
    client: &mut A2aServiceClient<tonic::transport::Channel>,
    text: &str,
    id: u64,
) -> Result<Opened, String> {
    let mut request = tonic::Request::new(pb::SendMessageRequest {
        message: Some(pb::Message::user(
            format!("s-{id}"),
            vec![pb::Part::text(text)],
        )),
        ..Default::default()
    });
    request.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("1.0"),
    );
    let stream = client
        .send_streaming_message(request)
        .await
        .map_err(|s| format!("gRPC {s}"))?
        .into_inner();
    Ok(Opened::Grpc(stream))
}

async fn grpc_client(
    target: std::net::SocketAddr,
) -> Result<A2aServiceClient<tonic::transport::Channel>, String> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{target}"))
        .map_err(|e| e.to_string())?
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| format!("gRPC connect {target}: {e}"))?;
    Ok(A2aServiceClient::new(channel).max_decoding_message_size(64 << 20))
}

/// Counts SSE `data:` lines across body frames, keeping the last one.
#[derive(Default)]
struct SseCounter {
    carry: Vec<u8>,
    events: usize,
    last: Vec<u8>,
}

impl SseCounter {
    fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(nl);
            rest = &tail[1..];
            if self.carry.is_empty() {
                self.line(line);
            } else {
                let mut whole = std::mem::take(&mut self.carry);
                whole.extend_from_slice(line);
                self.line(&whole);
            }
        }
        self.carry.extend_from_slice(rest);
    }

    fn line(&mut self, line: &[u8]) {
        if let Some(data) = line.strip_prefix(b"data:") {
            self.events += 1;
            self.last.clear();
            self.last.extend_from_slice(data);
        }
    }
}

/// Reads one opened stream to its end: (events, whether the last one completed the task).
async fn drain(opened: Opened) -> Result<(usize, bool), String> {
    match opened {
        Opened::Http(mut body, _sender) => {
            let mut counter = SseCounter::default();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| e.to_string())?;
                if let Some(data) = frame.data_ref() {
                    counter.feed(data);
                }
            }
            let completed = String::from_utf8_lossy(&counter.last).contains("TASK_STATE_COMPLETED");
            Ok((counter.events, completed))
        }
        Opened::Grpc(mut stream) => {
            let mut events = 0;
            let mut completed = false;
            while let Some(event) = stream.message().await.map_err(|s| format!("gRPC {s}"))? {
                events += 1;
                completed = matches!(
                    event.payload,
                    Some(pb::stream_response::Payload::StatusUpdate(ref u))
                        if u.status.as_ref().is_some_and(|s| s.state == pb::TaskState::Completed as i32)
                );
            }
            Ok((events, completed))
        }
    }
}

/// Reads an opened stream until its first event; returns it still open.
async fn first_event(opened: Opened) -> Result<Opened, String> {
    match opened {
        Opened::Http(mut body, sender) => {
            let mut counter = SseCounter::default();
            while counter.events == 0 {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref() {
                            counter.feed(data);
                        }
                    }
                    Some(Err(e)) => return Err(e.to_string()),
                    None => return Err("the stream ended before its first event".to_owned()),
                }
            }
            Ok(Opened::Http(body, sender))
        }
        Opened::Grpc(mut stream) => match stream.message().await {
            Ok(Some(_)) => Ok(Opened::Grpc(stream)),
            Ok(None) => Err("the stream ended before its first event".to_owned()),
            Err(s) => Err(format!("gRPC {s}")),
        },
    }
}

/// One throughput case.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    /// Events received.
    pub events: usize,
    /// From sending the request to the end of the stream.
    pub elapsed: Duration,
    /// Server CPU meanwhile.
    pub server_cpu: Duration,
}

async fn throughput(
    binding: Binding,
    server: &Child,
    clock: Clock,
    chunks: usize,
    id: u64,
) -> Result<Throughput, String> {
    one_stream(binding, server.addr, Some(server.pid()), clock, chunks, id).await
}

/// One stream of `chunks` chunks from the server at `addr`, checked in full; the server's CPU
/// meanwhile when its `pid` is given (zero otherwise).
async fn one_stream(
    binding: Binding,
    addr: std::net::SocketAddr,
    pid: Option<u32>,
    clock: Clock,
    chunks: usize,
    id: u64,
) -> Result<Throughput, String> {
    let text = chunks.to_string();
    let mut grpc = match binding {
        Binding::Grpc => Some(grpc_client(addr).await?),
        _ => None,
    };
    let ticks = || pid.map_or(Ok(0), process_ticks);
    let before = ticks()?;
    let start = Instant::now();
    let opened = match grpc.as_mut() {
        Some(client) => open_grpc(client, &text, id).await?,
        None => open_http(binding, addr, &text, id).await?,
    };
    let (events, completed) = drain(opened).await?;
    let elapsed = start.elapsed();
    let after = ticks()?;
    // The task, WORKING, every chunk, COMPLETED.
    if events != chunks + 3 || !completed {
        return Err(format!(
            "{}: {events} events (expected {}), completed last: {completed}",
            binding.name(),
            chunks + 3
        ));
    }
    Ok(Throughput {
        events,
        elapsed,
        server_cpu: clock.duration(after - before),
    })
}

/// `trident-bench stream-once`: one stream of `chunks` chunks over `binding` from a running
/// `trident-bench server --mode chunks` at `addr`, checked in full (what `bench/profile-stream.sh`
/// runs between zeroing and dumping a profiler's counters). Returns the events received.
pub async fn once(
    binding: Binding,
    addr: std::net::SocketAddr,
    chunks: usize,
) -> Result<usize, String> {
    let t = one_stream(binding, addr, None, Clock::from_getconf(), chunks, 1).await?;
    Ok(t.events)
}

/// `trident-bench stream-once --idle N`: opens `count` idle streams over `binding` to a running
/// `trident-bench server --mode idle` at `addr` and holds them for `hold` (to look at the
/// server's memory with a heap profiler meanwhile). Returns the streams held.
pub async fn hold_idle(
    binding: Binding,
    addr: std::net::SocketAddr,
    count: usize,
    hold: Duration,
) -> Result<usize, String> {
    let mut grpc = Vec::new();
    let held = open_idle(binding, addr, count, 0, &mut grpc).await?;
    eprintln!("holding {} idle streams for {hold:?}", held.len());
    tokio::time::sleep(hold).await;
    Ok(held.len())
}

/// Opens `count` idle streams of `binding`; returns them open.
async fn open_idle(
    binding: Binding,
    addr: std::net::SocketAddr,
    count: usize,
    from: u64,
    grpc: &mut Vec<A2aServiceClient<tonic::transport::Channel>>,
) -> Result<Vec<Opened>, String> {
    const PER_CONNECTION: usize = 100;
    let mut opened = Vec::with_capacity(count);
    let mut jobs = Vec::with_capacity(count);
    for i in 0..count {
        let id = from + i as u64;
        match binding {
            Binding::Grpc => {
                let n = (from as usize + i) / PER_CONNECTION;
                while grpc.len() <= n {
                    grpc.push(grpc_client(addr).await?);
                }
                let mut client = grpc[n].clone();
                jobs.push(
                    async move { first_event(open_grpc(&mut client, "idle", id).await?).await }
                        .boxed_local(),
                );
            }
            _ => {
                jobs.push(
                    async move { first_event(open_http(binding, addr, "idle", id).await?).await }
                        .boxed_local(),
                );
            }
        }
    }
    let mut results = futures::stream::iter(jobs).buffer_unordered(256);
    while let Some(result) = results.next().await {
        opened.push(result?);
    }
    Ok(opened)
}

/// Memory per idle stream on `binding`: (bytes per stream, streams).
async fn idle_memory(binding: Binding, count: usize, pin: bool) -> Result<(f64, usize), String> {
    const WARM: usize = 100;
    let server = Child::start("idle", pin)?;
    let mut grpc = Vec::new();
    let warm = open_idle(binding, server.addr, WARM, 0, &mut grpc).await?;
    let before = rss(server.pid())?;
    let held = open_idle(binding, server.addr, count, WARM as u64, &mut grpc).await?;
    let after = rss(server.pid())?;
    let n = held.len();
    drop((warm, held, grpc));
    Ok((after.saturating_sub(before) as f64 / n.max(1) as f64, n))
}

/// Runs both measurements and prints markdown tables.
pub async fn run(config: &StreamConfig, clock: Clock) -> Result<(), String> {
    let bindings = [Binding::Jsonrpc, Binding::Rest, Binding::Grpc];
    let server = Child::start("chunks", config.pin)?;
    // A short stream per binding first: lazy start-up out of the measured cases.
    for (i, &binding) in bindings.iter().enumerate() {
        throughput(binding, &server, clock, 1000, i as u64).await?;
    }
    let mut results: Vec<(Binding, Throughput)> = Vec::new();
    for round in 0..config.rounds {
        for &binding in &bindings {
            let t = throughput(binding, &server, clock, config.events, 100 + round as u64).await?;
            eprintln!(
                "round {} {:>7}: {:>9.0} events/s, server {:.2} µs/event",
                round + 1,
                binding.name(),
                t.events as f64 / t.elapsed.as_secs_f64(),
                t.server_cpu.as_secs_f64() * 1e6 / t.events as f64
            );
            results.push((binding, t));
        }
    }
    drop(server);
    println!(
        "One stream of {} artifact chunks (16 B each) per case, one subscriber, {} round(s), \
         medians:\n",
        config.events, config.rounds
    );
    println!("| binding | events/s | server µs/event | server CPU |");
    println!("|---|---:|---:|---:|");
    for &binding in &bindings {
        let case: Vec<&Throughput> = results
            .iter()
            .filter(|(b, _)| *b == binding)
            .map(|(_, t)| t)
            .collect();
        let rate = median(
            case.iter()
                .map(|t| t.events as f64 / t.elapsed.as_secs_f64()),
        );
        let cpu = median(
            case.iter()
                .map(|t| t.server_cpu.as_secs_f64() * 1e6 / t.events as f64),
        );
        let util = median(
            case.iter()
                .map(|t| t.server_cpu.as_secs_f64() / t.elapsed.as_secs_f64()),
        );
        println!(
            "| {} | {rate:.0} | {cpu:.2} | {:.0}% |",
            binding_label(binding),
            util * 100.0
        );
    }
    if config.idle > 0 {
        println!(
            "\n{} idle streams held at once per binding (tasks `WORKING`), server RSS growth \
             per stream:\n",
            config.idle
        );
        println!("| binding | streams | RSS / stream |");
        println!("|---|---:|---:|");
        for &binding in &bindings {
            let (per, n) = idle_memory(binding, config.idle, config.pin).await?;
            eprintln!(
                "{:>7}: {n} idle streams, {:.1} KiB each",
                binding.name(),
                per / 1024.0
            );
            println!(
                "| {} | {n} | {:.1} KiB |",
                binding_label(binding),
                per / 1024.0
            );
        }
    }
    Ok(())
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

fn binding_label(binding: Binding) -> &'static str {
    match binding {
        Binding::Rest => "HTTP+JSON (SSE, HTTP/1.1)",
        Binding::Jsonrpc => "JSON-RPC (SSE, HTTP/1.1)",
        Binding::Grpc => "gRPC (h2c)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_data_lines_are_counted_across_frames() {
        let mut c = SseCounter::default();
        c.feed(b"data: {\"a\":1}\n\nda");
        c.feed(b"ta: {\"b\":2}\n");
        c.feed(b"\n: keep-alive\n\ndata: {\"TASK_STATE_COMPLETED\"}\n\n");
        assert_eq!(c.events, 3);
        assert!(String::from_utf8_lossy(&c.last).contains("TASK_STATE_COMPLETED"));
    }
}
