//! The A2A task engine and the in-memory store.
//!
//! - [`Engine`]: the default [`A2aService`](trident_core::A2aService) — every operation
//!   implemented once on an [`AgentExecutor`](trident_core::AgentExecutor) and the
//!   [`store`] traits: task lifecycle, the per-task ordered event log, streams that resume,
//!   push delivery from an outbox, and the background work of a cluster (recovery, leases).
//! - [`store`]: the store traits (from `trident-core`) and [`MemoryStore`](store::MemoryStore),
//!   the sharded in-memory store the engine uses by default.
//!
//! The engine knows no transport and no database: bindings call it through `A2aService`,
//! webhooks leave through [`WebhookTransport`], durable stores plug in through the traits.

pub mod engine;

pub mod store {
    //! The store traits (re-exported from `trident-core`) and the in-memory store.

    // A glob on purpose: this module is the store vocabulary as the engine's users see it,
    // `trident-core`'s whole `store` module plus the in-memory store, and grows with it.
    pub use trident_core::store::*;

    mod memory;
    mod shard;

    pub use memory::{Clock, MemoryParamError, MemoryStore, Retention};
    pub(crate) use shard::{ShardExt, Sharded, lock as lock_std};

    /// All three stores backed by one new in-memory store (the engine's default).
    pub fn in_memory() -> Stores {
        Stores::of(std::sync::Arc::new(MemoryStore::new()))
    }

    /// The in-memory stores a store spec names: `memory` (at most
    /// [`Retention::DEFAULT_MAX_TASKS`] tasks), or `memory?…` with the [`Retention`] its
    /// parameters set ([`Retention::from_params`]); `None` when `spec` names another store.
    ///
    /// ```
    /// use trident_engine::store::open_memory;
    ///
    /// assert!(matches!(open_memory("memory?max_tasks=10"), Some(Ok(_))));
    /// assert!(matches!(open_memory("memory?max_tasks=ten"), Some(Err(_))));
    /// assert!(open_memory("sqlite:tasks.db").is_none());
    /// ```
    pub fn open_memory(spec: &str) -> Option<Result<Stores, MemoryParamError>> {
        if spec == "memory" {
            return Some(Ok(in_memory()));
        }
        let params = spec.strip_prefix("memory?")?;
        Some(Retention::from_params(params).map(|retention| {
            Stores::of(std::sync::Arc::new(MemoryStore::with_retention(retention)))
        }))
    }
}

pub use engine::{
    AllowEntryError, Destination, Engine, EngineBuilder, EngineConfig, EngineStats, Limits,
    NOTIFICATION_ID_HEADER, PolicyError, Preview, PushConcurrency, PushLimits, RetryPolicy,
    WebhookError, WebhookPolicy, WebhookRequest, WebhookTransport, non_public, webhook_destination,
};
