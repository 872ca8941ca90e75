//! The PostgreSQL writer: batches across tasks, requests failing alone in a batch, one
//! notification per transaction (or none), and counters sharded per writer.

use std::time::Duration;

use futures::StreamExt as _;
use sqlx::Connection as _;
use trident_core::store::{
    Notice, Scope, StoreError, TaskQuery, TaskRecord, TaskStore as _, events_continue,
};
use trident_proto as pb;

use super::{ev, postgres_url, task, with_schema};
use crate::postgres::{Committed, MAX_PAYLOAD, Notify, parse};
use crate::{PgOptions, PgStore, WriterStats, open};

/// `after - before`, field by field.
fn delta(before: WriterStats, after: WriterStats) -> WriterStats {
    WriterStats {
        requests: after.requests - before.requests,
        transactions: after.transactions - before.transactions,
        reruns: after.reruns - before.reruns,
    }
}

/// A connection in `schema`, behind the stores' backs.
async fn schema_conn(url: &str, schema: &str) -> sqlx::PgConnection {
    use std::str::FromStr as _;
    let options = sqlx::postgres::PgConnectOptions::from_str(url)
        .expect("url")
        .options([("search_path", schema)]);
    sqlx::PgConnection::connect_with(&options)
        .await
        .expect("connect")
}

/// Runs `body` on a store with one writer lane in a fresh schema (given with its URL and
/// name), when the tests have a PostgreSQL server; the schema is dropped after.
async fn with_one_lane<F, Fut>(test: &str, body: F)
where
    F: FnOnce(String, String, PgStore) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Some(url) = postgres_url(test) else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let store =
            PgStore::connect_with_options(&url, PgOptions::new().schema(&schema).writers(1))
                .await
                .expect("connect");
        body(url, schema, store).await;
    })
    .await;
}

/// The ListTasks total of `scope` with these filters.
async fn total(
    store: &PgStore,
    scope: &Scope,
    state: Option<pb::TaskState>,
    context: Option<&str>,
) -> usize {
    let query = TaskQuery {
        limit: 1,
        state,
        context_id: context.map(str::to_owned),
        ..Default::default()
    };
    store.list(scope, &query).await.expect("list").total
}

/// Creates WORKING tasks `{prefix}0`… in context `ctx` (one event each), all at once.
async fn create_many(
    store: &PgStore,
    scope: &Scope,
    prefix: &str,
    ctx: &str,
    n: usize,
) -> Vec<Result<(), StoreError>> {
    let records: Vec<_> = (0..n)
        .map(|i| {
            TaskRecord::new(
                task(&format!("{prefix}{i}"), ctx, pb::TaskState::Working),
                1,
            )
        })
        .collect();
    let logs: Vec<_> = records.iter().map(|r| [ev(&r.task.id, 1)]).collect();
    let creates = records
        .iter()
        .zip(&logs)
        .map(|(r, log)| store.commit(scope, r, None, log));
    futures::future::join_all(creates).await
}

/// Waits until one of `store`'s connections (its writer lane's, in these tests) waits for a
/// lock another transaction holds.
async fn lane_waits(store: &PgStore) {
    for _ in 0..1000 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE application_name = $1 AND wait_event_type = 'Lock'",
        )
        .bind(store.application_name())
        .fetch_one(store.pool())
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the writer lane never waited for the lock");
}

/// Runs `queued` while the store's only lane is held up by a first request (an append to
/// task `gate`, whose row another connection holds locked), so that everything `queued`
/// sends waits in the queue and runs as one batch once the lock goes (a moment after
/// `queued` starts: its requests are queued when it is first polled). Returns what `queued`
/// returned and the writer's stats for the two batches.
async fn in_one_batch<F, T>(url: &str, schema: &str, store: &PgStore, queued: F) -> (T, WriterStats)
where
    F: std::future::Future<Output = T>,
{
    let scope = Scope::new("", "gate");
    let id = format!("gate-{}", uuid::Uuid::new_v4().simple());
    let gate = TaskRecord::new(task(&id, "c", pb::TaskState::Working), 1);
    store
        .commit(&scope, &gate, None, &[ev(&id, 1)])
        .await
        .expect("create the gate");
    let mut lock = schema_conn(url, schema).await;
    let mut tx = lock.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM tasks WHERE owner = 'gate' AND id = $1 FOR UPDATE")
        .bind(&id)
        .execute(&mut *tx)
        .await
        .expect("lock the gate");
    let before = store.stats();
    let mut next = gate.clone();
    next.last_seq = 2;
    let second = [ev(&id, 2)];
    let (opened, out, ()) = futures::join!(
        store.append(&scope, &next, 1, &second),
        async {
            lane_waits(store).await;
            queued.await
        },
        async {
            lane_waits(store).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            tx.commit().await.expect("release the gate");
        }
    );
    opened.expect("the gate's append");
    lock.close().await.expect("close");
    (out, delta(before, store.stats()))
}

/// Many commits of different tasks at once: far fewer transactions than requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_batches_concurrent_commits_of_many_tasks() {
    with_one_lane(
        "postgres_batches_concurrent_commits_of_many_tasks",
        |_, _, store| async move {
            let scope = Scope::new("", "burst");
            let before = store.stats();
            let results = create_many(&store, &scope, "t", "c", 200).await;
            assert!(results.iter().all(Result::is_ok), "{results:?}");
            // Then one append to each, at once.
            let records: Vec<_> = (0..200)
                .map(|i| {
                    let id = format!("t{i}");
                    let mut rec = TaskRecord::new(task(&id, "c", pb::TaskState::Working), 2);
                    rec.task.status = Some(pb::TaskStatus::now(pb::TaskState::Working, None));
                    (rec, [ev(&id, 2)])
                })
                .collect();
            let appends = records
                .iter()
                .map(|(rec, log)| store.append(&scope, rec, 1, log));
            let results = futures::future::join_all(appends).await;
            assert!(results.iter().all(Result::is_ok), "{results:?}");
            let done = delta(before, store.stats());
            assert_eq!(done.requests, 400);
            assert_eq!(done.reruns, 0);
            assert!(
                done.transactions <= 40,
                "400 concurrent commits took {} transactions",
                done.transactions
            );
            assert_eq!(total(&store, &scope, None, None).await, 200);
            for (rec, _) in records.iter().step_by(37) {
                let got = store
                    .get(&scope, &rec.task.id)
                    .await
                    .expect("get")
                    .expect("stored");
                assert_eq!(got.last_seq, 2);
                let events =
                    trident_core::store::EventLog::read(&store, &scope, &rec.task.id, 0, 10)
                        .await
                        .expect("read");
                assert!(events_continue(0, 2, &events), "{events:?}");
            }
        },
    )
    .await;
}

/// Refused requests (a create of a taken id, a stale version, a missing task) queued with
/// others write nothing, and the others of their batch commit, without a rerun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_refused_request_does_not_spoil_its_batch() {
    with_one_lane(
        "postgres_a_refused_request_does_not_spoil_its_batch",
        |url, schema, store| async move {
            let scope = Scope::new("", "batch");
            let old = TaskRecord::new(task("old", "c", pb::TaskState::Working), 1);
            store
                .commit(&scope, &old, None, &[ev("old", 1)])
                .await
                .expect("create old");
            let dup = TaskRecord::new(task("dup", "c", pb::TaskState::Working), 1);
            let first = [ev("dup", 1)];
            let mut stale = old.clone();
            stale.last_seq = 3;
            let stale_log = [ev("old", 3)];
            let mut missing = TaskRecord::new(task("missing", "c", pb::TaskState::Working), 2);
            missing.last_seq = 2;
            let missing_log = [ev("missing", 2)];
            let mut done = old.clone();
            done.task.status = Some(pb::TaskStatus::now(pb::TaskState::Completed, None));
            done.last_seq = 2;
            let done_log = [ev("old", 2)];
            let ((dups, others, stale, missing, done), stats) =
                in_one_batch(&url, &schema, &store, async {
                    let dups = (0..8).map(|_| store.commit(&scope, &dup, None, &first));
                    futures::join!(
                        futures::future::join_all(dups),
                        create_many(&store, &scope, "d", "c", 8),
                        store.append(&scope, &stale, 2, &stale_log),
                        store.append(&scope, &missing, 1, &missing_log),
                        store.commit(&scope, &done, Some(1), &done_log),
                    )
                })
                .await;
            assert_eq!(
                stats,
                WriterStats {
                    requests: 1 + 8 + 8 + 3,
                    transactions: 2,
                    reruns: 0
                },
                "the gate's append, then the rest in one transaction"
            );
            assert_eq!(dups.iter().filter(|r| r.is_ok()).count(), 1, "{dups:?}");
            assert!(
                dups.iter()
                    .all(|r| matches!(r, Ok(()) | Err(StoreError::AlreadyExists))),
                "{dups:?}"
            );
            assert!(others.iter().all(Result::is_ok), "{others:?}");
            assert_eq!(stale, Err(StoreError::Conflict));
            assert_eq!(missing, Err(StoreError::NotFound));
            assert_eq!(done, Ok(()));
            let events = trident_core::store::EventLog::read(&store, &scope, "dup", 0, 10)
                .await
                .expect("read");
            assert_eq!(events.len(), 1, "the refused creates appended nothing");
            assert_eq!(
                store.get(&scope, "missing").await.expect("get"),
                None,
                "a refused append creates nothing"
            );
            assert_eq!(total(&store, &scope, None, None).await, 10);
            assert_eq!(
                total(&store, &scope, Some(pb::TaskState::Working), None).await,
                9
            );
            assert_eq!(
                total(&store, &scope, Some(pb::TaskState::Completed), Some("c")).await,
                1
            );
        },
    )
    .await;
}

/// A batch of nothing but creates reads no row first: the create of a task stored before,
/// and all but one of eight creates of one new id, are refused by their inserts alone, and
/// the rest of the batch commits without a rerun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_batch_of_creates_refuses_taken_ids_by_its_insert() {
    with_one_lane(
        "postgres_a_batch_of_creates_refuses_taken_ids_by_its_insert",
        |url, schema, store| async move {
            let scope = Scope::new("", "creates");
            let old = TaskRecord::new(task("old", "c", pb::TaskState::Working), 1);
            let old_log = [ev("old", 1)];
            store
                .commit(&scope, &old, None, &old_log)
                .await
                .expect("create old");
            let twin = TaskRecord::new(task("twin", "c", pb::TaskState::Working), 1);
            let twin_log = [ev("twin", 1)];
            let ((again, twins, others), stats) = in_one_batch(&url, &schema, &store, async {
                let twins = (0..8).map(|_| store.commit(&scope, &twin, None, &twin_log));
                futures::join!(
                    store.commit(&scope, &old, None, &old_log),
                    futures::future::join_all(twins),
                    create_many(&store, &scope, "n", "c", 8),
                )
            })
            .await;
            assert_eq!(
                (stats.requests, stats.transactions, stats.reruns),
                (1 + 1 + 8 + 8, 2, 0),
                "the gate's append, then the creates in one transaction: {stats:?}"
            );
            assert_eq!(again, Err(StoreError::AlreadyExists));
            assert_eq!(twins.iter().filter(|r| r.is_ok()).count(), 1, "{twins:?}");
            assert!(
                twins
                    .iter()
                    .all(|r| matches!(r, Ok(()) | Err(StoreError::AlreadyExists))),
                "{twins:?}"
            );
            assert!(others.iter().all(Result::is_ok), "{others:?}");
            // Counted once each: old, twin, and the eight others.
            assert_eq!(total(&store, &scope, None, None).await, 10);
            let events = trident_core::store::EventLog::read(&store, &scope, "old", 0, 10)
                .await
                .expect("read");
            assert_eq!(events.len(), 1, "the refused create appended nothing");
        },
    )
    .await;
}

/// A schema fresh from its migration has no planner statistics, and without them a key
/// lookup in a few thousand tasks looks as cheap through a ListTasks index (every task of the
/// owner) as through the primary key. Once a lane has created its first thousand tasks, the
/// tables are analyzed and a lookup by key goes through the primary key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_new_schema_is_analyzed_after_its_first_thousand_tasks() {
    let Some(url) =
        postgres_url("postgres_a_new_schema_is_analyzed_after_its_first_thousand_tasks")
    else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let store =
            PgStore::connect_with_options(&url, PgOptions::new().schema(&schema).writers(1))
                .await
                .expect("connect");
        let scope = Scope::new("", "many");
        let mut conn = schema_conn(&url, &schema).await;
        let analyzed = "SELECT count(*) FROM pg_stat_user_tables \
                        WHERE schemaname = current_schema() AND last_analyze IS NOT NULL \
                        AND relname IN ('tasks', 'snapshots', 'event_blocks', 'context_counts')";
        let created = create_many(&store, &scope, "t", "c", 999).await;
        assert!(created.iter().all(Result::is_ok));
        let before: i64 = sqlx::query_scalar(analyzed)
            .fetch_one(&mut conn)
            .await
            .expect("statistics");
        assert_eq!(before, 0, "analyzed before its thousandth task");
        let created = create_many(&store, &scope, "u", "c", 2).await;
        assert!(created.iter().all(Result::is_ok));
        // The lane analyzes after answering the batch: wait for it.
        let mut after: i64 = 0;
        for _ in 0..100 {
            after = sqlx::query_scalar(analyzed)
                .fetch_one(&mut conn)
                .await
                .expect("statistics");
            if after == 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            after, 4,
            "every table the writer looks up by key is analyzed"
        );
        let plan: Vec<String> = sqlx::query_scalar(
            "EXPLAIN SELECT last_seq FROM tasks WHERE tenant = '' AND owner = 'many' \
             AND id = 't7' FOR UPDATE",
        )
        .fetch_all(&mut conn)
        .await
        .expect("explain");
        assert!(
            plan.iter().any(|l| l.contains("tasks_pkey")),
            "a key lookup goes through the primary key: {plan:#?}"
        );
        conn.close().await.expect("close");
    })
    .await;
}

/// Lease renewal never waits behind a transaction that holds one of the node's tasks (a
/// lane's batch, which writes that task's lease itself): it renews the others and skips it.
/// Taking the rows in another order than the lanes' once had it wait behind them for minutes
/// under 200 streams, and the leases lapsed meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lease_renewal_skips_a_task_a_transaction_holds() {
    use trident_core::store::Lease;
    with_one_lane(
        "postgres_lease_renewal_skips_a_task_a_transaction_holds",
        |url, schema, store| async move {
            let scope = Scope::new("", "leases");
            for id in ["a", "b", "c"] {
                let mut rec = TaskRecord::new(task(id, "c", pb::TaskState::Working), 1);
                rec.lease = Some(Lease {
                    node: "node".into(),
                    until_ms: 1_000,
                });
                store
                    .commit(&scope, &rec, None, &[ev(id, 1)])
                    .await
                    .expect("create");
            }
            let mut holder = schema_conn(&url, &schema).await;
            let mut tx = holder.begin().await.expect("begin");
            sqlx::query("SELECT 1 FROM tasks WHERE owner = 'leases' AND id = 'b' FOR UPDATE")
                .execute(&mut *tx)
                .await
                .expect("hold b");
            // A hang guard, not a timing: without SKIP LOCKED the renewal waits for `tx`, which
            // outlives it.
            let renewed =
                tokio::time::timeout(Duration::from_secs(30), store.renew_leases("node", 9_000))
                    .await
                    .expect("the renewal does not wait for the held task")
                    .expect("renew");
            assert_eq!(renewed, 2, "a and c renewed, b skipped");
            tx.rollback().await.expect("release b");
            let until = |id: &'static str| {
                let store = &store;
                let scope = &scope;
                async move {
                    store
                        .get(scope, id)
                        .await
                        .expect("get")
                        .and_then(|r| r.lease)
                        .map(|l| l.until_ms)
                }
            };
            assert_eq!(until("a").await, Some(9_000));
            assert_eq!(until("b").await, Some(1_000));
            assert_eq!(until("c").await, Some(9_000));
            assert_eq!(
                store.renew_leases("node", 10_000).await,
                Ok(3),
                "b's turn next time"
            );
            holder.close().await.expect("close");
        },
    )
    .await;
}

/// A request that fails after writing part of its change (its event collides with one
/// already in the log) is rolled back alone: the batch runs again, a savepoint per request,
/// and the requests queued with it commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_request_failing_halfway_does_not_spoil_its_batch() {
    with_one_lane(
        "postgres_a_request_failing_halfway_does_not_spoil_its_batch",
        |url, schema, store| async move {
            let feed_store = PgStore::connect_in_schema(&url, &schema)
                .await
                .expect("listener");
            let mut feed = feed_store.notices().expect("feed");
            let scope = Scope::new("", "halfway");
            let rec = TaskRecord::new(task("bad", "c", pb::TaskState::Working), 1);
            store
                .commit(&scope, &rec, None, &[ev("bad", 1)])
                .await
                .expect("create");
            // A stray event 2 in the log, written behind the store's back.
            let mut conn = schema_conn(&url, &schema).await;
            sqlx::query("INSERT INTO event_blocks VALUES ('', 'halfway', 'bad', 2, 2, $1)")
                .bind(block_of(&ev("bad", 2)))
                .execute(&mut conn)
                .await
                .expect("stray event");
            conn.close().await.expect("close");
            let next = TaskRecord::new(task("bad", "c", pb::TaskState::Completed), 2);
            let second = [ev("bad", 2)];
            let ((bad, others), stats) = in_one_batch(&url, &schema, &store, async {
                futures::join!(
                    store.commit(&scope, &next, Some(1), &second),
                    create_many(&store, &scope, "d", "c", 8)
                )
            })
            .await;
            assert_eq!(
                stats,
                WriterStats {
                    requests: 1 + 1 + 8,
                    transactions: 2,
                    reruns: 1
                }
            );
            assert_eq!(bad, Err(StoreError::Conflict));
            assert!(others.iter().all(Result::is_ok), "{others:?}");
            assert_eq!(
                store.get(&scope, "bad").await.expect("get"),
                Some(rec),
                "the failed commit's row update was rolled back"
            );
            assert_eq!(total(&store, &scope, None, None).await, 9);
            assert_eq!(
                total(&store, &scope, Some(pb::TaskState::Working), None).await,
                9
            );
            assert_eq!(
                total(&store, &scope, Some(pb::TaskState::Completed), None).await,
                0
            );
            // The rerun's transaction still announced the eight tasks it committed.
            let mut heard = std::collections::BTreeSet::new();
            while heard.len() < 8 {
                match tokio::time::timeout(Duration::from_secs(10), feed.next()).await {
                    Ok(Some(Notice::Committed { task_id, .. })) if task_id.starts_with('d') => {
                        heard.insert(task_id);
                    }
                    Ok(Some(_)) => {}
                    other => panic!("heard {heard:?}, then {other:?}"),
                }
            }
        },
    )
    .await;
}

/// A task the batch creates that another process created after the batch's lock read (its
/// insert waited for that process's transaction): the create is refused alone, and when
/// other requests of the batch were decided as if the task were new, the batch runs again,
/// request by request, and they see the task as the other process left it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_task_created_elsewhere_meanwhile_is_refused_alone() {
    use prost::Message as _;
    with_one_lane(
        "postgres_a_task_created_elsewhere_meanwhile_is_refused_alone",
        |url, schema, store| async move {
            let scope = Scope::new("", "elsewhere");
            let first = |id: &str| TaskRecord::new(task(id, "c", pb::TaskState::Working), 1);
            // Another process creates `id` in a transaction it leaves open…
            let elsewhere = |id: &'static str| {
                let (url, schema) = (url.clone(), schema.clone());
                async move {
                    let rec = first(id);
                    let mut conn = schema_conn(&url, &schema).await;
                    sqlx::query("BEGIN")
                        .execute(&mut conn)
                        .await
                        .expect("begin");
                    sqlx::query(
                    "INSERT INTO tasks VALUES ('', 'elsewhere', $1, 'c', $2, 0, 1, 1, NULL, NULL)",
                )
                .bind(id)
                .bind(pb::TaskState::Working as i32)
                .execute(&mut conn)
                .await
                .expect("task row");
                    sqlx::query("INSERT INTO snapshots VALUES ('', 'elsewhere', $1, 1, $2)")
                        .bind(id)
                        .bind(rec.task.encode_to_vec())
                        .execute(&mut conn)
                        .await
                        .expect("snapshot");
                    sqlx::query("INSERT INTO event_blocks VALUES ('', 'elsewhere', $1, 1, 1, $2)")
                        .bind(id)
                        .bind(block_of(&ev(id, 1)))
                        .execute(&mut conn)
                        .await
                        .expect("event");
                    conn
                }
            };
            // … and commits once the batch's insert waits for it (the gate of `in_one_batch`
            // opens 300 ms after the batch's requests are queued).
            let commit_when_waited_for = |mut conn: sqlx::PgConnection| {
                let store = &store;
                async move {
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    lane_waits(store).await;
                    sqlx::query("COMMIT")
                        .execute(&mut conn)
                        .await
                        .expect("commit elsewhere");
                    conn.close().await.expect("close");
                }
            };

            // The create alone: refused, and the batch's other create commits without a rerun.
            let (x, y) = (first("x"), first("y"));
            let (lx, ly) = ([ev("x", 1)], [ev("y", 1)]);
            let other = elsewhere("x").await;
            let ((rx, ry, ()), stats) = in_one_batch(&url, &schema, &store, async {
                futures::join!(
                    store.commit(&scope, &x, None, &lx),
                    store.commit(&scope, &y, None, &ly),
                    commit_when_waited_for(other),
                )
            })
            .await;
            assert_eq!(rx, Err(StoreError::AlreadyExists));
            assert_eq!(ry, Ok(()));
            assert_eq!((stats.transactions, stats.reruns), (2, 0), "{stats:?}");

            // The create and an append after it: the batch runs again; the append continues what
            // the other process stored.
            let z = first("z");
            let lz = [ev("z", 1)];
            let mut z2 = z.clone();
            z2.last_seq = 2;
            let lz2 = [ev("z", 2)];
            let w = first("w");
            let lw = [ev("w", 1)];
            let other = elsewhere("z").await;
            let ((rz, rz2, rw, ()), stats) = in_one_batch(&url, &schema, &store, async {
                futures::join!(
                    store.commit(&scope, &z, None, &lz),
                    store.append(&scope, &z2, 1, &lz2),
                    store.commit(&scope, &w, None, &lw),
                    commit_when_waited_for(other),
                )
            })
            .await;
            assert_eq!(rz, Err(StoreError::AlreadyExists));
            assert_eq!(rz2, Ok(()));
            assert_eq!(rw, Ok(()));
            assert_eq!((stats.transactions, stats.reruns), (2, 1), "{stats:?}");
            let stored = store.get(&scope, "z").await.expect("get").expect("z");
            assert_eq!(stored.last_seq, 2);
            // The other process wrote its row without counting it; the batch counted only w.
            assert_eq!(total(&store, &scope, None, None).await, 2);
        },
    )
    .await;
}

/// With notify on, every task a transaction commits reaches the other stores of the schema
/// in one notification per transaction; with notify off nothing is sent, and the store has
/// no feed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_one_notification_per_transaction_or_none() {
    let Some(url) = postgres_url("postgres_one_notification_per_transaction_or_none") else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let a = PgStore::connect_in_schema(&url, &schema).await.expect("a");
        let b = PgStore::connect_in_schema(&url, &schema).await.expect("b");
        let mut feed = b.notices().expect("feed");
        let mut raw = sqlx::postgres::PgListener::connect(&url)
            .await
            .expect("listener");
        raw.listen(&crate::postgres::channel_for(Some(&schema)))
            .await
            .expect("listen");
        let scope = Scope::new("", "heard");
        let before = a.stats();
        let results = create_many(&a, &scope, "t", "c", 60).await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        let transactions = delta(before, a.stats()).transactions;
        let mut heard = std::collections::BTreeMap::new();
        while heard.len() < 60 {
            match tokio::time::timeout(Duration::from_secs(10), feed.next()).await {
                Ok(Some(Notice::Committed {
                    scope: s,
                    task_id,
                    seq,
                })) => {
                    assert_eq!(s, scope);
                    heard.insert(task_id, seq);
                }
                other => panic!("heard {} tasks, then {other:?}", heard.len()),
            }
        }
        assert!(heard.values().all(|seq| *seq == 1), "{heard:?}");
        let mut notifications = 0;
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), raw.recv()).await {
            assert!(parse(n.payload(), "").len() <= 60, "{}", n.payload());
            notifications += 1;
        }
        assert_eq!(
            notifications, transactions,
            "one notification per transaction ({transactions} for 60 commits)"
        );
        assert!(transactions < 60, "{transactions} transactions");

        // Notify off, through `open`'s parameter: no feed, still shared, nothing sent.
        let sep = if url.contains('?') { '&' } else { '?' };
        let quiet = open(&format!("{url}{sep}schema={schema}&notify=off"))
            .await
            .expect("open with notify=off");
        assert!(quiet.tasks.shared());
        assert!(quiet.tasks.notices().is_none());
        let silent =
            PgStore::connect_with_options(&url, PgOptions::new().schema(&schema).notify(false))
                .await
                .expect("silent");
        assert!(silent.notices().is_none());
        let rec = TaskRecord::new(task("quiet", "c", pb::TaskState::Working), 1);
        quiet
            .tasks
            .commit(&scope, &rec, None, &[ev("quiet", 1)])
            .await
            .expect("commit");
        let results = create_many(&silent, &scope, "s", "c", 10).await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert!(
            b.get(&scope, "quiet").await.expect("get").is_some(),
            "b reads the commit it was not told of"
        );
        let told = tokio::time::timeout(Duration::from_millis(500), feed.next()).await;
        assert!(told.is_err(), "a store with notify off was heard: {told:?}");
        let sent = tokio::time::timeout(Duration::from_millis(200), raw.recv()).await;
        assert!(sent.is_err(), "a store with notify off sent {sent:?}");
    })
    .await;
}

/// Two stores creating tasks of one owner at once, and finishing each other's: each store's
/// writer lane adds to a counter shard of its own, and the totals (sums over the shards) stay
/// exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_concurrent_creations_from_two_stores_keep_totals_exact() {
    let Some(url) = postgres_url("postgres_concurrent_creations_from_two_stores_keep_totals_exact")
    else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let a = PgStore::connect_in_schema(&url, &schema).await.expect("a");
        let b = PgStore::connect_in_schema(&url, &schema).await.expect("b");
        let scope = Scope::new("t", "one-owner");
        let (from_a, from_b, more_a) = futures::join!(
            create_many(&a, &scope, "a", "c", 100),
            create_many(&b, &scope, "b", "c", 100),
            create_many(&a, &scope, "x", "d", 20),
        );
        for results in [&from_a, &from_b, &more_a] {
            assert!(results.iter().all(Result::is_ok), "{results:?}");
        }
        assert_eq!(total(&a, &scope, None, None).await, 220);
        assert_eq!(total(&b, &scope, None, Some("c")).await, 200);
        // Each store completes half of the other's tasks.
        let finish = |prefix: &'static str| {
            (0..50).map(move |i| {
                let mut rec = TaskRecord::new(
                    task(&format!("{prefix}{i}"), "c", pb::TaskState::Completed),
                    2,
                );
                rec.last_seq = 2;
                rec
            })
        };
        let a_finishes: Vec<_> = finish("b").collect();
        let b_finishes: Vec<_> = finish("a").collect();
        let logs: Vec<_> = a_finishes
            .iter()
            .chain(&b_finishes)
            .map(|r| [ev(&r.task.id, 2)])
            .collect();
        let commits = a_finishes
            .iter()
            .map(|r| (&a, r))
            .chain(b_finishes.iter().map(|r| (&b, r)))
            .zip(&logs)
            .map(|((store, rec), log)| store.commit(&scope, rec, Some(1), log));
        let results = futures::future::join_all(commits).await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        for store in [&a, &b] {
            assert_eq!(total(store, &scope, None, None).await, 220);
            assert_eq!(
                total(store, &scope, Some(pb::TaskState::Working), None).await,
                120
            );
            assert_eq!(
                total(store, &scope, Some(pb::TaskState::Completed), None).await,
                100
            );
            assert_eq!(
                total(store, &scope, Some(pb::TaskState::Completed), Some("c")).await,
                100
            );
            assert_eq!(
                total(store, &scope, Some(pb::TaskState::Working), Some("c")).await,
                100
            );
            assert_eq!(total(store, &scope, None, Some("d")).await, 20);
        }
        let shards: i64 = sqlx::query_scalar(
            "SELECT COUNT(DISTINCT shard) FROM task_counts WHERE owner = 'one-owner'",
        )
        .fetch_one(a.pool())
        .await
        .expect("shards");
        assert_eq!(shards, 2, "each store's lane claims a shard of its own");
    })
    .await;
}

/// Every writer lane of the stores of a schema claims a counter shard no other holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_writer_lanes_claim_distinct_counter_shards() {
    let Some(url) = postgres_url("postgres_writer_lanes_claim_distinct_counter_shards") else {
        return;
    };
    with_schema(&url, |url, schema| async move {
        let mut stores = Vec::new();
        for _ in 0..3 {
            let options = PgOptions::new().schema(&schema).writers(4);
            stores.push(
                PgStore::connect_with_options(&url, options)
                    .await
                    .expect("connect"),
            );
        }
        let scope = Scope::new("", "lanes");
        for (n, store) in stores.iter().enumerate() {
            let results = create_many(store, &scope, &format!("s{n}-"), "c", 80).await;
            assert!(results.iter().all(Result::is_ok), "{results:?}");
        }
        let shards: i64 = sqlx::query_scalar(
            "SELECT COUNT(DISTINCT shard) FROM task_counts WHERE owner = 'lanes'",
        )
        .fetch_one(stores[0].pool())
        .await
        .expect("shards");
        assert_eq!(shards, 12, "3 stores of 4 lanes, each lane its own shard");
        assert_eq!(total(&stores[1], &scope, None, None).await, 240);
    })
    .await;
}

/// A batch's notification lists every task it committed, split when the list would pass the
/// payload limit; a task alone takes the one-task form older versions read, and a list
/// reads as a resync to them.
#[test]
fn notification_payloads_list_every_task_within_the_limit() {
    let notify = Notify {
        channel: "c".into(),
        node: "me".into(),
    };
    let ids: Vec<String> = (0..500)
        .map(|i| format!("task-{i}-{}", "x".repeat(40)))
        .collect();
    let tasks: Vec<Committed<'_>> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| Committed {
            tenant: "t",
            owner: "o",
            id,
            seq: i64::try_from(i).expect("small") + 1,
        })
        .collect();
    assert!(notify.payloads(&[]).is_empty());
    let payloads = notify.payloads(&tasks);
    assert!(payloads.len() > 1, "500 tasks do not fit one payload");
    assert!(payloads.iter().all(|p| p.len() <= MAX_PAYLOAD));
    let heard: Vec<Notice> = payloads.iter().flat_map(|p| parse(p, "other")).collect();
    let expected: Vec<Notice> = tasks
        .iter()
        .map(|t| Notice::Committed {
            scope: Scope::new(t.tenant, t.owner),
            task_id: t.id.to_owned(),
            seq: u64::try_from(t.seq).expect("positive"),
        })
        .collect();
    assert_eq!(heard, expected);
    assert!(payloads.iter().all(|p| parse(p, "me").is_empty()), "own");
    for p in &payloads {
        let v: serde_json::Value = serde_json::from_str(p).expect("json");
        assert!(
            v.get("r").is_some(),
            "an older reader resyncs on a list: {p}"
        );
    }

    let one = notify.payloads(&tasks[..1]);
    assert_eq!(one.len(), 1);
    let v: serde_json::Value = serde_json::from_str(&one[0]).expect("json");
    assert_eq!(v["i"], tasks[0].id, "the one-task form: {}", one[0]);
    assert_eq!(parse(&one[0], "other"), expected[..1]);

    let huge = "h".repeat(MAX_PAYLOAD);
    let with_huge = [
        tasks[0],
        Committed {
            id: &huge,
            ..tasks[1]
        },
    ];
    let payloads = notify.payloads(&with_huge);
    let heard: Vec<Notice> = payloads.iter().flat_map(|p| parse(p, "other")).collect();
    assert_eq!(heard, [expected[0].clone(), Notice::Resync]);
    assert!(payloads.iter().all(|p| p.len() <= MAX_PAYLOAD));

    assert!(parse("not json", "me").is_empty());
    assert_eq!(
        parse(r#"{"n":"x","r":1,"c":[["t","o"]]}"#, "me"),
        [Notice::Resync],
        "a list entry we cannot read"
    );
}

/// The `event_blocks` body of one event, as the store writes it.
fn block_of(event: &trident_core::store::LoggedEvent) -> Vec<u8> {
    crate::codec::EventBlock::encode(std::slice::from_ref(event))
        .expect("encode")
        .expect("one event")
        .body
}
