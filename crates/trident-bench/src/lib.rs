//! `trident-bench`: how much server CPU a blocking `SendMessage` costs on each A2A binding,
//! Trident against a raw axum/tonic echo of the same payload, measured in the same run.
//!
//! This is a load benchmark, not a test. Run it from a release build on an otherwise quiet
//! machine with at least two cores:
//!
//! ```sh
//! cargo build --release -p trident-bench
//! target/release/trident-bench run --duration 5 --connections 32 --rounds 5
//! ```
//!
//! `run` starts each server mode as a child process of the same executable
//! (`trident-bench server --mode raw|trident`, pinned to core 0 with `taskset -c 0`; this
//! process pins itself to core 1 with `taskset -a -p`), then, for each binding, runs the
//! closed-loop load generator for a 1 s warm-up and the measured duration, and reads the
//! server's CPU time (`utime + stime` from `/proc/<pid>/stat`, in `CLK_TCK` ticks, whose rate
//! is read with `getconf` and checked against `/proc/thread-self/schedstat`) at both ends of
//! the window. It prints one row per measurement on stderr and, on stdout, the details and a
//! markdown summary (medians over rounds) with the ratio of Trident's CPU per request to the
//! raw baseline's.
//!
//! Diagnostics (not for the figures of docs/performance.md): `--server-nodelay` sets
//! `TCP_NODELAY` on the servers' connections (`axum::serve` and `trident serve` leave Nagle's
//! algorithm on);
//! `--trident-store discard` runs Trident on a store that keeps nothing, to split the engine's
//! cost from the in-memory store's; `--server-runtime current` uses a current-thread runtime.
//! `--trident-store sqlite` runs Trident on `trident serve`'s durable default, a SQLite file
//! (in a fresh temporary directory per server, removed when the server stops).
//!
//! `trident-bench chunks --store memory|sqlite:PATH|postgres://…` is a third: one agent
//! streaming artifact chunks through the engine, time and bytes written per chunk as the
//! artifact grows (see [`chunks`]).
//!
//! `trident-bench list --store sqlite|postgres` is a second benchmark: the latency of one
//! ListTasks page, measured on the store itself (no HTTP), as the store grows (see [`list`]).
//!
//! `trident-bench peers` runs Trident beside the official A2A SDKs' echo agents (Rust, JS,
//! Python) and the raw echo, every binding, one table (see [`peers`]; `bash bench/peers.sh`
//! builds and installs the peers first).
//!
//! `trident-bench stream` measures events per second through one stream and the memory of
//! idle streams on each binding (see [`stream`]).
//!
//! `trident-bench cluster` runs real `trident serve` processes: one node on SQLite beside the
//! PostgreSQL cluster mode (one replica, two, two with the event bus), streams, blocking calls,
//! PostgreSQL commits per event and cross-replica subscribers, one table (see [`cluster`]).
//!
//! `trident-bench held --tasks N [--evict]` measures memory per task held by the in-memory
//! store, against the task's encoded size (see [`held`]).
//!
//! The pieces run alone too:
//!
//! ```sh
//! taskset -c 0 target/release/trident-bench server --mode trident --listen 127.0.0.1:9000 &
//! taskset -c 1 target/release/trident-bench load --binding grpc --target 127.0.0.1:9000 \
//!     --connections 32 --duration 5 --server-pid $!
//! ```
//!
//! Server CPU per request is the figure to compare: throughput moves with whatever else the
//! machine runs, CPU per request much less. Both servers are served the same way
//! (`axum::serve`, HTTP/1.1 and h2c on one port, a one-worker tokio runtime by default) and
//! decode and encode with the same generated types, so the ratio is the cost of the engine
//! and of the bindings' adapters. Trident's in-memory store holds up to its default bound of
//! 100 000 tasks, so its memory grows with the requests of a run up to that.

pub mod chunks;
pub mod cluster;
pub mod cpu;
pub mod discard;
pub mod held;
pub mod list;
pub mod load;
pub mod payload;
pub mod peers;
pub mod raw;
pub mod run;
pub mod server;
pub mod stream;

/// The tokio runtime a server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ServerRuntime {
    /// A multi-thread runtime with one worker (what `#[tokio::main]` gives with
    /// `TOKIO_WORKER_THREADS=1`).
    #[default]
    Multi,
    /// A current-thread runtime.
    Current,
    /// tokio's default multi-thread runtime (one worker per core it may run on), what
    /// `trident serve` uses.
    Default,
}

impl ServerRuntime {
    /// Lowercase name, as on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            ServerRuntime::Multi => "multi",
            ServerRuntime::Current => "current",
            ServerRuntime::Default => "default",
        }
    }

    /// Builds the runtime.
    pub fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            ServerRuntime::Multi => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build(),
            ServerRuntime::Current => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            ServerRuntime::Default => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build(),
        }
    }
}
