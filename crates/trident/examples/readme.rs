//! The echo agent on gRPC, JSON-RPC and HTTP+JSON at 127.0.0.1:8080 (the default address).
use trident::proto::{Artifact, Part};
use trident::{A2aError, AgentExecutor, EventSink, RequestContext, Server};

/// Completes each task with an artifact echoing the message.
pub struct Echo;

#[trident::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let echo = Artifact::new("echo", vec![Part::text(ctx.text())]);
        sink.artifact(echo).await?;
        sink.complete().await
    }
}

#[tokio::main]
async fn main() -> Result<(), trident::Error> {
    Server::builder(Echo).build().await?.serve().await
}
