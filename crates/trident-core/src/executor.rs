//! The API agent authors write against: [`AgentExecutor`], [`RequestContext`], [`EventSink`];
//! and [`TurnEvents`], what an engine implements to receive a turn's events (the agent's API
//! depends on no engine: the engine depends on it).
//!
//! ```
//! use trident_core::{A2aError, AgentExecutor, EventSink, RequestContext};
//! use trident_proto::{Artifact, Part};
//!
//! /// Completes every task with one artifact holding the user's text.
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl AgentExecutor for Echo {
//!     async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
//!         sink.artifact(Artifact::new("echo", vec![Part::text(ctx.text())])).await?;
//!         sink.complete().await
//!     }
//! }
//! ```

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use trident_proto as pb;

use crate::{A2aError, Principal};

/// An agent. The engine calls `execute` once per turn: for the message that creates a task, and
/// again for each follow-up message to an interrupted task. At most one `execute` runs per task
/// at a time.
///
/// Contract:
/// - Reply with [`EventSink::reply`] (a direct message, no task is created), or publish task
///   events. The task is created by the first task event.
/// - Before `execute` returns, bring the task to a terminal or interrupted state. A task left
///   `SUBMITTED`/`WORKING` is marked `FAILED`; an `Err` marks it `FAILED` with the error text, or
///   (before any event) is returned to the caller as is.
/// - Stop promptly once [`RequestContext::cancelled`] fires: the task is already `CANCELED` and
///   further events are refused.
#[async_trait::async_trait]
pub trait AgentExecutor: Send + Sync + 'static {
    /// Handles one turn.
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError>;

    /// Called when a client cancels `task`, before the engine marks it `CANCELED`. Return an
    /// error (usually `TaskNotCancelable`) to refuse. The default accepts.
    async fn cancel(&self, task: &pb::Task) -> Result<(), A2aError> {
        let _ = task;
        Ok(())
    }

    /// Whether a turn may run again from its last user message when the process executing it
    /// stopped midway (the turn has no effects a second run would repeat harmfully). When
    /// `false` (the default) such a task ends `FAILED` with a message saying why.
    fn retry_safe(&self) -> bool {
        false
    }
}

/// What an agent knows about one turn.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The task's id (assigned before the task exists, so replies can refer to it).
    pub task_id: String,
    /// The context id (the client's, or generated).
    pub context_id: String,
    /// The user's message, with `taskId` and `contextId` filled in.
    pub message: pb::Message,
    /// The task as it was before this turn, for follow-up messages.
    pub task: Option<pb::Task>,
    /// The request's configuration.
    pub configuration: Option<pb::SendMessageConfiguration>,
    /// The request's metadata.
    pub metadata: Option<trident_proto::wkt::Struct>,
    /// The caller.
    pub principal: Principal,
    /// The tenant.
    pub tenant: String,
    /// Extensions the caller activated.
    pub extensions: Vec<String>,
    /// Cancelled when the task is canceled (set by the engine; [`RequestContext::cancelled`]
    /// waits on it).
    pub cancel: CancellationToken,
}

impl RequestContext {
    /// The text of the user's message (text parts joined by newlines).
    pub fn text(&self) -> String {
        self.message.text()
    }

    /// Whether the task was canceled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the task is canceled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }
}

/// An event an agent publishes through its [`EventSink`].
#[derive(Debug, Clone, PartialEq)]
pub enum TurnUpdate {
    /// A status change, with an optional agent message.
    Status {
        /// The new state.
        state: pb::TaskState,
        /// The agent's message, if any.
        message: Option<pb::Message>,
    },
    /// An artifact or an artifact chunk.
    Artifact {
        /// The artifact (its parts are the chunk).
        artifact: pb::Artifact,
        /// Add the parts to the artifact with the same id instead of replacing it.
        append: bool,
        /// The artifact is complete.
        last_chunk: bool,
    },
}

/// The receiving end of an [`EventSink`]: one executor turn as the engine running it sees it.
/// Implemented by the engine; agents never call it directly.
#[async_trait::async_trait]
pub trait TurnEvents: Send + Sync + 'static {
    /// The task this turn belongs to.
    fn task_id(&self) -> &str;

    /// A `ROLE_AGENT` message with one text part, carrying this turn's task and context ids.
    fn agent_message(&self, text: String) -> pb::Message;

    /// Answers with a direct message instead of a task (only as the first event of a new turn).
    async fn reply(&self, message: pb::Message) -> Result<(), A2aError>;

    /// Publishes one task event; returns once it is committed (see [`EventSink`]).
    async fn update(&self, update: TurnUpdate) -> Result<(), A2aError>;
}

/// Where an agent publishes what it does. Every call returns once the event is committed to
/// the task, or with an error when the event is not allowed (task already terminal, run ended).
/// A committed event is durable in the task's log before anyone can see it: at once, except in
/// a blocking SendMessage's new task (its id known to nobody else yet) while the turn has not
/// waited on anything, whose events are stored together in one commit when it returns or
/// starts waiting.
#[derive(Clone)]
pub struct EventSink {
    run: Arc<dyn TurnEvents>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("task_id", &self.run.task_id())
            .finish()
    }
}

/// What an [`EventSink`] call returns: the commit of one event, to await.
///
/// The sink's methods are plain functions that build the event at once and hand back the
/// engine's boxed future, not `async fn`s: an `async fn`'s arguments (a message, an artifact)
/// would sit inside the future, and so inside the agent's own future for as long as the agent
/// lives — an idle streaming agent, waiting after its `WORKING`, would keep their room for the
/// whole turn. Boxed, the pending call costs the agent a pointer.
pub type Commit<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), A2aError>> + Send + 'a>>;

impl EventSink {
    /// A sink delivering to `run` (what an engine hands the agent for one turn).
    pub fn new(run: Arc<dyn TurnEvents>) -> Self {
        Self { run }
    }

    /// A `ROLE_AGENT` message with one text part, carrying this task's ids.
    pub fn message(&self, text: impl Into<String>) -> pb::Message {
        self.run.agent_message(text.into())
    }

    /// Answers with a direct message instead of a task. Only valid as the first and only
    /// event of a new turn.
    pub fn reply(&self, message: pb::Message) -> Commit<'_> {
        self.run.reply(message)
    }

    /// Answers with a direct text message.
    pub fn reply_text(&self, text: impl Into<String>) -> Commit<'_> {
        let mut m = self.message(text);
        m.task_id.clear();
        self.reply(m)
    }

    /// Publishes a status change, with an optional agent message.
    pub fn status(&self, state: pb::TaskState, message: Option<pb::Message>) -> Commit<'_> {
        self.run.update(TurnUpdate::Status { state, message })
    }

    /// `WORKING`.
    pub fn working(&self) -> Commit<'_> {
        self.status(pb::TaskState::Working, None)
    }

    /// `COMPLETED`.
    pub fn complete(&self) -> Commit<'_> {
        self.status(pb::TaskState::Completed, None)
    }

    /// `FAILED` with an explanation.
    pub fn fail(&self, text: impl Into<String>) -> Commit<'_> {
        self.status(pb::TaskState::Failed, Some(self.message(text)))
    }

    /// `REJECTED` with an explanation.
    pub fn reject(&self, text: impl Into<String>) -> Commit<'_> {
        self.status(pb::TaskState::Rejected, Some(self.message(text)))
    }

    /// `INPUT_REQUIRED` with the question for the client.
    pub fn input_required(&self, text: impl Into<String>) -> Commit<'_> {
        self.status(pb::TaskState::InputRequired, Some(self.message(text)))
    }

    /// `AUTH_REQUIRED` with what is needed.
    pub fn auth_required(&self, text: impl Into<String>) -> Commit<'_> {
        self.status(pb::TaskState::AuthRequired, Some(self.message(text)))
    }

    /// Publishes a whole artifact (new, or replacing one with the same id).
    pub fn artifact(&self, artifact: pb::Artifact) -> Commit<'_> {
        self.artifact_chunk(artifact, false, true)
    }

    /// Publishes an artifact chunk: `append` adds the parts to the artifact with the same id,
    /// `last_chunk` marks it complete.
    pub fn artifact_chunk(
        &self,
        artifact: pb::Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Commit<'_> {
        self.run.update(TurnUpdate::Artifact {
            artifact,
            append,
            last_chunk,
        })
    }
}
