//! The contract every store implementation must pass, written once and run against the
//! in-memory store here and against SQLite and PostgreSQL in `trident-store`.
//!
//! Each check panics with a message naming the broken rule. Call [`run`] with fresh, empty
//! stores.

use std::sync::Arc;

use trident_proto as pb;
use trident_proto::wkt::Timestamp;

use super::{ListCursor, LoggedEvent, Scope, StoreError, Stores, TaskQuery, TaskRecord};

/// Runs every contract check.
pub async fn run(stores: &Stores) {
    tasks_are_scoped_and_versioned(stores).await;
    list_orders_filters_and_pages(stores).await;
    event_log_is_ordered_and_gapless(stores).await;
    push_configs_crud(stores).await;
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
    let rec = TaskRecord {
        task: task("task-a", "ctx", pb::TaskState::Submitted, 1),
        last_seq: 1,
    };
    stores.tasks.create(&alice, &rec).await.expect("create");
    assert_eq!(
        stores.tasks.create(&alice, &rec).await,
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
    stores
        .tasks
        .update(&alice, &next, 1)
        .await
        .expect("update at the expected version");
    assert_eq!(
        stores.tasks.update(&alice, &next, 1).await,
        Err(StoreError::Conflict),
        "stale version must conflict"
    );
    assert_eq!(
        stores.tasks.update(&bob, &next, 2).await,
        Err(StoreError::NotFound),
        "update in another scope"
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
        let rec = TaskRecord {
            task: task(id, ctx, state, ts),
            last_seq: 1,
        };
        stores.tasks.create(&scope, &rec).await.expect("create");
    }
    stores
        .tasks
        .create(
            &foreign,
            &TaskRecord {
                task: task("z", "c1", pb::TaskState::Working, 50),
                last_seq: 1,
            },
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

/// Sequence numbers start at 1, continue without gaps, and read back in order from any point.
pub async fn event_log_is_ordered_and_gapless(stores: &Stores) {
    let scope = Scope::new("", "log");
    let ev = |seq| LoggedEvent {
        seq,
        event: Arc::new(pb::StreamResponse::new(
            pb::stream_response::Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                status: Some(pb::TaskStatus::now(pb::TaskState::Working, None)),
                metadata: None,
            }),
        )),
    };
    stores
        .events
        .append(&scope, "t", &[ev(1), ev(2)])
        .await
        .expect("append 1..2");
    assert_eq!(
        stores.events.append(&scope, "t", &[ev(2)]).await,
        Err(StoreError::Conflict),
        "a taken seq must conflict"
    );
    assert_eq!(
        stores.events.append(&scope, "t", &[ev(4)]).await,
        Err(StoreError::Conflict),
        "a gap must conflict"
    );
    stores
        .events
        .append(&scope, "t", &[ev(3)])
        .await
        .expect("append 3");
    let seqs = |v: Vec<LoggedEvent>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
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
    assert!(
        stores
            .events
            .read(&Scope::new("", "other"), "t", 0, 10)
            .await
            .expect("read")
            .is_empty(),
        "logs are scoped"
    );
}

/// put replaces, list pages by id, delete is idempotent, scopes never leak.
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
            .put(&scope, &cfg(id, "http://one"))
            .await
            .expect("put");
    }
    stores
        .push
        .put(&scope, &cfg("a", "http://two"))
        .await
        .expect("replace");
    assert_eq!(
        stores
            .push
            .get(&scope, "t", "a")
            .await
            .expect("get")
            .map(|c| c.url),
        Some("http://two".into())
    );
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
