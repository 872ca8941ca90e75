//! The publish pipeline: [`EventBus::publish`](trident_core::store::EventBus::publish)
//! encodes on the caller's task and queues the message; one publisher task sends the queue in
//! order (so each task's messages leave in the order its writer published them) and keeps up to
//! `max_in_flight` JetStream acks outstanding at once. A message is retried, with the same
//! `Nats-Msg-Id` (the stream drops a copy it already holds), until it is acked or its deadline
//! passes; then it is dropped with a warning, and the readers fill the gap from the store.
//!
//! Memory and delay are bounded by a [`Budget`] of bytes and of messages: a message holds its
//! share from the moment it is queued until it is acked or dropped, and a publisher that finds
//! the budget spent waits for it (back-pressure on the writers), at most until its deadline.
//! The bound on messages keeps the queue shorter than what can be sent before the deadlines:
//! a writer that outpaces NATS waits instead of queueing messages that would expire unsent.

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::context::{Context, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;

/// What messages queued or awaiting their ack may hold at once.
#[derive(Debug)]
pub(crate) struct Budget {
    bytes: Arc<Semaphore>,
    bytes_total: u32,
    messages: Arc<Semaphore>,
    messages_total: u32,
}

/// A message's share of the [`Budget`], given back when dropped.
pub(crate) struct Share {
    _bytes: OwnedSemaphorePermit,
    _message: OwnedSemaphorePermit,
}

impl Budget {
    pub(crate) fn new(bytes: usize, messages: usize) -> Self {
        let bytes_total = u32::try_from(bytes).unwrap_or(u32::MAX).max(1);
        let messages_total = u32::try_from(messages).unwrap_or(u32::MAX).max(1);
        Self {
            bytes: Arc::new(Semaphore::new(bytes_total as usize)),
            bytes_total,
            messages: Arc::new(Semaphore::new(messages_total as usize)),
            messages_total,
        }
    }

    /// A share for a message of `len` bytes, waiting for it until `deadline`.
    pub(crate) async fn take(&self, len: usize, deadline: Instant) -> Option<Share> {
        let len = u32::try_from(len).unwrap_or(u32::MAX).min(self.bytes_total);
        tokio::time::timeout_at(deadline, async {
            let message = self.messages.clone().acquire_owned().await.ok()?;
            let bytes = self.bytes.clone().acquire_many_owned(len).await.ok()?;
            Some(Share {
                _bytes: bytes,
                _message: message,
            })
        })
        .await
        .ok()
        .flatten()
    }

    /// Waits until every share taken before is given back.
    pub(crate) async fn drained(&self) {
        let _messages = self.messages.acquire_many(self.messages_total).await;
        let _bytes = self.bytes.acquire_many(self.bytes_total).await;
    }
}

/// A message waiting to be published.
pub(crate) struct Outgoing {
    pub(crate) subject: String,
    /// `Nats-Msg-Id`: `{hash}:{first}-{last}`.
    pub(crate) id: String,
    pub(crate) payload: Bytes,
    /// Events it carries (for the counts).
    pub(crate) events: u64,
    /// Past this it is dropped.
    pub(crate) deadline: Instant,
    /// Its share of the budget, given back when it is done.
    pub(crate) _budget: Share,
}

/// Counts kept by the bus (see [`crate::BusStats`]).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) published_messages: AtomicU64,
    pub(crate) published_events: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) dropped_events: AtomicU64,
    pub(crate) retries: AtomicU64,
    /// Messages of this bus that came back to one of its watches (the last message read when
    /// a watch starts; live ones never do, with `no_echo`).
    pub(crate) own_messages: AtomicU64,
    /// When a drop was last logged (ms since `epoch`), so an outage logs once a second.
    last_drop_log: AtomicU64,
    epoch: std::sync::OnceLock<Instant>,
}

impl Counters {
    /// Counts `events` dropped and logs it, at most once a second.
    pub(crate) fn dropped(&self, events: u64, reason: &dyn std::fmt::Display) {
        let total = self.dropped_events.fetch_add(events, Ordering::Relaxed) + events;
        let epoch = *self.epoch.get_or_init(Instant::now);
        let now = u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.last_drop_log.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= 1000)
            && self
                .last_drop_log
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                dropped_events_total = total,
                "event bus: events not published ({reason}); readers catch up from the store"
            );
        }
    }
}

/// Runs the pipeline until every sender of `queue` is gone and the last ack is in.
pub(crate) async fn run(
    js: Context,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    max_in_flight: usize,
    attempt: Duration,
    counters: Arc<Counters>,
    stream_missing: Arc<Notify>,
) {
    let max_in_flight = max_in_flight.max(1);
    let mut in_flight = FuturesUnordered::new();
    loop {
        tokio::select! {
            biased;
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
            next = queue.recv(), if in_flight.len() < max_in_flight => match next {
                Some(message) => {
                    let js = js.clone();
                    let counters = counters.clone();
                    let stream_missing = stream_missing.clone();
                    // Sent here, in queue order; only the wait for its ack runs beside the
                    // others.
                    if let Some(ack) = send(&js, &message, &counters).await {
                        in_flight.push(confirm(
                            js,
                            message,
                            ack,
                            attempt,
                            counters,
                            stream_missing,
                        ));
                    }
                }
                None => break,
            },
        }
    }
    while in_flight.next().await.is_some() {}
}

/// Hands `message` to the NATS client (which writes it in the order it was handed); `None`
/// when it was dropped.
async fn send(
    js: &Context,
    message: &Outgoing,
    counters: &Counters,
) -> Option<async_nats::jetstream::context::PublishAckFuture> {
    let publish = PublishMessage::build()
        .payload(message.payload.clone())
        .message_id(&message.id);
    match tokio::time::timeout_at(
        message.deadline,
        js.send_publish(message.subject.clone(), publish),
    )
    .await
    {
        Ok(Ok(ack)) => Some(ack),
        Ok(Err(e)) => {
            counters.dropped(message.events, &e);
            None
        }
        Err(_) => {
            counters.dropped(message.events, &"timed out queueing for the connection");
            None
        }
    }
}

/// Waits for the ack of `message`, publishing it again (same `Nats-Msg-Id`) while it is not
/// acked and its deadline has not passed.
///
/// An attempt whose ack does not come within `attempt` is retried too: when the stream is
/// missing but a watch subscribes to the subject, the server answers nothing (a "no
/// responders" status comes only when nobody at all listens), so silence may mean a stream
/// to make again (`stream_missing`) rather than a slow one.
async fn confirm(
    js: Context,
    message: Outgoing,
    mut ack: async_nats::jetstream::context::PublishAckFuture,
    attempt: Duration,
    counters: Arc<Counters>,
    stream_missing: Arc<Notify>,
) {
    let mut backoff = Duration::from_millis(50);
    loop {
        let until = message.deadline.min(Instant::now() + attempt);
        let error: Box<dyn std::fmt::Display + Send> =
            match tokio::time::timeout_at(until, ack.into_future()).await {
                Ok(Ok(reply)) => {
                    if reply.duplicate {
                        counters.duplicates.fetch_add(1, Ordering::Relaxed);
                    }
                    counters.published_messages.fetch_add(1, Ordering::Relaxed);
                    counters
                        .published_events
                        .fetch_add(message.events, Ordering::Relaxed);
                    return;
                }
                Ok(Err(e)) => {
                    if e.kind() == PublishErrorKind::StreamNotFound {
                        // The server lost the stream (a memory stream does not outlive a
                        // restart).
                        stream_missing.notify_one();
                    } else {
                        // Back off before trying again (an error comes back at once).
                        let wait =
                            backoff.min(message.deadline.saturating_duration_since(Instant::now()));
                        tokio::time::sleep(wait).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                    Box::new(e)
                }
                Err(_) => {
                    stream_missing.notify_one();
                    Box::new("no ack")
                }
            };
        if Instant::now() >= message.deadline {
            counters.dropped(message.events, &error);
            return;
        }
        counters.retries.fetch_add(1, Ordering::Relaxed);
        match send(&js, &message, &counters).await {
            Some(next) => ack = next,
            None => return,
        }
    }
}
