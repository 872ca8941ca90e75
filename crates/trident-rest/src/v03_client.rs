//! [`V03Client`]: `A2aService` over A2A v0.3's HTTP+JSON routes (`/v1/message:send`,
//! `/v1/tasks/{id}`, …), for agents that speak only v0.3. Each call is the 1.0 request
//! translated by `trident-v03` ([`Call::of`]), sent on its v0.3 route with the v0.3 model's
//! ProtoJSON and `A2A-Version: 0.3`, and its answer translated back; what v0.3 cannot express
//! is refused before anything is sent.

use futures::StreamExt;
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, A2aReply, A2aRequest, AroundCall, CallContext};
use trident_http::HttpClient;
use trident_v03::client::{self as v03c, Call};
use trident_v03::rest::{self, HttpCall};

use crate::client::BINDING;

/// An HTTP+JSON client of one A2A v0.3 interface.
#[derive(Debug, Clone)]
pub struct V03Client {
    http: HttpClient,
    base: String,
}

impl V03Client {
    /// A client of the v0.3 interface at `base_url` (the card's HTTP+JSON `url`; routes are
    /// `{base_url}/v1/...`), sharing `http`.
    pub fn with_client(http: reqwest::Client, base_url: &str) -> Self {
        Self {
            http: HttpClient::with_client(http, BINDING),
            base: base_url.trim_end_matches('/').to_owned(),
        }
    }

    trident_http::http_client_setters!();

    fn request(
        &self,
        cx: &CallContext,
        call: &HttpCall,
    ) -> Result<reqwest::RequestBuilder, A2aError> {
        let method = reqwest::Method::from_bytes(call.method.as_bytes())
            .map_err(|e| A2aError::internal(e.to_string()))?;
        let mut builder = self
            .http
            .request(method, &format!("{}{}", self.base, call.path))
            .header(
                "accept",
                if call.stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            );
        if !call.query.is_empty() {
            builder = builder.query(&call.query);
        }
        builder = self.http.with_call(builder, cx);
        if !cx.extensions.is_empty() {
            builder = builder.header("x-a2a-extensions", cx.extensions.join(","));
        }
        if let Some(body) = &call.body {
            builder = builder
                .header("content-type", "application/json")
                .body(body.clone());
        }
        Ok(builder)
    }

    async fn unary(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, A2aError> {
        let response = self.http.send(what, request).await?;
        let status = response.status().as_u16();
        let body = self.http.body(response).await?;
        if !(200..300).contains(&status) {
            return Err(rest::client_error(status, &body));
        }
        Ok(body)
    }

    async fn open_stream(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<trident_core::EventStream, A2aError> {
        let response = self.http.send(what, request).await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let body = self.http.body(response).await?;
            return Err(rest::client_error(status, &body));
        }
        let events = self
            .http
            .sse(response)
            .map(|event| {
                let event = event?;
                let is_error = event.event == "error"
                    || serde_json::from_str::<serde_json::Value>(&event.data)
                        .ok()
                        .is_some_and(|v| v.get("code").is_some() && v.get("message").is_some());
                if is_error {
                    return Err(rest::client_error(500, event.data.as_bytes()));
                }
                Ok((event.id.parse().ok(), rest::client_event(&event.data)?))
            })
            // v0.3 servers may send keep-alive comments as empty events.
            .filter(|item| {
                futures::future::ready(!matches!(item, Ok((_, r)) if r.payload.is_none()))
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
        let http = rest::client_request(&call)?;
        let what = format!("HTTP+JSON v0.3 {} {}", http.method, http.path);
        let request = self.request(cx, &http)?;
        if http.stream {
            let events = bounded(cx, &what, self.open_stream(&what, request)).await?;
            let events = bounded_stream(cx, &what, events);
            let events = match call.snapshot_call() {
                Some(get) => {
                    let get_http = rest::client_request(&get)?;
                    let request = self.request(cx, &get_http)?;
                    let body = bounded(cx, &what, self.unary(&what, request)).await?;
                    v03c::snapshot_first(rest::client_answer(&get, &body)?, events)?
                }
                None => v03c::first_error(events).await?,
            };
            return call.stream_reply(events);
        }
        let body = bounded(cx, &what, self.unary(&what, request)).await?;
        call.reply(rest::client_answer(&call, &body)?, asked)
    }
}
