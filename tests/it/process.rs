//! `trident serve` as a real child process: started on a free port, stopped with SIGKILL;
//! and the client commands run to completion ([`Run`]), with what the tests read of them.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use trident_client::Binding;
use trident_core::A2aService;

/// A running `trident serve`.
pub struct Trident {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
}

impl Trident {
    /// Starts `trident serve --listen 127.0.0.1:0 ARGS…` and waits until it serves.
    pub async fn serve(args: &[&str]) -> Self {
        Self::start("serve", args, &[]).await
    }

    /// [`serve`](Self::serve) with these environment variables set.
    pub async fn serve_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start("serve", args, env).await
    }

    /// Starts `trident gateway --listen 127.0.0.1:0 --upstream UPSTREAM ARGS…`.
    pub async fn gateway(upstream: &str, args: &[&str]) -> Self {
        let mut all = vec!["--upstream", upstream];
        all.extend_from_slice(args);
        Self::start("gateway", &all, &[]).await
    }

    /// Starts `trident console --listen 127.0.0.1:0 ARGS…` and waits until it serves;
    /// `origin` is the page's origin.
    pub async fn console(args: &[&str]) -> Self {
        Self::start_until("console", args, &[], "console").await
    }

    async fn start(command: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_until(command, args, env, "agent card").await
    }

    /// Starts `trident COMMAND`, ready once it prints a line `LABEL URL`.
    async fn start_until(command: &str, args: &[&str], env: &[(&str, &str)], label: &str) -> Self {
        let label = label.to_owned();
        let verbose = std::env::var_os("TRIDENT_TEST_VERBOSE").is_some();
        let mut child = Command::new(env!("CARGO_BIN_EXE_trident"))
            .args([command, "--listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .env(
                "RUST_LOG",
                if verbose {
                    "info,trident_core=debug"
                } else {
                    "warn"
                },
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if verbose {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("start trident serve");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let ready = tokio::task::spawn_blocking(move || {
            let mut lines = stdout.lines();
            for line in lines.by_ref() {
                let line = line.ok()?;
                if verbose {
                    println!("[trident] {line}");
                }
                if let Some(url) = line.trim().strip_prefix(label.as_str()) {
                    let url = url.trim().to_owned();
                    // Keep draining so the child never blocks on a full pipe.
                    std::thread::spawn(move || {
                        for line in lines.map_while(Result::ok) {
                            if verbose {
                                println!("[trident] {line}");
                            }
                        }
                    });
                    return Some(url);
                }
            }
            None
        });
        let card_url = match tokio::time::timeout(Duration::from_secs(30), ready).await {
            Ok(Ok(Some(url))) => url,
            _ => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "trident {command} {args:?} did not start (exit {status:?}); rerun with \
                     TRIDENT_TEST_VERBOSE=1"
                );
            }
        };
        let origin = card_url
            .split("/.well-known")
            .next()
            .unwrap_or(&card_url)
            .trim_end_matches('/')
            .to_owned();
        Self { child, origin }
    }

    /// Runs `trident serve --listen 127.0.0.1:0 ARGS…`, which must refuse to start: returns
    /// what it wrote to stderr. Fails if it serves instead (or neither serves nor exits in
    /// time).
    pub async fn serve_refused(args: &[&str]) -> String {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trident"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start trident serve");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut stderr = child.stderr.take().expect("piped stderr");
        // Whether it serves: its stdout names the agent card once it does, and ends when it
        // exits.
        let served = tokio::task::spawn_blocking(move || {
            stdout
                .lines()
                .map_while(Result::ok)
                .any(|line| line.trim().starts_with("agent card"))
        });
        let served = tokio::time::timeout(Duration::from_secs(30), served).await;
        if !matches!(served, Ok(Ok(false))) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("trident serve {args:?} was expected to refuse to start, but it serves");
        }
        let status = child.wait().expect("wait for trident serve");
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        assert!(
            !status.success(),
            "a refusal exits with an error: {status}; {text}"
        );
        text
    }

    /// A client of this server over `binding`.
    pub async fn client(&self, binding: Binding) -> Arc<dyn A2aService> {
        trident_client::connect(&self.origin, &[binding])
            .await
            .expect("connect")
            .service
    }

    /// SIGTERM, then waits (bounded) for the process to exit; its exit status.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGSTOP: the process is frozen (its timers, heartbeats and connections with it) until
    /// [`resume`](Self::resume).
    pub fn stop(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT: a [`stop`](Self::stop)ped process runs on.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} failed: {status}");
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `kill -9`: no shutdown code runs.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Trident {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `trident` client command line, run to completion by a test: no `A2ACLI_*` variable
/// or `TRIDENT_CONFIG` of the test's own environment, `XDG_CONFIG_HOME` in an empty place (no
/// global `a2a-cli/.env`), `RUST_LOG=error`, stdin empty unless given, stdout and stderr
/// kept.
pub struct Run {
    command: Command,
    stdin: Option<Vec<u8>>,
    limit: Duration,
}

impl Run {
    /// `trident ARGS…`.
    pub fn new<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trident"));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("A2ACLI_") || key == "TRIDENT_CONFIG" {
                command.env_remove(key);
            }
        }
        // Nor the global settings file of the developer running the tests.
        let no_config = std::env::temp_dir().join("trident-tests-no-config");
        command
            .args(args)
            .env("RUST_LOG", "error")
            .env("XDG_CONFIG_HOME", no_config);
        Self {
            command,
            stdin: None,
            limit: Duration::from_secs(60),
        }
    }

    /// With these environment variables.
    pub fn envs<K: AsRef<std::ffi::OsStr>, V: AsRef<std::ffi::OsStr>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.command.envs(vars);
        self
    }

    /// In this working directory.
    pub fn current_dir(mut self, dir: &std::path::Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    /// With these bytes on stdin.
    pub fn stdin(mut self, bytes: Option<&[u8]>) -> Self {
        self.stdin = bytes.map(<[u8]>::to_vec);
        self
    }

    /// Allowed to run this long (default 60s) before the test fails.
    pub fn limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// Runs it to completion.
    pub async fn output(self) -> std::process::Output {
        let Self {
            mut command,
            stdin,
            limit,
        } = self;
        let run = tokio::task::spawn_blocking(move || {
            let mut child = command
                .stdin(if stdin.is_some() {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run trident");
            if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
                std::io::Write::write_all(&mut pipe, &bytes).expect("write stdin");
            }
            child.wait_with_output().expect("trident output")
        });
        tokio::time::timeout(limit, run)
            .await
            .expect("trident finished in time")
            .expect("join")
    }
}

/// What a run wrote to stdout.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a run wrote to stderr.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stdout of a run that succeeded (fails the test with both outputs otherwise).
#[track_caller]
pub fn ok(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

/// The value of the first `Label: value` line of a client command's text output.
pub fn field<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(label).and_then(|r| r.strip_prefix(": ")))
}
