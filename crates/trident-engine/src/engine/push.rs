//! Push-notification delivery: one worker per task follows the task's event log with a cursor
//! (never blocking the task, never holding more than a batch per webhook) and POSTs each
//! event, in order, to every configured webhook — one lane per webhook, so each retries with
//! exponential backoff on its own and a slow one delays no other.

use std::collections::btree_map::Entry as Entry2;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use trident_proto as pb;

use super::live::{Live, LiveGuard, Writer};
use super::{Inner, PushConcurrency};
use crate::A2aError;
use crate::store::{Generation, now_ms};

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

/// Starts a worker delivering events after `from`, if the task has webhooks and none runs.
pub(crate) async fn kick_from(inner: &Arc<Inner>, live: &Arc<Live>, w: &mut Writer, from: u64) {
    if w.pushing || !has_push(inner, live, w).await {
        return;
    }
    w.pushing = true;
    let guard = LiveGuard::new(inner.clone(), live.clone());
    tokio::spawn(deliver_all(guard, from));
}

/// Whether the task's events go to webhooks: the engine delivers them and the task has push
/// configurations (looked up once, then known to the writer; an unreadable list counts as
/// some).
pub(crate) async fn has_push(inner: &Inner, live: &Live, w: &mut Writer) -> bool {
    if inner.webhooks.is_none() {
        return false;
    }
    if w.has_push.is_none() {
        let found = inner
            .stores
            .push
            .list(&live.scope, &live.task_id, None, 1)
            .await;
        w.has_push = Some(found.map(|(c, _)| !c.is_empty()).unwrap_or(true));
    }
    w.has_push == Some(true)
}

/// Delivers the task's events from the stored delivery cursor (the outbox) while this process
/// holds the task's delivery claim: one lane per configuration, each POSTing the events in
/// order and retrying on its own, so a slow or dead webhook never delays another one. The
/// stored cursor is the slowest lane's position: another process takes over a claim that
/// lapsed and resumes from it, so a crash can repeat an event to a webhook but never skip one.
async fn deliver_all(guard: LiveGuard, from: u64) {
    let LiveGuard { inner, live } = &guard;
    let Some(transport) = inner.webhooks.clone() else {
        return;
    };
    if inner.clock_unmeasured() {
        inner.sync_clock().await;
    }
    let until = || inner.clock_ms().saturating_add(inner.lease_ttl_ms());
    let store = &inner.stores.push;
    let claimed = store
        .claim_delivery(&live.scope, &live.task_id, &inner.node, until(), from)
        .await;
    let cursor = match claimed {
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
    let mut lanes = Lanes {
        positions: HashMap::new(),
        behind: BTreeMap::new(),
        running: HashMap::new(),
        stored: cursor,
        listed_at: None,
    };
    let (report, mut reports) = mpsc::unbounded_channel::<(String, LaneReport)>();
    let mut progress = live.progress();
    let mut renewed = now_ms();
    let renew_every = Duration::from_millis(
        u64::try_from(inner.lease_ttl_ms() / 3)
            .unwrap_or(1000)
            .max(10),
    );
    let start_lane = |id: &str, pos: u64| {
        tokio::spawn(lane(
            LiveGuard::new(guard.inner.clone(), guard.live.clone()),
            transport.clone(),
            id.to_owned(),
            pos,
            report.clone(),
        ))
    };
    // Store failures in a row; the worker stops after MAX_FAILURES (the next commit, or
    // another process once the claim lapses, starts over from the stored cursor).
    let mut failures = 0u32;
    // Every step costs O(1) or O(log configurations), except the listing, which runs once
    // per new published position (not per lane report): delivering E events to N
    // configurations costs O(N × E).
    let outcome = loop {
        // New configurations start after the events seen at the previous listing (the first
        // listing: at the stored cursor); deleted ones drop out.
        let seen = progress.borrow_and_update().seq;
        if lanes.listed_at != Some(seen) {
            if let Err(e) = lanes.relist(inner, live, seen).await {
                // Nothing below may run on a failed listing: with no positions the cursor
                // would move past events no webhook has had.
                failures += 1;
                if failures >= MAX_FAILURES {
                    break Err("the configurations cannot be listed");
                }
                tracing::warn!(task = %live.task_id, error = %e, "push delivery paused: cannot list the configurations");
                tokio::time::sleep(PAUSE).await;
                continue;
            }
            // Every lane that is behind and idle starts (each has an event to send).
            for (id, pos) in &lanes.positions {
                if *pos < seen && !lanes.running.contains_key(id) {
                    lanes.running.insert(id.clone(), start_lane(id, *pos));
                }
            }
        }
        // The outbox cursor follows the slowest lane; the claim is renewed with it, and at
        // least every third of the lease while a slow lane holds the cursor back.
        let slowest = lanes.slowest().unwrap_or(seen);
        let renew_due = now_ms().saturating_sub(renewed) >= inner.lease_ttl_ms() / 3;
        if slowest > lanes.stored || renew_due {
            let to = slowest.max(lanes.stored);
            match store
                .delivered(&live.scope, &live.task_id, &inner.node, to, until())
                .await
            {
                Ok(true) => {
                    lanes.stored = to;
                    renewed = now_ms();
                    failures = 0;
                }
                Ok(false) => break Err("the outbox claim was lost"),
                Err(e) => {
                    // Transient: the claim is still ours until it lapses; try again.
                    failures += 1;
                    if failures >= MAX_FAILURES {
                        break Err("the outbox cursor cannot be stored");
                    }
                    tracing::warn!(task = %live.task_id, error = %e, "push delivery: cannot store the outbox cursor; retrying");
                    tokio::time::sleep(PAUSE).await;
                    continue;
                }
            }
        }
        if lanes.running.is_empty() {
            // Under the writer lock no commit can publish in between: a commit after this
            // sees `pushing` off and starts a new worker.
            let mut w = live.writer.lock().await;
            if progress.borrow().seq <= slowest || lanes.positions.is_empty() {
                if let Err(e) = store
                    .release_delivery(&live.scope, &live.task_id, &inner.node)
                    .await
                {
                    tracing::warn!(task = %live.task_id, error = %e, "could not release the outbox claim");
                }
                w.pushing = false;
                break Ok(());
            }
            continue;
        }
        tokio::select! {
            Some((id, r)) = reports.recv() => match r {
                LaneReport::At(pos) => lanes.advance(&id, pos),
                LaneReport::Done(pos) => {
                    lanes.running.remove(&id);
                    lanes.advance(&id, pos);
                    // Behind what was listed (its log read failed, or returned nothing yet;
                    // it paused): again. Events after the listing start it at the next one.
                    if let Some(at) = lanes.positions.get(&id).copied()
                        && lanes.listed_at.is_some_and(|listed| at < listed)
                    {
                        lanes.running.insert(id.clone(), start_lane(&id, at));
                    }
                }
                LaneReport::Deleted => {
                    lanes.running.remove(&id);
                    lanes.remove(&id);
                }
            },
            changed = progress.changed() => if changed.is_err() {
                break Err("the task went away");
            },
            // Wake up to renew the claim while lanes are busy retrying.
            () = tokio::time::sleep(renew_every) => {}
        }
    };
    if let Err(why) = outcome {
        tracing::warn!(task = %live.task_id, "push delivery stopped: {why}");
        for (_, lane) in lanes.running.drain() {
            lane.abort();
        }
        live.writer.lock().await.pushing = false;
    }
}

/// The delivery lanes of one task.
struct Lanes {
    /// Each configuration's position: the last event it has had (or given up on).
    positions: HashMap<String, u64>,
    /// How many lanes are at each position (the slowest is the first key).
    behind: BTreeMap<u64, usize>,
    /// Lanes with events in hand.
    running: HashMap<String, tokio::task::JoinHandle<()>>,
    /// The stored outbox cursor.
    stored: u64,
    /// The task's last sequence number when the configurations were last listed.
    listed_at: Option<u64>,
}

impl Lanes {
    /// Lists the configurations: O(configurations), once per new published position.
    async fn relist(&mut self, inner: &Inner, live: &Live, seen: u64) -> Result<(), A2aError> {
        let start = self.listed_at.unwrap_or(self.stored);
        let mut ids = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let (configs, more) = inner
                .stores
                .push
                .list(&live.scope, &live.task_id, after.as_deref(), 100)
                .await
                .map_err(super::store_error)?;
            let last = configs.last().map(|c| c.id.clone());
            ids.extend(configs.into_iter().map(|c| c.id));
            match last {
                Some(last) if more => after = Some(last),
                _ => break,
            }
        }
        let gone: Vec<String> = self
            .positions
            .keys()
            .filter(|id| !ids.contains(*id) && !self.running.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            self.remove(&id);
        }
        for id in ids {
            if let Entry::Vacant(slot) = self.positions.entry(id) {
                slot.insert(start);
                *self.behind.entry(start).or_default() += 1;
            }
        }
        self.listed_at = Some(seen);
        Ok(())
    }

    /// The slowest lane's position.
    fn slowest(&self) -> Option<u64> {
        self.behind.keys().next().copied()
    }

    /// Moves a lane forward to `pos`.
    fn advance(&mut self, id: &str, pos: u64) {
        let Some(at) = self.positions.get_mut(id) else {
            return;
        };
        if pos <= *at {
            return;
        }
        let old = std::mem::replace(at, pos);
        self.uncount(old);
        *self.behind.entry(pos).or_default() += 1;
    }

    /// Drops a lane.
    fn remove(&mut self, id: &str) {
        if let Some(at) = self.positions.remove(id) {
            self.uncount(at);
        }
    }

    fn uncount(&mut self, pos: u64) {
        if let Entry2::Occupied(mut n) = self.behind.entry(pos) {
            *n.get_mut() -= 1;
            if *n.get() == 0 {
                n.remove();
            }
        }
    }
}

/// How long a lane waits before it is restarted after a store read failed.
const PAUSE: Duration = Duration::from_millis(500);

/// Store failures in a row after which a task's delivery worker stops.
const MAX_FAILURES: u32 = 20;

/// What a lane tells the task's worker.
enum LaneReport {
    /// It has delivered (or given up on) every event up to this one.
    At(u64),
    /// Caught up at this event: nothing more to send for now.
    Done(u64),
    /// Its configuration was deleted.
    Deleted,
}

/// One configuration's deliveries: the task's events after `pos`, in order, each retried
/// on its own, until caught up. Re-reads the configuration before each POST (it may have
/// been replaced or deleted). A configuration created through v0.3 is sent the task itself
/// (v0.3's payload) once per batch of events: the task as it stands after them.
///
/// It holds the task by a guard of its own: a lane may end after its worker (it reports before
/// it returns, and an aborted one is dropped whenever its runtime gets to it), and then it is
/// the last holder, which must unregister the task.
async fn lane(
    guard: LiveGuard,
    transport: Arc<dyn WebhookTransport>,
    id: String,
    mut pos: u64,
    report: mpsc::UnboundedSender<(String, LaneReport)>,
) {
    let (inner, live): (&Arc<Inner>, &Arc<Live>) = (&guard.inner, &guard.live);
    let mut batch = VecDeque::new();
    loop {
        if let Err(e) = live.read_after(inner, pos, &mut batch).await {
            tracing::warn!(task = %live.task_id, config = %id, error = %e, "push delivery paused: cannot read the event log");
            tokio::time::sleep(PAUSE).await;
            let _ = report.send((id, LaneReport::Done(pos)));
            return;
        }
        if batch.is_empty() {
            if pos < live.progress().borrow().seq {
                // Published events the log does not return (yet): not caught up; pause
                // rather than be restarted at once in a loop.
                tokio::time::sleep(PAUSE).await;
            }
            let _ = report.send((id, LaneReport::Done(pos)));
            return;
        }
        while let Some(next) = batch.front().map(|e| e.seq) {
            let (config, generation) = match inner
                .stores
                .push
                .get(&live.scope, &live.task_id, &id)
                .await
            {
                Ok(Some(c)) => c,
                Ok(None) => {
                    let _ = report.send((id, LaneReport::Deleted));
                    return;
                }
                Err(e) => {
                    tracing::warn!(task = %live.task_id, config = %id, error = %e, "push delivery paused: cannot read the configuration");
                    tokio::time::sleep(PAUSE).await;
                    let _ = report.send((id, LaneReport::Done(pos)));
                    return;
                }
            };
            // Without the v0.3 encoder (an engine built without it), 1.0's payload.
            let (seq, body, shape) = match (generation, inner.v03_body) {
                (Generation::V03, Some(encode)) => {
                    let last = batch.back().map_or(next, |e| e.seq);
                    match inner.stores.tasks.get(&live.scope, &live.task_id).await {
                        Ok(Some(record)) => {
                            batch.clear();
                            let body = encode(&record.task).map_err(|e| e.to_string());
                            // The stored task may already include later events: published
                            // ones it covers need no POST of their own.
                            let published = live.progress().borrow().seq;
                            (
                                last.max(record.last_seq.min(published)),
                                body,
                                Generation::V03,
                            )
                        }
                        Ok(None) => {
                            batch.clear();
                            (last, Err("the task is gone".to_owned()), Generation::V03)
                        }
                        Err(e) => {
                            tracing::warn!(task = %live.task_id, config = %id, error = %e, "push delivery paused: cannot read the task");
                            tokio::time::sleep(PAUSE).await;
                            let _ = report.send((id, LaneReport::Done(pos)));
                            return;
                        }
                    }
                }
                _ => {
                    let Some(event) = batch.pop_front() else {
                        break;
                    };
                    let body = serde_json::to_vec(&*event.event).map_err(|e| e.to_string());
                    (event.seq, body, Generation::V1)
                }
            };
            match body {
                Ok(body) => {
                    let request = webhook_request(&config, shape, seq, body);
                    send_with_retry(
                        &inner.deliveries,
                        transport.as_ref(),
                        &request,
                        inner.config.push_retry,
                    )
                    .await;
                }
                Err(e) => {
                    tracing::warn!(task = %live.task_id, seq, error = %e, "push delivery skipped an event it cannot encode");
                }
            }
            pos = seq;
            let _ = report.send((id.clone(), LaneReport::At(pos)));
        }
    }
}

/// POSTs `request` in a delivery slot ([`Slots`]), retrying as `policy` says. A call that
/// failed for want of local resources ([`WebhookError::Local`]) is retried with backoff
/// without counting as an attempt: only the webhook's own failures make it give up.
async fn send_with_retry(
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

/// Which slots a call takes: its URL's host and port, as [`super::webhook_destination`] reads
/// them.
type HostKey = Option<(super::Destination, u16)>;

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
        let key = super::webhook_destination(url).ok();
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
