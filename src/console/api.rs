//! The console's HTTP surface: the embedded page and the JSON API under `/api/`.
//!
//! Every API call is a `POST` of one JSON object ([`Call`]): the agent, the credentials typed
//! into the page, the binding picked from the card, and what the call needs. Answers are JSON
//! (the protocol's own objects in ProtoJSON); the streams (`/api/stream`,
//! `/api/tasks/subscribe`) answer `text/event-stream`, one `data:` line per event. A bad
//! request is `400` with `{"error": {"code", "message"}}`, a failure of the agent `502` with
//! the client commands' error object; nothing here panics on what the page or the agent send.
//!
//! The API only answers same-origin JSON requests (`content-type: application/json`, which a
//! page elsewhere cannot send without a preflight that is never allowed, and an `Origin`, when
//! sent, naming this server), and, unless `--allow-remote`, only under a loopback `Host` (so
//! a rebound DNS name cannot reach it either).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use trident::client::{Binding, Protocol};
use trident::proto as pb;

use super::assets;
use crate::client::{self, Target};
use crate::failure::Failure;

/// How long a card fetch or a unary call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The console's settings.
#[derive(Debug, Clone)]
pub(crate) struct State {
    /// The agent named on the command line: the page starts with it, and it alone may be a
    /// local card file.
    pub(crate) preset: Option<String>,
    /// Whether non-loopback `Host`s are answered.
    pub(crate) allow_remote: bool,
}

/// An API call answered by another module of the console (conformance, the bindings side by
/// side): from the console's settings and the request's body, the answer. It is guarded as
/// every API call is.
pub(crate) type Extra =
    for<'a> fn(&'a State, &'a [u8]) -> futures::future::BoxFuture<'a, Result<Response, ApiError>>;

/// The router: the page, its assets, and the API, with the `extra` calls at their paths.
pub(crate) fn router(state: State, extra: &[(&'static str, Extra)]) -> axum::Router {
    let state = Arc::new(state);
    let asset = |body: &'static str, content_type: &'static str| {
        get(move || async move {
            (
                [
                    (header::CONTENT_TYPE, content_type),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                body,
            )
        })
    };
    let api = |endpoint: Endpoint| {
        let state = state.clone();
        post(move |headers: HeaderMap, body: Bytes| async move {
            match guard(&state, &headers) {
                Ok(()) => endpoint.answer(&state, &body).await,
                Err(e) => e.into_response(),
            }
        })
    };
    let config = {
        let state = state.clone();
        get(move |headers: HeaderMap| async move {
            match guard_host(&state, &headers) {
                Ok(()) => axum::Json(json!({ "agent": state.preset })).into_response(),
                Err(e) => e.into_response(),
            }
        })
    };
    let mut router = axum::Router::new();
    for (path, call) in extra {
        router = router.route(path, api(Endpoint::Extra(*call)));
    }
    router
        .route("/", asset(assets::INDEX_HTML, "text/html; charset=utf-8"))
        .route(
            "/console.css",
            asset(assets::CONSOLE_CSS, "text/css; charset=utf-8"),
        )
        .route(
            "/console.js",
            asset(assets::CONSOLE_JS, "text/javascript; charset=utf-8"),
        )
        .route(
            "/conformance.js",
            asset(assets::CONFORMANCE_JS, "text/javascript; charset=utf-8"),
        )
        .route("/api/config", config)
        .route("/api/card", api(Endpoint::Card))
        .route("/api/send", api(Endpoint::Send))
        .route("/api/stream", api(Endpoint::Stream))
        .route("/api/tasks/list", api(Endpoint::List))
        .route("/api/tasks/get", api(Endpoint::Get))
        .route("/api/tasks/cancel", api(Endpoint::Cancel))
        .route("/api/tasks/subscribe", api(Endpoint::Subscribe))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such page or API call",
            )
            .into_response()
        })
}

/// A refusal of an API request, as JSON.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The client commands' error object, for a failure of the agent.
    envelope: Option<Value>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            envelope: None,
        }
    }

    /// A request the page should not have sent.
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// The JSON body.
    pub(crate) fn body(&self) -> Value {
        match &self.envelope {
            Some(envelope) => envelope.clone(),
            None => json!({ "error": { "code": self.code, "message": self.message } }),
        }
    }
}

impl From<Failure> for ApiError {
    fn from(failure: Failure) -> Self {
        let envelope = failure.envelope(None);
        Self {
            status: StatusCode::BAD_GATEWAY,
            code: failure.code(),
            message: failure.to_string(),
            envelope: Some(envelope),
        }
    }
}

impl From<trident::A2aError> for ApiError {
    fn from(e: trident::A2aError) -> Self {
        Failure::from_a2a(e, false).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

/// Whether the `Host` is one the console answers: a loopback address or `localhost`, unless
/// `--allow-remote`.
fn guard_host(state: &State, headers: &HeaderMap) -> Result<(), ApiError> {
    if state.allow_remote {
        return Ok(());
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if loopback_authority(host) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("the console answers on loopback only, not under the host {host:?}"),
        ))
    }
}

/// Whether `authority` (`host[:port]`) names this machine's loopback.
pub(crate) fn loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The checks of every API request: the host, a JSON body, and no other page's origin.
fn guard(state: &State, headers: &HeaderMap) -> Result<(), ApiError> {
    guard_host(state, headers)?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the API request as application/json",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).map(|h| h.as_bytes());
        let same = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .is_some_and(|(_, authority)| Some(authority.as_bytes()) == host);
        if !same {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "the console's API answers its own page only",
            ));
        }
    }
    Ok(())
}

/// Credentials and headers typed into the page, sent with each call.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Auth {
    /// Sent as `Authorization: Bearer …`.
    #[serde(default)]
    pub(crate) bearer: Option<String>,
    /// Sent where the card's API-key scheme says.
    #[serde(default)]
    pub(crate) api_key: Option<String>,
    /// Custom headers (gRPC metadata on gRPC).
    #[serde(default)]
    pub(crate) headers: Vec<Header>,
}

/// One custom header.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header {
    /// Its name.
    pub(crate) name: String,
    /// Its value.
    pub(crate) value: String,
}

/// One API request: the agent, how to reach it, and the call's own fields (each endpoint
/// reads those it needs and refuses a request without them).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Call {
    /// The agent: a host, an origin or a card URL.
    pub(crate) agent: String,
    #[serde(default)]
    pub(crate) auth: Auth,
    /// The binding to call on (`JSONRPC`, `HTTP+JSON`, `GRPC`), one the card offers.
    #[serde(default)]
    pub(crate) binding: Option<String>,
    /// The message's text (send, stream).
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// The message's metadata: a JSON object.
    #[serde(default)]
    pub(crate) metadata: Option<Value>,
    /// The task to continue (send, stream), or the task (get, cancel, subscribe).
    #[serde(default)]
    pub(crate) task_id: Option<String>,
    /// The context to send in, or to list.
    #[serde(default)]
    pub(crate) context_id: Option<String>,
    /// Send: answer at once instead of waiting for the task to settle.
    #[serde(default)]
    pub(crate) return_immediately: bool,
    /// List: only tasks in this state (`working`, `TASK_STATE_WORKING`, …).
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// List: how many per page.
    #[serde(default)]
    pub(crate) page_size: Option<i32>,
    /// List: the page after this token.
    #[serde(default)]
    pub(crate) page_token: Option<String>,
    /// List and get: how much history to include.
    #[serde(default)]
    pub(crate) history_length: Option<i32>,
    /// List: include the tasks' artifacts.
    #[serde(default)]
    pub(crate) include_artifacts: Option<bool>,
}

/// Reads a request body.
pub(crate) fn parse(body: &[u8]) -> Result<Call, ApiError> {
    let call: Call = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad(format!("the request is not a valid API call: {e}")))?;
    if call.agent.trim().is_empty() {
        return Err(ApiError::bad("no agent: give its URL or host"));
    }
    Ok(call)
}

impl Call {
    /// The client commands' options for this call.
    pub(crate) fn target(&self, state: &State) -> Result<Target, ApiError> {
        let agent = self.agent.trim();
        let preset = state.preset.as_deref() == Some(agent);
        // Only the command line may name a card file or a catalog entry: the page names
        // agents on the network.
        if !preset {
            let remote = matches!(client::card_source(agent), client::CardSource::Url(_));
            if !remote || agent.starts_with("catalog:") {
                return Err(ApiError::bad(format!(
                    "{agent:?}: give the agent's URL or host (http://HOST:PORT or HOST:PORT)"
                )));
            }
        }
        let mut svc_param = Vec::new();
        for h in &self.auth.headers {
            let name = h.name.trim();
            if name.is_empty() && h.value.is_empty() {
                continue;
            }
            if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(ApiError::bad(format!("{name:?} is not a header name")));
            }
            if axum::http::HeaderValue::from_str(h.value.trim()).is_err() {
                // The value is not repeated: it may be a secret.
                return Err(ApiError::bad(format!(
                    "the value of the header {name} is not a valid header value"
                )));
            }
            svc_param.push(format!("{name}:{}", h.value));
        }
        let given = |v: &Option<String>| {
            v.as_ref()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        };
        Ok(Target {
            agent_card: Some(agent.to_owned()),
            bearer: given(&self.auth.bearer),
            api_key: given(&self.auth.api_key),
            svc_param,
            timeout: Some(CALL_TIMEOUT),
            ..Target::default()
        })
    }

    /// The task id, required.
    pub(crate) fn task(&self) -> Result<String, ApiError> {
        self.task_id
            .as_ref()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::bad("no task id"))
    }

    /// The message to send: the text, the metadata, and the task and context to send in.
    pub(crate) fn message(&self) -> Result<pb::SendMessageRequest, ApiError> {
        let text = self.text.as_deref().unwrap_or_default();
        if text.trim().is_empty() {
            return Err(ApiError::bad("the message is empty: type some text"));
        }
        let mut message =
            pb::Message::user(uuid::Uuid::new_v4().to_string(), vec![pb::Part::text(text)]);
        message.task_id = self.task_id.clone().unwrap_or_default().trim().to_owned();
        message.context_id = self
            .context_id
            .clone()
            .unwrap_or_default()
            .trim()
            .to_owned();
        message.metadata = match &self.metadata {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) if map.is_empty() => None,
            Some(Value::Object(map)) => Some(pb::wkt::Struct::from_json(map.clone())),
            Some(_) => return Err(ApiError::bad("the metadata must be a JSON object")),
        };
        let configuration = self
            .return_immediately
            .then(|| pb::SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            });
        Ok(pb::SendMessageRequest {
            message: Some(message),
            configuration,
            ..Default::default()
        })
    }

    /// The ListTasks request of the filters.
    pub(crate) fn list(&self) -> Result<pb::ListTasksRequest, ApiError> {
        let status = match self.status.as_deref().map(str::trim) {
            None | Some("") => pb::TaskState::Unspecified,
            Some(s) => client::parse_state(s).map_err(|e| ApiError::bad(e.to_string()))?,
        };
        if let Some(n) = self.page_size
            && !(1..=100).contains(&n)
        {
            return Err(ApiError::bad("the page size is from 1 to 100"));
        }
        Ok(pb::ListTasksRequest {
            context_id: self.context_id.clone().unwrap_or_default(),
            status: status.into(),
            page_size: self.page_size,
            page_token: self.page_token.clone().unwrap_or_default(),
            history_length: self.history_length,
            include_artifacts: self.include_artifacts,
            ..Default::default()
        })
    }
}

/// The binding named `name`, and the version to speak on it, when `card` offers it.
pub(crate) fn pick(
    card: &pb::AgentCard,
    name: Option<&str>,
) -> Result<(Binding, Protocol), ApiError> {
    let offered = |b: Binding| {
        card.supported_interfaces
            .iter()
            .filter(move |i| i.protocol_binding.eq_ignore_ascii_case(b.card_name()))
    };
    let binding = match name {
        Some(n) => client::parse_binding(n).map_err(ApiError::bad)?,
        None => Binding::ALL
            .into_iter()
            .find(|b| offered(*b).next().is_some())
            .ok_or_else(|| ApiError::bad("the card declares no binding this console speaks"))?,
    };
    let mut versions = offered(binding)
        .map(|i| i.protocol_version.as_str())
        .peekable();
    if versions.peek().is_none() {
        return Err(ApiError::bad(format!(
            "the card does not offer {}",
            binding.card_name()
        )));
    }
    let protocol = if versions.any(|v| !v.starts_with("0.")) {
        Protocol::V1
    } else {
        Protocol::V03
    };
    Ok((binding, protocol))
}

/// The API calls.
#[derive(Debug, Clone, Copy)]
enum Endpoint {
    Card,
    Send,
    Stream,
    List,
    Get,
    Cancel,
    Subscribe,
    /// Answered elsewhere.
    Extra(Extra),
}

/// A JSON answer.
fn ok(value: Value) -> Response {
    axum::Json(value).into_response()
}

/// The protocol object `value` as JSON.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))
}

impl Endpoint {
    async fn answer(self, state: &State, body: &[u8]) -> Response {
        let call: std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<Response, ApiError>> + Send + '_>,
        > = Box::pin(self.call(state, body));
        match call.await {
            Ok(response) => response,
            Err(e) => e.into_response(),
        }
    }

    async fn call(self, state: &State, body: &[u8]) -> Result<Response, ApiError> {
        if let Endpoint::Extra(extra) = self {
            return extra(state, body).await;
        }
        let call = parse(body)?;
        let mut target = call.target(state)?;
        if let Endpoint::Card = self {
            return card(&target).await.map(ok);
        }
        // Checked before the agent is reached.
        let request = match self {
            Endpoint::Send | Endpoint::Stream => Some(call.message()?),
            _ => None,
        };
        let list = match self {
            Endpoint::List => Some(call.list()?),
            _ => None,
        };
        let task = match self {
            Endpoint::Get | Endpoint::Cancel | Endpoint::Subscribe => Some(call.task()?),
            _ => None,
        };
        let streaming = matches!(self, Endpoint::Stream | Endpoint::Subscribe);
        if streaming {
            // A stream lasts as long as the task; the card fetch keeps its own limit.
            target.timeout = None;
        }
        let card = client::resolve_card(&target).await?;
        let (binding, protocol) = pick(&card, call.binding.as_deref())?;
        target.transport = vec![binding];
        target.protocol = protocol;
        let (svc, cx) = client::service(&target, card).await?;
        let used = binding.card_name();
        match (self, request, list, task) {
            (Endpoint::Send, Some(request), _, _) => {
                let answer = svc.send_message(&cx, request).await?;
                Ok(ok(json!({ "binding": used, "result": to_json(&answer)? })))
            }
            (Endpoint::Stream, Some(request), _, _) => {
                let events = svc.send_streaming_message(&cx, request).await?;
                Ok(relay(used, events))
            }
            (Endpoint::List, _, Some(list), _) => {
                let answer = svc.list_tasks(&cx, list).await?;
                Ok(ok(json!({ "binding": used, "result": to_json(&answer)? })))
            }
            (Endpoint::Get, _, _, Some(id)) => {
                let request = pb::GetTaskRequest {
                    id,
                    history_length: call.history_length,
                    ..Default::default()
                };
                let answer = svc.get_task(&cx, request).await?;
                Ok(ok(json!({ "binding": used, "result": to_json(&answer)? })))
            }
            (Endpoint::Cancel, _, _, Some(id)) => {
                let request = pb::CancelTaskRequest {
                    id,
                    ..Default::default()
                };
                let answer = svc.cancel_task(&cx, request).await?;
                Ok(ok(json!({ "binding": used, "result": to_json(&answer)? })))
            }
            (Endpoint::Subscribe, _, _, Some(id)) => {
                let request = pb::SubscribeToTaskRequest {
                    id,
                    ..Default::default()
                };
                let events = svc.subscribe_to_task(&cx, request).await?;
                Ok(relay(used, events))
            }
            _ => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the request was not read as its call needs",
            )),
        }
    }
}

/// A stream's events as server-sent events: `{"binding"}` first, then `{"event": …}` for
/// each event in order, and `{"end": true}` or `{"error": …}` last.
fn relay(binding: &'static str, events: trident::EventStream) -> Response {
    let head = futures::stream::iter([json!({ "binding": binding })]);
    let body = events.map(move |item| match item {
        Ok(event) => serde_json::to_value(&*event.response)
            .map(|e| json!({ "event": e }))
            .unwrap_or_else(
                |e| json!({ "error": { "code": "internal", "message": e.to_string() } }),
            ),
        Err(e) => ApiError::from(e).body(),
    });
    let tail = futures::stream::iter([json!({ "end": true })]);
    event_stream(head.chain(body).chain(tail))
}

/// `items` as server-sent events, one `data:` line of JSON each.
pub(crate) fn event_stream(items: impl futures::Stream<Item = Value> + Send + 'static) -> Response {
    let lines = items
        .map(|value| Ok::<_, std::convert::Infallible>(Bytes::from(format!("data: {value}\n\n"))));
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(lines))
        .unwrap_or_else(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
                .into_response()
        })
}

/// `/api/card`: the card, read and validated: its required fields, whether each interface it
/// declares answers, its signature; and the JSON as the agent served it.
async fn card(target: &Target) -> Result<Value, ApiError> {
    let (card, raw) = client::resolve_card_json(target).await?;
    let raw_text = String::from_utf8_lossy(&raw).into_owned();
    let problems = match serde_json::from_slice::<Value>(&raw) {
        Ok(json) => client::card_problems(&json),
        Err(e) => vec![format!("not JSON: {e}")],
    };
    let signature = if card.signatures.is_empty() {
        "absent (the card is not signed)".to_owned()
    } else {
        match client::verify(&card, None).await {
            Ok(line) => line,
            Err(why) => format!("unverifiable ({why})"),
        }
    };
    let probes = card
        .supported_interfaces
        .iter()
        .map(|i| probe(target, &card, i));
    let interfaces = futures::future::join_all(probes).await;
    Ok(json!({
        "card": to_json(&card)?,
        "raw": raw_text,
        "problems": problems,
        "valid": problems.is_empty(),
        "signature": signature,
        "interfaces": interfaces,
    }))
}

/// Whether the interface `interface` of `card` answers: a `GetTask` of a task that does not
/// exist, which an A2A server answers with an error of its own (`TaskNotFound`); a failure to
/// connect or to be understood is no answer.
async fn probe(target: &Target, card: &pb::AgentCard, interface: &pb::AgentInterface) -> Value {
    let described = |answers: bool, detail: String| {
        json!({
            "binding": interface.protocol_binding,
            "url": interface.url,
            "protocolVersion": interface.protocol_version,
            "answers": answers,
            "detail": detail,
        })
    };
    let Some(binding) = Binding::ALL.into_iter().find(|b| {
        interface
            .protocol_binding
            .eq_ignore_ascii_case(b.card_name())
    }) else {
        return described(false, "a binding this console does not speak".into());
    };
    let mut target = target.clone();
    target.transport = vec![binding];
    target.protocol = if interface.protocol_version.starts_with("0.") {
        Protocol::V03
    } else {
        Protocol::V1
    };
    target.timeout = Some(Duration::from_secs(15));
    let (svc, cx) = match client::service(&target, card.clone()).await {
        Ok(connected) => connected,
        Err(e) => return described(false, e.to_string()),
    };
    let request = pb::GetTaskRequest {
        id: format!("trident-console-probe-{}", uuid::Uuid::new_v4()),
        ..Default::default()
    };
    match svc.get_task(&cx, request).await {
        Ok(_) => described(true, "answers".into()),
        Err(e) if e.kind() == trident::ErrorKind::TaskNotFound => described(
            true,
            "answers (TaskNotFound for an unknown task, as it should)".into(),
        ),
        Err(e) if e.kind() == trident::ErrorKind::Unauthenticated => described(
            true,
            format!("answers, asking for credentials: {}", e.message()),
        ),
        Err(e) if e.is_transport() || e.kind() == trident::ErrorKind::Unavailable => {
            described(false, trident_core::error_chain(&e))
        }
        Err(e) => described(
            true,
            format!("answers with {:?}: {}", e.kind(), e.message()),
        ),
    }
}
