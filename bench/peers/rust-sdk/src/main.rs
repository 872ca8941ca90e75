//! An echo agent built only from the official A2A Rust SDK (`a2a-server-lf` 0.5.3 for JSON-RPC
//! and HTTP+JSON, `a2a-grpc` 0.3.11 for gRPC), benchmarked by `trident-bench peers`.
//!
//! All three bindings share one port, served by `axum::serve` (HTTP/1.1 and h2c) on the
//! runtime `#[tokio::main]` gives: HTTP+JSON at the root (`POST /message:send`), JSON-RPC at
//! `POST /jsonrpc`, gRPC at `/lf.a2a.v1.A2AService/*`. Every task completes with one artifact
//! `echo` holding the user's text, like Trident's echo agent.
//!
//! Usage: `a2a-rust-sdk-echo [ADDR]` (default `127.0.0.1:0`); prints `listening on ADDR` once
//! bound.

use std::io::Write as _;
use std::sync::Arc;

use a2a::{
    A2AError, Artifact, Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use futures::stream::{self, BoxStream};

struct Echo;

impl AgentExecutor for Echo {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text = ctx
            .message
            .as_ref()
            .and_then(|m| m.text())
            .unwrap_or_default()
            .to_owned();
        let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            artifact: Artifact {
                artifact_id: "echo".to_owned(),
                name: Some("echo".to_owned()),
                description: None,
                parts: vec![Part::text(text)],
                metadata: None,
                extensions: None,
            },
            append: None,
            last_chunk: Some(true),
            metadata: None,
        });
        let completed = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: ctx.task_id,
            context_id: ctx.context_id,
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: Some(chrono_now()),
            },
            metadata: None,
        });
        Box::pin(stream::iter([Ok(artifact), Ok(completed)]))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        Box::pin(stream::iter([Ok(StreamResponse::StatusUpdate(
            TaskStatusUpdateEvent {
                task_id: ctx.task_id,
                context_id: ctx.context_id,
                status: TaskStatus {
                    state: TaskState::Canceled,
                    message: None,
                    timestamp: Some(chrono_now()),
                },
                metadata: None,
            },
        ))]))
    }
}

fn chrono_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let handler = Arc::new(DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()));
    let grpc = tonic::service::Routes::new(
        a2a_pb::proto::a2a_service_server::A2aServiceServer::new(a2a_grpc::GrpcHandler::new(
            handler.clone(),
        )),
    )
    .prepare()
    .into_axum_router();
    let app = a2a_server::rest::rest_router(handler.clone())
        .nest("/jsonrpc", a2a_server::jsonrpc::jsonrpc_router(handler))
        .merge(grpc);
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", listener.local_addr()?)?;
        out.flush()?;
    }
    axum::serve(listener, app).await?;
    Ok(())
}
