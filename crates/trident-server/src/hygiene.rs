//! HTTP-level request hygiene, ahead of every binding (issue 27): what makes a request
//! ambiguous to the server or to whatever sits between it and the client is refused before
//! anything reads it.
//!
//! - **`Host`** (RFC 9112 §3.2): an HTTP/1.1 request without one, any request with more than
//!   one, or one whose value is not `host[:port]` is 400. HTTP/1.0 predates `Host` and may
//!   omit it (hyper parses 1.0 requests, so they are served). Over HTTP/2 the authority is
//!   `:authority` and both may be absent (RFC 9113 §8.3.1); a `Host` that names another
//!   authority than `:authority` is refused, as that section recommends.
//! - **`Transfer-Encoding`** (RFC 9112 §6.1): `chunked` applied more than once (in one line,
//!   `chunked, chunked`, or in two) is 400, and a transfer coding other than `chunked` is 501.
//!   hyper decodes such a body as chunked once and only checks that `chunked` comes last, so a
//!   proxy reading the framing differently could smuggle a request past it. HTTP/2 forbids the
//!   header (h2 resets such a stream). Both refusals close the HTTP/1.1 connection: its
//!   framing is in doubt.
//! - **Credentials** (`Authorization`, and the headers the configured authenticator reads,
//!   [`Authenticator::credential_headers`](trident_core::Authenticator::credential_headers))
//!   sent more than once are 400: hyper keeps both, a lookup by name finds the first, and a
//!   proxy or an authenticator in front may have judged the other. Checked whether or not an
//!   authenticator is configured (a gateway forwards `Authorization` upstream).
//!
//! Refusals are in the binding's format: a gRPC status (`INVALID_ARGUMENT`) for
//! `application/grpc*`, as grpc-go answers header errors (HTTP 400 with the status in the
//! headers); a JSON-RPC error (`-32600`, id `null`: the body is not read) with HTTP 400 for a
//! `POST` to the JSON-RPC endpoint; else the HTTP+JSON AIP-193 body. They are not charged to the
//! caller's rate (like hyper's own 400s for requests it cannot parse); the framing refusals
//! close the connection, so a flood of them costs a connection each.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version, header};
use axum::response::Response;
use trident_core::{A2aError, ErrorKind};

use crate::admission::Wire;

/// What the hygiene layer checks.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    /// Headers that may appear at most once: `Authorization` and the authenticator's.
    pub(crate) single: Arc<[HeaderName]>,
}

impl Rules {
    /// `Authorization` plus `credential_headers` (lowercase names; invalid ones skipped).
    pub(crate) fn new(credential_headers: Vec<String>) -> Self {
        let mut single = vec![header::AUTHORIZATION];
        for name in credential_headers {
            if let Ok(name) = HeaderName::try_from(name.as_str())
                && !single.contains(&name)
            {
                single.push(name);
            }
        }
        Self {
            single: single.into(),
        }
    }
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// 400 or 501.
    pub(crate) status: StatusCode,
    /// What is wrong, for the client.
    pub(crate) message: String,
    /// The message framing is in doubt: close the HTTP/1.x connection after answering.
    pub(crate) close: bool,
}

impl Problem {
    fn bad(message: impl Into<String>, close: bool) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            close,
        }
    }
}

/// The layer (see the [module docs](self)), written by hand rather than with
/// `axum::middleware::from_fn`: a request that passes costs one header check and no
/// allocation of its own (`from_fn` boxed a future and cloned the route behind it, per
/// request).
#[derive(Clone, Debug)]
pub(crate) struct Layer {
    rules: Rules,
}

impl Layer {
    pub(crate) fn new(rules: Rules) -> Self {
        Self { rules }
    }
}

impl<S> tower::Layer<S> for Layer {
    type Service = Checked<S>;

    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            rules: self.rules.clone(),
        }
    }
}

/// A service behind [`Layer`]: refuses a request whose head is ambiguous, passes the others
/// to `inner` as they are.
#[derive(Clone, Debug)]
pub(crate) struct Checked<S> {
    inner: S,
    rules: Rules,
}

impl<S> tower::Service<axum::extract::Request> for Checked<S>
where
    S: tower::Service<axum::extract::Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        match problem(
            &self.rules,
            request.version(),
            request.uri(),
            request.headers(),
        ) {
            None => futures::future::Either::Right(self.inner.call(request)),
            Some(problem) => {
                tracing::debug!(path = %request.uri().path(), message = %problem.message, "request refused");
                futures::future::Either::Left(std::future::ready(Ok(refusal(&request, &problem))))
            }
        }
    }
}

/// What is wrong with a request's head, if anything.
pub(crate) fn problem(
    rules: &Rules,
    version: Version,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Option<Problem> {
    host_problem(version, uri, headers)
        .or_else(|| transfer_encoding_problem(headers))
        .or_else(|| {
            rules.single.iter().find_map(|name| {
                (headers.get_all(name).iter().count() > 1).then(|| {
                    Problem::bad(
                        format!("more than one {name} header: send the credential once"),
                        false,
                    )
                })
            })
        })
}

fn host_problem(version: Version, uri: &axum::http::Uri, headers: &HeaderMap) -> Option<Problem> {
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Some(Problem::bad("more than one Host header", true));
    }
    let Some(host) = host else {
        return (version == Version::HTTP_11)
            .then(|| Problem::bad("an HTTP/1.1 request must carry a Host header", true));
    };
    // Empty is allowed: a target URI without an authority (RFC 9110 §7.2).
    if host.is_empty() {
        return None;
    }
    let Some(authority) = host
        .to_str()
        .ok()
        .filter(|h| !h.contains('@'))
        .and_then(|h| h.parse::<axum::http::uri::Authority>().ok())
    else {
        let shown: String = String::from_utf8_lossy(host.as_bytes())
            .chars()
            .take(64)
            .collect();
        return Some(Problem::bad(
            format!("Host {shown:?} is not host[:port]"),
            true,
        ));
    };
    if version == Version::HTTP_2
        && let Some(target) = uri.authority()
    {
        let default_port = match uri.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        };
        let same = authority.host().eq_ignore_ascii_case(target.host())
            && authority.port_u16().or(default_port) == target.port_u16().or(default_port);
        if !same {
            return Some(Problem::bad(
                format!("Host {authority} names another authority than :authority {target}"),
                false,
            ));
        }
    }
    None
}

fn transfer_encoding_problem(headers: &HeaderMap) -> Option<Problem> {
    let mut chunked = 0;
    for line in headers.get_all(header::TRANSFER_ENCODING) {
        let Ok(line) = line.to_str() else {
            return Some(Problem::bad("Transfer-Encoding is not ASCII", true));
        };
        for coding in line.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            // A coding may carry parameters (`gzip;q=1` is not one, but `x;a=b` is legal).
            let name = coding.split(';').next().unwrap_or_default().trim();
            if name.eq_ignore_ascii_case("chunked") {
                chunked += 1;
            } else {
                return Some(Problem {
                    status: StatusCode::NOT_IMPLEMENTED,
                    message: format!(
                        "transfer coding {name:?} is not implemented: send the body chunked \
                         or with Content-Length"
                    ),
                    close: true,
                });
            }
        }
    }
    (chunked > 1).then(|| {
        Problem::bad(
            "Transfer-Encoding applies chunked more than once (RFC 9112 §6.1)",
            true,
        )
    })
}

/// `problem` as the answer to `request`, in its binding's format.
fn refusal(request: &axum::extract::Request, problem: &Problem) -> Response {
    let error = A2aError::new(ErrorKind::InvalidRequest, problem.message.clone());
    let mut response = match Wire::of_request(request) {
        Wire::Rest => trident_rest::refusal_response(problem.status, &error),
        wire => {
            let mut response = wire.answer(&error, b"");
            *response.status_mut() = problem.status;
            response
        }
    };
    if problem.close && request.version() < Version::HTTP_2 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

#[cfg(test)]
mod tests;
