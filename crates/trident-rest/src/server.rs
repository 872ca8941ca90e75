//! The HTTP+JSON server adapter: route (from the descriptor) → request JSON (body, path,
//! query) → [`dispatch_json`] → JSON or SSE. No business rules here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prost_reflect::{DescriptorPool, Kind};
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, Operation, StreamEvent,
};
use trident_http::{EncodeEvent, JsonReply, PathVars, SseWriter, dispatch_json, write_event};

use crate::error::{error_body, error_body_with_code};
use crate::routes::{Bound, Miss, Route, RouteError, Routes};
use crate::{RestOptions, serde_urlencoded_pairs};

/// How a query parameter's text becomes JSON, by the type of the field it names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum QueryKind {
    Bool,
    Number,
    Text,
}

/// Per operation: query parameter name (JSON or proto name) → (JSON name, kind).
pub(crate) type QueryTable = HashMap<Operation, HashMap<String, (String, QueryKind)>>;

#[derive(Clone)]
struct AppState {
    svc: Arc<dyn A2aService>,
    routes: Arc<Routes>,
    query: Arc<QueryTable>,
    options: RestOptions,
}

pub(crate) fn query_table() -> Result<QueryTable, RouteError> {
    let pool = DescriptorPool::decode(trident_proto::FILE_DESCRIPTOR_SET)?;
    let service = pool
        .get_service_by_name(trident_proto::SERVICE_NAME)
        .ok_or(RouteError::Missing(trident_proto::SERVICE_NAME))?;
    let mut table = HashMap::new();
    for method in service.methods() {
        let Some(op) = Operation::from_name(method.name()) else {
            continue;
        };
        let mut fields = HashMap::new();
        for f in method.input().fields() {
            let kind = match f.kind() {
                Kind::Bool => QueryKind::Bool,
                Kind::Int32
                | Kind::Int64
                | Kind::Uint32
                | Kind::Uint64
                | Kind::Sint32
                | Kind::Sint64
                | Kind::Double
                | Kind::Float => QueryKind::Number,
                _ => QueryKind::Text,
            };
            let json = f.json_name().to_owned();
            fields.insert(f.name().to_owned(), (json.clone(), kind));
            fields.insert(json.clone(), (json, kind));
        }
        table.insert(op, fields);
    }
    Ok(table)
}

/// The HTTP+JSON routes as an axum router (a fallback handler, so it can sit under any other
/// routes on the same listener).
pub fn router(svc: Arc<dyn A2aService>, options: RestOptions) -> Result<axum::Router, RouteError> {
    let state = AppState {
        svc,
        routes: Arc::new(Routes::from_descriptor()?),
        query: Arc::new(query_table()?),
        options,
    };
    Ok(axum::Router::new().fallback(handle).with_state(state))
}

/// An error as an HTTP response.
///
/// An error that says when to retry ([`A2aError::retry_after`]) also gets `Retry-After`.
pub fn error_response(e: &A2aError) -> Response {
    Refusal::from(e.clone()).into_response()
}

/// A request refused at the HTTP level, before any route is matched: `status` (e.g. 400, 501)
/// with the AIP-193 body of `e`, whose `code` is that status.
pub fn refusal_response(status: StatusCode, e: &A2aError) -> Response {
    Refusal {
        status,
        error: e.clone(),
        allow: None,
    }
    .into_response()
}

/// The call context of a request ([`trident_http::call_context`]), with the version read from
/// `query` too when no header sends it.
fn call_context(
    headers: &HeaderMap,
    extensions: &axum::http::Extensions,
    query: &[(String, String)],
) -> Result<CallContext, A2aError> {
    let mut cx = trident_http::call_context(headers, extensions, trident_core::Binding::Rest)?;
    if cx.version.is_none() {
        // The spec allows the version as a query parameter too.
        cx.version = query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("a2a-version"))
            .map(|(_, v)| v.clone());
    }
    Ok(cx)
}

fn query_json(
    params: &[(String, String)],
    fields: Option<&HashMap<String, (String, QueryKind)>>,
) -> Result<Vec<u8>, A2aError> {
    let mut object = serde_json::Map::new();
    for (key, value) in params {
        let Some((json_name, kind)) = fields.and_then(|f| f.get(key)) else {
            continue;
        };
        let v = match kind {
            QueryKind::Bool => match value.as_str() {
                "true" | "1" => serde_json::Value::Bool(true),
                "false" | "0" => serde_json::Value::Bool(false),
                _ => {
                    return Err(A2aError::invalid_field(
                        json_name,
                        format!("{value:?} is not a boolean"),
                    ));
                }
            },
            QueryKind::Number | QueryKind::Text => serde_json::Value::String(value.clone()),
        };
        object.insert(json_name.clone(), v);
    }
    serde_json::to_vec(&object).map_err(|e| A2aError::internal(e.to_string()))
}

/// A request refused at the HTTP level, before it reaches the A2A layer: HTTP's own status
/// (405 with `Allow`, 413, 415) and the AIP-193 body of `error`, whose ErrorInfo names the
/// A2A error kind. Every other failure is an [`A2aError`] answered through the wire table.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) error: A2aError,
    allow: Option<String>,
}

impl From<A2aError> for Refusal {
    fn from(error: A2aError) -> Self {
        let status =
            StatusCode::from_u16(error.wire().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Self {
            status,
            error,
            allow: None,
        }
    }
}

impl Refusal {
    fn into_response(self) -> Response {
        let body = error_body_with_code(&self.error, self.status.as_u16()).to_string();
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if let Some(allow) = self
            .allow
            .and_then(|a| header::HeaderValue::from_str(&a).ok())
        {
            response.headers_mut().insert(header::ALLOW, allow);
        }
        if let Some(seconds) = self.error.retry_after() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        response
    }
}

async fn handle(State(st): State<AppState>, request: Request) -> Response {
    if st.options.v03
        && let Some(route) = crate::v03::route_of(&request)
    {
        let cx = match call_context(request.headers(), request.extensions(), &[]) {
            Ok(cx) => cx,
            Err(e) => return crate::v03::error_response(&e),
        };
        return crate::v03::serve(&*st.svc, cx, route, request, &st.options).await;
    }
    if !st.options.v1 {
        let e = trident_core::A2aError::new(
            trident_core::ErrorKind::MethodNotFound,
            format!(
                "{} {} is not a route of this agent, which speaks A2A v0.3 only (/v1/...)",
                request.method(),
                request.uri().path()
            ),
        );
        return crate::v03::error_response(&e);
    }
    match serve(&st, request).await {
        Ok(r) => r,
        Err(refusal) => refusal.into_response(),
    }
}

async fn serve(st: &AppState, request: Request) -> Result<Response, Refusal> {
    let (parts, body) = request.into_parts();
    let matched = match_request(
        &st.routes,
        parts.method.as_str(),
        parts.uri.path(),
        parts.uri.query(),
        &parts.headers,
    )?;
    let mut cx = call_context(&parts.headers, &parts.extensions, &matched.query)?;
    let body = if matched.route.body {
        Some(
            trident_http::read_request_body(body.into_data_stream(), st.options.max_body)
                .await
                .map_err(too_large)?,
        )
    } else {
        None
    };
    if let Some(body) = &body {
        matched.check_untyped_body(body)?;
    }
    let (op, body, tenant, vars) = request_of(matched, &st.query, body)?;
    cx.tenant = tenant;
    match dispatch_json(&*st.svc, &cx, op, &body, vars, st.options.json).await? {
        JsonReply::Unary(json) => Ok((
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(json),
        )
            .into_response()),
        JsonReply::Stream(events) => Ok(sse(events, st.options.keep_alive)),
    }
}

/// A request matched to its route, before its body is read.
pub(crate) struct Matched<'r> {
    route: &'r Route,
    bound: Bound,
    query: Vec<(String, String)>,
    /// The request said nothing about its body's type.
    untyped: bool,
}

impl Matched<'_> {
    /// Whether the request message comes from the body.
    #[cfg_attr(not(feature = "fuzzing"), allow(dead_code))]
    pub(crate) fn route_has_body(&self) -> bool {
        self.route.body
    }
}

/// The first half of decoding a request, before its body is read: the route of `method` and
/// `path`, the variables it binds, the query pairs, and (for routes with a body) the
/// content-type check.
pub(crate) fn match_request<'r>(
    routes: &'r Routes,
    method: &str,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Matched<'r>, Refusal> {
    let (route, bound) = match routes.find(method, path) {
        Ok(found) => found,
        Err(Miss::Method(allowed)) => {
            let allow = allowed.join(", ");
            return Err(Refusal {
                status: StatusCode::METHOD_NOT_ALLOWED,
                error: A2aError::new(
                    ErrorKind::MethodNotFound,
                    format!("{method} is not allowed on {path}; allowed: {allow}"),
                ),
                allow: Some(allow),
            });
        }
        Err(Miss::Path) => {
            return Err(A2aError::new(
                ErrorKind::MethodNotFound,
                format!("no A2A operation at {path}"),
            )
            .into());
        }
    };
    // A body that says it is not JSON is refused before it is read. One that says nothing
    // is refused once read unless it is empty (`curl -X POST …/tasks/ID:cancel`): an empty
    // body is the empty request, and a non-empty one must say it is JSON.
    let content_type = headers.get(header::CONTENT_TYPE);
    let untyped = content_type.is_none();
    if route.body
        && !untyped
        && !trident_http::is_json_media_type(content_type.and_then(|v| v.to_str().ok()))
    {
        return Err(not_json(content_type));
    }
    let query = query.map(serde_urlencoded_pairs).unwrap_or_default();
    Ok(Matched {
        route,
        bound,
        query,
        untyped,
    })
}

/// 415: the body is not JSON (`content_type` is what the request said, if anything).
fn not_json(content_type: Option<&header::HeaderValue>) -> Refusal {
    Refusal {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        error: trident_http::not_json(content_type.map(|v| v.as_bytes())),
        allow: None,
    }
}

impl Matched<'_> {
    /// Refuses a non-empty body that came without a `Content-Type`.
    pub(crate) fn check_untyped_body(&self, body: &[u8]) -> Result<(), Refusal> {
        if self.untyped && self.route.body && !body.trim_ascii().is_empty() {
            Err(not_json(None))
        } else {
            Ok(())
        }
    }
}

/// 413 for a body over the limit; a body that failed for another reason (the client went
/// away, or a read timed out) is a 400.
fn too_large(e: trident_http::BodyError<axum::Error>) -> Refusal {
    match e {
        trident_http::BodyError::TooLarge { limit } => Refusal {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            error: A2aError::new(
                ErrorKind::InvalidRequest,
                format!("the body exceeds {limit} bytes"),
            )
            .with_meta("maxBodyBytes", limit.to_string()),
            allow: None,
        },
        trident_http::BodyError::Body(e) => A2aError::new(
            ErrorKind::InvalidRequest,
            format!("the body could not be read: {e}"),
        )
        .into(),
    }
}

/// The second half: the request JSON (`body` for routes with one, else built from the query),
/// the tenant, and the path variables, as [`dispatch_json`] takes them.
pub(crate) fn request_of(
    matched: Matched<'_>,
    table: &QueryTable,
    body: Option<Bytes>,
) -> Result<(Operation, Bytes, String, PathVars), A2aError> {
    let Matched {
        route,
        bound,
        query,
        ..
    } = matched;
    let op = route.op;
    let body = match body {
        Some(body) => body,
        None => query_json(&query, table.get(&op))?.into(),
    };
    let mut tenant = bound.tenant.unwrap_or_default();
    if tenant.is_empty() && !route.body {
        // Transcoding puts an unbound `tenant` in the query string of body-less routes.
        if let Some((_, t)) = query.iter().find(|(k, _)| k == "tenant") {
            tenant = t.clone();
        }
    }
    let vars = PathVars {
        id: bound.id,
        task_id: bound.task_id,
    };
    Ok((op, body, tenant, vars))
}

/// A stream as SSE: `id:` is the event's sequence number, `data:` the bare StreamResponse; an
/// error after the first event is one `event: error` with the AIP-193 body, then the end. Each
/// event is encoded once, straight into the body chunk, and the events ready at once share a
/// chunk ([`SseWriter`]).
pub fn sse(events: EventStream, keep_alive: Duration) -> Response {
    let writer = SseWriter::new(
        events,
        keep_alive,
        |item: Result<StreamEvent, A2aError>, out: &mut Vec<u8>| {
            let error = match item {
                Ok(ev) => {
                    let data = |out: &mut Vec<u8>| serde_json::to_writer(out, &*ev.response);
                    match write_event(out, None, ev.seq, data) {
                        Ok(()) => return,
                        Err(e) => A2aError::internal(e.to_string()),
                    }
                }
                Err(e) => e,
            };
            let body = |out: &mut Vec<u8>| serde_json::to_writer(out, &error_body(&error));
            if let Err(e) = write_event(out, Some("error"), None, body) {
                tracing::error!(error = %e, "cannot encode an SSE error event");
            }
        },
    );
    sse_response(writer)
}

/// The `200 text/event-stream` response of an SSE body.
pub(crate) fn sse_response<E: EncodeEvent + Unpin>(writer: SseWriter<E>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(writer),
    )
        .into_response()
}
