//! `trident serve` and `trident gateway`: an [`A2aService`] (the engine, or an upstream agent
//! through a client) on all three bindings, until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use trident::{
    A2aService, AgentExecutor, CallerLimits, ConnectionLimits, EngineConfig, ForwardedHeader,
    ProxyOptions, PushConcurrency, PushLimits, Server, ServerBuilder, WebhookPolicy,
};
use trident_testkit::agents;

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
    /// Protocol generations to serve, comma-separated: `1.0,0.3` answers A2A v0.3 clients
    /// beside 1.0 ones on every binding (v0.3 JSON-RPC methods, `/v1/...` routes, gRPC
    /// `a2a.v1.A2AService`, v0.3 card members); `1.0` turns the compatibility layer off.
    /// Adding `1.1-preview` offers the A2A 1.1 preview (task generation, long-polling
    /// GetTask, ifGenerationMatch) to callers that send `A2A-Version: 1.1`; everyone else is
    /// answered exactly as without it.
    #[arg(long, env = "TRIDENT_PROTOCOLS", default_value = "1.0,0.3")]
    protocols: trident::Protocols,
    /// Largest request body, in bytes, on every binding.
    #[arg(long, env = "TRIDENT_MAX_BODY", default_value_t = 4 << 20)]
    max_body: usize,
    /// Decoding a JSON request body (both JSON bindings, both protocol generations) may take
    /// at most this many times its size plus --json-memory-slack bytes, estimated before it
    /// is decoded; over it: InvalidParams. 0: only the bound of 65 536 JSON values.
    #[arg(long, env = "TRIDENT_JSON_MEMORY_FACTOR", default_value_t = 4)]
    json_memory_factor: usize,
    /// Bytes decoding any JSON request body may take beside --json-memory-factor times its
    /// size.
    #[arg(long, env = "TRIDENT_JSON_MEMORY_SLACK", default_value_t = trident::JsonLimits::default().memory_slack)]
    json_memory_slack: usize,
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
    /// Largest request head, in bytes: an HTTP/1.1 request line and headers (over it: 431 and
    /// the connection closed), an HTTP/2 header list (431 and the stream refused). 0: hyper's
    /// defaults (about 400 KiB on HTTP/1.1).
    #[arg(long, env = "TRIDENT_MAX_HEADER_BYTES", default_value_t = trident_server::DEFAULT_MAX_HEADER_BYTES)]
    max_header_bytes: usize,
    /// Most bytes of request bodies received and not yet complete, per listener; past it the
    /// requests that received bytes the longest ago (stalled bodies) are cut off with 429 /
    /// RESOURCE_EXHAUSTED. 0: no limit (connections x --max-body).
    #[arg(long, env = "TRIDENT_MAX_INFLIGHT_BODY_BYTES", default_value_t = trident_server::DEFAULT_MAX_INFLIGHT_BODY_BYTES)]
    max_inflight_body_bytes: usize,
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
    /// rules (see docs/security.md). Once any scheme is set, only the public card is reachable without
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
    /// Let web pages of this origin call the agent from a browser: CORS on every binding,
    /// gRPC-Web and the card (`https://app.example.com`, or `*` for any origin; cookies are
    /// never allowed). Repeat, or comma-separate. Default: none, and no CORS headers at all.
    #[arg(
        long,
        env = "TRIDENT_CORS_ORIGINS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    cors_origin: Vec<String>,
    /// Seconds a browser may cache the answer to a CORS preflight (Access-Control-Max-Age).
    #[arg(long, env = "TRIDENT_CORS_MAX_AGE", default_value_t = trident::DEFAULT_CORS_MAX_AGE.as_secs())]
    cors_max_age: u64,
    /// Do not answer gRPC-Web (application/grpc-web, -text) on the gRPC services; by default
    /// browsers' gRPC-Web clients are answered over HTTP/1.1 and HTTP/2.
    #[arg(long, env = "TRIDENT_NO_GRPC_WEB")]
    no_grpc_web: bool,
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
            max_header_bytes: (self.max_header_bytes > 0).then_some(self.max_header_bytes),
            max_inflight_body_bytes: (self.max_inflight_body_bytes > 0)
                .then_some(self.max_inflight_body_bytes),
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

    /// `builder` with these listener settings: address, interfaces, body size, connection
    /// and per-caller limits, proxies, drain period, authentication, CORS and gRPC-Web.
    fn apply(
        &self,
        builder: ServerBuilder,
        security: &crate::auth::Security,
    ) -> Result<ServerBuilder, String> {
        let mut builder = builder
            .bind(self.listen)
            .max_body(self.max_body)
            .json_limits(trident::JsonLimits {
                memory_factor: self.json_memory_factor,
                memory_slack: self.json_memory_slack,
            })
            .protocols(self.protocols)
            .drain(seconds(self.drain, "--drain")?)
            .connection_limits(self.connection_limits()?)
            .proxies(self.proxies()?)
            .caller_limits(CallerLimits {
                rate: self.rate_limit,
                burst: self.rate_burst,
                max_streams: self.max_streams,
            })
            .allow_anonymous(security.allow_anonymous);
        if let Some(a) = self.grpc_listen {
            builder = builder.grpc_bind(a);
        }
        let origins: Vec<&str> = self
            .cors_origin
            .iter()
            .map(|o| o.trim())
            .filter(|o| !o.is_empty())
            .collect();
        if !origins.is_empty() {
            let cors = trident::Cors::new(origins)
                .map_err(|e| format!("--cors-origin: {e}"))?
                .with_max_age(Duration::from_secs(self.cors_max_age));
            builder = builder.cors(cors);
        }
        builder = builder.grpc_web(!self.no_grpc_web);
        if let Some(origin) = &self.public_url {
            builder = builder.public_url(origin);
        }
        if let Some(auth) = &security.authenticator {
            builder = builder.authenticator(auth.clone());
        }
        Ok(builder)
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
    /// Print the client commands to try it with (set by `demo-server`).
    #[arg(skip)]
    demo_hints: bool,
    /// Serve the console (the page of `trident console`) for this agent at /console/. Its
    /// page is public like the card; its API is behind the server's authentication and rate
    /// limits, like every call, and talks to this agent only.
    #[arg(long, env = "TRIDENT_CONSOLE")]
    console: bool,
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
    /// mode: every process on the same database serves every task; `?schema=NAME` picks a
    /// schema, `notify=off` sends no commit notifications, for when an event bus carries the
    /// events) or `memory` (lost on exit).
    #[arg(long, env = "TRIDENT_STORE", default_value = "sqlite:trident.db")]
    store: String,
    /// Turns on the live-event bus for cluster mode: replicas hand each other the events they
    /// commit over NATS JetStream at this URL (`nats://host:4222`, several comma-separated;
    /// `nats://user:password@…`, `nats://token@…`, `tls://…`), so a replica serving a stream of
    /// a task another one runs gets its events without reading the database (what the bus
    /// loses is still read from it). Requires a shared store (--store postgres://…); refused
    /// with any other. The store then sends no NOTIFY (as with `notify=off`), unless its URL
    /// says `notify=on`.
    #[arg(long, env = "TRIDENT_EVENTS", value_name = "nats://…")]
    events: Option<String>,
    /// With --events: the NATS subject prefix and stream name stem. Clusters (databases or
    /// schemas) sharing one NATS server each need their own; every replica of one cluster
    /// the same.
    #[arg(long, env = "TRIDENT_EVENTS_NAMESPACE", default_value = "trident")]
    events_namespace: String,
    /// Seconds a process's claim on a running task lasts without renewal; on PostgreSQL a
    /// task whose process died ends FAILED within about 1.5 times this.
    #[arg(long, env = "TRIDENT_LEASE_TTL", default_value_t = 10.0)]
    lease_ttl: f64,
    /// With `--protocols …,1.1-preview`: seconds a long-polling GetTask (the preview's
    /// `currentGeneration`) waits at most for the task to change before it answers with the
    /// task as it is (a caller's own deadline, when shorter, ends it first).
    #[arg(long, env = "TRIDENT_LONG_POLL_TIMEOUT", default_value_t = 30.0)]
    long_poll_timeout: f64,
    /// Recent events each running task keeps in memory for its streams. A stream further
    /// behind (a slow reader, or an agent committing hundreds of events at once) reads the
    /// store instead: more memory per running task against fewer store reads.
    #[arg(long, env = "TRIDENT_LIVE_TAIL", default_value_t = u32::try_from(EngineConfig::default().tail_capacity).unwrap_or(128),
          value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "EVENTS")]
    live_tail: u32,
    /// This process's id in task leases (default: a new UUIDv7 per start).
    #[arg(long, env = "TRIDENT_NODE_ID")]
    node_id: Option<String>,
    /// Sign the agent card and every push notification with this P-256 key (PKCS#8 PEM;
    /// created, mode 0600, if the file does not exist). The public key is served at
    /// /.well-known/jwks.json.
    #[arg(long, env = "TRIDENT_SIGN_KEY")]
    sign_key: Option<std::path::PathBuf>,
    /// Serve this Agent Card (a JSON file) to authenticated callers of GetExtendedAgentCard,
    /// and declare `capabilities.extendedAgentCard` on the public card. Needs a way to
    /// authenticate (--bearer or --auth): anonymous callers are refused.
    #[arg(long, env = "TRIDENT_EXTENDED_CARD", value_name = "FILE")]
    extended_card: Option<std::path::PathBuf>,
    /// Webhooks may reach this host, address or CIDR range even though it is not public
    /// (loopback, private, link-local…). Repeat, or comma-separate. Default: public only.
    #[arg(long, env = "TRIDENT_PUSH_ALLOW", value_delimiter = ',')]
    push_allow: Vec<String>,
    /// Declare this extension URI on the card as required
    /// (`capabilities.extensions[].required`): a call that does not activate it is refused
    /// with ExtensionSupportRequired. Repeat, or comma-separate.
    #[arg(
        long,
        env = "TRIDENT_REQUIRE_EXTENSION",
        value_delimiter = ',',
        value_name = "URI"
    )]
    require_extension: Vec<String>,
    /// Push notification configurations one task may have; creating one more is refused
    /// (ResourceExhausted).
    #[arg(long, env = "TRIDENT_PUSH_MAX_CONFIGS", default_value_t = PushLimits::default().per_task)]
    push_max_configs: usize,
    /// Push notification configurations one principal may have on its tasks in progress
    /// (every anonymous caller of a tenant is one principal).
    #[arg(long, env = "TRIDENT_PUSH_MAX_CONFIGS_PER_PRINCIPAL", default_value_t = PushLimits::default().per_principal)]
    push_max_configs_per_principal: usize,
    /// Webhook calls in flight at once (default: from the open-files limit, with
    /// --max-connections, at most 128); more wait for a free slot.
    #[arg(long, env = "TRIDENT_PUSH_MAX_DELIVERIES", default_value_t = trident_server::default_push_deliveries())]
    push_max_deliveries: usize,
    /// Webhook calls in flight at once to one host and port.
    #[arg(long, env = "TRIDENT_PUSH_MAX_DELIVERIES_PER_HOST", default_value_t = PushConcurrency::default().per_host)]
    push_max_deliveries_per_host: usize,
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
    /// A2A generation to speak to the upstream: `auto` (1.0 where its card offers it for the
    /// binding, else 0.3), `1.0` or `0.3`. A v0.3 upstream is served as a 1.0 agent (and as
    /// 0.3 with --protocols 1.0,0.3); what v0.3 cannot express (ListTasks, tenants) is refused
    /// with UnsupportedOperation.
    #[arg(
        long,
        env = "TRIDENT_UPSTREAM_PROTOCOL",
        default_value = "auto",
        value_name = "auto|1.0|0.3"
    )]
    upstream_protocol: trident_client::Protocol,
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

/// The signing key at `path`, created when the file does not exist (the server sets its
/// `jku` to our JWKS).
fn signing_key(path: &std::path::Path) -> Result<trident_security::SigningKey, String> {
    if path.exists() {
        return trident_security::SigningKey::load_pem_file(path)
            .map_err(|e| format!("--sign-key {}: {e}", path.display()));
    }
    let key = trident_security::SigningKey::generate();
    key.save_pem_file(path)
        .map_err(|e| format!("--sign-key {}: {e}", path.display()))?;
    println!("created signing key {}", path.display());
    Ok(key)
}

/// Whether the store `spec` names is one several processes share (the stores `open` knows:
/// PostgreSQL is; SQLite files and memory belong to one process).
fn shared_store(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// The store `--store` names; with `--events`, a PostgreSQL URL that does not say `notify=`
/// gets `notify=off`: the bus carries the news, and NOTIFY would only cost every commit.
fn store_spec(args: &Serve) -> String {
    let spec = &args.store;
    if args.events.is_none() || !shared_store(spec) || spec.contains("notify=") {
        return spec.clone();
    }
    let sep = if spec.contains('?') { '&' } else { '?' };
    format!("{spec}{sep}notify=off")
}

/// The live-event bus `--events` asks for, connected; `None` without the flag.
pub(crate) async fn event_bus(args: &Serve) -> Result<Option<trident_nats::NatsBus>, String> {
    let Some(url) = &args.events else {
        return Ok(None);
    };
    if !shared_store(&args.store) {
        return Err(format!(
            "--events needs a store the replicas share (--store postgres://…), not {}: the bus \
             carries events between processes on one database",
            trident_store::describe(&args.store)
        ));
    }
    let options = trident_nats::NatsOptions::new()
        .namespace(args.events_namespace.clone())
        .name(format!(
            "trident {}",
            args.node_id.as_deref().unwrap_or("serve")
        ));
    trident_nats::NatsBus::connect(url, options)
        .await
        .map(Some)
        .map_err(|e| format!("--events: {e}"))
}

/// `trident demo-server` (a2a-cli SPEC §7.1): the demo agent on every binding, tasks in
/// memory, to practise the client commands against.
#[derive(Args)]
pub(crate) struct DemoServer {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
}

/// `trident demo-server`: `trident serve --agent demo --store memory --listen HOST:PORT`,
/// which also prints the client commands to try.
pub(crate) async fn demo_server(args: DemoServer) -> ExitCode {
    #[derive(clap::Parser)]
    struct AsServe {
        #[command(flatten)]
        serve: Serve,
    }
    let listen = SocketAddr::new(args.host, args.port).to_string();
    let argv = [
        "demo-server",
        "--agent",
        "demo",
        "--store",
        "memory",
        "--listen",
        listen.as_str(),
    ];
    match <AsServe as clap::Parser>::try_parse_from(argv) {
        Ok(mut parsed) => {
            parsed.serve.demo_hints = true;
            serve(parsed.serve).await
        }
        Err(e) => fail(e.to_string()),
    }
}

/// The card of `--extended-card`: an A2A AgentCard in JSON.
fn extended_card(path: &std::path::Path) -> Result<trident_proto::AgentCard, String> {
    let body =
        std::fs::read(path).map_err(|e| format!("--extended-card {}: {e}", path.display()))?;
    trident_client::read_card(&body)
        .map_err(|e| format!("--extended-card {}: {}", path.display(), e.message()))
}

/// `trident serve`
pub(crate) async fn serve(args: Serve) -> ExitCode {
    let lease_ttl = match seconds(args.lease_ttl, "--lease-ttl") {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let preview = match seconds(args.long_poll_timeout, "--long-poll-timeout") {
        Ok(long_poll_timeout) => args
            .listen
            .protocols
            .v1_1_preview
            .then_some(trident::Preview { long_poll_timeout }),
        Err(e) => return fail(e),
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
    let bus = match event_bus(&args).await {
        Ok(bus) => bus,
        Err(e) => return fail(e),
    };
    let mut webhook_policy = WebhookPolicy::new();
    for entry in &args.push_allow {
        webhook_policy = match webhook_policy.allow(entry) {
            Ok(p) => p,
            Err(e) => return fail(format!("--push-allow {e}")),
        };
    }
    let mut card = trident::default_card(&name, "An agent served by Trident");
    for uri in &args.require_extension {
        card.capabilities
            .get_or_insert_with(Default::default)
            .extensions
            .push(trident_proto::AgentExtension {
                uri: uri.clone(),
                description: "Required by this server's --require-extension".into(),
                required: true,
                params: None,
            });
    }
    let extended_card = match &args.extended_card {
        Some(path) => match extended_card(path) {
            Ok(extended) => {
                card.capabilities
                    .get_or_insert_with(Default::default)
                    .extended_agent_card = Some(true);
                Some(extended)
            }
            Err(e) => return fail(e),
        },
        None => None,
    };
    let builder = Server::builder_shared(executor)
        .card(card)
        .store(store_spec(&args))
        .webhook_policy(webhook_policy)
        .engine_config(EngineConfig {
            strict_version: args.strict_version,
            lease_ttl,
            tail_capacity: usize::try_from(args.live_tail).unwrap_or(usize::MAX),
            node_id: args.node_id.clone(),
            push_limits: PushLimits {
                per_task: args.push_max_configs,
                per_principal: args.push_max_configs_per_principal,
            },
            push_concurrency: PushConcurrency {
                global: args.push_max_deliveries.max(1),
                per_host: args.push_max_deliveries_per_host.max(1),
            },
            preview,
            ..EngineConfig::default()
        });
    let mut builder = match args.listen.apply(builder, &security) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    if let Some(authorizer) = security.authorizer.clone() {
        builder = builder.authorizer(authorizer);
    }
    if let Some(extended) = extended_card {
        builder = builder.extended_card(extended);
    }
    if let Some(path) = &args.sign_key {
        match signing_key(path) {
            Ok(key) => builder = builder.signing_key(key),
            Err(e) => return fail(e),
        }
    }
    let console = if args.console {
        let (page, api, served) = crate::console::served();
        builder = builder.public_routes(page).routes(api);
        Some(served)
    } else {
        None
    };
    let bus_stream = bus.as_ref().map(trident_nats::NatsBus::stream_name);
    let bus = bus.map(Arc::new);
    if let Some(bus) = &bus {
        builder = builder.events(bus.clone());
    }
    let server = match builder.build().await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    println!(
        "Trident serving {description} on {} (store: {})",
        server.local_addr(),
        trident_store::describe(&args.store)
    );
    if let Some(stream) = bus_stream {
        println!("live events on NATS JetStream (stream {stream})");
    }
    if let Some(console) = console {
        let page = console.bound(server.local_addr());
        println!("  console     {page}");
    }
    if args.demo_hints {
        let a = format!("http://{}", server.local_addr());
        println!("try:");
        println!("  trident card get -a {a}");
        println!("  trident send -a {a} hello");
        println!("  trident send -a {a} --stream 'stream 5 200'");
        println!("  trident send -a {a} input        (then reply with --task-id)");
        println!("  trident send -a {a} --async slow (then task get / task cancel)");
        println!("  trident task list -a {a}");
    }
    let code = run(server, &args.listen).await;
    if let Some(bus) = bus {
        // What was committed before the stop reaches the other replicas on the bus now, not
        // when they next read the store. Each publish has its own deadline; this bounds the
        // wait all the same.
        if tokio::time::timeout(BUS_FLUSH, bus.flush()).await.is_err() {
            tracing::warn!("the event bus did not acknowledge every publish before the stop");
        }
    }
    code
}

/// The longest a stopping server waits for the event bus to acknowledge what it published.
const BUS_FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

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
    let Some((binding, interface)) =
        trident_client::choose_for(&upstream_card, &preference, args.upstream_protocol)
    else {
        return fail(trident_client::no_match_for(
            &args.upstream,
            &upstream_card,
            &preference,
            args.upstream_protocol,
        ));
    };
    let client = match trident_client::client(binding, &interface).await {
        Ok(c) => c,
        Err(e) => return fail(format!("upstream: {e}")),
    };
    // The upstream's card with our interfaces; its signatures covered the upstream's
    // interfaces, so they are dropped rather than served broken. Its security declarations
    // stay: credentials pass through to the upstream, which checks them. With --auth the
    // gateway also checks callers itself, before anything reaches the upstream.
    let mut card = upstream_card;
    card.supported_interfaces.clear();
    card.signatures.clear();
    let security = match crate::auth::load(args.listen.auth.as_deref(), &args.listen.bearer) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let upstream: Arc<dyn A2aService> = Arc::new(trident_client::Upstream::new(client));
    let builder = match args
        .listen
        .apply(Server::service(upstream).card(card), &security)
    {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    let server = match builder.build().await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    println!(
        "Trident gateway on {} for {} ({} over {}, A2A {})",
        server.local_addr(),
        server.card().name,
        interface.url,
        binding.card_name(),
        if interface.protocol_version.is_empty() {
            "1.0"
        } else {
            interface.protocol_version.as_str()
        }
    );
    run(server, &args.listen).await
}

/// Serves until SIGTERM or Ctrl-C, then lets open streams finish for `--drain`.
async fn run(server: Server, listen: &Listen) -> ExitCode {
    let interfaces = server.interfaces();
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
    // Checked when the server was built.
    let drain = seconds(listen.drain, "--drain").unwrap_or(trident::DEFAULT_DRAIN);
    let signal = async move {
        trident::shutdown_signal().await;
        println!("shutting down: no new connections; open streams have {drain:?} to finish");
    };
    #[cfg(feature = "otlp")]
    let otlp_metrics = match listen.otlp_endpoint() {
        None => None,
        Some((endpoint, _)) => {
            let interval = match listen.otlp_metrics_interval() {
                Ok(i) => i,
                Err(e) => return fail(e),
            };
            match trident_server::otlp::export_metrics(
                server.metrics().clone(),
                &endpoint,
                interval,
            ) {
                Ok(export) => {
                    println!("  OTLP        {endpoint} (traces; metrics every {interval:?})");
                    Some(export)
                }
                Err(e) => return fail(e),
            }
        }
    };
    let result = server.with_graceful_shutdown(signal).await;
    #[cfg(feature = "otlp")]
    if let Some(export) = otlp_metrics {
        export.shutdown().await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}
