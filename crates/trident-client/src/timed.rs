//! [`Timed`]: a [`ClientBuilder::timeout`](crate::ClientBuilder::timeout) applied to every
//! call of one agent's client.

use std::sync::Arc;
use std::time::Duration;

use trident_core::deadline::bounded;
use trident_core::{A2aError, A2aReply, A2aRequest, A2aService, AroundCall, CallContext};

/// Gives every unary call a deadline `timeout` from its start (unless the caller's is
/// earlier), and the opening of every stream the same bound; an open stream keeps only the
/// caller's own deadline.
pub(crate) struct Timed {
    inner: Arc<dyn A2aService>,
    timeout: Duration,
}

impl Timed {
    pub(crate) fn new(inner: Arc<dyn A2aService>, timeout: Duration) -> Self {
        Self { inner, timeout }
    }
}

#[async_trait::async_trait]
impl AroundCall for Timed {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        let op = req.operation();
        let bounded_cx = cx.clone().with_timeout(self.timeout);
        if op.is_streaming() {
            // Opened within the timeout; the stream itself runs under `cx` alone.
            bounded(&bounded_cx, op.name(), self.inner.call(cx, req)).await
        } else {
            self.inner.call(&bounded_cx, req).await
        }
    }
}
