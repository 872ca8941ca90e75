//! [`JsonRpcClient`]: `A2aService` over JSON-RPC 2.0 (HTTP POST, SSE for streams).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use trident_core::deadline::{bounded, bounded_stream};
use trident_core::{A2aError, CallContext, ErrorKind, EventStream, Operation, StreamEvent};
use trident_http::{HttpClient, SseEvent};
use trident_proto as pb;

/// A JSON-RPC client of one agent interface.
#[derive(Debug)]
pub struct JsonRpcClient {
    http: HttpClient,
    url: String,
    tenant: String,
    next_id: AtomicU64,
}

/// The name of this binding in its clients' errors.
pub(crate) const BINDING: &str = "JSON-RPC";

/// The POST of one JSON-RPC request envelope (`id`, `method`, `params`) to `url`, asking for
/// SSE when `stream`, with the client's headers and query and the call's service parameters
/// ([`HttpClient::with_call`]). The 1.0 and the v0.3 client both send through it.
pub(crate) fn post_envelope(
    http: &HttpClient,
    url: &str,
    cx: &CallContext,
    (id, method, params): (u64, &str, serde_json::Value),
    stream: bool,
) -> reqwest::RequestBuilder {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let builder = http
        .request(reqwest::Method::POST, url)
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
    http.with_call(builder, cx)
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
        Ok(Self::with_http(HttpClient::new(BINDING)?, url))
    }

    /// A client sharing an existing reqwest client.
    pub fn with_client(http: reqwest::Client, url: &str) -> Self {
        Self::with_http(HttpClient::with_client(http, BINDING), url)
    }

    fn with_http(http: HttpClient, url: &str) -> Self {
        Self {
            http,
            url: url.to_owned(),
            tenant: String::new(),
            next_id: AtomicU64::new(1),
        }
    }

    trident_http::http_client_setters!();

    /// Sends `tenant` (the interface's) in every request that names none.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
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
        Ok(post_envelope(
            &self.http,
            &self.url,
            cx,
            (id, op.name(), params),
            stream,
        ))
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
        let response = self.http.send(op.name(), request).await?;
        let status = response.status();
        let body = self.http.body(response).await?;
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
        let response = sse_response(&self.http, op.name(), request).await?;
        let body = self.http.chunks(response, "SSE stream");
        Ok(sse_events(body, self.http.max_response_size()).boxed())
    }
}

/// Sends a streaming method's request (1.0 or v0.3) and returns its SSE response. An answer
/// that is not a stream is the error it carries: an error known before the first event comes
/// as a plain JSON-RPC response, and one from in front of the agent (a proxy's 401) may not be
/// JSON-RPC at all; anything else is `InvalidAgentResponse`.
pub(crate) async fn sse_response(
    http: &HttpClient,
    method: &str,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, A2aError> {
    let response = http.send(method, request).await?;
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    if is_sse {
        return Ok(response);
    }
    let status = response.status();
    let body = http.body(response).await?;
    result_of(envelope(method, status, &body)?)?;
    Err(invalid(
        method,
        "a streaming method answered without a stream",
    ))
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
