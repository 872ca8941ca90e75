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
mod console;
mod download;
mod failure;
mod openapi;
mod render;
mod serve;
mod settings;
mod telemetry;

#[cfg(test)]
mod tests;

#[derive(Parser)]
#[command(
    name = "trident",
    version,
    disable_version_flag = true,
    about = "An A2A v1.0 agent endpoint: gRPC, JSON-RPC 2.0 and HTTP+JSON from one engine",
    long_about = "An A2A v1.0 agent endpoint: gRPC, JSON-RPC 2.0 and HTTP+JSON from one engine.\n\n\
        Settings come from flags, then TRIDENT_* environment variables, then the --config file \
        (TOML; keys are the variable names without TRIDENT_, lower-case).\n\n\
        The client commands (card get, send, task …) follow the a2a-cli specification v0.2: \
        `-a/--agent-card` names the agent, `-o json` prints the protocol's own objects. They \
        exit 0 when they did their job (whatever the task's outcome), 1 on a failure (an A2A \
        error keeps its name), 2 on a usage error, 3 when the agent or its card cannot be \
        reached, 4 when authentication fails and 5 when --timeout expires."
)]
struct Cli {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    version: Option<bool>,
    /// A settings file: TOML for serve and gateway (keys: the TRIDENT_* variable names
    /// without the prefix), or a dotenv file of A2ACLI_* settings for the client commands
    /// (a name ending in .env, or only A2ACLI_* keys), read in place of the local .env.
    #[arg(long, global = true, env = "TRIDENT_CONFIG")]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve an agent (a demo agent, or any program with --exec) on all three bindings.
    Serve(serve::Serve),
    /// Run the demo agent locally (tasks in memory) to practise the client commands against.
    #[command(name = "demo-server")]
    DemoServer(serve::DemoServer),
    /// Serve another A2A agent on all three bindings, talking to it over its best binding.
    Gateway(serve::Gateway),
    /// OAuth 2 sign-in for agents whose card declares it: `auth login|status|logout`.
    #[command(subcommand)]
    Auth(client::oauth::AuthCommand),
    /// Agent Cards: `card get`.
    #[command(subcommand)]
    Card(client::CardCommand),
    /// Send a message: a new task, or a reply to one with --task-id.
    Send(client::Send),
    /// Chat with an agent on a terminal: each line a message in one context, a task waiting
    /// for input continued by the next line; `/new` starts a new context, `/quit` or Ctrl-D
    /// ends it. Without a terminal, sends MESSAGE once (like send) and reads no input.
    Chat(client::Chat),
    /// Tasks: `task get|cancel|list|subscribe|download|push-config`.
    #[command(subcommand)]
    Task(client::TaskCommand),
    /// `task get` (the old spelling: `get URL ID`).
    #[command(hide = true)]
    Get(client::Legacy<client::TaskGet>),
    /// `task list` (the old spelling: `list URL`).
    #[command(hide = true)]
    List(client::Legacy<client::TaskList>),
    /// `task cancel` (the old spelling: `cancel URL ID`).
    #[command(hide = true)]
    Cancel(client::Legacy<client::TaskCancel>),
    /// `task subscribe --stream` (the old spelling: `subscribe URL ID`).
    #[command(hide = true)]
    Subscribe(client::Legacy<client::TaskSubscribe>),
    /// `task push-config` (the old spelling: `push set|get|list|delete URL TASK …`).
    #[command(subcommand, hide = true)]
    Push(client::Push),
    /// The client commands' settings: `config show`.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Run the behaviour suite against an agent over every binding its card declares.
    Conformance(conformance::Args),
    /// Serve a console in the browser for an agent: its card checked, messages sent and
    /// streamed, its tasks listed, read and canceled (on loopback; prints the URL, opens
    /// nothing).
    Console(console::Args),
    /// Write the OpenAPI 3.1 document of the HTTP+JSON binding (default docs/openapi.json).
    Openapi(openapi::Args),
}

/// `config …`
#[derive(Subcommand)]
enum ConfigCommand {
    /// Show each setting of the client commands, its effective value and where it came from
    /// (flag, env, local-file, global-file, default). Read-only: edit the A2ACLI_* variables
    /// or the .env files to change them.
    Show(ConfigShow),
}

/// `config show`
#[derive(clap::Args)]
struct ConfigShow {
    #[command(flatten)]
    target: client::Target,
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
    let file = config::path(&args);
    let dotenv = file.as_deref().filter(|f| settings::is_dotenv(f));
    if let (Some(file), None) = (&file, dotenv) {
        let applied =
            config::load(file).and_then(|vars| config::apply(&Cli::command(), args.clone(), &vars));
        match applied {
            Ok(with_file) => args = with_file,
            Err(e) => {
                eprintln!("trident: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // The client commands' settings: flags, A2ACLI_* variables, the local and global .env.
    let resolved = match settings::resolve(&Cli::command(), legacy_card(&args), dotenv) {
        Ok((with_settings, resolved)) => {
            args = with_settings;
            resolved
        }
        Err(e) => {
            let failure = failure::Failure::usage(e.to_string());
            failure.report(wants_json(&std::env::args().collect::<Vec<_>>()), None);
            return ExitCode::from(2);
        }
    };
    let (cli, matches) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    if let Command::Config(ConfigCommand::Show(show)) = &cli.command {
        return settings::show(&resolved, &matches, show.target.json());
    }
    // Logs go to stderr, so a client command's stdout is only its output. Servers log at info
    // (without the span per call, `trident::call`, which costs a tenth of a call's CPU to
    // format: `RUST_LOG=info` adds it), client commands only warnings, unless RUST_LOG says
    // otherwise.
    let default_level = match cli.command {
        Command::Serve(_) | Command::Gateway(_) | Command::DemoServer(_) => {
            "info,trident::call=warn"
        }
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

/// Parses the command line. Clap's errors become the a2a-cli usage error (exit 2; with
/// `-o json`, the error object on stdout too); `--help` and `--version` print and exit 0.
fn parse(args: &[String]) -> Result<(Cli, clap::ArgMatches), ExitCode> {
    use clap::FromArgMatches;
    let args = legacy_card(args);
    let usage = |e: clap::Error| {
        use clap::error::ErrorKind as K;
        if matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        if wants_json(&args) {
            let message = e
                .render()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_owned();
            let failure = failure::Failure::usage(message);
            let line = failure.envelope(Some("see `trident <command> --help`"));
            println!("{line}");
        }
        let _ = e.print();
        ExitCode::from(2)
    };
    let matches = Cli::command().try_get_matches_from(&args).map_err(usage)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(usage)?;
    if let (Command::Send(send), Some(m)) = (&mut cli.command, matches.subcommand_matches("send")) {
        send.parts = part_flags(m);
    }
    Ok((cli, matches))
}

/// The message-part flags of `send` in command-line order (clap keeps each flag's values
/// apart; their indices say how they interleave).
fn part_flags(m: &clap::ArgMatches) -> Vec<client::PartFlag> {
    use client::PartFlag;
    type Make = fn(String) -> PartFlag;
    let kinds: [(&str, Make); 4] = [
        ("text", PartFlag::Text),
        ("file", PartFlag::File),
        ("data", PartFlag::Data),
        ("media_type", PartFlag::MediaType),
    ];
    let mut all: Vec<(usize, PartFlag)> = Vec::new();
    for (id, make) in kinds {
        if let (Some(indices), Some(values)) = (m.indices_of(id), m.get_many::<String>(id)) {
            all.extend(indices.zip(values.cloned().map(make)));
        }
    }
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, p)| p).collect()
}

/// `card URL …` (the old spelling) as `card get URL …`.
fn legacy_card(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    let mut i = 1;
    while i < out.len() {
        match out[i].as_str() {
            "--config" => i += 2,
            a if a.starts_with('-') => i += 1,
            "card" => {
                if let Some(next) = out.get(i + 1)
                    && !matches!(next.as_str(), "get" | "help" | "-h" | "--help")
                {
                    out.insert(i + 1, "get".to_owned());
                }
                break;
            }
            _ => break,
        }
    }
    out
}

/// Whether the command line asks for JSON output (for reporting a usage error as JSON).
fn wants_json(args: &[String]) -> bool {
    let env = std::env::var("A2ACLI_OUTPUT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let mut json = env;
    let mut iter = args.iter().peekable();
    while let Some(a) = iter.next() {
        match a.as_str() {
            "--json" | "-ojson" | "--output=json" | "-o=json" => json = true,
            "-o" | "--output" => {
                json = iter.peek().is_some_and(|v| v.as_str() == "json");
            }
            _ => {}
        }
    }
    json
}

async fn run(command: Command) -> ExitCode {
    let (json, result) = match command {
        Command::Serve(args) => return serve::serve(args).await,
        Command::Gateway(args) => return serve::gateway(args).await,
        Command::DemoServer(args) => return serve::demo_server(args).await,
        Command::Conformance(args) => return conformance::run(args).await,
        Command::Console(args) => return console::run(args).await,
        Command::Openapi(args) => return openapi::run(&args),
        // Answered before the runtime starts (it needs the parsed matches).
        Command::Config(_) => return ExitCode::SUCCESS,
        Command::Completion { shell } => {
            // Into memory first: clap_complete panics on a write error (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "trident", &mut script);
            let mut out = std::io::stdout().lock();
            let _ = std::io::Write::write_all(&mut out, &script);
            return ExitCode::SUCCESS;
        }
        Command::Card(client::CardCommand::Get(args)) => {
            (args.target.json(), client::card_get(&args).await)
        }
        Command::Send(args) => (args.target.json(), client::send(&args).await),
        Command::Chat(args) => (args.target.json(), client::chat(&args).await),
        Command::Auth(cmd) => (cmd.json(), cmd.run().await),
        Command::Task(cmd) => (cmd.json(), cmd.run().await),
        Command::Get(old) => {
            task(client::TaskCommand::Get(old.into_inner(|a| &mut a.target))).await
        }
        Command::List(old) => {
            task(client::TaskCommand::List(old.into_inner(|a| &mut a.target))).await
        }
        Command::Cancel(old) => {
            task(client::TaskCommand::Cancel(
                old.into_inner(|a| &mut a.target),
            ))
            .await
        }
        Command::Subscribe(old) => {
            let args = old.into_inner(|a| &mut a.target).streaming();
            task(client::TaskCommand::Subscribe(args)).await
        }
        Command::Push(cmd) => (cmd.target().json(), client::push(&cmd).await),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.report(json, None);
            ExitCode::from(failure.exit_code())
        }
    }
}

async fn task(cmd: client::TaskCommand) -> (bool, Result<(), failure::Failure>) {
    (cmd.json(), cmd.run().await)
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
