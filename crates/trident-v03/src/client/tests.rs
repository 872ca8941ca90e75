//! The client direction against the server direction of the same crate: what our v0.3 clients
//! send is read back by our v0.3 server code into the same 1.0 request, and what our server
//! answers is read back by the clients into the same 1.0 answer. The official v0.3 SDK is the
//! ground truth for the forms themselves (tests/it, interop/); these tests pin that the two
//! halves agree with each other.

use proptest::prelude::*;
use serde_json::json;
use trident_core::{A2aError, A2aReply, A2aRequest, CallContext, ErrorKind};
use trident_proto as pb;
use trident_proto::v03;

use super::{Answer, Call, events, history_asked, trim_history};
use crate::jsonrpc;
use crate::rest;
use crate::tests::{event, push_config, send_request, task};

fn cx() -> CallContext {
    CallContext::new()
}

/// The 1.0 request our v0.3 JSON-RPC client's params decode into on our server.
fn via_jsonrpc(req: A2aRequest) -> Result<A2aRequest, A2aError> {
    let call = Call::of(&cx(), req)?;
    let (method, params) = jsonrpc::client_params(&call)?;
    jsonrpc::request(
        method,
        params.to_string().as_bytes(),
        trident_core::JsonLimits::default(),
    )
}

/// The 1.0 request our v0.3 HTTP+JSON client's route, query and body decode into.
fn via_rest(req: A2aRequest) -> Result<A2aRequest, A2aError> {
    let call = Call::of(&cx(), req)?;
    let http = rest::client_request(&call)?;
    let route = rest::match_route(http.method, &http.path)
        .ok_or_else(|| A2aError::internal(format!("no route {} {}", http.method, http.path)))?;
    rest::request(
        &route,
        &http.query,
        http.body.as_deref().unwrap_or("").as_bytes(),
        trident_core::JsonLimits::default(),
    )
}

fn fail(e: A2aError) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn send_requests_reach_our_v03_server_unchanged(r in send_request()) {
        let back = via_jsonrpc(A2aRequest::SendMessage(r.clone())).map_err(fail)?;
        prop_assert_eq!(back, A2aRequest::SendMessage(r.clone()));
        let back = via_rest(A2aRequest::SendStreamingMessage(r.clone())).map_err(fail)?;
        prop_assert_eq!(back, A2aRequest::SendStreamingMessage(r));
    }

    #[test]
    fn tasks_from_our_v03_server_read_back_unchanged(t in task()) {
        let asked = A2aRequest::GetTask(pb::GetTaskRequest { id: "t-1".into(), ..Default::default() });
        let call = Call::of(&cx(), asked).map_err(fail)?;
        let jsonrpc::Reply::Unary(v) = jsonrpc::reply(A2aReply::GetTask(t.clone())).map_err(fail)? else {
            return Err(TestCaseError::fail("not unary"));
        };
        let answer = jsonrpc::client_answer(&call, v).map_err(fail)?;
        let A2aReply::GetTask(back) = call.reply(answer, None).map_err(fail)? else {
            return Err(TestCaseError::fail("not a task"));
        };
        prop_assert_eq!(&back, &t);
        let rest::Reply::Body(body) = rest::reply(A2aReply::GetTask(t.clone())).map_err(fail)? else {
            return Err(TestCaseError::fail("not a body"));
        };
        let answer = rest::client_answer(&call, &body).map_err(fail)?;
        let A2aReply::GetTask(back) = call.reply(answer, None).map_err(fail)? else {
            return Err(TestCaseError::fail("not a task"));
        };
        prop_assert_eq!(back, t);
    }

    #[test]
    fn events_from_our_v03_server_read_back_unchanged(e in event()) {
        let v = jsonrpc::event(&e).map_err(fail)?;
        prop_assert_eq!(crate::ToV1::to_v1(jsonrpc::client_event(v).map_err(fail)?), e.clone());
        let body = rest::event_body(&e).map_err(fail)?;
        let data = String::from_utf8(body).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(crate::ToV1::to_v1(rest::client_event(&data).map_err(fail)?), e);
    }

    #[test]
    fn push_configs_round_trip_through_both_bindings(c in push_config()) {
        let c = pb::TaskPushNotificationConfig { tenant: String::new(), ..c };
        let create = A2aRequest::CreateTaskPushNotificationConfig(c.clone());
        prop_assert_eq!(via_jsonrpc(create.clone()).map_err(fail)?, create.clone());
        prop_assert_eq!(via_rest(create.clone()).map_err(fail)?, create.clone());
        let call = Call::of(&cx(), create).map_err(fail)?;
        let jsonrpc::Reply::Unary(v) =
            jsonrpc::reply(A2aReply::CreateTaskPushNotificationConfig(c.clone())).map_err(fail)?
        else {
            return Err(TestCaseError::fail("not unary"));
        };
        let answer = jsonrpc::client_answer(&call, v).map_err(fail)?;
        let A2aReply::CreateTaskPushNotificationConfig(back) = call.reply(answer, None).map_err(fail)? else {
            return Err(TestCaseError::fail("not a config"));
        };
        prop_assert_eq!(back, c);
    }
}

/// Every other request, over both HTTP bindings, with ids that need escaping in a path.
#[test]
fn task_requests_reach_our_v03_server_unchanged() {
    for id in ["t-1", "a b%c", "ü"] {
        let requests = [
            A2aRequest::GetTask(pb::GetTaskRequest {
                id: id.into(),
                history_length: Some(3),
                ..Default::default()
            }),
            A2aRequest::GetTask(pb::GetTaskRequest {
                id: id.into(),
                ..Default::default()
            }),
            A2aRequest::CancelTask(pb::CancelTaskRequest {
                id: id.into(),
                ..Default::default()
            }),
            A2aRequest::SubscribeToTask(pb::SubscribeToTaskRequest {
                id: id.into(),
                ..Default::default()
            }),
            A2aRequest::GetTaskPushNotificationConfig(pb::GetTaskPushNotificationConfigRequest {
                task_id: id.into(),
                id: "c 1".into(),
                ..Default::default()
            }),
            A2aRequest::DeleteTaskPushNotificationConfig(
                pb::DeleteTaskPushNotificationConfigRequest {
                    task_id: id.into(),
                    id: "c-1".into(),
                    ..Default::default()
                },
            ),
            A2aRequest::ListTaskPushNotificationConfigs(
                pb::ListTaskPushNotificationConfigsRequest {
                    task_id: id.into(),
                    ..Default::default()
                },
            ),
            A2aRequest::GetExtendedAgentCard(pb::GetExtendedAgentCardRequest::default()),
        ];
        for r in requests {
            assert_eq!(via_jsonrpc(r.clone()).expect("JSON-RPC"), r);
            assert_eq!(via_rest(r.clone()).expect("HTTP+JSON"), r);
        }
    }
}

/// What v0.3 cannot express is refused before anything is sent, saying so.
#[test]
fn what_v03_lacks_is_refused_as_unsupported() {
    let list = Call::of(
        &cx(),
        A2aRequest::ListTasks(pb::ListTasksRequest::default()),
    )
    .expect_err("ListTasks");
    assert_eq!(list.kind(), ErrorKind::UnsupportedOperation);
    assert!(
        list.message().contains("v0.3") && list.message().contains("ListTasks"),
        "{list}"
    );
    let tenant = Call::of(
        &cx(),
        A2aRequest::GetTask(pb::GetTaskRequest {
            tenant: "acme".into(),
            id: "t".into(),
            ..Default::default()
        }),
    )
    .expect_err("tenant");
    assert_eq!(tenant.kind(), ErrorKind::UnsupportedOperation);
    let resume = Call::of(
        &cx().with_last_event_id(3),
        A2aRequest::SubscribeToTask(pb::SubscribeToTaskRequest {
            id: "t".into(),
            ..Default::default()
        }),
    )
    .expect_err("resume");
    assert_eq!(resume.kind(), ErrorKind::UnsupportedOperation);
    let page = Call::of(
        &cx(),
        A2aRequest::ListTaskPushNotificationConfigs(pb::ListTaskPushNotificationConfigsRequest {
            task_id: "t".into(),
            page_token: "next".into(),
            ..Default::default()
        }),
    )
    .expect_err("page token");
    assert_eq!(page.kind(), ErrorKind::InvalidParams);
    let slash = Call::of(
        &cx(),
        A2aRequest::CancelTask(pb::CancelTaskRequest {
            id: "a/b".into(),
            ..Default::default()
        }),
    )
    .expect_err("an id v0.3's resource names cannot hold");
    assert_eq!(slash.kind(), ErrorKind::InvalidParams);
}

/// Every error kind survives our v0.3 server's error forms into our v0.3 clients, including
/// the two 1.0-only ones (sent as -32600 with the reason in `data`).
#[test]
fn errors_from_our_v03_server_keep_their_kind() {
    for kind in ErrorKind::ALL {
        let e = A2aError::new(kind, "boom").with_meta("taskId", "t-1");
        let back = jsonrpc::client_error(&crate::error::error_object(&e));
        assert_eq!(back.kind(), kind, "JSON-RPC {kind:?}");
        assert_eq!(back.message(), "boom");
        assert_eq!(
            back.metadata().get("taskId").map(String::as_str),
            Some("t-1")
        );
        let body = crate::error::error_object(&e).to_string();
        let back = rest::client_error(crate::error::http_status(&e), body.as_bytes());
        assert_eq!(back.kind(), kind, "HTTP+JSON {kind:?}");
    }
}

/// The v0.3 Python SDK's HTTP+JSON errors are `{"message": …}` with its own status table.
#[test]
fn python_sdk_rest_errors_are_read_by_status() {
    let cases = [
        (
            404,
            r#"{"message":"Task not found"}"#,
            ErrorKind::TaskNotFound,
        ),
        (404, r#"{"detail":"Not Found"}"#, ErrorKind::MethodNotFound),
        (
            409,
            r#"{"message":"Task cannot be canceled"}"#,
            ErrorKind::TaskNotCancelable,
        ),
        (422, r#"{"message":"bad"}"#, ErrorKind::InvalidParams),
        (
            501,
            r#"{"message":"no push"}"#,
            ErrorKind::UnsupportedOperation,
        ),
        (
            500,
            r#"{"message":"unknown exception"}"#,
            ErrorKind::Internal,
        ),
    ];
    for (status, body, kind) in cases {
        assert_eq!(
            rest::client_error(status, body.as_bytes()).kind(),
            kind,
            "{status} {body}"
        );
    }
}

/// A v0.3 stream ends after its `final` status update, even if the connection stays open.
#[test]
fn a_v03_stream_ends_after_final() {
    use futures::StreamExt;
    let status = |state: v03::TaskState, r#final: bool| v03::StreamResponse {
        payload: Some(v03::stream_response::Payload::StatusUpdate(
            v03::TaskStatusUpdateEvent {
                task_id: "t".into(),
                status: Some(v03::TaskStatus {
                    state: state as i32,
                    ..Default::default()
                }),
                r#final,
                ..Default::default()
            },
        )),
    };
    let items = vec![
        Ok((Some(1), status(v03::TaskState::Working, false))),
        Ok((Some(2), status(v03::TaskState::Completed, true))),
        Ok((Some(3), status(v03::TaskState::Working, false))),
    ];
    let source = futures::stream::iter(items).chain(futures::stream::pending());
    let got: Vec<_> = futures::executor::block_on(events(source).collect());
    assert_eq!(got.len(), 2);
    let Ok(last) = &got[1] else { panic!("{got:?}") };
    assert_eq!(last.seq, Some(2));
}

/// `historyLength: 0` cannot be said to v0.3 (0 means "all"): the client trims.
#[test]
fn history_length_is_applied_by_the_client() {
    let req = A2aRequest::GetTask(pb::GetTaskRequest {
        id: "t".into(),
        history_length: Some(0),
        ..Default::default()
    });
    assert_eq!(history_asked(&req), Some(0));
    let call = Call::of(&cx(), req).expect("call");
    assert_eq!(
        jsonrpc::client_params(&call).expect("params").1,
        json!({"id": "t"})
    );
    let mut t = pb::Task {
        history: vec![pb::Message::default(); 3],
        ..Default::default()
    };
    trim_history(&mut t, Some(1));
    assert_eq!(t.history.len(), 1);
    let answer = Answer::Task(v03::Task {
        history: vec![v03::Message::default(); 3],
        ..Default::default()
    });
    let Ok(A2aReply::GetTask(t)) = call.reply(answer, Some(0)) else {
        panic!("a task")
    };
    assert!(t.history.is_empty());
}

/// A card as the v0.3 Python SDK serves it (JSON-schema form) is read into 1.0: interfaces
/// from `url`/`preferredTransport`/`additionalInterfaces`, schemes and requirements in 1.0's
/// shapes.
#[test]
fn a_v03_sdk_card_is_read_into_1_0() {
    let card = json!({
        "protocolVersion": "0.3.0",
        "name": "py03",
        "description": "a v0.3 agent",
        "url": "http://127.0.0.1:9999/",
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [
            {"url": "http://127.0.0.1:9999/", "transport": "JSONRPC"},
            {"url": "http://127.0.0.1:9999", "transport": "HTTP+JSON"},
            {"url": "127.0.0.1:9998", "transport": "GRPC"}
        ],
        "version": "1.0.0",
        "capabilities": {"streaming": true, "pushNotifications": true},
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
        "security": [{"key": []}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": []}],
        "supportsAuthenticatedExtendedCard": false
    });
    assert!(crate::card::is_v03_only(&card));
    let card = crate::card::from_json(card).expect("read");
    let interfaces: Vec<(&str, &str, &str)> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            (
                i.protocol_binding.as_str(),
                i.url.as_str(),
                i.protocol_version.as_str(),
            )
        })
        .collect();
    assert_eq!(
        interfaces,
        [
            ("JSONRPC", "http://127.0.0.1:9999/", "0.3.0"),
            ("HTTP+JSON", "http://127.0.0.1:9999", "0.3.0"),
            ("GRPC", "127.0.0.1:9998", "0.3.0"),
        ]
    );
    let caps = card.capabilities.expect("capabilities");
    assert_eq!(caps.streaming, Some(true));
    assert_eq!(caps.extended_agent_card, Some(false));
    let Some(pb::security_scheme::Scheme::ApiKeySecurityScheme(key)) =
        card.security_schemes["key"].scheme.clone()
    else {
        panic!("an API key scheme")
    };
    assert_eq!(
        (key.location.as_str(), key.name.as_str()),
        ("header", "X-API-Key")
    );
    assert!(card.security_requirements[0].schemes.contains_key("key"));
}

/// Our own v0.3 card (what `--protocols 0.3` serves) reads back into the card it came from,
/// but for what v0.3 lacks (tenants; interfaces come back marked 0.3).
#[test]
fn our_v03_card_reads_back() {
    use crate::ToV03;
    let card = pb::AgentCard {
        name: "n".into(),
        description: "d".into(),
        version: "1".into(),
        supported_interfaces: vec![
            pb::AgentInterface {
                url: "http://h/".into(),
                protocol_binding: "JSONRPC".into(),
                protocol_version: "1.0".into(),
                tenant: String::new(),
            },
            pb::AgentInterface {
                url: "h:1".into(),
                protocol_binding: "GRPC".into(),
                protocol_version: "1.0".into(),
                tenant: String::new(),
            },
        ],
        capabilities: Some(pb::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extended_agent_card: Some(true),
            extensions: Vec::new(),
        }),
        security_schemes: [("bearer".to_owned(), pb::SecurityScheme::bearer("JWT"))]
            .into_iter()
            .collect(),
        ..Default::default()
    };
    let json = crate::card::json(&card.clone().to_v03()).expect("v0.3 JSON");
    let back = crate::card::from_json(json).expect("read back");
    assert_eq!(back.name, card.name);
    assert_eq!(back.capabilities, card.capabilities);
    assert_eq!(back.security_schemes, card.security_schemes);
    let urls: Vec<_> = back
        .supported_interfaces
        .iter()
        .map(|i| {
            (
                i.url.as_str(),
                i.protocol_binding.as_str(),
                i.protocol_version.as_str(),
            )
        })
        .collect();
    assert_eq!(
        urls,
        [("http://h/", "JSONRPC", "0.3.0"), ("h:1", "GRPC", "0.3.0")]
    );
}

/// The v0.3 Python SDK's gRPC handler names the error type in the status message (its status
/// codes do not tell the kinds apart).
#[test]
fn v03_sdk_grpc_messages_name_the_kind() {
    use crate::error::kind_named_in;
    assert_eq!(
        kind_named_in("TaskNotCancelableError: Task cannot be canceled"),
        Some((ErrorKind::TaskNotCancelable, "Task cannot be canceled"))
    );
    assert_eq!(
        kind_named_in("ContentTypeNotSupportedError: no"),
        Some((ErrorKind::ContentTypeNotSupported, "no"))
    );
    assert_eq!(kind_named_in("Task not found"), None);
    assert_eq!(kind_named_in("SomethingElse: x"), None);
}

/// A push config set without an id (v0.3 allowed it) reaches our server, which names it after
/// the task as v0.3 servers did, on both HTTP bindings.
#[test]
fn a_push_config_without_an_id_is_named_after_its_task() {
    let create = A2aRequest::CreateTaskPushNotificationConfig(pb::TaskPushNotificationConfig {
        task_id: "t-9".into(),
        url: "https://example.com/hook".into(),
        ..Default::default()
    });
    for back in [
        via_jsonrpc(create.clone()).expect("JSON-RPC"),
        via_rest(create.clone()).expect("HTTP+JSON"),
    ] {
        let A2aRequest::CreateTaskPushNotificationConfig(c) = back else {
            panic!("{back:?}")
        };
        assert_eq!((c.task_id.as_str(), c.id.as_str()), ("t-9", "t-9"));
    }
}

/// A negative `historyLength` is refused by the client (v0.3 would read it as "all").
#[test]
fn a_negative_history_length_is_refused() {
    let e = Call::of(
        &cx(),
        A2aRequest::GetTask(pb::GetTaskRequest {
            id: "t".into(),
            history_length: Some(-1),
            ..Default::default()
        }),
    )
    .expect_err("negative");
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    assert_eq!(e.violations()[0].field, "historyLength");
}

/// A resubscription starts with the task read by `tasks/get`, and a task the agent's stream
/// leads with (ours sends one) is not repeated.
#[test]
fn a_resubscription_starts_with_one_snapshot() {
    use futures::StreamExt;
    let task_event = |id: &str| {
        Ok(trident_core::StreamEvent {
            seq: Some(1),
            response: std::sync::Arc::new(pb::StreamResponse {
                payload: Some(pb::stream_response::Payload::Task(pb::Task {
                    id: id.into(),
                    ..Default::default()
                })),
            }),
        })
    };
    let snapshot = || {
        Answer::Task(v03::Task {
            id: "got".into(),
            ..Default::default()
        })
    };
    for (stream, expected) in [(vec![task_event("streamed")], 1), (vec![], 1)] {
        let events = futures::stream::iter(stream).boxed();
        let got: Vec<_> = futures::executor::block_on(
            super::snapshot_first(snapshot(), events)
                .expect("a task")
                .collect(),
        );
        assert_eq!(got.len(), expected);
        let Ok(first) = &got[0] else { panic!() };
        assert!(matches!(
            &first.response.payload,
            Some(pb::stream_response::Payload::Task(t)) if t.id == "got"
        ));
    }
}

/// A stream that opens with an error is that error; a 1.0 call saying another version is
/// refused as a 1.0 agent refuses it.
#[test]
fn stream_errors_and_versions() {
    use futures::StreamExt;
    let failing = futures::stream::iter(vec![Err(A2aError::new(
        ErrorKind::ContentTypeNotSupported,
        "no",
    ))])
    .boxed();
    let Err(e) = futures::executor::block_on(super::first_error(failing)) else {
        panic!("the error")
    };
    assert_eq!(e.kind(), ErrorKind::ContentTypeNotSupported);
    let mut old = cx();
    old.version = Some("0.3".into());
    assert_eq!(
        super::context(&old).expect_err("0.3 on a 1.0 call").kind(),
        ErrorKind::VersionNotSupported
    );
    old.version = Some("1.0".into());
    assert_eq!(
        super::context(&old).expect("1.0").version.as_deref(),
        Some("0.3")
    );
    assert_eq!(
        super::context(&cx()).expect("none").version.as_deref(),
        Some("0.3")
    );
}
