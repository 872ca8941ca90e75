//! [`JsonRpcClient`]: `A2aService` over JSON-RPC 2.0 (HTTP POST, SSE for streams).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, CallContext, ErrorKind, EventStream, Operation, StreamEvent};
use trident_http::{DEFAULT_MAX_RESPONSE_BYTES, SseEvent, read_body};
use trident_proto as pb;

/// A JSON-RPC client of one agent interface.
#[derive(Debug)]
pub struct JsonRpcClient {
    http: reqwest::Client,
    url: String,
    tenant: String,
    next_id: AtomicU64,
    max_response: usize,
    headers: reqwest::header::HeaderMap,
    query: Vec<(String, String)>,
}

/// A failed exchange, with its cause: `Unavailable` (`DeadlineExceeded` for reqwest's own
/// timeout) and the whole chain (connection refused, DNS, TLS, reset, ...) in the message.
pub(crate) fn transport_error(what: impl std::fmt::Display, mut e: reqwest::Error) -> A2aError {
    // A query may carry a credential (an API key the card wants there).
    if let Some(url) = e.url_mut() {
        url.set_query(None);
    }
    let timed_out = e.is_timeout();
    A2aError::caused_by(format_args!("JSON-RPC {what}"), e, timed_out)
}

/// The POST of one JSON-RPC request envelope (`id`, `method`, `params`) to `url`, asking for
/// SSE when `stream`: the client's `defaults` headers, then the call's service parameters
/// ([`CallContext::outgoing_service_params`]), which win over a default of the same name.
/// The 1.0 and the v0.3 client both send through it.
pub(crate) fn post_envelope(
    http: &reqwest::Client,
    url: &str,
    defaults: &reqwest::header::HeaderMap,
    cx: &CallContext,
    (id, method, params): (u64, &str, serde_json::Value),
    stream: bool,
) -> reqwest::RequestBuilder {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut builder = http
        .post(url)
        .header("content-type", "application/json")
        .header(
            "accept",
            if stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .body(body.to_string());
    let params = cx.outgoing_service_params();
    for (name, value) in defaults {
        if !params.iter().any(|(n, _)| name.as_str() == *n) {
            builder = builder.header(name, value);
        }
    }
    for (name, value) in params {
        builder = builder.header(name, value);
    }
    builder
}

fn invalid(what: &str, e: impl std::fmt::Display) -> A2aError {
    A2aError::new(ErrorKind::InvalidAgentResponse, format!("{what}: {e}"))
}

/// The JSON of a response to method `what` that came with `status`. A body that is not JSON
/// is the agent's fault on a success, and otherwise the HTTP error of whatever answered
/// (a proxy's plain 401 is unauthenticated, not an invalid agent response).
pub(crate) fn envelope(
    what: &str,
    status: reqwest::StatusCode,
    body: &[u8],
) -> Result<serde_json::Value, A2aError> {
    serde_json::from_slice(body).map_err(|e| {
        if status.is_success() {
            invalid(what, e)
        } else {
            A2aError::new(
                ErrorKind::from_http(status.as_u16()).unwrap_or(ErrorKind::Internal),
                format!("HTTP {status}"),
            )
        }
    })
}

/// The chunks of a response body, their failures described with their cause.
pub(crate) fn chunks(
    response: reqwest::Response,
    what: &'static str,
) -> impl futures::Stream<Item = Result<bytes::Bytes, A2aError>> {
    use futures::TryStreamExt;
    response
        .bytes_stream()
        .map_err(move |e| transport_error(what, e))
}

/// Decodes a JSON-RPC error object through the wire table: the ErrorInfo reason in `data`
/// when present, else the code.
fn decode_error(error: &serde_json::Value) -> A2aError {
    let code = error
        .get("code")
        .and_then(|c| c.as_i64())
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(ErrorKind::Internal.wire().jsonrpc);
    let fallback = ErrorKind::from_jsonrpc(code).unwrap_or(ErrorKind::Internal);
    let message = error
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or(fallback.wire().message);
    let details = error
        .get("data")
        .and_then(|d| d.as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    A2aError::from_wire(fallback, message, details)
}

/// The `result` of a response envelope, or its error.
fn result_of(envelope: serde_json::Value) -> Result<serde_json::Value, A2aError> {
    let serde_json::Value::Object(mut fields) = envelope else {
        return Err(invalid("JSON-RPC response", "not an object"));
    };
    if let Some(error) = fields.get("error") {
        return Err(decode_error(error));
    }
    // A missing result (some servers answer DeleteTaskPushNotificationConfig so) reads as `{}`.
    Ok(fields
        .remove("result")
        .unwrap_or_else(|| serde_json::json!({})))
}

impl JsonRpcClient {
    /// A client of the endpoint at `url` (the card's JSONRPC `url`).
    pub fn new(url: &str) -> Result<Self, A2aError> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| transport_error("client", e))?;
        Ok(Self::with_client(http, url))
    }

    /// A client sharing an existing reqwest client.
    pub fn with_client(http: reqwest::Client, url: &str) -> Self {
        Self {
            http,
            url: url.to_owned(),
            tenant: String::new(),
            next_id: AtomicU64::new(1),
            max_response: DEFAULT_MAX_RESPONSE_BYTES,
            headers: reqwest::header::HeaderMap::new(),
            query: Vec::new(),
        }
    }

    /// Sends `headers` (authentication, an API key, ...) with every request, except those the
    /// call sets itself from its [`CallContext`] (a call's own credentials win).
    pub fn with_headers(mut self, headers: reqwest::header::HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    /// Adds the query parameters `query` (an API key a card wants in the query, ...) to every
    /// request. Their values never appear in this client's errors: the query is cut from the
    /// URL of every transport error.
    pub fn with_query(mut self, query: Vec<(String, String)>) -> Self {
        self.query = query;
        self
    }

    /// Sends `tenant` (the interface's) in every request that names none.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Reads at most `bytes` of a response body, or of one event of a stream (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]); a larger one is an `InvalidAgentResponse` error.
    pub fn with_max_response_size(mut self, bytes: usize) -> Self {
        self.max_response = bytes;
        self
    }

    async fn body(&self, response: reqwest::Response) -> Result<Vec<u8>, A2aError> {
        read_body(chunks(response, "response body"), self.max_response)
            .await
            .map_err(|e| e.into_described(format_args!("JSON-RPC response")))
    }

    fn post<T: Serialize>(
        &self,
        cx: &CallContext,
        op: Operation,
        params: &T,
        stream: bool,
    ) -> Result<reqwest::RequestBuilder, A2aError> {
        let mut params =
            serde_json::to_value(params).map_err(|e| A2aError::internal(e.to_string()))?;
        if let serde_json::Value::Object(p) = &mut params {
            let given = p.get("tenant").and_then(|t| t.as_str()).unwrap_or_default();
            let tenant = cx.resolve_tenant(given, &self.tenant)?.to_owned();
            if !tenant.is_empty() {
                p.insert("tenant".to_owned(), serde_json::Value::String(tenant));
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let builder = post_envelope(
            &self.http,
            &self.url,
            &self.headers,
            cx,
            (id, op.name(), params),
            stream,
        );
        Ok(if self.query.is_empty() {
            builder
        } else {
            builder.query(&self.query)
        })
    }

    /// One unary call, within the caller's deadline and until it goes away (dropping the
    /// request either way).
    async fn unary<T: Serialize, R: DeserializeOwned>(
        &self,
        cx: &CallContext,
        op: Operation,
        params: &T,
    ) -> Result<R, A2aError> {
        let request = self.post(cx, op, params, false)?;
        bounded(
            cx,
            format!("JSON-RPC {}", op.name()),
            self.exchange(op, request),
        )
        .await
    }

    async fn exchange<R: DeserializeOwned>(
        &self,
        op: Operation,
        request: reqwest::RequestBuilder,
    ) -> Result<R, A2aError> {
        let response = request
            .send()
            .await
            .map_err(|e| transport_error(op.name(), e))?;
        let status = response.status();
        let body = self.body(response).await?;
        let envelope = envelope(op.name(), status, &body)?;
        serde_json::from_value(result_of(envelope)?).map_err(|e| invalid(op.name(), e))
    }

    /// A streaming call: the response head within the caller's deadline, then events until
    /// the deadline passes or the caller goes away (dropping the response either way).
    async fn stream<T: Serialize>(
        &self,
        cx: &CallContext,
        op: Operation,
        params: &T,
    ) -> Result<EventStream, A2aError> {
        let request = self.post(cx, op, params, true)?;
        let what = format!("JSON-RPC {}", op.name());
        let events = bounded(cx, &what, self.open_stream(op, request)).await?;
        Ok(bounded_stream(cx, what, events))
    }

    async fn open_stream(
        &self,
        op: Operation,
        request: reqwest::RequestBuilder,
    ) -> Result<EventStream, A2aError> {
        let response = request
            .send()
            .await
            .map_err(|e| transport_error(op.name(), e))?;
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        if !is_sse {
            // An error known before the first event comes as a plain JSON-RPC response; one
            // from in front of the agent (a proxy's 401) may not be JSON-RPC at all.
            let status = response.status();
            let body = self.body(response).await?;
            result_of(envelope(op.name(), status, &body)?)?;
            return Err(invalid(
                op.name(),
                "a streaming method answered without a stream",
            ));
        }
        Ok(sse_events(chunks(response, "SSE stream"), self.max_response).boxed())
    }
}

/// The events of an SSE body, as the stream's items.
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
        sse_event(item.map_err(|e| e.into_described(format_args!("JSON-RPC SSE event")))?)
    })
}

/// One SSE event of a stream: `data` is a JSON-RPC response wrapping a `StreamResponse` (or
/// an error), `id` its sequence number.
fn sse_event(event: SseEvent) -> Result<StreamEvent, A2aError> {
    let envelope: serde_json::Value =
        serde_json::from_str(&event.data).map_err(|e| invalid("SSE data", e))?;
    let response: pb::StreamResponse =
        serde_json::from_value(result_of(envelope)?).map_err(|e| invalid("SSE data", e))?;
    Ok(StreamEvent {
        seq: event.id.parse().ok(),
        response: Arc::new(response),
    })
}

/// Every RPC is one request of the method named as the operation, its ProtoJSON the params.
macro_rules! jsonrpc_client {
    ($($rpc:tt)*) => {
        trident_http::json_client!(JsonRpcClient; $($rpc)*);
    };
}

trident_proto::for_each_rpc!(jsonrpc_client);

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    /// Found by `fuzz/`'s `sse_parser`: a body opening with a UTF-8 BOM made eventsource-stream
    /// panic (it slices one byte off the three-byte U+FEFF).
    #[test]
    fn an_sse_body_opening_with_a_bom_is_read() {
        let body = "\u{feff}id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t\"}}}\n\n";
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
