//! A2A v0.3 over gRPC: `a2a.v1.A2AService` (v0.3's package, names and field numbers) on the
//! same port as `lf.a2a.v1`, spoken to with the raw generated v0.3 tonic client. Messages are
//! compared whole as the ProtoJSON of the v0.3 model (what v0.3's HTTP+JSON bodies are too):
//! `content` parts, `TASK_STATE_` and `ROLE_` enums, `final` on status updates, resource names
//! (`tasks/{id}`, `tasks/{id}/pushNotificationConfigs/{cid}`). Errors are the 1.0 table's
//! status codes with the same `grpc-status-details-bin` (v0.3 used the same codes).

use futures::StreamExt;
use serde_json::{Value, json};
use tonic::Request;
use tonic::transport::Channel;
use trident_proto::v03;
use trident_proto::v03::a2a_service_client::A2aServiceClient;

use super::grpc::status_json;
use super::jsonrpc::extended_card;
use super::{Check, Names, bad_request, error_info, server};
use crate::harness::{Fixture, Variant};

type Client = A2aServiceClient<Channel>;

async fn client(f: &Fixture) -> Client {
    let target = &f.interfaces.as_ref().expect("a server").grpc;
    A2aServiceClient::connect(format!("http://{target}"))
        .await
        .expect("gRPC connect")
}

/// `msg` without `A2A-Version` (v0.3 clients send none), with `metadata`.
fn call<T>(msg: T, metadata: &[(&'static str, &str)]) -> Request<T> {
    let mut r = Request::new(msg);
    for (k, v) in metadata {
        r.metadata_mut().insert(*k, v.parse().expect("ascii"));
    }
    r
}

fn r<T>(msg: T) -> Request<T> {
    call(msg, &[])
}

macro_rules! to_json {
    ($m:expr $(,)?) => {
        serde_json::to_value($m).expect("ProtoJSON")
    };
}

/// The message of a successful call, or its status, as JSON with `names` applied.
fn answer<T: serde::Serialize>(
    names: &Names,
    result: Result<tonic::Response<T>, tonic::Status>,
) -> Value {
    match result {
        Ok(r) => names.apply(to_json!(r.get_ref())),
        Err(s) => names.apply(status_json(&s)),
    }
}

fn user(id: &str, text: &str) -> v03::Message {
    v03::Message {
        message_id: id.into(),
        role: v03::Role::User.into(),
        content: vec![v03::Part {
            part: Some(v03::part::Part::Text(text.into())),
            metadata: None,
        }],
        ..Default::default()
    }
}

fn send(message: v03::Message, blocking: bool) -> v03::SendMessageRequest {
    v03::SendMessageRequest {
        request: Some(message),
        configuration: Some(v03::SendMessageConfiguration {
            blocking,
            ..Default::default()
        }),
        metadata: None,
    }
}

fn stored_user(id: &str, text: &str, task: &str, ctx: &str) -> Value {
    json!({"messageId": id, "contextId": ctx, "taskId": task, "role": "ROLE_USER",
           "content": [{"text": text}]})
}

/// Reads a v0.3 server stream to its end: messages as JSON, then `"OK"` or the final status.
async fn drain(
    response: Result<tonic::Response<tonic::codec::Streaming<v03::StreamResponse>>, tonic::Status>,
    names: &mut Names,
    learn: Option<(&str, &str)>,
) -> Value {
    let mut stream = match response {
        Ok(r) => r.into_inner(),
        Err(s) => return json!({"status": names.apply(status_json(&s))}),
    };
    let mut messages = Vec::new();
    let mut end = json!("OK");
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(20), stream.next())
            .await
            .expect("gRPC message in time")
        {
            Some(Ok(m)) => {
                let v = to_json!(&m);
                if let Some((task, ctx)) = learn
                    && let Some(id) = v.pointer("/task/id").and_then(Value::as_str)
                {
                    names.learn(id, task);
                    names.learn_at(&v, "/task/contextId", ctx);
                }
                messages.push(v);
            }
            Some(Err(s)) => {
                end = status_json(&s);
                break;
            }
            None => break,
        }
    }
    let messages: Vec<Value> = messages.into_iter().map(|m| names.apply(m)).collect();
    json!({"messages": messages, "end": names.apply(end)})
}

fn failed(code: &str, message: &str, reason: &str, metadata: Value) -> Value {
    json!({"code": code, "message": message, "details": [error_info(reason, metadata)]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_v03_methods_and_streams() {
    let f = server(Variant::default()).await;
    let mut c = client(&f).await;
    let mut names = Names::default();
    let mut check = Check::new();

    // SendMessage: the task, v0.3's ProtoJSON.
    let echo = to_json!(
        c.send_message(r(send(user("m-1", "hello"), true)))
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

    // SendMessage answered by a message: the `msg` field, JSON name `message`.
    let mut m = user("m-2", "reply hi");
    m.context_id = "ctx-fixed".into();
    check.eq(
        "SendMessage (direct reply)",
        &answer(&names, c.send_message(r(send(m, true))).await),
        &json!({"message": {"messageId": "<uuid>", "contextId": "ctx-fixed",
                            "role": "ROLE_AGENT", "content": [{"text": "reply hi"}]}}),
    );

    // GetTask by resource name, with and without a history length.
    let task_name = format!("tasks/{}", names.get("<task>"));
    check.eq(
        "GetTask",
        &answer(
            &names,
            c.get_task(r(v03::GetTaskRequest {
                name: task_name.clone(),
                history_length: 0,
            }))
            .await,
        ),
        &task,
    );
    check.eq(
        "GetTask (historyLength 1)",
        &answer(
            &names,
            c.get_task(r(v03::GetTaskRequest {
                name: task_name.clone(),
                history_length: 1,
            }))
            .await,
        ),
        &task,
    );

    // SendStreamingMessage: task, status updates with `final`, artifact chunks.
    let stream = c
        .send_streaming_message(r(send(user("m-3", "stream 2"), false)))
        .await;
    let status = |state: &str, last: bool| {
        let mut u = json!({"taskId": "<stream>", "contextId": "<stream-ctx>",
                           "status": {"state": state, "timestamp": "<ts>"}});
        if last {
            u["final"] = json!(true);
        }
        json!({"statusUpdate": u})
    };
    check.eq(
        "SendStreamingMessage",
        &drain(stream, &mut names, Some(("<stream>", "<stream-ctx>"))).await,
        &json!({"end": "OK", "messages": [
            {"task": {"id": "<stream>", "contextId": "<stream-ctx>",
                      "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": "<ts>"},
                      "history": [stored_user("m-3", "stream 2", "<stream>", "<stream-ctx>")]}},
            status("TASK_STATE_WORKING", false),
            {"artifactUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "artifact": {"artifactId": "stream",
                                             "parts": [{"text": "chunk 0 of stream 2"}]}}},
            {"artifactUpdate": {"taskId": "<stream>", "contextId": "<stream-ctx>",
                                "artifact": {"artifactId": "stream",
                                             "parts": [{"text": "chunk 1 of stream 2"}]},
                                "append": true, "lastChunk": true}},
            status("TASK_STATE_COMPLETED", true),
        ]}),
    );

    // A stream answered by a message.
    let mut m = user("m-4", "reply yo");
    m.context_id = "ctx-fixed".into();
    check.eq(
        "SendStreamingMessage (direct reply)",
        &drain(
            c.send_streaming_message(r(send(m, false))).await,
            &mut names,
            None,
        )
        .await,
        &json!({"end": "OK", "messages": [
            {"message": {"messageId": "<uuid>", "contextId": "ctx-fixed", "role": "ROLE_AGENT",
                         "content": [{"text": "reply yo"}]}},
        ]}),
    );

    // TaskSubscription on a working task; CancelTask ends it.
    let slow = to_json!(
        c.send_message(r(send(user("m-5", "slow"), false)))
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
        "SendMessage (slow, not blocking)",
        &names.apply(slow),
        &json!({"task": working}),
    );
    let slow_name = format!("tasks/{}", names.get("<slow>"));
    let subscription = c
        .task_subscription(r(v03::TaskSubscriptionRequest {
            name: slow_name.clone(),
        }))
        .await;
    let mut canceled = working.clone();
    canceled["status"]["state"] = json!("TASK_STATE_CANCELLED");
    check.eq(
        "CancelTask",
        &answer(
            &names,
            c.cancel_task(r(v03::CancelTaskRequest {
                name: slow_name.clone(),
            }))
            .await,
        ),
        &canceled,
    );
    check.eq(
        "TaskSubscription",
        &drain(subscription, &mut names, None).await,
        &json!({"end": "OK", "messages": [
            {"task": working},
            {"statusUpdate": {"taskId": "<slow>", "contextId": "<slow-ctx>",
                              "status": {"state": "TASK_STATE_CANCELLED", "timestamp": "<ts>"},
                              "final": true}},
        ]}),
    );

    // Push notification configurations, by resource name.
    let config_name = format!("{task_name}/pushNotificationConfigs/cfg-1");
    let created = c
        .create_task_push_notification_config(r(v03::CreateTaskPushNotificationConfigRequest {
            parent: task_name.clone(),
            config_id: "cfg-1".into(),
            config: Some(v03::TaskPushNotificationConfig {
                name: String::new(),
                push_notification_config: Some(v03::PushNotificationConfig {
                    id: String::new(),
                    url: "https://client.example.com/hook".into(),
                    token: "opaque-123".into(),
                    authentication: Some(v03::AuthenticationInfo {
                        schemes: vec!["Bearer".into()],
                        credentials: "hook-secret".into(),
                    }),
                }),
            }),
        }))
        .await;
    check.eq(
        "CreateTaskPushNotificationConfig",
        &answer(&names, created),
        &json!({"name": "tasks/<task>/pushNotificationConfigs/cfg-1",
                "pushNotificationConfig": {"id": "cfg-1", "url": "https://client.example.com/hook",
                                           "authentication": {"schemes": ["Bearer"]}}}),
    );
    // Read back without its secrets: `token` and `credentials` are write-only.
    let read_back = json!({"name": "tasks/<task>/pushNotificationConfigs/cfg-1",
                           "pushNotificationConfig": {"id": "cfg-1",
                                                      "url": "https://client.example.com/hook",
                                                      "authentication": {"schemes": ["Bearer"]}}});
    check.eq(
        "GetTaskPushNotificationConfig",
        &answer(
            &names,
            c.get_task_push_notification_config(r(v03::GetTaskPushNotificationConfigRequest {
                name: config_name.clone(),
            }))
            .await,
        ),
        &read_back,
    );
    check.eq(
        "ListTaskPushNotificationConfig",
        &answer(
            &names,
            c.list_task_push_notification_config(r(v03::ListTaskPushNotificationConfigRequest {
                parent: task_name.clone(),
                ..Default::default()
            }))
            .await,
        ),
        &json!({"configs": [read_back]}),
    );
    check.eq(
        "DeleteTaskPushNotificationConfig",
        &answer(
            &names,
            c.delete_task_push_notification_config(r(
                v03::DeleteTaskPushNotificationConfigRequest {
                    name: config_name.clone(),
                },
            ))
            .await,
        ),
        &json!({}),
    );
    check.eq(
        "ListTaskPushNotificationConfig (after delete)",
        &answer(
            &names,
            c.list_task_push_notification_config(r(v03::ListTaskPushNotificationConfigRequest {
                parent: task_name.clone(),
                ..Default::default()
            }))
            .await,
        ),
        &json!({}),
    );

    // GetAgentCard: the extended card, in v0.3's form, for an authenticated caller.
    let f = server(Variant {
        extended_card: Some(Some(extended_card())),
        ..Default::default()
    })
    .await;
    let mut c = client(&f).await;
    check.eq(
        "GetAgentCard",
        &answer(
            &names,
            c.get_agent_card(call(
                v03::GetAgentCardRequest {},
                &[("authorization", "Bearer token-alice")],
            ))
            .await,
        ),
        &json!({
            "protocolVersion": "0.3.0",
            "name": "Demo (extended)",
            "description": "What authenticated callers see",
            "url": "https://agent.example.com/",
            "preferredTransport": "JSONRPC",
            "additionalInterfaces": [{"url": "https://agent.example.com/", "transport": "JSONRPC"}],
            "version": "2.0.0",
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "secret", "name": "Secret skill",
                        "description": "Only for members", "tags": ["members"]}],
            "supportsAuthenticatedExtendedCard": true,
        }),
    );
    check.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_v03_error_statuses() {
    let f = server(Variant::default()).await;
    let mut c = client(&f).await;
    let mut names = Names::default();
    let mut check = Check::new();
    let done = to_json!(
        c.send_message(r(send(user("m-1", "hello"), true)))
            .await
            .expect("send")
            .get_ref(),
    );
    names.learn_at(&done, "/task/id", "<task>");
    let task_name = format!("tasks/{}", names.get("<task>"));
    let get = |name: &str| v03::GetTaskRequest {
        name: name.into(),
        history_length: 0,
    };

    check.eq(
        "GetTask unknown",
        &answer(&names, c.get_task(r(get("tasks/nope"))).await),
        &failed(
            "NOT_FOUND",
            "task nope not found",
            "TASK_NOT_FOUND",
            json!({"taskId": "nope"}),
        ),
    );
    check.eq(
        "GetTask with a name that is not tasks/{id}",
        &answer(&names, c.get_task(r(get("nope"))).await),
        &json!({"code": "INVALID_ARGUMENT",
                "message": "name: \"nope\" is not of the form tasks/{id}",
                "details": [error_info("INVALID_PARAMS", json!({})),
                            bad_request(&[("name", "\"nope\" is not of the form tasks/{id}")])]}),
    );
    check.eq(
        "CancelTask completed",
        &answer(
            &names,
            c.cancel_task(r(v03::CancelTaskRequest {
                name: task_name.clone(),
            }))
            .await,
        ),
        &failed(
            "FAILED_PRECONDITION",
            "task <task> is TASK_STATE_COMPLETED",
            "TASK_NOT_CANCELABLE",
            json!({"taskId": "<task>"}),
        ),
    );
    let mut more = user("m-2", "more");
    more.task_id = names.get("<task>").into();
    check.eq(
        "SendMessage to a terminal task",
        &answer(&names, c.send_message(r(send(more.clone(), true))).await),
        &failed(
            "FAILED_PRECONDITION",
            "task <task> is TASK_STATE_COMPLETED and accepts no more messages",
            "UNSUPPORTED_OPERATION",
            json!({"taskId": "<task>"}),
        ),
    );
    check.eq(
        "SendStreamingMessage to a terminal task",
        &drain(
            c.send_streaming_message(r(send(more, false))).await,
            &mut names,
            None,
        )
        .await,
        &json!({"status": failed(
            "FAILED_PRECONDITION",
            "task <task> is TASK_STATE_COMPLETED and accepts no more messages",
            "UNSUPPORTED_OPERATION",
            json!({"taskId": "<task>"}),
        )}),
    );
    check.eq(
        "TaskSubscription to a terminal task",
        &drain(
            c.task_subscription(r(v03::TaskSubscriptionRequest {
                name: task_name.clone(),
            }))
            .await,
            &mut names,
            None,
        )
        .await,
        &json!({"status": failed(
            "FAILED_PRECONDITION",
            "task <task> is TASK_STATE_COMPLETED; subscribe to tasks that are still running",
            "UNSUPPORTED_OPERATION",
            json!({"taskId": "<task>"}),
        )}),
    );
    check.eq(
        "GetTaskPushNotificationConfig unknown",
        &answer(
            &names,
            c.get_task_push_notification_config(r(v03::GetTaskPushNotificationConfigRequest {
                name: format!("{task_name}/pushNotificationConfigs/nope"),
            }))
            .await,
        ),
        &failed(
            "NOT_FOUND",
            "task <task> has no push notification config nope",
            "TASK_NOT_FOUND",
            json!({"taskId": "<task>", "configId": "nope"}),
        ),
    );
    check.eq(
        "GetAgentCard without an extended card",
        &answer(
            &names,
            c.get_agent_card(r(v03::GetAgentCardRequest {})).await,
        ),
        // The v0.3 RPC is the extended card's (v0.3 clients call it only when the card says
        // `supportsAuthenticatedExtendedCard`): an agent without one answers as 1.0 does.
        &failed(
            "FAILED_PRECONDITION",
            "this agent has no extended agent card",
            "UNSUPPORTED_OPERATION",
            json!({}),
        ),
    );
    check.eq(
        "A2A-Version 1.0 on the v0.3 service",
        &answer(
            &names,
            c.get_task(call(get(&task_name), &[("a2a-version", "1.0")]))
                .await,
        ),
        &failed(
            "FAILED_PRECONDITION",
            "GetTask is an A2A v0.3 request but A2A-Version says 1.0; send it without \
             A2A-Version (or with 0.3), or use the 1.0 form",
            "VERSION_NOT_SUPPORTED",
            json!({"requestedVersion": "1.0"}),
        ),
    );
    check.finish();
}
