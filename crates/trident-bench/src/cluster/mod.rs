//! `trident-bench cluster`: one node on SQLite beside the PostgreSQL cluster (one replica, two,
//! two with the event bus), one table, one sitting (issue 30).
//!
//! Every server is a real `trident serve --agent demo` process (the binary given by
//! `--trident`, by default the `trident` beside this executable), listening on a free loopback
//! port, its log in a scratch directory. A column's servers:
//! - **one node, SQLite**: `--store sqlite:FILE`, a fresh file in the scratch directory;
//! - **cluster, PostgreSQL**: `--store postgres://…?schema=trident_bench_<uuid>`, a fresh schema
//!   per column (created by the first replica, dropped at the end of the column), one or two
//!   replicas started one after the other;
//! - **+ bus**: the same with `--events NATS_URL`, when `trident serve --help` lists `--events`
//!   (otherwise the column says so and nothing runs).
//!
//! The demo agent's message `stream N 0` makes a task that streams N artifact chunks as fast as
//! the engine takes them: the task (seq 1), `WORKING` (2), chunk `i` at seq `i + 3` (its text
//! `chunk i of …`), `COMPLETED` (N + 3). Every stream is read over HTTP+JSON SSE
//! (`POST /message:stream`, `GET /tasks/{id}:subscribe`) and checked event by event: after the
//! first event (the task, or a subscription's snapshot of it) each event's SSE id must be the
//! previous one plus one, be the event that sequence number is (status, chunk index), and the
//! stream must end right after `COMPLETED`. A missing, repeated or wrong event fails the
//! figure (the cell says "error" and the message is printed under the table); it is never a
//! number.
//!
//! The rows, per column:
//! - **one stream, events/s**: one stream of `--events` chunks on the first replica; events
//!   received ÷ time from sending the request to the end of the stream.
//! - **N concurrent streams × M chunks, events produced/s**: `--streams` streams at once, stream
//!   `i` sent to replica `i mod replicas` (each read by its own client, on the replica that
//!   produces it); all events received ÷ time from the first request to the last stream's end.
//!   `--stream-rounds` rounds one after the other (5): the row is the median round's rate, the
//!   CPU and commit rows are over every round.
//! - **blocking SendMessage req/s**: the closed-loop load of [`crate::load`] on HTTP+JSON,
//!   `--connections` connections spread over the replicas, the echo answer checked; requests
//!   answered correctly ÷ the measured window (after a warm-up). Any failed request fails it.
//! - **PostgreSQL commits per streamed event**: `xact_commit` of `pg_stat_database` (the
//!   database of `--pg-url`, every session's, read-only transactions included) after the
//!   concurrent streams minus before, ÷ their events. PostgreSQL publishes a backend's counts
//!   when it goes idle, at most once a second, and a remainder after 10 s of idleness, so both
//!   readings wait `--pg-settle` seconds (default 11) of quiet first. The details under the
//!   table also give write transactions (transaction ids assigned, server-wide) per event,
//!   which need no waiting. Both count everything on the server: run on an otherwise idle one.
//! - **CPU per streamed event** (the concurrent streams): utime+stime (`/proc`) from the first
//!   request to the last stream's end ÷ the streams' events, of the replicas (summed), of every
//!   process named `postgres` on the machine (server-wide, like the commits; n/a on SQLite), of
//!   every process named `nats-server` (the bus column only; n/a elsewhere) and of this bench
//!   process (the client reading and checking every stream).
//! - **cross-replica subscriber** (two replicas): a stream of N chunks `--lag-pace-ms` (1) apart
//!   sent to replica A (paced: an agent flooding faster than the machine serves both streams
//!   would measure the backlog, not the follower's path); as
//!   soon as its first event (the task) arrives, `GET /tasks/{id}:subscribe` on replica B,
//!   both read at once and checked. Lag of an event = its arrival at B's subscriber − its
//!   arrival at A's own stream, over the events A's stream received after B's subscription
//!   answered (its snapshot): p50 and p99, for N = the two `--lag-chunks` sizes. CPU per event
//!   = a process's utime+stime (`/proc/<pid>/stat`) from before the request to the end of both
//!   streams ÷ the task's events; the figure is B's ÷ A's (A runs the agent, commits and serves
//!   its local subscriber; B follows and serves its subscriber), from the longer stream.
//!
//! Under the table, the ratios issue 30 asks for, each with its target. Output is Markdown on
//! stdout; progress on stderr.

mod client;
mod report;
mod servers;
mod sse;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cpu::{Clock, named_process_ticks, process_ticks, ticks_since};
use crate::load::{Binding, Target, probe};

use client::{blocking, follow, many_streams, one_stream};
pub use report::{summary, table};
pub use servers::parse_serving;
use servers::{PgStats, Replica};

/// A column of the table: where the tasks live and how many servers share them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Setup {
    /// One `trident serve` on a SQLite file (the default store).
    Sqlite,
    /// One `trident serve` on PostgreSQL (cluster mode, one replica).
    Pg1,
    /// Two `trident serve` on one PostgreSQL schema.
    Pg2,
    /// Two replicas with the event bus (`--events NATS_URL`).
    Pg2Bus,
}

impl Setup {
    /// Every column, in table order.
    pub const ALL: [Setup; 4] = [Setup::Sqlite, Setup::Pg1, Setup::Pg2, Setup::Pg2Bus];

    /// The column's heading.
    pub const fn label(self) -> &'static str {
        match self {
            Setup::Sqlite => "one node, SQLite (default)",
            Setup::Pg1 => "cluster, PostgreSQL, 1 replica",
            Setup::Pg2 => "cluster, 2 replicas",
            Setup::Pg2Bus => "cluster, 2 replicas + bus",
        }
    }

    /// Servers in the column.
    pub const fn replicas(self) -> usize {
        match self {
            Setup::Sqlite | Setup::Pg1 => 1,
            Setup::Pg2 | Setup::Pg2Bus => 2,
        }
    }

    /// Whether the servers share a PostgreSQL schema.
    pub const fn postgres(self) -> bool {
        !matches!(self, Setup::Sqlite)
    }

    /// Whether the servers run with `--events`.
    pub const fn bus(self) -> bool {
        matches!(self, Setup::Pg2Bus)
    }
}

/// Settings of a `cluster` run.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The `trident` binary the servers run.
    pub trident: PathBuf,
    /// The PostgreSQL server and database (a schema per column is created and dropped).
    pub pg_url: String,
    /// What the bus column passes to `--events`.
    pub nats_url: String,
    /// The columns to run, in table order.
    pub setups: Vec<Setup>,
    /// Chunks of the one-stream row.
    pub events: usize,
    /// Concurrent streams of the aggregate row.
    pub streams: usize,
    /// Chunks per stream of the aggregate row.
    pub stream_chunks: usize,
    /// Rounds of the aggregate row, one after the other: its figure is the median round's
    /// rate (one round of the sizes lasts about half a second).
    pub stream_rounds: usize,
    /// Connections of the blocking row.
    pub connections: usize,
    /// Measured time of the blocking row.
    pub duration: Duration,
    /// Unmeasured blocking load before it.
    pub warmup: Duration,
    /// Chunks of the shorter and of the longer cross-replica stream.
    pub lag_chunks: (usize, usize),
    /// Milliseconds between the cross-replica streams' chunks (`stream N MS`).
    pub lag_pace_ms: u64,
    /// Quiet time before each `pg_stat_database` reading.
    pub pg_settle: Duration,
}

impl ClusterConfig {
    /// The sizes: one stream of 50 000 chunks, 50 streams × 1 000, 32 connections for
    /// 10 s after 1 s, lag at 2 000 and 50 000 chunks.
    pub fn full(trident: PathBuf) -> Self {
        Self {
            trident,
            pg_url: "postgres://postgres@127.0.0.1:5432/test".to_owned(),
            nats_url: "nats://127.0.0.1:4222".to_owned(),
            setups: Setup::ALL.to_vec(),
            events: 50_000,
            streams: 50,
            stream_chunks: 1_000,
            stream_rounds: 5,
            connections: 32,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(1),
            lag_chunks: (2_000, 50_000),
            lag_pace_ms: 1,
            pg_settle: Duration::from_secs(11),
        }
    }

    /// A smoke run's sizes (`--quick`): every row measured, on small numbers.
    pub fn quick(trident: PathBuf) -> Self {
        Self {
            events: 2_000,
            streams: 10,
            stream_chunks: 200,
            stream_rounds: 1,
            connections: 8,
            duration: Duration::from_secs(1),
            warmup: Duration::from_millis(300),
            lag_chunks: (1_000, 4_000),
            ..Self::full(trident)
        }
    }
}

/// One figure of the table.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure<T> {
    /// Measured.
    Value(T),
    /// Not measured in this column; the cell shows the reason (`n/a (…)`).
    NotApplicable(String),
    /// The measurement failed (a stream missed an event, a server died, …).
    Failed(String),
    /// Not measured: an earlier step of the column failed.
    Skipped,
}

impl<T> Figure<T> {
    fn from_result(result: Result<T, String>) -> Self {
        match result {
            Ok(v) => Figure::Value(v),
            Err(e) => Figure::Failed(e),
        }
    }

    fn value(&self) -> Option<&T> {
        match self {
            Figure::Value(v) => Some(v),
            _ => None,
        }
    }

    /// What the cell shows, `show` formatting a value.
    fn cell(&self, show: impl FnOnce(&T) -> String) -> String {
        match self {
            Figure::Value(v) => show(v),
            Figure::NotApplicable(why) => why.clone(),
            Figure::Failed(_) => "**error**".to_owned(),
            Figure::Skipped => "–".to_owned(),
        }
    }

    /// Why a ratio built on it has no value.
    fn missing(&self) -> String {
        match self {
            Figure::Value(_) => String::new(),
            Figure::NotApplicable(why) => why.clone(),
            Figure::Failed(_) => "error".to_owned(),
            Figure::Skipped => "not measured".to_owned(),
        }
    }
}

/// PostgreSQL's counts over the concurrent streams.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Commits {
    /// `xact_commit` delta ÷ events.
    pub per_event: f64,
    /// Transaction ids assigned (write transactions, server-wide) ÷ events.
    pub writes_per_event: f64,
    /// Events the streams received.
    pub events: u64,
}

/// CPU per event of each component over the concurrent streams, µs per streamed event.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamCpu {
    /// Each replica (`trident serve` process), in start order.
    pub replicas_us: Vec<f64>,
    /// Every `postgres` process of the machine (server-wide); `None` on SQLite.
    pub postgres_us: Option<f64>,
    /// Every `nats-server` process of the machine; `None` without the bus.
    pub nats_us: Option<f64>,
    /// This bench process: the client reading and checking every stream.
    pub client_us: f64,
    /// Events the streams received.
    pub events: u64,
}

impl StreamCpu {
    /// All replicas together.
    pub fn replicas_total_us(&self) -> f64 {
        self.replicas_us.iter().sum()
    }
}

/// CPU per event of the two replicas of a cross-replica stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuPerEvent {
    /// Replica B (following the task, serving the subscriber), µs per event.
    pub follower_us: f64,
    /// Replica A (running the agent, serving its own stream), µs per event.
    pub local_us: f64,
}

impl CpuPerEvent {
    /// Follower ÷ local.
    pub fn ratio(&self) -> f64 {
        self.follower_us / self.local_us
    }
}

/// Cross-replica lag quantiles, in milliseconds (negative: B's subscriber had the event first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lag {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Events measured.
    pub samples: usize,
}

/// What one column measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The column.
    pub setup: Setup,
    /// One stream, events/s.
    pub one_stream: Figure<f64>,
    /// Concurrent streams, events/s over all replicas.
    pub many_streams: Figure<f64>,
    /// Blocking SendMessage, requests/s.
    pub blocking: Figure<f64>,
    /// PostgreSQL commits per streamed event (concurrent streams).
    pub commits: Figure<Commits>,
    /// CPU per streamed event of each component (concurrent streams).
    pub stream_cpu: Figure<StreamCpu>,
    /// Cross-replica CPU per event (the longer stream).
    pub cpu: Figure<CpuPerEvent>,
    /// Cross-replica lag, shorter stream.
    pub lag_short: Figure<Lag>,
    /// Cross-replica lag, longer stream.
    pub lag_long: Figure<Lag>,
}

impl Column {
    /// Every figure `figure`.
    fn all(setup: Setup, figure: impl Fn() -> FigureKind) -> Self {
        fn make<T>(kind: FigureKind) -> Figure<T> {
            match kind {
                FigureKind::NotApplicable(why) => Figure::NotApplicable(why),
                FigureKind::Skipped => Figure::Skipped,
            }
        }
        Column {
            setup,
            one_stream: make(figure()),
            many_streams: make(figure()),
            blocking: make(figure()),
            commits: make(figure()),
            stream_cpu: make(figure()),
            cpu: make(figure()),
            lag_short: make(figure()),
            lag_long: make(figure()),
        }
    }

    /// The column with nothing measured (every figure skipped).
    pub fn skipped(setup: Setup) -> Self {
        Self::all(setup, || FigureKind::Skipped)
    }

    /// The column that does not apply (every figure `n/a` for `why`).
    pub fn not_applicable(setup: Setup, why: &str) -> Self {
        Self::all(setup, || FigureKind::NotApplicable(why.to_owned()))
    }

    /// The column whose servers could not run: the first figure fails with `error`, the rest
    /// are skipped.
    pub fn failed(setup: Setup, error: String) -> Self {
        Column {
            one_stream: Figure::Failed(error),
            ..Self::skipped(setup)
        }
    }

    /// Every failure of the column: (row, message).
    pub fn errors(&self) -> Vec<(&'static str, &str)> {
        fn push<'a, T>(
            out: &mut Vec<(&'static str, &'a str)>,
            row: &'static str,
            f: &'a Figure<T>,
        ) {
            if let Figure::Failed(e) = f {
                out.push((row, e));
            }
        }
        let mut out = Vec::new();
        push(&mut out, "one stream", &self.one_stream);
        push(&mut out, "concurrent streams", &self.many_streams);
        push(&mut out, "blocking SendMessage", &self.blocking);
        push(&mut out, "PostgreSQL commits", &self.commits);
        push(&mut out, "CPU per streamed event", &self.stream_cpu);
        push(&mut out, "cross-replica CPU", &self.cpu);
        push(&mut out, "cross-replica lag (shorter)", &self.lag_short);
        push(&mut out, "cross-replica lag (longer)", &self.lag_long);
        out
    }
}

/// A figure without its value type, to fill a whole column.
enum FigureKind {
    NotApplicable(String),
    Skipped,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// The settings it ran with.
    pub config: ClusterConfig,
    /// One per column run, in table order.
    pub columns: Vec<Column>,
    /// Whether the `trident` binary has `--events`.
    pub bus_available: bool,
}

impl Report {
    /// Every failure: (column, row, message).
    pub fn errors(&self) -> Vec<(Setup, &'static str, &str)> {
        self.columns
            .iter()
            .flat_map(|c| c.errors().into_iter().map(|(row, e)| (c.setup, row, e)))
            .collect()
    }

    fn column(&self, setup: Setup) -> Option<&Column> {
        self.columns.iter().find(|c| c.setup == setup)
    }
}

/// Why the bus column does not run on a build without `--events`.
pub const NO_BUS: &str = "n/a (this build has no --events)";

/// Whether `trident serve --help` of `trident` lists `--events`.
pub fn has_events_flag(trident: &Path) -> Result<bool, String> {
    let out = Command::new(trident)
        .args(["serve", "--help"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("{} serve --help: {e}", trident.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} serve --help failed ({})",
            trident.display(),
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim_start().starts_with("--events")))
}

/// Runs every column of `config` and returns what each measured (failures included).
pub async fn run(config: &ClusterConfig, clock: Clock) -> Result<Report, String> {
    let bus_available = has_events_flag(&config.trident)?;
    let mut columns = Vec::new();
    for &setup in &config.setups {
        eprintln!("== {}", setup.label());
        let column = if setup.bus() && !bus_available {
            Column::not_applicable(setup, NO_BUS)
        } else {
            run_column(setup, config, clock).await
        };
        for (row, e) in column.errors() {
            eprintln!("   {row}: error: {e}");
        }
        columns.push(column);
    }
    Ok(Report {
        config: config.clone(),
        columns,
        bus_available,
    })
}

/// One column: its servers started, measured, stopped; its schema or file removed.
async fn run_column(setup: Setup, config: &ClusterConfig, clock: Clock) -> Column {
    let scratch =
        std::env::temp_dir().join(format!("trident-cluster-{}", uuid::Uuid::new_v4().simple()));
    if let Err(e) = std::fs::create_dir(&scratch) {
        return Column::failed(setup, format!("{}: {e}", scratch.display()));
    }
    let schema = setup
        .postgres()
        .then(|| format!("trident_bench_{}", uuid::Uuid::new_v4().simple()));
    let store = match &schema {
        Some(schema) => {
            let sep = if config.pg_url.contains('?') {
                '&'
            } else {
                '?'
            };
            format!("{}{sep}schema={schema}", config.pg_url)
        }
        None => format!("sqlite:{}", scratch.join("tasks.db").display()),
    };
    let column = measure_column(setup, config, clock, &store, &scratch).await;
    if let Some(schema) = &schema
        && let Err(e) = crate::list::drop_schema(&config.pg_url, schema).await
    {
        eprintln!("   {e}");
    }
    if let Err(e) = std::fs::remove_dir_all(&scratch) {
        eprintln!("   removing {}: {e}", scratch.display());
    }
    column
}

/// Starts the column's servers, warms them up and measures every row.
async fn measure_column(
    setup: Setup,
    config: &ClusterConfig,
    clock: Clock,
    store: &str,
    scratch: &Path,
) -> Column {
    let mut extra = Vec::new();
    if setup.bus() {
        extra.extend(["--events".to_owned(), config.nats_url.clone()]);
    }
    let mut replicas = Vec::new();
    for i in 0..setup.replicas() {
        // One after the other: the first creates the schema and migrates it.
        let log = scratch.join(format!("replica-{i}.log"));
        match Replica::start(&config.trident, store, &extra, log) {
            Ok(r) => replicas.push(r),
            Err(e) => return Column::failed(setup, e),
        }
    }
    // Lazy start-up out of the measured cases: a short stream and a blocking call per replica.
    for addr in replicas.iter().map(|r| r.addr) {
        let warm = async {
            one_stream(addr, 100, "warm").await?;
            probe(Binding::Rest, &Target::single(addr)).await
        };
        if let Err(e) = warm.await {
            return Column::failed(
                setup,
                with_logs(format!("warm-up on {addr}: {e}"), &replicas),
            );
        }
    }
    let mut column = Column::skipped(setup);
    column.one_stream = one_stream_row(&replicas, config).await;
    (column.many_streams, column.commits, column.stream_cpu) =
        streams_row(setup, &replicas, config, clock).await;
    (column.cpu, column.lag_short, column.lag_long) = if setup.replicas() >= 2 {
        cross_replica_rows(&replicas, config, clock).await
    } else {
        let why = if setup.postgres() {
            "n/a (one replica)"
        } else {
            "n/a (one node)"
        };
        (
            Figure::NotApplicable(why.to_owned()),
            Figure::NotApplicable(why.to_owned()),
            Figure::NotApplicable(why.to_owned()),
        )
    };
    // Last: it fills the store with tasks.
    column.blocking = blocking_row(&replicas, config).await;
    drop(replicas);
    column
}

/// One stream on the first replica: events/s.
async fn one_stream_row(replicas: &[Replica], config: &ClusterConfig) -> Figure<f64> {
    let result = one_stream(replicas[0].addr, config.events, "one").await;
    if let Ok(r) = &result {
        eprintln!(
            "   one stream: {} events in {:.2} s, {:.0} events/s",
            r.events,
            r.elapsed.as_secs_f64(),
            r.rate()
        );
    }
    Figure::from_result(result.map(|r| r.rate()).map_err(|e| with_logs(e, replicas)))
}

/// The concurrent streams over every replica: aggregate events/s, PostgreSQL's commits
/// meanwhile (each reading after `--pg-settle` of quiet), and each component's CPU per event.
async fn streams_row(
    setup: Setup,
    replicas: &[Replica],
    config: &ClusterConfig,
    clock: Clock,
) -> (Figure<f64>, Figure<Commits>, Figure<StreamCpu>) {
    let mut pg = None;
    let mut commits = Figure::NotApplicable("n/a (SQLite)".to_owned());
    if setup.postgres() {
        match PgStats::connect(&config.pg_url).await {
            Ok(stats) => pg = Some(stats),
            Err(e) => commits = Figure::Failed(e),
        }
    }
    let before = match pg.as_mut() {
        Some(stats) => {
            tokio::time::sleep(config.pg_settle).await;
            Some(stats.read().await)
        }
        None => None,
    };
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let cpu_before = CpuReading::take(setup, replicas);
    let result = streams_rounds(&addrs, config).await;
    let cpu_after = CpuReading::take(setup, replicas);
    let stream_cpu = Figure::from_result(match (&result, cpu_before, cpu_after) {
        (Ok(r), Ok(before), Ok(after)) => {
            let cpu = after.per_event_since(&before, clock, r.events);
            eprintln!(
                "   CPU per event: replicas {:.1} µs ({}), PostgreSQL {}, nats-server {}, client {:.1} µs",
                cpu.replicas_total_us(),
                cpu.replicas_us
                    .iter()
                    .map(|v| format!("{v:.1}"))
                    .collect::<Vec<_>>()
                    .join(" + "),
                cpu.postgres_us
                    .map_or("n/a".to_owned(), |v| format!("{v:.1} µs")),
                cpu.nats_us
                    .map_or("n/a".to_owned(), |v| format!("{v:.1} µs")),
                cpu.client_us
            );
            Ok(cpu)
        }
        (Err(_), _, _) => Err("the streams failed".to_owned()),
        (_, Err(e), _) | (_, _, Err(e)) => Err(e),
    });
    if let (Some(stats), Some(before)) = (pg.as_mut(), before) {
        tokio::time::sleep(config.pg_settle).await;
        let after = stats.read().await;
        commits = Figure::from_result(match (&result, before, after) {
            (Ok(r), Ok(before), Ok(after)) => {
                let events = r.events as f64;
                let c = Commits {
                    per_event: (after.commits - before.commits) as f64 / events,
                    writes_per_event: (after.xids - before.xids) as f64 / events,
                    events: r.events,
                };
                eprintln!(
                    "   PostgreSQL: {:.3} commits, {:.3} write transactions per event",
                    c.per_event, c.writes_per_event
                );
                Ok(c)
            }
            (Err(_), _, _) => Err("the streams failed".to_owned()),
            (_, Err(e), _) | (_, _, Err(e)) => Err(e),
        });
    }
    let rate = Figure::from_result(
        result
            .map(|r| r.median_rate)
            .map_err(|e| with_logs(e, replicas)),
    );
    (rate, commits, stream_cpu)
}

/// `config.stream_rounds` rounds of the concurrent streams, one after the other.
struct Rounds {
    /// Events of every round.
    events: u64,
    /// The median round's events/s.
    median_rate: f64,
}

async fn streams_rounds(addrs: &[SocketAddr], config: &ClusterConfig) -> Result<Rounds, String> {
    let mut rates = Vec::with_capacity(config.stream_rounds);
    let mut events = 0;
    for round in 1..=config.stream_rounds.max(1) {
        let r = many_streams(addrs, config.streams, config.stream_chunks).await?;
        eprintln!(
            "   {} streams, round {round}: {} events in {:.2} s, {:.0} events/s",
            config.streams,
            r.events,
            r.elapsed.as_secs_f64(),
            r.rate()
        );
        events += r.events;
        rates.push(r.rate());
    }
    rates.sort_by(f64::total_cmp);
    Ok(Rounds {
        events,
        median_rate: rates[rates.len() / 2],
    })
}

/// Clock ticks of every component at one instant.
struct CpuReading {
    replicas: Vec<u64>,
    postgres: Option<BTreeMap<u32, u64>>,
    nats: Option<BTreeMap<u32, u64>>,
    client: u64,
}

impl CpuReading {
    fn take(setup: Setup, replicas: &[Replica]) -> Result<Self, String> {
        Ok(Self {
            replicas: replicas
                .iter()
                .map(|r| process_ticks(r.pid()))
                .collect::<Result<_, _>>()?,
            postgres: setup
                .postgres()
                .then(|| named_process_ticks("postgres"))
                .transpose()?,
            nats: setup
                .bus()
                .then(|| named_process_ticks("nats-server"))
                .transpose()?,
            client: process_ticks(std::process::id())?,
        })
    }

    /// µs per event of each component since `before`.
    fn per_event_since(&self, before: &Self, clock: Clock, events: u64) -> StreamCpu {
        let us = |ticks: u64| clock.duration(ticks).as_secs_f64() * 1e6 / events as f64;
        let named = |after: &Option<BTreeMap<u32, u64>>, before: &Option<BTreeMap<u32, u64>>| match (
            after, before,
        ) {
            (Some(a), Some(b)) => Some(us(ticks_since(b, a))),
            _ => None,
        };
        StreamCpu {
            replicas_us: self
                .replicas
                .iter()
                .zip(&before.replicas)
                .map(|(a, b)| us(a.saturating_sub(*b)))
                .collect(),
            postgres_us: named(&self.postgres, &before.postgres),
            nats_us: named(&self.nats, &before.nats),
            client_us: us(self.client.saturating_sub(before.client)),
            events,
        }
    }
}

/// A stream on the first replica followed from the second, at both sizes: CPU per event
/// (the longer stream), lag of the shorter, lag of the longer.
async fn cross_replica_rows(
    replicas: &[Replica],
    config: &ClusterConfig,
    clock: Clock,
) -> (Figure<CpuPerEvent>, Figure<Lag>, Figure<Lag>) {
    let (a, b) = (&replicas[0], &replicas[1]);
    let (short, long) = config.lag_chunks;
    let lag_short = Figure::from_result(
        follow(a, b, short, config.lag_pace_ms, clock)
            .await
            .and_then(|f| f.lag())
            .map_err(|e| with_logs(e, replicas)),
    );
    let (cpu, lag_long) = match follow(a, b, long, config.lag_pace_ms, clock).await {
        Ok(f) => (Figure::Value(f.cpu), Figure::from_result(f.lag())),
        Err(e) => {
            let e = with_logs(e, replicas);
            (Figure::Failed(e.clone()), Figure::Failed(e))
        }
    };
    for (n, lag) in [(short, &lag_short), (long, &lag_long)] {
        if let Figure::Value(l) = lag {
            eprintln!(
                "   cross-replica, {n} chunks: lag p50 {:.2} ms, p99 {:.2} ms over {} events",
                l.p50_ms, l.p99_ms, l.samples
            );
        }
    }
    if let Figure::Value(c) = &cpu {
        eprintln!(
            "   cross-replica CPU: B {:.2} µs/event, A {:.2} µs/event",
            c.follower_us, c.local_us
        );
    }
    (cpu, lag_short, lag_long)
}

/// Blocking SendMessage spread over every replica: requests/s.
async fn blocking_row(replicas: &[Replica], config: &ClusterConfig) -> Figure<f64> {
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let result = blocking(&addrs, config.connections, config.warmup, config.duration).await;
    if let Ok(rate) = &result {
        eprintln!(
            "   blocking SendMessage: {rate:.0} req/s, {} connections",
            config.connections
        );
    }
    Figure::from_result(result.map_err(|e| with_logs(e, replicas)))
}

/// `error`, with the last lines of every replica's log (what a crash or a refusal said).
fn with_logs(error: String, replicas: &[Replica]) -> String {
    let mut out = error;
    for (i, r) in replicas.iter().enumerate() {
        let tail = r.log_tail(5);
        if !tail.is_empty() {
            out.push_str(&format!("\n  replica {i} log: {}", tail.join("\n    ")));
        }
    }
    out
}
