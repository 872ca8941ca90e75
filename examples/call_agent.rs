//! An agent that calls another agent: `cargo run --example call_agent`.
//!
//! Three parties, all on loopback ports of this process:
//!
//! 1. **Writer**, the agent being called, which answers in chunks of one artifact.
//! 2. **Relay**, an agent written here with Trident: for each task it connects to the writer
//!    with a [`ClientBuilder`] (timeout, a default header, gRPC first), streams the user's text to
//!    it, and publishes each chunk it gets back as a chunk of its own artifact. The caller's
//!    deadline needs no `tokio::time::timeout`: the call carries it ([`CallContext::with_timeout`])
//!    and the client ends the stream with `DeadlineExceeded` when it passes, telling the writer
//!    the time left on the way. The relay's call ends too when its own task is cancelled.
//! 3. A user, who calls the relay over JSON-RPC and prints its answer with [`Texts`].
//!
//! Everything comes from the one crate users depend on, `trident`: the agent author's API,
//! the client and the server builder. `tests/it/example.rs` runs [`run`] end to end.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use trident::client::{Binding, Client, ClientBuilder, TaskId, Texts};
use trident::futures::StreamExt;
use trident::proto as pb;
use trident::{A2aError, AgentExecutor, CallContext, EventSink, RequestContext, Server};

/// The writer: answers "chunk N of TEXT" in three chunks of one artifact.
struct Writer;

#[trident::async_trait]
impl AgentExecutor for Writer {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        let text = ctx.text();
        for i in 0..3 {
            let chunk = pb::Artifact::new(
                "story",
                vec![pb::Part::text(format!("chunk {i} of {text}"))],
            );
            sink.artifact_chunk(chunk, i > 0, i == 2).await?;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sink.complete().await
    }
}

/// The relay: forwards each task to another agent and republishes its answer.
struct Relay {
    client: Client,
    writer: String,
}

#[trident::async_trait]
impl AgentExecutor for Relay {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        // `connect` reads the writer's card once (and the client's cache keeps it for as long as
        // its Cache-Control allows); the same client serves every task.
        let writer = self.client.connect(&self.writer).await?;
        // The whole exchange may take 10 s; if our own task is cancelled, so is the call.
        let cancelled = CancellationToken::new();
        let cx = CallContext::new()
            .with_timeout(Duration::from_secs(10))
            .with_cancellation(cancelled.clone());
        let _stop = cancelled.clone().drop_guard();
        let watch = {
            let ctx = ctx.clone();
            async move {
                ctx.cancelled().await;
                cancelled.cancel();
            }
        };
        let watcher = tokio::spawn(watch);

        let request = pb::SendMessageRequest {
            message: Some(pb::Message::user(
                format!("{}-relayed", ctx.message.message_id),
                vec![pb::Part::text(ctx.text())],
            )),
            ..Default::default()
        };
        let mut events = writer.service.send_streaming_message(&cx, request).await?;
        let mut upstream_task = None;
        let mut chunks = 0;
        while let Some(event) = events.next().await {
            let event = event?;
            upstream_task = upstream_task.or_else(|| event.task_id().map(str::to_owned));
            let text = event.text();
            if text.is_empty() {
                continue;
            }
            let chunk = pb::Artifact::new("relayed", vec![pb::Part::text(text)]);
            sink.artifact_chunk(chunk, chunks > 0, false).await?;
            chunks += 1;
        }
        watcher.abort();
        let upstream_task = upstream_task.unwrap_or_else(|| "none".to_owned());
        let note = format!(
            "relayed {chunks} chunks of {} task {upstream_task}",
            writer.binding
        );
        let last = pb::Artifact::new("relayed", vec![pb::Part::text(note)]);
        sink.artifact_chunk(last, chunks > 0, true).await?;
        sink.complete().await
    }
}

/// Serves `executor` on every binding on a loopback port (in-memory store); returns its
/// origin.
async fn serve(executor: impl AgentExecutor, name: &str) -> Result<String, A2aError> {
    let server = Server::builder(executor)
        .card(trident::default_card(name, "An example agent"))
        .bind("127.0.0.1:0")
        .build()
        .await
        .map_err(|e| A2aError::internal(format!("serving {name}: {e}")))?;
    let origin = format!("http://{}", server.local_addr());
    tokio::spawn(server.serve());
    Ok(origin)
}

/// Starts the writer and the relay, asks the relay to write about `topic`, and returns what it
/// answered.
pub async fn run(topic: &str) -> Result<String, A2aError> {
    let writer = serve(Writer, "Writer").await?;
    let client = ClientBuilder::new()
        .timeout(Duration::from_secs(5))
        .header("x-caller", "relay")
        .prefer(&[Binding::Grpc, Binding::Rest])
        .build()?;
    let relay = serve(Relay { client, writer }, "Relay").await?;

    let user = ClientBuilder::new()
        .prefer(&["jsonrpc"
            .parse()
            .map_err(|e| A2aError::internal(format!("{e}")))?])
        .build()?;
    let agent = user.connect(&relay).await?;
    let request = pb::SendMessageRequest {
        message: Some(pb::Message::user("m-1", vec![pb::Part::text(topic)])),
        ..Default::default()
    };
    let cx = CallContext::new().with_timeout(Duration::from_secs(20));
    let reply = agent.service.send_message(&cx, request).await?;
    Ok(reply.text())
}

#[tokio::main]
async fn main() -> Result<(), A2aError> {
    let answer = run("deadlines").await?;
    println!("{answer}");
    Ok(())
}
