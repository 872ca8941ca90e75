//! Per-caller limits: a request rate (token bucket) and a number of concurrent streams, keyed
//! by the authenticated principal, or for an anonymous caller by its IPv4 address or IPv6 /64
//! (behind a trusted proxy, the client's it names; see [`crate::proxy`]). A caller over a limit
//! gets `ResourceExhausted` (HTTP 429, gRPC RESOURCE_EXHAUSTED, JSON-RPC -31429) on every
//! binding; other callers are unaffected. Request body size is limited per binding
//! (`RestOptions::max_body` and friends).
//!
//! Served by [`crate::app`] with [`crate::ServerOptions::caller_limits`], each request is
//! charged once at the HTTP layer, before it is decoded (see [`crate::admission`]), and the
//! call it makes is not charged again here; a call from anywhere else is charged here.

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

/// An [`A2aService`] that enforces [`CallerLimits`].
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
    /// Enforces `limits` in front of `inner`.
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
        match (cx.principal.id(), cx.peer) {
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

    /// Takes a token for one request (and a stream slot for a stream).
    fn admit(&self, cx: &CallContext, stream: bool) -> Result<Option<Slot>, A2aError> {
        let mut key = Self::key(cx);
        // Already charged for this request at the HTTP layer (`crate::admission`).
        let prepaid = crate::admission::spend_credit(&key);
        let now = Instant::now();
        let mut shard = lock(&self.callers[shard_of(&key)]);
        if shard.len() >= SHARD_CAPACITY && !shard.contains_key(&key) {
            // Forget callers with nothing open whose bucket has refilled.
            let rate = self.limits.rate;
            let burst = f64::from(self.limits.burst.max(1));
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
        let burst = f64::from(self.limits.burst.max(1));
        let caller = shard.entry(key.clone()).or_insert(Caller {
            tokens: burst,
            refilled: now,
            streams: 0,
        });
        if self.limits.rate > 0.0 && !prepaid {
            let elapsed = now.duration_since(caller.refilled).as_secs_f64();
            caller.tokens = (caller.tokens + elapsed * self.limits.rate).min(burst);
            caller.refilled = now;
            if caller.tokens < 1.0 {
                let wait = (1.0 - caller.tokens) / self.limits.rate;
                return Err(A2aError::new(
                    ErrorKind::ResourceExhausted,
                    format!(
                        "request rate limit of {} per second exceeded; retry in {wait:.1} s",
                        self.limits.rate
                    ),
                )
                .with_retry_after(wait.ceil().max(1.0) as u64));
            }
            caller.tokens -= 1.0;
        }
        if !stream {
            return Ok(None);
        }
        if self.limits.max_streams > 0 && caller.streams >= self.limits.max_streams {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "at most {} streams may be open at once per caller",
                    self.limits.max_streams
                ),
            )
            .with_retry_after(1));
        }
        caller.streams += 1;
        Ok(Some(Slot {
            callers: self.callers.clone(),
            key,
        }))
    }

    /// Whether requests are charged at all (a rate is set).
    pub fn charges_requests(&self) -> bool {
        self.limits.rate > 0.0
    }

    /// Charges one request to the caller `principal` at `peer` before the request reaches
    /// the service (the server's HTTP layer, and requests refused for bad or missing
    /// credentials): `ResourceExhausted` once the caller is over its rate, so requests that
    /// never become a call are limited like any other. Returns the caller's key.
    pub fn charge(
        &self,
        principal: Principal,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<Arc<str>, A2aError> {
        let mut cx = CallContext::new().with_principal(principal);
        cx.peer = peer;
        self.admit(&cx, false)?;
        Ok(Self::key(&cx))
    }

    fn hold(stream: EventStream, slot: Option<Slot>) -> EventStream {
        match slot {
            None => stream,
            Some(slot) => stream
                .map(move |item| {
                    let _keep = &slot;
                    item
                })
                .boxed(),
        }
    }
}

/// Every call is admitted first (a token, and a stream slot for a streaming call); a stream
/// holds its slot until it ends or its client leaves.
#[async_trait::async_trait]
impl AroundCall for Limited {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        let slot = self.admit(cx, req.operation().is_streaming())?;
        let reply = req.call(&*self.inner, cx).await?;
        Ok(reply.map_stream(|stream| Self::hold(stream, slot)))
    }
}

#[cfg(test)]
mod tests;
