//! What the cases build requests with and check responses with. Every check panics on
//! failure, with a message that says what was expected.

use std::time::Duration;

use futures::StreamExt;
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, Principal, StreamEvent,
};
use trident_proto as pb;

use crate::{Skip, observe};

/// The first word of the conformance script's handshake message (docs/conformance-script.md).
pub const SCRIPT_HANDSHAKE: &str = trident_testkit::agents::SCRIPT_HANDSHAKE.0;

/// What an agent following the conformance script answers the handshake with: a Message
/// with this text.
pub const SCRIPT_ANSWER: &str = trident_testkit::agents::SCRIPT_HANDSHAKE.1;

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

/// A context id of its own for one case: the tasks a case creates there are the only ones it
/// lists and counts, whoever else uses the agent.
pub fn fresh_context() -> String {
    format!("conformance-{}", uuid::Uuid::new_v4().simple())
}

/// A user message with a fresh id and one text part, in `context`.
pub fn msg_in(context: &str, text: &str) -> pb::Message {
    pb::Message {
        context_id: context.to_owned(),
        ..msg(text)
    }
}

/// A ListTasks request for the tasks in `context`.
pub fn list_in(context: &str) -> pb::ListTasksRequest {
    pb::ListTasksRequest {
        context_id: context.to_owned(),
        ..Default::default()
    }
}

/// Sends `text` (an ordinary message, no script word) blocking in `context` and returns the
/// task, or skips when the agent answers with a Message: `why` says what the case needed the
/// task for.
pub async fn send_for_task(
    svc: &dyn A2aService,
    cx: &CallContext,
    context: &str,
    text: &str,
    why: &str,
) -> Result<pb::Task, Skip> {
    let resp = svc
        .send_message(cx, req(msg_in(context, text)))
        .await
        .expect("send");
    task_or_skip(resp, why)
}

/// The task of a response, or a skip saying the agent answered with a Message.
pub fn task_or_skip(resp: pb::SendMessageResponse, why: &str) -> Result<pb::Task, Skip> {
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => {
            observe_task(&t);
            Ok(t)
        }
        Some(pb::send_message_response::Payload::Message(_)) => {
            observe("reply: message");
            Err(Skip::new(format!(
                "the agent answered with a Message: no task {why}"
            )))
        }
        None => panic!("the response carries neither a task nor a message"),
    }
}

/// Records a task's state and artifact texts (see [`observe`]).
pub fn observe_task(t: &pb::Task) {
    let artifacts: Vec<String> = t
        .artifacts
        .iter()
        .map(|a| {
            a.parts
                .iter()
                .filter_map(|p| p.as_text())
                .collect::<Vec<_>>()
                .join("")
        })
        .collect();
    observe(format!("task {:?}, artifacts {artifacts:?}", t.state()));
}

/// Sends the conformance script's handshake: `Ok` when the agent answers as the script says,
/// otherwise a skip saying what it answered and how to enable the scripted cases.
pub async fn probe_script(svc: &dyn A2aService) -> Result<(), Skip> {
    let how = "the scripted cases need an agent that follows docs/conformance-script.md \
               (a Trident agent: wrap its executor in trident_testkit::agents::Script)";
    let answer = match svc.send_message(&cx(), req(msg(SCRIPT_HANDSHAKE))).await {
        Ok(resp) => match resp.payload {
            Some(pb::send_message_response::Payload::Message(m))
                if m.text().trim() == SCRIPT_ANSWER =>
            {
                return Ok(());
            }
            Some(pb::send_message_response::Payload::Message(m)) => {
                let text: String = m.text().chars().take(60).collect();
                format!("the message {text:?}")
            }
            Some(pb::send_message_response::Payload::Task(t)) => {
                format!("a task in state {:?}", t.state())
            }
            None => "an empty response".to_owned(),
        },
        Err(e) => format!("the error {:?}: {}", e.kind(), e.message()),
    };
    Err(Skip::new(format!(
        "the agent answered the handshake {SCRIPT_HANDSHAKE:?} with {answer}, not the message \
         {SCRIPT_ANSWER:?}: {how}"
    )))
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
        Some(pb::send_message_response::Payload::Task(t)) => {
            observe_task(&t);
            t
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The error of `result` when it is of `kind`, or a panic.
pub fn assert_kind<T>(result: Result<T, A2aError>, kind: ErrorKind) -> A2aError {
    match &result {
        Err(e) => observe(format!("error {:?}", e.kind())),
        Ok(_) => observe("success"),
    }
    match result {
        Err(e) if e.kind() == kind => e,
        Err(e) => panic!("expected {kind:?}, got {:?}: {e}", e.kind()),
        Ok(_) => panic!("expected {kind:?}, got a success"),
    }
}

/// A stream call's result as the call's error when it failed, or when its first event is an
/// error (over gRPC a refused streaming call may surface at the first read); otherwise the
/// first event.
pub async fn first_of(
    result: Result<EventStream, A2aError>,
) -> Result<Option<StreamEvent>, A2aError> {
    let mut stream = result?;
    let first = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the first event in time");
    first.transpose()
}

/// Reads a stream to its end (bounded in time) and [`observe`]s its [`shape`].
pub async fn collect(stream: EventStream) -> Vec<StreamEvent> {
    let events = collect_unobserved(stream).await;
    observe(format!("stream {}", shape(&events)));
    events
}

/// Reads a stream to its end (bounded in time), for streams whose shape depends on timing
/// (a subscription joining a running task): nothing is observed.
pub async fn collect_unobserved(stream: EventStream) -> Vec<StreamEvent> {
    tokio::time::timeout(
        Duration::from_secs(20),
        stream.map(|e| e.expect("stream event")).collect(),
    )
    .await
    .expect("stream ended in time")
}

/// The kinds of a stream's events, in order, with the states they carry, repeated kinds
/// folded (`task(SUBMITTED) status(WORKING) artifact×3 status(COMPLETED)`): what two
/// bindings of one agent must agree on.
pub fn shape(events: &[StreamEvent]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for e in events {
        let kind = match e.response.payload.as_ref() {
            Some(pb::stream_response::Payload::Task(_)) => "task",
            Some(pb::stream_response::Payload::Message(_)) => "message",
            Some(pb::stream_response::Payload::StatusUpdate(_)) => "status",
            Some(pb::stream_response::Payload::ArtifactUpdate(_)) => "artifact",
            None => "empty",
        };
        let label = match (kind, e.response.payload.as_ref().map(|_| state_of(e))) {
            ("task" | "status", Some(Some(s))) => format!("{kind}({s:?})"),
            _ => kind.to_owned(),
        };
        match out.last_mut() {
            Some((l, n)) if *l == label => *n += 1,
            _ => out.push((label, 1)),
        }
    }
    out.into_iter()
        .map(|(l, n)| if n == 1 { l } else { format!("{l}×{n}") })
        .collect::<Vec<_>>()
        .join(" ")
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
