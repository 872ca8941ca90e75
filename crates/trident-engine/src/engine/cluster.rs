//! Work an engine does besides answering requests, so that tasks outlive the process that ran
//! them and several processes on one shared store behave as one agent:
//!
//! - **Recovery.** A task in progress holds a lease naming the process that executes it. At
//!   start-up every lease of a store nobody else uses is an orphan; on a shared store a lease
//!   that was not renewed in time is. An orphaned task ends `FAILED` with a message saying so,
//!   or runs again from its last user message when the executor is
//!   [`retry_safe`](trident_core::AgentExecutor::retry_safe).
//! - **Heartbeat** (shared stores): this process's leases are renewed every `lease_ttl / 3`.
//! - **One clock** (shared stores): leases and delivery claims are written and judged by the
//!   store's clock, which each heartbeat and sweep measure this process's clock against
//!   ([`Inner::sync_clock`]), so replicas whose clocks disagree agree on every lease.
//! - **Following other processes** (shared stores): news that another process committed a
//!   task this process holds in memory (a stream, a running turn, a webhook worker) is posted
//!   to the task ([`Live::post`]), and one catch-up at a time publishes what is new to its
//!   local readers ([`Live::catch_up`]). With an [`EventBus`](crate::store::EventBus) the news
//!   is the events themselves, published as they come, without reading the store; with the
//!   store's own notices (PostgreSQL `NOTIFY`) it says how far the log goes, and the events
//!   are read from the log. Either way a follower keeps its position (the last sequence number
//!   it published) and reads the log after it for whatever the news does not bring: an event
//!   is never published twice nor out of order, and a task is never read whole to follow it
//!   (the writer's record is marked stale and reloaded before a write here). A turn this
//!   process runs, which another process may have cancelled or superseded, is reloaded at
//!   once and stopped if so. Lost news costs latency, never events: after a reconnect
//!   ([`Notice::Resync`]), and on every sweep, every task held in memory reads the log after
//!   its position.
//! - **Outbox**: push deliveries whose process stopped are resumed from the stored cursor.

use std::sync::{Arc, Weak};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trident_proto as pb;

use super::Inner;
use super::live::{Hold, LiveGuard, News};
use super::run::Run;
use crate::store::{Lease, Notice, NoticeFeed, Scope, StoreError, now_ms};
use trident_core::{Principal, RequestContext};

/// Tasks examined per sweep and kind.
const SWEEP_BATCH: usize = 100;

/// Starts the background work of an engine.
pub(super) fn start(inner: &Arc<Inner>) {
    let weak = Arc::downgrade(inner);
    let shared = inner.stores.tasks.shared();
    tokio::spawn(sweeper(weak.clone(), shared));
    if shared {
        tokio::spawn(heartbeat(weak.clone()));
        // With a bus, the store's own notices are not listened to: the bus carries the same
        // news, and the events with it.
        let feed = match &inner.bus {
            Some(bus) => Some(bus.feed()),
            None => inner.stores.tasks.notices(),
        };
        if let Some(feed) = feed {
            tokio::spawn(follow_notices(weak, feed));
        }
    }
}

impl Inner {
    /// The lease a commit records for a task in `state`: this process's while the task is in
    /// progress, none once it waits for the client or has ended.
    pub(crate) fn lease_for(&self, state: pb::TaskState) -> Option<Lease> {
        state.is_in_progress().then(|| Lease {
            node: self.node.clone(),
            until_ms: self.clock_ms().saturating_add(self.lease_ttl_ms()),
        })
    }

    /// Now by the clock leases and delivery claims are written and judged in: the store's
    /// ([`TaskStore::clock_ms`](crate::store::TaskStore::clock_ms)), read as this process's
    /// clock plus the offset last measured ([`Inner::sync_clock`]). Replicas whose clocks
    /// disagree then agree on every lease: none takes a healthy task from another, and a dead
    /// one's tasks are recovered within the lease bound, whichever clock is off.
    pub(crate) fn clock_ms(&self) -> i64 {
        now_ms().saturating_add(
            self.clock_offset_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Whether leases are judged by the store's clock and its offset from this process's has
    /// not been measured yet ([`Inner::sync_clock`]): the first lease or claim a request
    /// writes may come before the first heartbeat or sweep.
    pub(crate) fn clock_unmeasured(&self) -> bool {
        self.stores.tasks.shared()
            && !self
                .clock_measured
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Measures the store's clock against this process's (on a shared store; a store nobody
    /// else uses is judged by this process's clock alone). Called before every heartbeat and
    /// every sweep, so a clock stepped or drifting since is caught before leases are renewed
    /// or judged again. The offset is taken against the middle of the round trip: its error
    /// is at most half of it. On failure the last offset stays.
    pub(crate) async fn sync_clock(&self) {
        if !self.stores.tasks.shared() {
            return;
        }
        let before = now_ms();
        match self.stores.tasks.clock_ms().await {
            Ok(store) => {
                let after = now_ms();
                let middle = before.saturating_add(after.saturating_sub(before) / 2);
                self.clock_offset_ms.store(
                    store.saturating_sub(middle),
                    std::sync::atomic::Ordering::Relaxed,
                );
                self.clock_measured
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "could not read the store's clock"),
        }
    }

    pub(crate) fn lease_ttl_ms(&self) -> i64 {
        i64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }
}

async fn heartbeat(weak: Weak<Inner>) {
    loop {
        let Some(period) = weak.upgrade().map(|i| i.config.lease_ttl / 3) else {
            return;
        };
        tokio::time::sleep(period).await;
        let Some(inner) = weak.upgrade() else {
            return;
        };
        inner.sync_clock().await;
        let until = inner.clock_ms().saturating_add(inner.lease_ttl_ms());
        if let Err(e) = inner.stores.tasks.renew_leases(&inner.node, until).await {
            tracing::warn!(error = %e, "could not renew this process's task leases");
        }
    }
}

async fn sweeper(weak: Weak<Inner>, shared: bool) {
    let mut first = true;
    loop {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if first || shared {
            sweep(&inner, first).await;
        } else {
            // A store nobody else uses, one TTL after start-up: the previous process's
            // delivery claims have lapsed now, so its undelivered notifications can go out.
            resume_deliveries(&inner).await;
            return;
        }
        first = false;
        let period = if shared {
            inner.config.lease_ttl / 2
        } else {
            inner.config.lease_ttl
        };
        drop(inner);
        tokio::time::sleep(period).await;
    }
}

/// One pass: orphaned tasks, orphaned deliveries, and (after start-up, on a shared store) a
/// catch-up of every task held in memory with the log (news of it may have been lost).
async fn sweep(inner: &Arc<Inner>, startup: bool) {
    let shared = inner.stores.tasks.shared();
    inner.sync_clock().await;
    // A store nobody else uses: every lease found at start-up belongs to a stopped process.
    let before = if shared { inner.clock_ms() } else { i64::MAX };
    // Recovered tasks lose their lease, so each batch brings new ones; a batch that brings
    // nothing new (tasks that could not be recovered now) ends the pass.
    let mut seen = std::collections::HashSet::new();
    loop {
        match inner.stores.tasks.lapsed_leases(before, SWEEP_BATCH).await {
            Ok(orphans) => {
                let full = orphans.len() == SWEEP_BATCH;
                let mut fresh = false;
                for (scope, id) in orphans {
                    if seen.insert((scope.clone(), id.clone())) {
                        fresh = true;
                        recover(inner, &scope, &id).await;
                    }
                }
                if !full || !fresh {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not look for orphaned tasks");
                break;
            }
        }
    }
    resume_deliveries(inner).await;
    if shared && !startup {
        for live in inner.lives() {
            // A catch-up already scheduled takes this news too.
            if live.post(News::Unknown) {
                catch_up(LiveGuard::new(inner.clone(), live)).await;
            }
        }
    }
}

/// Starts delivery for tasks whose outbox is behind and unclaimed (or whose claim lapsed).
async fn resume_deliveries(inner: &Arc<Inner>) {
    // Kicked tasks are claimed, so each batch brings new ones (see `sweep`).
    let mut seen = std::collections::HashSet::new();
    loop {
        match inner
            .stores
            .push
            .pending_deliveries(inner.clock_ms(), SWEEP_BATCH)
            .await
        {
            Ok(pending) => {
                let full = pending.len() == SWEEP_BATCH;
                let mut fresh = false;
                for (scope, id) in pending {
                    if !seen.insert((scope.clone(), id.clone())) {
                        continue;
                    }
                    fresh = true;
                    if let Ok(guard) = inner.live(&scope, &id).await {
                        let live = guard.live();
                        let mut w = live.lock().await;
                        // The record may be behind what was published (see `Live::catch_up`).
                        let from = w.record().last_seq.max(live.published());
                        live.deliver_from(inner, &mut w, from).await;
                    }
                }
                if !full || !fresh {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not look for undelivered push notifications");
                return;
            }
        }
    }
}

/// Ends (or re-runs) a task whose executing process stopped.
async fn recover(inner: &Arc<Inner>, scope: &Scope, id: &str) {
    let Ok(guard) = inner.live(scope, id).await else {
        return;
    };
    let live = guard.live();
    // A turn of this process may hold commits on the task (an inline follow-up of a task the
    // start-up sweep lists): they are stored first, or the reload below would drop them.
    let mut w = match live.lock_seen(inner).await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(task = %id, error = %e, "could not store an orphaned task's held events");
            return;
        }
    };
    if let Err(e) = live.reload(inner, &mut w).await {
        tracing::warn!(task = %id, error = %e, "could not read an orphaned task");
        return;
    }
    let Some(lease) = w.record().lease.clone() else {
        return;
    };
    let expired = !inner.stores.tasks.shared() || lease.until_ms < inner.clock_ms();
    if lease.node == inner.node || !expired || !w.task().state().is_in_progress() {
        return;
    }
    let task = w.task().clone();
    let retry_from = inner
        .executor
        .retry_safe()
        .then(|| {
            task.history
                .iter()
                .rev()
                .find(|m| m.role == pb::Role::User as i32)
                .cloned()
        })
        .flatten();
    match retry_from {
        Some(message) => {
            tracing::info!(task = %id, node = %lease.node, "re-running a task whose process stopped");
            match live.begin_turn(inner, &mut w, None, Hold::Off).await {
                Ok(_) => {}
                Err(StoreError::Conflict) => return,
                Err(e) => {
                    tracing::warn!(task = %id, error = %e, "could not re-run an orphaned task");
                    return;
                }
            }
            let ctx = RequestContext {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                message,
                task: Some(task.clone()),
                configuration: None,
                metadata: None,
                principal: match &*scope.owner {
                    "" => Principal::anonymous(),
                    owner => Principal::named(owner),
                },
                tenant: scope.tenant.to_string(),
                extensions: Vec::new(),
                cancel: CancellationToken::new(),
            };
            Run::spawn_existing(inner, live, &mut w, ctx);
        }
        None => {
            tracing::info!(task = %id, node = %lease.node, "failing a task whose process stopped");
            let why = format!(
                "the process executing this task ({}) stopped before it finished",
                lease.node
            );
            match live.fail(inner, &mut w, why).await {
                Ok(()) => {}
                // Someone else recovered it, or its process came back in time.
                Err(StoreError::Conflict) => {}
                Err(e) => tracing::warn!(task = %id, error = %e, "could not fail an orphaned task"),
            }
        }
    }
}

async fn follow_notices(weak: Weak<Inner>, mut feed: NoticeFeed) {
    while let Some(notice) = feed.next().await {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let (scope, task_id, news) = match notice {
            Notice::Committed {
                scope,
                task_id,
                seq,
            } => (scope, task_id, News::Upto(seq)),
            Notice::Events {
                scope,
                task_id,
                events,
            } => (scope, task_id, News::Events(events)),
            Notice::Resync => {
                for live in inner.lives() {
                    tell(&LiveGuard::new(inner.clone(), live), News::Unknown);
                }
                continue;
            }
        };
        if let Some(live) = inner.live_for_news(&scope, &task_id) {
            tell(&LiveGuard::new(inner.clone(), live), news);
        }
    }
}

/// Posts `news` to a live task, and schedules its catch-up unless one is pending (which then
/// takes this news too: a burst of news is published by one catch-up, in order).
pub(super) fn tell(guard: &LiveGuard, news: News) {
    if guard.live().post(news) {
        tokio::spawn(catch_up(guard.another()));
    }
}

/// Publishes what other processes committed to a task, as the news posted to it says (see
/// [`Live::catch_up`](super::live::Live::catch_up)).
async fn catch_up(guard: LiveGuard) {
    let (inner, live) = (guard.inner(), guard.live());
    let mut w = live.lock().await;
    if let Err(e) = live.catch_up(inner, &mut w).await {
        tracing::warn!(task = %live.task_id(), error = %e, "could not follow a task written elsewhere");
    }
}
