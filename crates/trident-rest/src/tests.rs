//! The route table against the descriptor and the spec's route list (digest §4.2).

use trident_core::Operation;

use crate::routes::{Bound, Miss, Routes, path_of};

fn table() -> Routes {
    Routes::from_descriptor().expect("route table")
}

/// Every RPC has exactly its primary and `/{tenant}` bindings from the proto (plus the one
/// hand-added POST for SubscribeToTask), with the spec's paths.
#[test]
fn routes_match_the_spec_route_list() {
    let bound = Bound {
        tenant: Some("acme".into()),
        id: Some("ID".into()),
        task_id: Some("TASK".into()),
    };
    let mut got: Vec<(Operation, &str, String)> = table()
        .all()
        .iter()
        .map(|r| (r.op, r.method, path_of(r, &bound)))
        .collect();
    got.sort_by(|a, b| (a.0.name(), a.1, &a.2).cmp(&(b.0.name(), b.1, &b.2)));
    let spec = [
        (Operation::SendMessage, "POST", "/message:send"),
        (Operation::SendStreamingMessage, "POST", "/message:stream"),
        (Operation::GetTask, "GET", "/tasks/ID"),
        (Operation::ListTasks, "GET", "/tasks"),
        (Operation::CancelTask, "POST", "/tasks/ID:cancel"),
        (Operation::SubscribeToTask, "GET", "/tasks/ID:subscribe"),
        (Operation::SubscribeToTask, "POST", "/tasks/ID:subscribe"),
        (
            Operation::CreateTaskPushNotificationConfig,
            "POST",
            "/tasks/TASK/pushNotificationConfigs",
        ),
        (
            Operation::GetTaskPushNotificationConfig,
            "GET",
            "/tasks/TASK/pushNotificationConfigs/ID",
        ),
        (
            Operation::ListTaskPushNotificationConfigs,
            "GET",
            "/tasks/TASK/pushNotificationConfigs",
        ),
        (Operation::GetExtendedAgentCard, "GET", "/extendedAgentCard"),
        (
            Operation::DeleteTaskPushNotificationConfig,
            "DELETE",
            "/tasks/TASK/pushNotificationConfigs/ID",
        ),
    ];
    let mut want: Vec<(Operation, &str, String)> = spec
        .iter()
        .flat_map(|(op, m, p)| [(*op, *m, (*p).to_owned()), (*op, *m, format!("/acme{p}"))])
        .collect();
    want.sort_by(|a, b| (a.0.name(), a.1, &a.2).cmp(&(b.0.name(), b.1, &b.2)));
    assert_eq!(got, want);
    for op in Operation::ALL {
        assert!(
            table().all().iter().any(|r| r.op == op),
            "{} has a route",
            op.name()
        );
    }
}

#[test]
fn matching_prefers_verbs_and_unprefixed_routes() {
    let t = table();
    let (r, b) = t.find("GET", "/tasks/abc:subscribe").expect("subscribe");
    assert_eq!(
        (r.op, b.id.as_deref()),
        (Operation::SubscribeToTask, Some("abc"))
    );
    let (r, b) = t.find("GET", "/tasks/a%3Ab").expect("get");
    assert_eq!(
        (r.op, b.id.as_deref()),
        (Operation::GetTask, Some("a:b")),
        "percent-decoded, no verb"
    );
    let (r, b) = t.find("GET", "/tasks/tasks").expect("get");
    assert_eq!(
        (r.op, b.id.as_deref(), b.tenant),
        (Operation::GetTask, Some("tasks"), None),
        "unprefixed first"
    );
    let (r, b) = t.find("POST", "/acme/tasks/x:cancel").expect("cancel");
    assert_eq!(
        (r.op, b.tenant.as_deref(), b.id.as_deref()),
        (Operation::CancelTask, Some("acme"), Some("x"))
    );
    assert_eq!(
        t.find("DELETE", "/message:send").err(),
        Some(Miss::Method(vec!["POST"])),
        "known path, other method"
    );
    assert_eq!(
        t.find("PUT", "/tasks/x/pushNotificationConfigs/y").err(),
        Some(Miss::Method(vec!["DELETE", "GET"]))
    );
    assert_eq!(t.find("GET", "/nowhere/at/all").err(), Some(Miss::Path));
}
