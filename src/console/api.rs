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
//!
//! Beside a served agent (`trident serve --console`) the page is at `/console/` and the API
//! under `/console/api/`: the page (and `api/config`) is public like the card, the API is
//! behind the server's own edge (its authentication and rate limits, as every call), and it
//! talks to the agent it is served with alone, at the address the server is bound to. The
//! page sends the credentials typed into it with each API request as well, so the server
//! admits it.
//!
//! The push receiver (`/hooks/{id}`, which agents call) and the push API calls are in
//! [`super::push`].

use std::sync::{Arc, OnceLock};
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

use super::wire::WireLog;
use super::{assets, push};
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
    /// `trident serve --console`: the card URL of the agent served beside the console, set
    /// once its server is bound. The console talks to that agent alone, and answers under
    /// any `Host` (the server's authentication guards it).
    pub(crate) served: Option<Arc<OnceLock<String>>>,
    /// The push receiver's webhooks and deliveries.
    pub(crate) hooks: Arc<push::Hooks>,
}

/// Where `trident serve --console` serves the page.
pub(crate) const SERVED_PREFIX: &str = "/console";

/// An API call answered by another module of the console (conformance, the bindings side by
/// side): from the console's settings and the request's body, the answer. It is guarded as
/// every API call is.
pub(crate) type Extra =
    for<'a> fn(&'a State, &'a [u8]) -> futures::future::BoxFuture<'a, Result<Response, ApiError>>;

/// The console on its own (`trident console`): the page at `/`, the API under `/api/` (with
/// the `extra` calls at `/api/NAME`), the push receiver at `/hooks/`, and a JSON 404 for
/// anything else.
pub(crate) fn router(state: State, extra: &[(&'static str, Extra)]) -> axum::Router {
    let (page, api) = routes(state, "", extra);
    page.merge(api).fallback(|| async {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such page or API call",
        )
        .into_response()
    })
}

/// The page's routes (the page, its assets, `api/config` and the push receiver: nothing
/// secret) and the API's, under `prefix` (empty, or [`SERVED_PREFIX`] beside a served agent,
/// where the page is also reached without its trailing slash).
pub(crate) fn routes(
    state: State,
    prefix: &str,
    extra: &[(&'static str, Extra)],
) -> (axum::Router, axum::Router) {
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
                Ok(()) => {
                    let agent = match &state.served {
                        Some(served) => served.get().cloned(),
                        None => state.preset.clone(),
                    };
                    axum::Json(json!({ "agent": agent, "served": state.served.is_some() }))
                        .into_response()
                }
                Err(e) => e.into_response(),
            }
        })
    };
    let deliveries = {
        let state = state.clone();
        post(move |headers: HeaderMap, body: Bytes| async move {
            let after = guard(&state, &headers).and_then(|()| {
                push::after(&body).map_err(|e| ApiError::bad(format!("not a valid API call: {e}")))
            });
            match after {
                Ok(after) => axum::Json(state.hooks.after(after)).into_response(),
                Err(e) => e.into_response(),
            }
        })
    };
    let mut page = axum::Router::new()
        .route(
            &format!("{prefix}/"),
            asset(assets::INDEX_HTML, "text/html; charset=utf-8"),
        )
        .route(
            &format!("{prefix}/console.css"),
            asset(assets::CONSOLE_CSS, "text/css; charset=utf-8"),
        )
        .route(
            &format!("{prefix}/console.js"),
            asset(assets::CONSOLE_JS, "text/javascript; charset=utf-8"),
        )
        .route(
            &format!("{prefix}/push.js"),
            asset(assets::PUSH_JS, "text/javascript; charset=utf-8"),
        )
        .route(
            &format!("{prefix}/conformance.js"),
            asset(assets::CONFORMANCE_JS, "text/javascript; charset=utf-8"),
        )
        .route(&format!("{prefix}/api/config"), config)
        // Agents post here with the webhook's token, not with the page's credentials.
        .route(
            &format!("{prefix}/hooks/{{id}}"),
            push::receiver(state.hooks.clone()),
        );
    if !prefix.is_empty() {
        let to = format!("{prefix}/");
        page = page.route(
            prefix,
            get(move || async move { axum::response::Redirect::permanent(&to) }),
        );
    }
    let calls = [
        ("card", Endpoint::Card),
        ("send", Endpoint::Send),
        ("stream", Endpoint::Stream),
        ("tasks/list", Endpoint::List),
        ("tasks/get", Endpoint::Get),
        ("tasks/cancel", Endpoint::Cancel),
        ("tasks/subscribe", Endpoint::Subscribe),
        ("push/watch", Endpoint::PushWatch),
        ("push/configs", Endpoint::PushConfigs),
        ("push/delete", Endpoint::PushDelete),
    ];
    let extra = extra
        .iter()
        .map(|(path, call)| (*path, Endpoint::Extra(*call)));
    let api = calls
        .into_iter()
        .chain(extra)
        .fold(axum::Router::new(), |router, (path, endpoint)| {
            router.route(&format!("{prefix}/api/{path}"), api(endpoint))
        })
        .route(&format!("{prefix}/api/push/deliveries"), deliveries)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY));
    (page, api)
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

impl From<push::PushError> for ApiError {
    fn from(e: push::PushError) -> Self {
        match e {
            push::PushError::Agent(e) => e.into(),
            push::PushError::Json(e) => {
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
            }
            push::PushError::Unbound => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the console is not serving yet",
            ),
        }
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
    if state.allow_remote || state.served.is_some() {
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

/// A file attached to a message, read by the page.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FileInput {
    /// Its name.
    pub(crate) name: String,
    /// Its media type (`application/octet-stream` when the browser knows none).
    #[serde(default)]
    pub(crate) media_type: String,
    /// Its bytes, base64 (standard alphabet, padded).
    pub(crate) bytes: String,
}

/// The most bytes of files one message carries (the page says so before sending).
pub(crate) const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// The largest API request: the files in base64 (4 bytes for 3) and room for the rest.
const MAX_BODY: usize = MAX_FILE_BYTES / 3 * 4 + 256 * 1024;

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
    /// Files attached to the message, each a part of its own.
    #[serde(default)]
    pub(crate) files: Vec<FileInput>,
    /// A data part: any JSON value.
    #[serde(default)]
    pub(crate) data: Option<Value>,
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
    /// Subscribe: resume after this event (its sequence number in the task's log).
    #[serde(default)]
    pub(crate) after: Option<u64>,
    /// Push delete: the push config's id.
    #[serde(default)]
    pub(crate) config_id: Option<String>,
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
        if let Some(served) = &state.served {
            let url = served.get().ok_or_else(|| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the agent is not serving yet",
                )
            })?;
            if agent != url {
                return Err(ApiError::bad(format!(
                    "this console talks to the agent it is served with ({url}) only"
                )));
            }
        }
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

    /// The push config id, required.
    fn config(&self) -> Result<String, ApiError> {
        self.config_id
            .as_ref()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .ok_or_else(|| ApiError::bad("no push config id"))
    }

    /// The message to send: the text, the metadata, and the task and context to send in.
    pub(crate) fn message(&self) -> Result<pb::SendMessageRequest, ApiError> {
        let text = self.text.as_deref().unwrap_or_default();
        let mut parts = Vec::new();
        if !text.trim().is_empty() {
            parts.push(pb::Part::text(text));
        }
        let mut total = 0usize;
        for file in &self.files {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(file.bytes.trim())
                .map_err(|e| {
                    ApiError::bad(format!("the file {:?} is not base64: {e}", file.name))
                })?;
            total = total.saturating_add(bytes.len());
            if total > MAX_FILE_BYTES {
                return Err(ApiError::bad(format!(
                    "the files come to more than {} MiB, the most one message carries",
                    MAX_FILE_BYTES / (1024 * 1024)
                )));
            }
            let media_type = match file.media_type.trim() {
                "" => "application/octet-stream",
                given => given,
            };
            parts.push(pb::Part::file(bytes, media_type, file.name.trim()));
        }
        match &self.data {
            None | Some(Value::Null) => {}
            Some(value) => parts.push(pb::Part::data(value.clone())),
        }
        if parts.is_empty() {
            return Err(ApiError::bad(
                "the message is empty: type some text, attach a file or give data",
            ));
        }
        let mut message = pb::Message::user(uuid::Uuid::new_v4().to_string(), parts);
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
    /// A webhook of the console's on a task.
    PushWatch,
    /// A task's push configs.
    PushConfigs,
    /// Deletes a task's push config.
    PushDelete,
    /// Answered elsewhere.
    Extra(Extra),
}

/// What an API call answers.
enum Answer {
    /// A JSON object (the wire lines are added to it).
    Json(Value),
    /// A stream of server-sent events, carrying its wire lines itself.
    Stream(Response),
}

/// The protocol object `value` as JSON.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))
}

impl Endpoint {
    /// The answer to one API request, with what went over the wire for it (see
    /// [`super::wire`]): in `"wire"` of a JSON answer or error, as items of a stream.
    async fn answer(self, state: &State, body: &[u8]) -> Response {
        if let Endpoint::Extra(extra) = self {
            return extra(state, body)
                .await
                .unwrap_or_else(IntoResponse::into_response);
        }
        let log = WireLog::default();
        let call: std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<Answer, ApiError>> + Send + '_>,
        > = Box::pin(self.call(state, body, &log));
        let (status, mut value) = match call.await {
            Ok(Answer::Stream(response)) => return response,
            Ok(Answer::Json(value)) => (StatusCode::OK, value),
            Err(e) => (e.status, e.body()),
        };
        if let Value::Object(map) = &mut value {
            map.insert("wire".into(), json!(log.take(true)));
        }
        (status, axum::Json(value)).into_response()
    }

    async fn call(self, state: &State, body: &[u8], log: &WireLog) -> Result<Answer, ApiError> {
        let call = parse(body)?;
        let mut target = call.target(state)?;
        target.wire = Some(log.sink());
        if let Endpoint::Card = self {
            return card(&target).await.map(Answer::Json);
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
            Endpoint::Get
            | Endpoint::Cancel
            | Endpoint::Subscribe
            | Endpoint::PushWatch
            | Endpoint::PushConfigs
            | Endpoint::PushDelete => Some(call.task()?),
            _ => None,
        };
        let config_id = match self {
            Endpoint::PushDelete => Some(call.config()?),
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
                Ok(Answer::Json(
                    json!({ "binding": used, "result": to_json(&answer)? }),
                ))
            }
            (Endpoint::Stream, Some(request), _, _) => {
                let events = svc.send_streaming_message(&cx, request).await?;
                Ok(Answer::Stream(relay(used, events, log.clone())))
            }
            (Endpoint::List, _, Some(list), _) => {
                let answer = svc.list_tasks(&cx, list).await?;
                Ok(Answer::Json(
                    json!({ "binding": used, "result": to_json(&answer)? }),
                ))
            }
            (Endpoint::Get, _, _, Some(id)) => {
                let request = pb::GetTaskRequest {
                    id,
                    history_length: call.history_length,
                    ..Default::default()
                };
                let answer = svc.get_task(&cx, request).await?;
                Ok(Answer::Json(
                    json!({ "binding": used, "result": to_json(&answer)? }),
                ))
            }
            (Endpoint::Cancel, _, _, Some(id)) => {
                let request = pb::CancelTaskRequest {
                    id,
                    ..Default::default()
                };
                let answer = svc.cancel_task(&cx, request).await?;
                Ok(Answer::Json(
                    json!({ "binding": used, "result": to_json(&answer)? }),
                ))
            }
            (Endpoint::Subscribe, _, _, Some(id)) => {
                let request = pb::SubscribeToTaskRequest {
                    id,
                    ..Default::default()
                };
                // Resumed after the event the page names (`Last-Event-ID`, or gRPC's
                // `last-event-id`), or from the task's current state.
                let mut cx = cx;
                cx.last_event_id = call.after;
                let events = svc.subscribe_to_task(&cx, request).await?;
                Ok(Answer::Stream(relay(used, events, log.clone())))
            }
            (Endpoint::PushWatch, _, _, Some(id)) => Ok(Answer::Json(
                push::watch(&state.hooks, svc.as_ref(), &cx, id, used).await?,
            )),
            (Endpoint::PushConfigs, _, _, Some(id)) => Ok(Answer::Json(
                push::configs(&state.hooks, svc.as_ref(), &cx, id, used).await?,
            )),
            (Endpoint::PushDelete, _, _, Some(id)) => {
                let config_id = config_id.unwrap_or_default();
                Ok(Answer::Json(
                    push::delete(&state.hooks, svc.as_ref(), &cx, id, config_id, used).await?,
                ))
            }
            _ => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the request was not read as its call needs",
            )),
        }
    }
}

/// A stream's events as server-sent events: `{"binding"}` first, then `{"event": …, "seq":
/// N}` for each event in order (`seq`: its number in the task's log, when the binding says),
/// and `{"end": true}` or `{"error": …}` last; before each, the lines that went over the wire
/// since the one before (`{"wire": line}`), the last ones before the end.
fn relay(binding: &'static str, events: trident::EventStream, log: WireLog) -> Response {
    let mut head = wire_items(&log, false);
    head.push(json!({ "binding": binding }));
    let during = log.clone();
    let body = events.flat_map(move |event| {
        let value = match event {
            Ok(event) => serde_json::to_value(&*event.response)
                .map(|e| json!({ "event": e, "seq": event.seq }))
                .unwrap_or_else(
                    |e| json!({ "error": { "code": "internal", "message": e.to_string() } }),
                ),
            Err(e) => ApiError::from(e).body(),
        };
        let mut items = wire_items(&during, false);
        items.push(value);
        futures::stream::iter(items)
    });
    // The end is made when it is reached (after the last event), with the lines of the end.
    let tail = futures::stream::once(async move {
        let mut items = wire_items(&log, true);
        items.push(json!({ "end": true }));
        futures::stream::iter(items)
    })
    .flatten();
    event_stream(futures::stream::iter(head).chain(body).chain(tail))
}

/// The wire lines written since the last take, as stream items.
fn wire_items(log: &WireLog, last: bool) -> Vec<Value> {
    log.take(last)
        .into_iter()
        .map(|line| json!({ "wire": line }))
        .collect()
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
    // The card of an agent that speaks only A2A 0.3 (no `supportedInterfaces`, a top-level
    // `url`) is checked against 0.3's AgentCard.
    let (problems, generation) = match serde_json::from_slice::<Value>(&raw) {
        Ok(json) if trident_client::is_v03_only(&json) => (client::card_problems_v03(&json), "0.3"),
        Ok(json) => (client::card_problems(&json), "1.0"),
        Err(e) => (vec![format!("not JSON: {e}")], "1.0"),
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
        "generation": generation,
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
    // Probes run together: their lines would interleave with each other's in the wire view.
    target.wire = None;
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
