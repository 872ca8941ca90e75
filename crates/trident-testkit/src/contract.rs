//! The contract every store implementation must pass, written once and run against the
//! in-memory store in `trident-engine` and against SQLite and PostgreSQL in `trident-store`.
//!
//! Each check panics with a message naming the broken rule. Call [`run`] with fresh, empty
//! stores.

use trident_proto as pb;
use trident_proto::wkt::Timestamp;

use trident_core::store::{
    Generation, Lease, ListCursor, LoggedEvent, Notice, Scope, SharedEvent, StoreError, Stores,
    TaskQuery, TaskRecord, apply,
};

/// The PostgreSQL server the tests of a shared store run against: `TRIDENT_TEST_POSTGRES`
/// (e.g. `postgres://postgres@127.0.0.1:5432/test`).
///
/// Unset outside CI, it is `None` and `test` says it is skipped. With `CI` set, a missing
/// variable or a server that does not accept a connection fails the test instead: a CI that
/// lost its database must not pass by skipping every PostgreSQL test.
pub fn test_postgres_url(test: &str) -> Option<String> {
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    let url = match std::env::var("TRIDENT_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => url,
        _ if ci => panic!(
            "{test}: CI is set but TRIDENT_TEST_POSTGRES is not: the PostgreSQL tests must run in CI"
        ),
        _ => {
            eprintln!("{test}: skipped (set TRIDENT_TEST_POSTGRES to run it)");
            return None;
        }
    };
    if ci && let Err(e) = reachable(&url) {
        panic!(
            "{test}: CI is set but the PostgreSQL server of TRIDENT_TEST_POSTGRES is unreachable: {e}"
        );
    }
    Some(url)
}

/// Whether the host and port of a `postgres://` URL accept a TCP connection (within 5 s).
fn reachable(url: &str) -> Result<(), String> {
    use std::net::{TcpStream, ToSocketAddrs};
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let with_port = if host_port.ends_with(']') || !host_port.contains(':') {
        format!("{host_port}:5432")
    } else {
        host_port.to_owned()
    };
    let addrs = with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {with_port}: {e}"))?;
    let mut last = format!("{with_port} resolves to no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5)) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(last)
}

/// Runs every contract check.
pub async fn run(stores: &Stores) {
    tasks_are_scoped_and_versioned(stores).await;
    list_orders_filters_and_pages(stores).await;
    commits_are_atomic_ordered_and_gapless(stores).await;
    appended_chunks_rebuild_the_task(stores).await;
    appends_around_snapshots(stores).await;
    list_pages_show_appended_state(stores).await;
    leases_renew_and_lapse(stores).await;
    push_configs_crud(stores).await;
    push_configs_are_counted(stores).await;
    delivery_cursor_is_claimed_once(stores).await;
    append_final_ends_the_task_where_its_log_ends(stores).await;
    append_final_wins_against_a_busy_writer(stores, stores).await;
}

/// For shared stores: two handles on one database (as two processes have) see each other's
/// commits, and each handle's notice feed reports the other's commits.
pub async fn shared(a: &Stores, b: &Stores) {
    use futures::StreamExt;
    let mut feed = b.tasks.notices().expect("a shared store has a notice feed");
    let scope = Scope::new("shared", "owner");
    let id = format!("shared-{}", uuid::Uuid::new_v4());
    let rec = TaskRecord::new(task(&id, "ctx", pb::TaskState::Working, 5), 1);
    a.tasks
        .commit(&scope, &rec, None, &[ev(&id, 1)])
        .await
        .expect("commit through a");
    assert_eq!(
        b.tasks.get(&scope, &id).await.expect("get through b"),
        Some(rec),
        "b reads a's commit"
    );
    let notice = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match feed.next().await {
                Some(Notice::Committed {
                    scope: s,
                    task_id,
                    seq,
                }) if task_id == id => break Some((s, seq)),
                Some(_) => continue,
                None => break None,
            }
        }
    })
    .await
    .expect("b is told of a's commit within 10 s");
    assert_eq!(
        notice,
        Some((scope, 1)),
        "the notice names the task and sequence"
    );
    append_final_wins_against_a_busy_writer(a, b).await;
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

fn task(id: &str, context: &str, state: pb::TaskState, ts_ms: i64) -> pb::Task {
    pb::Task {
        id: id.to_owned(),
        context_id: context.to_owned(),
        status: Some(pb::TaskStatus {
            state: state as i32,
            message: None,
            timestamp: Some(Timestamp::from_unix_nanos(i128::from(ts_ms) * 1_000_000)),
        }),
        ..Default::default()
    }
}

/// create/get/update with version checks; scopes never leak.
pub async fn tasks_are_scoped_and_versioned(stores: &Stores) {
    let alice = Scope::new("t1", "alice");
    let bob = Scope::new("t1", "bob");
    let other_tenant = Scope::new("t2", "alice");
    let rec = TaskRecord::new(task("task-a", "ctx", pb::TaskState::Submitted, 1), 1);
    stores
        .tasks
        .commit(&alice, &rec, None, &[ev("task-a", 1)])
        .await
        .expect("create");
    assert_eq!(
        stores.tasks.commit(&alice, &rec, None, &[]).await,
        Err(StoreError::AlreadyExists),
        "duplicate create must fail"
    );
    assert_eq!(
        stores.tasks.get(&alice, "task-a").await.expect("get"),
        Some(rec.clone())
    );
    assert_eq!(
        stores.tasks.get(&bob, "task-a").await.expect("get"),
        None,
        "another owner must not see the task"
    );
    assert_eq!(
        stores
            .tasks
            .get(&other_tenant, "task-a")
            .await
            .expect("get"),
        None,
        "another tenant must not see the task"
    );

    let mut next = rec.clone();
    next.task.status = Some(pb::TaskStatus::now(pb::TaskState::Working, None));
    next.last_seq = 2;
    next.turn = 2;
    next.lease = Some(Lease {
        node: "node-1".into(),
        until_ms: 1_000,
    });
    stores
        .tasks
        .commit(&alice, &next, Some(1), &[ev("task-a", 2)])
        .await
        .expect("update at the expected version");
    assert_eq!(
        stores.tasks.commit(&alice, &next, Some(1), &[]).await,
        Err(StoreError::Conflict),
        "stale version must conflict"
    );
    assert_eq!(
        stores.tasks.commit(&bob, &next, Some(2), &[]).await,
        Err(StoreError::NotFound),
        "update in another scope"
    );
    assert_eq!(
        stores.tasks.get(&alice, "task-a").await.expect("get"),
        Some(next.clone()),
        "turn and lease round-trip"
    );
    assert_eq!(
        stores
            .tasks
            .get(&alice, "task-a")
            .await
            .expect("get")
            .map(|r| r.last_seq),
        Some(2)
    );
}

/// Filters, order (status timestamp desc, id asc), totals and keyset pages.
pub async fn list_orders_filters_and_pages(stores: &Stores) {
    let scope = Scope::new("list", "owner");
    let foreign = Scope::new("list", "stranger");
    let specs = [
        ("a", "c1", pb::TaskState::Working, 30),
        ("b", "c1", pb::TaskState::Completed, 20),
        ("c", "c2", pb::TaskState::Working, 20),
        ("d", "c2", pb::TaskState::Failed, 10),
        ("e", "c1", pb::TaskState::Working, 40),
    ];
    for (id, ctx, state, ts) in specs {
        let rec = TaskRecord::new(task(id, ctx, state, ts), 0);
        stores
            .tasks
            .commit(&scope, &rec, None, &[])
            .await
            .expect("create");
    }
    stores
        .tasks
        .commit(
            &foreign,
            &TaskRecord::new(task("z", "c1", pb::TaskState::Working, 50), 0),
            None,
            &[],
        )
        .await
        .expect("create foreign");

    let all = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    let ids: Vec<_> = all.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["e", "a", "b", "c", "d"],
        "newest status first, ties by id"
    );
    assert_eq!((all.total, all.next.clone()), (5, None));

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = stores
            .tasks
            .list(
                &scope,
                &TaskQuery {
                    limit: 2,
                    after,
                    ..Default::default()
                },
            )
            .await
            .expect("page");
        assert_eq!(page.total, 5, "total counts every page");
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        match page.next {
            Some(c) => after = Some(c),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["e", "a", "b", "c", "d"],
        "pages concatenate to the full order"
    );

    let ctx = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                context_id: Some("c1".into()),
                state: Some(pb::TaskState::Working),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("filtered");
    assert_eq!(
        ctx.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["e", "a"]
    );
    assert_eq!(ctx.total, 2);

    let since = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                updated_since: Some(20_000_000),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("since");
    assert_eq!(since.total, 4, "statusTimestampAfter is inclusive");

    let after_b = ListCursor {
        timestamp: 20_000_000,
        id: "b".into(),
    };
    let rest = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                after: Some(after_b),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("after");
    assert_eq!(
        rest.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["c", "d"]
    );
}

/// Snapshot and events commit together; sequence numbers start at 1, continue without gaps,
/// and read back in order from any point; a refused commit leaves nothing behind.
pub async fn commits_are_atomic_ordered_and_gapless(stores: &Stores) {
    let scope = Scope::new("", "log");
    let mut rec = TaskRecord::new(task("t", "c", pb::TaskState::Working, 1), 2);
    stores
        .tasks
        .commit(&scope, &rec, None, &[ev("t", 1), ev("t", 2)])
        .await
        .expect("create with 1..2");
    rec.last_seq = 3;
    assert_eq!(
        stores
            .tasks
            .commit(&scope, &rec, Some(2), &[ev("t", 4)])
            .await,
        Err(StoreError::Conflict),
        "a gap must be refused"
    );
    assert_eq!(
        stores
            .tasks
            .commit(&scope, &rec, Some(1), &[ev("t", 2)])
            .await,
        Err(StoreError::Conflict),
        "a taken sequence number must be refused"
    );
    let seqs = |v: Vec<LoggedEvent>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(stores.events.read(&scope, "t", 0, 10).await.expect("read")),
        [1, 2],
        "refused commits append nothing"
    );
    let third = ev("t", 3);
    stores
        .tasks
        .commit(&scope, &rec, Some(2), std::slice::from_ref(&third))
        .await
        .expect("append 3");
    assert_eq!(
        seqs(stores.events.read(&scope, "t", 0, 10).await.expect("read")),
        [1, 2, 3]
    );
    assert_eq!(
        seqs(stores.events.read(&scope, "t", 1, 1).await.expect("read")),
        [2]
    );
    assert_eq!(
        seqs(stores.events.read(&scope, "t", 3, 10).await.expect("read")),
        Vec::<u64>::new()
    );
    assert_eq!(
        stores.events.read(&scope, "t", 2, 1).await.expect("read"),
        [third],
        "events round-trip"
    );
    assert!(
        stores
            .events
            .read(&Scope::new("", "other"), "t", 0, 10)
            .await
            .expect("read")
            .is_empty(),
        "logs are scoped"
    );
    // Concurrent writers at one version: exactly one wins.
    let mut next = rec.clone();
    next.last_seq = 4;
    let fourth = [ev("t", 4)];
    let attempts = (0..8).map(|_| stores.tasks.commit(&scope, &next, Some(3), &fourth));
    let results = futures::future::join_all(attempts).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "one of 8 racing commits wins: {results:?}"
    );
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(StoreError::Conflict))),
        "the others conflict: {results:?}"
    );
}

/// A status update of task `id` to `state` at `ts_ms`, with an agent message saying `text`.
fn status_event(id: &str, state: pb::TaskState, text: &str, ts_ms: i64) -> pb::StreamResponse {
    let mut message = pb::Message::agent(format!("m-{id}-{ts_ms}"), vec![pb::Part::text(text)]);
    message.task_id = id.to_owned();
    message.context_id = "c".to_owned();
    pb::StreamResponse::new(pb::stream_response::Payload::StatusUpdate(
        pb::TaskStatusUpdateEvent {
            task_id: id.to_owned(),
            context_id: "c".to_owned(),
            status: Some(pb::TaskStatus {
                state: state as i32,
                message: Some(message),
                timestamp: Some(Timestamp::from_unix_nanos(i128::from(ts_ms) * 1_000_000)),
            }),
            metadata: None,
            generation: 0,
        },
    ))
}

/// An artifact update of task `id`: `artifact` with one text part, appended or not.
fn chunk_event(id: &str, artifact: &str, text: String, append: bool) -> pb::StreamResponse {
    pb::StreamResponse::new(pb::stream_response::Payload::ArtifactUpdate(
        pb::TaskArtifactUpdateEvent {
            task_id: id.to_owned(),
            context_id: "c".to_owned(),
            artifact: Some(pb::Artifact::new(artifact, vec![pb::Part::text(text)])),
            append,
            last_chunk: false,
            metadata: None,
            generation: 0,
        },
    ))
}

/// A writer of one task that applies each event to its own copy (what the engine does) and
/// commits it with a snapshot or appends it.
struct Writer<'a> {
    stores: &'a Stores,
    scope: Scope,
    record: TaskRecord,
}

impl<'a> Writer<'a> {
    /// Creates the task: a snapshot and the `Task` event as seq 1.
    async fn create(stores: &'a Stores, scope: Scope, task: pb::Task) -> Self {
        let event = pb::StreamResponse::new(pb::stream_response::Payload::Task(task.clone()));
        let record = TaskRecord::new(task, 1);
        let logged = [LoggedEvent {
            seq: 1,
            event: SharedEvent::new(event),
        }];
        stores
            .tasks
            .commit(&scope, &record, None, &logged)
            .await
            .expect("create");
        Self {
            stores,
            scope,
            record,
        }
    }

    /// Applies `events` and stores them: with a snapshot (`commit`) or without (`append`).
    async fn write(&mut self, events: Vec<pb::StreamResponse>, snapshot: bool) {
        let prev = self.record.last_seq;
        let logged: Vec<LoggedEvent> = events
            .into_iter()
            .zip(prev + 1..)
            .map(|(event, seq)| {
                apply(&mut self.record.task, &event);
                LoggedEvent {
                    seq,
                    event: SharedEvent::new(event),
                }
            })
            .collect();
        self.record.last_seq = prev + logged.len() as u64;
        let tasks = &self.stores.tasks;
        let result = if snapshot {
            tasks
                .commit(&self.scope, &self.record, Some(prev), &logged)
                .await
        } else {
            tasks.append(&self.scope, &self.record, prev, &logged).await
        };
        result.unwrap_or_else(|e| panic!("write at {prev} (snapshot: {snapshot}): {e}"));
    }

    async fn stored(&self) -> Option<TaskRecord> {
        self.stores
            .tasks
            .get(&self.scope, &self.record.task.id)
            .await
            .expect("get")
    }
}

/// `append_final` appends a terminal status at the end of the log, wherever that is (the
/// caller does not say), and the record becomes what applying it gives: the next sequence
/// number, its state, no lease, the same turn; the writer that still expects the old end
/// conflicts; a task that has ended takes nothing more; another scope's or a missing task is
/// `NotFound`; the counters follow (list totals by state).
pub async fn append_final_ends_the_task_where_its_log_ends(stores: &Stores) {
    let scope = Scope::new("", "final");
    let id = "finalled";
    let mut w = Writer::create(
        stores,
        scope.clone(),
        task(id, "c", pb::TaskState::Submitted, 1),
    )
    .await;
    w.record.turn = 2;
    w.record.lease = Some(Lease {
        node: "node-1".into(),
        until_ms: 4_000_000_000_000,
    });
    w.write(
        vec![status_event(id, pb::TaskState::Working, "on it", 5)],
        true,
    )
    .await;
    w.write(vec![chunk_event(id, "answer", "a".into(), false)], false)
        .await;
    w.write(vec![chunk_event(id, "answer", "b".into(), true)], false)
        .await;
    assert_eq!(w.record.last_seq, 4);

    let cancel = status_event(id, pb::TaskState::Canceled, "stopped", 9);
    assert_eq!(
        stores.tasks.append_final(&scope, id, &cancel).await,
        Ok(Some(5)),
        "appended after the last event"
    );
    let mut want = w.record.clone();
    apply(&mut want.task, &cancel);
    want.last_seq = 5;
    want.lease = None;
    assert_eq!(
        w.stored().await.as_ref(),
        Some(&want),
        "the record is the task with the event applied, no lease, the same turn"
    );
    let log = stores.events.read(&scope, id, 4, 10).await.expect("read");
    assert_eq!(log.len(), 1, "one event after 4: {log:?}");
    assert_eq!((log[0].seq, &*log[0].event), (5, &cancel), "the event at 5");

    // The writer that expected the log to end at 4 conflicts, and changes nothing.
    let mut late = w.record.clone();
    let chunk = chunk_event(id, "answer", "c".into(), true);
    apply(&mut late.task, &chunk);
    late.last_seq = 5;
    let logged = [LoggedEvent {
        seq: 5,
        event: SharedEvent::new(chunk),
    }];
    assert_eq!(
        stores.tasks.append(&scope, &late, 4, &logged).await,
        Err(StoreError::Conflict),
        "the writer behind the end conflicts"
    );
    assert_eq!(
        w.stored().await.as_ref(),
        Some(&want),
        "the conflict wrote nothing"
    );

    // An ended task takes no other end.
    let failed = status_event(id, pb::TaskState::Failed, "too late", 10);
    assert_eq!(
        stores.tasks.append_final(&scope, id, &failed).await,
        Ok(None),
        "a terminal task is left as it is"
    );
    assert_eq!(w.stored().await.as_ref(), Some(&want), "nothing written");
    assert_eq!(
        stores.events.read(&scope, id, 5, 10).await.expect("read"),
        vec![],
        "nothing logged after the end"
    );

    // Scoped, and only for tasks that exist.
    let elsewhere = Scope::new("", "someone-else");
    assert_eq!(
        stores.tasks.append_final(&elsewhere, id, &cancel).await,
        Err(StoreError::NotFound),
        "another scope's task"
    );
    assert_eq!(
        stores
            .tasks
            .append_final(&scope, "no-such-task", &cancel)
            .await,
        Err(StoreError::NotFound),
        "a missing task"
    );
    // Only a status update to a terminal state.
    let other = Writer::create(
        stores,
        scope.clone(),
        task("still-working", "c", pb::TaskState::Working, 2),
    )
    .await;
    let working = status_event("still-working", pb::TaskState::Working, "more", 3);
    assert!(
        matches!(
            stores
                .tasks
                .append_final(&scope, "still-working", &working)
                .await,
            Err(StoreError::Backend(_))
        ),
        "a status that does not end the task is refused"
    );
    assert_eq!(
        other.stored().await.as_ref(),
        Some(&other.record),
        "and writes nothing"
    );

    // The counters moved with the state.
    let count = |state| TaskQuery {
        state: Some(state),
        limit: 10,
        ..Default::default()
    };
    let canceled = stores
        .tasks
        .list(&scope, &count(pb::TaskState::Canceled))
        .await
        .expect("list");
    assert_eq!(
        (canceled.total, canceled.tasks),
        (1, vec![want.task.clone()]),
        "listed as canceled"
    );
    let working = stores
        .tasks
        .list(&scope, &count(pb::TaskState::Working))
        .await
        .expect("list");
    assert_eq!(
        (working.total, working.tasks),
        (1, vec![other.record.task.clone()]),
        "no longer counted as working"
    );
}

/// A writer appending through `a` back to back, one event per commit, and `append_final`
/// through `b` (another process, on a shared store) while it does: the final event is
/// appended at the first attempt, right after whatever the writer had stored, and the writer's
/// next append conflicts. No commit conditioned on a sequence number read beforehand could
/// promise that.
pub async fn append_final_wins_against_a_busy_writer(a: &Stores, b: &Stores) {
    let scope = Scope::new("", "busy");
    let id = format!("busy-{}", uuid::Uuid::new_v4());
    let writer = {
        let a = a.clone();
        let (scope, id) = (scope.clone(), id.clone());
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let handle = tokio::spawn(async move {
            let mut w = Writer::create(&a, scope, task(&id, "c", pb::TaskState::Working, 1)).await;
            let mut started_tx = Some(started_tx);
            for i in 0..100_000 {
                if i == 10
                    && let Some(tx) = started_tx.take()
                {
                    let _ = tx.send(());
                }
                let prev = w.record.last_seq;
                let event = chunk_event(&id, "answer", format!("<{i}>"), i > 0);
                let mut next = w.record.clone();
                apply(&mut next.task, &event);
                next.last_seq = prev + 1;
                let logged = [LoggedEvent {
                    seq: prev + 1,
                    event: SharedEvent::new(event),
                }];
                match w.stores.tasks.append(&w.scope, &next, prev, &logged).await {
                    Ok(()) => w.record = next,
                    Err(StoreError::Conflict) => return (w.record.last_seq, true),
                    Err(e) => panic!("append at {prev}: {e}"),
                }
                // Lets the other side run on a single-threaded runtime.
                tokio::task::yield_now().await;
            }
            (w.record.last_seq, false)
        });
        started.await.expect("the writer started");
        handle
    };
    let cancel = status_event(&id, pb::TaskState::Canceled, "stopped", 9);
    let appended = b
        .tasks
        .append_final(&scope, &id, &cancel)
        .await
        .expect("append_final while the writer commits");
    let (written, conflicted) = writer.await.expect("the writer");
    assert!(conflicted, "the writer's next append conflicted");
    assert_eq!(
        appended,
        Some(written + 1),
        "appended right after the writer's last event"
    );
    let stored = b.tasks.get(&scope, &id).await.expect("get").expect("there");
    assert_eq!(stored.task.state(), pb::TaskState::Canceled);
    assert_eq!(stored.last_seq, written + 1);
    let log = b.events.read(&scope, &id, 0, 200_000).await.expect("read");
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=written + 1).collect::<Vec<_>>(),
        "the log is gapless and ends with the final event"
    );
    assert_eq!(&*log[log.len() - 1].event, &cancel);
}

/// Many appended chunks (no snapshot after the first): `get` rebuilds exactly the task that
/// applying every event gives, and the log holds every event.
pub async fn appended_chunks_rebuild_the_task(stores: &Stores) {
    const CHUNKS: usize = 1000;
    let scope = Scope::new("", "chunks");
    let mut w = Writer::create(
        stores,
        scope.clone(),
        task("chunked", "c", pb::TaskState::Working, 1),
    )
    .await;
    for i in 0..CHUNKS {
        let event = chunk_event("chunked", "answer", format!("<{i:04}>"), i > 0);
        w.write(vec![event], false).await;
        if i == 0 || i == CHUNKS / 2 {
            assert_eq!(
                w.stored().await.as_ref(),
                Some(&w.record),
                "after {} chunks",
                i + 1
            );
        }
    }
    let stored = w.stored().await.expect("the task is there");
    assert_eq!(stored, w.record, "get applies every appended chunk");
    let text: String = stored.task.artifacts[0]
        .parts
        .iter()
        .filter_map(pb::Part::as_text)
        .collect();
    let want: String = (0..CHUNKS).map(|i| format!("<{i:04}>")).collect();
    assert_eq!(text, want, "the chunks in order");
    let logged = stores
        .events
        .read(&scope, "chunked", 0, CHUNKS + 10)
        .await
        .expect("read");
    assert_eq!(
        logged.len(),
        CHUNKS + 1,
        "the log holds the creation and every chunk"
    );
}

/// Appends interleaved with snapshots at every kind of boundary (right after one, several
/// events per append, status changes moving messages into the history, artifacts replaced
/// and added, a lease and turn carried by an append): `get` always returns the task as the
/// writer has it; refused appends change nothing.
pub async fn appends_around_snapshots(stores: &Stores) {
    let scope = Scope::new("", "boundaries");
    let id = "bounded";
    let mut w = Writer::create(
        stores,
        scope.clone(),
        task(id, "c", pb::TaskState::Submitted, 1),
    )
    .await;
    assert_eq!(w.stored().await.as_ref(), Some(&w.record), "fresh task");
    for i in 0..120_i64 {
        let event = match i % 40 {
            0 => status_event(id, pb::TaskState::Working, &format!("step {i}"), 10 + i),
            17 => chunk_event(id, "other", format!("replaced {i}"), false),
            // Appending to an artifact that does not exist yet adds it.
            23 => chunk_event(id, &format!("new-{i}"), format!("first {i}"), true),
            _ => chunk_event(id, "answer", format!("[{i}]"), i % 40 != 1),
        };
        // A snapshot every 13 writes; after it, at once, an append.
        w.write(vec![event], i % 13 == 12).await;
        if i % 13 == 12 || i % 13 == 0 || i % 7 == 3 {
            assert_eq!(
                w.stored().await.as_ref(),
                Some(&w.record),
                "after write {i}"
            );
        }
    }
    // Several events in one append, then one in a snapshot commit.
    let batch = (0..5)
        .map(|i| chunk_event(id, "answer", format!("(batch {i})"), true))
        .collect();
    w.write(batch, false).await;
    assert_eq!(w.stored().await.as_ref(), Some(&w.record), "after a batch");
    w.write(
        vec![status_event(id, pb::TaskState::InputRequired, "more?", 500)],
        true,
    )
    .await;
    assert_eq!(
        w.stored().await.as_ref(),
        Some(&w.record),
        "after a snapshot"
    );
    assert_eq!(
        w.record.task.history.len(),
        3,
        "each replaced status message in history"
    );

    // An append carries the turn and the lease.
    w.record.turn = 2;
    w.record.lease = Some(Lease {
        node: "chunk-node".into(),
        until_ms: 42,
    });
    w.write(
        vec![status_event(id, pb::TaskState::Working, "again", 600)],
        false,
    )
    .await;
    let stored = w.stored().await.expect("there");
    assert_eq!(stored, w.record, "turn and lease follow an append");
    let lapsed = stores
        .tasks
        .lapsed_leases(43, 10_000)
        .await
        .expect("lapsed");
    assert!(
        lapsed.contains(&(scope.clone(), id.to_owned())),
        "an appended lease lapses: {lapsed:?}"
    );

    // Refused appends change nothing.
    let mut stale = w.record.clone();
    stale.last_seq += 1;
    let next = [LoggedEvent {
        seq: w.record.last_seq + 1,
        event: SharedEvent::new(chunk_event(id, "answer", "refused".into(), true)),
    }];
    let at = w.record.last_seq;
    assert_eq!(
        stores.tasks.append(&scope, &stale, at - 1, &next).await,
        Err(StoreError::Conflict),
        "an append at an old version conflicts"
    );
    let gap = [LoggedEvent {
        seq: at + 2,
        event: next[0].event.clone(),
    }];
    let mut gapped = stale.clone();
    gapped.last_seq = at + 2;
    assert_eq!(
        stores.tasks.append(&scope, &gapped, at, &gap).await,
        Err(StoreError::Conflict),
        "an append with a gap conflicts"
    );
    assert_eq!(
        stores
            .tasks
            .append(&Scope::new("", "someone else"), &stale, at, &next)
            .await,
        Err(StoreError::NotFound),
        "an append in another scope finds no task"
    );
    let mut absent = stale.clone();
    absent.task.id = "never-created".into();
    assert_eq!(
        stores.tasks.append(&scope, &absent, at, &next).await,
        Err(StoreError::NotFound),
        "an append to a missing task finds none"
    );
    assert_eq!(
        w.stored().await.as_ref(),
        Some(&w.record),
        "refusals change nothing"
    );
    assert_eq!(
        stores
            .events
            .read(&scope, id, at - 1, 10)
            .await
            .expect("read")
            .len(),
        1,
        "refused appends log nothing"
    );
}

/// List pages rebuild their tasks too: current state, order and filters after appends.
pub async fn list_pages_show_appended_state(stores: &Stores) {
    let scope = Scope::new("", "listing-appends");
    let mut writers = Vec::new();
    for i in 0..5_i64 {
        let id = format!("la-{i}");
        let mut w = Writer::create(
            stores,
            scope.clone(),
            task(&id, "c", pb::TaskState::Working, 100 + i),
        )
        .await;
        for j in 0..20 {
            w.write(
                vec![chunk_event(&id, "answer", format!("{i}.{j}"), j > 0)],
                false,
            )
            .await;
        }
        writers.push(w);
    }
    // la-2 completes (in an append): it moves to the top and out of WORKING.
    writers[2]
        .write(
            vec![status_event(
                "la-2",
                pb::TaskState::Completed,
                "done",
                1_000,
            )],
            false,
        )
        .await;
    let want: Vec<pb::Task> = [2, 4, 3, 1, 0]
        .iter()
        .map(|&i: &usize| writers[i].record.task.clone())
        .collect();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = stores
            .tasks
            .list(
                &scope,
                &TaskQuery {
                    after: after.clone(),
                    limit: 2,
                    ..Default::default()
                },
            )
            .await
            .expect("list");
        assert_eq!(page.total, 5);
        seen.extend(page.tasks);
        match page.next {
            Some(c) => after = Some(c),
            None => break,
        }
    }
    assert_eq!(
        seen, want,
        "pages of 2 show every task as last appended, in order"
    );
    let working = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                state: Some(pb::TaskState::Working),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(
        working.total, 4,
        "the counters follow an appended state change"
    );
    assert!(working.tasks.iter().all(|t| t.id != "la-2"));
    let completed = stores
        .tasks
        .list(
            &scope,
            &TaskQuery {
                state: Some(pb::TaskState::Completed),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(completed.tasks, [writers[2].record.task.clone()]);
}

/// Leases are renewed per node and reported once they lapse.
pub async fn leases_renew_and_lapse(stores: &Stores) {
    let scope = Scope::new("lease", "owner");
    let leased = |id: &str, node: &str, until_ms: i64| {
        let mut r = TaskRecord::new(task(id, "c", pb::TaskState::Working, 1), 0);
        r.lease = Some(Lease {
            node: node.into(),
            until_ms,
        });
        r
    };
    for (id, node) in [("l1", "node-a"), ("l2", "node-a"), ("l3", "node-b")] {
        stores
            .tasks
            .commit(&scope, &leased(id, node, 1_000), None, &[])
            .await
            .expect("create leased");
    }
    stores
        .tasks
        .commit(
            &scope,
            &TaskRecord::new(task("l4", "c", pb::TaskState::Completed, 1), 0),
            None,
            &[],
        )
        .await
        .expect("create unleased");
    assert_eq!(
        stores
            .tasks
            .renew_leases("node-a", 5_000)
            .await
            .expect("renew"),
        2
    );
    let mut lapsed: Vec<_> = stores
        .tasks
        .lapsed_leases(2_000, 100)
        .await
        .expect("lapsed")
        .into_iter()
        .filter(|(s, _)| s == &scope)
        .map(|(_, id)| id)
        .collect();
    lapsed.sort();
    assert_eq!(lapsed, ["l3"], "only node-b's unrenewed lease lapsed");
    assert_eq!(
        stores
            .tasks
            .get(&scope, "l1")
            .await
            .expect("get")
            .and_then(|r| r.lease)
            .map(|l| l.until_ms),
        Some(5_000)
    );
    let mut all: Vec<_> = stores
        .tasks
        .lapsed_leases(i64::MAX, 100)
        .await
        .expect("lapsed")
        .into_iter()
        .filter(|(s, _)| s == &scope)
        .map(|(_, id)| id)
        .collect();
    all.sort();
    assert_eq!(all, ["l1", "l2", "l3"], "tasks without a lease never lapse");
}

/// put replaces (the generation too), list pages by id, delete is idempotent, scopes never
/// leak; get returns the protocol generation the configuration was put with.
pub async fn push_configs_crud(stores: &Stores) {
    let scope = Scope::new("", "push");
    let cfg = |id: &str, url: &str| pb::TaskPushNotificationConfig {
        id: id.into(),
        task_id: "t".into(),
        url: url.into(),
        ..Default::default()
    };
    for id in ["c", "a", "b"] {
        stores
            .push
            .put(&scope, &cfg(id, "http://one"), Generation::V1)
            .await
            .expect("put");
    }
    stores
        .push
        .put(&scope, &cfg("b", "http://one"), Generation::V03)
        .await
        .expect("put v0.3");
    stores
        .push
        .put(&scope, &cfg("a", "http://two"), Generation::V03)
        .await
        .expect("replace");
    let got = |id: &'static str| {
        let scope = &scope;
        async move {
            stores
                .push
                .get(scope, "t", id)
                .await
                .expect("get")
                .map(|(c, g)| (c.url, g))
        }
    };
    assert_eq!(got("a").await, Some(("http://two".into(), Generation::V03)));
    assert_eq!(got("b").await, Some(("http://one".into(), Generation::V03)));
    assert_eq!(got("c").await, Some(("http://one".into(), Generation::V1)));
    stores
        .push
        .put(&scope, &cfg("b", "http://one"), Generation::V1)
        .await
        .expect("replace through 1.0");
    assert_eq!(got("b").await, Some(("http://one".into(), Generation::V1)));
    assert_eq!(
        stores
            .push
            .get(&Scope::new("", "x"), "t", "a")
            .await
            .expect("get"),
        None
    );
    let (page, more) = stores.push.list(&scope, "t", None, 2).await.expect("list");
    assert_eq!(
        (page.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), more),
        (vec!["a", "b"], true)
    );
    let (page, more) = stores
        .push
        .list(&scope, "t", Some("b"), 2)
        .await
        .expect("list");
    assert_eq!(
        (page.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), more),
        (vec!["c"], false)
    );
    assert!(stores.push.delete(&scope, "t", "a").await.expect("delete"));
    assert!(
        !stores
            .push
            .delete(&scope, "t", "a")
            .await
            .expect("delete again")
    );
}

/// `count`: a task's configurations whatever its state, and the principal's on tasks that have
/// not ended; other principals' are not counted.
pub async fn push_configs_are_counted(stores: &Stores) {
    let scope = Scope::new("", "counted");
    for (id, state) in [
        ("working", pb::TaskState::Working),
        ("waiting", pb::TaskState::InputRequired),
        ("done", pb::TaskState::Completed),
    ] {
        let rec = TaskRecord::new(task(id, "c", state, 1), 1);
        stores
            .tasks
            .commit(&scope, &rec, None, &[ev(id, 1)])
            .await
            .expect("create");
    }
    let put = |scope: Scope, task: &'static str, id: &'static str| async move {
        let config = pb::TaskPushNotificationConfig {
            id: id.into(),
            task_id: task.into(),
            url: "http://one".into(),
            ..Default::default()
        };
        stores
            .push
            .put(&scope, &config, Generation::V1)
            .await
            .expect("put");
    };
    put(scope.clone(), "working", "a").await;
    put(scope.clone(), "working", "b").await;
    put(scope.clone(), "waiting", "a").await;
    put(scope.clone(), "done", "a").await;
    put(scope.clone(), "done", "b").await;
    put(Scope::new("", "someone-else"), "working", "c").await;
    let count = |task: &'static str| {
        let scope = scope.clone();
        async move { stores.push.count(&scope, task).await.expect("count") }
    };
    let working = count("working").await;
    assert_eq!((working.task, working.active), (2, 3));
    let done = count("done").await;
    assert_eq!(
        (done.task, done.active),
        (2, 3),
        "an ended task's are not active"
    );
    let none = count("nothing").await;
    assert_eq!((none.task, none.active), (0, 3));
    stores
        .push
        .delete(&scope, "working", "a")
        .await
        .expect("delete");
    assert_eq!(count("working").await.active, 2);
}

/// The delivery cursor: one node at a time, released or expired claims move on, and only tasks
/// whose log is ahead of their cursor are pending.
pub async fn delivery_cursor_is_claimed_once(stores: &Stores) {
    let scope = Scope::new("", "outbox");
    let far = trident_core::store::now_ms() + 60_000;
    let rec = TaskRecord::new(task("o", "c", pb::TaskState::Working, 1), 3);
    stores
        .tasks
        .commit(&scope, &rec, None, &[ev("o", 1), ev("o", 2), ev("o", 3)])
        .await
        .expect("create");
    assert_eq!(
        stores
            .push
            .claim_delivery(&scope, "o", "node-a", far, 1)
            .await
            .expect("claim"),
        Some(1),
        "a new cursor starts where asked"
    );
    assert_eq!(
        stores
            .push
            .claim_delivery(&scope, "o", "node-b", far, 0)
            .await
            .expect("claim"),
        None,
        "a held claim is not taken"
    );
    assert!(
        stores
            .push
            .delivered(&scope, "o", "node-a", 2, far)
            .await
            .expect("advance")
    );
    assert!(
        !stores
            .push
            .delivered(&scope, "o", "node-b", 3, far)
            .await
            .expect("advance"),
        "a node without the claim cannot move the cursor"
    );
    let pending = |v: Vec<(Scope, String)>| v.into_iter().any(|(s, id)| s == scope && id == "o");
    assert!(
        !pending(
            stores
                .push
                .pending_deliveries(trident_core::store::now_ms(), 100)
                .await
                .expect("pending")
        ),
        "a claimed cursor is not pending"
    );
    stores
        .push
        .release_delivery(&scope, "o", "node-a")
        .await
        .expect("release");
    assert!(
        pending(
            stores
                .push
                .pending_deliveries(trident_core::store::now_ms(), 100)
                .await
                .expect("pending")
        ),
        "a released cursor behind its log is pending"
    );
    assert_eq!(
        stores
            .push
            .claim_delivery(&scope, "o", "node-b", trident_core::store::now_ms() - 1, 0)
            .await
            .expect("claim"),
        Some(2),
        "another node resumes at the cursor"
    );
    assert!(
        pending(
            stores
                .push
                .pending_deliveries(trident_core::store::now_ms(), 100)
                .await
                .expect("pending")
        ),
        "an expired claim is pending"
    );
    assert_eq!(
        stores
            .push
            .claim_delivery(&scope, "o", "node-a", far, 0)
            .await
            .expect("claim"),
        Some(2),
        "an expired claim is taken over"
    );
    assert!(
        stores
            .push
            .delivered(&scope, "o", "node-a", 3, far)
            .await
            .expect("advance")
    );
    stores
        .push
        .release_delivery(&scope, "o", "node-a")
        .await
        .expect("release");
    assert!(
        !pending(
            stores
                .push
                .pending_deliveries(trident_core::store::now_ms(), 100)
                .await
                .expect("pending")
        ),
        "a cursor at the end of its log is not pending"
    );
}
