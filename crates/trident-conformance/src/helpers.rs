//! What the cases build requests with and check responses with. Every check panics on
//! failure, with a message that says what was expected.

use std::time::Duration;

use futures::StreamExt;
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, Principal, StreamEvent,
};
use trident_proto as pb;

/// An anonymous caller speaking A2A 1.0.
pub fn cx() -> CallContext {
    CallContext::new()
}

/// A caller named `principal`: in process it is the principal itself; over the wire it is the
/// bearer token `token-<principal>`, which the test servers' authenticator maps back. Cases use
/// [`Fixture::cx_as`](crate::Fixture::cx_as), which honours the target's own tokens.
pub fn cx_as(principal: &str) -> CallContext {
    CallContext::new()
        .with_principal(Principal::named(principal))
        .with_credentials(format!("Bearer token-{principal}"))
}

/// A user message with a fresh id and one text part.
pub fn msg(text: &str) -> pb::Message {
    pb::Message::user(uuid::Uuid::new_v4().to_string(), vec![pb::Part::text(text)])
}

/// A request sending `message`.
pub fn req(message: pb::Message) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(message),
        ..Default::default()
    }
}

/// A request sending `message` with `configuration`.
pub fn req_with(
    message: pb::Message,
    configuration: pb::SendMessageConfiguration,
) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(message),
        configuration: Some(configuration),
        ..Default::default()
    }
}

/// Sends `text` blocking and returns the task.
pub async fn send_task(svc: &dyn A2aService, cx: &CallContext, text: &str) -> pb::Task {
    task_of(svc.send_message(cx, req(msg(text))).await.expect("send"))
}

/// Continues `task` with `text`.
pub async fn follow_up(
    svc: &dyn A2aService,
    cx: &CallContext,
    task: &pb::Task,
    text: &str,
) -> Result<pb::Task, A2aError> {
    let mut m = msg(text);
    m.task_id = task.id.clone();
    svc.send_message(cx, req(m)).await.map(task_of)
}

/// The task of a response, or a panic.
pub fn task_of(resp: pb::SendMessageResponse) -> pb::Task {
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The error of `result` when it is of `kind`, or a panic.
pub fn assert_kind<T>(result: Result<T, A2aError>, kind: ErrorKind) -> A2aError {
    match result {
        Err(e) if e.kind() == kind => e,
        Err(e) => panic!("expected {kind:?}, got {:?}: {e}", e.kind()),
        Ok(_) => panic!("expected {kind:?}, got a success"),
    }
}

/// Reads a stream to its end (bounded in time).
pub async fn collect(stream: EventStream) -> Vec<StreamEvent> {
    tokio::time::timeout(
        Duration::from_secs(20),
        stream.map(|e| e.expect("stream event")).collect(),
    )
    .await
    .expect("stream ended in time")
}

/// The payload of a stream event.
pub fn payload(e: &StreamEvent) -> &pb::stream_response::Payload {
    e.response.payload.as_ref().expect("payload")
}

/// The task state an event carries, if any.
pub fn state_of(e: &StreamEvent) -> Option<pb::TaskState> {
    match payload(e) {
        pb::stream_response::Payload::Task(t) => Some(t.state()),
        pb::stream_response::Payload::StatusUpdate(u) => u
            .status
            .as_ref()
            .and_then(|s| pb::TaskState::try_from(s.state).ok()),
        _ => None,
    }
}

/// Polls GetTask until `pred` holds (bounded in time).
pub async fn wait_for(
    svc: &dyn A2aService,
    cx: &CallContext,
    id: &str,
    pred: impl Fn(&pb::Task) -> bool,
) -> pb::Task {
    for _ in 0..400 {
        let t = svc
            .get_task(
                cx,
                pb::GetTaskRequest {
                    id: id.into(),
                    ..Default::default()
                },
            )
            .await
            .expect("get");
        if pred(&t) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} never reached the expected state");
}
