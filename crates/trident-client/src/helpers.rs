//! Reading answers: the [`Texts`] of a task, message, response or stream event, and the
//! [`TaskId`] any of them belongs to.

use trident_core::StreamEvent;
use trident_proto as pb;
use trident_proto::send_message_response::Payload as Reply;
use trident_proto::stream_response::Payload as Event;

/// The text an answer carries: its text parts, in order.
///
/// - a `Message` or an `Artifact`: its text parts;
/// - a `Task`: the text parts of its artifacts, then those of its status message (what the agent
///   said last, such as the question of an `INPUT_REQUIRED` task); not its history, which holds
///   the caller's own messages too;
/// - a `SendMessageResponse`, `StreamResponse` or [`StreamEvent`]: those of the task or message
///   it holds, of a status update's message, or of an artifact update's artifact.
///
/// ```
/// use trident_client::Texts;
/// use trident_proto as pb;
/// let reply = pb::SendMessageResponse {
///     payload: Some(pb::send_message_response::Payload::Message(pb::Message::agent(
///         "m1",
///         vec![pb::Part::text("hello"), pb::Part::raw(b"\x00".to_vec(), "application/octet-stream"), pb::Part::text("world")],
///     ))),
/// };
/// assert_eq!(reply.texts(), ["hello", "world"]);
/// assert_eq!(reply.text(), "hello\nworld");
/// ```
pub trait Texts {
    /// Every text part, in order.
    fn texts(&self) -> Vec<&str>;

    /// The text parts joined with newlines (empty when there is none).
    fn text(&self) -> String {
        self.texts().join("\n")
    }
}

fn parts(parts: &[pb::Part]) -> impl Iterator<Item = &str> {
    parts.iter().filter_map(pb::Part::as_text)
}

impl Texts for pb::Message {
    fn texts(&self) -> Vec<&str> {
        parts(&self.parts).collect()
    }
}

impl Texts for pb::Artifact {
    fn texts(&self) -> Vec<&str> {
        parts(&self.parts).collect()
    }
}

impl Texts for pb::Task {
    fn texts(&self) -> Vec<&str> {
        let artifacts = self.artifacts.iter().flat_map(|a| parts(&a.parts));
        let status = self
            .status
            .iter()
            .filter_map(|s| s.message.as_ref())
            .flat_map(|m| parts(&m.parts));
        artifacts.chain(status).collect()
    }
}

impl Texts for pb::SendMessageResponse {
    fn texts(&self) -> Vec<&str> {
        match &self.payload {
            Some(Reply::Task(t)) => t.texts(),
            Some(Reply::Message(m)) => m.texts(),
            None => Vec::new(),
        }
    }
}

impl Texts for pb::StreamResponse {
    fn texts(&self) -> Vec<&str> {
        match &self.payload {
            Some(Event::Task(t)) => t.texts(),
            Some(Event::Message(m)) => m.texts(),
            Some(Event::StatusUpdate(u)) => u
                .status
                .as_ref()
                .and_then(|s| s.message.as_ref())
                .map(Texts::texts)
                .unwrap_or_default(),
            Some(Event::ArtifactUpdate(u)) => {
                u.artifact.as_ref().map(Texts::texts).unwrap_or_default()
            }
            None => Vec::new(),
        }
    }
}

impl Texts for StreamEvent {
    fn texts(&self) -> Vec<&str> {
        self.response.texts()
    }
}

/// The id of the task an answer belongs to: a task's own id, the `taskId` of an update event
/// or of a message (`None` for a message outside any task, or an empty answer).
///
/// ```
/// use trident_client::TaskId;
/// use trident_proto as pb;
/// let event = pb::StreamResponse::new(pb::stream_response::Payload::StatusUpdate(
///     pb::TaskStatusUpdateEvent { task_id: "t-1".into(), ..Default::default() },
/// ));
/// assert_eq!(event.task_id(), Some("t-1"));
/// assert_eq!(pb::StreamResponse::default().task_id(), None);
/// ```
pub trait TaskId {
    /// The task id, when there is one.
    fn task_id(&self) -> Option<&str>;
}

fn non_empty(id: &str) -> Option<&str> {
    (!id.is_empty()).then_some(id)
}

impl TaskId for pb::Task {
    fn task_id(&self) -> Option<&str> {
        non_empty(&self.id)
    }
}

impl TaskId for pb::Message {
    fn task_id(&self) -> Option<&str> {
        non_empty(&self.task_id)
    }
}

impl TaskId for pb::SendMessageResponse {
    fn task_id(&self) -> Option<&str> {
        match &self.payload {
            Some(Reply::Task(t)) => t.task_id(),
            Some(Reply::Message(m)) => m.task_id(),
            None => None,
        }
    }
}

impl TaskId for pb::StreamResponse {
    fn task_id(&self) -> Option<&str> {
        match &self.payload {
            Some(Event::Task(t)) => t.task_id(),
            Some(Event::Message(m)) => m.task_id(),
            Some(Event::StatusUpdate(u)) => non_empty(&u.task_id),
            Some(Event::ArtifactUpdate(u)) => non_empty(&u.task_id),
            None => None,
        }
    }
}

impl TaskId for StreamEvent {
    fn task_id(&self) -> Option<&str> {
        self.response.task_id()
    }
}
