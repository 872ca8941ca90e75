//! The default [`A2aService`](trident_core::A2aService): every operation implemented once,
//! on an [`AgentExecutor`] and the [`Stores`].
//!
//! Documented choices where the spec leaves room (see docs/interop.md, "Behaviour choices"):
//! - A missing `A2A-Version` is read as 1.0 unless [`EngineConfig::strict_version`] is set.
//! - A message to a task whose executor is still running is refused with
//!   `UnsupportedOperation` (no queueing): send follow-ups once the task is interrupted.
//! - Canceling an already `CANCELED` task returns the task again; other terminal states give
//!   `TaskNotCancelable`.
//! - Streams end after a terminal state or `INPUT_REQUIRED`, and stay open through
//!   `AUTH_REQUIRED`.
//! - Deleting a push configuration that does not exist succeeds.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use trident_proto as pb;

mod admit;
mod builder;
mod cluster;
mod config;
mod handlers;
pub(crate) mod live;
mod policy;
pub(crate) mod push;
mod registry;
pub(crate) mod run;
mod send;
mod tokens;
mod validate;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod push_tests;
#[cfg(test)]
mod tests;

use live::Live;

use crate::auth::Authorizer;
use crate::store::{EventBus, Generation, Lease, Scope, Sharded, StoreError, Stores, now_ms};
use crate::{A2aError, AgentExecutor, ErrorKind};

pub use builder::EngineBuilder;
pub use config::{EngineConfig, Limits, PushConcurrency, PushLimits};
pub use policy::{
    AllowEntryError, Destination, PolicyError, WebhookPolicy, non_public, webhook_destination,
};
pub use push::{
    NOTIFICATION_ID_HEADER, RetryPolicy, V03TaskBody, WebhookError, WebhookRequest,
    WebhookTransport, webhook_request,
};

/// The A2A engine: implements [`A2aService`](trident_core::A2aService) for one agent.
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
    /// Writes the body of a v0.3 configuration's notification ([`EngineBuilder::v03_push_body`]).
    pub(crate) v03_body: Option<V03TaskBody>,
    authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) config: EngineConfig,
    live: Sharded<Arc<Live>>,
    /// Carries this process's commits to the other processes on the shared store, and theirs
    /// here, for the tasks held in memory ([`EngineBuilder::bus`]).
    pub(crate) bus: Option<Arc<dyn EventBus>>,
    /// News of commits made elsewhere that found no live task here (see
    /// [`Inner::live_for_news`]): a task loaded meanwhile catches up from the log.
    unclaimed_news: std::sync::atomic::AtomicU64,
    /// Cancelled when the server shuts down ([`Engine::close_streams`]).
    pub(crate) closing: CancellationToken,
    /// The store's clock minus this process's, in milliseconds, as last measured
    /// ([`Inner::sync_clock`]); 0 for a store nobody else uses.
    clock_offset_ms: std::sync::atomic::AtomicI64,
    /// `clock_offset_ms` has been measured once.
    clock_measured: std::sync::atomic::AtomicBool,
    /// Serializes adding push configurations per principal (by a hash of the scope), so two
    /// concurrent creates cannot both pass the limits' count.
    push_admission: Box<[tokio::sync::Mutex<()>]>,
    /// Webhook calls in flight ([`EngineConfig::push_concurrency`]).
    pub(crate) deliveries: push::Slots,
}

/// How many locks [`Inner::push_admission`] spreads principals over.
const PUSH_ADMISSION_LOCKS: usize = 32;

impl Inner {
    /// Stores a push configuration, within [`EngineConfig::push_limits`] unless it replaces
    /// one (the same id).
    pub(crate) async fn put_push(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), A2aError> {
        // A fixed hasher: the same scope must find the same lock every time.
        let hasher =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
        let i = (std::hash::BuildHasher::hash_one(&hasher, scope) as usize)
            % self.push_admission.len().max(1);
        let _admitted = match self.push_admission.get(i) {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        self.check_push_room(scope, &config.task_id, Some(&config.id))
            .await?;
        self.stores
            .push
            .put(scope, config, generation)
            .await
            .map_err(store_error)
    }

    /// Whether `scope` may add a push configuration to task `task_id` (`id`: the one it would
    /// replace, which needs no room): `ResourceExhausted` past either limit.
    pub(crate) async fn check_push_room(
        &self,
        scope: &Scope,
        task_id: &str,
        id: Option<&str>,
    ) -> Result<(), A2aError> {
        if let Some(id) = id
            && self
                .stores
                .push
                .get(scope, task_id, id)
                .await
                .map_err(store_error)?
                .is_some()
        {
            return Ok(());
        }
        let limits = self.config.push_limits;
        let count = self
            .stores
            .push
            .count(scope, task_id)
            .await
            .map_err(store_error)?;
        if count.task >= limits.per_task as u64 {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "task {task_id} has {} push notification configs, the most one task may \
                     have ({}); delete one first",
                    count.task, limits.per_task
                ),
            )
            .with_meta("taskId", task_id.to_owned())
            .with_meta("limit", "pushConfigsPerTask"));
        }
        if count.active >= limits.per_principal as u64 {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "the caller has {} push notification configs on tasks in progress, the \
                     most one principal may have ({}); delete some, or wait for tasks to end",
                    count.active, limits.per_principal
                ),
            )
            .with_meta("limit", "pushConfigsPerPrincipal"));
        }
        Ok(())
    }
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
            until_ms: self.clock_ms().saturating_add(self.lease_ttl_ms()),
        })
    }

    /// Now by the clock leases and delivery claims are written and judged in: the store's
    /// ([`TaskStore::clock_ms`](crate::store::TaskStore::clock_ms)), read as this process's
    /// clock plus the offset last measured ([`Inner::sync_clock`]). Replicas whose clocks
    /// disagree then agree on every lease: none takes a healthy task from another, and a dead
    /// one's tasks are recovered within the lease bound, whichever clock is off.
    pub(crate) fn clock_ms(&self) -> i64 {
        now_ms().saturating_add(
            self.clock_offset_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Whether leases are judged by the store's clock and its offset from this process's has
    /// not been measured yet ([`Inner::sync_clock`]): the first lease or claim a request
    /// writes may come before the first heartbeat or sweep.
    pub(crate) fn clock_unmeasured(&self) -> bool {
        self.stores.tasks.shared()
            && !self
                .clock_measured
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Measures the store's clock against this process's (on a shared store; a store nobody
    /// else uses is judged by this process's clock alone). Called before every heartbeat and
    /// every sweep, so a clock stepped or drifting since is caught before leases are renewed
    /// or judged again. The offset is taken against the middle of the round trip: its error
    /// is at most half of it. On failure the last offset stays.
    pub(crate) async fn sync_clock(&self) {
        if !self.stores.tasks.shared() {
            return;
        }
        let before = now_ms();
        match self.stores.tasks.clock_ms().await {
            Ok(store) => {
                let after = now_ms();
                let middle = before.saturating_add(after.saturating_sub(before) / 2);
                self.clock_offset_ms.store(
                    store.saturating_sub(middle),
                    std::sync::atomic::Ordering::Relaxed,
                );
                self.clock_measured
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "could not read the store's clock"),
        }
    }

    pub(crate) fn lease_ttl_ms(&self) -> i64 {
        i64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }
}

impl Engine {
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
