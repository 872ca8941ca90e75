//! Durable implementations of Trident's store traits ([`TaskStore`], [`EventLog`],
//! [`PushConfigStore`]):
//!
//! - [`SqliteStore`], the embedded default: one file in WAL mode, one writer thread that
//!   group-commits every queued write in one transaction, a small pool of readers.
//! - [`PgStore`], cluster mode: several processes share one PostgreSQL database. Commits go
//!   through a few writer lanes that each commit whatever is queued in one transaction, and
//!   the processes learn of each other's commits through `LISTEN`/`NOTIFY` (one notification
//!   per transaction; [`TaskStore::notices`]), unless [`PgOptions::notify`] turns that off
//!   for a cluster whose events travel on an event bus.
//!
//! Both pass `trident_testkit::contract`, the suite the in-memory store passes. [`open`]
//! picks one from a spec string (the facade's `trident::store::open` also takes `memory`,
//! the engine's in-memory store, which this crate does not depend on).
//!
//! [`TaskStore`]: trident_core::store::TaskStore
//! [`EventLog`]: trident_core::store::EventLog
//! [`PushConfigStore`]: trident_core::store::PushConfigStore
//! [`TaskStore::notices`]: trident_core::store::TaskStore::notices

use std::sync::Arc;

use trident_core::store::Stores;

mod codec;
mod migrate;
mod postgres;
mod read;
mod sqlite;

pub use migrate::{POSTGRES_VERSION, SQLITE_VERSION};
pub use postgres::{PgOptions, PgStore};
pub use sqlite::SqliteStore;

/// What a store's writer has done so far: [`SqliteStore::stats`], [`PgStore::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Write requests handled.
    pub requests: u64,
    /// Transactions committed or attempted (one per batch of queued requests).
    pub transactions: u64,
    /// Batches run a second time, each request in its own savepoint, because a statement
    /// failed in the first run (counted once in `transactions`).
    pub reruns: u64,
}

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The spec names no known store.
    #[error(
        "unknown store {0:?}: expected \"sqlite:PATH\" (or \"sqlite://PATH\"), \
         or a PostgreSQL URL \"postgres://…\" / \"postgresql://…\" \
         (optionally with ?schema=NAME and/or notify=off)"
    )]
    Spec(String),
    /// The database refused a connection or a statement.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The database was migrated by a newer binary.
    #[error(
        "the database schema is at version {found}, newer than this binary knows ({known}); \
         run a newer trident against it"
    )]
    TooNew {
        /// The version recorded in the database.
        found: i64,
        /// The newest version this binary knows.
        known: i64,
    },
    /// Another store holds the SQLite file: another process (or another store of this one),
    /// whatever name it reached the file by (the lock is on the file, so links to it count).
    #[error(
        "{path} is in use by {holder} (a SQLite store belongs to one process; \
         use PostgreSQL to run several)"
    )]
    Locked {
        /// The database file as given (and the file it names, for a symbolic link).
        path: String,
        /// Who holds it: `process PID` where the system tells (Linux), else `another
        /// process`, or `this process (pid PID)`.
        holder: String,
    },
    /// A file could not be created or locked.
    #[error("{0}")]
    Io(String),
    /// The SQLite file failed its integrity check at start (or is not a SQLite database):
    /// it is not opened, so nothing is written into a damaged file.
    #[error(
        "{path} is damaged or not a SQLite database ({detail}); nothing was written to it. \
         Restore it from a backup, or move it aside to start with an empty store \
         (`sqlite3 {path} .recover` may save what is readable)"
    )]
    Corrupt {
        /// The database file.
        path: String,
        /// What SQLite reported.
        detail: String,
    },
    /// A `notify=…` parameter of a PostgreSQL URL that is neither `on` nor `off`.
    #[error(
        "bad PostgreSQL store parameter {0:?}: expected notify=on or notify=off \
         (off: commits are not announced with NOTIFY, for when an event bus carries them)"
    )]
    PgParam(String),
    /// A PostgreSQL schema name that is not a plain identifier.
    #[error("invalid schema name {0:?}: use ASCII letters, digits and underscores")]
    SchemaName(String),
}

/// Opens the durable stores named by `spec`:
///
/// - `sqlite:PATH` or `sqlite://PATH`: a SQLite file, created if missing;
/// - `postgres://…` or `postgresql://…`: a PostgreSQL database (its default schema, or the
///   one named by a `schema=NAME` query parameter, created if missing). `notify=off` turns
///   off the commit notifications ([`PgOptions::notify`]: for a cluster whose events travel
///   on another bus); `notify=on` is the default.
///
/// The three stores of the result are one object.
pub async fn open(spec: &str) -> Result<Stores, OpenError> {
    if let Some(path) = spec
        .strip_prefix("sqlite://")
        .or_else(|| spec.strip_prefix("sqlite:"))
    {
        if path.is_empty() {
            return Err(OpenError::Spec(spec.to_owned()));
        }
        return Ok(stores(Arc::new(SqliteStore::open(path).await?)));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let (url, options) = pg_options(spec)?;
        let store = PgStore::connect_with_options(&url, options).await?;
        return Ok(stores(Arc::new(store)));
    }
    Err(OpenError::Spec(spec.to_owned()))
}

/// `spec` fit for a log line: a PostgreSQL URL's password is masked.
pub fn describe(spec: &str) -> String {
    let Some((scheme, rest)) = spec.split_once("://") else {
        return spec.to_owned();
    };
    if !scheme.starts_with("postgres") {
        return spec.to_owned();
    }
    let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or("");
            let masked = if user_info.contains(':') {
                format!("{user}:***")
            } else {
                user.to_owned()
            };
            let slash = if rest.contains('/') { "/" } else { "" };
            format!("{scheme}://{masked}@{host}{slash}{tail}")
        }
        None => spec.to_owned(),
    }
}

/// Takes the store's own parameters (`schema=NAME`, `notify=on|off`) out of a PostgreSQL
/// URL's query string, leaving the connection's.
fn pg_options(url: &str) -> Result<(String, PgOptions), OpenError> {
    let mut options = PgOptions::new();
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), options));
    };
    let mut rest = Vec::new();
    for kv in query.split('&') {
        if let Some(name) = kv.strip_prefix("schema=") {
            options = options.schema(name);
        } else if let Some(value) = kv.strip_prefix("notify=") {
            options = options.notify(match value {
                "on" | "true" => true,
                "off" | "false" => false,
                _ => return Err(OpenError::PgParam(kv.to_owned())),
            });
        } else {
            rest.push(kv);
        }
    }
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, options))
}

fn stores<S>(store: Arc<S>) -> Stores
where
    S: trident_core::store::TaskStore
        + trident_core::store::EventLog
        + trident_core::store::PushConfigStore,
{
    Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: store,
    }
}

#[cfg(test)]
mod tests;
