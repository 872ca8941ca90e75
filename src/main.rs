//! `trident`: serves an A2A agent over gRPC, JSON-RPC 2.0 and HTTP+JSON on one port, fronts
//! other agents as a gateway, and talks to any A2A agent from the command line.
//!
//! Wiring only: every behaviour lives in the crates under `crates/`.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod auth;
mod client;
mod config;
mod conformance;
mod openapi;
mod serve;
mod telemetry;

#[cfg(test)]
mod tests;

#[derive(Parser)]
#[command(
    name = "trident",
    version,
    about = "An A2A v1.0 agent endpoint: gRPC, JSON-RPC 2.0 and HTTP+JSON from one engine",
    long_about = "An A2A v1.0 agent endpoint: gRPC, JSON-RPC 2.0 and HTTP+JSON from one engine.\n\n\
        Settings come from flags, then TRIDENT_* environment variables, then the --config file \
        (TOML; keys are the variable names without TRIDENT_, lower-case).\n\n\
        Client commands exit 0 on success, 1 when the agent answers with an A2A error, 2 on a \
        usage error and 3 when the exchange itself fails (connection, transport)."
)]
struct Cli {
    /// A TOML file of settings (keys: the TRIDENT_* variable names without the prefix).
    #[arg(long, global = true, env = "TRIDENT_CONFIG")]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve an agent (a demo agent, or any program with --exec) on all three bindings.
    Serve(serve::Serve),
    /// Serve another A2A agent on all three bindings, talking to it over its best binding.
    Gateway(serve::Gateway),
    /// Show an agent's card.
    Card(client::CardArgs),
    /// Send a message (a new task, or a follow-up with --task).
    Send(client::Send),
    /// Show a task.
    Get(client::Get),
    /// List tasks.
    List(client::List),
    /// Cancel a task.
    Cancel(client::Cancel),
    /// Follow a task's events (from the start of its log with --after 0).
    Subscribe(client::Subscribe),
    /// Manage a task's push-notification webhooks.
    #[command(subcommand)]
    Push(client::Push),
    /// Run the behaviour suite against an agent over every binding its card declares.
    Conformance(conformance::Args),
    /// Write the OpenAPI 3.1 document of the HTTP+JSON binding (default docs/openapi.json).
    Openapi(openapi::Args),
}

fn main() -> ExitCode {
    // A test seam (tests/it/cluster.rs): the process runs as if its clock were this many
    // milliseconds off, to show that cluster leases do not depend on the replicas' clocks.
    if let Some(ms) = std::env::var("TRIDENT_TEST_CLOCK_SKEW_MS")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
    {
        trident::store::skew_clock(ms);
    }
    // Before the arguments are parsed: the defaults of `serve` (--max-connections,
    // --push-max-deliveries) are computed from the soft limit.
    let raised = raise_open_files_limit();
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(file) = config::path(&args) {
        let applied = config::load(&file)
            .and_then(|vars| config::apply(&Cli::command(), args.clone(), &vars));
        match applied {
            Ok(with_file) => args = with_file,
            Err(e) => {
                eprintln!("trident: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let cli = Cli::parse_from(&args);
    // Logs go to stderr, so a client command's stdout is only its output. Servers log at info
    // (without the span per call, `trident::call`, which costs a tenth of a call's CPU to
    // format: `RUST_LOG=info` adds it), client commands only warnings, unless RUST_LOG says
    // otherwise.
    let default_level = match cli.command {
        Command::Serve(_) | Command::Gateway(_) => "info,trident::call=warn",
        _ => "warn",
    };
    let otlp = match &cli.command {
        Command::Serve(args) => args.listen().otlp_endpoint(),
        Command::Gateway(args) => args.listen().otlp_endpoint(),
        _ => None,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("trident: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Inside the runtime: the OTLP exporter's gRPC client lives there.
    let telemetry = match runtime.block_on(async { telemetry::init(default_level, otlp) }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("trident: {e}");
            return ExitCode::from(2);
        }
    };
    match raised {
        Ok(Some((old, new))) => tracing::debug!(old, new, "raised the open-files limit"),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "could not raise the open-files limit"),
    }
    runtime.block_on(async {
        let code = run(cli.command).await;
        // Off the runtime's workers: sending the last spans needs them.
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        code
    })
}

async fn run(command: Command) -> ExitCode {
    let result = match command {
        Command::Serve(args) => return serve::serve(args).await,
        Command::Gateway(args) => return serve::gateway(args).await,
        Command::Conformance(args) => return conformance::run(args).await,
        Command::Card(args) => client::card(&args).await,
        Command::Send(args) => client::send(&args).await,
        Command::Get(args) => client::get(&args).await,
        Command::List(args) => client::list(&args).await,
        Command::Cancel(args) => client::cancel(&args).await,
        Command::Subscribe(args) => client::subscribe(&args).await,
        Command::Push(cmd) => client::push(&cmd).await,
        Command::Openapi(args) => return openapi::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (what a server may use without
/// privileges; many systems start processes at 1 024 with a far higher hard limit). Returns
/// the (old, new) soft limit when it changed, or the error.
fn raise_open_files_limit() -> Result<Option<(u64, u64)>, std::io::Error> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else {
        // Unlimited already, or no hard limit to raise to.
        return Ok(None);
    };
    if soft >= hard {
        return Ok(None);
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: Some(hard),
        },
    )?;
    Ok(Some((soft, hard)))
}
