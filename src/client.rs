//! The client commands: `card`, `send`, `get`, `list`, `cancel`, `subscribe`, `push …`.
//! Each reads the agent's card, connects over the chosen binding and makes one A2A call.
//! Output is for people by default (streams print as they arrive) and ProtoJSON, one object
//! per line, with `--json`.

use std::io::Write;
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use futures::StreamExt;
use trident_client::Binding;
use trident_core::{A2aError, A2aService, CallContext, StreamEvent};
use trident_proto as pb;

/// How to reach the agent (shared by every client command).
#[derive(Args, Debug, Clone)]
pub(crate) struct Target {
    /// The agent: its origin (the card is read from /.well-known/agent-card.json) or the URL
    /// of its card.
    pub(crate) url: String,
    /// Binding to use (default: the first the card lists).
    #[arg(long, value_enum)]
    pub(crate) binding: Option<BindingArg>,
    /// A2A generation to speak: `auto` (1.0 where the card offers it for the binding, else
    /// 0.3), `1.0` or `0.3`. Against a v0.3 agent every command works but `list` (v0.3 has no
    /// ListTasks) and `subscribe --after`.
    #[arg(long, default_value = "auto", value_name = "auto|1.0|0.3")]
    pub(crate) protocol: trident_client::Protocol,
    /// Bearer token sent as `Authorization: Bearer TOKEN`.
    #[arg(long, env = "TRIDENT_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Extension URIs to activate (`A2A-Extensions`), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) extensions: Vec<String>,
    /// Print ProtoJSON (one object per line) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Give up on the card fetch and each call after this many seconds (a stream: on opening
    /// it); the agent is told the deadline.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) timeout: Option<f64>,
}

impl Target {
    /// The client of these options: the token and the timeout apply to the card fetch too.
    fn client(&self) -> Result<trident_client::Client, Failure> {
        let mut builder = trident_client::ClientBuilder::new().protocol(self.protocol);
        if let Some(token) = &self.token {
            builder = builder.bearer_token(token);
        }
        if let Some(secs) = self.timeout {
            let timeout = std::time::Duration::try_from_secs_f64(secs)
                .map_err(|e| Failure::Usage(format!("--timeout {secs}: {e}")))?;
            builder = builder.timeout(timeout);
        }
        Ok(builder.build()?)
    }
}

/// A binding named on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum BindingArg {
    /// gRPC
    Grpc,
    /// JSON-RPC 2.0
    Jsonrpc,
    /// HTTP+JSON
    Rest,
}

impl From<BindingArg> for Binding {
    fn from(b: BindingArg) -> Self {
        match b {
            BindingArg::Grpc => Binding::Grpc,
            BindingArg::Jsonrpc => Binding::JsonRpc,
            BindingArg::Rest => Binding::Rest,
        }
    }
}

/// `card`
#[derive(Args, Debug)]
pub(crate) struct CardArgs {
    #[command(flatten)]
    target: Target,
    /// Verify the card's signatures (keys from each signature's `jku`, or from --jwks); exit
    /// 1 if the card is unsigned or no signature verifies.
    #[arg(long)]
    verify: bool,
    /// Trust only the keys of this JWKS URL (instead of the signatures' `jku`).
    #[arg(long)]
    jwks: Option<String>,
}

/// `send`
#[derive(Args, Debug)]
pub(crate) struct Send {
    #[command(flatten)]
    target: Target,
    /// The message text.
    text: String,
    /// Stream the task's events as they happen.
    #[arg(long)]
    stream: bool,
    /// Continue this task (a follow-up message).
    #[arg(long)]
    task: Option<String>,
    /// Use this context id.
    #[arg(long)]
    context: Option<String>,
    /// Return as soon as the task exists instead of waiting for it to finish or ask for input.
    #[arg(long)]
    return_immediately: bool,
    /// Keep at most N history messages in the returned task.
    #[arg(long)]
    history: Option<i32>,
}

/// `get`
#[derive(Args, Debug)]
pub(crate) struct Get {
    #[command(flatten)]
    target: Target,
    /// Task id.
    id: String,
    /// Include (at most) N history messages.
    #[arg(long)]
    history: Option<i32>,
}

/// `list`
#[derive(Args, Debug)]
pub(crate) struct List {
    #[command(flatten)]
    target: Target,
    /// Only tasks of this context.
    #[arg(long)]
    context: Option<String>,
    /// Only tasks in this state (`working`, `input-required`, `TASK_STATE_COMPLETED`, …).
    #[arg(long)]
    state: Option<String>,
    /// Tasks per page (1–100).
    #[arg(long)]
    page_size: Option<i32>,
    /// Continue from this page token.
    #[arg(long)]
    page_token: Option<String>,
    /// Follow every page to the end.
    #[arg(long)]
    all: bool,
}

/// `cancel`
#[derive(Args, Debug)]
pub(crate) struct Cancel {
    #[command(flatten)]
    target: Target,
    /// Task id.
    id: String,
}

/// `subscribe`
#[derive(Args, Debug)]
pub(crate) struct Subscribe {
    #[command(flatten)]
    target: Target,
    /// Task id.
    id: String,
    /// Resume after this event sequence number (replays from the log, then follows live).
    #[arg(long)]
    after: Option<u64>,
}

/// `push …`
#[derive(Subcommand, Debug)]
pub(crate) enum Push {
    /// Create or replace a webhook for a task.
    Set {
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
        /// Webhook URL.
        webhook: String,
        /// Configuration id (default: the server picks one).
        #[arg(long)]
        id: Option<String>,
        /// Token the webhook receives in `A2A-Notification-Token`.
        #[arg(long)]
        notification_token: Option<String>,
        /// Authentication for the webhook call: `SCHEME` or `SCHEME:CREDENTIALS`.
        #[arg(long)]
        auth: Option<String>,
    },
    /// Show one configuration.
    Get {
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
        /// Configuration id.
        id: String,
    },
    /// List a task's configurations.
    List {
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
    },
    /// Delete a configuration.
    Delete {
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
        /// Configuration id.
        id: String,
    },
}

/// Why a client command failed; decides the exit code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The agent answered with an A2A error.
    #[error("{:?}: {}", .0.kind(), .0)]
    Agent(A2aError),
    /// The exchange failed (connection, transport, unreadable reply).
    #[error("transport: {0}")]
    Transport(A2aError),
    /// Bad input on our side.
    #[error("{0}")]
    Usage(String),
}

impl From<A2aError> for Failure {
    fn from(e: A2aError) -> Self {
        if e.is_transport() {
            Self::Transport(e)
        } else {
            Self::Agent(e)
        }
    }
}

impl Failure {
    /// 1: the agent answered with an error; 3: the exchange failed; 2: usage.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Failure::Agent(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Transport(_) => 3,
        }
    }
}

struct Session {
    svc: Arc<dyn A2aService>,
    cx: CallContext,
    json: bool,
}

async fn connect(target: &Target) -> Result<Session, Failure> {
    let client = target.client()?;
    let card = client.fetch_card(&target.url).await?;
    let preference: Vec<Binding> = match target.binding {
        Some(b) => vec![b.into()],
        None => {
            // The card's own order: its first interface this client speaks.
            let first = card.supported_interfaces.iter().find_map(|i| {
                Binding::ALL
                    .into_iter()
                    .find(|b| i.protocol_binding.eq_ignore_ascii_case(b.card_name()))
            });
            first.into_iter().chain(Binding::ALL).collect()
        }
    };
    let (binding, interface) = trident_client::choose_for(&card, &preference, target.protocol)
        .ok_or_else(|| {
            trident_client::no_match_for(&target.url, &card, &preference, target.protocol)
        })?;
    let service = client.client(binding, &interface).await?;
    let mut cx = CallContext::new();
    cx.extensions = target.extensions.clone();
    if let Some(token) = &target.token {
        cx = cx.with_credentials(format!("Bearer {token}"));
    }
    Ok(Session {
        svc: service,
        cx,
        json: target.json,
    })
}

/// `card`
pub(crate) async fn card(args: &CardArgs) -> Result<(), Failure> {
    let target = &args.target;
    let card = target.client()?.fetch_card(&target.url).await?;
    let verified = if args.verify {
        Some(verify(&card, args.jwks.as_deref()).await)
    } else {
        None
    };
    if target.json {
        print_json(&card)?;
    } else {
        print_card(&card)?;
    }
    match verified {
        None => Ok(()),
        Some(Ok(line)) => print_text(&format!("signature: {line}\n")),
        Some(Err(why)) => Err(Failure::Agent(A2aError::new(
            trident_core::ErrorKind::InvalidAgentResponse,
            format!("card signature: {why}"),
        ))),
    }
}

/// Verifies `card`: with keys from `jwks`, or from the `jku` its signatures name.
pub(crate) async fn verify(card: &pb::AgentCard, jwks: Option<&str>) -> Result<String, String> {
    use base64::Engine as _;
    if card.signatures.is_empty() {
        return Err("the card is not signed".into());
    }
    let urls: Vec<String> = match jwks {
        Some(u) => vec![u.to_owned()],
        None => card
            .signatures
            .iter()
            .filter_map(|s| {
                let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(s.protected.trim_end_matches('='))
                    .ok()?;
                let header: serde_json::Value = serde_json::from_slice(&header).ok()?;
                header["jku"].as_str().map(str::to_owned)
            })
            .collect(),
    };
    if urls.is_empty() {
        return Err("no signature names its keys (jku); pass --jwks URL".into());
    }
    let mut failures = Vec::new();
    for url in urls {
        let keys = match reqwest::get(&url).await {
            Ok(r) => match r.bytes().await {
                Ok(b) => trident_security::JwkSet::from_json(&b).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        match keys {
            Ok(keys) => match trident_security::verify_card(card, &keys) {
                Ok(kid) => return Ok(format!("valid (key {kid} from {url})")),
                Err(e) => failures.push(format!("{url}: {e}")),
            },
            Err(e) => failures.push(format!("{url}: {e}")),
        }
    }
    Err(failures.join("; "))
}

fn print_card(card: &pb::AgentCard) -> Result<(), Failure> {
    let mut out = String::new();
    out.push_str(&format!("{} — {}\n", card.name, card.description));
    if !card.version.is_empty() {
        out.push_str(&format!("version {}\n", card.version));
    }
    out.push_str("interfaces:\n");
    for i in &card.supported_interfaces {
        let tenant = if i.tenant.is_empty() {
            String::new()
        } else {
            format!("  (tenant {})", i.tenant)
        };
        out.push_str(&format!(
            "  {:<10} {}  A2A {}{tenant}\n",
            i.protocol_binding, i.url, i.protocol_version
        ));
    }
    if let Some(c) = &card.capabilities {
        let mut caps = Vec::new();
        if c.streaming == Some(true) {
            caps.push("streaming");
        }
        if c.push_notifications == Some(true) {
            caps.push("push notifications");
        }
        if c.extended_agent_card == Some(true) {
            caps.push("extended card");
        }
        out.push_str(&format!(
            "capabilities: {}\n",
            if caps.is_empty() {
                "none".to_owned()
            } else {
                caps.join(", ")
            }
        ));
        for e in &c.extensions {
            let required = if e.required { " (required)" } else { "" };
            out.push_str(&format!("extension: {}{required}\n", e.uri));
        }
    }
    if !card.skills.is_empty() {
        out.push_str("skills:\n");
        for s in &card.skills {
            out.push_str(&format!("  {} — {}\n", s.name, s.description));
        }
    }
    print_text(&out)
}

/// `send`
pub(crate) async fn send(args: &Send) -> Result<(), Failure> {
    let s = connect(&args.target).await?;
    let mut message = pb::Message::user(
        uuid::Uuid::new_v4().to_string(),
        vec![pb::Part::text(args.text.clone())],
    );
    message.task_id = args.task.clone().unwrap_or_default();
    message.context_id = args.context.clone().unwrap_or_default();
    let req = pb::SendMessageRequest {
        message: Some(message),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately: args.return_immediately,
            history_length: args.history,
            ..Default::default()
        }),
        ..Default::default()
    };
    if args.stream {
        let stream = s.svc.send_streaming_message(&s.cx, req).await?;
        return follow(&s, stream).await;
    }
    let resp = s.svc.send_message(&s.cx, req).await?;
    if s.json {
        return print_json(&resp);
    }
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => {
            print_text(&task_text(&t, args.history.is_some()))
        }
        Some(pb::send_message_response::Payload::Message(m)) => {
            print_text(&format!("{}\n", message_line(&m)))
        }
        None => Err(Failure::Agent(A2aError::new(
            trident_core::ErrorKind::InvalidAgentResponse,
            "the agent answered with neither a task nor a message",
        ))),
    }
}

/// `get`
pub(crate) async fn get(args: &Get) -> Result<(), Failure> {
    let s = connect(&args.target).await?;
    let task = s
        .svc
        .get_task(
            &s.cx,
            pb::GetTaskRequest {
                id: args.id.clone(),
                history_length: args.history,
                ..Default::default()
            },
        )
        .await?;
    if s.json {
        return print_json(&task);
    }
    print_text(&task_text(&task, args.history.is_some()))
}

/// `list`
pub(crate) async fn list(args: &List) -> Result<(), Failure> {
    let s = connect(&args.target).await?;
    let status = match &args.state {
        Some(name) => parse_state(name)? as i32,
        None => 0,
    };
    let mut token = args.page_token.clone().unwrap_or_default();
    let mut shown = 0usize;
    let mut header = !s.json;
    loop {
        let page = s
            .svc
            .list_tasks(
                &s.cx,
                pb::ListTasksRequest {
                    context_id: args.context.clone().unwrap_or_default(),
                    status,
                    page_size: args.page_size,
                    page_token: token.clone(),
                    ..Default::default()
                },
            )
            .await?;
        // Printed once the agent has answered, so a refusal (a v0.3 agent has no ListTasks)
        // is the only output.
        if std::mem::take(&mut header) {
            print_text(&format!(
                "{:<36}  {:<22}  {:<24}  {}\n",
                "TASK", "STATE", "UPDATED", "CONTEXT"
            ))?;
        }
        shown += page.tasks.len();
        if s.json {
            print_json(&page)?;
        } else {
            let mut out = String::new();
            for t in &page.tasks {
                out.push_str(&format!(
                    "{:<36}  {:<22}  {:<24}  {}\n",
                    t.id,
                    state_name(t.state()),
                    t.status
                        .as_ref()
                        .and_then(|s| s.timestamp.as_ref())
                        .map(timestamp)
                        .unwrap_or_default(),
                    t.context_id
                ));
            }
            print_text(&out)?;
        }
        if !args.all || page.next_page_token.is_empty() {
            if !s.json {
                let more = if page.next_page_token.is_empty() {
                    String::new()
                } else {
                    format!("; next page: --page-token {}", page.next_page_token)
                };
                print_text(&format!("{shown} of {} tasks{more}\n", page.total_size))?;
            }
            return Ok(());
        }
        token = page.next_page_token;
    }
}

/// `cancel`
pub(crate) async fn cancel(args: &Cancel) -> Result<(), Failure> {
    let s = connect(&args.target).await?;
    let task = s
        .svc
        .cancel_task(
            &s.cx,
            pb::CancelTaskRequest {
                id: args.id.clone(),
                ..Default::default()
            },
        )
        .await?;
    if s.json {
        return print_json(&task);
    }
    print_text(&task_text(&task, false))
}

/// `subscribe`
pub(crate) async fn subscribe(args: &Subscribe) -> Result<(), Failure> {
    let mut s = connect(&args.target).await?;
    s.cx.last_event_id = args.after;
    let stream = s
        .svc
        .subscribe_to_task(
            &s.cx,
            pb::SubscribeToTaskRequest {
                id: args.id.clone(),
                ..Default::default()
            },
        )
        .await?;
    follow(&s, stream).await
}

/// `push …`
pub(crate) async fn push(cmd: &Push) -> Result<(), Failure> {
    match cmd {
        Push::Set {
            target,
            task,
            webhook,
            id,
            notification_token,
            auth,
        } => {
            let s = connect(target).await?;
            let authentication = auth.as_ref().map(|a| {
                let (scheme, credentials) = a.split_once(':').unwrap_or((a, ""));
                pb::AuthenticationInfo {
                    scheme: scheme.to_owned(),
                    credentials: credentials.to_owned(),
                }
            });
            let config = s
                .svc
                .create_task_push_notification_config(
                    &s.cx,
                    pb::TaskPushNotificationConfig {
                        task_id: task.clone(),
                        id: id.clone().unwrap_or_default(),
                        url: webhook.clone(),
                        token: notification_token.clone().unwrap_or_default(),
                        authentication,
                        ..Default::default()
                    },
                )
                .await?;
            print_config(&s, &config)
        }
        Push::Get { target, task, id } => {
            let s = connect(target).await?;
            let config = s
                .svc
                .get_task_push_notification_config(
                    &s.cx,
                    pb::GetTaskPushNotificationConfigRequest {
                        task_id: task.clone(),
                        id: id.clone(),
                        ..Default::default()
                    },
                )
                .await?;
            print_config(&s, &config)
        }
        Push::List { target, task } => {
            let s = connect(target).await?;
            let mut token = String::new();
            loop {
                let page = s
                    .svc
                    .list_task_push_notification_configs(
                        &s.cx,
                        pb::ListTaskPushNotificationConfigsRequest {
                            task_id: task.clone(),
                            page_token: token,
                            ..Default::default()
                        },
                    )
                    .await?;
                for config in &page.configs {
                    print_config(&s, config)?;
                }
                if page.next_page_token.is_empty() {
                    return Ok(());
                }
                token = page.next_page_token;
            }
        }
        Push::Delete { target, task, id } => {
            let s = connect(target).await?;
            s.svc
                .delete_task_push_notification_config(
                    &s.cx,
                    pb::DeleteTaskPushNotificationConfigRequest {
                        task_id: task.clone(),
                        id: id.clone(),
                        ..Default::default()
                    },
                )
                .await?;
            if s.json {
                print_text("{}\n")
            } else {
                print_text(&format!("deleted {id} of task {task}\n"))
            }
        }
    }
}

fn print_config(s: &Session, config: &pb::TaskPushNotificationConfig) -> Result<(), Failure> {
    if s.json {
        return print_json(config);
    }
    let auth = config
        .authentication
        .as_ref()
        .map(|a| format!("  auth {}", a.scheme))
        .unwrap_or_default();
    print_text(&format!(
        "{}  task {}  {}{auth}\n",
        config.id, config.task_id, config.url
    ))
}

/// Prints a stream's events as they arrive.
async fn follow(s: &Session, mut stream: trident_core::EventStream) -> Result<(), Failure> {
    while let Some(event) = stream.next().await {
        let event = event?;
        if s.json {
            print_json(&*event.response)?;
        } else {
            print_text(&event_line(&event))?;
        }
    }
    Ok(())
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Failure> {
    let line = serde_json::to_string(value).map_err(|e| Failure::Usage(e.to_string()))?;
    print_text(&format!("{line}\n"))
}

fn print_text(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(())
}

fn parse_state(name: &str) -> Result<pb::TaskState, Failure> {
    let upper = name.trim().to_ascii_uppercase().replace('-', "_");
    let full = if upper.starts_with("TASK_STATE_") {
        upper
    } else {
        format!("TASK_STATE_{upper}")
    };
    pb::TaskState::from_str_name(&full)
        .filter(|s| *s != pb::TaskState::Unspecified)
        .ok_or_else(|| {
            Failure::Usage(format!(
                "unknown state {name:?}: use submitted, working, input-required, auth-required, \
                 completed, failed, canceled or rejected"
            ))
        })
}

fn state_name(state: pb::TaskState) -> &'static str {
    state
        .as_str_name()
        .strip_prefix("TASK_STATE_")
        .unwrap_or("UNSPECIFIED")
}

fn timestamp(ts: &trident_proto::wkt::Timestamp) -> String {
    serde_json::to_value(ts)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn parts_text(parts: &[pb::Part]) -> String {
    parts
        .iter()
        .map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => t.clone(),
            Some(pb::part::Content::Data(d)) => {
                serde_json::to_string(d).unwrap_or_else(|_| "<data>".to_owned())
            }
            Some(pb::part::Content::Url(u)) => format!("<{u}>"),
            Some(pb::part::Content::Raw(b)) => {
                format!("<{} bytes {}>", b.len(), p.media_type)
            }
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn message_line(m: &pb::Message) -> String {
    let who = match pb::Role::try_from(m.role).unwrap_or_default() {
        pb::Role::User => "user",
        pb::Role::Agent => "agent",
        pb::Role::Unspecified => "?",
    };
    format!("{who}: {}", parts_text(&m.parts))
}

fn task_text(task: &pb::Task, history: bool) -> String {
    let mut out = format!(
        "task {}  {}  (context {})\n",
        task.id,
        state_name(task.state()),
        task.context_id
    );
    if let Some(m) = task.status.as_ref().and_then(|s| s.message.as_ref()) {
        out.push_str(&format!("  {}\n", message_line(m)));
    }
    for a in &task.artifacts {
        let name = if a.name.is_empty() {
            &a.artifact_id
        } else {
            &a.name
        };
        out.push_str(&format!("  artifact {name}: {}\n", parts_text(&a.parts)));
    }
    if history {
        for m in &task.history {
            out.push_str(&format!("  history  {}\n", message_line(m)));
        }
    }
    out
}

fn event_line(event: &StreamEvent) -> String {
    use pb::stream_response::Payload;
    let seq = event
        .seq
        .map_or_else(|| "   ".to_owned(), |s| format!("{s:>3}"));
    match &event.response.payload {
        Some(Payload::Task(t)) => {
            let text = task_text(t, false);
            format!("[{seq}] {text}")
        }
        Some(Payload::Message(m)) => format!("[{seq}] {}\n", message_line(m)),
        Some(Payload::StatusUpdate(u)) => {
            let status = u.status.clone().unwrap_or_default();
            let state = state_name(pb::TaskState::try_from(status.state).unwrap_or_default());
            match &status.message {
                Some(m) => format!("[{seq}] {state}  {}\n", message_line(m)),
                None => format!("[{seq}] {state}\n"),
            }
        }
        Some(Payload::ArtifactUpdate(a)) => {
            let artifact = a.artifact.clone().unwrap_or_default();
            let mut flags = Vec::new();
            if a.append {
                flags.push("append");
            }
            if a.last_chunk {
                flags.push("last");
            }
            let flags = if flags.is_empty() {
                String::new()
            } else {
                format!(" ({})", flags.join(", "))
            };
            format!(
                "[{seq}] artifact {}{flags}: {}\n",
                artifact.artifact_id,
                parts_text(&artifact.parts)
            )
        }
        None => format!("[{seq}] (empty event)\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_in_every_spelling() {
        for name in ["working", "WORKING", "TASK_STATE_WORKING", " Working "] {
            assert_eq!(parse_state(name).ok(), Some(pb::TaskState::Working));
        }
        assert_eq!(
            parse_state("input-required").ok(),
            Some(pb::TaskState::InputRequired)
        );
        assert!(parse_state("unspecified").is_err());
        assert!(parse_state("sleeping").is_err());
    }

    #[test]
    fn transport_failures_and_agent_errors_exit_differently() {
        let agent: Failure = A2aError::task_not_found("t").into();
        let transport: Failure = A2aError::transport("connection refused").into();
        assert_eq!((agent.exit_code(), transport.exit_code()), (1, 3));
    }
}
