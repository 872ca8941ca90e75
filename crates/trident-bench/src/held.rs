//! `trident-bench held`: memory per task held by the in-memory store.
//!
//! Creates `tasks` tasks through the engine (blocking `SendMessage` to the echo agent with the
//! load benchmark's payload, one new task each, `concurrency` in flight) on a
//! `MemoryStore` whose bound is above `tasks` (nothing is evicted), and reads the process's
//! resident set (`/proc/self/statm`) before and after, in the same process. The task's
//! encoded size is the protobuf length of what GetTask returns for the last task. Reports the
//! resident growth per task, the encoded size, and the overhead beyond it; then, with
//! `--evict`, floods a store bounded at `tasks` with as many more tasks and reports the
//! resident growth during that second flood (flat if eviction gives memory back).
//!
//! A benchmark, not a test: the allocator's behaviour and the machine move the figure by a
//! few percent.

use std::sync::Arc;

use futures::StreamExt as _;
use prost::Message as _;
use trident_core::store::Stores;
use trident_core::{A2aService as _, CallContext};
use trident_engine::store::{MemoryStore, Retention};
use trident_proto as pb;

/// Settings of a `held` run.
#[derive(Debug, Clone)]
pub struct HeldConfig {
    /// Tasks to create.
    pub tasks: usize,
    /// Requests in flight.
    pub concurrency: usize,
    /// Also measure a second flood of as many tasks on a store bounded at `tasks`.
    pub evict: bool,
}

/// Resident set size of this process in bytes.
fn rss() -> Result<u64, String> {
    let statm = std::fs::read_to_string("/proc/self/statm").map_err(|e| e.to_string())?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or("unreadable /proc/self/statm")?;
    Ok(pages * 4096)
}

/// Sends `count` messages; returns the id of the last task.
async fn flood(
    engine: &trident_engine::Engine,
    from: usize,
    count: usize,
    concurrency: usize,
) -> Result<String, String> {
    let cx = CallContext::new();
    let mut last = String::new();
    let mut replies = futures::stream::iter(from..from + count)
        .map(|n| {
            let cx = cx.clone();
            async move {
                engine
                    .send_message(&cx, crate::payload::grpc_request(n as u64))
                    .await
            }
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(reply) = replies.next().await {
        match reply.map_err(|e| e.to_string())?.payload {
            Some(pb::send_message_response::Payload::Task(t))
                if t.state() == pb::TaskState::Completed =>
            {
                last = t.id;
            }
            other => return Err(format!("expected a completed task, got {other:?}")),
        }
    }
    Ok(last)
}

fn engine(retention: Retention) -> (trident_engine::Engine, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::with_retention(retention));
    let stores = Stores {
        tasks: store.clone(),
        events: store.clone(),
        push: store.clone(),
    };
    let engine = trident_engine::Engine::builder(Arc::new(trident_core::agents::Echo))
        .stores(stores)
        .build();
    (engine, store)
}

/// Runs the benchmark and prints a markdown table.
pub async fn run(config: &HeldConfig) -> Result<(), String> {
    let n = config.tasks.max(1);
    let (engine, store) = engine(Retention {
        max_tasks: Some(n),
        terminal_ttl: None,
    });
    // Warm up allocator arenas and lazy statics outside the measured window.
    flood(&engine, 0, 1000.min(n), config.concurrency).await?;
    let before = rss()?;
    let held_before = store.held();
    let last = flood(&engine, 1000, n - held_before, config.concurrency).await?;
    let after = rss()?;
    let held = store.held();
    let task = engine
        .get_task(
            &CallContext::new(),
            pb::GetTaskRequest {
                id: last,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let encoded = task.encoded_len() as f64;
    let added = (held - held_before).max(1) as f64;
    let per_task = after.saturating_sub(before) as f64 / added;
    println!("| tasks held | RSS growth | RSS / task | encoded task | beyond encoded |");
    println!("|---:|---:|---:|---:|---:|");
    println!(
        "| {held} | {:.1} MiB | {per_task:.0} B | {encoded:.0} B | {:.0} B |",
        after.saturating_sub(before) as f64 / 1048576.0,
        per_task - encoded
    );
    if config.evict {
        let before = rss()?;
        flood(&engine, 10 * n, n, config.concurrency).await?;
        let after = rss()?;
        println!(
            "\nA second flood of {n} tasks on the store bounded at {n}: {} held, RSS {:+.1} MiB.",
            store.held(),
            (after as f64 - before as f64) / 1048576.0
        );
    }
    engine.shutdown().await;
    Ok(())
}
