//! [`V03Client`]: `A2aService` over A2A v0.3's JSON-RPC (`message/send`, `tasks/get`, …), for
//! agents that speak only v0.3. Each call is the 1.0 request translated by `trident-v03`
//! ([`Call::of`]), sent with v0.3's method name and params and `A2A-Version: 0.3`, and its
//! answer translated back; what v0.3 cannot express is refused before anything is sent.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use serde_json::Value;
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, A2aReply, A2aRequest, AroundCall, CallContext, ErrorKind};
use trident_http::HttpClient;
use trident_v03::client::{self as v03c, Call};
use trident_v03::jsonrpc::{self as rpc, Method};

use crate::client::{BINDING, envelope, post_envelope, sse_response};

/// A JSON-RPC client of one A2A v0.3 interface.
#[derive(Debug)]
pub struct V03Client {
    http: HttpClient,
    url: String,
    next_id: AtomicU64,
}

fn invalid(what: &str, e: impl std::fmt::Display) -> A2aError {
    A2aError::new(ErrorKind::InvalidAgentResponse, format!("{what}: {e}"))
}

/// The `result` of a v0.3 response envelope, or its error.
fn result_of(envelope: Value) -> Result<Value, A2aError> {
    let Value::Object(mut fields) = envelope else {
        return Err(invalid("JSON-RPC response", "not an object"));
    };
    if let Some(error) = fields.get("error").filter(|e| !e.is_null()) {
        return Err(rpc::client_error(error));
    }
    Ok(fields.remove("result").unwrap_or(Value::Null))
}

impl V03Client {
    /// A client of the v0.3 JSON-RPC endpoint at `url`, sharing `http`.
    pub fn with_client(http: reqwest::Client, url: &str) -> Self {
        Self {
            http: HttpClient::with_client(http, BINDING),
            url: url.to_owned(),
            next_id: AtomicU64::new(1),
        }
    }

    trident_http::http_client_setters!();

    fn post(
        &self,
        cx: &CallContext,
        method: Method,
        params: Value,
        stream: bool,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut builder = post_envelope(
            &self.http,
            &self.url,
            cx,
            (id, method.name(), params),
            stream,
        );
        // v0.3's name of the extensions header, beside 1.0's.
        if !cx.extensions.is_empty() {
            builder = builder.header("x-a2a-extensions", cx.extensions.join(","));
        }
        builder
    }

    async fn unary(
        &self,
        method: Method,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, A2aError> {
        let response = self.http.send(method.name(), request).await?;
        let status = response.status();
        let body = self.http.body(response).await?;
        result_of(envelope(method.name(), status, &body)?)
    }

    async fn open_stream(
        &self,
        method: Method,
        request: reqwest::RequestBuilder,
    ) -> Result<trident_core::EventStream, A2aError> {
        let response = sse_response(&self.http, method.name(), request).await?;
        let events = self.http.sse(response).map(|event| {
            let event = event?;
            let envelope: Value =
                serde_json::from_str(&event.data).map_err(|e| invalid("SSE data", e))?;
            let response = rpc::client_event(result_of(envelope)?)?;
            Ok((event.id.parse().ok(), response))
        });
        Ok(v03c::events(events))
    }
}

#[async_trait::async_trait]
impl AroundCall for V03Client {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        let asked = v03c::history_asked(&req);
        let call = Call::of(cx, req)?;
        let cx = &v03c::context(cx)?;
        let (method, params) = rpc::client_params(&call)?;
        let what = format!("JSON-RPC {}", method.name());
        if call.operation().is_streaming() {
            let request = self.post(cx, method, params, true);
            let events = bounded(cx, &what, self.open_stream(method, request)).await?;
            let events = bounded_stream(cx, what, events);
            let events = match call.snapshot_call() {
                Some(get) => {
                    let (m, p) = rpc::client_params(&get)?;
                    let request = self.post(cx, m, p, false);
                    let result = bounded(cx, "JSON-RPC tasks/get", self.unary(m, request)).await?;
                    v03c::snapshot_first(rpc::client_answer(&get, result)?, events)?
                }
                None => v03c::first_error(events).await?,
            };
            return call.stream_reply(events);
        }
        let request = self.post(cx, method, params, false);
        let result = bounded(cx, what, self.unary(method, request)).await?;
        call.reply(rpc::client_answer(&call, result)?, asked)
    }
}
