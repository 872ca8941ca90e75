//! The servers of a column: `trident serve` child processes, and PostgreSQL's counters.

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `trident serve` child process, killed when dropped.
pub(super) struct Replica {
    child: Child,
    pub(super) addr: SocketAddr,
    log: PathBuf,
}

impl Replica {
    /// Starts `trident serve --agent demo` on `store` (plus `extra` flags) on a free loopback
    /// port, its stderr into `log`, and waits for the line naming its address. The
    /// environment's `TRIDENT_*` settings are not passed on: the flags alone decide.
    pub(super) fn start(
        trident: &Path,
        store: &str,
        extra: &[String],
        log: PathBuf,
    ) -> Result<Self, String> {
        let log_file = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = Command::new(trident);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("TRIDENT_") {
                cmd.env_remove(key);
            }
        }
        cmd.args(["serve", "--agent", "demo", "--listen", "127.0.0.1:0"])
            .args(["--store", store])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("starting {}: {e}", trident.display()))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("no stdout pipe".to_owned());
        };
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads the address, then drains the rest of stdout until the process ends.
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let mut tx = Some(tx);
            while let Some(Ok(line)) = lines.next() {
                if let Some(addr) = parse_serving(&line)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr);
                }
            }
        });
        let mut replica = Replica {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
        };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => {
                replica.addr = addr;
                Ok(replica)
            }
            Err(_) => {
                let status = replica.child.try_wait().ok().flatten();
                Err(format!(
                    "`{} serve --store {store} {}` did not start ({}): {}",
                    trident.display(),
                    extra.join(" "),
                    status.map_or("no address within 60 s".to_owned(), |s| s.to_string()),
                    replica.log_tail(10).join("\n    ")
                ))
            }
        }
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last `n` lines of its log.
    pub(super) fn log_tail(&self, n: usize) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| (*l).to_owned())
            .collect()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in `trident serve`'s first line: `Trident serving … on ADDR (store: …)`.
pub fn parse_serving(line: &str) -> Option<SocketAddr> {
    let rest = line.trim().strip_prefix("Trident serving ")?;
    let (_, after) = rest.rsplit_once(" on ")?;
    after.split_whitespace().next()?.parse().ok()
}

/// `pg_stat_database` readings on a connection of its own.
pub(super) struct PgStats {
    conn: sqlx::PgConnection,
}

/// One reading.
#[derive(Debug, Clone, Copy)]
pub(super) struct PgReading {
    /// `xact_commit` of the database.
    pub(super) commits: i64,
    /// The next transaction id (server-wide).
    pub(super) xids: i64,
}

impl PgStats {
    pub(super) async fn connect(url: &str) -> Result<Self, String> {
        use sqlx::Connection as _;
        let conn = sqlx::PgConnection::connect(url)
            .await
            .map_err(|e| format!("connecting to {}: {e}", trident_store::describe(url)))?;
        Ok(Self { conn })
    }

    pub(super) async fn read(&mut self) -> Result<PgReading, String> {
        let (commits, xids): (i64, i64) = sqlx::query_as(
            "SELECT xact_commit, \
             CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text) AS bigint) \
             FROM pg_stat_database WHERE datname = current_database()",
        )
        .fetch_one(&mut self.conn)
        .await
        .map_err(|e| format!("reading pg_stat_database: {e}"))?;
        Ok(PgReading { commits, xids })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_read_from_the_serving_line() {
        assert_eq!(
            parse_serving("Trident serving the demo agent on 127.0.0.1:33703 (store: memory)\n"),
            Some(SocketAddr::from(([127, 0, 0, 1], 33703)))
        );
        assert_eq!(
            parse_serving("Trident serving `sh -c on x` on [::1]:8080 (store: sqlite:a b.db)"),
            "[::1]:8080".parse().ok()
        );
        assert_eq!(parse_serving("  agent card  http://127.0.0.1:1/"), None);
        assert_eq!(
            parse_serving("Trident serving the demo agent on nowhere"),
            None
        );
    }
}
