//! [`Upstream`]: another agent, reached through one of our clients, as the service our server
//! adapters serve. That is the whole gateway: the adapters decode a call on any binding, this
//! forwards it over the upstream's binding, and errors come back as the same [`ErrorKind`] on
//! every binding.
//!
//! What passes through: the request, `A2A-Extensions`, `Authorization` (the upstream
//! authenticates the original caller), W3C `traceparent`/`tracestate`, `Last-Event-ID`, the
//! caller's deadline and cancellation. `A2A-Version` passes through too, except that a call
//! without one is sent as 1.0: the gateway speaks 1.0 to the upstream, and the spec reads a
//! missing header as 0.3. The client decides the version on the wire in the end: a v0.3
//! upstream's client (chosen by [`crate::choose_for`] from its card) sends `A2A-Version: 0.3`
//! and v0.3's forms whatever the caller spoke, so 1.0 callers reach a v0.3 agent and v0.3
//! callers (served by the v0.3 layer of our adapters) a 1.0 one.
//!
//! [`ErrorKind`]: trident_core::ErrorKind

use std::sync::Arc;

use trident_core::{
    A2aError, A2aReply, A2aRequest, A2aService, AroundCall, CallContext, PROTOCOL_VERSION,
};

/// An upstream agent served as if it were local.
#[derive(Clone)]
pub struct Upstream {
    inner: Arc<dyn A2aService>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Upstream")
    }
}

impl Upstream {
    /// Forwards every call to `inner` (usually a client from [`crate::connect`]).
    pub fn new(inner: Arc<dyn A2aService>) -> Self {
        Self { inner }
    }

    fn cx(cx: &CallContext) -> std::borrow::Cow<'_, CallContext> {
        if cx.version.is_some() {
            std::borrow::Cow::Borrowed(cx)
        } else {
            let mut owned = cx.clone();
            owned.version = Some(PROTOCOL_VERSION.to_owned());
            std::borrow::Cow::Owned(owned)
        }
    }
}

/// Every call forwarded as it came, with `A2A-Version` defaulted to the version we speak.
#[async_trait::async_trait]
impl AroundCall for Upstream {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        self.inner.call(&Self::cx(cx), req).await
    }
}
