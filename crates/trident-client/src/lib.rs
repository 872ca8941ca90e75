//! Trident's A2A client: reads an agent card, picks a binding, and returns the agent as
//! `Arc<dyn A2aService>`, the same trait the engine implements.
//!
//! A [`Client`], made by a [`ClientBuilder`], holds what every call to every agent shares: one
//! HTTP client (connection pool, TLS roots), default headers and authentication, a per-call
//! timeout, the binding preference, and a cache of agent cards that honours their
//! `Cache-Control` and `ETag`. [`Client::connect`] reads the card once and returns an
//! [`Agent`]; its calls keep the caller's promises on every binding: they end with
//! `DeadlineExceeded` when [`CallContext::deadline`] passes, drop their request when
//! [`CallContext::cancelled`] fires, and send the time left to the agent (see
//! [`trident_core::deadline`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), trident_core::A2aError> {
//! use std::time::Duration;
//! use trident_client::{Binding, ClientBuilder, Texts};
//! use trident_core::CallContext;
//! use trident_proto as pb;
//!
//! let client = ClientBuilder::new()
//!     .timeout(Duration::from_secs(30))
//!     .bearer_token("s3cret")
//!     .prefer(&[Binding::Grpc, Binding::JsonRpc])
//!     .build()?;
//! let agent = client.connect("http://127.0.0.1:8080").await?;
//! println!("{} over {}", agent.card.name, agent.binding);
//! let message = pb::Message::user("m-1", vec![pb::Part::text("hello")]);
//! let request = pb::SendMessageRequest { message: Some(message), ..Default::default() };
//! let reply = agent.service.send_message(&CallContext::new(), request).await?;
//! println!("{}", reply.text());
//! # Ok(()) }
//! ```
//!
//! [`CallContext::deadline`]: trident_core::CallContext::deadline
//! [`CallContext::cancelled`]: trident_core::CallContext::cancelled

use std::sync::Arc;

use trident_core::{A2aError, A2aService, ErrorKind, PROTOCOL_VERSION};

mod builder;
mod cache;
mod gateway;
mod helpers;
mod preview;
mod timed;

pub use builder::{Client, ClientBuilder, read_card};
pub use gateway::Upstream;
pub use helpers::{TaskId, Texts};
pub use preview::{Preview, if_generation_match, preview_interface, preview_twin, speaks_preview};
/// The diagnostic hook of [`ClientBuilder::wire_tap`].
pub use trident_http::WireTap;
use trident_proto as pb;
pub use trident_v03::card::{is_v03_only, is_v03_version};

pub use trident_core::{Binding, UnknownBinding};

/// A connected agent.
pub struct Agent {
    /// The agent's card.
    pub card: pb::AgentCard,
    /// The binding chosen.
    pub binding: Binding,
    /// The chosen interface.
    pub interface: pb::AgentInterface,
    /// The agent.
    pub service: Arc<dyn A2aService>,
}

impl Agent {
    /// The agent in the A2A 1.1 preview (long-polling GetTask, `ifGenerationMatch`, gap-free
    /// streams; see [`Preview`]): `Some` when the client asked for it
    /// ([`ClientBuilder::preview`]) and the agent's card offers it on the binding chosen (the
    /// [`interface`](Self::interface) says `protocolVersion: "1.1"`, and
    /// [`service`](Self::service) sends `A2A-Version: 1.1`). `None` otherwise: the agent is
    /// spoken to in 1.0, exactly as by a client without the preview.
    pub fn preview(&self) -> Option<Preview> {
        speaks_preview(&self.interface).then(|| Preview::speaking(Arc::clone(&self.service)))
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("card", &self.card.name)
            .field("binding", &self.binding)
            .field("interface", &self.interface.url)
            .finish()
    }
}

/// The URL of the card of `origin`: `{origin}/.well-known/agent-card.json`, or `origin` itself
/// when it already names a `.json` file.
pub fn card_url(origin: &str) -> String {
    if origin.ends_with(".json") {
        origin.to_owned()
    } else {
        format!(
            "{}/.well-known/agent-card.json",
            origin.trim_end_matches('/')
        )
    }
}

/// Fetches the card of `origin` (see [`card_url`]) with a default [`Client`]: no timeout, no
/// authentication, no cache. [`Client::fetch_card`] has the options.
pub async fn fetch_card(origin: &str) -> Result<pb::AgentCard, A2aError> {
    ClientBuilder::new()
        .cache_cards(false)
        .build()?
        .fetch_card(origin)
        .await
}

/// Whether `interface` speaks A2A 1.x (an interface that names no version is taken to).
fn speaks_v1(interface: &pb::AgentInterface) -> bool {
    interface.protocol_version.is_empty()
        || interface.protocol_version.split('.').next() == PROTOCOL_VERSION.split('.').next()
}

/// Whether `interface` speaks A2A 0.3 (`protocolVersion` `0.3` or `0.3.x`).
pub fn speaks_v03(interface: &pb::AgentInterface) -> bool {
    trident_v03::card::is_v03_version(interface.protocol_version.trim())
}

/// Which A2A protocol generation a client speaks to an agent ([`ClientBuilder::protocol`],
/// `trident … --protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// For the binding chosen, 1.x when the card offers it, else 0.3 (the default).
    #[default]
    Auto,
    /// A2A 1.x only.
    V1,
    /// A2A 0.3 only.
    V03,
}

impl Protocol {
    /// Whether `interface` may be used under this choice.
    fn accepts(self, interface: &pb::AgentInterface) -> bool {
        match self {
            Protocol::Auto => speaks_v1(interface) || speaks_v03(interface),
            Protocol::V1 => speaks_v1(interface),
            Protocol::V03 => speaks_v03(interface),
        }
    }

    /// What the card was searched for, in errors.
    fn describe(self) -> &'static str {
        match self {
            Protocol::Auto => "A2A 1.x or 0.3",
            Protocol::V1 => "A2A 1.x",
            Protocol::V03 => "A2A 0.3",
        }
    }
}

/// A `--protocol` value that is not `auto`, `1.0` or `0.3`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?} (expected auto, 1.0 or 0.3)")]
pub struct UnknownProtocol(String);

impl std::str::FromStr for Protocol {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, UnknownProtocol> {
        match s.trim() {
            "auto" => Ok(Protocol::Auto),
            "1.0" | "1" => Ok(Protocol::V1),
            "0.3" | "0.3.0" => Ok(Protocol::V03),
            other => Err(UnknownProtocol(other.to_owned())),
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Protocol::Auto => "auto",
            Protocol::V1 => "1.0",
            Protocol::V03 => "0.3",
        })
    }
}

/// Picks the first binding of `preference` (all bindings, in this order, when empty) that the
/// card offers for protocol version 1.x, walking the card's interfaces in their order.
/// [`choose_for`] also reaches agents that speak only v0.3.
pub fn choose(
    card: &pb::AgentCard,
    preference: &[Binding],
) -> Option<(Binding, pb::AgentInterface)> {
    choose_for(card, preference, Protocol::V1)
}

/// Picks the first binding of `preference` (all bindings, in this order, when empty) that the
/// card offers under `protocol`, then its interface: with [`Protocol::Auto`], the card's
/// first 1.x interface for that binding, else its first 0.3 one (1.0 is preferred when both
/// are offered). The interface's `protocolVersion` says which the client will speak
/// ([`Client::client`] follows it). An A2A 1.1 preview interface is never chosen here (see
/// [`preview_interface`], which [`Client::connect`] uses with [`ClientBuilder::preview`]).
pub fn choose_for(
    card: &pb::AgentCard,
    preference: &[Binding],
    protocol: Protocol,
) -> Option<(Binding, pb::AgentInterface)> {
    let preference = if preference.is_empty() {
        &Binding::ALL[..]
    } else {
        preference
    };
    preference.iter().find_map(|b| {
        let offered: Vec<&pb::AgentInterface> = card
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_binding.eq_ignore_ascii_case(b.card_name()))
            .filter(|i| protocol.accepts(i) && !speaks_preview(i))
            .collect();
        let chosen = offered
            .iter()
            .find(|i| speaks_v1(i))
            .or_else(|| offered.first());
        chosen.map(|i| (*b, (*i).clone()))
    })
}

/// The error of a card that offers none of `preference`: it lists what the card does offer
/// (binding, URL, protocol version), so the caller can see why nothing matched.
pub fn no_match(origin: &str, card: &pb::AgentCard, preference: &[Binding]) -> A2aError {
    no_match_for(origin, card, preference, Protocol::V1)
}

/// [`no_match`] for a search under `protocol` ([`choose_for`]).
pub fn no_match_for(
    origin: &str,
    card: &pb::AgentCard,
    preference: &[Binding],
    protocol: Protocol,
) -> A2aError {
    let wanted: Vec<&str> = if preference.is_empty() {
        Binding::ALL.iter().map(|b| b.card_name()).collect()
    } else {
        preference.iter().map(|b| b.card_name()).collect()
    };
    let offered: Vec<String> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            let version = if i.protocol_version.is_empty() {
                "no version".to_owned()
            } else {
                format!("version {}", i.protocol_version)
            };
            format!("{} at {} ({version})", i.protocol_binding, i.url)
        })
        .collect();
    let offered = if offered.is_empty() {
        "no interfaces".to_owned()
    } else {
        offered.join(", ")
    };
    A2aError::new(
        ErrorKind::Unavailable,
        format!(
            "{origin} offers none of the bindings {} for {}; its card lists {offered}",
            wanted.join(", "),
            protocol.describe()
        ),
    )
}

/// A client of `interface` over `binding`, sending the interface's tenant, with default
/// options. [`Client::client`] has the options.
pub async fn client(
    binding: Binding,
    interface: &pb::AgentInterface,
) -> Result<Arc<dyn A2aService>, A2aError> {
    ClientBuilder::new()
        .build()?
        .client(binding, interface)
        .await
}

/// Reads the card at `origin`, picks a binding by `preference`, and connects, with default
/// options. [`Client::connect`] has the options.
pub async fn connect(origin: &str, preference: &[Binding]) -> Result<Agent, A2aError> {
    ClientBuilder::new()
        .prefer(preference)
        .cache_cards(false)
        .build()?
        .connect(origin)
        .await
}

#[cfg(test)]
mod tests;
