//! The client commands of the a2a-cli surface (SPEC v0.2 §7): `card get`, `send`,
//! `task get|cancel|list|subscribe`, and `push …`. Each resolves the agent's card (`-a`), picks
//! a binding from it (`--transport`, else the card's order), makes its A2A call(s) and prints
//! the result: `text` fields and blocks by default ([`crate::render`]), the protocol's own
//! objects with `-o json` (one document; JSONL with `--stream`). Failures are
//! [`Failure`](crate::failure::Failure)s.
//!
//! Today's spellings stay as hidden aliases: `get`/`cancel`/`list`/`subscribe` for
//! `task …`, `card URL`, `send URL TEXT`, `--binding`, `--json`, `--token`, `--context`,
//! `--task`, `--return-immediately`.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use futures::StreamExt;
use trident_client::Binding;
use trident_core::{A2aError, A2aService, CallContext};
use trident_proto as pb;

use crate::failure::{Failure, Local};
use crate::render;

mod catalog;
mod in_task;
pub(crate) mod oauth;

/// The options every client command takes: which agent, how to reach it, how to print.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Target {
    /// The agent's card: a bare host or origin (/.well-known/agent-card.json is appended), a
    /// card URL (used as-is), or a local file (`file://…` or a path).
    #[arg(
        short = 'a',
        long = "agent-card",
        env = "A2ACLI_AGENT_CARD",
        value_name = "REF"
    )]
    pub(crate) agent_card: Option<String>,
    /// An agent catalog (an AI Catalog: a file, a URL, or a host serving
    /// /.well-known/ai-catalog.json) in which a card reference `catalog:NAME` is looked up:
    /// NAME is an entry's identifier, display name or card name (`NAME@VERSION` for a version).
    #[arg(long, env = "A2ACLI_CATALOG", value_name = "REF")]
    pub(crate) catalog: Option<String>,
    /// Transport preference, highest first; repeatable (JSONRPC, HTTP+JSON, GRPC). Bindings
    /// the card does not offer are skipped; default: the card's own order.
    #[arg(long = "transport", alias = "binding", value_name = "BINDING", value_parser = parse_binding)]
    pub(crate) transport: Vec<Binding>,
    /// The A2A version to speak (sent as `A2A-Version` on every request): `auto` is 1.0,
    /// the highest this tool speaks, on whichever binding offers it; an agent that offers
    /// only 0.3 needs `0.3` said explicitly.
    #[arg(
        long = "a2a-version",
        alias = "protocol",
        env = "A2ACLI_A2A_VERSION",
        default_value = "auto",
        value_name = "auto|1.0|0.3"
    )]
    pub(crate) protocol: trident_client::Protocol,
    /// Bearer token, sent as `Authorization: Bearer TOKEN` on A2A calls (not on the card
    /// fetch). Prefer the variable: a flag shows in the process table and shell history.
    #[arg(
        long,
        alias = "token",
        env = "A2ACLI_BEARER",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub(crate) bearer: Option<String>,
    /// API key, sent where the card's API-key scheme says (a header or cookie; `X-API-Key`
    /// when the card declares none). Prefer the variable: a flag shows in the process table.
    #[arg(
        long = "api-key",
        env = "A2ACLI_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub(crate) api_key: Option<String>,
    /// A service parameter `KEY:VALUE` (an HTTP header, gRPC metadata); repeatable.
    #[arg(long = "svc-param", value_name = "KEY:VALUE")]
    pub(crate) svc_param: Vec<String>,
    /// Extension URIs to activate (`A2A-Extensions`), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) extensions: Vec<String>,
    /// Output format: `text` (fields and blocks) or `json` (the protocol's own objects; JSONL
    /// with --stream).
    #[arg(
        short = 'o',
        long,
        value_enum,
        default_value = "text",
        env = "A2ACLI_OUTPUT"
    )]
    pub(crate) output: Format,
    /// Same as `-o json` (the old spelling).
    #[arg(long, hide = true)]
    pub(crate) json: bool,
    /// Show everything exchanged with the agent in text output: the task's whole history (the
    /// messages sent and received), not only its state and artifacts.
    #[arg(long)]
    pub(crate) verbose: bool,
    /// Do not verify TLS certificates (the card fetch and the HTTP bindings; gRPC's TLS is
    /// always verified): for development against a self-signed agent only. Always warned
    /// about on stderr.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Mutual TLS: present this client certificate (PEM, leaf first, then its chain) to an
    /// agent that asks for one; with --key. The card fetch and every binding (gRPC over TLS).
    #[arg(long, env = "A2ACLI_CERT", value_name = "PEM")]
    pub(crate) cert: Option<std::path::PathBuf>,
    /// The private key of --cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "A2ACLI_KEY", value_name = "PEM")]
    pub(crate) key: Option<std::path::PathBuf>,
    /// Also trust the CA certificates of this PEM file (besides the system's) for the agent's
    /// certificate: the card fetch and every binding.
    #[arg(long, env = "A2ACLI_CA", value_name = "PEM")]
    pub(crate) ca: Option<std::path::PathBuf>,
    /// Diagnostics on stderr: the card read, the binding and version chosen, the credentials
    /// and service parameters applied (their values always redacted), and each request and
    /// response (ProtoJSON) with its time.
    #[arg(long)]
    pub(crate) debug: bool,
    /// Give up after this long (`30s`, `500ms`, `2m`, or seconds): the card fetch and each
    /// call; with --wait, the whole wait. Exits 5 (A2ACLI_ERR_TIMEOUT).
    #[arg(long, env = "A2ACLI_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) timeout: Option<Duration>,
    /// Where the wire lines go instead of stderr (the console's log of each call); set, the
    /// wire is tapped without --debug, credentials redacted as with it.
    #[arg(skip)]
    pub(crate) wire: Option<WireSink>,
    /// Whether to ask for the A2A 1.1 preview (set by the commands that use it: `task get`,
    /// `send --if-generation-match`): the card is fetched with `A2A-Version: 1.1`, and an
    /// agent whose card then offers the preview for the binding chosen is spoken to in it.
    #[arg(skip)]
    pub(crate) preview: bool,
}

/// A receiver of wire lines (see [`Target::wire`]), each already redacted.
#[derive(Clone)]
pub(crate) struct WireSink(pub(crate) Arc<dyn Fn(&str) + std::marker::Send + Sync>);

impl std::fmt::Debug for WireSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WireSink")
    }
}

/// `-o`: the output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// `Label: value` fields and blocks.
    #[default]
    Text,
    /// The protocol's own objects (ProtoJSON).
    Json,
}

impl Target {
    /// Whether the wire is tapped: --debug, or a [`WireSink`] set.
    fn tapped(&self) -> bool {
        self.debug || self.wire.is_some()
    }

    /// Whether the output is JSON.
    pub(crate) fn json(&self) -> bool {
        self.json || self.output == Format::Json
    }

    /// The bearer token: the flag or `A2ACLI_BEARER`, else the old `TRIDENT_TOKEN`.
    fn bearer(&self) -> Option<String> {
        self.bearer
            .clone()
            .or_else(|| std::env::var("TRIDENT_TOKEN").ok())
            .filter(|t| !t.is_empty())
    }

    fn reference(&self) -> Result<&str, Failure> {
        self.agent_card.as_deref().ok_or_else(|| {
            Failure::usage("no agent: pass -a/--agent-card REF (or set A2ACLI_AGENT_CARD)")
                .with_hint("trident card get -a http://127.0.0.1:8080")
        })
    }
}

/// A binding as `--transport` names it: the card's names (`JSONRPC`, `HTTP+JSON`, `GRPC`, any
/// case) or the old ones (`jsonrpc`, `rest`, `grpc`).
pub(crate) fn parse_binding(name: &str) -> Result<Binding, String> {
    let upper = name.trim().to_ascii_uppercase();
    match upper.as_str() {
        "JSONRPC" | "JSON-RPC" => Ok(Binding::JsonRpc),
        "HTTP+JSON" | "REST" | "HTTP" => Ok(Binding::Rest),
        "GRPC" => Ok(Binding::Grpc),
        _ => Err(format!(
            "unknown transport {name:?}: use JSONRPC, HTTP+JSON or GRPC"
        )),
    }
}

/// A duration: `250ms`, `30s`, `2m`, `1h`, or a number of seconds (`2.5`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 500ms, 30s, 2m, 2.5)"))?;
    Duration::try_from_secs_f64(value * scale).map_err(|e| format!("{text:?}: {e}"))
}

/// A binding named on the command line of `conformance` and `gateway`.
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

/// `card …`
#[derive(Subcommand, Debug)]
pub(crate) enum CardCommand {
    /// Fetch and show an Agent Card (from a host, a card URL, or a file).
    Get(CardGet),
}

/// `card get`
#[derive(Args, Debug)]
pub(crate) struct CardGet {
    /// The card reference (the same as -a).
    #[arg(value_name = "REF")]
    reference: Option<String>,
    #[command(flatten)]
    pub(crate) target: Target,
    /// Strict: exit 1 (A2ACLI_ERR_CARD_INVALID) unless a signature of the card verifies. Without
    /// it a signed card is verified all the same and the outcome shown (verified or
    /// unverifiable, with a warning); an unsigned card is shown as such.
    #[arg(long)]
    verify: bool,
    /// Trust only the keys of this JWKS URL (instead of the signatures' `jku`).
    #[arg(long)]
    jwks: Option<String>,
    /// Check the card against the A2A 1.0 AgentCard: every field a2a.proto marks REQUIRED
    /// (on the card, its interfaces and skills) present; exit 1 (A2ACLI_ERR_CARD_INVALID)
    /// naming each one missing.
    #[arg(long)]
    validate: bool,
    /// Fetch the authenticated extended card (GetExtendedAgentCard) over the binding the
    /// public card selects, with the credentials it declares (--bearer, --api-key, or a token
    /// of auth login); --validate then checks the extended card. The public card must declare
    /// capabilities.extendedAgentCard.
    #[arg(long)]
    extended: bool,
}

/// One message-part flag of `send`, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PartFlag {
    /// `--text`
    Text(String),
    /// `--file`
    File(String),
    /// `--data`
    Data(String),
    /// `--media-type`, for the part flag before it.
    MediaType(String),
}

/// `send`
#[derive(Args, Debug)]
pub(crate) struct Send {
    /// The message text (a first text part, before the part flags).
    #[arg(value_name = "MESSAGE", num_args = 0..=2)]
    positional: Vec<String>,
    #[command(flatten)]
    pub(crate) target: Target,
    /// A text part; repeatable, parts keep their command-line order.
    #[arg(long, value_name = "TEXT")]
    text: Vec<String>,
    /// A file part: a local path (sent inline) or an http(s) URL (sent as a reference).
    #[arg(long, value_name = "PATH|URL")]
    file: Vec<String>,
    /// A data part: a JSON file, inline JSON, or `-` for standard input.
    #[arg(long, value_name = "PATH|JSON|-")]
    data: Vec<String>,
    /// The media type of the part flag just before it (otherwise inferred).
    #[arg(long = "media-type", value_name = "TYPE")]
    media_type: Vec<String>,
    /// The part flags in command-line order (filled from the parsed matches).
    #[arg(skip)]
    pub(crate) parts: Vec<PartFlag>,
    /// Follow the agent's live events instead of blocking (JSONL with -o json).
    #[arg(long)]
    stream: bool,
    /// Continue this task (for example one waiting for input).
    #[arg(long = "task-id", alias = "task", value_name = "ID")]
    task_id: Option<String>,
    /// Send the reply only if the task is still at generation N (the A2A 1.1 preview's
    /// `ifGenerationMatch`; `task get` shows a task's generation): if it changed since, the
    /// agent refuses with TaskGenerationMismatchError and the task is left as it is. Needs
    /// --task-id, and an agent that offers the preview.
    #[arg(long = "if-generation-match", value_name = "N", requires = "task_id")]
    if_generation_match: Option<i64>,
    /// Start the task in this context.
    #[arg(long = "context-id", alias = "context", value_name = "ID")]
    context_id: Option<String>,
    /// Return the task's identifiers as soon as it exists instead of waiting for it.
    #[arg(long = "async", aliases = ["return-immediately", "no-wait"])]
    r#async: bool,
    /// Request metadata, a JSON object; repeatable (merged, later keys win).
    #[arg(long, value_name = "JSON")]
    metadata: Vec<String>,
    /// Keep at most N history messages in the returned task.
    #[arg(long, alias = "history-length", value_name = "N")]
    history: Option<i32>,
    /// How often to poll while waiting, when the agent's stream breaks off (or it has none
    /// to follow); doubles while the task is unchanged, up to 4 times this.
    #[arg(long = "poll-interval", value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    poll_interval: Duration,
    /// Host a webhook receiver on ADDR (e.g. 127.0.0.1:0), register it with a fresh token as
    /// the task's push-notification config, and print each notification it receives until the
    /// task ends or needs input (SPEC §9.2).
    #[arg(long = "push-receiver", value_name = "ADDR")]
    push_receiver: Option<String>,
    /// The credential for a task that pauses at AUTH_REQUIRED (in-task authorization, SPEC
    /// §12.3): sent to the task in a follow-up message, and the wait goes on. Without it, the
    /// token `auth login` kept for the scheme the agent names, else a prompt on a terminal;
    /// else the task is reported as waiting. Prefer the variable: a flag shows in the process
    /// table.
    #[arg(
        long = "task-credential",
        env = "A2ACLI_TASK_CREDENTIAL",
        hide_env_values = true,
        value_name = "CREDENTIAL"
    )]
    task_credential: Option<String>,
}

/// `task …`
#[derive(Subcommand, Debug)]
pub(crate) enum TaskCommand {
    /// Show a task (with --wait: poll until it ends or needs input).
    Get(TaskGet),
    /// Cancel a task.
    Cancel(TaskCancel),
    /// List tasks.
    List(TaskList),
    /// Follow a task's events.
    Subscribe(TaskSubscribe),
    /// Save a task's artifacts to disk, one file per part.
    Download(TaskDownload),
    /// A task's push-notification configurations: create, get, list, delete.
    #[command(subcommand, name = "push-config")]
    PushConfig(PushConfig),
}

/// `task push-config …`
#[derive(Subcommand, Debug)]
pub(crate) enum PushConfig {
    /// Create (or replace) a webhook for a task.
    Create {
        /// Task id.
        task_id: String,
        #[command(flatten)]
        target: Target,
        /// The webhook URL the agent posts the task's updates to.
        #[arg(long, value_name = "URL")]
        url: String,
        /// The configuration's id (default: the agent picks one).
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// A token the agent sends back with each call (`A2A-Notification-Token`). (Go's
        /// a2a-cli calls it --token, which here is the old spelling of --bearer.)
        #[arg(long = "notification-token", value_name = "TOKEN")]
        token: Option<String>,
        /// The scheme the agent authenticates to the webhook with (e.g. Bearer).
        #[arg(long = "auth-scheme", value_name = "SCHEME")]
        auth_scheme: Option<String>,
        /// The credentials the agent presents to the webhook (needs --auth-scheme).
        #[arg(long = "auth-credentials", value_name = "CREDENTIALS")]
        auth_credentials: Option<String>,
    },
    /// Show one configuration.
    Get {
        /// Task id.
        task_id: String,
        /// Configuration id.
        config_id: String,
        #[command(flatten)]
        target: Target,
    },
    /// List a task's configurations (every page).
    List {
        /// Task id.
        task_id: String,
        #[command(flatten)]
        target: Target,
    },
    /// Delete a configuration.
    Delete {
        /// Task id.
        task_id: String,
        /// Configuration id.
        config_id: String,
        #[command(flatten)]
        target: Target,
    },
}

impl PushConfig {
    fn target(&self) -> &Target {
        match self {
            PushConfig::Create { target, .. }
            | PushConfig::Get { target, .. }
            | PushConfig::List { target, .. }
            | PushConfig::Delete { target, .. } => target,
        }
    }
}

impl TaskCommand {
    /// Whether it prints JSON.
    pub(crate) fn json(&self) -> bool {
        match self {
            TaskCommand::Get(a) => a.target.json(),
            TaskCommand::Cancel(a) => a.target.json(),
            TaskCommand::List(a) => a.target.json(),
            TaskCommand::Subscribe(a) => a.target.json(),
            TaskCommand::Download(a) => a.target.json(),
            TaskCommand::PushConfig(p) => p.target().json(),
        }
    }

    /// Runs it.
    pub(crate) async fn run(&self) -> Result<(), Failure> {
        match self {
            TaskCommand::Get(a) => task_get(a).await,
            TaskCommand::Cancel(a) => task_cancel(a).await,
            TaskCommand::List(a) => task_list(a).await,
            TaskCommand::Subscribe(a) => task_subscribe(a).await,
            TaskCommand::Download(a) => task_download(a).await,
            TaskCommand::PushConfig(p) => push_config(p).await,
        }
    }
}

/// `task get`
#[derive(Args, Debug)]
pub(crate) struct TaskGet {
    /// Task id.
    id: String,
    #[command(flatten)]
    pub(crate) target: Target,
    /// Include (at most) N history messages.
    #[arg(long, alias = "history-length", value_name = "N")]
    history: Option<i32>,
    /// Poll until the task ends or needs input (COMPLETED, FAILED, CANCELED, REJECTED,
    /// INPUT_REQUIRED, AUTH_REQUIRED).
    #[arg(long, alias = "watch")]
    wait: bool,
    /// How often to poll with --wait (doubling while the task is unchanged, up to 4 times
    /// this).
    #[arg(long = "poll-interval", value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    poll_interval: Duration,
}

/// `task download`
#[derive(Args, Debug)]
pub(crate) struct TaskDownload {
    /// Task id.
    id: String,
    #[command(flatten)]
    pub(crate) target: Target,
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: std::path::PathBuf,
    /// Only this artifact (its id or name); repeatable.
    #[arg(long, value_name = "ID|NAME")]
    artifact: Vec<String>,
}

/// `task cancel`
#[derive(Args, Debug)]
pub(crate) struct TaskCancel {
    /// Task id.
    id: String,
    #[command(flatten)]
    pub(crate) target: Target,
}

/// `task list`
#[derive(Args, Debug)]
pub(crate) struct TaskList {
    #[command(flatten)]
    pub(crate) target: Target,
    /// Only tasks of this context.
    #[arg(long = "context-id", alias = "context", value_name = "ID")]
    context_id: Option<String>,
    /// Only tasks in this state (`working`, `input-required`, `TASK_STATE_COMPLETED`, …).
    #[arg(long)]
    state: Option<String>,
    /// Tasks per page (1–100).
    #[arg(long)]
    page_size: Option<i32>,
    /// Continue from this page token.
    #[arg(long)]
    page_token: Option<String>,
    /// Follow every page to the end (with -o json: one ListTasksResponse of them all).
    #[arg(long)]
    all: bool,
}

/// `task subscribe`
#[derive(Args, Debug)]
pub(crate) struct TaskSubscribe {
    /// Task id.
    id: String,
    #[command(flatten)]
    pub(crate) target: Target,
    /// Resume after this event sequence number (replays from the log, then follows live).
    #[arg(long)]
    after: Option<u64>,
    /// Print each event as it arrives (JSONL with -o json); without it, -o json prints the
    /// last task state only.
    #[arg(long)]
    stream: bool,
}

impl TaskSubscribe {
    /// This subscription printing every event (what the old `subscribe` did).
    pub(crate) fn streaming(mut self) -> Self {
        self.stream = true;
        self
    }
}

/// An old spelling (`get URL ID`, `list URL`, …): the agent first, then the new command's
/// arguments.
#[derive(Args, Debug)]
pub(crate) struct Legacy<T: Args> {
    /// The agent (as -a).
    url: String,
    #[command(flatten)]
    pub(crate) inner: T,
}

impl<T: Args> Legacy<T> {
    /// The new command, with the agent the old spelling named (unless -a names one).
    pub(crate) fn into_inner(self, target: impl FnOnce(&mut T) -> &mut Target) -> T {
        let mut inner = self.inner;
        let t = target(&mut inner);
        if t.agent_card.is_none() {
            t.agent_card = Some(self.url);
        }
        inner
    }
}

/// `push …`
#[derive(Subcommand, Debug)]
pub(crate) enum Push {
    /// Create or replace a webhook for a task.
    Set {
        /// The agent (as -a).
        url: String,
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
        /// The agent (as -a).
        url: String,
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
        /// Configuration id.
        id: String,
    },
    /// List a task's configurations.
    List {
        /// The agent (as -a).
        url: String,
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
    },
    /// Delete a configuration.
    Delete {
        /// The agent (as -a).
        url: String,
        #[command(flatten)]
        target: Target,
        /// Task id.
        task: String,
        /// Configuration id.
        id: String,
    },
}

impl Push {
    /// The options of the command.
    pub(crate) fn target(&self) -> &Target {
        match self {
            Push::Set { target, .. }
            | Push::Get { target, .. }
            | Push::List { target, .. }
            | Push::Delete { target, .. } => target,
        }
    }
}

/// `target` with the agent `url` (unless -a names one).
fn with_url(target: &Target, url: &str) -> Target {
    let mut t = target.clone();
    t.agent_card.get_or_insert_with(|| url.to_owned());
    t
}

/// A connection to the agent, ready for calls.
struct Session {
    debug: bool,
    verbose: bool,
    svc: Arc<dyn A2aService>,
    cx: CallContext,
    json: bool,
    card: pb::AgentCard,
    reference: String,
    credentials: bool,
    /// Whether a client certificate (--cert) is presented.
    client_cert: bool,
    /// In `chat`, where the reply to a waiting task is the next line typed, not a `send`.
    chat: bool,
    /// Whether the agent is spoken to in the A2A 1.1 preview ([`Target::preview`] asked for
    /// it and the card offers it): calls send `A2A-Version: 1.1`, tasks carry a generation.
    preview: bool,
}

impl Session {
    /// Whether the agent's card declares the capability `flag` reads (`false` when it says
    /// nothing).
    fn declares(&self, flag: impl FnOnce(&pb::AgentCapabilities) -> Option<bool>) -> bool {
        self.card
            .capabilities
            .as_ref()
            .and_then(flag)
            .unwrap_or(false)
    }

    /// A failure of a call, classified.
    fn failed(&self, e: A2aError) -> Failure {
        let chain = trident_core::error_chain(&e);
        if refused_client_certificate(&chain) {
            return client_certificate_refused(self.client_cert, chain);
        }
        let failure = Failure::from_a2a(e, self.credentials);
        // The hint Appendix B asks for: the login command, when the card says how.
        match oauth::login_hint(&self.card, &self.reference) {
            Some(hint)
                if matches!(
                    failure.code(),
                    "A2ACLI_ERR_CREDENTIALS_MISSING" | "A2ACLI_ERR_AUTH_FAILED"
                ) =>
            {
                failure.with_hint(hint)
            }
            _ => failure,
        }
    }

    /// `GetTask`, logged with --debug.
    async fn get_task(&self, request: pb::GetTaskRequest) -> Result<pb::Task, A2aError> {
        let call = self.svc.get_task(&self.cx, request.clone());
        self.logged("GetTask", &request, call).await
    }

    /// `CancelTask`, logged with --debug.
    async fn cancel_task(&self, request: pb::CancelTaskRequest) -> Result<pb::Task, A2aError> {
        let call = self.svc.cancel_task(&self.cx, request.clone());
        self.logged("CancelTask", &request, call).await
    }

    /// `GetExtendedAgentCard`, logged with --debug.
    async fn get_extended_agent_card(&self) -> Result<pb::AgentCard, A2aError> {
        let request = pb::GetExtendedAgentCardRequest::default();
        let started = self.sending("GetExtendedAgentCard", &request);
        let result = self.svc.get_extended_agent_card(&self.cx, request).await;
        self.received("GetExtendedAgentCard", started, &result);
        result
    }

    /// `ListTasks`, logged with --debug.
    async fn list_tasks(
        &self,
        request: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        let call = self.svc.list_tasks(&self.cx, request.clone());
        self.logged("ListTasks", &request, call).await
    }

    /// Makes the call `call` (of `method` with `request`), with the request and what came
    /// back logged with --debug.
    async fn logged<T: serde::Serialize>(
        &self,
        method: &str,
        request: &impl serde::Serialize,
        call: impl std::future::Future<Output = Result<T, A2aError>>,
    ) -> Result<T, A2aError> {
        let started = self.sending(method, request);
        let result = call.await;
        self.received(method, started, &result);
        result
    }

    /// With --debug: a stream event.
    fn event(&self, response: &pb::StreamResponse) {
        if self.debug {
            debug(&format!("← event {}", json_line(response)));
        }
    }

    /// With --debug: the request about to go out.
    fn sending<T: serde::Serialize>(&self, method: &str, request: &T) -> std::time::Instant {
        if self.debug {
            debug(&format!("→ {method} {}", json_line(request)));
        }
        std::time::Instant::now()
    }

    /// With --debug: what came back.
    fn received<T: serde::Serialize>(
        &self,
        method: &str,
        started: std::time::Instant,
        result: &Result<T, A2aError>,
    ) {
        if !self.debug {
            return;
        }
        let took = started.elapsed();
        match result {
            Ok(value) => debug(&format!("← {method} in {took:?}: {}", json_line(value))),
            Err(e) => debug(&format!(
                "← {method} failed in {took:?}: {:?} {}",
                e.kind(),
                e.message()
            )),
        }
    }
}

/// A diagnostic line on stderr (--debug). Credentials never reach it: the code that logs
/// them logs `[redacted]` in their place.
pub(crate) fn debug(text: &str) {
    let _ = writeln!(std::io::stderr(), "debug: {text}");
}

/// With --debug: the tap that shows the exchanges on the wire (`debug: wire: …` lines), blind
/// to every credential the command was given wherever it would appear: the bearer token (a
/// flag's, its variable's or the one `auth login` kept), the API key and the values of
/// `--svc-param` are never shown, and neither are the headers they travel in.
///
/// An in-task credential (a2a-cli §12.3, `AUTH_REQUIRED`) travels in a message body, and an
/// agent may echo it back in the task's history: every JSON body holding one is shown with it
/// redacted ([`wire_line`]), whichever way the credential was obtained (a flag, a variable,
/// the token store, a prompt).
fn wire_tap(target: &Target, bearer: Option<&str>) -> trident_client::WireTap {
    let sink = target.wire.clone();
    let mut tap = trident_client::WireTap::new(move |line| match &sink {
        Some(sink) => (sink.0)(&wire_line(line)),
        None => debug(&format!("wire: {}", wire_line(line))),
    });
    let given = target.bearer();
    if let Some(token) = bearer.or(given.as_deref()) {
        tap = tap.secret_value(token);
    }
    if let Some(key) = &target.api_key {
        tap = tap.secret_value(key);
    }
    for param in &target.svc_param {
        if let Some((key, value)) = param.split_once(':') {
            tap = tap.secret_header(key).secret_value(value.trim());
        }
    }
    tap
}

/// [`wire_tap`] for calls to the agent of `card`: also blind to every header and query
/// parameter its security schemes name (an API key's, wherever the card puts it; cookies and
/// `Authorization` are never shown anyway).
fn card_wire_tap(
    target: &Target,
    card: &pb::AgentCard,
    bearer: Option<&str>,
) -> trident_client::WireTap {
    let mut tap = wire_tap(target, bearer);
    for scheme in card.security_schemes.values() {
        if let Some(pb::security_scheme::Scheme::ApiKeySecurityScheme(k)) = &scheme.scheme {
            tap = match k.location.to_ascii_lowercase().as_str() {
                "query" => tap.secret_query(&k.name),
                _ => tap.secret_header(&k.name),
            };
        }
    }
    let (name, _) = api_key_place(card);
    tap.secret_header(&name).secret_query(&name)
}

/// A wire line (`JSON-RPC → {…}`, `data: {…}`) with the credential of any in-task
/// authorization follow-up in its JSON redacted ([`scrubbed`]); other lines as they are.
fn wire_line(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains(&format!("\"{}\"", render::CREDENTIAL_KEY)) {
        return line.into();
    }
    let Some(at) = line.find('{') else {
        return line.into();
    };
    let (head, body) = line.split_at(at);
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(mut value) => {
            render::scrub(&mut value);
            format!("{head}{value}").into()
        }
        // Not JSON as a whole (cut short, say): it may still hold the credential.
        Err(_) => format!(
            "{head}[{} bytes not shown: they may hold a credential]",
            body.len()
        )
        .into(),
    }
}

fn json_line<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).map_or_else(|e| format!("<{e}>"), scrubbed)
}

/// `json` with the credential of any in-task authorization follow-up it holds redacted
/// ([`render::scrub`]); unchanged (and not re-read) when it holds none.
fn scrubbed(json: String) -> String {
    if !json.contains(&format!("\"{}\"", render::CREDENTIAL_KEY)) {
        return json;
    }
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(mut value) => {
            render::scrub(&mut value);
            value.to_string()
        }
        Err(_) => json,
    }
}

/// Where a card reference points.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CardSource {
    File(std::path::PathBuf),
    Url(String),
}

/// Resolves a card reference (SPEC §7.2 `-a`): `file://…` and existing paths are files; an
/// `http(s)` URL with a path is the card's URL, without one the agent's origin; a bare host
/// is an origin (`http` for loopback names, `https` otherwise).
pub(crate) fn card_source(reference: &str) -> CardSource {
    let well_known =
        |origin: &str| format!("{}{}", origin.trim_end_matches('/'), trident::CARD_PATH);
    if let Some(path) = reference.strip_prefix("file://") {
        return CardSource::File(path.into());
    }
    if let Some((scheme, rest)) = reference.split_once("://")
        && (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
    {
        let path = rest.split_once('/').map_or("", |(_, p)| p);
        return if path.is_empty() {
            CardSource::Url(well_known(reference))
        } else {
            CardSource::Url(reference.to_owned())
        };
    }
    let path = std::path::Path::new(reference);
    if path.exists() || reference.starts_with(['.', '/', '~']) || reference.ends_with(".json") {
        return CardSource::File(path.into());
    }
    let host = reference.split(['/', ':']).next().unwrap_or_default();
    let scheme = if matches!(host, "localhost" | "127.0.0.1" | "[" | "") || host.starts_with("127.")
    {
        "http"
    } else {
        "https"
    };
    let origin = format!("{scheme}://{reference}");
    match card_source(&origin) {
        CardSource::Url(u) => CardSource::Url(u),
        CardSource::File(_) => CardSource::Url(well_known(&origin)),
    }
}

/// The HTTP client of the card fetch and the HTTP bindings: certificates verified unless
/// `--insecure`, the roots of `--ca` trusted too, the client certificate of `--cert`/`--key`
/// presented (mutual TLS, SPEC §12.3).
fn http_client(target: &Target) -> Result<reqwest::Client, Failure> {
    let read = |flag: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| Failure::usage(format!("{flag} {}: {e}", path.display())))
    };
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .danger_accept_invalid_certs(target.insecure);
    if let Some(path) = &target.ca {
        let roots = reqwest::Certificate::from_pem_bundle(&read("--ca", path)?).map_err(|e| {
            Failure::usage(format!(
                "--ca {}: {}",
                path.display(),
                trident_core::error_chain(&e)
            ))
        })?;
        if roots.is_empty() {
            return Err(Failure::usage(format!(
                "--ca {}: no certificate in the file",
                path.display()
            )));
        }
        builder = builder.tls_certs_merge(roots);
    }
    match (&target.cert, &target.key) {
        (Some(cert), Some(key)) => {
            let mut pem = read("--cert", cert)?;
            pem.push(b'\n');
            pem.extend(read("--key", key)?);
            // The key's text is never shown: only the file names.
            let identity = reqwest::Identity::from_pem(&pem).map_err(|_| {
                Failure::usage(format!(
                    "--cert {} with --key {}: not a PEM certificate and its private key",
                    cert.display(),
                    key.display()
                ))
            })?;
            builder = builder.identity(identity);
        }
        (None, None) => {}
        _ => return Err(Failure::usage("--cert and --key go together (mutual TLS)")),
    }
    builder
        .build()
        .map_err(|e| Failure::local(Local::Internal, e.to_string()))
}

/// A TLS handshake the agent ended over the client certificate (none presented, or refused):
/// a TLS failure, `A2ACLI_ERR_UNREACHABLE` (exit 3, SPEC §11.6), whose hint says what to do.
/// (Not exit 4: under TLS 1.3 the agent's alert may arrive after the connection is already
/// given up on, so the same refusal could not always be told apart.)
fn client_certificate_refused(presented: bool, message: String) -> Failure {
    Failure::local(Local::Unreachable, message).with_hint(if presented {
        "the agent refused the client certificate of --cert (mutual TLS)"
    } else {
        "the agent asks for a client certificate (mutual TLS): --cert PEM --key PEM"
    })
}

/// Whether `chain` (an error's causes) is a TLS peer refusing the client's certificate, or its
/// absence.
fn refused_client_certificate(chain: &str) -> bool {
    [
        "CertificateRequired",
        "BadCertificate",
        "UnknownCA",
        "CertificateUnknown",
        "AccessDenied",
    ]
    .iter()
    .any(|alert| chain.contains(&format!("received fatal alert: {alert}")))
}

/// Reads the card `reference` names. Every command starts here, so this is where
/// `--insecure` is warned about, every time (SPEC §6.5, §12.1).
pub(crate) async fn resolve_card(target: &Target) -> Result<pb::AgentCard, Failure> {
    resolve_card_json(target).await.map(|(card, _)| card)
}

/// [`resolve_card`], with the card's JSON as read.
pub(crate) async fn resolve_card_json(
    target: &Target,
) -> Result<(pb::AgentCard, Vec<u8>), Failure> {
    if target.insecure {
        let _ = writeln!(
            std::io::stderr(),
            "warning: --insecure: TLS certificates are not verified; anyone on the path can \
             impersonate the agent (development only)"
        );
        if target.bearer().is_some() || target.api_key.is_some() || !target.svc_param.is_empty() {
            let _ = writeln!(
                std::io::stderr(),
                "warning: --insecure: your credentials and service parameters go over a \
                 connection whose certificate is not verified"
            );
        }
    }
    let reference = target.reference()?;
    let hint = format!("check the reference: trident card get -a {reference}");
    // A catalog entry is resolved first (SPEC §10.1): to a card reference, or the card itself.
    let (source, inline) = match reference.strip_prefix(catalog::PREFIX) {
        Some(name) => match catalog::resolve(target, name).await? {
            catalog::Entry::Reference(r) => (card_source(&r), None),
            catalog::Entry::Inline(body) => (CardSource::File(reference.into()), Some(body)),
        },
        None => (card_source(reference), None),
    };
    if target.debug {
        debug(&format!("card: {source:?} (from {reference:?})"));
    }
    let started = std::time::Instant::now();
    let body = match (source, inline) {
        (_, Some(body)) => body,
        (CardSource::File(path), None) => std::fs::read(&path).map_err(|e| {
            Failure::local(
                Local::CardNotFound,
                format!("card file {}: {e}", path.display()),
            )
            .with_hint(hint.clone())
        })?,
        (CardSource::Url(url), None) => {
            let http = http_client(target)?;
            let mut request = http.get(&url).header("accept", "application/json").header(
                "a2a-version",
                if target.preview {
                    trident_core::PREVIEW_VERSION
                } else {
                    trident_core::PROTOCOL_VERSION
                },
            );
            if let Some(t) = target.timeout {
                request = request.timeout(t);
            }
            let tap = target.tapped().then(|| wire_tap(target, None));
            let sent = async {
                let (http, request) = request.build_split();
                let request = request?;
                if let Some(tap) = &tap {
                    let url = tap.url(request.url().as_str());
                    tap.line(&format!("card → {} {url}", request.method()));
                    for (name, value) in request.headers() {
                        let line =
                            tap.header(name.as_str(), value.as_bytes(), value.is_sensitive());
                        tap.lines("card → ", &line);
                    }
                }
                http.execute(request).await
            };
            let response = sent.await.map_err(|e| {
                let chain = trident_core::error_chain(&e);
                if refused_client_certificate(&chain) {
                    return client_certificate_refused(
                        target.cert.is_some(),
                        format!("agent card {url}: {chain}"),
                    );
                }
                let code = if e.is_timeout() {
                    Local::Timeout
                } else {
                    Local::Unreachable
                };
                Failure::local(code, format!("agent card {url}: {chain}")).with_hint(hint.clone())
            })?;
            let status = response.status();
            if let Some(tap) = &tap {
                tap.lines("card ← ", &format!("{:?} {status}", response.version()));
                for (name, value) in response.headers() {
                    let line = tap.header(name.as_str(), value.as_bytes(), value.is_sensitive());
                    tap.lines("card ← ", &line);
                }
            }
            if !status.is_success() {
                let code = match status.as_u16() {
                    401 => Local::CredentialsMissing,
                    403 => Local::AuthFailed,
                    _ => Local::CardNotFound,
                };
                return Err(
                    Failure::local(code, format!("agent card {url}: HTTP {status}"))
                        .with_hint(hint),
                );
            }
            response
                .bytes()
                .await
                .map_err(|e| Failure::local(Local::Unreachable, format!("agent card {url}: {e}")))?
                .to_vec()
        }
    };
    if target.debug {
        debug(&format!(
            "card: {} bytes in {:?}: {}",
            body.len(),
            started.elapsed(),
            String::from_utf8_lossy(&body).replace('\n', " ")
        ));
    }
    let card = trident_client::read_card(&body).map_err(|e| {
        Failure::local(
            Local::CardInvalid,
            format!("agent card {reference}: {}", e.message()),
        )
        .with_hint("the card must be an A2A AgentCard in JSON")
    })?;
    Ok((card, body))
}

/// What is wrong with a card's JSON against the A2A 1.0 `AgentCard` (`a2a.proto`): every field
/// the proto marks REQUIRED, on the card, its interfaces and its skills, present and not
/// empty. (The types were checked when the card was read.)
pub(crate) fn card_problems(json: &serde_json::Value) -> Vec<String> {
    missing_fields(
        json,
        &[
            "name",
            "description",
            "supportedInterfaces",
            "version",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ],
        &[
            (
                "supportedInterfaces",
                &["url", "protocolBinding", "protocolVersion"],
            ),
            ("skills", &["id", "name", "description", "tags"]),
        ],
    )
}

/// [`card_problems`] for the card of an agent that speaks only A2A 0.3 (no
/// `supportedInterfaces`, a top-level `url`): the fields v0.3's `AgentCard` requires, on the
/// card, its additional interfaces and its skills.
pub(crate) fn card_problems_v03(json: &serde_json::Value) -> Vec<String> {
    missing_fields(
        json,
        &[
            "name",
            "description",
            "url",
            "version",
            "protocolVersion",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ],
        &[
            ("additionalInterfaces", &["url", "transport"]),
            ("skills", &["id", "name", "description", "tags"]),
        ],
    )
}

/// The `fields` of `json` that are missing or empty, and the `fields` of each item of each
/// `list` that are.
fn missing_fields(
    json: &serde_json::Value,
    fields: &[&str],
    lists: &[(&str, &[&str])],
) -> Vec<String> {
    fn missing(v: &serde_json::Value, field: &str) -> bool {
        match v.get(field) {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::String(s)) => s.is_empty(),
            Some(serde_json::Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        }
    }
    let mut problems: Vec<String> = fields
        .iter()
        .filter(|f| missing(json, f))
        .map(|f| format!("{f} is required"))
        .collect();
    for (list, fields) in lists {
        for (n, item) in json[*list].as_array().into_iter().flatten().enumerate() {
            for field in *fields {
                if missing(item, field) {
                    problems.push(format!("{list}[{n}].{field} is required"));
                }
            }
        }
    }
    problems
}

/// The binding preference: `--transport` first, then the card's own order, then the rest.
fn preference(target: &Target, card: &pb::AgentCard) -> Vec<Binding> {
    let card_order = card.supported_interfaces.iter().filter_map(|i| {
        Binding::ALL
            .into_iter()
            .find(|b| i.protocol_binding.eq_ignore_ascii_case(b.card_name()))
    });
    let mut order: Vec<Binding> = Vec::new();
    for b in target
        .transport
        .iter()
        .copied()
        .chain(card_order)
        .chain(Binding::ALL)
    {
        if !order.contains(&b) {
            order.push(b);
        }
    }
    order
}

/// A failure to pick an interface, given the card's reference.
type NoInterface = Box<dyn FnOnce(&str) -> Failure>;

/// The binding and interface to use: the first of `order` the card offers in the version
/// asked for. `auto` never goes below 1.0 (SPEC §13.2): a card offering only 0.3 is
/// `VersionNotSupportedError` until `--a2a-version 0.3` says so.
fn select(
    target: &Target,
    card: &pb::AgentCard,
    order: &[Binding],
) -> Result<(Binding, pb::AgentInterface), NoInterface> {
    use trident_client::Protocol;
    let wanted = match target.protocol {
        Protocol::Auto => Protocol::V1,
        other => other,
    };
    if let Some(found) = trident_client::choose_for(card, order, wanted) {
        return Ok(found);
    }
    let legacy_only = target.protocol == Protocol::Auto
        && trident_client::choose_for(card, order, Protocol::V03).is_some();
    let card = card.clone();
    let order = order.to_vec();
    Err(Box::new(move |reference: &str| {
        if legacy_only {
            return Failure::Agent(
                A2aError::new(
                    trident_core::ErrorKind::VersionNotSupported,
                    format!(
                        "the agent {reference} offers only A2A 0.3, and this tool speaks 1.0 unless \
                     told otherwise"
                    ),
                ),
                None,
            );
        }
        Failure::from_a2a(
            trident_client::no_match_for(reference, &card, &order, wanted),
            false,
        )
    }))
}

/// The gRPC interface URL `url` of `card`, with the scheme that decides TLS: `https://` (TLS)
/// and `http://` (plain HTTP/2) as written; a bare `host:port` (how A2A 1.0 cards write gRPC
/// URLs) is TLS when the card offers an `https://` interface at the same host and port (one
/// server, one TLS; the bindings of a card are the same agent), or the port is 443, and plain
/// HTTP/2 otherwise.
fn grpc_url(card: &pb::AgentCard, url: &str) -> String {
    if url.contains("://") {
        return url.to_owned();
    }
    let authority = url.trim_end_matches('/');
    let same_https = card.supported_interfaces.iter().any(|i| {
        i.url
            .strip_prefix("https://")
            .and_then(|rest| rest.split('/').next())
            .is_some_and(|a| a.eq_ignore_ascii_case(authority))
    });
    if same_https || authority.ends_with(":443") {
        format!("https://{authority}")
    } else {
        url.to_owned()
    }
}

/// Where an API key goes (A2A §4.5.2: `header`, `query` or `cookie`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyPlace {
    Header,
    Query,
    Cookie,
}

/// The name an API key goes under and where, per the card's API-key scheme (the header
/// `X-API-Key` without one).
fn api_key_place(card: &pb::AgentCard) -> (String, KeyPlace) {
    for scheme in card.security_schemes.values() {
        if let Some(pb::security_scheme::Scheme::ApiKeySecurityScheme(k)) = &scheme.scheme {
            let place = match k.location.to_ascii_lowercase().as_str() {
                "cookie" => KeyPlace::Cookie,
                "query" => KeyPlace::Query,
                _ => KeyPlace::Header,
            };
            return (k.name.clone(), place);
        }
    }
    ("X-API-Key".to_owned(), KeyPlace::Header)
}

/// The extensions to activate: `asked` (--extensions), then each extension `card` marks
/// required that is not among them, in card order, without duplicates.
fn with_required_extensions(asked: &[String], card: &pb::AgentCard) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    let required = card
        .capabilities
        .iter()
        .flat_map(|c| &c.extensions)
        .filter(|e| e.required)
        .map(|e| &e.uri);
    for uri in asked.iter().chain(required) {
        if !uri.is_empty() && !all.contains(uri) {
            all.push(uri.clone());
        }
    }
    all
}

/// The agent of `card` over the binding `target` prefers, as the console calls it: its
/// service and the call context (credentials and required extensions) to call it with.
pub(crate) async fn service(
    target: &Target,
    card: pb::AgentCard,
) -> Result<(Arc<dyn A2aService>, CallContext), Failure> {
    let session = connect_with(target, card).await?;
    Ok((session.svc, session.cx))
}

async fn connect(target: &Target) -> Result<Session, Failure> {
    let card = resolve_card(target).await?;
    connect_with(target, card).await
}

/// [`connect`], to the agent of `card` (read already).
async fn connect_with(target: &Target, card: pb::AgentCard) -> Result<Session, Failure> {
    let reference = target.reference()?.to_owned();
    let mut builder = trident_client::ClientBuilder::new()
        .protocol(target.protocol)
        .cache_cards(false);
    if target.insecure || target.cert.is_some() || target.ca.is_some() {
        builder = builder.http_client(http_client(target)?);
    }
    // gRPC over TLS (an https:// interface): the same roots and client certificate.
    let read = |flag: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| Failure::usage(format!("{flag} {}: {e}", path.display())))
    };
    if let Some(ca) = &target.ca {
        builder = builder.tls_roots_pem(read("--ca", ca)?);
    }
    if let (Some(cert), Some(key)) = (&target.cert, &target.key) {
        builder = builder.grpc_client_identity(read("--cert", cert)?, read("--key", key)?);
    }
    // A token `auth login` kept for this agent, unless a bearer token is given (§12.2).
    let (bearer, stored_scheme) = match target.bearer() {
        Some(token) => (Some(token), None),
        None => match oauth::stored_token(target, &card).await? {
            Some((scheme, token)) => (Some(token), Some(scheme)),
            None => (None, None),
        },
    };
    if let Some(token) = &bearer {
        builder = builder.bearer_token(token);
    }
    if target.insecure && stored_scheme.is_some() {
        let _ = writeln!(
            std::io::stderr(),
            "warning: --insecure: the token auth login kept goes over a connection whose \
             certificate is not verified"
        );
    }
    let key_place = target.api_key.as_ref().map(|_| api_key_place(&card));
    if let (Some(key), Some((name, place))) = (&target.api_key, &key_place) {
        builder = match place {
            KeyPlace::Cookie => builder.api_key("cookie", format!("{name}={key}")),
            KeyPlace::Query => builder.api_key_query(name, key),
            KeyPlace::Header => builder.api_key(name, key),
        };
    }
    for param in &target.svc_param {
        let (key, value) = param
            .split_once(':')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| Failure::usage(format!("--svc-param {param:?}: expected KEY:VALUE")))?;
        builder = builder.header(key.trim(), value.trim());
    }
    if let Some(t) = target.timeout {
        builder = builder.timeout(t);
    }
    if target.tapped() {
        builder = builder.wire_tap(card_wire_tap(target, &card, bearer.as_deref()));
    }
    let client = builder
        .build()
        .map_err(|e| Failure::usage(e.message().to_owned()))?;
    let order = preference(target, &card);
    let (binding, mut interface) = select(target, &card, &order).map_err(|e| e(&reference))?;
    // The A2A 1.1 preview, when asked for: the same binding's 1.1 twin, if the card has one.
    let mut preview = false;
    if target.preview
        && let Some(twin) = trident_client::preview_twin(&card, binding, &interface)
    {
        interface = twin;
        preview = true;
    }
    if binding == Binding::Grpc {
        interface.url = grpc_url(&card, &interface.url);
        if target.insecure && interface.url.starts_with("https://") {
            let _ = writeln!(
                std::io::stderr(),
                "note: --insecure does not reach the gRPC binding: the certificate of {} is \
                 verified",
                interface.url
            );
        }
    }
    if let Some((name, KeyPlace::Query)) = &key_place
        && binding == Binding::Grpc
    {
        // gRPC has no query string; calling without the key would only be refused.
        return Err(Failure::usage(format!(
            "the card of {reference} wants the API key in the query parameter {name:?}, which \
             gRPC cannot carry"
        ))
        .with_hint(
            "choose an HTTP binding the card offers: --transport JSONRPC or --transport HTTP+JSON",
        ));
    }
    let credentials = bearer.is_some() || target.api_key.is_some();
    let svc = client.client(binding, &interface).await.map_err(|e| {
        let chain = trident_core::error_chain(&e);
        if refused_client_certificate(&chain) {
            return client_certificate_refused(target.cert.is_some(), chain);
        }
        Failure::from_a2a(e, credentials)
    })?;
    let mut cx = CallContext::new();
    // The card's required extensions are declared on every call (A2A §4.6: a server refuses
    // a call that does not activate one); --extensions adds more (A2ACLI_VER_002).
    cx.extensions = with_required_extensions(&target.extensions, &card);
    if let Some(token) = &bearer {
        cx = cx.with_credentials(format!("Bearer {token}"));
    }
    if target.debug {
        debug(&format!(
            "transport: {} {} A2A {} (preference {:?}, version {})",
            binding.card_name(),
            interface.url,
            interface.protocol_version,
            order.iter().map(|b| b.card_name()).collect::<Vec<_>>(),
            target.protocol
        ));
        match (&bearer, &stored_scheme) {
            (Some(_), Some(scheme)) => debug(&format!(
                "credential: Authorization: Bearer [redacted] (kept by auth login, scheme {scheme:?})"
            )),
            (Some(_), None) => debug("credential: Authorization: Bearer [redacted]"),
            _ => {}
        }
        if let Some((name, place)) = &key_place {
            let place = match place {
                KeyPlace::Header => "header",
                KeyPlace::Query => "query parameter",
                KeyPlace::Cookie => "cookie",
            };
            debug(&format!(
                "credential: API key in {place} {name}: [redacted]"
            ));
        }
        if !cx.extensions.is_empty() {
            debug(&format!("extensions: {}", cx.extensions.join(", ")));
        }
        for param in &target.svc_param {
            let key = param.split_once(':').map_or(param.as_str(), |(k, _)| k);
            debug(&format!("service parameter: {}: [redacted]", key.trim()));
        }
    }
    Ok(Session {
        debug: target.debug,
        verbose: target.verbose,
        svc,
        cx,
        json: target.json(),
        card,
        reference,
        credentials,
        client_cert: target.cert.is_some(),
        chat: false,
        preview,
    })
}

/// `card get`
pub(crate) async fn card_get(args: &CardGet) -> Result<(), Failure> {
    let mut target = args.target.clone();
    if let Some(r) = &args.reference {
        target.agent_card = Some(r.clone());
    }
    let (public, body) = resolve_card_json(&target).await?;
    let (card, json) = if args.extended {
        (extended_card(&target, public).await?, None)
    } else {
        (public, Some(body))
    };
    if args.validate {
        let json: serde_json::Value = match &json {
            Some(body) => serde_json::from_slice(body),
            None => serde_json::to_value(&card),
        }
        .map_err(|e| Failure::local(Local::CardInvalid, e.to_string()))?;
        let problems = card_problems(&json);
        if !problems.is_empty() {
            return Err(Failure::local(
                Local::CardInvalid,
                format!(
                    "the card is not a valid A2A 1.0 AgentCard: {}",
                    problems.join("; ")
                ),
            )
            .with_hint("see the AgentCard message of the A2A specification (a2a.proto)"));
        }
    }
    // SPEC §10.1: verified when signed, the outcome always reported, an absent signature
    // a failure only when asked (--verify).
    let signature = if card.signatures.is_empty() {
        Err("absent (the card is not signed)".to_owned())
    } else {
        verify(&card, args.jwks.as_deref())
            .await
            .map_err(|why| format!("unverifiable ({why})"))
    };
    let outcome = match &signature {
        Ok(line) | Err(line) => line.clone(),
    };
    if let Err(why) = &signature {
        if args.verify {
            return Err(
                Failure::local(Local::CardInvalid, format!("card signature: {why}"))
                    .with_hint("without --verify the card is shown with its signature's outcome"),
            );
        }
        if !card.signatures.is_empty() {
            let _ = writeln!(
                std::io::stderr(),
                "warning: the card's signature does not verify: {why}; the card is not \
                 verified"
            );
        }
    }
    if target.json() {
        // stdout holds the card alone (Appendix B); the outcome is a diagnostic.
        let _ = writeln!(std::io::stderr(), "signature: {outcome}");
        print_json(&card)?;
    } else {
        let mut out = card_text(&card);
        let order = preference(&target, &card);
        if let Ok((b, i)) = select(&target, &card, &order) {
            render::field(
                &mut out,
                "Selected Transport",
                &format!("{} {}", b.card_name(), i.url),
            );
        }
        render::field(&mut out, "Signature", &outcome);
        if args.validate {
            render::field(&mut out, "Valid", "yes (A2A 1.0 AgentCard)");
        }
        print_text(&out)?;
    }
    Ok(())
}

/// The extended card of the agent of `public` (SPEC §10.1, §12.4): asked for over the binding
/// the public card selects, with the credentials it declares, as every other call.
async fn extended_card(target: &Target, public: pb::AgentCard) -> Result<pb::AgentCard, Failure> {
    let declared = public
        .capabilities
        .as_ref()
        .and_then(|c| c.extended_agent_card)
        == Some(true);
    if !declared {
        // What the agent would answer (A2A §3.1.11), said without asking it (SPEC §13.3).
        let reference = target.reference()?;
        return Err(Failure::from_a2a(
            A2aError::unsupported(format!(
                "the card of {reference} does not declare capabilities.extendedAgentCard: the \
                 agent has no extended card"
            )),
            false,
        ));
    }
    let s = connect_with(target, public).await?;
    s.get_extended_agent_card().await.map_err(|e| s.failed(e))
}

fn card_text(card: &pb::AgentCard) -> String {
    let mut out = String::new();
    render::field(&mut out, "Name", &card.name);
    render::field(&mut out, "Description", &card.description);
    if !card.version.is_empty() {
        render::field(&mut out, "Version", &card.version);
    }
    for i in &card.supported_interfaces {
        let tenant = if i.tenant.is_empty() {
            String::new()
        } else {
            format!(" tenant={}", i.tenant)
        };
        render::field(
            &mut out,
            "Interface",
            &format!(
                "{} {} A2A {}{tenant}",
                i.protocol_binding, i.url, i.protocol_version
            ),
        );
    }
    let caps = card.capabilities.clone().unwrap_or_default();
    let yes = |b: Option<bool>| if b == Some(true) { "true" } else { "false" };
    render::field(&mut out, "Streaming", yes(caps.streaming));
    render::field(&mut out, "Push Notifications", yes(caps.push_notifications));
    render::field(&mut out, "Extended Card", yes(caps.extended_agent_card));
    for e in &caps.extensions {
        let required = if e.required { " (required)" } else { "" };
        render::field(&mut out, "Extension", &format!("{}{required}", e.uri));
    }
    let mut schemes: Vec<_> = card.security_schemes.iter().collect();
    schemes.sort_by(|a, b| a.0.cmp(b.0));
    for (name, s) in schemes {
        use pb::security_scheme::Scheme;
        let kind = match &s.scheme {
            Some(Scheme::ApiKeySecurityScheme(k)) => format!("apiKey {} {}", k.location, k.name),
            Some(Scheme::HttpAuthSecurityScheme(h)) => format!("http {}", h.scheme),
            Some(Scheme::Oauth2SecurityScheme(_)) => "oauth2".to_owned(),
            Some(Scheme::OpenIdConnectSecurityScheme(_)) => "openIdConnect".to_owned(),
            Some(Scheme::MtlsSecurityScheme(_)) => "mutualTLS".to_owned(),
            None => "unknown".to_owned(),
        };
        render::field(&mut out, "Security Scheme", &format!("{name} {kind}"));
    }
    for s in &card.skills {
        render::field(
            &mut out,
            "Skill",
            &format!("{} — {}", s.name, s.description),
        );
    }
    out
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
    // The keys are fetched with certificates verified (never --insecure), and in bounded time.
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    for url in urls {
        let keys = match http.get(&url).send().await {
            Ok(r) => match r.bytes().await {
                Ok(b) => trident_security::JwkSet::from_json(&b).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        match keys {
            Ok(keys) => match trident_security::verify_card(card, &keys) {
                Ok(kid) => return Ok(format!("verified (key {kid} from {url})")),
                Err(e) => failures.push(format!("{url}: {e}")),
            },
            Err(e) => failures.push(format!("{url}: {e}")),
        }
    }
    Err(failures.join("; "))
}

/// A guess at a file's media type from its extension (the caller's `--media-type` wins).
fn guess_media_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("xml") => "application/xml",
        Some("zip") => "application/zip",
        _ => "application/octet-stream",
    }
}

/// The message parts of `send`, in order: the positional text first, then each part flag
/// with the `--media-type` that follows it.
fn message_parts(text: Option<&str>, flags: &[PartFlag]) -> Result<Vec<pb::Part>, Failure> {
    // (part, whether its media type was given)
    let mut parts: Vec<(pb::Part, bool)> = Vec::new();
    if let Some(t) = text {
        parts.push((pb::Part::text(t), false));
    }
    let mut last_was_part = false;
    let mut stdin_used = false;
    for flag in flags {
        let part = match flag {
            PartFlag::MediaType(m) => {
                let Some((part, given)) = parts.last_mut().filter(|_| last_was_part) else {
                    return Err(Failure::usage(format!(
                        "--media-type {m}: it sets the type of the part flag just before it \
                         (--text, --file or --data), and there is none"
                    ))
                    .with_hint(
                        "trident send -a REF --file report.bin --media-type application/pdf",
                    ));
                };
                if m.trim().is_empty() || !m.contains('/') {
                    return Err(Failure::usage(format!(
                        "--media-type {m:?} is not a media type (type/subtype)"
                    )));
                }
                part.media_type = m.trim().to_owned();
                *given = true;
                last_was_part = false;
                continue;
            }
            PartFlag::Text(t) => pb::Part::text(t.clone()),
            PartFlag::File(f) => file_part(f)?,
            PartFlag::Data(d) => {
                let (json, from) = if d == "-" {
                    if std::mem::replace(&mut stdin_used, true) {
                        return Err(Failure::usage("only one --data - can read standard input"));
                    }
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .map_err(|e| Failure::usage(format!("--data -: standard input: {e}")))?;
                    (s, "standard input".to_owned())
                } else if d.trim_start().starts_with(['{', '[']) {
                    (d.clone(), "inline JSON".to_owned())
                } else {
                    let s = std::fs::read_to_string(d)
                        .map_err(|e| Failure::usage(format!("--data {d}: {e}")))?;
                    (s, d.clone())
                };
                let value: serde_json::Value = serde_json::from_str(&json)
                    .map_err(|e| Failure::usage(format!("--data {from}: not JSON: {e}")))?;
                pb::Part::data(value).with_media_type("application/json")
            }
        };
        parts.push((part, false));
        last_was_part = true;
    }
    if parts.is_empty() {
        return Err(Failure::usage(
            "nothing to send: give the message text, or --text, --file or --data",
        )
        .with_hint("trident send -a REF \"hello\""));
    }
    Ok(parts.into_iter().map(|(p, _)| p).collect())
}

fn file_part(f: &str) -> Result<pb::Part, Failure> {
    let is_url = f.starts_with("http://") || f.starts_with("https://");
    let name = f
        .rsplit('/')
        .next()
        .map(|n| n.split(['?', '#']).next().unwrap_or(n))
        .unwrap_or(f)
        .to_owned();
    let media = guess_media_type(&name);
    if is_url {
        return Ok(pb::Part::file_url(f, media, name));
    }
    let bytes = std::fs::read(f).map_err(|e| Failure::usage(format!("--file {f}: {e}")))?;
    Ok(pb::Part::file(bytes, media, name))
}

/// Merges the `--metadata` objects.
fn metadata(values: &[String]) -> Result<Option<pb::wkt::Struct>, Failure> {
    if values.is_empty() {
        return Ok(None);
    }
    let mut all = serde_json::Map::new();
    for v in values {
        match serde_json::from_str::<serde_json::Value>(v) {
            Ok(serde_json::Value::Object(map)) => all.extend(map),
            Ok(_) => return Err(Failure::usage(format!("--metadata {v}: not a JSON object"))),
            Err(e) => return Err(Failure::usage(format!("--metadata {v}: {e}"))),
        }
    }
    Ok(Some(pb::wkt::Struct::from_json(all)))
}

/// Whether a state ends a wait: terminal, or waiting for the caller.
fn settled(state: pb::TaskState) -> bool {
    state.is_terminal()
        || matches!(
            state,
            pb::TaskState::InputRequired | pb::TaskState::AuthRequired
        )
}

/// The outcome warning on stderr (the exit status stays 0, SPEC §6.6) and, in text, the
/// command to go on with.
fn outcome(s: &Session, out: &mut String, id: &str, state: pb::TaskState, wanted: pb::TaskState) {
    let name = render::state_name(state);
    let reference = shell_word(&s.reference);
    let mut err = std::io::stderr().lock();
    match state {
        pb::TaskState::InputRequired if s.chat => {
            let _ = writeln!(err, "note: task {id} is waiting: {name}; type your reply");
        }
        pb::TaskState::AuthRequired if !s.chat => {
            let resume = format!(
                "A2ACLI_TASK_CREDENTIAL='<credential>' trident send -a {reference} --task-id {id}"
            );
            let _ = writeln!(
                err,
                "warning: task {id} is waiting: {name}; give it a credential with: {resume}"
            );
            render::field(out, "Resume", &resume);
        }
        pb::TaskState::InputRequired | pb::TaskState::AuthRequired => {
            let resume = format!("trident send -a {reference} --task-id {id} '<reply>'");
            let _ = writeln!(
                err,
                "warning: task {id} is waiting: {name}; reply with: {resume}"
            );
            render::field(out, "Resume", &resume);
        }
        pb::TaskState::Failed | pb::TaskState::Rejected | pb::TaskState::Canceled
            if state != wanted =>
        {
            let _ = writeln!(err, "warning: task {id} ended {name}");
        }
        pb::TaskState::Submitted | pb::TaskState::Working | pb::TaskState::Unspecified => {
            render::field(
                out,
                "Poll",
                &format!("trident task get -a {reference} --wait {id}"),
            );
        }
        _ => {}
    }
}

/// `text` quoted for a POSIX shell when it needs it.
pub(crate) fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `send`
pub(crate) async fn send(args: &Send) -> Result<(), Failure> {
    let mut target = args.target.clone();
    let text = match args.positional.as_slice() {
        [] => None,
        [text] => Some(text.as_str()),
        [reference, text] if target.agent_card.is_none() => {
            target.agent_card = Some(reference.clone());
            Some(text.as_str())
        }
        _ => {
            return Err(Failure::usage(
                "send takes one message argument; add more parts with --text",
            ));
        }
    };
    if args.stream && args.r#async {
        return Err(Failure::usage("--stream and --async do not go together"));
    }
    // `--task-id` with `--task-credential` and nothing else: answer the task's AUTH_REQUIRED
    // (the `Resume:` line of a task left waiting for authorization).
    let credential_only = text.is_none()
        && args.parts.is_empty()
        && args.task_credential.is_some()
        && args.task_id.is_some();
    let parts = if credential_only {
        Vec::new()
    } else {
        message_parts(text, &args.parts)?
    };
    let metadata = metadata(&args.metadata)?;
    target.preview = args.if_generation_match.is_some();
    let s = connect(&target).await?;
    if args.if_generation_match.is_some() && !s.preview {
        return Err(Failure::usage(format!(
            "--if-generation-match needs the A2A 1.1 preview, and the agent {} does not offer \
             it",
            s.reference
        ))
        .with_hint(
            "send without --if-generation-match; an agent offers the preview when it serves \
             it (trident serve --protocols 1.0,0.3,1.1-preview)",
        ));
    }
    let mut resolver = in_task::Resolver::new(args.task_credential.clone());
    let mut message = pb::Message::user(uuid::Uuid::new_v4().to_string(), parts);
    message.task_id = args.task_id.clone().unwrap_or_default();
    message.context_id = args.context_id.clone().unwrap_or_default();
    if credential_only {
        let request = pb::GetTaskRequest {
            id: message.task_id.clone(),
            history_length: Some(0),
            ..Default::default()
        };
        let task = s.get_task(request).await.map_err(|e| s.failed(e))?;
        if task.state() != pb::TaskState::AuthRequired {
            return Err(Failure::usage(format!(
                "task {} is {}, not waiting for authorization: give a message to send",
                task.id,
                render::state_name(task.state())
            )));
        }
        message = match resolver.follow_up(&s, &target, &task).await? {
            Some(answer) => answer,
            None => return Err(Failure::usage("--task-credential is empty")),
        };
    }
    let req = pb::SendMessageRequest {
        message: Some(message),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately: args.r#async,
            history_length: args.history,
            if_generation_match: args.if_generation_match,
            ..Default::default()
        }),
        metadata,
        ..Default::default()
    };
    if let Some(addr) = &args.push_receiver {
        if args.stream || args.r#async {
            return Err(Failure::usage(
                "--push-receiver waits for the notifications: not with --stream or --async",
            ));
        }
        return receive_pushes(&s, req, addr).await;
    }
    let streams = s.declares(|c| c.streaming);
    if args.stream && streams {
        s.sending("SendStreamingMessage", &req);
        let stream = s
            .svc
            .send_streaming_message(&s.cx, req.clone())
            .await
            .map_err(|e| s.failed(e))?;
        let resume = Resume {
            target: &target,
            resolver: &mut resolver,
            request: &req,
        };
        return follow_resolving(&s, stream, true, Some(resume))
            .await
            .map(|_| ());
    }
    if args.stream {
        let _ = writeln!(
            std::io::stderr(),
            "note: the agent's card does not declare streaming; waiting for the result instead"
        );
    }
    if args.poll_interval < Duration::from_millis(10) {
        return Err(Failure::usage("--poll-interval must be at least 10ms"));
    }
    let mut req = req;
    let resp = loop {
        let resp = if streams && !args.stream && !args.r#async {
            wait_streaming(&s, req.clone(), args).await?
        } else {
            let call = s.svc.send_message(&s.cx, req.clone());
            let result = s.logged("SendMessage", &req, call).await;
            result.map_err(|e| refused(&s, e, args))?
        };
        // A task paused for authorization is resumed when there is a credential (§12.3).
        let paused = match &resp.payload {
            Some(pb::send_message_response::Payload::Task(t))
                if !args.r#async && t.state() == pb::TaskState::AuthRequired =>
            {
                resolver.follow_up(&s, &target, t).await?
            }
            _ => None,
        };
        match paused {
            Some(message) => {
                req.message = Some(message);
                // The precondition was the first message's; the task has moved on since.
                without_precondition(&mut req);
            }
            None => break resp,
        }
    };
    let mut out = String::new();
    match &resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => {
            render::task(&mut out, t, args.history.is_some() || s.verbose);
            outcome(&s, &mut out, &t.id, t.state(), pb::TaskState::Completed);
        }
        Some(pb::send_message_response::Payload::Message(m)) => render::message(&mut out, m),
        None => return Err(neither_task_nor_message()),
    }
    if s.json {
        if args.stream {
            // JSONL of one line: the StreamResponse the stream would have ended with.
            let event = pb::StreamResponse {
                payload: resp.payload.map(|p| match p {
                    pb::send_message_response::Payload::Task(t) => {
                        pb::stream_response::Payload::Task(t)
                    }
                    pb::send_message_response::Payload::Message(m) => {
                        pb::stream_response::Payload::Message(m)
                    }
                }),
            };
            return print_json(&event);
        }
        return print_json(&resp);
    }
    print_text(&out)
}

/// `send --push-receiver ADDR`: listens on ADDR, sends with that receiver (and a fresh token)
/// as the task's push-notification config, prints the task and then each notification that
/// carries the token, and ends once the task ends or needs input (SPEC §9.2).
async fn receive_pushes(
    s: &Session,
    mut req: pb::SendMessageRequest,
    addr: &str,
) -> Result<(), Failure> {
    use pb::stream_response::Payload;
    let push = s.declares(|c| c.push_notifications);
    if !push {
        return Err(Failure::usage(format!(
            "the card of {} does not declare push notifications",
            s.reference
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::usage(format!("--push-receiver {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::usage(format!("--push-receiver {addr}: {e}")))?;
    let url = format!("http://{local}/");
    let token = uuid::Uuid::new_v4().simple().to_string();
    let config = req.configuration.get_or_insert_with(Default::default);
    config.return_immediately = true;
    config.task_push_notification_config = Some(pb::TaskPushNotificationConfig {
        url: url.clone(),
        token: token.clone(),
        ..Default::default()
    });
    let (tx, mut rx) = tokio::sync::mpsc::channel::<pb::StreamResponse>(64);
    let receiver = axum::Router::new().route(
        "/",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (tx, token) = (tx.clone(), token.clone());
                async move {
                    let given = ["a2a-notification-token", "x-a2a-notification-token"]
                        .iter()
                        .find_map(|h| headers.get(*h))
                        .and_then(|v| v.to_str().ok());
                    if given != Some(token.as_str()) {
                        let _ = writeln!(
                            std::io::stderr(),
                            "warning: refused a notification without this receiver's token"
                        );
                        return axum::http::StatusCode::UNAUTHORIZED;
                    }
                    match serde_json::from_slice::<pb::StreamResponse>(&body) {
                        Ok(event) => {
                            let _ = tx.send(event).await;
                            axum::http::StatusCode::OK
                        }
                        Err(e) => {
                            let _ = writeln!(
                                std::io::stderr(),
                                "warning: a notification that is not a StreamResponse: {e}"
                            );
                            axum::http::StatusCode::BAD_REQUEST
                        }
                    }
                }
            },
        ),
    );
    let server = tokio::spawn(async move { axum::serve(listener, receiver).await });
    let _ = writeln!(std::io::stderr(), "receiving push notifications at {url}");
    let call = s.svc.send_message(&s.cx, req.clone());
    let sent = s.logged("SendMessage", &req, call).await;
    let resp = match sent {
        Ok(resp) => resp,
        Err(e) => {
            server.abort();
            return Err(s.failed(e));
        }
    };
    let first = pb::StreamResponse {
        payload: resp.payload.map(|p| match p {
            pb::send_message_response::Payload::Task(t) => Payload::Task(t),
            pb::send_message_response::Payload::Message(m) => Payload::Message(m),
        }),
    };
    let mut task = pb::Task::default();
    let mut next = Some(first);
    while let Some(event) = next.take() {
        s.event(&event);
        let state = match &event.payload {
            Some(Payload::Task(t)) => {
                task.id.clone_from(&t.id);
                task.context_id.clone_from(&t.context_id);
                Some(t.state())
            }
            Some(Payload::StatusUpdate(u)) => {
                task.id.clone_from(&u.task_id);
                task.context_id.clone_from(&u.context_id);
                Some(render::state_of(u.status.as_ref().map_or(0, |st| st.state)))
            }
            Some(Payload::ArtifactUpdate(_)) => None,
            Some(Payload::Message(_)) | None => Some(pb::TaskState::Completed),
        };
        if s.json {
            print_json(&event)?;
        } else {
            let mut out = String::new();
            render::event(&mut out, &event);
            print_text(&out)?;
        }
        if let Some(state) = state {
            task.status = Some(pb::TaskStatus {
                state: state as i32,
                ..Default::default()
            });
            if task.id.is_empty() || settled(state) {
                break;
            }
        }
        next = rx.recv().await;
    }
    server.abort();
    if task.id.is_empty() {
        return Ok(());
    }
    let mut out = String::new();
    if !s.json {
        // The tail restates what a caller needs to go on (SPEC §11.2).
        render::field(&mut out, "Task ID", &task.id);
        render::field(&mut out, "Context ID", &task.context_id);
        render::field(&mut out, "State", render::state_name(task.state()));
    }
    outcome(
        s,
        &mut out,
        &task.id,
        task.state(),
        pb::TaskState::Completed,
    );
    if s.json {
        return Ok(());
    }
    print_text(&out)
}

/// `request` without the A2A 1.1 preview's `ifGenerationMatch` (a follow-up of the message
/// that carried it: the task's generation has moved on by its own reply).
fn without_precondition(request: &mut pb::SendMessageRequest) {
    if let Some(c) = request.configuration.as_mut() {
        c.if_generation_match = None;
    }
}

/// A send's failure; when it named a task (`--task-id`), the hint says that no task was
/// started in its place and where to see the exchange (SPEC §8.1), or, for a task that moved
/// past `--if-generation-match`, how to read it again.
fn refused(s: &Session, e: A2aError, args: &Send) -> Failure {
    let mismatch = e.kind() == trident_core::ErrorKind::TaskGenerationMismatch;
    let failure = s.failed(e);
    match &args.task_id {
        Some(id) if mismatch => failure.with_hint(format!(
            "the task changed since; read it again: trident task get -a {} {id}",
            shell_word(&s.reference)
        )),
        Some(id) if matches!(failure, Failure::Agent(..)) => failure.with_hint(format!(
            "the agent refused --task-id {id} and no new task was started; check it with \
             `trident task get -a {} {id}`, or rerun with --debug to see the exchange",
            shell_word(&s.reference)
        )),
        _ => failure,
    }
}

/// What a blocking send knows of its task so far.
#[derive(Default)]
struct Seen {
    task_id: String,
    context_id: String,
    state: pb::TaskState,
}

impl Seen {
    fn stopped(&self, s: &Session, why: Stop, limit: Option<Duration>) -> Failure {
        let reference = shell_word(&s.reference);
        let poll = format!("trident task get -a {reference} --wait {}", self.task_id);
        match why {
            Stop::Interrupted => {
                let mut out = String::new();
                render::field(&mut out, "Task ID", &self.task_id);
                render::field(&mut out, "Context ID", &self.context_id);
                render::field(&mut out, "State", render::state_name(self.state));
                render::field(&mut out, "Poll", &poll);
                if s.json {
                    let task = pb::Task {
                        id: self.task_id.clone(),
                        context_id: self.context_id.clone(),
                        status: Some(pb::TaskStatus {
                            state: self.state as i32,
                            ..Default::default()
                        }),
                        ..Default::default()
                    };
                    let _ = print_json(&pb::SendMessageResponse {
                        payload: Some(pb::send_message_response::Payload::Task(task)),
                    });
                } else {
                    let _ = print_text(&out);
                }
                Failure::Interrupted(format!(
                    "stopped waiting for task {}; it goes on: {poll}",
                    self.task_id
                ))
            }
            Stop::Timeout => Failure::local(
                Local::Timeout,
                format!(
                    "task {} is still {} after {:?}",
                    self.task_id,
                    render::state_name(self.state),
                    limit.unwrap_or_default()
                ),
            )
            .with_hint(format!("wait longer: {poll} --timeout 10m")),
        }
    }
}

/// Why a wait stopped early.
enum Stop {
    Interrupted,
    Timeout,
}

/// Waits for `future`, unless Ctrl-C comes first or `deadline` passes.
async fn unless_stopped<T>(
    future: impl std::future::Future<Output = T>,
    deadline: Option<tokio::time::Instant>,
) -> Result<T, Stop> {
    let passed = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        value = future => Ok(value),
        _ = tokio::signal::ctrl_c() => Err(Stop::Interrupted),
        () = passed => Err(Stop::Timeout),
    }
}

/// A blocking send over the agent's stream (SPEC §9.3 lets a wait prefer streaming): the
/// task is known from the first event, so Ctrl-C or `--timeout` still report it; a stream
/// that breaks off is followed by polling. Returns the task as the agent has it at the end
/// (one `GetTask`), or the agent's direct reply.
async fn wait_streaming(
    s: &Session,
    req: pb::SendMessageRequest,
    args: &Send,
) -> Result<pb::SendMessageResponse, Failure> {
    use pb::stream_response::Payload;
    let limit = args.target.timeout;
    let deadline = limit.map(|t| tokio::time::Instant::now() + t);
    let mut seen = Seen::default();
    s.sending("SendStreamingMessage", &req);
    let opened = unless_stopped(s.svc.send_streaming_message(&s.cx, req), deadline).await;
    let mut stream = match opened {
        Ok(opened) => opened.map_err(|e| refused(s, e, args))?,
        Err(why) => return Err(seen.stopped(s, why, limit)),
    };
    loop {
        let next = match unless_stopped(stream.next(), deadline).await {
            Ok(next) => next,
            Err(why) => return Err(seen.stopped(s, why, limit)),
        };
        match next {
            None => break,
            Some(Err(e)) if seen.task_id.is_empty() => return Err(refused(s, e, args)),
            Some(Err(e)) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "note: the stream of task {} broke off ({}); polling instead",
                    seen.task_id,
                    e.message()
                );
                break;
            }
            Some(Ok(event)) => {
                s.event(&event.response);
                match &event.response.payload {
                    Some(Payload::Message(m)) if seen.task_id.is_empty() => {
                        return Ok(pb::SendMessageResponse {
                            payload: Some(pb::send_message_response::Payload::Message(m.clone())),
                        });
                    }
                    Some(Payload::Task(t)) => {
                        seen.task_id.clone_from(&t.id);
                        seen.context_id.clone_from(&t.context_id);
                        seen.state = t.state();
                    }
                    Some(Payload::StatusUpdate(u)) => {
                        seen.task_id.clone_from(&u.task_id);
                        seen.context_id.clone_from(&u.context_id);
                        seen.state = render::state_of(u.status.as_ref().map_or(0, |st| st.state));
                    }
                    _ => {}
                }
            }
        }
        if settled(seen.state) {
            break;
        }
    }
    if seen.task_id.is_empty() {
        return Err(Failure::Agent(
            A2aError::new(
                trident_core::ErrorKind::InvalidAgentResponse,
                "the agent's stream ended without a task or a message",
            ),
            None,
        ));
    }
    // The task as the agent has it; polled until it settles if the stream broke off.
    let request = pb::GetTaskRequest {
        id: seen.task_id.clone(),
        history_length: args.history,
        ..Default::default()
    };
    let mut interval = args.poll_interval;
    let mut failures = 0;
    loop {
        let task = match unless_stopped(s.get_task(request.clone()), deadline).await {
            Ok(Ok(task)) => task,
            // The connection the stream broke with may fail the next call too: a few tries.
            Ok(Err(e)) if e.is_transport() && failures < 3 => {
                failures += 1;
                if s.debug {
                    debug(&format!(
                        "retry: GetTask again in {interval:?} (retry {failures} of 3) after: {}",
                        trident_core::error_chain(&e)
                    ));
                }
                if let Err(why) = unless_stopped(tokio::time::sleep(interval), deadline).await {
                    return Err(seen.stopped(s, why, limit));
                }
                continue;
            }
            Ok(Err(e)) => return Err(s.failed(e)),
            Err(why) => return Err(seen.stopped(s, why, limit)),
        };
        failures = 0;
        seen.state = task.state();
        if settled(seen.state) {
            return Ok(pb::SendMessageResponse {
                payload: Some(pb::send_message_response::Payload::Task(task)),
            });
        }
        if let Err(why) = unless_stopped(tokio::time::sleep(interval), deadline).await {
            return Err(seen.stopped(s, why, limit));
        }
        interval = (interval * 2).min(args.poll_interval * 4);
    }
}

/// `task get`
///
/// Asks for the A2A 1.1 preview: from an agent that offers it, the task comes with its
/// generation, and `--wait` long-polls (GetTask with `currentGeneration`: the agent answers
/// when the task changes) instead of polling every `--poll-interval`.
pub(crate) async fn task_get(args: &TaskGet) -> Result<(), Failure> {
    let mut target = args.target.clone();
    target.preview = true;
    let s = connect(&target).await?;
    if args.wait && args.poll_interval < Duration::from_millis(10) {
        return Err(Failure::usage("--poll-interval must be at least 10ms"));
    }
    let request = pb::GetTaskRequest {
        id: args.id.clone(),
        history_length: args.history,
        ..Default::default()
    };
    let limit = args.target.timeout;
    let deadline = limit.map(|t| tokio::time::Instant::now() + t);
    let mut seen = Seen {
        task_id: args.id.clone(),
        ..Default::default()
    };
    let mut interval = args.poll_interval;
    // With the preview, each GetTask after the first waits at the agent for a change.
    let mut long_poll = s
        .preview
        .then(|| trident_client::Preview::new(Arc::clone(&s.svc)));
    let mut generation: Option<i64> = None;
    let task = loop {
        let task = if args.wait {
            let call = async {
                match (&long_poll, generation) {
                    (Some(preview), Some(g)) => {
                        let mut request = request.clone();
                        request.current_generation = Some(g);
                        let call = preview.long_poll(&s.cx, request.clone(), g);
                        s.logged("GetTask", &request, call).await
                    }
                    _ => s.get_task(request.clone()).await,
                }
            };
            match unless_stopped(call, deadline).await {
                Ok(task) => task,
                Err(why) => return Err(seen.stopped(&s, why, limit)),
            }
        } else {
            s.get_task(request.clone()).await
        };
        let task = match task {
            // A task without a generation: the agent does not speak the preview after all;
            // polled as any other.
            Err(e)
                if long_poll.is_some()
                    && e.kind() == trident_core::ErrorKind::VersionNotSupported =>
            {
                if s.debug {
                    debug(&format!("long poll: {}; polling instead", e.message()));
                }
                long_poll = None;
                continue;
            }
            // A long poll bounded by --timeout (each call is) ends with the wait: reported as
            // the wait's own timeout, naming the task.
            Err(e)
                if long_poll.is_some()
                    && limit.is_some()
                    && e.kind() == trident_core::ErrorKind::DeadlineExceeded =>
            {
                return Err(seen.stopped(&s, Stop::Timeout, limit));
            }
            other => other.map_err(|e| s.failed(e))?,
        };
        if !args.wait || settled(task.state()) {
            break task;
        }
        seen.context_id.clone_from(&task.context_id);
        seen.state = task.state();
        if long_poll.is_some() && task.generation > 0 {
            let moved = generation.is_none_or(|g| task.generation > g);
            generation = Some(task.generation);
            if moved {
                // Ask again at once, from where it is: the agent holds the call until the
                // task changes. An unchanged answer (the agent's wait ended) is followed by
                // the usual pause, so an agent that never waits is not asked in a loop.
                interval = args.poll_interval;
                continue;
            }
        }
        if let Err(why) = unless_stopped(tokio::time::sleep(interval), deadline).await {
            return Err(seen.stopped(&s, why, limit));
        }
        interval = (interval * 2).min(args.poll_interval * 4);
    };
    let mut out = String::new();
    render::task(&mut out, &task, args.history.is_some() || s.verbose);
    if args.wait {
        outcome(
            &s,
            &mut out,
            &task.id,
            task.state(),
            pb::TaskState::Completed,
        );
    }
    if s.json {
        return print_json(&task);
    }
    print_text(&out)
}

/// `task cancel`
pub(crate) async fn task_cancel(args: &TaskCancel) -> Result<(), Failure> {
    let s = connect(&args.target).await?;
    let task = s
        .cancel_task(pb::CancelTaskRequest {
            id: args.id.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| s.failed(e))?;
    if s.json {
        return print_json(&task);
    }
    let mut out = String::new();
    render::task(&mut out, &task, s.verbose);
    outcome(
        &s,
        &mut out,
        &task.id,
        task.state(),
        pb::TaskState::Canceled,
    );
    print_text(&out)
}

/// `task list`
pub(crate) async fn task_list(args: &TaskList) -> Result<(), Failure> {
    let status = match &args.state {
        Some(name) => parse_state(name)? as i32,
        None => 0,
    };
    let s = connect(&args.target).await?;
    let mut token = args.page_token.clone().unwrap_or_default();
    let mut all = pb::ListTasksResponse::default();
    loop {
        let page = s
            .list_tasks(pb::ListTasksRequest {
                context_id: args.context_id.clone().unwrap_or_default(),
                status,
                page_size: args.page_size,
                page_token: token.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| s.failed(e))?;
        all.tasks.extend(page.tasks);
        all.total_size = page.total_size;
        all.page_size = page.page_size;
        all.next_page_token = page.next_page_token;
        if !args.all || all.next_page_token.is_empty() {
            break;
        }
        token = all.next_page_token.clone();
    }
    if s.json {
        return print_json(&all);
    }
    let mut out = String::new();
    for t in &all.tasks {
        render::field(&mut out, "Task ID", &t.id);
        render::field(&mut out, "Context ID", &t.context_id);
        render::field(&mut out, "State", render::state_name(t.state()));
        if let Some(ts) = t.status.as_ref().and_then(|s| s.timestamp.as_ref()) {
            render::field(&mut out, "Updated", &timestamp(ts));
        }
        out.push('\n');
    }
    render::field(&mut out, "Shown", &all.tasks.len().to_string());
    render::field(&mut out, "Total", &all.total_size.to_string());
    if !all.next_page_token.is_empty() {
        render::field(&mut out, "Next Page Token", &all.next_page_token);
    }
    print_text(&out)
}

/// `task subscribe`
pub(crate) async fn task_subscribe(args: &TaskSubscribe) -> Result<(), Failure> {
    let mut s = connect(&args.target).await?;
    s.cx.last_event_id = args.after;
    let request = pb::SubscribeToTaskRequest {
        id: args.id.clone(),
        ..Default::default()
    };
    s.sending("SubscribeToTask", &request);
    let stream = s
        .svc
        .subscribe_to_task(&s.cx, request)
        .await
        .map_err(|e| s.failed(e))?;
    follow(&s, stream, args.stream).await
}

/// `push …`
pub(crate) async fn push(cmd: &Push) -> Result<(), Failure> {
    match cmd {
        Push::Set {
            url,
            target,
            task,
            webhook,
            id,
            notification_token,
            auth,
        } => {
            let s = connect(&with_url(target, url)).await?;
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
        Push::Get {
            url,
            target,
            task,
            id,
        } => {
            let s = connect(&with_url(target, url)).await?;
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
        Push::List { url, target, task } => {
            let s = connect(&with_url(target, url)).await?;
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
        Push::Delete {
            url,
            target,
            task,
            id,
        } => {
            let s = connect(&with_url(target, url)).await?;
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

/// `task push-config …`
async fn push_config(cmd: &PushConfig) -> Result<(), Failure> {
    let s = connect(cmd.target()).await?;
    // SPEC §13.3: the card says whether the agent takes push configurations at all.
    if !s.declares(|c| c.push_notifications) {
        return Err(Failure::Agent(
            A2aError::of(trident_core::ErrorKind::PushNotificationNotSupported),
            Some(format!(
                "the card of {} does not declare push notifications (capabilities.pushNotifications); \
                 follow the task with `trident task subscribe` or `task get --wait` instead",
                s.reference
            )),
        ));
    }
    match cmd {
        PushConfig::Create {
            task_id,
            url,
            id,
            token,
            auth_scheme,
            auth_credentials,
            ..
        } => {
            let authentication = match (auth_scheme, auth_credentials) {
                (None, None) => None,
                (None, Some(_)) => {
                    return Err(Failure::usage("--auth-credentials needs --auth-scheme"));
                }
                (Some(scheme), credentials) => Some(pb::AuthenticationInfo {
                    scheme: scheme.clone(),
                    credentials: credentials.clone().unwrap_or_default(),
                }),
            };
            let request = pb::TaskPushNotificationConfig {
                task_id: task_id.clone(),
                id: id.clone().unwrap_or_default(),
                url: url.clone(),
                token: token.clone().unwrap_or_default(),
                authentication,
                ..Default::default()
            };
            let call = s
                .svc
                .create_task_push_notification_config(&s.cx, request.clone());
            let result = s
                .logged("CreateTaskPushNotificationConfig", &request, call)
                .await;
            print_config(&s, &result.map_err(|e| s.failed(e))?)
        }
        PushConfig::Get {
            task_id, config_id, ..
        } => {
            let request = pb::GetTaskPushNotificationConfigRequest {
                task_id: task_id.clone(),
                id: config_id.clone(),
                ..Default::default()
            };
            let call = s
                .svc
                .get_task_push_notification_config(&s.cx, request.clone());
            let result = s
                .logged("GetTaskPushNotificationConfig", &request, call)
                .await;
            print_config(&s, &result.map_err(|e| s.failed(e))?)
        }
        PushConfig::List { task_id, .. } => {
            let mut all = pb::ListTaskPushNotificationConfigsResponse::default();
            let mut token = String::new();
            loop {
                let request = pb::ListTaskPushNotificationConfigsRequest {
                    task_id: task_id.clone(),
                    page_token: token,
                    ..Default::default()
                };
                let call = s
                    .svc
                    .list_task_push_notification_configs(&s.cx, request.clone());
                let result = s
                    .logged("ListTaskPushNotificationConfigs", &request, call)
                    .await;
                let page = result.map_err(|e| s.failed(e))?;
                all.configs.extend(page.configs);
                if page.next_page_token.is_empty() {
                    break;
                }
                token = page.next_page_token;
            }
            if s.json {
                return print_json(&all);
            }
            let mut out = String::new();
            for config in &all.configs {
                config_fields(&mut out, config);
                out.push('\n');
            }
            render::field(&mut out, "Shown", &all.configs.len().to_string());
            print_text(&out)
        }
        PushConfig::Delete {
            task_id, config_id, ..
        } => {
            let request = pb::DeleteTaskPushNotificationConfigRequest {
                task_id: task_id.clone(),
                id: config_id.clone(),
                ..Default::default()
            };
            let call = s
                .svc
                .delete_task_push_notification_config(&s.cx, request.clone());
            let result = s
                .logged("DeleteTaskPushNotificationConfig", &request, call)
                .await;
            result.map_err(|e| s.failed(e))?;
            if s.json {
                // The protocol's answer is google.protobuf.Empty.
                return print_text("{}\n");
            }
            let mut out = String::new();
            render::field(&mut out, "Deleted", config_id);
            render::field(&mut out, "Task ID", task_id);
            print_text(&out)
        }
    }
}

/// A push configuration's fields (never its token or credentials).
fn config_fields(out: &mut String, config: &pb::TaskPushNotificationConfig) {
    render::field(out, "Config ID", &config.id);
    render::field(out, "Task ID", &config.task_id);
    render::field(out, "URL", &config.url);
    if let Some(a) = &config.authentication {
        render::field(out, "Auth Scheme", &a.scheme);
    }
}

fn print_config(s: &Session, config: &pb::TaskPushNotificationConfig) -> Result<(), Failure> {
    if s.json {
        return print_json(config);
    }
    let mut out = String::new();
    config_fields(&mut out, config);
    print_text(&out)
}

pub(crate) fn parse_state(name: &str) -> Result<pb::TaskState, Failure> {
    let upper = name.trim().to_ascii_uppercase().replace('-', "_");
    let full = if upper.starts_with("TASK_STATE_") {
        upper
    } else {
        format!("TASK_STATE_{upper}")
    };
    pb::TaskState::from_str_name(&full)
        .filter(|s| *s != pb::TaskState::Unspecified)
        .ok_or_else(|| {
            Failure::usage(format!(
                "unknown state {name:?}: use submitted, working, input-required, auth-required, \
                 completed, failed, canceled or rejected"
            ))
        })
}

/// Subscribes again to the task whose stream broke off with `broke`, from the last event seen
/// (SPEC §9.4): at most 3 times in all (`attempts` counts them over the whole stream), waiting
/// 100 ms more before each retry. A subscription that fails on the transport is retried too:
/// right after a cut, a client can still pick the connection that just closed.
async fn resubscribe(
    s: &Session,
    task_id: &str,
    last_seq: Option<u64>,
    attempts: &mut u32,
    broke: A2aError,
) -> Result<trident_core::EventStream, Failure> {
    let mut why = broke;
    loop {
        *attempts += 1;
        let _ = writeln!(
            std::io::stderr(),
            "note: the stream of task {task_id} broke off ({}); subscribing again",
            why.message()
        );
        if s.debug {
            debug(&format!(
                "retry: SubscribeToTask {task_id} after event {last_seq:?} (attempt {attempts} \
                 of 3) after: {}",
                trident_core::error_chain(&why)
            ));
        }
        if *attempts > 1 {
            tokio::time::sleep(std::time::Duration::from_millis(
                100 * u64::from(*attempts - 1),
            ))
            .await;
        }
        let mut cx = s.cx.clone();
        cx.last_event_id = last_seq.or(s.cx.last_event_id);
        let request = pb::SubscribeToTaskRequest {
            id: task_id.to_owned(),
            ..Default::default()
        };
        s.sending("SubscribeToTask", &request);
        match s.svc.subscribe_to_task(&cx, request).await {
            Ok(stream) => return Ok(stream),
            Err(e) if e.is_transport() && *attempts < 3 => why = e,
            Err(e) => return Err(s.failed(e)),
        }
    }
}

/// Prints a stream: with `live`, each event as it arrives (a line of JSON each with -o json)
/// and, in text, a last summary of the identifiers and state; without it, only the task it
/// ends with (or the message, for a direct reply).
async fn follow(s: &Session, stream: trident_core::EventStream, live: bool) -> Result<(), Failure> {
    follow_to_end(s, stream, live).await.map(|_| ())
}

/// [`follow`], returning the task as the events left it and the agent's direct reply, if
/// any (`chat` carries the identifiers to its next turn).
async fn follow_to_end(
    s: &Session,
    stream: trident_core::EventStream,
    live: bool,
) -> Result<(pb::Task, Option<pb::Message>), Failure> {
    follow_resolving(s, stream, live, None).await
}

/// What a streaming `send` needs to resume its task at `AUTH_REQUIRED` ([`in_task`]).
struct Resume<'a> {
    target: &'a Target,
    resolver: &'a mut in_task::Resolver,
    request: &'a pb::SendMessageRequest,
}

/// [`follow_to_end`]; with `resume`, a task that pauses at `AUTH_REQUIRED` is answered with a
/// credential when there is one ([`in_task::Resolver`]) and the follow-up's stream is
/// followed in turn.
async fn follow_resolving(
    s: &Session,
    mut stream: trident_core::EventStream,
    live: bool,
    mut resume: Option<Resume<'_>>,
) -> Result<(pb::Task, Option<pb::Message>), Failure> {
    let mut task = pb::Task::default();
    let mut reply: Option<pb::Message> = None;
    let mut last_seq: Option<u64> = None;
    let mut resubscribed = 0;
    loop {
        let paused = follow_stream(
            s,
            &mut stream,
            live,
            resume.is_some(),
            (&mut task, &mut reply),
            (&mut last_seq, &mut resubscribed),
        )
        .await?;
        let Some(r) = resume.as_mut().filter(|_| paused) else {
            break;
        };
        let Some(message) = r.resolver.follow_up(s, r.target, &task).await? else {
            break;
        };
        let mut request = r.request.clone();
        request.message = Some(message);
        without_precondition(&mut request);
        s.sending("SendStreamingMessage", &request);
        stream = s
            .svc
            .send_streaming_message(&s.cx, request)
            .await
            .map_err(|e| s.failed(e))?;
        last_seq = None;
    }
    follow_tail(s, task, reply, live)
}

/// Reads `stream` into `task` and `reply` (printing each event when `live`) until it ends, or,
/// with `stop_at_auth`, until the task pauses at `AUTH_REQUIRED` (returns `true` then).
async fn follow_stream(
    s: &Session,
    stream: &mut trident_core::EventStream,
    live: bool,
    stop_at_auth: bool,
    (task, reply): (&mut pb::Task, &mut Option<pb::Message>),
    (last_seq, resubscribed): (&mut Option<u64>, &mut u32),
) -> Result<bool, Failure> {
    use pb::stream_response::Payload;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            // The connection broke under a known task: subscribe again from the last event
            // seen (SPEC §9.4), a few times.
            Err(e) if e.is_transport() && !task.id.is_empty() && *resubscribed < 3 => {
                *stream = resubscribe(s, &task.id, *last_seq, resubscribed, e).await?;
                continue;
            }
            Err(e) => return Err(s.failed(e)),
        };
        if event.seq.is_some() {
            *last_seq = event.seq;
        }
        s.event(&event.response);
        match &event.response.payload {
            Some(Payload::Task(t)) => *task = t.clone(),
            Some(Payload::Message(m)) => *reply = Some(m.clone()),
            Some(Payload::StatusUpdate(u)) => {
                task.id.clone_from(&u.task_id);
                task.context_id.clone_from(&u.context_id);
                task.status.clone_from(&u.status);
            }
            Some(Payload::ArtifactUpdate(a)) => {
                task.id.clone_from(&a.task_id);
                task.context_id.clone_from(&a.context_id);
                if let Some(new) = &a.artifact {
                    match task
                        .artifacts
                        .iter_mut()
                        .find(|x| x.artifact_id == new.artifact_id)
                    {
                        Some(old) if a.append => old.parts.extend(new.parts.iter().cloned()),
                        Some(old) => *old = new.clone(),
                        None => task.artifacts.push(new.clone()),
                    }
                }
            }
            None => {}
        }
        if live {
            if s.json {
                print_json(&*event.response)?;
            } else {
                let mut out = String::new();
                render::event(&mut out, &event.response);
                print_text(&out)?;
            }
        }
        if stop_at_auth && task.state() == pb::TaskState::AuthRequired {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The end of [`follow_resolving`]: the summary (or the task, when not `live`) and the
/// outcome.
fn follow_tail(
    s: &Session,
    task: pb::Task,
    reply: Option<pb::Message>,
    live: bool,
) -> Result<(pb::Task, Option<pb::Message>), Failure> {
    use pb::stream_response::Payload;
    let mut out = String::new();
    if task.id.is_empty() {
        if let Some(m) = reply.as_ref().filter(|_| !live) {
            if s.json {
                return print_json(&pb::StreamResponse {
                    payload: Some(Payload::Message(m.clone())),
                })
                .map(|()| (task, reply));
            }
            render::message(&mut out, m);
        }
        return print_text(&out).map(|()| (task, reply));
    }
    if live {
        // The tail restates what a caller needs to go on (SPEC §11.2).
        render::field(&mut out, "Task ID", &task.id);
        render::field(&mut out, "Context ID", &task.context_id);
        render::field(&mut out, "State", render::state_name(task.state()));
    } else {
        render::task(&mut out, &task, s.verbose);
    }
    outcome(
        s,
        &mut out,
        &task.id.clone(),
        task.state(),
        pb::TaskState::Completed,
    );
    if s.json {
        if !live {
            print_json(&task)?;
        }
        return Ok((task, reply));
    }
    print_text(&out).map(|()| (task, reply))
}

/// `chat`
#[derive(Args, Debug)]
pub(crate) struct Chat {
    /// A first message. Without a terminal on standard input and output, chat sends it once,
    /// like `send`, and reads no input.
    #[arg(value_name = "MESSAGE")]
    message: Option<String>,
    #[command(flatten)]
    pub(crate) target: Target,
}

/// What a chat carries from one turn to the next (SPEC §8.1): the context, and the task
/// while it waits for the caller.
#[derive(Default)]
struct Conversation {
    context_id: String,
    task_id: String,
}

/// The chat commands (a line that is one of these is not sent).
const CHAT_QUIT: [&str; 2] = ["/quit", "/exit"];
const CHAT_NEW: &str = "/new";

/// `chat`: a read-send loop on a terminal (SPEC §7.1, §8.1). Each line is a message in one
/// context; a task waiting for input is continued by the next line, a finished one is
/// followed by a new task in the same context. `/quit` (or `/exit`) or end of input ends it,
/// `/new` starts a new context. Without a terminal it never reads input (SPEC §6.1, §11.2):
/// a message given on the command line is sent once, otherwise it is a usage error.
pub(crate) async fn chat(args: &Chat) -> Result<(), Failure> {
    use std::io::IsTerminal;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if !interactive && args.message.is_none() {
        return Err(Failure::usage(
            "chat needs a terminal on standard input and output; pass a message to send it \
             once, or use `trident send`",
        ));
    }
    let mut s = connect(&args.target).await?;
    s.chat = interactive;
    let mut conversation = Conversation::default();
    if !interactive {
        if let Some(text) = &args.message {
            chat_turn(&s, &mut conversation, text).await?;
        }
        return Ok(());
    }
    let ended = chat_loop(&s, &mut conversation, args.message.as_deref()).await;
    // What a `send` needs to go on where the chat stopped (SPEC §8.2).
    let mut err = std::io::stderr().lock();
    if !conversation.context_id.is_empty() {
        let _ = writeln!(err, "Context ID: {}", conversation.context_id);
    }
    if !conversation.task_id.is_empty() {
        let _ = writeln!(err, "Task ID: {}", conversation.task_id);
    }
    ended
}

/// The prompt and the turns, until a quit, the end of input, or a failure.
async fn chat_loop(
    s: &Session,
    conversation: &mut Conversation,
    first: Option<&str>,
) -> Result<(), Failure> {
    use std::io::BufRead;
    if let Some(text) = first
        && !chat_turn(s, conversation, text).await?
    {
        return Ok(());
    }
    let mut line = String::new();
    loop {
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "> ");
            let _ = err.flush();
        }
        line.clear();
        let read = std::io::stdin().lock().read_line(&mut line);
        match read {
            Ok(0) => {
                let _ = writeln!(std::io::stderr());
                return Ok(());
            }
            Ok(_) => {}
            Err(e) => {
                return Err(Failure::local(
                    Local::Internal,
                    format!("cannot read standard input: {e}"),
                ));
            }
        }
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if CHAT_QUIT.contains(&text) {
            return Ok(());
        }
        if text == CHAT_NEW {
            *conversation = Conversation::default();
            let _ = writeln!(
                std::io::stderr(),
                "note: a new conversation; the next message starts a new context"
            );
            continue;
        }
        if !chat_turn(s, conversation, text).await? {
            return Ok(());
        }
    }
}

/// One turn: sends `text` in the conversation, shows the reply (live when the card declares
/// streaming), and carries the identifiers on. False when the chat cannot go on here (the
/// agent wants credentials).
async fn chat_turn(
    s: &Session,
    conversation: &mut Conversation,
    text: &str,
) -> Result<bool, Failure> {
    let parts = message_parts(Some(text), &[])?;
    let mut message = pb::Message::user(uuid::Uuid::new_v4().to_string(), parts);
    message.context_id.clone_from(&conversation.context_id);
    message.task_id.clone_from(&conversation.task_id);
    let req = pb::SendMessageRequest {
        message: Some(message),
        ..Default::default()
    };
    let streams = s.declares(|c| c.streaming);
    let (task, reply) = if streams {
        s.sending("SendStreamingMessage", &req);
        let stream = s
            .svc
            .send_streaming_message(&s.cx, req)
            .await
            .map_err(|e| s.failed(e))?;
        follow_to_end(s, stream, true).await?
    } else {
        let call = s.svc.send_message(&s.cx, req.clone());
        let resp = s
            .logged("SendMessage", &req, call)
            .await
            .map_err(|e| s.failed(e))?;
        if s.json {
            print_json(&resp)?;
        }
        let mut out = String::new();
        let seen = match resp.payload {
            Some(pb::send_message_response::Payload::Task(t)) => {
                render::task(&mut out, &t, s.verbose);
                outcome(s, &mut out, &t.id, t.state(), pb::TaskState::Completed);
                (t, None)
            }
            Some(pb::send_message_response::Payload::Message(m)) => {
                render::message(&mut out, &m);
                (pb::Task::default(), Some(m))
            }
            None => return Err(neither_task_nor_message()),
        };
        if !s.json {
            print_text(&out)?;
        }
        seen
    };
    conversation.task_id.clear();
    if !task.id.is_empty() {
        conversation.context_id.clone_from(&task.context_id);
        match task.state() {
            pb::TaskState::InputRequired => conversation.task_id.clone_from(&task.id),
            pb::TaskState::AuthRequired => {
                conversation.task_id.clone_from(&task.id);
                let _ = writeln!(
                    std::io::stderr(),
                    "note: the agent needs credentials to go on with task {}; supply them \
                     (--bearer, --api-key, --svc-param) and reply with `trident send --task-id`",
                    task.id
                );
                return Ok(false);
            }
            _ => {}
        }
    } else if let Some(m) = reply.filter(|m| !m.context_id.is_empty()) {
        conversation.context_id = m.context_id;
    }
    Ok(true)
}

/// `task download`: the task's artifacts, one file per part ([`crate::download`]); prints
/// the task's identifiers and state and a `Saved:` line per file (with `-o json`, one object
/// `{taskId, contextId, state, files: [...]}`).
pub(crate) async fn task_download(args: &TaskDownload) -> Result<(), Failure> {
    let s = connect(&args.target).await?;
    let task = s
        .get_task(pb::GetTaskRequest {
            id: args.id.clone(),
            history_length: Some(0),
            ..Default::default()
        })
        .await
        .map_err(|e| s.failed(e))?;
    if let Some(missing) = args.artifact.iter().find(|wanted| {
        !task
            .artifacts
            .iter()
            .any(|a| a.artifact_id == **wanted || a.name == **wanted)
    }) {
        return Err(
            Failure::usage(format!("task {} has no artifact {missing:?}", task.id)).with_hint(
                format!(
                    "its artifacts: trident task get {} -a {}",
                    task.id, s.reference
                ),
            ),
        );
    }
    let http = http_client(&args.target)?;
    let mut warnings = Vec::new();
    let saved = crate::download::save(
        &task.artifacts,
        &args.artifact,
        &args.dir,
        &http,
        args.target.timeout,
        &mut |w| warnings.push(w),
    )
    .await
    .map_err(|e| Failure::local(Local::Internal, e.to_string()))?;
    for w in &warnings {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
    if s.json {
        return print_json(&serde_json::json!({
            "taskId": task.id,
            "contextId": task.context_id,
            "state": task.state().as_str_name(),
            "files": saved,
        }));
    }
    let mut out = String::new();
    render::field(&mut out, "Task ID", &task.id);
    render::field(&mut out, "Context ID", &task.context_id);
    render::field(&mut out, "State", render::state_name(task.state()));
    for f in &saved {
        let name = if f.artifact_name.is_empty() {
            &f.artifact_id
        } else {
            &f.artifact_name
        };
        render::field(
            &mut out,
            "Saved",
            &format!(
                "{} ({} part {} of artifact {name}, {} bytes)",
                f.path.display(),
                f.kind,
                f.part,
                f.size
            ),
        );
    }
    render::field(&mut out, "Files", &saved.len().to_string());
    print_text(&out)
}

pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Failure> {
    let line =
        serde_json::to_string(value).map_err(|e| Failure::local(Local::Internal, e.to_string()))?;
    print_text(&format!("{}\n", scrubbed(line)))
}

pub(crate) fn print_text(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(())
}

impl From<A2aError> for Failure {
    fn from(e: A2aError) -> Self {
        Failure::from_a2a(e, false)
    }
}

fn timestamp(ts: &trident_proto::wkt::Timestamp) -> String {
    serde_json::to_value(ts)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A `SendMessage` answer with no payload.
fn neither_task_nor_message() -> Failure {
    Failure::Agent(
        A2aError::new(
            trident_core::ErrorKind::InvalidAgentResponse,
            "the agent answered with neither a task nor a message",
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_url_is_tls_by_its_scheme_or_its_card() {
        let card = |urls: &[&str]| pb::AgentCard {
            supported_interfaces: urls
                .iter()
                .map(|u| pb::AgentInterface {
                    url: (*u).to_owned(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let tls = card(&["https://agent.example:8443/a2a", "agent.example:8443"]);
        assert_eq!(
            grpc_url(&tls, "agent.example:8443"),
            "https://agent.example:8443"
        );
        assert_eq!(grpc_url(&tls, "other.example:8443"), "other.example:8443");
        assert_eq!(
            grpc_url(&tls, "http://agent.example:8443"),
            "http://agent.example:8443"
        );
        let plain = card(&["http://127.0.0.1:8080/", "127.0.0.1:8080"]);
        assert_eq!(grpc_url(&plain, "127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(
            grpc_url(&plain, "agent.example:443"),
            "https://agent.example:443"
        );
        assert_eq!(grpc_url(&plain, "https://x:1"), "https://x:1");
    }

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
    fn card_references_resolve_as_the_spec_says() {
        use CardSource::*;
        let url = |s: &str| Url(s.to_owned());
        assert_eq!(
            card_source("http://127.0.0.1:8080"),
            url("http://127.0.0.1:8080/.well-known/agent-card.json")
        );
        assert_eq!(
            card_source("https://a.example/cards/x"),
            url("https://a.example/cards/x")
        );
        assert_eq!(
            card_source("localhost:9"),
            url("http://localhost:9/.well-known/agent-card.json")
        );
        assert_eq!(
            card_source("agent.example"),
            url("https://agent.example/.well-known/agent-card.json")
        );
        assert_eq!(
            card_source("file:///tmp/c.json"),
            File("/tmp/c.json".into())
        );
        assert_eq!(card_source("./c.json"), File("./c.json".into()));
    }

    #[test]
    fn media_types_bind_to_the_part_before_them() {
        let parts = message_parts(
            Some("first"),
            &[
                PartFlag::Text("second".into()),
                PartFlag::MediaType("text/markdown".into()),
                PartFlag::Data("{\"k\":1}".into()),
            ],
        )
        .expect("parts");
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].media_type, "");
        assert_eq!(parts[1].media_type, "text/markdown");
        assert_eq!(parts[2].media_type, "application/json");
        let orphan = message_parts(None, &[PartFlag::MediaType("a/b".into())]);
        assert!(matches!(orphan, Err(f) if f.exit_code() == 2));
        let twice = message_parts(
            None,
            &[
                PartFlag::Text("x".into()),
                PartFlag::MediaType("a/b".into()),
                PartFlag::MediaType("c/d".into()),
            ],
        );
        assert!(matches!(twice, Err(f) if f.exit_code() == 2));
    }

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
