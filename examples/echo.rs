//! The smallest whole program: an agent that echoes, served on all three bindings, and a client
//! that calls it over each. `cargo run --example echo`
//!
//! [`Server::builder`] wires everything (engine, in-memory store, gRPC + JSON-RPC + HTTP+JSON
//! on one port, the card and its interfaces); [`Server::spawn`] serves in the background so
//! that the same program can be the client. The client ([`ClientBuilder`]) reads the agent's
//! card, picks the binding it is told to prefer and returns the agent as an
//! `Arc<dyn A2aService>`: the calls below are the same whatever the binding.

use trident::client::{Binding, ClientBuilder, Texts};
use trident::proto::{AgentCard, Artifact, Message, Part, SendMessageRequest, TaskState};
use trident::{A2aError, AgentExecutor, CallContext, EventSink, RequestContext, Server};

/// Completes each task with one artifact holding the user's text.
pub struct Echo;

#[trident::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.artifact(Artifact::new("echo", vec![Part::text(ctx.text())]))
            .await?;
        sink.complete().await
    }
}

/// Serves [`Echo`] on a free loopback port, sends `text` over `binding` and returns the
/// task's final state and text.
pub async fn run(
    binding: Binding,
    text: &str,
) -> Result<(TaskState, String), Box<dyn std::error::Error + Send + Sync>> {
    let server = Server::builder(Echo)
        .card(AgentCard::builder("Echo", "Repeats what you say").build())
        .bind("127.0.0.1:0")
        .build()
        .await?
        .spawn();

    let client = ClientBuilder::new().prefer(&[binding]).build()?;
    let agent = client.connect(server.origin()).await?;
    let request = SendMessageRequest {
        message: Some(Message::user("m-1", vec![Part::text(text)])),
        ..Default::default()
    };
    let reply = agent
        .service
        .send_message(&CallContext::new(), request)
        .await?;
    // A blocking send answers with the task as it ended (or with a direct message).
    let state = match &reply.payload {
        Some(trident::proto::send_message_response::Payload::Task(task)) => task.state(),
        _ => TaskState::Unspecified,
    };

    server.shutdown().await?;
    Ok((state, reply.text()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for binding in Binding::ALL {
        let (state, text) = run(binding, &format!("hello over {binding}")).await?;
        println!("{binding}: {state:?} {text:?}");
    }
    Ok(())
}
