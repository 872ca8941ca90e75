//! [`RestClient`]: `A2aService` over HTTP+JSON, with routes from the same descriptor-derived
//! table the server uses.

use std::sync::Arc;

use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, CallContext, ErrorKind, EventStream, Operation, StreamEvent};
use trident_http::{HttpClient, SseEvent};
use trident_proto as pb;

use crate::error::decode_error;
use crate::routes::{Bound, Routes, path_of};

/// An HTTP+JSON client of one agent interface.
#[derive(Debug, Clone)]
pub struct RestClient {
    http: HttpClient,
    base: String,
    routes: Arc<Routes>,
    tenant: String,
}

/// The name of this binding in its clients' errors.
pub(crate) const BINDING: &str = "HTTP+JSON";

impl RestClient {
    /// A client of the interface at `base_url` (the card's HTTP+JSON `url`).
    pub fn new(base_url: &str) -> Result<Self, A2aError> {
        Self::with_http(HttpClient::new(BINDING)?, base_url)
    }

    /// A client sharing an existing reqwest client.
    pub fn with_client(http: reqwest::Client, base_url: &str) -> Result<Self, A2aError> {
        Self::with_http(HttpClient::with_client(http, BINDING), base_url)
    }

    fn with_http(http: HttpClient, base_url: &str) -> Result<Self, A2aError> {
        let routes = Routes::from_descriptor().map_err(|e| A2aError::internal(e.to_string()))?;
        Ok(Self {
            http,
            base: base_url.trim_end_matches('/').to_owned(),
            routes: Arc::new(routes),
            tenant: String::new(),
        })
    }

    trident_http::http_client_setters!();

    /// Sends `tenant` (the interface's) on every request that names none.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// The HTTP request of `op`: its route's path variables (`{id}`, `{task_id}`, `{tenant}`)
    /// from the request's fields of those names, the rest in the body or the query.
    fn request<T: Serialize>(
        &self,
        cx: &CallContext,
        op: Operation,
        req: &T,
        stream: bool,
    ) -> Result<reqwest::RequestBuilder, A2aError> {
        let json = serde_json::to_value(req).map_err(|e| A2aError::internal(e.to_string()))?;
        let field = |name: &str| json.get(name).and_then(|v| v.as_str());
        let tenant = cx.resolve_tenant(field("tenant").unwrap_or_default(), &self.tenant)?;
        let bound = Bound {
            tenant: (!tenant.is_empty()).then(|| tenant.to_owned()),
            id: field("id").map(str::to_owned),
            task_id: field("taskId").map(str::to_owned),
        };
        let route = self
            .routes
            .for_op(op, bound.tenant.is_some())
            .ok_or_else(|| A2aError::internal(format!("no HTTP route for {}", op.name())))?;
        let url = format!("{}{}", self.base, path_of(route, &bound));
        let method = reqwest::Method::from_bytes(route.method.as_bytes())
            .map_err(|e| A2aError::internal(e.to_string()))?;
        let mut builder = self.http.with_call(self.http.request(method, &url), cx);
        builder = builder.header(
            "accept",
            if stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        );
        if route.body {
            builder = builder
                .header("content-type", "application/json")
                .body(json.to_string());
        } else if let serde_json::Value::Object(fields) = json {
            let skip = ["tenant", "id", "taskId"];
            let query: Vec<(String, String)> = fields
                .into_iter()
                .filter(|(k, _)| !skip.contains(&k.as_str()))
                .filter_map(|(k, v)| match v {
                    serde_json::Value::String(s) => Some((k, s)),
                    serde_json::Value::Null => None,
                    other => Some((k, other.to_string())),
                })
                .collect();
            builder = builder.query(&query);
        }
        Ok(builder)
    }

    /// One unary call, within the caller's deadline and until it goes away (dropping the
    /// request either way).
    async fn unary<T: Serialize, R: DeserializeOwned>(
        &self,
        cx: &CallContext,
        op: Operation,
        req: &T,
    ) -> Result<R, A2aError> {
        let request = self.request(cx, op, req, false)?;
        bounded(
            cx,
            format!("HTTP+JSON {}", op.name()),
            self.exchange(op, request),
        )
        .await
    }

    async fn exchange<R: DeserializeOwned>(
        &self,
        op: Operation,
        request: reqwest::RequestBuilder,
    ) -> Result<R, A2aError> {
        let response = self.http.send(op.name(), request).await?;
        let status = response.status().as_u16();
        let body = self.http.body(response).await?;
        // Any 2xx is a success: the digest asks servers for 200 everywhere, but a server that
        // answers a create with `201 Created` (the JS SDK) or a delete with `204 No Content`
        // has still done what was asked (RFC 9110 §15.3).
        if !(200..300).contains(&status) {
            return Err(decode_error(status, &body));
        }
        // `204 No Content` carries the empty message (a delete's `Empty`, `{}` in JSON).
        let body: &[u8] = if status == 204 && body.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &body
        };
        serde_json::from_slice(body).map_err(|e| {
            A2aError::new(
                ErrorKind::InvalidAgentResponse,
                format!("{}: {e}", op.name()),
            )
        })
    }

    /// A streaming call: the response head within the caller's deadline, then events until
    /// the deadline passes or the caller goes away (dropping the response either way).
    async fn stream<T: Serialize>(
        &self,
        cx: &CallContext,
        op: Operation,
        req: &T,
    ) -> Result<EventStream, A2aError> {
        let request = self.request(cx, op, req, true)?;
        let what = format!("HTTP+JSON {}", op.name());
        let events = bounded(cx, &what, self.open_stream(op, request)).await?;
        Ok(bounded_stream(cx, what, events))
    }

    async fn open_stream(
        &self,
        op: Operation,
        request: reqwest::RequestBuilder,
    ) -> Result<EventStream, A2aError> {
        let response = self.http.send(op.name(), request).await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let body = self.http.body(response).await?;
            return Err(decode_error(status, &body));
        }
        let body = self.http.chunks(response, "SSE stream");
        Ok(sse_events(body, self.http.max_response_size()).boxed())
    }
}

/// The events of an SSE body, as the stream's items (the fuzz target `sse_parser` runs it).
pub(crate) fn sse_events<S, B, E>(
    body: S,
    max_event: usize,
) -> impl futures::Stream<Item = Result<StreamEvent, A2aError>> + use<S, B, E>
where
    S: futures::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Into<A2aError>,
{
    trident_http::sse_events(body, max_event).map(|item| {
        sse_event(item.map_err(|e| e.into_described(format_args!("{BINDING} SSE event")))?)
    })
}

/// One SSE event of a stream: `data` is a bare `StreamResponse`, or an AIP-193 error body
/// (`event: error`); `id` is its sequence number.
fn sse_event(event: SseEvent) -> Result<StreamEvent, A2aError> {
    let value: serde_json::Value = serde_json::from_str(&event.data)
        .map_err(|e| A2aError::new(ErrorKind::InvalidAgentResponse, format!("SSE data: {e}")))?;
    if event.event == "error" || value.get("error").is_some() {
        return Err(decode_error(500, event.data.as_bytes()));
    }
    let response: pb::StreamResponse = serde_json::from_value(value)
        .map_err(|e| A2aError::new(ErrorKind::InvalidAgentResponse, format!("SSE data: {e}")))?;
    Ok(StreamEvent {
        seq: event.id.parse().ok(),
        response: Arc::new(response),
    })
}

/// Every RPC is one request on its route from the proto's HTTP rules.
macro_rules! rest_client {
    ($($rpc:tt)*) => {
        trident_http::json_client!(RestClient; $($rpc)*);
    };
}

trident_proto::for_each_rpc!(rest_client);

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    /// Found by `fuzz/`'s `sse_parser`: a body opening with a UTF-8 BOM made eventsource-stream
    /// panic (it slices one byte off the three-byte U+FEFF).
    #[test]
    fn an_sse_body_opening_with_a_bom_is_read() {
        let body = "\u{feff}id: 7\ndata: {\"task\":{\"id\":\"t\"}}\n\n";
        for cut in 0..=body.len() {
            let (a, b) = body.as_bytes().split_at(cut);
            let chunks = [a.to_vec(), b.to_vec()].map(Ok::<_, std::convert::Infallible>);
            let events: Vec<_> = futures::executor::block_on(
                super::sse_events(futures::stream::iter(chunks), 1 << 10).collect(),
            );
            let [Ok(event)] = events.as_slice() else {
                panic!("cut at {cut}: {events:?}");
            };
            assert_eq!(event.seq, Some(7));
        }
    }
}
