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
use trident_http::WireTap;
use trident_proto::v03;
use trident_proto::v03::a2a_service_client::A2aServiceClient;
use trident_v03::client::{self as v03c, Answer, Call};

use crate::client::{Tapped, tapped_stream};
use crate::{GrpcOptions, metadata};

/// A gRPC client of one A2A v0.3 interface. Cheap to clone (the HTTP/2 connection is shared).
#[derive(Debug, Clone)]
pub struct V03Client {
    inner: A2aServiceClient<Channel>,
    headers: Arc<http::HeaderMap>,
    tap: Option<WireTap>,
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
            tap: None,
        }
    }

    /// Shows every call to `tap` as [`GrpcClient::with_wire_tap`](crate::GrpcClient::with_wire_tap)
    /// does (`None`, the default: nothing is formatted).
    pub fn with_wire_tap(mut self, tap: Option<WireTap>) -> Self {
        self.tap = tap;
        self
    }

    /// The tap of `call`, when this client has one.
    fn tapped(&self, call: &Call) -> Option<Tapped> {
        let method = match call {
            Call::Send(_) => "SendMessage",
            Call::Stream(_) => "SendStreamingMessage",
            Call::GetTask(_) => "GetTask",
            Call::Cancel(_) => "CancelTask",
            Call::Subscribe(_) => "TaskSubscription",
            Call::CreateConfig(_) => "CreateTaskPushNotificationConfig",
            Call::GetConfig(_) => "GetTaskPushNotificationConfig",
            Call::ListConfigs(_) => "ListTaskPushNotificationConfig",
            Call::DeleteConfig(_) => "DeleteTaskPushNotificationConfig",
            Call::Card(_) => "GetAgentCard",
        };
        self.tap
            .as_ref()
            .map(|tap| Tapped::new(tap, v03::SERVICE_NAME, method))
    }

    /// Sends `headers` as metadata with every call, except those the call sets itself.
    pub fn with_headers(mut self, headers: http::HeaderMap) -> Self {
        self.headers = Arc::new(headers);
        self
    }

    fn request<T>(
        &self,
        cx: &CallContext,
        msg: T,
        tap: Option<&Tapped>,
    ) -> Result<tonic::Request<T>, A2aError> {
        let mut req = crate::client::request(cx, msg, &self.headers)?;
        let md = req.metadata_mut();
        if !cx.extensions.is_empty() {
            let value = MetadataValue::try_from(cx.extensions.join(","))
                .map_err(|_| A2aError::invalid_field("extensions", "must be visible ASCII"))?;
            md.insert("x-a2a-extensions", value);
        }
        if let Some(t) = tap {
            t.request(&req);
        }
        Ok(req)
    }

    async fn unary(&self, cx: &CallContext, call: &Call) -> Result<Answer, A2aError> {
        let mut c = self.inner.clone();
        let tap = self.tapped(call);
        let tap = tap.as_ref();
        let answer = async {
            Ok::<Answer, A2aError>(match call.clone() {
                Call::Send(r) => Answer::SendMessage(answered(
                    c.send_message(self.request(cx, r, tap)?).await,
                    tap,
                )?),
                Call::GetTask(r) => {
                    Answer::Task(answered(c.get_task(self.request(cx, r, tap)?).await, tap)?)
                }
                Call::Cancel(r) => Answer::Task(answered(
                    c.cancel_task(self.request(cx, r, tap)?).await,
                    tap,
                )?),
                Call::CreateConfig(r) => Answer::Config(answered(
                    c.create_task_push_notification_config(self.request(cx, r, tap)?)
                        .await,
                    tap,
                )?),
                Call::GetConfig(r) => Answer::Config(answered(
                    c.get_task_push_notification_config(self.request(cx, r, tap)?)
                        .await,
                    tap,
                )?),
                Call::ListConfigs(r) => Answer::Configs(
                    answered(
                        c.list_task_push_notification_config(self.request(cx, r, tap)?)
                            .await,
                        tap,
                    )?
                    .configs,
                ),
                Call::DeleteConfig(r) => {
                    answered(
                        c.delete_task_push_notification_config(self.request(cx, r, tap)?)
                            .await,
                        tap,
                    )?;
                    Answer::Empty
                }
                Call::Card(r) => {
                    let card = answered(c.get_agent_card(self.request(cx, r, tap)?).await, tap)?;
                    Answer::Card(Box::new(trident_v03::ToV1::to_v1(card)))
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
        let tap = self.tapped(call);
        let opened = async {
            let t = tap.as_ref();
            let response: Result<_, tonic::Status> = match call.clone() {
                Call::Stream(r) => c.send_streaming_message(self.request(cx, r, t)?).await,
                Call::Subscribe(r) => c.task_subscription(self.request(cx, r, t)?).await,
                _ => return Err(A2aError::internal("not a streaming call")),
            };
            if let Some(t) = t {
                t.opened(&response);
            }
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
        let events = v03c::events(messages);
        let events = match tap {
            None => events,
            Some(t) => tapped_stream(events, t),
        };
        Ok(bounded_stream(cx, "gRPC v0.3 stream", events))
    }
}

/// A unary call's answer, shown to the call's tap (its metadata, the message and the status,
/// or the status it failed with), or its status as an error.
fn answered<T>(
    result: Result<tonic::Response<T>, tonic::Status>,
    tap: Option<&Tapped>,
) -> Result<T, A2aError> {
    if let Some(t) = tap {
        t.unary(&result);
    }
    result
        .map(tonic::Response::into_inner)
        .map_err(|s| error(&s))
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
