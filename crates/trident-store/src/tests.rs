//! SQLite tests always; PostgreSQL tests when `TRIDENT_TEST_POSTGRES` names a server (e.g.
//! `postgres://postgres@127.0.0.1:5432/test`), each run in a fresh schema dropped at the end.

use std::path::PathBuf;
use std::str::FromStr as _;
use std::sync::Arc;

use sqlx::{ConnectOptions as _, Connection as _};
use trident_core::store::{
    LoggedEvent, Scope, SharedEvent, StoreError, Stores, TaskQuery, TaskRecord,
};
use trident_proto as pb;
use trident_testkit::contract;

use crate::{OpenError, PgStore, SqliteStore, open, stores};

mod pg_writer;
mod throughput;

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "trident-store-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("trident.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn task(id: &str, ctx: &str, state: pb::TaskState) -> pb::Task {
    pb::Task {
        id: id.into(),
        context_id: ctx.into(),
        status: Some(pb::TaskStatus::now(state, None)),
        ..Default::default()
    }
}

fn ev(task_id: &str, seq: u64) -> LoggedEvent {
    LoggedEvent {
        seq,
        event: SharedEvent::new(pb::StreamResponse::new(
            pb::stream_response::Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
                task_id: task_id.into(),
                context_id: "c".into(),
                status: Some(pb::TaskStatus::now(pb::TaskState::Working, None)),
                metadata: None,
                generation: 0,
            }),
        )),
    }
}

/// Totals follow state changes (the counters move with each commit).
async fn totals_follow_state_changes(stores: &Stores) {
    let scope = Scope::new("totals", "owner");
    let mut rec = TaskRecord::new(task("x", "ctx", pb::TaskState::Working), 1);
    stores
        .tasks
        .commit(&scope, &rec, None, &[ev("x", 1)])
        .await
        .expect("create");
    rec.task.status = Some(pb::TaskStatus::now(pb::TaskState::Completed, None));
    rec.last_seq = 2;
    stores
        .tasks
        .commit(&scope, &rec, Some(1), &[ev("x", 2)])
        .await
        .expect("complete");
    // A refused commit moves no counter.
    assert_eq!(
        stores.tasks.commit(&scope, &rec, Some(1), &[]).await,
        Err(StoreError::Conflict)
    );
    let total = |state: Option<pb::TaskState>, context: Option<&str>| {
        let query = TaskQuery {
            state,
            context_id: context.map(str::to_owned),
            limit: 10,
            ..Default::default()
        };
        let tasks = stores.tasks.clone();
        let scope = scope.clone();
        async move { tasks.list(&scope, &query).await.expect("list").total }
    };
    assert_eq!(total(None, None).await, 1);
    assert_eq!(total(Some(pb::TaskState::Working), None).await, 0);
    assert_eq!(total(Some(pb::TaskState::Completed), None).await, 1);
    assert_eq!(total(None, Some("ctx")).await, 1);
    assert_eq!(total(Some(pb::TaskState::Working), Some("ctx")).await, 0);
    assert_eq!(total(Some(pb::TaskState::Completed), Some("ctx")).await, 1);
    assert_eq!(total(None, Some("other")).await, 0);
}

#[tokio::test]
async fn sqlite_passes_the_contract() {
    let dir = TempDir::new();
    let store = Arc::new(SqliteStore::open(dir.db()).await.expect("open"));
    assert!(!trident_core::store::TaskStore::shared(&*store));
    assert!(trident_core::store::TaskStore::notices(&*store).is_none());
    let stores = stores(store);
    contract::run(&stores).await;
    totals_follow_state_changes(&stores).await;
}

/// A damaged file is refused at open with a clear message, and left as it was; so is a file
/// that is not a database at all.
#[tokio::test]
async fn sqlite_refuses_a_corrupt_file_at_open() {
    let dir = TempDir::new();
    {
        let store = SqliteStore::open(dir.db()).await.expect("open");
        let scope = Scope::new("", "fill");
        for i in 0..300 {
            let id = format!("t{i:04}-{}", "x".repeat(200));
            let rec = TaskRecord::new(task(&id, "c", pb::TaskState::Working), 1);
            trident_core::store::TaskStore::commit(&store, &scope, &rec, None, &[ev(&id, 1)])
                .await
                .expect("commit");
        }
    }
    // Reopening waits for the old writer to close (and checkpoint) the file.
    drop(
        SqliteStore::open(dir.db())
            .await
            .expect("reopen a healthy file"),
    );
    let mut bytes = std::fs::read(dir.db()).expect("read");
    assert!(bytes.len() > 8 * 4096, "several pages: {}", bytes.len());
    for b in &mut bytes[2 * 4096..6 * 4096] {
        *b = 0xA5;
    }
    std::fs::write(dir.db(), &bytes).expect("damage the file");
    let Err(err) = SqliteStore::open(dir.db()).await else {
        panic!("a damaged file is refused");
    };
    assert!(matches!(err, OpenError::Corrupt { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("damaged") && text.contains("trident.db"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(dir.db()).expect("read"),
        bytes,
        "left untouched"
    );

    let other = TempDir::new();
    std::fs::write(other.db(), vec![0x42u8; 64 << 10]).expect("write");
    let Err(err) = SqliteStore::open(other.db()).await else {
        panic!("not a database");
    };
    assert!(matches!(err, OpenError::Corrupt { .. }), "{err}");
}

#[tokio::test]
async fn sqlite_group_commits_concurrent_writes() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.db()).await.expect("open");
    let scope = Scope::new("", "burst");
    let before = store.stats();
    let commits = (0..200).map(|i| {
        let id = format!("t{i}");
        let rec = TaskRecord::new(task(&id, "c", pb::TaskState::Working), 1);
        let store = &store;
        let scope = &scope;
        async move {
            trident_core::store::TaskStore::commit(store, scope, &rec, None, &[ev(&id, 1)]).await
        }
    });
    let results = futures::future::join_all(commits).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let after = store.stats();
    let requests = after.requests - before.requests;
    let transactions = after.transactions - before.transactions;
    assert_eq!(requests, 200);
    assert!(
        transactions <= 10,
        "200 concurrent commits took {transactions} transactions"
    );
    let page = trident_core::store::TaskStore::list(
        &store,
        &scope,
        &TaskQuery {
            limit: 1,
            ..Default::default()
        },
    )
    .await
    .expect("list");
    assert_eq!(page.total, 200);
}

/// Counters summed over a batch stay exact: a task created and moved on in one batch (its
/// WORKING count nets to zero, so that row is not written), a task moved to another context,
/// and eight creates in one state, all queued together.
#[tokio::test]
async fn sqlite_counters_summed_per_batch_stay_exact() {
    use trident_core::store::TaskStore as _;
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.db()).await.expect("open");
    let scope = Scope::new("", "tally");
    let moved = TaskRecord::new(task("moved", "c", pb::TaskState::Working), 1);
    store
        .commit(&scope, &moved, None, &[ev("moved", 1)])
        .await
        .expect("create moved");
    let created = TaskRecord::new(task("quick", "c", pb::TaskState::Working), 1);
    let mut finished = TaskRecord::new(task("quick", "c", pb::TaskState::Completed), 1);
    finished.last_seq = 2;
    let mut elsewhere = TaskRecord::new(task("moved", "d", pb::TaskState::Working), 1);
    elsewhere.last_seq = 2;
    let (log1, log2, log3) = ([ev("quick", 1)], [ev("quick", 2)], [ev("moved", 2)]);
    let (a, b, c, others) = futures::join!(
        store.commit(&scope, &created, None, &log1),
        store.commit(&scope, &finished, Some(1), &log2),
        store.commit(&scope, &elsewhere, Some(1), &log3),
        create_distinct(&store, &scope)
    );
    assert!(a.is_ok() && b.is_ok() && c.is_ok(), "{a:?} {b:?} {c:?}");
    assert!(others.iter().all(Result::is_ok), "{others:?}");
    let total = |state: Option<pb::TaskState>, context: Option<&str>| {
        let query = TaskQuery {
            limit: 1,
            state,
            context_id: context.map(str::to_owned),
            ..Default::default()
        };
        let store = &store;
        let scope = &scope;
        async move { store.list(scope, &query).await.expect("list").total }
    };
    assert_eq!(total(None, None).await, 10);
    assert_eq!(total(Some(pb::TaskState::Working), None).await, 9);
    assert_eq!(total(Some(pb::TaskState::Completed), None).await, 1);
    assert_eq!(total(None, Some("c")).await, 9);
    assert_eq!(total(Some(pb::TaskState::Working), Some("c")).await, 8);
    assert_eq!(total(Some(pb::TaskState::Completed), Some("c")).await, 1);
    assert_eq!(total(None, Some("d")).await, 1);
    assert_eq!(total(Some(pb::TaskState::Working), Some("d")).await, 1);
}

/// Creates eight WORKING tasks `d0`…`d7` (one event each) at once, so that they are queued
/// together with whatever else is in flight.
async fn create_distinct(store: &SqliteStore, scope: &Scope) -> Vec<Result<(), StoreError>> {
    let records: Vec<_> = (0..8)
        .map(|i| TaskRecord::new(task(&format!("d{i}"), "c", pb::TaskState::Working), 1))
        .collect();
    let logs: Vec<_> = records.iter().map(|r| [ev(&r.task.id, 1)]).collect();
    let creates = records
        .iter()
        .zip(&logs)
        .map(|(r, log)| trident_core::store::TaskStore::commit(store, scope, r, None, log));
    futures::future::join_all(creates).await
}

#[tokio::test]
async fn sqlite_a_refused_request_does_not_spoil_its_batch() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.db()).await.expect("open");
    let scope = Scope::new("", "batch");
    let rec = TaskRecord::new(task("dup", "c", pb::TaskState::Working), 1);
    // Eight creates of one id and eight of distinct ids, all queued together.
    let first = [ev("dup", 1)];
    let dups =
        (0..8).map(|_| trident_core::store::TaskStore::commit(&store, &scope, &rec, None, &first));
    let (dups, others) = futures::join!(
        futures::future::join_all(dups),
        create_distinct(&store, &scope)
    );
    assert_eq!(dups.iter().filter(|r| r.is_ok()).count(), 1, "{dups:?}");
    assert!(
        dups.iter()
            .all(|r| matches!(r, Ok(()) | Err(StoreError::AlreadyExists)))
    );
    assert!(others.iter().all(Result::is_ok), "{others:?}");
    let events = trident_core::store::EventLog::read(&store, &scope, "dup", 0, 10)
        .await
        .expect("read");
    assert_eq!(events.len(), 1, "the refused creates appended nothing");
}

/// A request that fails after writing part of its change (its event collides with a row
/// already in the log, after its task row was updated) is rolled back alone; the requests
/// queued with it commit.
#[tokio::test]
async fn sqlite_a_request_failing_halfway_does_not_spoil_its_batch() {
    use trident_core::store::TaskStore as _;
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.db()).await.expect("open");
    let scope = Scope::new("", "halfway");
    let rec = TaskRecord::new(task("bad", "c", pb::TaskState::Working), 1);
    store
        .commit(&scope, &rec, None, &[ev("bad", 1)])
        .await
        .expect("create");
    // A stray event 2 in the log, written behind the store's back by a transaction that holds
    // the write lock a moment: the writer waits for it with a first request, while the
    // failing commit and eight others queue up behind, to run as one batch.
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.db())
        .connect()
        .await
        .expect("connect");
    let mut lock = conn.begin_with("BEGIN IMMEDIATE").await.expect("begin");
    sqlx::query("INSERT INTO events VALUES ('', 'halfway', 'bad', 2, ?)")
        .bind(ev("bad", 2).event.encode_to_vec())
        .execute(&mut *lock)
        .await
        .expect("stray event");
    let first = TaskRecord::new(task("first", "c", pb::TaskState::Working), 1);
    let first_log = [ev("first", 1)];
    let next = TaskRecord::new(task("bad", "c", pb::TaskState::Completed), 2);
    let second = [ev("bad", 2)];
    let (first, (bad, others), ()) = futures::join!(
        store.commit(&scope, &first, None, &first_log),
        async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            futures::join!(
                store.commit(&scope, &next, Some(1), &second),
                create_distinct(&store, &scope)
            )
        },
        async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            lock.commit().await.expect("commit");
        }
    );
    conn.close().await.expect("close");
    assert!(first.is_ok(), "{first:?}");
    assert!(matches!(bad, Err(StoreError::Conflict)), "{bad:?}");
    assert!(others.iter().all(Result::is_ok), "{others:?}");
    assert_eq!(
        store.get(&scope, "bad").await.expect("get"),
        Some(rec),
        "the failed commit's row update was rolled back"
    );
    let totals = |state| {
        let store = &store;
        let scope = &scope;
        async move {
            store
                .list(
                    scope,
                    &TaskQuery {
                        limit: 1,
                        state,
                        ..Default::default()
                    },
                )
                .await
                .expect("list")
                .total
        }
    };
    assert_eq!(totals(None).await, 10);
    assert_eq!(totals(Some(pb::TaskState::Working)).await, 10);
    assert_eq!(totals(Some(pb::TaskState::Completed)).await, 0);
}

#[tokio::test]
async fn sqlite_data_survives_reopening() {
    let dir = TempDir::new();
    let scope = Scope::new("t", "o");
    let rec = TaskRecord::new(task("kept", "c", pb::TaskState::Working), 2);
    let cfg = pb::TaskPushNotificationConfig {
        id: "cfg".into(),
        task_id: "kept".into(),
        url: "http://hook".into(),
        ..Default::default()
    };
    {
        let stores = open(&format!("sqlite:{}", dir.db().display()))
            .await
            .expect("open");
        stores
            .tasks
            .commit(&scope, &rec, None, &[ev("kept", 1), ev("kept", 2)])
            .await
            .expect("commit");
        stores
            .push
            .put(&scope, &cfg, trident_core::Generation::V03)
            .await
            .expect("put");
    }
    let stores = open(&format!("sqlite://{}", dir.db().display()))
        .await
        .expect("reopen");
    assert_eq!(
        stores.tasks.get(&scope, "kept").await.expect("get"),
        Some(rec)
    );
    assert_eq!(
        stores
            .events
            .read(&scope, "kept", 0, 10)
            .await
            .expect("read")
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        stores.push.get(&scope, "kept", "cfg").await.expect("get"),
        Some((cfg, trident_core::Generation::V03))
    );
}

/// An appended chunk of task `id` at `seq`.
fn chunk(id: &str, seq: u64, text: String) -> LoggedEvent {
    LoggedEvent {
        seq,
        event: SharedEvent::new(pb::StreamResponse::new(
            pb::stream_response::Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
                task_id: id.into(),
                context_id: "c".into(),
                artifact: Some(pb::Artifact::new("answer", vec![pb::Part::text(text)])),
                append: seq > 2,
                last_chunk: false,
                metadata: None,
                generation: 0,
            }),
        )),
    }
}

/// Appends `n` chunks to `rec` (through `append`, a snapshot commit every `snapshot_every`).
async fn append_chunks(
    stores: &Stores,
    scope: &Scope,
    rec: &mut TaskRecord,
    n: usize,
    snapshot_every: usize,
) {
    for i in 0..n {
        let prev = rec.last_seq;
        let e = chunk(&rec.task.id, prev + 1, format!("<{prev}>"));
        trident_core::store::apply(&mut rec.task, &e.event);
        rec.last_seq = prev + 1;
        let events = std::slice::from_ref(&e);
        if (i + 1) % snapshot_every == 0 {
            stores.tasks.commit(scope, rec, Some(prev), events).await
        } else {
            stores.tasks.append(scope, rec, prev, events).await
        }
        .expect("append");
    }
}

#[tokio::test]
async fn sqlite_reopened_after_chunk_appends_reads_the_task() {
    let dir = TempDir::new();
    let scope = Scope::new("t", "o");
    let mut rec = TaskRecord::new(task("streamed", "c", pb::TaskState::Working), 1);
    let spec = format!("sqlite:{}", dir.db().display());
    {
        let stores = open(&spec).await.expect("open");
        stores
            .tasks
            .commit(&scope, &rec, None, &[ev("streamed", 1)])
            .await
            .expect("create");
        // 300 chunks, a snapshot at chunk 200, 100 appended after it.
        append_chunks(&stores, &scope, &mut rec, 300, 200).await;
    }
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.db())
        .connect()
        .await
        .expect("connect");
    let snapshot_seq: i64 = sqlx::query_scalar("SELECT seq FROM snapshots WHERE id = 'streamed'")
        .fetch_one(&mut conn)
        .await
        .expect("snapshot row");
    conn.close().await.expect("close");
    assert_eq!(
        snapshot_seq, 201,
        "appends leave the snapshot where the last commit put it"
    );

    let stores = open(&spec).await.expect("reopen");
    assert_eq!(
        stores.tasks.get(&scope, "streamed").await.expect("get"),
        Some(rec.clone()),
        "the snapshot and the 100 chunks after it"
    );
    assert_eq!(rec.task.artifacts[0].parts.len(), 300);
    let page = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                limit: 5,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(page.tasks, [rec.task.clone()]);
    // Appending goes on after the reopen.
    append_chunks(&stores, &scope, &mut rec, 10, usize::MAX).await;
    assert_eq!(
        stores.tasks.get(&scope, "streamed").await.expect("get"),
        Some(rec)
    );
}

/// A push configuration as stored before migration 3 (no `protocol` column).
fn old_config() -> pb::TaskPushNotificationConfig {
    pb::TaskPushNotificationConfig {
        id: "cfg".into(),
        task_id: "old".into(),
        url: "https://hook.example.com/".into(),
        ..Default::default()
    }
}

/// The version 1 schema, as a binary before the snapshot table created it, with one task.
const SQLITE_V1: &str = include_str!("migrations/sqlite/0001_init.sql");
const POSTGRES_V1: &str = include_str!("migrations/postgres/0001_init.sql");

#[tokio::test]
async fn sqlite_a_version_1_database_migrates() {
    use prost::Message as _;
    let dir = TempDir::new();
    let scope = Scope::new("t", "o");
    let rec = TaskRecord {
        turn: 3,
        ..TaskRecord::new(task("old", "c", pb::TaskState::Working), 2)
    };
    {
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(dir.db())
            .create_if_missing(true)
            .connect()
            .await
            .expect("create v1");
        sqlx::raw_sql(SQLITE_V1)
            .execute(&mut conn)
            .await
            .expect("v1 schema");
        sqlx::raw_sql(
            "CREATE TABLE trident_schema (version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL); \
             INSERT INTO trident_schema VALUES (1, 0); \
             INSERT INTO task_counts VALUES ('t', 'o', 2, 1); \
             INSERT INTO context_counts VALUES ('t', 'o', 'c', 2, 1);",
        )
        .execute(&mut conn)
        .await
        .expect("v1 rows");
        sqlx::query("INSERT INTO tasks VALUES ('t', 'o', 'old', 'c', 2, ?, 2, 3, NULL, NULL, ?)")
            .bind(crate::codec::saturate(trident_core::store::status_nanos(
                &rec.task,
            )))
            .bind(rec.task.encode_to_vec())
            .execute(&mut conn)
            .await
            .expect("v1 task");
        for e in [ev("old", 1), ev("old", 2)] {
            sqlx::query("INSERT INTO events VALUES ('t', 'o', 'old', ?, ?)")
                .bind(i64::try_from(e.seq).expect("seq"))
                .bind(e.event.encode_to_vec())
                .execute(&mut conn)
                .await
                .expect("v1 event");
        }
        sqlx::query("INSERT INTO push_configs VALUES ('t', 'o', 'old', 'cfg', ?)")
            .bind(old_config().encode_to_vec())
            .execute(&mut conn)
            .await
            .expect("v1 push config");
        conn.close().await.expect("close");
    }
    let stores = open(&format!("sqlite:{}", dir.db().display()))
        .await
        .expect("migrate");
    assert_eq!(
        sqlite_version(&dir.db()).await,
        (1..=crate::SQLITE_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        stores.push.get(&scope, "old", "cfg").await.expect("get"),
        Some((old_config(), trident_core::Generation::V1)),
        "a configuration from before migration 3 was made through 1.0"
    );
    assert_eq!(
        stores.tasks.get(&scope, "old").await.expect("get"),
        Some(rec.clone()),
        "the task survives the migration"
    );
    let mut rec = rec;
    append_chunks(&stores, &scope, &mut rec, 20, 7).await;
    assert_eq!(
        stores.tasks.get(&scope, "old").await.expect("get"),
        Some(rec.clone())
    );
    let page = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                limit: 5,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!((page.tasks, page.total), (vec![rec.task], 1));
}

async fn sqlite_version(path: &std::path::Path) -> Vec<i64> {
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .expect("connect");
    let versions = sqlx::query_scalar("SELECT version FROM trident_schema ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .expect("versions");
    conn.close().await.expect("close");
    versions
}

#[tokio::test]
async fn sqlite_migrations_apply_once_and_refuse_newer_databases() {
    let dir = TempDir::new();
    drop(SqliteStore::open(dir.db()).await.expect("from empty"));
    let all = (1..=crate::SQLITE_VERSION).collect::<Vec<_>>();
    assert_eq!(sqlite_version(&dir.db()).await, all);
    drop(SqliteStore::open(dir.db()).await.expect("reopen migrated"));
    assert_eq!(
        sqlite_version(&dir.db()).await,
        all,
        "reopening applies nothing"
    );

    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.db())
        .connect()
        .await
        .expect("connect");
    sqlx::query("INSERT INTO trident_schema (version, applied_ms) VALUES (999, 0)")
        .execute(&mut conn)
        .await
        .expect("insert");
    conn.close().await.expect("close");
    match SqliteStore::open(dir.db()).await {
        Err(OpenError::TooNew { found, known }) => {
            assert_eq!((found, known), (999, crate::SQLITE_VERSION));
        }
        other => panic!("a newer database must be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn open_names_the_accepted_forms() {
    // The in-memory store is the engine's, opened by the facade (`trident::store::open`).
    for bad in ["", "memory", "mysql://x", "sqlite:", "file.db"] {
        let err = open(bad).await.err().expect("refused");
        assert!(matches!(err, OpenError::Spec(_)), "{bad}: {err}");
        let text = err.to_string();
        assert!(
            text.contains("sqlite:PATH") && text.contains("postgres://"),
            "{text}"
        );
    }
    let pg = |url: &str| crate::pg_options(url).expect("valid");
    assert_eq!(
        pg("postgres://h/db?schema=s&sslmode=disable"),
        (
            "postgres://h/db?sslmode=disable".to_owned(),
            crate::PgOptions::new().schema("s")
        )
    );
    assert_eq!(
        pg("postgres://h/db"),
        ("postgres://h/db".to_owned(), crate::PgOptions::new())
    );
    assert_eq!(
        pg("postgres://h/db?notify=off&schema=s"),
        (
            "postgres://h/db".to_owned(),
            crate::PgOptions::new().schema("s").notify(false)
        )
    );
    assert_eq!(
        pg("postgres://h/db?sslmode=disable&notify=on"),
        (
            "postgres://h/db?sslmode=disable".to_owned(),
            crate::PgOptions::new()
        )
    );
    let err = open("postgres://h/db?notify=maybe")
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, OpenError::PgParam(_)), "{err}");
    assert!(err.to_string().contains("notify=off"), "{err}");
}

// --- PostgreSQL ---------------------------------------------------------------------------

/// The server URL, or `None` (and a note) when the PostgreSQL tests are off; under `CI` a
/// missing server fails the test.
fn postgres_url(test: &str) -> Option<String> {
    trident_testkit::contract::test_postgres_url(test)
}

/// Runs `body` with a fresh schema name, then drops the schema, even if `body` panicked.
async fn with_schema<F, Fut>(url: &str, body: F)
where
    F: FnOnce(String, String) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let schema = format!("trident_test_{}", uuid::Uuid::new_v4().simple());
    let result = tokio::spawn(body(url.to_owned(), schema.clone())).await;
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
    )))
    .execute(&mut conn)
    .await
    .expect("drop schema");
    conn.close().await.expect("close");
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_passes_the_contract_and_shares() {
    let Some(url) = postgres_url("postgres_passes_the_contract_and_shares") else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let a = Arc::new(
            PgStore::connect_in_schema(&url, &schema)
                .await
                .expect("connect a"),
        );
        let b = Arc::new(
            PgStore::connect_in_schema(&url, &schema)
                .await
                .expect("connect b"),
        );
        let (a, b) = (stores(a), stores(b));
        assert!(a.tasks.shared());
        contract::run(&a).await;
        totals_follow_state_changes(&a).await;
        contract::shared(&a, &b).await;
        contract::shared(&b, &a).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_racing_creates_and_claims_have_one_winner() {
    let Some(url) = postgres_url("postgres_racing_creates_and_claims_have_one_winner") else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let a = PgStore::connect_in_schema(&url, &schema).await.expect("a");
        let b = PgStore::connect_in_schema(&url, &schema).await.expect("b");
        let scope = Scope::new("race", "o");
        let rec = TaskRecord::new(task("r", "c", pb::TaskState::Working), 1);
        let first = [ev("r", 1)];
        let creates = (0..8).map(|i| {
            let store = if i % 2 == 0 { &a } else { &b };
            trident_core::store::TaskStore::commit(store, &scope, &rec, None, &first)
        });
        let results = futures::future::join_all(creates).await;
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        assert!(
            results
                .iter()
                .all(|r| matches!(r, Ok(()) | Err(StoreError::AlreadyExists))),
            "{results:?}"
        );
        let far = trident_core::store::now_ms() + 60_000;
        let claims = (0..8).map(|i| {
            let store = if i % 2 == 0 { &a } else { &b };
            let node = format!("node-{i}");
            let scope = &scope;
            async move {
                trident_core::store::PushConfigStore::claim_delivery(
                    store, scope, "r", &node, far, 0,
                )
                .await
            }
        });
        let claims = futures::future::join_all(claims).await;
        assert_eq!(
            claims.iter().filter(|c| matches!(c, Ok(Some(0)))).count(),
            1,
            "{claims:?}"
        );
        assert!(claims.iter().all(|c| matches!(c, Ok(Some(0) | None))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrations_apply_once_and_refuse_newer_databases() {
    let Some(url) = postgres_url("postgres_migrations_apply_once_and_refuse_newer_databases")
    else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let versions = |store: &PgStore| {
            let pool = store.pool().clone();
            async move {
                sqlx::query_scalar::<_, i32>("SELECT version FROM trident_schema ORDER BY version")
                    .fetch_all(&pool)
                    .await
                    .expect("versions")
            }
        };
        let first = PgStore::connect_in_schema(&url, &schema)
            .await
            .expect("from empty");
        let all = (1..=i32::try_from(crate::POSTGRES_VERSION).expect("small")).collect::<Vec<_>>();
        assert_eq!(versions(&first).await, all);
        let again = PgStore::connect_in_schema(&url, &schema)
            .await
            .expect("reopen migrated");
        assert_eq!(versions(&again).await, all, "reopening applies nothing");
        sqlx::query("INSERT INTO trident_schema (version, applied_ms) VALUES (999, 0)")
            .execute(again.pool())
            .await
            .expect("insert");
        match PgStore::connect_in_schema(&url, &schema).await {
            Err(OpenError::TooNew { found, known }) => {
                assert_eq!((found, known), (999, crate::POSTGRES_VERSION));
            }
            other => panic!("a newer database must be refused, got {other:?}"),
        }
        assert!(matches!(
            PgStore::connect_in_schema(&url, "bad-name; DROP").await,
            Err(OpenError::SchemaName(_))
        ));
        // `open` with ?schema= reaches the same schema.
        let sep = if url.contains('?') { '&' } else { '?' };
        let spec = format!("{url}{sep}schema={schema}x");
        let stores = open(&spec).await.expect("open with schema");
        assert!(stores.tasks.shared());
        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS \"{schema}x\" CASCADE"
        )))
        .execute(&mut conn)
        .await
        .expect("drop");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_feed_resyncs_after_losing_its_connection() {
    use futures::StreamExt as _;
    use trident_core::store::Notice;
    let Some(url) = postgres_url("postgres_feed_resyncs_after_losing_its_connection") else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let a = stores(Arc::new(
            PgStore::connect_in_schema(&url, &schema).await.expect("a"),
        ));
        let b = PgStore::connect_in_schema(&url, &schema).await.expect("b");
        let mut feed = trident_core::store::TaskStore::notices(&b).expect("feed");
        // Cut every connection of b, the listener's among them.
        let killed: Vec<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
        )
        .bind(b.application_name())
        .fetch_all(admin_pool(&url).await.as_ref().expect("pool"))
        .await
        .expect("terminate");
        assert!(!killed.is_empty(), "b has connections to cut");
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), feed.next())
            .await
            .expect("a resync within 10 s");
        assert_eq!(next, Some(Notice::Resync), "a lost connection means resync");
        // Listening again: a's next commit reaches b.
        let b = stores(Arc::new(b));
        contract::shared(&a, &b).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_version_1_schema_migrates() {
    use prost::Message as _;
    let Some(url) = postgres_url("postgres_a_version_1_schema_migrates") else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let scope = Scope::new("t", "o");
        let rec = TaskRecord::new(task("old", "c", pb::TaskState::Working), 2);
        let old_log = [ev("old", 1), ev("old", 2)];
        {
            let options = sqlx::postgres::PgConnectOptions::from_str(&url)
                .expect("url")
                .options([("search_path", schema.as_str())]);
            let mut conn = sqlx::PgConnection::connect_with(&options)
                .await
                .expect("connect");
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
                .execute(&mut conn)
                .await
                .expect("schema");
            sqlx::raw_sql(POSTGRES_V1)
                .execute(&mut conn)
                .await
                .expect("v1 schema");
            sqlx::raw_sql(
                "CREATE TABLE trident_schema (version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL); \
                 INSERT INTO trident_schema VALUES (1, 0); \
                 INSERT INTO task_counts VALUES ('t', 'o', 2, 1); \
                 INSERT INTO context_counts VALUES ('t', 'o', 'c', 2, 1);",
            )
            .execute(&mut conn)
            .await
            .expect("v1 rows");
            sqlx::query(
                "INSERT INTO tasks VALUES ('t', 'o', 'old', 'c', 2, $1, 2, 1, NULL, NULL, $2)",
            )
            .bind(crate::codec::saturate(trident_core::store::status_nanos(&rec.task)))
            .bind(rec.task.encode_to_vec())
            .execute(&mut conn)
            .await
            .expect("v1 task");
            for e in &old_log {
                sqlx::query("INSERT INTO events VALUES ('t', 'o', 'old', $1, $2)")
                    .bind(i64::try_from(e.seq).expect("seq"))
                    .bind(e.event.encode_to_vec())
                    .execute(&mut conn)
                    .await
                    .expect("v1 event");
            }
            sqlx::query("INSERT INTO push_configs VALUES ('t', 'o', 'old', 'cfg', $1)")
                .bind(old_config().encode_to_vec())
                .execute(&mut conn)
                .await
                .expect("v1 push config");
            conn.close().await.expect("close");
        }
        let store = Arc::new(
            PgStore::connect_in_schema(&url, &schema)
                .await
                .expect("migrate"),
        );
        let stores = stores(store.clone());
        assert_eq!(
            stores.push.get(&scope, "old", "cfg").await.expect("get"),
            Some((old_config(), trident_core::Generation::V1)),
            "a configuration from before migration 3 was made through 1.0"
        );
        assert_eq!(
            stores.tasks.get(&scope, "old").await.expect("get"),
            Some(rec.clone()),
            "the task survives the migration"
        );
        assert_eq!(
            stores.events.read(&scope, "old", 0, 10).await.expect("read"),
            old_log,
            "the log's rows become blocks of one event (migration 5)"
        );
        let mut rec = rec;
        append_chunks(&stores, &scope, &mut rec, 20, 7).await;
        assert_eq!(
            stores.tasks.get(&scope, "old").await.expect("get"),
            Some(rec.clone())
        );
        let page = stores
            .tasks
            .list(&scope, &TaskQuery { limit: 5, ..Default::default() })
            .await
            .expect("list");
        assert_eq!((page.tasks, page.total), (vec![rec.task.clone()], 1));
        // The counters written before migration 4 are shard 0's; this store's changes go to
        // its own shards, and the totals are their sums.
        let migrated: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM task_counts WHERE shard = 0 AND n = 1")
                .fetch_one(store.pool())
                .await
                .expect("shard 0");
        assert_eq!(migrated, 1, "the counter row from before the migration");
        let prev = rec.last_seq;
        rec.task.status = Some(pb::TaskStatus::now(pb::TaskState::Completed, None));
        rec.last_seq = prev + 1;
        stores
            .tasks
            .commit(&scope, &rec, Some(prev), &[ev("old", prev + 1)])
            .await
            .expect("complete");
        let total = |state: Option<pb::TaskState>, context: Option<&str>| {
            let query = TaskQuery {
                limit: 1,
                state,
                context_id: context.map(str::to_owned),
                ..Default::default()
            };
            let (tasks, scope) = (stores.tasks.clone(), scope.clone());
            async move { tasks.list(&scope, &query).await.expect("list").total }
        };
        assert_eq!(total(None, None).await, 1);
        assert_eq!(total(Some(pb::TaskState::Working), None).await, 0);
        assert_eq!(total(Some(pb::TaskState::Completed), None).await, 1);
        assert_eq!(total(Some(pb::TaskState::Working), Some("c")).await, 0);
        assert_eq!(total(Some(pb::TaskState::Completed), Some("c")).await, 1);
    })
    .await;
}

async fn admin_pool(url: &str) -> Result<sqlx::PgPool, sqlx::Error> {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
}

#[test]
fn describe_masks_passwords() {
    assert_eq!(
        crate::describe("postgres://app:s3cret@db:5432/trident?schema=a"),
        "postgres://app:***@db:5432/trident?schema=a"
    );
    assert_eq!(
        crate::describe("postgres://postgres@127.0.0.1/test"),
        "postgres://postgres@127.0.0.1/test"
    );
    assert_eq!(crate::describe("sqlite:trident.db"), "sqlite:trident.db");
    assert_eq!(crate::describe("memory"), "memory");
}

#[tokio::test]
async fn a_sqlite_file_belongs_to_one_store_at_a_time() {
    let dir = std::env::temp_dir().join(format!("trident-lock-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("t.db");
    let first = crate::SqliteStore::open(&path).await.expect("first open");
    match crate::SqliteStore::open(&path).await {
        Err(crate::OpenError::Locked { path, holder }) => {
            assert!(path.ends_with("t.db"), "{path}");
            assert!(holder.starts_with("this process"), "{holder}");
        }
        other => panic!("a second open must be refused, got {other:?}"),
    }
    drop(first);
    crate::SqliteStore::open(&path)
        .await
        .expect("open again once the first is closed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Stores in different schemas of one database do not hear each other's commits (NOTIFY
/// channels are per database): one channel per schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_schemas_do_not_hear_each_others_commits() {
    use futures::StreamExt as _;
    use trident_core::store::Notice;
    let Some(url) = postgres_url("postgres_schemas_do_not_hear_each_others_commits") else {
        return;
    };
    with_schema(&url, |url, first| async move {
        with_schema(&url.clone(), move |url, second| async move {
            let a = PgStore::connect_in_schema(&url, &first).await.expect("a");
            let same = PgStore::connect_in_schema(&url, &first)
                .await
                .expect("same");
            let other = PgStore::connect_in_schema(&url, &second)
                .await
                .expect("other");
            let mut same_feed = trident_core::store::TaskStore::notices(&same).expect("feed");
            let mut other_feed = trident_core::store::TaskStore::notices(&other).expect("feed");
            let scope = Scope::new("", "o");
            let rec = TaskRecord::new(task("t1", "c", pb::TaskState::Working), 1);
            trident_core::store::TaskStore::commit(&a, &scope, &rec, None, &[ev("t1", 1)])
                .await
                .expect("commit");
            let heard = tokio::time::timeout(std::time::Duration::from_secs(10), same_feed.next())
                .await
                .expect("the same schema hears it");
            assert!(
                matches!(heard, Some(Notice::Committed { ref task_id, .. }) if task_id == "t1"),
                "{heard:?}"
            );
            let leaked =
                tokio::time::timeout(std::time::Duration::from_millis(500), other_feed.next())
                    .await;
            assert!(leaked.is_err(), "another schema heard it: {leaked:?}");
        })
        .await;
    })
    .await;
}

#[test]
fn notify_channels_are_per_schema_and_valid_identifiers() {
    assert_eq!(crate::postgres::channel_for(None), "trident_commits");
    assert_eq!(
        crate::postgres::channel_for(Some("tenant_a")),
        "trident_commits_tenant_a"
    );
    let long = "s".repeat(60);
    let shortened = crate::postgres::channel_for(Some(&long));
    assert!(shortened.len() <= 63, "{shortened}");
    assert_ne!(
        shortened,
        crate::postgres::channel_for(Some(&"t".repeat(60)))
    );
    assert_eq!(
        shortened,
        crate::postgres::channel_for(Some(&long)),
        "stable"
    );
}

/// The lock is on the file, not on its name: a second store reaching it through a symbolic
/// or a hard link is refused as one by the same path is.
#[cfg(unix)]
#[tokio::test]
async fn a_sqlite_file_is_locked_whatever_name_reaches_it() {
    let dir = std::env::temp_dir().join(format!("trident-lock-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("t.db");
    let first = crate::SqliteStore::open(&path).await.expect("first open");
    let symbolic = dir.join("symbolic.db");
    std::os::unix::fs::symlink(&path, &symbolic).expect("symlink");
    let hard = dir.join("hard.db");
    std::fs::hard_link(&path, &hard).expect("hard link");
    for other in [&symbolic, &hard] {
        match crate::SqliteStore::open(other).await {
            Err(crate::OpenError::Locked { path, .. }) => {
                assert!(path.contains(&*other.to_string_lossy()), "{path}");
            }
            Err(e) => panic!("{}: refused for another reason: {e}", other.display()),
            Ok(_) => panic!(
                "{}: a second store of one file must be refused",
                other.display()
            ),
        }
    }
    drop(first);
    crate::SqliteStore::open(&hard)
        .await
        .expect("open through a link once the first is closed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An event block splits back into its events, skipping those a reader has; a block that
/// does not split into exactly `first..=last` is corrupt, never half-read.
#[test]
fn an_event_block_splits_into_its_events_or_is_corrupt() {
    use crate::codec::{EventBlock, decode_block};
    let events: Vec<LoggedEvent> = (3..=6).map(|seq| ev("b", seq)).collect();
    let block = EventBlock::encode(&events)
        .expect("encode")
        .expect("a block");
    assert_eq!((block.first, block.last), (3, 6));
    assert_eq!(EventBlock::encode(&[]).expect("encode"), None);
    let read = |seqs: (i64, i64), body: &[u8], after: u64| {
        let mut out = Vec::new();
        decode_block(seqs, body, (after, u64::MAX), &mut out).map(|()| out)
    };
    assert_eq!(read((3, 6), &block.body, 0).expect("whole"), events);
    assert_eq!(read((3, 6), &block.body, 4).expect("after 4"), events[2..]);
    assert_eq!(read((3, 6), &block.body, 6).expect("after all"), vec![]);
    let mut window = Vec::new();
    decode_block((3, 6), &block.body, (3, 5), &mut window).expect("a window");
    assert_eq!(window, events[1..3], "only (after, upto] is decoded");
    let single = EventBlock::single(7, &ev("b", 7).event.encode_to_vec()).expect("single");
    assert_eq!(
        read((7, 7), &single.body, 0).expect("single"),
        vec![ev("b", 7)]
    );
    let corrupt = |seqs: (i64, i64), body: &[u8]| matches!(read(seqs, body, 0), Err(StoreError::Backend(m)) if m.contains("corrupt"));
    assert!(corrupt((3, 7), &block.body), "fewer events than the range");
    assert!(corrupt((3, 5), &block.body), "more events than the range");
    assert!(corrupt((3, 3), &[]), "no event");
    assert!(
        corrupt((3, 6), &block.body[..block.body.len() - 1]),
        "a cut event"
    );
    assert!(corrupt((3, 6), &block.body[..2]), "a cut length");
    let mut garbage = block.body.clone();
    garbage[4] = 0xff;
    assert!(read((3, 6), &garbage, 0).is_err(), "an undecodable event");
}
