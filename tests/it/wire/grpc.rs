//! gRPC (spec digest §5): messages as ProtoJSON for comparison, the `trident-first-seq` header,
//! status codes and the decoded `grpc-status-details-bin`.

use futures::StreamExt;
use prost::Message as _;
use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use trident_proto as pb;
use trident_proto::a2a_service_client::A2aServiceClient;

use super::jsonrpc::{extended_card, extended_card_json};
use super::{Check, Names, bad_request, error_info, server};
use crate::harness::{Fixture, REQUIRED_EXT, Variant};

type Client = A2aServiceClient<Channel>;

async fn client(f: &Fixture) -> Client {
    let target = &f.interfaces.as_ref().expect("a server").grpc;
    A2aServiceClient::connect(format!("http://{target}"))
        .await
        .expect("gRPC connect")
}

/// `msg` with `a2a-version: 1.0` and the given metadata.
fn call<T>(msg: T, metadata: &[(&'static str, &str)]) -> Request<T> {
    let mut r = Request::new(msg);
    r.metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    for (k, v) in metadata {
        r.metadata_mut().insert(*k, v.parse().expect("ascii"));
    }
    r
}

fn r<T>(msg: T) -> Request<T> {
    call(msg, &[])
}

/// The ProtoJSON of a message (a macro: the root package does not depend on serde itself).
macro_rules! to_json {
    ($m:expr $(,)?) => {
        serde_json::to_value($m).expect("ProtoJSON")
    };
}

fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// `{"code", "message", "details"}` of a status, the details decoded from
/// `grpc-status-details-bin` into the JSON the other bindings send (`@type` + fields). A
/// details status whose code or message differs from the status itself adds `"detailsStatus"`.
pub fn status_json(s: &Status) -> Value {
    let decoded = tonic_types::pb::Status::decode(s.details()).expect("google.rpc.Status");
    let details: Vec<Value> = decoded
        .details
        .iter()
        .map(|any| match any.type_url.as_str() {
            "type.googleapis.com/google.rpc.ErrorInfo" => {
                let i = tonic_types::pb::ErrorInfo::decode(&*any.value).expect("ErrorInfo");
                let metadata: serde_json::Map<String, Value> = i
                    .metadata
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                json!({"@type": any.type_url, "reason": i.reason, "domain": i.domain,
                       "metadata": metadata})
            }
            "type.googleapis.com/google.rpc.BadRequest" => {
                let b = tonic_types::pb::BadRequest::decode(&*any.value).expect("BadRequest");
                let v: Vec<Value> = b
                    .field_violations
                    .iter()
                    .map(|v| json!({"field": v.field, "description": v.description}))
                    .collect();
                json!({"@type": any.type_url, "fieldViolations": v})
            }
            other => json!({"@type": other, "bytes": any.value.len()}),
        })
        .collect();
    let mut out = json!({"code": code_name(s.code()), "message": s.message(), "details": details});
    if decoded.code != s.code() as i32 || decoded.message != s.message() {
        out["detailsStatus"] = json!({"code": decoded.code, "message": decoded.message});
    }
    out
}

/// The status of a call that must fail.
async fn failure<T>(
    call: impl std::future::Future<Output = Result<tonic::Response<T>, Status>>,
) -> Value {
    match call.await {
        Ok(_) => json!("unexpected success"),
        Err(s) => status_json(&s),
    }
}

fn failed(code: &str, message: &str, details: Value) -> Value {
    json!({"code": code, "message": message, "details": details})
}

fn info(reason: &str, metadata: Value) -> Value {
    json!([error_info(reason, metadata)])
}

fn user(id: &str, text: &str) -> pb::Message {
    pb::Message::user(id, vec![pb::Part::text(text)])
}

fn send(
    message: pb::Message,
    configuration: Option<pb::SendMessageConfiguration>,
) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(message),
        configuration,
        ..Default::default()
    }
}

fn stored_user(id: &str, text: &str, task: &str, ctx: &str) -> Value {
    json!({"messageId": id, "contextId": ctx, "taskId": task, "role": "ROLE_USER",
           "parts": [{"text": text}]})
}

/// Reads a server stream to its end: (`trident-first-seq`, messages as JSON, final status).
async fn drain(
    response: tonic::Response<tonic::codec::Streaming<pb::StreamResponse>>,
    names: &Names,
) -> Value {
    let first_seq = response
        .metadata()
        .get("trident-first-seq")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut stream = response.into_inner();
    let mut messages = Vec::new();
    let mut end = json!("OK");
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(20), stream.next())
            .await
            .expect("gRPC message in time")
        {
            Some(Ok(m)) => messages.push(names.apply(to_json!(&m))),
            Some(Err(s)) => {
                end = status_json(&s);
                break;
            }
            None => break,
        }
    }
    json!({"firstSeq": first_seq, "messages": messages, "end": end})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_success_messages() {
    let f = server(Variant::default()).await;
    let mut c = client(&f).await;
    let mut names = Names::default();
    let mut check = Check::new();

    let echo = to_json!(
        c.send_message(r(send(user("m-1", "hello"), None)))
            .await
            .expect("send")
            .get_ref(),
    );
    names.learn_at(&echo, "/task/id", "<task>");
    names.learn_at(&echo, "/task/contextId", "<ctx>");
    let task = json!({
        "id": "<task>", "contextId": "<ctx>",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "<ts>"},
        "artifacts": [{"artifactId": "echo", "parts": [{"text": "hello"}]}],
        "history": [stored_user("m-1", "hello", "<task>", "<ctx>")],
    });
    check.eq(
        "SendMessage (echo)",
        &names.apply(echo),
        &json!({"task": task}),
    );

    let mut m = user("m-2", "reply hi");
    m.context_id = "ctx-fixed".into();
    let reply = c
        .send_message(r(send(m, None)))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "SendMessage (direct reply)",
        &names.apply(reply.unwrap_or_else(|s| status_json(&s))),
        &json!({"message": {"messageId": "<uuid>", "contextId": "ctx-fixed", "role": "ROLE_AGENT",
                            "parts": [{"text": "reply hi"}]}}),
    );

    let get = c
        .get_task(r(pb::GetTaskRequest {
            id: names.get("<task>").into(),
            history_length: Some(0),
            ..Default::default()
        }))
        .await
        .map(|r| to_json!(r.get_ref()));
    let mut no_history = task.clone();
    no_history
        .as_object_mut()
        .expect("object")
        .remove("history");
    check.eq(
        "GetTask (historyLength 0)",
        &names.apply(get.unwrap_or_else(|s| status_json(&s))),
        &no_history,
    );

    let list = c
        .list_tasks(r(pb::ListTasksRequest {
            page_size: Some(1),
            include_artifacts: Some(true),
            history_length: Some(0),
            ..Default::default()
        }))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "ListTasks",
        &names.apply(list.unwrap_or_else(|s| status_json(&s))),
        &json!({"tasks": [no_history], "nextPageToken": "", "pageSize": 1, "totalSize": 1}),
    );

    // Streams: the first event's sequence number travels in the response header.
    let stream = c
        .send_streaming_message(r(send(user("m-3", "stream 2"), None)))
        .await
        .expect("stream");
    let mut stream_names = names.clone();
    let got = {
        let first_seq = stream.metadata().get("trident-first-seq").cloned();
        let mut inner = stream.into_inner();
        let mut messages = Vec::new();
        while let Some(m) = inner.next().await {
            match m {
                Ok(m) => {
                    let v = to_json!(&m);
                    if let Some(id) = v.pointer("/task/id").and_then(Value::as_str) {
                        stream_names.learn(id, "<stream>");
                        stream_names.learn_at(&v, "/task/contextId", "<stream-ctx>");
                    }
                    messages.push(v);
                }
                Err(s) => messages.push(status_json(&s)),
            }
        }
        json!({
            "firstSeq": first_seq.and_then(|v| v.to_str().ok().map(str::to_owned)),
            "messages": messages.into_iter().map(|m| stream_names.apply(m)).collect::<Vec<_>>(),
        })
    };
    let status = |state: &str| {
        json!({"statusUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "status": {"state": state, "timestamp": "<ts>"}}})
    };
    check.eq(
        "SendStreamingMessage",
        &got,
        &json!({"firstSeq": "1", "messages": [
            {"task": {"id": "<stream>", "contextId": "<stream-ctx>",
                      "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": "<ts>"},
                      "history": [stored_user("m-3", "stream 2", "<stream>", "<stream-ctx>")]}},
            status("TASK_STATE_WORKING"),
            {"artifactUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "artifact": {"artifactId": "stream",
                                             "parts": [{"text": "chunk 0 of stream 2"}]}}},
            {"artifactUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "artifact": {"artifactId": "stream",
                                             "parts": [{"text": "chunk 1 of stream 2"}]},
                                "append": true, "lastChunk": true}},
            status("TASK_STATE_COMPLETED"),
        ]}),
    );

    let mut m = user("m-4", "reply yo");
    m.context_id = "ctx-fixed".into();
    let stream = c
        .send_streaming_message(r(send(m, None)))
        .await
        .expect("stream");
    check.eq(
        "SendStreamingMessage (direct reply): no trident-first-seq",
        &drain(stream, &names).await,
        &json!({"firstSeq": null, "end": "OK", "messages": [
            {"message": {"messageId": "<uuid>", "contextId": "ctx-fixed", "role": "ROLE_AGENT",
                         "parts": [{"text": "reply yo"}]}},
        ]}),
    );

    // SubscribeToTask on a working task; CancelTask ends it.
    let slow = to_json!(
        c.send_message(r(send(
            user("m-5", "slow"),
            Some(pb::SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
        )))
        .await
        .expect("slow")
        .get_ref(),
    );
    names.learn_at(&slow, "/task/id", "<slow>");
    names.learn_at(&slow, "/task/contextId", "<slow-ctx>");
    let working = json!({"id": "<slow>", "contextId": "<slow-ctx>",
                         "status": {"state": "TASK_STATE_WORKING", "timestamp": "<ts>"},
                         "history": [stored_user("m-5", "slow", "<slow>", "<slow-ctx>")]});
    check.eq(
        "SendMessage (slow, returnImmediately)",
        &names.apply(slow),
        &json!({"task": working}),
    );
    let subscription = c
        .subscribe_to_task(r(pb::SubscribeToTaskRequest {
            id: names.get("<slow>").into(),
            ..Default::default()
        }))
        .await
        .expect("subscribe");
    let canceled = c
        .cancel_task(r(pb::CancelTaskRequest {
            id: names.get("<slow>").into(),
            ..Default::default()
        }))
        .await
        .map(|r| to_json!(r.get_ref()));
    let mut canceled_task = working.clone();
    canceled_task["status"]["state"] = json!("TASK_STATE_CANCELED");
    check.eq(
        "CancelTask",
        &names.apply(canceled.unwrap_or_else(|s| status_json(&s))),
        &canceled_task,
    );
    check.eq(
        "SubscribeToTask",
        &drain(subscription, &names).await,
        &json!({"firstSeq": "2", "end": "OK", "messages": [
            {"task": working},
            {"statusUpdate": {"taskId": "<slow>", "contextId": "<slow-ctx>",
                              "status": {"state": "TASK_STATE_CANCELED", "timestamp": "<ts>"}}},
        ]}),
    );

    // Push notification configurations.
    let config = pb::TaskPushNotificationConfig {
        id: "cfg-1".into(),
        task_id: names.get("<task>").into(),
        url: "https://client.example.com/hook".into(),
        token: "opaque-123".into(),
        authentication: Some(pb::AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "hook-secret".into(),
        }),
        ..Default::default()
    };
    // Answered without its secrets: `token` and `credentials` are write-only (Create too).
    let config_json = json!({"id": "cfg-1", "taskId": "<task>",
                             "url": "https://client.example.com/hook",
                             "authentication": {"scheme": "Bearer"}});
    let created = c
        .create_task_push_notification_config(r(config))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "CreateTaskPushNotificationConfig",
        &names.apply(created.unwrap_or_else(|s| status_json(&s))),
        &config_json,
    );
    // Read back without its secrets: `token` and `credentials` are write-only.
    let read_back = json!({"id": "cfg-1", "taskId": "<task>",
                           "url": "https://client.example.com/hook",
                           "authentication": {"scheme": "Bearer"}});
    let got = c
        .get_task_push_notification_config(r(pb::GetTaskPushNotificationConfigRequest {
            task_id: names.get("<task>").into(),
            id: "cfg-1".into(),
            ..Default::default()
        }))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "GetTaskPushNotificationConfig",
        &names.apply(got.unwrap_or_else(|s| status_json(&s))),
        &read_back,
    );
    let listed = c
        .list_task_push_notification_configs(r(pb::ListTaskPushNotificationConfigsRequest {
            task_id: names.get("<task>").into(),
            ..Default::default()
        }))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "ListTaskPushNotificationConfigs",
        &names.apply(listed.unwrap_or_else(|s| status_json(&s))),
        &json!({"configs": [read_back]}),
    );
    let deleted = c
        .delete_task_push_notification_config(r(pb::DeleteTaskPushNotificationConfigRequest {
            task_id: names.get("<task>").into(),
            id: "cfg-1".into(),
            ..Default::default()
        }))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "DeleteTaskPushNotificationConfig",
        &deleted.unwrap_or_else(|s| status_json(&s)),
        &json!({}),
    );

    // GetExtendedAgentCard, configured, for an authenticated caller.
    let f = server(Variant {
        extended_card: Some(Some(extended_card())),
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    let card = c
        .get_extended_agent_card(call(
            pb::GetExtendedAgentCardRequest::default(),
            &[("authorization", "Bearer token-alice")],
        ))
        .await
        .map(|r| to_json!(r.get_ref()));
    check.eq(
        "GetExtendedAgentCard",
        &card.unwrap_or_else(|s| status_json(&s)),
        &extended_card_json(),
    );
    check.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_error_statuses() {
    let f = server(Variant::default()).await;
    let mut c = client(&f).await;
    let mut names = Names::default();
    let mut check = Check::new();
    let done = to_json!(
        c.send_message(r(send(user("m-1", "hello"), None)))
            .await
            .expect("send")
            .get_ref(),
    );
    names.learn_at(&done, "/task/id", "<task>");
    let task = names.get("<task>").to_owned();

    let get = |id: &str| pb::GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    let to_done = || {
        let mut m = user("m-2", "more");
        m.task_id = task.clone();
        send(m, None)
    };
    let version = json!({"requestedVersion": "0.3", "supportedVersions": "1.0"});
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "GetTask unknown",
            failure(c.get_task(r(get("nope")))).await,
            failed(
                "NOT_FOUND",
                "task nope not found",
                info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
            ),
        ),
        (
            "CancelTask completed",
            failure(c.cancel_task(r(pb::CancelTaskRequest {
                id: task.clone(),
                ..Default::default()
            })))
            .await,
            failed(
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED",
                info("TASK_NOT_CANCELABLE", json!({"taskId": "<task>"})),
            ),
        ),
        (
            "SendMessage to a terminal task",
            failure(c.send_message(r(to_done()))).await,
            failed(
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED and accepts no more messages",
                info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"})),
            ),
        ),
        (
            "SendStreamingMessage to a terminal task",
            failure(c.send_streaming_message(r(to_done()))).await,
            failed(
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED and accepts no more messages",
                info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"})),
            ),
        ),
        (
            "SubscribeToTask terminal",
            failure(c.subscribe_to_task(r(pb::SubscribeToTaskRequest {
                id: task.clone(),
                ..Default::default()
            })))
            .await,
            failed(
                "FAILED_PRECONDITION",
                "task <task> is TASK_STATE_COMPLETED; subscribe to tasks that are still running",
                info("UNSUPPORTED_OPERATION", json!({"taskId": "<task>"})),
            ),
        ),
        (
            "SendMessage refused by the agent",
            failure(c.send_message(r(send(user("m-3", "refuse"), None)))).await,
            failed(
                "INVALID_ARGUMENT",
                "the demo agent refuses this content",
                info("CONTENT_TYPE_NOT_SUPPORTED", json!({})),
            ),
        ),
        (
            "SendStreamingMessage refused by the agent",
            failure(c.send_streaming_message(r(send(user("m-4", "refuse"), None)))).await,
            failed(
                "INVALID_ARGUMENT",
                "the demo agent refuses this content",
                info("CONTENT_TYPE_NOT_SUPPORTED", json!({})),
            ),
        ),
        (
            "SendMessage with an empty messageId",
            failure(c.send_message(r(send(user("", "hi"), None)))).await,
            failed(
                "INVALID_ARGUMENT",
                "message.messageId: is required",
                json!([
                    error_info("INVALID_PARAMS", json!({})),
                    bad_request(&[("message.messageId", "is required")]),
                ]),
            ),
        ),
        (
            "ListTasks pageSize 150",
            failure(c.list_tasks(r(pb::ListTasksRequest {
                page_size: Some(150),
                ..Default::default()
            })))
            .await,
            failed(
                "INVALID_ARGUMENT",
                "pageSize: must be between 1 and 100, got 150",
                json!([
                    error_info("INVALID_PARAMS", json!({})),
                    bad_request(&[("pageSize", "must be between 1 and 100, got 150")]),
                ]),
            ),
        ),
        (
            "GetTask with a2a-version 0.3",
            failure(c.get_task(call(get("nope"), &[("a2a-version", "0.3")]))).await,
            failed(
                "FAILED_PRECONDITION",
                "A2A-Version 0.3 is not supported; this server speaks 1.0",
                info("VERSION_NOT_SUPPORTED", version.clone()),
            ),
        ),
        (
            "SendStreamingMessage with a2a-version 0.3",
            failure(c.send_streaming_message(call(
                send(user("m-5", "stream 1"), None),
                &[("a2a-version", "0.3")],
            )))
            .await,
            failed(
                "FAILED_PRECONDITION",
                "A2A-Version 0.3 is not supported; this server speaks 1.0",
                info("VERSION_NOT_SUPPORTED", version.clone()),
            ),
        ),
        (
            "GetExtendedAgentCard with the capability off",
            failure(c.get_extended_agent_card(r(pb::GetExtendedAgentCardRequest::default()))).await,
            failed(
                "FAILED_PRECONDITION",
                "this agent has no extended agent card",
                info("UNSUPPORTED_OPERATION", json!({})),
            ),
        ),
        (
            "GetTaskPushNotificationConfig unknown config",
            failure(c.get_task_push_notification_config(r(
                pb::GetTaskPushNotificationConfigRequest {
                    task_id: task.clone(),
                    id: "cfg-x".into(),
                    ..Default::default()
                },
            )))
            .await,
            failed(
                "NOT_FOUND",
                "task <task> has no push notification config cfg-x",
                info(
                    "TASK_NOT_FOUND",
                    json!({"taskId": "<task>", "configId": "cfg-x"}),
                ),
            ),
        ),
    ];
    for (case, actual, expected) in cases {
        check.eq(case, &names.apply(actual), &expected);
    }
    check.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_variant_errors() {
    let mut check = Check::new();
    let alice = [("authorization", "Bearer token-alice")];
    let not_found = failed(
        "NOT_FOUND",
        "task nope not found",
        info("TASK_NOT_FOUND", json!({"taskId": "nope"})),
    );
    let get = || pb::GetTaskRequest {
        id: "nope".into(),
        ..Default::default()
    };

    let f = server(Variant {
        no_push: true,
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    check.eq(
        "push off: CreateTaskPushNotificationConfig",
        &failure(
            c.create_task_push_notification_config(r(pb::TaskPushNotificationConfig {
                task_id: "t-1".into(),
                url: "https://client.example.com/hook".into(),
                ..Default::default()
            })),
        )
        .await,
        &failed(
            "FAILED_PRECONDITION",
            "Push notifications are not supported",
            info("PUSH_NOTIFICATION_NOT_SUPPORTED", json!({})),
        ),
    );

    let f = server(Variant {
        no_streaming: true,
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    check.eq(
        "streaming off: SendStreamingMessage",
        &failure(c.send_streaming_message(r(send(user("m-1", "stream 1"), None)))).await,
        &failed(
            "FAILED_PRECONDITION",
            "this agent does not support streaming",
            info("UNSUPPORTED_OPERATION", json!({})),
        ),
    );

    let f = server(Variant {
        extended_card: Some(None),
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    check.eq(
        "extended card not configured: anonymous",
        &failure(c.get_extended_agent_card(r(pb::GetExtendedAgentCardRequest::default()))).await,
        &failed(
            "UNAUTHENTICATED",
            "the extended agent card requires authentication",
            info("UNAUTHENTICATED", json!({})),
        ),
    );
    check.eq(
        "extended card not configured: authenticated",
        &failure(
            c.get_extended_agent_card(call(pb::GetExtendedAgentCardRequest::default(), &alice)),
        )
        .await,
        &failed(
            "FAILED_PRECONDITION",
            "Extended agent card is not configured",
            info("EXTENDED_AGENT_CARD_NOT_CONFIGURED", json!({})),
        ),
    );

    let f = server(Variant {
        required_extension: Some(REQUIRED_EXT),
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    check.eq(
        "required extension: not activated",
        &failure(c.get_task(r(get()))).await,
        &failed(
            "FAILED_PRECONDITION",
            &format!("extension {REQUIRED_EXT} is required"),
            info(
                "EXTENSION_SUPPORT_REQUIRED",
                json!({"extension": REQUIRED_EXT}),
            ),
        ),
    );
    check.eq(
        "required extension: activated",
        &failure(c.get_task(call(get(), &[("a2a-extensions", REQUIRED_EXT)]))).await,
        &not_found,
    );

    let f = server(Variant {
        strict_version: true,
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    check.eq(
        "strict version: no a2a-version",
        &failure(c.get_task(Request::new(get()))).await,
        &failed(
            "FAILED_PRECONDITION",
            "A2A-Version is missing, which means 0.3; this server speaks 1.0",
            info("VERSION_NOT_SUPPORTED", json!({"supportedVersions": "1.0"})),
        ),
    );
    check.eq(
        "strict version: a2a-version 1.0",
        &failure(c.get_task(r(get()))).await,
        &not_found,
    );
    check.finish();
}

/// What the listener answers to gRPC requests our service does not define, spoken over raw
/// HTTP/2 (status in trailers-only responses' headers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_unknown_method_and_malformed_message() {
    let f = server(Variant::default()).await;
    let target = &f.interfaces.as_ref().expect("a server").grpc;
    let http = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("h2c client");
    let grpc_post = |path: &str, frame: Vec<u8>| {
        http.post(format!("http://{target}{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(frame)
            .send()
    };
    let head = |r: &reqwest::Response| {
        let h = |n: &str| {
            r.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        json!({"http": r.status().as_u16(), "contentType": h("content-type"),
               "grpcStatus": h("grpc-status"), "grpcMessage": h("grpc-message")})
    };
    let mut check = Check::new();
    let empty_frame = vec![0u8, 0, 0, 0, 0];
    let response = grpc_post("/lf.a2a.v1.A2AService/NoSuchMethod", empty_frame.clone())
        .await
        .expect("h2 call");
    check.eq(
        "unknown method of lf.a2a.v1.A2AService",
        &head(&response),
        &json!({"http": 200, "contentType": "application/grpc", "grpcStatus": "12", "grpcMessage": null}),
    );
    let response = grpc_post("/a2a.v1.A2AService/SendMessage", empty_frame.clone())
        .await
        .expect("h2 call");
    // v0.3's `a2a.v1.A2AService` is served too (the compatibility layer, on by default): an
    // empty SendMessageRequest is refused like the 1.0 one, INVALID_ARGUMENT.
    check.eq(
        "v0.3 service name",
        &head(&response),
        &json!({"http": 200, "contentType": "application/grpc", "grpcStatus": "3",
                "grpcMessage": "message:%20is%20required"}),
    );
    // A well-formed frame holding bytes that are not a GetTaskRequest: INVALID_ARGUMENT, the
    // parse-error row of Appendix A (the message is tonic's, so only the code is checked).
    let garbage = vec![0u8, 0, 0, 0, 2, 0xff, 0xff];
    let response = grpc_post("/lf.a2a.v1.A2AService/GetTask", garbage)
        .await
        .expect("h2 call");
    let got = head(&response);
    check.eq(
        "malformed protobuf request",
        &json!({"http": got["http"], "grpcStatus": got["grpcStatus"]}),
        &json!({"http": 200, "grpcStatus": "3"}),
    );
    check.finish();
}
