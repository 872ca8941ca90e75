//! The server side: [`GrpcServer`] adapts `Arc<dyn A2aService>` to the generated tonic trait,
//! and [`routes`] mounts it with health and reflection as an [`axum::Router`].
//!
//! Each method is decode → one [`A2aService`] call → encode; there are no business rules here.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::IntoResponse;
use futures::{FutureExt, StreamExt, stream::BoxStream};
use tonic::server::NamedService;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;
use trident_core::{A2aError, A2aService, EventStream};
use trident_proto as pb;
use trident_proto::a2a_service_server::{A2aService as GrpcService, A2aServiceServer};

use crate::{GrpcOptions, Hygiene, Web, metadata, split, status};

/// The A2A service as a tonic service: every RPC is forwarded to the wrapped [`A2aService`].
///
/// [`routes`] is the usual way to serve it; `GrpcServer::new(svc).into_service(&opts)` gives the
/// bare tonic service for `tonic::transport::Server` or a custom router.
#[derive(Clone)]
pub struct GrpcServer {
    svc: Arc<dyn A2aService>,
}

impl std::fmt::Debug for GrpcServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcServer").finish_non_exhaustive()
    }
}

impl GrpcServer {
    /// An adapter over `svc`.
    pub fn new(svc: Arc<dyn A2aService>) -> Self {
        Self { svc }
    }

    /// The tonic service, with the message-size limits of `opts`. This is tonic's own request
    /// handling; [`routes`] puts it behind [`Hygiene`] (`Hygiene::a2a(service, max)`), which
    /// a custom router should do too.
    pub fn into_service(self, opts: &GrpcOptions) -> A2aServiceServer<Self> {
        A2aServiceServer::new(self)
            .max_decoding_message_size(opts.max_request_size)
            .max_encoding_message_size(opts.max_response_size)
    }
}

/// The gRPC routes with default [`GrpcOptions`]: `lf.a2a.v1.A2AService` over `svc`,
/// `grpc.health.v1.Health` (SERVING for `""` and the A2A service) and server reflection.
///
/// The router has no fallback, so it merges into any other axum router (with or without one).
/// Serve it with `axum::serve` (axum's `http2` feature gives h2c with prior knowledge).
pub fn routes(svc: Arc<dyn A2aService>) -> axum::Router {
    routes_with(svc, &GrpcOptions::default()).0
}

/// [`routes`] with explicit options; also returns the health reporter, e.g. to report
/// NOT_SERVING while shutting down.
pub fn routes_with(svc: Arc<dyn A2aService>, opts: &GrpcOptions) -> (axum::Router, HealthReporter) {
    let (reporter, health) = tonic_health::server::health_reporter();
    let mut router = axum::Router::new();
    let max = opts.max_request_size;
    let web = opts.web;
    let svc_v03 = svc.clone();
    if opts.v1 {
        // The reporter's lock is fresh and uncontended, so this completes on its first poll;
        // `unconstrained` keeps tokio's cooperative budget from making it wait.
        let set = tokio::task::unconstrained(
            reporter.set_service_status(pb::SERVICE_NAME, ServingStatus::Serving),
        );
        if set.now_or_never().is_none() {
            tracing::warn!("could not mark {} as SERVING", pb::SERVICE_NAME);
        }
        router = mount(
            router,
            Hygiene::a2a(GrpcServer::new(svc).into_service(opts), max),
            web,
        );
    }
    if opts.v03 {
        router = mount(
            router,
            Hygiene::unary(crate::v03::V03Server::new(svc_v03).into_service(opts), max),
            web,
        );
        let set = tokio::task::unconstrained(
            reporter.set_service_status(pb::v03::SERVICE_NAME, ServingStatus::Serving),
        );
        if set.now_or_never().is_none() {
            tracing::warn!("could not mark {} as SERVING", pb::v03::SERVICE_NAME);
        }
    }
    // A generation turned off answers its gRPC calls UNIMPLEMENTED saying so, not with the
    // HTTP+JSON fallback's 404 (which a gRPC client reads as a broken response).
    for (on, service, speaks) in [
        (
            opts.v1,
            pb::SERVICE_NAME,
            "A2A v0.3 only (a2a.v1.A2AService)",
        ),
        (
            opts.v03,
            pb::v03::SERVICE_NAME,
            "A2A 1.0 only (lf.a2a.v1.A2AService)",
        ),
    ] {
        if !on {
            let message = format!("{service} is not served: this agent speaks {speaks}");
            router = router.route(
                &format!("/{service}/{{*rest}}"),
                axum::routing::any(move || {
                    let e = trident_core::A2aError::new(
                        trident_core::ErrorKind::MethodNotFound,
                        message.clone(),
                    );
                    async move { crate::status(&e).into_http::<axum::body::Body>() }
                }),
            );
        }
    }
    router = mount(router, Hygiene::unary(health, max), web);
    if opts.reflection {
        let builder = || {
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        };
        match builder().build_v1() {
            Ok(v1) => router = mount(router, Hygiene::streaming(v1, max), web),
            Err(e) => tracing::warn!("gRPC reflection v1 disabled: {e}"),
        }
        match builder().build_v1alpha() {
            Ok(v1alpha) => router = mount(router, Hygiene::streaming(v1alpha, max), web),
            Err(e) => tracing::warn!("gRPC reflection v1alpha disabled: {e}"),
        }
    }
    (router, reporter)
}

/// Routes `/{S::NAME}/*` to `svc`, like `tonic::service::Routes::add_service` but without
/// the catch-all fallback `Routes` installs (axum cannot merge two routers with fallbacks, and a
/// gRPC UNIMPLEMENTED answer would be wrong for the HTTP+JSON routes sharing the listener).
/// Unknown methods of a mounted service still get UNIMPLEMENTED from the service itself.
///
/// With `web`, the service answers gRPC-Web too ([`Web`]).
fn mount<S>(router: axum::Router, svc: S, web: bool) -> axum::Router
where
    S: tonic::codegen::Service<
            axum::http::Request<axum::body::Body>,
            Error = Infallible,
            Response: IntoResponse,
            Future: Send + 'static,
        > + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
{
    let path = format!("/{}/{{*rest}}", S::NAME);
    if web {
        router.route_service(&path, Web::new(svc))
    } else {
        router.route_service(&path, svc)
    }
}

fn unary<T>(r: Result<T, A2aError>) -> Result<Response<T>, Status> {
    r.map(Response::new).map_err(|e| status(&e))
}

/// A stream of A2A events as gRPC messages; an `Err` item becomes the RPC's final status.
type GrpcStream = BoxStream<'static, Result<pb::StreamResponse, Status>>;

/// gRPC messages carry no id, so the sequence number of a stream's first event travels in the
/// response header `trident-first-seq`; the following events are numbered consecutively. (A
/// stream holding a direct message has no sequence numbers and no header.) Waiting for the first
/// event before answering also turns an error known by then into the RPC status.
async fn streaming(r: Result<EventStream, A2aError>) -> Result<Response<GrpcStream>, Status> {
    let mut events = r.map_err(|e| status(&e))?;
    let first = match events.next().await {
        Some(Ok(ev)) => Some(ev),
        Some(Err(e)) => return Err(status(&e)),
        None => None,
    };
    let first_seq = first.as_ref().and_then(|ev| ev.seq);
    let messages = futures::stream::iter(first.map(Ok))
        .chain(events)
        .map(|item| {
            item.map(|ev| Arc::unwrap_or_clone(ev.response))
                .map_err(|e| status(&e))
        })
        .boxed();
    let mut response = Response::new(messages);
    if let Some(seq) = first_seq {
        response
            .metadata_mut()
            .insert(metadata::FIRST_SEQ, seq.into());
    }
    Ok(response)
}

/// tonic's generated `A2aService` trait, one method per RPC of the list: split the request,
/// call the service, map the answer by the RPC's kind.
macro_rules! grpc_server {
    ($({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident, $stream:ident })*) => {
        #[async_trait::async_trait]
        impl GrpcService for GrpcServer {
            $(
                by_kind!(stream_type $kind, $stream, GrpcStream);

                async fn $method(
                    &self,
                    req: Request<pb::$req>,
                ) -> Result<Response<by_kind!(reply $kind, pb::$resp, GrpcStream)>, Status> {
                    let (cx, req) = split(req)?;
                    by_kind!(answer $kind, self.svc.$method(&cx, req).await)
                }
            )*
        }
    };
}

trident_proto::for_each_grpc_rpc!(grpc_server);
