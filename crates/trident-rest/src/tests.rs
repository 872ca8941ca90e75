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
    // A `:verb` path is the verb route's, whatever the method: not GetTask of `x:cancel`.
    assert_eq!(
        t.find("GET", "/tasks/x:cancel").err(),
        Some(Miss::Method(vec!["POST"]))
    );
    assert_eq!(
        t.find("DELETE", "/acme/tasks/x:subscribe").err(),
        Some(Miss::Method(vec!["GET", "POST"]))
    );
    let (r, b) = t
        .find("GET", "/tasks/x%3Acancel")
        .expect("an escaped colon is the id's");
    assert_eq!(
        (r.op, b.id.as_deref()),
        (Operation::GetTask, Some("x:cancel"))
    );
}

/// A peer's answers the client must read right: `201 Created` and `204 No Content` are
/// successes (the JS SDK answers 201 to a push-config create), a bare 404 with no A2A error body
/// is "no such route" (MethodNotFound), and only a 404 that says TASK_NOT_FOUND is TaskNotFound.
#[tokio::test]
async fn the_client_reads_2xx_as_success_and_a_bare_404_as_no_such_route() {
    use axum::http::StatusCode;
    use axum::routing::{delete, get, post};
    use trident_core::{A2aService, CallContext, ErrorKind};
    use trident_proto as pb;

    let config = serde_json::json!({"id": "c", "taskId": "t", "url": "http://127.0.0.1:1/hook"});
    let app = axum::Router::new()
        .route(
            "/a2a/tasks/t/pushNotificationConfigs",
            post(move || async move { (StatusCode::CREATED, axum::Json(config)) }),
        )
        .route(
            "/a2a/tasks/t/pushNotificationConfigs/c",
            delete(|| async { StatusCode::NO_CONTENT }),
        )
        .route(
            "/a2a/tasks/gone",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(crate::error_body(&trident_core::A2aError::new(
                        ErrorKind::TaskNotFound,
                        "no task gone",
                    ))),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = crate::RestClient::new(&format!("http://{addr}/a2a")).expect("client");
    let cx = CallContext::new();

    let created = client
        .create_task_push_notification_config(
            &cx,
            pb::TaskPushNotificationConfig {
                task_id: "t".into(),
                url: "http://127.0.0.1:1/hook".into(),
                ..Default::default()
            },
        )
        .await
        .expect("201 Created is a success");
    assert_eq!((created.id.as_str(), created.task_id.as_str()), ("c", "t"));
    client
        .delete_task_push_notification_config(
            &cx,
            pb::DeleteTaskPushNotificationConfigRequest {
                task_id: "t".into(),
                id: "c".into(),
                ..Default::default()
            },
        )
        .await
        .expect("204 No Content is a success");

    let get = |id: &str| {
        client.get_task(
            &cx,
            pb::GetTaskRequest {
                id: id.into(),
                ..Default::default()
            },
        )
    };
    let e = get("gone").await.expect_err("TaskNotFound");
    assert_eq!(e.kind(), ErrorKind::TaskNotFound, "{e}");
    // axum's fallback: a 404 with an empty body, as any web server answers an unknown path.
    let e = get("elsewhere").await.expect_err("no route");
    assert_eq!(e.kind(), ErrorKind::MethodNotFound, "{e}");
    assert!(e.message().contains("no such route"), "{e}");
    server.abort();
}

/// Error bodies without ErrorInfo: a bare 404 is no route, an AIP-193 `UNIMPLEMENTED` 404 too,
/// an AIP-193 `NOT_FOUND` stays TaskNotFound (a peer that forgot its ErrorInfo), and other
/// statuses keep their most likely kind.
#[test]
fn error_bodies_without_error_info_are_read_by_status() {
    use trident_core::ErrorKind;

    use crate::decode_error;
    let aip = |code: u16, status: &str| {
        serde_json::json!({"error": {"code": code, "status": status, "message": "m"}}).to_string()
    };
    let cases = [
        (404, "Not Found".to_owned(), ErrorKind::MethodNotFound),
        (404, String::new(), ErrorKind::MethodNotFound),
        (404, aip(404, "UNIMPLEMENTED"), ErrorKind::MethodNotFound),
        (404, aip(404, "NOT_FOUND"), ErrorKind::TaskNotFound),
        (400, "bad".to_owned(), ErrorKind::InvalidParams),
        (503, aip(503, "UNAVAILABLE"), ErrorKind::Unavailable),
    ];
    for (status, body, kind) in cases {
        assert_eq!(
            decode_error(status, body.as_bytes()).kind(),
            kind,
            "{status} {body}"
        );
    }
}
