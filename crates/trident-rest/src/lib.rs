//! The A2A HTTP+JSON binding.
//!
//! - [`router`]: the server adapter, with routes derived from the `google.api.http` rules of
//!   our proto ([`Routes`]), AIP-193 errors and SSE streams.
//! - [`RestClient`]: `A2aService` over HTTP+JSON.
//! - [`openapi::document`]: the OpenAPI 3.1 document of the binding, generated from the same
//!   descriptor set.
//! - [`HttpWebhooks`]: push-notification delivery, the outbound half every A2A server needs
//!   whatever binding it speaks (webhooks are plain HTTP POSTs of HTTP+JSON bodies).

mod client;
mod error;
pub mod openapi;
pub mod routes;
mod server;

pub use client::RestClient;
pub use error::{decode_error, error_body};
pub use routes::{RouteError, Routes};
pub use server::{RestOptions, error_response, router, sse};

use std::sync::Arc;
use std::time::Duration;

use trident_engine::{WebhookError, WebhookPolicy, WebhookRequest, WebhookTransport};

/// Delivers push notifications over HTTP(S) with reqwest. Redirects are not followed, each
/// attempt times out (the engine retries with backoff), and every connection is checked
/// against a [`WebhookPolicy`]: a name is resolved by our own resolver, which refuses
/// addresses the policy forbids (so a name that was public when the configuration was
/// created cannot be rebound to an internal address), and a literal address is checked
/// before the request is made.
#[derive(Clone)]
pub struct HttpWebhooks {
    client: reqwest::Client,
    policy: Arc<WebhookPolicy>,
    signer: Option<Signer>,
}

/// Adds a header to each notification, e.g. a signature over the task id, sequence number
/// and body: `(header name, value)`.
pub type Signer = Arc<dyn Fn(&WebhookRequest) -> (&'static str, String) + Send + Sync>;

impl std::fmt::Debug for HttpWebhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpWebhooks")
            .field("policy", &self.policy)
            .field("signed", &self.signer.is_some())
            .finish()
    }
}

impl HttpWebhooks {
    /// A sender whose attempts time out after `timeout`, to public addresses only.
    pub fn new(timeout: Duration) -> Result<Self, reqwest::Error> {
        Self::with_policy(timeout, WebhookPolicy::default())
    }

    /// A sender whose destinations `policy` decides.
    pub fn with_policy(timeout: Duration, policy: WebhookPolicy) -> Result<Self, reqwest::Error> {
        let policy = Arc::new(policy);
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(PolicyResolver {
                policy: policy.clone(),
            }))
            .user_agent(concat!("trident/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            client,
            policy,
            signer: None,
        })
    }

    /// Adds `signer`'s header to every notification.
    pub fn with_signer(mut self, signer: Signer) -> Self {
        self.signer = Some(signer);
        self
    }
}

/// Resolves names with the system resolver and drops what the policy forbids.
struct PolicyResolver {
    policy: Arc<WebhookPolicy>,
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut allowed = Vec::with_capacity(addrs.len());
            let mut refused = None;
            for a in addrs {
                match policy.check_addr(&host, a.ip()) {
                    Ok(()) => allowed.push(a),
                    Err(e) => refused = Some(e),
                }
            }
            match (allowed.is_empty(), refused) {
                (true, Some(e)) => Err(Box::new(e) as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

#[async_trait::async_trait]
impl WebhookTransport for HttpWebhooks {
    async fn post(&self, request: &WebhookRequest) -> Result<(), WebhookError> {
        // The same check as at configuration time, on the URL as reqwest parses it: a
        // literal address in any spelling is refused here (reqwest connects to literals
        // without asking the resolver); a name is checked again by `PolicyResolver` on
        // every connection, whatever it resolves to by then.
        self.policy
            .check_url(&request.url)
            .await
            .map_err(|e| WebhookError::Transport(e.to_string()))?;
        let mut builder = self.client.post(&request.url).body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        if let Some(sign) = &self.signer {
            let (name, value) = sign(request);
            builder = builder.header(name, value);
        }
        let response = builder.send().await.map_err(|e| {
            // The policy's refusal sits at the bottom of the error chain.
            let mut source: Option<&dyn std::error::Error> = Some(&e);
            let mut text = e.to_string();
            while let Some(s) = source {
                text = s.to_string();
                source = s.source();
            }
            WebhookError::Transport(text)
        })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(WebhookError::Status(status.as_u16()))
        }
    }
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
    use trident_core::{A2aError, Operation, PathVars, StreamEvent};

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
            let body = matched.route_has_body().then(|| body.to_vec());
            if let Some(body) = &body {
                matched
                    .check_untyped_body(body)
                    .map_err(|refusal| refusal.error)?;
            }
            request_of(matched, &self.query, body)
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
