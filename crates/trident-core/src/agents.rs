//! Demo agents used by `trident serve`, the tests and the benchmarks.

use std::time::Duration;

use trident_proto::{Artifact, Part};

use crate::{A2aError, AgentExecutor, EventSink, RequestContext};

/// Completes each task with one artifact echoing the user's text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.artifact(Artifact::new("echo", vec![Part::text(ctx.text())]))
            .await?;
        sink.complete().await
    }
}

/// Answers with a direct message (no task) echoing the user's text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reply;

#[async_trait::async_trait]
impl AgentExecutor for Reply {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.reply_text(ctx.text()).await
    }
}

/// `WORKING`, then `chunks` chunks of one artifact (`append` after the first, `lastChunk` on
/// the last), then `COMPLETED`.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    /// Number of artifact chunks.
    pub chunks: usize,
    /// Pause between chunks.
    pub pause: Duration,
}

impl Default for Stream {
    fn default() -> Self {
        Self {
            chunks: 5,
            pause: Duration::from_millis(10),
        }
    }
}

#[async_trait::async_trait]
impl AgentExecutor for Stream {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        for i in 0..self.chunks {
            if !self.pause.is_zero() {
                tokio::time::sleep(self.pause).await;
            }
            let chunk = Artifact::new(
                "stream",
                vec![Part::text(format!("chunk {i} of {}", ctx.text()))],
            );
            sink.artifact_chunk(chunk, i > 0, i + 1 == self.chunks)
                .await?;
        }
        sink.complete().await
    }
}

/// Asks for the user's name (`INPUT_REQUIRED`), then completes greeting them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Input;

#[async_trait::async_trait]
impl AgentExecutor for Input {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        if ctx.task.is_none() {
            return sink.input_required("What is your name?").await;
        }
        sink.artifact(Artifact::new(
            "greeting",
            vec![Part::text(format!("Hello, {}!", ctx.text()))],
        ))
        .await?;
        sink.complete().await
    }
}

/// Works until canceled, or completes after `timeout`.
#[derive(Debug, Clone, Copy)]
pub struct Slow {
    /// When to give up waiting for a cancel and complete.
    pub timeout: Duration,
}

impl Default for Slow {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
        }
    }
}

#[async_trait::async_trait]
impl AgentExecutor for Slow {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        tokio::select! {
            () = ctx.cancelled() => Ok(()),
            () = tokio::time::sleep(self.timeout) => sink.complete().await,
        }
    }
}

/// The conformance script (`docs/conformance-script.md`) in front of an agent: a task whose
/// first user message starts with a script word gets the script's behaviour, every other
/// message goes to `inner`. With it, `trident conformance` runs its scripted cases against
/// your agent too:
///
/// ```
/// use std::sync::Arc;
/// use trident_core::AgentExecutor;
/// use trident_core::agents::{Echo, Script};
///
/// // `Echo` stands for your own executor; wrap it only in the build you test, and give the
/// // engine `agent` (`Engine::builder(agent)`).
/// let agent: Arc<dyn AgentExecutor> = Arc::new(Script::new(Echo));
/// # let _ = agent;
/// ```
///
/// The words: `conformance-script` (the handshake: a direct message `conformance-script 1`),
/// `reply …` (a direct message echoing the text), `input` (`INPUT_REQUIRED` "What is your
/// name?", the follow-up completes with the artifact `Hello, <text>!`), `auth`
/// (`AUTH_REQUIRED`, the follow-up completes), `slow` (works until canceled), `stream N [MS]`
/// (N artifact chunks, MS ms apart, default 2), `fail` (`FAILED` with a status message),
/// `refuse` (a `ContentTypeNotSupported` error before any event), `reject` (`REJECTED`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Script<E> {
    inner: E,
}

impl<E> Script<E> {
    /// The script in front of `inner`.
    pub fn new(inner: E) -> Self {
        Self { inner }
    }
}

/// The script's handshake word, and its answer.
pub const SCRIPT_HANDSHAKE: (&str, &str) = ("conformance-script", "conformance-script 1");

#[async_trait::async_trait]
impl<E: AgentExecutor> AgentExecutor for Script<E> {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let first_turn = ctx.task.as_ref().map_or_else(
            || ctx.text(),
            |t| t.history.first().map(|m| m.text()).unwrap_or_default(),
        );
        let mut words = first_turn.split_whitespace();
        match words.next().unwrap_or("") {
            w if w == SCRIPT_HANDSHAKE.0 && ctx.task.is_none() => {
                sink.reply_text(SCRIPT_HANDSHAKE.1).await
            }
            "reply" => Reply.execute(ctx, sink).await,
            "input" => Input.execute(ctx, sink).await,
            "auth" if ctx.task.is_none() => {
                sink.auth_required("Sign in at the link I sent you").await
            }
            "auth" => Echo.execute(ctx, sink).await,
            "slow" => Slow::default().execute(ctx, sink).await,
            "stream" => {
                let chunks = words.next().and_then(|n| n.parse().ok()).unwrap_or(3);
                let pause_ms = words.next().and_then(|n| n.parse().ok()).unwrap_or(2);
                Stream {
                    chunks,
                    pause: Duration::from_millis(pause_ms),
                }
                .execute(ctx, sink)
                .await
            }
            "fail" => {
                sink.working().await?;
                Err(A2aError::internal("the demo agent was asked to fail"))
            }
            "refuse" => Err(A2aError::new(
                crate::ErrorKind::ContentTypeNotSupported,
                "the demo agent refuses this content",
            )),
            "reject" => sink.reject("I do not do that").await,
            _ => self.inner.execute(ctx, sink).await,
        }
    }

    async fn cancel(&self, task: &trident_proto::Task) -> Result<(), A2aError> {
        self.inner.cancel(task).await
    }
}

/// One agent with every demo behaviour: the conformance script ([`Script`]) in front of
/// [`Echo`], so anything that is not a script word echoes. Used by the behaviour suite so one
/// server covers every case.
#[derive(Debug, Clone, Copy, Default)]
pub struct Demo;

#[async_trait::async_trait]
impl AgentExecutor for Demo {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        Script::new(Echo).execute(ctx, sink).await
    }
}
