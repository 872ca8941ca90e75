//! `trident serve` and `trident gateway`: an [`A2aService`] (the engine, or an upstream agent
//! through a client) on all three bindings, until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use trident_core::{A2aService, AgentExecutor, Engine, EngineConfig, agents};
use trident_proto as pb;
use trident_server::{
    Bindings, ConnectionLimits, ForwardedHeader, Interfaces, Metrics, Observed, ProxyOptions,
    ServerOptions,
};

/// Listener settings shared by `serve` and `gateway`.
#[derive(Args)]
pub(crate) struct Listen {
    /// Address to listen on (HTTP/1.1 and h2c on one port).
    #[arg(long, env = "TRIDENT_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Public origin written into the agent card (default: http://<listen>).
    #[arg(long, env = "TRIDENT_PUBLIC_URL")]
    public_url: Option<String>,
    /// Serve gRPC on its own listener at this address (default: on the main listener).
    #[arg(long, env = "TRIDENT_GRPC_LISTEN")]
    grpc_listen: Option<SocketAddr>,
    /// Largest request body, in bytes, on every binding.
    #[arg(long, env = "TRIDENT_MAX_BODY", default_value_t = 4 << 20)]
    max_body: usize,
    /// Seconds open streams may take to finish after SIGTERM/Ctrl-C.
    #[arg(long, env = "TRIDENT_DRAIN", default_value_t = 10.0)]
    drain: f64,
    /// Seconds a client may take to send an HTTP/1.1 request's headers, from its first bytes
    /// or from the previous response (so also how long an idle keep-alive connection stays
    /// open); 0: no limit.
    #[arg(long, env = "TRIDENT_HEADER_TIMEOUT", default_value_t = 10.0)]
    header_timeout: f64,
    /// Seconds a request body may take to arrive in full after its headers; then HTTP 408
    /// (gRPC: DEADLINE_EXCEEDED). Response streams are never timed. 0: no limit.
    #[arg(long, env = "TRIDENT_BODY_TIMEOUT", default_value_t = 60.0)]
    body_timeout: f64,
    /// Seconds a connection with no request in flight stays open (an open stream is in
    /// flight); 0: no limit.
    #[arg(long, env = "TRIDENT_IDLE_TIMEOUT", default_value_t = 60.0)]
    idle_timeout: f64,
    /// Most connections open at once per listener; at the limit the one idle the longest is
    /// closed for a new one, or the new one refused if none is idle. 0: no limit. Default:
    /// the open-files limit minus 256, at most 10000.
    #[arg(long, env = "TRIDENT_MAX_CONNECTIONS", default_value_t = trident_server::default_max_connections())]
    max_connections: usize,
    /// Requests per second each caller may make (0: unlimited); over it: HTTP 429 /
    /// RESOURCE_EXHAUSTED.
    #[arg(long, env = "TRIDENT_RATE_LIMIT", default_value_t = 0.0)]
    rate_limit: f64,
    /// Requests a caller may make at once above the rate.
    #[arg(long, env = "TRIDENT_RATE_BURST", default_value_t = 20)]
    rate_burst: u32,
    /// Streams each caller may have open at once (0: unlimited).
    #[arg(long, env = "TRIDENT_MAX_STREAMS", default_value_t = 0)]
    max_streams: usize,
    /// Who may call: a TOML file of bearer tokens, API keys, JWT issuer and authorization
    /// rules (see README). Once any scheme is set, only the public card is reachable without
    /// credentials.
    #[arg(long, env = "TRIDENT_AUTH")]
    auth: Option<std::path::PathBuf>,
    /// Accept `Authorization: Bearer TOKEN` as PRINCIPAL (repeatable; PRINCIPAL=TOKEN).
    #[arg(long, value_name = "PRINCIPAL=TOKEN")]
    bearer: Vec<String>,
    /// A proxy (load balancer) in front of this server, by address or CIDR range, trusted to
    /// name the client: in a PROXY protocol header (--proxy-protocol) and in
    /// --forwarded-header. Repeat, or comma-separate. Default: nobody.
    #[arg(
        long,
        env = "TRIDENT_TRUSTED_PROXY",
        value_delimiter = ',',
        value_name = "CIDR"
    )]
    trusted_proxy: Vec<trident_server::IpNet>,
    /// Connections from trusted proxies start with a PROXY protocol header (v2 or v1, e.g.
    /// HAProxy's send-proxy-v2) naming the client; a missing or malformed one closes the
    /// connection, and connections from other addresses are refused.
    #[arg(long, env = "TRIDENT_PROXY_PROTOCOL")]
    proxy_protocol: bool,
    /// The request header a trusted proxy names the client in (walked from the right, past
    /// trusted proxies); never read from other peers.
    #[arg(long, value_enum, env = "TRIDENT_FORWARDED_HEADER", default_value_t = ForwardedArg::XForwardedFor)]
    forwarded_header: ForwardedArg,
    /// Export traces (a span per call) and metrics over OTLP/gRPC to this collector
    /// (`http://host:4317`). Default: OTEL_EXPORTER_OTLP_ENDPOINT when set, else no export.
    /// Needs a build with the `otlp` cargo feature.
    #[arg(long, env = "TRIDENT_OTLP_ENDPOINT", value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// Seconds between two exports of the metrics over OTLP (default:
    /// OTEL_METRIC_EXPORT_INTERVAL, in milliseconds, when set, else 60).
    #[arg(long, env = "TRIDENT_OTLP_METRICS_INTERVAL")]
    otlp_metrics_interval: Option<f64>,
}

/// `--forwarded-header`
#[derive(Clone, Copy, ValueEnum)]
enum ForwardedArg {
    /// `X-Forwarded-For: client, proxy…`
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, …`
    Forwarded,
    /// Neither: only the PROXY protocol names the client.
    None,
}

impl Listen {
    /// Where to export traces and metrics over OTLP (`--otlp-endpoint`, else the standard
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`), and whether a flag (not the environment) asked for it.
    pub(crate) fn otlp_endpoint(&self) -> Option<(String, bool)> {
        if let Some(url) = self.otlp_endpoint.as_ref().filter(|u| !u.is_empty()) {
            return Some((url.clone(), true));
        }
        std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .ok()
            .filter(|u| !u.is_empty())
            .map(|url| (url, false))
    }

    /// How often metrics are exported over OTLP.
    #[cfg_attr(not(feature = "otlp"), allow(dead_code))]
    fn otlp_metrics_interval(&self) -> Result<Duration, String> {
        if let Some(s) = self.otlp_metrics_interval {
            return seconds(s, "--otlp-metrics-interval");
        }
        match std::env::var("OTEL_METRIC_EXPORT_INTERVAL") {
            Ok(ms) => ms
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
                .ok_or_else(|| {
                    format!("OTEL_METRIC_EXPORT_INTERVAL must be milliseconds, not {ms:?}")
                }),
            Err(_) => Ok(Duration::from_secs(60)),
        }
    }

    /// The connection limits these flags ask for.
    fn connection_limits(&self) -> Result<ConnectionLimits, String> {
        Ok(ConnectionLimits {
            header_timeout: optional_seconds(self.header_timeout, "--header-timeout")?,
            body_timeout: optional_seconds(self.body_timeout, "--body-timeout")?,
            idle_timeout: optional_seconds(self.idle_timeout, "--idle-timeout")?,
            max_connections: (self.max_connections > 0).then_some(self.max_connections),
            ..ConnectionLimits::default()
        })
    }

    /// Who may name the client, as these flags say.
    fn proxies(&self) -> Result<ProxyOptions, String> {
        if self.proxy_protocol && self.trusted_proxy.is_empty() {
            return Err("--proxy-protocol needs --trusted-proxy (the proxies' addresses)".into());
        }
        Ok(ProxyOptions {
            trusted: self.trusted_proxy.clone(),
            proxy_protocol: self.proxy_protocol,
            forwarded_header: match self.forwarded_header {
                ForwardedArg::XForwardedFor => ForwardedHeader::XForwardedFor,
                ForwardedArg::Forwarded => ForwardedHeader::Forwarded,
                ForwardedArg::None => ForwardedHeader::None,
            },
        })
    }

    /// `svc` behind the per-caller limits, observed; and the limits (when any), which the
    /// authentication layer also charges for the requests it refuses.
    fn wrap(
        &self,
        svc: Arc<dyn A2aService>,
        metrics: &Arc<Metrics>,
    ) -> (Arc<dyn A2aService>, Option<Arc<trident_server::Limited>>) {
        let (limited, limits): (Arc<dyn A2aService>, _) =
            if self.rate_limit > 0.0 || self.max_streams > 0 {
                let limited = Arc::new(trident_server::Limited::new(
                    svc,
                    trident_server::CallerLimits {
                        rate: self.rate_limit,
                        burst: self.rate_burst,
                        max_streams: self.max_streams,
                    },
                ));
                (limited.clone(), Some(limited))
            } else {
                (svc, None)
            };
        (Arc::new(Observed::new(limited, metrics.clone())), limits)
    }
}

/// `trident serve`
#[derive(Args)]
pub(crate) struct Serve {
    #[command(flatten)]
    listen: Listen,
    /// Which demo agent to serve (ignored with --exec).
    #[arg(long, value_enum, env = "TRIDENT_AGENT", default_value_t = Agent::Echo)]
    agent: Agent,
    /// Run this command as the agent, one process per task turn, speaking the line-JSON
    /// protocol of examples/README.md on stdin/stdout (run by `sh -c`).
    #[arg(long, env = "TRIDENT_EXEC")]
    exec: Option<String>,
    /// With --exec: kill a turn's process after this many seconds (it fails the task).
    #[arg(long, env = "TRIDENT_EXEC_TIMEOUT")]
    exec_timeout: Option<f64>,
    /// With --exec: at most this many agent processes at once (further turns wait).
    #[arg(long, env = "TRIDENT_EXEC_MAX")]
    exec_max: Option<usize>,
    /// Refuse requests without `A2A-Version` (the spec reads them as 0.3; by default they are
    /// served as 1.0).
    #[arg(long, env = "TRIDENT_STRICT_VERSION")]
    strict_version: bool,
    /// Where tasks live: `sqlite:PATH` (a file, created if missing), `postgres://…` (cluster
    /// mode: every process on the same database serves every task) or `memory` (lost on
    /// exit).
    #[arg(long, env = "TRIDENT_STORE", default_value = "sqlite:trident.db")]
    store: String,
    /// Seconds a process's claim on a running task lasts without renewal; on PostgreSQL a
    /// task whose process died ends FAILED within about 1.5 times this.
    #[arg(long, env = "TRIDENT_LEASE_TTL", default_value_t = 10.0)]
    lease_ttl: f64,
    /// This process's id in task leases (default: a new UUIDv7 per start).
    #[arg(long, env = "TRIDENT_NODE_ID")]
    node_id: Option<String>,
    /// Sign the agent card and every push notification with this P-256 key (PKCS#8 PEM;
    /// created, mode 0600, if the file does not exist). The public key is served at
    /// /.well-known/jwks.json.
    #[arg(long, env = "TRIDENT_SIGN_KEY")]
    sign_key: Option<std::path::PathBuf>,
    /// Webhooks may reach this host, address or CIDR range even though it is not public
    /// (loopback, private, link-local…). Repeat, or comma-separate. Default: public only.
    #[arg(long, env = "TRIDENT_PUSH_ALLOW", value_delimiter = ',')]
    push_allow: Vec<String>,
}

/// `trident gateway`
#[derive(Args)]
pub(crate) struct Gateway {
    #[command(flatten)]
    listen: Listen,
    /// The agent to front: its origin or the URL of its card.
    #[arg(long, env = "TRIDENT_UPSTREAM")]
    upstream: String,
    /// Binding to reach the upstream over (default: the first its card lists).
    #[arg(long, value_enum, env = "TRIDENT_UPSTREAM_BINDING")]
    upstream_binding: Option<crate::client::BindingArg>,
    /// Refuse to start unless the upstream card carries a signature that verifies (keys from
    /// its `jku`, or --upstream-jwks). Without it a signed card is still verified and a
    /// failure reported.
    #[arg(long, env = "TRIDENT_REQUIRE_SIGNED_UPSTREAM")]
    require_signed_upstream: bool,
    /// Trust only these keys (a JWKS URL) for the upstream card's signatures.
    #[arg(long, env = "TRIDENT_UPSTREAM_JWKS")]
    upstream_jwks: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Agent {
    /// Completes with one artifact echoing the text.
    Echo,
    /// WORKING, artifact chunks, COMPLETED.
    Stream,
    /// Asks for input, completes on the follow-up.
    Input,
    /// Works until canceled.
    Slow,
    /// Answers with a direct message (no task).
    Reply,
    /// All of the above, chosen by the message's first word.
    Demo,
}

impl Agent {
    fn executor(self) -> Arc<dyn AgentExecutor> {
        match self {
            Agent::Echo => Arc::new(agents::Echo),
            Agent::Stream => Arc::new(agents::Stream::default()),
            Agent::Input => Arc::new(agents::Input),
            Agent::Slow => Arc::new(agents::Slow::default()),
            Agent::Reply => Arc::new(agents::Reply),
            Agent::Demo => Arc::new(agents::Demo),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Agent::Echo => "echo",
            Agent::Stream => "stream",
            Agent::Input => "input",
            Agent::Slow => "slow",
            Agent::Reply => "reply",
            Agent::Demo => "demo",
        }
    }
}

fn seconds(value: f64, flag: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{flag} must be a positive number of seconds"))
}

/// A timeout flag: a positive number of seconds, or 0 for none.
fn optional_seconds(value: f64, flag: &str) -> Result<Option<Duration>, String> {
    if value == 0.0 {
        return Ok(None);
    }
    seconds(value, flag)
        .map(Some)
        .map_err(|_| format!("{flag} must be a number of seconds (0: no limit)"))
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("trident: {message}");
    ExitCode::FAILURE
}

/// The header carrying a push notification's signature.
const NOTIFICATION_SIGNATURE_HEADER: &str = "a2a-notification-signature";
/// The card extension announcing signed push notifications.
const SIGNED_NOTIFICATIONS_EXTENSION: &str = "urn:trident:signed-push-notifications:v1";

/// The signing key at `path`, created when the file does not exist; its `jku` is our JWKS.
fn signing_key(
    path: &std::path::Path,
    interfaces: &Interfaces,
) -> Result<trident_security::SigningKey, String> {
    let key = if path.exists() {
        trident_security::SigningKey::load_pem_file(path)
            .map_err(|e| format!("--sign-key {}: {e}", path.display()))?
    } else {
        let key = trident_security::SigningKey::generate();
        key.save_pem_file(path)
            .map_err(|e| format!("--sign-key {}: {e}", path.display()))?;
        println!("created signing key {}", path.display());
        key
    };
    Ok(key.with_jku(format!(
        "{}{}",
        interfaces.rest.trim_end_matches('/'),
        trident_server::JWKS_PATH
    )))
}

/// Bound listeners and the interfaces they serve.
struct Bound {
    addr: SocketAddr,
    main: tokio::net::TcpListener,
    grpc: Option<tokio::net::TcpListener>,
    interfaces: Interfaces,
}

async fn bind(listen: &Listen) -> std::io::Result<Bound> {
    let main = tokio::net::TcpListener::bind(listen.listen).await?;
    let addr = main.local_addr()?;
    let grpc = match listen.grpc_listen {
        Some(a) => Some(tokio::net::TcpListener::bind(a).await?),
        None => None,
    };
    let mut interfaces = match &listen.public_url {
        Some(origin) => Interfaces::at(origin),
        None => Interfaces::local(addr),
    };
    if let Some(g) = &grpc {
        interfaces.grpc = g.local_addr()?.to_string();
    }
    Ok(Bound {
        addr,
        main,
        grpc,
        interfaces,
    })
}

/// `trident serve`
pub(crate) async fn serve(args: Serve) -> ExitCode {
    let lease_ttl = match seconds(args.lease_ttl, "--lease-ttl") {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let bound = match bind(&args.listen).await {
        Ok(b) => b,
        Err(e) => return fail(format!("cannot listen on {}: {e}", args.listen.listen)),
    };
    let (executor, description): (Arc<dyn AgentExecutor>, String) = match &args.exec {
        Some(command) => {
            let mut options = trident_exec::ExecOptions::new(command.clone());
            if let Some(t) = args.exec_timeout {
                match seconds(t, "--exec-timeout") {
                    Ok(d) => options = options.timeout(d),
                    Err(e) => return fail(e),
                }
            }
            if let Some(n) = args.exec_max {
                options = options.max_processes(n);
            }
            (
                Arc::new(trident_exec::Exec::new(options)),
                format!("`{command}`"),
            )
        }
        None => (
            args.agent.executor(),
            format!("the {} agent", args.agent.name()),
        ),
    };
    let name = match &args.exec {
        Some(_) => "Trident exec agent".to_owned(),
        None => format!("Trident {} agent", args.agent.name()),
    };
    let security = match crate::auth::load(args.listen.auth.as_deref(), &args.listen.bearer) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut card = trident_server::card_with_interfaces(
        trident_core::default_card(&name, "An agent served by Trident"),
        &bound.interfaces,
    );
    if let Some(auth) = &security.authenticator {
        trident_core::auth::declare_security(&mut card, auth.as_ref());
    }
    let mut webhook_policy = trident_core::WebhookPolicy::new();
    for entry in &args.push_allow {
        webhook_policy = match webhook_policy.allow(entry) {
            Ok(p) => p,
            Err(e) => return fail(format!("--push-allow {e}")),
        };
    }
    let signing = match &args.sign_key {
        None => None,
        Some(path) => match signing_key(path, &bound.interfaces) {
            Ok(k) => Some(Arc::new(k)),
            Err(e) => return fail(e),
        },
    };
    let mut webhooks = match trident_rest::HttpWebhooks::with_policy(
        Duration::from_secs(10),
        webhook_policy.clone(),
    ) {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    if let Some(key) = signing.clone() {
        let signer = key.clone();
        webhooks = webhooks.with_signer(Arc::new(move |req: &trident_core::WebhookRequest| {
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
                    bound.interfaces.rest,
                    trident_server::JWKS_PATH
                ),
                required: false,
                params: None,
            });
        // Last: the signature covers everything above.
        trident_security::sign_card(&mut card, &key);
    }
    let stores = match trident_store::open(&args.store).await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let metrics = Arc::new(Metrics::new());
    let stores = trident_server::observed_stores(stores, metrics.clone());
    let config = EngineConfig {
        strict_version: args.strict_version,
        lease_ttl,
        node_id: args.node_id.clone(),
        webhook_policy,
        ..EngineConfig::default()
    };
    let mut builder = Engine::builder(executor)
        .stores(stores)
        .card(card.clone())
        .webhooks(Arc::new(webhooks))
        .config(config);
    if let Some(authorizer) = security.authorizer.clone() {
        builder = builder.authorizer(authorizer);
    }
    let engine = builder.build();
    println!(
        "Trident serving {description} on {} (store: {})",
        bound.addr,
        trident_store::describe(&args.store)
    );
    let (svc, limits) = args.listen.wrap(Arc::new(engine.clone()), &metrics);
    let jwks = signing
        .as_ref()
        .and_then(|k| serde_json::to_string(&k.jwks()).ok());
    let served = Served {
        svc,
        engine: Some(engine.clone()),
        caller_limits: limits,
        metrics,
        jwks,
    };
    let code = run(served, &card, bound, &args.listen, &security).await;
    // Tasks this process was running: hand them to the other replicas now rather than when
    // their leases lapse (a store nobody else uses recovers them at the next start).
    engine.shutdown().await;
    code
}

impl Serve {
    /// The listener's settings.
    pub(crate) fn listen(&self) -> &Listen {
        &self.listen
    }
}

impl Gateway {
    /// The listener's settings.
    pub(crate) fn listen(&self) -> &Listen {
        &self.listen
    }
}

/// `trident gateway`
pub(crate) async fn gateway(args: Gateway) -> ExitCode {
    let preference: Vec<trident_client::Binding> =
        args.upstream_binding.map(Into::into).into_iter().collect();
    let upstream_card = match trident_client::fetch_card(&args.upstream).await {
        Ok(c) => c,
        Err(e) => return fail(format!("upstream card: {e}")),
    };
    let preference = if preference.is_empty() {
        // The upstream card's own order.
        upstream_card
            .supported_interfaces
            .iter()
            .filter_map(|i| {
                trident_client::Binding::ALL
                    .into_iter()
                    .find(|b| i.protocol_binding.eq_ignore_ascii_case(b.card_name()))
            })
            .collect()
    } else {
        preference
    };
    if args.require_signed_upstream || !upstream_card.signatures.is_empty() {
        match crate::client::verify(&upstream_card, args.upstream_jwks.as_deref()).await {
            Ok(line) => println!("upstream card signature: {line}"),
            Err(why) if args.require_signed_upstream => {
                return fail(format!("upstream card signature: {why}"));
            }
            Err(why) => {
                tracing::warn!(%why, "the upstream card's signature does not verify");
            }
        }
    }
    let Some((binding, interface)) = trident_client::choose(&upstream_card, &preference) else {
        return fail("the upstream card offers no binding this gateway speaks for A2A 1.x");
    };
    let client = match trident_client::client(binding, &interface).await {
        Ok(c) => c,
        Err(e) => return fail(format!("upstream: {e}")),
    };
    let bound = match bind(&args.listen).await {
        Ok(b) => b,
        Err(e) => return fail(format!("cannot listen on {}: {e}", args.listen.listen)),
    };
    // The upstream's card with our interfaces; its signatures covered the upstream's
    // interfaces, so they are dropped rather than served broken. Its security declarations
    // stay: credentials pass through to the upstream, which checks them. With --auth the
    // gateway also checks callers itself, before anything reaches the upstream.
    let mut card = trident_server::card_with_interfaces(upstream_card, &bound.interfaces);
    card.signatures.clear();
    let security = match crate::auth::load(args.listen.auth.as_deref(), &args.listen.bearer) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if let Some(auth) = &security.authenticator {
        trident_core::auth::declare_security(&mut card, auth.as_ref());
    }
    println!(
        "Trident gateway on {} for {} ({} over {})",
        bound.addr,
        card.name,
        interface.url,
        binding.card_name()
    );
    let metrics = Arc::new(Metrics::new());
    let upstream: Arc<dyn A2aService> = Arc::new(trident_client::Upstream::new(client));
    let (svc, limits) = args.listen.wrap(upstream, &metrics);
    let served = Served {
        svc,
        engine: None,
        caller_limits: limits,
        metrics,
        jwks: None,
    };
    run(served, &card, bound, &args.listen, &security).await
}

/// What `run` serves: the wrapped service, its limits, metrics and the JWKS to publish.
struct Served {
    svc: Arc<dyn A2aService>,
    /// The engine, told to end its streams when the server shuts down (`None`: a gateway).
    engine: Option<trident_core::Engine>,
    caller_limits: Option<Arc<trident_server::Limited>>,
    metrics: Arc<Metrics>,
    jwks: Option<String>,
}

/// Serves `svc` until SIGTERM or Ctrl-C, then lets open streams finish for `--drain`.
async fn run(
    served: Served,
    card: &pb::AgentCard,
    bound: Bound,
    listen: &Listen,
    security: &crate::auth::Security,
) -> ExitCode {
    let Served {
        svc,
        engine,
        caller_limits,
        metrics,
        jwks,
    } = served;
    let drain = match seconds(listen.drain, "--drain") {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let limits = match listen.connection_limits() {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let proxies = match listen.proxies() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    #[cfg(feature = "otlp")]
    let otlp_metrics = match listen.otlp_endpoint() {
        None => None,
        Some((endpoint, _)) => {
            let interval = match listen.otlp_metrics_interval() {
                Ok(i) => i,
                Err(e) => return fail(e),
            };
            match trident_server::otlp::export_metrics(metrics.clone(), &endpoint, interval) {
                Ok(export) => {
                    println!("  OTLP        {endpoint} (traces; metrics every {interval:?})");
                    Some(export)
                }
                Err(e) => return fail(e),
            }
        }
    };
    let mut options = ServerOptions {
        metrics: Some(metrics),
        authenticator: security.authenticator.clone(),
        allow_anonymous: security.allow_anonymous,
        jwks,
        caller_limits,
        ..ServerOptions::default()
    };
    options.rest.max_body = listen.max_body;
    options.jsonrpc.max_body = listen.max_body;
    options.grpc.max_request_size = listen.max_body;
    let interfaces = &bound.interfaces;
    println!(
        "  agent card  {}{}",
        interfaces.rest,
        trident_server::CARD_PATH
    );
    println!("  JSONRPC     {}", interfaces.jsonrpc);
    println!("  HTTP+JSON   {}", interfaces.rest);
    println!("  GRPC        {}", interfaces.grpc);
    println!(
        "  metrics     {}{}",
        interfaces.rest,
        trident_server::METRICS_PATH
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        println!("shutting down: no new connections; open streams have {drain:?} to finish");
        let _ = stop_tx.send(true);
        // Before connections are closed, every stream still open gets a last event saying to
        // resubscribe, and blocking callers their task as it is: at once on a shared store
        // (another replica serves them), else after most of the drain period.
        if let Some(engine) = engine {
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
    let result = match bound.grpc {
        None => match trident_server::app(svc, card, &options) {
            Ok(app) => {
                trident_server::serve_with_proxies(
                    bound.main,
                    app,
                    stopped(),
                    drain,
                    limits,
                    proxies,
                )
                .await
            }
            Err(e) => return fail(e),
        },
        Some(grpc_listener) => {
            let http = trident_server::app(
                svc.clone(),
                card,
                &ServerOptions {
                    bindings: Bindings::HTTP,
                    ..options.clone()
                },
            );
            let grpc = trident_server::app(
                svc,
                card,
                &ServerOptions {
                    bindings: Bindings::GRPC,
                    ..options
                },
            );
            let (http, grpc) = match (http, grpc) {
                (Ok(h), Ok(g)) => (h, g),
                (Err(e), _) | (_, Err(e)) => return fail(e),
            };
            let (a, b) = tokio::join!(
                trident_server::serve_with_proxies(
                    bound.main,
                    http,
                    stopped(),
                    drain,
                    limits,
                    proxies.clone()
                ),
                trident_server::serve_with_proxies(
                    grpc_listener,
                    grpc,
                    stopped(),
                    drain,
                    limits,
                    proxies
                )
            );
            a.and(b)
        }
    };
    #[cfg(feature = "otlp")]
    if let Some(export) = otlp_metrics {
        export.shutdown().await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
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
