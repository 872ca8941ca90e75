//! The `trident` command as a real process: every client command over each binding against a
//! real `trident serve`, exit codes, `--json`, and `serve --exec` with the example agents.

use std::process::Output;
use std::time::Duration;

use trident_proto as pb;

use crate::process::{Run, Trident, ok};
use crate::wait::until;

const BINDINGS: [&str; 3] = ["grpc", "jsonrpc", "rest"];

/// Runs `trident ARGS…` to completion (bounded in time).
async fn trident(args: &[&str]) -> Output {
    Run::new(args).output().await
}

fn json<T: serde::de::DeserializeOwned>(o: &Output) -> T {
    serde_json::from_str(ok(o).trim()).expect("ProtoJSON output")
}

fn json_lines<T: serde::de::DeserializeOwned>(o: &Output) -> Vec<T> {
    ok(o)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("one ProtoJSON object per line"))
        .collect()
}

fn task_of(resp: pb::SendMessageResponse) -> pb::Task {
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_commands_over_every_binding() {
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--push-allow",
        "127.0.0.1",
    ])
    .await;
    let url = server.origin.as_str();
    for b in BINDINGS {
        let card = ok(&trident(&["card", url, "--binding", b]).await);
        assert!(card.contains("Trident demo agent"), "{card}");
        assert!(card.contains("GRPC") && card.contains("JSONRPC"), "{card}");
        let card: pb::AgentCard = json(&trident(&["card", url, "--json"]).await);
        // Three 1.0 interfaces and their v0.3 twins.
        assert_eq!(card.supported_interfaces.len(), 6);

        // Blocking send, human and JSON.
        let text = ok(&trident(&["send", url, "hello there", "--binding", b]).await);
        assert!(
            text.contains("COMPLETED") && text.contains("hello there"),
            "{text}"
        );
        let done = task_of(json(
            &trident(&["send", url, "hi", "--binding", b, "--json"]).await,
        ));
        assert_eq!(done.state(), pb::TaskState::Completed);

        // Streaming, printed as events arrive.
        let streamed = ok(&trident(&["send", url, "stream 3", "--stream", "--binding", b]).await);
        assert!(
            streamed.contains("WORKING")
                && streamed.matches("Artifact: stream").count() == 3
                && streamed.contains("COMPLETED"),
            "{streamed}"
        );
        let events: Vec<pb::StreamResponse> =
            json_lines(&trident(&["send", url, "stream 2", "--stream", "--json"]).await);
        assert!(events.len() >= 4, "{events:?}");

        // Input required, then a follow-up with --task.
        let asked = task_of(json(
            &trident(&["send", url, "input", "--binding", b, "--json"]).await,
        ));
        assert_eq!(asked.state(), pb::TaskState::InputRequired);
        let answered =
            ok(&trident(&["send", url, "Ada", "--task", &asked.id, "--binding", b]).await);
        assert!(answered.contains("COMPLETED"), "{answered}");

        // An A2A error is exit status 1 on every binding.
        let missing = trident(&["get", url, "missing", "--binding", b]).await;
        assert_eq!(missing.status.code(), Some(1));

        // get with history.
        let got = ok(&trident(&["get", url, &asked.id, "--history", "5", "--binding", b]).await);
        assert!(got.contains("History: user\n  Ada\n"), "{got}");

        // list: filters and --all.
        let listed =
            ok(&trident(&["list", url, "--state", "completed", "--all", "--binding", b]).await);
        assert!(
            listed.contains(&asked.id) && listed.contains(&done.id),
            "{listed}"
        );
        let paged = ok(&trident(&["list", url, "--page-size", "1", "--binding", b]).await);
        assert!(paged.contains("Next Page Token: "), "{paged}");

        // cancel a slow task.
        let slow = task_of(json(
            &trident(&[
                "send",
                url,
                "slow",
                "--return-immediately",
                "--json",
                "--binding",
                b,
            ])
            .await,
        ));
        let canceled = ok(&trident(&["cancel", url, &slow.id, "--binding", b]).await);
        assert!(canceled.contains("CANCELED"), "{canceled}");

        // subscribe from the start of a finished task's log.
        let replay =
            ok(&trident(&["subscribe", url, &done.id, "--after", "0", "--binding", b]).await);
        assert!(
            replay.starts_with("Task ID: ") && replay.contains("State: COMPLETED"),
            "{replay}"
        );

        // push set/get/list/delete.
        let hook = "http://127.0.0.1:9/hook";
        let set = ok(&trident(&[
            "push",
            "set",
            url,
            &slow.id,
            hook,
            "--id",
            "h1",
            "--binding",
            b,
        ])
        .await);
        assert!(set.contains("h1") && set.contains(hook), "{set}");
        let got: pb::TaskPushNotificationConfig =
            json(&trident(&["push", "get", url, &slow.id, "h1", "--json", "--binding", b]).await);
        assert_eq!(got.url, hook);
        let listed = ok(&trident(&["push", "list", url, &slow.id, "--binding", b]).await);
        assert!(listed.contains("h1"), "{listed}");
        ok(&trident(&["push", "delete", url, &slow.id, "h1", "--binding", b]).await);
    }

    // What those calls left in /metrics.
    let metrics = reqwest::get(format!("{url}/metrics"))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("body");
    for binding in BINDINGS {
        assert!(
            metrics.contains(&format!(
                "trident_requests_total{{binding=\"{binding}\",method=\"SendMessage\",outcome=\"ok\"}}"
            )),
            "{metrics}"
        );
    }
    for expected in [
        "outcome=\"TASK_NOT_FOUND\"",
        "trident_request_duration_seconds_bucket{binding=\"rest\",method=\"GetTask\",le=\"+Inf\"}",
        "trident_active_streams{binding=\"grpc\"} 0",
        "trident_task_state_entered_total{state=\"TASK_STATE_CANCELED\"} 3",
        "trident_store_duration_seconds_count{op=\"commit\"}",
    ] {
        assert!(metrics.contains(expected), "{expected} in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_tell_agent_errors_from_transport_failures() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let missing = trident(&["get", &server.origin, "no-such-task"]).await;
    assert_eq!(missing.status.code(), Some(1), "an A2A error exits 1");
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("TaskNotFound"), "{stderr}");

    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let unreachable = trident(&["card", &dead]).await;
    assert_eq!(
        unreachable.status.code(),
        Some(3),
        "a transport failure exits 3"
    );

    let usage = trident(&["list", &server.origin, "--state", "sleepy"]).await;
    assert_eq!(usage.status.code(), Some(2), "a usage error exits 2");
}

/// `serve --live-tail`: a stream further behind than a task's in-memory tail reads the rest
/// from the store, so with a tail of one event every chunk still arrives once, in order, on
/// every binding; a tail of none is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tail_of_one_event_still_streams_every_chunk() {
    let dir = crate::process::TempDir::new("trident-tail");
    let store = format!("sqlite:{}", dir.0.join("tail.db").display());
    let server = Trident::serve(&["--agent", "demo", "--store", &store, "--live-tail", "1"]).await;
    for b in BINDINGS {
        let events: Vec<pb::StreamResponse> = json_lines(
            &trident(&[
                "send",
                &server.origin,
                "stream 300 0",
                "--stream",
                "--json",
                "--binding",
                b,
            ])
            .await,
        );
        let chunks: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.payload {
                Some(pb::stream_response::Payload::ArtifactUpdate(u)) => u
                    .artifact
                    .as_ref()
                    .and_then(|a| a.parts.first())
                    .and_then(|p| p.as_text().map(str::to_owned)),
                _ => None,
            })
            .collect();
        let expected: Vec<String> = (0..300)
            .map(|i| format!("chunk {i} of stream 300 0"))
            .collect();
        assert_eq!(chunks, expected, "{b}: every chunk once, in order");
        assert!(
            matches!(
                events.last().and_then(|e| e.payload.as_ref()),
                Some(pb::stream_response::Payload::StatusUpdate(u))
                    if u.status.as_ref().is_some_and(|s| s.state() == pb::TaskState::Completed)
            ),
            "{b}: the stream ends COMPLETED"
        );
    }
    let refused = trident(&["serve", "--live-tail", "0"]).await;
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a tail of no event is a usage error"
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--live-tail"),
        "the error names the flag"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_sets_what_flags_do_not() {
    let dir = crate::process::TempDir::new("trident-config");
    let db = dir.0.join("from-config.db");
    let file = dir.0.join("trident.toml");
    std::fs::write(
        &file,
        format!("store = \"sqlite:{}\"\nagent = \"demo\"\n", db.display()),
    )
    .expect("write config");
    let config = file.display().to_string();
    let server = Trident::serve(&["--config", &config]).await;
    let out = ok(&trident(&["send", &server.origin, "reply hi"]).await);
    assert!(
        out.contains("Message: agent\n  reply hi\n"),
        "the demo agent answered: {out}"
    );
    assert!(db.exists(), "the store named in the file was used");
}

fn example(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/agents")
        .join(name)
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exec_runs_the_python_example_end_to_end() {
    let agent = example("echo.py");
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    let url = server.origin.as_str();

    let streamed = ok(&trident(&["send", url, "hello", "--stream"]).await);
    assert!(
        streamed.contains("WORKING") && streamed.contains("COMPLETED"),
        "{streamed}"
    );
    assert!(streamed.matches("Artifact: ").count() >= 3, "{streamed}");

    let asked = task_of(json(&trident(&["send", url, "ask", "--json"]).await));
    assert_eq!(asked.state(), pb::TaskState::InputRequired);
    let answered = ok(&trident(&["send", url, "Grace", "--task", &asked.id]).await);
    assert!(
        answered.contains("COMPLETED") && answered.contains("Grace"),
        "{answered}"
    );

    let crashed = task_of(json(&trident(&["send", url, "crash", "--json"]).await));
    assert_eq!(crashed.state(), pb::TaskState::Failed);
    let why = crashed
        .status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .map(|m| m.text())
        .unwrap_or_default();
    assert!(
        why.contains("exit"),
        "the stderr tail and exit status: {why}"
    );

    let sleeping = task_of(json(
        &trident(&["send", url, "sleep", "--return-immediately", "--json"]).await,
    ));
    // The agent says its pid in its WORKING status; wait for it, then cancel.
    let id = sleeping.id.as_str();
    let pid = until("the agent reports its pid", || async move {
        let task: pb::Task = json(&trident(&["get", url, id, "--json"]).await);
        let text = task
            .status
            .as_ref()
            .and_then(|s| s.message.as_ref())
            .map(|m| m.text())
            .unwrap_or_default();
        text.strip_prefix("pid ")
            .and_then(|p| p.trim().parse::<u32>().ok())
    })
    .await;
    let proc_dir = format!("/proc/{pid}");
    let proc_dir = std::path::Path::new(&proc_dir);
    assert!(proc_dir.exists(), "the agent runs");
    let canceled = ok(&trident(&["cancel", url, id]).await);
    assert!(canceled.contains("CANCELED"), "{canceled}");
    until("the canceled agent process is killed", || async move {
        (!proc_dir.exists()).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exec_runs_the_shell_example() {
    let server = Trident::serve(&["--exec", &example("upper.sh"), "--store", "memory"]).await;
    let out = ok(&trident(&["send", &server.origin, "quiet please"]).await);
    assert!(
        out.contains("QUIET PLEASE") && out.contains("COMPLETED"),
        "{out}"
    );
}

/// SIGTERM: no new connections, open streams finish within the drain period, exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_open_streams_finish_then_exits() {
    use futures::StreamExt;
    let mut server =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--drain", "5"]).await;
    let svc = server.client(trident_client::Binding::Rest).await;
    // 10 chunks 100 ms apart: still streaming when the signal arrives.
    let mut stream = svc
        .send_streaming_message(
            &trident_core::CallContext::new(),
            crate::harness::req(crate::harness::msg("stream 10 100")),
        )
        .await
        .expect("stream");
    let first = stream.next().await.expect("first").expect("event");
    assert!(first.seq.is_some());
    let status = tokio::task::spawn_blocking(move || {
        let status = server.terminate(Duration::from_secs(10));
        (server, status)
    });
    let rest: Vec<_> = stream.collect().await;
    let (_server, status) = status.await.expect("join");
    assert!(
        rest.iter().all(Result::is_ok),
        "the open stream finished cleanly: {rest:?}"
    );
    assert_eq!(
        rest.last()
            .and_then(|e| e.as_ref().ok())
            .and_then(crate::harness::state_of),
        Some(pb::TaskState::Completed),
        "the stream ran to the end during the drain"
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "exited 0 after the drain: {status:?}"
    );
}

/// SIGTERM with streams that would outlast the drain: each gets a last error event saying to
/// resubscribe (not a cut connection), a blocking caller gets its task as it is, exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_streams_with_a_last_event_and_answers_blocking_calls() {
    use futures::StreamExt;
    let mut server =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--drain", "2"]).await;
    let mut streams = Vec::new();
    for binding in [
        trident_client::Binding::Grpc,
        trident_client::Binding::JsonRpc,
        trident_client::Binding::Rest,
    ] {
        let svc = server.client(binding).await;
        let mut stream = svc
            .send_streaming_message(
                &trident_core::CallContext::new(),
                crate::harness::req(crate::harness::msg("slow")),
            )
            .await
            .expect("stream");
        let first = stream.next().await.expect("first").expect("event");
        assert!(first.seq.is_some(), "{binding:?}");
        streams.push((binding, stream));
    }
    let svc = server.client(trident_client::Binding::Rest).await;
    let blocking = {
        let svc = svc.clone();
        tokio::spawn(async move {
            svc.send_message(
                &trident_core::CallContext::new(),
                crate::harness::req(crate::harness::msg("slow")),
            )
            .await
        })
    };
    // The blocking call's task exists (four slow tasks in all).
    until("the blocking call's task exists", || {
        let svc = svc.clone();
        async move {
            let listed = svc
                .list_tasks(
                    &trident_core::CallContext::new(),
                    pb::ListTasksRequest::default(),
                )
                .await
                .expect("list");
            (listed.tasks.len() == 4).then_some(())
        }
    })
    .await;
    let status = tokio::task::spawn_blocking(move || {
        let status = server.terminate(Duration::from_secs(10));
        (server, status)
    });
    for (binding, stream) in streams {
        let rest: Vec<_> = stream.collect().await;
        match rest.last() {
            Some(Err(e)) => {
                assert_eq!(
                    e.kind(),
                    trident_core::ErrorKind::Unavailable,
                    "{binding:?}: {e}"
                );
                assert!(e.message().contains("shutting down"), "{binding:?}: {e}");
            }
            other => panic!("{binding:?}: the stream ends with a last error event: {other:?}"),
        }
    }
    let answered = blocking
        .await
        .expect("join")
        .expect("the blocking call is answered");
    let task = crate::harness::task_of(answered);
    assert_eq!(task.state(), pb::TaskState::Working, "the task as it is");
    let (_server, status) = status.await.expect("join");
    assert!(status.is_some_and(|s| s.success()), "exited 0: {status:?}");
}
