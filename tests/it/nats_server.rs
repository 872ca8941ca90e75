//! A `nats-server` with JetStream of a test's own, so that a test can kill it (`kill -9`) and
//! start it again on the same port and store directory without touching the machine's shared
//! server: on a free loopback port ([`NatsServer::start`]), or in a network namespace of its
//! own that each client reaches through its own link, which a test can cut and mend to
//! partition that client from the bus ([`NatsServer::start_partitionable`]).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::process::TempDir;

/// The Debian package's server binary, which `.ci/run` installs.
const BINARY: &str = "/usr/sbin/nats-server";

/// The client port of a server in a namespace of its own (nothing else listens there).
const NETNS_PORT: u16 = 4222;

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
    /// The namespace the server runs in, or `None`: the root namespace's loopback.
    /// Declared after `child`, and removed in [`Drop`] after the server is killed.
    net: Option<Netns>,
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
            net: None,
        };
        server.restart().await;
        Some(server)
    }

    /// Starts a server in a fresh network namespace joined to the root namespace by `links`
    /// veth pairs, one per client ([`url_for`](Self::url_for)), each a /30 subnet of its own,
    /// so that [`partition`](Self::partition) can cut one client off. `None` (with a note on
    /// stderr) when the binary is missing or this process cannot make namespaces (it needs
    /// root: `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`); both fail under `CI`. The namespace and its
    /// links are removed on drop.
    pub async fn start_partitionable(links: usize) -> Option<Self> {
        if !Self::available() {
            eprintln!("skipped: {BINARY} is not installed (.ci/run installs nats-server)");
            return None;
        }
        let net = match Netns::new(links) {
            Ok(net) => net,
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "cannot make a network namespace for the partition tests (run as root): {e}"
                );
                eprintln!("skipped: cannot make a network namespace (run as root): {e}");
                return None;
            }
        };
        let mut server = Self {
            child: None,
            port: NETNS_PORT,
            dir: TempDir::new("trident-nats"),
            net: Some(net),
        };
        server.restart().await;
        Some(server)
    }

    /// The URL client number `client` connects to: the one loopback URL, or the server's
    /// address on link `client` of a server in a namespace.
    pub fn url_for(&self, client: usize) -> String {
        format!("nats://{}", self.addr(client))
    }

    /// What the server logged so far (at debug level: connections made and closed, why).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("nats.log")).unwrap_or_default()
    }

    /// How many client connections the server has accepted over link `client` of a server in
    /// a namespace (readiness probes included).
    pub fn connections_from(&self, client: usize) -> usize {
        let net = self.net.as_ref().expect("a server in a namespace");
        let from = format!("] {}:", net.link(client).outer_ip);
        self.log()
            .lines()
            .filter(|l| l.contains(&from) && l.ends_with("Client connection created"))
            .count()
    }

    fn addr(&self, client: usize) -> String {
        match &self.net {
            None => format!("127.0.0.1:{}", self.port),
            Some(net) => format!("{}:{}", net.link(client).inner_ip, self.port),
        }
    }

    /// Cuts link `client` (of a server in a namespace): its end in the namespace goes down, so
    /// whatever either side sends over it vanishes, with no RST or ICMP error to the client,
    /// as in a real partition. Connections stay open on both sides until
    /// [`heal`](Self::heal) (or until a keepalive gives up on them).
    pub fn partition(&self, client: usize) {
        let net = self.net.as_ref().expect("a server in a namespace");
        net.exec(&["ip", "link", "set", &net.link(client).inner, "down"])
            .expect("take the link down");
    }

    /// Closes the server's end of every connection over link `client` (`ss -K` in the
    /// namespace), as a server does when it gives up on a client it cannot reach (a stale
    /// connection, a write deadline): during a [`partition`](Self::partition) the client
    /// hears nothing of it, and learns it only once the link is back and it sends something
    /// (the server's host answers with a RST).
    pub async fn drop_connections(&self, client: usize) {
        let net = self.net.as_ref().expect("a server in a namespace");
        let ip = net.link(client).outer_ip.clone();
        net.exec(&["ss", "-K", "-t", "dst", &ip])
            .expect("close the server's connections");
        let closed = format!("] {ip}:");
        crate::wait::until("the server closed the connection", || {
            let closed = self.log().lines().any(|l| {
                l.contains(&closed) && l.contains("trident") && l.contains("connection closed")
            });
            async move { closed.then_some(()) }
        })
        .await;
    }

    /// Mends link `client` [`partition`](Self::partition) cut.
    pub fn heal(&self, client: usize) {
        let net = self.net.as_ref().expect("a server in a namespace");
        net.exec(&["ip", "link", "set", &net.link(client).inner, "up"])
            .expect("bring the link up");
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
        let (listen, mut command) = match &self.net {
            None => ("127.0.0.1", Command::new(BINARY)),
            Some(net) => {
                // `ip netns exec` enters the namespace and then execs the server: the child
                // is the server itself.
                let mut command = Command::new("ip");
                command.args(["netns", "exec", &net.name, BINARY]);
                ("0.0.0.0", command)
            }
        };
        let child = command
            .args(["-a", listen, "-p", &self.port.to_string(), "-js", "-sd"])
            .arg(&store)
            // Debug: the log says when and why a connection is closed.
            .args(["-D", "-l"])
            .arg(self.dir.0.join("nats.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let addrs: Vec<String> = match &self.net {
            None => vec![self.addr(0)],
            Some(net) => (0..net.links.len()).map(|i| self.addr(i)).collect(),
        };
        for addr in addrs {
            crate::wait::until("nats-server accepts connections", || {
                let addr = addr.clone();
                async move { tokio::net::TcpStream::connect(addr).await.ok().map(drop) }
            })
            .await;
        }
        // JetStream is up a moment after the port opens; clients retry meanwhile anyway.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        // The server first: a namespace goes away with its last process.
        self.kill();
        self.net.take();
    }
}

/// A network namespace and its veth links to the root namespace, removed on drop (also when
/// the test panics).
struct Netns {
    name: String,
    links: Vec<VethLink>,
}

/// One veth pair: `outer` in the root namespace at `outer_ip`, `inner` in the namespace at
/// `inner_ip`, a /30 of their own.
struct VethLink {
    outer: String,
    outer_ip: String,
    inner: String,
    inner_ip: String,
}

impl Netns {
    /// A namespace `trident-TAG` with `links` links `tTAGo{i}` / `tTAGi{i}` on
    /// `10.213.X.(4i)/30`, where TAG (this process and a counter) and X (free on this host)
    /// keep concurrent test runs apart.
    fn new(links: usize) -> Result<Self, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        assert!(links <= 64, "at most 64 links in a /24");
        let tag = format!(
            "{:05x}{:x}",
            std::process::id() & 0xf_ffff,
            NEXT.fetch_add(1, Ordering::Relaxed) & 0xf
        );
        let name = format!("trident-{tag}");
        run(&["ip", "netns", "add", &name])?;
        // From here on, drop removes what was made.
        let mut net = Self {
            name,
            links: Vec::new(),
        };
        let subnet = free_subnet()?;
        net.exec(&["ip", "link", "set", "lo", "up"])?;
        for i in 0..links {
            let link = VethLink {
                outer: format!("t{tag}o{i}"),
                outer_ip: format!("10.213.{subnet}.{}", 4 * i + 1),
                inner: format!("t{tag}i{i}"),
                inner_ip: format!("10.213.{subnet}.{}", 4 * i + 2),
            };
            let outer_cidr = format!("{}/30", link.outer_ip);
            let inner_cidr = format!("{}/30", link.inner_ip);
            run(&[
                "ip",
                "link",
                "add",
                &link.outer,
                "type",
                "veth",
                "peer",
                "name",
                &link.inner,
                "netns",
                &net.name,
            ])?;
            let (outer, inner) = (link.outer.clone(), link.inner.clone());
            net.links.push(link);
            run(&["ip", "addr", "add", &outer_cidr, "dev", &outer])?;
            run(&["ip", "link", "set", &outer, "up"])?;
            net.exec(&["ip", "addr", "add", &inner_cidr, "dev", &inner])?;
            net.exec(&["ip", "link", "set", &inner, "up"])?;
        }
        Ok(net)
    }

    fn link(&self, i: usize) -> &VethLink {
        &self.links[i % self.links.len()]
    }

    /// Runs `args` in the namespace.
    fn exec(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting one end of a veth pair deletes both; the namespace's ends would go with it.
        for link in &self.links {
            let _ = run(&["ip", "link", "del", &link.outer]);
        }
        let _ = run(&["ip", "netns", "del", &self.name]);
    }
}

/// A third octet X such that no address of this host is in 10.213.X.0/24.
fn free_subnet() -> Result<u8, String> {
    let out = Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .output()
        .map_err(|e| format!("ip addr show: {e}"))?;
    let taken = String::from_utf8_lossy(&out.stdout).into_owned();
    let start = (std::process::id() as usize + uuid::Uuid::new_v4().as_u128() as usize) % 256;
    (0..256)
        .map(|k| ((start + k) % 256) as u8)
        .find(|x| !taken.contains(&format!(" 10.213.{x}.")))
        .ok_or_else(|| "no free subnet in 10.213.0.0/16".to_owned())
}

/// Runs a command; its stderr on failure.
fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {} {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
