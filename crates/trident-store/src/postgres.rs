//! The PostgreSQL store: several processes share one database.
//!
//! Commits and appends go through the store's writer (`writer.rs`): one lane by default
//! ([`PgOptions::writers`]), each a task owning a connection and running whatever is queued
//! for it in one transaction (one `SELECT … FOR UPDATE` for the batch's tasks, one statement
//! for its rows as arrays, one WAL flush), the counters summed per batch into the lane's own
//! counter shard. Each transaction
//! sends at most one notification on the schema's channel (`notify.rs`) listing every task it
//! committed with its last sequence number, which every other store of the schema hears
//! through its `LISTEN` connection ([`TaskStore::notices`]). With notify off
//! ([`PgOptions::notify`]), for when another bus carries the events, nothing is sent or
//! listened to. Reads, lease renewal and the push outbox use a pool.

use std::str::FromStr as _;
use std::sync::Arc;

use futures::StreamExt as _;
use prost::Message as _;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::sync::{mpsc, oneshot};
use trident_core::store::{
    ConfigCount, EventLog, Generation, LoggedEvent, NoticeFeed, PushConfigStore, Scope, StoreError,
    TaskPage, TaskQuery, TaskRecord, TaskStore, events_continue,
};
use trident_proto as pb;

use crate::codec::{EventBlock, TaskRow, final_row, to_i64, to_u64};
use crate::read::Reads;
use crate::{OpenError, WriterStats};

mod notify;
mod writer;

pub(crate) use notify::channel_for;
#[cfg(test)]
pub(crate) use notify::{Committed, MAX_PAYLOAD, Notify, parse};
use notify::{Subscribers, listen};
use writer::{Commit, SHARDS, Writer, map_err, schema_key};

/// The database server's clock, in milliseconds since the Unix epoch (an SQL expression, for
/// `concat!`): what leases and delivery claims are judged by ([`TaskStore::clock_ms`]),
/// whatever the replicas' clocks say.
macro_rules! db_now_ms {
    () => {
        "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"
    };
}

/// Connections per store for reads, lease renewal and the push outbox (besides the writer's
/// and the listener's).
const POOL: u32 = 10;
/// How [`PgStore::connect_with_options`] connects: the schema, whether commits are announced
/// with `NOTIFY`, and how many writer lanes commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    schema: Option<String>,
    notify: bool,
    writers: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            schema: None,
            notify: true,
            writers: Self::DEFAULT_WRITERS,
        }
    }
}

impl PgOptions {
    /// Writer lanes (connections committing tasks) per store, unless
    /// [`writers`](Self::writers) says otherwise. One: see [`writers`](Self::writers).
    pub const DEFAULT_WRITERS: usize = 1;
    /// The most writer lanes a store runs: each claims a counter shard of its own, and there
    /// are 32.
    pub const MAX_WRITERS: usize = SHARDS;

    /// The database's default `search_path`, notifications on,
    /// [`DEFAULT_WRITERS`](Self::DEFAULT_WRITERS) lanes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses schema `schema` (created if missing; every connection's `search_path` is set to
    /// it). A plain identifier: ASCII letters, digits and underscores.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Whether commits are announced to the other stores of the schema (`NOTIFY`, one per
    /// writer transaction) and theirs heard (`LISTEN`, [`TaskStore::notices`]). On by default:
    /// it is how replicas on PostgreSQL alone learn of each other's commits. Turn it off when
    /// another bus carries the events between replicas (an `EventBus`): no notification is
    /// sent, none is listened to, and [`TaskStore::notices`] is `None`; the store is still
    /// [`shared`](TaskStore::shared).
    pub fn notify(mut self, notify: bool) -> Self {
        self.notify = notify;
        self
    }

    /// Writer lanes (each a connection with its own transactions; a task's commits always
    /// take the same one), between 1 and [`MAX_WRITERS`](Self::MAX_WRITERS).
    ///
    /// One lane commits whatever was queued while its previous transaction ran, so its
    /// batches grow with the load. With notifications on, more lanes do not commit more:
    /// PostgreSQL lets one notifying transaction commit at a time, database-wide, from its
    /// commit through its WAL flush, so more lanes only split the same commits into smaller
    /// batches (measured: two replicas streaming 50 tasks, 13 requests per transaction and
    /// about 3 000 events/s with one lane each, 6.4 and about 2 000 with two). With
    /// notifications off, more lanes can overlap their round trips and WAL flushes, which may
    /// pay when the database is far away.
    pub fn writers(mut self, writers: usize) -> Self {
        self.writers = writers.clamp(1, Self::MAX_WRITERS);
        self
    }
}

/// Tasks, event logs and push configurations in a PostgreSQL database, shared by every
/// process that connects to it.
///
/// Commits and appends are queued to a writer lane that commits whatever is queued together
/// in one transaction (up to 256 requests), each request refused or accepted alone; a caller
/// is answered once its transaction has committed. With notifications on (the
/// default), each transaction also sends one `pg_notify` on the schema's channel naming every
/// task it committed, and each store listens on that channel from the moment it is
/// connected, so a feed from [`TaskStore::notices`] reports every commit by another store
/// made after the feed was taken.
pub struct PgStore {
    pool: PgPool,
    /// The read path shared with SQLite, over the same pool.
    reads: Reads<sqlx::Postgres>,
    writer: Writer,
    /// This instance's id, carried in its notifications so it can skip its own.
    node: String,
    /// The feeds of [`TaskStore::notices`]; `None` with notify off.
    subscribers: Option<Arc<Subscribers>>,
    /// Dropping it stops the listener task.
    _stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("node", &self.node)
            .field("notify", &self.subscribers.is_some())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

impl PgStore {
    /// Connects to the database at `url` (its default `search_path`) and brings the schema up
    /// to date.
    pub async fn connect(url: &str) -> Result<Self, OpenError> {
        Self::connect_with_options(url, PgOptions::new()).await
    }

    /// Connects to the database at `url` using schema `schema` (created if missing; every
    /// connection's `search_path` is set to it) and brings the schema up to date. `schema` is
    /// a plain identifier: ASCII letters, digits and underscores.
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, OpenError> {
        Self::connect_with_options(url, PgOptions::new().schema(schema)).await
    }

    /// Connects to the database at `url` as `options` say and brings the schema up to date.
    pub async fn connect_with_options(url: &str, options: PgOptions) -> Result<Self, OpenError> {
        let mut connect = PgConnectOptions::from_str(url)?;
        let schema = options.schema.as_deref();
        if let Some(schema) = schema {
            if !is_identifier(schema) {
                return Err(OpenError::SchemaName(schema.to_owned()));
            }
            connect = connect.options([("search_path", schema)]);
        }
        let node = uuid::Uuid::new_v4().simple().to_string();
        // Names the store's connections in pg_stat_activity.
        let connect = connect.application_name(&format!("trident-{node}"));
        let pool = PgPoolOptions::new()
            .max_connections(POOL)
            .connect_with(connect.clone())
            .await?;
        {
            let mut conn = pool.acquire().await?;
            crate::migrate::postgres(&mut conn, schema).await?;
        }
        let channel = channel_for(schema);
        let (subscribers, stop) = if options.notify {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(&channel).await?;
            let subscribers = Arc::new(Subscribers::default());
            let (stop, stopped) = oneshot::channel();
            tokio::spawn(listen(
                listener,
                channel.clone(),
                pool.clone(),
                node.clone(),
                subscribers.clone(),
                stopped,
            ));
            (Some(subscribers), Some(stop))
        } else {
            (None, None)
        };
        let notify = options.notify.then(|| notify::Notify {
            channel: channel.clone(),
            node: node.clone(),
        });
        let writer = Writer::start(&connect, options.writers, schema_key(&channel), notify).await?;
        Ok(Self {
            reads: Reads::new(pool.clone(), crate::read::LogLayout::Blocks),
            pool,
            writer,
            node,
            subscribers,
            _stop: stop,
        })
    }

    /// The pool (for tests and maintenance).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The `application_name` of this store's connections (`trident-` and the id that marks
    /// its own notifications).
    pub fn application_name(&self) -> String {
        format!("trident-{}", self.node)
    }

    /// What the writer lanes have done so far (every lane's requests and transactions).
    pub fn stats(&self) -> WriterStats {
        self.writer.stats()
    }

    /// Queues a commit (`snapshot`: `record.task` becomes the task's snapshot) to the writer
    /// and waits for its transaction.
    async fn write_commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
        snapshot: bool,
    ) -> Result<(), StoreError> {
        let row = TaskRow::encode(scope, record, snapshot)?;
        let continues = events_continue(expected_seq.unwrap_or(0), record.last_seq, events);
        let commit = Commit {
            row,
            expected: expected_seq.map(to_i64).transpose()?,
            continues,
            events: EventBlock::encode(events)?,
        };
        self.writer.write(commit).await
    }
}

/// A failed write: serialization failures and deadlocks are `Conflict` ([`map_err`]).
fn write_failed(e: sqlx::Error) -> StoreError {
    map_err(&e, StoreError::Conflict)
}

#[async_trait::async_trait]
impl TaskStore for PgStore {
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

    /// In a transaction of its own that locks the task's row, reads where its log ends and
    /// appends there; no snapshot is stored.
    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        let row = final_row(scope, task_id, event)?;
        self.writer
            .append_final(&self.pool, row, event.encode_to_vec())
            .await
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

    /// Locks the rows in key order, as the writer's batches do, so the two never deadlock,
    /// and skips a row a batch holds: that batch writes the task's lease itself (every
    /// commit renews it), and the renewal never waits behind the writer.
    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError> {
        let r = sqlx::query(
            "UPDATE tasks t SET lease_until = $1 \
             FROM (SELECT tenant, owner, id FROM tasks WHERE lease_node = $2 \
             ORDER BY tenant, owner, id FOR UPDATE SKIP LOCKED) k \
             WHERE t.tenant = k.tenant AND t.owner = k.owner AND t.id = k.id",
        )
        .bind(until_ms)
        .bind(node)
        .execute(&self.pool)
        .await
        .map_err(write_failed)?;
        Ok(r.rows_affected())
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit_n: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.reads.lapsed_leases(before_ms, limit_n).await
    }

    /// The database server's clock: every replica measures its own against it, so leases
    /// are written and judged in one clock.
    async fn clock_ms(&self) -> Result<i64, StoreError> {
        sqlx::query_scalar(concat!("SELECT ", db_now_ms!()))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| StoreError::Backend(e.to_string()))
    }

    fn shared(&self) -> bool {
        true
    }

    /// `None` with notify off.
    fn notices(&self) -> Option<NoticeFeed> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tx);
        Some(
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|n| (n, rx)) })
                .boxed(),
        )
    }
}

#[async_trait::async_trait]
impl EventLog for PgStore {
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
impl PushConfigStore for PgStore {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO push_configs (tenant, owner, task_id, id, body, protocol) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (tenant, owner, task_id, id) \
             DO UPDATE SET body = EXCLUDED.body, protocol = EXCLUDED.protocol",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(&config.task_id)
        .bind(&config.id)
        .bind(config.encode_to_vec())
        .bind(generation.version())
        .execute(&self.pool)
        .await
        .map_err(write_failed)?;
        Ok(())
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
        let r = sqlx::query(
            "DELETE FROM push_configs \
             WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(write_failed)?;
        Ok(r.rows_affected() > 0)
    }

    /// One upsert whose update applies only when the claim is free, ours or expired: racing
    /// processes serialize on the row, and at most one gets it.
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
        // A claim lapses by the database's clock, the one `until_ms` is in (see `clock_ms`).
        let delivered: Option<i64> = sqlx::query_scalar(concat!(
            "INSERT INTO deliveries (tenant, owner, task_id, delivered, node, until_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (tenant, owner, task_id) DO UPDATE \
             SET node = EXCLUDED.node, until_ms = EXCLUDED.until_ms \
             WHERE deliveries.node IS NULL OR deliveries.node = EXCLUDED.node \
             OR deliveries.until_ms < ",
            db_now_ms!(),
            " RETURNING delivered"
        ))
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        .bind(to_i64(from)?)
        .bind(node)
        .bind(until_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(write_failed)?;
        Ok(delivered.map(to_u64))
    }

    async fn delivered(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        seq: u64,
        until_ms: i64,
    ) -> Result<bool, StoreError> {
        let r = sqlx::query(
            "UPDATE deliveries SET delivered = GREATEST(delivered, $1), until_ms = $2 \
             WHERE tenant = $3 AND owner = $4 AND task_id = $5 AND node = $6",
        )
        .bind(to_i64(seq)?)
        .bind(until_ms)
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        .bind(node)
        .execute(&self.pool)
        .await
        .map_err(write_failed)?;
        Ok(r.rows_affected() > 0)
    }

    async fn release_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE deliveries SET node = NULL \
             WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND node = $4",
        )
        .bind(&*scope.tenant)
        .bind(&*scope.owner)
        .bind(task_id)
        .bind(node)
        .execute(&self.pool)
        .await
        .map_err(write_failed)?;
        Ok(())
    }

    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit_n: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.reads.pending_deliveries(now_ms, limit_n).await
    }
}
