//! The server's edge layer: the one place a request is admitted, before any binding reads
//! it. It authenticates the request (when an authenticator is configured), putting the
//! [`Principal`] into its extensions (the adapters copy it into the `CallContext`, with
//! `trident_http::call_context`), and charges it to its caller's rate ([`Limited::charge`]):
//! the principal when authenticated, else the client's address as [`crate::proxy`] found it
//! (a request refused for bad or missing credentials is charged by its address). Each
//! request is charged exactly once, here, before anything decodes its body, so a request that
//! never becomes a call — bad JSON on JSON-RPC, a body that is not a message on HTTP+JSON, a
//! garbage protobuf on gRPC, an unknown route — is slowed down like any other (issue 12), and
//! calls are not charged again. What it refuses it answers in the binding's own format
//! ([`Wire`]): `ResourceExhausted` is HTTP 429 with `Retry-After`, JSON-RPC -31429 with
//! `retryAfterSeconds`, gRPC `RESOURCE_EXHAUSTED` with `RetryInfo`; a credential refusal
//! carries `WWW-Authenticate` on HTTP. The stream limit is taken later, by the decoded call
//! (see [`crate::limits`]).
//!
//! Neither authenticated nor charged: the agent card and the JWKS, the two documents served
//! to anyone. They are static bytes served from memory (a conditional fetch is a 304), cached
//! by clients for `max-age`, and the first thing every client fetches; charging them would
//! make a client's discovery spend its call budget and hand a flooding neighbour on a shared
//! address a way to stop others discovering the agent at all. Not charged when admitted: the
//! gRPC health service (`grpc.health.v1.Health`): a load balancer's probes must not fail
//! because the prober's address is over its rate, which would take a healthy replica out of
//! rotation. Connection limits and timeouts bound all of them like any other traffic.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use trident_core::{A2aError, AuthRejection, Authenticator, Peer, Principal};

use crate::{CARD_PATH, JSONRPC_PATH, JWKS_PATH, Limited};

/// The paths of the gRPC health service.
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

/// What the edge layer needs.
#[derive(Clone)]
pub(crate) struct Gate {
    /// Who may call; `None`: everyone, as the anonymous principal.
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// With an authenticator: let requests without credentials through as anonymous.
    pub(crate) allow_anonymous: bool,
    /// The caller limits, when they charge requests (a rate is set).
    pub(crate) limits: Option<Arc<Limited>>,
    /// Largest JSON-RPC body read to echo the request id in a refusal.
    pub(crate) jsonrpc_max_body: usize,
}

/// Request headers as [`trident_core::Credentials`].
struct HeaderCredentials<'a>(&'a HeaderMap);

impl trident_core::Credentials for HeaderCredentials<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Admits one request: authenticates it, charges it to its caller, and refuses — in the
/// binding's own format — what it cannot authenticate or what is over its caller's rate (see
/// the [module docs](self)). Once an authenticator is configured, only the public card and
/// JWKS are reachable without credentials, unless anonymous callers are allowed; credentials
/// that are sent but invalid are refused even then.
pub(crate) async fn admit(
    State(gate): State<Gate>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    if matches!(path, CARD_PATH | JWKS_PATH) {
        return next.run(request).await;
    }
    let health = path.starts_with(HEALTH_PREFIX);
    let rejection = match &gate.authenticator {
        None => None,
        Some(auth) => match auth
            .authenticate(&HeaderCredentials(request.headers()))
            .await
        {
            Ok(Some(principal)) => {
                request.extensions_mut().insert::<Principal>(principal);
                None
            }
            Ok(None) if gate.allow_anonymous => None,
            Ok(None) => Some(AuthRejection::Missing),
            Err(rejection) => Some(rejection),
        },
    };
    if let Some(rejection) = &rejection {
        tracing::debug!(path = %request.uri().path(), %rejection, "request refused");
    }
    if let Some(limits) = &gate.limits
        && (rejection.is_some() || !health)
    {
        let anonymous = Principal::anonymous();
        let principal = match rejection {
            // Refused: its credentials name nobody, so it is charged by its address.
            Some(_) => &anonymous,
            None => request
                .extensions()
                .get::<Principal>()
                .unwrap_or(&anonymous),
        };
        let peer = request.extensions().get::<Peer>().map(|p| p.0);
        if let Err(limited) = limits.charge(principal, peer) {
            tracing::debug!(path = %request.uri().path(), ?peer, "request over the caller's rate");
            return refusal(request, &limited, gate.jsonrpc_max_body).await;
        }
    }
    let Some(rejection) = rejection else {
        return next.run(request).await;
    };
    // gRPC answers carry no challenge (a status is all a gRPC client reads).
    let challenges = match &gate.authenticator {
        Some(auth) if !is_grpc(request.headers()) => auth.challenges(&rejection),
        _ => Vec::new(),
    };
    let mut response = refusal(request, &rejection.to_error(), gate.jsonrpc_max_body).await;
    for challenge in challenges {
        if let Ok(v) = HeaderValue::try_from(challenge) {
            response.headers_mut().append(header::WWW_AUTHENTICATE, v);
        }
    }
    response
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
    /// `application/grpc*` but gRPC-Web.
    Grpc,
    /// gRPC-Web (`application/grpc-web`, `-text`, `+proto`): answered as gRPC, its status in
    /// the headers of an empty answer (trailers-only), under a gRPC-Web `content-type`, which
    /// browser clients check before they read the status.
    GrpcWeb,
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
        if trident_grpc::is_grpc_web(headers) {
            Wire::GrpcWeb
        } else if is_grpc(headers) {
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
            Wire::GrpcWeb => {
                let mut response = trident_grpc::status(error).into_http::<axum::body::Body>();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/grpc-web+proto"),
                );
                response
            }
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
