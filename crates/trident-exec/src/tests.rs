//! `Exec` driven through a real engine, with the example agents and inline commands.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use trident_core::{A2aService, CallContext};
use trident_engine::Engine;
use trident_proto as pb;
use trident_proto::stream_response::Payload as Event;

use crate::protocol::{Event as Line, parse_event};
use crate::{Exec, ExecOptions};

fn agent(name: &str) -> String {
    format!(
        "{}/../../examples/agents/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn engine(options: ExecOptions) -> Engine {
    Engine::builder(Arc::new(Exec::new(options))).build()
}

fn request(text: &str) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message::user(
            uuid::Uuid::new_v4().to_string(),
            vec![pb::Part::text(text)],
        )),
        ..Default::default()
    }
}

fn follow_up(task: &pb::Task, text: &str) -> pb::SendMessageRequest {
    let mut req = request(text);
    if let Some(m) = req.message.as_mut() {
        m.task_id = task.id.clone();
        m.context_id = task.context_id.clone();
    }
    req
}

async fn send(engine: &Engine, req: pb::SendMessageRequest) -> pb::send_message_response::Payload {
    engine
        .send_message(&CallContext::new(), req)
        .await
        .expect("send_message")
        .payload
        .expect("payload")
}

async fn task_of(engine: &Engine, req: pb::SendMessageRequest) -> pb::Task {
    match send(engine, req).await {
        pb::send_message_response::Payload::Task(t) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn status_text(task: &pb::Task) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .map(pb::Message::text)
        .unwrap_or_default()
}

fn artifact_text(task: &pb::Task) -> String {
    task.artifacts
        .iter()
        .flat_map(|a| a.parts.iter().filter_map(pb::Part::as_text))
        .collect()
}

#[tokio::test]
async fn echo_streams_working_three_chunks_completed() {
    let engine = engine(ExecOptions::new(agent("echo.py")));
    let stream = engine
        .send_streaming_message(&CallContext::new(), request("hello world"))
        .await
        .expect("stream");
    let events: Vec<_> = stream
        .map(|e| e.expect("event").response.payload.clone().expect("payload"))
        .collect()
        .await;
    let mut states = Vec::new();
    let mut chunks = Vec::new();
    for event in &events {
        let state = match event {
            Event::Task(t) => t.state(),
            Event::StatusUpdate(u) => u.status.as_ref().map_or(pb::TaskState::Unspecified, |s| {
                pb::TaskState::try_from(s.state).unwrap_or(pb::TaskState::Unspecified)
            }),
            Event::ArtifactUpdate(a) => {
                let artifact = a.artifact.as_ref().expect("artifact");
                assert_eq!(artifact.artifact_id, "echo");
                let text: String = artifact
                    .parts
                    .iter()
                    .filter_map(pb::Part::as_text)
                    .collect();
                chunks.push((text, a.append, a.last_chunk));
                continue;
            }
            Event::Message(m) => panic!("unexpected message {m:?}"),
        };
        if states.last() != Some(&state) {
            states.push(state);
        }
    }
    assert_eq!(
        states,
        [
            pb::TaskState::Submitted,
            pb::TaskState::Working,
            pb::TaskState::Completed
        ],
        "{events:?}"
    );
    let flags: Vec<_> = chunks.iter().map(|c| (c.1, c.2)).collect();
    assert_eq!(flags, [(false, false), (true, false), (true, true)]);
    let text: String = chunks.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(text, "hello world");

    // The stored task holds the whole artifact.
    let Some(Event::Task(first)) = events.first() else {
        panic!("the stream starts with the task");
    };
    let task = engine
        .get_task(
            &CallContext::new(),
            pb::GetTaskRequest {
                id: first.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("get_task");
    assert_eq!(task.state(), pb::TaskState::Completed);
    assert_eq!(artifact_text(&task), "hello world");
}

#[tokio::test]
async fn input_required_then_follow_up_completes() {
    let engine = engine(ExecOptions::new(agent("echo.py")));
    let task = task_of(&engine, request("ask")).await;
    assert_eq!(task.state(), pb::TaskState::InputRequired, "{task:?}");
    assert_eq!(status_text(&task), "What is your name?");

    let task = task_of(&engine, follow_up(&task, "Ada")).await;
    assert_eq!(task.state(), pb::TaskState::Completed, "{task:?}");
    assert_eq!(status_text(&task), "Hello, Ada!");
}

/// Whether `pid` is gone: no `/proc` entry, or a zombie that is not ours to reap (a grandchild
/// handed to init).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // pid (comm) state ppid …
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            state == "Z" && ppid != std::process::id()
        }
    }
}

async fn wait_gone(pid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Starts echo.py `sleep` and returns the task id and the program's pid, read from the
/// `working` status text.
async fn start_sleeper(engine: &Engine) -> (String, u32) {
    let mut req = request("sleep");
    req.configuration = Some(pb::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let task = task_of(engine, req).await;
    let text = status_text(&task);
    let pid = text
        .strip_prefix("pid ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {task:?}"));
    assert!(!gone(pid), "the sleeper runs");
    (task.id, pid)
}

#[tokio::test]
async fn cancel_kills_the_process() {
    let engine = engine(ExecOptions::new(agent("echo.py")));
    let (id, pid) = start_sleeper(&engine).await;
    let task = engine
        .cancel_task(
            &CallContext::new(),
            pb::CancelTaskRequest {
                id,
                ..Default::default()
            },
        )
        .await
        .expect("cancel");
    assert_eq!(task.state(), pb::TaskState::Canceled);
    assert!(wait_gone(pid).await, "process {pid} still runs");
}

#[tokio::test]
async fn crash_fails_with_the_exit_status_and_stderr() {
    let engine = engine(ExecOptions::new(agent("echo.py")));
    let task = task_of(&engine, request("crash")).await;
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(text.contains("echo.py: crashing as asked"), "{text}");
}

#[tokio::test]
async fn malformed_output_fails_naming_the_line() {
    let engine = engine(ExecOptions::new("echo not-json"));
    let task = task_of(&engine, request("hi")).await;
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(text.contains("stdout line 1"), "{text}");
    assert!(text.contains("not JSON"), "{text}");
    assert!(text.contains("not-json"), "{text}");
}

#[tokio::test]
async fn a_bad_line_after_events_kills_the_program() {
    let engine = engine(ExecOptions::new(
        r#"echo '{"type":"working","text":"pid '$$'"}'; echo; echo '{"type":"status","state":"canceled"}'; sleep 30"#,
    ));
    let started = Instant::now();
    let task = task_of(&engine, request("hi")).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(text.contains("stdout line 3"), "{text}");
    assert!(text.contains("canceled"), "{text}");
}

#[tokio::test]
async fn overlong_line_fails() {
    let engine = engine(ExecOptions::new(
        "echo '{\"type\":\"working\"}'; head -c 3000000 /dev/zero | tr '\\0' a",
    ));
    let task = task_of(&engine, request("hi")).await;
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(text.contains("stdout line 2"), "{text}");
    assert!(text.contains("longer than"), "{text}");
}

#[tokio::test]
async fn upper_sh_upper_cases() {
    let engine = engine(ExecOptions::new(agent("upper.sh")));
    let task = task_of(&engine, request("hello \"quoted\" world")).await;
    assert_eq!(task.state(), pb::TaskState::Completed, "{task:?}");
    assert_eq!(artifact_text(&task), "HELLO \"QUOTED\" WORLD");
    assert_eq!(task.artifacts[0].artifact_id, "upper");
}

#[tokio::test]
async fn reply_is_a_direct_message() {
    let engine = engine(ExecOptions::new(agent("echo.py")));
    match send(&engine, request("reply hi there")).await {
        pb::send_message_response::Payload::Message(m) => {
            assert_eq!(m.text(), "reply hi there");
            assert!(m.task_id.is_empty());
            assert_eq!(m.role, pb::Role::Agent as i32);
        }
        other => panic!("expected a message, got {other:?}"),
    }
}

#[tokio::test]
async fn timeout_fails_and_kills() {
    let engine = engine(ExecOptions::new(agent("echo.py")).timeout(Duration::from_millis(1500)));
    let (id, pid) = start_sleeper(&engine).await;
    assert!(wait_gone(pid).await, "process {pid} still runs");
    let start = Instant::now();
    let task = loop {
        let task = engine
            .get_task(
                &CallContext::new(),
                pb::GetTaskRequest {
                    id: id.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("get_task");
        if task.state().is_terminal() || start.elapsed() > Duration::from_secs(10) {
            break task;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    assert!(
        status_text(&task).contains("timed out after 1.5s"),
        "{task:?}"
    );
}

#[tokio::test]
async fn environment_and_stdin() {
    // The program sees its ids in the environment and the request on stdin.
    let engine = engine(ExecOptions::new(
        r#"read -r line; case "$line" in *'"text":"ping"}') ok=yes;; *) ok=no;; esac; printf '{"type":"completed","text":"%s %s %s"}\n' "$A2A_TASK_ID" "$A2A_CONTEXT_ID" "$ok""#,
    ));
    let task = task_of(&engine, request("ping")).await;
    assert_eq!(task.state(), pb::TaskState::Completed, "{task:?}");
    assert_eq!(
        status_text(&task),
        format!("{} {} yes", task.id, task.context_id)
    );
}

#[tokio::test]
async fn exit_zero_without_final_state_is_failed_by_the_engine() {
    let engine = engine(ExecOptions::new(r#"echo '{"type":"working"}'"#));
    let task = task_of(&engine, request("hi")).await;
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    assert!(status_text(&task).contains("without a final state"));
}

#[tokio::test]
async fn pool_bounds_concurrent_processes() {
    // Each program holds a lock file while it runs; a second concurrent one would fail.
    let dir = std::env::temp_dir().join(format!("trident-exec-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let lock = dir.join("lock");
    let cmd = format!(
        r#"if mkdir '{lock}' 2>/dev/null; then sleep 0.2; rmdir '{lock}'; echo '{{"type":"completed"}}'; else echo '{{"type":"failed","text":"overlap"}}'; fi"#,
        lock = lock.display()
    );
    let engine = Arc::new(engine(ExecOptions::new(cmd).max_processes(1)));
    let runs = (0..3).map(|_| {
        let engine = engine.clone();
        tokio::spawn(async move { task_of(&engine, request("hi")).await })
    });
    for run in futures::future::join_all(runs).await {
        let task = run.expect("join");
        assert_eq!(task.state(), pb::TaskState::Completed, "{task:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn parse_events() {
    let ok = |s: &str| parse_event(s.as_bytes()).expect(s);
    let err = |s: &str| parse_event(s.as_bytes()).expect_err(s);
    assert!(matches!(
        ok(r#"{"type":"status","state":"auth-required"}"#),
        Line::Status {
            state: pb::TaskState::AuthRequired,
            content: None
        }
    ));
    match ok(r#"{"type":"artifact","id":"a","parts":[{"data":{"x":1}}],"append":true}"#) {
        Line::Artifact {
            artifact,
            append,
            last,
        } => {
            assert_eq!(artifact.artifact_id, "a");
            assert_eq!(artifact.parts.len(), 1);
            assert!(append && last);
        }
        other => panic!("{other:?}"),
    }
    assert!(err(r#"{"type":"canceled"}"#).contains("client"));
    assert!(err(r#"{"type":"status","state":"canceled"}"#).contains("client"));
    assert!(err(r#"{"type":"completed","txt":"x"}"#).contains("unknown field"));
    assert!(err(r#"{"type":"artifact","id":"a"}"#).contains("text"));
    assert!(err(r#"{"type":"artifact","id":"a","text":"x","parts":[]}"#).contains("either"));
    assert!(err(r#"{"type":"artifact","id":"a","text":1}"#).contains("invalid type"));
    assert!(err(r#"{"type":"nope"}"#).contains("unknown event type"));
    assert!(err(r#"{"text":"x"}"#).contains("no `type`"));
    assert!(err("[1]").contains("not a JSON object"));
}

#[test]
fn dropping_the_turn_kills_the_process() {
    // Shutting the runtime down drops the engine's running turn, and with it the process.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let pid = runtime.block_on(async {
        let engine = engine(ExecOptions::new(agent("echo.py")));
        let (_, pid) = start_sleeper(&engine).await;
        std::mem::forget(engine);
        pid
    });
    drop(runtime);
    let start = Instant::now();
    while !gone(pid) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(pid), "process {pid} still runs");
}

#[tokio::test]
async fn a_program_that_ignores_a_large_stdin_still_fails_promptly() {
    // 1 MiB of request, never read: the protocol error must not wait for stdin to drain.
    let engine = engine(ExecOptions::new("echo bad; sleep 30"));
    let started = Instant::now();
    let task = task_of(&engine, request(&"x".repeat(1 << 20))).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(task.state(), pb::TaskState::Failed, "{task:?}");
    assert!(status_text(&task).contains("stdout line 1"), "{task:?}");
}
