//! The one read path of the SQL stores: every read query, its bind values and how its rows
//! become records, written once for SQLite and PostgreSQL ([`Reads`] is generic over the sqlx
//! driver). Placeholders are `$n`, which PostgreSQL and sqlx's SQLite driver both take. Writes
//! differ (a rusqlite writer thread with group commit for SQLite, writer lanes committing
//! batches as arrays with one `NOTIFY` per transaction for PostgreSQL) and stay in each
//! backend.

use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Database, Pool, Row as _};
use trident_core::store::{
    ConfigCount, Generation, LoggedEvent, Scope, StoreError, TaskPage, TaskQuery, TaskRecord,
};
use trident_proto as pb;

use crate::codec::{
    ListedRow, Val, decode_block, decode_event, decode_push, decode_record, events_after_snapshot,
    limit, limit_plus_one, list_sql, page, rebuild_page, to_u64,
};

/// A database failure as a store error. PostgreSQL's writes map some codes to `Conflict`
/// first (`postgres::map_err`); a read failure is always a backend failure.
pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// `q` with `args` bound in order.
pub(crate) fn bind_all<'q, DB>(
    mut q: Query<'q, DB, DB::Arguments>,
    args: Vec<Val>,
) -> Query<'q, DB, DB::Arguments>
where
    DB: Database,
    String: for<'e> sqlx::Encode<'e, DB> + sqlx::Type<DB>,
    i64: for<'e> sqlx::Encode<'e, DB> + sqlx::Type<DB>,
    i32: for<'e> sqlx::Encode<'e, DB> + sqlx::Type<DB>,
{
    for v in args {
        q = match v {
            Val::Str(s) => q.bind(s),
            Val::I64(i) => q.bind(i),
            Val::I32(i) => q.bind(i),
        };
    }
    q
}

/// How a store's event log is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogLayout {
    /// `events`: a row per event (SQLite).
    Rows,
    /// `event_blocks`: a row per commit's events (PostgreSQL, migration 5).
    Blocks,
}

/// The reads of one SQL store, over its pool of read connections.
pub(crate) struct Reads<DB: Database> {
    pool: Pool<DB>,
    log: LogLayout,
}

impl<DB: Database> Clone for Reads<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            log: self.log,
        }
    }
}

impl<DB: Database> std::fmt::Debug for Reads<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reads").field("db", &DB::NAME).finish()
    }
}

impl<DB> Reads<DB>
where
    DB: Database,
    DB::Arguments: sqlx::IntoArguments<DB> + 'static,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    String: for<'e> sqlx::Encode<'e, DB> + for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    i64: for<'e> sqlx::Encode<'e, DB> + for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    i32: for<'e> sqlx::Encode<'e, DB> + sqlx::Type<DB>,
    Vec<u8>: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    for<'r> &'r [u8]: sqlx::Decode<'r, DB> + sqlx::Type<DB>,
{
    /// Reads through `pool`, the event log laid out as `log`.
    pub(crate) fn new(pool: Pool<DB>, log: LogLayout) -> Self {
        Self { pool, log }
    }

    async fn rows(
        &self,
        sql: impl Into<String>,
        args: Vec<Val>,
    ) -> Result<Vec<DB::Row>, StoreError> {
        bind_all(sqlx::query(AssertSqlSafe(sql.into())), args)
            .fetch_all(&self.pool)
            .await
            .map_err(backend)
    }

    /// `TaskStore::get`: the task row with its snapshot (one statement, so they agree), then
    /// the events logged after the snapshot (read from `log`), applied.
    pub(crate) async fn task(
        &self,
        log: &dyn trident_core::store::EventLog,
        scope: &Scope,
        id: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let rows = self
            .rows(
                "SELECT s.body, s.seq, t.last_seq, t.turn, t.lease_node, t.lease_until \
                 FROM tasks t JOIN snapshots s \
                 ON s.tenant = t.tenant AND s.owner = t.owner AND s.id = t.id \
                 WHERE t.tenant = $1 AND t.owner = $2 AND t.id = $3",
                vec![
                    Val::Str(scope.tenant.to_string()),
                    Val::Str(scope.owner.to_string()),
                    Val::Str(id.to_owned()),
                ],
            )
            .await?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let snapshot_seq: i64 = r.try_get(1).map_err(backend)?;
        let last_seq: i64 = r.try_get(2).map_err(backend)?;
        let events =
            events_after_snapshot(log, scope, id, to_u64(snapshot_seq), to_u64(last_seq)).await?;
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

    /// `TaskStore::list`: a keyset page through the index matching the filters: O(page
    /// size). The total comes from the per-state counters, except with `updated_since`, where
    /// it is a count of the matching rows (O(matching rows)).
    pub(crate) async fn tasks(
        &self,
        log: &dyn trident_core::store::EventLog,
        scope: &Scope,
        query: &TaskQuery,
    ) -> Result<TaskPage, StoreError> {
        let sql = list_sql(scope, query);
        let rows = self.rows(sql.page, sql.page_args).await?;
        let total: i64 = self
            .rows(sql.total, sql.total_args)
            .await?
            .first()
            .ok_or_else(|| StoreError::Backend("the task count returned no row".into()))?
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
        let tasks = rebuild_page(log, scope, rows).await?;
        Ok(page(tasks, more, total))
    }

    /// `TaskStore::lapsed_leases`.
    pub(crate) async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit_n: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        let rows = self
            .rows(
                "SELECT tenant, owner, id FROM tasks \
                 WHERE lease_node IS NOT NULL AND lease_until < $1 LIMIT $2",
                vec![Val::I64(before_ms), Val::I64(limit(limit_n))],
            )
            .await?;
        rows.iter().map(scoped_id::<DB>).collect()
    }

    /// `EventLog::read`.
    pub(crate) async fn events(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit_n: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let key = vec![
            Val::Str(scope.tenant.to_string()),
            Val::Str(scope.owner.to_string()),
            Val::Str(task_id.to_owned()),
            Val::I64(i64::try_from(after).unwrap_or(i64::MAX)),
            // Each block holds at least one event: `limit_n` blocks hold enough.
            Val::I64(limit(limit_n)),
        ];
        if self.log == LogLayout::Blocks {
            let upto = after.saturating_add(u64::try_from(limit_n).unwrap_or(u64::MAX));
            let mut key = key;
            key.push(Val::I64(i64::try_from(upto).unwrap_or(i64::MAX)));
            let rows = self
                .rows(
                    // The log is gapless: the blocks starting at or before after + limit ($6)
                    // hold the events wanted, and no more.
                    "SELECT first_seq, last_seq, body FROM event_blocks \
                     WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND last_seq > $4 \
                     AND first_seq <= $6 ORDER BY last_seq LIMIT $5",
                    key,
                )
                .await?;
            let mut events = Vec::new();
            for r in &rows {
                let seqs = (
                    r.try_get(0).map_err(backend)?,
                    r.try_get(1).map_err(backend)?,
                );
                decode_block(
                    seqs,
                    r.try_get::<&[u8], _>(2).map_err(backend)?,
                    (after, upto),
                    &mut events,
                )?;
            }
            return Ok(events);
        }
        let rows = self
            .rows(
                "SELECT seq, body FROM events WHERE tenant = $1 AND owner = $2 AND task_id = $3 \
                 AND seq > $4 ORDER BY seq LIMIT $5",
                key,
            )
            .await?;
        rows.iter()
            .map(|r| {
                decode_event(
                    r.try_get(0).map_err(backend)?,
                    r.try_get::<&[u8], _>(1).map_err(backend)?,
                )
            })
            .collect()
    }

    /// `PushConfigStore::get`.
    pub(crate) async fn push_config(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<(pb::TaskPushNotificationConfig, Generation)>, StoreError> {
        let rows = self
            .rows(
                "SELECT body, protocol FROM push_configs \
                 WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4",
                vec![
                    Val::Str(scope.tenant.to_string()),
                    Val::Str(scope.owner.to_string()),
                    Val::Str(task_id.to_owned()),
                    Val::Str(id.to_owned()),
                ],
            )
            .await?;
        rows.first()
            .map(|r| {
                let config = decode_push(r.try_get::<&[u8], _>(0).map_err(backend)?)?;
                let protocol = r.try_get::<String, _>(1).map_err(backend)?;
                let generation = Generation::from_version(&protocol).ok_or_else(|| {
                    StoreError::Backend(format!("unknown push config protocol {protocol:?}"))
                })?;
                Ok((config, generation))
            })
            .transpose()
    }

    /// `PushConfigStore::list`: up to `limit_n` configurations after `after`, and whether
    /// more follow.
    pub(crate) async fn push_configs(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit_n: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        let rows = self
            .rows(
                "SELECT body FROM push_configs WHERE tenant = $1 AND owner = $2 AND task_id = $3 \
                 AND id > $4 ORDER BY id LIMIT $5",
                vec![
                    Val::Str(scope.tenant.to_string()),
                    Val::Str(scope.owner.to_string()),
                    Val::Str(task_id.to_owned()),
                    // Every id sorts after "" except "" itself, which `put` never stores.
                    Val::Str(after.unwrap_or("").to_owned()),
                    Val::I64(limit_plus_one(limit_n)),
                ],
            )
            .await?;
        let mut configs = rows
            .iter()
            .map(|r| decode_push(r.try_get::<&[u8], _>(0).map_err(backend)?))
            .collect::<Result<Vec<_>, _>>()?;
        let more = configs.len() > limit_n;
        configs.truncate(limit_n);
        Ok((configs, more))
    }

    /// `PushConfigStore::count`: the task's configurations, then those of the principal's
    /// tasks that have not ended — from its tasks by state (the `tasks_by_state` index), so
    /// configurations of ended tasks are not even read.
    pub(crate) async fn push_config_count(
        &self,
        scope: &Scope,
        task_id: &str,
    ) -> Result<ConfigCount, StoreError> {
        // Every state that is not terminal (0..16 covers the enum and some room).
        let active: Vec<String> = (0..16)
            .filter(|&n| pb::TaskState::try_from(n).is_ok_and(|s| !s.is_terminal()))
            .map(|n| n.to_string())
            .collect();
        let rows = self
            .rows(
                format!(
                    "SELECT (SELECT count(*) FROM push_configs                              WHERE tenant = $1 AND owner = $2 AND task_id = $3),                             (SELECT count(*) FROM tasks t JOIN push_configs p                                ON p.tenant = t.tenant AND p.owner = t.owner AND p.task_id = t.id                              WHERE t.tenant = $1 AND t.owner = $2 AND t.state IN ({}))",
                    active.join(", ")
                ),
                vec![
                    Val::Str(scope.tenant.to_string()),
                    Val::Str(scope.owner.to_string()),
                    Val::Str(task_id.to_owned()),
                ],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(ConfigCount::default());
        };
        let count = |i: usize| row.try_get::<i64, _>(i).map(to_u64).map_err(backend);
        Ok(ConfigCount {
            task: count(0)?,
            active: count(1)?,
        })
    }

    /// `PushConfigStore::pending_deliveries`.
    pub(crate) async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit_n: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        let rows = self
            .rows(
                "SELECT d.tenant, d.owner, d.task_id FROM deliveries d \
                 JOIN tasks t ON t.tenant = d.tenant AND t.owner = d.owner AND t.id = d.task_id \
                 WHERE (d.node IS NULL OR d.until_ms < $1) AND t.last_seq > d.delivered LIMIT $2",
                vec![Val::I64(now_ms), Val::I64(limit(limit_n))],
            )
            .await?;
        rows.iter().map(scoped_id::<DB>).collect()
    }
}

/// A row of (tenant, owner, id).
fn scoped_id<DB>(r: &DB::Row) -> Result<(Scope, String), StoreError>
where
    DB: Database,
    usize: sqlx::ColumnIndex<DB::Row>,
    String: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
{
    let tenant: String = r.try_get(0).map_err(backend)?;
    let owner: String = r.try_get(1).map_err(backend)?;
    Ok((Scope::new(tenant, owner), r.try_get(2).map_err(backend)?))
}
