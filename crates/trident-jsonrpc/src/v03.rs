//! The A2A v0.3 methods on the JSON-RPC endpoint.
//!
//! A request is v0.3 when its method is a v0.3 name (`message/send`, `message/stream`,
//! `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/{set,get,
//! list,delete}`, `agent/getAuthenticatedExtendedCard`); its `A2A-Version` must then be
//! absent or 0.3. `trident-v03` reads its params into the one 1.0 request, the service answers
//! it, and the answer goes back in v0.3's shapes: bare results with `kind`, lower-case states,
//! `final` on status updates, v0.3 error codes with a free-form `data`. Streams are SSE
//! whose every `data:` is a JSON-RPC response holding one bare event.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use trident_core::{A2aService, CallContext};
use trident_v03::jsonrpc::{self as rpc, Method, Reply};

use crate::json;

/// Serves one v0.3 call whose envelope has been read: `id_json` is the id as written.
pub(crate) async fn handle(
    svc: &dyn A2aService,
    mut cx: CallContext,
    id_json: &str,
    method: Method,
    params: &[u8],
    options: &crate::JsonRpcOptions,
) -> Response {
    let error = |e| json(rpc::error_envelope(id_json, &e));
    if let Err(e) = trident_v03::version::admit_v03(&mut cx, method.name()) {
        return error(e);
    }
    let request = match rpc::request(method, params, options.json) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let reply = match trident_v03::call::call(svc, &cx, request)
        .await
        .and_then(rpc::reply)
    {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    match reply {
        Reply::Unary(result) => json(rpc::success_envelope(id_json, &result)),
        Reply::Stream(events) => sse(events, id_json.to_owned(), options.keep_alive),
    }
}

fn sse(
    events: futures::stream::BoxStream<
        'static,
        Result<(Option<u64>, serde_json::Value), trident_core::A2aError>,
    >,
    id_json: String,
    keep_alive: Duration,
) -> Response {
    let frames = events.map(move |item| {
        let frame = match item {
            Ok((seq, result)) => {
                let frame = Event::default().data(rpc::success_envelope(&id_json, &result));
                match seq {
                    Some(seq) => frame.id(seq.to_string()),
                    None => frame,
                }
            }
            Err(e) => Event::default().data(rpc::error_envelope(&id_json, &e)),
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
