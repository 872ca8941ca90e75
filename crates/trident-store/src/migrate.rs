//! A tiny forward-only migration runner: `trident_schema(version, applied_ms)` records what
//! was applied; each backend has its own ordered list of embedded SQL scripts, applied in one
//! transaction at open. A database recorded at a newer version than the binary knows is
//! refused.

use sqlx::{AssertSqlSafe, Connection, PgConnection, SqliteConnection};
use trident_core::store::now_ms;

use crate::OpenError;

/// One schema version and the script that brings the previous version to it.
struct Migration {
    version: i64,
    sql: &'static str,
}

const SQLITE: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("migrations/sqlite/0001_init.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("migrations/sqlite/0002_snapshots.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("migrations/sqlite/0003_push_protocol.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("migrations/sqlite/0004_without_rowid.sql"),
    },
];

const POSTGRES: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("migrations/postgres/0002_snapshots.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("migrations/postgres/0003_push_protocol.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("migrations/postgres/0004_counter_shards.sql"),
    },
    Migration {
        version: 5,
        sql: include_str!("migrations/postgres/0005_event_blocks.sql"),
    },
];

/// The newest SQLite schema version this binary knows.
pub const SQLITE_VERSION: i64 = 4;
/// The newest PostgreSQL schema version this binary knows.
pub const POSTGRES_VERSION: i64 = 5;

const CREATE_SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS trident_schema (\
     version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)";

fn too_new(found: i64, known: &[Migration]) -> Option<OpenError> {
    let known = known.last().map_or(0, |m| m.version);
    (found > known).then_some(OpenError::TooNew { found, known })
}

/// Brings a SQLite database up to [`SQLITE_VERSION`] (in one `BEGIN IMMEDIATE` transaction).
pub(crate) async fn sqlite(conn: &mut SqliteConnection) -> Result<(), OpenError> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query(CREATE_SCHEMA_TABLE).execute(&mut *tx).await?;
    let found: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM trident_schema")
        .fetch_one(&mut *tx)
        .await?;
    if let Some(e) = too_new(found, SQLITE) {
        return Err(e);
    }
    for m in SQLITE.iter().filter(|m| m.version > found) {
        tracing::info!(version = m.version, "sqlite store: applying migration");
        sqlx::raw_sql(m.sql).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO trident_schema (version, applied_ms) VALUES (?, ?)")
            .bind(m.version)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Brings a PostgreSQL schema up to [`POSTGRES_VERSION`], creating `schema` first when given.
/// An advisory lock serializes processes migrating at the same time.
pub(crate) async fn postgres(
    conn: &mut PgConnection,
    schema: Option<&str>,
) -> Result<(), OpenError> {
    let mut tx = conn.begin().await?;
    // Any fixed key: "trident" in ASCII.
    sqlx::query("SELECT pg_advisory_xact_lock(7421395063233902)")
        .execute(&mut *tx)
        .await?;
    if let Some(schema) = schema {
        sqlx::raw_sql(AssertSqlSafe(format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\""
        )))
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query(CREATE_SCHEMA_TABLE).execute(&mut *tx).await?;
    let found: i32 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM trident_schema")
        .fetch_one(&mut *tx)
        .await?;
    let found = i64::from(found);
    if let Some(e) = too_new(found, POSTGRES) {
        return Err(e);
    }
    for m in POSTGRES.iter().filter(|m| m.version > found) {
        tracing::info!(version = m.version, "postgres store: applying migration");
        sqlx::raw_sql(m.sql).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO trident_schema (version, applied_ms) VALUES ($1, $2)")
            .bind(i32::try_from(m.version).unwrap_or(i32::MAX))
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
