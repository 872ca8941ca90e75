//! A `nats-server` with JetStream of a test's own, on a free loopback port, so that a test can
//! kill it (`kill -9`) and start it again on the same port and store directory without
//! touching the machine's shared server.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::process::TempDir;

/// The Debian package's server binary, which `.ci/run` installs.
const BINARY: &str = "/usr/sbin/nats-server";

/// A running (or killed) `nats-server -js` process.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    dir: TempDir,
}

impl NatsServer {
    /// Starts a server on a free port, or `None` (with a note on stderr) when the binary is
    /// missing: the tests that need one are skipped, as those needing PostgreSQL are, and fail
    /// under `CI`.
    pub async fn start() -> Option<Self> {
        if !Self::available() {
            eprintln!("skipped: {BINARY} is not installed (.ci/run installs nats-server)");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let mut server = Self {
            child: None,
            port,
            dir: TempDir::new("trident-nats"),
        };
        server.restart().await;
        Some(server)
    }

    /// Whether the binary is installed; under `CI` its absence fails the test instead.
    pub fn available() -> bool {
        let installed = std::path::Path::new(BINARY).exists();
        assert!(
            installed || std::env::var_os("CI").is_none(),
            "{BINARY} is not installed (.ci/run installs nats-server)"
        );
        installed
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// `kill -9`: the server stops at once, without closing its connections cleanly.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again (after [`kill`](Self::kill)) on the same port and store
    /// directory, and waits until it accepts connections.
    pub async fn restart(&mut self) {
        self.kill();
        let store: PathBuf = self.dir.0.join("jetstream");
        let child = Command::new(BINARY)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(&store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let addr = format!("127.0.0.1:{}", self.port);
        crate::wait::until("nats-server accepts connections", || {
            let addr = addr.clone();
            async move { tokio::net::TcpStream::connect(addr).await.ok().map(drop) }
        })
        .await;
        // JetStream is up a moment after the port opens; clients retry meanwhile anyway.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
