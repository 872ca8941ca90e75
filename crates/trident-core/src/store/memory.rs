//! The in-memory store: sharded hash maps, no global lock.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Mutex, MutexGuard};

use trident_proto as pb;

use super::{
    EventLog, ListCursor, LoggedEvent, PushConfigStore, Scope, StoreError, TaskPage, TaskQuery,
    TaskRecord, TaskStore,
};

const SHARDS: usize = 64;

/// A map split into independently locked shards.
pub(crate) struct Sharded<K, V> {
    shards: Box<[Mutex<HashMap<K, V>>]>,
    hasher: RandomState,
}

impl<K: Hash + Eq, V> Sharded<K, V> {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
        }
    }

    /// Locks the shard holding `key`.
    pub(crate) fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> MutexGuard<'_, HashMap<K, V>> {
        let i = (self.hasher.hash_one(key) as usize) % self.shards.len();
        lock(&self.shards[i])
    }

    /// Every shard, one at a time.
    pub(crate) fn shards(&self) -> impl Iterator<Item = MutexGuard<'_, HashMap<K, V>>> {
        self.shards.iter().map(lock)
    }
}

/// Locks a mutex, ignoring poisoning (no invariant here spans a panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type Key = (Scope, String);

/// Tasks, event logs and push configurations in process memory. Nothing survives a restart.
pub struct MemoryStore {
    tasks: Sharded<Key, TaskRecord>,
    events: Sharded<Key, Vec<LoggedEvent>>,
    push: Sharded<Key, BTreeMap<String, pb::TaskPushNotificationConfig>>,
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
        }
    }
}

fn key(scope: &Scope, id: &str) -> Key {
    (scope.clone(), id.to_owned())
}

#[async_trait::async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, scope: &Scope, record: &TaskRecord) -> Result<(), StoreError> {
        let k = key(scope, &record.task.id);
        let mut shard = self.tasks.shard(&k);
        if shard.contains_key(&k) {
            return Err(StoreError::AlreadyExists);
        }
        shard.insert(k, record.clone());
        Ok(())
    }

    async fn update(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
    ) -> Result<(), StoreError> {
        let k = key(scope, &record.task.id);
        let mut shard = self.tasks.shard(&k);
        let current = shard.get_mut(&k).ok_or(StoreError::NotFound)?;
        if current.last_seq != expected_seq {
            return Err(StoreError::Conflict);
        }
        *current = record.clone();
        Ok(())
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let k = key(scope, id);
        Ok(self.tasks.shard(&k).get(&k).cloned())
    }

    /// A scan of every shard: O(tasks) per page. Fine for tests and small deployments; the
    /// durable stores use an index.
    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let mut hits: Vec<pb::Task> = Vec::new();
        let mut total = 0;
        for shard in self.tasks.shards() {
            for ((s, _), record) in shard.iter() {
                if s != scope || !query.matches(&record.task) {
                    continue;
                }
                total += 1;
                if query
                    .after
                    .as_ref()
                    .is_none_or(|c| c.precedes(&record.task))
                {
                    hits.push(record.task.clone());
                }
            }
        }
        hits.sort_by(|a, b| {
            super::status_nanos(b)
                .cmp(&super::status_nanos(a))
                .then_with(|| a.id.cmp(&b.id))
        });
        let more = hits.len() > query.limit;
        hits.truncate(query.limit);
        let next = if more {
            hits.last().map(ListCursor::of)
        } else {
            None
        };
        Ok(TaskPage {
            tasks: hits,
            total,
            next,
        })
    }
}

#[async_trait::async_trait]
impl EventLog for MemoryStore {
    async fn append(
        &self,
        scope: &Scope,
        task_id: &str,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let k = key(scope, task_id);
        let mut shard = self.events.shard(&k);
        let log = shard.entry(k).or_default();
        let first = log.last().map_or(1, |e| e.seq + 1);
        if events
            .iter()
            .zip(first..)
            .any(|(e, expected)| e.seq != expected)
        {
            return Err(StoreError::Conflict);
        }
        log.extend_from_slice(events);
        Ok(())
    }

    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let k = key(scope, task_id);
        let shard = self.events.shard(&k);
        let Some(log) = shard.get(&k) else {
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
        let k = key(scope, &config.task_id);
        self.push
            .shard(&k)
            .entry(k)
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
        let k = key(scope, task_id);
        Ok(self.push.shard(&k).get(&k).and_then(|m| m.get(id).cloned()))
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        let k = key(scope, task_id);
        let shard = self.push.shard(&k);
        let Some(configs) = shard.get(&k) else {
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
        let k = key(scope, task_id);
        let mut shard = self.push.shard(&k);
        Ok(shard.get_mut(&k).is_some_and(|m| m.remove(id).is_some()))
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}
