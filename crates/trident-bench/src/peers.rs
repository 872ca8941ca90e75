//! `trident-bench peers`: Trident beside the official A2A SDKs' echo agents and the raw echo,
//! in one run, one table.
//!
//! Every server is a process of its own, started once and kept for the whole run (pinned to
//! core 0 with `taskset -c 0` when pinning; this process then runs on core 1), each on the
//! runtime it ships with:
//! - `raw`: [`crate::raw`], the floor (decode the request, encode the echo task);
//! - `trident-memory`, `trident-memory-unbounded`, `trident-sqlite`: Trident's combined router
//!   over the echo agent on the in-memory store (default retention, then no retention, to price
//!   eviction) and on `trident serve`'s default SQLite store (a fresh file);
//! - `rust-sdk`: `bench/peers/rust-sdk` (`a2a-server-lf` 0.5.3 + `a2a-grpc` 0.3.11);
//! - `js`: `bench/peers/js/echo.mjs` (`@a2a-js/sdk` 1.3.0, express + `@grpc/grpc-js`);
//! - `python`: `bench/peers/python/echo.py` (`a2a-sdk` 1.3.0, uvicorn + grpc.aio,
//!   OpenTelemetry off).
//!
//! Before any load, one SendMessage per binding is sent to every server and its answer
//! checked in full ([`crate::load::probe`]); a server that does not answer a binding correctly
//! is not loaded on it, and the table says why. Then, per round, per binding, every server in
//! turn (the order rotates between rounds) gets the closed-loop load of [`crate::load`]: a
//! warm-up, then the measured window, in which server CPU (utime+stime from `/proc`) is divided
//! by the requests answered correctly (an error answer never counts). At the end each server's
//! resident set growth since its probes is divided by the tasks it holds (every answered
//! request made one; Trident's default retention holds at most
//! [`Retention::DEFAULT_MAX_TASKS`]).
//!
//! `bash bench/peers.sh` builds and installs the peers (pinned) and runs this.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use trident_engine::store::Retention;

use crate::cpu::Clock;
use crate::load::{Binding, Load, Target, Window, measure, probe};

/// A server of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Peer {
    /// The raw axum/tonic echo.
    Raw,
    /// Trident, in-memory store with its default retention.
    TridentMemory,
    /// Trident, in-memory store keeping every task.
    TridentMemoryUnbounded,
    /// Trident, SQLite store (`trident serve`'s default).
    TridentSqlite,
    /// The official Rust SDK.
    RustSdk,
    /// The official JS SDK.
    Js,
    /// The official Python SDK.
    Python,
}

impl Peer {
    /// Every server, in table order.
    pub const ALL: [Peer; 7] = [
        Peer::Raw,
        Peer::TridentMemory,
        Peer::TridentMemoryUnbounded,
        Peer::TridentSqlite,
        Peer::RustSdk,
        Peer::Js,
        Peer::Python,
    ];

    /// Lowercase name, as on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Peer::Raw => "raw",
            Peer::TridentMemory => "trident-memory",
            Peer::TridentMemoryUnbounded => "trident-memory-unbounded",
            Peer::TridentSqlite => "trident-sqlite",
            Peer::RustSdk => "rust-sdk",
            Peer::Js => "js",
            Peer::Python => "python",
        }
    }

    /// How the table names it.
    pub const fn label(self) -> &'static str {
        match self {
            Peer::Raw => "raw axum/tonic echo",
            Peer::TridentMemory => "Trident `--store memory`",
            Peer::TridentMemoryUnbounded => "Trident memory, no retention",
            Peer::TridentSqlite => "Trident default (SQLite)",
            Peer::RustSdk => "Rust SDK `a2a-server-lf` 0.5.3",
            Peer::Js => "`@a2a-js/sdk` 1.3.0",
            Peer::Python => "`a2a-sdk` 1.3.0 (Python)",
        }
    }

    /// The most tasks it holds, when it bounds them.
    pub const fn max_held(self) -> Option<usize> {
        match self {
            Peer::TridentMemory => Some(Retention::DEFAULT_MAX_TASKS),
            _ => None,
        }
    }

    /// The command that starts it (`dir`: `bench/peers`), and a scratch directory to remove
    /// when it stops.
    fn command(self, dir: &Path) -> Result<(Command, Option<PathBuf>), String> {
        let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
        let trident = |store: &str| {
            let mut cmd = Command::new(&exe);
            cmd.args(["server", "--listen", "127.0.0.1:0", "--runtime", "default"])
                .args(["--mode", "trident", "--store", store]);
            cmd
        };
        Ok(match self {
            Peer::Raw => {
                let mut cmd = Command::new(&exe);
                cmd.args(["server", "--listen", "127.0.0.1:0", "--runtime", "default"])
                    .args(["--mode", "raw"]);
                (cmd, None)
            }
            Peer::TridentMemory => (trident("memory"), None),
            Peer::TridentMemoryUnbounded => (trident("memory-unbounded"), None),
            Peer::TridentSqlite => {
                let scratch = std::env::temp_dir()
                    .join(format!("trident-peers-{}", uuid::Uuid::new_v4().simple()));
                std::fs::create_dir(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
                let mut cmd = trident("sqlite");
                cmd.arg("--sqlite-path").arg(scratch.join("tasks.db"));
                (cmd, Some(scratch))
            }
            Peer::RustSdk => (
                Command::new(dir.join("rust-sdk/target/release/a2a-rust-sdk-echo")),
                None,
            ),
            Peer::Js => {
                let mut cmd = Command::new("node");
                cmd.arg(dir.join("js/echo.mjs"));
                (cmd, None)
            }
            Peer::Python => {
                let mut cmd = Command::new(dir.join(".venv/bin/python"));
                cmd.arg(dir.join("python/echo.py"))
                    .env("OTEL_SDK_DISABLED", "true")
                    .env("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false");
                (cmd, None)
            }
        })
    }
}

/// Settings of a `peers` run.
#[derive(Debug, Clone)]
pub struct PeersConfig {
    /// `bench/peers` (the peers' sources, builds and installs).
    pub dir: PathBuf,
    /// The servers to compare.
    pub peers: Vec<Peer>,
    /// Measured time per case.
    pub duration: Duration,
    /// Load before each measurement, not measured.
    pub warmup: Duration,
    /// Concurrent requests.
    pub connections: usize,
    /// Rounds of every case (the table shows medians).
    pub rounds: usize,
    /// Pin the servers to core 0 (this process pins itself to core 1 beforehand).
    pub pin: bool,
}

/// The line a server prints on stdout once it listens, followed by its address (here, beside
/// the one reader of it, [`parse_ready`], so the server's module and this one do not import
/// each other).
pub const READY: &str = "listening on ";

/// The first line a server prints: `listening on ADDR`, or `listening on ADDR grpc ADDR` when
/// gRPC has a port of its own.
pub fn parse_ready(line: &str) -> Option<(SocketAddr, SocketAddr)> {
    let rest = line.trim().strip_prefix(READY)?;
    match rest.split_once(" grpc ") {
        Some((http, grpc)) => Some((http.trim().parse().ok()?, grpc.trim().parse().ok()?)),
        None => {
            let addr = rest.trim().parse().ok()?;
            Some((addr, addr))
        }
    }
}

/// A running server.
struct Running {
    peer: Peer,
    child: Child,
    _stdout: BufReader<ChildStdout>,
    target: Target,
    scratch: Option<PathBuf>,
}

impl Running {
    fn start(peer: Peer, config: &PeersConfig) -> Result<Running, String> {
        let (inner, scratch) = peer.command(&config.dir)?;
        let mut cmd = if config.pin {
            // taskset execs the program: the child's pid is the server's.
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", "0"]).arg(inner.get_program());
            cmd.args(inner.get_args());
            for (k, v) in inner.get_envs() {
                if let Some(v) = v {
                    cmd.env(k, v);
                }
            }
            cmd
        } else {
            inner
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let cleanup = |scratch: &Option<PathBuf>| {
            if let Some(dir) = scratch {
                let _ = std::fs::remove_dir_all(dir);
            }
        };
        let mut child = cmd.spawn().map_err(|e| {
            cleanup(&scratch);
            format!("{}: starting {cmd:?}: {e}", peer.name())
        })?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            cleanup(&scratch);
            return Err("no stdout pipe".to_owned());
        };
        let mut running = Running {
            peer,
            child,
            _stdout: BufReader::new(stdout),
            target: Target::single(SocketAddr::from(([127, 0, 0, 1], 0))),
            scratch,
        };
        let mut line = String::new();
        // A blocking read before any load: the server prints it once it serves.
        running
            ._stdout
            .read_line(&mut line)
            .map_err(|e| format!("{}: reading its address: {e}", peer.name()))?;
        let (http, grpc) = parse_ready(&line)
            .ok_or_else(|| format!("{} said {line:?} instead of its address", peer.name()))?;
        running.target = Target {
            http,
            grpc,
            jsonrpc_path: match peer {
                Peer::Raw
                | Peer::TridentMemory
                | Peer::TridentMemoryUnbounded
                | Peer::TridentSqlite => "/",
                Peer::RustSdk | Peer::Js | Peer::Python => "/jsonrpc",
            }
            .to_owned(),
            rest_prefix: String::new(),
        };
        Ok(running)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Resident set of process `pid`, in bytes (`VmRSS` of `/proc/<pid>/status`).
pub fn rss(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| format!("{path}: no VmRSS"))
}

/// One measured case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Round, from 1.
    pub round: usize,
    /// The server.
    pub peer: Peer,
    /// The binding.
    pub binding: Binding,
    /// The measurement.
    pub window: Window,
}

/// What one server did over the whole run.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Requests answered correctly (warm-ups and probes included): tasks created.
    pub tasks: u64,
    /// Failed requests.
    pub errors: u64,
    /// First failure.
    pub first_error: Option<String>,
    /// Resident set after the probes, bytes.
    pub rss_before: u64,
    /// Resident set at the end, bytes.
    pub rss_after: u64,
    /// Why a binding was not loaded (its probe failed).
    pub skipped: BTreeMap<&'static str, String>,
}

/// Everything a run measured.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every case.
    pub cases: Vec<Case>,
    /// Per server.
    pub totals: BTreeMap<Peer, Totals>,
}

/// Runs the comparison.
pub async fn run(config: &PeersConfig, clock: Clock) -> Result<Report, String> {
    let mut report = Report::default();
    let mut servers = Vec::new();
    for &peer in &config.peers {
        let server = Running::start(peer, config)?;
        wait_accepting(server.target.http).await?;
        wait_accepting(server.target.grpc).await?;
        let mut totals = Totals::default();
        for binding in Binding::ALL {
            match probe(binding, &server.target).await {
                Ok(()) => totals.tasks += 1,
                Err(e) => {
                    eprintln!("{} does not answer {}: {e}", peer.name(), binding.name());
                    totals.skipped.insert(binding.name(), e);
                }
            }
        }
        totals.rss_before = rss(server.pid())?;
        report.totals.insert(peer, totals);
        servers.push(server);
    }
    for round in 1..=config.rounds {
        for binding in Binding::ALL {
            let n = servers.len();
            for k in 0..n {
                let server = &servers[(k + round - 1) % n];
                let totals = report.totals.entry(server.peer).or_default();
                if totals.skipped.contains_key(binding.name()) {
                    continue;
                }
                let load = Load::start(binding, &server.target, config.connections).await?;
                tokio::time::sleep(config.warmup).await;
                let window = measure(&load, config.duration, Some((server.pid(), clock))).await;
                let summary = load.stop().await;
                let window = window?;
                totals.tasks += summary.ok;
                totals.errors += summary.errors;
                if totals.first_error.is_none() {
                    totals.first_error = summary.first_error;
                }
                eprintln!(
                    "round {round} {:>7} {:>24}: {:>8.0} req/s, {:>7.2} µs/req, p99 {:>7.2} ms, {} errors",
                    binding.name(),
                    server.peer.name(),
                    window.rate(),
                    window.cpu_us_per_request().unwrap_or(f64::NAN),
                    window.p99.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
                    summary.errors,
                );
                report.cases.push(Case {
                    round,
                    peer: server.peer,
                    binding,
                    window,
                });
            }
        }
    }
    for server in &servers {
        let totals = report.totals.entry(server.peer).or_default();
        totals.rss_after = rss(server.pid())?;
    }
    Ok(report)
}

async fn wait_accepting(addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("server at {addr} never accepted: {e}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// Medians of one case over its rounds: (µs/req, req/s, p99 ms).
pub fn medians(report: &Report, peer: Peer, binding: Binding) -> Option<(f64, f64, f64)> {
    let case: Vec<&Window> = report
        .cases
        .iter()
        .filter(|c| c.peer == peer && c.binding == binding)
        .map(|c| &c.window)
        .collect();
    Some((
        median(
            case.iter()
                .map(|w| w.cpu_us_per_request().unwrap_or(f64::NAN))
                .collect(),
        )?,
        median(case.iter().map(|w| w.rate()).collect())?,
        median(
            case.iter()
                .map(|w| w.p99.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3))
                .collect(),
        )
        .unwrap_or(f64::NAN),
    ))
}

fn binding_label(binding: Binding) -> &'static str {
    match binding {
        Binding::Rest => "HTTP+JSON",
        Binding::Jsonrpc => "JSON-RPC",
        Binding::Grpc => "gRPC",
    }
}

/// The one table: a row per server, per binding its CPU per request (and ratio to raw), req/s
/// and p99, then its memory per held task.
pub fn table(report: &Report) -> String {
    let bindings = [Binding::Jsonrpc, Binding::Rest, Binding::Grpc];
    let mut out = String::from("| server |");
    for b in bindings {
        out.push_str(&format!(
            " {0} µs/req (× raw) | {0} req/s | {0} p99 ms |",
            binding_label(b)
        ));
    }
    out.push_str(" RSS / held task | tasks held |\n|---|");
    for _ in bindings {
        out.push_str("---:|---:|---:|");
    }
    out.push_str("---:|---:|\n");
    for (&peer, totals) in &report.totals {
        out.push_str(&format!("| {} |", peer.label()));
        for b in bindings {
            match medians(report, peer, b) {
                Some((us, rate, p99)) => {
                    let ratio = medians(report, Peer::Raw, b)
                        .map(|(raw, _, _)| us / raw)
                        .filter(|r| r.is_finite());
                    match ratio {
                        Some(r) if peer != Peer::Raw => {
                            out.push_str(&format!(" {us:.1} ({r:.1}×) |"))
                        }
                        _ => out.push_str(&format!(" {us:.1} |")),
                    }
                    out.push_str(&format!(" {rate:.0} | {p99:.2} |"));
                }
                None => out.push_str(match totals.skipped.get(b.name()) {
                    Some(_) => " not answered | – | – |",
                    None => " – | – | – |",
                }),
            }
        }
        let held = peer
            .max_held()
            .map_or(totals.tasks, |max| totals.tasks.min(max as u64));
        let growth = totals.rss_after.saturating_sub(totals.rss_before) as f64;
        if held > 0 {
            out.push_str(&format!(" {:.0} B | {held} |\n", growth / held as f64));
        } else {
            out.push_str(" – | 0 |\n");
        }
    }
    out
}

/// Notes under the table: skipped bindings, errors.
pub fn notes(report: &Report) -> String {
    let mut out = String::new();
    for (peer, totals) in &report.totals {
        for (binding, why) in &totals.skipped {
            out.push_str(&format!(
                "- {} did not answer a valid SendMessage on {binding}: {why}\n",
                peer.name()
            ));
        }
        if totals.errors > 0 {
            out.push_str(&format!(
                "- {}: {} failed requests (not counted); first: {}\n",
                peer.name(),
                totals.errors,
                totals.first_error.as_deref().unwrap_or("?")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines_name_one_port_or_two() {
        let one: SocketAddr = "127.0.0.1:9000".parse().expect("addr");
        let two: SocketAddr = "127.0.0.1:9001".parse().expect("addr");
        assert_eq!(
            parse_ready("listening on 127.0.0.1:9000\n"),
            Some((one, one))
        );
        assert_eq!(
            parse_ready("listening on 127.0.0.1:9000 grpc 127.0.0.1:9001\n"),
            Some((one, two))
        );
        assert_eq!(parse_ready("agent card http://127.0.0.1:9000/"), None);
        assert_eq!(parse_ready("listening on nowhere"), None);
    }

    #[test]
    fn the_table_shows_ratios_to_raw_and_why_a_binding_is_missing() {
        let window = |us: f64| Window {
            requests: 1000,
            errors: 0,
            elapsed: Duration::from_secs(1),
            server_cpu: Some(Duration::from_secs_f64(us * 1000.0 / 1e6)),
            p99: Some(Duration::from_millis(2)),
        };
        let mut report = Report::default();
        for (peer, us) in [(Peer::Raw, 10.0), (Peer::Python, 1500.0)] {
            for binding in [Binding::Jsonrpc, Binding::Rest] {
                report.cases.push(Case {
                    round: 1,
                    peer,
                    binding,
                    window: window(us),
                });
            }
            let mut totals = Totals {
                tasks: 2000,
                rss_before: 1 << 20,
                rss_after: (1 << 20) + 2000 * 4096,
                ..Totals::default()
            };
            if peer == Peer::Python {
                totals
                    .skipped
                    .insert("grpc", "gRPC Unimplemented".to_owned());
            }
            report.totals.insert(peer, totals);
        }
        let table = table(&report);
        assert!(
            table.contains("| 1500.0 (150.0×) | 1000 | 2.00 |"),
            "{table}"
        );
        assert!(table.contains("not answered"), "{table}");
        assert!(table.contains("| 4096 B | 2000 |"), "{table}");
        assert!(notes(&report).contains("gRPC Unimplemented"));
    }
}
