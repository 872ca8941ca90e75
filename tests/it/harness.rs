//! What the behaviour suite runs against here: a transport (the engine in process on each
//! store, or each binding's client to a real server) and a server variant (capabilities, card,
//! version policy). The cases live in `trident-conformance`; [`Local`] is the target that builds
//! their servers through [`Fixture::new`]. The cases' helpers are re-exported for the other
//! test modules.

use std::sync::Arc;
use std::time::Duration;

// A glob on purpose: the behaviour suite's helpers are the test modules' shared vocabulary.
pub use trident_conformance::helpers::*;
pub use trident_conformance::{REQUIRED_EXT, Variant};
use trident_core::A2aService;
use trident_engine::{Engine, EngineConfig};
use trident_proto as pb;
use trident_testkit::agents::Demo;

/// The PostgreSQL server for the tests that need one (`TRIDENT_TEST_POSTGRES`); `None` when
/// it is unset outside CI, a failed test under `CI` when it is unset or unreachable.
pub fn postgres_url(test: &str) -> Option<String> {
    trident_testkit::contract::test_postgres_url(test)
}

/// How the suite reaches the engine.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    /// Direct calls on `Arc<dyn A2aService>`.
    InProcess,
    /// Direct calls on an engine whose store is a fresh SQLite file.
    Sqlite,
    /// Direct calls on an engine whose store is a fresh schema of the PostgreSQL server named
    /// by `TRIDENT_TEST_POSTGRES` (the cases are skipped without it).
    Postgres,
    /// As [`Postgres`](Self::Postgres), in cluster mode: the NATS JetStream event bus
    /// (`trident_nats::NatsBus`, in a namespace of the fixture's own on the `nats-server` the
    /// process starts for its tests, [`shared_url`](crate::nats_server::shared_url)), the store
    /// with `notify=off` as `trident serve --events` opens it, and a second engine on the same
    /// schema and bus beside the one the cases call (the cases are skipped without
    /// `TRIDENT_TEST_POSTGRES` or `nats-server`; under `CI` either missing fails them).
    PostgresBus,
    /// Our gRPC client to a real server on an ephemeral port.
    Grpc,
    /// Our JSON-RPC client to a real server.
    JsonRpc,
    /// Our HTTP+JSON client to a real server.
    Rest,
    /// Our gRPC client to `interop/python/agent.py`, the demo agent built with the official
    /// Python SDK (the interpreter comes from `TRIDENT_INTEROP_PYTHON`).
    PyGrpc,
    /// Our JSON-RPC client to the Python SDK agent.
    PyJsonRpc,
    /// Our HTTP+JSON client to the Python SDK agent.
    PyRest,
    /// Our gRPC client to `trident gateway` in front of the Python SDK agent serving only
    /// JSON-RPC.
    GatewayGrpc,
    /// Our HTTP+JSON client to that gateway.
    GatewayRest,
    /// Our v0.3 gRPC client (`trident_grpc::V03Client`) to a real server serving A2A v0.3
    /// only (`--protocols 0.3`).
    V03Grpc,
    /// Our v0.3 JSON-RPC client to that server.
    V03JsonRpc,
    /// Our v0.3 HTTP+JSON client to that server.
    V03Rest,
    /// Our gRPC client (speaking v0.3, `a2a.v1.A2AService`) to `interop/python03/agent.py`, the
    /// demo agent built with the official v0.3 Python SDK (the interpreter comes from
    /// `TRIDENT_INTEROP_PYTHON03`).
    Py03Grpc,
    /// Our JSON-RPC client (speaking v0.3) to the v0.3 Python SDK agent.
    Py03JsonRpc,
    /// Our HTTP+JSON client (speaking v0.3) to the v0.3 Python SDK agent.
    Py03Rest,
}

/// Which official Python SDK built the agent of a `Py*` transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PythonSdk {
    /// `a2a-sdk` 1.x (A2A 1.0): `interop/python/agent.py` under `$TRIDENT_INTEROP_PYTHON`.
    V1,
    /// `a2a-sdk` 0.3.x (A2A 0.3): `interop/python03/agent.py` under `$TRIDENT_INTEROP_PYTHON03`.
    V03,
}

impl PythonSdk {
    /// The environment variable naming the interpreter with this SDK installed.
    fn interpreter_var(self) -> &'static str {
        match self {
            PythonSdk::V1 => "TRIDENT_INTEROP_PYTHON",
            PythonSdk::V03 => "TRIDENT_INTEROP_PYTHON03",
        }
    }

    /// The agent script, relative to the workspace root.
    fn script(self) -> &'static str {
        match self {
            PythonSdk::V1 => "interop/python/agent.py",
            PythonSdk::V03 => "interop/python03/agent.py",
        }
    }
}

impl Transport {
    /// The binding of a transport that reaches the Python SDK agent.
    fn python_binding(self) -> Option<trident_client::Binding> {
        match self {
            Transport::PyGrpc | Transport::GatewayGrpc => Some(trident_client::Binding::Grpc),
            Transport::PyJsonRpc => Some(trident_client::Binding::JsonRpc),
            Transport::PyRest | Transport::GatewayRest => Some(trident_client::Binding::Rest),
            Transport::Py03Grpc => Some(trident_client::Binding::Grpc),
            Transport::Py03JsonRpc => Some(trident_client::Binding::JsonRpc),
            Transport::Py03Rest => Some(trident_client::Binding::Rest),
            _ => None,
        }
    }

    /// The SDK of the Python agent a transport reaches.
    fn python_sdk(self) -> PythonSdk {
        match self {
            Transport::Py03Grpc | Transport::Py03JsonRpc | Transport::Py03Rest => PythonSdk::V03,
            _ => PythonSdk::V1,
        }
    }

    /// Whether the transport goes through `trident gateway`.
    fn via_gateway(self) -> bool {
        matches!(self, Transport::GatewayGrpc | Transport::GatewayRest)
    }

    /// Whether the cases call the engine in process (no wire).
    pub fn in_process(self) -> bool {
        matches!(
            self,
            Transport::InProcess | Transport::Sqlite | Transport::Postgres | Transport::PostgresBus
        )
    }

    /// Whether this transport can run here (PostgreSQL needs `TRIDENT_TEST_POSTGRES`, the bus
    /// `nats-server` too; with `CI` set, their absence fails the case instead: see
    /// [`postgres_url`] and [`NatsServer::available`](crate::nats_server::NatsServer::available)).
    pub fn available(self) -> bool {
        match self {
            Transport::Postgres => postgres_url("suite").is_some(),
            Transport::PostgresBus => {
                postgres_url("suite").is_some() && crate::nats_server::NatsServer::available()
            }
            _ => true,
        }
    }

    /// What [`available`](Self::available) needs, for the note of a skipped case.
    pub fn needs(self) -> &'static str {
        match self {
            Transport::PostgresBus => "TRIDENT_TEST_POSTGRES and nats-server",
            _ => "TRIDENT_TEST_POSTGRES",
        }
    }
}

/// A durable store made for one fixture, removed with it.
enum ScratchStore {
    /// The directory is removed when the fixture drops.
    Sqlite { _dir: crate::process::TempDir },
    /// The schema is dropped when the fixture drops.
    Postgres {
        url: String,
        schema: String,
        bus: Option<ScratchBus>,
    },
}

/// The event bus of a [`Transport::PostgresBus`] fixture: a namespace of its own, which its
/// engines share, on the `nats-server` the process's fixtures share
/// ([`shared_url`](crate::nats_server::shared_url)).
struct ScratchBus {
    url: String,
    namespace: String,
}

impl ScratchBus {
    /// One engine's connection to the bus (each engine has its own, as replicas do).
    async fn connect(&self, name: &str) -> Arc<dyn trident_core::store::EventBus> {
        let options = trident_nats::NatsOptions::new()
            .namespace(self.namespace.clone())
            .name(format!("trident suite {name}"));
        Arc::new(
            trident_nats::NatsBus::connect(&self.url, options)
                .await
                .expect("connect to the shared nats-server"),
        )
    }
}

/// What an engine of a fixture is built on: its stores, and its event bus in cluster mode.
struct EngineParts {
    stores: trident_core::store::Stores,
    bus: Option<Arc<dyn trident_core::store::EventBus>>,
}

impl ScratchStore {
    async fn open(transport: Transport) -> Option<(Self, EngineParts)> {
        match transport {
            Transport::Sqlite => {
                let dir = crate::process::TempDir::new("trident-suite");
                let spec = format!("sqlite:{}", dir.0.join("suite.db").display());
                let stores = trident_store::open(&spec).await.expect("open sqlite");
                let parts = EngineParts { stores, bus: None };
                Some((Self::Sqlite { _dir: dir }, parts))
            }
            Transport::Postgres | Transport::PostgresBus => {
                let url = postgres_url("suite").expect("TRIDENT_TEST_POSTGRES");
                let id = uuid::Uuid::new_v4().simple().to_string();
                let bus = match transport {
                    Transport::PostgresBus => Some(ScratchBus {
                        url: crate::nats_server::shared_url()
                            .await
                            .expect("nats-server (checked by Transport::available)"),
                        namespace: format!("suite_{}", &id[..12]),
                    }),
                    _ => None,
                };
                let scratch = Self::Postgres {
                    url,
                    schema: format!("trident_suite_{id}"),
                    bus,
                };
                let parts = scratch.engine_parts("a").await;
                Some((scratch, parts))
            }
            _ => None,
        }
    }

    /// The stores and bus of one more engine on this PostgreSQL schema (a replica: a pool and
    /// a bus connection of its own), named `name` on the bus. With a bus the store sends no
    /// `NOTIFY`, as `trident serve --events` opens it.
    async fn engine_parts(&self, name: &str) -> EngineParts {
        let Self::Postgres { url, schema, bus } = self else {
            unreachable!("only a PostgreSQL schema has replicas");
        };
        let sep = if url.contains('?') { '&' } else { '?' };
        let notify = if bus.is_some() { "&notify=off" } else { "" };
        let stores = trident_store::open(&format!("{url}{sep}schema={schema}{notify}"))
            .await
            .expect("open postgres");
        let bus = match bus {
            Some(bus) => Some(bus.connect(name).await),
            None => None,
        };
        EngineParts { stores, bus }
    }
}

impl Drop for ScratchStore {
    fn drop(&mut self) {
        if let Self::Postgres { url, schema, .. } = self {
            let _ = std::process::Command::new("psql")
                .args([
                    url.as_str(),
                    "-qc",
                    &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
                ])
                .output();
        }
    }
}

pub struct Fixture {
    pub svc: Arc<dyn A2aService>,
    /// The server's interfaces, when there is a server.
    pub interfaces: Option<trident_server::Interfaces>,
    server: Option<tokio::task::JoinHandle<()>>,
    agent: Option<PythonAgent>,
    /// In cluster mode ([`Transport::PostgresBus`]), the second engine on the same store and
    /// bus, which the cases do not call: it follows, sweeps and renews as a replica does.
    _peer: Option<Engine>,
    _store: Option<ScratchStore>,
    _gateway: Option<crate::process::Trident>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.abort();
        }
        if let Some(mut agent) = self.agent.take() {
            agent.stop();
        }
    }
}

/// Serves `engine` with its card on 127.0.0.1:0 through the one combined listener.
pub async fn spawn_server(
    engine: Engine,
) -> (trident_server::Interfaces, tokio::task::JoinHandle<()>) {
    let options = trident_server::ServerOptions {
        authenticator: Some(Arc::new(test_tokens())),
        // The suite also calls anonymously; unknown credentials are still refused.
        allow_anonymous: true,
        ..Default::default()
    };
    spawn_server_with(engine, options).await
}

/// Serves `engine` with its card on 127.0.0.1:0 with these server options.
pub async fn spawn_server_with(
    engine: Engine,
    options: trident_server::ServerOptions,
) -> (trident_server::Interfaces, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let interfaces = trident_server::Interfaces::local(listener.local_addr().expect("addr"));
    let card = trident_server::card_with_interfaces(engine.card().clone(), &interfaces);
    let app = trident_server::app(Arc::new(engine), &card, &options).expect("app");
    let server = tokio::spawn(async move {
        let _ = trident_server::serve(listener, app, std::future::pending(), Duration::ZERO).await;
    });
    (interfaces, server)
}

impl Fixture {
    pub async fn new(transport: Transport, variant: Variant) -> Self {
        Self::configured(transport, variant, EngineConfig::default()).await
    }

    /// As [`Fixture::new`], the engine (not a Python agent's) built with `config`.
    pub async fn configured(transport: Transport, variant: Variant, config: EngineConfig) -> Self {
        if let Some(binding) = transport.python_binding() {
            return Self::python(
                transport.python_sdk(),
                binding,
                variant,
                transport.via_gateway(),
            )
            .await;
        }
        let mut card = trident_core::default_card("Demo", "Every demo behaviour");
        let caps = card.capabilities.get_or_insert_with(Default::default);
        caps.push_notifications = Some(!variant.no_push);
        caps.streaming = Some(!variant.no_streaming);
        if let Some(uri) = variant.required_extension {
            caps.extensions.push(pb::AgentExtension {
                uri: uri.into(),
                required: true,
                ..Default::default()
            });
        }
        if variant.extended_card.is_some() {
            card.capabilities
                .get_or_insert_with(Default::default)
                .extended_agent_card = Some(true);
        }
        let config = EngineConfig {
            strict_version: variant.strict_version,
            preview: config
                .preview
                .or(variant.preview.then(trident_engine::Preview::default)),
            ..config
        };
        // Every engine of the fixture (two in cluster mode) is built alike.
        let engine_on = |parts: Option<EngineParts>| {
            let mut builder = Engine::builder(Arc::new(Demo))
                .config(config.clone())
                .card(card.clone());
            if let Some(Some(ext)) = &variant.extended_card {
                builder = builder.extended_card(ext.clone());
            }
            if let Some(EngineParts { stores, bus }) = parts {
                builder = builder.stores(stores);
                if let Some(bus) = bus {
                    builder = builder.bus(bus);
                }
            }
            builder.build()
        };
        let (scratch, parts) = ScratchStore::open(transport).await.unzip();
        let engine = engine_on(parts);
        let (interfaces, server) = match transport {
            Transport::InProcess
            | Transport::Sqlite
            | Transport::Postgres
            | Transport::PostgresBus => {
                let peer = match (transport, &scratch) {
                    (Transport::PostgresBus, Some(scratch)) => {
                        Some(engine_on(Some(scratch.engine_parts("b").await)))
                    }
                    _ => None,
                };
                return Self {
                    svc: Arc::new(engine),
                    interfaces: None,
                    server: None,
                    agent: None,
                    _peer: peer,
                    _store: scratch,
                    _gateway: None,
                };
            }
            Transport::V03Grpc | Transport::V03JsonRpc | Transport::V03Rest => {
                let options = trident_server::ServerOptions {
                    authenticator: Some(Arc::new(test_tokens())),
                    allow_anonymous: true,
                    protocols: trident_server::Protocols::V03_ONLY,
                    ..Default::default()
                };
                spawn_server_with(engine, options).await
            }
            _ if variant.preview => {
                let options = trident_server::ServerOptions {
                    authenticator: Some(Arc::new(test_tokens())),
                    allow_anonymous: true,
                    protocols: trident_server::Protocols::ALL.with_v1_1_preview(),
                    ..Default::default()
                };
                spawn_server_with(engine, options).await
            }
            _ => spawn_server(engine).await,
        };
        let svc: Arc<dyn A2aService> = match transport {
            Transport::InProcess
            | Transport::Sqlite
            | Transport::Postgres
            | Transport::PostgresBus
            | Transport::PyGrpc
            | Transport::PyJsonRpc
            | Transport::PyRest
            | Transport::GatewayGrpc
            | Transport::GatewayRest
            | Transport::Py03Grpc
            | Transport::Py03JsonRpc
            | Transport::Py03Rest => unreachable!("handled above"),
            Transport::V03Grpc => Arc::new(
                trident_grpc::V03Client::connect_with(
                    &interfaces.grpc,
                    &trident_grpc::GrpcOptions::default(),
                )
                .await
                .expect("grpc connect"),
            ),
            Transport::V03JsonRpc => Arc::new(trident_jsonrpc::V03Client::with_client(
                reqwest::Client::new(),
                &interfaces.jsonrpc,
            )),
            Transport::V03Rest => Arc::new(trident_rest::V03Client::with_client(
                reqwest::Client::new(),
                &interfaces.rest,
            )),
            Transport::Grpc => Arc::new(
                trident_grpc::GrpcClient::connect(&interfaces.grpc)
                    .await
                    .expect("grpc connect"),
            ),
            Transport::JsonRpc => Arc::new(
                trident_jsonrpc::JsonRpcClient::new(&interfaces.jsonrpc).expect("jsonrpc client"),
            ),
            Transport::Rest => {
                Arc::new(trident_rest::RestClient::new(&interfaces.rest).expect("rest client"))
            }
        };
        Self {
            svc,
            interfaces: Some(interfaces),
            server: Some(server),
            agent: None,
            _peer: None,
            _store: None,
            _gateway: None,
        }
    }

    /// Starts the Python agent of `sdk` and connects our client of `binding` to it, through its
    /// card (a v0.3 card makes our client speak v0.3) — or, `via_gateway`, starts it serving
    /// JSON-RPC only and connects to `trident gateway` in front of it.
    async fn python(
        sdk: PythonSdk,
        binding: trident_client::Binding,
        variant: Variant,
        via_gateway: bool,
    ) -> Self {
        assert!(
            variant == Variant::default(),
            "the Python SDK agent has no capability switches: {variant:?}"
        );
        let agent = PythonAgent::start_sdk(
            sdk,
            if via_gateway {
                &["--jsonrpc-only"][..]
            } else {
                &[]
            },
        )
        .await;
        let gateway = if via_gateway {
            Some(crate::process::Trident::gateway(&agent.card_url, &[]).await)
        } else {
            None
        };
        let card_url = gateway
            .as_ref()
            .map_or_else(|| agent.card_url.clone(), |g| g.origin.clone());
        let card = trident_client::fetch_card(&card_url)
            .await
            .expect("the agent's card");
        // `Auto`: the 1.x interface of the binding, else (a v0.3 agent's card) its 0.3 one.
        let (_, interface) =
            trident_client::choose_for(&card, &[binding], trident_client::Protocol::Auto)
                .unwrap_or_else(|| panic!("the Python agent's card offers {binding:?}"));
        let svc = trident_client::client(binding, &interface)
            .await
            .expect("client of the Python agent");
        let url = |name: &str| {
            card.supported_interfaces
                .iter()
                .find(|i| i.protocol_binding == name)
                .map(|i| i.url.clone())
                .unwrap_or_default()
        };
        let interfaces = trident_server::Interfaces {
            jsonrpc: url("JSONRPC"),
            rest: url("HTTP+JSON"),
            grpc: url("GRPC"),
        };
        Self {
            svc,
            interfaces: Some(interfaces),
            server: None,
            agent: Some(agent),
            _peer: None,
            _store: None,
            _gateway: gateway,
        }
    }

    /// The interface of `transport` on the wire, with the card as its server serves it; `None`
    /// in process.
    async fn wire(&self, transport: Transport) -> Option<trident_conformance::Wire> {
        let binding = match transport {
            Transport::InProcess
            | Transport::Sqlite
            | Transport::Postgres
            | Transport::PostgresBus => return None,
            Transport::Grpc => trident_client::Binding::Grpc,
            Transport::JsonRpc => trident_client::Binding::JsonRpc,
            Transport::Rest => trident_client::Binding::Rest,
            // The cases below `A2aService` check the 1.0 wire.
            Transport::V03Grpc | Transport::V03JsonRpc | Transport::V03Rest => return None,
            other => other.python_binding()?,
        };
        let card_url = match (&self.agent, &self._gateway) {
            (_, Some(gateway)) => trident_client::card_url(&gateway.origin),
            (Some(agent), None) => agent.card_url.clone(),
            (None, None) => {
                let rest = &self.interfaces.as_ref()?.rest;
                let origin = rest.split('/').take(3).collect::<Vec<_>>().join("/");
                trident_client::card_url(&origin)
            }
        };
        let card = trident_client::fetch_card(&card_url)
            .await
            .expect("the server's card");
        let (binding, interface) =
            trident_client::choose_for(&card, &[binding], trident_client::Protocol::Auto)?;
        Some(trident_conformance::Wire {
            binding,
            interface,
            card_url,
            card,
        })
    }

    pub async fn default(transport: Transport) -> Self {
        Self::new(transport, Variant::default()).await
    }
}

/// The suite's target here: a server of `Transport` built for each fixture, exactly as the
/// variant asks, with the test tokens (`Bearer token-<name>` is `<name>`).
pub struct Local(pub Transport);

#[async_trait::async_trait]
impl trident_conformance::Target for Local {
    async fn fixture(
        &self,
        variant: Variant,
    ) -> Result<trident_conformance::Fixture, trident_conformance::Skip> {
        let f = Fixture::new(self.0, variant).await;
        let wire = f.wire(self.0).await;
        let mut fixture = trident_conformance::Fixture::of(f.svc.clone());
        if let Some(wire) = wire {
            fixture = fixture.with_wire(wire);
        }
        Ok(fixture.with_guard(f))
    }
}

/// A Python SDK agent (`interop/python/agent.py` under `$TRIDENT_INTEROP_PYTHON`, or the v0.3
/// one: [`PythonSdk`]) running on free loopback ports; killed on drop. Its stderr is discarded
/// unless `TRIDENT_INTEROP_VERBOSE` is set.
pub struct PythonAgent {
    child: std::process::Child,
    /// The URL of its agent card.
    pub card_url: String,
    /// Kept open so the agent never writes to a closed pipe.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
    /// The agent exits when this closes, even if this process dies without killing it.
    _stdin: std::process::ChildStdin,
}

impl PythonAgent {
    /// Starts the 1.0 SDK's agent with these extra arguments and waits until it serves.
    pub async fn start(extra: &[&str]) -> Self {
        Self::start_sdk(PythonSdk::V1, extra).await
    }

    /// Starts the agent built with `sdk` with these extra arguments and waits until it serves.
    pub async fn start_sdk(sdk: PythonSdk, extra: &[&str]) -> Self {
        let var = sdk.interpreter_var();
        let python = std::env::var_os(var).unwrap_or_else(|| {
            panic!("{var} names a Python with the official a2a-sdk (see interop/run.sh)")
        });
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(sdk.script());
        let stderr = if std::env::var_os("TRIDENT_INTEROP_VERBOSE").is_some() {
            std::process::Stdio::inherit()
        } else {
            std::process::Stdio::null()
        };
        // Port 0: the agent binds free ports itself and prints its card URL once it serves.
        let mut child = std::process::Command::new(&python)
            .arg(&script)
            .args(["--host", "127.0.0.1", "--port", "0", "--grpc-port", "0"])
            .arg("--exit-on-stdin-eof")
            .args(extra)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {python:?} {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let ready = tokio::task::spawn_blocking(move || read_card_url(stdout));
        match tokio::time::timeout(Duration::from_secs(60), ready).await {
            Ok(Ok(Some((card_url, stdout)))) => Self {
                child,
                card_url,
                _stdout: stdout,
                _stdin: stdin,
            },
            outcome => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "the Python agent did not serve ({}; exit {status:?}); rerun with \
                     TRIDENT_INTEROP_VERBOSE=1 to see its log",
                    match outcome {
                        Err(_) => "no card URL within 60 s",
                        _ => "it closed stdout",
                    }
                );
            }
        }
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the agent's stdout up to its `agent card <url>` line.
fn read_card_url(
    mut stdout: std::io::BufReader<std::process::ChildStdout>,
) -> Option<(String, std::io::BufReader<std::process::ChildStdout>)> {
    use std::io::BufRead;
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(url) = line.trim().strip_prefix("agent card ") {
            return Some((url.to_owned(), stdout));
        }
    }
}

/// Maps `Bearer token-<name>` to `<name>` for the names the suite uses.
fn test_tokens() -> trident_core::StaticTokens {
    ["alice", "bob", "mallory", "a"]
        .into_iter()
        .fold(trident_core::StaticTokens::new(), |t, n| {
            t.with(format!("token-{n}"), n)
        })
}
