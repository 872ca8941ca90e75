//! What Trident's HTTP bindings share, beside the vocabulary of `trident-core`:
//!
//! - [`dispatch_json`] (module [`json`]): the ProtoJSON request of any operation → one
//!   [`A2aService`](trident_core::A2aService) call → ProtoJSON or events. The JSON-RPC and
//!   HTTP+JSON adapters both answer through it.
//! - [`call_context`] (module [`edge`]): a request's `http` head → its `CallContext`, the
//!   one reading every server adapter does (gRPC's too: tonic's metadata is an `http` head).
//! - [`is_json_media_type`] and [`not_json`]: which request bodies the JSON bindings accept.
//! - [`sse_events`] / [`SseDecoder`] and [`read_body`]: how the HTTP clients read a response,
//!   each bounded ([`DEFAULT_MAX_RESPONSE_BYTES`]); [`read_request_body`]: how the JSON
//!   bindings' servers read a request. They take any stream of byte chunks.
//! - [`SseWriter`] and [`write_event`]: how the JSON bindings' servers write a stream as SSE
//!   (each event encoded once into the body chunk, ready events gathered into one chunk).
//! - [`json_client!`]: the JSON clients' `A2aService` impl, generated per RPC from the list;
//!   `HttpClient` (feature `client`): their HTTP side (headers, query, bounded reads, errors).
//! - [`WireTap`] (module [`wiretap`]): the diagnostic hook every binding's client calls with
//!   what it exchanges on the wire (`trident --debug`), credentials redacted.
//! - `HttpWebhooks` (feature `webhooks`): push-notification delivery over reqwest, the
//!   engine's `WebhookTransport`. Behind a feature so the bindings, which use the rest of this
//!   crate, depend on no engine; the server and the facade switch it on.
//!
//! No server framework: the adapters (axum) and clients (reqwest) stay in the binding crates
//! (the SSE writer is a stream of byte chunks, which the adapters make their response body;
//! the edge reads the `http` crate's head types, which axum and tonic share).

mod body;
#[cfg(feature = "client")]
mod client;
pub mod edge;
pub mod json;
mod media;
mod sse;
mod sse_writer;
#[cfg(feature = "webhooks")]
mod webhooks;
pub mod wiretap;

pub use body::{BodyError, DEFAULT_MAX_RESPONSE_BYTES, read_body, read_request_body};
#[cfg(feature = "client")]
pub use client::{HttpClient, transport_error};
pub use edge::call_context;
pub use json::{JsonReply, PathVars, dispatch_json, parse_request, to_json};
pub use media::{is_json_media_type, not_json};
pub use sse::{SseDecoder, SseEvent, sse_events};
pub use sse_writer::{EncodeEvent, SseWriter, write_event};
#[cfg(feature = "webhooks")]
pub use webhooks::{HttpWebhooks, Signer};
pub use wiretap::WireTap;

/// Settings of a JSON binding's endpoint (HTTP+JSON's `RestOptions`, JSON-RPC's
/// `JsonRpcOptions`: the two bindings take the same ones).
#[derive(Debug, Clone)]
pub struct JsonBindingOptions {
    /// Largest request body accepted, in bytes.
    pub max_body: usize,
    /// Interval of SSE keep-alive comments on idle streams.
    pub keep_alive: std::time::Duration,
    /// Also answer A2A v0.3's form of the binding (its routes or methods, translated by
    /// `trident-v03` into the same service calls).
    pub v03: bool,
    /// Answer the 1.0 form (default `true`; off, with `v03` on, the endpoint is a v0.3-only
    /// agent's: anything else is refused in v0.3's error form).
    pub v1: bool,
    /// How much memory decoding a JSON body may take relative to its size (the scan before
    /// decoding, [`trident_core::check_json`]; default 4 × the body + 1 MiB).
    pub json: trident_core::JsonLimits,
}

impl Default for JsonBindingOptions {
    fn default() -> Self {
        Self {
            max_body: 4 << 20,
            keep_alive: std::time::Duration::from_secs(15),
            v03: true,
            v1: true,
            json: trident_core::JsonLimits::default(),
        }
    }
}
