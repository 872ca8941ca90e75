//! One listener for everything an A2A agent serves:
//!
//! - gRPC (`lf.a2a.v1.A2AService`, reflection, health) by its `/package.Service/Method` paths,
//!   over h2c;
//! - JSON-RPC 2.0 at `POST /` (the card's JSONRPC url);
//! - HTTP+JSON routes (the card's HTTP+JSON url is the origin);
//! - the agent card at `/.well-known/agent-card.json`, with `ETag`, `Last-Modified`,
//!   `Cache-Control: max-age` and `304 Not Modified` on conditional requests (with 0.3 on,
//!   negotiated on `A2A-Version`: the 1.0 card for 1.0 clients, v0.3's members added for the
//!   others).
//!
//! HTTP/1.1 and HTTP/2 (prior knowledge) share the port. Every request first passes the
//! HTTP-level hygiene checks (`Host`, `Transfer-Encoding`, credentials sent twice). This crate
//! only composes the binding crates; it holds no A2A behaviour. With [`ServerOptions::cors`],
//! web pages of the allowed origins may call it from a browser ([`Cors`]; gRPC through
//! gRPC-Web, on by default: [`GrpcOptions::web`]).

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use trident_core::{A2aService, Authenticator, PROTOCOL_VERSION};
use trident_proto as pb;

mod admission;
mod budget;
mod connections;
mod cors;
mod hygiene;
mod limits;
mod observe;
pub mod proxy;
mod registry;
mod trim;
pub use connections::{
    ConnectionLimits, DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_INFLIGHT_BODY_BYTES,
    MAX_CONNECTIONS_CAP, PUSH_DELIVERIES_CAP, default_max_connections, default_push_deliveries,
    serve_with, serve_with_proxies,
};
pub use cors::{Cors, CorsError, DEFAULT_CORS_MAX_AGE};
pub use limits::{CallerLimits, Limited};
/// OTLP export of the spans and metrics (cargo feature `otlp`).
#[cfg(feature = "otlp")]
pub use observe::otlp;
pub use observe::{CALL_TARGET, Metrics, Observed, observed_stores};
pub use proxy::{ForwardedHeader, IpNet, ProxyOptions};
pub use trident_grpc::GrpcOptions;
pub use trident_jsonrpc::JsonRpcOptions;
pub use trident_rest::RestOptions;
pub use trident_v03::push::task_body as v03_push_body;
pub use trident_v03::version::Protocols;

/// Where the JSON-RPC endpoint is mounted by default ([`ServerOptions::jsonrpc_path`]).
pub const JSONRPC_PATH: &str = "/";
/// The well-known card path.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// Where [`ServerOptions::metrics`] are served.
pub const METRICS_PATH: &str = "/metrics";
/// Where [`ServerOptions::jwks`] (the agent's public signing keys) are served.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        metrics.render(),
    )
        .into_response()
}

/// Settings of the combined listener.
#[derive(Clone)]
pub struct ServerOptions {
    /// Authenticates every request on every binding. Once set, only the public agent card is
    /// reachable without valid credentials (see [`allow_anonymous`](Self::allow_anonymous)).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// With an authenticator: let requests without credentials through as the anonymous
    /// principal (credentials that are sent must still be valid). Off by default: fail closed.
    pub allow_anonymous: bool,
    /// HTTP+JSON settings.
    pub rest: RestOptions,
    /// JSON-RPC settings.
    pub jsonrpc: JsonRpcOptions,
    /// gRPC settings.
    pub grpc: GrpcOptions,
    /// Where JSON-RPC is served (default [`JSONRPC_PATH`], `/`); the card's JSONRPC URL must
    /// name it (see [`Interfaces::with_jsonrpc_path`]). Refusals made before the JSON-RPC
    /// adapter reads a request (hygiene, limits, authentication) answer in JSON-RPC's form
    /// only at `/`.
    pub jsonrpc_path: String,
    /// `Cache-Control: max-age` of the card, in seconds.
    pub card_max_age: u32,
    /// Which bindings this listener serves (all by default; gRPC can get a listener of its own).
    pub bindings: Bindings,
    /// Serve these metrics at `/metrics` (Prometheus text format) on the HTTP listener.
    pub metrics: Option<Arc<Metrics>>,
    /// Serve this JWKS (JSON) at [`JWKS_PATH`], public like the card: the keys that verify
    /// the card's signatures and signed push notifications.
    pub jwks: Option<String>,
    /// The per-caller limits of the service (the same [`Limited`] that wraps it). Every
    /// request is charged to its caller once, by the server's edge layer, before it is
    /// decoded, so malformed requests count like any other and the call it makes is not
    /// charged again; requests refused for their credentials are charged by the caller's
    /// address. Not charged: the agent card, the JWKS and the gRPC health service. Over its
    /// rate a caller gets `ResourceExhausted` in the binding's format (429 with `Retry-After`,
    /// -31429, `RESOURCE_EXHAUSTED`).
    pub caller_limits: Option<Arc<Limited>>,
    /// The protocol generations served (`--protocols`): with 0.3 on (the default), the v0.3
    /// methods, routes and gRPC service answer beside 1.0 on every binding, and a card request
    /// without a 1.x `A2A-Version` (what v0.3 clients send) gets the card with what v0.3
    /// clients read added, while 1.0 clients get the plain 1.0 card (see
    /// [`trident_v03::card`]).
    pub protocols: Protocols,
    /// Which web origins may call the agent from a browser (CORS on every binding, gRPC-Web
    /// and the card). `None` (the default): no CORS layer at all, preflights are not
    /// answered and no `Access-Control-*` header is added (the public card alone always says
    /// `Access-Control-Allow-Origin: *`).
    pub cors: Option<Cors>,
    /// Extra routes on the HTTP listener, beside the bindings and behind the same edge: the
    /// hygiene checks, authentication (when configured) and the caller's rate, like any call
    /// (e.g. `trident serve --console`'s API). Their paths must not be the bindings' own.
    pub routes: Option<axum::Router>,
    /// Extra routes on the HTTP listener that anyone may fetch, like the card: behind the
    /// hygiene checks only, neither authenticated nor charged (e.g. a page's static assets,
    /// which hold nothing secret).
    pub public_routes: Option<axum::Router>,
}

/// The bindings a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bindings {
    /// `lf.a2a.v1.A2AService`, reflection and health.
    pub grpc: bool,
    /// JSON-RPC at `POST /`.
    pub jsonrpc: bool,
    /// HTTP+JSON routes and the agent card.
    pub rest: bool,
}

impl Bindings {
    /// All three.
    pub const ALL: Bindings = Bindings {
        grpc: true,
        jsonrpc: true,
        rest: true,
    };
    /// gRPC only (a separate gRPC listener).
    pub const GRPC: Bindings = Bindings {
        grpc: true,
        jsonrpc: false,
        rest: false,
    };
    /// JSON-RPC, HTTP+JSON and the card (the HTTP listener when gRPC has its own).
    pub const HTTP: Bindings = Bindings {
        grpc: false,
        jsonrpc: true,
        rest: true,
    };
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            authenticator: None,
            allow_anonymous: false,
            rest: RestOptions::default(),
            jsonrpc: JsonRpcOptions::default(),
            grpc: GrpcOptions::default(),
            jsonrpc_path: JSONRPC_PATH.to_owned(),
            card_max_age: 300,
            bindings: Bindings::ALL,
            metrics: None,
            jwks: None,
            caller_limits: None,
            protocols: Protocols::ALL,
            cors: None,
            routes: None,
            public_routes: None,
        }
    }
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("authenticator", &self.authenticator.is_some())
            .field("allow_anonymous", &self.allow_anonymous)
            .field("rest", &self.rest)
            .field("jsonrpc", &self.jsonrpc)
            .field("grpc", &self.grpc)
            .field("jsonrpc_path", &self.jsonrpc_path)
            .field("card_max_age", &self.card_max_age)
            .field("bindings", &self.bindings)
            .field("protocols", &self.protocols)
            .field("cors", &self.cors)
            .field("routes", &self.routes.is_some())
            .field("public_routes", &self.public_routes.is_some())
            .finish()
    }
}

/// The URLs of the three interfaces of a server reachable at `addr` (or at `public`, an
/// `http(s)://host:port` origin, when it sits behind a proxy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interfaces {
    /// JSON-RPC endpoint URL.
    pub jsonrpc: String,
    /// HTTP+JSON base URL.
    pub rest: String,
    /// gRPC `host:port`.
    pub grpc: String,
}

impl Interfaces {
    /// The interfaces of a local listener.
    pub fn local(addr: SocketAddr) -> Self {
        Self::at(&format!("http://{addr}"))
    }

    /// The interfaces under an origin such as `https://agent.example.com`.
    pub fn at(origin: &str) -> Self {
        let origin = origin.trim_end_matches('/');
        let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
        let grpc = if authority.contains(':') {
            authority.to_owned()
        } else if origin.starts_with("https://") {
            format!("{authority}:443")
        } else {
            format!("{authority}:80")
        };
        Self {
            jsonrpc: format!("{origin}{JSONRPC_PATH}"),
            rest: origin.to_owned(),
            grpc,
        }
    }

    /// These interfaces with JSON-RPC at `path` of the HTTP+JSON origin instead of `/`
    /// ([`ServerOptions::jsonrpc_path`]).
    #[must_use]
    pub fn with_jsonrpc_path(mut self, path: &str) -> Self {
        self.jsonrpc = format!("{}{path}", self.rest.trim_end_matches('/'));
        self
    }
}

/// `card` with `supportedInterfaces` set to these interfaces (JSON-RPC first, the preferred).
pub fn card_with_interfaces(mut card: pb::AgentCard, interfaces: &Interfaces) -> pb::AgentCard {
    let interface = |url: &str, binding: &str| pb::AgentInterface {
        url: url.to_owned(),
        protocol_binding: binding.to_owned(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.to_owned(),
    };
    card.supported_interfaces = vec![
        interface(&interfaces.jsonrpc, "JSONRPC"),
        interface(&interfaces.rest, "HTTP+JSON"),
        interface(&interfaces.grpc, "GRPC"),
    ];
    card
}

/// The forms of the served card: what 1.0 clients get, and, when it differs, what a request
/// that does not say it speaks 1.x gets (see [`CardState`]).
///
/// - 1.0 only (`--protocols 1.0`): the card's ProtoJSON, one form.
/// - 0.3 only (`--protocols 0.3`): the plain v0.3 card, one form (a v0.3-only agent).
/// - Both (the default): 1.0 clients get the 1.0 card with the 0.3 twins of its interfaces
///   ([`trident_v03::card::with_v03_interfaces`]), nothing else: it validates against the v1.0
///   schema (`additionalProperties: false`). Other requests get that card with v0.3's top-level
///   members added ([`trident_v03::card::combined_json`]), which v0.3 clients need (`url` is
///   required by their parsers). A signed card is served as signed to 1.0 clients (no twins:
///   its signatures cover its members); the other form adds only members the 1.0 card does not
///   have, so a verifier reading the 1.0 members verifies it too.
fn card_forms(
    card: &pb::AgentCard,
    protocols: Protocols,
) -> Result<(String, Option<String>), ServerError> {
    let failed = |e: trident_core::A2aError| {
        ServerError::Card(<serde_json::Error as serde::ser::Error>::custom(e))
    };
    if !protocols.v1 {
        // A v0.3-only agent: the plain v0.3 card (its interfaces as `url`,
        // `preferredTransport` and `additionalInterfaces`), as v0.3 SDKs serve it.
        use trident_v03::ToV03;
        let mut card = card.clone();
        if !card.signatures.is_empty() {
            tracing::warn!("the card's signatures cover its 1.0 form: the v0.3 card drops them");
            card.signatures.clear();
        }
        let v03 = trident_v03::card::json(&card.to_v03()).map_err(failed)?;
        return Ok((
            serde_json::to_string(&v03).map_err(ServerError::Card)?,
            None,
        ));
    }
    if !protocols.v03 {
        return Ok((
            serde_json::to_string(card).map_err(ServerError::Card)?,
            None,
        ));
    }
    let card = if card.signatures.is_empty() {
        trident_v03::card::with_v03_interfaces(card.clone())
    } else {
        card.clone()
    };
    let v1 = serde_json::to_value(&card).map_err(ServerError::Card)?;
    let v1_text = serde_json::to_string(&v1).map_err(ServerError::Card)?;
    let both = trident_v03::card::combined_json(&card, v1).map_err(failed)?;
    let both = serde_json::to_string(&both).map_err(ServerError::Card)?;
    Ok((v1_text, Some(both)))
}

/// One form of the card: its JSON and the `ETag` of that JSON.
#[derive(Clone)]
struct CardBody {
    json: Arc<str>,
    etag: HeaderValue,
}

impl CardBody {
    fn new(json: String) -> Result<Self, ServerError> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        json.hash(&mut hasher);
        let etag = HeaderValue::try_from(format!("\"{:016x}\"", hasher.finish()))?;
        Ok(Self {
            json: json.into(),
            etag,
        })
    }
}

/// The card endpoint. With both generations on, the well-known path negotiates on
/// `A2A-Version` (spec §6.2: clients send it on every request, a GET may send it as a query
/// parameter instead, and absent means 0.3): a request that says 1.x (or anything but 0.x)
/// gets `v1`; one without it, or saying 0.x, gets `legacy` (the v0.3 clients, which send no
/// version). Both answers say `Vary: A2A-Version`.
#[derive(Clone)]
struct CardState {
    /// What 1.0 clients get.
    v1: CardBody,
    /// What requests without a 1.x `A2A-Version` get, when that differs.
    legacy: Option<CardBody>,
    /// What requests that say `A2A-Version: 1.1` get when the A2A 1.1 preview is on
    /// ([`preview_card`]).
    preview: Option<CardBody>,
    last_modified: HeaderValue,
    modified_at: chrono::DateTime<chrono::Utc>,
    cache_control: HeaderValue,
}

impl CardState {
    fn new(card: &pb::AgentCard, max_age: u32, protocols: Protocols) -> Result<Self, ServerError> {
        let (v1, legacy) = card_forms(card, protocols)?;
        let preview = protocols
            .v1_1_preview
            .then(|| preview_card(card))
            .transpose()?;
        // HTTP dates have second precision.
        let now = chrono::Utc::now();
        let modified_at = now - Duration::from_nanos(u64::from(now.timestamp_subsec_nanos()));
        let last_modified =
            HeaderValue::try_from(modified_at.format("%a, %d %b %Y %H:%M:%S GMT").to_string())?;
        let cache_control = HeaderValue::try_from(format!("public, max-age={max_age}"))?;
        Ok(Self {
            v1: CardBody::new(v1)?,
            legacy: legacy.map(CardBody::new).transpose()?,
            preview: preview.map(CardBody::new).transpose()?,
            last_modified,
            modified_at,
            cache_control,
        })
    }

    /// The form `request` gets.
    fn form(&self, headers: &HeaderMap, query: Option<&str>) -> &CardBody {
        let version = requested_version(headers, query);
        match (&self.legacy, &self.preview) {
            (_, Some(preview)) if trident_core::is_preview_version(version) => preview,
            (Some(legacy), _) if !is_v1(version) => legacy,
            _ => &self.v1,
        }
    }

    /// Whether the card served depends on `A2A-Version`.
    fn varies(&self) -> bool {
        self.legacy.is_some() || self.preview.is_some()
    }

    fn not_modified(&self, body: &CardBody, headers: &HeaderMap) -> bool {
        if let Some(tags) = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
        {
            let ours = body.etag.to_str().unwrap_or_default();
            return tags
                .split(',')
                .map(str::trim)
                .any(|t| t == "*" || t == ours || t.strip_prefix("W/") == Some(ours));
        }
        headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| chrono::DateTime::parse_from_rfc2822(v).ok())
            .is_some_and(|since| since >= self.modified_at)
    }
}

/// The card with the A2A 1.1 preview's interfaces first: a twin of each 1.0 interface, at
/// the same URL, saying `protocolVersion: 1.1` (clients take the first interface they speak).
/// Served only to card requests that say `A2A-Version: 1.1`, so no 1.0 or 0.3 client ever
/// sees a version it does not know. A signed card is served as signed (its signatures cover
/// its interfaces): a 1.1 client learns of the preview by asking with `A2A-Version: 1.1`.
fn preview_card(card: &pb::AgentCard) -> Result<String, ServerError> {
    let mut card = card.clone();
    if card.signatures.is_empty() {
        let twins: Vec<pb::AgentInterface> = card
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_version == trident_core::PROTOCOL_VERSION)
            .map(|i| pb::AgentInterface {
                protocol_version: trident_core::PREVIEW_VERSION.to_owned(),
                ..i.clone()
            })
            .collect();
        card.supported_interfaces.splice(0..0, twins);
    }
    serde_json::to_string(&card).map_err(ServerError::Card)
}

/// The `A2A-Version` a card request names: its header, else its query parameter, trimmed
/// (empty when neither).
fn requested_version<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> &'a str {
    let from_query = || {
        query?.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            k.eq_ignore_ascii_case("A2A-Version").then_some(v)
        })
    };
    headers
        .get("a2a-version")
        .map(|v| v.to_str().unwrap_or("?"))
        .or_else(from_query)
        .map(str::trim)
        .unwrap_or_default()
}

/// Whether a requested version says A2A 1.x (or later): present, not empty, not 0.x.
fn is_v1(version: &str) -> bool {
    !version.is_empty() && version != "0" && !version.starts_with("0.")
}

async fn serve_card(
    State(card): State<CardState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let body = card.form(&headers, uri.query());
    let common = [
        (header::ETAG, body.etag.clone()),
        (header::LAST_MODIFIED, card.last_modified.clone()),
        (header::CACHE_CONTROL, card.cache_control.clone()),
        (
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        ),
    ];
    let mut response = if card.not_modified(body, &headers) {
        (StatusCode::NOT_MODIFIED, common).into_response()
    } else {
        (
            common,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body.json.to_string(),
        )
            .into_response()
    };
    if card.varies() {
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("A2A-Version"));
    }
    response
}

/// Why the server could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The agent card does not serialize.
    #[error("card: {0}")]
    Card(#[source] serde_json::Error),
    /// A value of the card's response headers is not a valid header value.
    #[error("card header: {0}")]
    CardHeader(#[from] axum::http::header::InvalidHeaderValue),
    /// The HTTP+JSON routes or the OpenAPI document could not be derived from the descriptor.
    #[error("HTTP+JSON binding: {0}")]
    Routes(#[from] trident_rest::RouteError),
}

/// Echoes the extensions a request activated (`A2A-Extensions`, or `X-A2A-Extensions` of v0.3
/// clients) that the card declares, in the response's `A2A-Extensions` header. gRPC response
/// metadata is made of the same HTTP/2 headers, so this serves all three bindings.
async fn echo_extensions(
    State(declared): State<Arc<[String]>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let requested: Vec<String> = ["a2a-extensions", "x-a2a-extensions"]
        .iter()
        .flat_map(|name| request.headers().get_all(*name))
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|uri| declared.iter().any(|d| d == uri))
        .map(str::to_owned)
        .collect();
    let mut response = next.run(request).await;
    if !requested.is_empty()
        && let Ok(value) = HeaderValue::try_from(requested.join(", "))
    {
        response.headers_mut().insert("a2a-extensions", value);
    }
    response
}

/// The combined router over one `svc`: the card, gRPC, JSON-RPC and HTTP+JSON, as selected by
/// `options.bindings` (the card goes with HTTP+JSON).
pub fn app(
    svc: Arc<dyn A2aService>,
    card: &pb::AgentCard,
    options: &ServerOptions,
) -> Result<axum::Router, ServerError> {
    let mut router = axum::Router::new();
    let bindings = options.bindings;
    if bindings.rest {
        let card_state = CardState::new(card, options.card_max_age, options.protocols)?;
        router = router.route(
            CARD_PATH,
            axum::routing::get(serve_card).with_state(card_state),
        );
        // The OpenAPI 3.1 document of the HTTP+JSON binding (generated from the descriptor).
        let openapi: Arc<str> = trident_rest::openapi::try_document()?.to_string().into();
        router = router.route(
            trident_rest::openapi::PATH,
            axum::routing::get(move || {
                let body = openapi.to_string();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        );
    }
    if let (true, Some(jwks)) = (bindings.rest, &options.jwks) {
        let body: Arc<str> = jwks.as_str().into();
        router = router.route(
            JWKS_PATH,
            axum::routing::get(move || {
                let body = body.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/jwk-set+json")],
                        body.to_string(),
                    )
                }
            }),
        );
    }
    if let (true, Some(metrics)) = (bindings.rest, &options.metrics) {
        router = router.route(
            METRICS_PATH,
            axum::routing::get(serve_metrics).with_state(metrics.clone()),
        );
    }
    let v03 = options.protocols.v03;
    if bindings.jsonrpc {
        let mut jsonrpc = options.jsonrpc.clone();
        jsonrpc.v03 = v03;
        jsonrpc.v1 = options.protocols.v1;
        router = router.merge(trident_jsonrpc::router(
            svc.clone(),
            &options.jsonrpc_path,
            jsonrpc,
        ));
    }
    if bindings.grpc {
        let mut grpc = options.grpc.clone();
        grpc.v03 = v03;
        grpc.v1 = options.protocols.v1;
        router = router.merge(trident_grpc::routes_with(svc.clone(), &grpc).0);
    }
    if bindings.rest {
        let mut rest = options.rest.clone();
        rest.v03 = v03;
        rest.v1 = options.protocols.v1;
        router = router.merge(trident_rest::router(svc, rest)?);
    }
    if let (true, Some(routes)) = (bindings.rest, &options.routes) {
        router = router.merge(routes.clone());
    }
    let declared: Arc<[String]> = card
        .capabilities
        .iter()
        .flat_map(|c| &c.extensions)
        .map(|e| e.uri.clone())
        .collect();
    if !declared.is_empty() {
        router = router.layer(axum::middleware::from_fn_with_state(
            declared,
            echo_extensions,
        ));
    }
    // One edge layer admits every request (authentication, the caller's rate) before any
    // binding reads it; none when there is nothing to admit.
    let limits = options
        .caller_limits
        .clone()
        .filter(|l| l.charges_requests());
    if options.authenticator.is_some() || limits.is_some() {
        router = router.layer(axum::middleware::from_fn_with_state(
            admission::Gate {
                authenticator: options.authenticator.clone(),
                allow_anonymous: options.allow_anonymous,
                limits,
                jsonrpc_max_body: options.jsonrpc.max_body,
            },
            admission::admit,
        ));
    }
    if let (true, Some(routes)) = (bindings.rest, &options.public_routes) {
        router = router.merge(routes.clone());
    }
    // Outermost: an ambiguous request head (Host, Transfer-Encoding, a repeated credential) is
    // refused before anything reads it.
    let rules = hygiene::Rules::new(
        options
            .authenticator
            .as_ref()
            .map(|a| a.credential_headers())
            .unwrap_or_default(),
    );
    router = router.layer(hygiene::Layer::new(rules));
    // Outside everything: a preflight carries no credentials and must not be refused for it,
    // and a refusal a browser is allowed to read says why. No layer when CORS is off.
    if let Some(cors) = &options.cors {
        router = router.layer(axum::middleware::from_fn_with_state(
            Arc::new(cors.clone()),
            cors::layer,
        ));
    }
    Ok(router)
}

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting, lets open
/// requests finish for up to `drain`, and returns. [`serve_with`] with the default
/// [`ConnectionLimits`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
) -> std::io::Result<()> {
    serve_with(listener, app, shutdown, drain, ConnectionLimits::default()).await
}
