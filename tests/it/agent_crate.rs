//! `examples/agent-crate` (package `scribe-agent`), an agent crate that depends on the facade
//! alone, driven with our client over every binding: a streamed answer, push notifications
//! observed at a real loopback receiver (allowed in its `Config::webhooks`, nowhere else),
//! and the extended card behind bearer authentication.

use futures::StreamExt;
use scribe_agent::{Config, server};
use trident::client::{Binding, ClientBuilder, Texts};
use trident::proto::stream_response::Payload;
use trident::proto::{self as pb};
use trident::{CallContext, ErrorKind, WebhookPolicy};

use crate::push::{Received, next, receiver};

/// The state a notification reports, if it is a task or a status update.
fn state_of(received: &Received) -> Option<pb::TaskState> {
    match received.body.payload.as_ref()? {
        Payload::Task(t) => Some(t.state()),
        Payload::StatusUpdate(u) => u.status.as_ref().map(|s| s.state()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scribe_streams_pushes_and_guards_its_extended_card_over_every_binding() {
    let (hook, mut notifications) = receiver(0).await;
    let config = Config {
        bind: "127.0.0.1:0".to_owned(),
        tokens: vec![("scribe-token".to_owned(), "grace".to_owned())],
        webhooks: WebhookPolicy::new().allow("127.0.0.1").expect("an entry"),
        ..Config::default()
    };
    let running = server(&config).await.expect("build").spawn();
    let cx = CallContext::new();

    for binding in Binding::ALL {
        // Anonymous: the card is readable, nothing else.
        let stranger = ClientBuilder::new()
            .prefer(&[binding])
            .build()
            .expect("client")
            .connect(running.origin())
            .await
            .expect("the public card");
        assert_eq!(stranger.binding, binding);
        assert_eq!(stranger.card.skills.len(), 1, "{binding}: public skills");
        let refused = stranger
            .service
            .get_extended_agent_card(&cx, pb::GetExtendedAgentCardRequest::default())
            .await
            .expect_err("the extended card needs credentials");
        assert_eq!(refused.kind(), ErrorKind::Unauthenticated, "{binding}");

        let agent = ClientBuilder::new()
            .prefer(&[binding])
            .bearer_token("scribe-token")
            .build()
            .expect("client")
            .connect(running.origin())
            .await
            .expect("connect");
        let extended = agent
            .service
            .get_extended_agent_card(&cx, pb::GetExtendedAgentCardRequest::default())
            .await
            .unwrap_or_else(|e| panic!("{binding}: extended card: {e}"));
        let skills: Vec<&str> = extended.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(skills, ["notes", "signed"], "{binding}");

        // A streamed answer, with a webhook registered in the same request.
        let token = format!("token-{binding}");
        let request = pb::SendMessageRequest {
            message: Some(pb::Message::user(
                format!("m-{binding}"),
                vec![pb::Part::text("three short words")],
            )),
            configuration: Some(pb::SendMessageConfiguration {
                task_push_notification_config: Some(pb::TaskPushNotificationConfig {
                    url: hook.clone(),
                    token: token.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut stream = agent
            .service
            .send_streaming_message(&cx, request)
            .await
            .unwrap_or_else(|e| panic!("{binding}: stream: {e}"));
        let mut chunks = Vec::new();
        let mut task_id = String::new();
        while let Some(event) = stream.next().await {
            let event = event.unwrap_or_else(|e| panic!("{binding}: event: {e}"));
            if let Some(Payload::ArtifactUpdate(update)) = event.response.payload.as_ref() {
                task_id.clone_from(&update.task_id);
                chunks.push(event.text());
            }
        }
        assert_eq!(
            chunks,
            ["three", "short", "words", "-- for grace"],
            "{binding}"
        );

        // The same events reach the webhook, in order, with the caller's token, ending
        // COMPLETED.
        let mut pushed_chunks = Vec::new();
        loop {
            let received = next(&mut notifications).await;
            assert_eq!(
                received
                    .headers
                    .get("x-a2a-notification-token")
                    .and_then(|v| v.to_str().ok()),
                Some(token.as_str()),
                "{binding}"
            );
            if let Some(Payload::ArtifactUpdate(update)) = received.body.payload.as_ref() {
                assert_eq!(update.task_id, task_id, "{binding}");
                pushed_chunks.push(received.body.text());
            }
            if state_of(&received) == Some(pb::TaskState::Completed) {
                break;
            }
        }
        assert_eq!(pushed_chunks, chunks, "{binding}: pushed as streamed");
    }
    running.shutdown().await.expect("a clean shutdown");
}
