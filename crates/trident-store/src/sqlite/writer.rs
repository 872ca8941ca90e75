//! The SQLite writer: a thread of its own owning the one write connection (rusqlite,
//! statements prepared once and kept), running whatever is queued in one transaction (group
//! commit: one fsync per burst; a refused request writes nothing, and a request that fails
//! halfway makes the batch run again with each request in its own savepoint, so it fails
//! alone).
//! The store hands it [`Op`]s through a [`Writer`] and reads elsewhere (`crate::read`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use trident_core::store::{Scope, StoreError};

use crate::codec::{CounterDeltas, Tally, TaskRow, to_u64};
use crate::{OpenError, WriterStats};

/// Most write requests one transaction carries.
const MAX_BATCH: usize = 256;
/// Write requests that may wait for the writer before senders wait too.
const QUEUE: usize = 4 * MAX_BATCH;
/// The WAL's size, in pages, past which a commit checkpoints it (passively: pages a reader
/// may still need stay). 4096 pages of 4 KiB: the WAL file stays about 16 MiB (plus one
/// batch) while readers let checkpoints finish; SQLite's default is 1000 (4 MiB).
const CHECKPOINT_PAGES: i64 = 4096;

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    transactions: AtomicU64,
    reruns: AtomicU64,
}

/// The store's end of the writer: a queue to the writer thread, and its counters.
pub(super) struct Writer {
    queue: mpsc::Sender<Request>,
    counters: Arc<Counters>,
}

impl Writer {
    /// Opens the write connection to the database at `path` and starts the writer thread,
    /// which holds `lock` (the store's exclusive lock on the file) until it has closed.
    pub(super) async fn start(
        path: &Path,
        lock: Arc<super::lock::FileLock>,
    ) -> Result<Self, OpenError> {
        let writer_path = path.to_owned();
        let conn = tokio::task::spawn_blocking(move || open_writer(&writer_path))
            .await
            .map_err(|e| OpenError::Io(format!("opening the sqlite writer: {e}")))??;
        let (queue, rx) = mpsc::channel(QUEUE);
        let counters = Arc::new(Counters::default());
        let writer_counters = counters.clone();
        std::thread::Builder::new()
            .name("trident-sqlite-writer".into())
            .spawn(move || run_writer(conn, rx, writer_counters, lock))
            .map_err(|e| OpenError::Io(format!("starting the sqlite writer: {e}")))?;
        Ok(Self { queue, counters })
    }

    /// What the writer has done so far.
    pub(super) fn stats(&self) -> WriterStats {
        WriterStats {
            requests: self.counters.requests.load(Ordering::Relaxed),
            transactions: self.counters.transactions.load(Ordering::Relaxed),
            reruns: self.counters.reruns.load(Ordering::Relaxed),
        }
    }

    /// Runs `op` in the writer's next transaction.
    pub(super) async fn write(&self, op: Op) -> Result<Out, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.queue
            .send(Request { op, reply })
            .await
            .map_err(|_| StoreError::Backend("the sqlite writer stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Backend("the sqlite writer stopped".into()))?
    }
}

pub(super) enum Op {
    Commit {
        row: TaskRow,
        expected: Option<i64>,
        /// Whether the events continue the log at `expected` (checked after existence, as
        /// the in-memory store does, so a missing task is `NotFound` rather than `Conflict`).
        continues: bool,
        events: Vec<(i64, Vec<u8>)>,
    },
    /// [`TaskStore::append_final`](trident_core::store::TaskStore::append_final): `row`
    /// names the task and carries the event's state and status timestamp (its other columns
    /// are taken from the stored row), `body` the encoded event.
    AppendFinal {
        row: TaskRow,
        body: Vec<u8>,
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
        /// The generation it was created through (`Generation::version`).
        protocol: &'static str,
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
pub(super) enum Out {
    Unit,
    Count(u64),
    Bool(bool),
    Claim(Option<u64>),
    /// The sequence number an appended final event got, or `None`: the task had ended.
    Final(Option<u64>),
}

struct Request {
    op: Op,
    reply: oneshot::Sender<Result<Out, StoreError>>,
}

/// A reply of the wrong kind for its request.
pub(super) fn unexpected(out: Out) -> StoreError {
    StoreError::Backend(format!("sqlite writer: unexpected reply {out:?}"))
}

/// The writer: a thread of its own owning the one write connection. It takes every queued
/// request (up to [`MAX_BATCH`]) and runs them in one transaction, with statements prepared
/// once and kept: a commit costs no thread hop per statement (sqlx's SQLite driver makes one
/// per statement), only one to hand the batch over and one to answer each request.
///
/// `lock` is the store's exclusive lock on the database file: a SQLite store belongs to one
/// process (which is why every lease found at start-up is an orphan). The thread holds its
/// share of it until the store is dropped and every write queued before has run, and lets
/// it go after closing its connection.
fn run_writer(
    conn: rusqlite::Connection,
    mut rx: mpsc::Receiver<Request>,
    counters: Arc<Counters>,
    lock: Arc<super::lock::FileLock>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.blocking_recv_many(&mut batch, MAX_BATCH) > 0 {
        counters
            .requests
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        counters.transactions.fetch_add(1, Ordering::Relaxed);
        let results = run_batch(&conn, &batch, &counters);
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

/// Opens the writer's connection: the pragmas sqlx sets on the readers, set here by hand,
/// and `temp_store = MEMORY`.
///
/// A batch run again after a failure runs each request in a savepoint, and SQLite keeps the
/// original of every page a savepoint changes in a sub-journal so that `ROLLBACK TO` can
/// restore it. By default that sub-journal is a temporary file: two `pwrite`s (page number,
/// page) per page per savepoint, which were two thirds of the writer's system calls under
/// load when every request ran in a savepoint (`bench/profile-sqlite.sh`). In memory it costs
/// no system call. It changes nothing durable: the sub-journal only serves a
/// rollback inside the open transaction (SQLite never syncs it and deletes it at the end);
/// what survives a crash is the WAL, still synced at every commit (`synchronous = FULL`).
///
/// `wal_autocheckpoint` is [`CHECKPOINT_PAGES`] instead of SQLite's 1000: a checkpoint copies
/// the latest version of each page the WAL holds into the database file (and syncs it), so
/// the pages every commit rewrites (the counters, the right edges of the indexes) are copied
/// once per checkpoint, and fewer checkpoints copy them fewer times. Durability is the WAL's
/// (synced at every commit before any request is answered); a checkpoint only moves what is
/// already durable.
fn open_writer(path: &Path) -> Result<rusqlite::Connection, OpenError> {
    let conn = rusqlite::Connection::open(path).map_err(|e| OpenError::Io(e.to_string()))?;
    conn.busy_timeout(Duration::from_secs(10))
        .and_then(|()| {
            conn.execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF; \
                 PRAGMA temp_store = MEMORY;",
            )
        })
        .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES))
        .map_err(|e| OpenError::Io(e.to_string()))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

fn exec(conn: &rusqlite::Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Why a request failed.
enum Failure {
    /// Refused by a check made before the request wrote anything: the transaction is as it
    /// was before the request.
    Refused(StoreError),
    /// A statement failed: the request may have written part of its change, or SQLite may
    /// have rolled the whole transaction back.
    Sqlite(StoreError),
}

impl Failure {
    fn into_error(self) -> StoreError {
        match self {
            Self::Refused(e) | Self::Sqlite(e) => e,
        }
    }
}

fn failed(e: rusqlite::Error) -> Failure {
    Failure::Sqlite(StoreError::Backend(e.to_string()))
}

/// Runs `batch` in one transaction.
///
/// Requests are refused (`NotFound`, `Conflict`, `AlreadyExists`) by checks made before they
/// write, so a batch first runs without savepoints: a refused request leaves the transaction
/// as it found it, and a savepoint per request (two statements, and a copy of every page it
/// changes kept for `ROLLBACK TO`) buys nothing. Only when a statement fails, which may leave
/// half a request written, is the transaction rolled back and the batch run again with each
/// request in its own savepoint, so that request fails alone.
///
/// The counters the commits change are summed over the batch ([`Tally`]) and written last,
/// in the same transaction.
fn run_batch(
    conn: &rusqlite::Connection,
    batch: &[Request],
    counters: &Counters,
) -> Vec<Result<Out, StoreError>> {
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
    let mut tally = Tally::default();
    if let [req] = batch {
        // Alone in its transaction: no savepoint needed, a failure rolls the whole back.
        let result = apply(conn, &req.op, &mut tally).map_err(Failure::into_error);
        let end = if result.is_ok() {
            flush(conn, &mut tally).and_then(|()| exec(conn, "COMMIT"))
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
    let mut clean = true;
    for req in batch {
        match apply(conn, &req.op, &mut tally) {
            Ok(out) => results.push(Ok(out)),
            Err(Failure::Refused(e)) => results.push(Err(e)),
            Err(Failure::Sqlite(e)) => {
                tracing::debug!(error = %e, "sqlite writer: a request failed, batch rerun with savepoints");
                clean = false;
                break;
            }
        }
    }
    if !clean {
        let _ = exec(conn, "ROLLBACK");
        counters.reruns.fetch_add(1, Ordering::Relaxed);
        // What the first run tallied was rolled back with it.
        tally = Tally::default();
        if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
            return fail_all(&e);
        }
        results = Vec::with_capacity(batch.len());
        for req in batch {
            if let Err(e) = exec(conn, "SAVEPOINT w") {
                let _ = exec(conn, "ROLLBACK");
                return fail_all(&e);
            }
            // A request that fails adds nothing to the tally (`apply` adds on success only).
            let result = apply(conn, &req.op, &mut tally).map_err(Failure::into_error);
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
    }
    if let Err(e) = flush(conn, &mut tally).and_then(|()| exec(conn, "COMMIT")) {
        let _ = exec(conn, "ROLLBACK");
        return fail_all(&e);
    }
    results
}

/// A unique or primary-key violation is a conflict; anything else a backend failure.
fn conflict_or_failed(e: rusqlite::Error) -> Failure {
    match e.sqlite_error() {
        Some(s)
            if s.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || s.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
        {
            Failure::Sqlite(StoreError::Conflict)
        }
        _ => failed(e),
    }
}

/// Runs one cached statement, returning the rows it changed.
fn run(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<usize, Failure> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute(params))
        .map_err(failed)
}

/// One write request, inside the batch's transaction. A commit's counter changes go to
/// `tally` (written once per batch, [`flush`]) only once the request has succeeded.
fn apply<'a>(
    conn: &rusqlite::Connection,
    op: &'a Op,
    tally: &mut Tally<'a>,
) -> Result<Out, Failure> {
    use rusqlite::{OptionalExtension as _, params};
    match op {
        Op::Commit {
            row,
            expected,
            continues,
            events,
        } => {
            let deltas = commit(conn, row, *expected, *continues, events)?;
            tally.add(row, deltas);
            Ok(Out::Unit)
        }
        Op::AppendFinal { row, body } => match append_final(conn, row, body)? {
            Some((seq, deltas)) => {
                tally.add(row, deltas);
                Ok(Out::Final(Some(seq)))
            }
            None => Ok(Out::Final(None)),
        },
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
            protocol,
        } => {
            run(
                conn,
                "INSERT INTO push_configs (tenant, owner, task_id, id, body, protocol) \
                 VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, owner, task_id, id) \
                 DO UPDATE SET body = excluded.body, protocol = excluded.protocol",
                params![&*scope.tenant, &*scope.owner, task_id, id, body, protocol],
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
fn put_snapshot(conn: &rusqlite::Connection, row: &TaskRow) -> Result<(), Failure> {
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

/// A commit; the single writer makes read-then-write safe. Every refusal is decided before
/// the first write (see [`Failure::Refused`]). Returns the counter changes it makes, for the
/// batch's [`Tally`].
fn commit(
    conn: &rusqlite::Connection,
    row: &TaskRow,
    expected: Option<i64>,
    continues: bool,
    events: &[(i64, Vec<u8>)],
) -> Result<CounterDeltas, Failure> {
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
                old.ok_or(Failure::Refused(StoreError::NotFound))?;
            if stored != expected || !continues {
                return Err(Failure::Refused(StoreError::Conflict));
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
            if !continues || row.snapshot.is_none() {
                // Refused either way; an existing task is `AlreadyExists` first.
                let exists = conn
                    .prepare_cached("SELECT 1 FROM tasks WHERE tenant = ? AND owner = ? AND id = ?")
                    .and_then(|mut s| s.exists(params![row.tenant, row.owner, row.id]))
                    .map_err(failed)?;
                return Err(Failure::Refused(if exists {
                    StoreError::AlreadyExists
                } else if !continues {
                    StoreError::Conflict
                } else {
                    StoreError::Backend("a new task needs its snapshot".into())
                }));
            }
            let n = run(
                conn,
                "INSERT INTO tasks (tenant, owner, id, context_id, state, status_ts, last_seq, \
                 turn, lease_node, lease_until) VALUES (:tenant, :owner, :id, \
                 :context_id, :state, :status_ts, :last_seq, :turn, :lease_node, :lease_until) \
                 ON CONFLICT (tenant, owner, id) DO NOTHING",
                row_params(row).as_slice(),
            )?;
            if n == 0 {
                return Err(Failure::Refused(StoreError::AlreadyExists));
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
    Ok(deltas)
}

/// An event ending the task, appended at the end of its log (the single writer makes
/// read-then-write safe): `template` names the task and carries the new state and status
/// timestamp. `None` when the task had already ended (nothing written); otherwise the
/// event's sequence number and the counter changes.
fn append_final(
    conn: &rusqlite::Connection,
    template: &TaskRow,
    body: &[u8],
) -> Result<Option<(u64, CounterDeltas)>, Failure> {
    use rusqlite::{OptionalExtension as _, params};
    let found: Option<(i64, i32, String, i64)> = conn
        .prepare_cached(
            "SELECT last_seq, state, context_id, turn FROM tasks \
             WHERE tenant = ? AND owner = ? AND id = ?",
        )
        .and_then(|mut s| {
            s.query_row(params![template.tenant, template.owner, template.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .map_err(failed)?;
    let (last_seq, state, context_id, turn) =
        found.ok_or(Failure::Refused(StoreError::NotFound))?;
    if trident_proto::TaskState::try_from(state).is_ok_and(|s| s.is_terminal()) {
        return Ok(None);
    }
    let row = TaskRow {
        context_id,
        last_seq: last_seq + 1,
        turn,
        lease_node: None,
        lease_until: None,
        snapshot: None,
        ..template.clone()
    };
    let deltas = commit(
        conn,
        &row,
        Some(last_seq),
        true,
        &[(row.last_seq, body.to_vec())],
    )?;
    Ok(Some((to_u64(row.last_seq), deltas)))
}

/// Writes the summed counter changes of `tally` (one UPSERT per counter row whose sum is not
/// zero) and empties it.
fn flush(conn: &rusqlite::Connection, tally: &mut Tally<'_>) -> rusqlite::Result<()> {
    use rusqlite::params;
    for ((tenant, owner, state), delta) in std::mem::take(&mut tally.states) {
        if delta != 0 {
            conn.prepare_cached(
                "INSERT INTO task_counts (tenant, owner, state, n) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (tenant, owner, state) DO UPDATE SET n = n + excluded.n",
            )?
            .execute(params![tenant, owner, state, delta])?;
        }
    }
    for ((tenant, owner, context, state), delta) in std::mem::take(&mut tally.contexts) {
        if delta != 0 {
            conn.prepare_cached(
                "INSERT INTO context_counts (tenant, owner, context_id, state, n) \
                 VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, owner, context_id, state) \
                 DO UPDATE SET n = n + excluded.n",
            )?
            .execute(params![tenant, owner, context, state, delta])?;
        }
    }
    Ok(())
}
