use std::sync::Arc;

use crate::auth::BearerTokens;
use crate::proto::AgentCard;
use crate::{
    A2aError, AgentExecutor, BuildError, EngineConfig, EventSink, ProxyOptions, RequestContext,
    Server, ServerOptions, WebhookError, WebhookPolicy, WebhookRequest, WebhookTransport,
};

struct Done;

#[async_trait::async_trait]
impl AgentExecutor for Done {
    async fn execute(&self, _: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.complete().await
    }
}

struct Nowhere;

#[async_trait::async_trait]
impl WebhookTransport for Nowhere {
    async fn post(&self, _: &WebhookRequest) -> Result<(), WebhookError> {
        Ok(())
    }
}

fn card() -> crate::proto::AgentCardBuilder {
    AgentCard::builder("Test", "A test agent")
}

fn bearer() -> Arc<BearerTokens> {
    Arc::new(BearerTokens::new().with("secret", "alice"))
}

async fn refused(builder: crate::ServerBuilder) -> BuildError {
    match builder.bind("127.0.0.1:0").build().await {
        Ok(server) => panic!("built {server:?}"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn incoherent_setups_are_refused_with_the_reason() {
    let e = refused(
        Server::builder(Done)
            .card(card().push_notifications(true).build())
            .without_push_delivery(),
    )
    .await;
    assert!(matches!(e, BuildError::PushWithoutSender), "{e}");

    let e = refused(
        Server::builder(Done)
            .card(card().push_notifications(false).build())
            .webhooks(Arc::new(Nowhere)),
    )
    .await;
    assert!(matches!(e, BuildError::SenderWithoutPush), "{e}");

    let e = refused(Server::builder(Done).card(card().extended_agent_card(true).build())).await;
    assert!(matches!(e, BuildError::ExtendedCardMissing), "{e}");

    let e = refused(
        Server::builder(Done)
            .card(card().build())
            .extended_card(card().build())
            .authenticator(bearer()),
    )
    .await;
    assert!(matches!(e, BuildError::ExtendedCardNotDeclared), "{e}");

    let e = refused(
        Server::builder(Done)
            .card(card().extended_agent_card(true).build())
            .extended_card(card().build()),
    )
    .await;
    assert!(
        matches!(e, BuildError::ExtendedCardWithoutAuthentication),
        "{e}"
    );

    let e = refused(
        Server::builder(Done)
            .card(card().interface("http://a.example/", "JSONRPC").build())
            .public_url("https://b.example"),
    )
    .await;
    assert!(matches!(e, BuildError::InterfacesTwice), "{e}");

    let loopback = WebhookPolicy::new().allow("127.0.0.1").expect("entry");
    let e = refused(
        Server::builder(Done)
            .webhook_policy(WebhookPolicy::new().allow("10.0.0.0/8").expect("entry"))
            .engine_config(EngineConfig {
                webhook_policy: loopback.clone(),
                ..EngineConfig::default()
            }),
    )
    .await;
    assert!(matches!(e, BuildError::WebhookPolicyTwice), "{e}");

    let svc: Arc<dyn crate::A2aService> = Arc::new(crate::Engine::builder(Arc::new(Done)).build());
    let e = refused(Server::service(svc.clone())).await;
    assert!(matches!(e, BuildError::MissingCard), "{e}");
    let e = refused(Server::service(svc).card(card().build()).store("memory")).await;
    assert!(matches!(e, BuildError::NotAnEngine("store")), "{e}");

    let e = refused(Server::builder(Done).proxies(ProxyOptions {
        proxy_protocol: true,
        ..ProxyOptions::default()
    }))
    .await;
    assert!(
        matches!(e, BuildError::ProxyProtocolWithoutTrustedProxies),
        "{e}"
    );

    let e = refused(Server::builder(Done).server_options(ServerOptions {
        authenticator: Some(bearer()),
        ..ServerOptions::default()
    }))
    .await;
    assert!(
        matches!(e, BuildError::OptionOwnedByBuilder("authenticator")),
        "{e}"
    );

    let e = refused(Server::builder(Done).store("mysql://nope")).await;
    assert!(matches!(e, BuildError::Store(_)), "{e}");
}

#[tokio::test]
async fn a_listener_that_cannot_bind_says_where() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let e = Server::builder(Done)
        .bind(&addr)
        .build()
        .await
        .expect_err("the port is taken");
    assert!(matches!(e, BuildError::Bind { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("cannot listen on {addr}: ")),
        "{e}"
    );
}

#[tokio::test]
async fn the_card_gets_the_bound_interfaces_and_the_authenticators_schemes() {
    let server = Server::builder(Done)
        .card(card().build())
        .authenticator(bearer())
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    let urls: Vec<(&str, &str)> = server
        .card()
        .supported_interfaces
        .iter()
        .map(|i| (i.protocol_binding.as_str(), i.url.as_str()))
        .collect();
    let (jsonrpc, rest, grpc) = (
        format!("http://{addr}/"),
        format!("http://{addr}"),
        addr.to_string(),
    );
    assert_eq!(
        urls,
        [
            ("JSONRPC", jsonrpc.as_str()),
            ("HTTP+JSON", rest.as_str()),
            ("GRPC", grpc.as_str())
        ]
    );
    assert!(!server.card().security_schemes.is_empty());
    assert_eq!(
        server.card().security_requirements.len(),
        server.card().security_schemes.len()
    );
    assert!(server.engine().is_some());
}

#[tokio::test]
async fn interfaces_given_in_the_card_are_kept_and_a_public_url_fills_them_otherwise() {
    let server = Server::builder(Done)
        .card(
            card()
                .interface("https://agent.example/rpc", "JSONRPC")
                .build(),
        )
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    assert_eq!(server.card().supported_interfaces.len(), 1);
    assert_eq!(server.interfaces().jsonrpc, "https://agent.example/rpc");

    let server = Server::builder(Done)
        .public_url("https://agent.example")
        .grpc_bind("127.0.0.1:0")
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    assert_eq!(server.interfaces().rest, "https://agent.example");
    let grpc = server.grpc_addr().expect("a gRPC listener");
    assert_eq!(server.interfaces().grpc, grpc.to_string());
}

#[tokio::test]
async fn a_signing_key_signs_the_card_and_declares_signed_notifications() {
    let server = Server::builder(Done)
        .signing_key(crate::security::SigningKey::generate())
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let card = server.card();
    assert_eq!(card.signatures.len(), 1);
    let declared = card
        .capabilities
        .iter()
        .flat_map(|c| &c.extensions)
        .any(|e| e.uri == crate::SIGNED_NOTIFICATIONS_EXTENSION);
    assert!(declared);
}
