//! The A2A HTTP+JSON binding.
//!
//! - [`router`]: the server adapter, with routes derived from the `google.api.http` rules of
//!   our proto ([`Routes`]), AIP-193 errors and SSE streams.
//! - [`RestClient`]: `A2aService` over HTTP+JSON.
//! - [`V03Client`]: `A2aService` over v0.3's `/v1/...` routes, for agents that speak only v0.3.
//! - [`v03`]: the A2A v0.3 routes (`/v1/...`) on the same router, translated by `trident-v03`.
//! - [`openapi::document`]: the OpenAPI 3.1 document of the binding, generated from the same
//!   descriptor set.

mod client;
mod error;
pub mod openapi;
pub mod routes;
mod server;
pub mod v03;
mod v03_client;

pub use client::RestClient;
pub use error::{decode_error, error_body};
pub use routes::{RouteError, Routes};
pub use server::{error_response, refusal_response, router, sse};
pub use v03_client::V03Client;

/// Settings of the HTTP+JSON server: [`trident_http::JsonBindingOptions`].
pub type RestOptions = trident_http::JsonBindingOptions;

/// Decodes `a=b&c=d` pairs (`+` is a space, percent-escapes decoded).
pub(crate) fn serde_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        percent_encoding::percent_decode_str(&s)
            .decode_utf8_lossy()
            .into_owned()
    };
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`, off by default): the pure
/// request-decoding half of the server adapter and the client's SSE event decoder, the very
/// functions `router` and `RestClient` call. Not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use axum::http::HeaderMap;
    use trident_core::{A2aError, Operation, StreamEvent};
    use trident_http::PathVars;

    use crate::routes::{RouteError, Routes};
    use crate::server::{QueryTable, match_request, query_table, request_of};

    /// The route and query tables of the server adapter.
    pub struct RestDecoder {
        routes: Routes,
        query: QueryTable,
    }

    impl RestDecoder {
        /// The tables `router` builds.
        pub fn new() -> Result<Self, RouteError> {
            Ok(Self {
                routes: Routes::from_descriptor()?,
                query: query_table()?,
            })
        }

        /// Decodes a request as the adapter does before calling `dispatch_json`: the
        /// operation, the request JSON, the tenant and the path variables. `body` is read only
        /// for routes that take one.
        pub fn decode(
            &self,
            method: &str,
            path: &str,
            query: Option<&str>,
            headers: &HeaderMap,
            body: &[u8],
        ) -> Result<(Operation, Vec<u8>, String, PathVars), A2aError> {
            let matched = match_request(&self.routes, method, path, query, headers)
                .map_err(|refusal| refusal.error)?;
            let body = matched
                .route_has_body()
                .then(|| axum::body::Bytes::copy_from_slice(body));
            if let Some(body) = &body {
                matched
                    .check_untyped_body(body)
                    .map_err(|refusal| refusal.error)?;
            }
            request_of(matched, &self.query, body)
                .map(|(op, body, tenant, vars)| (op, body.into(), tenant, vars))
        }
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
