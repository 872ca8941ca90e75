//! `trident-bench chunks`: an agent streaming one artifact chunk by chunk (what an LLM agent
//! does token by token) through the engine, with one stream subscriber, and what each chunk
//! costs as the artifact grows.
//!
//! The agent emits `--chunks` `TaskArtifactUpdateEvent`s with `append = true` (the first one
//! creates the artifact), `--size` bytes of text each, as fast as the engine accepts them, then
//! completes the task. A streaming SendMessage follows the task to the end and counts what it
//! receives. For each window of chunks the agent records the wall time and the bytes the store
//! wrote: for SQLite the `wchar` of `/proc/self/io` (bytes this process handed to `write`/
//! `pwrite`, which is the database file and its WAL: nothing else in the process writes while
//! the agent runs), for PostgreSQL the server's WAL growth (`pg_current_wal_lsn`, server-wide:
//! run it on an otherwise idle server). A cost per chunk that stays flat from the first window
//! to the last is linear in total; one that grows with the window's index is quadratic.
//!
//! At the end `GetTask` must return the artifact with every chunk, in order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use trident_core::store::Stores;
use trident_core::{A2aError, A2aService, AgentExecutor, CallContext, EventSink, RequestContext};
use trident_proto as pb;

/// Settings of a `chunks` run.
#[derive(Debug, Clone)]
pub struct ChunksConfig {
    /// `memory`, `sqlite:PATH` (a file that must not exist yet; left in place) or a PostgreSQL
    /// URL (a fresh schema `trident_bench_<uuid>` is created and dropped).
    pub store: String,
    /// Chunks to emit.
    pub chunks: usize,
    /// Bytes of text per chunk.
    pub size: usize,
    /// Chunks per reported window.
    pub window: usize,
}

/// Where the bytes a store writes are counted.
#[derive(Clone)]
enum Probe {
    /// Nothing to count (the in-memory store writes nothing).
    None,
    /// `/proc/self/io` `wchar`.
    ProcessWrites,
    /// The PostgreSQL server's WAL position.
    Wal(sqlx::PgPool),
}

impl Probe {
    async fn read(&self) -> Option<u64> {
        match self {
            Probe::None => None,
            Probe::ProcessWrites => {
                let io = std::fs::read_to_string("/proc/self/io").ok()?;
                io.lines()
                    .find_map(|l| l.strip_prefix("wchar:"))
                    .and_then(|v| v.trim().parse().ok())
            }
            Probe::Wal(pool) => sqlx::query_scalar::<_, i64>(
                "SELECT CAST(pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS BIGINT)",
            )
            .fetch_one(pool)
            .await
            .ok()
            .and_then(|v| u64::try_from(v).ok()),
        }
    }
}

/// One mark: after `chunks` chunks, at `at`, with the probe reading `bytes`.
#[derive(Debug, Clone, Copy)]
struct Mark {
    chunks: usize,
    at: Instant,
    bytes: Option<u64>,
}

/// The agent: `chunks` appended chunks of `size` bytes, then COMPLETED.
struct Chunker {
    chunks: usize,
    size: usize,
    /// Chunk counts after which a mark is taken.
    marks_at: Vec<usize>,
    probe: Probe,
    marks: Arc<Mutex<Vec<Mark>>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Chunker {
    async fn execute(&self, _ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        // Pseudo-random letters (a fixed xorshift sequence), so neither SQLite nor
        // PostgreSQL's TOAST compression shrinks the stored text much below its size.
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut text = move || -> String {
            (0..self.size)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    char::from(b'a' + (rng % 26) as u8)
                })
                .collect()
        };
        sink.working().await?;
        let bytes = self.probe.read().await;
        self.marks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Mark {
                chunks: 0,
                at: Instant::now(),
                bytes,
            });
        let mut next = self.marks_at.iter().copied().peekable();
        for i in 0..self.chunks {
            let artifact = pb::Artifact::new("answer", vec![pb::Part::text(text())]);
            sink.artifact_chunk(artifact, i > 0, i + 1 == self.chunks)
                .await?;
            if next.peek() == Some(&(i + 1)) {
                next.next();
                let at = Instant::now();
                let bytes = self.probe.read().await;
                self.marks
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Mark {
                        chunks: i + 1,
                        at,
                        bytes,
                    });
            }
        }
        sink.complete().await
    }
}

/// Runs the benchmark and prints its table on stdout (progress on stderr).
pub async fn run(config: &ChunksConfig) -> Result<(), String> {
    let command: Vec<String> = std::env::args().collect();
    let window = config.window.max(1);
    let mut marks_at: Vec<usize> = (1..=config.chunks / window).map(|w| w * window).collect();
    // Finer marks for the first and the last thousand chunks.
    let fine = 1000.min(config.chunks);
    marks_at.push(fine);
    marks_at.push(config.chunks - fine);
    marks_at.push(config.chunks);
    marks_at.retain(|&c| c > 0);
    marks_at.sort_unstable();
    marks_at.dedup();

    let (stores, probe, schema) = open(&config.store).await?;
    let marks = Arc::new(Mutex::new(Vec::new()));
    let agent = Chunker {
        chunks: config.chunks,
        size: config.size,
        marks_at,
        probe: probe.clone(),
        marks: marks.clone(),
    };
    let result = drive(stores, agent, config).await;
    if let Some((url, schema)) = schema {
        drop_schema(&url, &schema).await?;
    }
    let (received, get_ms) = result?;
    let marks = marks.lock().unwrap_or_else(|e| e.into_inner()).clone();

    println!("Command: `{}`", command.join(" "));
    println!(
        "One task, one stream subscriber; {} chunks of {} bytes appended to one artifact ({}); \
         the subscriber received {received} events; GetTask at the end: {get_ms:.1} ms.",
        config.chunks,
        config.size,
        match probe {
            Probe::None => "in-memory store: no bytes written",
            Probe::ProcessWrites => "bytes = /proc/self/io wchar (the SQLite file and its WAL)",
            Probe::Wal(_) => "bytes = PostgreSQL WAL growth (server-wide)",
        }
    );
    println!();
    println!("| chunks | µs per chunk | bytes written per chunk |");
    println!("|---|---:|---:|");
    let at = |chunks: usize| marks.iter().find(|m| m.chunks == chunks).copied();
    // Rows: the first thousand chunks, each whole window, the last thousand.
    let mut spans = vec![(0, fine)];
    spans.extend((1..=config.chunks / window).map(|w| ((w - 1) * window, w * window)));
    spans.push((config.chunks - fine, config.chunks));
    spans.sort_unstable();
    spans.dedup();
    let rows: Vec<(Mark, Mark)> = spans
        .into_iter()
        .filter_map(|(a, b)| Some((at(a)?, at(b)?)))
        .collect();
    for (a, b) in rows {
        let n = (b.chunks - a.chunks) as f64;
        let us = b.at.duration_since(a.at).as_secs_f64() * 1e6 / n;
        let bytes = match (a.bytes, b.bytes) {
            (Some(x), Some(y)) => format!("{:.0}", y.saturating_sub(x) as f64 / n),
            _ => "-".to_owned(),
        };
        println!("| {}–{} | {us:.1} | {bytes} |", a.chunks + 1, b.chunks);
    }
    Ok(())
}

type Opened = (Stores, Probe, Option<(String, String)>);

async fn open(spec: &str) -> Result<Opened, String> {
    if spec == "memory" {
        return Ok((trident_engine::store::in_memory(), Probe::None, None));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        if std::path::Path::new(path).exists() {
            return Err(format!("{path} exists; give a file that does not"));
        }
        let stores = trident_store::open(spec)
            .await
            .map_err(|e| format!("{spec}: {e}"))?;
        return Ok((stores, Probe::ProcessWrites, None));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let schema = format!("trident_bench_{}", uuid::Uuid::new_v4().simple());
        let store = trident_store::PgStore::connect_in_schema(spec, &schema)
            .await
            .map_err(|e| format!("{}: {e}", trident_store::describe(spec)))?;
        let pool = store.pool().clone();
        let store = Arc::new(store);
        let stores = Stores {
            tasks: store.clone(),
            events: store.clone(),
            push: store,
        };
        return Ok((stores, Probe::Wal(pool), Some((spec.to_owned(), schema))));
    }
    Err(format!("unknown store {spec:?}"))
}

/// Sends the message, follows the stream to its end, checks the task; returns the events
/// received and the GetTask time in milliseconds.
async fn drive(
    stores: Stores,
    agent: Chunker,
    config: &ChunksConfig,
) -> Result<(usize, f64), String> {
    let engine = trident_engine::Engine::builder(Arc::new(agent))
        .stores(stores)
        .build();
    let cx = CallContext::new();
    let request = pb::SendMessageRequest {
        message: Some(pb::Message::user(
            uuid::Uuid::new_v4().to_string(),
            vec![pb::Part::text("stream")],
        )),
        ..Default::default()
    };
    let start = Instant::now();
    let mut stream = engine
        .send_streaming_message(&cx, request)
        .await
        .map_err(|e| e.to_string())?;
    let mut received = 0;
    let mut task_id = String::new();
    let mut last_progress = Instant::now();
    while let Some(event) = stream.next().await {
        let event = event.map_err(|e| e.to_string())?;
        received += 1;
        if task_id.is_empty() {
            task_id = match &event.response.payload {
                Some(pb::stream_response::Payload::Task(t)) => t.id.clone(),
                Some(pb::stream_response::Payload::StatusUpdate(u)) => u.task_id.clone(),
                Some(pb::stream_response::Payload::ArtifactUpdate(u)) => u.task_id.clone(),
                _ => String::new(),
            };
        }
        if last_progress.elapsed() > Duration::from_secs(5) {
            last_progress = Instant::now();
            eprintln!(
                "{received} events after {:.0} s",
                start.elapsed().as_secs_f64()
            );
        }
    }
    let get_start = Instant::now();
    let task = engine
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: task_id,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let get_ms = get_start.elapsed().as_secs_f64() * 1e3;
    if task.state() != pb::TaskState::Completed {
        return Err(format!("the task ended {}", task.state().as_str_name()));
    }
    let parts = task.artifacts.first().map_or(0, |a| a.parts.len());
    if task.artifacts.len() != 1 || parts != config.chunks {
        return Err(format!(
            "GetTask: {} artifacts, {parts} parts; expected 1 artifact of {} parts",
            task.artifacts.len(),
            config.chunks
        ));
    }
    engine.shutdown().await;
    Ok((received, get_ms))
}

async fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
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
