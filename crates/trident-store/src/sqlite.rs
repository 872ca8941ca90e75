//! The SQLite store: one file in WAL mode, one writer thread with group commit (rusqlite,
//! prepared statements kept: `writer.rs`), a pool of sqlx readers (the read path shared with
//! PostgreSQL: `crate::read`).

mod lock;
mod writer;

use std::path::Path;
use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions as _, Connection as _};
use trident_core::store::{
    ConfigCount, EventLog, Generation, LoggedEvent, PushConfigStore, Scope, StoreError, TaskPage,
    TaskQuery, TaskRecord, TaskStore, events_continue, now_ms,
};
use trident_proto as pb;

use crate::codec::{TaskRow, encode_events, final_row, to_i64};
use crate::read::Reads;
use crate::{OpenError, WriterStats};
use writer::{Op, Out, Writer, unexpected};

/// Read connections.
const READERS: u32 = 4;

/// The tasks, event logs and push configurations in one SQLite file.
///
/// Every write goes to a single writer thread, which runs whatever is queued (up to 256
/// requests) in one `BEGIN IMMEDIATE` transaction: a refused request writes nothing (and one
/// that fails halfway is rolled back alone, the batch run again with a savepoint per request),
/// the others commit together with one fsync. Reads use
/// a separate pool of connections (WAL readers do not block the writer).
///
/// Not shared: the file belongs to one process, which holds an exclusive lock on it (on the
/// file itself, so it holds through symbolic and hard links) while the store is open.
pub struct SqliteStore {
    writer: Writer,
    reads: Reads<sqlx::Sqlite>,
    /// The readers' pool, closed (in the background) when the store is dropped.
    readers: SqlitePool,
    /// The lock on the file, shared with the writer thread: released once the writer's and
    /// the readers' connections have all closed (see `lock.rs` for why the order matters).
    lock: Option<Arc<lock::FileLock>>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        let Some(lock) = self.lock.take() else {
            return;
        };
        // An open of the same file by this process meanwhile waits for the close to finish.
        lock.closing();
        let readers = self.readers.clone();
        // Outside a runtime (or in one shutting down, which drops the task unrun) the readers'
        // connections close on their own threads as the pool goes, possibly after the lock:
        // only a store dropped that way and opened again at once by another process is
        // exposed, and only while its last readers close.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                readers.close().await;
                drop(lock);
            });
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database file at `path` and brings its schema up to
    /// date.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        // The file itself is locked (not a name derived from its path), so a second process
        // reaching it through a link is refused too.
        let lock = Arc::new(lock::lock(path.as_ref()).await?);
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path.as_ref())
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(false);
        let corrupt = |detail: String| OpenError::Corrupt {
            path: path.as_ref().display().to_string(),
            detail,
        };
        let mut conn = options
            .connect()
            .await
            .map_err(|e| corrupt_or(e, &corrupt))?;
        // A damaged file is refused before anything is written to it (a migration or a
        // commit into a corrupt b-tree can lose more of it). `quick_check` reads every page
        // but skips the index-vs-table cross checks: linear in the file's size.
        let problems: Vec<String> = sqlx::query_scalar("PRAGMA quick_check(20)")
            .fetch_all(&mut conn)
            .await
            .map_err(|e| corrupt_or(e, &corrupt))?;
        if problems.iter().any(|p| p != "ok") {
            return Err(corrupt(format!("quick_check: {}", problems.join("; "))));
        }
        crate::migrate::sqlite(&mut conn).await?;
        conn.close().await?;
        let writer = Writer::start(path.as_ref(), lock.clone()).await?;
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            .connect_with(options)
            .await?;
        Ok(Self {
            writer,
            reads: Reads::new(readers.clone(), crate::read::LogLayout::Rows),
            readers,
            lock: Some(lock),
        })
    }

    /// What the writer has done so far.
    pub fn stats(&self) -> WriterStats {
        self.writer.stats()
    }

    /// A commit through the writer; `snapshot` stores `record.task` as the task's snapshot.
    async fn write_commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
        snapshot: bool,
    ) -> Result<(), StoreError> {
        let op = Op::Commit {
            row: TaskRow::encode(scope, record, snapshot)?,
            expected: expected_seq.map(to_i64).transpose()?,
            continues: events_continue(expected_seq.unwrap_or(0), record.last_seq, events),
            events: encode_events(events)?,
        };
        match self.write(op).await? {
            Out::Unit => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn write(&self, op: Op) -> Result<Out, StoreError> {
        self.writer.write(op).await
    }
}

/// `e` as [`OpenError::Corrupt`] when SQLite says the file is damaged (`SQLITE_CORRUPT`) or
/// not a database (`SQLITE_NOTADB`), else as a database error.
fn corrupt_or(e: sqlx::Error, corrupt: &dyn Fn(String) -> OpenError) -> OpenError {
    // Primary result codes: SQLITE_CORRUPT = 11, SQLITE_NOTADB = 26.
    let damaged = e
        .as_database_error()
        .and_then(|d| d.code())
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| matches!(c & 0xff, 11 | 26));
    if damaged {
        corrupt(e.to_string())
    } else {
        OpenError::Database(e)
    }
}

#[async_trait::async_trait]
impl TaskStore for SqliteStore {
    async fn commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.write_commit(scope, record, expected_seq, events, true)
            .await
    }

    /// The small `tasks` row and the events; the snapshot row is not touched.
    async fn append(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.write_commit(scope, record, Some(expected_seq), events, false)
            .await
    }

    /// Through the single writer, which reads the task's end and appends there in one
    /// transaction; no snapshot is stored.
    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        let op = Op::AppendFinal {
            row: final_row(scope, task_id, event)?,
            body: event.encode_to_vec(),
        };
        match self.write(op).await? {
            Out::Final(seq) => Ok(seq),
            other => Err(unexpected(other)),
        }
    }

    /// The task row with its snapshot (one statement, so they agree), then the events logged
    /// after the snapshot, applied.
    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.reads.task(self, scope, id).await
    }

    /// A keyset page through the index matching the filters: O(page size). The total comes
    /// from the per-state counters, except with `updated_since`, where it is a count of the
    /// matching rows (O(matching rows)).
    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.reads.tasks(self, scope, query).await
    }

    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError> {
        match self
            .write(Op::RenewLeases {
                node: node.to_owned(),
                until_ms,
            })
            .await?
        {
            Out::Count(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit_n: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.reads.lapsed_leases(before_ms, limit_n).await
    }

    /// A commit is a transaction of the writer thread and, at its group's end, an fsync: a
    /// streaming turn's events go many to a write.
    fn commits_behind(&self) -> bool {
        true
    }
}

#[async_trait::async_trait]
impl EventLog for SqliteStore {
    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit_n: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.reads.events(scope, task_id, after, limit_n).await
    }
}

#[async_trait::async_trait]
impl PushConfigStore for SqliteStore {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), StoreError> {
        let op = Op::PushPut {
            scope: scope.clone(),
            task_id: config.task_id.clone(),
            id: config.id.clone(),
            body: config.encode_to_vec(),
            protocol: generation.version(),
        };
        match self.write(op).await? {
            Out::Unit => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<(pb::TaskPushNotificationConfig, Generation)>, StoreError> {
        self.reads.push_config(scope, task_id, id).await
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit_n: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        self.reads
            .push_configs(scope, task_id, after, limit_n)
            .await
    }

    async fn delete(&self, scope: &Scope, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let op = Op::PushDelete {
            scope: scope.clone(),
            task_id: task_id.to_owned(),
            id: id.to_owned(),
        };
        match self.write(op).await? {
            Out::Bool(b) => Ok(b),
            other => Err(unexpected(other)),
        }
    }

    async fn count(&self, scope: &Scope, task_id: &str) -> Result<ConfigCount, StoreError> {
        self.reads.push_config_count(scope, task_id).await
    }

    async fn claim_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        until_ms: i64,
        from: u64,
    ) -> Result<Option<u64>, StoreError> {
        let op = Op::Claim {
            scope: scope.clone(),
            task_id: task_id.to_owned(),
            node: node.to_owned(),
            until_ms,
            from: to_i64(from)?,
            now_ms: now_ms(),
        };
        match self.write(op).await? {
            Out::Claim(c) => Ok(c),
            other => Err(unexpected(other)),
        }
    }

    async fn delivered(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        seq: u64,
        until_ms: i64,
    ) -> Result<bool, StoreError> {
        let op = Op::Delivered {
            scope: scope.clone(),
            task_id: task_id.to_owned(),
            node: node.to_owned(),
            seq: to_i64(seq)?,
            until_ms,
        };
        match self.write(op).await? {
            Out::Bool(b) => Ok(b),
            other => Err(unexpected(other)),
        }
    }

    async fn release_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), StoreError> {
        let op = Op::Release {
            scope: scope.clone(),
            task_id: task_id.to_owned(),
            node: node.to_owned(),
        };
        match self.write(op).await? {
            Out::Unit => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit_n: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.reads.pending_deliveries(now_ms, limit_n).await
    }
}
