//! [`ClientBuilder`] and [`Client`]: the options every call to every agent shares.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, PREVIEW_VERSION, PROTOCOL_VERSION,
    deadline::bounded,
};
use trident_http::DEFAULT_MAX_RESPONSE_BYTES;
use trident_proto as pb;

use crate::cache::{CardCache, Freshness};
use crate::preview::SpeakPreview;
use crate::timed::Timed;
use crate::{
    Agent, Binding, Protocol, card_url, choose_for, no_match_for, preview_twin, speaks_preview,
    speaks_v03,
};

/// Options of a [`Client`]. Every option has a default; `build` checks them all.
///
/// ```
/// use std::time::Duration;
/// use trident_client::{Binding, ClientBuilder};
/// let client = ClientBuilder::new()
///     .timeout(Duration::from_secs(10))
///     .connect_timeout(Duration::from_secs(2))
///     .api_key("x-api-key", "k-123")
///     .header("x-team", "search")
///     .prefer(&[Binding::Grpc])
///     .build()
///     .unwrap();
/// # drop(client);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ClientBuilder {
    http: Option<reqwest::Client>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    headers: Vec<(String, String, bool)>,
    query: Query,
    roots_pem: Vec<Vec<u8>>,
    roots_only: bool,
    grpc_identity: Option<GrpcIdentity>,
    preference: Vec<Binding>,
    protocol: Protocol,
    max_response: usize,
    cache_cards: bool,
    preview: bool,
    tap: Option<trident_http::WireTap>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientBuilder {
    /// The defaults: no timeout (calls wait as long as their [`CallContext`] says), a 10 s
    /// connect timeout, no headers, the system's TLS roots, every binding in
    /// [`Binding::ALL`]'s order, responses up to [`DEFAULT_MAX_RESPONSE_BYTES`], cards cached.
    pub fn new() -> Self {
        Self {
            http: None,
            timeout: None,
            connect_timeout: Duration::from_secs(10),
            headers: Vec::new(),
            query: Query::default(),
            roots_pem: Vec::new(),
            roots_only: false,
            grpc_identity: None,
            preference: Vec::new(),
            protocol: Protocol::Auto,
            max_response: DEFAULT_MAX_RESPONSE_BYTES,
            cache_cards: true,
            preview: false,
            tap: None,
        }
    }

    /// Shows every exchange of the clients [`Client::client`] makes to `tap` (off by default,
    /// and then nothing is formatted): on the JSON bindings each request's method, URL,
    /// headers and body (the JSON-RPC envelope as sent), each response's status line, headers
    /// and body, and each SSE line; on gRPC each call's path and metadata, the response's
    /// metadata, the messages of a stream and the status. Credentials are redacted (see
    /// [`WireTap`](trident_http::WireTap)). The v0.3 clients are tapped alike.
    pub fn wire_tap(mut self, tap: trident_http::WireTap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// How long a unary call, the opening of a stream (until the agent answers its head) and
    /// a card fetch may take, unless the call's [`CallContext::deadline`] is earlier. An open
    /// stream then lasts as long as the call's own deadline allows. The agent is told the time
    /// left (`grpc-timeout`, on every binding).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How long to wait for a TCP (and TLS) connection (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sends `name: value` with every request, card fetches included (gRPC: as metadata). A
    /// header a call sets itself (`Authorization` from its credentials, `A2A-Version`, ...)
    /// wins over a default one.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into(), false));
        self
    }

    /// Authenticates every request, card fetches included, with `Authorization: Bearer
    /// {token}` (unless a call brings its own credentials).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.headers.push((
            "authorization".to_owned(),
            format!("Bearer {}", token.into()),
            true,
        ));
        self
    }

    /// Authenticates every request, card fetches included, with an API key in `header` (for
    /// example `X-API-Key`, as the card's `APIKeySecurityScheme` names it).
    pub fn api_key(mut self, header: impl Into<String>, key: impl Into<String>) -> Self {
        self.headers.push((header.into(), key.into(), true));
        self
    }

    /// Authenticates every A2A call over an HTTP binding (JSON-RPC, HTTP+JSON) with an API key
    /// in the query parameter `name`, where a card's `APIKeySecurityScheme` says `in: query`
    /// (A2A §4.5.2). Card fetches do not carry it. gRPC has no query string: a client of a
    /// gRPC interface is refused (`InvalidParams`) while one is set, rather than calling
    /// without the key. The value never appears in errors or in `Debug` output.
    pub fn api_key_query(mut self, name: impl Into<String>, key: impl Into<String>) -> Self {
        self.query.0.push((name.into(), key.into()));
        self
    }

    /// Uses `http` (its connection pool, proxy and TLS settings) for the HTTP bindings and card
    /// fetches instead of building one; `connect_timeout` and TLS roots then are `http`'s own.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// Trusts the certificates of a PEM bundle as TLS roots, besides the system's (or instead
    /// of them after [`tls_roots_only`](Self::tls_roots_only)). Applies to the HTTP bindings
    /// and card fetches (unless [`http_client`](Self::http_client) gives the HTTP client), and
    /// to gRPC over TLS (an `https://` gRPC interface).
    pub fn tls_roots_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots_pem.push(pem.into());
        self
    }

    /// Presents this client certificate (PEM, leaf first, then its chain) with its private key
    /// (PEM) to a gRPC agent over TLS that asks for one (mutual TLS). The HTTP bindings take
    /// theirs from the [`http_client`](Self::http_client) given (`reqwest::Identity`).
    pub fn grpc_client_identity(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> Self {
        self.grpc_identity = Some(GrpcIdentity(cert_pem.into(), key_pem.into()));
        self
    }

    /// Trusts only the roots given with [`tls_roots_pem`](Self::tls_roots_pem).
    pub fn tls_roots_only(mut self) -> Self {
        self.roots_only = true;
        self
    }

    /// The bindings to use, best first ([`Client::connect`] takes the first the card offers
    /// for A2A 1.x). Empty (the default) means [`Binding::ALL`] in that order.
    pub fn prefer(mut self, bindings: &[Binding]) -> Self {
        self.preference = bindings.to_vec();
        self
    }

    /// Which A2A generation to speak ([`Protocol::Auto`] by default): for the binding chosen,
    /// `Auto` speaks 1.x when the card offers it and v0.3 otherwise (an agent that speaks only
    /// v0.3: its card's `url`, `preferredTransport` and `additionalInterfaces`, or 1.0
    /// interfaces marked `protocolVersion: "0.3"`); `V1` or `V03` insist on one. A v0.3 agent
    /// is sent `A2A-Version: 0.3` and v0.3's methods, routes or gRPC service; what v0.3
    /// cannot express (ListTasks, tenants, resuming a stream after an event) fails with
    /// `UnsupportedOperation` saying so.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Reads at most `bytes` of a response, of one stream event or of a card; a larger one is
    /// an `InvalidAgentResponse` error.
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.max_response = bytes;
        self
    }

    /// Whether to keep cards for as long as their `Cache-Control` allows and revalidate them
    /// with their `ETag` (default `true`). Off, every fetch reads the card again.
    pub fn cache_cards(mut self, on: bool) -> Self {
        self.cache_cards = on;
        self
    }

    /// Whether to ask agents for the A2A 1.1 preview (default `false`): task generations,
    /// long-polling GetTask and `ifGenerationMatch`, from the specification's dev-1.1 branch.
    ///
    /// On, cards are fetched with `A2A-Version: 1.1`, and [`Client::connect`] speaks the
    /// preview to an agent whose card then offers it for the binding chosen (an interface
    /// with `protocolVersion: "1.1"`): its [`Agent::service`](crate::Agent::service) sends
    /// `A2A-Version: 1.1` on every call and [`Agent::preview`](crate::Agent::preview) is
    /// `Some`. An agent that does not offer it (a 1.0 agent, or one that does not enable the
    /// preview) is spoken to in 1.0 as without this switch; only its card request says 1.1.
    /// Off, nothing changes: not one request differs from a client without it.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), trident_core::A2aError> {
    /// use trident_client::ClientBuilder;
    /// let client = ClientBuilder::new().preview(true).build()?;
    /// let agent = client.connect("http://127.0.0.1:8080").await?;
    /// println!("A2A 1.1 preview: {}", agent.preview().is_some());
    /// # Ok(()) }
    /// ```
    pub fn preview(mut self, on: bool) -> Self {
        self.preview = on;
        self
    }

    /// Checks the options and makes the client.
    pub fn build(self) -> Result<Client, A2aError> {
        let bad = |field: &str, why: String| A2aError::invalid_field(field, why);
        let mut headers = HeaderMap::new();
        for (name, value, sensitive) in &self.headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|e| bad("header", format!("{name:?}: {e}")))?;
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|e| bad("header", format!("value of {name}: {e}")))?;
            value.set_sensitive(*sensitive);
            headers.insert(name, value);
        }
        let http = match self.http {
            Some(http) => http,
            None => {
                let mut roots = Vec::new();
                for pem in &self.roots_pem {
                    roots.extend(
                        reqwest::Certificate::from_pem_bundle(pem)
                            .map_err(|e| bad("tls_roots_pem", trident_core::error_chain(&e)))?,
                    );
                }
                let builder = reqwest::Client::builder().connect_timeout(self.connect_timeout);
                let builder = if self.roots_only {
                    builder.tls_certs_only(roots)
                } else {
                    builder.tls_certs_merge(roots)
                };
                builder
                    .build()
                    .map_err(|e| A2aError::caused_by("cannot build the HTTP client", e, false))?
            }
        };
        let grpc_tls = trident_grpc::GrpcTls {
            ca_pem: (!self.roots_pem.is_empty()).then(|| self.roots_pem.join(&b'\n')),
            ca_only: self.roots_only,
            identity: self
                .grpc_identity
                .map(|GrpcIdentity(cert, key)| (cert, key)),
        };
        Ok(Client {
            shared: Arc::new(Shared {
                http,
                grpc_tls,
                headers,
                query: self.query,
                timeout: self.timeout,
                connect_timeout: self.connect_timeout,
                preference: self.preference,
                protocol: self.protocol,
                max_response: self.max_response,
                cards: self.cache_cards.then(CardCache::default),
                preview: self.preview,
                tap: self.tap,
            }),
        })
    }
}

#[derive(Debug)]
struct Shared {
    http: reqwest::Client,
    grpc_tls: trident_grpc::GrpcTls,
    headers: HeaderMap,
    query: Query,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    preference: Vec<Binding>,
    protocol: Protocol,
    max_response: usize,
    cards: Option<CardCache>,
    preview: bool,
    tap: Option<trident_http::WireTap>,
}

impl Shared {
    /// The options a gRPC client connects with.
    fn grpc_options(&self) -> trident_grpc::GrpcOptions {
        trident_grpc::GrpcOptions {
            max_response_size: self.max_response,
            connect_timeout: self.connect_timeout,
            tls: self.grpc_tls.clone(),
            ..Default::default()
        }
    }

    /// `connecting` to the gRPC agent at `url`, bounded by the builder's timeout.
    async fn within_timeout<T>(
        &self,
        url: &str,
        connecting: impl Future<Output = Result<T, A2aError>>,
    ) -> Result<T, A2aError> {
        let mut cx = CallContext::new();
        if let Some(t) = self.timeout {
            cx = cx.with_timeout(t);
        }
        bounded(&cx, format!("gRPC {url}"), connecting).await
    }
}

/// A configured A2A client: connects to agents and fetches their cards with the options of its
/// [`ClientBuilder`]. Cheap to clone; clones share the HTTP connection pool and the card cache.
#[derive(Debug, Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl Client {
    /// A client with default options ([`ClientBuilder::new`]).
    pub fn new() -> Result<Self, A2aError> {
        ClientBuilder::new().build()
    }

    /// The HTTP client the HTTP bindings and card fetches use.
    pub fn http(&self) -> &reqwest::Client {
        &self.shared.http
    }

    /// Reads the card of `origin` (its origin, or the URL of its card: see [`card_url`]),
    /// sending `A2A-Version` (`1.0`, or `1.1` with [`ClientBuilder::preview`]), the default
    /// headers and authentication, within the timeout.
    ///
    /// With the cache on, a card whose `Cache-Control: max-age` has not passed is returned
    /// without a request; an older one with an `ETag` is revalidated (`If-None-Match`, and a
    /// `304 Not Modified` keeps it); `no-store` is never kept.
    pub async fn fetch_card(&self, origin: &str) -> Result<pb::AgentCard, A2aError> {
        let url = card_url(origin);
        let cache = self.shared.cards.as_ref();
        let etag = match cache.map(|c| c.lookup(&url)) {
            Some(Freshness::Fresh(card)) => return Ok(*card),
            Some(Freshness::Stale { etag }) => etag,
            Some(Freshness::Missing) | None => None,
        };
        let mut cx = CallContext::new();
        if let Some(t) = self.shared.timeout {
            cx = cx.with_timeout(t);
        }
        let what = format!("agent card {url}");
        let fetched = bounded(&cx, &what, self.fetch(&url, &what, etag.as_deref())).await?;
        match (fetched, cache) {
            (Fetched::NotModified(headers), Some(cache)) => {
                cache.revalidated(&url, &headers).ok_or_else(|| {
                    A2aError::new(
                        ErrorKind::InvalidAgentResponse,
                        format!("{what}: 304 Not Modified for a card this client does not hold"),
                    )
                })
            }
            (Fetched::NotModified(_), None) => Err(A2aError::new(
                ErrorKind::InvalidAgentResponse,
                format!("{what}: 304 Not Modified to an unconditional request"),
            )),
            (Fetched::Card(card, headers), cache) => {
                if let Some(cache) = cache {
                    cache.store(&url, &card, &headers);
                }
                Ok(*card)
            }
        }
    }

    async fn fetch(&self, url: &str, what: &str, etag: Option<&str>) -> Result<Fetched, A2aError> {
        let transport = |e: reqwest::Error| {
            let timed_out = e.is_timeout();
            A2aError::caused_by(what, e, timed_out)
        };
        let mut request = self
            .shared
            .http
            .get(url)
            .headers(self.shared.headers.clone())
            .header("accept", "application/json")
            .header(
                "a2a-version",
                if self.shared.preview {
                    PREVIEW_VERSION
                } else {
                    PROTOCOL_VERSION
                },
            );
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let headers = response.headers().clone();
        if status == reqwest::StatusCode::NOT_MODIFIED {
            return Ok(Fetched::NotModified(headers));
        }
        if !status.is_success() {
            let kind = match status.as_u16() {
                401 => ErrorKind::Unauthenticated,
                403 => ErrorKind::PermissionDenied,
                _ => ErrorKind::Unavailable,
            };
            return Err(A2aError::new(kind, format!("{what}: HTTP {status}")));
        }
        let body = {
            use futures::TryStreamExt;
            let chunks = response.bytes_stream().map_err(transport);
            trident_http::read_body(chunks, self.shared.max_response).await
        };
        let body = body.map_err(|e| e.into_described(what))?;
        let card = read_card(&body)
            .map_err(|e| A2aError::new(e.kind(), format!("{what}: {}", e.message())))?;
        Ok(Fetched::Card(Box::new(card), headers))
    }

    /// Reads the card of `origin` once, picks the first binding of the builder's preference
    /// that it offers under the builder's [`Protocol`] (see [`choose_for`](crate::choose_for)),
    /// and connects. When it offers none, the error lists what it does offer. With
    /// [`ClientBuilder::preview`], the card's A2A 1.1 preview interface for that binding is
    /// used when it has one ([`preview_twin`](crate::preview_twin)).
    pub async fn connect(&self, origin: &str) -> Result<Agent, A2aError> {
        self.connect_with(origin, &self.shared.preference).await
    }

    /// [`connect`](Self::connect) with the bindings of this call, best first, instead of the
    /// builder's [`prefer`](ClientBuilder::prefer) (empty: [`Binding::ALL`] in that order):
    /// one client, its options and card cache, speaking to each agent over the binding the
    /// caller picks.
    pub async fn connect_with(
        &self,
        origin: &str,
        preference: &[Binding],
    ) -> Result<Agent, A2aError> {
        let card = self.fetch_card(origin).await?;
        self.connect_card_with(origin, card, preference).await
    }

    /// [`connect`](Self::connect) to the agent of a card already in hand (`origin` only names
    /// it in errors).
    pub async fn connect_card(&self, origin: &str, card: pb::AgentCard) -> Result<Agent, A2aError> {
        self.connect_card_with(origin, card, &self.shared.preference)
            .await
    }

    async fn connect_card_with(
        &self,
        origin: &str,
        card: pb::AgentCard,
        preference: &[Binding],
    ) -> Result<Agent, A2aError> {
        let protocol = self.shared.protocol;
        let (binding, mut interface) = choose_for(&card, preference, protocol)
            .ok_or_else(|| no_match_for(origin, &card, preference, protocol))?;
        // The preview is 1.0's twin: the same binding, in 1.1, when the card offers it.
        if self.shared.preview
            && let Some(twin) = preview_twin(&card, binding, &interface)
        {
            interface = twin;
        }
        let service = self.client(binding, &interface).await?;
        Ok(Agent {
            card,
            binding,
            interface,
            service,
        })
    }

    /// A client of `interface` over `binding` with this client's options, sending the
    /// interface's tenant. An interface whose `protocolVersion` is 0.3 gets the binding's
    /// v0.3 client (`A2A-Version: 0.3`, v0.3's wire forms); one that says 1.1 (the A2A 1.1
    /// preview, [`speaks_preview`](crate::speaks_preview)) the 1.0 one sending
    /// `A2A-Version: 1.1` on every call; any other the 1.0 one.
    pub async fn client(
        &self,
        binding: Binding,
        interface: &pb::AgentInterface,
    ) -> Result<Arc<dyn A2aService>, A2aError> {
        let s = &self.shared;
        let v03 = speaks_v03(interface);
        let query = s.query.0.clone();
        if binding == Binding::Grpc && !query.is_empty() {
            return Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!(
                    "the API key goes in the query parameter {:?}, and gRPC ({}) has no query string: \
                 use the agent's JSON-RPC or HTTP+JSON interface",
                    s.query.names(),
                    interface.url
                ),
            ));
        }
        let inner: Arc<dyn A2aService> = match binding {
            Binding::JsonRpc if v03 => Arc::new(
                trident_jsonrpc::V03Client::with_client(s.http.clone(), &interface.url)
                    .with_headers(s.headers.clone())
                    .with_query(query.clone())
                    .with_max_response_size(s.max_response)
                    .with_wire_tap(s.tap.clone()),
            ),
            Binding::Rest if v03 => Arc::new(
                trident_rest::V03Client::with_client(s.http.clone(), &interface.url)
                    .with_headers(s.headers.clone())
                    .with_query(query.clone())
                    .with_max_response_size(s.max_response)
                    .with_wire_tap(s.tap.clone()),
            ),
            Binding::Grpc if v03 => {
                let options = s.grpc_options();
                let connecting = trident_grpc::V03Client::connect_with(&interface.url, &options);
                Arc::new(
                    s.within_timeout(&interface.url, connecting)
                        .await?
                        .with_headers(s.headers.clone())
                        .with_wire_tap(s.tap.clone()),
                )
            }
            Binding::JsonRpc => Arc::new(
                trident_jsonrpc::JsonRpcClient::with_client(s.http.clone(), &interface.url)
                    .with_tenant(&interface.tenant)
                    .with_headers(s.headers.clone())
                    .with_query(query.clone())
                    .with_max_response_size(s.max_response)
                    .with_wire_tap(s.tap.clone()),
            ),
            Binding::Rest => Arc::new(
                trident_rest::RestClient::with_client(s.http.clone(), &interface.url)?
                    .with_tenant(&interface.tenant)
                    .with_headers(s.headers.clone())
                    .with_query(query.clone())
                    .with_max_response_size(s.max_response)
                    .with_wire_tap(s.tap.clone()),
            ),
            Binding::Grpc => {
                let options = s.grpc_options();
                let connecting = trident_grpc::GrpcClient::connect_with(&interface.url, &options);
                Arc::new(
                    s.within_timeout(&interface.url, connecting)
                        .await?
                        .with_tenant(&interface.tenant)
                        .with_headers(s.headers.clone())
                        .with_wire_tap(s.tap.clone()),
                )
            }
        };
        let inner: Arc<dyn A2aService> = if speaks_preview(interface) {
            Arc::new(SpeakPreview::new(inner))
        } else {
            inner
        };
        Ok(match s.timeout {
            Some(timeout) => Arc::new(Timed::new(inner, timeout)),
            None => inner,
        })
    }
}

/// A gRPC client certificate and its key (PEM); `Debug` shows neither.
#[derive(Clone)]
struct GrpcIdentity(Vec<u8>, Vec<u8>);

impl std::fmt::Debug for GrpcIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrpcIdentity([redacted])")
    }
}

/// Query parameters sent with every call of the HTTP bindings; `Debug` shows their names
/// only (their values are credentials).
#[derive(Clone, Default)]
struct Query(Vec<(String, String)>);

impl Query {
    fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(n, _)| n.as_str()).collect()
    }
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| format!("{n}=[redacted]")))
            .finish()
    }
}

/// What a card fetch brought back.
enum Fetched {
    Card(Box<pb::AgentCard>, HeaderMap),
    NotModified(HeaderMap),
}

/// A card's JSON: a card that is v0.3 only (top-level `url`, no `supportedInterfaces`) is read
/// as v0.3 and translated (its interfaces marked `protocolVersion` 0.3); any other as 1.0.
/// For cards read from elsewhere than a fetch (a file, a URL fetched by the caller).
pub fn read_card(body: &[u8]) -> Result<pb::AgentCard, A2aError> {
    let bad = |e: serde_json::Error| {
        A2aError::new(ErrorKind::InvalidAgentResponse, e.to_string()).with_source(e)
    };
    let value: serde_json::Value = serde_json::from_slice(body).map_err(bad)?;
    if trident_v03::card::is_v03_only(&value) {
        return trident_v03::card::from_json(value);
    }
    serde_json::from_value(value).map_err(bad)
}
