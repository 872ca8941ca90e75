//! The live registry: tasks held in memory (an executor, a stream or a webhook worker uses
//! them), found by (scope, id), loaded from the store on demand, released by their last holder.

use std::sync::Arc;

use super::live::{Live, LiveGuard};
use super::{Inner, store_error};
use crate::A2aError;
use crate::store::{Scope, ShardExt, TaskRecord};

impl Inner {
    /// The live task `id` if it is in memory.
    pub(crate) fn live_now(&self, scope: &Scope, id: &str) -> Option<Arc<Live>> {
        self.live.shard(id).get_in(scope, id).cloned()
    }

    /// Every task held in memory.
    pub(crate) fn lives(&self) -> Vec<Arc<Live>> {
        self.live
            .shards()
            .flat_map(|shard| {
                shard
                    .values()
                    .flat_map(|ids| ids.values().cloned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Registers a new live task.
    pub(crate) fn register(&self, live: &Arc<Live>) {
        self.live
            .shard(&live.task_id)
            .slot(&live.scope, &live.task_id)
            .insert_entry(live.clone());
    }

    /// Unregisters a live task when the caller holds the last reference besides the map.
    pub(crate) fn release(&self, live: &Arc<Live>) {
        self.release_sole(live);
    }

    /// [`Inner::release`], and whether the caller's reference is then the only one: nobody
    /// else holds the task, and no request can find it any more (it may take the task's state
    /// instead of copying it).
    pub(crate) fn release_sole(&self, live: &Arc<Live>) -> bool {
        // Not even the map holds it (it was never registered, or is released already), and
        // only the map hands out new references.
        if Arc::strong_count(live) == 1 {
            return true;
        }
        // Counted under the shard's lock: nobody takes a reference from the map meanwhile.
        let mut shard = self.live.shard(&live.task_id);
        let sole = Arc::strong_count(live) <= 2
            && shard
                .get_in(&live.scope, &live.task_id)
                .is_some_and(|l| Arc::ptr_eq(l, live));
        if sole {
            shard.remove_in(&live.scope, &live.task_id);
        }
        sole
    }

    /// The live task `id`, loading it from the store; `TaskNotFound` when not visible.
    pub(crate) async fn live(
        self: &Arc<Self>,
        scope: &Scope,
        id: &str,
    ) -> Result<LiveGuard, A2aError> {
        if let Some(live) = self.live_now(scope, id) {
            return Ok(LiveGuard {
                inner: self.clone(),
                live,
            });
        }
        let record = self
            .stores
            .tasks
            .get(scope, id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2aError::task_not_found(id))?;
        let live = self
            .live
            .shard(id)
            .slot(scope, id)
            .or_insert_with(|| {
                Arc::new(Live::new(
                    scope.clone(),
                    record,
                    self.config.tail_capacity,
                    Vec::new(),
                ))
            })
            .clone();
        Ok(LiveGuard {
            inner: self.clone(),
            live,
        })
    }

    /// The current record of task `id`. On a shared store a task this process does not
    /// execute may have moved on elsewhere, so it is read from the store.
    pub(crate) async fn record(
        self: &Arc<Self>,
        scope: &Scope,
        id: &str,
    ) -> Result<TaskRecord, A2aError> {
        let local = match self.live_now(scope, id) {
            Some(live) => {
                // A guard, not a bare reference: should the task's other holders let it go
                // while this request reads it, this request is the last and lets it go from
                // the registry (a bare reference would leave it registered for good).
                let guard = LiveGuard::new(self.clone(), live);
                // A turn holding commits stores them before this request reads the task.
                let w = guard.live.lock_seen(self).await?;
                (w.running || !self.stores.tasks.shared()).then(|| w.record.clone())
            }
            None => None,
        };
        match local {
            Some(record) => Ok(record),
            None => self
                .stores
                .tasks
                .get(scope, id)
                .await
                .map_err(store_error)?
                .ok_or_else(|| A2aError::task_not_found(id)),
        }
    }
}
