//! Smoke run of `trident-bench cluster --quick`: every column starts its real `trident serve`
//! processes and every row is measured and checked (no figure fails), on small sizes.
//!
//! Ignored by default: it needs the `trident` binary built beside `trident-bench` (this test
//! does not build it, and a stale one would be measured silently) and a PostgreSQL server
//! (`TRIDENT_TEST_POSTGRES`, default `postgres://postgres@127.0.0.1:5432/test`), and it takes
//! a minute or two on a debug build. Run it with:
//!
//! ```sh
//! cargo build -p trident-cli -p trident-bench
//! cargo test -p trident-bench --test cluster -- --ignored
//! ```

use std::path::PathBuf;
use std::process::Command;

#[test]
#[ignore = "needs target/<profile>/trident built and PostgreSQL; see the file's docs"]
fn quick_cluster_run_fills_every_cell() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_trident-bench"));
    let trident = bench.with_file_name("trident");
    assert!(
        trident.is_file(),
        "{} is missing: cargo build -p trident-cli first",
        trident.display()
    );
    let pg_url = std::env::var("TRIDENT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let out = Command::new(&bench)
        .args([
            "cluster",
            "--quick",
            "--pg-settle",
            "1",
            "--pg-url",
            &pg_url,
        ])
        .arg("--trident")
        .arg(&trident)
        .output()
        .expect("run trident-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "trident-bench cluster failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains(
            "| | one node, SQLite (default) | cluster, PostgreSQL, 1 replica | cluster, 2 \
             replicas | cluster, 2 replicas + bus |"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("error"), "{stdout}");
    // Every measured row has a number in the columns that apply; the bus column is either
    // measured or says why not.
    for row in [
        "| one stream (2 000 chunks), events/s |",
        "| 10 concurrent streams × 200 chunks, events produced/s",
        "| blocking SendMessage req/s (8 connections, HTTP+JSON) |",
        "| PostgreSQL commits per streamed event",
        "| CPU per streamed event (10 streams), µs: the replicas",
        "| CPU per streamed event (10 streams), µs: PostgreSQL",
        "| CPU per streamed event (10 streams), µs: nats-server",
        "| CPU per streamed event (10 streams), µs: the bench client",
        "| cross-replica subscriber: CPU per event",
        "| cross-replica subscriber lag p50 / p99 at 1 000 chunks |",
        "| cross-replica subscriber lag p50 / p99 at 4 000 chunks |",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?} in\n{stdout}"));
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").skip(1).collect();
        assert_eq!(cells.len(), 4, "{line}");
        for cell in &cells[..3] {
            assert!(
                cell.starts_with("n/a (")
                    || cell.starts_with(|c: char| c.is_ascii_digit() || c == '-'),
                "{row}: {cell:?}"
            );
        }
        assert!(
            cells[3].starts_with(|c: char| c.is_ascii_digit() || c == '-')
                || cells[3].trim() == "n/a (this build has no --events)",
            "{row}: {:?}",
            cells[3]
        );
    }
    assert!(stdout.contains("(target ≥ 0.8)"), "{stdout}");
}
