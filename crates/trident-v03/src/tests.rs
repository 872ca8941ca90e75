use proptest::prelude::*;
use serde_json::json;
use trident_core::{A2aError, A2aRequest, ErrorKind, JsonLimits};
use trident_proto as pb;
use trident_proto::{v03, wkt};

use crate::convert::{ToV1, ToV03, TryToV1};
use crate::json::{Shape, decode, encode};
use crate::jsonrpc::{Method, request};
use crate::version::Protocols;

fn id() -> impl Strategy<Value = String> {
    "[a-z0-9-]{1,12}"
}

fn text() -> impl Strategy<Value = String> {
    ".{0,16}"
}

fn metadata() -> impl Strategy<Value = Option<wkt::Struct>> {
    proptest::option::of(
        proptest::collection::btree_map(
            "[a-z]{1,6}",
            prop_oneof![
                text().prop_map(serde_json::Value::from),
                any::<bool>().prop_map(serde_json::Value::from),
                (-1000i32..1000).prop_map(serde_json::Value::from),
            ],
            0..3,
        )
        .prop_map(|m| wkt::Struct::from_json(m.into_iter().collect())),
    )
}

/// Parts v0.3 can express: text (no media type or filename), files by bytes or URL (with
/// media type and filename), objects as data.
fn part() -> impl Strategy<Value = pb::Part> {
    use pb::part::Content;
    let content = prop_oneof![
        text().prop_map(|t| (Content::Text(t), String::new(), String::new())),
        (proptest::collection::vec(any::<u8>(), 0..8), text(), text()).prop_map(|(b, m, f)| (
            Content::Raw(b),
            m,
            f
        )),
        (text(), text(), text()).prop_map(|(u, m, f)| (Content::Url(u), m, f)),
        metadata().prop_map(|s| {
            let s = s.unwrap_or_default();
            (
                Content::Data(wkt::Value(pbjson_types::Value {
                    kind: Some(pbjson_types::value::Kind::StructValue(s.0)),
                })),
                String::new(),
                String::new(),
            )
        }),
    ];
    (content, metadata()).prop_map(|((content, media_type, filename), metadata)| pb::Part {
        content: Some(content),
        metadata,
        filename,
        media_type,
    })
}

fn message() -> impl Strategy<Value = pb::Message> {
    (
        id(),
        id(),
        id(),
        1i32..=2,
        proptest::collection::vec(part(), 0..3),
        metadata(),
        proptest::collection::vec(id(), 0..2),
        proptest::collection::vec(id(), 0..2),
    )
        .prop_map(
            |(message_id, context_id, task_id, role, parts, metadata, extensions, refs)| {
                pb::Message {
                    message_id,
                    context_id,
                    task_id,
                    role,
                    parts,
                    metadata,
                    extensions,
                    reference_task_ids: refs,
                }
            },
        )
}

fn timestamp() -> impl Strategy<Value = Option<wkt::Timestamp>> {
    proptest::option::of(
        (0i64..4_000_000_000, 0i32..1_000_000_000).prop_map(|(s, n)| {
            wkt::Timestamp(pbjson_types::Timestamp {
                seconds: s,
                nanos: n,
            })
        }),
    )
}

fn status() -> impl Strategy<Value = pb::TaskStatus> {
    (1i32..=8, proptest::option::of(message()), timestamp()).prop_map(
        |(state, message, timestamp)| pb::TaskStatus {
            state,
            message,
            timestamp,
        },
    )
}

fn artifact() -> impl Strategy<Value = pb::Artifact> {
    (
        id(),
        text(),
        text(),
        proptest::collection::vec(part(), 0..3),
        metadata(),
        proptest::collection::vec(id(), 0..2),
    )
        .prop_map(
            |(artifact_id, name, description, parts, metadata, extensions)| pb::Artifact {
                artifact_id,
                name,
                description,
                parts,
                metadata,
                extensions,
            },
        )
}

pub(crate) fn task() -> impl Strategy<Value = pb::Task> {
    (
        id(),
        id(),
        status(),
        proptest::collection::vec(artifact(), 0..2),
        proptest::collection::vec(message(), 0..2),
        metadata(),
    )
        .prop_map(
            |(id, context_id, status, artifacts, history, metadata)| pb::Task {
                id,
                context_id,
                status: Some(status),
                artifacts,
                history,
                metadata,
                generation: 0,
            },
        )
}

pub(crate) fn event() -> impl Strategy<Value = pb::StreamResponse> {
    use pb::stream_response::Payload;
    prop_oneof![
        task().prop_map(Payload::Task),
        message().prop_map(Payload::Message),
        (id(), id(), status(), metadata()).prop_map(|(task_id, context_id, s, metadata)| {
            Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: Some(s),
                metadata,
                generation: 0,
            })
        }),
        (
            id(),
            id(),
            artifact(),
            any::<bool>(),
            any::<bool>(),
            metadata()
        )
            .prop_map(|(task_id, context_id, a, append, last_chunk, metadata)| {
                Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
                    task_id,
                    context_id,
                    artifact: Some(a),
                    append,
                    last_chunk,
                    metadata,
                    generation: 0,
                })
            }),
    ]
    .prop_map(|p| pb::StreamResponse { payload: Some(p) })
}

pub(crate) fn push_config() -> impl Strategy<Value = pb::TaskPushNotificationConfig> {
    (
        id(),
        id(),
        text(),
        text(),
        proptest::option::of((id(), text())),
    )
        .prop_map(
            |(id, task_id, url, token, auth)| pb::TaskPushNotificationConfig {
                tenant: String::new(),
                id,
                task_id,
                url,
                token,
                authentication: auth.map(|(scheme, credentials)| pb::AuthenticationInfo {
                    scheme,
                    credentials,
                }),
            },
        )
}

pub(crate) fn send_request() -> impl Strategy<Value = pb::SendMessageRequest> {
    (
        message(),
        proptest::collection::vec(id(), 0..2),
        proptest::option::of(push_config()),
        proptest::option::of(1i32..100),
        any::<bool>(),
        metadata(),
    )
        .prop_map(|(message, modes, push, history_length, ri, metadata)| {
            pb::SendMessageRequest {
                tenant: String::new(),
                message: Some(message),
                configuration: Some(pb::SendMessageConfiguration {
                    accepted_output_modes: modes,
                    // A config inside a send request has no task yet.
                    task_push_notification_config: push.map(|p| pb::TaskPushNotificationConfig {
                        task_id: String::new(),
                        ..p
                    }),
                    history_length,
                    return_immediately: ri,
                    if_generation_match: None,
                }),
                metadata,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// 1.0 → 0.3 → 1.0 keeps everything v0.3 can express.
    #[test]
    fn task_round_trips(t in task()) {
        prop_assert_eq!(t.clone().to_v03().to_v1(), t);
    }

    #[test]
    fn event_round_trips(e in event()) {
        prop_assert_eq!(e.clone().to_v03().to_v1(), e);
    }

    #[test]
    fn push_config_round_trips(c in push_config()) {
        prop_assert_eq!(c.clone().to_v03().to_v1(), c);
    }

    #[test]
    fn send_request_round_trips(r in send_request()) {
        prop_assert_eq!(r.clone().to_v03().try_to_v1().ok(), Some(r));
    }

    /// And through v0.3's JSON-RPC JSON: 1.0 → 0.3 → JSON-RPC JSON → 0.3 → 1.0.
    #[test]
    fn event_round_trips_through_jsonrpc_json(e in event()) {
        let json = encode(Shape::Event, &e.clone().to_v03()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: v03::StreamResponse = decode(Shape::Event, json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back.to_v1(), e);
    }

    #[test]
    fn send_request_round_trips_through_jsonrpc_json(r in send_request()) {
        let json = encode(Shape::SendParams, &r.clone().to_v03()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: v03::SendMessageRequest = decode(Shape::SendParams, json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back.try_to_v1().ok(), Some(r));
    }

    #[test]
    fn push_config_round_trips_through_jsonrpc_json(c in push_config()) {
        let json = encode(Shape::TaskPushConfig, &c.clone().to_v03()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: v03::TaskPushNotificationConfig = decode(Shape::TaskPushConfig, json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back.to_v1(), c);
    }
}

/// What the v0.3 Python client sends for `message/send` (a2a-sdk 0.3.26, pydantic dump).
#[test]
fn reads_a_v03_message_send() {
    let params = json!({
        "message": {"kind": "message", "messageId": "m-1", "role": "user",
                    "parts": [{"kind": "text", "text": "hi"},
                              {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png"}},
                              {"kind": "data", "data": {"a": 1}}],
                    "referenceTaskIds": ["t-0"]},
        "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 2,
                          "pushNotificationConfig": {"url": "https://hook", "token": "tok",
                              "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}
    });
    let req = request(
        Method::MessageSend,
        params.to_string().as_bytes(),
        JsonLimits::default(),
    )
    .expect("valid");
    let A2aRequest::SendMessage(r) = req else {
        panic!("not SendMessage: {req:?}")
    };
    let m = r.message.expect("valid");
    assert_eq!(m.role, pb::Role::User as i32);
    assert_eq!(m.reference_task_ids, ["t-0"]);
    assert_eq!(m.parts.len(), 3);
    assert_eq!(m.parts[1].media_type, "image/png");
    assert_eq!(m.parts[1].filename, "y.png");
    assert!(
        matches!(&m.parts[1].content, Some(pb::part::Content::Url(u)) if u == "https://x/y.png")
    );
    let c = r.configuration.expect("valid");
    // No `blocking`: v0.3 servers block.
    assert!(!c.return_immediately);
    assert_eq!(c.history_length, Some(2));
    let push = c.task_push_notification_config.expect("valid");
    assert_eq!(push.url, "https://hook");
    assert_eq!(push.authentication.expect("valid").scheme, "Bearer");
}

#[test]
fn writes_v03_task_and_events() {
    let task = pb::Task {
        id: "t".into(),
        context_id: "c".into(),
        status: Some(pb::TaskStatus {
            state: pb::TaskState::InputRequired as i32,
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = encode(Shape::Task, &task.clone().to_v03()).expect("valid");
    assert_eq!(
        v,
        json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "input-required"}})
    );
    let update = pb::StreamResponse {
        payload: Some(pb::stream_response::Payload::StatusUpdate(
            pb::TaskStatusUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                status: Some(pb::TaskStatus {
                    state: pb::TaskState::Canceled as i32,
                    ..Default::default()
                }),
                metadata: None,
                generation: 0,
            },
        )),
    };
    let v = crate::jsonrpc::event(&update).expect("valid");
    assert_eq!(
        v,
        json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
               "status": {"state": "canceled"}})
    );
}

#[test]
fn refuses_malformed_v03_params() {
    for (method, params) in [
        (Method::MessageSend, json!({})),
        (
            Method::MessageSend,
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
        ),
        (
            Method::MessageSend,
            json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {}}]}}),
        ),
        (Method::TasksGet, json!({"id": 3})),
        (Method::TasksGet, json!({"id": "t", "historyLength": -1})),
        (Method::TasksGet, json!({"id": "a/b"})),
        (Method::PushConfigDelete, json!({"id": "t"})),
        (Method::PushConfigSet, json!({"taskId": "t"})),
    ] {
        let e = request(method, params.to_string().as_bytes(), JsonLimits::default())
            .expect_err("must fail");
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidParams,
            "{method:?} {params}: {e}"
        );
    }
}

#[test]
fn v03_error_codes_come_from_the_one_table() {
    for kind in ErrorKind::ALL {
        let code = crate::error::jsonrpc_code(kind);
        match kind {
            ErrorKind::ExtensionSupportRequired | ErrorKind::VersionNotSupported => {
                assert_eq!(code, -32600)
            }
            _ => assert_eq!(code, kind.wire().jsonrpc),
        }
    }
    let e = A2aError::task_not_found("t-1");
    let obj = crate::error::error_object(&e);
    assert_eq!(obj["code"], -32001);
    assert_eq!(obj["data"]["reason"], "TASK_NOT_FOUND");
}

#[test]
fn v03_call_with_a2a_version_1_is_refused() {
    let mut cx = trident_core::CallContext::new();
    cx.version = Some("1.0".into());
    let e = crate::version::admit_v03(&mut cx, "message/send").expect_err("must fail");
    assert_eq!(e.kind(), ErrorKind::VersionNotSupported);
    assert!(e.message().contains("v0.3"), "{e}");
    for v in [None, Some("0.3"), Some("0.3.0")] {
        let mut cx = trident_core::CallContext::new();
        cx.version = v.map(str::to_owned);
        crate::version::admit_v03(&mut cx, "message/send").expect("valid");
        assert_eq!(cx.version.as_deref(), Some("1.0"));
    }
}

#[test]
fn protocols_parse() {
    assert_eq!(
        "1.0,0.3".parse::<Protocols>().expect("valid"),
        Protocols::ALL
    );
    assert_eq!(
        "1.0".parse::<Protocols>().expect("valid"),
        Protocols::V1_ONLY
    );
    assert_eq!(
        "0.3".parse::<Protocols>().expect("valid"),
        Protocols::V03_ONLY
    );
    assert_eq!(Protocols::V03_ONLY.to_string(), "0.3");
    assert!("0.2".parse::<Protocols>().is_err());
    assert!("".parse::<Protocols>().is_err());
    assert_eq!(Protocols::ALL.to_string(), "1.0,0.3");
    let preview = "1.0,0.3,1.1-preview".parse::<Protocols>().expect("valid");
    assert_eq!(preview, Protocols::ALL.with_v1_1_preview());
    assert_eq!(preview.to_string(), "1.0,0.3,1.1-preview");
    let alone = "0.3,1.1-preview"
        .parse::<Protocols>()
        .expect_err("1.1 needs 1.0");
    assert!(alone.to_string().contains("list 1.0 too"), "{alone}");
}

#[test]
fn combined_card_serves_both_generations() {
    let mut card = trident_core::default_card("echo", "echoes");
    let iface = |url: &str, binding: &str, v: &str| pb::AgentInterface {
        url: url.into(),
        protocol_binding: binding.into(),
        tenant: String::new(),
        protocol_version: v.into(),
    };
    card.supported_interfaces = vec![
        iface("http://h/", "JSONRPC", "1.0"),
        iface("http://h", "HTTP+JSON", "1.0"),
        iface("http://h/", "JSONRPC", "0.3"),
        iface("http://h", "HTTP+JSON", "0.3"),
        iface("h:80", "GRPC", "0.3"),
    ];
    card.security_schemes.insert(
        "key".into(),
        pb::SecurityScheme {
            scheme: Some(pb::security_scheme::Scheme::ApiKeySecurityScheme(
                pb::ApiKeySecurityScheme {
                    description: String::new(),
                    location: "header".into(),
                    name: "X-Key".into(),
                },
            )),
        },
    );
    let v1 = serde_json::to_value(&card).expect("valid");
    let both = crate::card::combined_json(&card, v1).expect("valid");
    assert_eq!(both["protocolVersion"], "0.3.0");
    assert_eq!(both["url"], "http://h/");
    assert_eq!(both["preferredTransport"], "JSONRPC");
    assert_eq!(
        both["additionalInterfaces"]
            .as_array()
            .expect("valid")
            .len(),
        3
    );
    assert_eq!(both["securitySchemes"]["key"]["type"], "apiKey");
    assert_eq!(both["securitySchemes"]["key"]["in"], "header");
    // 1.0 still reads its own card out of it.
    let back: pb::AgentCard = serde_json::from_value(both).expect("valid");
    assert_eq!(back, card);
}

/// A service whose only answer is a push-config list of `total` configurations in pages of
/// `page`, continuing after the id in the page token; `repeat` makes every token the same.
struct Pages {
    total: usize,
    page: usize,
    repeat: bool,
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl trident_core::AroundCall for Pages {
    async fn call(
        &self,
        _cx: &trident_core::CallContext,
        req: A2aRequest,
    ) -> Result<trident_core::A2aReply, A2aError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let A2aRequest::ListTaskPushNotificationConfigs(req) = req else {
            return Err(A2aError::internal("only lists here"));
        };
        assert_eq!(req.page_size, 0, "the service's default page size");
        let start = if req.page_token.is_empty() {
            0
        } else {
            req.page_token.parse::<usize>().expect("our token") + 1
        };
        let end = (start + self.page).min(self.total);
        let configs = (start..end)
            .map(|i| pb::TaskPushNotificationConfig {
                id: i.to_string(),
                task_id: req.task_id.clone(),
                url: format!("https://hook.example.com/{i}"),
                ..Default::default()
            })
            .collect();
        let next_page_token = match (end < self.total, self.repeat) {
            (false, _) => String::new(),
            (true, true) => "0".to_owned(),
            (true, false) => (end - 1).to_string(),
        };
        Ok(trident_core::A2aReply::ListTaskPushNotificationConfigs(
            pb::ListTaskPushNotificationConfigsResponse {
                configs,
                next_page_token,
            },
        ))
    }
}

fn pages(total: usize, page: usize, repeat: bool) -> Pages {
    Pages {
        total,
        page,
        repeat,
        calls: Default::default(),
    }
}

#[tokio::test]
async fn a_v03_list_gathers_every_page() {
    let cx = trident_core::CallContext::new();
    let v03_list = |size: i32| {
        A2aRequest::ListTaskPushNotificationConfigs(
            v03::ListTaskPushNotificationConfigRequest {
                parent: "tasks/t".into(),
                page_size: size,
                page_token: String::new(),
            }
            .try_to_v1()
            .expect("request"),
        )
    };
    for (total, page) in [(0, 3), (1, 3), (3, 3), (7, 3), (250, 100)] {
        let svc = pages(total, page, false);
        // A page size sent by a v0.3 gRPC client does not cut the list.
        let reply = crate::call::call(&svc, &cx, v03_list(2))
            .await
            .expect("list");
        let trident_core::A2aReply::ListTaskPushNotificationConfigs(list) = reply else {
            panic!("a list");
        };
        let ids: Vec<String> = list.configs.iter().map(|c| c.id.clone()).collect();
        let want: Vec<String> = (0..total).map(|i| i.to_string()).collect();
        assert_eq!(ids, want, "{total} in pages of {page}");
        assert_eq!(list.next_page_token, "");
        assert_eq!(
            svc.calls.load(std::sync::atomic::Ordering::SeqCst),
            total.div_ceil(page).max(1),
            "one call per page"
        );
    }
    // Other requests are one call, unchanged.
    let svc = pages(1, 1, false);
    let get = A2aRequest::GetTask(pb::GetTaskRequest {
        id: "t".into(),
        ..Default::default()
    });
    let e = crate::call::call(&svc, &cx, get)
        .await
        .expect_err("not a list");
    assert_eq!(e.message(), "only lists here");
}

#[tokio::test]
async fn a_v03_list_refuses_a_service_that_pages_forever() {
    let cx = trident_core::CallContext::new();
    let req = pb::ListTaskPushNotificationConfigsRequest {
        task_id: "t".into(),
        ..Default::default()
    };
    let e = crate::call::list_push_configs(&pages(10, 2, true), &cx, req.clone())
        .await
        .expect_err("a repeated token");
    assert_eq!(e.kind(), ErrorKind::Internal);
    assert!(e.message().contains("repeated a page token"), "{e}");
    let many = pages(crate::call::MAX_PAGES + 1, 1, false);
    let e = crate::call::list_push_configs(&many, &cx, req)
        .await
        .expect_err("too many pages");
    assert!(e.message().contains("pages"), "{e}");
    assert_eq!(
        many.calls.load(std::sync::atomic::Ordering::SeqCst),
        crate::call::MAX_PAGES
    );
}
