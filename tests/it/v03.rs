//! A2A v0.3 from the client side: a v0.3-only agent (`trident serve --protocols 0.3`, our server
//! adapters with the 1.0 forms off), our client speaking v0.3 to it on every binding (chosen
//! from its card, or by explicit preference), the CLI against it, and `trident gateway` both
//! ways: in front of a v0.3 agent for 1.0 clients, and in front of a 1.0-only agent for v0.3
//! clients.

use std::time::Duration;

use futures::StreamExt;
use trident_client::{Binding, ClientBuilder, Protocol, Texts};
use trident_core::{A2aError, A2aService, CallContext, ErrorKind, StreamEvent};
use trident_proto as pb;

use crate::process::Trident;

/// An in-process agent serving the demo agent with the given protocol generations.
async fn agent(protocols: trident::Protocols) -> trident::Running {
    let policy = trident::WebhookPolicy::new()
        .allow("127.0.0.1")
        .expect("allow loopback");
    trident::Server::builder(trident_testkit::agents::Demo)
        .card(trident::default_card("v03 probe", "The demo agent"))
        .store("memory")
        .webhook_policy(policy)
        .bind("127.0.0.1:0")
        .protocols(protocols)
        .build()
        .await
        .expect("build")
        .spawn()
}

/// Our client of `origin` over `binding` under `protocol`.
async fn connect(origin: &str, binding: Binding, protocol: Protocol) -> trident_client::Agent {
    ClientBuilder::new()
        .prefer(&[binding])
        .protocol(protocol)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
        .connect(origin)
        .await
        .unwrap_or_else(|e| panic!("connect {origin} over {binding} ({protocol}): {e}"))
}

fn send(text: &str) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message::user(
            uuid::Uuid::new_v4().to_string(),
            vec![pb::Part::text(text)],
        )),
        ..Default::default()
    }
}

fn task(r: pb::SendMessageResponse) -> pb::Task {
    match r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn collect(stream: trident_core::EventStream) -> Vec<Result<StreamEvent, A2aError>> {
    tokio::time::timeout(Duration::from_secs(30), stream.collect())
        .await
        .expect("the stream ended")
}

fn state_of(ev: &StreamEvent) -> Option<pb::TaskState> {
    match &ev.response.payload {
        Some(pb::stream_response::Payload::StatusUpdate(u)) => u.status.as_ref().map(|s| s.state()),
        Some(pb::stream_response::Payload::Task(t)) => Some(t.state()),
        _ => None,
    }
}

/// Every operation v0.3 has, and the one it lacks, through `svc`; `what` names the path.
async fn exercise(svc: &dyn A2aService, what: &str) {
    let cx = CallContext::new();

    // Blocking send.
    let done = task(svc.send_message(&cx, send("hello v03")).await.expect(what));
    assert_eq!(done.state(), pb::TaskState::Completed, "{what}");
    assert!(done.text().contains("hello v03"), "{what}: {done:?}");

    // historyLength 0 (which v0.3 cannot say) still means none.
    let mut none = send("history");
    none.configuration = Some(pb::SendMessageConfiguration {
        history_length: Some(0),
        ..Default::default()
    });
    let t = task(svc.send_message(&cx, none).await.expect(what));
    assert!(t.history.is_empty(), "{what}: {:?}", t.history);

    // Streaming ends after the final status update.
    let events = collect(
        svc.send_streaming_message(&cx, send("stream 3"))
            .await
            .expect(what),
    )
    .await;
    let events: Vec<StreamEvent> = events
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let chunks = events
        .iter()
        .filter(|e| {
            matches!(
                e.response.payload,
                Some(pb::stream_response::Payload::ArtifactUpdate(_))
            )
        })
        .count();
    assert_eq!(chunks, 3, "{what}: {events:?}");
    assert_eq!(
        events.last().and_then(state_of),
        Some(pb::TaskState::Completed),
        "{what}"
    );

    // Input required, then a follow-up on the same task.
    let asked = task(svc.send_message(&cx, send("input")).await.expect(what));
    assert_eq!(asked.state(), pb::TaskState::InputRequired, "{what}");
    let mut follow = send("Ada");
    if let Some(m) = follow.message.as_mut() {
        m.task_id = asked.id.clone();
        m.context_id = asked.context_id.clone();
    }
    let answered = task(svc.send_message(&cx, follow).await.expect(what));
    assert_eq!(answered.state(), pb::TaskState::Completed, "{what}");

    // GetTask with a history bound.
    let got = svc
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: asked.id.clone(),
                history_length: Some(1),
                ..Default::default()
            },
        )
        .await
        .expect(what);
    assert_eq!(got.id, asked.id, "{what}");
    assert!(got.history.len() <= 1, "{what}: {:?}", got.history);

    // A slow task: push configs, resubscribe, cancel.
    let mut slow = send("slow");
    slow.configuration = Some(pb::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let slow = task(svc.send_message(&cx, slow).await.expect(what));
    let hook = "http://127.0.0.1:9/hook";
    let created = svc
        .create_task_push_notification_config(
            &cx,
            pb::TaskPushNotificationConfig {
                task_id: slow.id.clone(),
                id: "h1".into(),
                url: hook.into(),
                ..Default::default()
            },
        )
        .await
        .expect(what);
    assert_eq!(
        (
            created.task_id.as_str(),
            created.id.as_str(),
            created.url.as_str()
        ),
        (slow.id.as_str(), "h1", hook),
        "{what}"
    );
    let fetched = svc
        .get_task_push_notification_config(
            &cx,
            pb::GetTaskPushNotificationConfigRequest {
                task_id: slow.id.clone(),
                id: "h1".into(),
                ..Default::default()
            },
        )
        .await
        .expect(what);
    assert_eq!(fetched.url, hook, "{what}");
    let listed = svc
        .list_task_push_notification_configs(
            &cx,
            pb::ListTaskPushNotificationConfigsRequest {
                task_id: slow.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect(what);
    assert_eq!(listed.configs.len(), 1, "{what}");
    assert!(listed.next_page_token.is_empty(), "{what}");
    svc.delete_task_push_notification_config(
        &cx,
        pb::DeleteTaskPushNotificationConfigRequest {
            task_id: slow.id.clone(),
            id: "h1".into(),
            ..Default::default()
        },
    )
    .await
    .expect(what);

    let following = svc
        .subscribe_to_task(
            &cx,
            pb::SubscribeToTaskRequest {
                id: slow.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect(what);
    let canceled = svc
        .cancel_task(
            &cx,
            pb::CancelTaskRequest {
                id: slow.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect(what);
    assert_eq!(canceled.state(), pb::TaskState::Canceled, "{what}");
    let followed = collect(following).await;
    let last = followed
        .last()
        .and_then(|e| e.as_ref().ok())
        .and_then(state_of);
    assert_eq!(last, Some(pb::TaskState::Canceled), "{what}: {followed:?}");

    // Errors keep their kind.
    let missing = svc
        .get_task(
            &cx,
            pb::GetTaskRequest {
                id: "no-such-task".into(),
                ..Default::default()
            },
        )
        .await
        .expect_err("missing");
    assert_eq!(missing.kind(), ErrorKind::TaskNotFound, "{what}: {missing}");
    let not_cancelable = svc
        .cancel_task(
            &cx,
            pb::CancelTaskRequest {
                id: done.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect_err("completed");
    assert_eq!(
        not_cancelable.kind(),
        ErrorKind::TaskNotCancelable,
        "{what}: {not_cancelable}"
    );

    // What v0.3 lacks says so.
    let list = svc
        .list_tasks(&cx, pb::ListTasksRequest::default())
        .await
        .expect_err("v0.3 has no ListTasks");
    assert_eq!(
        list.kind(),
        ErrorKind::UnsupportedOperation,
        "{what}: {list}"
    );
    assert!(list.message().contains("v0.3"), "{what}: {list}");
}

/// `--protocols 0.3` is a v0.3-only agent: a plain v0.3 card, and 1.0 calls refused on every
/// binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v03_only_server_serves_a_v03_card_and_refuses_1_0() {
    let server = agent(trident::Protocols::V03_ONLY).await;
    let origin = server.origin();
    let card: serde_json::Value = reqwest::get(format!("{origin}/.well-known/agent-card.json"))
        .await
        .expect("card")
        .json()
        .await
        .expect("JSON");
    assert_eq!(card["protocolVersion"], "0.3.0", "{card}");
    assert_eq!(card["preferredTransport"], "JSONRPC", "{card}");
    assert!(card["url"].is_string(), "{card}");
    assert!(card.get("supportedInterfaces").is_none(), "{card}");
    let transports: Vec<&str> = card["additionalInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|i| i["transport"].as_str())
        .collect();
    assert_eq!(transports, ["JSONRPC", "HTTP+JSON", "GRPC"], "{card}");

    let http = reqwest::Client::new();
    let refused: serde_json::Value = http
        .post(origin)
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#)
        .send()
        .await
        .expect("JSON-RPC")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        refused["error"]["code"],
        ErrorKind::MethodNotFound.wire().jsonrpc,
        "{refused}"
    );
    let rest = http
        .get(format!("{origin}/tasks/t"))
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("HTTP+JSON");
    assert_eq!(rest.status(), 404);
    let grpc = trident_grpc::GrpcClient::connect(server.interfaces().grpc.as_str())
        .await
        .expect("gRPC connect")
        .get_task(
            &CallContext::new(),
            pb::GetTaskRequest {
                id: "t".into(),
                ..Default::default()
            },
        )
        .await
        .expect_err("no 1.0 gRPC service");
    assert_eq!(grpc.kind(), ErrorKind::MethodNotFound, "{grpc}");

    // Our client asked for 1.0 finds nothing to speak, and says what the card offers.
    let e = ClientBuilder::new()
        .protocol(Protocol::V1)
        .build()
        .expect("client")
        .connect(origin)
        .await
        .expect_err("no 1.0 interface");
    assert!(e.message().contains("version 0.3.0"), "{e}");
}

/// Our client reads the v0.3 card, chooses v0.3 on every binding by itself, and every v0.3
/// operation works; ListTasks says v0.3 lacks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_speaks_v03_on_every_binding() {
    let server = agent(trident::Protocols::V03_ONLY).await;
    for binding in Binding::ALL {
        let agent = connect(server.origin(), binding, Protocol::Auto).await;
        assert!(
            trident_client::is_v03_version(&agent.interface.protocol_version),
            "{binding}: {:?}",
            agent.interface
        );
        assert_eq!(agent.card.name, "v03 probe");
        exercise(&*agent.service, &format!("v0.3 {binding}")).await;
    }
}

/// On a card offering both, Auto prefers 1.0 and an explicit 0.3 preference speaks 0.3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_preference_picks_the_generation() {
    let server = agent(trident::Protocols::ALL).await;
    for binding in Binding::ALL {
        let auto = connect(server.origin(), binding, Protocol::Auto).await;
        assert_eq!(auto.interface.protocol_version, "1.0", "{binding}");
        let old = connect(server.origin(), binding, Protocol::V03).await;
        assert_eq!(old.interface.protocol_version, "0.3", "{binding}");
        exercise(&*old.service, &format!("explicit v0.3 {binding}")).await;
    }
}

/// `trident gateway --upstream <v0.3 agent>` serves it to 1.0 clients on every binding (and
/// to v0.3 clients); `trident gateway` in front of a 1.0-only agent serves v0.3 clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_bridges_v03_and_1_0_both_ways() {
    let common = [
        "--agent",
        "demo",
        "--store",
        "memory",
        "--push-allow",
        "127.0.0.1",
    ];
    let old = Trident::serve(&[&common[..], &["--protocols", "0.3"]].concat()).await;
    let front = Trident::gateway(&old.origin, &[]).await;
    for binding in Binding::ALL {
        let agent = connect(&front.origin, binding, Protocol::V1).await;
        exercise(
            &*agent.service,
            &format!("1.0 {binding} → gateway → v0.3 agent"),
        )
        .await;
        let agent = connect(&front.origin, binding, Protocol::V03).await;
        exercise(
            &*agent.service,
            &format!("v0.3 {binding} → gateway → v0.3 agent"),
        )
        .await;
    }

    let new = Trident::serve(&[&common[..], &["--protocols", "1.0"]].concat()).await;
    let back = Trident::gateway(&new.origin, &[]).await;
    for binding in Binding::ALL {
        let agent = connect(&back.origin, binding, Protocol::V03).await;
        exercise(
            &*agent.service,
            &format!("v0.3 {binding} → gateway → 1.0 agent"),
        )
        .await;
    }
}

/// Every client command against a v0.3-only agent; `list` says v0.3 lacks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_commands_against_a_v03_agent() {
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--push-allow",
        "127.0.0.1",
        "--protocols",
        "0.3",
    ])
    .await;
    let url = server.origin.as_str();
    let run = |mut args: Vec<String>| async move {
        // A 0.3-only agent is spoken to in 0.3 only when asked (a2a-cli SPEC §13.2).
        if args.first().is_some_and(|c| c != "card")
            && !args
                .iter()
                .any(|a| a == "--protocol" || a == "--a2a-version")
        {
            args.extend(["--a2a-version".to_owned(), "0.3".to_owned()]);
        }
        crate::process::Run::new(&args).output().await
    };
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let ok = |o: &std::process::Output| {
        assert!(
            o.status.success(),
            "exit {:?}: {}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let card = ok(&run(args(&["card", url])).await);
    assert!(card.contains("A2A 0.3"), "{card}");
    for b in ["grpc", "jsonrpc", "rest"] {
        let sent = ok(&run(args(&["send", url, "hello cli", "--binding", b])).await);
        assert!(
            sent.contains("COMPLETED") && sent.contains("hello cli"),
            "{b}: {sent}"
        );
        let streamed = ok(&run(args(&["send", url, "stream 2", "--stream", "--binding", b])).await);
        assert!(
            streamed.matches("Artifact: stream").count() == 2 && streamed.contains("COMPLETED"),
            "{b}: {streamed}"
        );
        let slow = ok(&run(args(&[
            "send",
            url,
            "slow",
            "--return-immediately",
            "--json",
            "--binding",
            b,
        ]))
        .await);
        let slow: pb::SendMessageResponse = serde_json::from_str(slow.trim()).expect("JSON");
        let slow = task(slow);
        let got = ok(&run(args(&[
            "get",
            url,
            &slow.id,
            "--history",
            "1",
            "--binding",
            b,
        ]))
        .await);
        assert!(got.contains(&slow.id), "{b}: {got}");
        let hook = "http://127.0.0.1:9/hook";
        let set = ok(&run(args(&[
            "push",
            "set",
            url,
            &slow.id,
            hook,
            "--id",
            "h1",
            "--binding",
            b,
        ]))
        .await);
        assert!(set.contains("h1"), "{b}: {set}");
        ok(&run(args(&["push", "get", url, &slow.id, "h1", "--binding", b])).await);
        let listed = ok(&run(args(&["push", "list", url, &slow.id, "--binding", b])).await);
        assert!(listed.contains("h1"), "{b}: {listed}");
        ok(&run(args(&[
            "push",
            "delete",
            url,
            &slow.id,
            "h1",
            "--binding",
            b,
        ]))
        .await);
        let canceled = ok(&run(args(&["cancel", url, &slow.id, "--binding", b])).await);
        assert!(canceled.contains("CANCELED"), "{b}: {canceled}");

        let list = run(args(&["list", url, "--binding", b])).await;
        assert_eq!(list.status.code(), Some(1), "{b}");
        let why = String::from_utf8_lossy(&list.stderr);
        assert!(
            why.contains("v0.3") && why.contains("ListTasks"),
            "{b}: {why}"
        );
        let resume = run(args(&[
            "subscribe",
            url,
            &slow.id,
            "--after",
            "0",
            "--binding",
            b,
        ]))
        .await;
        assert_eq!(resume.status.code(), Some(1), "{b}");
        let missing = run(args(&["get", url, "missing", "--binding", b])).await;
        assert_eq!(missing.status.code(), Some(1), "{b}");
    }
    // Asking for 1.0 of a v0.3-only agent is refused with what the card offers.
    let refused = run(args(&["send", url, "hi", "--protocol", "1.0"])).await;
    assert_ne!(refused.status.code(), Some(0));
    // Explicitly 0.3 works (the old flag's name).
    ok(&run(args(&["send", url, "hi", "--protocol", "0.3"])).await);
}
