//! The live registry: tasks held in memory (an executor, a stream or a webhook worker uses
//! them), found by (scope, id), loaded from the store on demand, released by their last holder.
//! With an event bus, a registered task is watched on it (see [`Live::watch`]) until released.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::live::{Live, LiveGuard, News};
use super::{Inner, store_error};
use crate::store::{Scope, ShardExt, TaskRecord};
use trident_core::{A2aError, CallContext};

impl Inner {
    /// The live task `id` if it is in memory.
    pub(crate) fn live_now(&self, scope: &Scope, id: &str) -> Option<Arc<Live>> {
        self.live.shard(id).get_in(scope, id).cloned()
    }

    /// The live task `id`, for news of a commit another process made ([`super::cluster`]).
    /// When there is none, the news is counted as unclaimed, under the same lock a task's
    /// registration takes: a task that [`Inner::live`] loads while news of it goes unclaimed
    /// sees the count move, and catches up from the log (its snapshot may predate the news).
    pub(crate) fn live_for_news(&self, scope: &Scope, id: &str) -> Option<Arc<Live>> {
        let shard = self.live.shard(id);
        let live = shard.get_in(scope, id).cloned();
        if live.is_none() {
            self.unclaimed_news.fetch_add(1, Ordering::SeqCst);
        }
        live
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

    /// Registers a new live task (watched on the bus, if any).
    pub(crate) fn register(&self, live: &Arc<Live>) {
        if let Some(bus) = &self.bus {
            live.watch(bus.watch(live.scope(), live.task_id()));
        }
        self.live
            .shard(live.task_id())
            .slot_shared(live.scope(), live.task_id())
            .insert_entry(live.clone());
    }

    /// Lets a guard's reference to a live task go, and unregisters the task when that was the
    /// last reference besides the map's.
    ///
    /// The reference is let go under the shard's lock, where it is counted: of two holders
    /// letting go at once, the second to take the lock sees the first's reference gone.
    /// (Counted under the lock but let go after it, each could count the other's, neither
    /// unregister the task, and the task stayed in memory for good.)
    pub(crate) fn release(&self, live: Arc<Live>) {
        // Not even the map holds it (it was never registered, or is released already), and
        // only the map hands out new references.
        if Arc::strong_count(&live) == 1 {
            return;
        }
        let mut shard = self.live.shard(live.task_id());
        let removed = take_if_sole(&mut *shard, &live);
        drop(live);
        drop(shard);
        // The task itself (and its watch on the bus), when this was its last reference, is
        // freed outside the lock.
        drop(removed);
    }

    /// Unregisters a live task when the caller's reference is the only one besides the map's,
    /// and says whether the caller's reference is then the only one: nobody else holds the
    /// task, and no request can find it any more (it may take the task's state instead of
    /// copying it). The caller keeps its reference (its guard lets it go).
    pub(crate) fn release_sole(&self, live: &Arc<Live>) -> bool {
        if Arc::strong_count(live) == 1 {
            return true;
        }
        // Counted under the shard's lock: nobody takes a reference from the map meanwhile,
        // and guards let theirs go under it.
        let mut shard = self.live.shard(live.task_id());
        let Some(removed) = take_if_sole(&mut *shard, live) else {
            return false;
        };
        drop(shard);
        // Unregistered: other processes' events for it need not come here any more (the
        // caller keeps its reference, so the watch is let go here, outside the lock).
        drop(removed.unwatch());
        true
    }

    /// The live task `id`, loading it from the store; `TaskNotFound` when not visible.
    pub(crate) async fn live(
        self: &Arc<Self>,
        scope: &Scope,
        id: &str,
    ) -> Result<LiveGuard, A2aError> {
        if let Some(live) = self.live_now(scope, id) {
            return Ok(LiveGuard::new(self.clone(), live));
        }
        // Watched before it is read: whatever another process commits after the read reaches
        // this process (or goes unclaimed, see below).
        let mut watch = self.bus.as_ref().map(|bus| bus.watch(scope, id));
        let unclaimed = self.unclaimed_news.load(Ordering::SeqCst);
        let record = self
            .stores
            .tasks
            .get(scope, id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2aError::task_not_found(id))?;
        let mut loaded = false;
        let live = self
            .live
            .shard(id)
            .slot(scope, id)
            .or_insert_with(|| {
                loaded = true;
                let live = Live::new(scope.clone(), record, self.config.tail_capacity, Vec::new());
                if let Some(watch) = watch.take() {
                    live.watch(watch);
                }
                Arc::new(live)
            })
            .clone();
        // Another request registered the task first: its watch stands (this one goes, outside
        // the shard's lock).
        drop(watch);
        let guard = LiveGuard::new(self.clone(), live);
        if loaded && self.unclaimed_news.load(Ordering::SeqCst) != unclaimed {
            // News that came before the task was registered found nothing here: it may be of
            // commits the read above missed.
            super::cluster::tell(&guard, News::Unknown);
        }
        Ok(guard)
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
                let mut w = guard.live().lock_seen(self).await?;
                if w.running() || !self.stores.tasks.shared() {
                    // Never a change that was not stored: a record left stale by a failed
                    // write (or by following another process) is read again first.
                    guard.live().sync(self, &mut w).await?;
                    Some(w.record().clone())
                } else {
                    None
                }
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

    /// The A2A 1.1 preview's long poll (GetTask with `currentGeneration`): the record of task
    /// `id` once its generation (its last sequence number) is past `current` or it ended, or
    /// as it is when [`Preview::long_poll_timeout`](super::Preview::long_poll_timeout) passes
    /// or the caller's deadline nears (a tenth of the time it left, at least 50 ms, is kept
    /// for the answer to reach it), the caller goes away, or the server shuts down.
    ///
    /// It waits on the live task's progress, as a stream does: a commit here publishes it once
    /// stored, and one another process makes reaches the task through the event bus (news, then
    /// the log; see [`Live::watch`]), so a poll held on one replica wakes on a commit made on
    /// another. Holding the task live keeps it in memory for the wait, bounded by the server's
    /// connection limit as any request is.
    pub(crate) async fn long_poll(
        self: &Arc<Self>,
        cx: &CallContext,
        scope: &Scope,
        id: &str,
        current: i64,
    ) -> Result<TaskRecord, A2aError> {
        let guard = self.live(scope, id).await?;
        let mut progress = guard.live().progress();
        let timeout = self.config.preview.unwrap_or_default().long_poll_timeout;
        let now = tokio::time::Instant::now();
        let mut until = now + timeout;
        if let Some(deadline) = cx.deadline {
            // Answered early enough to reach the caller before its deadline passes: with a
            // tenth of the time it left to spare, at least 50 ms.
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let spare = (left / 10).max(std::time::Duration::from_millis(50));
            until = until.min(now + left.saturating_sub(spare));
        }
        loop {
            let p = *progress.borrow_and_update();
            if moved_past(p.seq, p.state, current) {
                break;
            }
            tokio::select! {
                changed = progress.changed() => if changed.is_err() { break },
                () = cx.cancelled.cancelled() => break,
                () = self.closing.cancelled() => break,
                () = tokio::time::sleep_until(until) => break,
            }
        }
        // Read as any GetTask reads it (a record this process may hold stale is read again).
        let record = self.record(scope, id).await;
        drop(guard);
        record
    }
}

/// Whether a task at `seq` in `state` is past generation `current`, so that a long-polling
/// GetTask ([`Inner::long_poll`]) answers: its generation (its last sequence number) is
/// greater, or it ended (its generation will not move again).
pub(super) fn moved_past(seq: u64, state: trident_proto::TaskState, current: i64) -> bool {
    i64::try_from(seq).unwrap_or(i64::MAX) > current || state.is_terminal()
}

/// Removes `live` from the registry's `shard` (locked) when the caller's reference and the
/// map's are its only ones.
fn take_if_sole(shard: &mut impl ShardExt<Arc<Live>>, live: &Arc<Live>) -> Option<Arc<Live>> {
    let sole = Arc::strong_count(live) <= 2
        && shard
            .get_in(live.scope(), live.task_id())
            .is_some_and(|l| Arc::ptr_eq(l, live));
    sole.then(|| shard.remove_in(live.scope(), live.task_id()))
        .flatten()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use trident_proto as pb;

    use super::*;

    /// Rounds of two holders letting the same task go at once.
    const ROUNDS: usize = 10_000;

    /// Spins until `flag` says `value`.
    fn spin_until(flag: &AtomicUsize, value: usize) {
        while flag.load(Ordering::Acquire) != value {
            std::hint::spin_loop();
        }
    }

    /// The last two holders of a task let it go at the same moment on two threads (a
    /// stream's reader ending as the task's run ends): one of them must unregister it. Each
    /// used to check whether it held the last reference before letting its own go, so both
    /// could see the other's and neither unregistered the task, which then stayed in memory
    /// for good.
    #[test]
    fn holders_letting_go_at_once_unregister_the_task() {
        let engine = crate::Engine::builder(Arc::new(trident_testkit::agents::Echo)).build();
        let inner = engine.inner.clone();
        let scope = Scope::new("", "");
        // The other thread's guard, and the round both threads are in (odd: go; even: done).
        let slot = Arc::new(Mutex::new(None::<LiveGuard>));
        let round = Arc::new(AtomicUsize::new(0));
        let other = {
            let (slot, round) = (slot.clone(), round.clone());
            std::thread::spawn(move || {
                for n in 0..ROUNDS {
                    spin_until(&round, 2 * n + 1);
                    let guard = crate::store::lock_std(&slot).take();
                    drop(guard);
                    round.store(2 * n + 2, Ordering::Release);
                }
            })
        };
        let mut leaked = 0;
        for n in 0..ROUNDS {
            let task = pb::Task {
                id: format!("task-{n}"),
                ..Default::default()
            };
            let live = Arc::new(Live::new(
                scope.clone(),
                TaskRecord::new(task, 0),
                4,
                Vec::new(),
            ));
            inner.register(&live);
            let mine = LiveGuard::new(inner.clone(), live.clone());
            *crate::store::lock_std(&slot) = Some(LiveGuard::new(inner.clone(), live));
            round.store(2 * n + 1, Ordering::Release);
            // Sweeps the moment this side lets go across the other's.
            for _ in 0..n % 64 {
                std::hint::spin_loop();
            }
            drop(mine);
            spin_until(&round, 2 * n + 2);
            leaked += inner.lives().len();
            inner.live.shards().for_each(|mut shard| shard.clear());
        }
        other.join().expect("the other thread");
        assert_eq!(leaked, 0, "tasks left registered after {ROUNDS} rounds");
    }
}
