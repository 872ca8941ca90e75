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
    /// cards write gRPC URLs) or `http://host:port`. `https://` needs TLS, which this build does
    /// not include. A target that cannot be reached is `Unavailable`.
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

    /// Wraps `msg` with the service parameters of `cx`, filling its tenant (gRPC has no other
    /// place for it) from `cx.tenant` or this client's interface.
    fn request<T: HasTenant>(&self, cx: &CallContext, mut msg: T) -> Result<Request<T>, A2aError> {
        let tenant = cx
            .resolve_tenant(msg.tenant_mut(), &self.tenant)?
            .to_owned();
        *msg.tenant_mut() = tenant;
        let mut req = request(cx, msg)?;
        let md = req.metadata_mut();
        for (name, value) in self.headers.iter() {
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

    /// The generated client, for calls outside [`A2aService`].
    pub fn raw(&self) -> A2aServiceClient<Channel> {
        self.inner.clone()
    }

    fn client(&self) -> A2aServiceClient<Channel> {
        self.inner.clone()
    }
}

/// `host:port`, `http://host:port` → an endpoint; everything else is refused up front.
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
        Some(("https", _)) => {
            return Err(bad(
                "https needs TLS, which this build of trident-grpc does not include".to_owned(),
            ));
        }
        Some((scheme, _)) => return Err(bad(format!("unsupported scheme {scheme}"))),
    };
    Endpoint::from_shared(uri)
        .map(|e| e.connect_timeout(opts.connect_timeout))
        .map_err(|e| bad(trident_core::error_chain(&e)))
}

/// Request messages, all of which carry a `tenant`.
trait HasTenant {
    fn tenant_mut(&mut self) -> &mut String;
}

macro_rules! has_tenant {
    ($($t:ty),*) => {$(
        impl HasTenant for $t {
            fn tenant_mut(&mut self) -> &mut String {
                &mut self.tenant
            }
        }
    )*};
}

has_tenant!(
    pb::SendMessageRequest,
    pb::GetTaskRequest,
    pb::ListTasksRequest,
    pb::CancelTaskRequest,
    pb::SubscribeToTaskRequest,
    pb::TaskPushNotificationConfig,
    pb::GetTaskPushNotificationConfigRequest,
    pb::ListTaskPushNotificationConfigsRequest,
    pb::GetExtendedAgentCardRequest,
    pb::DeleteTaskPushNotificationConfigRequest
);

/// Wraps `msg` with the service parameters of `cx` (`grpc-timeout` among them).
pub(crate) fn request<T>(cx: &CallContext, msg: T) -> Result<Request<T>, A2aError> {
    let mut req = Request::new(msg);
    let md = req.metadata_mut();
    for (name, value) in cx.outgoing_service_params() {
        let value = MetadataValue::try_from(value.as_str()).map_err(|_| {
            A2aError::invalid_field(name, "must be visible ASCII to travel as gRPC metadata")
        })?;
        md.insert(name, value);
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

#[async_trait::async_trait]
impl A2aService for GrpcClient {
    async fn send_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        call(cx, self.client().send_message(self.request(cx, req)?)).await
    }

    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        stream(
            cx,
            self.client().send_streaming_message(self.request(cx, req)?),
        )
        .await
    }

    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        call(cx, self.client().get_task(self.request(cx, req)?)).await
    }

    async fn list_tasks(
        &self,
        cx: &CallContext,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        call(cx, self.client().list_tasks(self.request(cx, req)?)).await
    }

    async fn cancel_task(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        call(cx, self.client().cancel_task(self.request(cx, req)?)).await
    }

    async fn subscribe_to_task(
        &self,
        cx: &CallContext,
        req: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        stream(cx, self.client().subscribe_to_task(self.request(cx, req)?)).await
    }

    async fn create_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        call(
            cx,
            self.client()
                .create_task_push_notification_config(self.request(cx, req)?),
        )
        .await
    }

    async fn get_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        call(
            cx,
            self.client()
                .get_task_push_notification_config(self.request(cx, req)?),
        )
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        cx: &CallContext,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        call(
            cx,
            self.client()
                .list_task_push_notification_configs(self.request(cx, req)?),
        )
        .await
    }

    async fn get_extended_agent_card(
        &self,
        cx: &CallContext,
        req: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        call(
            cx,
            self.client()
                .get_extended_agent_card(self.request(cx, req)?),
        )
        .await
    }

    async fn delete_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        call(
            cx,
            self.client()
                .delete_task_push_notification_config(self.request(cx, req)?),
        )
        .await
        .map(|_| ())
    }
}
