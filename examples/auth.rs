//! Authentication and an extended card. `cargo run --example auth`
//!
//! The server is given an [`Authenticator`](trident::auth::Authenticator) — here
//! [`BearerTokens`], a fixed token → caller table; [`trident::security`] has JWT — and from
//! then on everything but the public card needs credentials, on every binding. The builder
//! declares the authenticator's scheme in the card, so clients know what to send. The agent
//! sees who called in [`RequestContext::principal`].
//!
//! The card declares `extendedAgentCard`, and the server holds a second, fuller card
//! ([`ServerBuilder::extended_card`](trident::ServerBuilder::extended_card)) that only
//! authenticated callers get (`GetExtendedAgentCard`). `build()` refuses a setup where the
//! two disagree, or where an extended card has no authentication in front of it.

use std::sync::Arc;

use trident::auth::BearerTokens;
use trident::client::{Binding, ClientBuilder, Texts};
use trident::proto::{
    AgentCard, AgentSkill, GetExtendedAgentCardRequest, Message, Part, SendMessageRequest,
};
use trident::{A2aError, AgentExecutor, CallContext, ErrorKind, EventSink, RequestContext, Server};

/// Greets the caller by the name their credentials map to.
pub struct Concierge;

#[trident::async_trait]
impl AgentExecutor for Concierge {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let who = ctx.principal.id().unwrap_or("stranger");
        sink.reply_text(format!("Welcome, {who}.")).await
    }
}

/// The server: bearer token `alice-token` is the caller `alice`; the extended card adds a
/// skill the public card does not show.
pub async fn server() -> Result<trident::Server, trident::BuildError> {
    let greet = AgentSkill::new("greet", "Greet", "Greets the caller").with_tags(["greeting"]);
    let card = AgentCard::builder("Concierge", "Greets callers it knows")
        .skill(greet.clone())
        .extended_agent_card(true)
        .build();
    let extended = AgentCard::builder("Concierge", "Greets callers it knows, and more")
        .skill(greet)
        .skill(AgentSkill::new("vip", "VIP desk", "For known callers").with_tags(["vip"]))
        .extended_agent_card(true)
        .build();
    Server::builder(Concierge)
        .card(card)
        .extended_card(extended)
        .authenticator(Arc::new(BearerTokens::new().with("alice-token", "alice")))
        .bind("127.0.0.1:0")
        .build()
        .await
}

/// What a caller without and a caller with credentials got.
#[derive(Debug)]
pub struct Outcome {
    /// The schemes the public card declares.
    pub schemes: Vec<String>,
    /// How the anonymous `SendMessage` was refused.
    pub anonymous_send: Option<ErrorKind>,
    /// How the anonymous `GetExtendedAgentCard` was refused.
    pub anonymous_extended: Option<ErrorKind>,
    /// The skills of the extended card, as alice got it.
    pub extended_skills: Vec<String>,
    /// The agent's answer to alice.
    pub greeting: String,
}

/// Serves [`Concierge`] on a free loopback port and calls it over `binding`, first without
/// credentials, then as alice.
pub async fn run(binding: Binding) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let server = server().await?.spawn();
    let cx = CallContext::new();
    let hello = || SendMessageRequest {
        message: Some(Message::user("m-1", vec![Part::text("hello")])),
        ..Default::default()
    };

    // The card is public; nothing else is.
    let anonymous = ClientBuilder::new()
        .prefer(&[binding])
        .build()?
        .connect(server.origin())
        .await?;
    let schemes = anonymous.card.security_schemes.keys().cloned().collect();
    let anonymous_send = anonymous.service.send_message(&cx, hello()).await.err();
    let anonymous_extended = anonymous
        .service
        .get_extended_agent_card(&cx, GetExtendedAgentCardRequest::default())
        .await
        .err();

    // The same calls with the token.
    let alice = ClientBuilder::new()
        .prefer(&[binding])
        .bearer_token("alice-token")
        .build()?
        .connect(server.origin())
        .await?;
    let extended = alice
        .service
        .get_extended_agent_card(&cx, GetExtendedAgentCardRequest::default())
        .await?;
    let greeting = alice.service.send_message(&cx, hello()).await?.text();

    server.shutdown().await?;
    Ok(Outcome {
        schemes,
        anonymous_send: anonymous_send.map(|e| e.kind()),
        anonymous_extended: anonymous_extended.map(|e| e.kind()),
        extended_skills: extended.skills.into_iter().map(|s| s.id).collect(),
        greeting,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for binding in Binding::ALL {
        println!("{binding}: {:#?}", run(binding).await?);
    }
    Ok(())
}
