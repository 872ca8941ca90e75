//! The console's push-notification receiver: webhooks in the console's own server, so the page
//! can configure one on a task and watch the deliveries arrive.
//!
//! `/api/push/watch` (an API call like the others) makes a webhook — a random
//! id and a random token — and asks the agent, on the binding picked in the page, to
//! `CreateTaskPushNotificationConfig` for the task with the URL `{console}/hooks/{id}` (the
//! console's listen address; an unspecified address as loopback, as the page's URL) and the
//! token; the config's id is the webhook's. `/api/push/configs` lists the task's configs and
//! `/api/push/delete` deletes one (and forgets its webhook when it is the console's).
//!
//! The agent `POST`s each notification to `/hooks/{id}` ([`receiver`]). That route is outside
//! `/api/`: the agent calls it, not the page, so it does not ask for the page's JSON and
//! origin checks; it asks for the webhook's token instead, in `A2A-Notification-Token` or
//! `X-A2A-Notification-Token` (A2A 1.0 names no header; senders use one or the other, and
//! Trident sends both). A page elsewhere cannot send that header without a preflight, which is
//! never allowed. A post to a webhook the console does not know is `404`; one whose
//! `Content-Length` says more than [`MAX_BODY`] bytes is `413`; one without the token or with
//! another is `401`; a body that turns out longer than [`MAX_BODY`] is `413`. None of those is
//! kept (the refusals of a known webhook are counted). What is kept answers `200`.
//!
//! `/api/push/deliveries` (a `POST` of `{"after": SEQ}` with the API's checks) lists the
//! deliveries after the last one the page has seen: each with its sequence number, the time
//! it arrived, its headers with the secret-looking ones masked ([`mask`]: the first two
//! characters and `…`), its body (JSON, or text when it is not JSON), and what the body says:
//! the event kind (`task`, `message`, `statusUpdate`, `artifactUpdate`; a v0.3 body's `kind`),
//! its task and its state.
//!
//! Everything is kept in memory, and bounded:
//! - [`MAX_WEBHOOKS`] webhooks per console: making one more forgets the oldest (posts to it
//!   are then `404`).
//! - [`MAX_DELIVERIES`] deliveries per console: a new one forgets the oldest.
//! - [`MAX_BODY`] bytes of body per delivery, larger ones refused.
//! - [`MAX_HEADER_VALUE`] characters shown of a header's value (the rest cut, with `…`); the
//!   number and size of headers are bounded by the HTTP server before this module sees them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use trident::proto as pb;
use trident_core::{A2aError, A2aService, CallContext};

/// Webhooks kept per console; making one more forgets the oldest.
pub(crate) const MAX_WEBHOOKS: usize = 64;
/// Deliveries kept per console; a new one forgets the oldest.
pub(crate) const MAX_DELIVERIES: usize = 200;
/// The largest body a delivery may have, in bytes (256 KiB); a larger one is refused with
/// `413`.
pub(crate) const MAX_BODY: usize = 256 * 1024;
/// How much of a header's value is kept, in characters.
pub(crate) const MAX_HEADER_VALUE: usize = 1024;

/// The headers that carry the webhook's token (either is accepted).
const TOKEN_HEADERS: [&str; 2] = ["a2a-notification-token", "x-a2a-notification-token"];

/// Parts of header names that say the value is a secret: `Authorization`,
/// `Proxy-Authorization`, the notification tokens, `Cookie`, `X-API-Key`, …
const SECRET_NAME_PARTS: [&str; 6] = ["auth", "token", "cookie", "key", "secret", "password"];

/// The console's webhooks and what they received.
#[derive(Debug)]
pub(crate) struct Hooks {
    /// `http://HOST:PORT/hooks/` (`…/console/hooks/` beside a served agent): a webhook's URL
    /// is this and its id. Set once the console's address is known.
    base: std::sync::OnceLock<String>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Oldest first.
    webhooks: VecDeque<Webhook>,
    /// Oldest first.
    deliveries: VecDeque<Delivery>,
    /// The sequence number of the last delivery kept (0: none yet).
    last: u64,
    /// Posts to a known webhook that were refused (no or another token, too large).
    refused: u64,
}

/// One webhook: where the agent posts, and the token it must send.
#[derive(Debug)]
struct Webhook {
    id: String,
    token: String,
    task_id: String,
    binding: &'static str,
}

/// A header as the page shows it.
#[derive(Debug, Clone, Serialize)]
struct ShownHeader {
    name: String,
    value: String,
    /// Whether the value is masked.
    masked: bool,
}

/// One delivery kept.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Delivery {
    seq: u64,
    /// The webhook it came to.
    webhook: String,
    /// The binding the webhook was configured on.
    binding: &'static str,
    /// The task the webhook was configured for.
    watched_task: String,
    /// Milliseconds since the Unix epoch.
    received_at_ms: u64,
    headers: Vec<ShownHeader>,
    /// The body's size in bytes.
    size: usize,
    /// The body: JSON, or a string when it is not JSON.
    body: Value,
    /// The event kind the body holds, if it is one.
    kind: Option<String>,
    /// The body's task.
    task_id: Option<String>,
    /// The body's task state (`TASK_STATE_…`), if it says one.
    state: Option<String>,
}

/// Why a push API call failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PushError {
    /// The agent refused the call, or could not be reached.
    #[error(transparent)]
    Agent(#[from] A2aError),
    /// A push config could not be written as JSON.
    #[error("cannot show the push config: {0}")]
    Json(#[from] serde_json::Error),
    /// The console's address is not known yet (its server is not bound).
    #[error("the console is not serving yet")]
    Unbound,
}

/// A webhook just made.
#[derive(Debug, Clone)]
pub(crate) struct Made {
    pub(crate) id: String,
    pub(crate) url: String,
    pub(crate) token: String,
}

impl Hooks {
    /// No webhooks yet; their URLs start with `base` (`http://HOST:PORT/hooks/`).
    pub(crate) fn new(base: String) -> Self {
        let hooks = Self::unbound();
        hooks.bind(base);
        hooks
    }

    /// No webhooks yet, and no address yet: none can be made before [`bind`](Self::bind).
    pub(crate) fn unbound() -> Self {
        Self {
            base: std::sync::OnceLock::new(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The webhooks' URLs start with `base` from now on (the first call sets it).
    pub(crate) fn bind(&self, base: String) {
        let _ = self.base.set(base);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes a webhook for `task_id`, configured on `binding`, forgetting the oldest when
    /// there are [`MAX_WEBHOOKS`].
    pub(crate) fn make(&self, task_id: &str, binding: &'static str) -> Result<Made, PushError> {
        let base = self.base.get().ok_or(PushError::Unbound)?;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut inner = self.lock();
        while inner.webhooks.len() >= MAX_WEBHOOKS {
            inner.webhooks.pop_front();
        }
        inner.webhooks.push_back(Webhook {
            id: id.clone(),
            token: token.clone(),
            task_id: task_id.to_owned(),
            binding,
        });
        Ok(Made {
            url: format!("{base}{id}"),
            id,
            token,
        })
    }

    /// Forgets the webhook `id`; whether it was one.
    pub(crate) fn forget(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.webhooks.len();
        inner.webhooks.retain(|w| w.id != id);
        inner.webhooks.len() != before
    }

    /// The webhook id of `url`, when it is one of this console's URLs.
    fn id_of<'a>(&self, url: &'a str) -> Option<&'a str> {
        url.strip_prefix(self.base.get()?.as_str())
    }

    /// A post to the webhook `id`: refused, or kept as a delivery.
    async fn receive(&self, id: &str, headers: &HeaderMap, body: Body) -> Response {
        let expected = {
            let inner = self.lock();
            inner
                .webhooks
                .iter()
                .find(|w| w.id == id)
                .map(|w| (w.token.clone(), w.task_id.clone(), w.binding))
        };
        let Some((token, watched_task, binding)) = expected else {
            return refusal(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such webhook in this console",
            );
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            self.lock().refused += 1;
            return too_large();
        }
        let given = TOKEN_HEADERS
            .iter()
            .filter_map(|h| headers.get(*h))
            .any(|v| same(v.as_bytes(), token.as_bytes()));
        if !given {
            self.lock().refused += 1;
            return refusal(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "a notification must carry this webhook's token (A2A-Notification-Token or \
                 X-A2A-Notification-Token)",
            );
        }
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
            self.lock().refused += 1;
            return too_large();
        };
        let delivery = delivery(id, binding, watched_task, headers, &bytes);
        let mut inner = self.lock();
        inner.last += 1;
        let seq = inner.last;
        while inner.deliveries.len() >= MAX_DELIVERIES {
            inner.deliveries.pop_front();
        }
        inner.deliveries.push_back(Delivery { seq, ..delivery });
        StatusCode::OK.into_response()
    }

    /// `/api/push/deliveries`: the deliveries after `after`, oldest first, with the last
    /// sequence number, the count of refused posts and of webhooks.
    pub(crate) fn after(&self, after: u64) -> Value {
        let inner = self.lock();
        let deliveries: Vec<&Delivery> =
            inner.deliveries.iter().filter(|d| d.seq > after).collect();
        json!({
            "deliveries": deliveries,
            "last": inner.last,
            "refused": inner.refused,
            "webhooks": inner.webhooks.len(),
        })
    }
}

/// A refused post, answered as the API answers its refusals: `{"error": {"code", "message"}}`.
fn refusal(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({ "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

/// `413`, saying the limit.
fn too_large() -> Response {
    refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        &format!("a notification's body is at most {MAX_BODY} bytes"),
    )
}

/// Whether `a` and `b` are the same bytes, in a time that does not depend on where they
/// differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the header `name` looks like it carries a secret.
pub(crate) fn secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// A secret as shown: its first two characters and `…`, or `…` alone when it is too short
/// for two characters to leave most of it hidden.
pub(crate) fn mask(value: &str) -> String {
    if value.chars().count() <= 8 {
        return "…".to_owned();
    }
    let head: String = value.chars().take(2).collect();
    format!("{head}…")
}

/// A header's value as shown: masked when it is a secret, cut at [`MAX_HEADER_VALUE`].
fn shown(name: &str, value: &[u8]) -> ShownHeader {
    let text = String::from_utf8_lossy(value);
    let masked = secret(name);
    let value = if masked {
        mask(&text)
    } else if text.chars().count() > MAX_HEADER_VALUE {
        let head: String = text.chars().take(MAX_HEADER_VALUE).collect();
        format!("{head}…")
    } else {
        text.into_owned()
    };
    ShownHeader {
        name: name.to_owned(),
        value,
        masked,
    }
}

/// A delivery of `bytes` with `headers` to the webhook `id` (its sequence number is set when
/// it is kept).
fn delivery(
    id: &str,
    binding: &'static str,
    watched_task: String,
    headers: &HeaderMap,
    bytes: &Bytes,
) -> Delivery {
    let body = serde_json::from_slice::<Value>(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    let (kind, task_id, state) = summary(&body);
    let received_at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Delivery {
        seq: 0,
        webhook: id.to_owned(),
        binding,
        watched_task,
        received_at_ms,
        headers: headers
            .iter()
            .map(|(name, value)| shown(name.as_str(), value.as_bytes()))
            .collect(),
        size: bytes.len(),
        body,
        kind,
        task_id,
        state,
    }
}

/// What a notification's body says: its event kind, task and state. A 1.0 body is a
/// `StreamResponse` (`task`, `message`, `statusUpdate` or `artifactUpdate`); a v0.3 body is
/// the task itself with a `kind`, its states in lower case (given here as 1.0's).
fn summary(body: &Value) -> (Option<String>, Option<String>, Option<String>) {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let state = |v: &Value| v.get("status").and_then(|s| text(s, "state"));
    for kind in ["task", "message", "statusUpdate", "artifactUpdate"] {
        if let Some(event) = body.get(kind) {
            let task = match kind {
                "task" => text(event, "id"),
                _ => text(event, "taskId"),
            };
            return (Some(kind.to_owned()), task, state(event));
        }
    }
    match body.get("kind").and_then(Value::as_str) {
        Some(kind @ ("task" | "status-update" | "artifact-update" | "message")) => {
            let task = if kind == "task" {
                text(body, "id")
            } else {
                text(body, "taskId")
            };
            let state = state(body).map(|s| {
                if s.starts_with("TASK_STATE_") {
                    s
                } else {
                    format!("TASK_STATE_{}", s.replace('-', "_").to_ascii_uppercase())
                }
            });
            (Some(kind.to_owned()), task, state)
        }
        _ => (None, None, None),
    }
}

/// A push config as the page shows it: the token and the credentials masked (an agent may
/// answer them back).
fn shown_config(config: &pb::TaskPushNotificationConfig) -> Result<Value, PushError> {
    let mut config = config.clone();
    if !config.token.is_empty() {
        config.token = mask(&config.token);
    }
    if let Some(auth) = &mut config.authentication
        && !auth.credentials.is_empty()
    {
        auth.credentials = mask(&auth.credentials);
    }
    Ok(serde_json::to_value(&config)?)
}

/// `/api/push/watch`: a webhook for `task_id`, configured on the agent
/// (`CreateTaskPushNotificationConfig`); forgotten again when the agent refuses it.
pub(crate) async fn watch(
    hooks: &Hooks,
    svc: &dyn A2aService,
    cx: &CallContext,
    task_id: String,
    binding: &'static str,
) -> Result<Value, PushError> {
    let made = hooks.make(&task_id, binding)?;
    let request = pb::TaskPushNotificationConfig {
        id: made.id.clone(),
        task_id,
        url: made.url.clone(),
        token: made.token.clone(),
        ..Default::default()
    };
    match svc.create_task_push_notification_config(cx, request).await {
        Ok(config) => Ok(json!({
            "binding": binding,
            "webhook": { "id": made.id, "url": made.url },
            "result": shown_config(&config)?,
        })),
        Err(e) => {
            hooks.forget(&made.id);
            Err(PushError::Agent(e))
        }
    }
}

/// `/api/push/configs`: the task's push configs (`ListTaskPushNotificationConfigs`), each
/// marked with whether it is one of this console's webhooks.
pub(crate) async fn configs(
    hooks: &Hooks,
    svc: &dyn A2aService,
    cx: &CallContext,
    task_id: String,
    binding: &'static str,
) -> Result<Value, PushError> {
    let request = pb::ListTaskPushNotificationConfigsRequest {
        task_id,
        ..Default::default()
    };
    let answer = svc.list_task_push_notification_configs(cx, request).await?;
    let configs = answer
        .configs
        .iter()
        .map(|c| {
            Ok(json!({
                "config": shown_config(c)?,
                "console": hooks.id_of(&c.url).is_some(),
            }))
        })
        .collect::<Result<Vec<Value>, PushError>>()?;
    Ok(json!({
        "binding": binding,
        "result": { "configs": configs, "nextPageToken": answer.next_page_token },
    }))
}

/// `/api/push/delete`: deletes the task's push config `config_id`
/// (`DeleteTaskPushNotificationConfig`), and forgets the console's webhook of that id.
pub(crate) async fn delete(
    hooks: &Hooks,
    svc: &dyn A2aService,
    cx: &CallContext,
    task_id: String,
    config_id: String,
    binding: &'static str,
) -> Result<Value, PushError> {
    let request = pb::DeleteTaskPushNotificationConfigRequest {
        task_id,
        id: config_id.clone(),
        ..Default::default()
    };
    svc.delete_task_push_notification_config(cx, request)
        .await?;
    let forgotten = hooks.forget(&config_id);
    Ok(json!({ "binding": binding, "result": {}, "webhookForgotten": forgotten }))
}

/// What `/api/push/deliveries` reads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct After {
    /// The last sequence number the page has seen.
    #[serde(default)]
    after: u64,
}

/// What a `/api/push/deliveries` body asks for: the deliveries after this sequence number
/// (`{"after": SEQ}`; an empty body or `{}` is all of them).
pub(crate) fn after(body: &[u8]) -> Result<u64, serde_json::Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(0);
    }
    serde_json::from_slice::<After>(body).map(|a| a.after)
}

/// The receiver, `POST /hooks/{id}`.
pub(crate) fn receiver(hooks: Arc<Hooks>) -> MethodRouter {
    post(
        move |Path(id): Path<String>, headers: HeaderMap, body: Body| async move {
            hooks.receive(&id, &headers, body).await
        },
    )
}
