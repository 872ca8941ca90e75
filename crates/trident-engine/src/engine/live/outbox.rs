//! The live task's push delivery worker: one per task with webhooks, started by the commit
//! that finds none running ([`Live::deliver_from`]). It follows the task's event log with a
//! cursor (never blocking the task, never holding more than a batch per webhook) and POSTs
//! each event, in order, to every configured webhook — one lane per webhook, so each retries
//! with exponential backoff on its own and a slow one delays no other. What a webhook call is
//! and how it is retried is `engine/push.rs`'s.

use std::collections::btree_map::Entry as Entry2;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use trident_core::A2aError;

use super::{Live, LiveGuard};
use crate::engine::push::{WebhookTransport, send_with_retry, webhook_request};
use crate::engine::{Inner, store_error};
use crate::store::{Generation, now_ms};

/// Delivers the task's events from the stored delivery cursor (the outbox) while this process
/// holds the task's delivery claim: one lane per configuration, each POSTing the events in
/// order and retrying on its own, so a slow or dead webhook never delays another one. The
/// stored cursor is the slowest lane's position: another process takes over a claim that
/// lapsed and resumes from it, so a crash can repeat an event to a webhook but never skip one.
pub(super) async fn deliver_all(guard: LiveGuard, from: u64) {
    let (inner, live) = (guard.inner(), guard.live());
    let Some(transport) = inner.webhooks.clone() else {
        return;
    };
    if inner.clock_unmeasured() {
        inner.sync_clock().await;
    }
    let until = || inner.clock_ms().saturating_add(inner.lease_ttl_ms());
    let store = &inner.stores.push;
    let claimed = store
        .claim_delivery(live.scope(), live.task_id(), &inner.node, until(), from)
        .await;
    let cursor = match claimed {
        Ok(Some(cursor)) => cursor,
        Ok(None) => {
            // Another process delivers this task's notifications.
            live.lock().await.stop_pushing();
            return;
        }
        Err(e) => {
            tracing::warn!(task = %live.task_id(), error = %e, "push delivery not started: cannot claim the outbox");
            live.lock().await.stop_pushing();
            return;
        }
    };
    let mut lanes = Lanes {
        positions: HashMap::new(),
        behind: BTreeMap::new(),
        running: HashMap::new(),
        stored: cursor,
        listed_at: None,
    };
    let (report, mut reports) = mpsc::unbounded_channel::<(String, LaneReport)>();
    let mut progress = live.progress();
    let mut renewed = now_ms();
    let renew_every = Duration::from_millis(
        u64::try_from(inner.lease_ttl_ms() / 3)
            .unwrap_or(1000)
            .max(10),
    );
    let start_lane = |id: &str, pos: u64| {
        tokio::spawn(lane(
            guard.another(),
            transport.clone(),
            id.to_owned(),
            pos,
            report.clone(),
        ))
    };
    // Store failures in a row; the worker stops after MAX_FAILURES (the next commit, or
    // another process once the claim lapses, starts over from the stored cursor).
    let mut failures = 0u32;
    // Every step costs O(1) or O(log configurations), except the listing, which runs once
    // per new published position (not per lane report): delivering E events to N
    // configurations costs O(N × E).
    let outcome = loop {
        // New configurations start after the events seen at the previous listing (the first
        // listing: at the stored cursor); deleted ones drop out.
        let seen = progress.borrow_and_update().seq;
        if lanes.listed_at != Some(seen) {
            if let Err(e) = lanes.relist(inner, live, seen).await {
                // Nothing below may run on a failed listing: with no positions the cursor
                // would move past events no webhook has had.
                failures += 1;
                if failures >= MAX_FAILURES {
                    break Err("the configurations cannot be listed");
                }
                tracing::warn!(task = %live.task_id(), error = %e, "push delivery paused: cannot list the configurations");
                tokio::time::sleep(PAUSE).await;
                continue;
            }
            // Every lane that is behind and idle starts (each has an event to send).
            for (id, pos) in &lanes.positions {
                if *pos < seen && !lanes.running.contains_key(id) {
                    lanes.running.insert(id.clone(), start_lane(id, *pos));
                }
            }
        }
        // The outbox cursor follows the slowest lane; the claim is renewed with it, and at
        // least every third of the lease while a slow lane holds the cursor back.
        let slowest = lanes.slowest().unwrap_or(seen);
        let renew_due = now_ms().saturating_sub(renewed) >= inner.lease_ttl_ms() / 3;
        if slowest > lanes.stored || renew_due {
            let to = slowest.max(lanes.stored);
            match store
                .delivered(live.scope(), live.task_id(), &inner.node, to, until())
                .await
            {
                Ok(true) => {
                    lanes.stored = to;
                    renewed = now_ms();
                    failures = 0;
                }
                Ok(false) => break Err("the outbox claim was lost"),
                Err(e) => {
                    // Transient: the claim is still ours until it lapses; try again.
                    failures += 1;
                    if failures >= MAX_FAILURES {
                        break Err("the outbox cursor cannot be stored");
                    }
                    tracing::warn!(task = %live.task_id(), error = %e, "push delivery: cannot store the outbox cursor; retrying");
                    tokio::time::sleep(PAUSE).await;
                    continue;
                }
            }
        }
        if lanes.running.is_empty() {
            // Under the writer lock no commit can publish in between: a commit after this
            // sees `pushing` off and starts a new worker.
            let mut w = live.lock().await;
            if progress.borrow().seq <= slowest || lanes.positions.is_empty() {
                if let Err(e) = store
                    .release_delivery(live.scope(), live.task_id(), &inner.node)
                    .await
                {
                    tracing::warn!(task = %live.task_id(), error = %e, "could not release the outbox claim");
                }
                w.stop_pushing();
                break Ok(());
            }
            continue;
        }
        tokio::select! {
            Some((id, r)) = reports.recv() => match r {
                LaneReport::At(pos) => lanes.advance(&id, pos),
                LaneReport::Done(pos) => {
                    lanes.running.remove(&id);
                    lanes.advance(&id, pos);
                    // Behind what was listed (its log read failed, or returned nothing yet;
                    // it paused): again. Events after the listing start it at the next one.
                    if let Some(at) = lanes.positions.get(&id).copied()
                        && lanes.listed_at.is_some_and(|listed| at < listed)
                    {
                        lanes.running.insert(id.clone(), start_lane(&id, at));
                    }
                }
                LaneReport::Deleted => {
                    lanes.running.remove(&id);
                    lanes.remove(&id);
                }
            },
            changed = progress.changed() => if changed.is_err() {
                break Err("the task went away");
            },
            // Wake up to renew the claim while lanes are busy retrying.
            () = tokio::time::sleep(renew_every) => {}
        }
    };
    if let Err(why) = outcome {
        tracing::warn!(task = %live.task_id(), "push delivery stopped: {why}");
        for (_, lane) in lanes.running.drain() {
            lane.abort();
        }
        live.lock().await.stop_pushing();
    }
}

/// The delivery lanes of one task.
struct Lanes {
    /// Each configuration's position: the last event it has had (or given up on).
    positions: HashMap<String, u64>,
    /// How many lanes are at each position (the slowest is the first key).
    behind: BTreeMap<u64, usize>,
    /// Lanes with events in hand.
    running: HashMap<String, tokio::task::JoinHandle<()>>,
    /// The stored outbox cursor.
    stored: u64,
    /// The task's last sequence number when the configurations were last listed.
    listed_at: Option<u64>,
}

impl Lanes {
    /// Lists the configurations: O(configurations), once per new published position.
    async fn relist(&mut self, inner: &Inner, live: &Live, seen: u64) -> Result<(), A2aError> {
        let start = self.listed_at.unwrap_or(self.stored);
        let mut ids = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let (configs, more) = inner
                .stores
                .push
                .list(live.scope(), live.task_id(), after.as_deref(), 100)
                .await
                .map_err(store_error)?;
            let last = configs.last().map(|c| c.id.clone());
            ids.extend(configs.into_iter().map(|c| c.id));
            match last {
                Some(last) if more => after = Some(last),
                _ => break,
            }
        }
        let gone: Vec<String> = self
            .positions
            .keys()
            .filter(|id| !ids.contains(*id) && !self.running.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            self.remove(&id);
        }
        for id in ids {
            if let Entry::Vacant(slot) = self.positions.entry(id) {
                slot.insert(start);
                *self.behind.entry(start).or_default() += 1;
            }
        }
        self.listed_at = Some(seen);
        Ok(())
    }

    /// The slowest lane's position.
    fn slowest(&self) -> Option<u64> {
        self.behind.keys().next().copied()
    }

    /// Moves a lane forward to `pos`.
    fn advance(&mut self, id: &str, pos: u64) {
        let Some(at) = self.positions.get_mut(id) else {
            return;
        };
        if pos <= *at {
            return;
        }
        let old = std::mem::replace(at, pos);
        self.uncount(old);
        *self.behind.entry(pos).or_default() += 1;
    }

    /// Drops a lane.
    fn remove(&mut self, id: &str) {
        if let Some(at) = self.positions.remove(id) {
            self.uncount(at);
        }
    }

    fn uncount(&mut self, pos: u64) {
        if let Entry2::Occupied(mut n) = self.behind.entry(pos) {
            *n.get_mut() -= 1;
            if *n.get() == 0 {
                n.remove();
            }
        }
    }
}

/// How long a lane waits before it is restarted after a store read failed.
const PAUSE: Duration = Duration::from_millis(500);

/// Store failures in a row after which a task's delivery worker stops.
const MAX_FAILURES: u32 = 20;

/// What a lane tells the task's worker.
enum LaneReport {
    /// It has delivered (or given up on) every event up to this one.
    At(u64),
    /// Caught up at this event: nothing more to send for now.
    Done(u64),
    /// Its configuration was deleted.
    Deleted,
}

/// One configuration's deliveries: the task's events after `pos`, in order, each retried
/// on its own, until caught up. Re-reads the configuration before each POST (it may have
/// been replaced or deleted). A configuration created through v0.3 is sent the task itself
/// (v0.3's payload) once per batch of events: the task as it stands after them.
///
/// It holds the task by a guard of its own: a lane may end after its worker (it reports before
/// it returns, and an aborted one is dropped whenever its runtime gets to it), and then it is
/// the last holder, which must unregister the task.
async fn lane(
    guard: LiveGuard,
    transport: Arc<dyn WebhookTransport>,
    id: String,
    mut pos: u64,
    report: mpsc::UnboundedSender<(String, LaneReport)>,
) {
    let (inner, live): (&Arc<Inner>, &Arc<Live>) = (guard.inner(), guard.live());
    let mut batch = VecDeque::new();
    loop {
        if let Err(e) = live.read_after(inner, pos, &mut batch).await {
            tracing::warn!(task = %live.task_id(), config = %id, error = %e, "push delivery paused: cannot read the event log");
            tokio::time::sleep(PAUSE).await;
            let _ = report.send((id, LaneReport::Done(pos)));
            return;
        }
        if batch.is_empty() {
            if pos < live.progress().borrow().seq {
                // Published events the log does not return (yet): not caught up; pause
                // rather than be restarted at once in a loop.
                tokio::time::sleep(PAUSE).await;
            }
            let _ = report.send((id, LaneReport::Done(pos)));
            return;
        }
        while let Some(next) = batch.front().map(|e| e.seq) {
            let (config, generation) = match inner
                .stores
                .push
                .get(live.scope(), live.task_id(), &id)
                .await
            {
                Ok(Some(c)) => c,
                Ok(None) => {
                    let _ = report.send((id, LaneReport::Deleted));
                    return;
                }
                Err(e) => {
                    tracing::warn!(task = %live.task_id(), config = %id, error = %e, "push delivery paused: cannot read the configuration");
                    tokio::time::sleep(PAUSE).await;
                    let _ = report.send((id, LaneReport::Done(pos)));
                    return;
                }
            };
            // Without the v0.3 encoder (an engine built without it), 1.0's payload.
            let (seq, body, shape) = match (generation, inner.v03_body) {
                (Generation::V03, Some(encode)) => {
                    let last = batch.back().map_or(next, |e| e.seq);
                    match inner.stores.tasks.get(live.scope(), live.task_id()).await {
                        Ok(Some(record)) => {
                            batch.clear();
                            let body = encode(&record.task).map_err(|e| e.to_string());
                            // The stored task may already include later events: published
                            // ones it covers need no POST of their own.
                            let published = live.progress().borrow().seq;
                            (
                                last.max(record.last_seq.min(published)),
                                body,
                                Generation::V03,
                            )
                        }
                        Ok(None) => {
                            batch.clear();
                            (last, Err("the task is gone".to_owned()), Generation::V03)
                        }
                        Err(e) => {
                            tracing::warn!(task = %live.task_id(), config = %id, error = %e, "push delivery paused: cannot read the task");
                            tokio::time::sleep(PAUSE).await;
                            let _ = report.send((id, LaneReport::Done(pos)));
                            return;
                        }
                    }
                }
                _ => {
                    let Some(event) = batch.pop_front() else {
                        break;
                    };
                    let body = serde_json::to_vec(&*event.event).map_err(|e| e.to_string());
                    (event.seq, body, Generation::V1)
                }
            };
            match body {
                Ok(body) => {
                    let request = webhook_request(&config, shape, seq, body);
                    send_with_retry(
                        &inner.deliveries,
                        transport.as_ref(),
                        &request,
                        inner.config.push_retry,
                    )
                    .await;
                }
                Err(e) => {
                    tracing::warn!(task = %live.task_id(), seq, error = %e, "push delivery skipped an event it cannot encode");
                }
            }
            pos = seq;
            let _ = report.send((id.clone(), LaneReport::At(pos)));
        }
    }
}
