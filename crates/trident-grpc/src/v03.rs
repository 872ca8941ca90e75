//! The A2A v0.3 gRPC service, `a2a.v1.A2AService`, beside `lf.a2a.v1.A2AService` on the same
//! port. Each RPC: the v0.3 message → `trident-v03`'s translation → the one [`A2aService`]
//! call → translated back. `A2A-Version` (metadata) must be absent or 0.3. Errors are the 1.0
//! table's gRPC statuses (v0.3 used the same codes).

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use tonic::{Request, Response, Status};
use trident_core::{A2aError, A2aService, CallContext};
use trident_proto::v03;
use trident_proto::v03::a2a_service_server::{A2aService as GrpcService, A2aServiceServer};
use trident_v03::{ToV03, TryToV1};

use crate::{GrpcOptions, status};

/// `a2a.v1.A2AService` over an [`A2aService`].
#[derive(Clone)]
pub struct V03Server {
    svc: Arc<dyn A2aService>,
}

impl std::fmt::Debug for V03Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("V03Server").finish_non_exhaustive()
    }
}

impl V03Server {
    /// An adapter over `svc`.
    pub fn new(svc: Arc<dyn A2aService>) -> Self {
        Self { svc }
    }

    /// The tonic service, with the message-size limits of `opts`.
    pub fn into_service(self, opts: &GrpcOptions) -> A2aServiceServer<Self> {
        A2aServiceServer::new(self)
            .max_decoding_message_size(opts.max_request_size)
            .max_encoding_message_size(opts.max_response_size)
    }
}

/// The call context of a v0.3 request, admitted as v0.3 (see
/// [`trident_v03::version::admit_v03`]), and its message.
fn split<T>(req: Request<T>, what: &str) -> Result<(CallContext, T), Status> {
    let (mut cx, message) = crate::split(req)?;
    trident_v03::version::admit_v03(&mut cx, what).map_err(|e| status(&e))?;
    Ok((cx, message))
}

fn unary<T: ToV03>(r: Result<T, A2aError>) -> Result<Response<T::Out>, Status> {
    r.map(|v| Response::new(v.to_v03())).map_err(|e| status(&e))
}

type V03Stream = BoxStream<'static, Result<v03::StreamResponse, Status>>;

async fn streaming(
    r: Result<trident_core::EventStream, A2aError>,
) -> Result<Response<V03Stream>, Status> {
    let mut events = r.map_err(|e| status(&e))?;
    // The first event is awaited so an error known by then is the RPC's status.
    let first = match events.next().await {
        Some(Ok(ev)) => Some(ev),
        Some(Err(e)) => return Err(status(&e)),
        None => None,
    };
    let messages = futures::stream::iter(first.map(Ok))
        .chain(events)
        .map(|item| {
            item.map(|ev| Arc::unwrap_or_clone(ev.response).to_v03())
                .map_err(|e| status(&e))
        })
        .boxed();
    Ok(Response::new(messages))
}

fn bad(e: A2aError) -> Status {
    status(&e)
}

/// The 1.0 call a v0.3 RPC is: the [`A2aService`] method of the same name, but for the RPCs
/// v0.3 names differently and its configuration list, which has no pages (every configuration,
/// gathered in trident-v03).
macro_rules! v1_call {
    (TaskSubscription, $method:ident, $svc:expr, $cx:expr, $req:expr) => {
        $svc.subscribe_to_task($cx, $req).await
    };
    (GetAgentCard, $method:ident, $svc:expr, $cx:expr, $req:expr) => {
        $svc.get_extended_agent_card($cx, $req).await
    };
    (ListTaskPushNotificationConfig, $method:ident, $svc:expr, $cx:expr, $req:expr) => {
        trident_v03::call::list_push_configs($svc.as_ref(), $cx, $req).await
    };
    ($rpc:ident, $method:ident, $svc:expr, $cx:expr, $req:expr) => {
        $svc.$method($cx, $req).await
    };
}

/// tonic's generated v0.3 `A2aService` trait, one method per RPC of v0.3's list: admit the
/// request as v0.3, translate it, make the 1.0 call, translate the answer back.
macro_rules! v03_server {
    ($({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident, $stream:ident })*) => {
        #[async_trait::async_trait]
        impl GrpcService for V03Server {
            $(
                by_kind!(stream_type $kind, $stream, V03Stream);

                async fn $method(
                    &self,
                    req: Request<v03::$req>,
                ) -> Result<Response<by_kind!(reply $kind, v03::$resp, V03Stream)>, Status> {
                    let (cx, req) = split(req, stringify!($op))?;
                    let req = req.try_to_v1().map_err(bad)?;
                    by_kind!(answer $kind, v1_call!($op, $method, self.svc, &cx, req))
                }
            )*
        }
    };
}

trident_proto::for_each_v03_rpc!(v03_server);
