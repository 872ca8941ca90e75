//! Work an engine does besides answering requests, so that tasks outlive the process that ran
//! them and several processes on one shared store behave as one agent:
//!
//! - **Recovery.** A task in progress holds a lease naming the process that executes it. At
//!   start-up every lease of a store nobody else uses is an orphan; on a shared store a lease
//!   that was not renewed in time is. An orphaned task ends `FAILED` with a message saying so,
//!   or runs again from its last user message when the executor is
//!   [`retry_safe`](crate::AgentExecutor::retry_safe).
//! - **Heartbeat** (shared stores): this process's leases are renewed every `lease_ttl / 3`.
//! - **One clock** (shared stores): leases and delivery claims are written and judged by the
//!   store's clock, which each heartbeat and sweep measure this process's clock against
//!   ([`Inner::sync_clock`]), so replicas whose clocks disagree agree on every lease.
//! - **Following other processes** (shared stores): a notice that another process committed a
//!   task this process holds in memory makes it read the new events from the log and publish
//!   them to its local subscribers; a notice that its own running turn was cancelled or
//!   superseded stops the executor. Notices only say where to look, so a lost one costs
//!   latency: after a reconnect, and on every sweep, tasks are re-read anyway.
//! - **Outbox**: push deliveries whose process stopped are resumed from the stored cursor.

use std::sync::{Arc, Weak};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trident_proto as pb;

use super::live::{Live, LiveGuard};
use super::run::Run;
use super::{Inner, push};
use crate::store::{Notice, NoticeFeed, Scope, StoreError};
use crate::{Principal, RequestContext};

/// Tasks examined per sweep and kind.
const SWEEP_BATCH: usize = 100;

/// Starts the background work of an engine.
pub(super) fn start(inner: &Arc<Inner>) {
    let weak = Arc::downgrade(inner);
    let shared = inner.stores.tasks.shared();
    tokio::spawn(sweeper(weak.clone(), shared));
    if shared {
        tokio::spawn(heartbeat(weak.clone()));
        if let Some(feed) = inner.stores.tasks.notices() {
            tokio::spawn(follow_notices(weak, feed));
        }
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
/// re-read of every task held in memory that runs elsewhere.
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
            catch_up(LiveGuard::new(inner.clone(), live), None).await;
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
                        let mut w = guard.live.writer.lock().await;
                        let from = w.record.last_seq;
                        push::kick_from(inner, &guard.live, &mut w, from).await;
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
    let live = &guard.live;
    // A turn of this process may hold commits on the task (an inline follow-up of a task the
    // start-up sweep lists): they are stored first, or the reload below would drop them.
    let mut w = match live.lock_seen(inner).await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(task = %id, error = %e, "could not store an orphaned task's held events");
            return;
        }
    };
    w.stale = true;
    if let Err(e) = live.sync(inner, &mut w).await {
        tracing::warn!(task = %id, error = %e, "could not read an orphaned task");
        return;
    }
    let Some(lease) = w.record.lease.clone() else {
        return;
    };
    let expired = !inner.stores.tasks.shared() || lease.until_ms < inner.clock_ms();
    if lease.node == inner.node || !expired || !w.record.task.state().is_in_progress() {
        return;
    }
    let task = w.record.task.clone();
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
            match live.begin_turn(inner, &mut w, None).await {
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
        match notice {
            Notice::Committed {
                scope,
                task_id,
                seq,
            } => {
                if let Some(live) = inner.live_now(&scope, &task_id) {
                    tokio::spawn(catch_up(LiveGuard::new(inner.clone(), live), Some(seq)));
                }
            }
            Notice::Events {
                scope,
                task_id,
                events,
            } => {
                if let Some(live) = inner.live_now(&scope, &task_id) {
                    let seq = events.last().map(|e| e.seq);
                    tokio::spawn(catch_up(LiveGuard::new(inner.clone(), live), seq));
                }
            }
            Notice::Resync => {
                for live in inner.lives() {
                    tokio::spawn(catch_up(LiveGuard::new(inner.clone(), live), None));
                }
            }
        }
    }
}

/// Re-reads a task another process wrote (up to `seq`, or whatever is there).
async fn catch_up(guard: LiveGuard, seq: Option<u64>) {
    let live: &Live = &guard.live;
    let mut w = live.writer.lock().await;
    if seq.is_some_and(|s| s <= w.record.last_seq) {
        return;
    }
    w.stale = true;
    if let Err(e) = live.sync(&guard.inner, &mut w).await {
        tracing::warn!(task = %live.task_id, error = %e, "could not follow a task written elsewhere");
    }
}
