//! `trident-bench`: the command line of the benchmarks (see the library's docs).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use trident_bench::cpu::Clock;
use trident_bench::list::{Backend, ListConfig};
use trident_bench::load::{Binding, Load, Target, measure};
use trident_bench::peers::{Peer, PeersConfig};
use trident_bench::run::{RunConfig, detail_table, pin_self, summary_table, taskset_available};
use trident_bench::server::{Mode, Store};
use trident_bench::{ServerRuntime, server};

#[derive(Parser)]
#[command(
    name = "trident-bench",
    about = "Server CPU per blocking SendMessage on each A2A binding (Trident vs a raw echo), \
             and ListTasks page latency of the durable stores"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one mode (all bindings on one port) until killed.
    Server {
        /// raw: hand-written SendMessage handlers; trident: the engine with the echo agent.
        #[arg(long, value_enum)]
        mode: Mode,
        /// Address to listen on (port 0 picks one; the bound address is printed).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Tokio runtime of the server.
        #[arg(long, value_enum, default_value_t = ServerRuntime::Multi)]
        runtime: ServerRuntime,
        /// Set TCP_NODELAY on accepted connections.
        #[arg(long)]
        nodelay: bool,
        /// The store behind Trident's engine (discard: a diagnostic that keeps nothing).
        #[arg(long, value_enum, default_value_t = Store::Memory)]
        store: Store,
        /// The SQLite file of `--store sqlite` (created if missing, left in place).
        #[arg(long)]
        sqlite_path: Option<PathBuf>,
    },
    /// Drive one binding of a running server and print requests/s (and CPU per request with
    /// --server-pid).
    Load {
        /// Binding to load.
        #[arg(long, value_enum)]
        binding: Binding,
        /// Address of the server.
        #[arg(long)]
        target: SocketAddr,
        /// Concurrent requests.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Measured seconds.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Unmeasured seconds of load first.
        #[arg(long, default_value_t = 1.0)]
        warmup: f64,
        /// The server's pid, to report its CPU time per request.
        #[arg(long)]
        server_pid: Option<u32>,
        /// Send this many requests (no warm-up, `--duration` ignored) and print the exact
        /// number answered: a fixed amount of work, for instruction counts under callgrind
        /// (`bench/profile-sqlite.sh`).
        #[arg(long)]
        requests: Option<u64>,
    },
    /// Measure every binding against the raw and the Trident server; print markdown tables.
    Run {
        /// Measured seconds per case.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Unmeasured seconds of load before each case.
        #[arg(long, default_value_t = 1.0)]
        warmup: f64,
        /// Concurrent requests.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Rounds of every case (the summary shows medians).
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// Tokio runtime of the servers.
        #[arg(long, value_enum, default_value_t = ServerRuntime::Multi)]
        server_runtime: ServerRuntime,
        /// Set TCP_NODELAY on the servers' connections (`trident serve` leaves Nagle on).
        #[arg(long)]
        server_nodelay: bool,
        /// The store behind Trident's engine (discard: a diagnostic that keeps nothing).
        #[arg(long, value_enum, default_value_t = Store::Memory)]
        trident_store: Store,
        /// Do not pin the server and the load generator to separate cores.
        #[arg(long)]
        no_pin: bool,
    },
    /// Trident beside the official SDKs' echo agents and the raw echo: every binding, one
    /// table (run through `bash bench/peers.sh`, which builds and installs the peers).
    Peers {
        /// `bench/peers`: the peers' sources, builds and installs.
        #[arg(long, default_value = "bench/peers")]
        dir: PathBuf,
        /// The servers to compare (default: all).
        #[arg(long, value_enum, value_delimiter = ',')]
        peers: Vec<Peer>,
        /// Measured seconds per case.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Unmeasured seconds of load before each case.
        #[arg(long, default_value_t = 1.0)]
        warmup: f64,
        /// Concurrent requests.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Rounds of every case (the table shows medians).
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// Do not pin the servers and the load generator to separate cores.
        #[arg(long)]
        no_pin: bool,
    },
    /// Streaming: events/s through one stream (an agent emitting artifact chunks as fast as it
    /// can, one subscriber) and memory per idle stream, on each binding; markdown tables.
    Stream {
        /// Chunks in the one stream of each throughput case.
        #[arg(long, default_value_t = 200_000)]
        events: usize,
        /// Idle streams held at once per binding (0 skips the memory figure).
        #[arg(long, default_value_t = 10_000)]
        idle: usize,
        /// Rounds of the throughput cases.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Do not pin the server and this process to separate cores.
        #[arg(long)]
        no_pin: bool,
    },
    /// Cluster mode against one node: real `trident serve --agent demo` processes on SQLite,
    /// PostgreSQL with 1 and 2 replicas, and 2 replicas with the event bus (`--events`); one
    /// markdown table of streams, blocking calls, PostgreSQL commits per event and
    /// cross-replica subscribers, then the ratios.
    Cluster {
        /// The `trident` binary to run (default: `trident` beside this executable, e.g.
        /// target/release/trident).
        #[arg(long)]
        trident: Option<PathBuf>,
        /// The PostgreSQL server and database (a fresh schema `trident_bench_<uuid>` per
        /// column, dropped after it).
        #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
        pg_url: String,
        /// The bus column's `--events` URL (the column runs only when `trident serve --help`
        /// lists `--events`).
        #[arg(long, default_value = "nats://127.0.0.1:4222")]
        nats_url: String,
        /// Columns to run (default: all), comma-separated.
        #[arg(long, value_enum, value_delimiter = ',')]
        setups: Vec<trident_bench::cluster::Setup>,
        /// Small sizes for a smoke run (2 000-chunk stream, 10 streams × 200, 8 connections
        /// for 1 s, lag at 1 000 and 4 000); the size flags below still override.
        #[arg(long)]
        quick: bool,
        /// Chunks of the one-stream row [default: 50000].
        #[arg(long)]
        events: Option<usize>,
        /// Concurrent streams of the aggregate row [default: 50].
        #[arg(long)]
        streams: Option<usize>,
        /// Chunks per concurrent stream [default: 1000].
        #[arg(long)]
        stream_chunks: Option<usize>,
        /// Rounds of the concurrent streams, one after the other; the row shows the median
        /// round's rate, CPU and commits are over all rounds [default: 5; 1 with --quick].
        #[arg(long)]
        stream_rounds: Option<usize>,
        /// Connections of the blocking SendMessage row [default: 32].
        #[arg(long)]
        connections: Option<usize>,
        /// Measured seconds of the blocking row [default: 10].
        #[arg(long)]
        duration: Option<f64>,
        /// Unmeasured seconds of blocking load first [default: 1].
        #[arg(long)]
        warmup: Option<f64>,
        /// Chunks of the shorter and the longer cross-replica stream [default: 2000,50000].
        #[arg(long, value_parser = two_sizes, value_name = "SHORT,LONG")]
        lag_chunks: Option<(usize, usize)>,
        /// Milliseconds between the cross-replica streams' chunks [default: 1]: paced, so
        /// the lag is the follower's path, not a backlog of an agent flooding the machine.
        #[arg(long)]
        lag_pace_ms: Option<u64>,
        /// Seconds of quiet before each pg_stat_database reading (PostgreSQL publishes a
        /// backend's last commits after 10 s idle).
        #[arg(long, default_value_t = 11.0)]
        pg_settle: f64,
    },
    /// One stream of `--events` artifact chunks from a running `server --mode chunks`, read to
    /// its end and checked (every chunk, `COMPLETED` last); prints the events received. What
    /// `bench/profile-stream.sh` measures under callgrind.
    StreamOnce {
        /// Binding of the stream.
        #[arg(long, value_enum)]
        binding: Binding,
        /// Address of the server.
        #[arg(long)]
        target: SocketAddr,
        /// Chunks in the stream.
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// Instead: open this many idle streams (to a `server --mode idle`) and hold them for
        /// `--hold` seconds.
        #[arg(long)]
        idle: Option<usize>,
        /// Seconds to hold the idle streams.
        #[arg(long, default_value_t = 10.0)]
        hold: f64,
    },
    /// Time ListTasks pages on a durable store (called directly, not over HTTP) as it grows to
    /// each size; print markdown tables.
    List {
        /// The store: a fresh SQLite file, or a fresh schema of a PostgreSQL database.
        #[arg(long, value_enum)]
        store: Backend,
        /// The PostgreSQL server (the schema `trident_bench_<uuid>` is created and dropped).
        #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
        pg_url: String,
        /// Store sizes (tasks) to measure at, filled cumulatively.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
        sizes: Vec<usize>,
        /// Timed calls per case and size.
        #[arg(long, default_value_t = 200)]
        samples: usize,
        /// Commits in flight while loading.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
    },
    /// Memory per task held by the in-memory store: create tasks through the engine and
    /// report resident growth per task against the encoded task size.
    Held {
        /// Tasks to create.
        #[arg(long, default_value_t = 200_000)]
        tasks: usize,
        /// Requests in flight.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Then flood a store bounded at `tasks` with as many more and report RSS growth.
        #[arg(long)]
        evict: bool,
    },
    /// Stream artifact chunks through the engine (one task, one subscriber); print µs and
    /// bytes written per chunk for the first and last thousand chunks and each window.
    Chunks {
        /// `memory`, `sqlite:PATH` (a new file, left in place) or a PostgreSQL URL (a fresh
        /// schema is created and dropped).
        #[arg(long, default_value = "memory")]
        store: String,
        /// Chunks to emit.
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        /// Bytes of text per chunk.
        #[arg(long, default_value_t = 16)]
        size: usize,
        /// Chunks per reported window.
        #[arg(long, default_value_t = 10_000)]
        window: usize,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Server {
            mode,
            listen,
            runtime,
            nodelay,
            store,
            sqlite_path,
        } => runtime.build().map_err(|e| e.to_string()).and_then(|rt| {
            rt.block_on(server::serve(
                mode,
                listen,
                nodelay,
                store,
                sqlite_path.as_deref(),
            ))
        }),
        Command::Load {
            binding,
            target,
            connections,
            duration,
            warmup,
            server_pid,
            requests,
        } => client_runtime().and_then(|rt| match requests {
            Some(n) => rt.block_on(load_count(binding, target, connections, n)),
            None => rt.block_on(load(
                binding,
                target,
                connections,
                secs(duration)?,
                secs(warmup)?,
                server_pid,
            )),
        }),
        Command::Run {
            duration,
            warmup,
            connections,
            rounds,
            server_runtime,
            server_nodelay,
            trident_store,
            no_pin,
        } => (|| {
            let config = RunConfig {
                duration: secs(duration)?,
                warmup: secs(warmup)?,
                connections,
                rounds: rounds.max(1),
                server_runtime,
                server_nodelay,
                trident_store,
                pin: !no_pin,
            };
            run(config)
        })(),
        Command::Peers {
            dir,
            peers,
            duration,
            warmup,
            connections,
            rounds,
            no_pin,
        } => (|| {
            peers_run(PeersConfig {
                dir,
                peers: if peers.is_empty() {
                    Peer::ALL.to_vec()
                } else {
                    peers
                },
                duration: secs(duration)?,
                warmup: secs(warmup)?,
                connections,
                rounds: rounds.max(1),
                pin: !no_pin,
            })
        })(),
        Command::Stream {
            events,
            idle,
            rounds,
            no_pin,
        } => stream_run(trident_bench::stream::StreamConfig {
            events: events.max(1),
            idle,
            rounds: rounds.max(1),
            pin: !no_pin,
        }),
        Command::Cluster {
            trident,
            pg_url,
            nats_url,
            setups,
            quick,
            events,
            streams,
            stream_chunks,
            stream_rounds,
            connections,
            duration,
            warmup,
            lag_chunks,
            lag_pace_ms,
            pg_settle,
        } => (|| {
            let trident = match trident {
                Some(path) => path,
                None => beside_this_executable("trident")?,
            };
            let mut config = if quick {
                trident_bench::cluster::ClusterConfig::quick(trident)
            } else {
                trident_bench::cluster::ClusterConfig::full(trident)
            };
            config.pg_url = pg_url;
            config.nats_url = nats_url;
            if !setups.is_empty() {
                let mut setups = setups;
                setups.sort();
                setups.dedup();
                config.setups = setups;
            }
            config.events = events.unwrap_or(config.events).max(1);
            config.streams = streams.unwrap_or(config.streams).max(1);
            config.stream_chunks = stream_chunks.unwrap_or(config.stream_chunks).max(1);
            config.stream_rounds = stream_rounds.unwrap_or(config.stream_rounds).max(1);
            config.connections = connections.unwrap_or(config.connections).max(1);
            if let Some(d) = duration {
                config.duration = secs(d)?;
            }
            if let Some(w) = warmup {
                config.warmup = secs(w)?;
            }
            if let Some((short, long)) = lag_chunks {
                config.lag_chunks = (short.max(1), long.max(1));
            }
            config.lag_pace_ms = lag_pace_ms.unwrap_or(config.lag_pace_ms);
            config.pg_settle = secs(pg_settle)?;
            cluster_run(&config)
        })(),
        Command::StreamOnce {
            binding,
            target,
            events,
            idle,
            hold,
        } => client_runtime().and_then(|rt| match idle {
            Some(count) => rt
                .block_on(trident_bench::stream::hold_idle(
                    binding,
                    target,
                    count,
                    secs(hold)?,
                ))
                .map(|n| println!("idle streams {n}")),
            None => rt
                .block_on(trident_bench::stream::once(binding, target, events.max(1)))
                .map(|n| println!("events {n}")),
        }),
        Command::List {
            store,
            pg_url,
            sizes,
            samples,
            concurrency,
        } => tokio::runtime::Runtime::new()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                rt.block_on(trident_bench::list::run(&ListConfig {
                    backend: store,
                    pg_url,
                    sizes,
                    samples: samples.max(1),
                    concurrency,
                }))
            }),
        Command::Held {
            tasks,
            concurrency,
            evict,
        } => tokio::runtime::Runtime::new()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                rt.block_on(trident_bench::held::run(&trident_bench::held::HeldConfig {
                    tasks,
                    concurrency,
                    evict,
                }))
            }),
        Command::Chunks {
            store,
            chunks,
            size,
            window,
        } => tokio::runtime::Runtime::new()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                rt.block_on(trident_bench::chunks::run(
                    &trident_bench::chunks::ChunksConfig {
                        store,
                        chunks,
                        size,
                        window,
                    },
                ))
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trident-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn secs(s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|e| format!("{s} s: {e}"))
}

/// The load generator's runtime: one thread, so it stays on the core it is pinned to.
fn client_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

async fn load(
    binding: Binding,
    target: SocketAddr,
    connections: usize,
    duration: Duration,
    warmup: Duration,
    server_pid: Option<u32>,
) -> Result<(), String> {
    let server = server_pid.map(|pid| (pid, Clock::from_getconf()));
    let load = Load::start(binding, &Target::single(target), connections).await?;
    tokio::time::sleep(warmup).await;
    let window = measure(&load, duration, server).await;
    let summary = load.stop().await;
    let window = window?;
    print!(
        "{} {target}: {:.0} req/s over {:.1} s, {} connections",
        binding.name(),
        window.rate(),
        window.elapsed.as_secs_f64(),
        connections
    );
    if let (Some(us), Some(util)) = (window.cpu_us_per_request(), window.server_utilization()) {
        print!(", server {us:.2} µs/req ({:.0}% of a core)", util * 100.0);
    }
    println!(", {} errors", summary.errors);
    match summary.first_error {
        Some(e) => Err(format!("{} requests failed; first: {e}", summary.errors)),
        None => Ok(()),
    }
}

/// Sends `n` requests (`connections` in flight) and prints how many were answered correctly.
async fn load_count(
    binding: Binding,
    target: SocketAddr,
    connections: usize,
    n: u64,
) -> Result<(), String> {
    let connections = connections.clamp(1, usize::try_from(n.max(1)).unwrap_or(usize::MAX));
    let load = Load::start_counted(binding, &Target::single(target), connections, n).await?;
    let summary = load.finish().await;
    println!(
        "{} {target}: {} answered, {} errors, {} connections",
        binding.name(),
        summary.ok,
        summary.errors,
        connections
    );
    match summary.first_error {
        Some(e) => Err(format!("{} requests failed; first: {e}", summary.errors)),
        None => Ok(()),
    }
}

fn run(mut config: RunConfig) -> Result<(), String> {
    let command: Vec<String> = std::env::args().collect();
    let clock = Clock::from_getconf();
    if config.pin {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if cores < 2 || !taskset_available() {
            eprintln!("not pinning: needs taskset and two cores ({cores} available)");
            config.pin = false;
        } else {
            // Before the runtime starts, so every thread of the load generator is on core 1.
            pin_self(1)?;
        }
    }
    let measured_tick = clock.verify(Duration::from_millis(300));
    let rt = client_runtime()?;
    let samples = rt.block_on(trident_bench::run::run(&config, clock))?;

    println!("Command: `{}`", command.join(" "));
    println!(
        "Server: one process per mode, {}{}{}; load generator: this process, one thread{}.",
        match config.server_runtime {
            ServerRuntime::Multi => "tokio multi-thread runtime with 1 worker",
            ServerRuntime::Current => "tokio current-thread runtime",
            ServerRuntime::Default => "tokio multi-thread runtime, default workers",
        },
        match (config.server_nodelay, config.trident_store) {
            (false, Store::Memory) => String::new(),
            (nodelay, store) => format!(
                "{}, Trident store: {}",
                if nodelay { ", TCP_NODELAY" } else { "" },
                store.name()
            ),
        },
        if config.pin { ", pinned to core 0" } else { "" },
        if config.pin { ", pinned to core 1" } else { "" },
    );
    println!(
        "Cases: {} s warm-up + {} s measured each, {} concurrent requests, {} round(s). \
         Server CPU = utime+stime of /proc/<pid>/stat at {} ticks/s ({}).",
        config.warmup.as_secs_f64(),
        config.duration.as_secs_f64(),
        config.connections,
        config.rounds,
        clock.ticks_per_second,
        match &measured_tick {
            Ok(rate) => format!("checked against schedstat: {rate:.1}/s"),
            Err(e) => format!("not checked: {e}"),
        }
    );
    println!();
    println!("{}", detail_table(&samples));
    println!("{}", summary_table(&samples));
    let errors: u64 = samples.iter().map(|s| s.summary.errors).sum();
    if errors > 0 {
        let first = samples.iter().find_map(|s| s.summary.first_error.clone());
        return Err(format!(
            "{errors} requests failed; first: {}",
            first.unwrap_or_default()
        ));
    }
    Ok(())
}

fn peers_run(mut config: PeersConfig) -> Result<(), String> {
    let command: Vec<String> = std::env::args().collect();
    let clock = Clock::from_getconf();
    if config.pin {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if cores < 2 || !taskset_available() {
            eprintln!("not pinning: needs taskset and two cores ({cores} available)");
            config.pin = false;
        } else {
            pin_self(1)?;
        }
    }
    let rt = client_runtime()?;
    let report = rt.block_on(trident_bench::peers::run(&config, clock))?;
    println!("Command: `{}`", command.join(" "));
    println!(
        "Each server its own process on the runtime it ships with{}; load: this process, one \
         thread{}, {} concurrent requests (HTTP/1.1 connections; gRPC streams on one h2c \
         connection), {} s warm-up + {} s measured per case, {} round(s), bindings interleaved. \
         µs/req = server utime+stime ÷ requests answered correctly (medians over rounds); RSS / \
         held task = resident growth since the first request ÷ tasks held at the end.",
        if config.pin { ", pinned to core 0" } else { "" },
        if config.pin { " on core 1" } else { "" },
        config.connections,
        config.warmup.as_secs_f64(),
        config.duration.as_secs_f64(),
        config.rounds,
    );
    println!();
    println!("{}", trident_bench::peers::table(&report));
    let notes = trident_bench::peers::notes(&report);
    if !notes.is_empty() {
        println!("{notes}");
    }
    Ok(())
}

fn stream_run(mut config: trident_bench::stream::StreamConfig) -> Result<(), String> {
    if config.pin {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if cores < 2 || !taskset_available() {
            eprintln!("not pinning: needs taskset and two cores ({cores} available)");
            config.pin = false;
        } else {
            pin_self(1)?;
        }
    }
    let command: Vec<String> = std::env::args().collect();
    println!("Command: `{}`\n", command.join(" "));
    let rt = client_runtime()?;
    rt.block_on(trident_bench::stream::run(&config, Clock::from_getconf()))
}

/// `A,B`: two sizes.
fn two_sizes(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("{s:?}: two sizes, SHORT,LONG"))?;
    let size = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("{v:?}: {e}"));
    Ok((size(a)?, size(b)?))
}

/// `name` in the directory of this executable (target/release/trident beside
/// target/release/trident-bench).
fn beside_this_executable(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
    let path = exe.with_file_name(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} does not exist: build it (cargo build --release -p trident-cli) or name the \
             binary with --trident",
            path.display()
        ))
    }
}

fn cluster_run(config: &trident_bench::cluster::ClusterConfig) -> Result<(), String> {
    let command: Vec<String> = std::env::args().collect();
    // Two workers: the client reads up to a hundred streams at once.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let report = rt.block_on(trident_bench::cluster::run(config, Clock::from_getconf()))?;
    println!("Command: `{}`", command.join(" "));
    println!(
        "Servers: `{} serve --agent demo` on loopback (no pinning), this process the client \
         (HTTP+JSON; SSE for streams). PostgreSQL: {}, a fresh schema per column. Bus: {}.",
        config.trident.display(),
        trident_store::describe(&config.pg_url),
        if report.bus_available {
            format!("`--events {}`", config.nats_url)
        } else {
            "this build has no --events".to_owned()
        }
    );
    println!();
    println!("{}", trident_bench::cluster::table(&report));
    println!("{}", trident_bench::cluster::summary(&report));
    let errors = report.errors();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} figure(s) failed (see Errors above)",
            errors.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser as _};

    use super::{Cli, Command};

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cluster_parses_its_options() {
        let cli = Cli::try_parse_from([
            "trident-bench",
            "cluster",
            "--quick",
            "--trident",
            "/x/trident",
            "--setups",
            "pg2,sqlite",
            "--lag-chunks",
            "100,200",
            "--pg-settle",
            "1",
        ])
        .expect("parses");
        let Command::Cluster {
            quick,
            trident,
            setups,
            lag_chunks,
            pg_settle,
            ..
        } = cli.command
        else {
            panic!("not the cluster command");
        };
        assert!(quick);
        assert_eq!(trident.as_deref(), Some(std::path::Path::new("/x/trident")));
        assert_eq!(
            setups,
            [
                trident_bench::cluster::Setup::Pg2,
                trident_bench::cluster::Setup::Sqlite
            ]
        );
        assert_eq!(lag_chunks, Some((100, 200)));
        assert!((pg_settle - 1.0).abs() < f64::EPSILON);
        assert!(
            Cli::try_parse_from(["trident-bench", "cluster", "--lag-chunks", "100"]).is_err(),
            "two sizes or none"
        );
    }
}
