//! The facade's server builder end to end, as a library user writes it: push delivery to a
//! loopback receiver allowed in one place, an extended card behind bearer authentication,
//! and a graceful shutdown that ends the serving future.

use std::sync::Arc;

use trident::auth::BearerTokens;
use trident::client::Binding;
use trident::proto::{self as pb, AgentCard, AgentSkill};
use trident::{Server, WebhookPolicy};

use crate::push::{next, receiver};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_webhook_policy_reaches_a_loopback_receiver_and_the_extended_card_needs_auth() {
    let (hook, mut notifications) = receiver(0).await;
    let card = AgentCard::builder("Facade", "Served by trident::Server")
        .skill(AgentSkill::new("demo", "Demo", "The demo agent").with_tags(["demo"]))
        .extended_agent_card(true)
        .build();
    let mut extended = card.clone();
    extended.description = "For authenticated callers".into();
    let server = Server::builder_shared(Arc::new(trident_testkit::agents::Demo))
        .card(card)
        .extended_card(extended)
        .authenticator(Arc::new(BearerTokens::new().with("secret", "alice")))
        .webhook_policy(WebhookPolicy::new().allow("127.0.0.1").expect("entry"))
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let origin = server.interfaces().rest.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.with_graceful_shutdown(async {
        let _ = stopped.await;
    }));

    // The public card is public; everything else needs the token.
    let agent = trident::client::connect(&origin, &[Binding::Rest])
        .await
        .expect("connect");
    assert_eq!(agent.card.name, "Facade");
    assert!(!agent.card.security_schemes.is_empty(), "bearer declared");
    let http = reqwest::Client::new();
    let anonymous = http
        .get(format!("{origin}/extendedAgentCard"))
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), 401);
    let extended: pb::AgentCard = http
        .get(format!("{origin}/extendedAgentCard"))
        .header("a2a-version", "1.0")
        .bearer_auth("secret")
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("a card");
    assert_eq!(extended.description, "For authenticated callers");

    // Push to loopback: allowed by the one policy, at creation and at delivery.
    let request = serde_json::json!({
        "message": {"messageId": "m-push", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
        "configuration": {"taskPushNotificationConfig": {"url": hook, "token": "t"}}
    });
    let sent = http
        .post(format!("{origin}/message:send"))
        .header("a2a-version", "1.0")
        .bearer_auth("secret")
        .json(&request)
        .send()
        .await
        .expect("send");
    assert_eq!(sent.status(), 200, "{:?}", sent.text().await);
    let first = next(&mut notifications).await;
    assert!(first.body.payload.is_some());
    assert_eq!(
        first
            .headers
            .get("x-a2a-notification-token")
            .and_then(|v| v.to_str().ok()),
        Some("t")
    );

    let _ = stop.send(());
    serving
        .await
        .expect("the server task")
        .expect("a clean shutdown");
}

/// gRPC on a listener of its own: the card names it, and every binding answers where the
/// card says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_on_its_own_listener_is_where_the_card_says() {
    let server = Server::builder_shared(Arc::new(trident_testkit::agents::Echo))
        .bind("127.0.0.1:0")
        .grpc_bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let grpc = server.grpc_addr().expect("a gRPC listener");
    assert_ne!(grpc, server.local_addr());
    assert_eq!(server.interfaces().grpc, grpc.to_string());
    let origin = server.interfaces().rest.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.with_graceful_shutdown(async {
        let _ = stopped.await;
    }));
    for binding in Binding::ALL {
        let agent = trident::client::connect(&origin, &[binding])
            .await
            .expect("connect");
        let request = pb::SendMessageRequest {
            message: Some(pb::Message::user(
                format!("m-{binding:?}"),
                vec![pb::Part::text("hi")],
            )),
            ..Default::default()
        };
        let reply = agent
            .service
            .send_message(&trident::CallContext::new(), request)
            .await
            .unwrap_or_else(|e| panic!("{binding:?}: {e}"));
        assert!(reply.payload.is_some(), "{binding:?}");
    }
    let _ = stop.send(());
    serving
        .await
        .expect("the server task")
        .expect("a clean shutdown");
}
