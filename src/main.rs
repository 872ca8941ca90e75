//! `trident`: serves one A2A agent over gRPC, JSON-RPC 2.0 and HTTP+JSON on one port.
//!
//! Wiring only: every behaviour lives in the crates under `crates/`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use trident_core::{AgentExecutor, Engine, agents};
use trident_server::{Interfaces, ServerOptions};

#[derive(Parser)]
#[command(
    name = "trident",
    version,
    about = "An A2A v1.0 agent endpoint: gRPC, JSON-RPC 2.0 and HTTP+JSON from one engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a demo agent on all three bindings.
    Serve(Serve),
}

#[derive(clap::Args)]
struct Serve {
    /// Address to listen on (HTTP/1.1 and h2c on one port).
    #[arg(long, env = "TRIDENT_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Public origin written into the agent card (default: http://<listen>).
    #[arg(long, env = "TRIDENT_PUBLIC_URL")]
    public_url: Option<String>,
    /// Which demo agent to serve.
    #[arg(long, value_enum, default_value_t = Agent::Echo)]
    agent: Agent,
}

#[derive(Clone, Copy, ValueEnum)]
enum Agent {
    /// Completes with one artifact echoing the text.
    Echo,
    /// WORKING, artifact chunks, COMPLETED.
    Stream,
    /// Asks for input, completes on the follow-up.
    Input,
    /// Works until canceled.
    Slow,
    /// Answers with a direct message (no task).
    Reply,
    /// All of the above, chosen by the message's first word.
    Demo,
}

impl Agent {
    fn executor(self) -> Arc<dyn AgentExecutor> {
        match self {
            Agent::Echo => Arc::new(agents::Echo),
            Agent::Stream => Arc::new(agents::Stream::default()),
            Agent::Input => Arc::new(agents::Input),
            Agent::Slow => Arc::new(agents::Slow::default()),
            Agent::Reply => Arc::new(agents::Reply),
            Agent::Demo => Arc::new(agents::Demo),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Agent::Echo => "echo",
            Agent::Stream => "stream",
            Agent::Input => "input",
            Agent::Slow => "slow",
            Agent::Reply => "reply",
            Agent::Demo => "demo",
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
    }
}

async fn serve(args: Serve) -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let addr = listener.local_addr()?;
    let interfaces = match &args.public_url {
        Some(origin) => Interfaces::at(origin),
        None => Interfaces::local(addr),
    };
    let name = format!("Trident {} agent", args.agent.name());
    let card = trident_server::card_with_interfaces(
        trident_core::default_card(&name, "A demo agent served by Trident"),
        &interfaces,
    );
    let webhooks = trident_rest::HttpWebhooks::new(Duration::from_secs(10))?;
    let engine = Engine::builder(args.agent.executor())
        .card(card.clone())
        .webhooks(Arc::new(webhooks))
        .build();
    let app = trident_server::app(Arc::new(engine), &card, &ServerOptions::default())?;

    println!(
        "Trident serving the {} agent (in-memory store) on {addr}",
        args.agent.name()
    );
    println!(
        "  agent card  {}{}",
        interfaces.rest,
        trident_server::CARD_PATH
    );
    println!("  JSONRPC     {}", interfaces.jsonrpc);
    println!("  HTTP+JSON   {}", interfaces.rest);
    println!("  GRPC        {}", interfaces.grpc);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
        println!("shutting down");
    };
    trident_server::serve(listener, app, shutdown, Duration::from_secs(5)).await?;
    Ok(())
}
