//! Per-caller limits: a request rate (token bucket) and a number of concurrent streams, keyed
//! by the authenticated principal, or for an anonymous caller by its IPv4 address or IPv6 /64
//! (behind a trusted proxy, the client's it names; see [`crate::proxy`]). A caller over a limit
//! gets `ResourceExhausted` (HTTP 429, gRPC RESOURCE_EXHAUSTED, JSON-RPC -31429) on every
//! binding; other callers are unaffected. Request body size is limited per binding
//! (`RestOptions::max_body` and friends).
//!
//! One component, [`Limited`], owns the per-caller state (tokens and open streams, in one
//! bounded table), and each limit is taken in the one place that can take it:
//!
//! - **the rate, per request, at the edge.** The server's edge layer ([`crate::admission`])
//!   calls [`Limited::charge`] once for every request, before anything decodes it, so a
//!   request that never becomes a call (bad JSON, a garbage protobuf, an unknown route, bad
//!   credentials) costs like any other. Calls are not charged again: a request is charged
//!   exactly once, whatever it turns into, and nothing needs to tell the call it was paid for.
//! - **the streams, per call, in front of the service.** Only the decoded call knows it
//!   streams (a JSON-RPC method is in the body), so `Limited` wraps the service as an
//!   [`AroundCall`] that takes a stream slot before the call reaches the service — a stream
//!   over the limit is refused before anything starts — and holds it until the stream ends
//!   or its client leaves. Other calls pass straight through.
//!
//! Served by [`crate::app`], the same `Limited` wraps the service and is
//! [`crate::ServerOptions::caller_limits`]; a `Limited` only wrapping a service limits streams,
//! not the rate.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use trident_core::{
    A2aError, A2aReply, A2aRequest, A2aService, AroundCall, CallContext, ErrorKind, EventStream,
    Principal,
};

/// The limits, per caller.
#[derive(Debug, Clone, Copy)]
pub struct CallerLimits {
    /// Sustained requests per second (`0`: unlimited).
    pub rate: f64,
    /// Requests allowed in a burst above the rate.
    pub burst: u32,
    /// Streams open at once (`0`: unlimited).
    pub max_streams: usize,
}

impl Default for CallerLimits {
    fn default() -> Self {
        Self {
            rate: 0.0,
            burst: 0,
            max_streams: 0,
        }
    }
}

#[derive(Debug)]
struct Caller {
    tokens: f64,
    refilled: Instant,
    streams: usize,
}

/// Callers by key, split into independently locked shards.
type Shards = Arc<[Mutex<HashMap<Arc<str>, Caller>>]>;

const SHARDS: usize = 32;
/// Callers kept per shard before idle ones are forgotten.
const SHARD_CAPACITY: usize = 4096;
/// The key callers share when their shard is full of active callers (and anonymous callers
/// with no recorded address): the table never grows past its capacity, whatever number of
/// addresses or principals turn up.
const OVERFLOW: &str = "anonymous";

/// The per-caller limits ([`CallerLimits`]) and the one table of what each caller holds:
/// the request rate, which the server's edge layer charges once per request before decoding it
/// ([`charge`](Self::charge)), and, as the [`A2aService`] in front of the service, the open
/// streams: a streaming call takes a slot before it reaches the service (over the limit,
/// nothing starts) and holds it until the stream ends. Calls are not charged the rate again.
pub struct Limited {
    inner: Arc<dyn A2aService>,
    limits: CallerLimits,
    callers: Shards,
}

impl std::fmt::Debug for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limited")
            .field("limits", &self.limits)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Releases a stream slot when the stream is dropped.
struct Slot {
    callers: Shards,
    key: Arc<str>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut shard = lock(&self.callers[shard_of(&self.key)]);
        if let Some(c) = shard.get_mut(&self.key) {
            c.streams = c.streams.saturating_sub(1);
        }
    }
}

fn shard_of(key: &str) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    (BuildHasherDefault::<DefaultHasher>::default().hash_one(key) as usize) % SHARDS
}

impl Limited {
    /// The limits `limits`, its stream limit in front of `inner`. Serve it as
    /// [`crate::ServerOptions::caller_limits`] too, so that the edge charges the rate.
    pub fn new(inner: Arc<dyn A2aService>, limits: CallerLimits) -> Self {
        Self {
            inner,
            limits,
            callers: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// An authenticated caller is its principal; an anonymous one its IPv4 address or IPv6
    /// /64 (one host usually has a whole /64), so one noisy client cannot spend everybody's
    /// budget; one shared key when the server recorded no address.
    fn key(cx: &CallContext) -> Arc<str> {
        Self::key_of(&cx.principal, cx.peer)
    }

    /// The key of the caller `principal` at `peer` ([`key`](Self::key)).
    fn key_of(principal: &Principal, peer: Option<std::net::SocketAddr>) -> Arc<str> {
        match (principal.id(), peer) {
            (Some(id), _) => format!("principal {id}").into(),
            (None, Some(peer)) => match peer.ip().to_canonical() {
                IpAddr::V4(v4) => format!("address {v4}").into(),
                IpAddr::V6(v6) => {
                    let net = Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX));
                    format!("address {net}/64").into()
                }
            },
            (None, None) => OVERFLOW.into(),
        }
    }

    /// Runs `f` on the entry of the caller `key` (created full), under its shard's lock. A
    /// full shard first forgets callers with nothing open whose bucket has refilled; if it is
    /// still full, a new caller shares the [`OVERFLOW`] entry. `f` gets the key the entry is
    /// under.
    fn with_caller<R>(&self, key: Arc<str>, f: impl FnOnce(&mut Caller, Arc<str>) -> R) -> R {
        let mut key = key;
        let now = Instant::now();
        let burst = f64::from(self.limits.burst.max(1));
        let mut shard = lock(&self.callers[shard_of(&key)]);
        if shard.len() >= SHARD_CAPACITY && !shard.contains_key(&key) {
            let rate = self.limits.rate;
            shard.retain(|_, c| {
                c.streams > 0
                    || c.tokens + now.duration_since(c.refilled).as_secs_f64() * rate < burst
            });
            if shard.len() >= SHARD_CAPACITY {
                drop(shard);
                key = OVERFLOW.into();
                shard = lock(&self.callers[shard_of(&key)]);
            }
        }
        let caller = shard.entry(key.clone()).or_insert(Caller {
            tokens: burst,
            refilled: now,
            streams: 0,
        });
        f(caller, key)
    }

    /// Whether requests are charged at all (a rate is set).
    pub fn charges_requests(&self) -> bool {
        self.limits.rate > 0.0
    }

    /// Charges one request to the caller `principal` at `peer`: `ResourceExhausted` (saying
    /// when to retry) once the caller is over its rate. The server's edge layer calls this
    /// once for every request it does not exempt, before the request is decoded.
    pub fn charge(
        &self,
        principal: &Principal,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<(), A2aError> {
        let rate = self.limits.rate;
        if rate <= 0.0 {
            return Ok(());
        }
        let burst = f64::from(self.limits.burst.max(1));
        self.with_caller(Self::key_of(principal, peer), |caller, _| {
            let now = Instant::now();
            let elapsed = now.duration_since(caller.refilled).as_secs_f64();
            caller.tokens = (caller.tokens + elapsed * rate).min(burst);
            caller.refilled = now;
            if caller.tokens < 1.0 {
                let wait = (1.0 - caller.tokens) / rate;
                return Err(A2aError::new(
                    ErrorKind::ResourceExhausted,
                    format!(
                        "request rate limit of {rate} per second exceeded; retry in {wait:.1} s"
                    ),
                )
                .with_retry_after(wait.ceil().max(1.0) as u64));
            }
            caller.tokens -= 1.0;
            Ok(())
        })
    }

    /// Takes one of the caller's stream slots, released when the [`Slot`] is dropped.
    fn open_stream(&self, cx: &CallContext) -> Result<Slot, A2aError> {
        let max = self.limits.max_streams;
        self.with_caller(Self::key(cx), |caller, key| {
            if caller.streams >= max {
                return Err(A2aError::new(
                    ErrorKind::ResourceExhausted,
                    format!("at most {max} streams may be open at once per caller"),
                )
                .with_retry_after(1));
            }
            caller.streams += 1;
            Ok(Slot {
                callers: self.callers.clone(),
                key,
            })
        })
    }

    fn hold(stream: EventStream, slot: Slot) -> EventStream {
        stream
            .map(move |item| {
                let _keep = &slot;
                item
            })
            .boxed()
    }
}

/// A streaming call takes a stream slot first (when streams are limited) and holds it until
/// the stream ends or its client leaves; every call goes on to the service whole. The rate is
/// not charged here: the edge charged the request (see the module docs).
#[async_trait::async_trait]
impl AroundCall for Limited {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        if self.limits.max_streams == 0 || !req.operation().is_streaming() {
            return self.inner.call(cx, req).await;
        }
        let slot = self.open_stream(cx)?;
        let reply = self.inner.call(cx, req).await?;
        Ok(reply.map_stream(|stream| Self::hold(stream, slot)))
    }
}

#[cfg(test)]
mod tests;
