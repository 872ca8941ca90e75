//! The binding-agnostic core of Trident.
//!
//! - [`A2aService`]: one async method per A2A RPC, implemented by the engine (`trident-engine`)
//!   and by every binding's client, used as `Arc<dyn A2aService>`.
//! - [`A2aError`] and [`ErrorKind::wire`], the one table of wire codes.
//! - [`AgentExecutor`]: what agent authors implement; [`EventSink`] is how they publish.
//! - The [`store`] traits the engine (`trident-engine`) runs on.
//!
//! This crate knows no transport, no database and no engine.

pub mod auth;
mod context;
pub mod deadline;
mod error;
mod executor;
mod json_scan;
mod limits;
mod service;
mod timeout;

pub mod store;

pub use auth::{
    Access, AnyOf, ApiKeys, AuthRejection, Authenticator, Authorizer, BearerTokens, Credentials,
    DenyByDefault, HeaderList, StaticTokens,
};
pub use context::{
    Binding, CallContext, Generation, Peer, Principal, TraceContext, UnknownBinding,
};
pub use error::{
    A2aError, BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE, ErrorKind, FieldViolation,
    RETRY_AFTER_SECONDS, Wire, error_chain,
};
pub use executor::{AgentExecutor, Commit, EventSink, RequestContext, TurnEvents, TurnUpdate};
pub use json_scan::{
    JSON_ELEMENT_COST, JSON_MEMORY_SLACK, JSON_VALUE_COST, JsonLimits, check_json,
};
pub use limits::Limits;
pub use service::operation::{
    A2aReply, A2aRequest, AroundCall, MAX_JSON_DEPTH, MAX_JSON_VALUES, Operation,
};
pub use service::{A2aService, EventStream, StreamEvent};

use trident_proto as pb;

/// The A2A protocol version this crate implements.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The protocol version of the A2A 1.1 preview (task generation, long-polling GetTask,
/// `ifGenerationMatch`, from the specification's dev-1.1 branch): what a caller sends as
/// `A2A-Version` to ask for it, and what a card's preview interfaces say. Offered only by a
/// server that enables it.
pub const PREVIEW_VERSION: &str = "1.1";

/// Whether a protocol version (an `A2A-Version` value, or an interface's `protocolVersion`)
/// names the A2A 1.1 preview: `1.1`, or `1.1.x` (patch numbers do not change the version).
///
/// ```
/// assert!(trident_core::is_preview_version("1.1"));
/// assert!(trident_core::is_preview_version(" 1.1.0 "));
/// assert!(!trident_core::is_preview_version("1.10"));
/// assert!(!trident_core::is_preview_version("1.0"));
/// ```
pub fn is_preview_version(version: &str) -> bool {
    let v = version.trim();
    v == PREVIEW_VERSION
        || v.strip_prefix(PREVIEW_VERSION)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// A minimal valid agent card: streaming and push notifications on, text in and out, one skill.
/// Bindings fill `supportedInterfaces` with their URLs.
pub fn default_card(name: &str, description: &str) -> pb::AgentCard {
    pb::AgentCard {
        name: name.to_owned(),
        description: description.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: Some(pb::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: Some(false),
            extensions: Vec::new(),
        }),
        default_input_modes: vec!["text/plain".to_owned()],
        default_output_modes: vec!["text/plain".to_owned()],
        skills: vec![pb::AgentSkill {
            id: "default".to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            tags: vec!["a2a".to_owned()],
            ..Default::default()
        }],
        ..Default::default()
    }
}
