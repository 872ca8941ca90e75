//! The engine-wide sharded maps: values keyed by (scope, id) in independently locked shards
//! chosen by the id, and the poison-free [`lock`]. The in-memory store keeps its tasks, logs,
//! push configurations and delivery cursors in them, the engine its registry of live tasks.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use super::Scope;

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

/// One shard: scope → id → value. Lookups borrow the id (no key allocation); a key is
/// shared, so what else names the entry (the memory store's queue of ended tasks, a live
/// task) shares it instead of a copy.
pub(crate) type Shard<V> = HashMap<Scope, HashMap<Arc<str>, V, Fx>>;

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
    ) -> std::collections::hash_map::Entry<'_, Arc<str>, V>;
    /// [`ShardExt::slot`] keyed by `id` itself, not a copy.
    fn slot_shared(
        &mut self,
        scope: &Scope,
        id: &Arc<str>,
    ) -> std::collections::hash_map::Entry<'_, Arc<str>, V>;
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
    ) -> std::collections::hash_map::Entry<'_, Arc<str>, V> {
        self.entry(scope.clone()).or_default().entry(id.into())
    }

    fn slot_shared(
        &mut self,
        scope: &Scope,
        id: &Arc<str>,
    ) -> std::collections::hash_map::Entry<'_, Arc<str>, V> {
        self.entry(scope.clone()).or_default().entry(id.clone())
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
