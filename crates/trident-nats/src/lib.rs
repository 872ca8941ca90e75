//! Trident's cluster event bus on NATS JetStream: [`NatsBus`], an
//! [`EventBus`].
//!
//! Replicas of `trident serve --store postgres://…` share one database; the one that runs a
//! task commits its events there and then publishes them here, and a replica serving a stream
//! of that task (it watches the task) gets them as [`Notice::Events`] without reading the
//! database. PostgreSQL stays the one durable log: whatever the bus loses, the engine reads
//! back from it by sequence number. So the bus is built for live delivery, cheaply, and says
//! when it may have lost something ([`Notice::Resync`]) rather than trying never to.
//!
//! # Subjects and messages
//! A task's messages go to `{namespace}.ev.{hash}`, where `hash` is a stable 64-bit FNV-1a
//! hash of (tenant, owner, task id) in hex: ids never appear in subjects (they may hold `.`,
//! `*`, `>` or spaces), and every message carries the scope and id itself, so the receiver
//! drops another task's message whose hash collides. One publish is one message (more only
//! when it exceeds the server's `max_payload`): a small protobuf carrying the generated
//! `StreamResponse`s with their sequence numbers (see `wire.rs`). An event too large for any
//! message travels as its sequence number alone, and arrives as [`Notice::Committed`] (the
//! reader reads it from the store). The namespace (default
//! `trident`) also names the stream, `{namespace}_events`: clusters (or database schemas)
//! sharing one NATS server each take their own.
//!
//! # Publishing: JetStream, pipelined
//! Messages are published through JetStream with `Nats-Msg-Id: {hash}:{first}-{last}`: a
//! message whose ack fails or is not back within a quarter of the publish timeout is sent
//! again, and the stream stores it once. [`EventBus::publish`] encodes and queues; one
//! publisher task sends the queue in order (a task's messages leave in the order its writer
//! published them) and keeps up to [`NatsOptions::max_in_flight`] acks outstanding, so a
//! writer never waits a round trip per event. Memory is bounded by
//! [`NatsOptions::max_pending_bytes`] and [`NatsOptions::max_pending_messages`] (a full budget
//! makes `publish` wait, at most until the publish deadline); a message not acked within
//! [`NatsOptions::publish_timeout`] of its publish is dropped with a warning (the readers fill
//! the gap from the store).
//!
//! # Watching: core subscriptions, not JetStream consumers
//! A watch is a core NATS subscription on the task's subject (a subject a stream captures is
//! still delivered to core subscribers). An ordered JetStream consumer per watched task would
//! replay what a reader missed while disconnected, but the store already does that, and it
//! costs a JetStream API round trip and server-side consumer state per watch (the server keeps
//! and tracks every consumer; a replica watching thousands of tasks would hold thousands),
//! where a subscription is one line to the server and a routing-table entry. The hand-run
//! `throughput` test measures both (release build, local nats-server 2.9, 2 shared cores):
//! an ordered consumer took 0.9–1.1 ms each to create and start, a bare subscription 15–30 µs,
//! and a whole watch (subscription, flush, the last message) 50–100 µs. What a subscription
//! misses is covered as follows:
//! - a connection lost and regained: the client restores the subscriptions, and the feed gets
//!   [`Notice::Resync`] (as it does when the client drops messages of a subscriber that fell
//!   behind, and when the feed itself is full);
//! - a message published before the server has the new subscription: once it has it (a
//!   flush), the watch reads the stream's last message for the task (a direct get), so
//!   `watch` followed by a read of the log misses nothing; that message may hold events the
//!   reader already has;
//! - duplicates (a retried publish reaches subscribers again, JetStream only deduplicates what
//!   it stores) and late retries: a watch forwards only events after the last sequence number
//!   it forwarded.
//!
//! A process never gets its own messages back: the connection is made with `no_echo`, and
//! each message names the bus that published it (for the last message read at watch time).
//!
//! # The stream: memory, one message per task, a minute
//! The stream exists for the ack, the deduplication window and the last message of each task;
//! it is not a log. So it is in **memory** (no disk writes on the path of every event; a NATS
//! restart loses it, and the bus creates it again), keeps **one message per subject**, and
//! messages expire after [`NatsOptions::max_age`] (default 60 s) with a duplicate window of
//! [`NatsOptions::duplicate_window`] (30 s, longer than a publish's retries) and at most
//! [`NatsOptions::max_stream_bytes`] in all.
//!
//! # Connection
//! [`NatsBus::connect`] takes `nats://host:port` (several, comma-separated, for a NATS
//! cluster); `nats://user:password@host` and `nats://token@host` authenticate, and `tls://`
//! requires TLS (with the system's root certificates). The client pings a silent server every
//! [`NatsOptions::ping_interval`] (5 s), so that a connection the server closed while the
//! network was partitioned (the replica heard nothing of it) is found dead within seconds of
//! the heal, even on a replica that only watches and so sends nothing else; until then its
//! watches would get nothing (readers still sweep the log).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_nats::jetstream;
use async_nats::jetstream::stream::{DiscardPolicy, StorageType};
use tokio::sync::{Notify, mpsc};
use trident_core::store::{BusWatch, EventBus, LoggedEvent, Notice, NoticeFeed, Scope};

mod feed;
mod publisher;
mod watch;
mod wire;

#[cfg(test)]
mod tests;

use feed::FeedTx;
use publisher::{Counters, Outgoing};

/// Room left in a NATS message for its headers (`Nats-Msg-Id`) under `max_payload`.
const HEADER_ROOM: usize = 512;

/// Settings of a [`NatsBus`]. The defaults suit a cluster on one NATS server or cluster.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    namespace: String,
    name: Option<String>,
    publish_timeout: Duration,
    max_pending_bytes: usize,
    max_pending_messages: usize,
    max_in_flight: usize,
    feed_capacity: usize,
    subscription_capacity: usize,
    max_age: Duration,
    duplicate_window: Duration,
    max_stream_bytes: i64,
    connect_timeout: Duration,
    ping_interval: Duration,
}

impl Default for NatsOptions {
    fn default() -> Self {
        Self {
            namespace: "trident".into(),
            name: None,
            publish_timeout: Duration::from_secs(5),
            max_pending_bytes: 64 << 20,
            max_pending_messages: 8192,
            max_in_flight: 1024,
            feed_capacity: 16_384,
            subscription_capacity: 4096,
            max_age: Duration::from_secs(60),
            duplicate_window: Duration::from_secs(30),
            max_stream_bytes: 64 << 20,
            connect_timeout: Duration::from_secs(5),
            ping_interval: Duration::from_secs(5),
        }
    }
}

impl NatsOptions {
    /// Default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// The subject prefix and stream name stem (`{namespace}.ev.*`, `{namespace}_events`):
    /// ASCII letters, digits, `-` and `_`, at most 32. Default `trident`. Clusters sharing a
    /// NATS server each need their own.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The connection's name, as NATS monitoring shows it.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// How long a publish may take, from the call to its ack, retries included; past it the
    /// events are dropped (logged; readers read them from the store). Default 5 s.
    pub fn publish_timeout(mut self, timeout: Duration) -> Self {
        self.publish_timeout = timeout;
        self
    }

    /// Bytes of messages queued or awaiting their ack at once (at most 4 GiB); a publish
    /// beyond waits. Default 64 MiB.
    pub fn max_pending_bytes(mut self, bytes: usize) -> Self {
        self.max_pending_bytes = bytes;
        self
    }

    /// Messages queued or awaiting their ack at once; a publish beyond waits. Keeps the queue
    /// shorter than what NATS takes before the publish deadline. Default 8192.
    pub fn max_pending_messages(mut self, n: usize) -> Self {
        self.max_pending_messages = n;
        self
    }

    /// Acks awaited at once. Default 1024.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n;
        self
    }

    /// Notices the feed holds before it turns further ones into one [`Notice::Resync`].
    /// Default 16 384.
    pub fn feed_capacity(mut self, n: usize) -> Self {
        self.feed_capacity = n;
        self
    }

    /// Messages one watch's subscription holds before the client drops them (which the feed
    /// reports as a [`Notice::Resync`]). Default 4096.
    pub fn subscription_capacity(mut self, n: usize) -> Self {
        self.subscription_capacity = n;
        self
    }

    /// How long the stream keeps a message. Default 60 s.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// How long the stream remembers a `Nats-Msg-Id` to drop a republished copy; at most
    /// `max_age`. Default 30 s.
    pub fn duplicate_window(mut self, window: Duration) -> Self {
        self.duplicate_window = window;
        self
    }

    /// Bytes the stream holds at most (the oldest go first). Default 64 MiB.
    pub fn max_stream_bytes(mut self, bytes: i64) -> Self {
        self.max_stream_bytes = bytes;
        self
    }

    /// How long connecting to one server may take. Default 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long the connection may stay silent (nothing from the server) before the client
    /// pings the server; when a ping is due with two still unanswered, the client counts the
    /// connection lost and reconnects (readers then resync). Default 5 s. This is how a
    /// replica learns that the server closed its connection during a network partition
    /// (nothing of that reached the replica): otherwise it hears of it only when it next
    /// publishes or watches, and until then its watches get nothing from the bus (with the
    /// client's default, a minute).
    pub fn ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval;
        self
    }

    fn check(&self) -> Result<(), NatsError> {
        let ns = &self.namespace;
        if ns.is_empty()
            || ns.len() > 32
            || !ns
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(NatsError::Namespace(ns.clone()));
        }
        let setting = |what: &'static str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(NatsError::Setting(what))
            }
        };
        setting(
            "publish_timeout must be positive",
            !self.publish_timeout.is_zero(),
        )?;
        setting("max_age must be positive", !self.max_age.is_zero())?;
        setting(
            "ping_interval must be positive",
            !self.ping_interval.is_zero(),
        )?;
        setting(
            "duplicate_window must be positive and at most max_age",
            !self.duplicate_window.is_zero() && self.duplicate_window <= self.max_age,
        )?;
        setting(
            "max_pending_bytes must be at least 64 KiB",
            self.max_pending_bytes >= 64 << 10,
        )?;
        setting(
            "max_stream_bytes must be at least 1 MiB",
            self.max_stream_bytes >= 1 << 20,
        )
    }

    fn stream_config(&self) -> jetstream::stream::Config {
        jetstream::stream::Config {
            name: stream_name(&self.namespace),
            description: Some(
                "Trident cluster live events (the durable log is the shared store)".into(),
            ),
            subjects: vec![format!("{}.ev.*", self.namespace)],
            storage: StorageType::Memory,
            max_messages_per_subject: 1,
            max_age: self.max_age,
            duplicate_window: self.duplicate_window,
            max_bytes: self.max_stream_bytes,
            discard: DiscardPolicy::Old,
            allow_direct: true,
            num_replicas: 1,
            ..Default::default()
        }
    }
}

fn stream_name(namespace: &str) -> String {
    format!("{namespace}_events")
}

/// Why a [`NatsBus`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The namespace is not usable in subjects and stream names.
    #[error(
        "NATS namespace {0:?}: use 1 to 32 ASCII letters, digits, '-' or '_' (it prefixes subjects and names the stream)"
    )]
    Namespace(String),
    /// A setting is out of range.
    #[error("NATS bus setting: {0}")]
    Setting(&'static str),
    /// The URL is not a NATS server address.
    #[error("NATS URL {url:?}: {source}")]
    Url {
        /// The URL as given, credentials removed.
        url: String,
        /// Why it was refused.
        #[source]
        source: std::io::Error,
    },
    /// No server could be reached, or it refused the connection.
    #[error("connecting to NATS at {url}: {source}")]
    Connect {
        /// The URL as given, credentials removed.
        url: String,
        /// The client's error.
        #[source]
        source: async_nats::ConnectError,
    },
    /// The stream could not be created or brought to this bus's configuration (JetStream off
    /// on the server, a stream of that name stored on disk, limits of the account).
    #[error("NATS JetStream stream {stream}: {source}")]
    Stream {
        /// The stream's name.
        stream: String,
        /// The server's answer.
        #[source]
        source: jetstream::context::CreateStreamError,
    },
}

/// Counts since the bus was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Messages acked by the stream (including those it already held).
    pub published_messages: u64,
    /// Events in those messages.
    pub published_events: u64,
    /// Acked messages the stream already held (a retried publish).
    pub duplicates: u64,
    /// Events dropped (not acked in time, or the budget spent until the deadline).
    pub dropped_events: u64,
    /// Messages published again after a failed or missing ack.
    pub retries: u64,
}

/// Everything the bus's tasks share.
pub(crate) struct Shared {
    pub(crate) client: async_nats::Client,
    pub(crate) stream: jetstream::stream::Stream<()>,
    pub(crate) feed: Arc<FeedTx>,
    pub(crate) watches: watch::Registry,
    /// This bus's id in the messages it publishes.
    pub(crate) origin: Vec<u8>,
    namespace: String,
    runtime: tokio::runtime::Handle,
    queue: mpsc::UnboundedSender<Outgoing>,
    budget: publisher::Budget,
    publish_timeout: Duration,
    pub(crate) counters: Arc<Counters>,
    feed_rx: Mutex<Option<NoticeFeed>>,
    /// Wakes `keep_stream`, which then finds the bus gone when this is dropped.
    stream_missing: Arc<Notify>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stream_missing.notify_one();
    }
}

impl Shared {
    pub(crate) fn subject(&self, scope: &Scope, task_id: &str) -> String {
        subject(&self.namespace, wire::task_hash(scope, task_id))
    }
}

fn subject(namespace: &str, hash: u64) -> String {
    format!("{namespace}.ev.{hash:016x}")
}

/// The live-event bus of a cluster, on NATS JetStream (see the crate docs).
///
/// Cheap to share behind an `Arc<dyn EventBus>`; dropping the last handle lets the queued
/// publishes finish (each within its deadline) and closes the connection.
pub struct NatsBus {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for NatsBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBus")
            .field("namespace", &self.shared.namespace)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// What the connection's event callback tells the bus.
struct Link {
    feed: Arc<FeedTx>,
    /// The connection dropped and has not come back yet.
    lost: AtomicBool,
    /// Asks for the stream to be made again (after a reconnect: the server may have
    /// restarted without it).
    stream_missing: Arc<Notify>,
}

impl Link {
    fn on(&self, event: async_nats::Event) {
        use async_nats::Event;
        match event {
            Event::Disconnected => {
                self.lost.store(true, Ordering::Release);
                tracing::warn!("event bus: NATS connection lost; reconnecting");
            }
            Event::Connected => {
                if self.lost.swap(false, Ordering::AcqRel) {
                    tracing::info!("event bus: NATS connection back; readers resync");
                    self.feed.resync();
                    self.stream_missing.notify_one();
                }
            }
            Event::SlowConsumer(sid) => {
                tracing::warn!(
                    sid,
                    "event bus: a watch fell behind and the client dropped its messages; readers resync"
                );
                self.feed.resync();
            }
            Event::Closed => tracing::info!("event bus: NATS connection closed"),
            other => tracing::info!(event = %other, "event bus: NATS"),
        }
    }
}

/// The URL without its credentials, for messages.
fn redact(url: &str) -> String {
    url.split(',')
        .map(|u| match (u.find("://"), u.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}{}", &u[..scheme + 3], &u[at + 1..])
            }
            _ => u.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Credentials a URL carries: `user:password@` or `token@`.
enum Credentials {
    UserPassword(String, String),
    Token(String),
}

/// `%XX` escapes of a URL's user or password decoded (as the URL parser leaves them).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            // Two hex digits: at most 255.
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The servers of `url` (comma-separated) and the credentials it carries.
fn servers(url: &str) -> Result<(Vec<async_nats::ServerAddr>, Option<Credentials>), NatsError> {
    let refused = |source| NatsError::Url {
        url: redact(url),
        source,
    };
    let mut addrs = Vec::new();
    let mut credentials = None;
    for part in url.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let addr: async_nats::ServerAddr = part.parse().map_err(refused)?;
        if let Some(user) = addr.username() {
            let user = percent_decoded(user);
            credentials = Some(match addr.password() {
                Some(password) => Credentials::UserPassword(user, percent_decoded(password)),
                None => Credentials::Token(user),
            });
        }
        addrs.push(addr);
    }
    if addrs.is_empty() {
        return Err(refused(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no server address",
        )));
    }
    Ok((addrs, credentials))
}

impl NatsBus {
    /// Connects to NATS at `url` (see the crate docs for its forms), creates the stream or
    /// brings an existing one to these settings, and starts the publisher.
    pub async fn connect(url: &str, options: NatsOptions) -> Result<NatsBus, NatsError> {
        options.check()?;
        let (addrs, credentials) = servers(url)?;
        let (feed, feed_rx) = FeedTx::new(options.feed_capacity);
        let feed = Arc::new(feed);
        let stream_missing = Arc::new(Notify::new());
        let link = Arc::new(Link {
            feed: feed.clone(),
            lost: AtomicBool::new(false),
            stream_missing: stream_missing.clone(),
        });
        let mut connect = async_nats::ConnectOptions::new()
            .no_echo()
            .connection_timeout(options.connect_timeout)
            .ping_interval(options.ping_interval)
            .subscription_capacity(options.subscription_capacity.max(1))
            .name(
                options
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("trident {}", options.namespace)),
            )
            .event_callback(move |event| {
                let link = link.clone();
                async move { link.on(event) }
            });
        match credentials {
            Some(Credentials::UserPassword(user, password)) => {
                connect = connect.user_and_password(user, password);
            }
            Some(Credentials::Token(token)) => connect = connect.token(token),
            None => {}
        }
        let client = connect
            .connect(addrs)
            .await
            .map_err(|source| NatsError::Connect {
                url: redact(url),
                source,
            })?;
        let max_in_flight = options.max_in_flight.max(1);
        let js = jetstream::ContextBuilder::new()
            .timeout(options.publish_timeout)
            // Above the publisher's own bound, so that a publish never waits for a permit
            // held by an ack the publisher is not polling.
            .max_ack_inflight(max_in_flight + 64)
            .backpressure_on_inflight(true)
            .build(client.clone());
        let config = options.stream_config();
        js.create_or_update_stream(config.clone())
            .await
            .map_err(|source| NatsError::Stream {
                stream: config.name.clone(),
                source,
            })?;
        let stream = js
            .get_stream_no_info(&config.name)
            .await
            // Only refused for a name `check` already refused.
            .map_err(|_| NatsError::Namespace(options.namespace.clone()))?;
        let (queue, queue_rx) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        let runtime = tokio::runtime::Handle::current();
        runtime.spawn(publisher::run(
            js.clone(),
            queue_rx,
            max_in_flight,
            // An ack not back within a quarter of the deadline is sent for again.
            (options.publish_timeout / 4).max(Duration::from_millis(100)),
            counters.clone(),
            stream_missing.clone(),
        ));
        let shared = Arc::new(Shared {
            client,
            stream,
            feed,
            watches: Arc::new(Mutex::new(HashMap::new())),
            origin: uuid::Uuid::new_v4().as_bytes().to_vec(),
            namespace: options.namespace.clone(),
            runtime: runtime.clone(),
            queue,
            budget: publisher::Budget::new(options.max_pending_bytes, options.max_pending_messages),
            publish_timeout: options.publish_timeout,
            counters,
            feed_rx: Mutex::new(Some(feed_rx)),
            stream_missing: stream_missing.clone(),
        });
        runtime.spawn(keep_stream(
            Arc::downgrade(&shared),
            js,
            config,
            stream_missing,
        ));
        Ok(NatsBus { shared })
    }

    /// The subject a task's events are published on.
    pub fn subject(&self, scope: &Scope, task_id: &str) -> String {
        self.shared.subject(scope, task_id)
    }

    /// The JetStream stream's name.
    pub fn stream_name(&self) -> String {
        stream_name(&self.shared.namespace)
    }

    /// Counts since the bus was made.
    pub fn stats(&self) -> BusStats {
        let c = &self.shared.counters;
        BusStats {
            published_messages: c.published_messages.load(Ordering::Relaxed),
            published_events: c.published_events.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            dropped_events: c.dropped_events.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
        }
    }

    /// Waits until every publish made before the call is acked or dropped (for a graceful
    /// shutdown, and tests).
    pub async fn flush(&self) {
        // Every queued or unacked message holds part of the budget.
        self.shared.budget.drained().await;
    }
}

/// Makes the stream again whenever the publisher finds it missing or the connection comes
/// back, until the bus is dropped.
async fn keep_stream(
    shared: Weak<Shared>,
    js: jetstream::Context,
    config: jetstream::stream::Config,
    missing: Arc<Notify>,
) {
    loop {
        missing.notified().await;
        // The bus is gone: stop (holding `js` would keep the connection open).
        if shared.upgrade().is_none() {
            return;
        }
        let mut wait = Duration::from_millis(100);
        for _ in 0..10 {
            match js.create_or_update_stream(config.clone()).await {
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(stream = %config.name, error = %e, "event bus: cannot restore the stream");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
        }
        // Publishers that lack acks ask at every retry: once a second is enough (the request
        // is an update to the same settings when the stream is there).
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[async_trait::async_trait]
impl EventBus for NatsBus {
    async fn publish(&self, scope: &Scope, task_id: &str, events: &[LoggedEvent]) {
        if events.is_empty() {
            return;
        }
        let shared = &self.shared;
        let deadline = tokio::time::Instant::now() + shared.publish_timeout;
        let hash = wire::task_hash(scope, task_id);
        let subject = subject(&shared.namespace, hash);
        let limit = shared
            .client
            .max_payload()
            .saturating_sub(HEADER_ROOM)
            .max(4096);
        let parts = wire::encode(scope, task_id, &shared.origin, events, limit);
        let mut left = events.len() as u64;
        for part in parts {
            let Some(share) = shared.budget.take(part.payload.len(), deadline).await else {
                shared
                    .counters
                    .dropped(left, &"the publish queue stayed full until the deadline");
                return;
            };
            left = left.saturating_sub(part.events as u64);
            let message = Outgoing {
                subject: subject.clone(),
                id: format!("{hash:016x}:{}-{}", part.first, part.last),
                payload: part.payload,
                events: part.events as u64,
                deadline,
                _budget: share,
            };
            if shared.queue.send(message).is_err() {
                return;
            }
        }
    }

    fn watch(&self, scope: &Scope, task_id: &str) -> BusWatch {
        let _enter = self.shared.runtime.enter();
        Box::new(watch::watch(
            &self.shared,
            watch::Key {
                scope: scope.clone(),
                task_id: task_id.to_owned(),
            },
        ))
    }

    fn feed(&self) -> NoticeFeed {
        let taken = self
            .shared
            .feed_rx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        taken.unwrap_or_else(|| {
            tracing::error!("event bus: the feed was taken already; this one stays empty");
            Box::pin(futures::stream::empty::<Notice>())
        })
    }
}

#[cfg(test)]
impl NatsBus {
    /// Waits until the watch of this task has its subscription on the server.
    pub(crate) async fn until_watching(&self, scope: &Scope, task_id: &str) {
        let key = watch::Key {
            scope: scope.clone(),
            task_id: task_id.to_owned(),
        };
        let entry = self
            .shared
            .watches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .and_then(Weak::upgrade)
            .expect("the task is watched");
        let mut ready = entry.ready.clone();
        drop(entry);
        ready.wait_for(|r| *r).await.expect("the watch is running");
    }

    /// This bus's id in its messages.
    pub(crate) fn origin(&self) -> &[u8] {
        &self.shared.origin
    }
}
