//! CORS, so that a web page of another origin can call the agent from a browser: [`Cors`].
//!
//! Off unless origins are configured; then the one layer answers preflights (`OPTIONS` with
//! `Access-Control-Request-Method`) from allowed origins itself, before authentication (a
//! preflight carries no credentials), and adds `Access-Control-Allow-Origin` and
//! `Access-Control-Expose-Headers` to every answer to an allowed origin, on every binding,
//! gRPC-Web and the card included. Cookies and other browser-held credentials are never
//! allowed (`Access-Control-Allow-Credentials` is never sent): A2A callers authenticate with
//! headers the page sets (`Authorization`, an API key header), which a preflight allows.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// How long a browser may cache a preflight's answer by default (`Access-Control-Max-Age`).
pub const DEFAULT_CORS_MAX_AGE: Duration = Duration::from_secs(600);

/// The methods the bindings use: JSON-RPC and gRPC-Web POST, HTTP+JSON GET, POST and DELETE.
const ALLOW_METHODS: HeaderValue = HeaderValue::from_static("GET, POST, DELETE");

/// The response headers a browser client reads besides the CORS-safelisted ones: the A2A
/// service parameters, gRPC-Web's status in trailers-only answers, the first sequence number of
/// a gRPC stream, and what a refusal says (`Retry-After`, `WWW-Authenticate`).
const EXPOSE_HEADERS: HeaderValue = HeaderValue::from_static(
    "a2a-version, a2a-extensions, grpc-status, grpc-message, grpc-status-details-bin, \
     trident-first-seq, retry-after, www-authenticate",
);

/// What a preflight's answer depends on.
const PREFLIGHT_VARY: HeaderValue = HeaderValue::from_static(
    "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
);

/// Which web origins may call the agent from a browser, and how long a preflight's answer is
/// cached. No CORS at all unless some origin is configured ([`ServerOptions::cors`]).
///
/// [`ServerOptions::cors`]: crate::ServerOptions::cors
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cors {
    /// `*` was configured: every origin.
    any: bool,
    /// The allowed origins, lower-case, without a trailing `/`.
    origins: Vec<String>,
    /// `Access-Control-Max-Age` of a preflight's answer.
    max_age: Duration,
}

/// A configured CORS origin that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorsError {
    /// Not `*` and not `scheme://host[:port]`.
    #[error(
        "CORS origin {0:?} is not an origin: give `*` or scheme://host[:port] (such as \
         https://app.example.com), with no path"
    )]
    Origin(String),
    /// No origin at all: leave CORS off instead.
    #[error("no CORS origin given")]
    Empty,
}

impl Cors {
    /// CORS for `origins`: each `*` (any origin) or `scheme://host[:port]` as a browser sends
    /// it in `Origin` (compared without regard to case; a trailing `/` is ignored).
    pub fn new<I>(origins: I) -> Result<Self, CorsError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut any = false;
        let mut list = Vec::new();
        for origin in origins {
            let origin = origin.as_ref().trim();
            if origin == "*" {
                any = true;
                continue;
            }
            let normal = origin.trim_end_matches('/').to_ascii_lowercase();
            if !is_origin(&normal) {
                return Err(CorsError::Origin(origin.to_owned()));
            }
            if !list.contains(&normal) {
                list.push(normal);
            }
        }
        if !any && list.is_empty() {
            return Err(CorsError::Empty);
        }
        Ok(Self {
            any,
            origins: list,
            max_age: DEFAULT_CORS_MAX_AGE,
        })
    }

    /// With preflight answers cached for `max_age` (whole seconds; default
    /// [`DEFAULT_CORS_MAX_AGE`]).
    #[must_use]
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// `Access-Control-Allow-Origin` for a request from `origin`, when it is allowed.
    fn allow(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let origin = origin?;
        if self.any {
            return Some(HeaderValue::from_static("*"));
        }
        let sent = origin.as_bytes();
        let sent = sent.strip_suffix(b"/").unwrap_or(sent);
        self.origins
            .iter()
            .any(|o| o.as_bytes().eq_ignore_ascii_case(sent))
            .then(|| origin.clone())
    }
}

/// Whether `s` (lower-case) is `scheme://host[:port]`: a scheme of letters, digits, `+`, `-`
/// and `.`, a host of visible ASCII without `/`, `?`, `#`, `@`, and an optional port.
fn is_origin(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = match rest.rsplit_once(':') {
        // An IPv6 literal's last `:` is inside its brackets.
        Some((host, port)) if !port.contains(']') => {
            if port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) {
                return false;
            }
            host
        }
        _ => rest,
    };
    scheme_ok
        && !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '/' | '?' | '#' | '@'))
}

/// The answer to an allowed origin's preflight: the methods, the request headers it asked for
/// (the bindings read `Content-Type`, `Authorization`, `A2A-Version`, `A2A-Extensions`, an API
/// key header of the card's security schemes, gRPC-Web's `X-Grpc-Web`, `X-User-Agent` and
/// `grpc-timeout`: whatever the page sends, the agent judges itself), the cache time.
fn preflight(cors: &Cors, allow_origin: HeaderValue, request: &HeaderMap) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow_origin);
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, ALLOW_METHODS);
    if let Some(asked) = request.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
    }
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from(cors.max_age.as_secs()),
    );
    headers.insert(header::VARY, PREFLIGHT_VARY);
    response
}

/// The layer: answers an allowed origin's preflight, and marks every answer to an allowed
/// origin as readable by it. A preflight from another origin goes on to the routes like any
/// request (no CORS header: the browser refuses the call).
pub(crate) async fn layer(
    State(cors): State<Arc<Cors>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let allowed = cors.allow(request.headers().get(header::ORIGIN));
    if request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        && let Some(allow_origin) = allowed
    {
        return preflight(&cors, allow_origin, request.headers());
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if !cors.any {
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    if let Some(allow_origin) = allowed {
        // Replaces the card's own `*`: one value only.
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow_origin);
        headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSE_HEADERS);
    }
    response
}

#[cfg(test)]
mod tests;
