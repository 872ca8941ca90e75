//! Row encoding shared by both backends: records to columns and back.

use std::collections::BTreeMap;

use prost::Message;
use trident_core::store::{
    Lease, ListCursor, LoggedEvent, Scope, StoreError, TaskPage, TaskRecord, apply,
    events_continue, status_nanos,
};
use trident_proto as pb;

/// A task record as the columns of the `tasks` table, and its snapshot (the `snapshots` row)
/// when the commit stores one.
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
    /// The prost-encoded task, as of `last_seq`; `None` for an append.
    pub(crate) snapshot: Option<Vec<u8>>,
}

impl TaskRow {
    /// The row of `record`; with `snapshot`, its task encoded (O(task)), otherwise only the
    /// small columns (O(1)).
    pub(crate) fn encode(
        scope: &Scope,
        record: &TaskRecord,
        snapshot: bool,
    ) -> Result<Self, StoreError> {
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
            snapshot: snapshot.then(|| record.task.encode_to_vec()),
        })
    }
}

/// The row template of [`TaskStore::append_final`](trident_core::store::TaskStore::append_final):
/// the task's key, and the state and status timestamp `event` (checked: a status update to a
/// terminal state) gives it. Its other columns are placeholders, which the writer replaces
/// with the stored row's (context, turn), the next sequence number and no lease.
pub(crate) fn final_row(
    scope: &Scope,
    task_id: &str,
    event: &pb::StreamResponse,
) -> Result<TaskRow, StoreError> {
    let state = trident_core::store::final_state(event)?;
    let status_ts = match &event.payload {
        Some(pb::stream_response::Payload::StatusUpdate(u)) => u
            .status
            .as_ref()
            .and_then(|s| s.timestamp.as_ref())
            .map_or(0, |t| saturate(t.unix_nanos())),
        _ => 0,
    };
    Ok(TaskRow {
        tenant: scope.tenant.to_string(),
        owner: scope.owner.to_string(),
        id: task_id.to_owned(),
        context_id: String::new(),
        state: state as i32,
        status_ts,
        last_seq: 0,
        turn: 0,
        lease_node: None,
        lease_until: None,
        snapshot: None,
    })
}

/// Rebuilds a record from its columns: the snapshot with `events` (those after it, in order,
/// up to `last_seq`) applied.
pub(crate) fn decode_record(
    snapshot: &[u8],
    events: &[LoggedEvent],
    last_seq: i64,
    turn: i64,
    lease_node: Option<String>,
    lease_until: Option<i64>,
) -> Result<TaskRecord, StoreError> {
    Ok(TaskRecord {
        task: rebuild(snapshot, events)?,
        last_seq: to_u64(last_seq),
        turn: to_u64(turn),
        lease: lease_node.map(|node| Lease {
            node: node.into(),
            until_ms: lease_until.unwrap_or(0),
        }),
    })
}

/// A task from its snapshot and the events logged after it.
pub(crate) fn rebuild(snapshot: &[u8], events: &[LoggedEvent]) -> Result<pb::Task, StoreError> {
    let mut task = decode_task(snapshot)?;
    for e in events {
        apply(&mut task, &e.event);
    }
    Ok(task)
}

/// A page from the tasks of the first `limit` rows a list query fetched, whether it fetched
/// more (it asks for `limit + 1`), and the matching total.
pub(crate) fn page(tasks: Vec<pb::Task>, more: bool, total: i64) -> TaskPage {
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

/// One row of a list page: the task's id and `last_seq`, its snapshot's seq and body.
pub(crate) struct ListedRow {
    pub(crate) id: String,
    pub(crate) last_seq: u64,
    pub(crate) snapshot_seq: u64,
    pub(crate) snapshot: Vec<u8>,
}

/// The tasks of a list page: each row's snapshot with the events after it (read with
/// `log`, only for the rows that have any) applied.
pub(crate) async fn rebuild_page(
    log: &dyn trident_core::store::EventLog,
    scope: &Scope,
    rows: Vec<ListedRow>,
) -> Result<Vec<pb::Task>, StoreError> {
    let mut tasks = Vec::with_capacity(rows.len());
    for row in rows {
        let events =
            events_after_snapshot(log, scope, &row.id, row.snapshot_seq, row.last_seq).await?;
        tasks.push(rebuild(&row.snapshot, &events)?);
    }
    Ok(tasks)
}

/// The events of task `id` with a sequence number in `(snapshot_seq, last_seq]`. The log is
/// append-only and gapless, so reading them after reading `last_seq` needs no transaction.
pub(crate) async fn events_after_snapshot(
    log: &dyn trident_core::store::EventLog,
    scope: &Scope,
    id: &str,
    snapshot_seq: u64,
    last_seq: u64,
) -> Result<Vec<LoggedEvent>, StoreError> {
    if last_seq <= snapshot_seq {
        return Ok(Vec::new());
    }
    let n = usize::try_from(last_seq - snapshot_seq).unwrap_or(usize::MAX);
    let mut events = log.read(scope, id, snapshot_seq, n).await?;
    events.retain(|e| e.seq <= last_seq);
    if !events_continue(snapshot_seq, last_seq, &events) {
        return Err(StoreError::Backend(format!(
            "task {id}: the log does not hold events {} to {last_seq}",
            snapshot_seq + 1
        )));
    }
    Ok(events)
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

/// A commit's events as one row of PostgreSQL's `event_blocks` (migration 5): the events
/// `first..=last`, their prost-encoded bodies in order, each after its length as 4
/// big-endian bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventBlock {
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) body: Vec<u8>,
}

impl EventBlock {
    /// The block of `events` (consecutive, as a commit appends them); `None` for none.
    pub(crate) fn encode(events: &[LoggedEvent]) -> Result<Option<Self>, StoreError> {
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return Ok(None);
        };
        let mut body = Vec::with_capacity(events.iter().map(|e| 4 + e.event.encoded_len()).sum());
        for e in events {
            let len = e.event.encoded_len();
            let len = u32::try_from(len).map_err(|_| {
                StoreError::Backend(format!("an event of {len} bytes is too big to log"))
            })?;
            body.extend_from_slice(&len.to_be_bytes());
            e.event.encode_raw(&mut body);
        }
        Ok(Some(Self {
            first: to_i64(first.seq)?,
            last: to_i64(last.seq)?,
            body,
        }))
    }

    /// The block of one event, `seq`, already encoded.
    pub(crate) fn single(seq: i64, event: &[u8]) -> Result<Self, StoreError> {
        let len = u32::try_from(event.len()).map_err(|_| {
            StoreError::Backend(format!(
                "an event of {} bytes is too big to log",
                event.len()
            ))
        })?;
        let mut body = Vec::with_capacity(4 + event.len());
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(event);
        Ok(Self {
            first: seq,
            last: seq,
            body,
        })
    }
}

/// The events of the block `first_seq..=last_seq` in `(after, upto]` (only those are
/// decoded). A block that does not split into exactly its events is corrupt.
pub(crate) fn decode_block(
    (first_seq, last_seq): (i64, i64),
    body: &[u8],
    (after, upto): (u64, u64),
    out: &mut Vec<LoggedEvent>,
) -> Result<(), StoreError> {
    let corrupt = || StoreError::Backend(format!("corrupt event block at {first_seq}"));
    let mut seq = first_seq;
    let mut rest = body;
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(corrupt)?;
        let len = usize::try_from(u32::from_be_bytes(*len)).map_err(|_| corrupt())?;
        if tail.len() < len {
            return Err(corrupt());
        }
        let (event, tail) = tail.split_at(len);
        if to_u64(seq) > after && to_u64(seq) <= upto {
            out.push(decode_event(seq, event)?);
        }
        seq = seq.checked_add(1).ok_or_else(corrupt)?;
        rest = tail;
    }
    if seq == first_seq || seq - 1 != last_seq {
        return Err(corrupt());
    }
    Ok(())
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

/// The counter changes of a batch's successful commits, summed per counter row, so that a
/// burst of commits touching one row (every task created in one state, say) updates it once
/// instead of once per commit. Each backend's writer writes it inside the batch's
/// transaction, just before `COMMIT`: the counters commit atomically with the tasks they
/// count, and a request rolled back to its savepoint never reaches the tally.
///
/// Tenant and owner borrow from the batch's requests; the maps are ordered, so the rows are
/// written in key order (concurrent PostgreSQL transactions then lock counter rows in one
/// order and cannot deadlock on them).
#[derive(Debug, Default)]
pub(crate) struct Tally<'a> {
    /// (tenant, owner, state) → delta, for `task_counts`.
    pub(crate) states: BTreeMap<(&'a str, &'a str, i32), i64>,
    /// (tenant, owner, context, state) → delta, for `context_counts`.
    pub(crate) contexts: BTreeMap<(&'a str, &'a str, String, i32), i64>,
}

impl<'a> Tally<'a> {
    /// Adds the changes `deltas` of a successful commit of `row`.
    pub(crate) fn add(&mut self, row: &'a TaskRow, deltas: CounterDeltas) {
        for (state, delta) in deltas.states {
            *self
                .states
                .entry((&row.tenant, &row.owner, state))
                .or_default() += delta;
        }
        for (context, state, delta) in deltas.contexts {
            *self
                .contexts
                .entry((&row.tenant, &row.owner, context, state))
                .or_default() += delta;
        }
    }

    /// Adds the changes summed in `other`.
    pub(crate) fn merge(&mut self, other: Self) {
        for (key, delta) in other.states {
            *self.states.entry(key).or_default() += delta;
        }
        for (key, delta) in other.contexts {
            *self.contexts.entry(key).or_default() += delta;
        }
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

/// Assembles the ListTasks SQL from fixed fragments (values are always bound, as `$n`, which
/// both backends take).
pub(crate) fn list_sql(scope: &Scope, q: &trident_core::store::TaskQuery) -> ListSql {
    struct B {
        sql: String,
        args: Vec<Val>,
    }
    impl B {
        fn arg(&mut self, v: Val) -> String {
            self.args.push(v);
            format!("${}", self.args.len())
        }
        fn push(&mut self, s: &str) {
            self.sql.push_str(s);
        }
    }
    // `t` qualifies the columns of `tasks` (the page joins `snapshots`).
    let filters = |b: &mut B, t_: &str, with_since: bool| {
        let t = b.arg(Val::Str(scope.tenant.to_string()));
        let o = b.arg(Val::Str(scope.owner.to_string()));
        b.push(&format!(" WHERE {t_}tenant = {t} AND {t_}owner = {o}"));
        if let Some(c) = &q.context_id {
            let p = b.arg(Val::Str(c.clone()));
            b.push(&format!(" AND {t_}context_id = {p}"));
        }
        if let Some(s) = q.state {
            let p = b.arg(Val::I32(s as i32));
            b.push(&format!(" AND {t_}state = {p}"));
        }
        if with_since && let Some(since) = q.updated_since {
            let p = b.arg(Val::I64(saturate(since)));
            b.push(&format!(" AND {t_}status_ts >= {p}"));
        }
    };

    // Columns: the task's id and last_seq, its snapshot's seq and body (the events between
    // are read separately, for the tasks that have any).
    let mut page = B {
        sql: "SELECT t.id, t.last_seq, s.seq, s.body FROM tasks t JOIN snapshots s \
              ON s.tenant = t.tenant AND s.owner = t.owner AND s.id = t.id"
            .to_owned(),
        args: Vec::new(),
    };
    filters(&mut page, "t.", true);
    if let Some(c) = &q.after {
        let ts = saturate(c.timestamp);
        // The redundant `status_ts <= ts` is what an index range can use (PostgreSQL only
        // filters on the OR), so a deep page starts at the cursor instead of the top.
        let le = page.arg(Val::I64(ts));
        let a = page.arg(Val::I64(ts));
        let b = page.arg(Val::I64(ts));
        let i = page.arg(Val::Str(c.id.clone()));
        page.push(&format!(
            " AND t.status_ts <= {le} AND (t.status_ts < {a} OR (t.status_ts = {b} AND t.id > {i}))"
        ));
    }
    let l = page.arg(Val::I64(limit_plus_one(q.limit)));
    page.push(&format!(" ORDER BY t.status_ts DESC, t.id ASC LIMIT {l}"));

    // The total: from the counters, except with `updated_since`, which no counter covers:
    // then a count of the matching rows (O(matching rows), through the same indexes).
    let mut total = B {
        sql: String::new(),
        args: Vec::new(),
    };
    if q.updated_since.is_some() {
        total.push("SELECT CAST(COUNT(*) AS BIGINT) FROM tasks");
        filters(&mut total, "", true);
    } else if q.context_id.is_some() {
        total.push("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM context_counts");
        filters(&mut total, "", false);
    } else {
        total.push("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM task_counts");
        filters(&mut total, "", false);
    }
    ListSql {
        page: page.sql,
        page_args: page.args,
        total: total.sql,
        total_args: total.args,
    }
}
