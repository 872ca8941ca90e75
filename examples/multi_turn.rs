//! Multi-turn: an agent that asks a question before it answers. `cargo run --example multi_turn`
//!
//! The first message creates a task; the agent leaves it `INPUT_REQUIRED` with its question
//! (the task is interrupted, not ended: a blocking send returns it). The client answers with a
//! second message carrying the task's id and context id; the engine runs the agent again for
//! that task, now with [`RequestContext::task`] holding the task as the first turn left it
//! (history included), and the agent completes it.

use trident::client::{Binding, ClientBuilder, Texts};
use trident::proto::send_message_response::Payload;
use trident::proto::{AgentCard, Artifact, Message, Part, SendMessageRequest, Task, TaskState};
use trident::{
    A2aError, A2aService, AgentExecutor, CallContext, EventSink, RequestContext, Server,
};

/// Asks for a name, then greets it.
pub struct Greeter;

#[trident::async_trait]
impl AgentExecutor for Greeter {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        match &ctx.task {
            // A new task: ask, and end the turn waiting for the answer.
            None => sink.input_required("What is your name?").await,
            // The follow-up: the message is the answer to the question.
            Some(_) => {
                let greeting = format!("Hello, {}!", ctx.text().trim());
                sink.artifact(Artifact::new("greeting", vec![Part::text(greeting)]))
                    .await?;
                sink.complete().await
            }
        }
    }
}

/// Sends `message` and returns the task it created or continued.
async fn send(agent: &dyn A2aService, message: Message) -> Result<Task, A2aError> {
    let request = SendMessageRequest {
        message: Some(message),
        ..Default::default()
    };
    match agent
        .send_message(&CallContext::new(), request)
        .await?
        .payload
    {
        Some(Payload::Task(task)) => Ok(task),
        other => Err(A2aError::internal(format!(
            "expected a task, got {other:?}"
        ))),
    }
}

/// Serves [`Greeter`] on a free loopback port, holds the two-turn conversation over
/// `binding` answering `name`, and returns one line per turn: the task's state and text.
pub async fn run(
    binding: Binding,
    name: &str,
) -> Result<Vec<String>, Box<dyn std::error::Error + Send + Sync>> {
    let server = Server::builder(Greeter)
        .card(AgentCard::builder("Greeter", "Asks your name, then greets you").build())
        .bind("127.0.0.1:0")
        .build()
        .await?
        .spawn();
    let agent = ClientBuilder::new()
        .prefer(&[binding])
        .build()?
        .connect(server.origin())
        .await?;
    let mut transcript = Vec::new();

    let asked = send(
        &*agent.service,
        Message::user("m-1", vec![Part::text("hi")]),
    )
    .await?;
    transcript.push(format!("{:?}: {}", asked.state(), asked.text()));
    if asked.state() != TaskState::InputRequired {
        return Err(format!("the agent did not ask: {asked:?}").into());
    }

    // The answer continues the same task, in the same context.
    let answer = Message::user("m-2", vec![Part::text(name)])
        .with_task_id(&asked.id)
        .with_context_id(&asked.context_id);
    let done = send(&*agent.service, answer).await?;
    transcript.push(format!("{:?}: {}", done.state(), done.text()));
    if done.id != asked.id {
        return Err("the answer started another task".into());
    }

    server.shutdown().await?;
    Ok(transcript)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for binding in Binding::ALL {
        println!("{binding}:");
        for turn in run(binding, "Ada").await? {
            println!("  {turn}");
        }
    }
    Ok(())
}
