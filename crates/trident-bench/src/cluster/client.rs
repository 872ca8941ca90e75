//! The client side of the rows: streams read and checked over HTTP+JSON SSE, the blocking
//! load, the cross-replica follower.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;

use super::servers::Replica;
use super::sse::{Check, SseParser};
use super::{CpuPerEvent, Lag};
use crate::cpu::{Clock, process_ticks};
use crate::load::{Binding, Load, Target, http1_connect, measure};

/// A request unanswered, or a stream silent (not even a keep-alive), this long is an error
/// rather than a hung benchmark.
const STALL: Duration = Duration::from_secs(60);

/// Streams' totals.
#[derive(Debug, Clone, Copy)]
pub(super) struct Streamed {
    pub(super) events: u64,
    pub(super) elapsed: Duration,
}

impl Streamed {
    pub(super) fn rate(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }
}

/// An SSE response being read, its connection kept with it.
struct Sse {
    body: hyper::body::Incoming,
    _sender: SendRequest<Full<Bytes>>,
}

/// `POST /message:stream` of the demo agent's `stream CHUNKS 0`.
fn stream_request(
    addr: SocketAddr,
    chunks: usize,
    pace_ms: u64,
    message_id: &str,
) -> http::Request<Full<Bytes>> {
    let body = format!(
        r#"{{"message":{{"messageId":"{message_id}","role":"ROLE_USER","parts":[{{"text":"stream {chunks} {pace_ms}"}}]}}}}"#
    );
    sse_request(
        http::Method::POST,
        addr,
        "/message:stream",
        Bytes::from(body),
    )
}

/// `GET /tasks/{id}:subscribe`.
fn subscribe_request(addr: SocketAddr, task_id: &str) -> http::Request<Full<Bytes>> {
    sse_request(
        http::Method::GET,
        addr,
        &format!("/tasks/{task_id}:subscribe"),
        Bytes::new(),
    )
}

fn sse_request(
    method: http::Method,
    addr: SocketAddr,
    path: &str,
    body: Bytes,
) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::new(Full::new(body));
    *request.method_mut() = method;
    *request.uri_mut() = path.parse().unwrap_or_default();
    let headers = request.headers_mut();
    if let Ok(host) = http::HeaderValue::from_str(&addr.to_string()) {
        headers.insert(http::header::HOST, host);
    }
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("a2a-version", http::HeaderValue::from_static("1.0"));
    request
}

/// Sends `request` on `sender`; the response must be `200 OK`.
async fn open_sse(
    mut sender: SendRequest<Full<Bytes>>,
    request: http::Request<Full<Bytes>>,
) -> Result<Sse, String> {
    let what = format!("{} {}", request.method(), request.uri());
    let response = tokio::time::timeout(STALL, async {
        sender.ready().await?;
        sender.send_request(request).await
    })
    .await
    .map_err(|_| format!("{what}: no answer within {} s", STALL.as_secs()))?
    .map_err(|e| format!("{what}: {e}"))?;
    if response.status() != http::StatusCode::OK {
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "{what}: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    Ok(Sse {
        body: response.into_body(),
        _sender: sender,
    })
}

/// Reads `sse` to its end through `check`; sends the task's id on `first` once known.
async fn read_sse(
    mut sse: Sse,
    check: &mut Check,
    mut first: Option<tokio::sync::oneshot::Sender<String>>,
) -> Result<(), String> {
    let mut parser = SseParser::default();
    loop {
        let Some(frame) = tokio::time::timeout(STALL, sse.body.frame())
            .await
            .map_err(|_| {
                format!(
                    "the stream stalled: nothing for {} s after {} events",
                    STALL.as_secs(),
                    check.events
                )
            })?
        else {
            break;
        };
        let frame = frame.map_err(|e| format!("reading the stream: {e}"))?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let now = Instant::now();
        parser.feed(data, |event| check.event(event, now))?;
        if first.is_some()
            && let Some(id) = &check.task_id
            && let Some(tx) = first.take()
        {
            let _ = tx.send(id.clone());
        }
    }
    parser.finish()?;
    check.finish()
}

/// One stream of `chunks` chunks from `addr`, checked in full.
pub(super) async fn one_stream(
    addr: SocketAddr,
    chunks: usize,
    tag: &str,
) -> Result<Streamed, String> {
    let sender = http1_connect(addr).await?;
    let id = format!("{tag}-{}", uuid::Uuid::new_v4().simple());
    let start = Instant::now();
    let sse = open_sse(sender, stream_request(addr, chunks, 0, &id)).await?;
    let mut check = Check::new(chunks);
    read_sse(sse, &mut check, None).await?;
    Ok(Streamed {
        events: check.events,
        elapsed: start.elapsed(),
    })
}

/// `streams` streams of `chunks` chunks at once, stream `i` on `addrs[i % len]`.
pub(super) async fn many_streams(
    addrs: &[SocketAddr],
    streams: usize,
    chunks: usize,
) -> Result<Streamed, String> {
    // Connections first, so the measured time is the streams'.
    let mut senders = Vec::with_capacity(streams);
    for i in 0..streams {
        let addr = addrs[i % addrs.len()];
        senders.push((addr, http1_connect(addr).await?));
    }
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (i, (addr, sender)) in senders.into_iter().enumerate() {
        set.spawn(async move {
            let id = format!("many-{i}-{}", uuid::Uuid::new_v4().simple());
            let sse = open_sse(sender, stream_request(addr, chunks, 0, &id)).await?;
            let mut check = Check::new(chunks);
            read_sse(sse, &mut check, None)
                .await
                .map_err(|e| format!("stream {i} on {addr}: {e}"))?;
            Ok::<u64, String>(check.events)
        });
    }
    let mut events = 0;
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        match joined.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(n) => events += n,
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let elapsed = start.elapsed();
    match first_error {
        Some(e) => Err(e),
        None => Ok(Streamed { events, elapsed }),
    }
}

/// The closed-loop blocking load over HTTP+JSON, spread over `addrs`: requests/s.
pub(super) async fn blocking(
    addrs: &[SocketAddr],
    connections: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<f64, String> {
    let targets: Vec<Target> = addrs.iter().copied().map(Target::single).collect();
    let load = Load::start_across(Binding::Rest, &targets, connections.max(1)).await?;
    tokio::time::sleep(warmup).await;
    let window = measure(&load, duration, None).await;
    let summary = load.stop().await;
    let window = window?;
    if summary.errors > 0 {
        return Err(format!(
            "{} of {} requests failed; first: {}",
            summary.errors,
            summary.errors + summary.ok,
            summary.first_error.unwrap_or_default()
        ));
    }
    Ok(window.rate())
}

/// A stream on replica A followed by a subscriber on replica B.
#[derive(Debug)]
pub(super) struct Followed {
    /// Lag of each measured event, ms.
    lags_ms: Vec<f64>,
    pub(super) cpu: CpuPerEvent,
}

impl Followed {
    pub(super) fn lag(&self) -> Result<Lag, String> {
        lag_quantiles(&self.lags_ms).ok_or_else(|| {
            "no event reached A's stream after B's subscription was in place: \
             use a longer stream"
                .to_owned()
        })
    }
}

/// Sends `stream CHUNKS PACE_MS` to `a`, subscribes to the task on `b` as soon as its first
/// event arrives, reads and checks both; lags and CPU per event.
pub(super) async fn follow(
    a: &Replica,
    b: &Replica,
    chunks: usize,
    pace_ms: u64,
    clock: Clock,
) -> Result<Followed, String> {
    let (addr_a, addr_b) = (a.addr, b.addr);
    let sender_a = http1_connect(addr_a).await?;
    let sender_b = http1_connect(addr_b).await?;
    let before = (process_ticks(a.pid())?, process_ticks(b.pid())?);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let on_a = tokio::spawn(async move {
        let id = format!("follow-{}", uuid::Uuid::new_v4().simple());
        let sse = open_sse(sender_a, stream_request(addr_a, chunks, pace_ms, &id)).await?;
        let mut check = Check::new(chunks).timed();
        read_sse(sse, &mut check, Some(tx))
            .await
            .map_err(|e| format!("A's stream: {e}"))?;
        Ok::<Check, String>(check)
    });
    let Ok(task_id) = rx.await else {
        return Err(match on_a.await {
            Ok(Err(e)) => e,
            Ok(Ok(_)) => "A's stream ended without naming its task".to_owned(),
            Err(e) => e.to_string(),
        });
    };
    let mut check_b = Check::new(chunks).timed().of_task(task_id.clone());
    let on_b = match open_sse(sender_b, subscribe_request(addr_b, &task_id)).await {
        Ok(sse) => read_sse(sse, &mut check_b, None)
            .await
            .map_err(|e| format!("B's subscriber: {e}")),
        Err(e) => Err(format!(
            "subscribing on B (a {chunks}-chunk stream may have ended before): {e}"
        )),
    };
    let check_a = on_a.await.map_err(|e| e.to_string())??;
    on_b?;
    let after = (process_ticks(a.pid())?, process_ticks(b.pid())?);
    let events = check_a.last_seq() as f64;
    let per_event = |ticks: u64| clock.duration(ticks).as_secs_f64() * 1e6 / events;
    let cpu = CpuPerEvent {
        follower_us: per_event(after.1 - before.1),
        local_us: per_event(after.0 - before.0),
    };
    let lags_ms = match (&check_a.arrivals, &check_b.arrivals, check_b.first_arrival) {
        (Some(on_a), Some(on_b), Some(subscribed)) => {
            lags(on_a, on_b, check_b.first_seq + 1, subscribed)
        }
        _ => Vec::new(),
    };
    Ok(Followed { lags_ms, cpu })
}

/// Per event from sequence number `from` on that reached A's stream at or after `subscribed`
/// (the arrival of B's first event) and B's subscriber too: B's arrival − A's, in ms. Both
/// slices are indexed by sequence number.
fn lags(
    on_a: &[Option<Instant>],
    on_b: &[Option<Instant>],
    from: u64,
    subscribed: Instant,
) -> Vec<f64> {
    let from = usize::try_from(from).unwrap_or(usize::MAX);
    on_a.iter()
        .zip(on_b)
        .skip(from)
        .filter_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) if *a >= subscribed => Some(if b >= a {
                b.duration_since(*a).as_secs_f64() * 1e3
            } else {
                -(a.duration_since(*b).as_secs_f64() * 1e3)
            }),
            _ => None,
        })
        .collect()
}

/// p50 and p99 of `samples` (nearest rank), or `None` when empty.
fn lag_quantiles(samples: &[f64]) -> Option<Lag> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
    Some(Lag {
        p50_ms: rank(0.50),
        p99_ms: rank(0.99),
        samples: v.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_counts_events_after_the_subscription_from_the_seq_after_its_snapshot() {
        let t0 = Instant::now();
        let at = |ms: u64| Some(t0 + Duration::from_millis(ms));
        // seq 0 unused; 1..=5.
        let on_a = [None, at(0), at(10), at(20), at(30), at(40)];
        let on_b = [None, None, at(15), at(21), at(33), at(39)];
        // B's snapshot (seq 2) arrived at 15 ms: seq 3.. count, and only what A got from 15 ms.
        let lags = lags(&on_a, &on_b, 3, t0 + Duration::from_millis(15));
        assert_eq!(lags.len(), 3);
        assert!((lags[0] - 1.0).abs() < 1e-6 && (lags[1] - 3.0).abs() < 1e-6);
        assert!((lags[2] + 1.0).abs() < 1e-6, "B first: negative");
        let q = lag_quantiles(&(1..=100).map(f64::from).collect::<Vec<_>>()).expect("samples");
        assert_eq!((q.p50_ms, q.p99_ms, q.samples), (50.0, 99.0, 100));
        assert_eq!(lag_quantiles(&[]), None);
    }
}
