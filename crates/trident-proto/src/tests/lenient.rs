//! Inputs a ProtoJSON parser must accept (digest §2.1–§2.5), and what they parse to.

use serde_json::json;

use super::{JAN5_10H, parse, to_json, ts};
use crate::wkt::Value;
use crate::{
    AgentCard, ClientCredentialsOAuthFlow, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    Message, Part, Role, SendMessageConfiguration, StreamResponse, Task, TaskState, TaskStatus,
    part, stream_response,
};

#[test]
fn snake_case_keys() {
    let message: Message = parse(
        r#"{"message_id": "m", "context_id": "c", "task_id": "t", "role": "ROLE_USER",
            "parts": [{"text": "x", "media_type": "text/plain"}], "reference_task_ids": ["t0"]}"#,
    );
    assert_eq!(message.message_id, "m");
    assert_eq!(message.context_id, "c");
    assert_eq!(message.task_id, "t");
    assert_eq!(message.parts[0].media_type, "text/plain");
    assert_eq!(message.reference_task_ids, ["t0"]);
    // Output is camelCase only.
    assert_eq!(to_json(&message)["messageId"], "m");
    assert!(to_json(&message).get("message_id").is_none());

    let event: StreamResponse = parse(
        r#"{"status_update": {"task_id": "t1", "context_id": "c1", "status": {"state": "TASK_STATE_WORKING"}}}"#,
    );
    let Some(stream_response::Payload::StatusUpdate(update)) = event.payload else {
        panic!("status_update parses as the statusUpdate member");
    };
    assert_eq!(
        (update.task_id.as_str(), update.context_id.as_str()),
        ("t1", "c1")
    );

    let request: ListTasksRequest = parse(
        r#"{"page_size": 5, "history_length": 1, "include_artifacts": false, "status_timestamp_after": "2026-01-05T10:00:00Z"}"#,
    );
    assert_eq!(request.page_size, Some(5));
    assert_eq!(request.history_length, Some(1));
    assert_eq!(request.include_artifacts, Some(false));
    assert_eq!(request.status_timestamp_after, Some(ts(JAN5_10H, 0)));
}

#[test]
fn unknown_fields_are_ignored() {
    // v0.3-style `kind` discriminators and future fields, at every level.
    let message: Message = parse(
        r#"{"kind": "message", "messageId": "m", "role": "ROLE_USER", "future": {"a": [1, {"b": null}]},
            "parts": [{"kind": "text", "text": "x", "extra": 1}]}"#,
    );
    assert_eq!(message, Message::user("m", vec![Part::text("x")]));
    let task: Task = parse(
        r#"{"id": "t", "status": {"state": "TASK_STATE_WORKING", "final": true}, "kind": "task"}"#,
    );
    assert_eq!(task.state(), TaskState::Working);
}

#[test]
fn enum_numbers_are_accepted() {
    let status: TaskStatus = parse(r#"{"state": 2}"#);
    assert_eq!(status.state, TaskState::Working as i32);
    // ... and re-emitted as names.
    assert_eq!(to_json(&status), json!({"state": "TASK_STATE_WORKING"}));

    let message: Message = parse(r#"{"messageId": "m", "role": 1, "parts": []}"#);
    assert_eq!(message.role, Role::User as i32);
    let request: ListTasksRequest = parse(r#"{"status": 8}"#);
    assert_eq!(request.status, TaskState::AuthRequired as i32);

    // Unknown names are rejected.
    assert!(serde_json::from_str::<TaskStatus>(r#"{"state": "WORKING"}"#).is_err());
    assert!(serde_json::from_str::<TaskStatus>(r#"{"state": "working"}"#).is_err());
}

#[test]
fn null_means_unset() {
    // The brief's example: repeated, string, map-like (Struct) and message fields.
    let message: Message = parse(
        r#"{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}],
            "extensions": null, "contextId": null, "metadata": null, "taskId": null, "referenceTaskIds": null}"#,
    );
    assert_eq!(message, Message::user("m", vec![Part::text("x")]));

    // Enum, message, repeated, timestamp, int32 and bool fields, implicit and explicit presence.
    let task: Task = parse(
        r#"{"id": "t", "status": null, "artifacts": null, "history": null, "metadata": null}"#,
    );
    assert_eq!(
        task,
        Task {
            id: "t".into(),
            ..Default::default()
        }
    );
    let status: TaskStatus = parse(r#"{"state": null, "message": null, "timestamp": null}"#);
    assert_eq!(status, TaskStatus::default());
    let request: ListTasksRequest = parse(
        r#"{"tenant": null, "contextId": null, "status": null, "pageSize": null, "pageToken": null,
            "historyLength": null, "statusTimestampAfter": null, "includeArtifacts": null}"#,
    );
    assert_eq!(request, ListTasksRequest::default());
    let response: ListTasksResponse =
        parse(r#"{"tasks": null, "nextPageToken": null, "pageSize": null, "totalSize": null}"#);
    assert_eq!(response, ListTasksResponse::default());
    let config: SendMessageConfiguration = parse(
        r#"{"acceptedOutputModes": null, "taskPushNotificationConfig": null, "historyLength": null, "returnImmediately": null}"#,
    );
    assert_eq!(config, SendMessageConfiguration::default());

    // Maps and oneof members.
    let flow: ClientCredentialsOAuthFlow = parse(r#"{"tokenUrl": "u", "scopes": null}"#);
    assert!(flow.scopes.is_empty());
    let card: AgentCard = parse(
        r#"{"name": "n", "securitySchemes": null, "capabilities": {"streaming": null, "extensions": null},
            "documentationUrl": null, "skills": null}"#,
    );
    assert!(card.security_schemes.is_empty());
    assert_eq!(card.capabilities.as_ref().and_then(|c| c.streaming), None);
    assert_eq!(card.documentation_url, None);
    let part: Part = parse(r#"{"text": null, "mediaType": "text/plain"}"#);
    assert_eq!(part.content, None);
    let part: Part = parse(r#"{"raw": null}"#);
    assert_eq!(part.content, None);
    let event: StreamResponse = parse(r#"{"task": null}"#);
    assert_eq!(event.payload, None);
}

#[test]
fn data_null_is_a_set_null_value() {
    // §2.3: `Part.data` is a google.protobuf.Value, so `"data": null` sets `data` to JSON null
    // (unlike every other field, where null means unset).
    let part: Part = parse(r#"{"data": null}"#);
    assert_eq!(
        part.content,
        Some(part::Content::Data(Value::from_json(
            serde_json::Value::Null
        )))
    );
    assert_eq!(to_json(&part), json!({"data": null}));
    // Struct members holding null stay null too.
    let part: Part = parse(r#"{"data": {"a": null}}"#);
    assert_eq!(to_json(&part), json!({"data": {"a": null}}));
}

#[test]
fn timestamps_with_offsets_are_normalized_to_z() {
    let cases = [
        (
            "2026-01-05T12:00:00+02:00",
            ts(JAN5_10H, 0),
            "2026-01-05T10:00:00Z",
        ),
        (
            "2026-01-05T05:30:00-04:30",
            ts(JAN5_10H, 0),
            "2026-01-05T10:00:00Z",
        ),
        (
            "2026-01-05T10:00:00+00:00",
            ts(JAN5_10H, 0),
            "2026-01-05T10:00:00Z",
        ),
        (
            "2026-01-05T10:00:00.000Z",
            ts(JAN5_10H, 0),
            "2026-01-05T10:00:00Z",
        ),
        (
            "2026-01-05T12:00:00.5+02:00",
            ts(JAN5_10H, 500_000_000),
            "2026-01-05T10:00:00.500Z",
        ),
        (
            "2026-01-05T10:00:00.123456Z",
            ts(JAN5_10H, 123_456_000),
            "2026-01-05T10:00:00.123456Z",
        ),
        (
            "2026-01-05T10:00:00.000000001Z",
            ts(JAN5_10H, 1),
            "2026-01-05T10:00:00.000000001Z",
        ),
    ];
    for (input, instant, output) in cases {
        let status: TaskStatus = parse(&format!(r#"{{"timestamp": "{input}"}}"#));
        assert_eq!(status.timestamp, Some(instant), "{input}");
        assert_eq!(
            to_json(&status),
            json!({"state": "TASK_STATE_UNSPECIFIED", "timestamp": output}),
            "{input}"
        );
    }
    assert!(serde_json::from_str::<TaskStatus>(r#"{"timestamp": "2026-01-05 10:00"}"#).is_err());
    assert!(serde_json::from_str::<TaskStatus>(r#"{"timestamp": 1767607200}"#).is_err());
}

#[test]
fn raw_bytes_in_either_base64_alphabet() {
    const BYTES: [u8; 3] = [0xfb, 0xff, 0xbf]; // "+/+/" standard, "-_-_" URL-safe
    for input in ["+/+/", "-_-_"] {
        let part: Part = parse(&format!(r#"{{"raw": "{input}"}}"#));
        assert_eq!(
            part.content,
            Some(part::Content::Raw(BYTES.to_vec())),
            "{input}"
        );
        assert_eq!(
            to_json(&part),
            json!({"raw": "+/+/"}),
            "emitted in the standard alphabet"
        );
    }
    // Padding is optional on input and always emitted.
    for input in ["iVBORw0KGgo=", "iVBORw0KGgo"] {
        let part: Part = parse(&format!(r#"{{"raw": "{input}"}}"#));
        assert_eq!(to_json(&part), json!({"raw": "iVBORw0KGgo="}), "{input}");
    }
    assert!(serde_json::from_str::<Part>(r#"{"raw": "not base64!"}"#).is_err());
}

#[test]
fn explicit_presence_round_trips() {
    for (json, expected) in [
        (r#"{"historyLength": 0}"#, Some(0)),
        (r#"{"historyLength": 3}"#, Some(3)),
        ("{}", None),
    ] {
        let config: SendMessageConfiguration = parse(json);
        assert_eq!(config.history_length, expected, "{json}");
        assert_eq!(to_json(&config), parse::<serde_json::Value>(json), "{json}");
        let request: GetTaskRequest = parse(json);
        assert_eq!(request.history_length, expected, "{json}");
        let mut output = parse::<serde_json::Value>(json);
        output["id"] = json!(""); // REQUIRED, always emitted
        assert_eq!(to_json(&request), output, "{json}");
    }
    for (json, expected) in [
        (r#"{"includeArtifacts": false}"#, Some(false)),
        (r#"{"includeArtifacts": true}"#, Some(true)),
        ("{}", None),
    ] {
        let request: ListTasksRequest = parse(json);
        assert_eq!(request.include_artifacts, expected, "{json}");
        assert_eq!(
            to_json(&request),
            parse::<serde_json::Value>(json),
            "{json}"
        );
    }
    let request: ListTasksRequest = parse(r#"{"pageSize": 0}"#);
    assert_eq!(request.page_size, Some(0));
    assert_eq!(to_json(&request), json!({"pageSize": 0}));
}

#[test]
fn numbers_as_strings_are_accepted() {
    // ProtoJSON accepts int32 as a decimal string (also in query-derived JSON).
    let request: ListTasksRequest = parse(r#"{"pageSize": "20", "historyLength": "0"}"#);
    assert_eq!(
        (request.page_size, request.history_length),
        (Some(20), Some(0))
    );
    let response: ListTasksResponse = parse(r#"{"pageSize": "7", "totalSize": "-1"}"#);
    assert_eq!((response.page_size, response.total_size), (7, -1));
}

#[test]
fn integral_numbers_in_data_stay_integers() {
    let part: Part =
        parse(r#"{"data": {"rows": [1, 2, 3], "ratio": 0.25, "neg": -7, "one": 1.0}}"#);
    // A `1.0` on input is the same number as `1` (Value holds an f64): emitted as `1`.
    assert_eq!(
        to_json(&part),
        json!({"data": {"rows": [1, 2, 3], "ratio": 0.25, "neg": -7, "one": 1}})
    );
    let text = serde_json::to_string(&part).expect("serializes");
    assert!(text.contains(r#""rows":[1,2,3]"#), "{text}");
    assert!(!text.contains(".0"), "{text}");
}
