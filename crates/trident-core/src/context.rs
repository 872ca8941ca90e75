//! [`CallContext`]: what a binding knows about a call besides its request message.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

/// Who is calling. Every task is owned by the principal that created it and is invisible to
/// every other principal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Principal(Option<Arc<str>>);

impl Principal {
    /// The unauthenticated caller. All anonymous callers share one owner scope.
    pub fn anonymous() -> Self {
        Self(None)
    }

    /// An authenticated caller with a stable identifier.
    pub fn named(id: impl Into<Arc<str>>) -> Self {
        Self(Some(id.into()))
    }

    /// The identifier, `None` when anonymous.
    pub fn id(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// Whether the caller is authenticated.
    pub fn is_authenticated(&self) -> bool {
        self.0.is_some()
    }
}

/// Request-scoped facts a binding extracts from headers/metadata/path, passed to every
/// [`A2aService`](crate::A2aService) method.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Tenant from the transport (HTTP+JSON path prefix). The request's own `tenant` field is
    /// used when this is empty; if both are set they must agree.
    pub tenant: String,
    /// The authenticated caller.
    pub principal: Principal,
    /// `A2A-Version` as sent; `None` when absent or empty.
    pub version: Option<String>,
    /// Extension URIs activated by `A2A-Extensions`.
    pub extensions: Vec<String>,
    /// When the caller stops waiting.
    pub deadline: Option<Instant>,
    /// Fired when the caller goes away (connection closed, RPC cancelled).
    pub cancelled: CancellationToken,
    /// Resume point of a stream: deliver only events with a sequence number after this
    /// (SSE `Last-Event-ID`).
    pub last_event_id: Option<u64>,
    /// Client side: the `Authorization` value a client sends with this call (for example
    /// `Bearer …`), so one client can act for several callers, as a gateway does. Servers
    /// never fill it; they resolve credentials into [`principal`](Self::principal).
    pub credentials: Option<String>,
}

impl CallContext {
    /// An anonymous context speaking A2A 1.0.
    pub fn new() -> Self {
        Self {
            version: Some(crate::PROTOCOL_VERSION.to_owned()),
            ..Self::default()
        }
    }

    /// Sets the principal.
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = principal;
        self
    }

    /// Sets the transport tenant.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Parses an `A2A-Extensions` value (comma-separated URIs) into `extensions`.
    pub fn with_extensions_header(mut self, value: &str) -> Self {
        self.extensions.extend(
            value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        self
    }

    /// Builds a context from service parameters (HTTP headers or gRPC metadata, looked up
    /// case-insensitively by `get`): `A2A-Version`, `A2A-Extensions` (and the v0.3
    /// `X-A2A-Extensions`), and `Last-Event-ID`. A `Last-Event-ID` that is not a sequence number
    /// is ignored.
    pub fn from_service_params<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Self {
        let mut cx = Self {
            version: get("a2a-version")
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned),
            ..Self::default()
        };
        for name in ["a2a-extensions", "x-a2a-extensions"] {
            if let Some(v) = get(name) {
                cx = cx.with_extensions_header(v);
            }
        }
        cx.last_event_id = get("last-event-id").and_then(|v| v.trim().parse().ok());
        cx
    }

    /// Client side: the service parameters a client sends for this call (lowercase names, as
    /// HTTP/2 and gRPC metadata want them): `a2a-version`, `a2a-extensions`, `last-event-id`,
    /// `authorization`. The inverse of [`from_service_params`](Self::from_service_params).
    pub fn outgoing_service_params(&self) -> Vec<(&'static str, String)> {
        let mut params = Vec::with_capacity(4);
        if let Some(v) = &self.version {
            params.push(("a2a-version", v.clone()));
        }
        if !self.extensions.is_empty() {
            params.push(("a2a-extensions", self.extensions.join(",")));
        }
        if let Some(seq) = self.last_event_id {
            params.push(("last-event-id", seq.to_string()));
        }
        if let Some(c) = &self.credentials {
            params.push(("authorization", c.clone()));
        }
        params
    }

    /// Sets the credentials a client sends.
    pub fn with_credentials(mut self, authorization: impl Into<String>) -> Self {
        self.credentials = Some(authorization.into());
        self
    }

    /// Client side: the tenant to address, from the request's own field, this context, or the
    /// interface's default, in that order. A request tenant that contradicts this context's is
    /// `InvalidParams`, as the server would say.
    pub fn resolve_tenant<'a>(
        &'a self,
        request: &'a str,
        interface: &'a str,
    ) -> Result<&'a str, crate::A2aError> {
        match (request, self.tenant.as_str()) {
            (r, c) if !r.is_empty() && !c.is_empty() && r != c => {
                Err(crate::A2aError::invalid_field(
                    "tenant",
                    format!("{r:?} does not match the call's tenant {c:?}"),
                ))
            }
            (r, _) if !r.is_empty() => Ok(r),
            (_, c) if !c.is_empty() => Ok(c),
            _ => Ok(interface),
        }
    }

    /// Sets the resume point.
    pub fn with_last_event_id(mut self, seq: u64) -> Self {
        self.last_event_id = Some(seq);
        self
    }
}
