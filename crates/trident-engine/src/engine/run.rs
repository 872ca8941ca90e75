//! One turn of an executor: the task it creates lazily on its first event, the first outcome
//! the waiting caller needs, and the end-of-turn rules.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};

use futures::FutureExt;
use tokio::sync::oneshot;
use trident_proto as pb;
use trident_proto::wkt::Timestamp;

use super::live::{Hold, Live, LiveGuard, Writer};
use super::{Inner, agent_text, store_error};
use crate::store::{Generation, Scope, SharedEvent, StoreError, TaskRecord, lock_std};
use trident_core::{A2aError, AgentExecutor, ErrorKind, EventSink, RequestContext};

/// What the caller of SendMessage waits for.
pub(crate) enum First {
    /// The agent answered with a direct message.
    Message(pb::Message),
    /// The task exists.
    Task(Arc<Live>),
    /// The turn failed before producing anything.
    Failed(A2aError),
}

/// A task to create on the first task event of a new turn.
pub(crate) struct Creation {
    pub(crate) message: pb::Message,
    /// A push configuration given with the message, and the protocol generation it came in.
    pub(crate) push: Option<(pb::TaskPushNotificationConfig, Generation)>,
    /// Which of the new task's commits may be held back (see [`Hold`]).
    pub(crate) hold: Hold,
}

/// An event an agent publishes.
pub(crate) use trident_core::TurnUpdate as Update;

pub(crate) struct Run {
    inner: Arc<Inner>,
    scope: Scope,
    task_id: Arc<str>,
    context_id: Arc<str>,
    turn: u64,
    cancel: tokio_util::sync::CancellationToken,
    creation: tokio::sync::Mutex<Option<Creation>>,
    live: OnceLock<LiveGuard>,
    first: Mutex<Option<oneshot::Sender<First>>>,
}

impl Run {
    /// A turn that creates a new task on its first task event.
    pub(crate) fn new_task(
        inner: Arc<Inner>,
        scope: Scope,
        task_id: Arc<str>,
        context_id: Arc<str>,
        creation: Creation,
        cancel: tokio_util::sync::CancellationToken,
    ) -> (Arc<Self>, oneshot::Receiver<First>) {
        let (tx, rx) = oneshot::channel();
        let run = Self {
            inner,
            scope,
            task_id,
            context_id,
            turn: 1,
            cancel,
            creation: tokio::sync::Mutex::new(Some(creation)),
            live: OnceLock::new(),
            first: Mutex::new(Some(tx)),
        };
        (Arc::new(run), rx)
    }

    /// Runs the turn of an existing task that [`Live::begin_turn`] just began (a follow-up
    /// message, or a re-run after its process stopped) in the background: marks it running,
    /// with `ctx`'s token as the turn's one cancel token (CancelTask, a superseding write and
    /// a failed commit all fire it, and the executor hears it).
    pub(crate) fn spawn_existing(
        inner: &Arc<Inner>,
        live: &Arc<Live>,
        w: &mut Writer,
        ctx: RequestContext,
    ) {
        let run = Self::existing(inner, live, w, &ctx);
        tokio::spawn(run.drive(inner.executor.clone(), Box::new(ctx)));
    }

    /// The turn of an existing task that [`Live::begin_turn`] just began, marked running with
    /// `ctx`'s token as its one cancel token (see [`Run::spawn_existing`]); the caller drives
    /// it ([`Run::drive`]) with `ctx`, inline or in the background.
    pub(crate) fn existing(
        inner: &Arc<Inner>,
        live: &Arc<Live>,
        w: &mut Writer,
        ctx: &RequestContext,
    ) -> Arc<Self> {
        let turn = w.start_turn(ctx.cancel.clone());
        Arc::new(Self {
            inner: inner.clone(),
            scope: live.scope().clone(),
            task_id: live.task_id().clone(),
            context_id: ctx.context_id.as_str().into(),
            turn,
            cancel: ctx.cancel.clone(),
            creation: tokio::sync::Mutex::new(None),
            live: OnceLock::from(LiveGuard::new(inner.clone(), live.clone())),
            first: Mutex::new(None),
        })
    }

    /// The turn, which ran inline on its caller's task until now, continues in the background
    /// (it waits on something): it stops holding commits, and what it holds is stored at once,
    /// so a turn that takes time is visible (ListTasks, GetTask) while it runs, as any other.
    pub(crate) async fn leave_caller(&self) {
        let mut creation = self.creation.lock().await;
        if let Some(c) = creation.as_mut() {
            c.hold = Hold::Off;
            return;
        }
        drop(creation);
        let Some(guard) = self.live.get() else {
            return;
        };
        let live = guard.live();
        let mut w = live.lock().await;
        // A failure stops the turn (`Live::fault` cancels the writer's token, this turn's
        // own) and is what waiting callers and readers get: nothing is left to do here.
        let _ = live.end_hold(&self.inner, &mut w).await;
    }

    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    fn send_first(&self, first: First) -> bool {
        match lock_std(&self.first).take() {
            Some(tx) => {
                let _ = tx.send(first);
                true
            }
            None => false,
        }
    }

    /// Runs the executor to the end of the turn and applies the end-of-turn rules.
    ///
    /// `ctx` comes boxed (see [`Inner::start`]): the future, which lives as long as the turn,
    /// holds a pointer until its first poll hands the context to the executor (unboxed it
    /// would keep about 1 KiB per idle stream after the executor took its own).
    pub(crate) async fn drive(
        self: Arc<Self>,
        executor: Arc<dyn AgentExecutor>,
        ctx: Box<RequestContext>,
    ) {
        let sink = EventSink::new(self.clone());
        // Unboxed in a block of its own, which frees the box at once (a box moved out of is
        // freed where its variable ends: here, the end of the turn).
        let execute = executor.execute(
            {
                let boxed = ctx;
                *boxed
            },
            sink,
        );
        let result = match AssertUnwindSafe(execute).catch_unwind().await {
            Ok(r) => r,
            Err(_) => Err(A2aError::internal("the agent panicked")),
        };
        // Boxed: inline, its state (store writes, locks) would size this future, which lives
        // as long as the turn: 2.4 KiB per idle stream, whose agent waits inside it.
        Box::pin(self.finish(result)).await;
    }

    async fn finish(&self, result: Result<(), A2aError>) {
        let Some(guard) = self.live.get() else {
            let err = match result {
                Err(e) => e,
                Ok(()) => A2aError::new(
                    ErrorKind::InvalidAgentResponse,
                    "the agent finished without replying",
                ),
            };
            if !self.send_first(First::Failed(err.clone())) {
                tracing::debug!(error = %err, "turn ended after a direct reply");
            }
            return;
        };
        let live = guard.live();
        let mut w = live.lock().await;
        if w.keeps_behind() {
            // What the turn committed behind it is stored before the turn ends (a failure
            // ends it as any failed commit does).
            let _ = self.commit_event(live, &mut w, None).await;
        }
        if w.is_turn(self.turn) {
            let state = w.task().state();
            let failure = match result {
                Err(e) if !state.is_terminal() => Some(e.message().to_owned()),
                Ok(()) if state.is_in_progress() => {
                    Some("the agent finished without a final state".to_owned())
                }
                _ => None,
            };
            // A turn stopped because its progress could not be stored fails for that reason.
            let failure = failure.map(|text| match live.fault_error() {
                Some(fault) => format!("the task failed: {}", fault.message()),
                None => text,
            });
            if let Some(text) = failure {
                let message = self.agent_message(text);
                if let Err(e) = self
                    .apply(
                        &mut w,
                        Update::Status {
                            state: pb::TaskState::Failed,
                            message: Some(message),
                        },
                    )
                    .await
                {
                    tracing::warn!(task = %self.task_id, error = %e, "could not record the failed turn");
                }
            }
        }
        live.end_turn(&mut w, self.turn);
    }

    /// A `ROLE_AGENT` text message carrying this turn's ids.
    pub(crate) fn agent_message(&self, text: String) -> pb::Message {
        agent_text(&self.task_id, &self.context_id, text)
    }

    pub(crate) async fn reply(&self, mut message: pb::Message) -> Result<(), A2aError> {
        if self.live.get().is_some() {
            return Err(A2aError::new(
                ErrorKind::InvalidAgentResponse,
                "a direct reply is only allowed before any task event",
            ));
        }
        let creation = self.creation.lock().await.take();
        if creation.is_none() {
            return Err(A2aError::new(
                ErrorKind::InvalidAgentResponse,
                "this turn already replied",
            ));
        }
        message.role = pb::Role::Agent as i32;
        message.context_id = String::from(&*self.context_id);
        message.task_id.clear();
        if message.message_id.is_empty() {
            message.message_id = uuid::Uuid::new_v4().to_string();
        }
        self.send_first(First::Message(message));
        Ok(())
    }

    /// Applies an agent event to the task and commits it.
    ///
    /// Not an `async fn`, nor nested ones: each `async fn` keeps its arguments in its future
    /// for good, so the update (about 200 B) would be there once per level, and the future,
    /// which the sink boxes for every event, past the allocator's small sizes. The future
    /// holds the update once, in place, until the event is built; after that it awaits the
    /// commit alone.
    pub(crate) fn update(
        &self,
        update: Update,
    ) -> impl std::future::Future<Output = Result<(), A2aError>> + Send + '_ {
        let mut update = Some(update);
        async move {
            // The first task event creates the task: snapshot and both events in one commit.
            // Boxed, on that event only: inline, the creation's state (1.9 KiB) would size the
            // future of every event.
            if self.live.get().is_none() {
                Box::pin(self.create_with(&mut update)).await?;
            }
            let Some(update) = update.take() else {
                return Ok(());
            };
            let guard = self
                .live
                .get()
                .ok_or_else(|| A2aError::internal("no task"))?;
            let live = guard.live();
            let mut w = live.lock().await;
            if !w.is_turn(self.turn) || !w.running() {
                return Err(A2aError::unsupported("this turn has ended"));
            }
            if w.is_stale() {
                // Boxed: a cold branch (a store write failed or another process wrote the
                // task) whose future, inline, would size every event's.
                Box::pin(live.sync(&self.inner, &mut w)).await?;
            }
            let event = self.checked_event(&mut w, update)?;
            // Decided before anything is awaited: the future keeps no event or error across.
            let now = if live.may_commit_behind(&self.inner, &w) {
                match live.commit_behind(&self.inner, &mut w, event) {
                    Ok(false) => return Ok(()),
                    Ok(true) => {
                        // The events kept behind the turn reached their bound: the agent
                        // waits for the flusher's write before its next (boxed: a cold
                        // branch).
                        drop(w);
                        Box::pin(live.wait_flight()).await;
                        return Ok(());
                    }
                    Err(e) => Err(e),
                }
            } else {
                Ok(SharedEvent::measured(event))
            };
            match now {
                Ok(event) => self.commit_event(live, &mut w, Some(event)).await,
                Err(e) => Box::pin(self.commit_failed(live, &mut w, e)).await,
            }
        }
    }

    /// Applies an agent event to the snapshot and commits it (see [`Run::update`]).
    async fn apply(&self, w: &mut Writer, update: Update) -> Result<(), A2aError> {
        let guard = self
            .live
            .get()
            .ok_or_else(|| A2aError::internal("no task"))?;
        let live = guard.live();
        if w.is_stale() {
            Box::pin(live.sync(&self.inner, w)).await?;
        }
        let event = self.checked_event(w, update)?;
        self.commit_event(live, w, Some(SharedEvent::measured(event)))
            .await
    }

    /// Applies `update` to the task in `w` (after checking that this turn may) and returns
    /// the event that says so, to commit.
    fn checked_event(
        &self,
        w: &mut Writer,
        update: Update,
    ) -> Result<pb::StreamResponse, A2aError> {
        if w.record().turn != self.turn {
            return Err(A2aError::unsupported(
                "this turn was superseded by a newer message to the task",
            ));
        }
        let current = w.task().state();
        if current.is_terminal() {
            return Err(A2aError::unsupported(format!(
                "task {} is already {}",
                self.task_id,
                current.as_str_name()
            )));
        }
        let event = self.event(update)?;
        w.apply(&event);
        Ok(event)
    }

    /// Commits `event`, which [`Run::checked_event`] applied to the task in `w` (or none:
    /// what `w` holds is stored unless held). Shared, so this future, which holds it for
    /// good, holds a pointer rather than the event itself (see [`Run::update`]), and no list
    /// is allocated for the one event.
    async fn commit_event(
        &self,
        live: &Arc<Live>,
        w: &mut Writer,
        event: Option<SharedEvent>,
    ) -> Result<(), A2aError> {
        match live.commit_shared(&self.inner, w, event).await {
            Ok(_) => Ok(()),
            Err(e) => self.commit_failed(live, w, e).await,
        }
    }

    /// A commit of this turn failed with `e`: a conflict ends the turn (another process wrote
    /// the task), anything else faults the task. Returns the error the agent gets.
    async fn commit_failed(
        &self,
        live: &Arc<Live>,
        w: &mut Writer,
        e: StoreError,
    ) -> Result<(), A2aError> {
        match e {
            StoreError::Conflict => {
                // Another process wrote the task (a cancel, a newer turn, or the recovery of
                // a lease it thought lapsed): this turn is over.
                Box::pin(live.sync(&self.inner, w)).await?;
                self.cancel.cancel();
                Err(A2aError::unsupported(format!(
                    "task {} was changed by another process; this turn has ended",
                    self.task_id
                )))
            }
            e => {
                // Nothing this turn does can be stored any more: stop it and fail the task
                // rather than leave it WORKING with callers waiting on it.
                let error = store_error(e);
                self.cancel.cancel();
                live.fault(&self.inner, w, error.clone());
                Err(error)
            }
        }
    }

    /// The event that says what an agent's update changes, to apply to the task
    /// ([`crate::store::apply`]: the same function the stores rebuild tasks with, so the
    /// events of a commit describe exactly what it changed).
    fn event(&self, update: Update) -> Result<pb::StreamResponse, A2aError> {
        let event = match update {
            Update::Status { state, message } => {
                if state == pb::TaskState::Unspecified {
                    return Err(A2aError::new(
                        ErrorKind::InvalidAgentResponse,
                        "a status needs a state",
                    ));
                }
                let message = message.map(|mut m| {
                    m.role = pb::Role::Agent as i32;
                    m.context_id = String::from(&*self.context_id);
                    m.task_id = String::from(&*self.task_id);
                    m
                });
                pb::StreamResponse::new(pb::stream_response::Payload::StatusUpdate(
                    pb::TaskStatusUpdateEvent {
                        task_id: String::from(&*self.task_id),
                        context_id: String::from(&*self.context_id),
                        status: Some(pb::TaskStatus {
                            state: state as i32,
                            message,
                            timestamp: Some(Timestamp::now()),
                        }),
                        metadata: None,
                        generation: 0,
                    },
                ))
            }
            Update::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                if artifact.artifact_id.is_empty() {
                    return Err(A2aError::new(
                        ErrorKind::InvalidAgentResponse,
                        "an artifact needs an artifactId",
                    ));
                }
                pb::StreamResponse::new(pb::stream_response::Payload::ArtifactUpdate(
                    pb::TaskArtifactUpdateEvent {
                        task_id: String::from(&*self.task_id),
                        context_id: String::from(&*self.context_id),
                        artifact: Some(artifact),
                        append,
                        last_chunk,
                        metadata: None,
                        generation: 0,
                    },
                ))
            }
        };
        Ok(event)
    }

    /// On the turn's first task event: creates the task with the update in `slot` applied,
    /// storing the snapshot and both events (the task as submitted, then the update) in one
    /// commit, and empties `slot`. When the task already exists, leaves `slot` alone.
    async fn create_with(&self, slot: &mut Option<Update>) -> Result<(), A2aError> {
        if self.live.get().is_some() {
            return Ok(());
        }
        let mut creation = self.creation.lock().await;
        if self.live.get().is_some() {
            return Ok(());
        }
        let Some(update) = slot.take() else {
            return Ok(());
        };
        let Some(Creation {
            message,
            push,
            hold,
        }) = creation.take()
        else {
            return Err(A2aError::new(
                ErrorKind::InvalidAgentResponse,
                "this turn already replied with a message",
            ));
        };
        let first = match self.event(update) {
            Ok(event) => event,
            Err(e) => {
                // Nothing was created: the turn may still reply or send a valid event.
                *creation = Some(Creation {
                    message,
                    push,
                    hold,
                });
                return Err(e);
            }
        };
        let mut task = pb::Task {
            id: String::from(&*self.task_id),
            context_id: String::from(&*self.context_id),
            status: Some(pb::TaskStatus::now(pb::TaskState::Submitted, None)),
            history: vec![message],
            ..Default::default()
        };
        // The commit's first event, the task as submitted. A held turn's (a blocking call's)
        // is encoded from the task at once instead of copied: nobody can read it before it is
        // stored, and then most likely nobody does (a store writes its bytes as they are).
        // Any other turn's is published as it is stored, to streams that would decode it.
        let submitted = match hold {
            Hold::Turn => SharedEvent::task_snapshot(&task),
            Hold::Off => SharedEvent::new(pb::StreamResponse::new(
                pb::stream_response::Payload::Task(task.clone()),
            )),
        };
        // The task's first generation (the events logged carry none: see `store::apply`).
        task.generation = 1;
        crate::store::apply(&mut task, &first);
        let has_push = push.is_some();
        if let Some((config, generation)) = push {
            self.inner
                .stores
                .push
                .put(&self.scope, &config, generation)
                .await
                .map_err(store_error)?;
        }
        let mut record = TaskRecord::new(task, 0);
        record.turn = self.turn;
        let live = Arc::new(Live::new_unstored(
            self.scope.clone(),
            self.task_id.clone(),
            record,
            self.inner.config.tail_capacity,
            hold,
            has_push,
        ));
        let mut w = live.lock().await;
        w.start_turn(self.cancel.clone());
        // The task as submitted, then `update`: one commit stores the snapshot and both
        // events (and registers the task), now or when the hold ends.
        live.commit_creation(&self.inner, &mut w, submitted, first)
            .await
            .map_err(store_error)?;
        drop(w);
        let _ = self
            .live
            .set(LiveGuard::new(self.inner.clone(), live.clone()));
        self.send_first(First::Task(live));
        Ok(())
    }
}

/// What the agent's [`EventSink`] delivers to: this turn.
#[async_trait::async_trait]
impl trident_core::TurnEvents for Run {
    fn task_id(&self) -> &str {
        Run::task_id(self)
    }

    fn agent_message(&self, text: String) -> pb::Message {
        Run::agent_message(self, text)
    }

    async fn reply(&self, message: pb::Message) -> Result<(), A2aError> {
        Run::reply(self, message).await
    }

    // Written out rather than an `async fn`, whose future would hold the update once more
    // around `Run::update`'s (see there).
    fn update<'a, 'b>(
        &'a self,
        update: Update,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), A2aError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(Run::update(self, update))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `make` returns (never called: only its type is needed).
    fn future_size<F: std::future::Future>(_make: impl FnOnce() -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// The sink boxes [`Run::update`]'s future for every event: it must stay within glibc's
    /// per-thread cache of small blocks (1032 B), whose allocation is several times cheaper
    /// than the general path. It grows past that when the update is carried by value through
    /// nested `async fn`s (each keeps its arguments for good) or the creation is inlined.
    #[test]
    #[allow(unreachable_code, clippy::diverging_sub_expression)]
    fn the_per_event_future_stays_a_small_allocation() {
        let run: fn() -> &'static Run = || unreachable!("only the type is used");
        let size = future_size(|| run().update(unreachable!("only the type is used")));
        assert!(size <= 1032, "Run::update's future is {size} B");
    }
}
