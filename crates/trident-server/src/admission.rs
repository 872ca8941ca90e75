//! The per-caller request rate, charged at the HTTP layer (issue 12: parse errors bypassed
//! the rate limiter). [`Limited`] charges a token when a call reaches the service, but a
//! request that never becomes a call — bad JSON on JSON-RPC, a body that is not a message on
//! HTTP+JSON, a garbage protobuf on gRPC, an unknown route — was answered for free, so a
//! flood of malformed requests was never slowed down. This layer sits inside the
//! authentication layer and charges **every** request, by the same key `Limited` uses (the
//! principal when authenticated, else the client's address as [`crate::proxy`] found it),
//! before anything decodes the body. Over the rate, it answers `ResourceExhausted` in the
//! binding's own format (HTTP 429 with `Retry-After`, JSON-RPC -31429 with
//! `retryAfterSeconds`, gRPC `RESOURCE_EXHAUSTED` with `RetryInfo`).
//!
//! A request is charged once: the token taken here is a *credit* (a task-local holding the
//! caller's key) that pays for the first service call the request makes, so `Limited` does
//! not charge that call again. A call for another caller, or a second call of the same
//! request, finds no credit and is charged as before, so nothing is ever free. Requests the
//! authentication layer refuses are charged there and never reach this layer.
//!
//! Not charged: the agent card and the JWKS, the two documents the authentication layer
//! serves to anyone. They are static bytes served from memory (a conditional fetch is a
//! 304), cached by clients for `max-age`, and the first thing every client fetches; charging
//! them would make a client's discovery spend its call budget and hand a flooding neighbour
//! on a shared address a way to stop others discovering the agent at all. Nor the gRPC health
//! service (`grpc.health.v1.Health`): a load balancer's probes must not fail because the
//! prober's address is over its rate, which would take a healthy replica out of rotation.
//! Connection limits and timeouts bound all of them like any other traffic.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::header;
use axum::response::Response;
use trident_core::{A2aError, Principal};

use crate::{CARD_PATH, JSONRPC_PATH, JWKS_PATH, Limited};

/// The paths of the gRPC health service.
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

tokio::task_local! {
    /// The key of the caller whose request the HTTP layer charged and that has not yet been
    /// spent on a call.
    static CREDIT: Cell<Option<Arc<str>>>;
}

/// Spends the request's credit if it was charged at the HTTP layer for the caller `key`:
/// `true` when it was (the call is paid for), `false` when the call must be charged.
pub(crate) fn spend_credit(key: &str) -> bool {
    CREDIT
        .try_with(|credit| match credit.take() {
            Some(charged) if &*charged == key => true,
            other => {
                credit.set(other);
                false
            }
        })
        .unwrap_or(false)
}

/// What the charging layer needs.
#[derive(Clone)]
pub(crate) struct Admission {
    pub(crate) limits: Arc<Limited>,
    /// Largest JSON-RPC body read to echo the request id in a refusal.
    pub(crate) jsonrpc_max_body: usize,
}

/// Charges one request to its caller (see the [module docs](self)).
pub(crate) async fn charge(
    State(admission): State<Admission>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    if matches!(path, CARD_PATH | JWKS_PATH) || path.starts_with(HEALTH_PREFIX) {
        return next.run(request).await;
    }
    let principal = request
        .extensions()
        .get::<Principal>()
        .cloned()
        .unwrap_or_default();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    match admission.limits.charge(principal, peer) {
        Ok(key) => CREDIT.scope(Cell::new(Some(key)), next.run(request)).await,
        Err(limited) => {
            tracing::debug!(path = %request.uri().path(), ?peer, "request over the caller's rate");
            refusal(request, &limited, admission.jsonrpc_max_body).await
        }
    }
}

/// Whether a request is a gRPC call (`application/grpc`, `+proto` and friends).
pub(crate) fn is_grpc(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"))
}

/// The binding a request is answered in when the server refuses it before any adapter reads
/// it (the admission, hygiene and body-budget refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `application/grpc*`.
    Grpc,
    /// `POST` to the JSON-RPC endpoint.
    JsonRpc,
    /// Anything else: HTTP+JSON (and the card, JWKS and metrics paths).
    Rest,
}

impl Wire {
    /// The binding of a request with this method, URI and headers.
    pub(crate) fn of(
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        headers: &axum::http::HeaderMap,
    ) -> Self {
        if is_grpc(headers) {
            Wire::Grpc
        } else if method == axum::http::Method::POST && uri.path() == JSONRPC_PATH {
            Wire::JsonRpc
        } else {
            Wire::Rest
        }
    }

    /// The binding of `request`.
    pub(crate) fn of_request<B>(request: &axum::http::Request<B>) -> Self {
        Self::of(request.method(), request.uri(), request.headers())
    }

    /// `error` in this binding's format: a gRPC status (trailers-only), a JSON-RPC error
    /// echoing the id of `jsonrpc_request` (the request's bytes; empty: a null id), or the
    /// HTTP+JSON error (with `Retry-After` when the error says when to retry).
    pub(crate) fn answer(self, error: &A2aError, jsonrpc_request: &[u8]) -> Response {
        match self {
            Wire::Grpc => trident_grpc::status(error).into_http::<axum::body::Body>(),
            Wire::JsonRpc => trident_jsonrpc::error_reply(jsonrpc_request, error),
            Wire::Rest => trident_rest::error_response(error),
        }
    }
}

/// `error` as the answer to `request` in its binding's format ([`Wire::answer`]), a JSON-RPC
/// error echoing the request's id (reading at most `jsonrpc_max_body` bytes of it).
pub(crate) async fn refusal(
    request: axum::extract::Request,
    error: &A2aError,
    jsonrpc_max_body: usize,
) -> Response {
    let wire = Wire::of_request(&request);
    let body = if wire == Wire::JsonRpc {
        axum::body::to_bytes(request.into_body(), jsonrpc_max_body)
            .await
            .unwrap_or_default()
    } else {
        axum::body::Bytes::new()
    };
    wire.answer(error, &body)
}

#[cfg(test)]
mod tests;
