//! The `trident` client commands against the a2a-cli specification v0.2
//! (`../shared/spec/a2a-cli/`): each test is named after the requirement rows it checks
//! (`A2ACLI_<AREA>_<NNN>`) and runs the real binary against a live `trident serve --agent
//! demo`, over all three bindings where the row concerns a binding.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use trident_proto as pb;

use crate::process::{Run, TempDir, Trident, field, ok, stderr, stdout};

/// The bindings as `--transport` names them (the card's names).
const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

/// Runs `trident ARGS…` with `stdin` and extra environment, to completion (bounded in time).
async fn run_with(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Output {
    Run::new(args)
        .envs(env.iter().copied())
        .stdin(stdin)
        .output()
        .await
}

async fn run(args: &[&str]) -> Output {
    run_with(args, None, &[]).await
}

/// The one JSON document on stdout (fails on anything else: a second document, a log line).
#[track_caller]
fn document<T: serde::de::DeserializeOwned>(o: &Output) -> T {
    let text = stdout(o);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("one JSON document: {e}\n{text}"))
}

/// The error object of a failed run with `-o json`: checks the exit status, that stdout is
/// exactly the Appendix B envelope, and returns its `error`.
#[track_caller]
fn error_object(o: &Output, exit: i32) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(exit),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    let v: serde_json::Value = document(o);
    let e = v["error"].clone();
    assert!(e["code"].is_string() && e["message"].is_string(), "{v}");
    assert!(
        e.as_object()
            .is_some_and(|m| m.contains_key("hint") && m.contains_key("a2aCode")),
        "{v}"
    );
    e
}

fn task_of(resp: pb::SendMessageResponse) -> pb::Task {
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn demo() -> Trident {
    Trident::serve(&["--agent", "demo", "--store", "memory"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_card_get_001_resolves_a_host_a_url_a_file_and_a_path() {
    let server = demo().await;
    let origin = server.origin.as_str();
    let host = origin.trim_start_matches("http://");
    let card_url = format!("{origin}/.well-known/agent-card.json");
    for reference in [origin, host, card_url.as_str()] {
        let text = ok(&run(&["card", "get", reference]).await);
        assert_eq!(field(&text, "Name"), Some("Trident demo agent"), "{text}");
        let with_flag = ok(&run(&["card", "get", "-a", reference]).await);
        assert_eq!(with_flag, text);
    }
    let card: pb::AgentCard = document(&run(&["card", "get", "-a", origin, "-o", "json"]).await);
    assert!(!card.supported_interfaces.is_empty());

    // A local card, as file:// and as a plain path; and the card selects the transport.
    let dir = TempDir::new("a2acli-card");
    let path = dir.0.join("card.json");
    std::fs::write(&path, serde_json::to_vec(&card).expect("card JSON")).expect("write");
    let file_url = format!("file://{}", path.display());
    let plain = path.display().to_string();
    for reference in [file_url.as_str(), plain.as_str()] {
        let text = ok(&run(&["card", "get", "-a", reference]).await);
        assert_eq!(field(&text, "Name"), Some("Trident demo agent"), "{text}");
        assert!(
            field(&text, "Selected Transport").is_some_and(|t| t.starts_with("JSONRPC ")),
            "the card's first interface: {text}"
        );
        for t in TRANSPORTS {
            let chosen = ok(&run(&["card", "get", "-a", reference, "--transport", t]).await);
            assert!(
                field(&chosen, "Selected Transport").is_some_and(|s| s.starts_with(t)),
                "{t}: {chosen}"
            );
            // The file's card is used for a call too.
            let sent = ok(&run(&["send", "-a", reference, "--transport", t, "from a file"]).await);
            assert_eq!(field(&sent, "State"), Some("COMPLETED"), "{t}: {sent}");
        }
    }

    // No card there: A2ACLI_ERR_CARD_NOT_FOUND, exit 3; not a card: CARD_INVALID, exit 1.
    let missing = dir.0.join("missing.json").display().to_string();
    let e = error_object(
        &run(&["card", "get", "-a", &missing, "-o", "json"]).await,
        3,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_NOT_FOUND");
    let nowhere = format!("{origin}/no/card/here");
    let e = error_object(
        &run(&["card", "get", "-a", &nowhere, "-o", "json"]).await,
        3,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_NOT_FOUND");
    let junk = dir.0.join("junk.json");
    std::fs::write(&junk, "{\"name\": 7}").expect("write");
    let junk = junk.display().to_string();
    let e = error_object(&run(&["card", "get", "-a", &junk, "-o", "json"]).await, 1);
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_INVALID");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_001_002_out_006_blocking_by_default_and_async_returns_identifiers() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // Blocking: the task has ended when send returns.
        let done = ok(&run(&["send", "-a", a, "--transport", t, "stream 3 50"]).await);
        assert_eq!(field(&done, "State"), Some("COMPLETED"), "{t}: {done}");
        // --async: back at once with the identifiers, text and JSON.
        let started = ok(&run(&["send", "-a", a, "--transport", t, "--async", "slow"]).await);
        let id = field(&started, "Task ID").expect("Task ID").to_owned();
        assert!(field(&started, "Context ID").is_some_and(|c| !c.is_empty()));
        assert!(
            matches!(field(&started, "State"), Some("SUBMITTED" | "WORKING")),
            "{t}: {started}"
        );
        assert!(
            field(&started, "Poll").is_some_and(|p| p.contains(&format!("--wait {id}"))),
            "{t}: {started}"
        );
        let resp: pb::SendMessageResponse = document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--async",
                "-o",
                "json",
                "slow",
            ])
            .await,
        );
        let task = task_of(resp);
        assert!(!task.id.is_empty() && !task.context_id.is_empty());
        assert!(!task.state().is_terminal(), "{t}: {task:?}");
        // The old spelling still works.
        let old: pb::SendMessageResponse = document(
            &run(&[
                "send",
                a,
                "slow",
                "--return-immediately",
                "--json",
                "--binding",
                t,
            ])
            .await,
        );
        assert!(!task_of(old).state().is_terminal());
        for id in [id.as_str(), task.id.as_str()] {
            ok(&run(&["task", "cancel", id, "-a", a, "--transport", t]).await);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_003_out_003_streams_jsonl_and_a_message_reply_ends_cleanly() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--stream",
            "-o",
            "json",
            "stream 3",
        ])
        .await;
        let lines: Vec<pb::StreamResponse> = ok(&o)
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line one StreamResponse"))
            .collect();
        assert!(lines.len() >= 5, "{t}: {lines:?}");
        match lines.last().and_then(|l| l.payload.as_ref()) {
            Some(pb::stream_response::Payload::StatusUpdate(u)) => assert_eq!(
                u.status.as_ref().map(|s| s.state),
                Some(pb::TaskState::Completed as i32),
                "{t}"
            ),
            other => panic!("{t}: the last line is the terminal status: {other:?}"),
        }
        // Text: each event as fields, the tail restating the identifiers and the state.
        let text = ok(&run(&["send", "-a", a, "--transport", t, "--stream", "stream 2"]).await);
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        assert!(
            tail[0] == "State: COMPLETED"
                && tail[1].starts_with("Context ID: ")
                && tail[2].starts_with("Task ID: "),
            "{t}: {text}"
        );
        // A direct reply (no task) on a stream: one Message line, exit 0.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--stream",
            "-o",
            "json",
            "reply hi",
        ])
        .await;
        let out = ok(&o);
        assert_eq!(out.lines().count(), 1, "{t}: {out}");
        let only: pb::StreamResponse = serde_json::from_str(out.trim()).expect("a StreamResponse");
        assert!(
            matches!(only.payload, Some(pb::stream_response::Payload::Message(_))),
            "{t}: {out}"
        );
        // An error ending the stream is its last line: the error object.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--stream",
            "-o",
            "json",
            "refuse",
        ])
        .await;
        assert_eq!(o.status.code(), Some(1), "{t}: {}", stderr(&o));
        let last = stdout(&o);
        let last = last.lines().last().expect("a line");
        let v: serde_json::Value = serde_json::from_str(last).expect("JSON");
        assert_eq!(
            v["error"]["code"], "ContentTypeNotSupportedError",
            "{t}: {v}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_006_parts_are_ordered() {
    let server = demo().await;
    let a = server.origin.as_str();
    let dir = TempDir::new("a2acli-parts");
    let pdf = dir.0.join("report.bin");
    std::fs::write(&pdf, b"%PDF-1.7 not really").expect("write");
    let pdf = pdf.display().to_string();
    let png = dir.0.join("pic.png");
    std::fs::write(&png, [0x89, b'P', b'N', b'G']).expect("write");
    let png = png.display().to_string();
    for t in TRANSPORTS {
        let o = run_with(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "first",
                "--text",
                "second",
                "--file",
                &pdf,
                "--media-type",
                "application/pdf",
                "--data",
                "-",
                "--file",
                &png,
                "--text",
                "last",
            ],
            Some(b"{\"k\": [1, 2]}"),
            &[],
        )
        .await;
        let task = task_of(document(&o));
        let sent = task
            .history
            .iter()
            .find(|m| m.role == pb::Role::User as i32)
            .expect("the user's message in the history");
        let kinds: Vec<String> = sent
            .parts
            .iter()
            .map(|p| match &p.content {
                Some(pb::part::Content::Text(s)) => format!("text {s}"),
                Some(pb::part::Content::Raw(b)) => {
                    format!("file {} {} {}", p.filename, p.media_type, b.len())
                }
                Some(pb::part::Content::Data(d)) => format!(
                    "data {} {}",
                    p.media_type,
                    serde_json::to_string(d).expect("json")
                ),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "text first",
                "text second",
                "file report.bin application/pdf 19",
                "data application/json {\"k\":[1,2]}",
                "file pic.png image/png 4",
                "text last",
            ],
            "{t}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_005_media_type_binds_to_the_part_before_it() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let task = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--text",
                "# Title",
                "--media-type",
                "text/markdown",
                "--text",
                "plain",
            ])
            .await,
        ));
        let parts = &task.history[0].parts;
        assert_eq!(parts[0].media_type, "text/markdown", "{t}");
        assert_eq!(
            parts[1].media_type, "",
            "{t}: a type binds to one part only"
        );
    }
    // A --media-type with no part flag before it is a usage error.
    let e = error_object(
        &run(&[
            "send",
            "-a",
            a,
            "-o",
            "json",
            "--media-type",
            "text/plain",
            "--text",
            "x",
        ])
        .await,
        2,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE");
    assert!(e["hint"].is_string(), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_004_out_005_text_shows_every_part_in_blocks() {
    let server = demo().await;
    let a = server.origin.as_str();
    let dir = TempDir::new("a2acli-text");
    let file = dir.0.join("notes.md");
    std::fs::write(&file, "# notes").expect("write");
    let file = file.display().to_string();
    for t in TRANSPORTS {
        // An artifact whose text tries to pass for fields, with a control sequence.
        let forged = "line one\n\nState: FORGED\n\u{1b}[31mred";
        let text = ok(&run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--history",
            "5",
            forged,
            "--file",
            &file,
            "--data",
            "{\"n\": 1}",
        ])
        .await);
        assert!(
            !text.contains('\u{1b}'),
            "{t}: no control sequences: {text:?}"
        );
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        assert!(!text.lines().any(|l| l == "State: FORGED"), "{t}: {text}");
        // Every line is a field, a block's indented content, or the blank line closing it.
        let mut in_block = false;
        for line in text.lines() {
            if line.is_empty() {
                in_block = false;
            } else if line.starts_with("  ") {
                assert!(in_block, "{t}: content outside a block: {line:?}\n{text}");
            } else {
                let (label, _) = line
                    .split_once(": ")
                    .unwrap_or_else(|| panic!("{t}: not a Label: value line: {line:?}\n{text}"));
                assert!(
                    [
                        "Task ID",
                        "Context ID",
                        "State",
                        "Artifact",
                        "History",
                        "Status Message"
                    ]
                    .contains(&label),
                    "{t}: unexpected label {label:?}\n{text}"
                );
                in_block = matches!(label, "Artifact" | "History" | "Status Message");
            }
        }
        // The parts of the message: not joined, the file by name and media type.
        let history = text
            .split("History: user\n")
            .nth(1)
            .expect("a History block");
        assert!(
            history.starts_with("  line one\n  \n  State: FORGED\n  [31mred\n"),
            "{t}: {history}"
        );
        assert!(
            history.contains("  [file name=notes.md media-type=text/markdown size=7]\n"),
            "{t}: {history}"
        );
        assert!(
            history.contains("  [data media-type=application/json]\n  {\n    \"n\": 1.0\n  }\n")
                || history
                    .contains("  [data media-type=application/json]\n  {\n    \"n\": 1\n  }\n"),
            "{t}: {history}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_interact_001_002_004_context_and_task_ids_continue_an_interaction() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let first = task_of(document(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "one"]).await,
        ));
        // --context-id: a new task in the same context.
        let second = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--context-id",
                &first.context_id,
                "two",
            ])
            .await,
        ));
        assert_eq!(second.context_id, first.context_id, "{t}");
        assert_ne!(second.id, first.id, "{t}");

        // INPUT_REQUIRED: exit 0, the identifiers and the command to resume.
        let o = run(&["send", "-a", a, "--transport", t, "input"]).await;
        let asked = ok(&o);
        assert_eq!(
            field(&asked, "State"),
            Some("INPUT_REQUIRED"),
            "{t}: {asked}"
        );
        let id = field(&asked, "Task ID").expect("Task ID").to_owned();
        let resume = field(&asked, "Resume").expect("Resume").to_owned();
        assert!(resume.contains(&format!("--task-id {id}")), "{t}: {resume}");
        assert!(stderr(&o).contains("INPUT_REQUIRED"), "{t}: {}", stderr(&o));
        // --task-id alone: the server finds the context.
        let done = ok(&run(&["send", "-a", a, "--transport", t, "--task-id", &id, "Ada"]).await);
        assert_eq!(field(&done, "State"), Some("COMPLETED"), "{t}: {done}");
        assert_eq!(field(&done, "Task ID"), Some(id.as_str()), "{t}");

        // A task id the agent does not know: the protocol error, non-zero, no new task.
        let before: pb::ListTasksResponse =
            document(&run(&["task", "list", "-a", a, "--all", "-o", "json"]).await);
        let e = error_object(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--task-id",
                "no-such-task",
                "hi",
            ])
            .await,
            1,
        );
        assert_eq!(e["code"], "TaskNotFoundError", "{t}: {e}");
        assert!(
            e["hint"]
                .as_str()
                .is_some_and(|h| h.contains("--debug") && h.contains("no-such-task")),
            "{t}: the hint points at --debug: {e}"
        );
        let after: pb::ListTasksResponse =
            document(&run(&["task", "list", "-a", a, "--all", "-o", "json"]).await);
        assert_eq!(
            after.tasks.len(),
            before.tasks.len(),
            "{t}: no task was created"
        );
        // Both ids, not matching: refused too.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "-o",
            "json",
            "--task-id",
            &id,
            "--context-id",
            &first.context_id,
            "hi",
        ])
        .await;
        assert_ne!(o.status.code(), Some(0), "{t}: {}", stdout(&o));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_get_001_task_poll_001_003_wait_polls_to_an_end_or_an_interruption() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // One-shot get with history; the artifacts are shown.
        let done = task_of(document(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "kept"]).await,
        ));
        let got = ok(&run(&[
            "task",
            "get",
            &done.id,
            "-a",
            a,
            "--transport",
            t,
            "--history-length",
            "1",
        ])
        .await);
        assert_eq!(field(&got, "State"), Some("COMPLETED"), "{t}: {got}");
        assert!(
            got.contains("Artifact: ") && got.contains("  kept\n"),
            "{t}: {got}"
        );
        assert!(got.contains("History: "), "{t}: {got}");
        let json: pb::Task = document(
            &run(&[
                "task",
                "get",
                &done.id,
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
        );
        assert_eq!(json.artifacts.len(), 1, "{t}");

        // --wait polls a running task to its end.
        let running = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--async",
                "stream 4 150",
            ])
            .await,
        ));
        let waited: pb::Task = document(
            &run(&[
                "task",
                "get",
                &running.id,
                "-a",
                a,
                "--transport",
                t,
                "--wait",
                "--poll-interval",
                "100ms",
                "-o",
                "json",
            ])
            .await,
        );
        assert_eq!(waited.state(), pb::TaskState::Completed, "{t}");

        // --wait stops at once on INPUT_REQUIRED (exit 0, a warning).
        let asked = task_of(document(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "input"]).await,
        ));
        let started = std::time::Instant::now();
        let o = run(&[
            "task",
            "get",
            &asked.id,
            "-a",
            a,
            "--transport",
            t,
            "--wait",
            "--timeout",
            "20s",
        ])
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("INPUT_REQUIRED"), "{t}: {text}");
        assert!(started.elapsed() < Duration::from_secs(10), "{t}: no wait");
        assert!(stderr(&o).contains("INPUT_REQUIRED"), "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_poll_002_exit_001_a_timeout_is_a2acli_err_timeout_and_exits_5() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let slow = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--async",
                "slow",
            ])
            .await,
        ));
        let started = std::time::Instant::now();
        let o = run(&[
            "task",
            "get",
            &slow.id,
            "-a",
            a,
            "--transport",
            t,
            "--wait",
            "--poll-interval",
            "100ms",
            "--timeout",
            "700ms",
            "-o",
            "json",
        ])
        .await;
        let e = error_object(&o, 5);
        assert_eq!(e["code"], "A2ACLI_ERR_TIMEOUT", "{t}: {e}");
        assert!(
            e["hint"].as_str().is_some_and(|h| h.contains(&slow.id)),
            "{t}: the hint names the task: {e}"
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(700) && took < Duration::from_secs(10),
            "{t}: {took:?}"
        );
        // A blocking send that outlasts --timeout: 5 as well, never 3.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--timeout",
            "500ms",
            "-o",
            "json",
            "slow",
        ])
        .await;
        let e = error_object(&o, 5);
        assert_eq!(e["code"], "A2ACLI_ERR_TIMEOUT", "{t}: {e}");
        ok(&run(&["task", "cancel", &slow.id, "-a", a, "--transport", t]).await);
    }
    // A poll interval that would busy-loop is refused.
    let e = error_object(
        &run(&[
            "task",
            "get",
            "x",
            "-a",
            a,
            "--wait",
            "--poll-interval",
            "0s",
            "-o",
            "json",
        ])
        .await,
        2,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_cancel_001_cancels_and_reports_the_state() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let slow = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--async",
                "slow",
            ])
            .await,
        ));
        let text = ok(&run(&["task", "cancel", &slow.id, "-a", a, "--transport", t]).await);
        assert_eq!(field(&text, "State"), Some("CANCELED"), "{t}: {text}");
        assert_eq!(field(&text, "Task ID"), Some(slow.id.as_str()), "{t}");
        // Again: the same state, or the protocol's not-cancelable error; never a change.
        let again = run(&[
            "task",
            "cancel",
            &slow.id,
            "-a",
            a,
            "--transport",
            t,
            "-o",
            "json",
        ])
        .await;
        if again.status.success() {
            let task: pb::Task = document(&again);
            assert_eq!(task.state(), pb::TaskState::Canceled, "{t}");
        } else {
            assert_eq!(
                error_object(&again, 1)["code"],
                "TaskNotCancelableError",
                "{t}"
            );
        }
        let task: pb::Task =
            document(&run(&["task", "get", &slow.id, "-a", a, "-o", "json"]).await);
        assert_eq!(task.state(), pb::TaskState::Canceled, "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_out_002_json_is_one_terminal_document() {
    let server = demo().await;
    let a = server.origin.as_str();
    // Two tasks, so --page-size 1 --all has two pages to join.
    ok(&run(&["send", "-a", a, "one"]).await);
    for t in TRANSPORTS {
        // A task with many events: one SendMessageResponse, the terminal task.
        let task = task_of(document(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "stream 4"]).await,
        ));
        assert_eq!(task.state(), pb::TaskState::Completed, "{t}");
        // task subscribe without --stream: the terminal task only.
        let replay: pb::Task = document(
            &run(&[
                "task",
                "subscribe",
                &task.id,
                "-a",
                a,
                "--transport",
                t,
                "--after",
                "0",
                "-o",
                "json",
            ])
            .await,
        );
        assert_eq!(replay.state(), pb::TaskState::Completed, "{t}");
        assert_eq!(replay.id, task.id, "{t}");
        // task list --all over several pages: one ListTasksResponse.
        let listed: pb::ListTasksResponse = document(
            &run(&[
                "task",
                "list",
                "-a",
                a,
                "--transport",
                t,
                "--page-size",
                "1",
                "--all",
                "-o",
                "json",
            ])
            .await,
        );
        assert!(listed.tasks.len() >= 2, "{t}: {listed:?}");
        assert_eq!(listed.tasks.len(), listed.total_size as usize, "{t}");
        assert!(listed.next_page_token.is_empty(), "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_out_004_errors_are_the_same_object_on_every_transport() {
    let server = demo().await;
    let a = server.origin.as_str();
    let mut seen = Vec::new();
    for t in TRANSPORTS {
        let o = run(&[
            "task",
            "get",
            "no-such-task",
            "-a",
            a,
            "--transport",
            t,
            "-o",
            "json",
        ])
        .await;
        let mut e = error_object(&o, 1);
        assert_eq!(e["code"], "TaskNotFoundError", "{t}: {e}");
        assert_eq!(e["a2aCode"], -32001, "{t}: {e}");
        assert!(e["hint"].is_string(), "{t}: {e}");
        // The message names the binding's own wording; the rest is the same everywhere.
        e["message"] = serde_json::Value::Null;
        seen.push(e);
        // Text mode: the same code on stderr, nothing on stdout.
        let o = run(&["task", "get", "no-such-task", "-a", a, "--transport", t]).await;
        assert_eq!(o.status.code(), Some(1));
        assert!(stdout(&o).is_empty(), "{t}: {}", stdout(&o));
        assert!(
            stderr(&o).starts_with("error: TaskNotFoundError: "),
            "{t}: {}",
            stderr(&o)
        );
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");

    // Nobody listening: A2ACLI_ERR_UNREACHABLE, exit 3.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let e = error_object(&run(&["card", "get", "-a", &dead, "-o", "json"]).await, 3);
    assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE");
    // A bad flag: A2ACLI_ERR_USAGE, exit 2, as JSON when JSON was asked for.
    let e = error_object(
        &run(&["task", "get", "x", "-a", a, "-o", "json", "--no-such-flag"]).await,
        2,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE");
    let e = error_object(
        &run(&["task", "list", "-a", a, "-o", "json", "--state", "sleepy"]).await,
        2,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE");
    let e = error_object(&run(&["send", "-o", "json", "hi"]).await, 2);
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE", "no agent named: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_exit_002_agent_outcomes_exit_0_with_a_warning() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        for (word, state) in [
            ("fail", "FAILED"),
            ("reject", "REJECTED"),
            ("input", "INPUT_REQUIRED"),
            ("auth", "AUTH_REQUIRED"),
        ] {
            let o = run(&["send", "-a", a, "--transport", t, word]).await;
            let text = ok(&o);
            assert_eq!(field(&text, "State"), Some(state), "{t} {word}: {text}");
            let warning = stderr(&o);
            assert!(
                warning.starts_with("warning: ") && warning.contains(state),
                "{t} {word}: {warning}"
            );
            // -o json: the task, exit 0, the warning still on stderr only.
            let o = run(&["send", "-a", a, "--transport", t, "-o", "json", word]).await;
            let task = task_of(document(&o));
            assert_eq!(task.state().as_str_name(), format!("TASK_STATE_{state}"));
            assert!(stderr(&o).contains(state), "{t} {word}");
        }
        // A clean completion warns about nothing.
        let o = run(&["send", "-a", a, "--transport", t, "fine"]).await;
        ok(&o);
        assert!(stderr(&o).is_empty(), "{t}: {}", stderr(&o));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_tx_002_transport_is_repeatable_and_ordered() {
    let server = demo().await;
    let a = server.origin.as_str();
    let chosen = |o: &Output| {
        field(&ok(o), "Selected Transport")
            .and_then(|s| s.split(' ').next())
            .map(str::to_owned)
    };
    assert_eq!(
        chosen(&run(&["card", "get", a]).await).as_deref(),
        Some("JSONRPC")
    );
    let o = run(&[
        "card",
        "get",
        a,
        "--transport",
        "GRPC",
        "--transport",
        "JSONRPC",
    ])
    .await;
    assert_eq!(chosen(&o).as_deref(), Some("GRPC"));
    let o = run(&[
        "card",
        "get",
        a,
        "--transport",
        "HTTP+JSON",
        "--transport",
        "GRPC",
    ])
    .await;
    assert_eq!(chosen(&o).as_deref(), Some("HTTP+JSON"));
    let e = error_object(
        &run(&["card", "get", a, "--transport", "SMOKE", "-o", "json"]).await,
        2,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_001_bearer_and_its_variable_exit_4_when_missing_or_refused() {
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--bearer",
        "alice=s3cret",
    ])
    .await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let e = error_object(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "hi"]).await,
            4,
        );
        assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{t}: {e}");
        let e = error_object(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--bearer",
                "wrong",
                "hi",
            ])
            .await,
            4,
        );
        assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{t}: {e}");
        let text = ok(&run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--bearer",
            "s3cret",
            "hi",
        ])
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}");
        let text = ok(&run_with(
            &["send", "-a", a, "--transport", t, "hi"],
            None,
            &[("A2ACLI_BEARER", "s3cret")],
        )
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}");
        // The old flag still works.
        ok(&run(&["send", a, "hi", "--token", "s3cret", "--binding", t]).await);
        // A service parameter is a header the agent receives, not a credential.
        let text = ok(&run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--bearer",
            "s3cret",
            "--svc-param",
            "x-trace-note:abc",
            "hi",
        ])
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_cli_001_auth_002_help_and_version() {
    for flag in ["-v", "--version"] {
        let v = ok(&run(&[flag]).await);
        assert_eq!(v.trim(), format!("trident {}", env!("CARGO_PKG_VERSION")));
    }
    let help = ok(&run(&["help"]).await);
    for command in ["card", "send", "task"] {
        assert!(help.contains(command), "{help}");
    }
    for hidden in ["\n  get ", "\n  cancel ", "\n  subscribe "] {
        assert!(!help.contains(hidden), "old spellings stay hidden: {help}");
    }
    let send = ok(&run(&["send", "--help"]).await);
    for shown in [
        "--agent-card <REF>",
        "--transport <BINDING>",
        "--text <TEXT>",
        "--file <PATH|URL>",
        "--data <PATH|JSON|->",
        "--media-type <TYPE>",
        "--context-id <ID>",
        "--task-id <ID>",
        "--async",
        "--stream",
        "--metadata <JSON>",
        "--bearer <TOKEN>",
        "--api-key <KEY>",
        "--svc-param <KEY:VALUE>",
        "--timeout <DURATION>",
        "[default: text]",
        "[env: A2ACLI_BEARER",
    ] {
        assert!(send.contains(shown), "{shown} in send --help:\n{send}");
    }
    assert!(!send.contains("--return-immediately"), "{send}");
    // AUTH_002: each credential flag has its variable, and says why to prefer it.
    for variable in [
        "[env: A2ACLI_BEARER",
        "[env: A2ACLI_API_KEY",
        "[env: A2ACLI_TASK_CREDENTIAL",
    ] {
        assert!(
            send.contains(variable),
            "{variable} in send --help:\n{send}"
        );
    }
    assert_eq!(
        send.matches("shows in the process table").count(),
        3,
        "{send}"
    );
    let get = ok(&run(&["task", "get", "--help"]).await);
    for shown in [
        "--wait",
        "--poll-interval <DURATION>",
        "[default: 2s]",
        "--history <N>",
    ] {
        assert!(get.contains(shown), "{shown} in task get --help:\n{get}");
    }
    ok(&run(&["card", "get", "--help"]).await);
}

/// The live demo agent's card with `edit` applied, written to a file: a card that says
/// something the demo agent's own does not, in front of the same live agent.
async fn edited_card(
    origin: &str,
    dir: &TempDir,
    edit: impl FnOnce(&mut serde_json::Value),
) -> String {
    let o = run(&["card", "get", "-a", origin, "-o", "json"]).await;
    let mut card: serde_json::Value = document(&o);
    edit(&mut card);
    let path = dir.0.join(format!("card-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, card.to_string()).expect("write card");
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_003_stream_without_the_capability_falls_back_and_never_hangs() {
    let server = demo().await;
    let dir = TempDir::new("a2acli-nostream");
    let card = edited_card(&server.origin, &dir, |c| {
        c["capabilities"]["streaming"] = serde_json::Value::Bool(false);
    })
    .await;
    for t in TRANSPORTS {
        let o = run(&[
            "send",
            "-a",
            &card,
            "--transport",
            t,
            "--stream",
            "-o",
            "json",
            "stream 2",
        ])
        .await;
        let out = ok(&o);
        assert_eq!(out.lines().count(), 1, "{t}: one JSONL line: {out}");
        let only: pb::StreamResponse = serde_json::from_str(out.trim()).expect("a StreamResponse");
        match only.payload {
            Some(pb::stream_response::Payload::Task(task)) => {
                assert_eq!(task.state(), pb::TaskState::Completed, "{t}")
            }
            other => panic!("{t}: {other:?}"),
        }
        assert!(
            stderr(&o).contains("does not declare streaming"),
            "{t}: {}",
            stderr(&o)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_001_api_key_goes_where_the_card_scheme_says() {
    let dir = TempDir::new("a2acli-apikey");
    let auth = dir.0.join("auth.toml");
    std::fs::write(
        &auth,
        "[api_keys]\nheader = \"X-Team-Key\"\nkeys = { \"k-123\" = \"bob\" }\n",
    )
    .expect("write");
    let auth = auth.display().to_string();
    let server = Trident::serve(&["--agent", "demo", "--store", "memory", "--auth", &auth]).await;
    let card = edited_card(&server.origin, &dir, |c| {
        c["securitySchemes"] = serde_json::json!({
            "team": {"apiKeySecurityScheme": {"location": "header", "name": "X-Team-Key"}}
        });
    })
    .await;
    for t in TRANSPORTS {
        let text = ok(&run(&[
            "send",
            "-a",
            &card,
            "--transport",
            t,
            "--api-key",
            "k-123",
            "hi",
        ])
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        let text = ok(&run_with(
            &["send", "-a", &card, "--transport", t, "hi"],
            None,
            &[("A2ACLI_API_KEY", "k-123")],
        )
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        let e = error_object(
            &run(&[
                "send",
                "-a",
                &card,
                "--transport",
                t,
                "--api-key",
                "nope",
                "-o",
                "json",
                "hi",
            ])
            .await,
            4,
        );
        assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{t}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_interact_005_nothing_is_remembered_between_runs() {
    let server = demo().await;
    let a = server.origin.as_str();
    let home = TempDir::new("a2acli-home");
    let home_dir = home.0.display().to_string();
    let env = [
        ("HOME", home_dir.as_str()),
        ("XDG_CONFIG_HOME", home_dir.as_str()),
    ];
    for t in TRANSPORTS {
        let one = task_of(document(
            &run_with(
                &["send", "-a", a, "--transport", t, "-o", "json", "one"],
                None,
                &env,
            )
            .await,
        ));
        let two = task_of(document(
            &run_with(
                &["send", "-a", a, "--transport", t, "-o", "json", "two"],
                None,
                &env,
            )
            .await,
        ));
        // Each send without ids is a new task in a new context: nothing carried over.
        assert_ne!(one.context_id, two.context_id, "{t}");
        assert_ne!(one.id, two.id, "{t}");
    }
    let written: Vec<_> = std::fs::read_dir(&home.0).expect("home").collect();
    assert!(
        written.is_empty(),
        "nothing stored between runs: {written:?}"
    );
}

/// The compliance report (`docs/a2a-cli-compliance.md`) stays true to these tests: it has one
/// row per requirement of the specification's registry (66: 39 + 15 + 12), every test it
/// names exists here (or in `a2acli_*.rs`), every such test is named there, and no row is `✅`
/// without a test.
#[test]
fn a2acli_the_compliance_report_names_only_tests_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = std::fs::read_to_string(root.join("docs/a2a-cli-compliance.md")).expect("report");
    // This file and the others of its rows (`a2acli_*.rs`).
    let mut tests = String::new();
    for entry in std::fs::read_dir(root.join("tests/it")).expect("tests/it") {
        let path = entry.expect("entry").path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.is_some_and(|n| n.starts_with("a2acli") && n.ends_with(".rs")) {
            tests.push_str(&std::fs::read_to_string(&path).expect("tests"));
        }
    }
    let defined: std::collections::BTreeSet<&str> = tests
        .split("fn ")
        .skip(1)
        .filter_map(|s| s.split('(').next())
        .filter(|n| {
            n.starts_with("a2acli_")
                && *n != "a2acli_the_compliance_report_names_only_tests_that_exist"
        })
        .collect();
    let named = |text: &str| -> Vec<String> {
        text.split('`')
            .filter(|w| {
                w.starts_with("a2acli_") && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .map(str::to_owned)
            .collect()
    };
    let mut ids = std::collections::BTreeSet::new();
    let mut cited = std::collections::BTreeSet::new();
    for row in report
        .lines()
        .filter(|l| l.starts_with("| `A2ACLI_") && !l.starts_with("| `A2ACLI_ERR_"))
    {
        let id = row.split('`').nth(1).expect("an id");
        assert!(ids.insert(id.to_owned()), "{id} has one row");
        let names = named(row);
        for n in &names {
            assert!(
                defined.contains(n.as_str()),
                "{id} names {n}, which is not a test here"
            );
            cited.insert(n.clone());
        }
        if row.contains("| ✅ |") {
            assert!(
                !names.is_empty() || row.contains("tests/it/"),
                "{id} is ✅ without a test"
            );
        }
    }
    assert_eq!(ids.len(), 66, "one row per requirement: {ids:?}");
    for t in &defined {
        assert!(cited.contains(*t), "{t} checks no row of the report");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_poll_002_ctrl_c_stops_a_wait_and_keeps_the_task_id() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        for command in ["send", "task get --wait"] {
            let mut args: Vec<String> = vec!["-a".into(), a.into(), "--transport".into(), t.into()];
            let slow = if command == "send" {
                args.insert(0, "send".into());
                args.push("slow".into());
                None
            } else {
                let slow = task_of(document(
                    &run(&[
                        "send",
                        "-a",
                        a,
                        "--transport",
                        t,
                        "-o",
                        "json",
                        "--async",
                        "slow",
                    ])
                    .await,
                ));
                args.splice(0..0, ["task".to_owned(), "get".to_owned(), slow.id.clone()]);
                args.push("--wait".into());
                Some(slow)
            };
            let child = Command::new(env!("CARGO_BIN_EXE_trident"))
                .args(&args)
                .env("RUST_LOG", "error")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run trident");
            // Until the agent has the task working (a blocking send: a WORKING task exists).
            let id = match &slow {
                Some(task) => task.id.clone(),
                None => {
                    crate::wait::until("the task is working", || async {
                        let listed: pb::ListTasksResponse = document(
                            &run(&["task", "list", "-a", a, "--state", "working", "-o", "json"])
                                .await,
                        );
                        listed.tasks.first().map(|t| t.id.clone())
                    })
                    .await
                }
            };
            // Past the first poll or stream event too.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let pid = child.id().to_string();
            let killed = Command::new("kill")
                .args(["-INT", &pid])
                .status()
                .expect("kill");
            assert!(killed.success());
            let o = tokio::task::spawn_blocking(move || child.wait_with_output())
                .await
                .expect("join")
                .expect("output");
            assert_eq!(o.status.code(), Some(130), "{t} {command}: {}", stderr(&o));
            let text = stdout(&o);
            assert_eq!(
                field(&text, "Task ID"),
                Some(id.as_str()),
                "{t} {command}: {text}"
            );
            assert_eq!(
                field(&text, "State"),
                Some("WORKING"),
                "{t} {command}: {text}"
            );
            assert!(
                field(&text, "Poll").is_some_and(|p| p.ends_with(&format!("--wait {id}"))),
                "{t} {command}: {text}"
            );
            // The task goes on: stopping the wait is not a cancel.
            let task: pb::Task = document(&run(&["task", "get", &id, "-a", a, "-o", "json"]).await);
            assert_eq!(task.state(), pb::TaskState::Working, "{t} {command}");
            ok(&run(&["task", "cancel", &id, "-a", a]).await);
        }
    }
}

/// How many GetTask calls the server has answered, over every binding (its /metrics).
async fn get_task_calls(origin: &str) -> u64 {
    let metrics = reqwest::get(format!("{origin}/metrics"))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("body");
    metrics
        .lines()
        .filter(|l| l.starts_with("trident_requests_total{") && l.contains("method=\"GetTask\""))
        .filter_map(|l| l.rsplit(' ').next().and_then(|n| n.parse::<f64>().ok()))
        .sum::<f64>() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_poll_002_polls_back_off_to_four_times_the_interval() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let slow = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--async",
                "slow",
            ])
            .await,
        ));
        let before = get_task_calls(a).await;
        let o = run(&[
            "task",
            "get",
            &slow.id,
            "-a",
            a,
            "--transport",
            t,
            "--wait",
            "--poll-interval",
            "100ms",
            "--timeout",
            "2s",
        ])
        .await;
        assert_eq!(o.status.code(), Some(5), "{t}: {}", stderr(&o));
        let polls = get_task_calls(a).await - before;
        // 100ms apart every time would be 20 polls; 100, 200, 400, 400, … is 6 or 7.
        assert!((4..=9).contains(&polls), "{t}: {polls} polls in 2s");
        ok(&run(&["task", "cancel", &slow.id, "-a", a]).await);
    }
}

/// A TCP proxy to `upstream` that cuts the first connection `after` it opened; the others
/// pass untouched.
async fn cutting_proxy(upstream: std::net::SocketAddr, after: Duration) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut inbound, _)) = listener.accept().await {
            let cut = std::mem::take(&mut first);
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
                if cut {
                    let _ = tokio::time::timeout(after, copy).await;
                } else {
                    let _ = copy.await;
                }
            });
        }
    });
    addr
}

/// The card of `server` with every interface behind a new [`cutting_proxy`] that cuts its
/// first connection half a second in; returns the card file's path.
async fn card_through_a_cutting_proxy(server: &Trident, dir: &TempDir) -> String {
    let upstream: std::net::SocketAddr = server
        .origin
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let proxy = cutting_proxy(upstream, Duration::from_millis(500)).await;
    edited_card(&server.origin, dir, |c| {
        let text = c
            .to_string()
            .replace(&upstream.to_string(), &proxy.to_string());
        *c = serde_json::from_str(&text).expect("JSON");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_poll_004_a_broken_stream_is_followed_by_polling() {
    let server = demo().await;
    let dir = TempDir::new("a2acli-cut");
    for t in TRANSPORTS {
        // A card whose interfaces go through a proxy that cuts the first connection (the
        // send's stream) half a second in.
        let card = card_through_a_cutting_proxy(&server, &dir).await;
        let o = run(&[
            "send",
            "-a",
            &card,
            "--transport",
            t,
            "--poll-interval",
            "100ms",
            "--debug",
            "-o",
            "json",
            "stream 6 250",
        ])
        .await;
        // A2ACLI_OUT_007: with --debug the wire shows the stream breaking and the polls.
        let wire = wire_lines(&stderr(&o));
        let tag = if t == "JSONRPC" { "JSON-RPC" } else { t };
        let broke = match t {
            "GRPC" => "GRPC ← stream failed: ",
            _ => "← ✗ ",
        };
        assert!(
            wire.lines()
                .any(|l| l.starts_with(tag) && l.contains(broke)),
            "{t}: the break on the wire:\n{wire}"
        );
        let poll = match t {
            "JSONRPC" => r#""method":"GetTask""#,
            "HTTP+JSON" => "HTTP+JSON → GET http://",
            _ => "GRPC → POST /lf.a2a.v1.A2AService/GetTask",
        };
        assert!(wire.contains(poll), "{t}: the polls on the wire:\n{wire}");
        let task = task_of(document(&o));
        assert_eq!(
            task.state(),
            pb::TaskState::Completed,
            "{t}: {}",
            stderr(&o)
        );
        assert_eq!(task.artifacts.len(), 1, "{t}: the task as the agent has it");
        assert!(
            stderr(&o).contains("polling instead"),
            "{t}: {}",
            stderr(&o)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_ver_001_a2a_version_on_every_request_and_never_below_1_0_unasked() {
    // A server that refuses any request without `A2A-Version`: every command works.
    let strict =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--strict-version"]).await;
    let a = strict.origin.as_str();
    for t in TRANSPORTS {
        let task = task_of(document(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "hi"]).await,
        ));
        ok(&run(&["task", "get", &task.id, "-a", a, "--transport", t]).await);
        ok(&run(&["task", "list", "-a", a, "--transport", t]).await);
        ok(&run(&["send", "-a", a, "--transport", t, "--stream", "stream 2"]).await);
        ok(&run(&[
            "task",
            "subscribe",
            &task.id,
            "-a",
            a,
            "--transport",
            t,
            "--after",
            "0",
        ])
        .await);
    }
    // An agent that offers only 0.3: refused, with the way to opt in; in 0.3 when asked.
    let legacy =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--protocols", "0.3"]).await;
    let a = legacy.origin.as_str();
    for t in TRANSPORTS {
        let e = error_object(
            &run(&["send", "-a", a, "--transport", t, "-o", "json", "hi"]).await,
            1,
        );
        assert_eq!(e["code"], "VersionNotSupportedError", "{t}: {e}");
        assert!(
            e["hint"]
                .as_str()
                .is_some_and(|h| h.contains("--a2a-version 0.3")),
            "{t}: {e}"
        );
        let text = ok(&run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--a2a-version",
            "0.3",
            "hi",
        ])
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        let text = ok(&run_with(
            &["send", "-a", a, "--transport", t, "hi"],
            None,
            &[("A2ACLI_A2A_VERSION", "0.3")],
        )
        .await);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_004_debug_never_shows_a_credential() {
    let token = "tok-9f8e7d6c5b4a";
    let grant = format!("alice={token}");
    let server =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--bearer", &grant]).await;
    let a = server.origin.as_str();
    let secrets = [token, "key-1a2b3c4d", "param-5e6f7a8b"];
    let credentials = |bearer: &'static str| {
        [
            "--bearer",
            bearer,
            "--api-key",
            "key-1a2b3c4d",
            "--svc-param",
            "x-extra:param-5e6f7a8b",
        ]
    };
    for t in TRANSPORTS {
        for (bearer, exit) in [(token, 0), ("tok-refused-0000", 4)] {
            let mut args = vec![
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--debug",
                "-o",
                "json",
                "hi",
            ];
            args.extend(credentials(bearer));
            let o = run(&args).await;
            assert_eq!(o.status.code(), Some(exit), "{t}: {}", stderr(&o));
            let diagnostics = stderr(&o);
            assert!(diagnostics.contains("debug: → Send"), "{t}: {diagnostics}");
            assert!(
                diagnostics.contains("debug: transport: "),
                "{t}: {diagnostics}"
            );
            for line in [
                "debug: credential: Authorization: Bearer [redacted]",
                "debug: credential: API key in header X-API-Key: [redacted]",
                "debug: service parameter: x-extra: [redacted]",
            ] {
                assert!(diagnostics.contains(line), "{t}: {line} in {diagnostics}");
            }
            // A2ACLI_OUT_007: the exchange as it crossed the wire, the credentials' headers
            // (metadata on gRPC) shown redacted.
            let wire = wire_lines(&diagnostics);
            let tag = match t {
                "JSONRPC" => "JSON-RPC",
                other => other,
            };
            for header in ["authorization", "x-api-key", "x-extra"] {
                let line = format!("{tag} → {header}: [redacted]");
                assert!(wire.contains(&line), "{t}: {line} in\n{wire}");
            }
            let refused = exit != 0;
            // A blocking send goes out as SendStreamingMessage (the wait prefers a stream).
            let expected: &[&str] = match (t, refused) {
                ("JSONRPC", false) => &[
                    "JSON-RPC → POST http://127.0.0.1:",
                    // The JSON-RPC envelope as sent, the status line, the SSE lines and the
                    // envelopes as received.
                    r#"JSON-RPC → {"id":1,"jsonrpc":"2.0","method":"SendStreamingMessage","params":{"#,
                    "JSON-RPC ← HTTP/1.1 200 OK",
                    "JSON-RPC ← content-type: text/event-stream",
                    r#"JSON-RPC ← data: {"jsonrpc":"2.0","id":1,"result":{"task":{"#,
                    "JSON-RPC ← id: 1",
                ],
                ("JSONRPC", true) => &[
                    r#"JSON-RPC → {"id":1,"jsonrpc":"2.0","method":"SendStreamingMessage","params":{"#,
                    "JSON-RPC ← HTTP/1.1 200 OK",
                    "JSON-RPC ← www-authenticate: Bearer ",
                    r#"JSON-RPC ← {"jsonrpc":"2.0","id":1,"error":{"code":-31401,"#,
                ],
                ("HTTP+JSON", false) => &[
                    "HTTP+JSON → POST http://127.0.0.1:",
                    r#"HTTP+JSON → {"configuration":"#,
                    "HTTP+JSON ← HTTP/1.1 200 OK",
                    r#"HTTP+JSON ← data: {"task":{"#,
                ],
                ("HTTP+JSON", true) => &[
                    "HTTP+JSON → POST http://127.0.0.1:",
                    "HTTP+JSON ← HTTP/1.1 401 Unauthorized",
                    r#"HTTP+JSON ← {"error":{"code":401,"#,
                ],
                (_, false) => &[
                    "GRPC → POST /lf.a2a.v1.A2AService/SendStreamingMessage (HTTP/2)",
                    "GRPC → a2a-version: 1.0",
                    "GRPC ← content-type: application/grpc",
                    "GRPC ← message 1 StreamResponse",
                    "GRPC ← grpc-status: 0 (OK)",
                ],
                (_, true) => &[
                    "GRPC → POST /lf.a2a.v1.A2AService/SendStreamingMessage (HTTP/2)",
                    "GRPC ← grpc-status: 16 (Unauthenticated)",
                    "GRPC ← grpc-message: ",
                ],
            };
            for line in expected {
                assert!(
                    wire.lines().any(|l| l.starts_with(line)),
                    "{t}: a line starting {line:?} in\n{wire}"
                );
            }
            assert!(
                !diagnostics.contains('\u{1b}'),
                "{t}: no escape sequence on a stderr that is not a terminal"
            );
            for secret in secrets.iter().chain([&bearer]) {
                assert!(
                    !diagnostics.contains(secret),
                    "{t}: {secret} in\n{diagnostics}"
                );
                assert!(!stdout(&o).contains(secret), "{t}: {secret} on stdout");
            }
            // The payload is untouched: one document on stdout.
            let _: serde_json::Value = document(&o);
        }
    }
}

/// The `debug: wire: ` lines of a run's stderr, without that prefix.
pub(crate) fn wire_lines(stderr: &str) -> String {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("debug: wire: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A scripted JSON-RPC agent for what the demo agent never does: artifacts with file and data
/// parts, a task reported `TASK_STATE_UNSPECIFIED`, and a record of each request as it
/// arrived (headers and body), to see what the tool sent.
#[derive(Default)]
struct Scripted {
    requests: std::sync::Mutex<Vec<(axum::http::HeaderMap, serde_json::Value)>>,
    polls: std::sync::atomic::AtomicUsize,
}

impl Scripted {
    /// Serves it on a free port; returns it and the path of a card naming it.
    async fn start(dir: &TempDir) -> (std::sync::Arc<Self>, String) {
        use axum::extract::State;
        let me = std::sync::Arc::new(Self::default());
        let app = axum::Router::new()
            .route(
                "/",
                axum::routing::post(
                    |State(me): State<std::sync::Arc<Self>>,
                     headers: axum::http::HeaderMap,
                     axum::Json(body): axum::Json<serde_json::Value>| async move {
                        let result = me.answer(&body);
                        me.requests
                            .lock()
                            .expect("lock")
                            .push((headers, body.clone()));
                        axum::Json(serde_json::json!({
                            "jsonrpc": "2.0", "id": body["id"].clone(), "result": result,
                        }))
                    },
                ),
            )
            .with_state(me.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        let card = serde_json::json!({
            "name": "scripted", "description": "a scripted agent", "version": "1",
            "supportedInterfaces": [
                {"url": format!("http://{addr}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": false},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        });
        let path = dir.0.join("scripted-card.json");
        std::fs::write(&path, card.to_string()).expect("write card");
        (me, path.display().to_string())
    }

    fn task(id: &str, state: &str) -> serde_json::Value {
        serde_json::json!({
            "id": id, "contextId": "ctx-1", "status": {"state": state},
            "artifacts": [{
                "artifactId": "a1", "name": "report",
                "parts": [
                    {"raw": "JVBERi0=", "mediaType": "application/pdf", "filename": "report.pdf"},
                    {"url": "https://files.example/x.png", "mediaType": "image/png", "filename": "x.png"},
                    {"data": {"k": 1}, "mediaType": "application/json"},
                    {"text": "done"},
                ],
            }],
        })
    }

    fn answer(&self, body: &serde_json::Value) -> serde_json::Value {
        let params = &body["params"];
        match body["method"].as_str() {
            Some("SendMessage") => {
                serde_json::json!({"task": Self::task("t-1", "TASK_STATE_COMPLETED")})
            }
            Some("GetTask") => {
                let id = params["id"].as_str().unwrap_or_default();
                let n = self.polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // `t-late` is unspecified for three polls, `t-never` for ever.
                let state = if id == "t-never" || n < 3 {
                    "TASK_STATE_UNSPECIFIED"
                } else {
                    "TASK_STATE_COMPLETED"
                };
                Self::task(id, state)
            }
            _ => serde_json::Value::Null,
        }
    }

    fn sent(&self, method: &str) -> Vec<(axum::http::HeaderMap, serde_json::Value)> {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, b)| b["method"] == method)
            .cloned()
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_send_004_file_and_data_artifacts_are_shown_not_dropped() {
    let dir = TempDir::new("a2acli-scripted");
    let (_agent, card) = Scripted::start(&dir).await;
    let text = ok(&run(&["send", "-a", &card, "hi"]).await);
    let artifact = text
        .split("Artifact: report (a1)\n")
        .nth(1)
        .expect("the artifact block");
    assert!(
        artifact.starts_with(
            "  [file name=report.pdf media-type=application/pdf size=5]\n  \
             [file name=x.png media-type=image/png url=https://files.example/x.png]\n  \
             [data media-type=application/json]\n  {\n    \"k\": 1\n  }\n  done\n\n"
        ),
        "{text}"
    );
    // -o json: the task as the agent sent it, every part in it.
    let task = task_of(document(
        &run(&["send", "-a", &card, "-o", "json", "hi"]).await,
    ));
    assert_eq!(task.artifacts[0].parts.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_poll_003_unspecified_is_neither_terminal_nor_interrupted() {
    let dir = TempDir::new("a2acli-scripted");
    let (agent, card) = Scripted::start(&dir).await;
    let text = ok(&run(&[
        "task",
        "get",
        "t-late",
        "-a",
        &card,
        "--wait",
        "--poll-interval",
        "50ms",
    ])
    .await);
    assert_eq!(field(&text, "State"), Some("COMPLETED"), "{text}");
    assert!(
        agent.polls.load(std::sync::atomic::Ordering::SeqCst) >= 4,
        "it kept polling"
    );
    // One-shot: reported as received.
    let text = ok(&run(&["task", "get", "t-never", "-a", &card]).await);
    assert_eq!(field(&text, "State"), Some("UNSPECIFIED"), "{text}");
    // Never settling: --timeout still ends it.
    let e = error_object(
        &run(&[
            "task",
            "get",
            "t-never",
            "-a",
            &card,
            "--wait",
            "--poll-interval",
            "50ms",
            "--timeout",
            "400ms",
            "-o",
            "json",
        ])
        .await,
        5,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_TIMEOUT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_interact_003_auth_001_what_the_tool_sends() {
    let dir = TempDir::new("a2acli-scripted");
    let (agent, card) = Scripted::start(&dir).await;
    ok(&run(&[
        "send",
        "-a",
        &card,
        "--svc-param",
        "x-trace-note:abc",
        "--metadata",
        "{\"k\":\"v\"}",
        "hi",
    ])
    .await);
    ok(&run(&["send", "-a", &card, "--context-id", "ctx-given", "again"]).await);
    let sent = agent.sent("SendMessage");
    assert_eq!(sent.len(), 2);
    // No identifier of the tool's own: none unless given, exactly the one given.
    let first = &sent[0].1["params"]["message"];
    assert!(
        first["messageId"].as_str().is_some_and(|m| !m.is_empty()),
        "{first}"
    );
    assert!(
        first.get("contextId").is_none() && first.get("taskId").is_none(),
        "{first}"
    );
    let second = &sent[1].1["params"]["message"];
    assert_eq!(second["contextId"], "ctx-given");
    assert!(second.get("taskId").is_none(), "{second}");
    // The service parameter travels as a header; the metadata in the payload.
    assert_eq!(
        sent[0].0.get("x-trace-note").and_then(|v| v.to_str().ok()),
        Some("abc")
    );
    assert_eq!(
        sent[0].1["params"]["metadata"],
        serde_json::json!({"k": "v"})
    );
    assert!(sent[1].0.get("x-trace-note").is_none());
}

/// `openssl s_server -www` on a self-signed certificate: a TLS endpoint that answers any GET
/// with an HTML status page (not a card). `None` where `openssl` is not installed.
struct SelfSigned {
    child: std::process::Child,
    port: u16,
    _dir: TempDir,
}

impl SelfSigned {
    fn start() -> Option<Self> {
        let dir = TempDir::new("a2acli-tls");
        let (key, cert) = (dir.0.join("key.pem"), dir.0.join("cert.pem"));
        let made = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()?;
        if !made.success() {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("openssl")
            .args(["s_server", "-www", "-quiet", "-accept", &port.to_string()])
            .arg("-cert")
            .arg(&cert)
            .arg("-key")
            .arg(&key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        Some(Self {
            child,
            port,
            _dir: dir,
        })
    }
}

impl Drop for SelfSigned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_003_insecure_is_explicit_and_always_warned_about() {
    let Some(tls) = SelfSigned::start() else {
        return; // No openssl here.
    };
    let url = format!("https://127.0.0.1:{}", tls.port);
    // Listening yet?
    crate::wait::until("openssl s_server listens", || async {
        std::net::TcpStream::connect(("127.0.0.1", tls.port))
            .ok()
            .map(drop)
    })
    .await;
    // Verification is on by default: the self-signed certificate is refused.
    let o = run(&["card", "get", "-a", &url, "-o", "json"]).await;
    let e = error_object(&o, 3);
    assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE", "{e}");
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    // Whatever is logged there is plain text: stderr is a pipe, not a terminal.
    let plain = run_with(&["card", "get", "-a", &url], None, &[("RUST_LOG", "warn")]).await;
    assert!(
        !stderr(&plain).contains('\u{1b}'),
        "no ANSI: {:?}",
        stderr(&plain)
    );
    // --insecure gets through TLS (to a page that is no card), and says so on stderr.
    let o = run(&["card", "get", "-a", &url, "--insecure", "-o", "json"]).await;
    let e = error_object(&o, 1);
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_INVALID", "{e}");
    let warned = stderr(&o);
    assert!(
        warned.contains("warning: --insecure: TLS certificates are not verified"),
        "{warned}"
    );
    assert!(
        !warned.contains("credentials"),
        "no credential, no credential warning: {warned}"
    );
    // With a credential, a second warning names it.
    let o = run(&[
        "card",
        "get",
        "-a",
        &url,
        "--insecure",
        "--bearer",
        "t0k",
        "-o",
        "json",
    ])
    .await;
    assert!(
        stderr(&o).contains("warning: --insecure: your credentials"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_default_001_every_default_is_shown_and_overridable() {
    // The defaults, and the flag that overrides each, in --help.
    let help = ok(&run(&["send", "--help"]).await);
    for shown in [
        "--transport <BINDING>",
        "--async",
        "[default: text]",
        "--verbose",
        "--a2a-version <auto|1.0|0.3>",
        "[default: auto]",
        "--insecure",
    ] {
        assert!(help.contains(shown), "{shown} in send --help:\n{help}");
    }
    // Detail: concise by default, the whole exchange with --verbose.
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let concise = ok(&run(&["send", "-a", a, "--transport", t, "hello"]).await);
        assert!(!concise.contains("History: "), "{t}: {concise}");
        let verbose = ok(&run(&["send", "-a", a, "--transport", t, "--verbose", "hello"]).await);
        assert!(
            verbose.contains("History: user\n  hello\n"),
            "{t}: {verbose}"
        );
        let id = field(&verbose, "Task ID").expect("Task ID");
        let got = ok(&run(&["task", "get", id, "-a", a, "--transport", t, "--verbose"]).await);
        assert!(got.contains("History: user\n  hello\n"), "{t}: {got}");
    }
    // Transport, completion, output, protocol version and TLS are overridden in the tests
    // named in the report (tx_002, send_001_002, out_002, ver_001, auth_003).
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_tx_003_the_interface_tenant_goes_in_every_request() {
    let server = demo().await;
    let a = server.origin.as_str();
    let dir = TempDir::new("a2acli-tenant");
    let card = edited_card(a, &dir, |c| {
        if let Some(interfaces) = c["supportedInterfaces"].as_array_mut() {
            for i in interfaces {
                i["tenant"] = serde_json::Value::String("acme".to_owned());
            }
        }
    })
    .await;
    for t in TRANSPORTS {
        let task = task_of(document(
            &run(&["send", "-a", &card, "--transport", t, "-o", "json", "hi"]).await,
        ));
        // The task lives under the tenant: found through the tenant's card only.
        let got: pb::Task = document(
            &run(&[
                "task",
                "get",
                &task.id,
                "-a",
                &card,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
        );
        assert_eq!(got.id, task.id, "{t}");
        let e = error_object(
            &run(&[
                "task",
                "get",
                &task.id,
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
            1,
        );
        assert_eq!(
            e["code"], "TaskNotFoundError",
            "{t}: without the tenant: {e}"
        );
        let listed: pb::ListTasksResponse =
            document(&run(&["task", "list", "-a", &card, "--transport", t, "-o", "json"]).await);
        assert!(listed.tasks.iter().any(|x| x.id == task.id), "{t}");
        // Cancel reaches the task under the tenant (it has ended: not cancelable), and
        // only there.
        let e = error_object(
            &run(&[
                "task",
                "cancel",
                &task.id,
                "-a",
                &card,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
            1,
        );
        assert_eq!(e["code"], "TaskNotCancelableError", "{t}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_list_001_pages_and_filters_by_state_and_context() {
    let server = demo().await;
    let a = server.origin.as_str();
    let first = task_of(document(
        &run(&["send", "-a", a, "-o", "json", "one"]).await,
    ));
    let same = task_of(document(
        &run(&[
            "send",
            "-a",
            a,
            "-o",
            "json",
            "--context-id",
            &first.context_id,
            "two",
        ])
        .await,
    ));
    let asked = task_of(document(
        &run(&["send", "-a", a, "-o", "json", "input"]).await,
    ));
    for t in TRANSPORTS {
        let by_context: pb::ListTasksResponse = document(
            &run(&[
                "task",
                "list",
                "-a",
                a,
                "--transport",
                t,
                "--context-id",
                &first.context_id,
                "-o",
                "json",
            ])
            .await,
        );
        let mut ids: Vec<&str> = by_context.tasks.iter().map(|x| x.id.as_str()).collect();
        ids.sort();
        let mut want = vec![first.id.as_str(), same.id.as_str()];
        want.sort();
        assert_eq!(ids, want, "{t}");
        let by_state: pb::ListTasksResponse = document(
            &run(&[
                "task",
                "list",
                "-a",
                a,
                "--transport",
                t,
                "--state",
                "input-required",
                "-o",
                "json",
            ])
            .await,
        );
        assert_eq!(by_state.tasks.len(), 1, "{t}");
        assert_eq!(by_state.tasks[0].id, asked.id, "{t}");
        // A page at a time, following the token the text names.
        let page = ok(&run(&[
            "task",
            "list",
            "-a",
            a,
            "--transport",
            t,
            "--page-size",
            "2",
        ])
        .await);
        assert_eq!(field(&page, "Shown"), Some("2"), "{t}: {page}");
        assert_eq!(field(&page, "Total"), Some("3"), "{t}: {page}");
        let token = field(&page, "Next Page Token").expect("a next page");
        let rest = ok(&run(&[
            "task",
            "list",
            "-a",
            a,
            "--transport",
            t,
            "--page-size",
            "2",
            "--page-token",
            token,
        ])
        .await);
        assert_eq!(field(&rest, "Shown"), Some("1"), "{t}: {rest}");
        assert_eq!(field(&rest, "Next Page Token"), None, "{t}: {rest}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_push_001_task_push_config_create_get_list_delete() {
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--push-allow",
        "127.0.0.1",
    ])
    .await;
    let a = server.origin.as_str();
    let hook = "http://127.0.0.1:9/hook";
    for t in TRANSPORTS {
        let slow = task_of(document(
            &run(&[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
                "--async",
                "slow",
            ])
            .await,
        ));
        let id = slow.id.as_str();
        let created = ok(&run(&[
            "task",
            "push-config",
            "create",
            id,
            "-a",
            a,
            "--transport",
            t,
            "--url",
            hook,
            "--id",
            "h1",
            "--notification-token",
            "tk",
            "--auth-scheme",
            "Bearer",
            "--auth-credentials",
            "s3cret",
        ])
        .await);
        assert_eq!(field(&created, "Config ID"), Some("h1"), "{t}: {created}");
        assert_eq!(field(&created, "URL"), Some(hook), "{t}: {created}");
        assert_eq!(
            field(&created, "Auth Scheme"),
            Some("Bearer"),
            "{t}: {created}"
        );
        assert!(
            !created.contains("s3cret"),
            "{t}: credentials are not printed: {created}"
        );
        let got: pb::TaskPushNotificationConfig = document(
            &run(&[
                "task",
                "push-config",
                "get",
                id,
                "h1",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
        );
        assert_eq!((got.id.as_str(), got.url.as_str()), ("h1", hook), "{t}");
        ok(&run(&[
            "task",
            "push-config",
            "create",
            id,
            "-a",
            a,
            "--transport",
            t,
            "--url",
            hook,
            "--id",
            "h2",
        ])
        .await);
        let listed: pb::ListTaskPushNotificationConfigsResponse = document(
            &run(&[
                "task",
                "push-config",
                "list",
                id,
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
        );
        let mut ids: Vec<&str> = listed.configs.iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        assert_eq!(ids, ["h1", "h2"], "{t}");
        let deleted = ok(&run(&[
            "task",
            "push-config",
            "delete",
            id,
            "h1",
            "-a",
            a,
            "--transport",
            t,
        ])
        .await);
        assert_eq!(field(&deleted, "Deleted"), Some("h1"), "{t}: {deleted}");
        let e = error_object(
            &run(&[
                "task",
                "push-config",
                "get",
                id,
                "h1",
                "-a",
                a,
                "--transport",
                t,
                "-o",
                "json",
            ])
            .await,
            1,
        );
        assert_eq!(
            e["code"], "TaskNotFoundError",
            "{t}: a deleted configuration: {e}"
        );
        ok(&run(&["task", "cancel", id, "-a", a]).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_ver_003_push_config_checks_the_card_first() {
    let server = demo().await;
    let dir = TempDir::new("a2acli-nopush");
    let card = edited_card(&server.origin, &dir, |c| {
        c["capabilities"]["pushNotifications"] = serde_json::Value::Bool(false);
    })
    .await;
    let before = get_task_calls(&server.origin).await;
    let e = error_object(
        &run(&[
            "task",
            "push-config",
            "list",
            "t",
            "-a",
            &card,
            "-o",
            "json",
        ])
        .await,
        1,
    );
    assert_eq!(e["code"], "PushNotificationNotSupportedError", "{e}");
    assert!(
        e["hint"]
            .as_str()
            .is_some_and(|h| h.contains("pushNotifications")),
        "{e}"
    );
    // Refused before any call (the demo agent itself would have answered).
    let metrics = reqwest::get(format!("{}/metrics", server.origin))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    assert!(
        !metrics.contains("method=\"ListTaskPushNotificationConfigs\""),
        "no call was made"
    );
    assert_eq!(get_task_calls(&server.origin).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_cli_002_completion_scripts_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_trident()"),
        ("zsh", "#compdef trident"),
        ("fish", "complete -c trident"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[trident]"),
    ] {
        let script = ok(&run(&["completion", shell]).await);
        assert!(script.contains(marker), "{shell}: {marker}");
        for word in ["push-config", "agent-card", "context-id"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    let e = error_object(&run(&["completion", "tcsh", "-o", "json"]).await, 2);
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_card_get_002_validate_names_each_missing_required_field() {
    let server = demo().await;
    let a = server.origin.as_str();
    let text = ok(&run(&["card", "get", a, "--validate"]).await);
    assert_eq!(
        field(&text, "Valid"),
        Some("yes (A2A 1.0 AgentCard)"),
        "{text}"
    );
    let dir = TempDir::new("a2acli-validate");
    let broken = edited_card(a, &dir, |c| {
        if let Some(m) = c.as_object_mut() {
            m.remove("version");
            m.remove("skills");
        }
        c["supportedInterfaces"][0]["protocolVersion"] = serde_json::Value::String(String::new());
    })
    .await;
    // Without --validate the card is still used; with it, every missing field is named.
    ok(&run(&["card", "get", &broken]).await);
    let e = error_object(
        &run(&["card", "get", &broken, "--validate", "-o", "json"]).await,
        1,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_INVALID");
    let message = e["message"].as_str().unwrap_or_default();
    for problem in [
        "version is required",
        "skills is required",
        "supportedInterfaces[0].protocolVersion is required",
    ] {
        assert!(message.contains(problem), "{problem} in {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_task_subscribe_002_a_broken_stream_is_resumed_where_it_broke() {
    let server = demo().await;
    let dir = TempDir::new("a2acli-resume");
    for t in TRANSPORTS {
        let card = card_through_a_cutting_proxy(&server, &dir).await;
        // --stream: every event once, although the first connection is cut half-way.
        let o = run(&[
            "send",
            "-a",
            &card,
            "--transport",
            t,
            "--stream",
            "-o",
            "json",
            "stream 6 200",
        ])
        .await;
        let lines: Vec<pb::StreamResponse> = ok(&o)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a StreamResponse"))
            .collect();
        assert!(
            stderr(&o).contains("subscribing again"),
            "{t}: {}",
            stderr(&o)
        );
        let chunks = lines
            .iter()
            .filter(|l| {
                matches!(
                    l.payload,
                    Some(pb::stream_response::Payload::ArtifactUpdate(_))
                )
            })
            .count();
        assert_eq!(chunks, 6, "{t}: each chunk once: {lines:?}");
        match lines.last().and_then(|l| l.payload.as_ref()) {
            Some(pb::stream_response::Payload::StatusUpdate(u)) => assert_eq!(
                u.status.as_ref().map(|s| s.state),
                Some(pb::TaskState::Completed as i32),
                "{t}"
            ),
            other => panic!("{t}: ends with the terminal status: {other:?}"),
        }
    }
}
