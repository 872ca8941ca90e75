//! Push-notification delivery: one worker per task follows the task's event log with a cursor
//! (never blocking the task, never holding more than a batch) and POSTs each event, in order,
//! to every configured webhook, retrying with exponential backoff.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use trident_proto as pb;

use super::Inner;
use super::live::{Live, LiveGuard, Writer};
use crate::A2aError;
use crate::store::now_ms;

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
}

/// Sends webhook requests. The HTTP implementation lives in `trident-rest`; the engine only
/// decides what to send, when, and how often to retry.
#[async_trait::async_trait]
pub trait WebhookTransport: Send + Sync + 'static {
    /// POSTs one request; `Ok` on any 2xx.
    async fn post(&self, request: &WebhookRequest) -> Result<(), WebhookError>;
}

/// How often and how patiently to retry a failed delivery.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts per event and webhook, including the first.
    pub attempts: u32,
    /// Wait before the first retry; doubles after each.
    pub initial_backoff: Duration,
    /// Upper bound of the wait.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// Builds the request for one event and configuration.
pub fn webhook_request(
    config: &pb::TaskPushNotificationConfig,
    seq: u64,
    body: Vec<u8>,
) -> WebhookRequest {
    let mut headers = vec![("content-type", "application/a2a+json".to_owned())];
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
        headers.push(("a2a-notification-token", config.token.clone()));
    }
    WebhookRequest {
        url: config.url.clone(),
        headers,
        body,
        task_id: config.task_id.clone(),
        seq,
    }
}

/// Starts a worker after a commit if the task has webhooks and none is running. The worker
/// starts before the event just committed.
pub(crate) async fn kick(inner: &Arc<Inner>, live: &Arc<Live>, w: &mut Writer) {
    let from = w.record.last_seq.saturating_sub(1);
    kick_from(inner, live, w, from).await;
}

/// Starts a worker delivering events after `from`, if the task has webhooks and none runs.
pub(crate) async fn kick_from(inner: &Arc<Inner>, live: &Arc<Live>, w: &mut Writer, from: u64) {
    if w.pushing || inner.webhooks.is_none() {
        return;
    }
    if w.has_push.is_none() {
        let found = inner
            .stores
            .push
            .list(&live.scope, &live.task_id, None, 1)
            .await;
        w.has_push = Some(found.map(|(c, _)| !c.is_empty()).unwrap_or(true));
    }
    if w.has_push != Some(true) {
        return;
    }
    w.pushing = true;
    let guard = LiveGuard {
        inner: inner.clone(),
        live: live.clone(),
    };
    tokio::spawn(deliver_all(guard, from));
}

/// Delivers the task's events in order, from the stored delivery cursor (the outbox), while
/// this process holds the task's delivery claim. Another process takes over a claim that
/// lapsed, so delivery resumes after a crash; an event is marked delivered only after every
/// webhook has had it, so a crash can repeat an event but never skip one.
async fn deliver_all(guard: LiveGuard, from: u64) {
    let LiveGuard { inner, live } = &guard;
    let Some(transport) = inner.webhooks.clone() else {
        return;
    };
    let until = || now_ms().saturating_add(inner.lease_ttl_ms());
    let store = &inner.stores.push;
    let claimed = store
        .claim_delivery(&live.scope, &live.task_id, &inner.node, until(), from)
        .await;
    let mut cursor = match claimed {
        Ok(Some(cursor)) => cursor,
        Ok(None) => {
            // Another process delivers this task's notifications.
            live.writer.lock().await.pushing = false;
            return;
        }
        Err(e) => {
            tracing::warn!(task = %live.task_id, error = %e, "push delivery not started: cannot claim the outbox");
            live.writer.lock().await.pushing = false;
            return;
        }
    };
    let mut batch = VecDeque::new();
    loop {
        if let Err(e) = live.read_after(inner, cursor, &mut batch).await {
            tracing::warn!(task = %live.task_id, error = %e, "push delivery stopped: cannot read the event log");
            live.writer.lock().await.pushing = false;
            return;
        }
        if batch.is_empty() {
            let mut w = live.writer.lock().await;
            if w.record.last_seq > cursor {
                continue;
            }
            if let Err(e) = store
                .release_delivery(&live.scope, &live.task_id, &inner.node)
                .await
            {
                tracing::warn!(task = %live.task_id, error = %e, "could not release the outbox claim");
            }
            w.pushing = false;
            return;
        }
        while let Some(event) = batch.pop_front() {
            cursor = event.seq;
            if let Err(e) =
                deliver_event(inner, live, transport.as_ref(), event.seq, &event.event).await
            {
                tracing::warn!(task = %live.task_id, seq = event.seq, error = %e, "push delivery skipped an event");
            }
            let kept = store
                .delivered(&live.scope, &live.task_id, &inner.node, cursor, until())
                .await;
            if !matches!(kept, Ok(true)) {
                tracing::warn!(task = %live.task_id, seq = cursor, "push delivery stopped: the outbox claim was lost");
                live.writer.lock().await.pushing = false;
                return;
            }
        }
    }
}

async fn deliver_event(
    inner: &Inner,
    live: &Live,
    transport: &dyn WebhookTransport,
    seq: u64,
    event: &pb::StreamResponse,
) -> Result<(), A2aError> {
    let body = serde_json::to_vec(event).map_err(|e| A2aError::internal(e.to_string()))?;
    let mut after: Option<String> = None;
    loop {
        let (configs, more) = inner
            .stores
            .push
            .list(&live.scope, &live.task_id, after.as_deref(), 100)
            .await
            .map_err(super::store_error)?;
        for config in &configs {
            let request = webhook_request(config, seq, body.clone());
            send_with_retry(transport, &request, inner.config.push_retry).await;
        }
        match configs.last() {
            Some(last) if more => after = Some(last.id.clone()),
            _ => return Ok(()),
        }
    }
}

async fn send_with_retry(
    transport: &dyn WebhookTransport,
    request: &WebhookRequest,
    policy: RetryPolicy,
) {
    let mut backoff = policy.initial_backoff;
    for attempt in 1..=policy.attempts.max(1) {
        match transport.post(request).await {
            Ok(()) => return,
            Err(e) if attempt < policy.attempts => {
                tracing::debug!(url = %request.url, attempt, error = %e, "webhook failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(policy.max_backoff);
            }
            Err(e) => {
                tracing::warn!(url = %request.url, attempt, error = %e, "webhook failed, giving up on this event")
            }
        }
    }
}
