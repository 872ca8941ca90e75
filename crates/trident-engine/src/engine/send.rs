//! SendMessage and SendStreamingMessage: a turn begins (a new task's, inline on the caller's
//! task while it need not wait; or a follow-up's), and the blocking caller waits for it to
//! settle.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use trident_proto as pb;

use super::live::{Hold, Live, LiveGuard, Progress, Writer};
use super::run::{Creation, First, Run};
use super::{Inner, store_error, validate};
use crate::store::{Scope, StoreError, TaskRecord};
use trident_core::{A2aError, CallContext, ErrorKind, Operation, RequestContext};

impl Inner {
    /// Starts a turn for `req` and returns what the caller waits for first.
    pub(crate) async fn start(
        self: &Arc<Self>,
        cx: &CallContext,
        req: pb::SendMessageRequest,
        streaming: bool,
    ) -> Result<Started, A2aError> {
        let op = if streaming {
            Operation::SendStreamingMessage
        } else {
            Operation::SendMessage
        };
        let scope = self.admit(cx, &req.tenant, op, req.message.as_ref())?;
        if streaming {
            self.require_streaming()?;
        }
        validate::send_request(&req, &self.config.limits)?;
        let pb::SendMessageRequest {
            message,
            configuration,
            metadata,
            ..
        } = req;
        let mut message =
            message.ok_or_else(|| A2aError::invalid_field("message", "is required"))?;
        let mut push = configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if let Some(p) = &push {
            self.require_push()?;
            // Boxed: a cold branch whose future would otherwise make every call's larger.
            Box::pin(self.check_webhook(&p.url)).await?;
        }
        let return_immediately = configuration.as_ref().is_some_and(|c| c.return_immediately);
        // A blocking call (no webhook given with it) runs the turn inline, on the caller's
        // task, for as long as it does not wait on anything; its commits may be held meanwhile
        // (see `Hold`) and stored in one commit when it returns or starts waiting. Nobody can
        // tell: the turn looks atomic, as if the agent had been that fast.
        let inline = !streaming && push.is_none() && !return_immediately;
        let cancel = CancellationToken::new();
        // Boxed from the start: the turn's executor gets it boxed anyway, and every future
        // between here and there then carries a pointer instead of the context itself.
        let mut ctx = Box::new(RequestContext {
            task_id: String::new(),
            context_id: String::new(),
            message: pb::Message::default(),
            task: None,
            configuration,
            metadata,
            principal: cx.principal.clone(),
            tenant: scope.tenant.to_string(),
            extensions: cx.extensions.clone(),
            cancel: cancel.clone(),
        });

        if message.task_id.is_empty() {
            // Time-ordered ids (UUIDv7): a new task lands at the end of the stores' primary
            // key and event indexes instead of a random page, so a durable commit dirties
            // fewer pages.
            let task_id = time_ordered_id();
            if message.context_id.is_empty() {
                message.context_id = time_ordered_id();
            }
            message.task_id = task_id.clone();
            if let Some(p) = push.as_mut() {
                validate::bind_push(p, &task_id, &scope)?;
                // The principal's limit (a new task has none yet). Checked before the turn
                // starts; the configuration is stored with the task's first commit.
                Box::pin(self.check_push_room(&scope, &task_id, None)).await?;
            }
            let (task_key, context_key): (Arc<str>, Arc<str>) =
                (task_id.as_str().into(), message.context_id.as_str().into());
            ctx.task_id = task_id;
            ctx.context_id = message.context_id.clone();
            ctx.message = message.clone();
            // Only its caller will learn the new task's id: an inline turn holds every commit.
            let hold = if inline { Hold::Turn } else { Hold::Off };
            let creation = Creation {
                message,
                push: push.map(|p| (p, cx.generation)),
                hold,
            };
            let (run, first) =
                Run::new_task(self.clone(), scope, task_key, context_key, creation, cancel);
            let finished = self.drive(run, ctx, inline).await;
            return match first.await {
                Ok(First::Message(m)) => Ok(Started::Message(m)),
                Ok(First::Task(live)) => {
                    if inline {
                        self.end_inline(&live, finished, true).await?;
                    }
                    Ok(Started::Task {
                        guard: LiveGuard::new(self.clone(), live),
                        after: 0,
                        snapshot: None,
                    })
                }
                Ok(First::Failed(e)) => Err(e),
                Err(_) => Err(A2aError::internal(
                    "the agent's turn ended without an outcome",
                )),
            };
        }

        // Boxed: the follow-up's future is large, and a task's creation (the hot path) does
        // not need to carry it.
        Box::pin(self.follow_up(cx, scope, message, push, ctx, inline)).await
    }

    /// Runs `run`'s turn with `ctx`: when `inline`, on the caller's task until it returns or
    /// waits on something, then in the background; otherwise in the background at once.
    /// Returns whether it ran to its end inline (its executor returned).
    async fn drive(
        self: &Arc<Self>,
        run: Arc<Run>,
        ctx: Box<RequestContext>,
        inline: bool,
    ) -> bool {
        let drive = run.clone().drive(self.executor.clone(), ctx);
        if !inline {
            tokio::spawn(drive);
            return false;
        }
        let mut drive = Box::pin(drive);
        if futures::poll!(drive.as_mut()).is_ready() {
            return true;
        }
        // The agent waits on something: its turn continues in the background and stores what
        // it holds (the switch runs in the spawned task, so it happens even if this caller
        // goes away).
        tokio::spawn(async move {
            futures::join!(drive, run.leave_caller());
        });
        false
    }

    /// Stores what an inline turn committed so far (all of it when it ran to its end,
    /// `finished`) before its caller can answer with the task. When that store fails, the
    /// turn is stopped ([`Live::fault`]) and the caller gets the error.
    ///
    /// A new task's turn that ran to its end is stored here, on the caller's task: nobody
    /// else knows the task, nothing waits for it and nothing runs it any more, so a caller
    /// that goes away halfway leaves nobody waiting for events that were not published. Any
    /// other turn is stored on a task of its own ([`Live::end_hold_detached`]): others may
    /// wait for its events, or its turn goes on in the background and commits after them.
    async fn end_inline(
        self: &Arc<Self>,
        live: &Arc<Live>,
        finished: bool,
        new_task: bool,
    ) -> Result<(), A2aError> {
        if !(finished && new_task) {
            return live.end_hold_detached(self).await;
        }
        let mut w = live.lock().await;
        live.end_hold_finished(self, &mut w).await
    }

    /// Starts the turn of a follow-up `message` to an existing task: `inline` on the caller's
    /// task as a new task's, holding its commits while nobody else could observe them.
    async fn follow_up(
        self: &Arc<Self>,
        cx: &CallContext,
        scope: Scope,
        mut message: pb::Message,
        mut push: Option<pb::TaskPushNotificationConfig>,
        mut ctx: Box<RequestContext>,
        inline: bool,
    ) -> Result<Started, A2aError> {
        let guard = self.live(&scope, &message.task_id).await?;
        let live = guard.live().clone();
        // The A2A 1.1 preview's precondition (ignored for everyone else, as 1.0 has none).
        let if_generation_match = ctx
            .configuration
            .as_ref()
            .and_then(|c| c.if_generation_match)
            .filter(|_| self.preview(cx));
        let wait_until = tokio::time::Instant::now() + self.config.turn_end_wait;
        // Another process may take the same turn at the same time: the store lets one commit
        // win; the others re-read the task and answer from its new state.
        let mut attempts = 0;
        let (mut w, after) = loop {
            let mut w = loop {
                // This request reads the task: a turn holding commits stores them first.
                let mut w = live.lock_seen(self).await?;
                live.sync(self, &mut w).await?;
                // Checked under the writer, on the record as stored; the turn begins with a
                // commit conditional on that record's position, so a change made meanwhile
                // (by another process) fails it and this check runs again on the change.
                if let Some(expected) = if_generation_match {
                    check_generation(w.record(), expected)?;
                }
                let task = w.task();
                let state = task.state();
                if state.is_terminal() {
                    return Err(A2aError::unsupported(format!(
                        "task {} is {} and accepts no more messages",
                        task.id,
                        state.as_str_name()
                    ))
                    .with_meta("taskId", task.id.clone()));
                }
                if !message.context_id.is_empty() && message.context_id != task.context_id {
                    return Err(A2aError::invalid_field(
                        "message.contextId",
                        format!("does not match task {}'s context", task.id),
                    ));
                }
                // A task still working is busy, whichever process runs it.
                let busy = !state.is_interrupted();
                if !busy && !w.running() {
                    break w;
                }
                // An interrupted task whose executor is still returning: wait for its turn to
                // end (at most one executor per task).
                if busy || tokio::time::Instant::now() >= wait_until {
                    return Err(A2aError::unsupported(format!(
                        "task {} is still {}; send follow-up messages once it asks for input",
                        task.id,
                        state.as_str_name()
                    ))
                    .with_meta("taskId", task.id.clone()));
                }
                let ended = live.turn_ended();
                tokio::pin!(ended);
                ended.as_mut().enable();
                drop(w);
                let _ = tokio::time::timeout_at(wait_until, ended).await;
            };
            let task = w.task();
            message.context_id = task.context_id.clone();
            if let Some(p) = push.as_mut() {
                validate::bind_push(p, &task.id, &scope)?;
            }
            ctx.task_id = task.id.clone();
            ctx.context_id = task.context_id.clone();
            ctx.task = Some(task.clone());

            if let Some(p) = &push {
                self.put_push(live.scope(), p, cx.generation).await?;
                w.push_configured();
            }
            let hold = if inline && self.may_hold(&live, &mut w).await {
                Hold::Turn
            } else {
                Hold::Off
            };
            match live
                .begin_turn(self, &mut w, Some(message.clone()), hold)
                .await
            {
                Ok(after) => break (w, after),
                Err(StoreError::Conflict) if attempts < 3 => attempts += 1,
                Err(e) => return Err(store_error(e)),
            }
        };
        // The history holds its copy; the executor gets the message itself.
        ctx.message = message;
        let run = Run::existing(self, &live, &mut w, &ctx);
        // The task as the turn begins, for a caller that answers before the turn settles.
        let snapshot = (!inline).then(|| Box::new(w.task().clone()));
        drop(w);
        let finished = self.drive(run, ctx, inline).await;
        if inline {
            self.end_inline(&live, finished, false).await?;
        }
        Ok(Started::Task {
            guard,
            after,
            snapshot,
        })
    }

    /// Whether an inline follow-up turn of `live` may hold its commits (see [`Hold`]): nobody
    /// could observe them. Nobody else holds the task in memory (a subscriber, a webhook
    /// worker or another request would: those that come later store what is held before they
    /// look, [`Live::lock_seen`]), no other process shares the store (a replica following the
    /// task would see it only once stored), and no webhook follows the task (it must see every
    /// event as it happens).
    async fn may_hold(self: &Arc<Self>, live: &Arc<Live>, w: &mut Writer) -> bool {
        // The registry's reference, and the follow-up's guard and its clone.
        const OURS: usize = 3;
        Arc::strong_count(live) <= OURS
            && !self.stores.tasks.shared()
            && !live.has_push(self, w).await
    }

    /// Waits until the task is terminal or interrupted (after `after`), the caller leaves, or
    /// its deadline passes; returns the task as it is then, and lets the live task go. When
    /// the turn's progress can no longer be stored ([`Live::fault`]), returns that error at
    /// once.
    pub(crate) async fn settle(
        self: &Arc<Self>,
        guard: LiveGuard,
        after: u64,
        cx: &CallContext,
    ) -> Result<pb::Task, A2aError> {
        let live = guard.live();
        if !settled(&live.progress_now(), after) {
            // Boxed: a turn that ran inline to its end (the hot path) has settled already and
            // need not carry the wait's future.
            Box::pin(self.wait_settled(live, after, cx)).await?;
        }
        // The caller answers with the task: what its turn still holds is stored first, and
        // what other processes wrote since is read (see `Live::catch_up`).
        let mut w = live.lock_current(self).await?;
        if self.release_sole(live) {
            // Nobody else holds the task nor can find it in memory any more (requests read
            // it from the store, which has all of it): the answer takes it instead of a copy.
            return Ok(w.take_task());
        }
        Ok(w.task().clone())
    }

    /// Waits until the task is settled after `after` ([`Inner::settle`]), the caller leaves,
    /// or its deadline passes. When the turn's progress can no longer be stored
    /// ([`Live::fault`]), returns that error at once.
    async fn wait_settled(
        &self,
        live: &Arc<Live>,
        after: u64,
        cx: &CallContext,
    ) -> Result<(), A2aError> {
        let mut progress = live.progress();
        let deadline = cx.deadline.map(tokio::time::Instant::from_std);
        loop {
            let p = *progress.borrow_and_update();
            if settled(&p, after) {
                break;
            }
            if p.fault
                && let Some(e) = live.fault_error()
            {
                return Err(e);
            }
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = progress.changed() => if changed.is_err() { break },
                () = cx.cancelled.cancelled() => break,
                () = self.closing.cancelled() => break,
                () = sleep => break,
            }
        }
        Ok(())
    }
}

/// Whether a blocking caller's wait is over: the task is terminal (whatever the sequence
/// number: a task that ended accepts no turn, and a turn that failed to store is ended by a
/// recovery that reloads the task and may number its FAILED event `after` itself), or
/// interrupted after `after`.
fn settled(p: &Progress, after: u64) -> bool {
    p.state.is_terminal() || (p.seq > after && p.state.is_interrupted())
}

/// The A2A 1.1 preview's `ifGenerationMatch`: `TaskGenerationMismatch` unless `expected` is
/// the generation of `record`'s task (its last sequence number; see [`crate::store::apply`]).
fn check_generation(record: &TaskRecord, expected: i64) -> Result<(), A2aError> {
    let generation = i64::try_from(record.last_seq).unwrap_or(i64::MAX);
    if generation == expected {
        return Ok(());
    }
    Err(A2aError::new(
        ErrorKind::TaskGenerationMismatch,
        format!(
            "task {} is at generation {generation}, not {expected}: it changed since; read it \
             again before sending",
            record.task.id
        ),
    )
    .with_meta("taskId", record.task.id.clone())
    .with_meta("generation", generation.to_string()))
}

/// A new UUIDv7, hyphenated lowercase (what `to_string` writes, without the formatter).
fn time_ordered_id() -> String {
    let mut buf = uuid::Uuid::encode_buffer();
    uuid::Uuid::now_v7()
        .hyphenated()
        .encode_lower(&mut buf)
        .to_owned()
}

/// What SendMessage waits for first.
pub(crate) enum Started {
    Message(pb::Message),
    Task {
        guard: LiveGuard,
        after: u64,
        /// Boxed: a task is large, and the other variant is not.
        snapshot: Option<Box<pb::Task>>,
    },
}
