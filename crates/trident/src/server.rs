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
    Bindings, CARD_PATH, CallerLimits, ConnectionLimits, Cors, Interfaces, JWKS_PATH, Limited,
    METRICS_PATH, Metrics, Observed, ProxyOptions, ServerError, ServerOptions,
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
    /// The path given to [`ServerBuilder::jsonrpc_path`] is not an absolute path of plain
    /// segments (`/`, letters, digits, `-`, `.`, `_`, `~`), or is one the server serves
    /// something else at (the card, JWKS, metrics, OpenAPI).
    #[error(
        "JSON-RPC cannot be served at {0:?}: give an absolute path of plain segments not taken by the card, JWKS, metrics or OpenAPI"
    )]
    JsonRpcPath(String),
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
    /// [`card_url`](Self::card_url)).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Where the card is served: the origin and [`CARD_PATH`].
    pub fn card_url(&self) -> String {
        format!("{}{CARD_PATH}", self.origin)
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

/// Where the main listener comes from.
enum Listen {
    /// Bound by `build()` at this address.
    At(String),
    /// Bound by the caller ([`ServerBuilder::listener`]).
    Bound(tokio::net::TcpListener),
}

type RouterLayer = Box<dyn Fn(axum::Router) -> axum::Router + Send + Sync>;

/// A listener and the router it serves, assembled once by `build()`.
struct Endpoint {
    listener: tokio::net::TcpListener,
    router: axum::Router,
}

/// An A2A server: one agent (or service), the card, the three bindings, bound and ready.
/// Built with [`Server::builder`]; served with [`Server::with_graceful_shutdown`] or
/// [`Server::serve`].
pub struct Server {
    engine: Option<Engine>,
    card: pb::AgentCard,
    interfaces: Interfaces,
    addr: SocketAddr,
    grpc_addr: Option<SocketAddr>,
    /// The main listener (all bindings, or all but gRPC when `grpc` is set).
    main: Endpoint,
    /// gRPC's own listener.
    grpc: Option<Endpoint>,
    metrics: Arc<Metrics>,
    limits: ConnectionLimits,
    proxies: ProxyOptions,
    drain: Duration,
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
/// port, JSON-RPC at `/`), the in-memory store, [`trident_core::default_card`], the card's
/// interfaces from the bound address, push notifications sent over HTTP(S) to public addresses
/// only, no authentication, [`ConnectionLimits::default`], 10 s to drain at shutdown, metrics
/// at `/metrics`.
#[must_use = "a builder does nothing until `build()`"]
pub struct ServerBuilder {
    source: Source,
    card: Option<pb::AgentCard>,
    extended_card: Option<pb::AgentCard>,
    store: Option<StoreChoice>,
    listen: Listen,
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
    /// The bindings' settings the builder's own methods set (never its authentication,
    /// metrics, JWKS, caller limits or bindings, which `assemble` fills in).
    options: ServerOptions,
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
    /// To know it before `build()` — to write it into another agent's configuration, say —
    /// bind the listener yourself and give it to [`ServerBuilder::listener`].
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the card is served on the main listener:
    /// `http://` [`local_addr`](Self::local_addr) [`CARD_PATH`].
    pub fn card_url(&self) -> String {
        format!("http://{}{CARD_PATH}", self.addr)
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
            engine,
            main,
            grpc,
            limits,
            proxies,
            drain,
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
        let serve = |endpoint: Endpoint, proxies: ProxyOptions| {
            let mut rx = stop_rx.clone();
            trident_server::serve_with_proxies(
                endpoint.listener,
                endpoint.router,
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
                drain,
                limits,
                proxies,
            )
        };
        let result = match grpc {
            None => serve(main, proxies).await,
            Some(grpc) => {
                let (a, b) = tokio::join!(serve(main, proxies.clone()), serve(grpc, proxies));
                a.and(b)
            }
        };
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
            listen: Listen::At("127.0.0.1:8080".to_owned()),
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
    /// The builder fills it like the public card: without `supportedInterfaces` it gets the
    /// public card's; without security schemes and requirements, the public card's (the
    /// authenticator's); with a [`signing_key`](Self::signing_key) it is signed.
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
        self.listen = Listen::At(addr.to_string());
        self
    }

    /// Serves on a listener bound by the caller instead of [`bind`](Self::bind)ing one: its
    /// address (the port chosen for `:0` too) is then known before `build()`, to put into
    /// another agent's configuration or a card of one's own.
    pub fn listener(mut self, listener: tokio::net::TcpListener) -> Self {
        self.listen = Listen::Bound(listener);
        self
    }

    /// Serves gRPC on a listener of its own at `addr`.
    pub fn grpc_bind(mut self, addr: impl ToString) -> Self {
        self.grpc_listen = Some(addr.to_string());
        self
    }

    /// Serves JSON-RPC at `path` (default `/`, [`JSONRPC_PATH`](crate::JSONRPC_PATH)); the card's JSONRPC
    /// interface names it. `build()` refuses a path that is not plain
    /// ([`BuildError::JsonRpcPath`]).
    pub fn jsonrpc_path(mut self, path: impl Into<String>) -> Self {
        self.options.jsonrpc_path = path.into();
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

    /// The protocol generations served (default: 1.0 and 0.3). With 0.3 on, v0.3 clients are
    /// answered on every binding beside 1.0 clients, translated into the same calls, and the
    /// card carries what they read. With the A2A 1.1 preview on
    /// ([`Protocols::with_v1_1_preview`](trident_server::Protocols::with_v1_1_preview), or
    /// [`EngineConfig::preview`] set), callers that send `A2A-Version: 1.1` get its semantics
    /// and a card request that says 1.1 gets the card with the 1.1 interfaces first; every
    /// other caller is answered exactly as without it.
    pub fn protocols(mut self, protocols: trident_server::Protocols) -> Self {
        self.options.protocols = protocols;
        self
    }

    /// The largest request body on every binding, in bytes (default 4 MiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.options.rest.max_body = bytes;
        self.options.jsonrpc.max_body = bytes;
        self.options.grpc.max_request_size = bytes;
        self
    }

    /// The largest gRPC response or stream message, in bytes (default 16 MiB: tasks carry
    /// artifacts).
    pub fn grpc_max_response(mut self, bytes: usize) -> Self {
        self.options.grpc.max_response_size = bytes;
        self
    }

    /// Whether to serve gRPC server reflection (default: yes).
    pub fn grpc_reflection(mut self, serve: bool) -> Self {
        self.options.grpc.reflection = serve;
        self
    }

    /// Whether to answer gRPC-Web (`application/grpc-web`, `-text`) on the gRPC services, over
    /// HTTP/1.1 and HTTP/2, for browser clients (default: yes; a plain gRPC call pays one
    /// comparison of its `content-type`). A web page of another origin also needs
    /// [`cors`](Self::cors).
    pub fn grpc_web(mut self, serve: bool) -> Self {
        self.options.grpc.web = serve;
        self
    }

    /// Lets web pages of these origins call the agent from a browser: CORS on every binding
    /// (JSON-RPC, HTTP+JSON, gRPC-Web) and the card; preflights from them are answered before
    /// authentication. Default: none, and no CORS layer at all. Build it with
    /// `Cors::new(["https://app.example.com"])` (`*` for any origin; cookies are never
    /// allowed).
    pub fn cors(mut self, cors: Cors) -> Self {
        self.options.cors = Some(cors);
        self
    }

    /// How often idle SSE streams (JSON-RPC and HTTP+JSON) get a keep-alive comment
    /// (default 15 s).
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.options.rest.keep_alive = interval;
        self.options.jsonrpc.keep_alive = interval;
        self
    }

    /// The card's `Cache-Control: max-age`, in whole seconds (default 300 s).
    pub fn card_max_age(mut self, max_age: Duration) -> Self {
        self.options.card_max_age = u32::try_from(max_age.as_secs()).unwrap_or(u32::MAX);
        self
    }

    /// How much memory decoding a JSON request body may take on the JSON bindings, relative
    /// to its size (default: 4 × the body + 1 MiB; see [`JsonLimits`]). A body over it is
    /// refused with `InvalidParams` before it is decoded.
    pub fn json_limits(mut self, limits: JsonLimits) -> Self {
        self.options.rest.json = limits;
        self.options.jsonrpc.json = limits;
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

    /// Serves `routes` on the HTTP listener beside the bindings, behind the same edge as every
    /// call: the request hygiene checks, the authenticator (when one is set) and the caller's
    /// rate. For pages and APIs of your own next to the agent (`trident serve --console`
    /// serves its API so). Their paths must not be the bindings' own (`/`, the HTTP+JSON
    /// routes, the card).
    ///
    /// ```
    /// # use trident::{A2aError, AgentExecutor, EventSink, RequestContext, Server};
    /// # struct Echo;
    /// # #[trident::async_trait]
    /// # impl AgentExecutor for Echo {
    /// #     async fn execute(&self, _: RequestContext, sink: EventSink) -> Result<(), A2aError> {
    /// #         sink.complete().await
    /// #     }
    /// # }
    /// let builder = Server::builder(Echo).routes(
    ///     axum::Router::new().route("/admin/hello", axum::routing::get(|| async { "hello" })),
    /// );
    /// ```
    pub fn routes(mut self, routes: axum::Router) -> Self {
        self.options.routes = Some(match self.options.routes.take() {
            Some(before) => before.merge(routes),
            None => routes,
        });
        self
    }

    /// Serves `routes` on the HTTP listener to anyone, like the card: behind the request
    /// hygiene checks only, neither authenticated nor charged to a caller's rate. For what
    /// holds nothing secret, e.g. a page's static assets (whose API goes in
    /// [`routes`](Self::routes)).
    pub fn public_routes(mut self, routes: axum::Router) -> Self {
        self.options.public_routes = Some(match self.options.public_routes.take() {
            Some(before) => before.merge(routes),
            None => routes,
        });
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

    /// Checks the setup, binds the listeners and assembles the server, in three steps: the
    /// setup is checked first (nothing is bound or opened for one that cannot work), then the
    /// listeners are bound and the cards given the interfaces they serve, then the store is
    /// opened and the engine, the service and the routers are assembled, once.
    pub async fn build(mut self) -> Result<Server, BuildError> {
        let card = self.check()?;
        let bound = self.bind_listeners(card).await?;
        self.assemble(bound).await
    }

    /// Step 1: refuses a setup that cannot work, before anything is bound or opened. Returns
    /// the public card (the default one for an agent given none), and leaves the one webhook
    /// policy in the engine's configuration.
    fn check(&mut self) -> Result<pb::AgentCard, BuildError> {
        let agent = matches!(self.source, Source::Agent(_));
        if !agent {
            let engine_only = [
                (self.store.is_some(), "store"),
                (self.extended_card.is_some(), "extended_card"),
                (self.push.is_some(), "webhooks"),
                (self.webhook_policy.is_some(), "webhook_policy"),
                (self.authorizer.is_some(), "authorizer"),
                (self.events.is_some(), "events"),
                (self.config.is_some(), "engine_config"),
            ];
            if let Some((_, name)) = engine_only.iter().find(|(set, _)| *set) {
                return Err(BuildError::NotAnEngine(name));
            }
        }
        let card = match (self.card.take(), agent) {
            (Some(card), _) => card,
            (None, true) => {
                trident_core::default_card("Trident agent", "An agent served by Trident")
            }
            (None, false) => return Err(BuildError::MissingCard),
        };
        if self.proxies.proxy_protocol && self.proxies.trusted.is_empty() {
            return Err(BuildError::ProxyProtocolWithoutTrustedProxies);
        }
        if !card.supported_interfaces.is_empty() && self.public_url.is_some() {
            return Err(BuildError::InterfacesTwice);
        }
        if !plain_path(&self.options.jsonrpc_path) {
            return Err(BuildError::JsonRpcPath(self.options.jsonrpc_path.clone()));
        }
        if !agent {
            return Ok(card);
        }
        let mut config = self.config.take().unwrap_or_default();
        config.webhook_policy = match self.webhook_policy.take() {
            Some(p) if config.webhook_policy != WebhookPolicy::default() => {
                if config.webhook_policy != p {
                    return Err(BuildError::WebhookPolicyTwice);
                }
                p
            }
            Some(p) => p,
            None => config.webhook_policy,
        };
        self.config = Some(config);
        let capabilities = card.capabilities.clone().unwrap_or_default();
        let declares_push = capabilities.push_notifications == Some(true);
        match (&self.push, declares_push) {
            (Some(Push::Off), true) => return Err(BuildError::PushWithoutSender),
            (Some(Push::Custom(_)), false) => return Err(BuildError::SenderWithoutPush),
            _ => {}
        }
        let declares_extended = capabilities.extended_agent_card == Some(true);
        match (&self.extended_card, declares_extended) {
            (None, true) => Err(BuildError::ExtendedCardMissing),
            (Some(_), false) => Err(BuildError::ExtendedCardNotDeclared),
            (Some(_), true) if self.authenticator.is_none() => {
                Err(BuildError::ExtendedCardWithoutAuthentication)
            }
            _ => Ok(card),
        }
    }

    /// Step 2: binds the listeners, and fills the cards with the interfaces they serve and
    /// the authenticator's security schemes.
    async fn bind_listeners(&mut self, mut card: pb::AgentCard) -> Result<Bound, BuildError> {
        let listen = std::mem::replace(&mut self.listen, Listen::At(String::new()));
        let (main, named) = match listen {
            Listen::At(addr) => (listen_at(&addr).await?, addr),
            Listen::Bound(listener) => (listener, "the listener given".to_owned()),
        };
        let addr = main.local_addr().map_err(|source| BuildError::Bind {
            addr: named,
            source,
        })?;
        let grpc = match &self.grpc_listen {
            Some(at) => {
                let listener = listen_at(at).await?;
                let addr = listener.local_addr().map_err(|source| BuildError::Bind {
                    addr: at.clone(),
                    source,
                })?;
                Some((listener, addr))
            }
            None => None,
        };
        let interfaces = if card.supported_interfaces.is_empty() {
            let mut interfaces = match &self.public_url {
                Some(origin) => Interfaces::at(origin),
                None => Interfaces::local(addr),
            }
            .with_jsonrpc_path(&self.options.jsonrpc_path);
            if let Some((_, g)) = &grpc {
                interfaces.grpc = g.to_string();
            }
            card = trident_server::card_with_interfaces(card, &interfaces);
            interfaces
        } else {
            interfaces_of(&card, addr)
        };
        if let Some(auth) = &self.authenticator {
            trident_core::auth::declare_security(&mut card, auth.as_ref());
        }
        let extended = self.extended_card.take().map(|mut extended| {
            if extended.supported_interfaces.is_empty() {
                extended
                    .supported_interfaces
                    .clone_from(&card.supported_interfaces);
            }
            if extended.security_schemes.is_empty() && extended.security_requirements.is_empty() {
                extended.security_schemes.clone_from(&card.security_schemes);
                extended
                    .security_requirements
                    .clone_from(&card.security_requirements);
            }
            extended
        });
        Ok(Bound {
            card,
            extended,
            interfaces,
            main,
            addr,
            grpc,
        })
    }

    /// Step 3: opens the store and assembles the engine (or takes the service), the signing
    /// of cards and notifications, the per-caller limits, the metrics, and the routers, once.
    async fn assemble(self, bound: Bound) -> Result<Server, BuildError> {
        let Bound {
            mut card,
            mut extended,
            interfaces,
            main,
            addr,
            grpc,
        } = bound;
        let signing = self.signing_key.map(|key| {
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
        // The A2A 1.1 preview is on when either says so: the protocols served (what the card
        // shows) or the engine's settings (how long a long poll waits).
        let preview = self.options.protocols.v1_1_preview
            || self.config.as_ref().is_some_and(|c| c.preview.is_some());
        let (svc, engine): (Arc<dyn A2aService>, Option<Engine>) = match self.source {
            Source::Service(svc) => (svc, None),
            Source::Agent(executor) => {
                let mut config = self.config.unwrap_or_default();
                if preview && config.preview.is_none() {
                    config.preview = Some(trident_engine::Preview::default());
                }
                let transport: Option<Arc<dyn WebhookTransport>> = match self.push {
                    Some(Push::Off) => None,
                    Some(Push::Custom(t)) => Some(t),
                    push => {
                        let timeout = match push {
                            Some(Push::Http(timeout)) => timeout,
                            _ => DEFAULT_WEBHOOK_TIMEOUT,
                        };
                        let sender =
                            http_webhooks(timeout, &config.webhook_policy, signing.as_ref())?;
                        if signing.is_some() {
                            let declared = signed_notifications(&interfaces);
                            for card in std::iter::once(&mut card).chain(extended.as_mut()) {
                                card.capabilities
                                    .get_or_insert_with(Default::default)
                                    .extensions
                                    .push(declared.clone());
                            }
                        }
                        Some(sender)
                    }
                };
                let stores = match self.store {
                    Some(StoreChoice::Stores(s)) => s,
                    Some(StoreChoice::Spec(spec)) => crate::store::open(&spec).await?,
                    None => trident_engine::store::in_memory(),
                };
                // Known once the store is open: whether it is shared is the store's to say.
                if self.events.is_some() && !stores.tasks.shared() {
                    return Err(BuildError::EventsWithoutSharedStore);
                }
                let stores = trident_server::observed_stores(stores, metrics.clone());
                if let Some(key) = &signing {
                    // Last: the signature covers everything above.
                    trident_security::sign_card(&mut card, key);
                    if let Some(extended) = extended.as_mut() {
                        trident_security::sign_card(extended, key);
                    }
                }
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
                if let Some(extended) = extended {
                    builder = builder.extended_card(extended);
                }
                if let Some(a) = self.authorizer {
                    builder = builder.authorizer(a);
                }
                if let Some(bus) = self.events {
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
        let (svc, limited): (Arc<dyn A2aService>, _) = match self.caller_limits {
            Some(l) if l.rate > 0.0 || l.max_streams > 0 => {
                let limited = Arc::new(Limited::new(svc, l));
                (limited.clone(), Some(limited))
            }
            _ => (svc, None),
        };
        let svc: Arc<dyn A2aService> = Arc::new(Observed::new(svc, metrics.clone()));
        let options = ServerOptions {
            metrics: self.serve_metrics.then(|| metrics.clone()),
            authenticator: self.authenticator,
            allow_anonymous: self.allow_anonymous,
            jwks: signing
                .as_ref()
                .and_then(|k| serde_json::to_string(&k.jwks()).ok()),
            caller_limits: limited,
            protocols: trident_server::Protocols {
                v1_1_preview: preview,
                ..self.options.protocols
            },
            ..self.options
        };
        let layers = self.layers;
        let router = |bindings: Bindings| -> Result<axum::Router, BuildError> {
            let options = ServerOptions {
                bindings,
                ..options.clone()
            };
            let router = trident_server::app(svc.clone(), &card, &options)?;
            Ok(layers.iter().fold(router, |r, layer| layer(r)))
        };
        let (main, grpc, grpc_addr) = match grpc {
            None => (
                Endpoint {
                    listener: main,
                    router: router(Bindings::ALL)?,
                },
                None,
                None,
            ),
            Some((listener, grpc_addr)) => (
                Endpoint {
                    listener: main,
                    router: router(Bindings::HTTP)?,
                },
                Some(Endpoint {
                    listener,
                    router: router(Bindings::GRPC)?,
                }),
                Some(grpc_addr),
            ),
        };
        Ok(Server {
            engine,
            card,
            interfaces,
            addr,
            grpc_addr,
            main,
            grpc,
            metrics,
            limits: self.connection_limits,
            proxies: self.proxies,
            drain: self.drain,
        })
    }
}

/// What step 2 of `build()` hands to step 3: the cards filled with the interfaces the bound
/// listeners serve.
struct Bound {
    card: pb::AgentCard,
    extended: Option<pb::AgentCard>,
    interfaces: Interfaces,
    main: tokio::net::TcpListener,
    addr: SocketAddr,
    /// gRPC's own listener and its address.
    grpc: Option<(tokio::net::TcpListener, SocketAddr)>,
}

/// A listener bound at `addr`.
async fn listen_at(addr: &str) -> Result<tokio::net::TcpListener, BuildError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| BuildError::Bind {
            addr: addr.to_owned(),
            source,
        })
}

/// Whether JSON-RPC may be served at `path`: absolute, of plain characters, and not a path the
/// server serves something else at.
fn plain_path(path: &str) -> bool {
    let taken = [
        CARD_PATH,
        JWKS_PATH,
        METRICS_PATH,
        trident_rest::openapi::PATH,
    ];
    path.starts_with('/')
        && !path.contains("//")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-._~".contains(c))
        && !taken.contains(&path)
}

/// The card extension that announces signed push notifications, naming where the keys are.
fn signed_notifications(interfaces: &Interfaces) -> pb::AgentExtension {
    pb::AgentExtension {
        uri: SIGNED_NOTIFICATIONS_EXTENSION.into(),
        description: format!(
            "Push notifications carry a compact JWS in the {NOTIFICATION_SIGNATURE_HEADER} \
             header (claims taskId, seq, bodySha256, iat), verifiable with the keys at \
             {}{}",
            interfaces.rest, JWKS_PATH
        ),
        required: false,
        params: None,
    }
}

/// The HTTP(S) webhook sender under `policy`, signing each notification with `signing`.
fn http_webhooks(
    timeout: Duration,
    policy: &WebhookPolicy,
    signing: Option<&SigningKey>,
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
