//! The A2A 1.1 preview from the client side (issue 29): our Rust client's long poll,
//! precondition and gap-mended streams over each binding against an in-process server with
//! the preview on, and the `trident` commands that use it (`task get [--wait]`,
//! `send --if-generation-match`) against `trident serve --protocols 1.0,0.3,1.1-preview`, and
//! against a server without it, where they behave as before (or refuse clearly).

use std::time::{Duration, Instant};

use futures::StreamExt;
use trident_client::{Binding, ClientBuilder};
use trident_core::{CallContext, ErrorKind};
use trident_proto as pb;
use trident_proto::stream_response::Payload as Event;

use crate::process::{Run, Trident, field, ok, stderr, stdout};

/// The bindings as `--transport` names them.
const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

/// The demo agent in process with 1.0, 0.3 and, when `preview`, the 1.1 preview, whose long
/// polls wait at most `long_poll` (short, so a test can see one end).
async fn agent(preview: bool, long_poll: Duration) -> trident::Running {
    let protocols = if preview {
        trident::Protocols::ALL.with_v1_1_preview()
    } else {
        trident::Protocols::ALL
    };
    let mut builder = trident::Server::builder(trident_testkit::agents::Demo)
        .card(trident::default_card("preview probe", "The demo agent"))
        .store("memory")
        .bind("127.0.0.1:0")
        .protocols(protocols);
    if preview {
        builder = builder.engine_config(trident::EngineConfig {
            preview: Some(trident::Preview {
                long_poll_timeout: long_poll,
            }),
            ..Default::default()
        });
    }
    builder.build().await.expect("build").spawn()
}

/// Our client of `origin` over `binding`, asking for the preview or not.
async fn connect(origin: &str, binding: Binding, preview: bool) -> trident_client::Agent {
    ClientBuilder::new()
        .prefer(&[binding])
        .preview(preview)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
        .connect(origin)
        .await
        .unwrap_or_else(|e| panic!("connect {origin} over {binding}: {e}"))
}

fn message(text: &str, task_id: &str) -> pb::SendMessageRequest {
    let mut m = pb::Message::user(uuid::Uuid::new_v4().to_string(), vec![pb::Part::text(text)]);
    m.task_id = task_id.to_owned();
    pb::SendMessageRequest {
        message: Some(m),
        ..Default::default()
    }
}

fn task(r: pb::SendMessageResponse) -> pb::Task {
    match r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn get(id: &str) -> pb::GetTaskRequest {
    pb::GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_long_polls_and_sends_preconditions_over_every_binding() {
    let server = agent(true, Duration::from_secs(1)).await;
    let origin = server.origin();
    let cx = CallContext::new();
    for binding in Binding::ALL {
        let agent = connect(origin, binding, true).await;
        assert_eq!(agent.interface.protocol_version, "1.1", "{binding}");
        let preview = agent.preview().expect("the agent offers the preview");
        let asked = task(
            preview
                .service()
                .send_message(&cx, message("input", ""))
                .await
                .expect("send"),
        );
        assert_eq!(asked.state(), pb::TaskState::InputRequired, "{binding}");
        let g = asked.generation;
        assert!(g >= 1, "{binding}: a generation: {asked:?}");

        // Nothing changes: the long poll holds until the agent's wait ends (1 s here), then
        // answers with the task as it is.
        let started = Instant::now();
        let same = preview
            .long_poll(&cx, get(&asked.id), g)
            .await
            .expect("long poll");
        let held = started.elapsed();
        assert_eq!(same.generation, g, "{binding}");
        assert!(
            held >= Duration::from_millis(800) && held < Duration::from_secs(10),
            "{binding}: held {held:?}"
        );

        // A stale precondition is refused, typed, and changes nothing.
        let e = preview
            .send_message_if(&cx, message("Ada", &asked.id), g - 1)
            .await
            .expect_err("a stale generation");
        assert_eq!(
            e.kind(),
            ErrorKind::TaskGenerationMismatch,
            "{binding}: {e}"
        );
        let unchanged = preview
            .service()
            .get_task(&cx, get(&asked.id))
            .await
            .expect("get");
        assert_eq!(
            (unchanged.state(), unchanged.generation),
            (pb::TaskState::InputRequired, g),
            "{binding}"
        );

        // A long poll waiting while the right precondition goes through: it answers with the
        // change, well before its wait would end.
        let waiting = {
            let preview = preview.clone();
            let id = asked.id.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let task = preview.long_poll(&CallContext::new(), get(&id), g).await;
                (task, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let done = task(
            preview
                .send_message_if(&cx, message("Ada", &asked.id), g)
                .await
                .expect("the right generation proceeds"),
        );
        assert_eq!(done.state(), pb::TaskState::Completed, "{binding}");
        assert!(done.generation > g, "{binding}");
        let (changed, took) = waiting.await.expect("join");
        let changed = changed.expect("long poll");
        assert!(changed.generation > g, "{binding}: {changed:?}");
        assert!(took < Duration::from_secs(1), "{binding}: {took:?}");
        // An ended task is answered at once.
        let started = Instant::now();
        let ended = preview
            .long_poll(&cx, get(&asked.id), done.generation)
            .await
            .expect("long poll");
        assert_eq!(ended.state(), pb::TaskState::Completed, "{binding}");
        assert!(started.elapsed() < Duration::from_millis(800), "{binding}");

        // A client that does not ask is spoken to in 1.0, exactly: no generation anywhere.
        let plain = connect(origin, binding, false).await;
        assert!(plain.preview().is_none(), "{binding}");
        assert_eq!(plain.interface.protocol_version, "1.0", "{binding}");
        let t = plain
            .service
            .get_task(&cx, get(&asked.id))
            .await
            .expect("get");
        assert_eq!(t.generation, 0, "{binding}");
    }
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_stream_is_mended_with_the_task_and_goes_on_in_order() {
    let server = agent(true, Duration::from_secs(5)).await;
    let origin = server.origin();
    for binding in Binding::ALL {
        let agent = connect(origin, binding, true).await;
        let preview = agent.preview().expect("the agent offers the preview");
        let cx = CallContext::new();
        let mut request = message("stream 4 150", "");
        request.configuration = Some(pb::SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        });
        let started = task(
            preview
                .service()
                .send_message(&cx, request)
                .await
                .expect("send"),
        );
        // Resumed after the first event, with a view that has seen nothing: the events
        // after it are a gap, mended by the task read again.
        let mut resumed = cx.clone();
        resumed.last_event_id = Some(1);
        let stream = preview
            .service()
            .subscribe_to_task(
                &resumed,
                pb::SubscribeToTaskRequest {
                    id: started.id.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("subscribe");
        let events: Vec<_> = preview.mend_gaps(cx.clone(), stream, None).collect().await;
        let mut last = 0;
        let mut tasks = 0;
        for event in &events {
            let event = event.as_ref().expect("an event");
            let generation = match &event.response.payload {
                Some(Event::Task(t)) => {
                    tasks += 1;
                    t.generation
                }
                Some(Event::StatusUpdate(u)) => u.generation,
                Some(Event::ArtifactUpdate(a)) => a.generation,
                other => panic!("{binding}: unexpected {other:?}"),
            };
            match &event.response.payload {
                // The view is whole from the task on: each update is the next generation.
                Some(Event::Task(_)) => assert!(generation > last, "{binding}: {events:?}"),
                _ => assert_eq!(generation, last + 1, "{binding}: {events:?}"),
            }
            last = generation;
        }
        assert!(
            tasks >= 1,
            "{binding}: the view starts with a task: {events:?}"
        );
        let end = preview
            .service()
            .get_task(&cx, get(&started.id))
            .await
            .expect("get");
        assert_eq!(end.state(), pb::TaskState::Completed, "{binding}");
        assert_eq!(
            last, end.generation,
            "{binding}: the stream reached the end"
        );
    }
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_asking_for_the_preview_of_an_agent_without_it_speaks_1_0() {
    let server = agent(false, Duration::from_secs(1)).await;
    for binding in Binding::ALL {
        let agent = connect(server.origin(), binding, true).await;
        assert!(agent.preview().is_none(), "{binding}");
        assert_eq!(agent.interface.protocol_version, "1.0", "{binding}");
        let t = task(
            agent
                .service
                .send_message(&CallContext::new(), message("hello", ""))
                .await
                .expect("send"),
        );
        assert_eq!(t.generation, 0, "{binding}");
    }
    server.shutdown().await.expect("shutdown");
}

async fn run(args: &[&str]) -> std::process::Output {
    Run::new(args).output().await
}

/// The one JSON document on stdout.
#[track_caller]
fn document<T: serde::de::DeserializeOwned>(o: &std::process::Output) -> T {
    let text = stdout(o);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("one JSON document: {e}\n{text}"))
}

/// The error object of a run that exited `exit` with `-o json`.
#[track_caller]
fn error_object(o: &std::process::Output, exit: i32) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(exit),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    document::<serde_json::Value>(o)["error"].clone()
}

/// `trident send -a A --transport T -o json [EXTRA…] TEXT`'s task.
async fn send_task(a: &str, t: &str, extra: &[&str], text: &str) -> pb::Task {
    let mut args = vec!["send", "-a", a, "--transport", t, "-o", "json"];
    args.extend_from_slice(extra);
    args.push(text);
    let o = run(&args).await;
    ok(&o);
    task(document(&o))
}

/// `trident task get ID -a A --transport T -o json`.
async fn get_task(a: &str, t: &str, id: &str) -> pb::Task {
    document(&run(&["task", "get", id, "-a", a, "--transport", t, "-o", "json"]).await)
}

/// A task of `a` that works until canceled (the demo agent completes it after 60 s).
async fn working(a: &str, t: &str) -> String {
    send_task(a, t, &["--async"], "slow").await.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_long_polls_and_sends_preconditions_to_an_agent_with_the_preview() {
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--protocols",
        "1.0,0.3,1.1-preview",
    ])
    .await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // `task get --wait` returns when the task changes: a poll every 30 s would not.
        let slow = send_task(a, t, &["--async"], "slow").await;
        let waiting = {
            let (a, id, t) = (a.to_owned(), slow.id.clone(), t.to_owned());
            tokio::spawn(async move {
                let started = Instant::now();
                let o = Run::new(&[
                    "task",
                    "get",
                    &id,
                    "-a",
                    &a,
                    "--transport",
                    &t,
                    "--wait",
                    "--poll-interval",
                    "30s",
                    "--debug",
                    "-o",
                    "json",
                ])
                .output()
                .await;
                (o, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(1500)).await;
        ok(&run(&["task", "cancel", &slow.id, "-a", a, "--transport", t]).await);
        let (o, took) = waiting.await.expect("join");
        let waited: pb::Task = {
            ok(&o);
            document(&o)
        };
        assert_eq!(waited.state(), pb::TaskState::Canceled, "{t}");
        // `send` does not ask for the preview (it has no use for it): 1.0's answer.
        assert_eq!(slow.generation, 0, "{t}");
        assert!(waited.generation > 1, "{t}: {waited:?}");
        assert!(took < Duration::from_secs(15), "{t}: waited {took:?}");
        assert!(
            stderr(&o).contains("currentGeneration"),
            "{t}: a long poll: {}",
            stderr(&o)
        );

        // --timeout ends a long poll as it ends a poll: exit 5, the hint names the task.
        let o = run(&[
            "task",
            "get",
            &working(a, t).await,
            "-a",
            a,
            "--transport",
            t,
            "--wait",
            "--timeout",
            "1s",
            "-o",
            "json",
        ])
        .await;
        let e = error_object(&o, 5);
        assert_eq!(e["code"], "A2ACLI_ERR_TIMEOUT", "{t}: {e}");
        assert!(
            e["hint"].as_str().is_some_and(|h| h.contains("--wait")),
            "{t}: {e}"
        );

        // The generation is shown, and a reply can be made conditional on it.
        let asked = send_task(a, t, &[], "input").await;
        let g = get_task(a, t, &asked.id).await.generation;
        assert!(g >= 1, "{t}: {asked:?}");
        let text = ok(&run(&["task", "get", &asked.id, "-a", a, "--transport", t]).await);
        assert_eq!(
            field(&text, "Generation"),
            Some(g.to_string().as_str()),
            "{t}: {text}"
        );
        let stale = (g - 1).to_string();
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--task-id",
            &asked.id,
            "--if-generation-match",
            &stale,
            "-o",
            "json",
            "Ada",
        ])
        .await;
        let e = error_object(&o, 1);
        assert_eq!(e["code"], "TaskGenerationMismatchError", "{t}: {e}");
        assert_eq!(e["a2aCode"], -32010, "{t}: {e}");
        let hint = e["hint"].as_str().unwrap_or_default();
        assert!(
            hint.contains("the task changed since")
                && hint.contains(&format!("trident task get -a {a} {}", asked.id)),
            "{t}: {e}"
        );
        let unchanged = get_task(a, t, &asked.id).await;
        assert_eq!(
            (unchanged.state(), unchanged.generation),
            (pb::TaskState::InputRequired, g),
            "{t}: nothing changed"
        );
        let current = g.to_string();
        let done = send_task(
            a,
            t,
            &["--task-id", &asked.id, "--if-generation-match", &current],
            "Ada",
        )
        .await;
        assert_eq!(done.state(), pb::TaskState::Completed, "{t}");
        assert!(done.generation > g, "{t}");
        assert!(
            done.artifacts
                .iter()
                .any(|art| art.parts.iter().any(|p| p.as_text() == Some("Hello, Ada!"))),
            "{t}: {done:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_preview_the_cli_polls_and_refuses_the_precondition() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        let running = send_task(a, t, &["--async"], "stream 3 150").await;
        assert_eq!(running.generation, 0, "{t}");
        let o = run(&[
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
            "--debug",
        ])
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        assert_eq!(field(&text, "Generation"), None, "{t}: {text}");
        assert!(
            !stderr(&o).contains("currentGeneration"),
            "{t}: polled: {}",
            stderr(&o)
        );

        let asked = send_task(a, t, &[], "input").await;
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--task-id",
            &asked.id,
            "--if-generation-match",
            "1",
            "-o",
            "json",
            "Ada",
        ])
        .await;
        let e = error_object(&o, 2);
        assert_eq!(e["code"], "A2ACLI_ERR_USAGE", "{t}: {e}");
        assert!(
            e["message"].as_str().is_some_and(
                |m| m.contains("--if-generation-match") && m.contains("A2A 1.1 preview")
            ),
            "{t}: {e}"
        );
        let unchanged = get_task(a, t, &asked.id).await;
        assert_eq!(unchanged.state(), pb::TaskState::InputRequired, "{t}");
    }
    // The precondition names a task: without --task-id it is a usage error.
    let o = run(&["send", "-a", a, "--if-generation-match", "1", "hello"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
