//! Trident: write an [A2A](https://a2a-protocol.org) v1.0 agent in Rust and serve it over all
//! three bindings — gRPC, JSON-RPC 2.0 and HTTP+JSON — from one engine. This is the one crate
//! to depend on (`cargo add trident-a2a`; its library is `trident`); it re-exports what an
//! agent author and a client need.
//!
//! # 1. The agent
//!
//! An agent is an [`AgentExecutor`]: it gets each turn's [`RequestContext`] (the message, the
//! task it continues, the caller) and publishes through an [`EventSink`] — status updates,
//! artifacts (whole or in chunks), a direct reply. Returning an [`A2aError`] fails the task
//! with that error. The engine does everything else: the task lifecycle, the per-task
//! ordered event log, streams that resume (`Last-Event-ID`), blocking and non-blocking
//! sends, cancellation, push notifications, listing and paging.
//!
//! ```
//! use trident::{A2aError, AgentExecutor, EventSink, RequestContext};
//! use trident::proto::{Artifact, Part};
//!
//! struct Echo;
//!
//! #[trident::async_trait]
//! impl AgentExecutor for Echo {
//!     async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
//!         sink.artifact(Artifact::new("echo", vec![Part::text(ctx.text())])).await?;
//!         sink.complete().await
//!     }
//! }
//! ```
//!
//! # 2. The card
//!
//! The [`AgentCard`](proto::AgentCard) says who the agent is and what it can do; build it with
//! [`AgentCard::builder`](proto::AgentCard::builder). It is given to the server once: the
//! server fills in the interfaces (from the bound address or a public URL), declares the
//! authenticator's security schemes and, with a signing key, signs it last. Its capabilities
//! switch features on: `streaming`, `pushNotifications` (delivered over HTTP(S) under one
//! [`WebhookPolicy`]) and `extendedAgentCard` (served to authenticated callers).
//!
//! # 3. The server
//!
//! [`Server::builder`] wires the engine, the store (`memory`, `sqlite:PATH`,
//! `postgres://…`), the three bindings on one port (HTTP/1.1 and h2c; gRPC can get a port of
//! its own, JSON-RPC a path other than `/` with [`ServerBuilder::jsonrpc_path`]), the card,
//! push delivery, authentication, connection limits and graceful shutdown. The extended card
//! gets the public card's interfaces and security unless it sets its own.
//! [`ServerBuilder::build`] checks the setup, binds the listeners and assembles the server; it
//! refuses a setup that cannot work with a [`BuildError`] that says why — push declared
//! without a sender, an extended card without authentication, the interfaces given twice…
//! [`Server::local_addr`] and [`Server::card_url`] say where it listens (the card is at
//! [`CARD_PATH`]); to know the address before `build()`, bind a listener yourself and give it
//! to [`ServerBuilder::listener`].
//!
//! ```no_run
//! # use trident::{A2aError, AgentExecutor, EventSink, RequestContext};
//! # struct Echo;
//! # #[trident::async_trait]
//! # impl AgentExecutor for Echo {
//! #     async fn execute(&self, _: RequestContext, sink: EventSink) -> Result<(), A2aError> {
//! #         sink.complete().await
//! #     }
//! # }
//! use std::sync::Arc;
//! use trident::proto::{AgentCard, AgentSkill};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let card = AgentCard::builder("Echo", "Repeats what you say")
//!     .skill(AgentSkill::new("echo", "Echo", "Repeats the text").with_tags(["echo"]))
//!     .extended_agent_card(true)
//!     .build();
//! let server = trident::Server::builder(Echo)
//!     .card(card.clone())
//!     .extended_card(card)
//!     .authenticator(Arc::new(trident::auth::BearerTokens::new().with("secret", "alice")))
//!     .store("sqlite:agent.db")
//!     .bind("0.0.0.0:8080")
//!     .public_url("https://agent.example.com")
//!     .webhook_policy(trident::WebhookPolicy::new().allow("10.0.0.0/8")?)
//!     .build()
//!     .await?;
//! println!("serving {} on {}", server.card().name, server.local_addr());
//! server.with_graceful_shutdown(trident::shutdown_signal()).await?;
//! # Ok(()) }
//! ```
//!
//! To serve and do something else in the same program — call the agent, run tests — spawn
//! it: [`Server::spawn`] serves in the background and returns a [`Running`] handle with the
//! origin to connect to and a graceful [`Running::shutdown`].
//!
//! # 4. The client
//!
//! [`client`] (the `trident-client` crate) reads an agent's card, picks a binding and returns
//! the agent as an `Arc<dyn` [`A2aService`]`>` — the same trait the engine implements, so code
//! written against one runs against the other, and a gateway is a [`Server::service`] over a
//! client ([`client::Upstream`]). One configured [`client::Client`] (credentials, timeouts,
//! card cache) picks the binding per agent with
//! [`connect_with`](client::Client::connect_with). Streams are read with
//! [`futures`]`::StreamExt` and data parts written with [`serde_json`], both re-exported here:
//! a crate of yours needs this one and tokio only.
//!
//! ```no_run
//! # async fn call() -> Result<(), trident::A2aError> {
//! use trident::futures::StreamExt;
//! use trident::proto::{Message, Part, SendMessageRequest};
//! use trident::{A2aService, CallContext, client::Binding};
//!
//! let client = trident::client::ClientBuilder::new().bearer_token("secret").build()?;
//! let agent = client.connect_with("http://127.0.0.1:8080", &[Binding::JsonRpc]).await?;
//! let data = Part::data(trident::serde_json::json!({"city": "Lisbon"}));
//! let request = SendMessageRequest {
//!     message: Some(Message::user("m-1", vec![Part::text("hello"), data])),
//!     ..Default::default()
//! };
//! let mut events = agent.service.send_streaming_message(&CallContext::new(), request).await?;
//! while let Some(event) = events.next().await {
//!     println!("{:?}", event?);
//! }
//! # Ok(()) }
//! ```
//!
//! The whole round trip, serving and calling in one program:
//!
//! ```
//! # use trident::{A2aError, AgentExecutor, EventSink, RequestContext};
//! # use trident::proto::{Artifact, Part};
//! # struct Echo;
//! # #[trident::async_trait]
//! # impl AgentExecutor for Echo {
//! #     async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
//! #         sink.artifact(Artifact::new("echo", vec![Part::text(ctx.text())])).await?;
//! #         sink.complete().await
//! #     }
//! # }
//! use trident::client::{Binding, ClientBuilder, Texts};
//! use trident::proto::{Message, SendMessageRequest};
//! use trident::{CallContext, Server};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let server = Server::builder(Echo).bind("127.0.0.1:0").build().await?.spawn();
//! for binding in Binding::ALL {
//!     let agent = ClientBuilder::new().prefer(&[binding]).build()?.connect(server.origin()).await?;
//!     let request = SendMessageRequest {
//!         message: Some(Message::user("m-1", vec![Part::text("hello")])),
//!         ..Default::default()
//!     };
//!     let reply = agent.service.send_message(&CallContext::new(), request).await?;
//!     assert_eq!(reply.text(), "hello");
//! }
//! server.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! # 5. Examples
//!
//! The repository's `examples/` are whole programs written against this crate alone, each
//! serving its agent and calling it over every binding (`cargo run --example NAME`): `echo`;
//! `streaming` (an answer in artifact chunks); `multi_turn` (`INPUT_REQUIRED` and the
//! follow-up); `cancel` (a long task that stops when cancelled); `auth` (bearer tokens, the
//! caller in the agent, an extended card); `call_agent` (an agent that calls another with the
//! client). `examples/agent-crate` is an agent in a crate of its own with streaming, push
//! notifications and an extended card behind authentication.
//!
//! # Crates underneath
//!
//! `trident-proto` (the generated types: [`proto`]), `trident-core` (the service trait, errors,
//! executor API, engine and store traits), the binding crates (`trident-grpc`,
//! `trident-jsonrpc`, `trident-rest`), `trident-server` (one listener for all three),
//! `trident-store` (SQLite, PostgreSQL), `trident-security` (JWT, JWKS, signing) and
//! `trident-client`. Depend on them directly only for what this crate does not re-export.

mod server;

pub use server::{
    BuildError, DEFAULT_DRAIN, DEFAULT_WEBHOOK_TIMEOUT, Error, NOTIFICATION_SIGNATURE_HEADER,
    Running, SIGNED_NOTIFICATIONS_EXTENSION, ServeError, Server, ServerBuilder, shutdown_signal,
};

/// `#[trident::async_trait]` for implementing [`AgentExecutor`] (and the other async traits)
/// without a dependency of your own.
pub use async_trait::async_trait;

// The agent author's API.
pub use trident_core::{
    A2aError, A2aService, AgentExecutor, Binding, CallContext, ErrorKind, EventSink, EventStream,
    FieldViolation, PREVIEW_VERSION, PROTOCOL_VERSION, Principal, RequestContext, StreamEvent,
    TraceContext, default_card,
};
// The engine and push delivery.
pub use trident_engine::{
    AllowEntryError, Engine, EngineBuilder, EngineConfig, Limits, NOTIFICATION_ID_HEADER, Preview,
    PushConcurrency, PushLimits, RetryPolicy, WebhookError, WebhookPolicy, WebhookRequest,
    WebhookTransport,
};
// Listener settings (the bindings' own are the builder's methods).
pub use trident_core::JsonLimits;
pub use trident_server::{
    CARD_PATH, CallerLimits, ConnectionLimits, Cors, CorsError, DEFAULT_CORS_MAX_AGE,
    ForwardedHeader, Interfaces, IpNet, JSONRPC_PATH, JWKS_PATH, METRICS_PATH, Metrics, Protocols,
    ProxyOptions,
};

/// `serde_json`, for [`Part::data`](proto::Part::data), metadata and anything else the types
/// carry as JSON, without a dependency of your own (`trident::serde_json::json!`).
pub use serde_json;

/// `futures`, for the streams the API returns ([`EventStream`]: `StreamExt::next`, …),
/// without a dependency of your own.
pub use futures;

/// The A2A types, generated from the proto (`lf.a2a.v1`), with their ProtoJSON mapping and
/// builders (`Part::raw(..).with_filename(..)`, `AgentCard::builder(..)`, …).
pub use trident_proto as proto;

/// Talking to an agent: read its card, pick a binding, call it through [`A2aService`].
pub use trident_client as client;

/// Who may call: authenticators (bearer tokens, API keys; JWT in [`security`]), authorizers.
pub mod auth {
    // A glob on purpose: this module is `trident-core`'s `auth` as the facade shows it, and
    // grows with it.
    pub use trident_core::auth::*;
}

/// Stores: the traits, the in-memory store, SQLite and PostgreSQL, and [`store::open`]
/// for any of them from a spec string.
pub mod store;

/// JWT/JWKS authentication, agent card signatures, signing keys, signed push notifications.
pub use trident_security as security;

#[cfg(test)]
mod tests;
