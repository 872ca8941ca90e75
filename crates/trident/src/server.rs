//! [`Server`]: an agent (or any [`A2aService`]) on all three bindings, wired with the right
//! defaults, in the style of `tonic::transport::Server::builder`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use trident_core::store::{EventBus, Stores};
use trident_core::{A2aService, AgentExecutor, Authenticator, Authorizer, JsonLimits};
use trident_engine::{Engine, EngineConfig, WebhookPolicy, WebhookRequest, WebhookTransport};
use trident_proto as pb;
use trident_security::SigningKey;
use trident_server::{
    Bindings, CallerLimits, ConnectionLimits, Interfaces, Limited, Metrics, Observed, ProxyOptions,
    ServerError, ServerOptions,
};

/// The header carrying a push notification's signature (see [`ServerBuilder::signing_key`]).
pub const NOTIFICATION_SIGNATURE_HEADER: &str = "a2a-notification-signature";
/// The card extension announcing signed push notifications.
pub const SIGNED_NOTIFICATIONS_EXTENSION: &str = "urn:trident:signed-push-notifications:v1";
/// How long one webhook attempt may take by default (the engine retries with backoff).
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open streams may take to finish after the shutdown signal, by default.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(10);

/// A setup [`ServerBuilder::build`] refuses, or a step of it that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The store spec did not open (`memory`, `sqlite:PATH` or `postgres://…`).
    #[error(transparent)]
    Store(#[from] crate::store::OpenError),
    /// The card declares `pushNotifications` but push delivery was turned off.
    #[error(
        "the card declares pushNotifications but push delivery is off: drop \
         `without_push_delivery()` or declare pushNotifications false"
    )]
    PushWithoutSender,
    /// A webhook sender was given but the card does not declare `pushNotifications`.
    #[error("a webhook sender was given but the card does not declare pushNotifications")]
    SenderWithoutPush,
    /// The HTTP client that sends webhooks could not be built.
    #[error("webhook sender: {0}")]
    WebhookClient(#[source] reqwest::Error),
    /// Two different webhook policies: [`ServerBuilder::webhook_policy`] and
    /// [`EngineConfig::webhook_policy`]. There is one policy, checked when a configuration is
    /// created and again when a webhook is sent.
    #[error(
        "two different webhook policies (the builder's and EngineConfig::webhook_policy); set it once"
    )]
    WebhookPolicyTwice,
    /// The card declares `extendedAgentCard` but no extended card was given.
    #[error("the card declares extendedAgentCard but no extended card was given")]
    ExtendedCardMissing,
    /// An extended card was given but the card does not declare `extendedAgentCard`.
    #[error("an extended card was given but the card does not declare extendedAgentCard")]
    ExtendedCardNotDeclared,
    /// An extended card is only served to authenticated callers: it needs an authenticator.
    #[error("an extended card needs an authenticator (it is served to authenticated callers only)")]
    ExtendedCardWithoutAuthentication,
    /// The card lists `supportedInterfaces` and a public URL was also given.
    #[error("the interfaces are given twice: in the card's supportedInterfaces and by public_url")]
    InterfacesTwice,
    /// A service served with [`Server::service`] has no card.
    #[error("a service needs its card: call `card(..)`")]
    MissingCard,
    /// A setting of the engine was given for a service that is not an engine.
    #[error("`{0}` applies to an agent served by the engine, not to a service")]
    NotAnEngine(&'static str),
    /// A field of [`ServerOptions`] that the builder sets itself was set in
    /// [`ServerBuilder::server_options`].
    #[error("ServerOptions::{0} is set by the builder (use its own method)")]
    OptionOwnedByBuilder(&'static str),
    /// The PROXY protocol is on but no proxy is trusted.
    #[error("the PROXY protocol needs trusted proxies (ProxyOptions::trusted)")]
    ProxyProtocolWithoutTrustedProxies,
    /// An event bus was given ([`ServerBuilder::events`]) with a store no other process
    /// shares (`memory`, `sqlite:…`): the bus carries events between the processes of one
    /// shared store (`postgres://…`), and there are none.
    #[error(
        "an event bus needs a store shared with other processes (postgres://…); this one is not"
    )]
    EventsWithoutSharedStore,
    /// The router could not be assembled.
    #[error(transparent)]
    Server(#[from] ServerError),
}

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The accept loop failed.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
    /// The task serving a [`Running`] server panicked.
    #[error("the serving task ended abnormally: {0}")]
    Task(#[source] tokio::task::JoinError),
}

/// Either error of a server's life, so that `main` can use `?` on both.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// [`ServerBuilder::build`] refused or failed.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// A server serving in the background ([`Server::spawn`]).
#[derive(Debug)]
pub struct Running {
    origin: String,
    interfaces: Interfaces,
    card: pb::AgentCard,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), Error>>,
}

impl Running {
    /// `http://ADDR` of the main listener: what a client connects to (the card is at
    /// `ORIGIN/.well-known/agent-card.json`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The URLs the card lists.
    pub fn interfaces(&self) -> &Interfaces {
        &self.interfaces
    }

    /// The public card, as served.
    pub fn card(&self) -> &pb::AgentCard {
        &self.card
    }

    /// Shuts the server down gracefully ([`Server::with_graceful_shutdown`]) and waits until
    /// it has.
    pub async fn shutdown(self) -> Result<(), Error> {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(served) => served,
            Err(e) => Err(ServeError::Task(e).into()),
        }
    }
}

/// What is served.
enum Source {
    Agent(Arc<dyn AgentExecutor>),
    Service(Arc<dyn A2aService>),
}

/// How push notifications are sent.
enum Push {
    /// Over HTTP(S) (`trident_http::HttpWebhooks`), each attempt timing out after this.
    Http(Duration),
    /// Through this transport.
    Custom(Arc<dyn WebhookTransport>),
    /// Not at all.
    Off,
}

enum StoreChoice {
    Spec(String),
    Stores(Stores),
}

type RouterLayer = Box<dyn Fn(axum::Router) -> axum::Router + Send + Sync>;

/// An A2A server: one agent (or service), the card, the three bindings, bound and ready.
/// Built with [`Server::builder`]; served with [`Server::with_graceful_shutdown`] or
/// [`Server::serve`].
pub struct Server {
    svc: Arc<dyn A2aService>,
    engine: Option<Engine>,
    card: pb::AgentCard,
    interfaces: Interfaces,
    addr: SocketAddr,
    grpc_addr: Option<SocketAddr>,
    main: tokio::net::TcpListener,
    grpc: Option<tokio::net::TcpListener>,
    options: ServerOptions,
    metrics: Arc<Metrics>,
    limits: ConnectionLimits,
    proxies: ProxyOptions,
    drain: Duration,
    layers: Vec<RouterLayer>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("agent", &self.card.name)
            .field("addr", &self.addr)
            .field("grpc_addr", &self.grpc_addr)
            .field("interfaces", &self.interfaces)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Server`]; see the [crate docs](crate) for the whole story.
///
/// Defaults: listen on `127.0.0.1:8080` with all three bindings (HTTP/1.1 and h2c on one
/// port), the in-memory store, [`trident_core::default_card`], the card's interfaces from the
/// bound address, push notifications sent over HTTP(S) to public addresses only, no
/// authentication, [`ConnectionLimits::default`], 10 s to drain at shutdown, metrics at
/// `/metrics`.
#[must_use = "a builder does nothing until `build()`"]
pub struct ServerBuilder {
    source: Source,
    card: Option<pb::AgentCard>,
    extended_card: Option<pb::AgentCard>,
    store: Option<StoreChoice>,
    listen: String,
    grpc_listen: Option<String>,
    public_url: Option<String>,
    webhook_policy: Option<WebhookPolicy>,
    push: Option<Push>,
    authenticator: Option<Arc<dyn Authenticator>>,
    allow_anonymous: bool,
    authorizer: Option<Arc<dyn Authorizer>>,
    events: Option<Arc<dyn EventBus>>,
    config: Option<EngineConfig>,
    caller_limits: Option<CallerLimits>,
    connection_limits: ConnectionLimits,
    proxies: ProxyOptions,
    options: ServerOptions,
    max_body: Option<usize>,
    json_limits: Option<JsonLimits>,
    drain: Duration,
    serve_metrics: bool,
    signing_key: Option<SigningKey>,
    layers: Vec<RouterLayer>,
}

impl Server {
    /// A server for `executor`, run by the engine (every RPC, task lifecycle, streams that
    /// resume, push delivery).
    pub fn builder(executor: impl AgentExecutor) -> ServerBuilder {
        Self::builder_shared(Arc::new(executor))
    }

    /// [`Server::builder`] for an executor already behind an `Arc`.
    pub fn builder_shared(executor: Arc<dyn AgentExecutor>) -> ServerBuilder {
        ServerBuilder::new(Source::Agent(executor))
    }

    /// A server for any [`A2aService`] — e.g. a client of another agent
    /// ([`trident_client::Upstream`]), which makes a gateway. The card is required
    /// ([`ServerBuilder::card`]); settings of the engine (store, extended card, webhooks,
    /// authorizer, engine config, signing of notifications) are refused.
    pub fn service(svc: Arc<dyn A2aService>) -> ServerBuilder {
        ServerBuilder::new(Source::Service(svc))
    }

    /// The address the main listener is bound to (with the port the system chose for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of the gRPC listener, when gRPC has its own.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    /// The URLs the card lists.
    pub fn interfaces(&self) -> &Interfaces {
        &self.interfaces
    }

    /// The public card, as served (interfaces, security, signature).
    pub fn card(&self) -> &pb::AgentCard {
        &self.card
    }

    /// The engine, when the server runs an agent (not with [`Server::service`]).
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.as_ref()
    }

    /// The request metrics (also served at `/metrics` unless turned off).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Serves until Ctrl-C or SIGTERM ([`shutdown_signal`]), then shuts down gracefully.
    pub async fn serve(self) -> Result<(), Error> {
        self.with_graceful_shutdown(shutdown_signal()).await
    }

    /// Serves in a background task and returns at once: the handle says where the server
    /// listens and [`Running::shutdown`] stops it gracefully. For programs that serve and do
    /// something else — tests, examples that call the agent they serve, an agent that is also
    /// a client. Dropping the handle shuts the server down too (without waiting for it).
    pub fn spawn(self) -> Running {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let origin = format!("http://{}", self.addr);
        let interfaces = self.interfaces.clone();
        let card = self.card.clone();
        let task = tokio::spawn(self.with_graceful_shutdown(async {
            let _ = stopped.await;
        }));
        Running {
            origin,
            interfaces,
            card,
            stop,
            task,
        }
    }

    /// Serves until `signal` completes; then stops accepting connections, tells open streams
    /// to resubscribe (at once on a shared store, where another replica serves them; else
    /// after most of the drain period), lets open requests finish for the drain period, and
    /// hands the tasks this process was running over to other replicas
    /// ([`Engine::shutdown`]).
    pub async fn with_graceful_shutdown(
        self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let Server {
            svc,
            engine,
            card,
            main,
            grpc,
            options,
            limits,
            proxies,
            drain,
            layers,
            ..
        } = self;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let closing = engine.clone();
        tokio::spawn(async move {
            signal.await;
            tracing::info!(?drain, "shutting down: no new connections");
            let _ = stop_tx.send(true);
            if let Some(engine) = closing {
                if !engine.shares_store() {
                    tokio::time::sleep(drain.mul_f64(0.8)).await;
                }
                engine.close_streams();
            }
        });
        let stopped = move || {
            let mut rx = stop_rx.clone();
            async move {
                let _ = rx.wait_for(|s| *s).await;
            }
        };
        let layered = |router: axum::Router| layers.iter().fold(router, |r, layer| layer(r));
        // The routers were checked to assemble in `build`; they are made again here (cheap)
        // so that `Server` holds no half-built state.
        let app = |bindings: Bindings| {
            trident_server::app(
                svc.clone(),
                &card,
                &ServerOptions {
                    bindings,
                    ..options.clone()
                },
            )
            .map(&layered)
            .map_err(|e| std::io::Error::other(e.to_string()))
        };
        let served = async {
            match grpc {
                None => {
                    trident_server::serve_with_proxies(
                        main,
                        app(Bindings::ALL)?,
                        stopped(),
                        drain,
                        limits,
                        proxies,
                    )
                    .await
                }
                Some(grpc) => {
                    let (http, grpc_app) = (app(Bindings::HTTP)?, app(Bindings::GRPC)?);
                    let (a, b) = tokio::join!(
                        trident_server::serve_with_proxies(
                            main,
                            http,
                            stopped(),
                            drain,
                            limits,
                            proxies.clone()
                        ),
                        trident_server::serve_with_proxies(
                            grpc,
                            grpc_app,
                            stopped(),
                            drain,
                            limits,
                            proxies
                        )
                    );
                    a.and(b)
                }
            }
        };
        let result = served.await;
        // Tasks this process was running: handed to the other replicas now rather than when
        // their leases lapse (a store nobody else uses recovers them at the next start).
        if let Some(engine) = engine {
            engine.shutdown().await;
        }
        result.map_err(|e| Error::Serve(ServeError::Io(e)))
    }
}

impl ServerBuilder {
    fn new(source: Source) -> Self {
        Self {
            source,
            card: None,
            extended_card: None,
            store: None,
            listen: "127.0.0.1:8080".to_owned(),
            grpc_listen: None,
            public_url: None,
            webhook_policy: None,
            push: None,
            authenticator: None,
            allow_anonymous: false,
            authorizer: None,
            events: None,
            config: None,
            caller_limits: None,
            connection_limits: ConnectionLimits::default(),
            proxies: ProxyOptions::default(),
            options: ServerOptions::default(),
            max_body: None,
            json_limits: None,
            drain: DEFAULT_DRAIN,
            serve_metrics: true,
            signing_key: None,
            layers: Vec::new(),
        }
    }

    /// The public agent card (given once: the builder fills in its interfaces, declares the
    /// authenticator's schemes, and signs it last). Its capabilities decide streaming, push
    /// delivery and the extended card. Default: [`trident_core::default_card`].
    pub fn card(mut self, card: pb::AgentCard) -> Self {
        self.card = Some(card);
        self
    }

    /// The card GetExtendedAgentCard returns to authenticated callers. The public card must
    /// declare `extendedAgentCard`, and an [`authenticator`](Self::authenticator) is required.
    pub fn extended_card(mut self, card: pb::AgentCard) -> Self {
        self.extended_card = Some(card);
        self
    }

    /// Where tasks live: `memory` (the default; lost on exit), `sqlite:PATH` (a file, created
    /// if missing) or `postgres://…` (cluster mode: every process on the same database serves
    /// every task). See [`crate::store::open`].
    pub fn store(mut self, spec: impl Into<String>) -> Self {
        self.store = Some(StoreChoice::Spec(spec.into()));
        self
    }

    /// Stores opened by the caller (e.g. an implementation of the store traits of its own).
    pub fn stores(mut self, stores: Stores) -> Self {
        self.store = Some(StoreChoice::Stores(stores));
        self
    }

    /// The address to listen on (`host:port`; port 0 picks a free one). HTTP/1.1 and h2c share
    /// the port; all three bindings are served there unless gRPC gets its own listener.
    pub fn bind(mut self, addr: impl ToString) -> Self {
        self.listen = addr.to_string();
        self
    }

    /// Serves gRPC on a listener of its own at `addr`.
    pub fn grpc_bind(mut self, addr: impl ToString) -> Self {
        self.grpc_listen = Some(addr.to_string());
        self
    }

    /// The public origin written into the card (`https://agent.example.com`), when the server
    /// sits behind a proxy. Default: `http://` and the bound address.
    pub fn public_url(mut self, origin: impl Into<String>) -> Self {
        self.public_url = Some(origin.into());
        self
    }

    /// Where webhooks may point: the one policy, checked when a push configuration is created
    /// (so the client learns at once) and again by the sender on every connection (DNS
    /// rebinding). Default: public addresses only.
    pub fn webhook_policy(mut self, policy: WebhookPolicy) -> Self {
        self.webhook_policy = Some(policy);
        self
    }

    /// How long one webhook attempt may take (default 10 s; the engine retries with backoff).
    pub fn webhook_timeout(mut self, timeout: Duration) -> Self {
        self.push = Some(Push::Http(timeout));
        self
    }

    /// Sends push notifications through `transport` instead of over HTTP(S). The card must
    /// declare `pushNotifications`.
    pub fn webhooks(mut self, transport: Arc<dyn WebhookTransport>) -> Self {
        self.push = Some(Push::Custom(transport));
        self
    }

    /// Sends no push notifications. The card must then not declare `pushNotifications`.
    pub fn without_push_delivery(mut self) -> Self {
        self.push = Some(Push::Off);
        self
    }

    /// Authenticates every request on every binding; only the public card (and JWKS) stay
    /// reachable without credentials. Its schemes are declared in the card.
    pub fn authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// With an authenticator: let requests without credentials through as the anonymous
    /// principal (credentials that are sent must still be valid). Off by default.
    pub fn allow_anonymous(mut self, allow: bool) -> Self {
        self.allow_anonymous = allow;
        self
    }

    /// Asks `authorizer` before every call (after authentication, before any store access).
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Carries the events of tasks between the processes sharing the store (cluster mode)
    /// through `bus` (e.g. NATS JetStream), instead of the store's own notices: each commit's
    /// events are published on it once stored, and a process serving a stream of a task that
    /// another process runs gets those events from it, reading the store only for what the bus
    /// lost. Needs a store that other processes share (`postgres://…`): [`build`](Self::build)
    /// refuses another with [`BuildError::EventsWithoutSharedStore`].
    pub fn events(mut self, bus: Arc<dyn EventBus>) -> Self {
        self.events = Some(bus);
        self
    }

    /// Engine settings (version strictness, limits, leases, node id). Its `webhook_policy`
    /// is the same one as [`webhook_policy`](Self::webhook_policy): set it in one place.
    pub fn engine_config(mut self, config: EngineConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Per-caller request rate and open-stream limits (default: none).
    pub fn caller_limits(mut self, limits: CallerLimits) -> Self {
        self.caller_limits = Some(limits);
        self
    }

    /// Connection timeouts and the connection cap (default: [`ConnectionLimits::default`]).
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.connection_limits = limits;
        self
    }

    /// Which proxies may name the client (default: nobody).
    pub fn proxies(mut self, proxies: ProxyOptions) -> Self {
        self.proxies = proxies;
        self
    }

    /// Settings of the bindings (`rest`, `jsonrpc`, `grpc`, `card_max_age`). The builder sets
    /// `authenticator`, `allow_anonymous`, `metrics`, `jwks`, `caller_limits` and `bindings`
    /// itself; `build()` refuses options that set them.
    pub fn server_options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// The protocol generations served (default: 1.0 and 0.3). With 0.3 on, v0.3 clients are
    /// answered on every binding beside 1.0 clients, translated into the same calls, and the
    /// card carries what they read. Set after [`server_options`](Self::server_options), which
    /// replaces it.
    pub fn protocols(mut self, protocols: trident_server::Protocols) -> Self {
        self.options.protocols = protocols;
        self
    }

    /// The largest request body on every binding, in bytes.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = Some(bytes);
        self
    }

    /// How much memory decoding a JSON request body may take on the JSON bindings, relative
    /// to its size (default: 4 × the body + 1 MiB; see [`JsonLimits`]). A body over it is
    /// refused with `InvalidParams` before it is decoded.
    pub fn json_limits(mut self, limits: JsonLimits) -> Self {
        self.json_limits = Some(limits);
        self
    }

    /// How long open requests and streams may take to finish after the shutdown signal
    /// (default 10 s).
    pub fn drain(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
    }

    /// Whether to serve the metrics at `/metrics` (default: yes).
    pub fn serve_metrics(mut self, serve: bool) -> Self {
        self.serve_metrics = serve;
        self
    }

    /// Signs the card with `key`, serves its public key at `/.well-known/jwks.json` (the key's
    /// `jku` defaults to that URL) and, when push notifications are sent over HTTP, signs
    /// each one in the [`NOTIFICATION_SIGNATURE_HEADER`] (declared in the card as the
    /// [`SIGNED_NOTIFICATIONS_EXTENSION`]).
    pub fn signing_key(mut self, key: SigningKey) -> Self {
        self.signing_key = Some(key);
        self
    }

    /// Applies `layer` to each router before it is served (e.g. `|r| r.layer(…)` with a tower
    /// layer, or extra routes). Applied in the order given, outside the authentication layer.
    pub fn map_router(
        mut self,
        layer: impl Fn(axum::Router) -> axum::Router + Send + Sync + 'static,
    ) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// Checks the setup, opens the store, binds the listeners and assembles the server.
    pub async fn build(self) -> Result<Server, BuildError> {
        let ServerBuilder {
            source,
            card,
            extended_card,
            store,
            listen,
            grpc_listen,
            public_url,
            webhook_policy,
            push,
            authenticator,
            allow_anonymous,
            authorizer,
            events,
            config,
            caller_limits,
            connection_limits,
            proxies,
            options,
            max_body,
            json_limits,
            drain,
            serve_metrics,
            signing_key,
            layers,
        } = self;

        // Coherence first: nothing is bound or opened for a setup that cannot work.
        let agent = matches!(source, Source::Agent(_));
        if !agent {
            let engine_only = [
                (store.is_some(), "store"),
                (extended_card.is_some(), "extended_card"),
                (push.is_some(), "webhooks"),
                (webhook_policy.is_some(), "webhook_policy"),
                (authorizer.is_some(), "authorizer"),
                (events.is_some(), "events"),
                (config.is_some(), "engine_config"),
            ];
            if let Some((_, name)) = engine_only.iter().find(|(set, _)| *set) {
                return Err(BuildError::NotAnEngine(name));
            }
        }
        let mut card = match (card, agent) {
            (Some(card), _) => card,
            (None, true) => {
                trident_core::default_card("Trident agent", "An agent served by Trident")
            }
            (None, false) => return Err(BuildError::MissingCard),
        };
        for (set, name) in [
            (options.authenticator.is_some(), "authenticator"),
            (options.allow_anonymous, "allow_anonymous"),
            (options.metrics.is_some(), "metrics"),
            (options.jwks.is_some(), "jwks"),
            (options.caller_limits.is_some(), "caller_limits"),
            (options.bindings != Bindings::ALL, "bindings"),
        ] {
            if set {
                return Err(BuildError::OptionOwnedByBuilder(name));
            }
        }
        if proxies.proxy_protocol && proxies.trusted.is_empty() {
            return Err(BuildError::ProxyProtocolWithoutTrustedProxies);
        }
        if !card.supported_interfaces.is_empty() && public_url.is_some() {
            return Err(BuildError::InterfacesTwice);
        }
        let capabilities = card.capabilities.clone().unwrap_or_default();
        let mut config = config;
        let policy = match (webhook_policy, config.as_mut()) {
            (Some(p), Some(c)) if c.webhook_policy != WebhookPolicy::default() => {
                if c.webhook_policy != p {
                    return Err(BuildError::WebhookPolicyTwice);
                }
                p
            }
            (Some(p), _) => p,
            (None, Some(c)) => c.webhook_policy.clone(),
            (None, None) => WebhookPolicy::default(),
        };
        if agent {
            let declares_push = capabilities.push_notifications == Some(true);
            match (&push, declares_push) {
                (Some(Push::Off), true) => return Err(BuildError::PushWithoutSender),
                (Some(Push::Custom(_)), false) => return Err(BuildError::SenderWithoutPush),
                _ => {}
            }
            let declares_extended = capabilities.extended_agent_card == Some(true);
            match (&extended_card, declares_extended) {
                (None, true) => return Err(BuildError::ExtendedCardMissing),
                (Some(_), false) => return Err(BuildError::ExtendedCardNotDeclared),
                (Some(_), true) if authenticator.is_none() => {
                    return Err(BuildError::ExtendedCardWithoutAuthentication);
                }
                _ => {}
            }
        }

        // Listeners, and the interfaces they serve.
        let main = tokio::net::TcpListener::bind(listen.as_str())
            .await
            .map_err(|source| BuildError::Bind {
                addr: listen.clone(),
                source,
            })?;
        let addr = main.local_addr().map_err(|source| BuildError::Bind {
            addr: listen.clone(),
            source,
        })?;
        let grpc =
            match &grpc_listen {
                Some(a) => Some(tokio::net::TcpListener::bind(a.as_str()).await.map_err(
                    |source| BuildError::Bind {
                        addr: a.clone(),
                        source,
                    },
                )?),
                None => None,
            };
        let grpc_addr = match &grpc {
            Some(g) => Some(g.local_addr().map_err(|source| BuildError::Bind {
                addr: grpc_listen.clone().unwrap_or_default(),
                source,
            })?),
            None => None,
        };
        let interfaces = if card.supported_interfaces.is_empty() {
            let mut interfaces = match &public_url {
                Some(origin) => Interfaces::at(origin),
                None => Interfaces::local(addr),
            };
            if let Some(g) = grpc_addr {
                interfaces.grpc = g.to_string();
            }
            card = trident_server::card_with_interfaces(card, &interfaces);
            interfaces
        } else {
            interfaces_of(&card, addr)
        };
        if let Some(auth) = &authenticator {
            trident_core::auth::declare_security(&mut card, auth.as_ref());
        }
        let signing = signing_key.map(|key| {
            if key.jku().is_some() {
                key
            } else {
                let jku = format!(
                    "{}{}",
                    interfaces.rest.trim_end_matches('/'),
                    trident_server::JWKS_PATH
                );
                key.with_jku(jku)
            }
        });

        let metrics = Arc::new(Metrics::new());
        let (svc, engine): (Arc<dyn A2aService>, Option<Engine>) = match source {
            Source::Service(svc) => (svc, None),
            Source::Agent(executor) => {
                let transport: Option<Arc<dyn WebhookTransport>> = match push {
                    Some(Push::Off) => None,
                    Some(Push::Custom(t)) => Some(t),
                    Some(Push::Http(timeout)) => Some(http_webhooks(
                        timeout,
                        &policy,
                        signing.as_ref(),
                        &interfaces,
                        &mut card,
                    )?),
                    None => Some(http_webhooks(
                        DEFAULT_WEBHOOK_TIMEOUT,
                        &policy,
                        signing.as_ref(),
                        &interfaces,
                        &mut card,
                    )?),
                };
                let stores = match store {
                    Some(StoreChoice::Stores(s)) => s,
                    Some(StoreChoice::Spec(spec)) => crate::store::open(&spec).await?,
                    None => trident_engine::store::in_memory(),
                };
                // Known once the store is open: whether it is shared is the store's to say.
                if events.is_some() && !stores.tasks.shared() {
                    return Err(BuildError::EventsWithoutSharedStore);
                }
                let stores = trident_server::observed_stores(stores, metrics.clone());
                if let Some(key) = &signing {
                    // Last: the signature covers everything above.
                    trident_security::sign_card(&mut card, key);
                }
                let config = EngineConfig {
                    webhook_policy: policy,
                    ..config.unwrap_or_default()
                };
                // Configurations created through v0.3 are notified in v0.3's shape (also
                // those stored before 0.3 was turned off).
                let mut builder = Engine::builder(executor)
                    .stores(stores)
                    .card(card.clone())
                    .config(config)
                    .v03_push_body(trident_server::v03_push_body);
                if let Some(t) = transport {
                    builder = builder.webhooks(t);
                }
                if let Some(extended) = extended_card {
                    builder = builder.extended_card(extended);
                }
                if let Some(a) = authorizer {
                    builder = builder.authorizer(a);
                }
                if let Some(bus) = events {
                    builder = builder.bus(bus);
                }
                let engine = builder.build();
                (Arc::new(engine.clone()), Some(engine))
            }
        };
        if engine.is_none()
            && let Some(key) = &signing
        {
            trident_security::sign_card(&mut card, key);
        }

        // The service behind the per-caller stream limit, observed; the server's edge charges
        // the rate for every request (malformed and refused ones included), once.
        let (svc, limited): (Arc<dyn A2aService>, _) = match caller_limits {
            Some(l) if l.rate > 0.0 || l.max_streams > 0 => {
                let limited = Arc::new(Limited::new(svc, l));
                (limited.clone(), Some(limited))
            }
            _ => (svc, None),
        };
        let svc: Arc<dyn A2aService> = Arc::new(Observed::new(svc, metrics.clone()));
        let mut options = ServerOptions {
            metrics: serve_metrics.then(|| metrics.clone()),
            authenticator,
            allow_anonymous,
            jwks: signing
                .as_ref()
                .and_then(|k| serde_json::to_string(&k.jwks()).ok()),
            caller_limits: limited,
            ..options
        };
        if let Some(n) = max_body {
            options.rest.max_body = n;
            options.jsonrpc.max_body = n;
            options.grpc.max_request_size = n;
        }
        if let Some(limits) = json_limits {
            options.rest.json = limits;
            options.jsonrpc.json = limits;
        }
        // Refuse now what would only fail once serving.
        let _checked = trident_server::app(svc.clone(), &card, &options)?;
        Ok(Server {
            svc,
            engine,
            card,
            interfaces,
            addr,
            grpc_addr,
            main,
            grpc,
            options,
            metrics,
            limits: connection_limits,
            proxies,
            drain,
            layers,
        })
    }
}

/// The HTTP(S) webhook sender under `policy`, signing each notification with `signing` (and
/// declaring so in `card`).
fn http_webhooks(
    timeout: Duration,
    policy: &WebhookPolicy,
    signing: Option<&SigningKey>,
    interfaces: &Interfaces,
    card: &mut pb::AgentCard,
) -> Result<Arc<dyn WebhookTransport>, BuildError> {
    let mut webhooks = trident_http::HttpWebhooks::with_policy(timeout, policy.clone())
        .map_err(BuildError::WebhookClient)?;
    if let Some(key) = signing {
        let signer = key.clone();
        webhooks = webhooks.with_signer(Arc::new(move |req: &WebhookRequest| {
            (
                NOTIFICATION_SIGNATURE_HEADER,
                trident_security::notification_jwt(&signer, &req.task_id, req.seq, &req.body),
            )
        }));
        card.capabilities
            .get_or_insert_with(Default::default)
            .extensions
            .push(pb::AgentExtension {
                uri: SIGNED_NOTIFICATIONS_EXTENSION.into(),
                description: format!(
                    "Push notifications carry a compact JWS in the {NOTIFICATION_SIGNATURE_HEADER} \
                     header (claims taskId, seq, bodySha256, iat), verifiable with the keys at \
                     {}{}",
                    interfaces.rest,
                    trident_server::JWKS_PATH
                ),
                required: false,
                params: None,
            });
    }
    Ok(Arc::new(webhooks))
}

/// The interfaces a card lists (any missing binding: the bound address's).
fn interfaces_of(card: &pb::AgentCard, addr: SocketAddr) -> Interfaces {
    let local = Interfaces::local(addr);
    let find = |binding: &str| {
        card.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case(binding))
            .map(|i| i.url.clone())
    };
    Interfaces {
        jsonrpc: find("JSONRPC").unwrap_or(local.jsonrpc),
        rest: find("HTTP+JSON").unwrap_or(local.rest),
        grpc: find("GRPC").unwrap_or(local.grpc),
    }
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM: the usual signal for
/// [`Server::with_graceful_shutdown`].
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
