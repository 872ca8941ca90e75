//! gRPC-Web in front of a gRPC service: [`Web`].
//!
//! Browsers cannot speak gRPC (they give no access to HTTP/2 trailers), so gRPC-Web carries
//! the same length-prefixed messages in an HTTP/1.1 or HTTP/2 body, with the trailers encoded
//! as a last frame of the body (`application/grpc-web`, `+proto`) or all of it in base64
//! (`application/grpc-web-text`, `+proto`). tonic-web translates such a call into an
//! ordinary gRPC call and its answer back; [`Web`] sends only those calls through it, so a
//! plain gRPC call pays one comparison of its `content-type`.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::response::IntoResponse;
use futures::FutureExt;
use futures::future::{BoxFuture, Either, Map};
use http::{HeaderMap, Request, Response, header};
use tonic::server::NamedService;
use tower::{Layer, ServiceExt};

/// The `content-type`s of a gRPC-Web call, exactly as tonic-web recognises them.
const CONTENT_TYPES: [&[u8]; 4] = [
    b"application/grpc-web",
    b"application/grpc-web+proto",
    b"application/grpc-web-text",
    b"application/grpc-web-text+proto",
];

/// Whether `headers` name a gRPC-Web call (one of the four gRPC-Web `content-type`s).
pub fn is_grpc_web(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|ct| CONTENT_TYPES.contains(&ct.as_bytes()))
}

/// Marks a request that arrived as gRPC-Web (an extension of the translated request): its
/// status travels in the body, so [`Hygiene`](crate::Hygiene) serves it over HTTP/1.1 too.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WebCall;

/// A gRPC service (such as [`Hygiene`](crate::Hygiene) over a tonic server) that also
/// answers gRPC-Web: a request with a gRPC-Web `content-type` goes through tonic-web's
/// translation (its messages, and its status as a trailers frame in the body), any other
/// request to the service itself, untouched.
///
/// It holds the service alone (axum clones a route's service for each request, so a plain
/// call costs what it did without `Web`); the translation wraps a clone of it per gRPC-Web
/// call.
#[derive(Debug, Clone)]
pub struct Web<S> {
    inner: S,
}

impl<S> Web<S> {
    /// `inner`, answering gRPC-Web as well.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: NamedService> NamedService for Web<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<Request<axum::body::Body>> for Web<S>
where
    S: tower::Service<Request<axum::body::Body>, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    type Response = axum::response::Response;
    type Error = Infallible;
    /// A plain call's future is the service's own, its answer converted (no allocation).
    type Future = Either<
        Map<S::Future, fn(Result<S::Response, Infallible>) -> Result<Self::Response, Infallible>>,
        BoxFuture<'static, Result<Self::Response, Infallible>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<axum::body::Body>) -> Self::Future {
        if !is_grpc_web(request.headers()) {
            return Either::Left(
                self.inner
                    .call(request)
                    .map(into_axum::<S::Response> as fn(_) -> _),
            );
        }
        request.extensions_mut().insert(WebCall);
        // The translation over a clone of its own, made ready before it is called.
        let web = tonic_web::GrpcWebLayer::new().layer(Tonic(self.inner.clone()));
        let call = web.oneshot(request);
        Either::Right(
            async move {
                match call.await {
                    Ok(response) => Ok(response.map(axum::body::Body::new)),
                    Err(never) => match never {},
                }
            }
            .boxed(),
        )
    }
}

fn into_axum<R: IntoResponse>(
    answer: Result<R, Infallible>,
) -> Result<axum::response::Response, Infallible> {
    match answer {
        Ok(response) => Ok(response.into_response()),
        Err(never) => match never {},
    }
}

/// `S` with tonic's body types on both sides, as tonic-web's service wants its inner one.
#[derive(Debug, Clone)]
pub struct Tonic<S>(S);

impl<S> tower::Service<Request<tonic::body::Body>> for Tonic<S>
where
    S: tower::Service<Request<axum::body::Body>, Error = Infallible>,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    type Response = Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        let call = self.0.call(request.map(axum::body::Body::new));
        async move {
            match call.await {
                Ok(response) => Ok(response.into_response().map(tonic::body::Body::new)),
                Err(never) => match never {},
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests;
