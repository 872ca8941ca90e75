//! Webhook calls: what one is ([`WebhookRequest`], its headers and body shape per protocol
//! generation), what sends it ([`WebhookTransport`]), how a failed one is retried
//! ([`send_with_retry`]) and how many are in flight ([`Slots`]). The per-task worker that
//! decides which events to send is the live task's (`engine/live/outbox.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use trident_core::A2aError;
use trident_proto as pb;

use super::config::{PushConcurrency, RetryPolicy};
use super::policy::{Destination, webhook_destination};
use crate::store::Generation;

/// One webhook call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRequest {
    /// The configured URL.
    pub url: String,
    /// Headers to send (name, value).
    pub headers: Vec<(&'static str, String)>,
    /// The ProtoJSON body (a `StreamResponse`).
    pub body: Vec<u8>,
    /// The task the event belongs to.
    pub task_id: String,
    /// The event's sequence number in the task's log (for receivers that sign-check or
    /// deduplicate).
    pub seq: u64,
}

/// Why a webhook call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The receiver answered with a non-2xx status.
    #[error("webhook answered HTTP {0}")]
    Status(u16),
    /// The request did not complete (connect, timeout, TLS, ...).
    #[error("webhook unreachable: {0}")]
    Transport(String),
    /// This process could not make the call: it ran out of something of its own (file
    /// descriptors, `EMFILE`/`ENFILE`; memory; local ports). Not the webhook's failure: the
    /// engine retries it with backoff for as long as it lasts, without counting an attempt,
    /// so local exhaustion never makes it give up an event.
    #[error("no local resources for the webhook call: {0}")]
    Local(String),
}

/// Sends webhook requests. The HTTP implementation lives in `trident-rest`; the engine only
/// decides what to send, when, and how often to retry.
#[async_trait::async_trait]
pub trait WebhookTransport: Send + Sync + 'static {
    /// POSTs one request; `Ok` on any 2xx.
    async fn post(&self, request: &WebhookRequest) -> Result<(), WebhookError>;
}

/// Writes a task as the body of an A2A v0.3 push notification (v0.3 POSTs the task itself, in
/// its JSON-RPC JSON: `kind: "task"`, lower-case states). Chosen by the server builder
/// ([`EngineBuilder::v03_push_body`](super::EngineBuilder::v03_push_body)), so the engine
/// needs no v0.3 model.
pub type V03TaskBody = fn(&pb::Task) -> Result<Vec<u8>, A2aError>;

/// The header naming a notification: `A2A-Notification-Id: {taskId}:{seq}`. Delivery is
/// at-least-once (a retry, or another process resuming a task's outbox after a crash, sends an
/// event again); the id is the same every time an event is sent, so receivers deduplicate on
/// it. Neither the spec nor the official SDKs name such a header; this follows 1.0's
/// unprefixed `A2A-` names. For a v0.3 configuration (sent the task itself, once per batch of
/// events) `seq` is the last event the task includes.
pub const NOTIFICATION_ID_HEADER: &str = "a2a-notification-id";

/// Builds the request for one event and configuration created through `generation`: 1.0's
/// `application/a2a+json` with both token headers, or v0.3's `application/json` with
/// `X-A2A-Notification-Token` (what the v0.3 SDKs' senders write); both with
/// [`NOTIFICATION_ID_HEADER`].
pub fn webhook_request(
    config: &pb::TaskPushNotificationConfig,
    generation: Generation,
    seq: u64,
    body: Vec<u8>,
) -> WebhookRequest {
    let content_type = match generation {
        Generation::V1 => "application/a2a+json",
        Generation::V03 => "application/json",
    };
    let mut headers = vec![
        ("content-type", content_type.to_owned()),
        (NOTIFICATION_ID_HEADER, format!("{}:{seq}", config.task_id)),
    ];
    if let Some(auth) = config
        .authentication
        .as_ref()
        .filter(|a| !a.scheme.is_empty())
    {
        let value = if auth.credentials.is_empty() {
            auth.scheme.clone()
        } else {
            format!("{} {}", auth.scheme, auth.credentials)
        };
        headers.push(("authorization", value));
    }
    if !config.token.is_empty() {
        headers.push(("x-a2a-notification-token", config.token.clone()));
        if generation == Generation::V1 {
            headers.push(("a2a-notification-token", config.token.clone()));
        }
    }
    WebhookRequest {
        url: config.url.clone(),
        headers,
        body,
        task_id: config.task_id.clone(),
        seq,
    }
}

/// POSTs `request` in a delivery slot ([`Slots`]), retrying as `policy` says. A call that
/// failed for want of local resources ([`WebhookError::Local`]) is retried with backoff
/// without counting as an attempt: only the webhook's own failures make it give up.
pub(crate) async fn send_with_retry(
    slots: &Slots,
    transport: &dyn WebhookTransport,
    request: &WebhookRequest,
    policy: RetryPolicy,
) {
    let mut backoff = policy.initial_backoff;
    let mut local_backoff = policy.initial_backoff;
    let mut attempt = 0u32;
    loop {
        let result = {
            let _slot = slots.acquire(&request.url).await;
            transport.post(request).await
        };
        match result {
            Ok(()) => return,
            Err(WebhookError::Local(e)) => {
                tracing::warn!(url = %request.url, error = %e, "webhook call not made: this process is out of resources; retrying");
                tokio::time::sleep(local_backoff).await;
                local_backoff = (local_backoff * 2).min(policy.max_backoff);
            }
            Err(e) => {
                attempt += 1;
                if attempt >= policy.attempts.max(1) {
                    tracing::warn!(url = %request.url, attempt, error = %e, "webhook failed, giving up on this event");
                    return;
                }
                tracing::debug!(url = %request.url, attempt, error = %e, "webhook failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(policy.max_backoff);
            }
        }
    }
}

/// Which slots a call takes: its URL's host and port, as [`webhook_destination`] reads
/// them.
type HostKey = Option<(Destination, u16)>;

/// Webhook calls in flight ([`PushConcurrency`]): a call takes a slot of its host (host and
/// port) first, then a global one, each in arrival order, so calls that hang on one host
/// hold at most `per_host` of the global slots and other hosts' calls still go out.
pub(crate) struct Slots {
    global: Arc<Semaphore>,
    per_host: usize,
    /// Hosts with calls in flight or waiting (an entry goes with its last slot).
    hosts: std::sync::Mutex<HashMap<HostKey, Arc<Semaphore>>>,
}

impl Slots {
    pub(crate) fn new(limits: PushConcurrency) -> Self {
        Self {
            global: Arc::new(Semaphore::new(limits.global.max(1))),
            per_host: limits.per_host.max(1),
            hosts: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a slot for a call to `url`.
    async fn acquire(&self, url: &str) -> Slot<'_> {
        // The host as the policy and the HTTP client read it (a URL that names none shares
        // one set of slots; its call fails anyway).
        let key = webhook_destination(url).ok();
        let host = crate::store::lock_std(&self.hosts)
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_host)))
            .clone();
        let mut slot = Slot {
            slots: self,
            key,
            host,
            permits: None,
        };
        // The semaphores are never closed.
        let host_permit = slot.host.clone().acquire_owned().await.ok();
        let global_permit = self.global.clone().acquire_owned().await.ok();
        slot.permits = Some((host_permit, global_permit));
        slot
    }
}

/// A call's place in [`Slots`]; dropping it frees the place.
struct Slot<'a> {
    slots: &'a Slots,
    key: HostKey,
    host: Arc<Semaphore>,
    permits: Option<(Option<OwnedSemaphorePermit>, Option<OwnedSemaphorePermit>)>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.permits = None;
        let mut hosts = crate::store::lock_std(&self.slots.hosts);
        // Nobody else holds or waits for this host's semaphore: the map's and ours.
        if Arc::strong_count(&self.host) == 2
            && hosts
                .get(&self.key)
                .is_some_and(|h| Arc::ptr_eq(h, &self.host))
        {
            hosts.remove(&self.key);
        }
    }
}
