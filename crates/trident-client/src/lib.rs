//! Reads an agent card, picks a binding, and returns the agent as `Arc<dyn A2aService>`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), trident_core::A2aError> {
//! use trident_client::{Binding, connect};
//! let agent = connect("http://127.0.0.1:8080", &[Binding::Grpc, Binding::JsonRpc]).await?;
//! let card = &agent.card;
//! println!("{} over {:?}", card.name, agent.binding);
//! # Ok(()) }
//! ```

use std::sync::Arc;

use trident_core::{A2aError, A2aService, DEFAULT_MAX_RESPONSE_BYTES, ErrorKind, PROTOCOL_VERSION};

mod gateway;
pub use gateway::Upstream;
use trident_proto as pb;

pub use trident_core::Binding;

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

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("card", &self.card.name)
            .field("binding", &self.binding)
            .field("interface", &self.interface.url)
            .finish()
    }
}

/// Fetches the card at `{origin}/.well-known/agent-card.json` (or `origin` itself when it
/// already names a `.json` file).
pub async fn fetch_card(origin: &str) -> Result<pb::AgentCard, A2aError> {
    let url = if origin.ends_with(".json") {
        origin.to_owned()
    } else {
        format!(
            "{}/.well-known/agent-card.json",
            origin.trim_end_matches('/')
        )
    };
    let unavailable = |e: reqwest::Error| A2aError::transport(format!("agent card {url}: {e}"));
    let response = reqwest::get(&url).await.map_err(unavailable)?;
    if !response.status().is_success() {
        return Err(A2aError::new(
            ErrorKind::Unavailable,
            format!("agent card {url}: HTTP {}", response.status()),
        ));
    }
    let body = trident_core::read_body(response.bytes_stream(), DEFAULT_MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| e.into_error(format_args!("agent card {url}")))?;
    serde_json::from_slice(&body).map_err(|e| {
        A2aError::new(
            ErrorKind::InvalidAgentResponse,
            format!("agent card {url}: {e}"),
        )
    })
}

/// Picks the first binding of `preference` (all bindings, in this order, when empty) that the
/// card offers for protocol version 1.x, walking the card's interfaces in their order.
pub fn choose(
    card: &pb::AgentCard,
    preference: &[Binding],
) -> Option<(Binding, pb::AgentInterface)> {
    let preference = if preference.is_empty() {
        &Binding::ALL[..]
    } else {
        preference
    };
    let v1 = |i: &pb::AgentInterface| {
        i.protocol_version.is_empty()
            || i.protocol_version.split('.').next() == PROTOCOL_VERSION.split('.').next()
    };
    preference.iter().find_map(|b| {
        card.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case(b.card_name()) && v1(i))
            .map(|i| (*b, i.clone()))
    })
}

/// A client of `interface` over `binding`, sending the interface's tenant.
pub async fn client(
    binding: Binding,
    interface: &pb::AgentInterface,
) -> Result<Arc<dyn A2aService>, A2aError> {
    Ok(match binding {
        Binding::JsonRpc => Arc::new(
            trident_jsonrpc::JsonRpcClient::new(&interface.url)?.with_tenant(&interface.tenant),
        ),
        Binding::Rest => {
            Arc::new(trident_rest::RestClient::new(&interface.url)?.with_tenant(&interface.tenant))
        }
        Binding::Grpc => Arc::new(
            trident_grpc::GrpcClient::connect(&interface.url)
                .await?
                .with_tenant(&interface.tenant),
        ),
    })
}

/// Reads the card at `origin`, picks a binding by `preference`, and connects.
pub async fn connect(origin: &str, preference: &[Binding]) -> Result<Agent, A2aError> {
    let card = fetch_card(origin).await?;
    let (binding, interface) = choose(&card, preference).ok_or_else(|| {
        A2aError::new(
            ErrorKind::Unavailable,
            format!("{origin} offers none of the bindings {preference:?} for A2A 1.x"),
        )
    })?;
    let service = client(binding, &interface).await?;
    Ok(Agent {
        card,
        binding,
        interface,
        service,
    })
}
