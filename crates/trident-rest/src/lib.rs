//! The A2A HTTP+JSON binding.
//!
//! - [`router`]: the server adapter, with routes derived from the `google.api.http` rules of
//!   our proto ([`Routes`]), AIP-193 errors and SSE streams.
//! - [`RestClient`]: `A2aService` over HTTP+JSON.
//! - [`HttpWebhooks`]: push-notification delivery, the outbound half every A2A server needs
//!   whatever binding it speaks (webhooks are plain HTTP POSTs of HTTP+JSON bodies).

mod client;
mod error;
pub mod routes;
mod server;

pub use client::RestClient;
pub use error::{decode_error, error_body};
pub use routes::Routes;
pub use server::{RestOptions, error_response, router, sse};

use std::time::Duration;

use trident_core::{WebhookError, WebhookRequest, WebhookTransport};

/// Delivers push notifications over HTTP(S) with reqwest. Redirects are not followed and each
/// attempt times out (the engine retries with backoff).
#[derive(Debug, Clone)]
pub struct HttpWebhooks {
    client: reqwest::Client,
}

impl HttpWebhooks {
    /// A sender whose attempts time out after `timeout`.
    pub fn new(timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("trident/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client })
    }
}

#[async_trait::async_trait]
impl WebhookTransport for HttpWebhooks {
    async fn post(&self, request: &WebhookRequest) -> Result<(), WebhookError> {
        let mut builder = self.client.post(&request.url).body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| WebhookError::Transport(e.to_string()))?;
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
