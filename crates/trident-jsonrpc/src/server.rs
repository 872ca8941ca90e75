//! The JSON-RPC server adapter: envelope → [`Operation`] → [`dispatch_json`] → envelope or SSE.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use jsonrpsee_types::{ErrorObjectOwned, Id, Request as RpcRequest};
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, JsonReply, Operation, PathVars,
    dispatch_json,
};

/// Settings of the JSON-RPC endpoint.
#[derive(Debug, Clone)]
pub struct JsonRpcOptions {
    /// Largest request body accepted, in bytes.
    pub max_body: usize,
    /// Interval of SSE keep-alive comments on idle streams.
    pub keep_alive: Duration,
}

impl Default for JsonRpcOptions {
    fn default() -> Self {
        Self {
            max_body: 4 << 20,
            keep_alive: Duration::from_secs(15),
        }
    }
}

#[derive(Clone)]
struct AppState {
    svc: Arc<dyn A2aService>,
    options: JsonRpcOptions,
}

/// The JSON-RPC endpoint at `path` (the card's JSONRPC `url`).
pub fn router(svc: Arc<dyn A2aService>, path: &str, options: JsonRpcOptions) -> axum::Router {
    let limit = options.max_body;
    axum::Router::new()
        .route(path, axum::routing::post(handle))
        .layer(axum::extract::DefaultBodyLimit::max(limit))
        .with_state(AppState { svc, options })
}

/// The JSON-RPC error object of an error: code from the wire table, `data` the details array.
pub fn error_object(e: &A2aError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        e.wire().jsonrpc,
        e.message().to_owned(),
        Some(e.details_json()),
    )
}

fn error_envelope(id: &Id<'_>, e: &A2aError) -> String {
    error_json(&id_json(id), e)
}

fn id_json(id: &Id<'_>) -> String {
    serde_json::to_string(id).unwrap_or_else(|_| "null".to_owned())
}

fn json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Splices a serialized result into a response envelope without re-parsing it.
fn success_envelope(id: &str, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + id.len() + 32);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    out
}

async fn handle(
    State(st): State<AppState>,
    principal: Option<axum::Extension<trident_core::Principal>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let trimmed = body.trim_ascii();
    if trimmed.first() == Some(&b'[') {
        let e = A2aError::new(
            ErrorKind::InvalidRequest,
            "batch requests are not supported",
        );
        return json(error_envelope(&Id::Null, &e));
    }
    let request: RpcRequest<'_> = match serde_json::from_slice(trimmed) {
        Ok(r) => r,
        Err(e) => return json(envelope_failure(trimmed, &e)),
    };
    let id = request.id.clone();
    let Some(op) = Operation::from_name(&request.method) else {
        let e = A2aError::new(
            ErrorKind::MethodNotFound,
            format!("method {:?} does not exist", request.method.as_ref()),
        );
        return json(error_envelope(&id, &e));
    };
    let mut cx = CallContext::from_service_params(|n| header_str(&headers, n));
    if let Some(axum::Extension(p)) = principal {
        cx.principal = p;
    }
    let params = request
        .params
        .as_ref()
        .map_or(&b"{}"[..], |p| p.get().as_bytes());
    let id_json = id_json(&id);
    match dispatch_json(&*st.svc, &cx, op, params, PathVars::default()).await {
        Ok(JsonReply::Unary(result)) => (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(success_envelope(&id_json, &result)),
        )
            .into_response(),
        Ok(JsonReply::Stream(events)) => sse(events, id_json, st.options.keep_alive),
        Err(e) => json(error_json(&id_json, &e)),
    }
}

/// The error for a body that is not a valid request: -32700 if it is not JSON, -32600 if it
/// is JSON but not a JSON-RPC 2.0 request (keeping its `id` when one can be read).
fn envelope_failure(body: &[u8], err: &serde_json::Error) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Err(_) => error_envelope(
            &Id::Null,
            &A2aError::new(ErrorKind::ParseError, format!("invalid JSON: {err}")),
        ),
        Ok(value) => {
            let id = match value.get("id") {
                Some(serde_json::Value::Number(n)) => n.as_u64().map_or(Id::Null, Id::Number),
                Some(serde_json::Value::String(s)) => Id::Str(s.clone().into()),
                _ => Id::Null,
            };
            let why = if value.get("jsonrpc").and_then(|v| v.as_str()) != Some("2.0") {
                "\"jsonrpc\" must be \"2.0\"".to_owned()
            } else if value.get("method").and_then(|m| m.as_str()).is_none() {
                "\"method\" must be a string".to_owned()
            } else {
                format!("not a JSON-RPC request: {err}")
            };
            error_envelope(&id, &A2aError::new(ErrorKind::InvalidRequest, why))
        }
    }
}

fn sse(events: EventStream, id_json: String, keep_alive: Duration) -> Response {
    let frames = events.map(move |item| {
        let frame = match item {
            Ok(ev) => match serde_json::to_vec(&*ev.response) {
                Ok(result) => {
                    let data =
                        String::from_utf8(success_envelope(&id_json, &result)).unwrap_or_default();
                    let frame = Event::default().data(data);
                    match ev.seq {
                        Some(seq) => frame.id(seq.to_string()),
                        None => frame,
                    }
                }
                Err(e) => {
                    Event::default().data(error_json(&id_json, &A2aError::internal(e.to_string())))
                }
            },
            Err(e) => Event::default().data(error_json(&id_json, &e)),
        };
        Ok::<_, Infallible>(frame)
    });
    let mut response = Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    response
}

fn error_json(id_json: &str, e: &A2aError) -> String {
    let object = serde_json::to_string(&error_object(e)).unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0","id":{id_json},"error":{object}}}"#)
}
