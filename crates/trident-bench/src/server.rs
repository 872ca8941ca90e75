//! The benchmarked servers: Trident's combined router over the echo agent, or the raw baseline.
//! Both are served by `axum::serve` on one port (HTTP/1.1 and h2c).

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::serve::ListenerExt;

use trident_core::store::Stores;
use trident_engine::Engine;
use trident_server::{Interfaces, ServerOptions};
use trident_testkit::agents;

use crate::peers::READY;

/// Which server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Hand-written SendMessage handlers (see [`crate::raw`]).
    Raw,
    /// `trident_server::app` over `Engine` with the echo agent and the in-memory store.
    Trident,
    /// Trident with [`crate::stream::Chunks`]: every message streams as many artifact chunks as
    /// its text says, as fast as the engine takes them.
    Chunks,
    /// Trident with [`crate::stream::Idle`]: every task stays `WORKING` until canceled.
    Idle,
}

impl Mode {
    /// Lowercase name, as on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Raw => "raw",
            Mode::Trident => "trident",
            Mode::Chunks => "chunks",
            Mode::Idle => "idle",
        }
    }
}

/// The store behind Trident's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Store {
    /// The in-memory store (`trident_engine::store::in_memory()`, the engine's default, with
    /// its default retention: at most `Retention::DEFAULT_MAX_TASKS` tasks, oldest ended first).
    #[default]
    Memory,
    /// The in-memory store keeping every task (`Retention::unlimited()`): with [`Store::Memory`],
    /// the price of retention.
    MemoryUnbounded,
    /// Keeps nothing ([`crate::discard`]): a diagnostic, to see the engine's cost without the
    /// store's.
    Discard,
    /// A SQLite file (`trident_store::SqliteStore`, `trident serve`'s default: WAL,
    /// `synchronous=FULL`, group commit). `run` creates it fresh in a temporary directory and
    /// removes it when the server stops.
    Sqlite,
}

impl Store {
    /// Lowercase name, as on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::MemoryUnbounded => "memory-unbounded",
            Store::Discard => "discard",
            Store::Sqlite => "sqlite",
        }
    }

    /// Opens the store (`sqlite` is the file at `sqlite_path`, which it requires).
    pub async fn open(self, sqlite_path: Option<&Path>) -> Result<Stores, String> {
        match self {
            Store::Memory => Ok(trident_engine::store::in_memory()),
            Store::MemoryUnbounded => Ok(Stores::of(Arc::new(
                trident_engine::store::MemoryStore::with_retention(
                    trident_engine::store::Retention::unlimited(),
                ),
            ))),
            Store::Discard => Ok(crate::discard::stores()),
            Store::Sqlite => {
                let path = sqlite_path.ok_or("--store sqlite needs --sqlite-path")?;
                let store = trident_store::SqliteStore::open(path)
                    .await
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let store = Arc::new(store);
                Ok(Stores {
                    tasks: store.clone(),
                    events: store.clone(),
                    push: store,
                })
            }
        }
    }
}

/// The router of `mode` for a server reachable at `addr` (`stores` are Trident's).
pub fn router(mode: Mode, addr: SocketAddr, stores: Stores) -> Result<axum::Router, String> {
    match mode {
        Mode::Raw => Ok(crate::raw::router()),
        Mode::Trident | Mode::Chunks | Mode::Idle => {
            let agent: Arc<dyn trident_core::AgentExecutor> = match mode {
                Mode::Chunks => Arc::new(crate::stream::Chunks),
                Mode::Idle => Arc::new(crate::stream::Idle),
                _ => Arc::new(agents::Echo),
            };
            let card = trident_server::card_with_interfaces(
                trident_core::default_card("Trident bench echo", "The echo agent, benchmarked"),
                &Interfaces::local(addr),
            );
            let engine = Engine::builder(agent).stores(stores).build();
            trident_server::app(Arc::new(engine), &card, &ServerOptions::default())
                .map_err(|e| e.to_string())
        }
    }
}

/// Binds `listen`, prints [`READY`] and the bound address on stdout, and serves `mode` until
/// the process is killed. The streaming modes ([`Mode::Chunks`], [`Mode::Idle`]) are served by
/// `trident_server::serve_with`, `trident serve`'s accept loop, with no connection limit; the
/// others by `axum::serve`. With `nodelay`, accepted sockets get `TCP_NODELAY` (`axum::serve`
/// leaves Nagle's algorithm on). Trident's store is `store`
/// (at `sqlite_path` for [`Store::Sqlite`]).
pub async fn serve(
    mode: Mode,
    listen: SocketAddr,
    nodelay: bool,
    store: Store,
    sqlite_path: Option<&Path>,
) -> Result<(), String> {
    let stores = match mode {
        Mode::Raw => trident_engine::store::in_memory(),
        Mode::Trident | Mode::Chunks | Mode::Idle => store.open(sqlite_path).await?,
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("bind {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let app = router(mode, addr, stores)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{READY}{addr}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    if matches!(mode, Mode::Chunks | Mode::Idle) {
        // The streaming figures are `trident serve`'s: its own accept loop (TCP_NODELAY, the
        // default timeouts), without the connection limit, so 10 000 idle streams fit.
        let limits = trident_server::ConnectionLimits {
            max_connections: None,
            ..Default::default()
        };
        return trident_server::serve_with(
            listener,
            app,
            std::future::pending(),
            std::time::Duration::ZERO,
            limits,
        )
        .await
        .map_err(|e| e.to_string());
    }
    if nodelay {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await
    } else {
        axum::serve(listener, app).await
    }
    .map_err(|e| e.to_string())
}
