//! The wire format between Trident and the program: the request line written to stdin and the
//! event lines read from stdout.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use trident_core::RequestContext;
use trident_proto as pb;

/// The longest stdout line accepted, in bytes (without the newline).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// The request line. Field order is fixed and `text` comes last, so a line-oriented tool can
/// find it with a greedy match on `"text":"` (see `examples/agents/upper.sh`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    task_id: &'a str,
    context_id: &'a str,
    message: &'a pb::Message,
    task: Option<&'a pb::Task>,
    metadata: Option<&'a trident_proto::wkt::Struct>,
    text: String,
}

/// The one JSON line written to the program's stdin.
pub(crate) fn request_line(ctx: &RequestContext) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = serde_json::to_vec(&Request {
        task_id: &ctx.task_id,
        context_id: &ctx.context_id,
        message: &ctx.message,
        task: ctx.task.as_ref(),
        metadata: ctx.metadata.as_ref(),
        text: ctx.text(),
    })?;
    line.push(b'\n');
    Ok(line)
}

/// What a message-carrying event holds: `text`, or `parts`, or neither.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Content {
    /// One text part.
    Text(String),
    /// ProtoJSON parts as given.
    Parts(Vec<pb::Part>),
}

impl Content {
    fn from_fields(
        text: Option<String>,
        parts: Option<Vec<pb::Part>>,
    ) -> Result<Option<Self>, String> {
        match (text, parts) {
            (Some(_), Some(_)) => Err("give either `text` or `parts`, not both".to_owned()),
            (Some(t), None) => Ok(Some(Content::Text(t))),
            (None, Some(p)) if p.is_empty() => Err("`parts` is empty".to_owned()),
            (None, Some(p)) => Ok(Some(Content::Parts(p))),
            (None, None) => Ok(None),
        }
    }

    /// The parts.
    pub(crate) fn into_parts(self) -> Vec<pb::Part> {
        match self {
            Content::Text(t) => vec![pb::Part::text(t)],
            Content::Parts(p) => p,
        }
    }
}

/// One event line, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// A status change with an optional agent message.
    Status {
        state: pb::TaskState,
        content: Option<Content>,
    },
    /// An artifact or a chunk of one.
    Artifact {
        artifact: pb::Artifact,
        append: bool,
        last: bool,
    },
    /// A direct message instead of a task.
    Reply { content: Content },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusFields {
    state: String,
    text: Option<String>,
    parts: Option<Vec<pb::Part>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShortFields {
    text: Option<String>,
    parts: Option<Vec<pb::Part>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactFields {
    id: String,
    name: Option<String>,
    description: Option<String>,
    text: Option<String>,
    parts: Option<Vec<pb::Part>>,
    append: Option<bool>,
    last: Option<bool>,
}

/// The state a `status` event (or its shorthand `type`) names; `Err` for anything an agent may
/// not set.
fn state(name: &str) -> Result<pb::TaskState, String> {
    Ok(match name {
        "working" => pb::TaskState::Working,
        "input-required" => pb::TaskState::InputRequired,
        "auth-required" => pb::TaskState::AuthRequired,
        "completed" => pb::TaskState::Completed,
        "failed" => pb::TaskState::Failed,
        "rejected" => pb::TaskState::Rejected,
        "canceled" => {
            return Err(
                "state `canceled` is the client's (CancelTask); an agent ends a task \
                        with `completed`, `failed` or `rejected`"
                    .to_owned(),
            );
        }
        other => {
            return Err(format!(
                "unknown state {other:?} (expected working, input-required, auth-required, \
                 completed, failed or rejected)"
            ));
        }
    })
}

fn fields<T: serde::de::DeserializeOwned>(
    kind: &str,
    map: Map<String, Value>,
) -> Result<T, String> {
    serde_json::from_value(Value::Object(map)).map_err(|e| format!("bad `{kind}` event: {e}"))
}

/// Parses one non-blank stdout line.
pub(crate) fn parse_event(line: &[u8]) -> Result<Event, String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(mut map) = value else {
        return Err("not a JSON object".to_owned());
    };
    let kind = match map.remove("type") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("`type` is not a string".to_owned()),
        None => return Err("no `type` field".to_owned()),
    };
    match kind.as_str() {
        "status" => {
            let f: StatusFields = fields(&kind, map)?;
            Ok(Event::Status {
                state: state(&f.state)?,
                content: Content::from_fields(f.text, f.parts)?,
            })
        }
        "artifact" => {
            let f: ArtifactFields = fields(&kind, map)?;
            if f.id.is_empty() {
                return Err("an artifact needs a non-empty `id`".to_owned());
            }
            let content = Content::from_fields(f.text, f.parts)?
                .ok_or_else(|| "an artifact needs `text` or `parts`".to_owned())?;
            let mut artifact = pb::Artifact::new(f.id, content.into_parts());
            artifact.name = f.name.unwrap_or_default();
            artifact.description = f.description.unwrap_or_default();
            Ok(Event::Artifact {
                artifact,
                append: f.append.unwrap_or(false),
                last: f.last.unwrap_or(true),
            })
        }
        "reply" => {
            let f: ShortFields = fields(&kind, map)?;
            let content = Content::from_fields(f.text, f.parts)?
                .ok_or_else(|| "a reply needs `text` or `parts`".to_owned())?;
            Ok(Event::Reply { content })
        }
        "working" | "input-required" | "auth-required" | "completed" | "failed" | "rejected"
        | "canceled" => {
            let state = state(&kind)?;
            let f: ShortFields = fields(&kind, map)?;
            Ok(Event::Status {
                state,
                content: Content::from_fields(f.text, f.parts)?,
            })
        }
        other => Err(format!("unknown event type {other:?}")),
    }
}
