//! Scribe, an A2A agent in a crate of its own, built on the `trident` facade alone.
//!
//! It serves gRPC, JSON-RPC and HTTP+JSON on one port, streams its answer as artifact chunks,
//! delivers push notifications to the webhooks its callers register, and keeps an extended
//! card for authenticated callers. Every setting is in [`Config`]; [`server`] turns it into a
//! [`trident::Server`]; `src/main.rs` reads the config from the environment and serves.

use std::sync::Arc;

use trident::auth::BearerTokens;
use trident::proto::{AgentCard, AgentSkill, Artifact, Part};
use trident::{
    A2aError, AgentExecutor, BuildError, EventSink, RequestContext, Server, WebhookPolicy,
};

/// Writes down what it is told, one word per artifact chunk, and signs it with the caller's
/// name.
pub struct Scribe;

#[trident::async_trait]
impl AgentExecutor for Scribe {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.working().await?;
        let text = ctx.text();
        for (i, word) in text.split_whitespace().enumerate() {
            let chunk = Artifact::new("notes", vec![Part::text(word)]);
            sink.artifact_chunk(chunk, i > 0, false).await?;
        }
        let who = ctx.principal.id().unwrap_or("anonymous").to_owned();
        let signature = Artifact::new("notes", vec![Part::text(format!("-- for {who}"))]);
        sink.artifact_chunk(signature, !text.trim().is_empty(), true)
            .await?;
        sink.complete().await
    }
}

/// Everything that differs between deployments.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub bind: String,
    /// The origin clients reach the agent at, when it is not the bound address (behind a
    /// proxy); the card's interfaces are derived from it.
    pub public_url: Option<String>,
    /// Store spec: `memory`, `sqlite:PATH` or `postgres://…`.
    pub store: String,
    /// Bearer tokens and the callers they stand for. Every call but the public card needs one.
    pub tokens: Vec<(String, String)>,
    /// Where webhooks may point. The default allows public addresses only; allowing more
    /// (`WebhookPolicy::new().allow("127.0.0.1")?` for a receiver on this machine) is done
    /// here and nowhere else: the server applies this one policy both when a webhook is
    /// registered and when a notification is sent.
    pub webhooks: WebhookPolicy,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".to_owned(),
            public_url: None,
            store: "memory".to_owned(),
            tokens: Vec::new(),
            webhooks: WebhookPolicy::new(),
        }
    }
}

/// The public card: what anyone may read.
pub fn card() -> AgentCard {
    AgentCard::builder("Scribe", "Writes down what you say, word by word")
        .skill(AgentSkill::new("notes", "Notes", "Takes notes").with_tags(["notes"]))
        .streaming(true)
        .push_notifications(true)
        .extended_agent_card(true)
        .build()
}

/// The extended card: for authenticated callers only.
pub fn extended_card() -> AgentCard {
    AgentCard::builder("Scribe", "Writes down what you say, and signs it")
        .skill(AgentSkill::new("notes", "Notes", "Takes notes").with_tags(["notes"]))
        .skill(
            AgentSkill::new("signed", "Signed notes", "Notes signed with your name")
                .with_tags(["notes", "identity"]),
        )
        .streaming(true)
        .push_notifications(true)
        .extended_agent_card(true)
        .build()
}

/// Scribe's server for `config`, bound and ready to serve.
pub async fn server(config: &Config) -> Result<Server, BuildError> {
    let tokens = config
        .tokens
        .iter()
        .fold(BearerTokens::new(), |t, (token, who)| {
            t.with(token.as_str(), who.as_str())
        });
    let mut builder = Server::builder(Scribe)
        .card(card())
        .extended_card(extended_card())
        .authenticator(Arc::new(tokens))
        .webhook_policy(config.webhooks.clone())
        .store(config.store.as_str())
        .bind(&config.bind);
    if let Some(url) = &config.public_url {
        builder = builder.public_url(url.as_str());
    }
    builder.build().await
}
