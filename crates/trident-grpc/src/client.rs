//! [`GrpcClient`]: [`A2aService`] over a tonic channel to a remote A2A agent.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use tonic::Request;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, A2aService, CallContext, ErrorKind, EventStream, StreamEvent};
use trident_proto as pb;
use trident_proto::a2a_service_client::A2aServiceClient;

use crate::{GrpcOptions, error, metadata};

/// An A2A client speaking gRPC. Cheap to clone (the HTTP/2 connection is shared).
///
/// Every call sends `a2a-version: 1.0`, `a2a-extensions` from [`CallContext::extensions`],
/// `last-event-id` from [`CallContext::last_event_id`] and `grpc-timeout` from
/// [`CallContext::deadline`]. A call ends with `DeadlineExceeded` when the deadline passes, a
/// stream with a last `DeadlineExceeded` item; when [`CallContext::cancelled`] fires the RPC is
/// dropped (the server sees it cancelled) and a stream simply ends. Stream events are numbered from the `trident-first-seq` response
/// header (gRPC messages carry no id); without it they have no sequence number.
#[derive(Debug, Clone)]
pub struct GrpcClient {
    inner: A2aServiceClient<Channel>,
    tenant: String,
    headers: Arc<http::HeaderMap>,
}

impl GrpcClient {
    /// Connects to `target` with default [`GrpcOptions`]. `target` is `host:port` (how agent
    /// cards write gRPC URLs) or `http://host:port`, over plain HTTP/2, or `https://host:port`,
    /// over TLS ([`GrpcOptions::tls`]; with the `tls` feature, on by default). A target that
    /// cannot be reached is `Unavailable`.
    pub async fn connect(target: &str) -> Result<Self, A2aError> {
        Self::connect_with(target, &GrpcOptions::default()).await
    }

    /// [`connect`](Self::connect) with explicit options.
    pub async fn connect_with(target: &str, opts: &GrpcOptions) -> Result<Self, A2aError> {
        let channel = endpoint(target, opts)?
            .connect()
            .await
            .map_err(|e| A2aError::caused_by(format!("cannot connect to {target}"), e, false))?;
        Ok(Self::from_channel(channel, opts))
    }

    /// A client that connects on its first call (and reconnects after failures).
    pub fn connect_lazy(target: &str, opts: &GrpcOptions) -> Result<Self, A2aError> {
        Ok(Self::from_channel(
            endpoint(target, opts)?.connect_lazy(),
            opts,
        ))
    }

    /// A client over an existing channel (custom TLS, load balancing, ...).
    pub fn from_channel(channel: Channel, opts: &GrpcOptions) -> Self {
        Self {
            inner: A2aServiceClient::new(channel)
                .max_encoding_message_size(opts.max_request_size)
                .max_decoding_message_size(opts.max_response_size),
            tenant: String::new(),
            headers: Arc::default(),
        }
    }

    /// Sends `headers` (authentication, an API key, ...) as metadata with every call, except
    /// those the call sets itself from its [`CallContext`] (a call's own credentials win). A
    /// header that cannot travel as ASCII metadata fails each call with `InvalidParams`.
    pub fn with_headers(mut self, headers: http::HeaderMap) -> Self {
        self.headers = Arc::new(headers);
        self
    }

    /// Sends `tenant` (the interface's) in every request that names none.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// The tenant a request naming `given` is sent with (gRPC has no other place for it):
    /// `given`, else `cx.tenant`, else this client's interface's.
    fn tenant(&self, cx: &CallContext, given: &str) -> Result<String, A2aError> {
        Ok(cx.resolve_tenant(given, &self.tenant)?.to_owned())
    }

    /// The generated client, for calls outside [`A2aService`].
    pub fn raw(&self) -> A2aServiceClient<Channel> {
        self.inner.clone()
    }

    fn client(&self) -> A2aServiceClient<Channel> {
        self.inner.clone()
    }
}

/// `host:port`, `http://host:port` → a plain HTTP/2 endpoint, `https://host:port` → a TLS one
/// (with the `tls` feature); everything else is refused up front.
pub(crate) fn endpoint(target: &str, opts: &GrpcOptions) -> Result<Endpoint, A2aError> {
    let target = target.trim();
    let bad = |why: String| {
        A2aError::new(
            ErrorKind::InvalidParams,
            format!("invalid gRPC target {target:?}: {why}"),
        )
        .with_violation("target", why)
    };
    let uri = match target.split_once("://") {
        None => format!("http://{target}"),
        Some(("http", _)) => target.to_owned(),
        #[cfg(feature = "tls")]
        Some(("https", _)) => {
            let endpoint = Endpoint::from_shared(target.to_owned())
                .map_err(|e| bad(trident_core::error_chain(&e)))?;
            return endpoint
                .tls_config(tls_config(&opts.tls))
                .map(|e| e.connect_timeout(opts.connect_timeout))
                .map_err(|e| bad(trident_core::error_chain(&e)));
        }
        #[cfg(not(feature = "tls"))]
        Some(("https", _)) => {
            return Err(bad(
                "https needs TLS, which this build of trident-grpc does not include (feature \
                 `tls`)"
                    .to_owned(),
            ));
        }
        Some((scheme, _)) => return Err(bad(format!("unsupported scheme {scheme}"))),
    };
    Endpoint::from_shared(uri)
        .map(|e| e.connect_timeout(opts.connect_timeout))
        .map_err(|e| bad(trident_core::error_chain(&e)))
}

/// tonic's TLS settings for `tls`: the system's roots (unless `ca_only`) and `tls`'s own, ALPN `h2`, and the
/// client certificate when one is given. HTTP/2 is assumed when the server's TLS answers no
/// ALPN (a TLS front that forwards to a plain HTTP/2 server, such as `socat` or `stunnel`).
#[cfg(feature = "tls")]
fn tls_config(tls: &crate::GrpcTls) -> tonic::transport::ClientTlsConfig {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let mut config = ClientTlsConfig::new().assume_http2(true);
    if !tls.ca_only {
        config = config.with_native_roots();
    }
    if let Some(pem) = &tls.ca_pem {
        config = config.ca_certificate(Certificate::from_pem(pem));
    }
    if let Some((cert, key)) = &tls.identity {
        config = config.identity(Identity::from_pem(cert, key));
    }
    config
}

/// Wraps `msg` with the service parameters of `cx` (`grpc-timeout` among them), then the
/// client's `defaults` headers the call does not set itself (a call's own credentials win).
/// A header that cannot travel as ASCII metadata is `InvalidParams`.
pub(crate) fn request<T>(
    cx: &CallContext,
    msg: T,
    defaults: &http::HeaderMap,
) -> Result<Request<T>, A2aError> {
    let mut req = Request::new(msg);
    let md = req.metadata_mut();
    for (name, value) in cx.outgoing_service_params() {
        let value = MetadataValue::try_from(value.as_str()).map_err(|_| {
            A2aError::invalid_field(name, "must be visible ASCII to travel as gRPC metadata")
        })?;
        md.insert(name, value);
    }
    for (name, value) in defaults {
        if md.contains_key(name.as_str()) {
            continue;
        }
        let key = tonic::metadata::AsciiMetadataKey::from_bytes(name.as_str().as_bytes());
        let value = MetadataValue::try_from(value.as_bytes());
        let (Ok(key), Ok(value)) = (key, value) else {
            return Err(A2aError::invalid_field(
                name.as_str(),
                "must be visible ASCII to travel as gRPC metadata",
            ));
        };
        md.insert(key, value);
    }
    Ok(req)
}

/// Runs one unary call, decoding its status, within the caller's deadline and until it goes
/// away.
async fn call<T>(
    cx: &CallContext,
    fut: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, A2aError> {
    let fut = async {
        fut.await
            .map(tonic::Response::into_inner)
            .map_err(|s| error(&s))
    };
    bounded(cx, "gRPC call", fut).await
}

/// Turns a server-streaming response into events; the first `Err` ends the stream, and so do
/// the caller's cancellation and deadline (with a last `DeadlineExceeded` item).
async fn stream(
    cx: &CallContext,
    fut: impl Future<
        Output = Result<tonic::Response<tonic::Streaming<pb::StreamResponse>>, tonic::Status>,
    >,
) -> Result<EventStream, A2aError> {
    let response = bounded(cx, "gRPC stream", async {
        fut.await.map_err(|s| error(&s))
    })
    .await?;
    let first_seq: Option<u64> = response
        .metadata()
        .get(metadata::FIRST_SEQ)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let mut next_seq = first_seq;
    let messages = response.into_inner();
    let events = messages
        .scan(false, move |failed, item| {
            if *failed {
                return futures::future::ready(None);
            }
            *failed = item.is_err();
            futures::future::ready(Some(
                item.map(|msg| {
                    let seq = next_seq;
                    next_seq = next_seq.map(|s| s + 1);
                    StreamEvent {
                        seq,
                        response: Arc::new(msg),
                    }
                })
                .map_err(|s| error(&s)),
            ))
        })
        .boxed();
    Ok(bounded_stream(cx, "gRPC stream", events))
}

/// The call of tonic's generated client method `$call` (its future) by kind.
macro_rules! grpc_call {
    (unary, $cx:expr, $call:expr) => {
        call($cx, $call).await
    };
    (stream, $cx:expr, $call:expr) => {
        stream($cx, $call).await
    };
    (empty, $cx:expr, $call:expr) => {
        call($cx, $call).await.map(|_: pbjson_types::Empty| ())
    };
}

/// Every RPC is one call of the generated client's method of the same name, its request's
/// `tenant` filled in.
macro_rules! grpc_client {
    ($({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident })*) => {
        #[async_trait::async_trait]
        impl A2aService for GrpcClient {
            $(
                async fn $method(
                    &self,
                    cx: &CallContext,
                    mut req: pb::$req,
                ) -> Result<trident_core::reply_type!($kind, pb::$resp), A2aError> {
                    req.tenant = self.tenant(cx, &req.tenant)?;
                    let req = request(cx, req, &self.headers)?;
                    grpc_call!($kind, cx, self.client().$method(req))
                }
            )*
        }
    };
}

trident_proto::for_each_rpc!(grpc_client);
