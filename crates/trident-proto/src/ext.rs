//! Small helpers over the generated types: state classes, constructors for the common shapes.
//! They only read or build generated types; none mirrors a proto message.

use crate::lf::a2a::v1::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus, part,
    stream_response,
};
use crate::wkt::{Timestamp, Value};

impl TaskState {
    /// `COMPLETED`, `FAILED`, `CANCELED` or `REJECTED`: the task never changes again.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// `INPUT_REQUIRED` or `AUTH_REQUIRED`: the agent waits for the client or for credentials.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// `SUBMITTED` or `WORKING`.
    pub const fn is_in_progress(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Some(part::Content::Text(text.into())),
            ..Default::default()
        }
    }

    /// A structured-data part holding any JSON value.
    pub fn data(value: serde_json::Value) -> Self {
        Self {
            content: Some(part::Content::Data(Value::from_json(value))),
            ..Default::default()
        }
    }

    /// A part holding inline bytes with their media type.
    pub fn raw(bytes: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self {
            content: Some(part::Content::Raw(bytes.into())),
            media_type: media_type.into(),
            ..Default::default()
        }
    }

    /// A part referring to content by URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            content: Some(part::Content::Url(url.into())),
            ..Default::default()
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            Some(part::Content::Text(t)) => Some(t),
            _ => None,
        }
    }
}

impl Message {
    /// A message from the client (`ROLE_USER`) with a fresh-looking id chosen by the caller.
    pub fn user(message_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            message_id: message_id.into(),
            role: Role::User as i32,
            parts,
            ..Default::default()
        }
    }

    /// A message from the agent (`ROLE_AGENT`).
    pub fn agent(message_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            message_id: message_id.into(),
            role: Role::Agent as i32,
            parts,
            ..Default::default()
        }
    }

    /// The concatenated text of every text part, separated by newlines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for t in self.parts.iter().filter_map(Part::as_text) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
        out
    }
}

impl Artifact {
    /// An artifact with the given id and parts.
    pub fn new(artifact_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            artifact_id: artifact_id.into(),
            parts,
            ..Default::default()
        }
    }
}

impl TaskStatus {
    /// A status in `state`, stamped now.
    pub fn now(state: TaskState, message: Option<Message>) -> Self {
        Self {
            state: state as i32,
            message,
            timestamp: Some(Timestamp::now()),
        }
    }
}

impl Task {
    /// The task's state (`UNSPECIFIED` when the status is missing or holds an unknown number).
    pub fn state(&self) -> TaskState {
        self.status.as_ref().map_or(TaskState::Unspecified, |s| {
            TaskState::try_from(s.state).unwrap_or(TaskState::Unspecified)
        })
    }
}

impl StreamResponse {
    /// Wraps a payload.
    pub fn new(payload: stream_response::Payload) -> Self {
        Self {
            payload: Some(payload),
        }
    }
}
