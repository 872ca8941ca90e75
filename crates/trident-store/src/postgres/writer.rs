//! The PostgreSQL writer: every commit and append of a [`PgStore`](super::PgStore) goes
//! through one of a few lanes, each a task owning one connection. A lane runs whatever is
//! queued for it (up to [`MAX_BATCH`] requests, [`MAX_BATCH_BYTES`] of payload) in one
//! transaction, so a burst of commits of many tasks costs one WAL flush, one NOTIFY and a
//! handful of round trips instead of each its own:
//!
//! 1. `BEGIN`;
//! 2. one `SELECT … FOR UPDATE` locking every task of the batch that exists, in key order
//!    (so two transactions locking some of the same tasks cannot deadlock), reading what each
//!    request is checked against (skipped when the batch only creates tasks);
//! 3. the requests are decided in queue order against those rows, each seeing what the ones
//!    before it in the batch did (a create then an append of one task, eight racing commits
//!    at one version of which one wins): a refused request (`NotFound`, `Conflict`,
//!    `AlreadyExists`) writes nothing;
//! 4. one `INSERT … ON CONFLICT DO NOTHING` for the tasks the batch creates (a task another
//!    process created meanwhile makes its create `AlreadyExists`);
//! 5. one statement writing the rest, each table's rows as arrays (`UNNEST`): the `tasks`
//!    rows, the snapshots, the events, the batch's counter changes summed per counter row
//!    ([`Tally`]) in this lane's shard, and the batch's notification ([`Notify::payloads`]);
//! 6. `COMMIT`. Only then is any caller answered (persist before publish).
//!
//! A statement that fails (an event already in the log, a deadlock) leaves the transaction
//! unusable and may have written part of a request: the batch is rolled back and, unless the
//! request was alone in it, run again with each request in its own savepoint (steps 2–5 for
//! it alone), so that request fails alone and the others commit; the counters and the
//! notification are then written once, at the end. Refusals need no savepoint: they are
//! decided before anything is written.
//!
//! A task's requests always go to the same lane (its key is hashed), so they run in the order
//! they were made. Each lane writes to a counter shard no other live lane of the schema holds
//! (claimed with a session advisory lock on its connection), so lanes never wait on
//! each other's counter rows.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection as _, Executor as _, Row as _};
use tokio::sync::{mpsc, oneshot};
use trident_core::store::StoreError;

use super::notify::{Committed, Notify};
use crate::codec::{CounterDeltas, EventBlock, Tally, TaskRow};
use crate::{OpenError, WriterStats};

/// Most requests one transaction carries.
pub(crate) const MAX_BATCH: usize = 256;
/// Snapshot and event bytes past which a lane stops adding requests to a batch (a larger
/// request still goes, alone): what one statement sends stays a few MiB.
pub(crate) const MAX_BATCH_BYTES: usize = 8 << 20;
/// Requests that may wait for each lane before callers wait too (back-pressure).
pub(crate) const QUEUE: usize = 4 * MAX_BATCH;
/// Counter shards (`task_counts.shard`, `context_counts.shard`: migration 4). Each lane
/// claims one no other lane of the schema holds, starting from a random one (see
/// [`claim_shard`]); past 32 live lanes, some share.
pub(crate) const SHARDS: usize = 32;

/// A task's key: tenant, owner, id.
type Key<'a> = (&'a str, &'a str, &'a str);

/// One commit or append, as the writer runs it.
pub(crate) struct Commit {
    /// The task's new row; its snapshot only for a commit.
    pub(crate) row: TaskRow,
    /// The stored `last_seq` the request expects (`None` creates the task).
    pub(crate) expected: Option<i64>,
    /// Whether the events continue the log at `expected` (checked after existence, as the
    /// in-memory store does, so a missing task is `NotFound` rather than `Conflict`).
    pub(crate) continues: bool,
    /// The events, as one block (`None`: none).
    pub(crate) events: Option<EventBlock>,
}

impl Commit {
    fn key(&self) -> Key<'_> {
        (&self.row.tenant, &self.row.owner, &self.row.id)
    }

    /// The payload bytes it sends.
    fn bytes(&self) -> usize {
        self.row.snapshot.as_ref().map_or(0, Vec::len)
            + self.events.as_ref().map_or(0, |b| b.body.len())
    }
}

struct Request {
    commit: Commit,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    transactions: AtomicU64,
    reruns: AtomicU64,
}

/// The store's end of the writer: a queue to each lane, and their counters.
pub(crate) struct Writer {
    lanes: Vec<mpsc::Sender<Request>>,
    counters: Arc<Counters>,
    /// Where the lanes announce their commits, and [`Writer::append_final`] its own.
    notify: Option<Arc<Notify>>,
}

impl Writer {
    /// Opens `lanes` connections with `options` and starts a lane on each. `schema_key`
    /// names the schema among the advisory locks of the database (its lanes claim their
    /// counter shards under it). With `notify`, each transaction announces the tasks it
    /// committed.
    pub(crate) async fn start(
        options: &PgConnectOptions,
        lanes: usize,
        schema_key: i32,
        notify: Option<Notify>,
    ) -> Result<Self, OpenError> {
        let counters = Arc::new(Counters::default());
        let notify = notify.map(Arc::new);
        let mut queues = Vec::with_capacity(lanes);
        for _ in 0..lanes.max(1) {
            let (conn, shard) = connect(options, schema_key).await?;
            let (queue, rx) = mpsc::channel(QUEUE);
            let lane = Lane {
                options: options.clone(),
                schema_key,
                conn: Some(conn),
                shard,
                notify: notify.clone(),
                counters: counters.clone(),
                created: Some(0),
            };
            tokio::spawn(lane.run(rx));
            queues.push(queue);
        }
        Ok(Self {
            lanes: queues,
            counters,
            notify,
        })
    }

    /// What the lanes have done so far.
    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            requests: self.counters.requests.load(Ordering::Relaxed),
            transactions: self.counters.transactions.load(Ordering::Relaxed),
            reruns: self.counters.reruns.load(Ordering::Relaxed),
        }
    }

    /// Runs `commit` in its lane's next transaction; resolves once that has committed.
    pub(crate) async fn write(&self, commit: Commit) -> Result<(), StoreError> {
        let mut hasher = std::hash::DefaultHasher::new();
        commit.key().hash(&mut hasher);
        let lane = (hasher.finish() % self.lanes.len() as u64) as usize;
        let (reply, rx) = oneshot::channel();
        let stopped = || StoreError::Backend("the postgres writer stopped".into());
        self.lanes[lane]
            .send(Request { commit, reply })
            .await
            .map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

impl Writer {
    /// [`TaskStore::append_final`](trident_core::store::TaskStore::append_final), in a
    /// transaction of its own on a connection of `pool` rather than in a lane's batch: it
    /// locks the task's row (`SELECT … FOR UPDATE`), reads where its log ends and appends
    /// there, so no commit of another process can land in between, however fast that process
    /// commits (its next commit conflicts instead). `template` is [`final_row`]'s; `body` the
    /// encoded event. The request is then decided and written as a lane writes a commit
    /// (`decide`, `Writes`: the same rows, counters and notification), its counter changes in
    /// a shard chosen at random (counting stays exact whatever the shard; it is rare enough
    /// that sharing a lane's shard costs nothing). The caller holds the task's writer in its
    /// process, so none of its own commits of the task waits in a lane meanwhile.
    ///
    /// [`final_row`]: crate::codec::final_row
    pub(crate) async fn append_final(
        &self,
        pool: &sqlx::PgPool,
        template: TaskRow,
        body: Vec<u8>,
    ) -> Result<Option<u64>, StoreError> {
        let failed = |e: sqlx::Error| map_err(&e, StoreError::Conflict);
        let mut tx = pool.begin().await.map_err(failed)?;
        let found = sqlx::query(
            "SELECT last_seq, state, context_id, turn FROM tasks \
             WHERE tenant = $1 AND owner = $2 AND id = $3 FOR UPDATE",
        )
        .bind(&template.tenant)
        .bind(&template.owner)
        .bind(&template.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(failed)?;
        // Returning drops `tx`, which rolls it back.
        let Some(found) = found else {
            return Err(StoreError::NotFound);
        };
        let last_seq: i64 = found.try_get(0).map_err(failed)?;
        let state: i32 = found.try_get(1).map_err(failed)?;
        if trident_proto::TaskState::try_from(state).is_ok_and(|s| s.is_terminal()) {
            return Ok(None);
        }
        let seq = last_seq + 1;
        let commit = Commit {
            row: TaskRow {
                context_id: found.try_get(2).map_err(failed)?,
                last_seq: seq,
                turn: found.try_get(3).map_err(failed)?,
                lease_node: None,
                lease_until: None,
                snapshot: None,
                ..template
            },
            expected: Some(last_seq),
            continues: true,
            events: Some(EventBlock::single(seq, &body)?),
        };
        let plan = decide(&mut tx, &[&commit])
            .await
            .map_err(Failure::into_error)?;
        if let Some(Err(e)) = plan.results.first() {
            return Err(e.clone());
        }
        let shard = i32::try_from(uuid::Uuid::new_v4().as_u128() % SHARDS as u128).unwrap_or(0);
        Writes {
            rows: &plan.rows,
            tally: &plan.tally,
            shard,
            notify: self.notify.as_deref(),
            committed: &plan.committed,
        }
        .run(&mut tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(Some(crate::codec::to_u64(seq)))
    }
}

/// Opens a lane's connection and claims a counter shard on it. Its statements only ever
/// reach rows by key, joined to the batch's arrays: the connection is told to look them up
/// through an index, one by one, whatever the planner thinks of the table's size. A plan is
/// made once per connection and kept (prepared statements), and one made while the table
/// was small (a new schema) would otherwise scan the whole table, hashed, for every batch
/// after, however large the table grows.
async fn connect(
    options: &PgConnectOptions,
    schema_key: i32,
) -> Result<(PgConnection, i32), sqlx::Error> {
    let options = options.clone().options([
        ("enable_seqscan", "off"),
        ("enable_hashjoin", "off"),
        ("enable_mergejoin", "off"),
    ]);
    let mut conn = PgConnection::connect_with(&options).await?;
    let shard = claim_shard(&mut conn, schema_key).await?;
    Ok((conn, shard))
}

/// Claims a counter shard for the lane on `conn`: the first, from a random one on, whose
/// session advisory lock (`schema_key`, shard) nobody holds, so that no two live lanes of the
/// schema, in this process or another, add to the same counter rows. The lock lasts as long
/// as the connection. When all are held, a random shard, shared: counting stays exact
/// whatever shard a lane writes; only the waits on counter rows come back.
async fn claim_shard(conn: &mut PgConnection, schema_key: i32) -> Result<i32, sqlx::Error> {
    let first = (uuid::Uuid::new_v4().as_u128() % SHARDS as u128) as usize;
    for n in 0..SHARDS {
        let shard = i32::try_from((first + n) % SHARDS).unwrap_or(0);
        let claimed: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
            .bind(schema_key)
            .bind(shard)
            .fetch_one(&mut *conn)
            .await?;
        if claimed {
            return Ok(shard);
        }
    }
    Ok(i32::try_from(first).unwrap_or(0))
}

/// The advisory-lock key of the stores of a schema, named by its notification channel
/// (which is per schema): lanes of different schemas do not compete for shards.
pub(crate) fn schema_key(channel: &str) -> i32 {
    // The low 32 bits, as the signed key `pg_try_advisory_lock(int, int)` takes.
    super::notify::fnv1a(channel) as u32 as i32
}

/// One lane: a connection (reopened when a batch leaves it in doubt), and the counter shard
/// claimed on it.
struct Lane {
    options: PgConnectOptions,
    schema_key: i32,
    conn: Option<PgConnection>,
    shard: i32,
    notify: Option<Arc<Notify>>,
    counters: Arc<Counters>,
    /// Tasks this lane's batches have created, until it has looked at the tables'
    /// statistics ([`ANALYZE_AFTER`]); `None` after.
    created: Option<u64>,
}

/// Creations after which a lane gives the planner statistics of a schema that has none yet
/// (see [`Lane::analyze_new_schema`]).
const ANALYZE_AFTER: u64 = 1_000;

/// The tables a lane analyzes when they have never been analyzed, and how.
const ANALYZED: [(&str, &str); 4] = [
    ("tasks", "ANALYZE tasks"),
    ("snapshots", "ANALYZE snapshots"),
    ("event_blocks", "ANALYZE event_blocks"),
    ("context_counts", "ANALYZE context_counts"),
];

/// Maps a database error: unique violations to `unique`, serialization failures and
/// deadlocks to `Conflict`, the rest to `Backend`.
pub(crate) fn map_err(e: &sqlx::Error, unique: StoreError) -> StoreError {
    if let Some(d) = e.as_database_error() {
        if d.is_unique_violation() {
            return unique;
        }
        if matches!(d.code().as_deref(), Some("40001" | "40P01")) {
            return StoreError::Conflict;
        }
    }
    StoreError::Backend(e.to_string())
}

async fn exec(conn: &mut PgConnection, sql: &'static str) -> Result<(), sqlx::Error> {
    conn.execute(sql).await.map(|_| ())
}

impl Lane {
    /// Takes what is queued, runs it, answers, until the store is dropped and the queue has
    /// drained.
    async fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        let mut batch: Vec<Request> = Vec::with_capacity(MAX_BATCH);
        while let Some(first) = rx.recv().await {
            let mut bytes = first.commit.bytes();
            batch.push(first);
            while batch.len() < MAX_BATCH && bytes < MAX_BATCH_BYTES {
                let Ok(next) = rx.try_recv() else {
                    break;
                };
                bytes += next.commit.bytes();
                batch.push(next);
            }
            self.counters
                .requests
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            self.counters.transactions.fetch_add(1, Ordering::Relaxed);
            let results = {
                let commits: Vec<&Commit> = batch.iter().map(|r| &r.commit).collect();
                self.run_batch(&commits).await
            };
            let mut created = 0;
            for (req, result) in batch.drain(..).zip(results) {
                created += u64::from(req.commit.expected.is_none() && result.is_ok());
                // The caller may have gone away; its write is committed all the same.
                let _ = req.reply.send(result);
            }
            if let Some(before) = self.created {
                self.created = Some(before + created);
                // Not on a connection a failed batch dropped: the next batch's, then.
                if before + created >= ANALYZE_AFTER && self.conn.is_some() {
                    self.created = None;
                    self.analyze_new_schema().await;
                }
            }
        }
        if let Some(conn) = self.conn.take()
            && let Err(e) = conn.close().await
        {
            tracing::debug!(error = %e, "postgres writer: closing its connection");
        }
    }

    /// Gives the planner statistics of the tables that have none: those of a schema fresh from
    /// its migration, which autovacuum analyzes only at its next round (up to a minute
    /// later, `autovacuum_naptime`). Without statistics, a key lookup of a few thousand tasks
    /// may scan every task of the owner through a ListTasks index, which looks as cheap; the
    /// pool's cached plans are made again after it. Tables analyzed before are left alone
    /// (autovacuum keeps them current). Failures only log: this is an optimization.
    async fn analyze_new_schema(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let never: Result<Vec<String>, _> = sqlx::query_scalar(
            "SELECT relname::TEXT FROM pg_stat_user_tables \
             WHERE relid = ANY(ARRAY['tasks'::regclass, 'snapshots'::regclass, \
             'event_blocks'::regclass, 'context_counts'::regclass]) \
             AND last_analyze IS NULL AND last_autoanalyze IS NULL",
        )
        .fetch_all(&mut *conn)
        .await;
        let never = match never {
            Ok(names) => names,
            Err(e) => {
                tracing::debug!(error = %e, "postgres writer: reading table statistics");
                return;
            }
        };
        for (table, analyze) in ANALYZED {
            if !never.iter().any(|n| n == table) {
                continue;
            }
            match exec(conn, analyze).await {
                Ok(()) => tracing::debug!(table, "postgres writer: analyzed a new table"),
                Err(e) => tracing::debug!(table, error = %e, "postgres writer: ANALYZE"),
            }
        }
    }

    /// Runs `commits` in one transaction: one result per commit.
    async fn run_batch(&mut self, commits: &[&Commit]) -> Vec<Result<(), StoreError>> {
        match self.try_batch(commits).await {
            Ok(results) => results,
            Err(e) => {
                tracing::error!(error = %e, "postgres writer: transaction failed");
                // Where the connection stands is unknown: the next batch opens another.
                self.conn = None;
                let err = map_err(&e, StoreError::Conflict);
                commits.iter().map(|_| Err(err.clone())).collect()
            }
        }
    }

    /// `BEGIN` on the lane's connection, opening a new one when there is none or the old one
    /// fails to begin (the server closed it, say): nothing was written on it yet.
    async fn begin(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        let mut conn = self.conn.take();
        if let Some(c) = conn.as_mut()
            && let Err(e) = exec(c, "BEGIN").await
        {
            tracing::warn!(error = %e, "postgres writer: reconnecting");
            conn = None;
        }
        let conn = match conn {
            Some(conn) => conn,
            None => {
                // The old connection's shard went with it.
                let (mut conn, shard) = connect(&self.options, self.schema_key).await?;
                self.shard = shard;
                exec(&mut conn, "BEGIN").await?;
                conn
            }
        };
        Ok(self.conn.insert(conn))
    }

    /// The batch's transaction; an error fails the whole batch.
    async fn try_batch(
        &mut self,
        commits: &[&Commit],
    ) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
        let (shard, notify, counters) = (self.shard, self.notify.clone(), self.counters.clone());
        let notify = notify.as_deref();
        let conn = self.begin().await?;
        let first = match decide(conn, commits).await {
            Ok(plan) => {
                let written = Writes {
                    rows: &plan.rows,
                    tally: &plan.tally,
                    shard,
                    notify,
                    committed: &plan.committed,
                }
                .run(conn)
                .await;
                written.map(|()| plan.results).map_err(Failure::Sql)
            }
            Err(failure) => Err(failure),
        };
        match first {
            Ok(results) => {
                exec(conn, "COMMIT").await?;
                return Ok(results);
            }
            Err(failure) => {
                exec(conn, "ROLLBACK").await?;
                if let [_] = commits {
                    // Alone in its transaction: it failed alone already.
                    return Ok(vec![Err(failure.into_error())]);
                }
                tracing::debug!(?failure, "postgres writer: batch rerun with savepoints");
            }
        }
        counters.reruns.fetch_add(1, Ordering::Relaxed);
        exec(conn, "BEGIN").await?;
        let mut results = Vec::with_capacity(commits.len());
        let mut tally = Tally::default();
        let mut committed = Vec::new();
        for commit in commits {
            exec(conn, "SAVEPOINT w").await?;
            let alone = std::slice::from_ref(commit);
            let outcome = match decide(conn, alone).await {
                Ok(plan) => {
                    let written = Writes {
                        rows: &plan.rows,
                        tally: &Tally::default(),
                        shard,
                        notify: None,
                        committed: &[],
                    }
                    .run(conn)
                    .await;
                    written.map(|()| plan).map_err(Failure::Sql)
                }
                Err(failure) => Err(failure),
            };
            match outcome {
                Ok(plan) => {
                    exec(conn, "RELEASE w").await?;
                    tally.merge(plan.tally);
                    committed.extend(plan.committed);
                    results.extend(plan.results);
                }
                Err(failure) => {
                    exec(conn, "ROLLBACK TO w").await?;
                    exec(conn, "RELEASE w").await?;
                    results.push(Err(failure.into_error()));
                }
            }
        }
        Writes {
            rows: &Rows::default(),
            tally: &tally,
            shard,
            notify,
            committed: &committed,
        }
        .run(conn)
        .await?;
        exec(conn, "COMMIT").await?;
        Ok(results)
    }
}

/// Why deciding or writing a set of requests failed.
#[derive(Debug)]
enum Failure {
    /// A statement failed: the transaction (or savepoint) must be rolled back.
    Sql(sqlx::Error),
    /// A task the batch creates was created by another process meanwhile, and other
    /// requests of the batch were decided as if it were new: run them again one by one.
    Rerun,
}

impl Failure {
    /// What a request that failed alone (in its savepoint) is answered.
    fn into_error(self) -> StoreError {
        match self {
            // An event already in the log is a taken sequence number: a conflict.
            Self::Sql(e) => map_err(&e, StoreError::Conflict),
            Self::Rerun => StoreError::Conflict,
        }
    }
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        Self::Sql(e)
    }
}

/// A task as the batch's requests find it: as stored, then as each accepted request leaves
/// it.
struct Sim<'a> {
    last_seq: i64,
    state: i32,
    context: String,
    /// Whether the row was in the table before the batch (else the batch creates it).
    stored: bool,
    /// The request that created it, when the batch does.
    created_by: Option<usize>,
    /// The row the last accepted request leaves (what the `tasks` row becomes), if any.
    row: Option<&'a TaskRow>,
    /// The last accepted request's row that carries a snapshot, if any.
    snapshot: Option<&'a TaskRow>,
}

impl<'a> Sim<'a> {
    fn accept(&mut self, row: &'a TaskRow) {
        self.last_seq = row.last_seq;
        self.state = row.state;
        self.context.clone_from(&row.context_id);
        self.row = Some(row);
        if row.snapshot.is_some() {
            self.snapshot = Some(row);
        }
    }
}

/// The rows a set of accepted requests writes.
#[derive(Default)]
struct Rows<'a> {
    /// The new rows of tasks that were stored before the batch.
    updates: Vec<&'a TaskRow>,
    /// Rows whose snapshot becomes their task's (one per task).
    snapshots: Vec<&'a TaskRow>,
    /// The accepted requests, whose events are appended.
    events: Vec<&'a Commit>,
}

/// A set of requests, decided.
struct Plan<'a> {
    /// One per request, in order.
    results: Vec<Result<(), StoreError>>,
    rows: Rows<'a>,
    /// The accepted requests' counter changes.
    tally: Tally<'a>,
    /// Each task an accepted request changed, as it ends.
    committed: Vec<Committed<'a>>,
}

/// Locks the rows of the tasks `commits` name, decides each request against them in order,
/// and inserts the tasks they create: steps 2 to 4 of the module docs. Writes nothing else.
async fn decide<'a>(conn: &mut PgConnection, commits: &[&'a Commit]) -> Result<Plan<'a>, Failure> {
    let mut keys: Vec<Key<'a>> = commits.iter().map(|c| c.key()).collect();
    keys.sort_unstable();
    keys.dedup();
    // A batch that only creates tasks (each blocking call of a new task is one), each a
    // create that is accepted unless its task exists, reads nothing: a task that exists
    // already makes its insert below do nothing, which refuses the create as finding it
    // here would.
    let only_creates = commits
        .iter()
        .all(|c| c.expected.is_none() && c.continues && c.row.snapshot.is_some());
    let stored = if only_creates {
        Vec::new()
    } else {
        sqlx::query(
            "SELECT t.tenant, t.owner, t.id, t.last_seq, t.state, t.context_id \
             FROM tasks t JOIN UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[]) \
             AS k(tenant, owner, id) \
             ON t.tenant = k.tenant AND t.owner = k.owner AND t.id = k.id \
             ORDER BY t.tenant, t.owner, t.id FOR UPDATE OF t",
        )
        .bind(keys.iter().map(|k| k.0).collect::<Vec<_>>())
        .bind(keys.iter().map(|k| k.1).collect::<Vec<_>>())
        .bind(keys.iter().map(|k| k.2).collect::<Vec<_>>())
        .fetch_all(&mut *conn)
        .await?
    };
    let mut sims: HashMap<Key<'a>, Sim<'a>> = HashMap::with_capacity(keys.len());
    for r in &stored {
        let found: Key<'_> = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
        // The key as the batch holds it (the row's strings live only as long as the row).
        let Ok(at) = keys.binary_search(&found) else {
            continue;
        };
        sims.insert(
            keys[at],
            Sim {
                last_seq: r.try_get(3)?,
                state: r.try_get(4)?,
                context: r.try_get(5)?,
                stored: true,
                created_by: None,
                row: None,
                snapshot: None,
            },
        );
    }

    // Requests per task, refused ones included.
    let mut named: HashMap<Key<'a>, usize> = HashMap::with_capacity(keys.len());
    let mut results = Vec::with_capacity(commits.len());
    let mut deltas: Vec<Option<CounterDeltas>> = Vec::with_capacity(commits.len());
    for (n, commit) in commits.iter().enumerate() {
        let key = commit.key();
        *named.entry(key).or_default() += 1;
        let row = &commit.row;
        let decided = match (commit.expected, sims.get_mut(&key)) {
            (Some(_), None) => Err(StoreError::NotFound),
            (Some(expected), Some(sim)) => {
                if sim.last_seq != expected || !commit.continues {
                    Err(StoreError::Conflict)
                } else {
                    let d = CounterDeltas::updated(&sim.context, sim.state, row);
                    sim.accept(row);
                    Ok(d)
                }
            }
            (None, Some(_)) => Err(StoreError::AlreadyExists),
            (None, None) => {
                if !commit.continues {
                    Err(StoreError::Conflict)
                } else if row.snapshot.is_none() {
                    Err(StoreError::Backend("a new task needs its snapshot".into()))
                } else {
                    let mut sim = Sim {
                        last_seq: 0,
                        state: 0,
                        context: String::new(),
                        stored: false,
                        created_by: Some(n),
                        row: None,
                        snapshot: None,
                    };
                    sim.accept(row);
                    sims.insert(key, sim);
                    Ok(CounterDeltas::created(row))
                }
            }
        };
        match decided {
            Ok(d) => {
                results.push(Ok(()));
                deltas.push(Some(d));
            }
            Err(e) => {
                results.push(Err(e));
                deltas.push(None);
            }
        }
    }

    // The tasks the batch creates, in key order, as the batch leaves them.
    let mut created: Vec<(Key<'a>, &'a TaskRow)> = sims
        .iter()
        .filter(|(_, s)| !s.stored)
        .filter_map(|(k, s)| Some((*k, s.row?)))
        .collect();
    created.sort_unstable_by_key(|(k, _)| *k);
    if !created.is_empty() {
        let rows: Vec<&TaskRow> = created.iter().map(|(_, r)| *r).collect();
        let inserted = sqlx::query(
            "INSERT INTO tasks (tenant, owner, id, context_id, state, status_ts, last_seq, \
             turn, lease_node, lease_until) \
             SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::INT[], \
             $6::BIGINT[], $7::BIGINT[], $8::BIGINT[], $9::TEXT[], $10::BIGINT[]) \
             ON CONFLICT (tenant, owner, id) DO NOTHING RETURNING tenant, owner, id",
        );
        let inserted = bind_rows(inserted, &rows).fetch_all(&mut *conn).await?;
        if inserted.len() < created.len() {
            let mut new: Vec<Key<'_>> = Vec::with_capacity(inserted.len());
            for r in &inserted {
                new.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
            }
            new.sort_unstable();
            for (key, _) in &created {
                if new.binary_search(key).is_ok() {
                    continue;
                }
                // Created by another process since the lock read: the create is refused,
                // unless other requests of the batch were decided after it.
                if named.get(key).copied().unwrap_or(0) > 1 {
                    return Err(Failure::Rerun);
                }
                if let Some(n) = sims.remove(key).and_then(|s| s.created_by) {
                    results[n] = Err(StoreError::AlreadyExists);
                    deltas[n] = None;
                }
            }
        }
    }

    let mut plan = Plan {
        results,
        rows: Rows::default(),
        tally: Tally::default(),
        committed: Vec::with_capacity(sims.len()),
    };
    for (commit, d) in commits.iter().zip(deltas) {
        if let Some(d) = d {
            plan.tally.add(&commit.row, d);
            plan.rows.events.push(commit);
        }
    }
    let mut changed: Vec<(&Key<'a>, &Sim<'a>)> =
        sims.iter().filter(|(_, s)| s.row.is_some()).collect();
    changed.sort_unstable_by_key(|(k, _)| **k);
    for (_, sim) in changed {
        let Some(row) = sim.row else { continue };
        if sim.stored {
            plan.rows.updates.push(row);
        }
        if let Some(snapshot) = sim.snapshot {
            plan.rows.snapshots.push(snapshot);
        }
        plan.committed.push(Committed {
            tenant: &row.tenant,
            owner: &row.owner,
            id: &row.id,
            seq: row.last_seq,
        });
    }
    Ok(plan)
}

type PgQuery = sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Binds the `tasks` columns of `rows`, as ten arrays.
fn bind_rows(query: PgQuery, rows: &[&TaskRow]) -> PgQuery {
    query
        .bind(rows.iter().map(|r| r.tenant.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.owner.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|r| r.context_id.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|r| r.state).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.status_ts).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.last_seq).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.turn).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|r| r.lease_node.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|r| r.lease_until).collect::<Vec<_>>())
}

/// Step 5: everything a decided set of requests writes besides the created `tasks` rows, in
/// one statement (its parts touch different tables; empty arrays write nothing).
struct Writes<'w, 'a> {
    rows: &'w Rows<'a>,
    tally: &'w Tally<'a>,
    /// The counter shard the tally is added to.
    shard: i32,
    /// Where to announce `committed` (nowhere with notify off).
    notify: Option<&'w Notify>,
    /// The tasks to announce.
    committed: &'w [Committed<'a>],
}

impl Writes<'_, '_> {
    async fn run(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        let Self {
            rows,
            tally,
            shard,
            notify,
            committed,
        } = self;
        let payloads = notify.map_or_else(Vec::new, |n| n.payloads(committed));
        if rows.updates.is_empty()
            && rows.snapshots.is_empty()
            && rows.events.iter().all(|c| c.events.is_none())
            && tally.states.is_empty()
            && tally.contexts.is_empty()
            && payloads.is_empty()
        {
            return Ok(());
        }
        let query = sqlx::query(
            "WITH \
             u AS (UPDATE tasks t SET context_id = u.context_id, state = u.state, \
               status_ts = u.status_ts, last_seq = u.last_seq, turn = u.turn, \
               lease_node = u.lease_node, lease_until = u.lease_until \
               FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::INT[], \
               $6::BIGINT[], $7::BIGINT[], $8::BIGINT[], $9::TEXT[], $10::BIGINT[]) \
               AS u(tenant, owner, id, context_id, state, status_ts, last_seq, turn, \
               lease_node, lease_until) \
               WHERE t.tenant = u.tenant AND t.owner = u.owner AND t.id = u.id), \
             s AS (INSERT INTO snapshots (tenant, owner, id, seq, body) \
               SELECT * FROM UNNEST($11::TEXT[], $12::TEXT[], $13::TEXT[], $14::BIGINT[], \
               $15::BYTEA[]) \
               ON CONFLICT (tenant, owner, id) \
               DO UPDATE SET seq = EXCLUDED.seq, body = EXCLUDED.body), \
             e AS (INSERT INTO event_blocks (tenant, owner, task_id, last_seq, first_seq, body) \
               SELECT * FROM UNNEST($16::TEXT[], $17::TEXT[], $18::TEXT[], $19::BIGINT[], \
               $20::BIGINT[], $21::BYTEA[])), \
             tc AS (INSERT INTO task_counts (tenant, owner, state, shard, n) \
               SELECT c.tenant, c.owner, c.state, $22::INT, c.n \
               FROM UNNEST($23::TEXT[], $24::TEXT[], $25::INT[], $26::BIGINT[]) \
               AS c(tenant, owner, state, n) \
               ON CONFLICT (tenant, owner, state, shard) \
               DO UPDATE SET n = task_counts.n + EXCLUDED.n), \
             cc AS (INSERT INTO context_counts (tenant, owner, context_id, state, shard, n) \
               SELECT c.tenant, c.owner, c.context_id, c.state, $22::INT, c.n \
               FROM UNNEST($27::TEXT[], $28::TEXT[], $29::TEXT[], $30::INT[], $31::BIGINT[]) \
               AS c(tenant, owner, context_id, state, n) \
               ON CONFLICT (tenant, owner, context_id, state, shard) \
               DO UPDATE SET n = context_counts.n + EXCLUDED.n) \
             SELECT pg_notify($32::TEXT, p) FROM UNNEST($33::TEXT[]) AS p",
        );
        let query = bind_rows(query, &rows.updates);
        let snapshots = &rows.snapshots;
        let query = query
            .bind(
                snapshots
                    .iter()
                    .map(|r| r.tenant.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                snapshots
                    .iter()
                    .map(|r| r.owner.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(snapshots.iter().map(|r| r.id.as_str()).collect::<Vec<_>>())
            .bind(snapshots.iter().map(|r| r.last_seq).collect::<Vec<_>>())
            .bind(
                snapshots
                    .iter()
                    .map(|r| r.snapshot.as_deref().unwrap_or_default())
                    .collect::<Vec<_>>(),
            );
        // A block per request: its events, as one row.
        let blocks: Vec<(&TaskRow, &EventBlock)> = rows
            .events
            .iter()
            .filter_map(|c| Some((&c.row, c.events.as_ref()?)))
            .collect();
        let query = query
            .bind(
                blocks
                    .iter()
                    .map(|(r, _)| r.tenant.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                blocks
                    .iter()
                    .map(|(r, _)| r.owner.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                blocks
                    .iter()
                    .map(|(r, _)| r.id.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(blocks.iter().map(|(_, b)| b.last).collect::<Vec<_>>())
            .bind(blocks.iter().map(|(_, b)| b.first).collect::<Vec<_>>())
            .bind(
                blocks
                    .iter()
                    .map(|(_, b)| b.body.as_slice())
                    .collect::<Vec<_>>(),
            );
        let states: Vec<_> = tally.states.iter().filter(|(_, n)| **n != 0).collect();
        let contexts: Vec<_> = tally.contexts.iter().filter(|(_, n)| **n != 0).collect();
        let query = query
            .bind(shard)
            .bind(states.iter().map(|(k, _)| k.0).collect::<Vec<_>>())
            .bind(states.iter().map(|(k, _)| k.1).collect::<Vec<_>>())
            .bind(states.iter().map(|(k, _)| k.2).collect::<Vec<_>>())
            .bind(states.iter().map(|(_, n)| **n).collect::<Vec<_>>())
            .bind(contexts.iter().map(|(k, _)| k.0).collect::<Vec<_>>())
            .bind(contexts.iter().map(|(k, _)| k.1).collect::<Vec<_>>())
            .bind(
                contexts
                    .iter()
                    .map(|(k, _)| k.2.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(contexts.iter().map(|(k, _)| k.3).collect::<Vec<_>>())
            .bind(contexts.iter().map(|(_, n)| **n).collect::<Vec<_>>());
        query
            .bind(notify.map_or("", |n| n.channel.as_str()))
            .bind(payloads)
            .execute(&mut *conn)
            .await
            .map(|_| ())
    }
}
