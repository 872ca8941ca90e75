//! Stores: the traits and the in-memory store (from the engine), the durable SQLite and
//! PostgreSQL stores (from `trident-store`), and [`open`](crate::store::open), which takes
//! any of them by a spec string, as `trident serve --store` and
//! [`Server::builder().store(…)`] do.
//!
//! [`Server::builder().store(…)`]: crate::ServerBuilder::store

// A glob on purpose: the engine's `store` (the traits and the in-memory store) is the first
// part of this module, and grows with it.
pub use trident_engine::store::*;
pub use trident_store::{PgOptions, PgStore, SqliteStore, WriterStats, describe};

/// Why a store spec did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// A spec naming no store this build knows.
    #[error(
        "unknown store {0:?}: expected \"memory\" (or \"memory?max_tasks=N&terminal_ttl=SECONDS\"), \
         \"sqlite:PATH\" (or \"sqlite://PATH\"), \
         or a PostgreSQL URL \"postgres://…\" / \"postgresql://…\" \
         (optionally with ?schema=NAME and/or notify=off)"
    )]
    Spec(String),
    /// A `memory?…` spec with a bad parameter.
    #[error(transparent)]
    Memory(#[from] MemoryParamError),
    /// A SQLite or PostgreSQL store that did not open (or whose spec is malformed).
    #[error(transparent)]
    Durable(#[from] trident_store::OpenError),
}

/// Opens the stores named by `spec`:
///
/// - `memory`: the in-memory store (nothing survives a restart), holding at most
///   [`Retention::DEFAULT_MAX_TASKS`] tasks; `memory?max_tasks=N&terminal_ttl=SECONDS` sets
///   its [`Retention`] (`0` or `none` lifts either limit): ended tasks are evicted oldest
///   first, beyond `N` tasks or `SECONDS` after they ended;
/// - `sqlite:PATH` or `sqlite://PATH`, `postgres://…` or `postgresql://…`: the durable
///   stores, as [`trident_store::open`] opens them.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let stores = trident::store::open("memory?max_tasks=1000").await.unwrap();
/// assert!(!stores.tasks.shared());
/// assert!(trident::store::open("mysql://db").await.is_err());
/// # }
/// ```
pub async fn open(spec: &str) -> Result<Stores, OpenError> {
    if let Some(memory) = open_memory(spec) {
        return Ok(memory?);
    }
    let durable = ["sqlite:", "postgres://", "postgresql://"]
        .iter()
        .any(|prefix| spec.starts_with(prefix));
    if !durable {
        return Err(OpenError::Spec(spec.to_owned()));
    }
    Ok(trident_store::open(spec).await?)
}
