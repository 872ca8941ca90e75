//! The default [`A2aService`]: every operation implemented once, on an [`AgentExecutor`] and
//! the [`Stores`].
//!
//! Documented choices where the spec leaves room (see ARCHITECTURE.md):
//! - A missing `A2A-Version` is read as 1.0 unless [`EngineConfig::strict_version`] is set.
//! - A message to a task whose executor is still running is refused with
//!   `UnsupportedOperation` (no queueing): send follow-ups once the task is interrupted.
//! - Canceling an already `CANCELED` task returns the task again; other terminal states give
//!   `TaskNotCancelable`.
//! - Streams end after a terminal state or `INPUT_REQUIRED`, and stay open through
//!   `AUTH_REQUIRED`.
//! - Deleting a push configuration that does not exist succeeds.

use std::sync::Arc;

use base64::Engine as _;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trident_proto as pb;

mod cluster;
pub(crate) mod live;
mod policy;
pub(crate) mod push;
pub(crate) mod run;
mod validate;

#[cfg(test)]
mod tests;

use live::{Hold, Live, LiveGuard, StreamEnd, follow};
use run::{Creation, First, Run};

use crate::auth::{Access, Authorizer};
use crate::store::{
    Lease, ListCursor, Scope, ShardExt, Sharded, StoreError, Stores, TaskQuery, now_ms,
};
use crate::{
    A2aError, A2aService, AgentExecutor, CallContext, ErrorKind, EventStream, Operation,
    RequestContext, StreamEvent,
};

pub use policy::{
    AllowEntryError, Destination, PolicyError, WebhookPolicy, non_public, webhook_destination,
};
pub use push::{RetryPolicy, WebhookError, WebhookRequest, WebhookTransport, webhook_request};

/// A push configuration as Get and List return it: its secrets (`token` and
/// `authentication.credentials`) are write-only — kept for delivery, never read back — so a
/// caller that may read a task's configurations cannot learn another client's webhook
/// credentials. The scheme stays, so a reader still sees that authentication is configured.
fn redact_push_secrets(
    mut config: pb::TaskPushNotificationConfig,
) -> pb::TaskPushNotificationConfig {
    config.token.clear();
    if let Some(auth) = &mut config.authentication {
        auth.credentials.clear();
    }
    config
}

/// Limits on what a request may carry. Each violation is an `InvalidParams` error.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Parts per message.
    pub max_parts: usize,
    /// Nesting depth of any `metadata` or data value.
    pub max_metadata_depth: usize,
    /// Length of client-supplied ids (messageId, contextId, taskId, config ids).
    pub max_id_len: usize,
    /// Length of a tenant, in bytes. A tenant is also limited to visible ASCII other than
    /// `/` (it must fit one URL path segment of the HTTP+JSON binding).
    pub max_tenant_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_parts: 256,
            max_metadata_depth: 16,
            max_id_len: 256,
            max_tenant_len: 128,
        }
    }
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Refuse requests without `A2A-Version` (the spec reads them as 0.3). Default: accept them
    /// as 1.0, since several clients omit the header.
    pub strict_version: bool,
    /// Request limits.
    pub limits: Limits,
    /// Recent events kept in memory per live task; slower readers read the log.
    pub tail_capacity: usize,
    /// Webhook retries.
    pub push_retry: RetryPolicy,
    /// How long a follow-up to an interrupted task waits for the previous turn's executor to
    /// return before it is refused as busy.
    pub turn_end_wait: std::time::Duration,
    /// How long a process's claim to execute a task lasts without renewal. On a shared store
    /// (cluster mode) a task whose process stopped ends `FAILED` within about
    /// `lease_ttl + lease_ttl / 2`; the lease is renewed every `lease_ttl / 3`.
    pub lease_ttl: std::time::Duration,
    /// This process's id in leases and delivery claims (default: a fresh UUIDv7 per start).
    pub node_id: Option<String>,
    /// Where webhooks may point (default: public addresses only).
    pub webhook_policy: WebhookPolicy,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            strict_version: false,
            limits: Limits::default(),
            tail_capacity: 128,
            push_retry: RetryPolicy::default(),
            turn_end_wait: std::time::Duration::from_secs(10),
            lease_ttl: std::time::Duration::from_secs(10),
            node_id: None,
            webhook_policy: WebhookPolicy::default(),
        }
    }
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    executor: Arc<dyn AgentExecutor>,
    card: pb::AgentCard,
    extended_card: Option<pb::AgentCard>,
    stores: Option<Stores>,
    webhooks: Option<Arc<dyn WebhookTransport>>,
    authorizer: Option<Arc<dyn Authorizer>>,
    config: EngineConfig,
}

impl EngineBuilder {
    /// Asks `authorizer` before every call (after authentication, before any store access).
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Uses these stores (default: in memory).
    pub fn stores(mut self, stores: Stores) -> Self {
        self.stores = Some(stores);
        self
    }

    /// The card served publicly; its capabilities switch streaming, push and the extended card.
    pub fn card(mut self, card: pb::AgentCard) -> Self {
        self.card = card;
        self
    }

    /// The card returned to authenticated callers by GetExtendedAgentCard.
    pub fn extended_card(mut self, card: pb::AgentCard) -> Self {
        self.extended_card = Some(card);
        self
    }

    /// Delivers push notifications through this transport (without one, configurations are
    /// stored but nothing is sent).
    pub fn webhooks(mut self, transport: Arc<dyn WebhookTransport>) -> Self {
        self.webhooks = Some(transport);
        self
    }

    /// Engine settings.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// The engine.
    /// The engine. Inside a Tokio runtime this also starts its background work: start-up
    /// recovery of tasks whose process stopped (and of undelivered push notifications), and on
    /// a shared store the lease heartbeat, the sweeper and the follower of other processes'
    /// commits. All of it stops when the last handle to the engine is dropped.
    pub fn build(self) -> Engine {
        let node: Arc<str> = self
            .config
            .node_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
            .into();
        let engine = Engine {
            inner: Arc::new(Inner {
                node,
                executor: self.executor,
                card: self.card,
                extended_card: self.extended_card,
                stores: self.stores.unwrap_or_else(Stores::memory),
                webhooks: self.webhooks,
                authorizer: self.authorizer,
                config: self.config,
                live: Sharded::new(),
                closing: CancellationToken::new(),
            }),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            cluster::start(&engine.inner);
        } else {
            tracing::warn!("engine built outside a Tokio runtime: no recovery or cluster work");
        }
        engine
    }
}

/// The A2A engine: implements [`A2aService`] for one agent.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("agent", &self.inner.card.name)
            .finish()
    }
}

pub(crate) struct Inner {
    /// This process's id in leases.
    pub(crate) node: Arc<str>,
    pub(crate) executor: Arc<dyn AgentExecutor>,
    card: pb::AgentCard,
    extended_card: Option<pb::AgentCard>,
    pub(crate) stores: Stores,
    pub(crate) webhooks: Option<Arc<dyn WebhookTransport>>,
    authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) config: EngineConfig,
    live: Sharded<Arc<Live>>,
    /// Cancelled when the server shuts down ([`Engine::close_streams`]).
    pub(crate) closing: CancellationToken,
}

/// What a stream still open at shutdown ends with.
pub(crate) fn shutting_down() -> A2aError {
    A2aError::new(
        ErrorKind::Unavailable,
        "the server is shutting down; resubscribe (with the last event's id as Last-Event-ID) \
         to continue",
    )
}

pub(crate) fn store_error(e: StoreError) -> A2aError {
    match e {
        StoreError::Conflict => A2aError::new(
            ErrorKind::Unavailable,
            "the task was changed concurrently; retry",
        ),
        other => A2aError::internal(format!("store: {other}")),
    }
}

impl Inner {
    /// The lease a commit records for a task in `state`: this process's while the task is in
    /// progress, none once it waits for the client or has ended.
    pub(crate) fn lease_for(&self, state: pb::TaskState) -> Option<Lease> {
        state.is_in_progress().then(|| Lease {
            node: self.node.clone(),
            until_ms: now_ms().saturating_add(self.lease_ttl_ms()),
        })
    }

    pub(crate) fn lease_ttl_ms(&self) -> i64 {
        i64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// The live task `id` if it is in memory.
    fn live_now(&self, scope: &Scope, id: &str) -> Option<Arc<Live>> {
        self.live.shard(id).get_in(scope, id).cloned()
    }

    /// Every task held in memory.
    pub(crate) fn lives(&self) -> Vec<Arc<Live>> {
        self.live
            .shards()
            .flat_map(|shard| {
                shard
                    .values()
                    .flat_map(|ids| ids.values().cloned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Registers a new live task.
    pub(crate) fn register(&self, live: &Arc<Live>) {
        self.live
            .shard(&live.task_id)
            .slot(&live.scope, &live.task_id)
            .insert_entry(live.clone());
    }

    /// Unregisters a live task when the caller holds the last reference besides the map.
    pub(crate) fn release(&self, live: &Arc<Live>) {
        let mut shard = self.live.shard(&live.task_id);
        if Arc::strong_count(live) <= 2
            && shard
                .get_in(&live.scope, &live.task_id)
                .is_some_and(|l| Arc::ptr_eq(l, live))
        {
            shard.remove_in(&live.scope, &live.task_id);
        }
    }

    /// The live task `id`, loading it from the store; `TaskNotFound` when not visible.
    async fn live(self: &Arc<Self>, scope: &Scope, id: &str) -> Result<LiveGuard, A2aError> {
        if let Some(live) = self.live_now(scope, id) {
            return Ok(LiveGuard {
                inner: self.clone(),
                live,
            });
        }
        let record = self
            .stores
            .tasks
            .get(scope, id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2aError::task_not_found(id))?;
        let live = self
            .live
            .shard(id)
            .slot(scope, id)
            .or_insert_with(|| {
                Arc::new(Live::new(
                    scope.clone(),
                    record,
                    self.config.tail_capacity,
                    Vec::new(),
                ))
            })
            .clone();
        Ok(LiveGuard {
            inner: self.clone(),
            live,
        })
    }

    /// The current record of task `id`. On a shared store a task this process does not
    /// execute may have moved on elsewhere, so it is read from the store.
    async fn record(&self, scope: &Scope, id: &str) -> Result<crate::store::TaskRecord, A2aError> {
        let local = match self.live_now(scope, id) {
            Some(live) => {
                let w = live.writer.lock().await;
                (w.running || !self.stores.tasks.shared()).then(|| w.record.clone())
            }
            None => None,
        };
        match local {
            Some(record) => Ok(record),
            None => self
                .stores
                .tasks
                .get(scope, id)
                .await
                .map_err(store_error)?
                .ok_or_else(|| A2aError::task_not_found(id)),
        }
    }

    /// Version, required extensions, authorization, scope: the checks every operation starts
    /// with.
    fn admit(
        &self,
        cx: &CallContext,
        tenant: &str,
        operation: Operation,
        message: Option<&pb::Message>,
    ) -> Result<Scope, A2aError> {
        match cx
            .version
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            None if self.config.strict_version => {
                return Err(A2aError::new(
                    ErrorKind::VersionNotSupported,
                    "A2A-Version is missing, which means 0.3; this server speaks 1.0",
                )
                .with_meta("supportedVersions", crate::PROTOCOL_VERSION));
            }
            None => {}
            Some(v) if validate::is_v1(v) => {}
            Some(v) => {
                return Err(A2aError::new(
                    ErrorKind::VersionNotSupported,
                    format!("A2A-Version {v} is not supported; this server speaks 1.0"),
                )
                .with_meta("requestedVersion", v)
                .with_meta("supportedVersions", crate::PROTOCOL_VERSION));
            }
        }
        if let Some(caps) = &self.card.capabilities {
            for ext in caps.extensions.iter().filter(|e| e.required) {
                if !cx.extensions.iter().any(|u| u == &ext.uri) {
                    return Err(A2aError::new(
                        ErrorKind::ExtensionSupportRequired,
                        format!("extension {} is required", ext.uri),
                    )
                    .with_meta("extension", ext.uri.clone()));
                }
            }
        }
        validate::tenant(&cx.tenant, &self.config.limits)?;
        validate::tenant(tenant, &self.config.limits)?;
        let tenant = match (cx.tenant.as_str(), tenant) {
            (t, "") | ("", t) => t,
            (a, b) if a == b => a,
            (a, b) => {
                return Err(A2aError::invalid_field(
                    "tenant",
                    format!("{b:?} does not match the path tenant {a:?}"),
                ));
            }
        };
        if let Some(authorizer) = &self.authorizer {
            authorizer.authorize(&Access {
                principal: &cx.principal,
                tenant,
                operation,
                message,
            })?;
        }
        Ok(Scope::new(tenant, cx.principal.id().unwrap_or("")))
    }

    fn capability(&self, f: impl Fn(&pb::AgentCapabilities) -> Option<bool>) -> bool {
        self.card.capabilities.as_ref().and_then(f).unwrap_or(false)
    }

    fn require_streaming(&self) -> Result<(), A2aError> {
        if self.capability(|c| c.streaming) {
            Ok(())
        } else {
            Err(A2aError::unsupported(
                "this agent does not support streaming",
            ))
        }
    }

    /// Refuses a webhook URL the [`WebhookPolicy`] forbids (checked again at every delivery).
    async fn check_webhook(&self, url: &str) -> Result<(), A2aError> {
        self.config
            .webhook_policy
            .check_url(url)
            .await
            .map_err(|e| A2aError::invalid_field("url", e.to_string()))
    }

    fn require_push(&self) -> Result<(), A2aError> {
        if self.capability(|c| c.push_notifications) {
            Ok(())
        } else {
            Err(A2aError::of(ErrorKind::PushNotificationNotSupported))
        }
    }

    /// Starts a turn for `req` and returns what the caller waits for first.
    async fn start(
        self: &Arc<Self>,
        cx: &CallContext,
        req: pb::SendMessageRequest,
        streaming: bool,
    ) -> Result<Started, A2aError> {
        let op = if streaming {
            Operation::SendStreamingMessage
        } else {
            Operation::SendMessage
        };
        let scope = self.admit(cx, &req.tenant, op, req.message.as_ref())?;
        if streaming {
            self.require_streaming()?;
        }
        validate::send_request(&req, &self.config.limits)?;
        let pb::SendMessageRequest {
            message,
            configuration,
            metadata,
            ..
        } = req;
        let mut message =
            message.ok_or_else(|| A2aError::invalid_field("message", "is required"))?;
        let mut push = configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if let Some(p) = &push {
            self.require_push()?;
            self.check_webhook(&p.url).await?;
        }
        let return_immediately = configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        let cancel = CancellationToken::new();
        let mut ctx = RequestContext {
            task_id: String::new(),
            context_id: String::new(),
            message: pb::Message::default(),
            task: None,
            configuration,
            metadata,
            principal: cx.principal.clone(),
            tenant: scope.tenant.to_string(),
            extensions: cx.extensions.clone(),
            cancel: cancel.clone(),
        };

        if message.task_id.is_empty() {
            // Time-ordered ids (UUIDv7): a new task lands at the end of the stores' primary
            // key and event indexes instead of a random page, so a durable commit dirties
            // fewer pages.
            let task_id = uuid::Uuid::now_v7().to_string();
            if message.context_id.is_empty() {
                message.context_id = uuid::Uuid::now_v7().to_string();
            }
            message.task_id = task_id.clone();
            if let Some(p) = push.as_mut() {
                validate::bind_push(p, &task_id, &scope)?;
            }
            ctx.task_id = task_id.clone();
            ctx.context_id = message.context_id.clone();
            ctx.message = message.clone();
            // A blocking call creating a task is the only one who could see the turn's events
            // before it ends (the task's id is known to nobody else, no webhook is
            // configured): they are held and stored in one commit when the task settles or
            // the caller stops waiting. And the turn runs inline, on the caller's task, for as
            // long as it does not wait on anything.
            let inline = !streaming && push.is_none() && !return_immediately;
            let hold = if inline { Hold::Turn } else { Hold::Off };
            let creation = Creation {
                message,
                push,
                hold,
            };
            let (run, first) = Run::new_task(
                self.clone(),
                scope,
                task_id.into(),
                ctx.context_id.as_str().into(),
                creation,
                cancel,
            );
            let drive = run.clone().drive(self.executor.clone(), ctx);
            if inline {
                let mut drive = Box::pin(drive);
                if futures::poll!(drive.as_mut()).is_pending() {
                    // The agent waits on something: its turn continues in the background.
                    tokio::spawn(drive);
                    run.leave_caller().await;
                }
            } else {
                tokio::spawn(drive);
            }
            drop(run);
            return match first.await {
                Ok(First::Message(m)) => Ok(Started::Message(m)),
                Ok(First::Task(live)) => {
                    if inline {
                        // Whatever the turn committed so far (all of it when it ran to its
                        // end inline) is stored before the caller can answer with it.
                        let mut w = live.writer.lock().await;
                        if w.hold == Hold::Turn {
                            w.hold = Hold::Progress;
                            if !w.record.task.state().is_in_progress() {
                                live.end_hold(self, &mut w).await.map_err(store_error)?;
                            }
                        }
                    }
                    Ok(Started::Task {
                        guard: LiveGuard {
                            inner: self.clone(),
                            live,
                        },
                        after: 0,
                        snapshot: None,
                    })
                }
                Ok(First::Failed(e)) => Err(e),
                Err(_) => Err(A2aError::internal(
                    "the agent's turn ended without an outcome",
                )),
            };
        }

        // A follow-up to an existing task.
        let guard = self.live(&scope, &message.task_id).await?;
        let live = guard.live.clone();
        let wait_until = tokio::time::Instant::now() + self.config.turn_end_wait;
        // Another process may take the same turn at the same time: the store lets one commit
        // win; the others re-read the task and answer from its new state.
        let mut attempts = 0;
        let (mut w, after) = loop {
            let mut w = loop {
                let mut w = live.writer.lock().await;
                live.sync(self, &mut w).await?;
                let task = &w.record.task;
                let state = task.state();
                if state.is_terminal() {
                    return Err(A2aError::unsupported(format!(
                        "task {} is {} and accepts no more messages",
                        task.id,
                        state.as_str_name()
                    ))
                    .with_meta("taskId", task.id.clone()));
                }
                if !message.context_id.is_empty() && message.context_id != task.context_id {
                    return Err(A2aError::invalid_field(
                        "message.contextId",
                        format!("does not match task {}'s context", task.id),
                    ));
                }
                // A task still working is busy, whichever process runs it.
                let busy = !state.is_interrupted();
                if !busy && !w.running {
                    break w;
                }
                // An interrupted task whose executor is still returning: wait for its turn to
                // end (at most one executor per task).
                if busy || tokio::time::Instant::now() >= wait_until {
                    return Err(A2aError::unsupported(format!(
                        "task {} is still {}; send follow-up messages once it asks for input",
                        task.id,
                        state.as_str_name()
                    ))
                    .with_meta("taskId", task.id.clone()));
                }
                let ended = live.turn_ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                drop(w);
                let _ = tokio::time::timeout_at(wait_until, ended).await;
            };
            let task = &w.record.task;
            message.context_id = task.context_id.clone();
            if let Some(p) = push.as_mut() {
                validate::bind_push(p, &task.id, &scope)?;
            }
            ctx.task_id = task.id.clone();
            ctx.context_id = task.context_id.clone();
            ctx.task = Some(task.clone());
            ctx.message = message.clone();

            if let Some(p) = &push {
                self.stores
                    .push
                    .put(&live.scope, p)
                    .await
                    .map_err(store_error)?;
                w.has_push = Some(true);
            }
            match live.begin_turn(self, &mut w, Some(message.clone())).await {
                Ok(after) => break (w, after),
                Err(StoreError::Conflict) if attempts < 3 => attempts += 1,
                Err(e) => return Err(store_error(e)),
            }
        };
        let snapshot = w.record.task.clone();
        Run::spawn_existing(self, &live, &mut w, ctx);
        drop(w);
        Ok(Started::Task {
            guard,
            after,
            snapshot: Some(snapshot),
        })
    }

    /// Waits until the task is terminal or interrupted (after `after`), the caller leaves, or
    /// its deadline passes; returns the task as it is then. When the turn's progress can no
    /// longer be stored ([`Live::fault`]), returns that error at once.
    async fn settle(
        self: &Arc<Self>,
        live: &Arc<Live>,
        after: u64,
        cx: &CallContext,
    ) -> Result<pb::Task, A2aError> {
        let mut progress = live.progress();
        let deadline = cx.deadline.map(tokio::time::Instant::from_std);
        loop {
            let p = *progress.borrow_and_update();
            if p.seq > after && (p.state.is_terminal() || p.state.is_interrupted()) {
                break;
            }
            if p.fault
                && let Some(e) = live.fault_error()
            {
                return Err(e);
            }
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = progress.changed() => if changed.is_err() { break },
                () = cx.cancelled.cancelled() => break,
                () = self.closing.cancelled() => break,
                () = sleep => break,
            }
        }
        // The caller answers with the task: what its turn still holds is stored first.
        let mut w = live.writer.lock().await;
        if let Err(e) = live.end_hold(self, &mut w).await {
            let error = store_error(e);
            live.fault(self, &mut w, error.clone());
            return Err(error);
        }
        Ok(w.record.task.clone())
    }
}

enum Started {
    Message(pb::Message),
    Task {
        guard: LiveGuard,
        after: u64,
        snapshot: Option<pb::Task>,
    },
}

impl Engine {
    /// Starts building an engine for `executor`, with a minimal card (streaming and push
    /// notifications on).
    pub fn builder(executor: Arc<dyn AgentExecutor>) -> EngineBuilder {
        EngineBuilder {
            executor,
            card: crate::default_card("Trident agent", "An A2A agent served by Trident"),
            extended_card: None,
            stores: None,
            webhooks: None,
            authorizer: None,
            config: EngineConfig::default(),
        }
    }

    /// The public agent card.
    pub fn card(&self) -> &pb::AgentCard {
        &self.inner.card
    }

    /// Call before the process exits: on a shared store the leases of the tasks this process
    /// runs expire at once, so another process recovers them at its next sweep instead of
    /// after the lease TTL. (A store nobody else uses recovers them at the next start.)
    pub async fn shutdown(&self) {
        if self.inner.stores.tasks.shared()
            && let Err(e) = self
                .inner
                .stores
                .tasks
                .renew_leases(&self.inner.node, 0)
                .await
        {
            tracing::warn!(error = %e, "could not release this process's task leases");
        }
    }

    /// Ends every open stream (SendStreamingMessage, SubscribeToTask) with an `Unavailable`
    /// error event that says to resubscribe, and answers every blocking SendMessage still
    /// waiting with its task as it is now; later streams end the same way at once. Tasks keep
    /// running. Call when the server shuts down, before it closes connections, so no client
    /// is cut off without a last word: `trident serve` calls it at once on a shared store
    /// (another replica serves the resubscription) and after most of `--drain` otherwise.
    pub fn close_streams(&self) {
        self.inner.closing.cancel();
    }

    /// Whether the engine's task store is shared with other processes (cluster mode).
    pub fn shares_store(&self) -> bool {
        self.inner.stores.tasks.shared()
    }

    /// What the engine holds in memory right now.
    pub fn stats(&self) -> EngineStats {
        let mut stats = EngineStats::default();
        for shard in self.inner.live.shards() {
            for ids in shard.values() {
                stats.live_tasks += ids.len();
                stats.buffered_events += ids.values().map(|l| l.buffered()).sum::<usize>();
            }
        }
        stats
    }
}

/// Memory held by the engine (for metrics and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Tasks held in memory because an executor, a stream or a webhook worker uses them.
    pub live_tasks: usize,
    /// Events held in those tasks' tails (at most `tail_capacity` each).
    pub buffered_events: usize,
}

/// Moves `task` to `status` and returns the event that says so. A message on the status it
/// replaces moves into the history, so a question asked at INPUT_REQUIRED sits before the
/// answer that follows it.
pub(crate) fn set_status(
    task: &mut pb::Task,
    status: pb::TaskStatus,
    metadata: Option<trident_proto::wkt::Struct>,
) -> pb::StreamResponse {
    let event = pb::StreamResponse::new(pb::stream_response::Payload::StatusUpdate(
        pb::TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: Some(status),
            metadata,
        },
    ));
    crate::store::apply(task, &event);
    event
}

/// Applies `historyLength`: unset keeps all, 0 drops all, n keeps the n most recent.
fn trim_history(task: &mut pb::Task, history_length: Option<i32>) {
    if let Some(n) = history_length {
        let n = usize::try_from(n).unwrap_or(0);
        let len = task.history.len();
        if n < len {
            task.history.drain(..len - n);
        }
    }
}

const TOKEN_PREFIX: &str = "v1:";

fn encode_cursor(c: &ListCursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{TOKEN_PREFIX}{}:{}", c.timestamp, c.id))
}

fn decode_cursor(token: &str) -> Result<ListCursor, A2aError> {
    let invalid = || A2aError::invalid_field("pageToken", "is not a token this server issued");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid())?;
    let raw = String::from_utf8(raw).map_err(|_| invalid())?;
    let rest = raw.strip_prefix(TOKEN_PREFIX).ok_or_else(invalid)?;
    let (ts, id) = rest.split_once(':').ok_or_else(invalid)?;
    Ok(ListCursor {
        timestamp: ts.parse().map_err(|_| invalid())?,
        id: id.to_owned(),
    })
}

#[async_trait::async_trait]
impl A2aService for Engine {
    async fn send_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        // Only two settings matter here; the configuration itself moves into the turn.
        let (return_immediately, history_length) = req
            .configuration
            .as_ref()
            .map_or((false, None), |c| (c.return_immediately, c.history_length));
        let payload = match self.inner.start(cx, req, false).await? {
            Started::Message(m) => pb::send_message_response::Payload::Message(m),
            Started::Task {
                guard,
                after,
                snapshot,
            } => {
                let mut task = if return_immediately {
                    match snapshot {
                        Some(t) => t,
                        None => guard.live.writer.lock().await.record.task.clone(),
                    }
                } else {
                    self.inner.settle(&guard.live, after, cx).await?
                };
                trim_history(&mut task, history_length);
                pb::send_message_response::Payload::Task(task)
            }
        };
        Ok(pb::SendMessageResponse {
            payload: Some(payload),
        })
    }

    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        match self.inner.start(cx, req, true).await? {
            Started::Message(m) => {
                let event = StreamEvent {
                    seq: None,
                    response: Arc::new(pb::StreamResponse::new(
                        pb::stream_response::Payload::Message(m),
                    )),
                };
                Ok(futures::stream::once(async move { Ok(event) }).boxed())
            }
            Started::Task {
                guard,
                after,
                snapshot,
            } => {
                let LiveGuard { inner, live } = &guard;
                let lead = snapshot.map(|t| StreamEvent {
                    seq: Some(after),
                    response: Arc::new(pb::StreamResponse::new(
                        pb::stream_response::Payload::Task(t),
                    )),
                });
                Ok(follow(
                    inner.clone(),
                    live.clone(),
                    after,
                    lead,
                    StreamEnd::Turn,
                ))
            }
        }
    }

    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::GetTask, None)?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        validate::history_length(req.history_length)?;
        let mut task = self.inner.record(&scope, &req.id).await?.task;
        trim_history(&mut task, req.history_length);
        Ok(task)
    }

    async fn list_tasks(
        &self,
        cx: &CallContext,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::ListTasks, None)?;
        validate::history_length(req.history_length)?;
        let page_size = req.page_size.unwrap_or(50);
        if !(1..=100).contains(&page_size) {
            return Err(A2aError::invalid_field(
                "pageSize",
                format!("must be between 1 and 100, got {page_size}"),
            ));
        }
        let state = match pb::TaskState::try_from(req.status) {
            Ok(pb::TaskState::Unspecified) => None,
            Ok(s) => Some(s),
            Err(_) => {
                return Err(A2aError::invalid_field(
                    "status",
                    format!("unknown state {}", req.status),
                ));
            }
        };
        let after = match req.page_token.as_str() {
            "" => None,
            token => Some(decode_cursor(token)?),
        };
        let query = TaskQuery {
            context_id: Some(req.context_id.clone()).filter(|c| !c.is_empty()),
            state,
            updated_since: req.status_timestamp_after.as_ref().map(|t| t.unix_nanos()),
            after,
            limit: page_size as usize,
        };
        let page = self
            .inner
            .stores
            .tasks
            .list(&scope, &query)
            .await
            .map_err(store_error)?;
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        let tasks = page
            .tasks
            .into_iter()
            .map(|mut t| {
                trim_history(&mut t, req.history_length);
                if !include_artifacts {
                    t.artifacts.clear();
                }
                t
            })
            .collect();
        Ok(pb::ListTasksResponse {
            tasks,
            next_page_token: page.next.as_ref().map(encode_cursor).unwrap_or_default(),
            page_size,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }

    async fn cancel_task(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::CancelTask, None)?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        let guard = self.inner.live(&scope, &req.id).await?;
        let live = &guard.live;
        let snapshot = live.writer.lock().await.record.task.clone();
        let check = |task: &pb::Task| -> Result<bool, A2aError> {
            match task.state() {
                pb::TaskState::Canceled => Ok(true),
                s if s.is_terminal() => Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    format!("task {} is {}", task.id, s.as_str_name()),
                )
                .with_meta("taskId", task.id.clone())),
                _ => Ok(false),
            }
        };
        if check(&snapshot)? {
            return Ok(snapshot);
        }
        self.inner.executor.cancel(&snapshot).await?;
        // On a shared store another process may write the task meanwhile: re-read and retry.
        let mut attempts = 0;
        loop {
            let mut w = live.writer.lock().await;
            live.sync(&self.inner, &mut w).await?;
            if check(&w.record.task)? {
                return Ok(w.record.task.clone());
            }
            w.cancel.cancel();
            let event = set_status(
                &mut w.record.task,
                pb::TaskStatus::now(pb::TaskState::Canceled, None),
                req.metadata.clone(),
            );
            match live.commit(&self.inner, &mut w, vec![event]).await {
                Ok(_) => return Ok(w.record.task.clone()),
                Err(StoreError::Conflict) if attempts < 5 => attempts += 1,
                Err(e) => return Err(store_error(e)),
            }
        }
    }

    async fn subscribe_to_task(
        &self,
        cx: &CallContext,
        req: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::SubscribeToTask, None)?;
        self.inner.require_streaming()?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        let guard = self.inner.live(&scope, &req.id).await?;
        let (task, last_seq) = {
            let w = guard.live.writer.lock().await;
            (w.record.task.clone(), w.record.last_seq)
        };
        let LiveGuard { inner, live } = &guard;
        match cx.last_event_id {
            Some(resume) if resume > last_seq => Err(A2aError::invalid_field(
                "Last-Event-ID",
                format!("task {} has no event {resume}", task.id),
            )),
            Some(resume) => Ok(follow(
                inner.clone(),
                live.clone(),
                resume,
                None,
                StreamEnd::Terminal,
            )),
            None if task.state().is_terminal() => Err(A2aError::unsupported(format!(
                "task {} is {}; subscribe to tasks that are still running",
                task.id,
                task.state().as_str_name()
            ))
            .with_meta("taskId", task.id.clone())),
            None => {
                let lead = StreamEvent {
                    seq: Some(last_seq),
                    response: Arc::new(pb::StreamResponse::new(
                        pb::stream_response::Payload::Task(task),
                    )),
                };
                Ok(follow(
                    inner.clone(),
                    live.clone(),
                    last_seq,
                    Some(lead),
                    StreamEnd::Terminal,
                ))
            }
        }
    }

    async fn create_task_push_notification_config(
        &self,
        cx: &CallContext,
        mut req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        let scope = self.inner.admit(
            cx,
            &req.tenant,
            Operation::CreateTaskPushNotificationConfig,
            None,
        )?;
        self.inner.require_push()?;
        validate::id("taskId", &req.task_id, &self.inner.config.limits)?;
        let task_id = req.task_id.clone();
        validate::bind_push(&mut req, &task_id, &scope)?;
        self.inner.check_webhook(&req.url).await?;
        let guard = self.inner.live(&scope, &task_id).await?;
        let live = &guard.live;
        let mut w = live.writer.lock().await;
        self.inner
            .stores
            .push
            .put(&scope, &req)
            .await
            .map_err(store_error)?;
        w.has_push = Some(true);
        let from = w.record.last_seq;
        if !w.record.task.state().is_terminal() {
            push::kick_from(&self.inner, live, &mut w, from).await;
        }
        Ok(req)
    }

    async fn get_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        let scope = self.inner.admit(
            cx,
            &req.tenant,
            Operation::GetTaskPushNotificationConfig,
            None,
        )?;
        self.inner.require_push()?;
        validate::id("taskId", &req.task_id, &self.inner.config.limits)?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        self.inner.record(&scope, &req.task_id).await?;
        self.inner
            .stores
            .push
            .get(&scope, &req.task_id, &req.id)
            .await
            .map_err(store_error)?
            .map(redact_push_secrets)
            .ok_or_else(|| {
                A2aError::new(
                    ErrorKind::TaskNotFound,
                    format!(
                        "task {} has no push notification config {}",
                        req.task_id, req.id
                    ),
                )
                .with_meta("taskId", req.task_id.clone())
                .with_meta("configId", req.id.clone())
            })
    }

    async fn list_task_push_notification_configs(
        &self,
        cx: &CallContext,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        let scope = self.inner.admit(
            cx,
            &req.tenant,
            Operation::ListTaskPushNotificationConfigs,
            None,
        )?;
        self.inner.require_push()?;
        validate::id("taskId", &req.task_id, &self.inner.config.limits)?;
        let limit = match req.page_size {
            0 => 100,
            n if (1..=100).contains(&n) => n as usize,
            n => {
                return Err(A2aError::invalid_field(
                    "pageSize",
                    format!("must be between 1 and 100, got {n}"),
                ));
            }
        };
        let after = match req.page_token.as_str() {
            "" => None,
            token => Some(
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(token)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| {
                        A2aError::invalid_field("pageToken", "is not a token this server issued")
                    })?,
            ),
        };
        self.inner.record(&scope, &req.task_id).await?;
        let (configs, more) = self
            .inner
            .stores
            .push
            .list(&scope, &req.task_id, after.as_deref(), limit)
            .await
            .map_err(store_error)?;
        let next_page_token = match configs.last() {
            Some(last) if more => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&last.id),
            _ => String::new(),
        };
        Ok(pb::ListTaskPushNotificationConfigsResponse {
            configs: configs.into_iter().map(redact_push_secrets).collect(),
            next_page_token,
        })
    }

    async fn get_extended_agent_card(
        &self,
        cx: &CallContext,
        req: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        self.inner
            .admit(cx, &req.tenant, Operation::GetExtendedAgentCard, None)?;
        if !self.inner.capability(|c| c.extended_agent_card) {
            return Err(A2aError::unsupported(
                "this agent has no extended agent card",
            ));
        }
        if !cx.principal.is_authenticated() {
            return Err(A2aError::new(
                ErrorKind::Unauthenticated,
                "the extended agent card requires authentication",
            ));
        }
        self.inner
            .extended_card
            .clone()
            .ok_or_else(|| A2aError::of(ErrorKind::ExtendedAgentCardNotConfigured))
    }

    async fn delete_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        let scope = self.inner.admit(
            cx,
            &req.tenant,
            Operation::DeleteTaskPushNotificationConfig,
            None,
        )?;
        self.inner.require_push()?;
        validate::id("taskId", &req.task_id, &self.inner.config.limits)?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        self.inner.record(&scope, &req.task_id).await?;
        self.inner
            .stores
            .push
            .delete(&scope, &req.task_id, &req.id)
            .await
            .map_err(store_error)?;
        let live = self.inner.live_now(&scope, &req.task_id);
        if let Some(live) = live {
            live.writer.lock().await.has_push = None;
        }
        Ok(())
    }
}
