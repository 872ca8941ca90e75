//! The `text` output of the client commands (a2a-cli SPEC §11.2): one `Label: value` field per
//! line with fixed labels, and block content (a message's or an artifact's parts) under its own
//! `Label: value` line, every content line indented by two spaces and the block closed by a
//! blank line, so no content line can pass for a field. No control sequences, ever. Every part
//! is shown: a text part as its text, a data part as indented JSON under a `[data …]` line, a
//! file part as a `[file …]` line with its name, media type and size or URL.

use trident_proto as pb;

/// A task state's short name (`COMPLETED`); `UNSPECIFIED` as received.
pub(crate) fn state_name(state: pb::TaskState) -> &'static str {
    state
        .as_str_name()
        .strip_prefix("TASK_STATE_")
        .unwrap_or("UNSPECIFIED")
}

/// A state as the number on the wire says it (an unknown number reads `UNSPECIFIED`).
pub(crate) fn state_of(number: i32) -> pb::TaskState {
    pb::TaskState::try_from(number).unwrap_or_default()
}

/// `Label: value`, with a value that cannot break the line.
pub(crate) fn field(out: &mut String, label: &str, value: &str) {
    let value = value.replace(['\r', '\n'], " ");
    out.push_str(label);
    out.push_str(": ");
    out.push_str(&strip_controls(&value));
    out.push('\n');
}

/// `text` without terminal control characters (an agent's text cannot move the cursor or
/// colour the terminal); tabs and newlines stay.
pub(crate) fn strip_controls(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

/// A block: `Label: title`, the parts indented, a blank line.
pub(crate) fn block(out: &mut String, label: &str, title: &str, parts: &[pb::Part]) {
    field(out, label, title);
    for part in parts {
        part_lines(out, part);
    }
    out.push('\n');
}

fn indented(out: &mut String, text: &str) {
    for line in strip_controls(text).lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    if text.is_empty() {
        out.push_str("  \n");
    }
}

fn part_lines(out: &mut String, part: &pb::Part) {
    let media = if part.media_type.is_empty() {
        String::new()
    } else {
        format!(" media-type={}", part.media_type)
    };
    let name = if part.filename.is_empty() {
        String::new()
    } else {
        format!(" name={}", part.filename.replace(char::is_whitespace, "_"))
    };
    match &part.content {
        Some(pb::part::Content::Text(t)) => {
            if !part.media_type.is_empty() && part.media_type != "text/plain" {
                indented(out, &format!("[text{media}]"));
            }
            indented(out, t);
        }
        Some(pb::part::Content::Data(d)) => {
            indented(out, &format!("[data{media}]"));
            // An in-task credential this tool sent is never shown (SPEC §12.1).
            let mut pretty = serde_json::to_string_pretty(d).unwrap_or_else(|e| format!("<{e}>"));
            if pretty.contains(&format!("\"{CREDENTIAL_KEY}\""))
                && let Ok(mut v) = serde_json::to_value(d)
            {
                scrub(&mut v);
                pretty = serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("<{e}>"));
            }
            indented(out, &pretty);
        }
        Some(pb::part::Content::Raw(bytes)) => {
            indented(out, &format!("[file{name}{media} size={}]", bytes.len()));
        }
        Some(pb::part::Content::Url(url)) => {
            indented(out, &format!("[file{name}{media} url={url}]"));
        }
        None => indented(out, "[empty part]"),
    }
}

/// A task's identifiers, its state, its generation (the A2A 1.1 preview's; 0, not shown,
/// when the agent sent none) and its status message (of a task, or of a status update).
fn status(
    out: &mut String,
    task_id: &str,
    context_id: &str,
    status: Option<&pb::TaskStatus>,
    generation: i64,
) {
    field(out, "Task ID", task_id);
    field(out, "Context ID", context_id);
    field(
        out,
        "State",
        state_name(state_of(status.map_or(0, |s| s.state))),
    );
    generation_field(out, generation);
    if let Some(m) = status.and_then(|s| s.message.as_ref()) {
        block(out, "Status Message", role(m), &m.parts);
    }
}

/// A task: its identifiers and state, its status message, artifacts and (when asked) history.
pub(crate) fn task(out: &mut String, task: &pb::Task, history: bool) {
    status(
        out,
        &task.id,
        &task.context_id,
        task.status.as_ref(),
        task.generation,
    );
    for a in &task.artifacts {
        artifact(out, a);
    }
    if history {
        for m in &task.history {
            block(out, "History", role(m), &m.parts);
        }
    }
}

fn artifact(out: &mut String, a: &pb::Artifact) {
    let title = if a.name.is_empty() {
        a.artifact_id.clone()
    } else {
        format!("{} ({})", a.name, a.artifact_id)
    };
    block(out, "Artifact", &title, &a.parts);
}

fn role(m: &pb::Message) -> &'static str {
    match pb::Role::try_from(m.role).unwrap_or_default() {
        pb::Role::User => "user",
        pb::Role::Agent => "agent",
        pb::Role::Unspecified => "unspecified",
    }
}

/// A direct reply (no task).
pub(crate) fn message(out: &mut String, m: &pb::Message) {
    field(out, "Message ID", &m.message_id);
    if !m.context_id.is_empty() {
        field(out, "Context ID", &m.context_id);
    }
    if !m.task_id.is_empty() {
        field(out, "Task ID", &m.task_id);
    }
    block(out, "Message", role(m), &m.parts);
}

/// `Generation: N` when the agent sent one (the A2A 1.1 preview; 1.0 answers have none).
fn generation_field(out: &mut String, generation: i64) {
    if generation > 0 {
        field(out, "Generation", &generation.to_string());
    }
}

/// One stream event.
pub(crate) fn event(out: &mut String, response: &pb::StreamResponse) {
    use pb::stream_response::Payload;
    match &response.payload {
        Some(Payload::Task(t)) => task(out, t, false),
        Some(Payload::Message(m)) => message(out, m),
        Some(Payload::StatusUpdate(u)) => {
            status(
                out,
                &u.task_id,
                &u.context_id,
                u.status.as_ref(),
                u.generation,
            );
        }
        Some(Payload::ArtifactUpdate(a)) => {
            field(out, "Task ID", &a.task_id);
            field(out, "Context ID", &a.context_id);
            generation_field(out, a.generation);
            if a.append {
                field(out, "Append", "true");
            }
            if a.last_chunk {
                field(out, "Last Chunk", "true");
            }
            if let Some(artifact_) = &a.artifact {
                artifact(out, artifact_);
            }
        }
        None => field(out, "Event", "empty"),
    }
    out.push('\n');
}

/// The key of the data part an in-task authorization follow-up carries (`client::in_task`),
/// and the key of the credential inside it, which is never shown.
pub(crate) const CREDENTIAL_KEY: &str = "authorization";
/// See [`CREDENTIAL_KEY`].
pub(crate) const CREDENTIAL_SECRET: &str = "credentials";

/// `value` with the credential of every in-task follow-up it holds (a data part's
/// `authorization.credentials`, wherever it is nested: a task's history, an event) replaced by
/// `[redacted]`, so what this tool prints never shows one (SPEC §12.1).
pub(crate) fn scrub(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(auth)) = map.get_mut(CREDENTIAL_KEY)
                && let Some(secret) = auth.get_mut(CREDENTIAL_SECRET)
            {
                *secret = serde_json::Value::String("[redacted]".into());
            }
            map.values_mut().for_each(scrub);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_content_cannot_pass_for_a_field() {
        let mut out = String::new();
        block(
            &mut out,
            "Artifact",
            "a",
            &[
                pb::Part::text("State: COMPLETED\n\nTask ID: forged\u{1b}[31m"),
                pb::Part::text("second"),
                pb::Part::file(vec![1, 2, 3], "application/pdf", "r.pdf"),
            ],
        );
        assert_eq!(
            out,
            "Artifact: a\n  State: COMPLETED\n  \n  Task ID: forged[31m\n  second\n  \
             [file name=r.pdf media-type=application/pdf size=3]\n\n"
        );
    }
}
