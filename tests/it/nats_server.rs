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

/// The URL of a `nats-server -js` shared by the tests of this process that need a bus but not
/// a server to kill (the behaviour suite's `postgres_bus` fixtures, each in a namespace of its
/// own), started on first use; `None` (with a note on stderr) when the binary is missing, a
/// failed test under `CI` (see [`NatsServer::available`]). A server per fixture cost ~125 ms
/// each (its start, and JetStream's moment after the port opens), ~8 s over the suite's 64.
pub async fn shared_url() -> Option<String> {
    static SHARED: tokio::sync::OnceCell<Shared> = tokio::sync::OnceCell::const_new();
    if !NatsServer::available() {
        eprintln!("skipped: {BINARY} is not installed (.ci/run installs nats-server)");
        return None;
    }
    Some(SHARED.get_or_init(Shared::start).await.url.clone())
}

/// The shared server: a shell runs it and waits on its stdin, whose writing end only this
/// process holds; when this process exits, however it exits, the shell reads end-of-file,
/// stops the server and removes its store directory. (A static's drop never runs.)
struct Shared {
    url: String,
    _shell: Child,
    _stdin: std::process::ChildStdin,
}

impl Shared {
    async fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir =
            std::env::temp_dir().join(format!("trident-nats-shared-{}", uuid::Uuid::new_v4()));
        let script = r#"
            "$0" -a 127.0.0.1 -p "$1" -js -sd "$2" </dev/null >/dev/null 2>&1 &
            server=$!
            read -r _ || true
            kill "$server"
            wait "$server"
            rm -rf "$2"
        "#;
        let mut shell = Command::new("sh")
            .args(["-c", script, BINARY, &port.to_string()])
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the shared nats-server");
        let stdin = shell.stdin.take().expect("piped stdin");
        wait_until_up(port).await;
        Self {
            url: format!("nats://127.0.0.1:{port}"),
            _shell: shell,
            _stdin: stdin,
        }
    }
}

/// Waits until a server on `port` accepts connections, and JetStream's moment after.
async fn wait_until_up(port: u16) {
    let addr = format!("127.0.0.1:{port}");
    crate::wait::until("nats-server accepts connections", || {
        let addr = addr.clone();
        async move { tokio::net::TcpStream::connect(addr).await.ok().map(drop) }
    })
    .await;
    // JetStream is up a moment after the port opens; clients retry meanwhile anyway.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

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
        wait_until_up(self.port).await;
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
