//! The PostgreSQL store: several processes share one database; commits are announced with
//! `NOTIFY trident_commits` and heard through one `LISTEN` connection per store.

use std::str::FromStr as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use prost::Message as _;
use sqlx::Row as _;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::sync::{mpsc, oneshot};
use trident_core::store::{
    ConfigCount, EventLog, Generation, LoggedEvent, Notice, NoticeFeed, PushConfigStore, Scope,
    StoreError, TaskPage, TaskQuery, TaskRecord, TaskStore, events_continue,
};
use trident_proto as pb;

use crate::OpenError;
use crate::codec::{CounterDeltas, TaskRow, encode_events, to_i64, to_u64};
use crate::read::Reads;

/// The NOTIFY channel commits are announced on, per schema: channels are per database, and
/// stores in different schemas of one database must not hear each other's commits.
const CHANNEL: &str = "trident_commits";

/// The channel of the stores in `schema` (the default schema keeps the plain name; a name
/// past PostgreSQL's 63-byte identifier limit is shortened with a hash of the schema).
pub(crate) fn channel_for(schema: Option<&str>) -> String {
    match schema {
        None => CHANNEL.to_owned(),
        Some(schema) => {
            let name = format!("{CHANNEL}_{schema}");
            if name.len() <= 63 {
                name
            } else {
                // FNV-1a: stable across processes and versions, unlike the std hasher.
                let hash = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
                });
                format!("{CHANNEL}_{hash:016x}")
            }
        }
    }
}
/// The database server's clock, in milliseconds since the Unix epoch (an SQL expression, for
/// `concat!`): what leases and delivery claims are judged by ([`TaskStore::clock_ms`]),
/// whatever the replicas' clocks say.
macro_rules! db_now_ms {
    () => {
        "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"
    };
}

/// Connections per store (besides the listener's).
const POOL: u32 = 10;
/// NOTIFY payloads must stay under 8000 bytes; a longer one becomes a resync request.
const MAX_PAYLOAD: usize = 7_900;

/// Tasks, event logs and push configurations in a PostgreSQL database, shared by every
/// process that connects to it.
///
/// Each commit is one transaction that also sends `pg_notify('trident_commits', …)`; each
/// store listens on that channel from the moment it is connected, so a feed from
/// [`TaskStore::notices`] reports every commit by another store made after the feed was
/// taken.
pub struct PgStore {
    pool: PgPool,
    /// The read path shared with SQLite, over the same pool.
    reads: Reads<sqlx::Postgres>,
    /// The NOTIFY channel of this store's schema ([`channel_for`]).
    channel: String,
    /// This instance's id, carried in its notifications so it can skip its own.
    node: String,
    subscribers: Arc<Subscribers>,
    /// Dropping it stops the listener task.
    _stop: oneshot::Sender<()>,
}

type Subscribers = Mutex<Vec<mpsc::UnboundedSender<Notice>>>;

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("node", &self.node)
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
        Self::connect_with(PgConnectOptions::from_str(url)?, None).await
    }

    /// Connects to the database at `url` using schema `schema` (created if missing; every
    /// connection's `search_path` is set to it) and brings the schema up to date. `schema` is
    /// a plain identifier: ASCII letters, digits and underscores.
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, OpenError> {
        if !is_identifier(schema) {
            return Err(OpenError::SchemaName(schema.to_owned()));
        }
        let options = PgConnectOptions::from_str(url)?.options([("search_path", schema)]);
        Self::connect_with(options, Some(schema)).await
    }

    async fn connect_with(
        options: PgConnectOptions,
        schema: Option<&str>,
    ) -> Result<Self, OpenError> {
        let node = uuid::Uuid::new_v4().simple().to_string();
        // Names the store's connections in pg_stat_activity.
        let options = options.application_name(&format!("trident-{node}"));
        let pool = PgPoolOptions::new()
            .max_connections(POOL)
            .connect_with(options)
            .await?;
        {
            let mut conn = pool.acquire().await?;
            crate::migrate::postgres(&mut conn, schema).await?;
        }
        let channel = channel_for(schema);
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
        Ok(Self {
            reads: Reads::new(pool.clone()),
            pool,
            channel,
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
}

fn broadcast(subscribers: &Subscribers, notice: &Notice) {
    let mut subs = subscribers.lock().unwrap_or_else(|e| e.into_inner());
    subs.retain(|tx| tx.send(notice.clone()).is_ok());
}

/// Parses one notification; `None` for our own commits and for foreign payloads.
fn parse(payload: &str, own: &str) -> Option<Notice> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    if v.get("n").and_then(|n| n.as_str()) == Some(own) {
        return None;
    }
    if v.get("r").is_some() {
        return Some(Notice::Resync);
    }
    Some(Notice::Committed {
        scope: Scope::new(v.get("t")?.as_str()?, v.get("o")?.as_str()?),
        task_id: v.get("i")?.as_str()?.to_owned(),
        seq: v.get("s")?.as_u64()?,
    })
}

/// The listener task: fans notifications out to every live feed until the store is dropped.
/// A lost connection (notifications may have been missed) becomes [`Notice::Resync`] once
/// listening again.
async fn listen(
    mut listener: PgListener,
    channel: String,
    pool: PgPool,
    node: String,
    subscribers: Arc<Subscribers>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        let received = tokio::select! {
            _ = &mut stopped => return,
            r = listener.try_recv() => r,
        };
        match received {
            Ok(Some(n)) => {
                if let Some(notice) = parse(n.payload(), &node) {
                    broadcast(&subscribers, &notice);
                }
            }
            // The connection was lost and re-established (eager reconnect): whatever was
            // sent meanwhile is gone.
            Ok(None) => {
                tracing::warn!("postgres store: notification connection lost; resync");
                broadcast(&subscribers, &Notice::Resync);
            }
            Err(e) => {
                tracing::warn!(error = %e, "postgres store: notification listener failed");
                // Start over with a new listener, retrying until it listens.
                loop {
                    tokio::select! {
                        _ = &mut stopped => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                    match PgListener::connect_with(&pool).await {
                        Ok(mut fresh) => match fresh.listen(&channel).await {
                            Ok(()) => {
                                listener = fresh;
                                break;
                            }
                            Err(e) => tracing::warn!(error = %e, "postgres store: LISTEN"),
                        },
                        Err(e) => tracing::warn!(error = %e, "postgres store: reconnecting"),
                    }
                }
                broadcast(&subscribers, &Notice::Resync);
            }
        }
    }
}

/// Maps a database error: unique violations to `unique`, serialization failures and
/// deadlocks to `Conflict`, the rest to `Backend`.
fn map_err(e: sqlx::Error, unique: StoreError) -> StoreError {
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

/// A failed write: serialization failures and deadlocks are `Conflict` ([`map_err`]).
fn write_failed(e: sqlx::Error) -> StoreError {
    map_err(e, StoreError::Conflict)
}

impl PgStore {
    /// One transaction. A create is an `INSERT … ON CONFLICT DO NOTHING` (no row: the id is
    /// taken); an update first locks the row (`SELECT … FOR UPDATE`), so racing commits at one
    /// version serialize on it and all but one see a newer `last_seq`. `snapshot` stores
    /// `record.task` as the task's snapshot.
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
        let encoded = encode_events(events)?;
        let mut tx = self.pool.begin().await.map_err(write_failed)?;
        let deltas = match expected_seq {
            Some(expected) => {
                let old = sqlx::query(
                    "SELECT last_seq, state, context_id FROM tasks \
                     WHERE tenant = $1 AND owner = $2 AND id = $3 FOR UPDATE",
                )
                .bind(&row.tenant)
                .bind(&row.owner)
                .bind(&row.id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(write_failed)?
                .ok_or(StoreError::NotFound)?;
                let stored: i64 = old.try_get(0).map_err(write_failed)?;
                if stored != to_i64(expected)? || !continues {
                    return Err(StoreError::Conflict);
                }
                let old_state: i32 = old.try_get(1).map_err(write_failed)?;
                let old_context: String = old.try_get(2).map_err(write_failed)?;
                sqlx::query(
                    "UPDATE tasks SET context_id = $4, state = $5, status_ts = $6, \
                     last_seq = $7, turn = $8, lease_node = $9, lease_until = $10 \
                     WHERE tenant = $1 AND owner = $2 AND id = $3",
                )
                .bind(&row.tenant)
                .bind(&row.owner)
                .bind(&row.id)
                .bind(&row.context_id)
                .bind(row.state)
                .bind(row.status_ts)
                .bind(row.last_seq)
                .bind(row.turn)
                .bind(&row.lease_node)
                .bind(row.lease_until)
                .execute(&mut *tx)
                .await
                .map_err(write_failed)?;
                CounterDeltas::updated(&old_context, old_state, &row)
            }
            None => {
                let r = sqlx::query(
                    "INSERT INTO tasks (tenant, owner, id, context_id, state, status_ts, \
                     last_seq, turn, lease_node, lease_until) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                     ON CONFLICT (tenant, owner, id) DO NOTHING",
                )
                .bind(&row.tenant)
                .bind(&row.owner)
                .bind(&row.id)
                .bind(&row.context_id)
                .bind(row.state)
                .bind(row.status_ts)
                .bind(row.last_seq)
                .bind(row.turn)
                .bind(&row.lease_node)
                .bind(row.lease_until)
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err(e, StoreError::AlreadyExists))?;
                if r.rows_affected() == 0 {
                    return Err(StoreError::AlreadyExists);
                }
                if !continues {
                    return Err(StoreError::Conflict);
                }
                if row.snapshot.is_none() {
                    return Err(StoreError::Backend("a new task needs its snapshot".into()));
                }
                CounterDeltas::created(&row)
            }
        };
        if let Some(body) = &row.snapshot {
            sqlx::query(
                "INSERT INTO snapshots (tenant, owner, id, seq, body) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (tenant, owner, id) DO UPDATE SET seq = EXCLUDED.seq, body = EXCLUDED.body",
            )
            .bind(&row.tenant)
            .bind(&row.owner)
            .bind(&row.id)
            .bind(row.last_seq)
            .bind(body)
            .execute(&mut *tx)
            .await
            .map_err(write_failed)?;
        }
        if !encoded.is_empty() {
            let (seqs, bodies): (Vec<i64>, Vec<Vec<u8>>) = encoded.into_iter().unzip();
            sqlx::query(
                "INSERT INTO events (tenant, owner, task_id, seq, body) \
                 SELECT $1, $2, $3, s, b FROM UNNEST($4::BIGINT[], $5::BYTEA[]) AS u(s, b)",
            )
            .bind(&row.tenant)
            .bind(&row.owner)
            .bind(&row.id)
            .bind(seqs)
            .bind(bodies)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err(e, StoreError::Conflict))?;
        }
        for (state, delta) in &deltas.states {
            sqlx::query(
                "INSERT INTO task_counts (tenant, owner, state, n) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tenant, owner, state) DO UPDATE SET n = task_counts.n + EXCLUDED.n",
            )
            .bind(&row.tenant)
            .bind(&row.owner)
            .bind(state)
            .bind(delta)
            .execute(&mut *tx)
            .await
            .map_err(write_failed)?;
        }
        for (context, state, delta) in &deltas.contexts {
            sqlx::query(
                "INSERT INTO context_counts (tenant, owner, context_id, state, n) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant, owner, context_id, state) \
                 DO UPDATE SET n = context_counts.n + EXCLUDED.n",
            )
            .bind(&row.tenant)
            .bind(&row.owner)
            .bind(context)
            .bind(state)
            .bind(delta)
            .execute(&mut *tx)
            .await
            .map_err(write_failed)?;
        }
        let mut payload = serde_json::json!({
            "n": self.node, "t": row.tenant, "o": row.owner, "i": row.id, "s": record.last_seq,
        })
        .to_string();
        if payload.len() > MAX_PAYLOAD {
            payload = serde_json::json!({ "n": self.node, "r": 1 }).to_string();
        }
        // Transactional: delivered to listeners only once the commit is.
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&self.channel)
            .bind(payload)
            .execute(&mut *tx)
            .await
            .map_err(write_failed)?;
        tx.commit().await.map_err(write_failed)
    }
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
        let r = sqlx::query("UPDATE tasks SET lease_until = $1 WHERE lease_node = $2")
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

    fn notices(&self) -> Option<NoticeFeed> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers
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
