//! Cancellation: a long task that stops when the client cancels it.
//! `cargo run --example cancel`
//!
//! The agent counts to 1000, one step every 20 ms, publishing its progress as chunks of an
//! artifact. The client starts the task without waiting for it (`returnImmediately`),
//! subscribes to it, and cancels it once it sees progress. `CancelTask` marks the task
//! `CANCELED` at once (after [`AgentExecutor::cancel`], which may refuse) and fires
//! [`RequestContext::cancelled`]; the agent, which waits on that beside its work, stops at the
//! step it was on. Events it would publish after that are refused, so nothing follows
//! `CANCELED` in the task's log.

use std::time::Duration;

use tokio::sync::mpsc;
use trident::client::{Binding, ClientBuilder, TaskId};
use trident::futures::StreamExt;
use trident::proto::stream_response::Payload;
use trident::proto::{
    AgentCard, Artifact, CancelTaskRequest, Message, Part, SendMessageConfiguration,
    SendMessageRequest, SubscribeToTaskRequest, TaskState,
};
use trident::{A2aError, AgentExecutor, CallContext, EventSink, RequestContext, Server};

/// How many steps a task takes when nobody cancels it.
pub const STEPS: u32 = 1000;

/// Counts to [`STEPS`], slowly; reports on `stopped` the step at which it was cancelled.
pub struct Counter {
    /// Where the agent says it stopped early (for the demonstration).
    pub stopped: mpsc::UnboundedSender<u32>,
}

#[trident::async_trait]
impl AgentExecutor for Counter {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        for step in 1..=STEPS {
            // The work of one step, abandoned as soon as the task is cancelled.
            tokio::select! {
                () = ctx.cancelled() => {
                    let _ = self.stopped.send(step);
                    return Ok(());
                }
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            let progress = Artifact::new("progress", vec![Part::text(format!("step {step}"))]);
            if let Err(e) = sink.artifact_chunk(progress, step > 1, step == STEPS).await {
                // Cancelled just as the step's wait ended: the task refuses further events,
                // and this step is where the agent stopped.
                if ctx.is_cancelled() {
                    let _ = self.stopped.send(step);
                    return Ok(());
                }
                return Err(e);
            }
        }
        sink.complete().await
    }
}

/// What the client saw: the state after `CancelTask`, the last state its stream showed, and
/// the step the agent stopped at.
#[derive(Debug)]
pub struct Outcome {
    /// The task `CancelTask` returned.
    pub canceled: TaskState,
    /// The last status the subscription delivered before it ended.
    pub last_streamed: TaskState,
    /// Steps the agent had begun when it noticed the cancellation.
    pub stopped_at: u32,
}

/// Serves [`Counter`] on a free loopback port, starts a task over `binding`, cancels it once
/// it has made progress, and reports what happened.
pub async fn run(binding: Binding) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let (stopped, mut stops) = mpsc::unbounded_channel();
    let server = Server::builder(Counter { stopped })
        .card(AgentCard::builder("Counter", "Counts slowly; cancel it any time").build())
        .bind("127.0.0.1:0")
        .build()
        .await?
        .spawn();
    let agent = ClientBuilder::new()
        .prefer(&[binding])
        .build()?
        .connect(server.origin())
        .await?;
    let cx = CallContext::new();

    // Start the task and return at once.
    let request = SendMessageRequest {
        message: Some(Message::user("m-1", vec![Part::text("count")])),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    let started = agent.service.send_message(&cx, request).await?;
    let id = started.task_id().ok_or("no task")?.to_owned();

    // Follow it until it has made progress, then cancel it.
    let subscribe = SubscribeToTaskRequest {
        id: id.clone(),
        ..Default::default()
    };
    let mut events = agent.service.subscribe_to_task(&cx, subscribe).await?;
    while let Some(event) = events.next().await {
        if let Some(Payload::ArtifactUpdate(_)) = event?.response.payload {
            break;
        }
    }
    let cancel = CancelTaskRequest {
        id,
        ..Default::default()
    };
    let canceled = agent.service.cancel_task(&cx, cancel).await?.state();

    // The subscription ends with the terminal status.
    let mut last_streamed = TaskState::Unspecified;
    while let Some(event) = events.next().await {
        match event?.response.payload.as_ref() {
            Some(Payload::StatusUpdate(update)) => {
                last_streamed = update
                    .status
                    .as_ref()
                    .map(|s| s.state())
                    .unwrap_or_default();
            }
            Some(Payload::Task(task)) => last_streamed = task.state(),
            _ => {}
        }
    }
    let stopped_at = stops.recv().await.ok_or("the agent never stopped")?;

    server.shutdown().await?;
    Ok(Outcome {
        canceled,
        last_streamed,
        stopped_at,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for binding in Binding::ALL {
        let outcome = run(binding).await?;
        println!(
            "{binding}: CancelTask -> {:?}, stream ended on {:?}, agent stopped at step {} of {STEPS}",
            outcome.canceled, outcome.last_streamed, outcome.stopped_at
        );
    }
    Ok(())
}
