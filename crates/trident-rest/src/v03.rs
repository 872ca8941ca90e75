//! The A2A v0.3 HTTP+JSON routes (`/v1/message:send`, `/v1/tasks/{id}`, …) beside the 1.0
//! ones on the same listener. Matching and translation are `trident-v03`'s
//! ([`trident_v03::rest`]); this module frames them: body limit, content type, `A2A-Version`,
//! SSE, and v0.3's error bodies (`{code, message, data}` with the 1.0 table's HTTP status).
//!
//! A `/v1/...` path is also a 1.0 route under a tenant named `v1`: a request that says
//! `A2A-Version: 1.x` is read as that 1.0 route, any other as v0.3.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use trident_core::{A2aError, A2aService, CallContext, ErrorKind};
use trident_v03::rest::{self, Reply, Route};

/// The v0.3 route of a request, unless it says it is 1.0.
pub(crate) fn route_of(request: &Request) -> Option<Route> {
    // The path first: it rules out most 1.0 requests without a header lookup.
    let route = rest::match_route(request.method().as_str(), request.uri().path())?;
    let says_v1 = request
        .headers()
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.trim();
            v == "1" || v.starts_with("1.")
        });
    (!says_v1).then_some(route)
}

/// A v0.3 error response.
pub fn error_response(e: &A2aError) -> Response {
    let status = StatusCode::from_u16(trident_v03::error::http_status(e))
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        trident_v03::error::error_object(e).to_string(),
    )
        .into_response()
}

/// Serves a request matched to the v0.3 `route`.
pub(crate) async fn serve(
    svc: &dyn A2aService,
    mut cx: CallContext,
    route: Route,
    request: Request,
    options: &crate::RestOptions,
) -> Response {
    match call(svc, &mut cx, route, request, options).await {
        Ok(Reply::Body(body)) => (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(body),
        )
            .into_response(),
        Ok(Reply::Stream(events)) => sse(events, options.keep_alive),
        Err(e) => error_response(&e),
    }
}

async fn call(
    svc: &dyn A2aService,
    cx: &mut CallContext,
    route: Route,
    request: Request,
    options: &crate::RestOptions,
) -> Result<Reply, A2aError> {
    let max_body = options.max_body;
    trident_v03::version::admit_v03(cx, request.uri().path())?;
    let (parts, body) = request.into_parts();
    let body = if route.has_body() {
        let content_type = parts.headers.get(header::CONTENT_TYPE);
        if content_type.is_some()
            && !trident_http::is_json_media_type(content_type.and_then(|v| v.to_str().ok()))
        {
            return Err(trident_http::not_json(content_type.map(|v| v.as_bytes())));
        }
        trident_http::read_request_body(body.into_data_stream(), max_body)
            .await
            .map_err(|_| {
                A2aError::new(
                    ErrorKind::InvalidRequest,
                    format!("the body exceeds {max_body} bytes or could not be read"),
                )
            })?
    } else {
        Default::default()
    };
    let query = parts
        .uri
        .query()
        .map(crate::serde_urlencoded_pairs)
        .unwrap_or_default();
    let request = rest::request(&route, &query, &body, options.json)?;
    rest::reply(trident_v03::call::call(svc, cx, request).await?)
}

fn sse(events: trident_core::EventStream, keep_alive: Duration) -> Response {
    let frames = events.map(|item| {
        let frame = match item.and_then(|ev| Ok((ev.seq, rest::event_body(&ev.response)?))) {
            Ok((seq, data)) => {
                let frame = Event::default().data(String::from_utf8_lossy(&data));
                match seq {
                    Some(seq) => frame.id(seq.to_string()),
                    None => frame,
                }
            }
            Err(e) => Event::default()
                .event("error")
                .data(trident_v03::error::error_object(&e).to_string()),
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
