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
//!
//! Where things are. Every module below names its siblings directly (`super::live::…`,
//! never a re-export of this one), and no two import each other (a tidy test checks):
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | [`Engine`] and its state `Inner`; task-event helpers (`set_status`, `agent_text`) |
//! | `handlers.rs` | the `A2aService` operations: each decodes a request and shapes its answer |
//! | `send.rs` | `impl Inner`: SendMessage's turn (`start`, a follow-up) and the blocking caller's wait (`settle`) |
//! | `run.rs` | one executor turn (`Run`): the task its first event creates, the end-of-turn rules |
//! | `live.rs` | the live task (`Live`): its single writer, commits, holds, tail and progress; `live/follow.rs` its streams, `live/outbox.rs` its push delivery worker |
//! | `registry.rs` | `impl Inner`: the live tasks in memory, loaded on demand, released by their last holder |
//! | `admit.rs` | `impl Inner`: admission (version, extensions, tenant, authorization, capabilities) and push configuration room |
//! | `cluster.rs` | `impl Inner`: the store's clock and leases; background work (recovery, heartbeat, following other processes, outbox sweep) |
//! | `push.rs` | webhook calls: request, transport, retries, slots |
//! | `policy.rs` | which hosts a webhook URL may name |
//! | `builder.rs`, `config.rs` | building an engine, its settings |
//! | `validate.rs`, `tokens.rs` | request checks; page tokens |

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use trident_proto as pb;

mod admit;
mod builder;
mod cluster;
mod config;
mod handlers;
mod live;
mod policy;
mod push;
mod registry;
mod run;
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

use crate::store::{EventBus, Sharded, StoreError, Stores};
use trident_core::auth::Authorizer;
use trident_core::{A2aError, AgentExecutor, ErrorKind};

pub use builder::EngineBuilder;
pub use config::{EngineConfig, Limits, Preview, PushConcurrency, PushLimits, RetryPolicy};
pub use policy::{
    AllowEntryError, Destination, PolicyError, WebhookPolicy, non_public, webhook_destination,
};
pub use push::{
    NOTIFICATION_ID_HEADER, V03TaskBody, WebhookError, WebhookRequest, WebhookTransport,
    webhook_request,
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
            generation: 0,
        },
    ));
    crate::store::apply(task, &event);
    event
}

/// A `ROLE_AGENT` text message of task `task_id` in context `context_id`, with a fresh id.
pub(crate) fn agent_text(task_id: &str, context_id: &str, text: String) -> pb::Message {
    let mut m = pb::Message::agent(uuid::Uuid::new_v4().to_string(), vec![pb::Part::text(text)]);
    m.context_id = context_id.to_owned();
    m.task_id = task_id.to_owned();
    m
}
