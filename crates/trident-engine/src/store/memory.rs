//! The in-memory store: sharded hash maps, no global lock, and a retention policy that
//! evicts the oldest terminal tasks so a long-running process stays bounded.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trident_proto as pb;

use super::shard::{ShardExt, Sharded, lock};
use super::{
    ConfigCount, EventLog, Generation, ListCursor, LoggedEvent, PushConfigStore, Scope,
    SharedEvent, StoreError, TaskPage, TaskQuery, TaskRecord, TaskStore,
};

/// A task's push delivery cursor and who holds it.
#[derive(Debug, Default)]
struct Delivery {
    delivered: u64,
    node: Option<Box<str>>,
    until_ms: i64,
}

/// How a stored task's body is held.
#[derive(Debug)]
enum Body {
    /// The task as of `seq`; the events after it are in the log.
    Open { snapshot: Box<pb::Task>, seq: u64 },
    /// The task as of the record's `last_seq`, protobuf-encoded: a terminal task nobody
    /// executes, whose log is packed too. About a quarter of the decoded form's memory.
    Packed(Box<[u8]>),
}

impl Body {
    /// `record.task` as the snapshot as of `record.last_seq`.
    fn open(record: &TaskRecord) -> Self {
        Body::Open {
            snapshot: Box::new(record.task.clone()),
            seq: record.last_seq,
        }
    }

    /// `record.task`, encoded.
    fn packed(record: &TaskRecord) -> Self {
        use prost::Message as _;
        Body::Packed(record.task.encode_to_vec().into_boxed_slice())
    }
}

/// A task's event log: sequence numbers start at 1 without gaps, so seq n is at index n - 1
/// and the log's length is the task's `last_seq`.
#[derive(Debug)]
enum Log {
    Open(Vec<LoggedEvent>),
    /// A terminal task's log.
    Packed {
        /// The events, each length-delimited protobuf.
        bytes: Box<[u8]>,
        /// Where event `k * PACK_STRIDE + 1` starts, for each `k`: a read from any position
        /// skips at most `PACK_STRIDE - 1` events (by their length prefixes, without decoding
        /// them), so reading a long log in batches costs O(log), not O(log²).
        index: Box<[usize]>,
    },
}

/// Events between two entries of a packed log's index (a word per this many events).
const PACK_STRIDE: usize = 64;

impl Default for Log {
    fn default() -> Self {
        Self::Open(Vec::new())
    }
}

impl Log {
    /// Packs `events`.
    fn pack(events: &[LoggedEvent]) -> Self {
        // The engine's events carry their encoded size (it measured each as it committed
        // it), so the buffer is reserved exactly at no cost (no `into_boxed_slice` trim), and
        // the encoding measures nothing at the top level; an event held encoded (a new task
        // as submitted) is copied as it is.
        let len = events.iter().map(|e| e.event.length_delimited_len()).sum();
        let mut buf = Vec::with_capacity(len);
        let mut index = Vec::with_capacity(events.len().div_ceil(PACK_STRIDE));
        for (i, e) in events.iter().enumerate() {
            if i % PACK_STRIDE == 0 {
                index.push(buf.len());
            }
            e.event.encode_length_delimited(&mut buf);
        }
        Self::Packed {
            bytes: buf.into_boxed_slice(),
            index: index.into_boxed_slice(),
        }
    }

    /// The events after seq `after` (at most `limit`).
    fn read(&self, after: u64, limit: usize) -> Vec<LoggedEvent> {
        match self {
            Self::Open(log) => {
                let start = usize::try_from(after).unwrap_or(usize::MAX).min(log.len());
                log[start..].iter().take(limit).cloned().collect()
            }
            Self::Packed { bytes, index } => {
                use prost::Message as _;
                let k = usize::try_from(after).unwrap_or(usize::MAX) / PACK_STRIDE;
                let Some(&start) = index.get(k) else {
                    return Vec::new();
                };
                let mut buf = &bytes[start..];
                let mut seq = (k * PACK_STRIDE) as u64;
                while seq < after && !buf.is_empty() {
                    match prost::decode_length_delimiter(&mut buf) {
                        Ok(n) if n <= buf.len() => buf = &buf[n..],
                        _ => {
                            tracing::error!(seq, "undecodable packed event in the memory store");
                            return Vec::new();
                        }
                    }
                    seq += 1;
                }
                let mut out = Vec::new();
                while !buf.is_empty() && out.len() < limit {
                    seq += 1;
                    let Ok(event) = pb::StreamResponse::decode_length_delimited(&mut buf) else {
                        tracing::error!(seq, "undecodable packed event in the memory store");
                        break;
                    };
                    out.push(LoggedEvent {
                        seq,
                        event: event.into(),
                    });
                }
                out
            }
        }
    }

    /// The events as a vector, unpacking a packed log.
    fn open(&mut self) -> &mut Vec<LoggedEvent> {
        if let Self::Packed { .. } = self {
            *self = Self::Open(self.read(0, usize::MAX));
        }
        match self {
            Self::Open(log) => log,
            Self::Packed { .. } => unreachable!("unpacked above"),
        }
    }
}

/// A stored task: its body and what later appends changed (the events themselves are in the
/// log).
#[derive(Debug)]
struct Stored {
    body: Body,
    /// The task's event log.
    log: Log,
    last_seq: u64,
    turn: u64,
    lease: Option<super::Lease>,
    /// The current task's list keys.
    state: pb::TaskState,
    context_id: String,
    status_ts: i128,
    /// The task's mark in the queue of ended tasks (0 while it is not terminal).
    ended: u64,
}

impl Stored {
    /// A new task stored from `record` with its first `events`; `packs` keeps it encoded at
    /// once (see [`MemoryStore::write`]), built from the record without a copy of the task.
    fn new(record: &TaskRecord, events: &[LoggedEvent], packs: bool) -> Self {
        let (body, log) = if packs {
            (Body::packed(record), Log::pack(events))
        } else {
            (Body::open(record), Log::Open(events.to_vec()))
        };
        Self {
            ended: 0,
            log,
            body,
            last_seq: record.last_seq,
            turn: record.turn,
            lease: record.lease.clone(),
            state: record.task.state(),
            context_id: record.task.context_id.clone(),
            status_ts: super::status_nanos(&record.task),
        }
    }

    /// Takes the small fields of `record` (an append: the snapshot stays).
    fn update(&mut self, record: &TaskRecord) {
        self.last_seq = record.last_seq;
        self.turn = record.turn;
        self.lease.clone_from(&record.lease);
        self.state = record.task.state();
        if self.context_id != record.task.context_id {
            self.context_id.clone_from(&record.task.context_id);
        }
        self.status_ts = super::status_nanos(&record.task);
    }

    fn matches(&self, query: &TaskQuery) -> bool {
        query
            .context_id
            .as_ref()
            .is_none_or(|c| &self.context_id == c)
            && query.state.is_none_or(|s| self.state == s)
            && query.updated_since.is_none_or(|t| self.status_ts >= t)
    }
}

/// How many tasks a [`MemoryStore`] holds, and for how long it keeps the ended ones.
///
/// Only terminal tasks (`COMPLETED`, `FAILED`, `CANCELED`, `REJECTED`) are ever evicted,
/// oldest end first, and only once nothing still works on them: no lease (no executor), no
/// push notification left to deliver, and no stream still reading its log (no
/// [`EventLog::hold`]). An evicted task is gone with its event log, push
/// configurations and delivery cursor; reads answer as for a task that never existed.
///
/// `max_tasks` is a bound on the tasks held, not an admission limit: when every held task is
/// still in progress or waiting for its client, new tasks are still accepted (the store never
/// fails a request, nor drops a task somebody can still continue), a warning is logged, and
/// the store evicts down to the bound as tasks end. What bounds unfinished tasks is the
/// engine's admission limits and the clients.
///
/// ```
/// use std::time::Duration;
/// use trident_engine::store::{MemoryStore, Retention};
///
/// let store = MemoryStore::with_retention(Retention {
///     max_tasks: Some(10_000),
///     terminal_ttl: Some(Duration::from_secs(3600)),
/// });
/// # drop(store);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Tasks held at most (see above); `None` holds every task.
    pub max_tasks: Option<usize>,
    /// How long a task is kept after it reached a terminal state; `None` keeps it until the
    /// bound needs its place.
    pub terminal_ttl: Option<Duration>,
}

impl Retention {
    /// The default bound on held tasks.
    pub const DEFAULT_MAX_TASKS: usize = 100_000;

    /// Keeps every task until the process ends.
    pub const fn unlimited() -> Self {
        Self {
            max_tasks: None,
            terminal_ttl: None,
        }
    }
}

impl Retention {
    /// The retention a `memory?…` store spec's parameters name: `max_tasks=N` (tasks held
    /// at most) and `terminal_ttl=SECONDS` (how long an ended task is kept), `&`-separated,
    /// `0` or `none` lifting either limit; the default for those not given.
    ///
    /// ```
    /// use std::time::Duration;
    /// use trident_engine::store::Retention;
    ///
    /// let r = Retention::from_params("max_tasks=none&terminal_ttl=60").unwrap();
    /// assert_eq!((r.max_tasks, r.terminal_ttl), (None, Some(Duration::from_secs(60))));
    /// assert!(Retention::from_params("ttl=5").is_err());
    /// ```
    pub fn from_params(params: &str) -> Result<Self, MemoryParamError> {
        let mut retention = Self::default();
        for kv in params.split('&').filter(|kv| !kv.is_empty()) {
            let bad = || MemoryParamError {
                param: kv.to_owned(),
            };
            let (key, value) = kv.split_once('=').ok_or_else(bad)?;
            let number = match value {
                "none" => 0,
                v => v.parse::<u64>().map_err(|_| bad())?,
            };
            let limit = (number > 0).then_some(number);
            match key {
                "max_tasks" => {
                    retention.max_tasks = limit
                        .map(|n| usize::try_from(n).map_err(|_| bad()))
                        .transpose()?;
                }
                "terminal_ttl" => retention.terminal_ttl = limit.map(Duration::from_secs),
                _ => return Err(bad()),
            }
        }
        Ok(retention)
    }
}

/// A `memory?…` store parameter that is unknown or has a bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad memory store parameter {param:?}: expected max_tasks=N (tasks held at most; 0 or \
     \"none\" holds every task) and/or terminal_ttl=SECONDS (how long an ended task is kept; \
     0 or \"none\" for no age limit), e.g. \"memory?max_tasks=100000&terminal_ttl=3600\""
)]
pub struct MemoryParamError {
    param: String,
}

impl MemoryParamError {
    /// The parameter refused, as the spec gave it (`key=value`).
    pub fn param(&self) -> &str {
        &self.param
    }
}

impl Default for Retention {
    /// At most [`Retention::DEFAULT_MAX_TASKS`] tasks, no age limit.
    fn default() -> Self {
        Self {
            max_tasks: Some(Self::DEFAULT_MAX_TASKS),
            terminal_ttl: None,
        }
    }
}

/// A clock in milliseconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// A task that reached a terminal state, in the order they did.
struct Ended {
    mark: u64,
    at_ms: i64,
    scope: Scope,
    /// The task's key in the store's map, shared.
    id: Arc<str>,
}

/// Tasks, event logs and push configurations in process memory. Nothing survives a restart.
///
/// A task is kept as its last snapshot plus the events logged after it, like the durable
/// stores keep it: an [`TaskStore::append`] adds events without copying the task, and reads
/// apply the events after the snapshot to a copy of it.
///
/// Terminal tasks are evicted by the store's [`Retention`] ([`Retention::default`] unless
/// built with [`MemoryStore::with_retention`]).
pub struct MemoryStore {
    tasks: Sharded<Stored>,
    /// Streams reading a task's log ([`EventLog::hold`]): a held task is not evicted.
    holds: Arc<Sharded<usize>>,
    push: Sharded<BTreeMap<String, (pb::TaskPushNotificationConfig, Generation)>>,
    deliveries: Sharded<Delivery>,
    retention: Retention,
    clock: Clock,
    /// Tasks held.
    held: AtomicUsize,
    /// Terminal tasks, oldest end first (entries whose mark no longer matches are stale).
    ended: Mutex<VecDeque<Ended>>,
    next_mark: AtomicU64,
    /// When the oldest ended task expires (`i64::MAX` when none can).
    next_expiry_ms: AtomicI64,
    /// Whether the bound is exceeded by tasks that cannot be evicted (warned once per episode).
    over: AtomicBool,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store with the default [`Retention`].
    pub fn new() -> Self {
        Self::with_retention(Retention::default())
    }

    /// An empty store that keeps tasks as `retention` says.
    pub fn with_retention(retention: Retention) -> Self {
        Self {
            tasks: Sharded::new(),
            holds: Arc::new(Sharded::new()),
            push: Sharded::new(),
            deliveries: Sharded::new(),
            retention,
            clock: Arc::new(super::now_ms),
            held: AtomicUsize::new(0),
            ended: Mutex::new(VecDeque::new()),
            next_mark: AtomicU64::new(1),
            next_expiry_ms: AtomicI64::new(i64::MAX),
            over: AtomicBool::new(false),
        }
    }

    /// Reads time from `clock` (milliseconds since the epoch) for the terminal tasks' age:
    /// tests use a clock they move themselves.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The store's retention policy.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// Number of tasks held.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Queues a task that just reached a terminal state (the caller holds its shard).
    fn note_ended(&self, scope: &Scope, id: &Arc<str>, stored: &mut Stored) {
        if self.retention == Retention::unlimited() {
            return;
        }
        let mark = self.next_mark.fetch_add(1, Ordering::Relaxed);
        stored.ended = mark;
        // Only an age limit reads when a task ended: without one, the clock is not read.
        let ttl = self.ttl_ms();
        let at_ms = if ttl.is_some() { (self.clock)() } else { 0 };
        let mut ended = lock(&self.ended);
        if ended.is_empty()
            && let Some(ttl) = ttl
        {
            self.next_expiry_ms
                .store(at_ms.saturating_add(ttl), Ordering::Relaxed);
        }
        ended.push_back(Ended {
            mark,
            at_ms,
            scope: scope.clone(),
            id: id.clone(),
        });
    }

    fn ttl_ms(&self) -> Option<i64> {
        self.retention
            .terminal_ttl
            .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX))
    }

    /// Evicts what the retention policy says must go: ended tasks older than the TTL, then the
    /// oldest ended tasks while more than `max_tasks` are held. Two atomic loads when there
    /// is nothing to do.
    fn enforce(&self) {
        let over = |held: usize| self.retention.max_tasks.is_some_and(|max| held > max);
        let now = (self.clock)();
        let expired = now >= self.next_expiry_ms.load(Ordering::Relaxed);
        if !expired && !over(self.held()) {
            return;
        }
        let ttl = self.ttl_ms();
        // Entries put back (still being delivered) are looked at once per call.
        let mut budget = lock(&self.ended).len();
        let mut kept = Vec::new();
        while budget > 0 {
            budget -= 1;
            let entry = {
                let mut ended = lock(&self.ended);
                let due = ended.front().is_some_and(|e| {
                    over(self.held()) || ttl.is_some_and(|t| now >= e.at_ms.saturating_add(t))
                });
                if !due {
                    break;
                }
                ended.pop_front()
            };
            let Some(entry) = entry else { break };
            if self.evict(&entry) == Evicted::Busy {
                kept.push(entry);
            }
        }
        let busy = !kept.is_empty();
        let mut ended = lock(&self.ended);
        // Tasks still being delivered keep their place at the front: they go first once done.
        for entry in kept.into_iter().rev() {
            ended.push_front(entry);
        }
        let mut next = match (ended.front(), ttl) {
            (Some(e), Some(t)) => e.at_ms.saturating_add(t),
            _ => i64::MAX,
        };
        if busy {
            // Look again in a second rather than at every call.
            next = next.max(now.saturating_add(1000));
        }
        self.next_expiry_ms.store(next, Ordering::Relaxed);
        drop(ended);
        let still_over = over(self.held());
        if still_over && !self.over.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                held = self.held(),
                max_tasks = self.retention.max_tasks,
                "the memory store holds more tasks than its bound: the others are unfinished \
                 or still being delivered, and are kept until they end"
            );
        } else if !still_over {
            self.over.store(false, Ordering::Relaxed);
        }
    }

    /// Removes an ended task with its log, push configurations and delivery cursor, unless it
    /// changed since it was queued or somebody still works on it.
    fn evict(&self, entry: &Ended) -> Evicted {
        let (scope, id) = (&entry.scope, &*entry.id);
        // Lock order: the task's shard, then its configurations' and cursor's.
        let mut tasks = self.tasks.shard(id);
        let Some(stored) = tasks.get_in(scope, id) else {
            return Evicted::Stale;
        };
        if stored.ended != entry.mark {
            return Evicted::Stale;
        }
        if stored.lease.is_some()
            || self.delivering(scope, id, stored.last_seq)
            || self.holds.shard(id).get_in(scope, id).is_some()
        {
            return Evicted::Busy;
        }
        tasks.remove_in(scope, id);
        self.held.fetch_sub(1, Ordering::Relaxed);
        self.push.shard(id).remove_in(scope, id);
        self.deliveries.shard(id).remove_in(scope, id);
        Evicted::Gone
    }

    /// Whether push notifications of the task are still to be sent: it has configurations, and
    /// its cursor is behind its log or claimed by a live worker.
    fn delivering(&self, scope: &Scope, id: &str, last_seq: u64) -> bool {
        let configured = self
            .push
            .shard(id)
            .get_in(scope, id)
            .is_some_and(|c| !c.is_empty());
        configured
            && self
                .deliveries
                .shard(id)
                .get_in(scope, id)
                .is_some_and(|d| {
                    d.delivered < last_seq || (d.node.is_some() && d.until_ms >= (self.clock)())
                })
    }

    /// Queues a task that just became terminal, or takes one that no longer is out of the queue.
    fn settled(&self, scope: &Scope, id: &Arc<str>, stored: &mut Stored) {
        match (stored.state.is_terminal(), stored.ended) {
            (true, 0) => self.note_ended(scope, id, stored),
            (false, mark) if mark != 0 => stored.ended = 0,
            _ => {}
        }
    }

    /// Checks and performs a commit; `snapshot` stores `record.task` as the task's snapshot.
    fn write(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
        snapshot: bool,
    ) -> Result<(), StoreError> {
        let id = record.task.id.as_str();
        let mut tasks = self.tasks.shard(id);
        let slot = tasks.slot(scope, id);
        let stored = match (&slot, expected_seq) {
            (Entry::Occupied(_), None) => return Err(StoreError::AlreadyExists),
            (Entry::Vacant(_), Some(_)) => return Err(StoreError::NotFound),
            (Entry::Occupied(o), Some(seq)) if o.get().last_seq != seq => {
                return Err(StoreError::Conflict);
            }
            (_, seq) => seq.unwrap_or(0),
        };
        if !super::events_continue(stored, record.last_seq, events) {
            return Err(StoreError::Conflict);
        }
        let stored_seq = stored;
        // A task nothing will change any more (as a rule) is kept encoded: see below.
        let packs = record.task.state().is_terminal() && record.lease.is_none();
        let (key, stored) = match slot {
            Entry::Occupied(o) => (o.key().clone(), o.into_mut()),
            Entry::Vacant(v) => {
                // A new task: its log is `events`, its body the record (encoded at once when
                // it packs).
                self.held.fetch_add(1, Ordering::Relaxed);
                let key = v.key().clone();
                let stored = v.insert(Stored::new(record, events, packs));
                self.settled(scope, &key, stored);
                drop(tasks);
                self.enforce();
                return Ok(());
            }
        };
        self.update_stored(scope, &key, stored, stored_seq, record, events, snapshot)?;
        drop(tasks);
        self.enforce();
        Ok(())
    }

    /// The write of a commit to a stored task whose `last_seq` is `stored_seq` (checked):
    /// appends `events`, takes `record`'s small fields and, with `snapshot`, its task.
    #[allow(clippy::too_many_arguments)]
    fn update_stored(
        &self,
        scope: &Scope,
        id: &Arc<str>,
        stored: &mut Stored,
        stored_seq: u64,
        record: &TaskRecord,
        events: &[LoggedEvent],
        snapshot: bool,
    ) -> Result<(), StoreError> {
        let packs = record.task.state().is_terminal() && record.lease.is_none();
        if !events.is_empty() {
            let log = stored.log.open();
            if log.last().map_or(0, |e| e.seq) != stored_seq {
                return Err(StoreError::Conflict);
            }
            log.extend_from_slice(events);
        }
        // (A snapshot the packing below replaces at once is not worth a copy of the task.)
        if snapshot && !packs {
            stored.body = Body::open(record);
        }
        stored.update(record);
        self.settled(scope, id, stored);
        if packs {
            // Nothing will change it any more (as a rule): keep it encoded.
            stored.body = Body::packed(record);
            if let Log::Open(events) = &stored.log {
                stored.log = Log::pack(events);
            }
        } else if let Body::Packed(_) = stored.body {
            // Changed after all: `record.task` is the current task.
            stored.body = Body::open(record);
        }
        Ok(())
    }

    /// [`TaskStore::append_final`]: under the task's shard lock, so nothing commits between
    /// reading the task's end and appending there.
    fn write_final(
        &self,
        scope: &Scope,
        id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        super::final_state(event)?;
        let mut tasks = self.tasks.shard(id);
        let key = tasks
            .get(scope)
            .and_then(|ids| ids.get_key_value(id))
            .map(|(key, _)| key.clone())
            .ok_or(StoreError::NotFound)?;
        let stored = tasks.get_mut_in(scope, id).ok_or(StoreError::NotFound)?;
        if stored.state.is_terminal() {
            return Ok(None);
        }
        let mut record = Self::record_of(stored, id).ok_or_else(|| {
            StoreError::Backend(format!("task {id} cannot be decoded in the memory store"))
        })?;
        let stored_seq = record.last_seq;
        super::apply(&mut record.task, event);
        record.last_seq += 1;
        record.lease = None;
        let logged = [LoggedEvent {
            seq: record.last_seq,
            event: SharedEvent::measured(event.clone()),
        }];
        self.update_stored(scope, &key, stored, stored_seq, &record, &logged, true)?;
        drop(tasks);
        self.enforce();
        Ok(Some(record.last_seq))
    }

    /// The current record of a task: its snapshot with the events after it applied.
    fn materialise(&self, scope: &Scope, id: &str) -> Option<TaskRecord> {
        let tasks = self.tasks.shard(id);
        let stored = tasks.get_in(scope, id)?;
        Self::record_of(stored, id)
    }

    /// The current record of a stored task.
    fn record_of(stored: &Stored, id: &str) -> Option<TaskRecord> {
        let task = match &stored.body {
            Body::Packed(bytes) => {
                use prost::Message as _;
                match pb::Task::decode(&bytes[..]) {
                    Ok(task) => task,
                    Err(e) => {
                        tracing::error!(
                            task = id,
                            "undecodable packed task in the memory store: {e}"
                        );
                        return None;
                    }
                }
            }
            Body::Open { snapshot, seq } => {
                let mut task = pb::Task::clone(snapshot);
                if stored.last_seq > *seq {
                    let count = usize::try_from(stored.last_seq - seq).unwrap_or(usize::MAX);
                    for e in stored.log.read(*seq, count) {
                        super::apply(&mut task, &e.event);
                    }
                }
                task
            }
        };
        Some(TaskRecord {
            task,
            last_seq: stored.last_seq,
            turn: stored.turn,
            lease: stored.lease.clone(),
        })
    }
}

#[async_trait::async_trait]
impl TaskStore for MemoryStore {
    async fn commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.write(scope, record, expected_seq, events, true)
    }

    async fn append(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.write(scope, record, Some(expected_seq), events, false)
    }

    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        self.write_final(scope, task_id, event)
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.enforce();
        Ok(self.materialise(scope, id))
    }

    /// A scan of every shard's list keys: O(tasks) per page, then the page's tasks rebuilt.
    /// Fine for tests and small deployments; the durable stores use an index.
    ///
    /// The next page starts after the last task considered for this one, even if retention
    /// evicted it meanwhile: paging across evictions returns no task twice, and only tasks
    /// that exist.
    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.enforce();
        let mut hits: Vec<(i128, Arc<str>)> = Vec::new();
        let mut total = 0;
        for shard in self.tasks.shards() {
            for (id, stored) in shard.get(scope).into_iter().flat_map(|ids| ids.iter()) {
                if !stored.matches(query) {
                    continue;
                }
                total += 1;
                if query
                    .after
                    .as_ref()
                    .is_none_or(|c| c.precedes_key(stored.status_ts, id))
                {
                    hits.push((stored.status_ts, id.clone()));
                }
            }
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let more = hits.len() > query.limit;
        hits.truncate(query.limit);
        let tasks: Vec<pb::Task> = hits
            .iter()
            .filter_map(|(_, id)| self.materialise(scope, id).map(|r| r.task))
            .collect();
        let next = if more {
            hits.last().map(|(timestamp, id)| ListCursor {
                timestamp: *timestamp,
                id: id.to_string(),
            })
        } else {
            None
        };
        Ok(TaskPage { tasks, total, next })
    }

    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError> {
        let mut renewed = 0;
        for mut shard in self.tasks.shards() {
            for stored in shard.values_mut().flat_map(|ids| ids.values_mut()) {
                if let Some(lease) = stored.lease.as_mut().filter(|l| &*l.node == node) {
                    lease.until_ms = until_ms;
                    renewed += 1;
                }
            }
        }
        Ok(renewed)
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        let mut found = Vec::new();
        for shard in self.tasks.shards() {
            for (scope, ids) in shard.iter() {
                for (id, stored) in ids {
                    if found.len() < limit
                        && stored
                            .lease
                            .as_ref()
                            .is_some_and(|l| l.until_ms < before_ms)
                    {
                        found.push((scope.clone(), id.to_string()));
                    }
                }
            }
        }
        Ok(found)
    }
}

#[async_trait::async_trait]
impl EventLog for MemoryStore {
    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let shard = self.tasks.shard(task_id);
        Ok(shard
            .get_in(scope, task_id)
            .map_or_else(Vec::new, |stored| stored.log.read(after, limit)))
    }

    fn hold(&self, scope: &Scope, task_id: &str) -> Option<super::LogHold> {
        if self.retention == Retention::unlimited() {
            return None;
        }
        *self.holds.shard(task_id).slot(scope, task_id).or_insert(0) += 1;
        Some(Box::new(Hold {
            holds: self.holds.clone(),
            scope: scope.clone(),
            id: task_id.into(),
        }))
    }
}

/// One stream's hold on a task of a [`MemoryStore`] (see [`EventLog::hold`]).
struct Hold {
    holds: Arc<Sharded<usize>>,
    scope: Scope,
    id: Box<str>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut shard = self.holds.shard(&self.id);
        let last = match shard.get_mut_in(&self.scope, &self.id) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => true,
            None => false,
        };
        if last {
            shard.remove_in(&self.scope, &self.id);
        }
    }
}

#[async_trait::async_trait]
impl PushConfigStore for MemoryStore {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), StoreError> {
        self.push
            .shard(&config.task_id)
            .slot(scope, &config.task_id)
            .or_default()
            .insert(config.id.clone(), (config.clone(), generation));
        Ok(())
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<(pb::TaskPushNotificationConfig, Generation)>, StoreError> {
        Ok(self
            .push
            .shard(task_id)
            .get_in(scope, task_id)
            .and_then(|m| m.get(id).cloned()))
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        let shard = self.push.shard(task_id);
        let Some(configs) = shard.get_in(scope, task_id) else {
            return Ok((Vec::new(), false));
        };
        let mut iter = configs
            .range::<str, _>((
                after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
                std::ops::Bound::Unbounded,
            ))
            .map(|(_, (c, _))| c.clone());
        let page: Vec<_> = iter.by_ref().take(limit).collect();
        Ok((page, iter.next().is_some()))
    }

    async fn delete(&self, scope: &Scope, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut shard = self.push.shard(task_id);
        Ok(shard
            .get_mut_in(scope, task_id)
            .is_some_and(|m| m.remove(id).is_some()))
    }

    async fn count(&self, scope: &Scope, task_id: &str) -> Result<ConfigCount, StoreError> {
        let task = self
            .push
            .shard(task_id)
            .get_in(scope, task_id)
            .map_or(0, BTreeMap::len);
        // The principal's configured tasks, then their states (lock order: never a task's
        // shard while holding a configurations' shard).
        let mut configured = Vec::new();
        for shard in self.push.shards() {
            if let Some(tasks) = shard.get(scope) {
                configured.extend(
                    tasks
                        .iter()
                        .filter(|(_, configs)| !configs.is_empty())
                        .map(|(id, configs)| (id.clone(), configs.len())),
                );
            }
        }
        let active = configured
            .into_iter()
            .filter(|(id, _)| {
                // A task not stored yet (its configuration is put first) is in progress.
                !self
                    .tasks
                    .shard(id)
                    .get_in(scope, id)
                    .is_some_and(|t| t.state.is_terminal())
            })
            .map(|(_, n)| n)
            .sum::<usize>();
        Ok(ConfigCount {
            task: task as u64,
            active: active as u64,
        })
    }

    async fn claim_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        until_ms: i64,
        from: u64,
    ) -> Result<Option<u64>, StoreError> {
        let mut shard = self.deliveries.shard(task_id);
        let d = shard.slot(scope, task_id).or_insert_with(|| Delivery {
            delivered: from,
            ..Delivery::default()
        });
        let free = d
            .node
            .as_deref()
            .is_none_or(|n| n == node || d.until_ms < super::now_ms());
        if !free {
            return Ok(None);
        }
        d.node = Some(node.into());
        d.until_ms = until_ms;
        Ok(Some(d.delivered))
    }

    async fn delivered(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        seq: u64,
        until_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut shard = self.deliveries.shard(task_id);
        match shard.get_mut_in(scope, task_id) {
            Some(d) if d.node.as_deref() == Some(node) => {
                d.delivered = d.delivered.max(seq);
                d.until_ms = until_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), StoreError> {
        let mut shard = self.deliveries.shard(task_id);
        if let Some(d) = shard
            .get_mut_in(scope, task_id)
            .filter(|d| d.node.as_deref() == Some(node))
        {
            d.node = None;
        }
        Ok(())
    }

    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        let mut candidates = Vec::new();
        for shard in self.deliveries.shards() {
            for (scope, ids) in shard.iter() {
                for (id, d) in ids {
                    if d.node.is_none() || d.until_ms < now_ms {
                        candidates.push((scope.clone(), id.to_string(), d.delivered));
                    }
                }
            }
        }
        let mut found = Vec::new();
        for (scope, id, delivered) in candidates {
            let behind = self
                .tasks
                .shard(&id)
                .get_in(&scope, &id)
                .is_some_and(|r| r.last_seq > delivered);
            if behind && found.len() < limit {
                found.push((scope, id));
            }
        }
        Ok(found)
    }
}

/// What [`MemoryStore::evict`] did.
#[derive(Debug, PartialEq, Eq)]
enum Evicted {
    /// The task is gone.
    Gone,
    /// The entry was stale (the task changed or is gone already).
    Stale,
    /// Somebody still works on the task: keep it queued.
    Busy,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}

#[cfg(test)]
mod tests;
