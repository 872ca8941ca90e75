//! The client direction: a 1.0 call made to a v0.3 agent. [`Call::of`] turns the one 1.0
//! request into its v0.3 request (refusing, with `UnsupportedOperation`, what v0.3 cannot
//! ask), each binding's client sends it in its own framing, and [`Call::reply`] /
//! [`events`] turn the v0.3 answer back into the 1.0 one.
//!
//! What a v0.3 agent cannot be asked, and is refused before anything is sent:
//! - `ListTasks` (v0.3 has no such method, route or RPC);
//! - a `tenant` (v0.3 has no tenancy);
//! - resuming a stream after an event (`Last-Event-ID`; v0.3's `tasks/resubscribe` starts
//!   from the task's current state);
//! - a push-config list page token (v0.3 lists every config at once: the answer is one page
//!   with no `nextPageToken`);
//! - a negative `historyLength` and a part without content (`InvalidParams`, as a 1.0 agent
//!   answers: v0.3 would read them as "all of it" and as an empty text part).
//!
//! What the client makes good itself: `historyLength: 0` (v0.3 reads 0 as "all of it") is
//! sent as "all" and the history trimmed to what was asked; a v0.3 stream ends after its
//! `final: true` status update even if the agent keeps the connection open.

use std::sync::Arc;

use futures::StreamExt;
use trident_core::{
    A2aError, A2aReply, A2aRequest, CallContext, ErrorKind, EventStream, Operation,
};
use trident_proto as pb;
use trident_proto::v03;

use crate::convert::{ToV1, ToV03, config_name, push_config_to_v03, task_name};

/// The `A2A-Version` a client sends to a v0.3 agent.
pub const VERSION: &str = "0.3";

/// What v0.3 cannot express: `UnsupportedOperation`, saying so.
pub fn unsupported(what: impl std::fmt::Display) -> A2aError {
    A2aError::new(
        ErrorKind::UnsupportedOperation,
        format!("the agent speaks A2A v0.3, which has no {what}"),
    )
    .with_meta("protocolVersion", VERSION)
}

/// A 1.0 call in its v0.3 form.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// `message/send`, `SendMessage`.
    Send(v03::SendMessageRequest),
    /// `message/stream`, `SendStreamingMessage`.
    Stream(v03::SendMessageRequest),
    /// `tasks/get`, `GetTask`.
    GetTask(v03::GetTaskRequest),
    /// `tasks/cancel`, `CancelTask`.
    Cancel(v03::CancelTaskRequest),
    /// `tasks/resubscribe`, `TaskSubscription`.
    Subscribe(v03::TaskSubscriptionRequest),
    /// `tasks/pushNotificationConfig/set`, `CreateTaskPushNotificationConfig`.
    CreateConfig(v03::CreateTaskPushNotificationConfigRequest),
    /// `tasks/pushNotificationConfig/get`, `GetTaskPushNotificationConfig`.
    GetConfig(v03::GetTaskPushNotificationConfigRequest),
    /// `tasks/pushNotificationConfig/list`, `ListTaskPushNotificationConfig`.
    ListConfigs(v03::ListTaskPushNotificationConfigRequest),
    /// `tasks/pushNotificationConfig/delete`, `DeleteTaskPushNotificationConfig`.
    DeleteConfig(v03::DeleteTaskPushNotificationConfigRequest),
    /// `agent/getAuthenticatedExtendedCard`, `GetAgentCard`.
    Card(v03::GetAgentCardRequest),
}

/// A v0.3 answer to a unary [`Call`], decoded by the binding.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A task or a message (`message/send`).
    SendMessage(v03::SendMessageResponse),
    /// A task (`tasks/get`, `tasks/cancel`).
    Task(v03::Task),
    /// One push config.
    Config(v03::TaskPushNotificationConfig),
    /// Every push config of a task.
    Configs(Vec<v03::TaskPushNotificationConfig>),
    /// Nothing (`delete`).
    Empty,
    /// A card, already in its 1.0 form (the v0.3 card has two JSON forms; see
    /// [`crate::card::from_json`]).
    Card(Box<pb::AgentCard>),
}

/// The one task id a v0.3 resource name is built from: non-empty, without `/`.
fn task_id(field: &str, id: &str) -> Result<String, A2aError> {
    if id.is_empty() || id.contains('/') {
        return Err(A2aError::invalid_field(
            field,
            format!("{id:?} is not a task id a v0.3 agent can be sent (empty, or holds '/')"),
        ));
    }
    Ok(id.to_owned())
}

impl Call {
    /// The v0.3 form of `req`, called with `cx`: what v0.3 cannot express is refused.
    pub fn of(cx: &CallContext, req: A2aRequest) -> Result<Call, A2aError> {
        if !req.tenant().is_empty() || !cx.tenant.is_empty() {
            return Err(unsupported("tenants (the call names one)"));
        }
        // A negative count is refused as a 1.0 agent would: v0.3 reads anything below 1 as
        // "all of it", so it must not be sent.
        if history_asked(&req).is_some_and(|n| n < 0) {
            let field = match req {
                A2aRequest::GetTask(_) => "historyLength",
                _ => "configuration.historyLength",
            };
            return Err(A2aError::invalid_field(field, "must not be negative"));
        }
        // A part without content has no v0.3 JSON-RPC form (it would travel as empty text):
        // refused, as a 1.0 agent refuses it.
        if let A2aRequest::SendMessage(r) | A2aRequest::SendStreamingMessage(r) = &req {
            let parts = r.message.iter().flat_map(|m| &m.parts);
            if let Some(i) = parts.clone().position(|p| p.content.is_none()) {
                return Err(A2aError::invalid_field(
                    &format!("message.parts[{i}]"),
                    "needs one of text, raw, url or data",
                ));
            }
        }
        Ok(match req {
            A2aRequest::SendMessage(r) => Call::Send(r.to_v03()),
            A2aRequest::SendStreamingMessage(r) => Call::Stream(r.to_v03()),
            A2aRequest::GetTask(r) => Call::GetTask(v03::GetTaskRequest {
                name: task_name(&task_id("id", &r.id)?),
                history_length: r.history_length.unwrap_or(0).max(0),
            }),
            A2aRequest::ListTasks(_) => {
                return Err(unsupported(
                    "ListTasks (no tasks/list method, route or RPC)",
                ));
            }
            A2aRequest::CancelTask(r) => Call::Cancel(v03::CancelTaskRequest {
                name: task_name(&task_id("id", &r.id)?),
            }),
            A2aRequest::SubscribeToTask(r) => {
                if cx.last_event_id.is_some() {
                    return Err(unsupported(
                        "resuming a stream after an event (Last-Event-ID): tasks/resubscribe \
                         starts from the task's current state",
                    ));
                }
                Call::Subscribe(v03::TaskSubscriptionRequest {
                    name: task_name(&task_id("id", &r.id)?),
                })
            }
            A2aRequest::CreateTaskPushNotificationConfig(r) => {
                let task = task_id("taskId", &r.task_id)?;
                let config_id = r.id.clone();
                Call::CreateConfig(v03::CreateTaskPushNotificationConfigRequest {
                    parent: task_name(&task),
                    config_id: config_id.clone(),
                    config: Some(v03::TaskPushNotificationConfig {
                        name: config_name(&task, &config_id),
                        push_notification_config: Some(push_config_to_v03(r)),
                    }),
                })
            }
            A2aRequest::GetTaskPushNotificationConfig(r) => {
                Call::GetConfig(v03::GetTaskPushNotificationConfigRequest {
                    name: config_name(&task_id("taskId", &r.task_id)?, &task_id("id", &r.id)?),
                })
            }
            A2aRequest::ListTaskPushNotificationConfigs(r) => {
                if !r.page_token.is_empty() {
                    return Err(A2aError::invalid_field(
                        "pageToken",
                        "a v0.3 agent lists every config in one page, so no page token was \
                         issued",
                    ));
                }
                Call::ListConfigs(v03::ListTaskPushNotificationConfigRequest {
                    parent: task_name(&task_id("taskId", &r.task_id)?),
                    ..Default::default()
                })
            }
            A2aRequest::DeleteTaskPushNotificationConfig(r) => {
                Call::DeleteConfig(v03::DeleteTaskPushNotificationConfigRequest {
                    name: config_name(&task_id("taskId", &r.task_id)?, &task_id("id", &r.id)?),
                })
            }
            A2aRequest::GetExtendedAgentCard(_) => Call::Card(v03::GetAgentCardRequest {}),
        })
    }

    /// The 1.0 operation this call is.
    pub fn operation(&self) -> Operation {
        match self {
            Call::Send(_) => Operation::SendMessage,
            Call::Stream(_) => Operation::SendStreamingMessage,
            Call::GetTask(_) => Operation::GetTask,
            Call::Cancel(_) => Operation::CancelTask,
            Call::Subscribe(_) => Operation::SubscribeToTask,
            Call::CreateConfig(_) => Operation::CreateTaskPushNotificationConfig,
            Call::GetConfig(_) => Operation::GetTaskPushNotificationConfig,
            Call::ListConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Call::DeleteConfig(_) => Operation::DeleteTaskPushNotificationConfig,
            Call::Card(_) => Operation::GetExtendedAgentCard,
        }
    }

    /// The task id of a call that names one (`""` otherwise).
    pub fn task_id(&self) -> &str {
        let name = match self {
            Call::GetTask(r) => &r.name,
            Call::Cancel(r) => &r.name,
            Call::Subscribe(r) => &r.name,
            Call::CreateConfig(r) => &r.parent,
            Call::ListConfigs(r) => &r.parent,
            Call::GetConfig(r) => &r.name,
            Call::DeleteConfig(r) => &r.name,
            Call::Send(_) | Call::Stream(_) | Call::Card(_) => return "",
        };
        name.strip_prefix("tasks/")
            .map(|rest| rest.split('/').next().unwrap_or_default())
            .unwrap_or_default()
    }

    /// The config id of a call that names one (`""` otherwise).
    pub fn config_id(&self) -> &str {
        let name = match self {
            Call::GetConfig(r) => &r.name,
            Call::DeleteConfig(r) => &r.name,
            _ => return "",
        };
        name.rsplit_once('/').map(|(_, c)| c).unwrap_or_default()
    }

    /// The 1.0 answer of this (unary) call from the v0.3 `answer`. `asked` is the 1.0
    /// request's `historyLength`, applied to the returned task (v0.3 cannot ask for none).
    pub fn reply(&self, answer: Answer, asked: Option<i32>) -> Result<A2aReply, A2aError> {
        let op = self.operation();
        let mismatch = |what: &str| {
            A2aError::new(
                ErrorKind::InvalidAgentResponse,
                format!("the v0.3 agent answered {} with {what}", op.name()),
            )
        };
        Ok(match (op, answer) {
            (Operation::SendMessage, Answer::SendMessage(r)) => {
                let mut r = r.to_v1();
                if let Some(pb::send_message_response::Payload::Task(t)) = &mut r.payload {
                    trim_history(t, asked);
                }
                if r.payload.is_none() {
                    return Err(mismatch("neither a task nor a message"));
                }
                A2aReply::SendMessage(r)
            }
            (Operation::GetTask, Answer::Task(t)) => {
                let mut t = t.to_v1();
                trim_history(&mut t, asked);
                A2aReply::GetTask(t)
            }
            (Operation::CancelTask, Answer::Task(t)) => A2aReply::CancelTask(t.to_v1()),
            (Operation::CreateTaskPushNotificationConfig, Answer::Config(c)) => {
                A2aReply::CreateTaskPushNotificationConfig(self.config(c))
            }
            (Operation::GetTaskPushNotificationConfig, Answer::Config(c)) => {
                A2aReply::GetTaskPushNotificationConfig(self.config(c))
            }
            (Operation::ListTaskPushNotificationConfigs, Answer::Configs(list)) => {
                A2aReply::ListTaskPushNotificationConfigs(
                    pb::ListTaskPushNotificationConfigsResponse {
                        configs: list.into_iter().map(|c| self.config(c)).collect(),
                        next_page_token: String::new(),
                    },
                )
            }
            (Operation::DeleteTaskPushNotificationConfig, Answer::Empty) => {
                A2aReply::DeleteTaskPushNotificationConfig(())
            }
            (Operation::GetExtendedAgentCard, Answer::Card(card)) => {
                A2aReply::GetExtendedAgentCard(*card)
            }
            (_, other) => return Err(mismatch(&format!("{other:?}"))),
        })
    }

    /// A returned config in 1.0's form; its task is the one asked about when the agent's
    /// answer does not name it.
    fn config(&self, c: v03::TaskPushNotificationConfig) -> pb::TaskPushNotificationConfig {
        let mut out = c.to_v1();
        if out.task_id.is_empty() {
            out.task_id = self.task_id().to_owned();
        }
        out
    }
}

/// Keeps the last `asked` messages of the task's history (all of them when `None`).
pub fn trim_history(task: &mut pb::Task, asked: Option<i32>) {
    if let Some(n) = asked.and_then(|n| usize::try_from(n).ok())
        && task.history.len() > n
    {
        task.history.drain(..task.history.len() - n);
    }
}

/// A v0.3 stream as 1.0 events: each event translated, the stream ended after a status
/// update marked `final` (or a message), and after its first error.
pub fn events<S>(stream: S) -> EventStream
where
    S: futures::Stream<Item = Result<(Option<u64>, v03::StreamResponse), A2aError>>
        + Send
        + 'static,
{
    stream
        .scan(false, |done, item| {
            if *done {
                return futures::future::ready(None);
            }
            let item = item.map(|(seq, ev)| {
                let last = match &ev.payload {
                    Some(v03::stream_response::Payload::StatusUpdate(u)) => u.r#final,
                    Some(v03::stream_response::Payload::Msg(_)) => true,
                    _ => false,
                };
                *done = last;
                trident_core::StreamEvent {
                    seq,
                    response: Arc::new(ev.to_v1()),
                }
            });
            *done |= item.is_err();
            futures::future::ready(Some(item))
        })
        .boxed()
}

/// `cx` as sent to a v0.3 agent: `A2A-Version: 0.3`, whatever the caller said (the client
/// decides the version on the wire).
pub fn context(cx: &CallContext) -> CallContext {
    let mut cx = cx.clone();
    cx.version = Some(VERSION.to_owned());
    cx
}

/// An error of a v0.3 agent, from its JSON-RPC code (v0.3's codes are 1.0's for everything
/// v0.3 knows), its free-form `data` (`reason` and string members, as we send them) and
/// `message`.
pub fn error_from_code(
    code: Option<i64>,
    message: Option<&str>,
    data: Option<&serde_json::Value>,
) -> A2aError {
    let by_code = code
        .and_then(|c| i32::try_from(c).ok())
        .and_then(ErrorKind::from_jsonrpc);
    let by_reason = data
        .and_then(|d| d.get("reason"))
        .and_then(serde_json::Value::as_str)
        .and_then(ErrorKind::from_reason);
    let kind = by_reason.or(by_code).unwrap_or(ErrorKind::Internal);
    let message = message.unwrap_or(kind.wire().message);
    let mut err = A2aError::new(kind, message);
    if let Some(serde_json::Value::Object(m)) = data {
        for (k, v) in m {
            if let (false, Some(v)) = (k == "reason", v.as_str()) {
                err = err.with_meta(k.clone(), v);
            }
        }
        // `fieldViolations`, as our servers write them into `data`.
        let violations = m
            .get("fieldViolations")
            .and_then(serde_json::Value::as_array);
        for v in violations.into_iter().flatten() {
            let text = |key: &str| {
                v.get(key)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
            };
            err = err.with_violation(text("field"), text("description"));
        }
    }
    err
}

/// The `historyLength` a 1.0 request asked for (GetTask, SendMessage), applied by
/// [`Call::reply`].
pub fn history_asked(req: &A2aRequest) -> Option<i32> {
    match req {
        A2aRequest::GetTask(r) => r.history_length,
        A2aRequest::SendMessage(r) => r.configuration.as_ref().and_then(|c| c.history_length),
        _ => None,
    }
}

impl Call {
    /// The 1.0 answer of this streaming call: `events` (from [`events`]).
    pub fn stream_reply(&self, events: EventStream) -> Result<A2aReply, A2aError> {
        match self {
            Call::Stream(_) => Ok(A2aReply::SendStreamingMessage(events)),
            Call::Subscribe(_) => Ok(A2aReply::SubscribeToTask(events)),
            other => Err(A2aError::internal(format!(
                "{} does not stream",
                other.operation().name()
            ))),
        }
    }
}

#[cfg(test)]
mod tests;
