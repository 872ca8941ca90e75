//! The Markdown table and the ratios under it.

use super::{Column, CpuPerEvent, Figure, Lag, Report, Setup, StreamCpu};

/// `n` with a space between groups of three digits, as docs/performance.md's tables write numbers.
fn grouped(n: f64) -> String {
    if !n.is_finite() {
        return format!("{n}");
    }
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    if n < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

fn lag_cell(l: &Lag) -> String {
    format!("{} / {} ms", ms(l.p50_ms), ms(l.p99_ms))
}

/// A component's CPU per event, or why it does not apply.
fn us_cell(v: Option<f64>, why: &str) -> String {
    v.map_or_else(|| why.to_owned(), |v| format!("{v:.1}"))
}

/// The replicas' CPU per event: their sum, and each one's when there are several.
fn replicas_cell(v: &StreamCpu) -> String {
    let total = format!("{:.1}", v.replicas_total_us());
    if v.replicas_us.len() < 2 {
        return total;
    }
    let each: Vec<String> = v.replicas_us.iter().map(|u| format!("{u:.1}")).collect();
    format!("{total} ({})", each.join(" + "))
}

fn ms(v: f64) -> String {
    if v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// The table: a row per figure, a column per setup run.
pub fn table(report: &Report) -> String {
    let c = &report.config;
    let mut out = String::from("| |");
    for col in &report.columns {
        out.push_str(&format!(" {} |", col.setup.label()));
    }
    out.push_str("\n|---|");
    for _ in &report.columns {
        out.push_str("---:|");
    }
    out.push('\n');
    let mut row = |label: String, cell: &dyn Fn(&Column) -> String| {
        out.push_str(&format!("| {label} |"));
        for col in &report.columns {
            out.push_str(&format!(" {} |", cell(col)));
        }
        out.push('\n');
    };
    row(
        format!("one stream ({} chunks), events/s", grouped(c.events as f64)),
        &|col| col.one_stream.cell(|v| grouped(*v)),
    );
    row(
        format!(
            "{} concurrent streams × {} chunks, events produced/s (aggregate over replicas; median of {} rounds)",
            c.streams,
            grouped(c.stream_chunks as f64),
            c.stream_rounds
        ),
        &|col| col.many_streams.cell(|v| grouped(*v)),
    );
    row(
        format!(
            "blocking SendMessage req/s ({} connections, HTTP+JSON)",
            c.connections
        ),
        &|col| col.blocking.cell(|v| grouped(*v)),
    );
    row(
        format!(
            "PostgreSQL commits per streamed event ({} streams; `xact_commit` delta ÷ events)",
            c.streams
        ),
        &|col| col.commits.cell(|v| format!("{:.3}", v.per_event)),
    );
    let cpu_row =
        |what: &str| format!("CPU per streamed event ({} streams), µs: {what}", c.streams);
    row(
        cpu_row("the replicas (utime+stime of each `trident serve`, summed)"),
        &|col| col.stream_cpu.cell(replicas_cell),
    );
    row(
        cpu_row("PostgreSQL (every `postgres` process, server-wide)"),
        &|col| {
            col.stream_cpu
                .cell(|v| us_cell(v.postgres_us, "n/a (SQLite)"))
        },
    );
    row(
        cpu_row("nats-server (every `nats-server` process)"),
        &|col| col.stream_cpu.cell(|v| us_cell(v.nats_us, "n/a (no bus)")),
    );
    row(
        cpu_row("the bench client (reads and checks every stream)"),
        &|col| col.stream_cpu.cell(|v| format!("{:.1}", v.client_us)),
    );
    row(
        format!(
            "cross-replica subscriber: CPU per event on the following replica ÷ on the \
             producing replica (local subscriber), {} chunks",
            grouped(c.lag_chunks.1 as f64)
        ),
        &|col| {
            col.cpu.cell(|v| {
                format!(
                    "{:.2} ({:.1} ÷ {:.1} µs)",
                    v.ratio(),
                    v.follower_us,
                    v.local_us
                )
            })
        },
    );
    row(
        format!(
            "cross-replica subscriber lag p50 / p99 at {} chunks",
            grouped(c.lag_chunks.0 as f64)
        ),
        &|col| col.lag_short.cell(lag_cell),
    );
    row(
        format!(
            "cross-replica subscriber lag p50 / p99 at {} chunks",
            grouped(c.lag_chunks.1 as f64)
        ),
        &|col| col.lag_long.cell(lag_cell),
    );
    out
}

/// The ratios issue 30's Done-when asks for, each with its target; then the details (write
/// transactions per event, lag samples) and every error.
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let col = |s: Setup| report.column(s);
    let verdict = |v: f64, at_least: bool, target: f64| {
        let met = if at_least { v >= target } else { v <= target };
        format!("{v:.2} ({})", if met { "met" } else { "**not met**" })
    };
    // One line: the ratio for each candidate column, `value` giving it or why not.
    let mut line = |name: &str,
                    target: (bool, f64),
                    candidates: &[(&str, Setup)],
                    value: &dyn Fn(&Column) -> Result<f64, String>| {
        let (at_least, t) = target;
        let mut parts = Vec::new();
        for &(label, setup) in candidates {
            let shown = match col(setup) {
                None => continue,
                Some(c) => match value(c) {
                    Ok(v) if v.is_finite() => verdict(v, at_least, t),
                    Ok(_) => "n/a (no value)".to_owned(),
                    Err(why) => why,
                },
            };
            parts.push(format!("{label}: {shown}"));
        }
        if parts.is_empty() {
            parts.push("not run".to_owned());
        }
        out.push_str(&format!(
            "- {name} (target {} {t}): {}\n",
            if at_least { "≥" } else { "≤" },
            parts.join("; ")
        ));
    };
    let sqlite_rate = col(Setup::Sqlite).map(|c| c.many_streams.clone());
    line(
        "Aggregate events/s of the concurrent streams, 2 replicas ÷ one SQLite node",
        (true, 0.8),
        &[("with the bus", Setup::Pg2Bus), ("without", Setup::Pg2)],
        &|c| {
            let Some(base) = sqlite_rate.as_ref() else {
                return Err("n/a (SQLite column not run)".to_owned());
            };
            let (Some(v), Some(b)) = (c.many_streams.value(), base.value()) else {
                return Err(if c.many_streams.value().is_none() {
                    c.many_streams.missing()
                } else {
                    format!("SQLite {}", base.missing())
                });
            };
            Ok(v / b)
        },
    );
    line(
        "PostgreSQL commits per streamed event, concurrent streams",
        (false, 0.1),
        &[
            ("2 replicas + bus", Setup::Pg2Bus),
            ("2 replicas", Setup::Pg2),
            ("1 replica", Setup::Pg1),
        ],
        &|c| {
            c.commits
                .value()
                .map(|v| v.per_event)
                .ok_or_else(|| c.commits.missing())
        },
    );
    line(
        "Cross-replica subscriber, CPU per event following ÷ local",
        (false, 1.5),
        &[("with the bus", Setup::Pg2Bus), ("without", Setup::Pg2)],
        &|c| {
            c.cpu
                .value()
                .map(CpuPerEvent::ratio)
                .ok_or_else(|| c.cpu.missing())
        },
    );
    let (short, long) = report.config.lag_chunks;
    line(
        &format!(
            "Cross-replica lag p99 at {} chunks ÷ at {}",
            grouped(long as f64),
            grouped(short as f64)
        ),
        (false, 2.0),
        &[("with the bus", Setup::Pg2Bus), ("without", Setup::Pg2)],
        &|c| match (c.lag_long.value(), c.lag_short.value()) {
            (Some(l), Some(s)) => Ok(l.p99_ms / s.p99_ms),
            (None, _) => Err(c.lag_long.missing()),
            (_, None) => Err(c.lag_short.missing()),
        },
    );
    let pg1_rate = col(Setup::Pg1).map(|c| c.blocking.clone());
    line(
        "Blocking SendMessage req/s, 2 replicas ÷ 1 replica",
        (true, 1.0),
        &[("without the bus", Setup::Pg2), ("with", Setup::Pg2Bus)],
        &|c| {
            let Some(base) = pg1_rate.as_ref() else {
                return Err("n/a (1-replica column not run)".to_owned());
            };
            match (c.blocking.value(), base.value()) {
                (Some(v), Some(b)) => Ok(v / b),
                (None, _) => Err(c.blocking.missing()),
                (_, None) => Err(format!("1 replica {}", base.missing())),
            }
        },
    );
    let mut details = Vec::new();
    for c in &report.columns {
        if let Figure::Value(v) = &c.commits {
            details.push(format!(
                "{}: {:.3} write transactions (transaction ids assigned, server-wide) per \
                 streamed event, {} events",
                c.setup.label(),
                v.writes_per_event,
                v.events
            ));
        }
        if let Figure::Value(v) = &c.stream_cpu {
            let all = v.replicas_total_us()
                + v.postgres_us.unwrap_or(0.0)
                + v.nats_us.unwrap_or(0.0)
                + v.client_us;
            details.push(format!(
                "{}: CPU per streamed event over {} events (utime+stime from `/proc` across the \
                 concurrent streams): replicas {} µs, PostgreSQL {} (server-wide), nats-server \
                 {}, client {:.1} µs; all together {all:.1} µs, {:.0} events per CPU-second",
                c.setup.label(),
                v.events,
                replicas_cell(v),
                v.postgres_us
                    .map_or("n/a".to_owned(), |u| format!("{u:.1} µs")),
                v.nats_us.map_or("n/a".to_owned(), |u| format!("{u:.1} µs")),
                v.client_us,
                1e6 / all
            ));
        }
        for (n, lag) in [(short, &c.lag_short), (long, &c.lag_long)] {
            if let Figure::Value(l) = lag {
                details.push(format!(
                    "{}: lag at {} chunks measured on {} events",
                    c.setup.label(),
                    grouped(n as f64),
                    l.samples
                ));
            }
        }
    }
    if !details.is_empty() {
        out.push_str("\nDetails:\n");
        for d in details {
            out.push_str(&format!("- {d}\n"));
        }
    }
    let errors = report.errors();
    if !errors.is_empty() {
        out.push_str("\nErrors:\n");
        for (setup, row, e) in errors {
            out.push_str(&format!("- {}, {row}: {e}\n", setup.label()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::{ClusterConfig, Commits, NO_BUS, StreamCpu};
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0.4), "0");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(1000.0), "1 000");
        assert_eq!(grouped(372_162.4), "372 162");
        assert_eq!(grouped(-1_234_567.0), "-1 234 567");
    }

    fn report(bus: bool) -> Report {
        let lag = |p50_ms, p99_ms| {
            Figure::Value(Lag {
                p50_ms,
                p99_ms,
                samples: 1000,
            })
        };
        let measured = |setup, rate: f64, commits: Option<f64>| Column {
            setup,
            one_stream: Figure::Value(rate * 2.0),
            many_streams: Figure::Value(rate),
            blocking: Figure::Value(rate / 10.0),
            commits: commits.map_or(Figure::NotApplicable("n/a (SQLite)".to_owned()), |c| {
                Figure::Value(Commits {
                    per_event: c,
                    writes_per_event: c / 2.0,
                    events: 50_150,
                })
            }),
            stream_cpu: Figure::Value(StreamCpu {
                replicas_us: vec![100.0; setup.replicas()],
                postgres_us: setup.postgres().then_some(40.0),
                nats_us: setup.bus().then_some(12.5),
                client_us: 60.0,
                events: 50_150,
            }),
            cpu: if setup.replicas() > 1 {
                Figure::Value(CpuPerEvent {
                    follower_us: 30.0,
                    local_us: 20.0,
                })
            } else {
                Figure::NotApplicable("n/a (one replica)".to_owned())
            },
            lag_short: if setup.replicas() > 1 {
                lag(1.0, 4.0)
            } else {
                Figure::NotApplicable("n/a (one replica)".to_owned())
            },
            lag_long: if setup.replicas() > 1 {
                lag(2.0, 10.0)
            } else {
                Figure::NotApplicable("n/a (one replica)".to_owned())
            },
        };
        let mut columns = vec![
            measured(Setup::Sqlite, 100_000.0, None),
            measured(Setup::Pg1, 40_000.0, Some(1.0)),
            measured(Setup::Pg2, 60_000.0, Some(0.5)),
        ];
        columns.push(if bus {
            measured(Setup::Pg2Bus, 90_000.0, Some(0.05))
        } else {
            Column::not_applicable(Setup::Pg2Bus, NO_BUS)
        });
        Report {
            config: ClusterConfig::full(PathBuf::from("trident")),
            columns,
            bus_available: bus,
        }
    }

    fn report_with_bus() -> Report {
        report(true)
    }

    #[test]
    fn the_table_has_a_row_per_figure_and_a_column_per_setup() {
        let report = report(false);
        let table = table(&report);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + 11, "{table}");
        assert_eq!(
            lines[0],
            "| | one node, SQLite (default) | cluster, PostgreSQL, 1 replica | cluster, 2 replicas | cluster, 2 replicas + bus |"
        );
        assert_eq!(
            lines[3],
            "| 50 concurrent streams × 1 000 chunks, events produced/s (aggregate over replicas; median of 5 rounds) | 100 000 | 40 000 | 60 000 | n/a (this build has no --events) |"
        );
        assert!(
            lines[5]
                .ends_with("| n/a (SQLite) | 1.000 | 0.500 | n/a (this build has no --events) |"),
            "{}",
            lines[5]
        );
        assert_eq!(
            lines[6],
            "| CPU per streamed event (50 streams), µs: the replicas (utime+stime of each `trident serve`, summed) | 100.0 | 100.0 | 200.0 (100.0 + 100.0) | n/a (this build has no --events) |"
        );
        assert!(
            lines[7].starts_with("| CPU per streamed event (50 streams), µs: PostgreSQL")
                && lines[7]
                    .ends_with("| n/a (SQLite) | 40.0 | 40.0 | n/a (this build has no --events) |"),
            "{}",
            lines[7]
        );
        assert!(
            lines[8].ends_with(
                "| n/a (no bus) | n/a (no bus) | n/a (no bus) | n/a (this build has no --events) |"
            ),
            "{}",
            lines[8]
        );
        assert!(
            lines[9].ends_with("| 60.0 | 60.0 | 60.0 | n/a (this build has no --events) |"),
            "{}",
            lines[9]
        );
        assert!(
            lines[10].contains("| n/a (one node) |") || lines[10].contains("| n/a (one replica) |")
        );
        assert!(
            lines[10].contains("| 1.50 (30.0 ÷ 20.0 µs) |"),
            "{}",
            lines[10]
        );
        assert!(lines[11].contains("at 2 000 chunks") && lines[11].contains("| 1.00 / 4.00 ms |"));
        assert!(lines[12].contains("at 50 000 chunks") && lines[12].contains("| 2.00 / 10.0 ms |"));
        let table = super::table(&report_with_bus());
        let bus_row = table
            .lines()
            .find(|l| l.contains("µs: nats-server"))
            .expect("a nats-server row");
        assert!(bus_row.ends_with("| n/a (no bus) | 12.5 |"), "{bus_row}");
    }

    #[test]
    fn the_ratios_are_judged_against_their_targets() {
        let summary = summary(&report(true));
        for expected in [
            "2 replicas ÷ one SQLite node (target ≥ 0.8): with the bus: 0.90 (met); without: 0.60 (**not met**)",
            "(target ≤ 0.1): 2 replicas + bus: 0.05 (met); 2 replicas: 0.50 (**not met**); 1 replica: 1.00 (**not met**)",
            "following ÷ local (target ≤ 1.5): with the bus: 1.50 (met)",
            "p99 at 50 000 chunks ÷ at 2 000 (target ≤ 2): with the bus: 2.50 (**not met**)",
            "2 replicas ÷ 1 replica (target ≥ 1): without the bus: 1.50 (met); with: 2.25 (met)",
            "0.025 write transactions",
            "cluster, 2 replicas + bus: CPU per streamed event over 50150 events",
            "replicas 200.0 (100.0 + 100.0) µs, PostgreSQL 40.0 µs (server-wide), nats-server \
             12.5 µs, client 60.0 µs; all together 312.5 µs, 3200 events per CPU-second",
            "one node, SQLite (default): CPU per streamed event over 50150 events (utime+stime \
             from `/proc` across the concurrent streams): replicas 100.0 µs, PostgreSQL n/a \
             (server-wide), nats-server n/a, client 60.0 µs; all together 160.0 µs",
        ] {
            assert!(summary.contains(expected), "{expected:?} in\n{summary}");
        }
        assert!(!summary.contains("Errors"), "{summary}");
        let summary = super::summary(&report(false));
        assert!(
            summary.contains("with the bus: n/a (this build has no --events); without: 0.60"),
            "{summary}"
        );
    }

    #[test]
    fn failures_show_as_errors_never_as_numbers() {
        let mut report = report(true);
        report.columns[2].many_streams =
            Figure::Failed("stream 3: event 9 where 8 was due".to_owned());
        report.columns[3] = Column::failed(Setup::Pg2Bus, "did not start".to_owned());
        let table = table(&report);
        assert!(!table.contains("| 60 000 |"), "{table}");
        assert!(table.contains("**error**"), "{table}");
        let summary = summary(&report);
        assert!(summary.contains("without: error"), "{summary}");
        assert!(summary.contains("with the bus: not measured"), "{summary}");
        assert!(
            summary.contains(
                "- cluster, 2 replicas, concurrent streams: stream 3: event 9 where 8 was due"
            ),
            "{summary}"
        );
        assert!(summary.contains("- cluster, 2 replicas + bus, one stream: did not start"));
        assert_eq!(report.errors().len(), 2);
    }
}
