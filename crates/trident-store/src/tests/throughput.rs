//! A throughput check of the PostgreSQL store's write path, run by hand (ignored: it times
//! nothing it asserts, and takes a few seconds):
//!
//! ```sh
//! TRIDENT_BENCH_POSTGRES=postgres://postgres@127.0.0.1:5432/bench \
//!   cargo test -p trident-store -- --ignored --nocapture postgres_append_throughput
//! ```
//!
//! `TASKS` tasks stream `APPENDS` events each, one `append` per event (what a streamed
//! artifact chunk costs), all tasks at once: through one store, then through two stores on one
//! schema (two replicas), each streaming half the tasks, then through two stores with notify
//! off (as when an event bus carries the events). It prints events per second, the
//! transactions committed per event, read from `pg_stat_database.xact_commit` (the database's
//! count: give it a database nothing else uses while it runs; the URL falls back to
//! `TRIDENT_TEST_POSTGRES`), and the writers' own count of requests per transaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use trident_core::store::{Scope, TaskRecord, TaskStore as _};
use trident_proto as pb;

use super::{chunk, ev, task, with_schema};
use crate::{PgOptions, PgStore, WriterStats};

/// Tasks streaming at once.
const TASKS: usize = 50;
/// Events each task appends.
const APPENDS: u64 = 1_000;

/// Transactions committed in the current database so far. A backend flushes its statistics
/// when it goes idle, but at most once a second, and otherwise within 10 s (PostgreSQL 15's
/// `PGSTAT_IDLE_INTERVAL`), hence the wait: a shorter one counts some of a run's
/// transactions in the next.
async fn xact_commit(pool: &sqlx::PgPool) -> i64 {
    tokio::time::sleep(Duration::from_secs(11)).await;
    sqlx::query_scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await
    .expect("pg_stat_database")
}

/// Streams `APPENDS` events into each of `ids` through `store`, all tasks at once.
async fn stream(store: Arc<PgStore>, scope: Scope, ids: Vec<String>) {
    let tasks = ids.into_iter().map(|id| {
        let store = store.clone();
        let scope = scope.clone();
        tokio::spawn(async move {
            let mut rec = TaskRecord::new(task(&id, "c", pb::TaskState::Working), 1);
            store
                .commit(&scope, &rec, None, &[ev(&id, 1)])
                .await
                .expect("create");
            for seq in 2..=APPENDS + 1 {
                let e = chunk(&id, seq, format!("chunk {seq} of a streamed answer"));
                trident_core::store::apply(&mut rec.task, &e.event);
                rec.last_seq = seq;
                store
                    .append(&scope, &rec, seq - 1, std::slice::from_ref(&e))
                    .await
                    .expect("append");
            }
        })
    });
    for t in futures::future::join_all(tasks).await {
        t.expect("task");
    }
}

/// One run over `stores` (the tasks split between them); prints a line of figures.
async fn run(label: &str, stores: &[Arc<PgStore>]) {
    let scope = Scope::new("bench", label);
    let xacts = xact_commit(stores[0].pool()).await;
    let start = Instant::now();
    let runs = stores.iter().enumerate().map(|(n, store)| {
        let ids = (0..TASKS)
            .filter(|i| i % stores.len() == n)
            .map(|i| format!("{label}-{i}"))
            .collect();
        stream(store.clone(), scope.clone(), ids)
    });
    futures::future::join_all(runs).await;
    let secs = start.elapsed().as_secs_f64();
    let xacts = xact_commit(stores[0].pool()).await - xacts;
    let events = TASKS as f64 * (APPENDS + 1) as f64;
    let writers = stores
        .iter()
        .map(|s| s.stats())
        .fold(WriterStats::default(), |a, b| WriterStats {
            requests: a.requests + b.requests,
            transactions: a.transactions + b.transactions,
            reruns: a.reruns + b.reruns,
        });
    println!(
        "{label}: {TASKS} tasks x {APPENDS} appends: {secs:.2} s, {:.0} events/s, \
         {:.3} transactions/event ({xacts} transactions); writers: {:.1} requests/transaction",
        events / secs,
        xacts as f64 / events,
        writers.requests as f64 / writers.transactions.max(1) as f64,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a throughput check run by hand (see the module docs)"]
async fn postgres_append_throughput() {
    let url = std::env::var("TRIDENT_BENCH_POSTGRES")
        .ok()
        .or_else(|| std::env::var("TRIDENT_TEST_POSTGRES").ok())
        .expect("set TRIDENT_BENCH_POSTGRES (or TRIDENT_TEST_POSTGRES)");
    let writers = std::env::var("TRIDENT_BENCH_WRITERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(PgOptions::DEFAULT_WRITERS);
    println!("{writers} writer lanes per store");
    with_schema(&url, move |url, schema| async move {
        let connect = |notify: bool| {
            let options = PgOptions::new()
                .schema(&schema)
                .writers(writers)
                .notify(notify);
            let url = url.clone();
            async move {
                Arc::new(
                    PgStore::connect_with_options(&url, options)
                        .await
                        .expect("connect"),
                )
            }
        };
        run("one-store", &[connect(true).await]).await;
        run("two-stores", &[connect(true).await, connect(true).await]).await;
        run(
            "two-stores-notify-off",
            &[connect(false).await, connect(false).await],
        )
        .await;
    })
    .await;
}
