//! Tier 3 a2a-cli rows, in the style of `a2acli.rs` (each test named after the rows it
//! checks, the real binary against a live agent, on all three bindings): in-task
//! `AUTH_REQUIRED` resolution (`A2ACLI_AUTH_011`) and catalog resolution
//! (`A2ACLI_CARD_GET_005`).

use std::process::Output;

use trident_proto as pb;

use crate::process::{Run, TempDir, Trident, field, ok, stderr, stdout};

/// The bindings as `--transport` names them (the card's names).
const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

async fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    Run::new(args).envs(env.iter().copied()).output().await
}

/// The credential the calendar agent accepts.
const CREDENTIAL: &str = "cal-token-7f3a";

/// An `--exec` agent that needs authorization mid-task: a new task pauses at `AUTH_REQUIRED`
/// with a status message naming the scheme and scopes it needs; a follow-up carrying
/// [`CREDENTIAL`] in the tool's in-band form completes it with an artifact; any other
/// follow-up asks again.
fn calendar_agent(dir: &TempDir) -> String {
    let path = dir.0.join("calendar.sh");
    let script = format!(
        r#"#!/bin/sh
IFS= read -r request
answered=no
case "$request" in
  *'"task":null'*) answered=new ;;
  *'"credentials":"{CREDENTIAL}"'*) case "$request" in *'"scheme":"calendar"'*) answered=yes ;; esac ;;
esac
case "$answered" in
  new)
    echo '{{"type":"auth-required","parts":[{{"text":"Sign in to the calendar"}},{{"data":{{"securityScheme":"calendar","scopes":["calendar.read"]}}}}]}}' ;;
  yes)
    echo '{{"type":"artifact","id":"agenda","name":"agenda","text":"3 meetings today"}}'
    echo '{{"type":"completed"}}' ;;
  *)
    echo '{{"type":"auth-required","text":"That credential was not accepted"}}' ;;
esac
"#
    );
    std::fs::write(&path, script).expect("write the agent");
    format!("sh {}", path.display())
}

fn task_of(resp: pb::SendMessageResponse) -> pb::Task {
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

#[track_caller]
fn no_credential_shown(o: &Output) {
    let all = format!("{}{}", stdout(o), stderr(o));
    assert!(!all.contains(CREDENTIAL), "the credential is shown:\n{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_011_auth_required_is_resumed_with_a_credential() {
    let dir = TempDir::new("a2acli-in-task-auth");
    let agent = calendar_agent(&dir);
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // Blocking, the credential from the flag: paused, answered, completed; --verbose
        // shows the history (the follow-up among it) and --debug every request, yet the
        // credential appears nowhere.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--task-credential",
                CREDENTIAL,
                "--verbose",
                "--debug",
                "what is on today?",
            ],
            &[],
        )
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        assert!(text.contains("3 meetings today"), "{t}: {text}");
        assert!(
            text.contains("[redacted]"),
            "{t}: the follow-up in the history: {text}"
        );
        let err = stderr(&o);
        assert!(
            err.contains(
                "needs authorization: Sign in to the calendar; scheme \"calendar\"; scopes \
                 calendar.read"
            ) && err.contains("resuming task")
                && err.contains("--task-credential"),
            "{t}: {err}"
        );
        assert!(!err.contains("warning:"), "{t}: {err}");
        no_credential_shown(&o);

        // -o json, the credential from its variable: one document, the completed task.
        let o = run(
            &["send", "-a", a, "--transport", t, "-o", "json", "agenda?"],
            &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
        )
        .await;
        let task = task_of(serde_json::from_str(&ok(&o)).expect("one document"));
        assert_eq!(
            task.state(),
            pb::TaskState::Completed,
            "{t}: {}",
            stderr(&o)
        );
        assert_eq!(task.artifacts.len(), 1, "{t}");
        no_credential_shown(&o);

        // Streaming, JSONL: the pause and then the completion, in one run.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--stream",
                "-o",
                "json",
                "--task-credential",
                CREDENTIAL,
                "agenda?",
            ],
            &[],
        )
        .await;
        let out = ok(&o);
        let states: Vec<String> = out
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSONL line"))
            .filter_map(|v| {
                v["statusUpdate"]["status"]["state"]
                    .as_str()
                    .or(v["task"]["status"]["state"].as_str())
                    .map(str::to_owned)
            })
            .collect();
        let paused = states.iter().position(|s| s == "TASK_STATE_AUTH_REQUIRED");
        let done = states.iter().position(|s| s == "TASK_STATE_COMPLETED");
        assert!(
            paused.is_some() && done.is_some() && paused < done,
            "{t}: {states:?}\n{out}"
        );
        assert!(out.contains("3 meetings today"), "{t}: {out}");
        no_credential_shown(&o);

        // Streaming, text: the summary ends completed.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--stream",
                "--task-credential",
                CREDENTIAL,
                "agenda?",
            ],
            &[],
        )
        .await;
        let out = ok(&o);
        assert_eq!(
            out.lines().rev().find_map(|l| l.strip_prefix("State: ")),
            Some("COMPLETED"),
            "{t}: {out}"
        );
        no_credential_shown(&o);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_011_without_a_credential_the_pause_is_reported_and_resumable() {
    let dir = TempDir::new("a2acli-in-task-auth");
    let agent = calendar_agent(&dir);
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        for stream in [false, true] {
            // No flag, no kept token, no terminal: reported as before, with the way on.
            let mut args = vec!["send", "-a", a, "--transport", t];
            if stream {
                args.push("--stream");
            }
            args.push("agenda?");
            let o = run(&args, &[]).await;
            let text = ok(&o);
            // (A stream's text ends with the summary: its last State line.)
            assert_eq!(
                text.lines().rev().find_map(|l| l.strip_prefix("State: ")),
                Some("AUTH_REQUIRED"),
                "{t}: {text}"
            );
            let id = field(&text, "Task ID").expect("Task ID").to_owned();
            let resume = field(&text, "Resume").expect("Resume").to_owned();
            assert!(
                resume.contains("A2ACLI_TASK_CREDENTIAL=") && resume.contains(&id),
                "{t}: {resume}"
            );
            let err = stderr(&o);
            assert!(
                err.starts_with("warning: ") && err.contains("AUTH_REQUIRED"),
                "{t}: {err}"
            );
            // The Resume line, followed: the credential alone answers the waiting task.
            let o = run(
                &["send", "-a", a, "--transport", t, "--task-id", &id],
                &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
            )
            .await;
            let text = ok(&o);
            assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
            assert_eq!(field(&text, "Task ID"), Some(id.as_str()), "{t}");
            no_credential_shown(&o);
        }

        // A credential the agent does not accept is sent once, then the pause is reported.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--task-credential",
                "wrong",
                "agenda?",
            ],
            &[],
        )
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("AUTH_REQUIRED"), "{t}: {text}");
        let err = stderr(&o);
        assert!(
            err.contains("did not accept the credential") && err.matches("resuming").count() == 1,
            "{t}: {err}"
        );
        // --async returns at once: nothing is answered.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--async",
                "--task-credential",
                CREDENTIAL,
                "agenda?",
            ],
            &[],
        )
        .await;
        let text = ok(&o);
        assert!(!stderr(&o).contains("resuming"), "{t}: {}", stderr(&o));
        assert_ne!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        // --task-credential alone on a task that is not waiting for it is a usage error.
        let o = run(
            &["send", "-a", a, "--transport", t, "-o", "json", "agenda?"],
            &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
        )
        .await;
        let done = task_of(serde_json::from_str(&ok(&o)).expect("one document"));
        let o = run(
            &["send", "-a", a, "--transport", t, "--task-id", &done.id],
            &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
        )
        .await;
        assert_eq!(o.status.code(), Some(2), "{t}: {}", stderr(&o));
        assert!(stderr(&o).contains("not waiting for authorization"), "{t}");
    }
}
