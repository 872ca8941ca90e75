//! The orchestrator behind `trident-bench run`: each server mode in a child process on core 0,
//! the load generator in this process on core 1, server CPU per request from `/proc`, and a
//! markdown table of the results.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cpu::Clock;
use crate::load::{Binding, Load, Summary, Target, Window, measure};
use crate::peers::READY;
use crate::server::{Mode, Store};

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Measured time per (mode, binding) case.
    pub duration: Duration,
    /// Load before each measurement (same connections), not measured.
    pub warmup: Duration,
    /// Concurrent requests (HTTP/1.1 connections, or gRPC streams on one connection).
    pub connections: usize,
    /// How many times every case is measured; the table shows the medians.
    pub rounds: usize,
    /// Runtime of the server processes.
    pub server_runtime: crate::ServerRuntime,
    /// Set `TCP_NODELAY` on the servers' connections.
    pub server_nodelay: bool,
    /// The store behind Trident's engine.
    pub trident_store: crate::server::Store,
    /// Pin the server to core 0 and this process to core 1 (with `taskset`).
    pub pin: bool,
}

/// One measured case.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Round number, from 1.
    pub round: usize,
    /// Server mode.
    pub mode: Mode,
    /// Binding.
    pub binding: Binding,
    /// The measurement window.
    pub window: Window,
    /// Totals of the load, warm-up included.
    pub summary: Summary,
}

/// A server child process.
struct Server {
    child: Child,
    /// Kept open so that the child never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
    /// A temporary directory holding the server's SQLite file, removed when it stops.
    data_dir: Option<PathBuf>,
}

impl Server {
    /// Starts `exe server --mode <mode>` on an ephemeral port (under `taskset -c 0` when
    /// pinning) and waits until it accepts connections.
    fn spawn(mode: Mode, config: &RunConfig) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
        let mut cmd = if config.pin {
            // taskset execs the program: the child's pid is the server's.
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", "0"]).arg(&exe);
            cmd
        } else {
            Command::new(&exe)
        };
        cmd.args(["server", "--mode", mode.name(), "--listen", "127.0.0.1:0"])
            .args(["--runtime", config.server_runtime.name()]);
        if config.server_nodelay {
            cmd.arg("--nodelay");
        }
        let mut data_dir = None;
        if mode == Mode::Trident {
            cmd.args(["--store", config.trident_store.name()]);
            if config.trident_store == Store::Sqlite {
                let dir = std::env::temp_dir()
                    .join(format!("trident-bench-{}", uuid::Uuid::new_v4().simple()));
                std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                cmd.arg("--sqlite-path").arg(dir.join("tasks.db"));
                data_dir = Some(dir);
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                remove(data_dir.as_ref());
                return Err(format!("spawn server: {e}"));
            }
        };
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            remove(data_dir.as_ref());
            return Err("no stdout pipe".to_owned());
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        // A blocking read, before any load runs: the server prints this line once bound.
        let read = stdout.read_line(&mut line);
        let mut server = Server {
            child,
            _stdout: stdout,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
        };
        read.map_err(|e| format!("reading the server's address: {e}"))?;
        server.addr = line
            .trim()
            .strip_prefix(READY)
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("the server said {line:?} instead of its address"))?;
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the server accepts a TCP connection.
    async fn wait_accepting(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::net::TcpStream::connect(self.addr).await {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("server at {} never accepted: {e}", self.addr));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        remove(self.data_dir.as_ref());
    }
}

fn remove(dir: Option<&PathBuf>) {
    if let Some(dir) = dir
        && let Err(e) = std::fs::remove_dir_all(dir)
    {
        eprintln!("removing {}: {e}", dir.display());
    }
}

/// Whether `taskset` can be run.
pub fn taskset_available() -> bool {
    Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Pins every thread of this process (and the threads and children it creates later) to
/// `core` with `taskset -a -p`.
pub fn pin_self(core: usize) -> Result<(), String> {
    let status = Command::new("taskset")
        .args([
            "-a",
            "-p",
            "-c",
            &core.to_string(),
            &std::process::id().to_string(),
        ])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("taskset: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset -a -p -c {core} exited with {status}"))
    }
}

/// Measures every (mode, binding) case `config.rounds` times. Modes alternate order between
/// rounds (raw first in odd rounds) so slow drift of the machine affects both alike. Each mode
/// gets one fresh server per round, loaded by each binding in turn.
pub async fn run(config: &RunConfig, clock: Clock) -> Result<Vec<Sample>, String> {
    let mut samples = Vec::new();
    for round in 1..=config.rounds {
        let modes = if round % 2 == 1 {
            [Mode::Raw, Mode::Trident]
        } else {
            [Mode::Trident, Mode::Raw]
        };
        for mode in modes {
            let server = Server::spawn(mode, config)?;
            server.wait_accepting().await?;
            for binding in Binding::ALL {
                let load =
                    Load::start(binding, &Target::single(server.addr), config.connections).await?;
                tokio::time::sleep(config.warmup).await;
                let window = measure(&load, config.duration, Some((server.pid(), clock))).await;
                let summary = load.stop().await;
                let window = window?;
                eprintln!(
                    "round {round} {:>7} {:>7}: {:>8.0} req/s, {:>6.2} µs/req, server CPU {:>3.0}%, {} errors",
                    mode.name(),
                    binding.name(),
                    window.rate(),
                    window.cpu_us_per_request().unwrap_or(f64::NAN),
                    window.server_utilization().unwrap_or(f64::NAN) * 100.0,
                    summary.errors,
                );
                samples.push(Sample {
                    round,
                    mode,
                    binding,
                    window,
                    summary,
                });
            }
        }
    }
    Ok(samples)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// Median requests/s and server µs/request of one case over its rounds.
pub fn medians(samples: &[Sample], mode: Mode, binding: Binding) -> (f64, f64) {
    let case: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.mode == mode && s.binding == binding)
        .collect();
    let rate = median(case.iter().map(|s| s.window.rate()).collect());
    let cpu = median(
        case.iter()
            .map(|s| s.window.cpu_us_per_request().unwrap_or(f64::NAN))
            .collect(),
    );
    (rate, cpu)
}

/// The summary table (medians over rounds), ready for docs/performance.md.
pub fn summary_table(samples: &[Sample]) -> String {
    let mut out = String::from(
        "| binding | raw req/s | raw µs/req | trident req/s | trident µs/req | CPU ratio |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for binding in Binding::ALL {
        let (raw_rate, raw_cpu) = medians(samples, Mode::Raw, binding);
        let (tri_rate, tri_cpu) = medians(samples, Mode::Trident, binding);
        out.push_str(&format!(
            "| {} | {:.0} | {:.1} | {:.0} | {:.1} | {:.2}x |\n",
            label(binding),
            raw_rate,
            raw_cpu,
            tri_rate,
            tri_cpu,
            tri_cpu / raw_cpu
        ));
    }
    out
}

/// Every measurement, one row per (round, mode, binding).
pub fn detail_table(samples: &[Sample]) -> String {
    let mut out = String::from(
        "| round | mode | binding | req/s | server CPU | µs/req | response bytes | errors |\n\
         |---:|---|---|---:|---:|---:|---:|---:|\n",
    );
    for s in samples {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0}% | {:.2} | {} | {} |\n",
            s.round,
            s.mode.name(),
            s.binding.name(),
            s.window.rate(),
            s.window.server_utilization().unwrap_or(f64::NAN) * 100.0,
            s.window.cpu_us_per_request().unwrap_or(f64::NAN),
            s.summary.response_bytes,
            s.summary.errors,
        ));
    }
    out
}

fn label(binding: Binding) -> &'static str {
    match binding {
        Binding::Rest => "HTTP+JSON (HTTP/1.1)",
        Binding::Jsonrpc => "JSON-RPC (HTTP/1.1)",
        Binding::Grpc => "gRPC (h2c)",
    }
}
