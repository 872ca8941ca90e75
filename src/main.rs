//! `trident`: serves one A2A agent over gRPC, JSON-RPC 2.0 and HTTP+JSON on one port.
//!
//! Wiring only: every behaviour lives in the crates under `crates/`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use trident_core::{AgentExecutor, Engine, EngineConfig, agents};
use trident_server::{Bindings, Interfaces, ServerOptions};

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
    /// Serve gRPC on its own listener at this address (default: on the main listener).
    #[arg(long, env = "TRIDENT_GRPC_LISTEN")]
    grpc_listen: Option<SocketAddr>,
    /// Refuse requests without `A2A-Version` (the spec reads them as 0.3; by default they are
    /// served as 1.0).
    #[arg(long, env = "TRIDENT_STRICT_VERSION")]
    strict_version: bool,
    /// Largest request body, in bytes, on every binding.
    #[arg(long, env = "TRIDENT_MAX_BODY", default_value_t = 4 << 20)]
    max_body: usize,
    /// Where tasks live: `sqlite:PATH` (a file, created if missing), `postgres://…` (cluster
    /// mode: every process on the same database serves every task) or `memory` (lost on
    /// exit).
    #[arg(long, env = "TRIDENT_STORE", default_value = "sqlite:trident.db")]
    store: String,
    /// Seconds a process's claim on a running task lasts without renewal; on PostgreSQL a
    /// task whose process died ends FAILED within about 1.5 times this.
    #[arg(long, env = "TRIDENT_LEASE_TTL", default_value_t = 10.0)]
    lease_ttl: f64,
    /// This process's id in task leases (default: a new UUIDv7 per start).
    #[arg(long, env = "TRIDENT_NODE_ID")]
    node_id: Option<String>,
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
    let grpc_listener = match args.grpc_listen {
        Some(a) => Some(tokio::net::TcpListener::bind(a).await?),
        None => None,
    };
    let mut interfaces = match &args.public_url {
        Some(origin) => Interfaces::at(origin),
        None => Interfaces::local(addr),
    };
    if let Some(g) = &grpc_listener {
        interfaces.grpc = g.local_addr()?.to_string();
    }
    let name = format!("Trident {} agent", args.agent.name());
    let card = trident_server::card_with_interfaces(
        trident_core::default_card(&name, "A demo agent served by Trident"),
        &interfaces,
    );
    let webhooks = trident_rest::HttpWebhooks::new(Duration::from_secs(10))?;
    let lease_ttl = Duration::try_from_secs_f64(args.lease_ttl)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or("--lease-ttl must be a positive number of seconds")?;
    let config = EngineConfig {
        strict_version: args.strict_version,
        lease_ttl,
        node_id: args.node_id.clone(),
        ..EngineConfig::default()
    };
    let stores = trident_store::open(&args.store).await?;
    let engine = Engine::builder(args.agent.executor())
        .stores(stores)
        .card(card.clone())
        .webhooks(Arc::new(webhooks))
        .config(config)
        .build();
    let svc: Arc<dyn trident_core::A2aService> = Arc::new(engine);
    let mut options = ServerOptions::default();
    options.rest.max_body = args.max_body;
    options.jsonrpc.max_body = args.max_body;
    options.grpc.max_request_size = args.max_body;

    println!(
        "Trident serving the {} agent on {addr} (store: {})",
        args.agent.name(),
        trident_store::describe(&args.store)
    );
    println!(
        "  agent card  {}{}",
        interfaces.rest,
        trident_server::CARD_PATH
    );
    println!("  JSONRPC     {}", interfaces.jsonrpc);
    println!("  HTTP+JSON   {}", interfaces.rest);
    println!("  GRPC        {}", interfaces.grpc);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        println!("shutting down");
        let _ = stop_tx.send(true);
    });
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let drain = Duration::from_secs(5);
    match grpc_listener {
        None => {
            let app = trident_server::app(svc, &card, &options)?;
            trident_server::serve(listener, app, stopped(), drain).await?;
        }
        Some(grpc_listener) => {
            let http = trident_server::app(
                svc.clone(),
                &card,
                &ServerOptions {
                    bindings: Bindings::HTTP,
                    ..options.clone()
                },
            )?;
            let grpc = trident_server::app(
                svc,
                &card,
                &ServerOptions {
                    bindings: Bindings::GRPC,
                    ..options
                },
            )?;
            let (a, b) = tokio::join!(
                trident_server::serve(listener, http, stopped(), drain),
                trident_server::serve(grpc_listener, grpc, stopped(), drain)
            );
            a?;
            b?;
        }
    }
    Ok(())
}
