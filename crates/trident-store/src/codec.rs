//! Row encoding shared by both backends: records to columns and back.

use prost::Message;
use trident_core::store::{
    Lease, ListCursor, LoggedEvent, Scope, StoreError, TaskPage, TaskRecord, status_nanos,
};
use trident_proto as pb;

/// A task record as the columns of the `tasks` table.
#[derive(Debug, Clone)]
pub(crate) struct TaskRow {
    pub(crate) tenant: String,
    pub(crate) owner: String,
    pub(crate) id: String,
    pub(crate) context_id: String,
    pub(crate) state: i32,
    pub(crate) status_ts: i64,
    pub(crate) last_seq: i64,
    pub(crate) turn: i64,
    pub(crate) lease_node: Option<String>,
    pub(crate) lease_until: Option<i64>,
    pub(crate) snapshot: Vec<u8>,
}

impl TaskRow {
    pub(crate) fn encode(scope: &Scope, record: &TaskRecord) -> Result<Self, StoreError> {
        Ok(Self {
            tenant: scope.tenant.to_string(),
            owner: scope.owner.to_string(),
            id: record.task.id.clone(),
            context_id: record.task.context_id.clone(),
            state: record.task.state() as i32,
            status_ts: saturate(status_nanos(&record.task)),
            last_seq: to_i64(record.last_seq)?,
            turn: to_i64(record.turn)?,
            lease_node: record.lease.as_ref().map(|l| l.node.to_string()),
            lease_until: record.lease.as_ref().map(|l| l.until_ms),
            snapshot: record.task.encode_to_vec(),
        })
    }
}

/// Rebuilds a record from its columns.
pub(crate) fn decode_record(
    snapshot: &[u8],
    last_seq: i64,
    turn: i64,
    lease_node: Option<String>,
    lease_until: Option<i64>,
) -> Result<TaskRecord, StoreError> {
    Ok(TaskRecord {
        task: decode_task(snapshot)?,
        last_seq: to_u64(last_seq),
        turn: to_u64(turn),
        lease: lease_node.map(|node| Lease {
            node: node.into(),
            until_ms: lease_until.unwrap_or(0),
        }),
    })
}

/// A page from the `limit + 1` rows a list query fetched (the extra row says whether more
/// follow) and the matching total.
pub(crate) fn page(mut tasks: Vec<pb::Task>, limit: usize, total: i64) -> TaskPage {
    let more = tasks.len() > limit;
    tasks.truncate(limit);
    let next = if more {
        tasks.last().map(ListCursor::of)
    } else {
        None
    };
    TaskPage {
        tasks,
        total: usize::try_from(total).unwrap_or(0),
        next,
    }
}

pub(crate) fn decode_task(snapshot: &[u8]) -> Result<pb::Task, StoreError> {
    pb::Task::decode(snapshot)
        .map_err(|e| StoreError::Backend(format!("corrupt task snapshot: {e}")))
}

/// Events as (seq, prost-encoded body).
pub(crate) fn encode_events(events: &[LoggedEvent]) -> Result<Vec<(i64, Vec<u8>)>, StoreError> {
    events
        .iter()
        .map(|e| Ok((to_i64(e.seq)?, e.event.encode_to_vec())))
        .collect()
}

pub(crate) fn decode_event(seq: i64, body: &[u8]) -> Result<LoggedEvent, StoreError> {
    let event = pb::StreamResponse::decode(body)
        .map_err(|e| StoreError::Backend(format!("corrupt event: {e}")))?;
    Ok(LoggedEvent {
        seq: to_u64(seq),
        event: event.into(),
    })
}

pub(crate) fn decode_push(body: &[u8]) -> Result<pb::TaskPushNotificationConfig, StoreError> {
    pb::TaskPushNotificationConfig::decode(body)
        .map_err(|e| StoreError::Backend(format!("corrupt push config: {e}")))
}

/// An i128 nanosecond timestamp as a column value (saturating past year 2262).
pub(crate) fn saturate(ts: i128) -> i64 {
    i64::try_from(ts).unwrap_or(if ts < 0 { i64::MIN } else { i64::MAX })
}

/// A sequence number or turn as a column value.
pub(crate) fn to_i64(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Backend(format!("{v} does not fit a BIGINT column")))
}

/// A column value as a sequence number (negative values never get stored).
pub(crate) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A page size as a LIMIT (one more than asked, to tell whether more follow).
pub(crate) fn limit_plus_one(limit: usize) -> i64 {
    i64::try_from(limit)
        .unwrap_or(i64::MAX - 1)
        .saturating_add(1)
}

/// A count as a LIMIT.
pub(crate) fn limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// A backend failure.
pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// The counter changes a commit makes: (state, delta) for `task_counts` and
/// (context, state, delta) for `context_counts`, in a fixed order (so concurrent PostgreSQL
/// transactions lock counter rows in the same order and cannot deadlock on them).
pub(crate) struct CounterDeltas {
    pub(crate) states: Vec<(i32, i64)>,
    pub(crate) contexts: Vec<(String, i32, i64)>,
}

impl CounterDeltas {
    /// For a new task.
    pub(crate) fn created(row: &TaskRow) -> Self {
        Self {
            states: vec![(row.state, 1)],
            contexts: vec![(row.context_id.clone(), row.state, 1)],
        }
    }

    /// For a task that moved from (`old_context`, `old_state`) to the row's.
    pub(crate) fn updated(old_context: &str, old_state: i32, row: &TaskRow) -> Self {
        let mut states = Vec::new();
        if old_state != row.state {
            states = vec![(old_state, -1), (row.state, 1)];
            states.sort_unstable();
        }
        let mut contexts = Vec::new();
        if old_state != row.state || old_context != row.context_id {
            contexts = vec![
                (old_context.to_owned(), old_state, -1),
                (row.context_id.clone(), row.state, 1),
            ];
            contexts.sort_unstable();
        }
        Self { states, contexts }
    }
}

/// One bind value of a dynamically assembled query.
#[derive(Debug, Clone)]
pub(crate) enum Val {
    Str(String),
    I64(i64),
    I32(i32),
}

/// A ListTasks query: the SQL of the page and of the total, with their bind values.
pub(crate) struct ListSql {
    pub(crate) page: String,
    pub(crate) page_args: Vec<Val>,
    pub(crate) total: String,
    pub(crate) total_args: Vec<Val>,
}

/// Assembles the ListTasks SQL from fixed fragments (values are always bound). `pg` picks
/// `$n` placeholders, otherwise `?`.
pub(crate) fn list_sql(scope: &Scope, q: &trident_core::store::TaskQuery, pg: bool) -> ListSql {
    struct B {
        sql: String,
        args: Vec<Val>,
        pg: bool,
    }
    impl B {
        fn arg(&mut self, v: Val) -> String {
            self.args.push(v);
            if self.pg {
                format!("${}", self.args.len())
            } else {
                "?".to_owned()
            }
        }
        fn push(&mut self, s: &str) {
            self.sql.push_str(s);
        }
    }
    let filters = |b: &mut B, with_since: bool| {
        let t = b.arg(Val::Str(scope.tenant.to_string()));
        let o = b.arg(Val::Str(scope.owner.to_string()));
        b.push(&format!(" WHERE tenant = {t} AND owner = {o}"));
        if let Some(c) = &q.context_id {
            let p = b.arg(Val::Str(c.clone()));
            b.push(&format!(" AND context_id = {p}"));
        }
        if let Some(s) = q.state {
            let p = b.arg(Val::I32(s as i32));
            b.push(&format!(" AND state = {p}"));
        }
        if with_since && let Some(since) = q.updated_since {
            let p = b.arg(Val::I64(saturate(since)));
            b.push(&format!(" AND status_ts >= {p}"));
        }
    };

    let mut page = B {
        sql: "SELECT snapshot FROM tasks".to_owned(),
        args: Vec::new(),
        pg,
    };
    filters(&mut page, true);
    if let Some(c) = &q.after {
        let ts = saturate(c.timestamp);
        // The redundant `status_ts <= ts` is what an index range can use (PostgreSQL only
        // filters on the OR), so a deep page starts at the cursor instead of the top.
        let le = page.arg(Val::I64(ts));
        let a = page.arg(Val::I64(ts));
        let b = page.arg(Val::I64(ts));
        let i = page.arg(Val::Str(c.id.clone()));
        page.push(&format!(
            " AND status_ts <= {le} AND (status_ts < {a} OR (status_ts = {b} AND id > {i}))"
        ));
    }
    let l = page.arg(Val::I64(limit_plus_one(q.limit)));
    page.push(&format!(" ORDER BY status_ts DESC, id ASC LIMIT {l}"));

    // The total: from the counters, except with `updated_since`, which no counter covers:
    // then a count of the matching rows (O(matching rows), through the same indexes).
    let mut total = B {
        sql: String::new(),
        args: Vec::new(),
        pg,
    };
    if q.updated_since.is_some() {
        total.push("SELECT CAST(COUNT(*) AS BIGINT) FROM tasks");
        filters(&mut total, true);
    } else if q.context_id.is_some() {
        total.push("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM context_counts");
        filters(&mut total, false);
    } else {
        total.push("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM task_counts");
        filters(&mut total, false);
    }
    ListSql {
        page: page.sql,
        page_args: page.args,
        total: total.sql,
        total_args: total.args,
    }
}
