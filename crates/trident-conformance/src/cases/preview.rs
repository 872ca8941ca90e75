//! The A2A 1.1 preview (the specification's dev-1.1 branch, upstream #1810): task generation,
//! long-polling GetTask and the `ifGenerationMatch` precondition, asked for with
//! `A2A-Version: 1.1`. Each case needs a server that offers it ([`Variant::preview`]; against
//! an agent somebody else runs, one that admits `A2A-Version: 1.1`) and skips otherwise. The
//! first case checks the other half of the bargain: on such a server a 1.0 caller sees nothing
//! of it.

use std::time::Duration;

use futures::StreamExt;
use pb::stream_response::Payload;
use trident_core::{A2aService, CallContext, ErrorKind, PREVIEW_VERSION, StreamEvent};
use trident_proto as pb;

use crate::helpers::*;
use crate::{Fixture, Skip, Target, Variant, observe};

/// A caller asking for the preview: `A2A-Version: 1.1`.
fn cx11() -> CallContext {
    let mut cx = cx();
    cx.version = Some(PREVIEW_VERSION.to_owned());
    cx
}

/// `Ok` when `svc`'s agent admits `A2A-Version: 1.1` (it answers a GetTask of an unknown task
/// with TaskNotFound, not VersionNotSupported); a [`Skip`] saying so otherwise. Admitting it
/// is not offering the preview (a2a-sdk admits any 1.x): a remote agent's card says that.
pub(crate) async fn admits_v1_1(svc: &dyn A2aService) -> Result<(), Skip> {
    let probe = svc
        .get_task(
            &cx11(),
            pb::GetTaskRequest {
                id: format!("no-such-task-{}", uuid::Uuid::new_v4().simple()),
                ..Default::default()
            },
        )
        .await;
    match probe {
        Err(e) if e.kind() == ErrorKind::TaskNotFound => Ok(()),
        Err(e) if e.kind() == ErrorKind::VersionNotSupported => Err(Skip::new(
            "the agent does not offer the A2A 1.1 preview (it refuses A2A-Version 1.1)",
        )),
        Err(e) => Err(Skip::new(format!(
            "could not tell whether the agent offers the A2A 1.1 preview: a GetTask of an \
             unknown task with A2A-Version 1.1 answered {:?}: {e}",
            e.kind()
        ))),
        Ok(_) => panic!("a GetTask of a task that does not exist succeeded"),
    }
}

/// A server offering the preview.
async fn preview(t: &dyn Target) -> Result<Fixture, Skip> {
    Fixture::new(
        t,
        Variant {
            preview: true,
            ..Default::default()
        },
    )
    .await
}

/// A server offering the preview, for a case that needs the conformance script.
async fn preview_scripted(t: &dyn Target) -> Result<Fixture, Skip> {
    t.scripted().await?;
    preview(t).await
}

/// A server offering the preview and, made there by a preview caller, a task waiting for
/// input (the conformance script's `input`), which carries its generation.
async fn waiting_for_input(t: &dyn Target) -> Result<(Fixture, pb::Task), Skip> {
    let f = preview_scripted(t).await?;
    let asked = send_task(&*f.svc, &cx11(), "input").await;
    assert_eq!(asked.state(), pb::TaskState::InputRequired);
    assert!(
        asked.generation >= 1,
        "a preview caller's task has a generation: {asked:?}"
    );
    Ok((f, asked))
}

/// The generation an event carries (0: none), `None` for a direct message.
fn generation_of(e: &StreamEvent) -> Option<i64> {
    match payload(e) {
        Payload::Task(t) => Some(t.generation),
        Payload::StatusUpdate(u) => Some(u.generation),
        Payload::ArtifactUpdate(u) => Some(u.generation),
        Payload::Message(_) => None,
    }
}

async fn get(svc: &dyn A2aService, cx: &CallContext, id: &str) -> pb::Task {
    svc.get_task(
        cx,
        pb::GetTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        },
    )
    .await
    .expect("get the task")
}

/// GetTask of `id` with `currentGeneration: current`, as a preview caller.
async fn long_poll(
    svc: &dyn A2aService,
    cx: &CallContext,
    id: &str,
    current: i64,
) -> Result<pb::Task, trident_core::A2aError> {
    svc.get_task(
        cx,
        pb::GetTaskRequest {
            id: id.to_owned(),
            current_generation: Some(current),
            ..Default::default()
        },
    )
    .await
}

/// A follow-up `text` to `task` with `ifGenerationMatch: expected`.
async fn follow_up_if(
    svc: &dyn A2aService,
    cx: &CallContext,
    task: &pb::Task,
    text: &str,
    expected: i64,
) -> Result<pb::Task, trident_core::A2aError> {
    let mut m = msg(text);
    m.task_id = task.id.clone();
    svc.send_message(
        cx,
        req_with(
            m,
            pb::SendMessageConfiguration {
                if_generation_match: Some(expected),
                ..Default::default()
            },
        ),
    )
    .await
    .map(task_of)
}

/// Whether a JSON value has a member named `generation` anywhere.
fn mentions_generation(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .any(|(k, v)| k == "generation" || mentions_generation(v)),
        serde_json::Value::Array(items) => items.iter().any(mentions_generation),
        _ => false,
    }
}

/// On a server offering the preview, a 1.0 caller sees exactly a 1.0 server: no generation in
/// any task or event it gets (blocking send, stream, GetTask, ListTasks, CancelTask), no
/// `generation` member in the JSON on the wire, and a card without the preview's interfaces,
/// while a card request that says 1.1 gets them, first.
pub async fn preview_stays_off_the_wire_for_1_0_callers(t: &dyn Target) -> Result<(), Skip> {
    let f = preview(t).await?;
    let ctx = fresh_context();
    let task = send_for_task(&*f.svc, &cx(), &ctx, "hello", "whose fields to read").await?;
    assert_eq!(task.generation, 0, "a 1.0 caller's SendMessage answer");
    assert_eq!(get(&*f.svc, &cx(), &task.id).await.generation, 0, "GetTask");
    // Even a 1.0 caller that sends the preview's field gets a 1.0 answer at once.
    let polled = long_poll(&*f.svc, &cx(), &task.id, i64::MAX)
        .await
        .expect("GetTask");
    assert_eq!(
        polled.generation, 0,
        "GetTask with currentGeneration, as 1.0"
    );
    let listed = f.svc.list_tasks(&cx(), list_in(&ctx)).await.expect("list");
    assert!(
        listed.tasks.iter().all(|t| t.generation == 0),
        "ListTasks: {listed:?}"
    );
    if f.needs_streaming().is_ok() {
        let events = collect(
            f.svc
                .send_streaming_message(&cx(), req(msg_in(&ctx, "hello")))
                .await
                .expect("stream"),
        )
        .await;
        for e in &events {
            assert_eq!(
                generation_of(e).unwrap_or(0),
                0,
                "a 1.0 stream's event: {e:?}"
            );
        }
    }
    observe("1.0 answers carry no generation");
    // On the wire: the JSON a 1.0 client parses, and the cards.
    let Ok(wire) = f.needs_wire() else {
        return Ok(());
    };
    let answer = match wire.binding {
        trident_client::Binding::Rest => Some(
            wire.http(
                reqwest::Method::GET,
                &format!("/tasks/{}", task.id),
                trident_core::PROTOCOL_VERSION,
                "",
                "",
            )
            .await,
        ),
        trident_client::Binding::JsonRpc => Some(
            wire.jsonrpc(
                "GetTask",
                serde_json::json!({"id": task.id}),
                trident_core::PROTOCOL_VERSION,
            )
            .await,
        ),
        _ => None,
    };
    if let Some(answer) = answer {
        assert_eq!(answer.status, 200, "GetTask: {}", answer.text);
        let json = answer.json.expect("GetTask answers JSON");
        assert!(
            !mentions_generation(&json),
            "a 1.0 client's JSON has no generation member: {json}"
        );
        assert!(
            json.to_string().contains(&task.id),
            "the task itself: {json}"
        );
    }
    let card_as = |version: &'static str| async move {
        let a = wire.get(&wire.card_url, &[("a2a-version", version)]).await;
        assert_eq!(a.status, 200, "the card as {version}: {}", a.text);
        let card = a.json.expect("the card is JSON");
        card["supportedInterfaces"]
            .as_array()
            .expect("supportedInterfaces")
            .iter()
            .map(|i| i["protocolVersion"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    let v1 = card_as("1.0").await;
    assert!(
        !v1.iter().any(|v| v == PREVIEW_VERSION),
        "a 1.0 card request sees no 1.1 interface: {v1:?}"
    );
    let v11 = card_as(PREVIEW_VERSION).await;
    assert_eq!(
        v11.first().map(String::as_str),
        Some(PREVIEW_VERSION),
        "a 1.1 card request gets the 1.1 interfaces first: {v11:?}"
    );
    Ok(())
}

/// A preview caller's task starts at generation 1 and moves on by exactly one per status or
/// artifact event; no two events of the task share one, and GetTask answers the generation of
/// the last event streamed.
pub async fn preview_generation_starts_at_one_and_moves_by_one_per_event(
    t: &dyn Target,
) -> Result<(), Skip> {
    let f = preview(t).await?;
    let cx = cx11();
    let ctx = fresh_context();
    if f.needs_streaming().is_err() {
        let task = send_for_task(&*f.svc, &cx, &ctx, "hello", "whose generation to read").await?;
        assert!(
            task.generation >= 1,
            "a task's generation starts at 1: {task:?}"
        );
        assert_eq!(
            get(&*f.svc, &cx, &task.id).await.generation,
            task.generation
        );
        return Ok(());
    }
    let events = collect(
        f.svc
            .send_streaming_message(&cx, req(msg_in(&ctx, "hello")))
            .await
            .expect("stream"),
    )
    .await;
    let Some(Payload::Task(first)) = events.first().map(payload) else {
        return Err(Skip::new(
            "the agent answered with a Message: no task whose generation to read",
        ));
    };
    assert_eq!(first.generation, 1, "a new task's first event: {first:?}");
    let mut last = first.generation;
    for e in &events[1..] {
        let g = generation_of(e).expect("a task's stream has no direct message");
        assert_eq!(
            g,
            last + 1,
            "each event moves the generation on by one: {e:?}"
        );
        if let Some(seq) = e.seq {
            assert_eq!(
                u64::try_from(g).ok(),
                Some(seq),
                "Trident: an event's generation is its sequence number"
            );
        }
        last = g;
    }
    observe(format!("generations 1..={last}"));
    let task = get(&*f.svc, &cx, &first.id).await;
    assert_eq!(
        task.generation, last,
        "GetTask: the last event's generation"
    );
    // A message that creates a task ignores a precondition.
    let created = f
        .svc
        .send_message(
            &cx,
            req_with(
                msg_in(&ctx, "hello"),
                pb::SendMessageConfiguration {
                    if_generation_match: Some(42),
                    ..Default::default()
                },
            ),
        )
        .await
        .expect("a new task's precondition is ignored");
    if let Some(pb::send_message_response::Payload::Task(t)) = created.payload {
        assert!(t.generation >= 1, "{t:?}");
    }
    Ok(())
}

/// A long poll on a task already past the generation given answers at once; one on a task
/// that does not move answers with the task as it is once the wait ends (here the caller's
/// deadline, which the server answers before).
pub async fn preview_long_poll_answers_at_once_when_behind_and_at_its_deadline(
    t: &dyn Target,
) -> Result<(), Skip> {
    let (f, asked) = waiting_for_input(t).await?;
    let (cx, g) = (cx11(), asked.generation);
    let behind = tokio::time::timeout(
        Duration::from_secs(10),
        long_poll(&*f.svc, &cx, &asked.id, g - 1),
    )
    .await
    .expect("a poll behind the task answers at once")
    .expect("GetTask");
    assert_eq!(behind.generation, g);
    let mut waiting = cx11();
    waiting.deadline = Some(std::time::Instant::now() + Duration::from_secs(3));
    let held = long_poll(&*f.svc, &waiting, &asked.id, g)
        .await
        .expect("at its deadline the poll answers with the task as it is");
    assert_eq!(
        (held.generation, held.state()),
        (g, pb::TaskState::InputRequired),
        "nothing moved"
    );
    observe("long poll: at once when behind, the task as it is at the deadline");
    Ok(())
}

/// A long poll held on the task's current generation wakes when the task moves on (another
/// caller answers its question), well before the server's own timeout.
pub async fn preview_long_poll_wakes_when_the_task_moves_on(t: &dyn Target) -> Result<(), Skip> {
    let (f, asked) = waiting_for_input(t).await?;
    let (cx, g) = (cx11(), asked.generation);
    let svc = f.svc.clone();
    let id = asked.id.clone();
    let poll = tokio::spawn(async move { long_poll(&*svc, &cx11(), &id, g).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let done = follow_up(&*f.svc, &cx, &asked, "Ada")
        .await
        .expect("follow-up");
    assert_eq!(done.state(), pb::TaskState::Completed);
    // Trident's default wait is 30 s: an answer within 20 s is a wake-up, not the timeout.
    let woke = tokio::time::timeout(Duration::from_secs(20), poll)
        .await
        .expect("the long poll wakes when the task moves on")
        .expect("the poll's task")
        .expect("GetTask");
    assert!(woke.generation > g, "past {g}: {woke:?}");
    observe("long poll woke past the generation it held");
    Ok(())
}

/// A follow-up whose `ifGenerationMatch` is not the task's generation is refused with
/// TaskGenerationMismatch and changes nothing; with the task's generation it proceeds.
pub async fn preview_stale_precondition_is_refused_and_changes_nothing(
    t: &dyn Target,
) -> Result<(), Skip> {
    let (f, asked) = waiting_for_input(t).await?;
    let (cx, g) = (cx11(), asked.generation);
    for stale in [g - 1, g + 1] {
        let e = assert_kind(
            follow_up_if(&*f.svc, &cx, &asked, "Ada", stale).await,
            ErrorKind::TaskGenerationMismatch,
        );
        assert!(
            e.message().contains(&g.to_string()),
            "the error says the task's generation: {e}"
        );
    }
    let after = get(&*f.svc, &cx, &asked.id).await;
    assert_eq!(
        (after.generation, after.state(), after.history.len()),
        (g, pb::TaskState::InputRequired, asked.history.len()),
        "a refused message changes nothing"
    );
    let done = follow_up_if(&*f.svc, &cx, &asked, "Ada", g)
        .await
        .expect("the precondition holds");
    assert_eq!(done.state(), pb::TaskState::Completed);
    assert!(done.generation > g, "{done:?}");
    Ok(())
}

/// Follow-ups sent at once with the same precondition: exactly one proceeds, the others are
/// refused with TaskGenerationMismatch.
pub async fn preview_concurrent_follow_ups_with_one_precondition_one_wins(
    t: &dyn Target,
) -> Result<(), Skip> {
    let (f, asked) = waiting_for_input(t).await?;
    let g = asked.generation;
    // Which one wins, and the order they end in, varies: what the bindings are compared on
    // is the count, observed below.
    let mark = crate::observation_mark();
    let attempts = (0..4).map(|i| {
        let (svc, asked) = (f.svc.clone(), asked.clone());
        async move { follow_up_if(&*svc, &cx11(), &asked, &format!("Ada {i}"), g).await }
    });
    let results = futures::stream::iter(attempts)
        .buffer_unordered(4)
        .collect::<Vec<_>>()
        .await;
    crate::rewind_observations(mark);
    let won = results.iter().filter(|r| r.is_ok()).count();
    let mismatched = results
        .iter()
        .filter(|r| matches!(r, Err(e) if e.kind() == ErrorKind::TaskGenerationMismatch))
        .count();
    assert_eq!(
        (won, mismatched),
        (1, 3),
        "exactly one wins, the others are refused: {results:?}"
    );
    observe("one of four concurrent follow-ups won");
    Ok(())
}
