//! [`GrpcClient`]: [`A2aService`] over a tonic channel to a remote A2A agent.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use tonic::Request;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, Operation, StreamEvent,
};
use trident_http::WireTap;
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
    tap: Option<WireTap>,
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
            tap: None,
        }
    }

    /// Shows every call to `tap` (`None`, the default: nothing is formatted): its path and
    /// metadata as sent, the response's metadata, each message of a stream, and the status it
    /// ends with, credentials redacted.
    pub fn with_wire_tap(mut self, tap: Option<WireTap>) -> Self {
        self.tap = tap;
        self
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

/// What a call shows a [`WireTap`]: `GRPC → POST /lf.a2a.v1.A2AService/GetTask` and the
/// metadata sent, then the response's metadata, the messages of a stream and the status.
pub(crate) struct Tapped {
    tap: WireTap,
    out: String,
    inn: String,
    path: String,
}

impl Tapped {
    /// The tap of a call of `method` of the gRPC service `service`.
    pub(crate) fn new(tap: &WireTap, service: &str, method: &str) -> Self {
        Self {
            tap: tap.clone(),
            out: "GRPC → ".to_owned(),
            inn: "GRPC ← ".to_owned(),
            path: format!("/{service}/{method}"),
        }
    }

    fn metadata(&self, prefix: &str, md: &tonic::metadata::MetadataMap) {
        for (name, value) in md.clone().into_headers().iter() {
            self.tap.lines(
                prefix,
                &self
                    .tap
                    .header(name.as_str(), value.as_bytes(), value.is_sensitive()),
            );
        }
    }

    /// The request line and metadata of `req`.
    pub(crate) fn request<T>(&self, req: &Request<T>) {
        self.tap
            .lines(&self.out, &format!("POST {} (HTTP/2)", self.path));
        self.tap
            .lines(&self.out, &format!("message {}", short_type_name::<T>()));
        self.metadata(&self.out, req.metadata());
    }

    /// The response's metadata (its headers).
    pub(crate) fn head(&self, md: &tonic::metadata::MetadataMap) {
        self.tap
            .lines(&self.inn, &format!("response to {}", self.path));
        self.metadata(&self.inn, md);
    }

    /// Message `n` (from 1) of a response, of type `T`.
    pub(crate) fn message<T>(&self, n: u64) {
        self.tap.lines(
            &self.inn,
            &format!("message {n} {}", short_type_name::<T>()),
        );
    }

    /// How a unary call ended: the response's metadata, its one message and OK; or the
    /// status it failed with.
    pub(crate) fn unary<T>(&self, result: &Result<tonic::Response<T>, tonic::Status>) {
        match result {
            Ok(response) => {
                self.head(response.metadata());
                self.message::<T>(1);
                self.ok();
            }
            Err(s) => self.status(s),
        }
    }

    /// How a stream opened: the response's metadata, or the status it was refused with.
    pub(crate) fn opened<T>(&self, result: &Result<tonic::Response<T>, tonic::Status>) {
        match result {
            Ok(response) => self.head(response.metadata()),
            Err(s) => self.status(s),
        }
    }

    /// The status a call ended with: `grpc-status: 0 (OK)`.
    pub(crate) fn ok(&self) {
        self.tap.lines(&self.inn, "grpc-status: 0 (OK)");
    }

    /// The status a call failed with: its code, message and metadata (trailers).
    pub(crate) fn status(&self, s: &tonic::Status) {
        self.tap.lines(
            &self.inn,
            &format!("grpc-status: {} ({:?})", s.code() as i32, s.code()),
        );
        self.tap
            .lines(&self.inn, &format!("grpc-message: {}", s.message()));
        if !s.details().is_empty() {
            self.tap.lines(
                &self.inn,
                &format!("grpc-status-details-bin: {} bytes", s.details().len()),
            );
        }
        self.metadata(&self.inn, s.metadata());
    }
}

/// `SendMessageRequest` for `trident_proto::lf::a2a::v1::SendMessageRequest`.
fn short_type_name<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

/// Runs one unary call, decoding its status, within the caller's deadline and until it goes
/// away.
async fn call<T>(
    cx: &CallContext,
    fut: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    tap: Option<Tapped>,
) -> Result<T, A2aError> {
    let fut = async {
        let result = fut.await;
        if let Some(t) = &tap {
            t.unary(&result);
        }
        result
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
    tap: Option<Tapped>,
) -> Result<EventStream, A2aError> {
    let response = bounded(cx, "gRPC stream", async {
        let result = fut.await;
        if let Some(t) = &tap {
            t.opened(&result);
        }
        result.map_err(|s| error(&s))
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
    let events = match tap {
        None => events,
        Some(t) => tapped_stream(events, t),
    };
    Ok(bounded_stream(cx, "gRPC stream", events))
}

/// `events` shown to the tap: each message, and the status the stream ends with.
pub(crate) fn tapped_stream(events: EventStream, t: Tapped) -> EventStream {
    let t = Arc::new(t);
    let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (end, end_seen, end_failed) = (t.clone(), seen.clone(), failed.clone());
    events
        .inspect(move |item| match item {
            Ok(_) => {
                let n = seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                t.message::<pb::StreamResponse>(n);
            }
            Err(e) => {
                failed.store(true, std::sync::atomic::Ordering::Relaxed);
                t.tap.lines(
                    &t.inn,
                    &format!("stream failed: {:?} {}", e.kind(), e.message()),
                );
            }
        })
        .chain(
            futures::stream::once(async move {
                if !end_failed.load(std::sync::atomic::Ordering::Relaxed) {
                    let n = end_seen.load(std::sync::atomic::Ordering::Relaxed);
                    end.tap
                        .lines(&end.inn, &format!("end of stream after {n} messages"));
                    end.ok();
                }
            })
            .filter_map(|()| futures::future::ready(None)),
        )
        .boxed()
}

/// The call of tonic's generated client method `$call` (its future) by kind.
macro_rules! grpc_call {
    (unary, $cx:expr, $call:expr, $tap:expr) => {
        call($cx, $call, $tap).await
    };
    (stream, $cx:expr, $call:expr, $tap:expr) => {
        stream($cx, $call, $tap).await
    };
    (empty, $cx:expr, $call:expr, $tap:expr) => {
        call($cx, $call, $tap)
            .await
            .map(|_: pbjson_types::Empty| ())
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
                    let tap = self.tap.as_ref().map(|tap| {
                        Tapped::new(tap, pb::SERVICE_NAME, Operation::$op.name())
                    });
                    if let Some(t) = &tap {
                        t.request(&req);
                    }
                    grpc_call!($kind, cx, self.client().$method(req), tap)
                }
            )*
        }
    };
}

trident_proto::for_each_rpc!(grpc_client);
