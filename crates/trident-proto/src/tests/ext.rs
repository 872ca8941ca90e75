//! The helpers of `src/ext.rs`.

use serde_json::json;

use crate::wkt::Value;
use crate::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus, part,
    stream_response,
};

#[test]
fn task_state_classes() {
    // (state, terminal, interrupted, in progress) for all 9 states (digest §1.4).
    let table = [
        (TaskState::Unspecified, false, false, false),
        (TaskState::Submitted, false, false, true),
        (TaskState::Working, false, false, true),
        (TaskState::Completed, true, false, false),
        (TaskState::Failed, true, false, false),
        (TaskState::Canceled, true, false, false),
        (TaskState::InputRequired, false, true, false),
        (TaskState::Rejected, true, false, false),
        (TaskState::AuthRequired, false, true, false),
    ];
    for (number, &(state, terminal, interrupted, in_progress)) in table.iter().enumerate() {
        assert_eq!(
            state as usize, number,
            "the table covers every number in order"
        );
        assert_eq!(state.is_terminal(), terminal, "{state:?}.is_terminal()");
        assert_eq!(
            state.is_interrupted(),
            interrupted,
            "{state:?}.is_interrupted()"
        );
        assert_eq!(
            state.is_in_progress(),
            in_progress,
            "{state:?}.is_in_progress()"
        );
    }
    assert!(
        TaskState::try_from(table.len() as i32).is_err(),
        "no tenth state"
    );
}

#[test]
fn part_constructors() {
    let text = Part::text("hello");
    assert_eq!(text.content, Some(part::Content::Text("hello".into())));
    assert_eq!(
        (
            text.media_type.as_str(),
            text.filename.as_str(),
            text.metadata.as_ref()
        ),
        ("", "", None)
    );
    assert_eq!(text.as_text(), Some("hello"));

    let raw = Part::raw(vec![1, 2, 3], "application/octet-stream");
    assert_eq!(raw.content, Some(part::Content::Raw(vec![1, 2, 3])));
    assert_eq!(raw.media_type, "application/octet-stream");
    assert_eq!(raw.as_text(), None);

    let url = Part::url("https://files.example.com/a.pdf");
    assert_eq!(
        url.content,
        Some(part::Content::Url("https://files.example.com/a.pdf".into()))
    );
    assert_eq!(url.media_type, "");
    assert_eq!(url.as_text(), None);

    let data = Part::data(json!({"rows": [1, 2, 3]}));
    assert_eq!(
        data.content,
        Some(part::Content::Data(Value::from_json(
            json!({"rows": [1, 2, 3]})
        )))
    );
    assert_eq!(data.media_type, "");
    assert_eq!(data.as_text(), None);

    assert_eq!(Part::default().as_text(), None);
}

#[test]
fn message_constructors_and_text() {
    let user = Message::user("m1", vec![Part::text("a"), Part::url("u"), Part::text("b")]);
    assert_eq!(user.message_id, "m1");
    assert_eq!(user.role, Role::User as i32);
    assert_eq!(user.text(), "a\nb");
    assert!(user.context_id.is_empty() && user.task_id.is_empty() && user.metadata.is_none());

    let agent = Message::agent("m2", vec![]);
    assert_eq!(agent.role, Role::Agent as i32);
    assert_eq!(agent.text(), "");
    assert_eq!(Message::agent("m3", vec![Part::data(json!(1))]).text(), "");
    // An empty text part still separates.
    assert_eq!(
        Message::user("m4", vec![Part::text("a"), Part::text("")]).text(),
        "a\n"
    );
}

#[test]
fn artifact_status_task_stream_helpers() {
    let artifact = Artifact::new("a1", vec![Part::text("x")]);
    assert_eq!(artifact.artifact_id, "a1");
    assert_eq!(artifact.parts, vec![Part::text("x")]);
    assert!(artifact.name.is_empty() && artifact.metadata.is_none());

    let status = TaskStatus::now(TaskState::Working, None);
    assert_eq!(status.state, TaskState::Working as i32);
    assert_eq!(status.message, None);
    let stamp = status.timestamp.expect("stamped");
    assert_eq!(stamp.nanos % 1_000_000, 0, "millisecond precision");

    let mut task = Task::default();
    assert_eq!(task.state(), TaskState::Unspecified, "no status");
    task.status = Some(TaskStatus::now(
        TaskState::InputRequired,
        Some(Message::agent("m", vec![])),
    ));
    assert_eq!(task.state(), TaskState::InputRequired);
    task.status = Some(TaskStatus {
        state: 42,
        ..Default::default()
    });
    assert_eq!(task.state(), TaskState::Unspecified, "unknown number");

    let event = StreamResponse::new(stream_response::Payload::Task(task.clone()));
    assert_eq!(event.payload, Some(stream_response::Payload::Task(task)));
}
