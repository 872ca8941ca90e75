//! The A2A JSON-RPC 2.0 binding.
//!
//! - [`router`]: `POST` endpoint; method names are the RPC names, `params`/`result` ProtoJSON;
//!   the streaming methods answer `text/event-stream` where every `data:` is a complete
//!   JSON-RPC response wrapping one `StreamResponse` and `id:` is its sequence number.
//!   Dispatch goes through [`trident_core::Operation`] and [`trident_http::dispatch_json`]
//!   (jsonrpsee-types only parses envelopes and shapes error objects).
//! - [`JsonRpcClient`]: `A2aService` over JSON-RPC.
//! - [`V03Client`]: `A2aService` over v0.3's JSON-RPC methods, for agents that speak only v0.3.
//! - [`v03`]: the A2A v0.3 methods on the same endpoint (`message/send`, `tasks/get`, …),
//!   decided by the method name and translated by `trident-v03` into the same service calls.

mod client;
mod server;
pub mod v03;
mod v03_client;

use axum::http::header;
use axum::response::{IntoResponse, Response};
pub use client::JsonRpcClient;
pub use server::{error_object, error_reply, router};
pub use v03_client::V03Client;

/// Settings of the JSON-RPC endpoint: [`trident_http::JsonBindingOptions`].
pub type JsonRpcOptions = trident_http::JsonBindingOptions;

/// A JSON answer (HTTP 200 unless the caller sets another), the body of every JSON-RPC reply:
/// the 1.0 and v0.3 adapters both answer through it.
pub(crate) fn json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`, off by default): the
/// server's envelope parser and reply envelopes, and the client's SSE event decoder, the very
/// functions `router` and `JsonRpcClient` call. Not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use trident_core::{A2aError, Operation, StreamEvent};

    /// Parses a request body into the id as written, the operation and the raw params.
    pub fn parse_envelope(body: &[u8]) -> Result<(&str, Operation, &[u8]), (&str, A2aError)> {
        crate::server::parse_envelope(body)
    }

    /// The error envelope the endpoint answers, echoing `id_json`.
    pub fn error_envelope(id_json: &str, e: &A2aError) -> String {
        crate::server::error_json(id_json, e)
    }

    /// The success envelope the endpoint answers, splicing `result` after `id_json`.
    pub fn success_envelope(id_json: &str, result: &[u8]) -> Vec<u8> {
        crate::server::success_envelope(id_json, result)
    }

    /// The client's decoding of an SSE body (the chunks of the HTTP response) into events of
    /// at most `max_event` bytes.
    pub fn sse_events<S, B, E>(
        body: S,
        max_event: usize,
    ) -> impl futures::Stream<Item = Result<StreamEvent, A2aError>>
    where
        S: futures::Stream<Item = Result<B, E>>,
        B: AsRef<[u8]>,
        E: Into<A2aError>,
    {
        crate::client::sse_events(body, max_event)
    }
}
