//! The A2A gRPC binding (`lf.a2a.v1.A2AService` over HTTP/2).
//!
//! - [`routes`] / [`routes_with`]: the server side as an [`axum::Router`] to merge into the one
//!   listener the other bindings share: the A2A service ([`GrpcServer`], a thin adapter over
//!   `Arc<dyn A2aService>`), the standard `grpc.health.v1.Health` service and server reflection
//!   (v1 and v1alpha), each behind [`Hygiene`]: content type, message framing, size and (for
//!   the A2A service) a pre-scan bounding the values of a request before it is decoded; and,
//!   unless [`GrpcOptions::web`] is off, behind [`Web`], which answers gRPC-Web calls from
//!   browsers (tonic-web's translation) over HTTP/1.1 and HTTP/2.
//! - [`GrpcClient`]: an [`A2aService`](trident_core::A2aService) that calls a remote agent over
//!   gRPC, so every binding's server can sit in front of it.
//! - [`V03Client`]: the same over v0.3's `a2a.v1.A2AService`, for agents that speak only v0.3.
//! - [`status`] and [`error`]: the one encoding of [`A2aError`](trident_core::A2aError) as a
//!   `google.rpc.Status` (code from [`ErrorKind::wire`](trident_core::ErrorKind::wire),
//!   `ErrorInfo` and `BadRequest` details) and its inverse.
//!
//! Service parameters travel as lowercase metadata: `a2a-version`, `a2a-extensions`, and our
//! `last-event-id` for resuming `SubscribeToTask`. gRPC has no per-message id, so stream events
//! read by [`GrpcClient`] carry no sequence number.

/// What the two gRPC adapters (`server.rs`, `v03.rs`) write per RPC, by its kind (`unary`,
/// `stream`, `empty`), never by its name:
/// - `reply`: tonic's response type (`$msg` for `unary`, `$stream` for `stream`, `Empty`);
/// - `answer`: the service's answer `$r` as tonic's response, through the adapter's own
///   `unary` and `streaming` (names resolved where the macro is expanded);
/// - `stream_type`: tonic's associated type `$name = $stream` for a streaming RPC, else nothing.
macro_rules! by_kind {
    (reply unary, $msg:ty, $stream:ty) => {
        $msg
    };
    (reply stream, $msg:ty, $stream:ty) => {
        $stream
    };
    (reply empty, $msg:ty, $stream:ty) => {
        pbjson_types::Empty
    };
    (answer unary, $r:expr) => {
        unary($r)
    };
    (answer stream, $r:expr) => {
        streaming($r).await
    };
    (answer empty, $r:expr) => {
        $r.map(|()| Response::new(pbjson_types::Empty {}))
            .map_err(|e| status(&e))
    };
    (stream_type stream, $name:ident, $stream:ty) => {
        type $name = $stream;
    };
    (stream_type $other:ident, $name:ident, $stream:ty) => {};
}

mod client;
mod hygiene;
mod options;
mod server;
mod status;
pub mod v03;
mod v03_client;
mod web;

pub use client::GrpcClient;
pub use hygiene::{Checked, Hygiene, MAX_JSON_DEPTH, MAX_JSON_VALUES};
pub use options::{GrpcOptions, GrpcTls};
pub use server::{GrpcServer, routes, routes_with};
pub use status::{error, status};
pub use v03_client::V03Client;
pub use web::{Tonic, Web, is_grpc_web};

/// Splits a request into its call context ([`trident_http::call_context`]: service
/// parameters from the metadata, the deadline from `grpc-timeout` among them; the principal
/// and the client's address from the extensions) and its message.
pub(crate) fn split<T>(
    req: tonic::Request<T>,
) -> Result<(trident_core::CallContext, T), tonic::Status> {
    let (metadata, extensions, message) = req.into_parts();
    let cx =
        trident_http::call_context(metadata.as_ref(), &extensions, trident_core::Binding::Grpc)
            .map_err(|e| status(&e))?;
    Ok((cx, message))
}

/// Metadata keys of the A2A service parameters (lowercase, as gRPC requires).
pub mod metadata {
    /// `A2A-Version`.
    pub const VERSION: &str = "a2a-version";
    /// `A2A-Extensions` (comma-separated URIs).
    pub const EXTENSIONS: &str = "a2a-extensions";
    /// Resume point of `SubscribeToTask` (our extension; SSE's `Last-Event-ID`).
    pub const LAST_EVENT_ID: &str = "last-event-id";
    /// The gRPC deadline header, read into `CallContext::deadline`.
    pub const GRPC_TIMEOUT: &str = "grpc-timeout";
    /// Response header of a stream: the sequence number of its first event (ours).
    pub const FIRST_SEQ: &str = "trident-first-seq";
    /// Credentials.
    pub const AUTHORIZATION: &str = "authorization";
}

#[cfg(test)]
mod tests;
