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

/// One agent with every demo behaviour, chosen by the first word of the user's text:
/// `reply …` (direct message), `input` (asks, then greets), `auth` (AUTH_REQUIRED, then
/// completes), `slow` (works until canceled), `stream N [MS]` (N chunks, MS ms apart, default
/// 2), `fail`, `reject`,
/// anything else echoes. Used by the behaviour suite so one server covers every case.
#[derive(Debug, Clone, Copy, Default)]
pub struct Demo;

#[async_trait::async_trait]
impl AgentExecutor for Demo {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let first_turn = ctx.task.as_ref().map_or_else(
            || ctx.text(),
            |t| t.history.first().map(|m| m.text()).unwrap_or_default(),
        );
        let mut words = first_turn.split_whitespace();
        match words.next().unwrap_or("") {
            "reply" => Reply.execute(ctx, sink).await,
            "input" => Input.execute(ctx, sink).await,
            "auth" if ctx.task.is_none() => {
                sink.auth_required("Sign in at the link I sent you").await
            }
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
            _ => Echo.execute(ctx, sink).await,
        }
    }
}
