//! [`V03Client`]: `A2aService` over A2A v0.3's gRPC service `a2a.v1.A2AService`, for agents
//! that speak only v0.3. Each call is the 1.0 request translated by `trident-v03`
//! ([`Call::of`]) into the v0.3 message, sent with `a2a-version: 0.3`, and its answer
//! translated back; what v0.3 cannot express is refused before anything is sent. Errors are
//! read as the 1.0 clients read them (v0.3 used the same status codes).

use std::sync::Arc;

use futures::StreamExt;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, A2aReply, A2aRequest, AroundCall, CallContext};
use trident_proto::v03;
use trident_proto::v03::a2a_service_client::A2aServiceClient;
use trident_v03::client::{self as v03c, Answer, Call};

use crate::{GrpcOptions, metadata};

/// A gRPC client of one A2A v0.3 interface. Cheap to clone (the HTTP/2 connection is shared).
#[derive(Debug, Clone)]
pub struct V03Client {
    inner: A2aServiceClient<Channel>,
    headers: Arc<http::HeaderMap>,
}

impl V03Client {
    /// Connects to `target` (`host:port` or `http://host:port`), as
    /// [`GrpcClient::connect_with`](crate::GrpcClient::connect_with) does.
    pub async fn connect_with(target: &str, opts: &GrpcOptions) -> Result<Self, A2aError> {
        let channel = crate::client::endpoint(target, opts)?
            .connect()
            .await
            .map_err(|e| A2aError::caused_by(format!("cannot connect to {target}"), e, false))?;
        Ok(Self::from_channel(channel, opts))
    }

    /// A client over an existing channel.
    pub fn from_channel(channel: Channel, opts: &GrpcOptions) -> Self {
        Self {
            inner: A2aServiceClient::new(channel)
                .max_encoding_message_size(opts.max_request_size)
                .max_decoding_message_size(opts.max_response_size),
            headers: Arc::default(),
        }
    }

    /// Sends `headers` as metadata with every call, except those the call sets itself.
    pub fn with_headers(mut self, headers: http::HeaderMap) -> Self {
        self.headers = Arc::new(headers);
        self
    }

    fn request<T>(&self, cx: &CallContext, msg: T) -> Result<tonic::Request<T>, A2aError> {
        let mut req = crate::client::request(cx, msg, &self.headers)?;
        let md = req.metadata_mut();
        if !cx.extensions.is_empty() {
            let value = MetadataValue::try_from(cx.extensions.join(","))
                .map_err(|_| A2aError::invalid_field("extensions", "must be visible ASCII"))?;
            md.insert("x-a2a-extensions", value);
        }
        Ok(req)
    }

    async fn unary(&self, cx: &CallContext, call: &Call) -> Result<Answer, A2aError> {
        let mut c = self.inner.clone();
        let answer = async {
            let st = |s: tonic::Status| error(&s);
            Ok::<Answer, A2aError>(match call.clone() {
                Call::Send(r) => Answer::SendMessage(
                    c.send_message(self.request(cx, r)?)
                        .await
                        .map_err(st)?
                        .into_inner(),
                ),
                Call::GetTask(r) => Answer::Task(
                    c.get_task(self.request(cx, r)?)
                        .await
                        .map_err(st)?
                        .into_inner(),
                ),
                Call::Cancel(r) => Answer::Task(
                    c.cancel_task(self.request(cx, r)?)
                        .await
                        .map_err(st)?
                        .into_inner(),
                ),
                Call::CreateConfig(r) => Answer::Config(
                    c.create_task_push_notification_config(self.request(cx, r)?)
                        .await
                        .map_err(st)?
                        .into_inner(),
                ),
                Call::GetConfig(r) => Answer::Config(
                    c.get_task_push_notification_config(self.request(cx, r)?)
                        .await
                        .map_err(st)?
                        .into_inner(),
                ),
                Call::ListConfigs(r) => Answer::Configs(
                    c.list_task_push_notification_config(self.request(cx, r)?)
                        .await
                        .map_err(st)?
                        .into_inner()
                        .configs,
                ),
                Call::DeleteConfig(r) => {
                    c.delete_task_push_notification_config(self.request(cx, r)?)
                        .await
                        .map_err(st)?;
                    Answer::Empty
                }
                Call::Card(r) => {
                    let card = c.get_agent_card(self.request(cx, r)?).await.map_err(st)?;
                    Answer::Card(Box::new(trident_v03::ToV1::to_v1(card.into_inner())))
                }
                Call::Stream(_) | Call::Subscribe(_) => {
                    return Err(A2aError::internal("a streaming call has no unary answer"));
                }
            })
        };
        bounded(cx, "gRPC v0.3 call", answer).await
    }

    async fn stream(
        &self,
        cx: &CallContext,
        call: &Call,
    ) -> Result<trident_core::EventStream, A2aError> {
        let mut c = self.inner.clone();
        let opened = async {
            let response: Result<_, tonic::Status> = match call.clone() {
                Call::Stream(r) => c.send_streaming_message(self.request(cx, r)?).await,
                Call::Subscribe(r) => c.task_subscription(self.request(cx, r)?).await,
                _ => return Err(A2aError::internal("not a streaming call")),
            };
            response.map_err(|s| error(&s))
        };
        let response = bounded(cx, "gRPC v0.3 stream", opened).await?;
        let mut next_seq: Option<u64> = response
            .metadata()
            .get(metadata::FIRST_SEQ)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let messages = response.into_inner().map(move |item| {
            let seq = next_seq;
            next_seq = next_seq.map(|s| s + 1);
            item.map(|m: v03::StreamResponse| (seq, m))
                .map_err(|s| error(&s))
        });
        Ok(bounded_stream(
            cx,
            "gRPC v0.3 stream",
            v03c::events(messages),
        ))
    }
}

/// A v0.3 agent's status: as the 1.0 clients read it (our servers send the A2A `ErrorInfo`),
/// but a message naming a v0.3 error type (the v0.3 Python SDK's form) decides the kind.
fn error(s: &tonic::Status) -> A2aError {
    let e = crate::error(s);
    let Some((kind, message)) = trident_v03::error::kind_named_in(s.message()) else {
        return e;
    };
    let mut out = A2aError::new(kind, message);
    for (k, v) in e.metadata() {
        out = out.with_meta(k.clone(), v.clone());
    }
    out
}

#[async_trait::async_trait]
impl AroundCall for V03Client {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        let asked = v03c::history_asked(&req);
        let call = Call::of(cx, req)?;
        let cx = &v03c::context(cx)?;
        if call.operation().is_streaming() {
            let events = self.stream(cx, &call).await?;
            let events = match call.snapshot_call() {
                Some(get) => v03c::snapshot_first(self.unary(cx, &get).await?, events)?,
                None => v03c::first_error(events).await?,
            };
            return call.stream_reply(events);
        }
        let answer = self.unary(cx, &call).await?;
        call.reply(answer, asked)
    }
}
