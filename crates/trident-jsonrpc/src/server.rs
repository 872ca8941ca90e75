//! The JSON-RPC server adapter: envelope → [`Operation`] → [`dispatch_json`] → envelope or SSE.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use std::borrow::Cow;

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use jsonrpsee_types::ErrorObjectOwned;
use serde_json::value::RawValue;
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, Operation, StreamEvent,
};
use trident_http::{JsonReply, PathVars, SseWriter, dispatch_json, write_event};

use crate::{JsonRpcOptions, json};

#[derive(Clone)]
struct AppState {
    svc: Arc<dyn A2aService>,
    options: JsonRpcOptions,
}

/// The JSON-RPC endpoint at `path` (the card's JSONRPC `url`).
pub fn router(svc: Arc<dyn A2aService>, path: &str, options: JsonRpcOptions) -> axum::Router {
    axum::Router::new()
        .route(path, axum::routing::post(handle))
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

/// The error reply to the JSON-RPC request `body` (HTTP 200, the envelope echoing the
/// request's id, or `null` when it cannot be read): for errors raised before the request
/// reaches the endpoint, such as a refused authentication.
pub fn error_reply(body: &[u8], e: &A2aError) -> Response {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let id = serde_json::from_slice::<IdOnly<'_>>(body)
        .ok()
        .and_then(|e| e.id)
        .map_or("null", |raw| raw.get());
    json(error_json(id, e))
}

/// Splices a serialized result into a response envelope without re-parsing it.
pub(crate) fn success_envelope(id: &str, result: &[u8]) -> Vec<u8> {
    // `{"jsonrpc":"2.0","id":` (22 bytes), `,"result":` (10) and the closing `}`.
    let mut out = Vec::with_capacity(result.len() + id.len() + 33);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    out
}

/// A request envelope. The id is kept as written, so any JSON-RPC id (negative or fractional
/// numbers included) is echoed unchanged; jsonrpsee's `Id` holds only unsigned integers.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    /// `None` when absent; `Some("null")` when null.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// Reads a field that is present (even as `null`) as `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

const NULL_ID: &str = "null";

fn invalid_request(message: impl Into<String>) -> A2aError {
    A2aError::new(ErrorKind::InvalidRequest, message)
}

/// Reads a request body as the endpoint does, before any service call: the id as written (a
/// JSON string, number or `null`), the operation named by `method`, and the raw `params`
/// (`{}` when absent). An `Err` carries the id to echo and the error to answer with. A v0.3
/// method name is "method not found" here; [`parse_call`] knows them.
#[cfg_attr(not(feature = "fuzzing"), allow(dead_code))]
pub(crate) fn parse_envelope(body: &[u8]) -> Result<(&str, Operation, &[u8]), (&str, A2aError)> {
    match parse_call(body, false)? {
        (id, Method::V1(op), params) => Ok((id, op, params)),
        (id, Method::V03(_), _) => Err((id, A2aError::of(ErrorKind::MethodNotFound))),
    }
}

/// The method of a request: a 1.0 RPC or a v0.3 method.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Method {
    V1(Operation),
    V03(trident_v03::jsonrpc::Method),
}

/// [`parse_envelope`], also knowing the v0.3 method names when `v03` is set.
pub(crate) fn parse_call(
    body: &[u8],
    v03: bool,
) -> Result<(&str, Method, &[u8]), (&str, A2aError)> {
    let trimmed = body.trim_ascii();
    if trimmed.first() == Some(&b'[') {
        return Err((NULL_ID, invalid_request("batch requests are not supported")));
    }
    let envelope: Envelope<'_> = match serde_json::from_slice(trimmed) {
        Ok(e) => e,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return Err((
                NULL_ID,
                A2aError::new(ErrorKind::ParseError, format!("invalid JSON: {e}")),
            ));
        }
        Err(e) => {
            return Err((
                NULL_ID,
                invalid_request(format!("not a JSON-RPC request: {e}")),
            ));
        }
    };
    let id = match envelope.id.map(RawValue::get) {
        Some(raw)
            if raw.starts_with('"')
                || raw.starts_with('-')
                || raw.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            raw
        }
        Some(NULL_ID) => NULL_ID,
        Some(_) => {
            return Err((
                NULL_ID,
                invalid_request("\"id\" must be a string, a number or null"),
            ));
        }
        None => {
            return Err((
                NULL_ID,
                invalid_request("\"id\" is required: A2A methods always answer"),
            ));
        }
    };
    if envelope.jsonrpc.as_deref() != Some("2.0") {
        return Err((id, invalid_request("\"jsonrpc\" must be \"2.0\"")));
    }
    let Some(method) = envelope.method else {
        return Err((id, invalid_request("\"method\" must be a string")));
    };
    let method = match Operation::from_name(&method) {
        Some(op) => Method::V1(op),
        None => match trident_v03::jsonrpc::Method::from_name(&method).filter(|_| v03) {
            Some(m) => Method::V03(m),
            None => {
                let e = A2aError::new(
                    ErrorKind::MethodNotFound,
                    format!("method {:?} does not exist", method.as_ref()),
                );
                return Err((id, e));
            }
        },
    };
    let params = envelope.params.map_or(&b"{}"[..], |p| p.get().as_bytes());
    Ok((id, method, params))
}

/// The call context of a request ([`trident_http::call_context`]).
fn call_context(parts: &axum::http::request::Parts) -> Result<CallContext, A2aError> {
    trident_http::call_context(
        &parts.headers,
        &parts.extensions,
        trident_core::Binding::JsonRpc,
    )
}

async fn handle(State(st): State<AppState>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    // Checked before the body is read: a request that is not JSON is refused whatever it
    // holds (a `text/plain` POST is what any web page can send cross-origin).
    let content_type = parts.headers.get(header::CONTENT_TYPE);
    if !trident_http::is_json_media_type(content_type.and_then(|v| v.to_str().ok())) {
        let e = trident_http::not_json(content_type.map(|v| v.as_bytes()));
        return json(error_json(NULL_ID, &e));
    }
    let body =
        match trident_http::read_request_body(body.into_data_stream(), st.options.max_body).await {
            Ok(b) => b,
            Err(trident_http::BodyError::TooLarge { limit }) => {
                return json(error_json(
                    NULL_ID,
                    &invalid_request(format!("the body exceeds {limit} bytes")),
                ));
            }
            Err(trident_http::BodyError::Body(e)) => {
                return json(error_json(
                    NULL_ID,
                    &invalid_request(format!("the body could not be read: {e}")),
                ));
            }
        };
    let (id, op, params) = match parse_call(&body, st.options.v03) {
        Ok((id, Method::V1(op), _)) if !st.options.v1 => {
            let e = A2aError::new(
                ErrorKind::MethodNotFound,
                format!(
                    "method {:?} is A2A 1.0; this agent speaks A2A v0.3 only (message/send, \
                     tasks/get, …)",
                    op.name()
                ),
            );
            return json(trident_v03::jsonrpc::error_envelope(id, &e));
        }
        Ok((id, Method::V1(op), params)) => (id, op, params),
        Ok((id, Method::V03(method), params)) => {
            let cx = match call_context(&parts) {
                Ok(cx) => cx,
                Err(e) => return json(trident_v03::jsonrpc::error_envelope(id, &e)),
            };
            return crate::v03::handle(&*st.svc, cx, id, method, params, &st.options).await;
        }
        Err((id, e)) => return json(error_json(id, &e)),
    };
    let cx = match call_context(&parts) {
        Ok(cx) => cx,
        Err(e) => return json(error_json(id, &e)),
    };
    match dispatch_json(
        &*st.svc,
        &cx,
        op,
        params,
        PathVars::default(),
        st.options.json,
    )
    .await
    {
        Ok(JsonReply::Unary(result)) => (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(success_envelope(id, &result)),
        )
            .into_response(),
        Ok(JsonReply::Stream(events)) => sse(events, id.to_owned(), st.options.keep_alive),
        Err(e) => json(error_json(id, &e)),
    }
}

/// A stream as SSE: each `data:` is a JSON-RPC response (`result`: the StreamResponse; an error
/// after the first event: `error`, then the end), `id:` the event's sequence number. Each event
/// is encoded once, straight into the body chunk (envelope included), and the events ready at
/// once share a chunk ([`SseWriter`]).
fn sse(events: EventStream, id_json: String, keep_alive: Duration) -> Response {
    let writer = SseWriter::new(
        events,
        keep_alive,
        move |item: Result<StreamEvent, A2aError>, out: &mut Vec<u8>| {
            let error = match item {
                Ok(ev) => {
                    let data = |out: &mut Vec<u8>| {
                        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                        out.extend_from_slice(id_json.as_bytes());
                        out.extend_from_slice(br#","result":"#);
                        serde_json::to_writer(&mut *out, &*ev.response)?;
                        out.push(b'}');
                        Ok::<_, serde_json::Error>(())
                    };
                    match write_event(out, None, ev.seq, data) {
                        Ok(()) => return,
                        Err(e) => A2aError::internal(e.to_string()),
                    }
                }
                Err(e) => e,
            };
            let _ = write_event(out, None, None, |out| {
                out.extend_from_slice(error_json(&id_json, &error).as_bytes());
                Ok::<_, Infallible>(())
            });
        },
    );
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(writer),
    )
        .into_response()
}

pub(crate) fn error_json(id_json: &str, e: &A2aError) -> String {
    let object = serde_json::to_string(&error_object(e)).unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0","id":{id_json},"error":{object}}}"#)
}
