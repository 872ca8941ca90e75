//! `trident-bench list`: the latency of one ListTasks page as a durable store grows.
//!
//! The store is measured directly (`TaskStore::list`, no HTTP, no engine). It is filled through
//! `TaskStore::commit` (one snapshot and one event per new task, many commits in flight) up to
//! each size in turn, and at each size four pages of 50 are timed: the first page, a deep page
//! (the one after following the cursor 20 pages in), the first page of one context and the
//! first page of one state. Every task is in one scope (tenant "", owner "bench"), spread over
//! 1000 contexts, mostly `COMPLETED`, with one status timestamp per second plus jitter.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use trident_core::store::{
    ListCursor, LoggedEvent, Scope, SharedEvent, TaskQuery, TaskRecord, TaskStore,
};
use trident_proto as pb;

/// Which durable store to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// A fresh SQLite file in a temporary directory, removed at the end.
    Sqlite,
    /// A fresh schema `trident_bench_<uuid>` of a PostgreSQL database, dropped at the end.
    Postgres,
}

/// Settings of a `list` run.
#[derive(Debug, Clone)]
pub struct ListConfig {
    /// The store.
    pub backend: Backend,
    /// The PostgreSQL server, for [`Backend::Postgres`].
    pub pg_url: String,
    /// Store sizes to measure at, ascending.
    pub sizes: Vec<usize>,
    /// Timed calls per case and size.
    pub samples: usize,
    /// Commits in flight while loading.
    pub concurrency: usize,
}

/// Page size of every timed call.
const PAGE: usize = 50;
/// Pages followed before the timed deep page.
const DEEP: usize = 20;
/// Contexts the tasks are spread over.
const CONTEXTS: u64 = 1000;
/// The context of the context-filter case.
const CONTEXT: u64 = 7;
/// The state of the state-filter case.
const STATE: pb::TaskState = pb::TaskState::Failed;
/// 2025-01-01T00:00:00Z, the first task's status time, in nanoseconds.
const EPOCH_NANOS: i128 = 1_735_689_600 * 1_000_000_000;

/// The timed cases, in table order.
const CASES: [&str; 4] = [
    "first page",
    "deep page (21st)",
    "context filter",
    "state filter (FAILED)",
];

/// Latencies and total of one case at one size.
#[derive(Debug, Clone)]
struct CaseResult {
    median_us: f64,
    p99_us: f64,
    total: usize,
    expected: usize,
}

/// Results at one size.
#[derive(Debug, Clone)]
struct SizeResult {
    size: usize,
    load_rate: f64,
    load_secs: f64,
    cases: Vec<CaseResult>,
}

/// Runs the benchmark and prints its tables on stdout (progress on stderr).
pub async fn run(config: &ListConfig) -> Result<(), String> {
    let command: Vec<String> = std::env::args().collect();
    let mut sizes = config.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let results = match config.backend {
        Backend::Sqlite => {
            let dir = std::env::temp_dir().join(format!(
                "trident-bench-list-{}",
                uuid::Uuid::new_v4().simple()
            ));
            std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let result = sqlite(dir.join("tasks.db"), config, &sizes).await;
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                eprintln!("removing {}: {e}", dir.display());
            }
            result
        }
        Backend::Postgres => {
            let schema = format!("trident_bench_{}", uuid::Uuid::new_v4().simple());
            let result = postgres(&schema, config, &sizes).await;
            drop_schema(&config.pg_url, &schema).await?;
            result
        }
    }?;
    println!("Command: `{}`", command.join(" "));
    println!(
        "ListTasks page latency measured on the store directly (TaskStore::list in this process, \
         no HTTP, no engine): {}. Pages of {PAGE}; {} timed calls per case and size, cases \
         interleaved. Tasks loaded through TaskStore::commit, {} in flight, into one scope \
         over {CONTEXTS} contexts (85% COMPLETED, 5% each WORKING, FAILED, INPUT_REQUIRED).",
        match config.backend {
            Backend::Sqlite => "SQLite file (WAL, synchronous=FULL)",
            Backend::Postgres => "PostgreSQL (fresh schema on the local server)",
        },
        config.samples,
        config.concurrency,
    );
    println!();
    println!("{}", latency_table(&results));
    println!("{}", load_table(&results));
    match results
        .iter()
        .find(|r| r.cases.iter().any(|c| c.total != c.expected))
    {
        Some(r) => Err(format!("wrong totals at {} tasks", r.size)),
        None => Ok(()),
    }
}

async fn sqlite(
    path: PathBuf,
    config: &ListConfig,
    sizes: &[usize],
) -> Result<Vec<SizeResult>, String> {
    let store = trident_store::SqliteStore::open(&path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    bench(Arc::new(store), config, sizes).await
}

async fn postgres(
    schema: &str,
    config: &ListConfig,
    sizes: &[usize],
) -> Result<Vec<SizeResult>, String> {
    let store = trident_store::PgStore::connect_in_schema(&config.pg_url, schema)
        .await
        .map_err(|e| format!("{}: {e}", trident_store::describe(&config.pg_url)))?;
    bench(Arc::new(store), config, sizes).await
}

pub(crate) async fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .map_err(|e| format!("connecting to drop schema {schema}: {e}"))?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
    )))
    .execute(&mut conn)
    .await
    .map_err(|e| format!("dropping schema {schema}: {e}"))?;
    let _ = conn.close().await;
    Ok(())
}

async fn bench(
    store: Arc<dyn TaskStore>,
    config: &ListConfig,
    sizes: &[usize],
) -> Result<Vec<SizeResult>, String> {
    let scope = Scope::new("", "bench");
    let mut loaded = 0;
    let mut results = Vec::new();
    for &size in sizes {
        let start = Instant::now();
        load(&store, &scope, loaded..size, config.concurrency).await?;
        let load_secs = start.elapsed().as_secs_f64();
        let load_rate = (size - loaded) as f64 / load_secs;
        eprintln!("loaded {loaded}..{size} in {load_secs:.1} s: {load_rate:.0} tasks/s");
        loaded = size;
        let cases = measure(&store, &scope, size, config.samples).await?;
        for (name, c) in CASES.iter().zip(&cases) {
            eprintln!(
                "{size} tasks, {name}: median {:.0} µs, p99 {:.0} µs, total {} (expected {})",
                c.median_us, c.p99_us, c.total, c.expected
            );
        }
        results.push(SizeResult {
            size,
            load_rate,
            load_secs,
            cases,
        });
    }
    Ok(results)
}

/// Commits tasks `range` (new, one event each) with `concurrency` commits in flight.
async fn load(
    store: &Arc<dyn TaskStore>,
    scope: &Scope,
    range: std::ops::Range<usize>,
    concurrency: usize,
) -> Result<(), String> {
    let mut commits = futures::stream::iter(range)
        .map(|i| {
            let record = TaskRecord::new(task(i), 1);
            let event = LoggedEvent {
                seq: 1,
                event: SharedEvent::new(pb::StreamResponse::new(
                    pb::stream_response::Payload::Task(record.task.clone()),
                )),
            };
            async move {
                store
                    .commit(scope, &record, None, &[event])
                    .await
                    .map_err(|e| format!("commit of task {i}: {e}"))
            }
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(result) = commits.next().await {
        result?;
    }
    Ok(())
}

/// Times every case `samples` times (interleaved, after a short warm-up) at `size` tasks.
async fn measure(
    store: &Arc<dyn TaskStore>,
    scope: &Scope,
    size: usize,
    samples: usize,
) -> Result<Vec<CaseResult>, String> {
    let first = TaskQuery {
        limit: PAGE,
        ..TaskQuery::default()
    };
    let deep = TaskQuery {
        after: Some(cursor_after(store, scope, &first, DEEP).await?),
        ..first.clone()
    };
    let context = TaskQuery {
        context_id: Some(context_id(CONTEXT)),
        ..first.clone()
    };
    let state = TaskQuery {
        state: Some(STATE),
        ..first.clone()
    };
    let queries = [first, deep, context, state];
    let expected = [
        size,
        size,
        (0..size).filter(|&i| mix(i) % CONTEXTS == CONTEXT).count(),
        (0..size).filter(|&i| state_of(i) == STATE).count(),
    ];
    let mut totals = [0; CASES.len()];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(samples); CASES.len()];
    for round in 0..samples + 10 {
        for (case, query) in queries.iter().enumerate() {
            let start = Instant::now();
            let page = store
                .list(scope, query)
                .await
                .map_err(|e| format!("list ({}): {e}", CASES[case]))?;
            let elapsed = start.elapsed();
            totals[case] = page.total;
            // The first 10 rounds warm the caches and are not counted.
            if round >= 10 {
                times[case].push(elapsed);
            }
        }
    }
    Ok(times
        .into_iter()
        .zip(totals.into_iter().zip(expected))
        .map(|(mut t, (total, expected))| {
            t.sort_unstable();
            CaseResult {
                median_us: micros(percentile(&t, 0.5)),
                p99_us: micros(percentile(&t, 0.99)),
                total,
                expected,
            }
        })
        .collect())
}

/// The cursor at the end of page `pages` of `query`.
async fn cursor_after(
    store: &Arc<dyn TaskStore>,
    scope: &Scope,
    query: &TaskQuery,
    pages: usize,
) -> Result<ListCursor, String> {
    let mut query = query.clone();
    for page in 1..=pages {
        let next = store
            .list(scope, &query)
            .await
            .map_err(|e| format!("list (page {page}): {e}"))?
            .next
            .ok_or_else(|| format!("fewer than {pages} pages of {PAGE}: load more tasks"))?;
        query.after = Some(next);
    }
    query.after.ok_or_else(|| "no pages followed".to_owned())
}

/// The `q`-quantile of sorted `times` (nearest rank).
fn percentile(times: &[Duration], q: f64) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len());
    times[rank - 1]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// SplitMix64 of `i`: the task's pseudo-random context, state and jitter, the same every run.
fn mix(i: usize) -> u64 {
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn context_id(n: u64) -> String {
    format!("ctx-{n:04}")
}

fn state_of(i: usize) -> pb::TaskState {
    match (mix(i) >> 16) % 100 {
        0..85 => pb::TaskState::Completed,
        85..90 => pb::TaskState::Working,
        90..95 => pb::TaskState::Failed,
        _ => pb::TaskState::InputRequired,
    }
}

/// Task `i`: a finished (or waiting) echo exchange, its status stamped `i` seconds after
/// [`EPOCH_NANOS`] plus up to a second of jitter.
fn task(i: usize) -> pb::Task {
    let h = mix(i);
    let id = uuid::Uuid::new_v4().to_string();
    let context_id = context_id(h % CONTEXTS);
    let nanos = EPOCH_NANOS + i as i128 * 1_000_000_000 + i128::from((h >> 32) % 1000) * 1_000_000;
    let mut message = pb::Message::user(
        format!("m-{i}"),
        vec![pb::Part::text(format!("hello from task {i}"))],
    );
    message.context_id.clone_from(&context_id);
    message.task_id.clone_from(&id);
    pb::Task {
        status: Some(pb::TaskStatus {
            state: state_of(i) as i32,
            message: None,
            timestamp: Some(pb::wkt::Timestamp::from_unix_nanos(nanos)),
        }),
        artifacts: vec![pb::Artifact::new(
            "echo",
            vec![pb::Part::text(format!("hello from task {i}"))],
        )],
        history: vec![message],
        metadata: None,
        id,
        context_id,
        generation: 0,
    }
}

/// Median and p99 per case (rows) and size (columns).
fn latency_table(results: &[SizeResult]) -> String {
    let mut out = String::from("| case |");
    let mut rule = String::from("|---|");
    for r in results {
        out.push_str(&format!(" {} tasks: median / p99 µs |", r.size));
        rule.push_str("---:|");
    }
    out.push('\n');
    out.push_str(&rule);
    out.push('\n');
    for (case, name) in CASES.iter().enumerate() {
        out.push_str(&format!("| {name} |"));
        for r in results {
            let c = &r.cases[case];
            out.push_str(&format!(" {:.0} / {:.0} |", c.median_us, c.p99_us));
        }
        out.push('\n');
    }
    out
}

/// Load rate and the totals each case reported (sanity: they must match the data).
fn load_table(results: &[SizeResult]) -> String {
    let mut out = String::from(
        "| tasks | loaded in | load rate (tasks/s) | total: all | context | state | totals ok |\n\
         |---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let ok = r.cases.iter().all(|c| c.total == c.expected);
        out.push_str(&format!(
            "| {} | {:.1} s | {:.0} | {} | {} | {} | {} |\n",
            r.size,
            r.load_secs,
            r.load_rate,
            r.cases[0].total,
            r.cases[2].total,
            r.cases[3].total,
            if ok { "yes" } else { "NO" },
        ));
    }
    out
}
