//! [`HttpWebhooks`]: push-notification delivery over HTTP(S), the engine's
//! [`WebhookTransport`] (feature `webhooks`). Every A2A server needs it whatever binding it
//! speaks: webhooks are plain HTTP POSTs of HTTP+JSON bodies.

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
            // No idle connections: each call in flight holds at most one descriptor, so the
            // engine's bound on calls in flight (`PushConcurrency`) bounds them all.
            .pool_max_idle_per_host(0)
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
            // The policy's refusal sits at the bottom of the error chain, and so does the
            // system's error when this process could not open a connection.
            let mut source: Option<&dyn std::error::Error> = Some(&e);
            let mut text = e.to_string();
            let mut local = false;
            while let Some(s) = source {
                text = s.to_string();
                local |= s
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(is_local_exhaustion);
                source = s.source();
            }
            if local {
                WebhookError::Local(text)
            } else {
                WebhookError::Transport(text)
            }
        })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(WebhookError::Status(status.as_u16()))
        }
    }
}

/// Whether `e` says this process (or host) ran out of something a connection needs — file
/// descriptors (`EMFILE`, `ENFILE`), buffer space or memory, local ports — rather than that the
/// webhook failed: such a call is retried, not counted against the webhook.
fn is_local_exhaustion(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.raw_os_error().is_some_and(|code| {
        [
            Errno::MFILE,
            Errno::NFILE,
            Errno::NOBUFS,
            Errno::NOMEM,
            Errno::ADDRNOTAVAIL,
        ]
        .iter()
        .any(|errno| errno.raw_os_error() == code)
    })
}

#[cfg(test)]
mod tests;
