//! Streaming: an agent that writes its answer as chunks of one artifact, and a client that
//! reads the events as they come. `cargo run --example streaming`
//!
//! The agent publishes `WORKING`, then the artifact `poem` in three chunks (the first creates
//! it, the next ones are appended to it, the last is marked last), then `COMPLETED`. Each
//! [`EventSink`] call returns once the event is in the task's log, so every reader — this
//! stream, a later `SubscribeToTask`, a webhook — sees the same events in the same order,
//! each with its sequence number ([`StreamEvent::seq`], the SSE `id:` a client resumes from).

use trident::client::{Binding, ClientBuilder, Texts};
use trident::futures::StreamExt;
use trident::proto::stream_response::Payload;
use trident::proto::{AgentCard, Artifact, Message, Part, SendMessageRequest};
use trident::{
    A2aError, AgentExecutor, CallContext, EventSink, RequestContext, Server, StreamEvent,
};

/// Answers with a three-line poem about the user's text, one line per artifact chunk.
pub struct Poet;

#[trident::async_trait]
impl AgentExecutor for Poet {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        let lines = [
            format!("Of {} I sing,", ctx.text()),
            "one line at a time,".to_owned(),
            "and then I stop.".to_owned(),
        ];
        let last = lines.len() - 1;
        for (i, line) in lines.into_iter().enumerate() {
            let chunk = Artifact::new("poem", vec![Part::text(line)]);
            // `append`: add to the artifact sent so far; `last_chunk`: the artifact is whole.
            sink.artifact_chunk(chunk, i > 0, i == last).await?;
        }
        sink.complete().await
    }
}

/// One line per stream event: what kind of event it is and what it says.
pub fn describe(event: &StreamEvent) -> String {
    match &event.response.payload {
        Some(Payload::Task(task)) => format!("task {:?}", task.state()),
        Some(Payload::StatusUpdate(update)) => {
            let state = update
                .status
                .as_ref()
                .map(|s| s.state())
                .unwrap_or_default();
            format!("status {state:?}")
        }
        Some(Payload::ArtifactUpdate(update)) => format!(
            "chunk {:?} append={} last={}",
            event.text(),
            update.append,
            update.last_chunk
        ),
        Some(Payload::Message(message)) => format!("message {:?}", message.text()),
        None => "empty event".to_owned(),
    }
}

/// Serves [`Poet`] on a free loopback port, streams one message over `binding` and returns
/// the events as [`describe`] tells them, in order.
pub async fn run(
    binding: Binding,
    topic: &str,
) -> Result<Vec<String>, Box<dyn std::error::Error + Send + Sync>> {
    let server = Server::builder(Poet)
        .card(AgentCard::builder("Poet", "Writes a short poem, streamed line by line").build())
        .bind("127.0.0.1:0")
        .build()
        .await?
        .spawn();

    let agent = ClientBuilder::new()
        .prefer(&[binding])
        .build()?
        .connect(server.origin())
        .await?;
    let request = SendMessageRequest {
        message: Some(Message::user("m-1", vec![Part::text(topic)])),
        ..Default::default()
    };
    let mut events = agent
        .service
        .send_streaming_message(&CallContext::new(), request)
        .await?;
    let mut seen = Vec::new();
    // The stream ends after the terminal status.
    while let Some(event) = events.next().await {
        seen.push(describe(&event?));
    }

    server.shutdown().await?;
    Ok(seen)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for binding in Binding::ALL {
        println!("{binding}:");
        for event in run(binding, "rivers").await? {
            println!("  {event}");
        }
    }
    Ok(())
}
