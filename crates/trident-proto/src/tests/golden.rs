//! Exact ProtoJSON output and lossless round trips, from the examples of digest §2.3, §3.2,
//! §3.3, §4.5, §7.2 and Appendix B.
//!
//! Where the digest's example is not in canonical form (a default-valued implicit field written
//! out, `.000` fractional seconds, an empty `StringList` written as `{"list": []}`), the golden
//! string is the canonical output and the verbatim example is checked to parse to the same value.

use std::collections::{BTreeMap, HashMap};

use serde_json::json;

use super::facts::FACTS;
use super::{JAN1, JAN5_10H, JAN5_10H05, golden, object, parse, to_json, ts};
use crate::security_scheme::Scheme;
use crate::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, ApiKeySecurityScheme, Artifact, AuthenticationInfo,
    AuthorizationCodeOAuthFlow, CancelTaskRequest, ClientCredentialsOAuthFlow,
    DeleteTaskPushNotificationConfigRequest, DeviceCodeOAuthFlow, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, HttpAuthSecurityScheme,
    ImplicitOAuthFlow, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    MutualTlsSecurityScheme, OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme, Part,
    PasswordOAuthFlow, SecurityRequirement, SecurityScheme, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, StringList, SubscribeToTaskRequest,
    Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState, TaskStatus,
    TaskStatusUpdateEvent, o_auth_flows, send_message_response, stream_response,
};

/// The first eight bytes of a PNG file, `iVBORw0KGgo=` in base64 (§2.3).
const PNG_MAGIC: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

const GEO: &str = "https://example.com/ext/geo/v1";

fn status(state: TaskState) -> Option<TaskStatus> {
    Some(TaskStatus {
        state: state as i32,
        ..Default::default()
    })
}

fn task(id: &str, context_id: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        context_id: context_id.into(),
        status: status(state),
        ..Default::default()
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|&v| v.to_owned()).collect()
}

/// The task of Appendix B's first response, with the given status timestamp.
fn flight_task(nanos: i32) -> Task {
    let question = Message {
        context_id: "c-3".into(),
        task_id: "t-9".into(),
        ..Message::agent("m-2", vec![Part::text("From where to where?")])
    };
    Task {
        status: Some(TaskStatus {
            state: TaskState::InputRequired as i32,
            message: Some(question),
            timestamp: Some(ts(JAN5_10H, nanos)),
        }),
        ..task("t-9", "c-3", TaskState::Unspecified)
    }
}

const FLIGHT_TASK: &str = r#"{"id": "t-9", "contextId": "c-3",
  "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-05T10:00:00Z",
             "message": {"messageId": "m-2", "contextId": "c-3", "taskId": "t-9", "role": "ROLE_AGENT",
                         "parts": [{"text": "From where to where?"}]}}}"#;

#[test]
fn task_appendix_b() {
    golden(&flight_task(0), FLIGHT_TASK);
    // With milliseconds: exactly three fractional digits, still `Z`.
    golden(
        &flight_task(123_000_000),
        &FLIGHT_TASK.replace("10:00:00Z", "10:00:00.123Z"),
    );
    // The digest writes `.000Z`: same instant, emitted without the (zero) fraction.
    let verbatim = FLIGHT_TASK.replace("10:00:00Z", "10:00:00.000Z");
    assert_eq!(parse::<Task>(&verbatim), flight_task(0));
}

#[test]
fn task_with_every_field() {
    let history = Message {
        context_id: "c1".into(),
        task_id: "t1".into(),
        extensions: strings(&[GEO]),
        reference_task_ids: strings(&["t0"]),
        metadata: Some(object(
            json!({GEO: {"lat": 48.85, "lon": 2.35, "zoom": 12}}),
        )),
        ..Message::user("m1", vec![Part::text("hi")])
    };
    let artifact = Artifact {
        name: "answer".into(),
        description: "the answer".into(),
        metadata: Some(object(json!({"score": 0.5}))),
        extensions: strings(&[GEO]),
        ..Artifact::new("a1", vec![Part::text("hello")])
    };
    let value = Task {
        id: "t1".into(),
        context_id: "c1".into(),
        status: Some(TaskStatus {
            state: TaskState::Completed as i32,
            message: None,
            timestamp: Some(ts(JAN5_10H05, 123_000_000)),
        }),
        artifacts: vec![artifact],
        history: vec![history],
        metadata: Some(object(
            json!({"priority": 1, "tags": ["a", "b"], "nested": {"ok": true, "none": null}}),
        )),
        generation: 0,
    };
    golden(
        &value,
        r#"{"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-05T10:05:00.123Z"},
            "artifacts": [{"artifactId": "a1", "name": "answer", "description": "the answer",
                           "parts": [{"text": "hello"}], "metadata": {"score": 0.5},
                           "extensions": ["https://example.com/ext/geo/v1"]}],
            "history": [{"messageId": "m1", "contextId": "c1", "taskId": "t1", "role": "ROLE_USER",
                         "parts": [{"text": "hi"}],
                         "metadata": {"https://example.com/ext/geo/v1": {"lat": 48.85, "lon": 2.35, "zoom": 12}},
                         "extensions": ["https://example.com/ext/geo/v1"], "referenceTaskIds": ["t0"]}],
            "metadata": {"priority": 1, "tags": ["a", "b"], "nested": {"ok": true, "none": null}}}"#,
    );
}

/// Every Part kind of §2.3, alone and inside a Message.
#[test]
fn message_with_each_part_kind() {
    let cases = [
        (
            Part {
                media_type: "text/plain".into(),
                ..Part::text("hello")
            },
            r#"{"text": "hello", "mediaType": "text/plain"}"#,
        ),
        (
            Part {
                filename: "a.png".into(),
                ..Part::raw(PNG_MAGIC, "image/png")
            },
            r#"{"raw": "iVBORw0KGgo=", "filename": "a.png", "mediaType": "image/png"}"#,
        ),
        (
            Part {
                filename: "report.pdf".into(),
                media_type: "application/pdf".into(),
                ..Part::url("https://files.example.com/report.pdf")
            },
            r#"{"url": "https://files.example.com/report.pdf", "filename": "report.pdf", "mediaType": "application/pdf"}"#,
        ),
        (
            Part {
                media_type: "application/json".into(),
                ..Part::data(json!({"rows": [1, 2, 3]}))
            },
            r#"{"data": {"rows": [1, 2, 3]}, "mediaType": "application/json"}"#,
        ),
        // `data` holds any JSON value, not only objects.
        (
            Part::data(json!([1, -2, 2.5, "x", true, null])),
            r#"{"data": [1, -2, 2.5, "x", true, null]}"#,
        ),
        (
            Part::data(json!("just a string")),
            r#"{"data": "just a string"}"#,
        ),
        (Part::data(json!(42)), r#"{"data": 42}"#),
        (
            Part {
                metadata: Some(object(json!({"source": "ocr", "page": 3}))),
                ..Part::text("p3")
            },
            r#"{"text": "p3", "metadata": {"source": "ocr", "page": 3}}"#,
        ),
    ];
    for (part, json) in cases {
        golden(&part, json);
        let message = Message::user("m1", vec![part]);
        golden(
            &message,
            &format!(r#"{{"messageId": "m1", "role": "ROLE_USER", "parts": [{json}]}}"#),
        );
    }
}

#[test]
fn stream_response_variants() {
    use stream_response::Payload;

    let chunk = |text: &str| Some(Artifact::new("a1", vec![Part::text(text)]));
    let cases = [
        // §2.3
        (
            Payload::Task(task("t1", "c1", TaskState::Completed)),
            r#"{"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}"#,
        ),
        (
            Payload::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t1".into(),
                context_id: "c1".into(),
                status: status(TaskState::Working),
                metadata: None,
                generation: 0,
            }),
            r#"{"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}"#,
        ),
        (
            Payload::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: "t1".into(),
                context_id: "c1".into(),
                artifact: chunk("chunk"),
                append: true,
                ..Default::default()
            }),
            r#"{"artifactUpdate": {"taskId": "t1", "contextId": "c1", "artifact": {"artifactId": "a1", "parts": [{"text": "chunk"}]}, "append": true}}"#,
        ),
        // §3.3
        (
            Payload::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: "t1".into(),
                context_id: "c1".into(),
                artifact: chunk("..."),
                last_chunk: true,
                ..Default::default()
            }),
            r#"{"artifactUpdate": {"taskId": "t1", "contextId": "c1", "artifact": {"artifactId": "a1", "parts": [{"text": "..."}]}, "lastChunk": true}}"#,
        ),
        // §4.5
        (
            Payload::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: "task-uuid".into(),
                context_id: "context-uuid".into(),
                artifact: chunk("# Report\n\n"),
                metadata: Some(object(json!({"seq": 2}))),
                ..Default::default()
            }),
            r##"{"artifactUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "artifact": {"artifactId": "a1", "parts": [{"text": "# Report\n\n"}]}, "metadata": {"seq": 2}}}"##,
        ),
        // Appendix B webhook body.
        (
            Payload::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t-9".into(),
                context_id: "c-3".into(),
                status: Some(TaskStatus {
                    state: TaskState::Completed as i32,
                    message: None,
                    timestamp: Some(ts(JAN5_10H05, 0)),
                }),
                metadata: None,
                generation: 0,
            }),
            r#"{"statusUpdate": {"taskId": "t-9", "contextId": "c-3", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-05T10:05:00Z"}}}"#,
        ),
        (
            Payload::Message(Message {
                context_id: "c1".into(),
                ..Message::agent("m-9", vec![Part::text("done")])
            }),
            r#"{"message": {"messageId": "m-9", "contextId": "c1", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}}"#,
        ),
    ];
    for (payload, json) in cases {
        golden(&StreamResponse::new(payload), json);
    }
    // No payload: an empty object (rejecting it is the server's job).
    golden(&StreamResponse::default(), "{}");
}

/// The sample card of §7.2.
fn sample_card() -> AgentCard {
    let interface = |url: &str, binding: &str, tenant: &str| AgentInterface {
        url: url.into(),
        protocol_binding: binding.into(),
        tenant: tenant.into(),
        protocol_version: "1.0".into(),
    };
    let scheme = |scheme: Scheme| SecurityScheme {
        scheme: Some(scheme),
    };
    let requirement = |name: &str, scopes: &[&str]| SecurityRequirement {
        schemes: HashMap::from([(
            name.to_owned(),
            StringList {
                list: strings(scopes),
            },
        )]),
    };
    let client_credentials = ClientCredentialsOAuthFlow {
        token_url: "https://auth.example.com/token".into(),
        scopes: HashMap::from([("a2a".to_owned(), "use the agent".to_owned())]),
        ..Default::default()
    };
    AgentCard {
        name: "Example Agent".into(),
        description: "Answers questions.".into(),
        supported_interfaces: vec![
            interface("https://agent.example.com/a2a/jsonrpc", "JSONRPC", ""),
            interface("https://agent.example.com/a2a/rest", "HTTP+JSON", "acme"),
            interface("agent.example.com:443", "GRPC", ""),
        ],
        provider: Some(AgentProvider {
            url: "https://example.com".into(),
            organization: "Example Inc.".into(),
        }),
        version: "1.0.0".into(),
        capabilities: Some(AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: Some(false),
            extensions: vec![AgentExtension {
                uri: GEO.into(),
                description: "geo".into(),
                ..Default::default()
            }],
        }),
        security_schemes: HashMap::from([
            (
                "bearer".to_owned(),
                scheme(Scheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
                    scheme: "Bearer".into(),
                    bearer_format: "JWT".into(),
                    ..Default::default()
                })),
            ),
            (
                "oidc".to_owned(),
                scheme(Scheme::OpenIdConnectSecurityScheme(
                    OpenIdConnectSecurityScheme {
                        open_id_connect_url:
                            "https://accounts.example.com/.well-known/openid-configuration".into(),
                        ..Default::default()
                    },
                )),
            ),
            (
                "oauth".to_owned(),
                scheme(Scheme::Oauth2SecurityScheme(OAuth2SecurityScheme {
                    flows: Some(OAuthFlows {
                        flow: Some(o_auth_flows::Flow::ClientCredentials(client_credentials)),
                    }),
                    ..Default::default()
                })),
            ),
            (
                "key".to_owned(),
                scheme(Scheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
                    location: "header".into(),
                    name: "X-API-Key".into(),
                    ..Default::default()
                })),
            ),
            (
                "mtls".to_owned(),
                scheme(Scheme::MtlsSecurityScheme(
                    MutualTlsSecurityScheme::default(),
                )),
            ),
        ]),
        security_requirements: vec![requirement("bearer", &[]), requirement("oauth", &["a2a"])],
        default_input_modes: strings(&["text/plain", "application/json"]),
        default_output_modes: strings(&["text/plain"]),
        skills: vec![AgentSkill {
            id: "qa".into(),
            name: "Q&A".into(),
            description: "Answers questions".into(),
            tags: strings(&["qa"]),
            examples: strings(&["What is A2A?"]),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// §7.2 verbatim.
const SAMPLE_CARD: &str = r#"{
  "name": "Example Agent",
  "description": "Answers questions.",
  "supportedInterfaces": [
    {"url": "https://agent.example.com/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "https://agent.example.com/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "tenant": "acme"},
    {"url": "agent.example.com:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
  ],
  "provider": {"organization": "Example Inc.", "url": "https://example.com"},
  "version": "1.0.0",
  "capabilities": {"streaming": true, "pushNotifications": true, "extendedAgentCard": false,
                   "extensions": [{"uri": "https://example.com/ext/geo/v1", "description": "geo", "required": false}]},
  "securitySchemes": {
    "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
    "oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://accounts.example.com/.well-known/openid-configuration"}},
    "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://auth.example.com/token", "scopes": {"a2a": "use the agent"}}}}},
    "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
    "mtls": {"mtlsSecurityScheme": {}}
  },
  "securityRequirements": [{"schemes": {"bearer": {"list": []}}}, {"schemes": {"oauth": {"list": ["a2a"]}}}],
  "defaultInputModes": ["text/plain", "application/json"],
  "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "qa", "name": "Q&A", "description": "Answers questions", "tags": ["qa"], "examples": ["What is A2A?"]}]
}"#;

#[test]
fn agent_card_sample() {
    // Canonical output differs from the sample in two default-valued implicit fields, which
    // ProtoJSON omits: `AgentExtension.required: false` and the empty `StringList.list`.
    let canonical = SAMPLE_CARD
        .replace(r#", "required": false"#, "")
        .replace(r#"{"bearer": {"list": []}}"#, r#"{"bearer": {}}"#);
    assert_ne!(canonical, SAMPLE_CARD);
    golden(&sample_card(), &canonical);
    assert_eq!(parse::<AgentCard>(SAMPLE_CARD), sample_card());
}

#[test]
#[allow(deprecated)] // the implicit and password flows
fn agent_card_remaining_fields() {
    let scopes = || HashMap::from([("read".to_owned(), "read things".to_owned())]);
    let flows = [
        (
            o_auth_flows::Flow::AuthorizationCode(AuthorizationCodeOAuthFlow {
                authorization_url: "https://auth.example.com/authorize".into(),
                token_url: "https://auth.example.com/token".into(),
                refresh_url: "https://auth.example.com/refresh".into(),
                scopes: scopes(),
                pkce_required: true,
            }),
            r#"{"authorizationCode": {"authorizationUrl": "https://auth.example.com/authorize", "tokenUrl": "https://auth.example.com/token", "refreshUrl": "https://auth.example.com/refresh", "scopes": {"read": "read things"}, "pkceRequired": true}}"#,
        ),
        (
            o_auth_flows::Flow::DeviceCode(DeviceCodeOAuthFlow {
                device_authorization_url: "https://auth.example.com/device".into(),
                token_url: "https://auth.example.com/token".into(),
                refresh_url: String::new(),
                scopes: scopes(),
            }),
            r#"{"deviceCode": {"deviceAuthorizationUrl": "https://auth.example.com/device", "tokenUrl": "https://auth.example.com/token", "scopes": {"read": "read things"}}}"#,
        ),
        (
            o_auth_flows::Flow::Implicit(ImplicitOAuthFlow {
                authorization_url: "https://auth.example.com/authorize".into(),
                refresh_url: String::new(),
                scopes: scopes(),
            }),
            r#"{"implicit": {"authorizationUrl": "https://auth.example.com/authorize", "scopes": {"read": "read things"}}}"#,
        ),
        (
            o_auth_flows::Flow::Password(PasswordOAuthFlow {
                token_url: "https://auth.example.com/token".into(),
                refresh_url: String::new(),
                scopes: HashMap::new(),
            }),
            r#"{"password": {"tokenUrl": "https://auth.example.com/token"}}"#,
        ),
    ];
    for (flow, json) in flows {
        golden(&OAuthFlows { flow: Some(flow) }, json);
    }
    golden(
        &SecurityScheme {
            scheme: Some(Scheme::Oauth2SecurityScheme(OAuth2SecurityScheme {
                description: "OAuth".into(),
                flows: None,
                oauth2_metadata_url:
                    "https://auth.example.com/.well-known/oauth-authorization-server".into(),
            })),
        },
        r#"{"oauth2SecurityScheme": {"description": "OAuth", "oauth2MetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server"}}"#,
    );
    golden(
        &SecurityScheme {
            scheme: Some(Scheme::MtlsSecurityScheme(MutualTlsSecurityScheme {
                description: "client certificates".into(),
            })),
        },
        r#"{"mtlsSecurityScheme": {"description": "client certificates"}}"#,
    );

    // Explicit presence: `documentationUrl`/`iconUrl` set to "" and the capabilities set to false
    // are emitted; REQUIRED implicit fields are emitted even empty; the skill's optional lists and
    // signature header round-trip.
    let card = AgentCard {
        documentation_url: Some(String::new()),
        icon_url: Some("https://agent.example.com/icon.png".into()),
        capabilities: Some(AgentCapabilities {
            streaming: Some(false),
            push_notifications: None,
            extended_agent_card: Some(false),
            extensions: vec![AgentExtension {
                uri: GEO.into(),
                required: true,
                params: Some(object(json!({"precision": 6}))),
                ..Default::default()
            }],
        }),
        skills: vec![AgentSkill {
            id: "s".into(),
            input_modes: strings(&["image/png"]),
            output_modes: strings(&["text/plain"]),
            security_requirements: vec![SecurityRequirement {
                schemes: HashMap::from([(
                    "oauth".to_owned(),
                    StringList {
                        list: strings(&["read"]),
                    },
                )]),
            }],
            ..Default::default()
        }],
        signatures: vec![AgentCardSignature {
            protected: "eyJhbGciOiJFUzI1NiJ9".into(),
            signature: "c2ln".into(),
            header: Some(object(json!({"kid": "k1"}))),
        }],
        ..Default::default()
    };
    golden(
        &card,
        r#"{"name": "", "description": "", "supportedInterfaces": [], "version": "",
            "documentationUrl": "", "iconUrl": "https://agent.example.com/icon.png",
            "capabilities": {"streaming": false, "extendedAgentCard": false,
                             "extensions": [{"uri": "https://example.com/ext/geo/v1", "required": true, "params": {"precision": 6}}]},
            "defaultInputModes": [], "defaultOutputModes": [],
            "skills": [{"id": "s", "name": "", "description": "", "tags": [],
                        "inputModes": ["image/png"], "outputModes": ["text/plain"],
                        "securityRequirements": [{"schemes": {"oauth": {"list": ["read"]}}}]}],
            "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2ln", "header": {"kid": "k1"}}]}"#,
    );
}

#[test]
fn list_tasks_response() {
    // The last page of Appendix B: every field is REQUIRED, so all are emitted at their default.
    let last_page = ListTasksResponse {
        tasks: vec![],
        next_page_token: String::new(),
        page_size: 20,
        total_size: 0,
    };
    golden(
        &last_page,
        r#"{"tasks":[],"nextPageToken":"","pageSize":20,"totalSize":0}"#,
    );
    golden(
        &ListTasksResponse::default(),
        r#"{"tasks":[],"nextPageToken":"","pageSize":0,"totalSize":0}"#,
    );

    // A page without artifacts: `artifacts` is entirely absent from the listed task (§2.4).
    let page = ListTasksResponse {
        tasks: vec![task("t1", "c-3", TaskState::Working)],
        next_page_token: "cursor-2".into(),
        page_size: 1,
        total_size: 3,
    };
    golden(
        &page,
        r#"{"tasks": [{"id": "t1", "contextId": "c-3", "status": {"state": "TASK_STATE_WORKING"}}],
            "nextPageToken": "cursor-2", "pageSize": 1, "totalSize": 3}"#,
    );
}

#[test]
fn send_message_request() {
    // §3.2: `returnImmediately: false` is a default-valued implicit field, omitted on output.
    let value = SendMessageRequest {
        message: Some(Message::user("m1", vec![Part::text("hi")])),
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: strings(&["text/plain"]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let verbatim = r#"{"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"acceptedOutputModes": ["text/plain"], "returnImmediately": false}}"#;
    golden(
        &value,
        &verbatim.replace(r#", "returnImmediately": false"#, ""),
    );
    assert_eq!(parse::<SendMessageRequest>(verbatim), value);

    // Appendix B follow-up: `historyLength: 0` has explicit presence and is kept.
    let follow_up = SendMessageRequest {
        message: Some(Message {
            task_id: "t-9".into(),
            context_id: "c-3".into(),
            ..Message::user("m-3", vec![Part::text("SFO to JFK")])
        }),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            history_length: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    };
    golden(
        &follow_up,
        r#"{"message": {"messageId": "m-3", "taskId": "t-9", "contextId": "c-3", "role": "ROLE_USER",
                        "parts": [{"text": "SFO to JFK"}]},
            "configuration": {"returnImmediately": true, "historyLength": 0}}"#,
    );

    // Every field, including the inline push config.
    let full = SendMessageRequest {
        tenant: "acme".into(),
        message: Some(Message::user("m-4", vec![Part::text("go")])),
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: strings(&["text/plain", "application/json"]),
            task_push_notification_config: Some(TaskPushNotificationConfig {
                url: "https://client.example.com/hook".into(),
                token: "opaque-123".into(),
                ..Default::default()
            }),
            history_length: Some(5),
            return_immediately: false,
            if_generation_match: None,
        }),
        metadata: Some(object(json!({"trace": "abc"}))),
    };
    golden(
        &full,
        r#"{"tenant": "acme",
            "message": {"messageId": "m-4", "role": "ROLE_USER", "parts": [{"text": "go"}]},
            "configuration": {"acceptedOutputModes": ["text/plain", "application/json"],
                              "taskPushNotificationConfig": {"url": "https://client.example.com/hook", "token": "opaque-123"},
                              "historyLength": 5},
            "metadata": {"trace": "abc"}}"#,
    );
}

#[test]
fn send_message_response() {
    use send_message_response::Payload;

    // §3.2 result.
    let value = SendMessageResponse {
        payload: Some(Payload::Task(Task {
            artifacts: vec![Artifact::new("a1", vec![Part::text("hello")])],
            ..task("t1", "c1", TaskState::Completed)
        })),
    };
    golden(
        &value,
        r#"{"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"},
                     "artifacts": [{"artifactId": "a1", "parts": [{"text": "hello"}]}]}}"#,
    );
    golden(
        &SendMessageResponse {
            payload: Some(Payload::Task(flight_task(0))),
        },
        &format!(r#"{{"task": {FLIGHT_TASK}}}"#),
    );

    let value = SendMessageResponse {
        payload: Some(Payload::Message(Message::agent(
            "m-5",
            vec![Part::text("hello back")],
        ))),
    };
    golden(
        &value,
        r#"{"message": {"messageId": "m-5", "role": "ROLE_AGENT", "parts": [{"text": "hello back"}]}}"#,
    );
}

#[test]
fn task_push_notification_config() {
    // Appendix B: the create request body, then the response.
    let authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: "hook-secret".into(),
    });
    let request = TaskPushNotificationConfig {
        url: "https://client.example.com/hook".into(),
        token: "opaque-123".into(),
        authentication: authentication.clone(),
        ..Default::default()
    };
    golden(
        &request,
        r#"{"url": "https://client.example.com/hook", "token": "opaque-123",
            "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}}"#,
    );
    let response = TaskPushNotificationConfig {
        id: "0190f3c2-...".into(),
        task_id: "t-9".into(),
        ..request
    };
    golden(
        &response,
        r#"{"id": "0190f3c2-...", "taskId": "t-9", "url": "https://client.example.com/hook", "token": "opaque-123",
            "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}}"#,
    );
    // `url` is REQUIRED, so it is emitted even empty; `tenant` is not.
    golden(&TaskPushNotificationConfig::default(), r#"{"url": ""}"#);

    let list = ListTaskPushNotificationConfigsResponse {
        configs: vec![response],
        next_page_token: String::new(),
    };
    let json = to_json(&list);
    assert_eq!(json["configs"][0]["taskId"], "t-9");
    assert!(
        json.get("nextPageToken").is_none(),
        "not REQUIRED, omitted when empty: {json}"
    );
}

#[test]
fn request_messages() {
    golden(
        &GetTaskRequest {
            id: "t1".into(),
            history_length: Some(10),
            ..Default::default()
        },
        r#"{"id": "t1", "historyLength": 10}"#,
    );
    // Appendix B ListTasks params.
    golden(
        &ListTasksRequest {
            context_id: "c-3".into(),
            status: TaskState::Working as i32,
            page_size: Some(20),
            status_timestamp_after: Some(ts(JAN1, 0)),
            include_artifacts: Some(true),
            ..Default::default()
        },
        r#"{"contextId": "c-3", "status": "TASK_STATE_WORKING", "pageSize": 20,
            "statusTimestampAfter": "2026-01-01T00:00:00Z", "includeArtifacts": true}"#,
    );
    golden(
        &CancelTaskRequest {
            tenant: "acme".into(),
            id: "t1".into(),
            metadata: Some(object(json!({"reason": "user"}))),
        },
        r#"{"tenant": "acme", "id": "t1", "metadata": {"reason": "user"}}"#,
    );
    golden(
        &SubscribeToTaskRequest {
            id: "t1".into(),
            ..Default::default()
        },
        r#"{"id": "t1"}"#,
    );
    golden(
        &GetTaskPushNotificationConfigRequest {
            task_id: "t1".into(),
            id: "p1".into(),
            ..Default::default()
        },
        r#"{"taskId": "t1", "id": "p1"}"#,
    );
    golden(
        &ListTaskPushNotificationConfigsRequest {
            tenant: "acme".into(),
            task_id: "t1".into(),
            page_size: 10,
            page_token: "next".into(),
        },
        r#"{"tenant": "acme", "taskId": "t1", "pageSize": 10, "pageToken": "next"}"#,
    );
    golden(
        &DeleteTaskPushNotificationConfigRequest {
            task_id: "t1".into(),
            id: "p1".into(),
            ..Default::default()
        },
        r#"{"taskId": "t1", "id": "p1"}"#,
    );
    golden(&GetExtendedAgentCardRequest::default(), "{}");
}

/// Serializes the default value of every message, by proto name.
macro_rules! defaults {
    ($($name:literal => $ty:ty),* $(,)?) => {
        BTreeMap::from([$(($name, to_json(&<$ty>::default()))),*])
    };
}

/// With every field at its default, exactly the REQUIRED fields with implicit presence are
/// emitted (scalars, enums, repeated, maps), each at its default; message-typed REQUIRED fields
/// are unset and absent. Data-driven from the digest table.
#[test]
fn defaults_emit_exactly_the_required_implicit_fields() {
    let defaults = defaults! {
        "Task" => Task, "TaskStatus" => TaskStatus, "Part" => Part, "Message" => Message,
        "Artifact" => Artifact, "TaskStatusUpdateEvent" => TaskStatusUpdateEvent,
        "TaskArtifactUpdateEvent" => TaskArtifactUpdateEvent,
        "TaskPushNotificationConfig" => TaskPushNotificationConfig,
        "AuthenticationInfo" => AuthenticationInfo, "AgentCard" => AgentCard,
        "AgentInterface" => AgentInterface, "AgentProvider" => AgentProvider,
        "AgentCapabilities" => AgentCapabilities, "AgentExtension" => AgentExtension,
        "AgentSkill" => AgentSkill, "AgentCardSignature" => AgentCardSignature,
        "SecurityScheme" => SecurityScheme, "APIKeySecurityScheme" => ApiKeySecurityScheme,
        "HTTPAuthSecurityScheme" => HttpAuthSecurityScheme,
        "OAuth2SecurityScheme" => OAuth2SecurityScheme,
        "OpenIdConnectSecurityScheme" => OpenIdConnectSecurityScheme,
        "MutualTlsSecurityScheme" => MutualTlsSecurityScheme, "OAuthFlows" => OAuthFlows,
        "AuthorizationCodeOAuthFlow" => AuthorizationCodeOAuthFlow,
        "ClientCredentialsOAuthFlow" => ClientCredentialsOAuthFlow,
        "ImplicitOAuthFlow" => ImplicitOAuthFlow, "PasswordOAuthFlow" => PasswordOAuthFlow,
        "DeviceCodeOAuthFlow" => DeviceCodeOAuthFlow, "StringList" => StringList,
        "SecurityRequirement" => SecurityRequirement, "SendMessageRequest" => SendMessageRequest,
        "SendMessageConfiguration" => SendMessageConfiguration,
        "SendMessageResponse" => SendMessageResponse, "StreamResponse" => StreamResponse,
        "GetTaskRequest" => GetTaskRequest, "ListTasksRequest" => ListTasksRequest,
        "ListTasksResponse" => ListTasksResponse, "CancelTaskRequest" => CancelTaskRequest,
        "SubscribeToTaskRequest" => SubscribeToTaskRequest,
        "GetTaskPushNotificationConfigRequest" => GetTaskPushNotificationConfigRequest,
        "ListTaskPushNotificationConfigsRequest" => ListTaskPushNotificationConfigsRequest,
        "ListTaskPushNotificationConfigsResponse" => ListTaskPushNotificationConfigsResponse,
        "DeleteTaskPushNotificationConfigRequest" => DeleteTaskPushNotificationConfigRequest,
        "GetExtendedAgentCardRequest" => GetExtendedAgentCardRequest,
    };
    assert_eq!(defaults.len(), 44);

    let mut expected: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> = defaults
        .keys()
        .map(|&name| (name, serde_json::Map::new()))
        .collect();
    for &(message, _, _, ty, json_name, label, _, required) in &FACTS {
        let default = match (label, ty) {
            ("repeated", _) => json!([]),
            ("map", _) => json!({}),
            ("singular", "string") => json!(""),
            ("singular", "int32") => json!(0),
            ("singular", "bool") => json!(false),
            ("singular", "TaskState") => json!("TASK_STATE_UNSPECIFIED"),
            ("singular", "Role") => json!("ROLE_UNSPECIFIED"),
            _ => continue, // message-typed, explicit presence or oneof: absent when unset
        };
        if required {
            expected
                .get_mut(message)
                .expect("known message")
                .insert(json_name.to_owned(), default);
        }
    }
    for (name, json) in &defaults {
        assert_eq!(
            json,
            &serde_json::Value::Object(expected[name].clone()),
            "default {name}"
        );
    }
}
