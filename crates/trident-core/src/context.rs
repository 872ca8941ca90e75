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

/// The generation of the A2A protocol a call was written in, whatever version the service
/// then handles it as: the v0.3 adapters translate a v0.3 request into the 1.0 call and mark
/// its context [`Generation::V03`]. The engine records it with the push configurations the call
/// creates, so their notifications take the payload shape that generation's clients expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Generation {
    /// A2A 1.0 (and every call made in process).
    #[default]
    V1,
    /// A2A 0.3, translated by the compatibility layer.
    V03,
}

impl Generation {
    /// The protocol version it names (`1.0`, `0.3`).
    pub const fn version(self) -> &'static str {
        match self {
            Generation::V1 => "1.0",
            Generation::V03 => "0.3",
        }
    }

    /// The generation whose [`version`](Self::version) is `v`.
    pub fn from_version(v: &str) -> Option<Self> {
        match v {
            "1.0" => Some(Generation::V1),
            "0.3" => Some(Generation::V03),
            _ => None,
        }
    }
}

/// A protocol binding, as named in `AgentInterface.protocolBinding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    /// `JSONRPC`
    JsonRpc,
    /// `HTTP+JSON`
    Rest,
    /// `GRPC`
    Grpc,
}

impl Binding {
    /// The card's name for this binding.
    pub const fn card_name(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::Rest => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }

    /// Every binding, in the default preference order.
    pub const ALL: [Binding; 3] = [Binding::JsonRpc, Binding::Rest, Binding::Grpc];
}

impl std::fmt::Display for Binding {
    /// The card's name ([`card_name`](Self::card_name)).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.card_name())
    }
}

/// A name that is not a binding (see [`Binding`]'s `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown binding {0:?}: expected jsonrpc, grpc or http_json (also rest, http+json)")]
pub struct UnknownBinding(pub String);

impl std::str::FromStr for Binding {
    type Err = UnknownBinding;

    /// Reads a binding name, case-insensitively: the card's names (`JSONRPC`, `GRPC`,
    /// `HTTP+JSON`) and the usual spellings `json-rpc`, `json_rpc`, `http_json`, `http-json`
    /// and `rest`.
    ///
    /// ```
    /// use trident_core::Binding;
    /// assert_eq!("rest".parse(), Ok(Binding::Rest));
    /// assert_eq!("HTTP+JSON".parse(), Ok(Binding::Rest));
    /// assert_eq!("JsonRpc".parse(), Ok(Binding::JsonRpc));
    /// assert!("soap".parse::<Binding>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name: String = s
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '+'))
            .collect::<String>()
            .to_ascii_lowercase();
        match name.as_str() {
            "jsonrpc" => Ok(Binding::JsonRpc),
            "grpc" => Ok(Binding::Grpc),
            "httpjson" | "rest" => Ok(Binding::Rest),
            _ => Err(UnknownBinding(s.to_owned())),
        }
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
    /// When the caller stops waiting. Clients end the call with `DeadlineExceeded` then and
    /// send the time left as [`TIMEOUT_HEADER`](crate::deadline::TIMEOUT_HEADER); server
    /// adapters read that header into it.
    pub deadline: Option<Instant>,
    /// Fired when the caller goes away (connection closed, RPC cancelled).
    pub cancelled: CancellationToken,
    /// Resume point of a stream: deliver only events with a sequence number after this
    /// (SSE `Last-Event-ID`).
    pub last_event_id: Option<u64>,
    /// The `Authorization` value of the call (for example `Bearer …`). Clients send it, so
    /// one client can act for several callers; server adapters fill it with what the caller
    /// sent, so a gateway forwards it upstream. The engine never hands it to an agent: agents
    /// see the [`principal`](Self::principal) it was resolved to.
    pub credentials: Option<String>,
    /// W3C trace context of the call (`traceparent`, and `tracestate` when present), read by
    /// servers and sent by clients, so a trace continues across bindings and gateways.
    pub trace: Option<TraceContext>,
    /// The binding the call arrived on (set by server adapters; `None` in process).
    pub binding: Option<Binding>,
    /// The caller's address as the server's socket saw it (set by server adapters from the
    /// request's [`Peer`] extension, which `trident_server::serve` records; `None` in
    /// process). Per-caller limits key anonymous callers by its IP.
    pub peer: Option<std::net::SocketAddr>,
    /// The protocol generation the caller wrote the call in (set to [`Generation::V03`] by
    /// the v0.3 adapters; 1.0 otherwise).
    pub generation: Generation,
}

/// The client's address, as a request extension: the server records it on every request
/// (the socket's peer, or the client a trusted proxy names), and the server adapters copy it
/// into [`CallContext::peer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer(pub std::net::SocketAddr);

/// A W3C trace context (<https://www.w3.org/TR/trace-context/>).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `traceparent`: `00-<trace id>-<parent id>-<flags>`.
    pub traceparent: String,
    /// `tracestate`, vendor data carried along unchanged.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// Parses a `traceparent` (version `00`, non-zero ids); `None` when malformed.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let v = traceparent.trim();
        let parts: Vec<&str> = v.split('-').collect();
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        match parts.as_slice() {
            [ver, trace, parent, flags]
                if hex(ver, 2)
                    && *ver != "ff"
                    && hex(trace, 32)
                    && !zero(trace)
                    && hex(parent, 16)
                    && !zero(parent)
                    && hex(flags, 2) =>
            {
                Some(Self {
                    traceparent: v.to_ascii_lowercase(),
                    tracestate: tracestate
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                })
            }
            _ => None,
        }
    }

    /// The trace id (32 hex digits).
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or("")
    }
}

/// Every service parameter [`CallContext::from_service_params`] reads, by its lowercase name.
const SERVICE_PARAMS: [&str; 8] = [
    "a2a-version",
    "a2a-extensions",
    "x-a2a-extensions",
    "last-event-id",
    "authorization",
    "traceparent",
    "tracestate",
    crate::timeout::TIMEOUT_HEADER,
];

fn param_index(name: &str) -> Option<usize> {
    SERVICE_PARAMS.iter().position(|p| *p == name)
}

/// The first value of each service parameter among `pairs`, by [`param_index`].
fn first_of_each<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> [Option<&'a [u8]>; SERVICE_PARAMS.len()] {
    let mut found: [Option<&'a [u8]>; SERVICE_PARAMS.len()] = [None; SERVICE_PARAMS.len()];
    for (name, value) in pairs {
        if let Some(i) = param_index(name) {
            found[i].get_or_insert(value);
        }
    }
    found
}

/// Reads a `Last-Event-ID` value: an event's sequence number (decimal digits, at most
/// `u64::MAX`, blanks around it ignored), or `None` when empty (SSE's "no last event").
fn last_event_id(raw: &[u8]) -> Result<Option<u64>, crate::A2aError> {
    let value = raw.trim_ascii();
    if value.is_empty() {
        return Ok(None);
    }
    let seq = std::str::from_utf8(value)
        .ok()
        .filter(|v| v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok());
    match seq {
        Some(seq) => Ok(Some(seq)),
        None => {
            let shown: String = String::from_utf8_lossy(value).chars().take(64).collect();
            Err(crate::A2aError::invalid_field(
                "Last-Event-ID",
                format!(
                    "{shown:?} is not an event's sequence number (decimal digits, at most {})",
                    u64::MAX
                ),
            ))
        }
    }
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
    /// case-insensitively by `get`, as sent): `A2A-Version`, `A2A-Extensions` (and the v0.3
    /// `X-A2A-Extensions`), `Last-Event-ID`, `Authorization`, `traceparent`/`tracestate` and
    /// the caller's deadline from [`TIMEOUT_HEADER`](crate::deadline::TIMEOUT_HEADER).
    /// A parameter is text when it is visible ASCII (what HTTP's `to_str` accepts); others
    /// are ignored, except `A2A-Version`, which is kept, decoded lossily, so the engine refuses
    /// it with `VersionNotSupported` instead of reading it as absent. This reading is lenient:
    /// a `Last-Event-ID` that is not a sequence number, a malformed deadline and a malformed
    /// `traceparent` are ignored. Server adapters use
    /// [`try_from_service_params`](Self::try_from_service_params), which refuses the first
    /// two.
    pub fn from_service_params<'a>(get: impl Fn(&str) -> Option<&'a [u8]>) -> Self {
        Self::read_service_params(get, false).unwrap_or_default()
    }

    /// [`from_service_params`](Self::from_service_params) as a server adapter reads them: a
    /// parameter the call would act on and cannot be read is refused rather than read as
    /// absent, which would silently change what the call does —
    ///
    /// - a `Last-Event-ID` that is not an event's sequence number (decimal digits, at most
    ///   `u64::MAX`; `-1`, `abc`, `1e3`, 10²³) is `InvalidParams` naming the header (resuming
    ///   a live task's stream would otherwise restart it from its snapshot). An empty one is
    ///   absent, as in SSE;
    /// - a malformed [`TIMEOUT_HEADER`](crate::deadline::TIMEOUT_HEADER) (not 1 to 8 digits
    ///   and a unit `H M S m u n`) is `InvalidRequest` (the call would otherwise run without
    ///   the caller's deadline).
    ///
    /// ```
    /// use trident_core::{CallContext, ErrorKind};
    /// let get = |value: &'static [u8]| {
    ///     move |name: &str| (name == "last-event-id").then_some(value)
    /// };
    /// let cx = CallContext::try_from_service_params(get(b"42")).expect("a sequence number");
    /// assert_eq!(cx.last_event_id, Some(42));
    /// let e = CallContext::try_from_service_params(get(b"-1")).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::InvalidParams);
    /// ```
    pub fn try_from_service_params<'a>(
        get: impl Fn(&str) -> Option<&'a [u8]>,
    ) -> Result<Self, crate::A2aError> {
        Self::read_service_params(get, true)
    }

    fn read_service_params<'a>(
        get: impl Fn(&str) -> Option<&'a [u8]>,
        strict: bool,
    ) -> Result<Self, crate::A2aError> {
        let text = |name: &str| {
            get(name)
                .filter(|raw| raw.iter().all(|b| (0x20..0x7f).contains(b) || *b == b'\t'))
                .and_then(|raw| std::str::from_utf8(raw).ok())
        };
        let version = match (text("a2a-version"), get("a2a-version")) {
            (Some(v), _) => Some(v.trim()).filter(|v| !v.is_empty()).map(str::to_owned),
            (None, Some(raw)) => Some(String::from_utf8_lossy(raw).into_owned()),
            (None, None) => None,
        };
        let mut cx = Self {
            version,
            ..Self::default()
        };
        for name in ["a2a-extensions", "x-a2a-extensions"] {
            if let Some(v) = text(name) {
                cx = cx.with_extensions_header(v);
            }
        }
        cx.last_event_id = match get("last-event-id") {
            None => None,
            Some(raw) => match last_event_id(raw) {
                Ok(seq) => seq,
                Err(e) if strict => return Err(e),
                Err(_) => None,
            },
        };
        cx.credentials = text("authorization")
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        cx.trace = text("traceparent").and_then(|t| TraceContext::parse(t, text("tracestate")));
        let timeout = match get(crate::timeout::TIMEOUT_HEADER) {
            None => None,
            Some(raw) => {
                match text(crate::timeout::TIMEOUT_HEADER).and_then(crate::timeout::parse_timeout) {
                    Some(timeout) => Some(timeout),
                    None if strict => return Err(crate::timeout::malformed_timeout(raw)),
                    None => None,
                }
            }
        };
        cx.deadline = timeout.and_then(|d| Instant::now().checked_add(d));
        Ok(cx)
    }

    /// [`from_service_params`](Self::from_service_params) over all of a request's service
    /// parameters at once, as `(name, value)` pairs in the order they were sent (HTTP headers
    /// or gRPC metadata, whose names are lowercase): the first value of each name counts, as a
    /// lookup by name finds it. One pass over the pairs instead of one hashed lookup per
    /// parameter read.
    ///
    /// ```
    /// use trident_core::CallContext;
    /// let cx = CallContext::from_service_param_pairs([
    ///     ("content-type", &b"application/json"[..]),
    ///     ("a2a-version", b"1.0"),
    ///     ("a2a-version", b"0.3"),
    /// ]);
    /// assert_eq!(cx.version.as_deref(), Some("1.0"));
    /// ```
    pub fn from_service_param_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Self {
        let found = first_of_each(pairs);
        Self::from_service_params(|name| param_index(name).and_then(|i| found[i]))
    }

    /// [`try_from_service_params`](Self::try_from_service_params) over all of a request's
    /// service parameters at once, as [`from_service_param_pairs`](Self::from_service_param_pairs)
    /// reads them: what server adapters call.
    pub fn try_from_service_param_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Self, crate::A2aError> {
        let found = first_of_each(pairs);
        Self::try_from_service_params(|name| param_index(name).and_then(|i| found[i]))
    }

    /// Client side: the service parameters a client sends for this call (lowercase names, as
    /// HTTP/2 and gRPC metadata want them): `a2a-version`, `a2a-extensions`, `last-event-id`,
    /// `authorization`, `traceparent`, `tracestate`, and the time left before the deadline as
    /// [`TIMEOUT_HEADER`](crate::deadline::TIMEOUT_HEADER). The inverse of
    /// [`from_service_params`](Self::from_service_params).
    pub fn outgoing_service_params(&self) -> Vec<(&'static str, String)> {
        let mut params = Vec::with_capacity(4);
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            params.push((
                crate::timeout::TIMEOUT_HEADER,
                crate::timeout::format_timeout(left),
            ));
        }
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
        if let Some(t) = &self.trace {
            params.push(("traceparent", t.traceparent.clone()));
            if let Some(state) = &t.tracestate {
                params.push(("tracestate", state.clone()));
            }
        }
        params
    }

    /// Sets when the caller stops waiting.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the deadline `timeout` from now, keeping an earlier one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use trident_core::CallContext;
    /// let cx = CallContext::new().with_timeout(Duration::from_secs(5));
    /// assert!(cx.deadline.is_some());
    /// ```
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        if let Some(at) = Instant::now().checked_add(timeout) {
            self.deadline = Some(self.deadline.map_or(at, |d| d.min(at)));
        }
        self
    }

    /// Sets the token that says the caller went away: cancelling it aborts the call.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancelled = token;
        self
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

#[cfg(test)]
mod tests;
