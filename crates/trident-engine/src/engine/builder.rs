//! [`EngineBuilder`]: what an [`Engine`] is made of, and its start.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use trident_proto as pb;

use super::admit::PUSH_ADMISSION_LOCKS;
use super::config::EngineConfig;
use super::push::{self, V03TaskBody, WebhookTransport};
use super::{Engine, Inner, cluster};
use crate::store::{EventBus, Sharded, Stores};
use trident_core::AgentExecutor;
use trident_core::auth::Authorizer;

/// Builds an [`Engine`].
pub struct EngineBuilder {
    executor: Arc<dyn AgentExecutor>,
    card: pb::AgentCard,
    extended_card: Option<pb::AgentCard>,
    stores: Option<Stores>,
    webhooks: Option<Arc<dyn WebhookTransport>>,
    v03_body: Option<V03TaskBody>,
    authorizer: Option<Arc<dyn Authorizer>>,
    bus: Option<Arc<dyn EventBus>>,
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

    /// Writes the notifications of push configurations created through an A2A v0.3 request
    /// (see [`trident_core::Generation`]) with `body`: v0.3 POSTs the task itself, in v0.3's
    /// JSON. The engine does not speak v0.3; the server builder passes the compatibility
    /// layer's encoder. Without one, such configurations are notified in 1.0's shape.
    pub fn v03_push_body(mut self, body: V03TaskBody) -> Self {
        self.v03_body = Some(body);
        self
    }

    /// Carries committed events between the processes sharing the task store (cluster mode)
    /// through `bus`, instead of the store's own notices
    /// ([`TaskStore::notices`](crate::store::TaskStore::notices)): every commit's events are
    /// published on it once stored, and every task this process holds in memory (a stream, a
    /// running turn, a webhook worker) is watched on it, so a process following a task that
    /// another one runs gets the events themselves and reads the store only for what the bus
    /// lost. Used only when the task store is [shared](crate::store::TaskStore::shared) (a
    /// store nobody else uses has nobody to tell); `trident::Server::builder` refuses a bus
    /// without one.
    pub fn bus(mut self, bus: Arc<dyn EventBus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// Engine settings.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// The engine. Inside a Tokio runtime this also starts its background work: start-up
    /// recovery of tasks whose process stopped (and of undelivered push notifications), and on
    /// a shared store the lease heartbeat, the sweeper and the follower of other processes'
    /// commits. All of it stops when the last handle to the engine is dropped.
    pub fn build(self) -> Engine {
        let stores = self.stores.unwrap_or_else(crate::store::in_memory);
        let bus = match self.bus {
            Some(_) if !stores.tasks.shared() => {
                tracing::warn!("an event bus without a shared task store: not used");
                None
            }
            bus => bus,
        };
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
                stores,
                bus,
                unclaimed_news: std::sync::atomic::AtomicU64::new(0),
                webhooks: self.webhooks,
                v03_body: self.v03_body,
                authorizer: self.authorizer,
                deliveries: push::Slots::new(self.config.push_concurrency),
                config: self.config,
                live: Sharded::new(),
                closing: CancellationToken::new(),
                clock_offset_ms: std::sync::atomic::AtomicI64::new(0),
                clock_measured: std::sync::atomic::AtomicBool::new(false),
                push_admission: (0..PUSH_ADMISSION_LOCKS)
                    .map(|_| tokio::sync::Mutex::new(()))
                    .collect(),
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

impl Engine {
    /// Starts building an engine for `executor`, with a minimal card (streaming and push
    /// notifications on).
    pub fn builder(executor: Arc<dyn AgentExecutor>) -> EngineBuilder {
        EngineBuilder {
            executor,
            card: trident_core::default_card("Trident agent", "An A2A agent served by Trident"),
            extended_card: None,
            stores: None,
            webhooks: None,
            v03_body: None,
            authorizer: None,
            bus: None,
            config: EngineConfig::default(),
        }
    }
}
