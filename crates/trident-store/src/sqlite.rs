//! The SQLite store: one file in WAL mode, one writer thread with group commit (rusqlite,
//! prepared statements kept), a pool of sqlx readers.

use std::path::Path;
use std::str::FromStr as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prost::Message as _;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Row as _};
use tokio::sync::{mpsc, oneshot};
use trident_core::store::{
    EventLog, LoggedEvent, PushConfigStore, Scope, StoreError, TaskPage, TaskQuery, TaskRecord,
    TaskStore, events_continue, now_ms,
};
use trident_proto as pb;

use crate::OpenError;
use crate::codec::{
    CounterDeltas, ListedRow, TaskRow, Val, backend, decode_event, decode_push, decode_record,
    encode_events, events_after_snapshot, limit, limit_plus_one, list_sql, page, rebuild_page,
    to_i64, to_u64,
};

/// Most write requests one transaction carries.
const MAX_BATCH: usize = 256;
/// Write requests that may wait for the writer before senders wait too.
const QUEUE: usize = 4 * MAX_BATCH;
/// Read connections.
const READERS: u32 = 4;

/// What the writer has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Write requests handled.
    pub requests: u64,
    /// Transactions committed or attempted (one per batch of queued requests).
    pub transactions: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    transactions: AtomicU64,
}

/// The tasks, event logs and push configurations in one SQLite file.
///
/// Every write goes to a single writer thread, which runs whatever is queued (up to 256
/// requests) in one `BEGIN IMMEDIATE` transaction, each request inside its own savepoint: a
/// refused request is rolled back alone, the others commit together with one fsync. Reads use
/// a separate pool of connections (WAL readers do not block the writer).
///
/// Not shared: the file belongs to one process.
pub struct SqliteStore {
    writer: mpsc::Sender<Request>,
    readers: SqlitePool,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

enum Op {
    Commit {
        row: TaskRow,
        expected: Option<i64>,
        /// Whether the events continue the log at `expected` (checked after existence, as
        /// the in-memory store does, so a missing task is `NotFound` rather than `Conflict`).
        continues: bool,
        events: Vec<(i64, Vec<u8>)>,
    },
    RenewLeases {
        node: String,
        until_ms: i64,
    },
    PushPut {
        scope: Scope,
        task_id: String,
        id: String,
        body: Vec<u8>,
    },
    PushDelete {
        scope: Scope,
        task_id: String,
        id: String,
    },
    Claim {
        scope: Scope,
        task_id: String,
        node: String,
        until_ms: i64,
        from: i64,
        now_ms: i64,
    },
    Delivered {
        scope: Scope,
        task_id: String,
        node: String,
        seq: i64,
        until_ms: i64,
    },
    Release {
        scope: Scope,
        task_id: String,
        node: String,
    },
}

#[derive(Debug)]
enum Out {
    Unit,
    Count(u64),
    Bool(bool),
    Claim(Option<u64>),
}

struct Request {
    op: Op,
    reply: oneshot::Sender<Result<Out, StoreError>>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file at `path` and brings its schema up to
    /// date.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let mut lock_path = path.as_ref().as_os_str().to_owned();
        lock_path.push(".lock");
        let lock = std::fs::File::create(&lock_path)
            .map_err(|e| OpenError::Io(format!("{}: {e}", Path::new(&lock_path).display())))?;
        // The writer thread holds the lock until it has closed its connection, so a store
        // just dropped in this process may hold it a moment longer: wait up to a second.
        let mut attempts = 0;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(OpenError::Locked(path.as_ref().display().to_string()));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(OpenError::Io(format!(
                        "{}: {e}",
                        Path::new(&lock_path).display()
                    )));
                }
            }
        }
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
        let writer_path = path.as_ref().to_owned();
        let writer_conn = tokio::task::spawn_blocking(move || open_writer(&writer_path))
            .await
            .map_err(|e| OpenError::Io(format!("opening the sqlite writer: {e}")))??;
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            .connect_with(options)
            .await?;
        let (writer, rx) = mpsc::channel(QUEUE);
        let counters = Arc::new(Counters::default());
        let writer_counters = counters.clone();
        std::thread::Builder::new()
            .name("trident-sqlite-writer".into())
            .spawn(move || run_writer(writer_conn, rx, writer_counters, lock))
            .map_err(|e| OpenError::Io(format!("starting the sqlite writer: {e}")))?;
        Ok(Self {
            writer,
            readers,
            counters,
        })
    }

    /// What the writer has done so far.
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            requests: self.counters.requests.load(Ordering::Relaxed),
            transactions: self.counters.transactions.load(Ordering::Relaxed),
        }
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
        let (reply, rx) = oneshot::channel();
        self.writer
            .send(Request { op, reply })
            .await
            .map_err(|_| StoreError::Backend("the sqlite writer stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Backend("the sqlite writer stopped".into()))?
    }
}

fn unexpected(out: Out) -> StoreError {
    StoreError::Backend(format!("sqlite writer: unexpected reply {out:?}"))
}

/// The writer: a thread of its own owning the one write connection. It takes every queued
/// request (up to [`MAX_BATCH`]) and runs them in one transaction, with statements prepared
/// once and kept: a commit costs no thread hop per statement (sqlx's SQLite driver makes one
/// per statement), only one to hand the batch over and one to answer each request.
///
/// `lock` is the exclusive lock on `PATH.lock`: a SQLite store belongs to one process (which
/// is why every lease found at start-up is an orphan). The thread holds it until the store is
/// dropped and every write queued before has run, and releases it after closing.
fn run_writer(
    conn: rusqlite::Connection,
    mut rx: mpsc::Receiver<Request>,
    counters: Arc<Counters>,
    lock: std::fs::File,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.blocking_recv_many(&mut batch, MAX_BATCH) > 0 {
        counters
            .requests
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        counters.transactions.fetch_add(1, Ordering::Relaxed);
        let results = run_batch(&conn, &batch);
        for (req, result) in batch.drain(..).zip(results) {
            // The caller may have gone away; its write is committed all the same.
            let _ = req.reply.send(result);
        }
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "sqlite writer: closing the connection");
    }
    drop(lock);
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

/// Opens the writer's connection: the pragmas sqlx sets on the readers, set here by hand.
fn open_writer(path: &Path) -> Result<rusqlite::Connection, OpenError> {
    let conn = rusqlite::Connection::open(path).map_err(|e| OpenError::Io(e.to_string()))?;
    conn.busy_timeout(Duration::from_secs(10))
        .and_then(|()| {
            conn.execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;",
            )
        })
        .map_err(|e| OpenError::Io(e.to_string()))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

fn exec(conn: &rusqlite::Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs `batch` in one transaction, each request in its own savepoint.
fn run_batch(conn: &rusqlite::Connection, batch: &[Request]) -> Vec<Result<Out, StoreError>> {
    let fail_all = |e: &rusqlite::Error| -> Vec<Result<Out, StoreError>> {
        tracing::error!(error = %e, "sqlite writer: transaction failed");
        batch
            .iter()
            .map(|_| Err(StoreError::Backend(e.to_string())))
            .collect()
    };
    if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
        return fail_all(&e);
    }
    if let [req] = batch {
        // Alone in its transaction: no savepoint needed, a failure rolls the whole back.
        let result = apply(conn, &req.op);
        let end = if result.is_ok() {
            exec(conn, "COMMIT")
        } else {
            exec(conn, "ROLLBACK")
        };
        return match end {
            Ok(()) => vec![result],
            Err(e) => {
                let _ = exec(conn, "ROLLBACK");
                fail_all(&e)
            }
        };
    }
    let mut results = Vec::with_capacity(batch.len());
    for req in batch {
        if let Err(e) = exec(conn, "SAVEPOINT w") {
            let _ = exec(conn, "ROLLBACK");
            return fail_all(&e);
        }
        let result = apply(conn, &req.op);
        let end = if result.is_ok() {
            exec(conn, "RELEASE w")
        } else {
            exec(conn, "ROLLBACK TO w").and_then(|()| exec(conn, "RELEASE w"))
        };
        if let Err(e) = end {
            let _ = exec(conn, "ROLLBACK");
            return fail_all(&e);
        }
        results.push(result);
    }
    if let Err(e) = exec(conn, "COMMIT") {
        let _ = exec(conn, "ROLLBACK");
        return fail_all(&e);
    }
    results
}

fn failed(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A unique or primary-key violation is a conflict; anything else a backend failure.
fn conflict_or_failed(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error() {
        Some(s)
            if s.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || s.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
        {
            StoreError::Conflict
        }
        _ => failed(e),
    }
}

/// Runs one cached statement, returning the rows it changed.
fn run(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<usize, StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute(params))
        .map_err(failed)
}

/// One write request, inside the batch's transaction.
fn apply(conn: &rusqlite::Connection, op: &Op) -> Result<Out, StoreError> {
    use rusqlite::{OptionalExtension as _, params};
    match op {
        Op::Commit {
            row,
            expected,
            continues,
            events,
        } => commit(conn, row, *expected, *continues, events),
        Op::RenewLeases { node, until_ms } => {
            let n = run(
                conn,
                "UPDATE tasks SET lease_until = ? WHERE lease_node = ? AND lease_node IS NOT NULL",
                params![until_ms, node],
            )?;
            Ok(Out::Count(n as u64))
        }
        Op::PushPut {
            scope,
            task_id,
            id,
            body,
        } => {
            run(
                conn,
                "INSERT INTO push_configs (tenant, owner, task_id, id, body) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT (tenant, owner, task_id, id) DO UPDATE SET body = excluded.body",
                params![&*scope.tenant, &*scope.owner, task_id, id, body],
            )?;
            Ok(Out::Unit)
        }
        Op::PushDelete { scope, task_id, id } => {
            let n = run(
                conn,
                "DELETE FROM push_configs WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ?",
                params![&*scope.tenant, &*scope.owner, task_id, id],
            )?;
            Ok(Out::Bool(n > 0))
        }
        Op::Claim {
            scope,
            task_id,
            node,
            until_ms,
            from,
            now_ms,
        } => {
            let delivered: Option<i64> = conn
                .prepare_cached(
                    "INSERT INTO deliveries (tenant, owner, task_id, delivered, node, until_ms) \
                     VALUES (?, ?, ?, ?, ?, ?) \
                     ON CONFLICT (tenant, owner, task_id) DO UPDATE \
                     SET node = excluded.node, until_ms = excluded.until_ms \
                     WHERE deliveries.node IS NULL OR deliveries.node = excluded.node \
                     OR deliveries.until_ms < ? \
                     RETURNING delivered",
                )
                .and_then(|mut s| {
                    s.query_row(
                        params![
                            &*scope.tenant,
                            &*scope.owner,
                            task_id,
                            from,
                            node,
                            until_ms,
                            now_ms
                        ],
                        |r| r.get(0),
                    )
                    .optional()
                })
                .map_err(failed)?;
            Ok(Out::Claim(delivered.map(to_u64)))
        }
        Op::Delivered {
            scope,
            task_id,
            node,
            seq,
            until_ms,
        } => {
            let n = run(
                conn,
                "UPDATE deliveries SET delivered = MAX(delivered, ?), until_ms = ? \
                 WHERE tenant = ? AND owner = ? AND task_id = ? AND node = ?",
                params![seq, until_ms, &*scope.tenant, &*scope.owner, task_id, node],
            )?;
            Ok(Out::Bool(n > 0))
        }
        Op::Release {
            scope,
            task_id,
            node,
        } => {
            run(
                conn,
                "UPDATE deliveries SET node = NULL \
                 WHERE tenant = ? AND owner = ? AND task_id = ? AND node = ?",
                params![&*scope.tenant, &*scope.owner, task_id, node],
            )?;
            Ok(Out::Unit)
        }
    }
}

/// A task row's small columns as named parameters, for the statements that write all of them.
fn row_params(row: &TaskRow) -> [(&'static str, &dyn rusqlite::ToSql); 10] {
    [
        (":tenant", &row.tenant),
        (":owner", &row.owner),
        (":id", &row.id),
        (":context_id", &row.context_id),
        (":state", &row.state),
        (":status_ts", &row.status_ts),
        (":last_seq", &row.last_seq),
        (":turn", &row.turn),
        (":lease_node", &row.lease_node),
        (":lease_until", &row.lease_until),
    ]
}

/// Stores the row's snapshot (when it carries one) as the task's, current to `last_seq`.
fn put_snapshot(conn: &rusqlite::Connection, row: &TaskRow) -> Result<(), StoreError> {
    let Some(body) = &row.snapshot else {
        return Ok(());
    };
    run(
        conn,
        "INSERT INTO snapshots (tenant, owner, id, seq, body) VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (tenant, owner, id) DO UPDATE SET seq = excluded.seq, body = excluded.body",
        rusqlite::params![row.tenant, row.owner, row.id, row.last_seq, body],
    )?;
    Ok(())
}

/// A commit; the single writer makes read-then-write safe.
fn commit(
    conn: &rusqlite::Connection,
    row: &TaskRow,
    expected: Option<i64>,
    continues: bool,
    events: &[(i64, Vec<u8>)],
) -> Result<Out, StoreError> {
    use rusqlite::{OptionalExtension as _, params};
    let deltas = match expected {
        Some(expected) => {
            type Old = (i64, i32, String, i64, Option<String>);
            let old: Option<Old> = conn
                .prepare_cached(
                    "SELECT last_seq, state, context_id, status_ts, lease_node FROM tasks \
                     WHERE tenant = ? AND owner = ? AND id = ?",
                )
                .and_then(|mut s| {
                    s.query_row(params![row.tenant, row.owner, row.id], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .optional()
                })
                .map_err(failed)?;
            let (stored, old_state, old_context, old_ts, old_node) =
                old.ok_or(StoreError::NotFound)?;
            if stored != expected || !continues {
                return Err(StoreError::Conflict);
            }
            // A small row (no blob): SQLite rewrites a whole row on UPDATE. It also rewrites
            // the entries of every index on a column the SET names, so a commit that moves
            // only the sequence (a streamed chunk) names only what it changes.
            if old_state == row.state
                && old_context == row.context_id
                && old_ts == row.status_ts
                && old_node == row.lease_node
            {
                run(
                    conn,
                    "UPDATE tasks SET last_seq = ?, turn = ?, lease_until = ? \
                     WHERE tenant = ? AND owner = ? AND id = ?",
                    params![
                        row.last_seq,
                        row.turn,
                        row.lease_until,
                        row.tenant,
                        row.owner,
                        row.id
                    ],
                )?;
            } else {
                run(
                    conn,
                    "UPDATE tasks SET context_id = :context_id, state = :state, \
                     status_ts = :status_ts, last_seq = :last_seq, turn = :turn, \
                     lease_node = :lease_node, lease_until = :lease_until \
                     WHERE tenant = :tenant AND owner = :owner AND id = :id",
                    row_params(row).as_slice(),
                )?;
            }
            put_snapshot(conn, row)?;
            CounterDeltas::updated(&old_context, old_state, row)
        }
        None => {
            let n = run(
                conn,
                "INSERT INTO tasks (tenant, owner, id, context_id, state, status_ts, last_seq, \
                 turn, lease_node, lease_until) VALUES (:tenant, :owner, :id, \
                 :context_id, :state, :status_ts, :last_seq, :turn, :lease_node, :lease_until) \
                 ON CONFLICT (tenant, owner, id) DO NOTHING",
                row_params(row).as_slice(),
            )?;
            if n == 0 {
                return Err(StoreError::AlreadyExists);
            }
            if !continues {
                return Err(StoreError::Conflict);
            }
            if row.snapshot.is_none() {
                return Err(StoreError::Backend("a new task needs its snapshot".into()));
            }
            put_snapshot(conn, row)?;
            CounterDeltas::created(row)
        }
    };
    // In this thread a statement per row costs no round trip: one prepared statement each.
    if !events.is_empty() {
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO events (tenant, owner, task_id, seq, body) VALUES (?, ?, ?, ?, ?)",
            )
            .map_err(failed)?;
        for (seq, body) in events {
            insert
                .execute(params![row.tenant, row.owner, row.id, seq, body])
                .map_err(conflict_or_failed)?;
        }
    }
    for (state, delta) in &deltas.states {
        run(
            conn,
            "INSERT INTO task_counts (tenant, owner, state, n) VALUES (?, ?, ?, ?) \
             ON CONFLICT (tenant, owner, state) DO UPDATE SET n = n + excluded.n",
            params![row.tenant, row.owner, state, delta],
        )?;
    }
    for (context, state, delta) in &deltas.contexts {
        run(
            conn,
            "INSERT INTO context_counts (tenant, owner, context_id, state, n) \
             VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (tenant, owner, context_id, state) DO UPDATE SET n = n + excluded.n",
            params![row.tenant, row.owner, context, state, delta],
        )?;
    }
    Ok(Out::Unit)
}

fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    args: Vec<Val>,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    for v in args {
        q = match v {
            Val::Str(s) => q.bind(s),
            Val::I64(i) => q.bind(i),
            Val::I32(i) => q.bind(i),
        };
    }
    q
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

    /// The task row with its snapshot (one statement, so they agree), then the events logged
    /// after the snapshot, applied.
    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT s.body, s.seq, t.last_seq, t.turn, t.lease_node, t.lease_until \
             FROM tasks t JOIN snapshots s \
             ON s.tenant = t.tenant AND s.owner = t.owner AND s.id = t.id \
             WHERE t.tenant = ? AND t.owner = ? AND t.id = ?",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(id)
        .fetch_optional(&self.readers)
        .await
        .map_err(backend)?;
        let Some(r) = row else {
            return Ok(None);
        };
        let snapshot_seq: i64 = r.try_get(1).map_err(backend)?;
        let last_seq: i64 = r.try_get(2).map_err(backend)?;
        let events =
            events_after_snapshot(self, scope, id, to_u64(snapshot_seq), to_u64(last_seq)).await?;
        decode_record(
            r.try_get::<&[u8], _>(0).map_err(backend)?,
            &events,
            last_seq,
            r.try_get(3).map_err(backend)?,
            r.try_get(4).map_err(backend)?,
            r.try_get(5).map_err(backend)?,
        )
        .map(Some)
    }

    /// A keyset page through the index matching the filters: O(page size). The total comes
    /// from the per-state counters, except with `updated_since`, where it is a count of the
    /// matching rows (O(matching rows)).
    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let sql = list_sql(scope, query, false);
        let rows = bind_all(sqlx::query(AssertSqlSafe(sql.page)), sql.page_args)
            .fetch_all(&self.readers)
            .await
            .map_err(backend)?;
        let total: i64 = bind_all(sqlx::query(AssertSqlSafe(sql.total)), sql.total_args)
            .fetch_one(&self.readers)
            .await
            .map_err(backend)?
            .try_get(0)
            .map_err(backend)?;
        let more = rows.len() > query.limit;
        let rows = rows
            .iter()
            .take(query.limit)
            .map(|r| {
                Ok(ListedRow {
                    id: r.try_get(0).map_err(backend)?,
                    last_seq: to_u64(r.try_get(1).map_err(backend)?),
                    snapshot_seq: to_u64(r.try_get(2).map_err(backend)?),
                    snapshot: r.try_get(3).map_err(backend)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let tasks = rebuild_page(self, scope, rows).await?;
        Ok(page(tasks, more, total))
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
        let rows = sqlx::query(
            "SELECT tenant, owner, id FROM tasks \
             WHERE lease_node IS NOT NULL AND lease_until < ? LIMIT ?",
        )
        .bind(before_ms)
        .bind(limit(limit_n))
        .fetch_all(&self.readers)
        .await
        .map_err(backend)?;
        rows.iter().map(scoped_id).collect()
    }
}

fn scoped_id(r: &sqlx::sqlite::SqliteRow) -> Result<(Scope, String), StoreError> {
    let tenant: String = r.try_get(0).map_err(backend)?;
    let owner: String = r.try_get(1).map_err(backend)?;
    Ok((Scope::new(tenant, owner), r.try_get(2).map_err(backend)?))
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
        let rows = sqlx::query(
            "SELECT seq, body FROM events WHERE tenant = ? AND owner = ? AND task_id = ? \
             AND seq > ? ORDER BY seq LIMIT ?",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(limit(limit_n))
        .fetch_all(&self.readers)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|r| {
                decode_event(
                    r.try_get(0).map_err(backend)?,
                    r.try_get::<&[u8], _>(1).map_err(backend)?,
                )
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl PushConfigStore for SqliteStore {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
    ) -> Result<(), StoreError> {
        let op = Op::PushPut {
            scope: scope.clone(),
            task_id: config.task_id.clone(),
            id: config.id.clone(),
            body: config.encode_to_vec(),
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
    ) -> Result<Option<pb::TaskPushNotificationConfig>, StoreError> {
        let body: Option<Vec<u8>> = sqlx::query_scalar(
            "SELECT body FROM push_configs WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ?",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        .bind(id)
        .fetch_optional(&self.readers)
        .await
        .map_err(backend)?;
        body.as_deref().map(decode_push).transpose()
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit_n: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        let bodies: Vec<Vec<u8>> = sqlx::query_scalar(
            "SELECT body FROM push_configs WHERE tenant = ? AND owner = ? AND task_id = ? \
             AND id > ? ORDER BY id LIMIT ?",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        // Every id sorts after "" except "" itself, which `put` never stores (ids are set).
        .bind(after.unwrap_or(""))
        .bind(limit_plus_one(limit_n))
        .fetch_all(&self.readers)
        .await
        .map_err(backend)?;
        let mut configs = bodies
            .iter()
            .map(|b| decode_push(b))
            .collect::<Result<Vec<_>, _>>()?;
        let more = configs.len() > limit_n;
        configs.truncate(limit_n);
        Ok((configs, more))
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
        let rows = sqlx::query(
            "SELECT d.tenant, d.owner, d.task_id FROM deliveries d \
             JOIN tasks t ON t.tenant = d.tenant AND t.owner = d.owner AND t.id = d.task_id \
             WHERE (d.node IS NULL OR d.until_ms < ?) AND t.last_seq > d.delivered LIMIT ?",
        )
        .bind(now_ms)
        .bind(limit(limit_n))
        .fetch_all(&self.readers)
        .await
        .map_err(backend)?;
        rows.iter().map(scoped_id).collect()
    }
}
