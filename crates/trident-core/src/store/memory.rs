//! The in-memory store: sharded hash maps, no global lock.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard};

use trident_proto as pb;

use super::{
    EventLog, ListCursor, LoggedEvent, PushConfigStore, Scope, StoreError, TaskPage, TaskQuery,
    TaskRecord, TaskStore,
};

/// A task's push delivery cursor and who holds it.
#[derive(Debug, Default)]
struct Delivery {
    delivered: u64,
    node: Option<Box<str>>,
    until_ms: i64,
}

const SHARDS: usize = 64;

/// FxHash (rotate, xor, multiply): a few cycles per word. Used only for maps whose keys the
/// server generates (task ids), so nobody can choose colliding keys; maps keyed by
/// client-chosen values (tenants) keep SipHash.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Fx = std::hash::BuildHasherDefault<FxHasher>;

/// One shard: scope → id → value. Lookups borrow the id (no key allocation).
pub(crate) type Shard<V> = HashMap<Scope, HashMap<Box<str>, V, Fx>>;

/// Values keyed by (scope, id), split into independently locked shards chosen by the id.
pub(crate) struct Sharded<V> {
    shards: Box<[Mutex<Shard<V>>]>,
}

impl<V> Sharded<V> {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// Locks the shard holding `id`.
    pub(crate) fn shard(&self, id: &str) -> MutexGuard<'_, Shard<V>> {
        let i = (Fx::default().hash_one(id) as usize) % self.shards.len();
        lock(&self.shards[i])
    }

    /// Every shard, one at a time.
    pub(crate) fn shards(&self) -> impl Iterator<Item = MutexGuard<'_, Shard<V>>> {
        self.shards.iter().map(lock)
    }
}

/// (scope, id) access to a locked shard.
pub(crate) trait ShardExt<V> {
    fn get_in(&self, scope: &Scope, id: &str) -> Option<&V>;
    fn get_mut_in(&mut self, scope: &Scope, id: &str) -> Option<&mut V>;
    fn slot(
        &mut self,
        scope: &Scope,
        id: &str,
    ) -> std::collections::hash_map::Entry<'_, Box<str>, V>;
    fn remove_in(&mut self, scope: &Scope, id: &str) -> Option<V>;
}

impl<V> ShardExt<V> for Shard<V> {
    fn get_in(&self, scope: &Scope, id: &str) -> Option<&V> {
        self.get(scope)?.get(id)
    }

    fn get_mut_in(&mut self, scope: &Scope, id: &str) -> Option<&mut V> {
        self.get_mut(scope)?.get_mut(id)
    }

    fn slot(
        &mut self,
        scope: &Scope,
        id: &str,
    ) -> std::collections::hash_map::Entry<'_, Box<str>, V> {
        self.entry(scope.clone()).or_default().entry(id.into())
    }

    fn remove_in(&mut self, scope: &Scope, id: &str) -> Option<V> {
        let ids = self.get_mut(scope)?;
        let removed = ids.remove(id);
        if ids.is_empty() {
            self.remove(scope);
        }
        removed
    }
}

/// Locks a mutex, ignoring poisoning (no invariant here spans a panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stored task: its last snapshot and what later appends changed (the events themselves
/// are in the log).
#[derive(Debug)]
struct Stored {
    /// The task as of `snapshot_seq`.
    snapshot: pb::Task,
    snapshot_seq: u64,
    last_seq: u64,
    turn: u64,
    lease: Option<super::Lease>,
    /// The current task's list keys.
    state: pb::TaskState,
    context_id: String,
    status_ts: i128,
}

impl Stored {
    fn new(record: &TaskRecord) -> Self {
        Self {
            snapshot: record.task.clone(),
            snapshot_seq: record.last_seq,
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

/// Tasks, event logs and push configurations in process memory. Nothing survives a restart.
///
/// A task is kept as its last snapshot plus the events logged after it, like the durable
/// stores keep it: an [`TaskStore::append`] adds events without copying the task, and reads
/// apply the events after the snapshot to a copy of it.
pub struct MemoryStore {
    tasks: Sharded<Stored>,
    events: Sharded<Vec<LoggedEvent>>,
    push: Sharded<BTreeMap<String, pb::TaskPushNotificationConfig>>,
    deliveries: Sharded<Delivery>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            tasks: Sharded::new(),
            events: Sharded::new(),
            push: Sharded::new(),
            deliveries: Sharded::new(),
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
        // Lock order: the task's shard, then its log's shard.
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
        if !events.is_empty() {
            let mut logs = self.events.shard(id);
            let log = logs.slot(scope, id).or_default();
            if log.last().map_or(0, |e| e.seq) != stored {
                return Err(StoreError::Conflict);
            }
            log.extend_from_slice(events);
        }
        match slot {
            Entry::Occupied(mut o) if snapshot => *o.get_mut() = Stored::new(record),
            Entry::Occupied(mut o) => o.get_mut().update(record),
            Entry::Vacant(v) => {
                v.insert(Stored::new(record));
            }
        }
        Ok(())
    }

    /// The current record of a task: its snapshot with the events after it applied.
    fn materialise(&self, scope: &Scope, id: &str) -> Option<TaskRecord> {
        let tasks = self.tasks.shard(id);
        let stored = tasks.get_in(scope, id)?;
        let mut task = stored.snapshot.clone();
        if stored.last_seq > stored.snapshot_seq {
            let logs = self.events.shard(id);
            if let Some(log) = logs.get_in(scope, id) {
                // Sequence numbers start at 1 without gaps: seq n is at index n - 1.
                let from = usize::try_from(stored.snapshot_seq).unwrap_or(usize::MAX);
                let to = usize::try_from(stored.last_seq).unwrap_or(usize::MAX);
                for e in log.get(from..to.min(log.len())).unwrap_or_default() {
                    super::apply(&mut task, &e.event);
                }
            }
        }
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

    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.materialise(scope, id))
    }

    /// A scan of every shard's list keys: O(tasks) per page, then the page's tasks rebuilt.
    /// Fine for tests and small deployments; the durable stores use an index.
    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let mut hits: Vec<(i128, Box<str>)> = Vec::new();
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
            tasks.last().map(ListCursor::of)
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
        let shard = self.events.shard(task_id);
        let Some(log) = shard.get_in(scope, task_id) else {
            return Ok(Vec::new());
        };
        // Sequence numbers start at 1 without gaps, so `after` is also an index.
        let start = usize::try_from(after).unwrap_or(usize::MAX).min(log.len());
        Ok(log[start..].iter().take(limit).cloned().collect())
    }
}

#[async_trait::async_trait]
impl PushConfigStore for MemoryStore {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
    ) -> Result<(), StoreError> {
        self.push
            .shard(&config.task_id)
            .slot(scope, &config.task_id)
            .or_default()
            .insert(config.id.clone(), config.clone());
        Ok(())
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<pb::TaskPushNotificationConfig>, StoreError> {
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
            .map(|(_, c)| c.clone());
        let page: Vec<_> = iter.by_ref().take(limit).collect();
        Ok((page, iter.next().is_some()))
    }

    async fn delete(&self, scope: &Scope, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut shard = self.push.shard(task_id);
        Ok(shard
            .get_mut_in(scope, task_id)
            .is_some_and(|m| m.remove(id).is_some()))
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

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}
