//! `auth login|status|logout` (a2a-cli SPEC §12.2): OAuth 2.1 tokens for the agents whose card
//! declares an OAuth 2 security scheme, and their use on later calls.
//!
//! `auth login -a REF` reads the card and takes the flow its OAuth 2 scheme declares: the
//! device authorization grant (RFC 8628) or the client credentials grant (RFC 6749 §4.4). A
//! card with several such schemes is told apart by `--scheme NAME`; without it a
//! `--client-secret` picks a client-credentials scheme and its absence a device-code one.
//!
//! Tokens are kept in `tokens.json` in the configuration directory SPEC §8.3 names
//! (`$XDG_CONFIG_HOME/a2a-cli`, else `~/.config/a2a-cli`), mode `0600` in a `0700` directory,
//! one entry per agent (the card's URL, or a card file's absolute path) and scheme name. A
//! client command attaches an entry's access token (`Authorization: Bearer`) only to calls to
//! that agent, only while its card still declares that scheme with the same token endpoint,
//! and never when `--bearer` is given. An expired token with a refresh token is refreshed
//! first (RFC 6749 §6); one without is not sent. The client secret is never stored.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use trident_proto as pb;

use crate::client::{self, Target};
use crate::failure::{Failure, Local};

/// `auth …`
#[derive(Subcommand, Debug)]
pub(crate) enum AuthCommand {
    /// Get a token from the agent's OAuth 2 authorization server (device code or client
    /// credentials, as its card declares) and keep it for later calls to that agent.
    Login(Login),
    /// The tokens kept for an agent (their values never shown).
    Status(Stored),
    /// Forget the tokens kept for an agent.
    Logout(Stored),
}

/// `auth login`
#[derive(Args, Debug)]
pub(crate) struct Login {
    #[command(flatten)]
    pub(crate) target: Target,
    /// The card's security scheme to log in with (a key of its `securitySchemes`); needed
    /// only when it declares more than one OAuth 2 scheme of the kind wanted.
    #[arg(long, value_name = "NAME")]
    pub(crate) scheme: Option<String>,
    /// The OAuth client id registered with the agent's authorization server.
    #[arg(long, env = "A2ACLI_CLIENT_ID", value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// The client secret (client credentials; also sent with the device flow when given).
    /// Prefer the variable: a flag shows in the process table. Never stored.
    #[arg(
        long,
        env = "A2ACLI_CLIENT_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub(crate) client_secret: Option<String>,
    /// Scopes to ask for, comma-separated (default: those the card's security requirement
    /// names for the scheme).
    #[arg(long = "scope", value_delimiter = ',', value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
}

/// `auth status` and `auth logout`
#[derive(Args, Debug)]
pub(crate) struct Stored {
    #[command(flatten)]
    pub(crate) target: Target,
}

impl AuthCommand {
    /// Whether the output is JSON.
    pub(crate) fn json(&self) -> bool {
        match self {
            AuthCommand::Login(l) => l.target.json(),
            AuthCommand::Status(s) | AuthCommand::Logout(s) => s.target.json(),
        }
    }

    /// Runs the command.
    pub(crate) async fn run(&self) -> Result<(), Failure> {
        match self {
            AuthCommand::Login(args) => login(args).await,
            AuthCommand::Status(args) => status(&args.target).await,
            AuthCommand::Logout(args) => logout(&args.target),
        }
    }
}

/// One kept token.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    /// The agent: its card's URL, or the absolute path of its card file.
    agent: String,
    /// The card's name for the scheme.
    scheme: String,
    /// `device_code` or `client_credentials`.
    flow: String,
    /// The token endpoint the card declared (a changed one makes the entry unused).
    token_url: String,
    /// Where to refresh (the card's `refreshUrl`, else the token endpoint).
    refresh_url: String,
    client_id: String,
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch; `None`: the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    #[serde(default)]
    tokens: Vec<Entry>,
}

/// The configuration directory (SPEC §8.3): `$XDG_CONFIG_HOME/a2a-cli`, else
/// `$HOME/.config/a2a-cli`.
fn config_dir() -> Result<PathBuf, Failure> {
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("a2a-cli"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".config").join("a2a-cli"))
        .ok_or_else(|| {
            Failure::local(
                Local::Internal,
                "no configuration directory: neither XDG_CONFIG_HOME nor HOME is set",
            )
        })
}

fn token_path() -> Result<PathBuf, Failure> {
    Ok(config_dir()?.join("tokens.json"))
}

/// Reads the kept tokens (none when the file does not exist). A file others can read is
/// warned about and tightened.
fn load(path: &Path) -> Result<TokenFile, Failure> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokenFile::default()),
        Err(e) => {
            return Err(Failure::local(
                Local::Internal,
                format!("{}: {e}", path.display()),
            ));
        }
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            let _ = writeln!(
                std::io::stderr(),
                "warning: {} could be read by other users; its mode is now 0600",
                path.display()
            );
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
    }
    serde_json::from_slice(&text).map_err(|e| {
        Failure::local(Local::Internal, format!("{}: {e}", path.display())).with_hint(format!(
            "remove the file to start over: rm {}",
            path.display()
        ))
    })
}

/// Writes the kept tokens: a new file of mode `0600` (in a `0700` directory) renamed over
/// the old, so no reader ever sees it half-written or readable by others.
fn save(path: &Path, file: &TokenFile) -> Result<(), Failure> {
    let fail =
        |e: std::io::Error| Failure::local(Local::Internal, format!("{}: {e}", path.display()));
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(fail)?;
    let json = serde_json::to_vec_pretty(file)
        .map_err(|e| Failure::local(Local::Internal, e.to_string()))?;
    let temp = dir.join(format!(".tokens.json.{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options
        .open(&temp)
        .and_then(|mut f| f.write_all(&json).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

/// The agent an entry belongs to: the card's URL, or its file's absolute path.
fn agent_key(target: &Target) -> Result<String, Failure> {
    let reference = target.agent_card.as_deref().ok_or_else(|| {
        Failure::usage("no agent: pass -a/--agent-card REF (or set A2ACLI_AGENT_CARD)")
    })?;
    Ok(match client::card_source(reference) {
        client::CardSource::Url(url) => url,
        client::CardSource::File(path) => std::fs::canonicalize(&path)
            .unwrap_or(path)
            .display()
            .to_string(),
    })
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An OAuth 2 flow this tool runs, as a card declares it.
#[derive(Debug, Clone)]
enum Flow {
    Device {
        device_url: String,
        token_url: String,
        refresh_url: String,
    },
    ClientCredentials {
        token_url: String,
        refresh_url: String,
    },
    /// OpenID Connect (SPEC §12.3): the provider's endpoints are in its discovery document;
    /// [`discover`] turns this into one of the flows above.
    OpenId { discovery_url: String },
}

impl Flow {
    fn name(&self) -> &'static str {
        match self {
            Flow::Device { .. } => "device_code",
            Flow::ClientCredentials { .. } => "client_credentials",
            Flow::OpenId { .. } => "openid_connect",
        }
    }

    /// The endpoint the card declares: the token endpoint, or an OpenID provider's discovery
    /// document (a kept token is used only while the card still declares the same).
    fn token_url(&self) -> &str {
        match self {
            Flow::Device { token_url, .. } | Flow::ClientCredentials { token_url, .. } => token_url,
            Flow::OpenId { discovery_url } => discovery_url,
        }
    }

    fn refresh_url(&self) -> &str {
        match self {
            Flow::Device { refresh_url, .. } | Flow::ClientCredentials { refresh_url, .. } => {
                refresh_url
            }
            Flow::OpenId { discovery_url } => discovery_url,
        }
    }
}

/// The part of an OpenID provider's discovery document (OpenID Connect Discovery 1.0 §3) the
/// login flows need.
#[derive(Debug, Deserialize)]
struct Discovery {
    issuer: String,
    token_endpoint: String,
    #[serde(default)]
    device_authorization_endpoint: Option<String>,
}

/// The OAuth 2 flow of an OpenID provider, from its discovery document at `url`: client
/// credentials when the client has a secret, else the device flow, if the provider offers it.
async fn discover(http: &reqwest::Client, url: &str, secret: bool) -> Result<Flow, Failure> {
    let (status, bytes) = exchange(http.get(url).header("accept", "application/json"), url).await?;
    let bad =
        |why: String| Failure::local(Local::AuthFailed, format!("OpenID discovery {url}: {why}"));
    if !status.is_success() {
        return Err(bad(format!("HTTP {status}")));
    }
    let doc: Discovery = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("not an OpenID provider configuration: {e}")))?;
    // Discovery §4.3: the issuer is the URL the document was found under.
    if let Some(prefix) = url.strip_suffix("/.well-known/openid-configuration")
        && doc.issuer.trim_end_matches('/') != prefix.trim_end_matches('/')
    {
        return Err(bad(format!(
            "the document names the issuer {:?}, not {prefix:?}",
            printable(&doc.issuer)
        )));
    }
    let token_url = doc.token_endpoint;
    if token_url.is_empty() {
        return Err(bad("no token_endpoint".to_owned()));
    }
    if secret {
        return Ok(Flow::ClientCredentials {
            refresh_url: token_url.clone(),
            token_url,
        });
    }
    match doc.device_authorization_endpoint.filter(|u| !u.is_empty()) {
        Some(device_url) => Ok(Flow::Device {
            device_url,
            refresh_url: token_url.clone(),
            token_url,
        }),
        None => Err(Failure::usage(format!(
            "the OpenID provider of {url} offers no device authorization endpoint"
        ))
        .with_hint(
            "log in with the client credentials flow: --client-secret (or A2ACLI_CLIENT_SECRET)",
        )),
    }
}

/// The flow of the card's scheme `scheme`, if it is an OAuth 2 scheme with a flow this tool
/// runs.
fn flow_of(card: &pb::AgentCard, scheme: &str) -> Option<Flow> {
    use pb::o_auth_flows::Flow as F;
    use pb::security_scheme::Scheme;
    let oauth = match card
        .security_schemes
        .get(scheme)
        .and_then(|s| s.scheme.as_ref())?
    {
        Scheme::Oauth2SecurityScheme(oauth) => oauth,
        Scheme::OpenIdConnectSecurityScheme(oidc) if !oidc.open_id_connect_url.is_empty() => {
            return Some(Flow::OpenId {
                discovery_url: oidc.open_id_connect_url.clone(),
            });
        }
        _ => return None,
    };
    let or = |refresh: &str, token: &str| {
        if refresh.is_empty() {
            token.to_owned()
        } else {
            refresh.to_owned()
        }
    };
    match oauth.flows.as_ref()?.flow.as_ref()? {
        F::DeviceCode(d) => Some(Flow::Device {
            device_url: d.device_authorization_url.clone(),
            token_url: d.token_url.clone(),
            refresh_url: or(&d.refresh_url, &d.token_url),
        }),
        F::ClientCredentials(c) => Some(Flow::ClientCredentials {
            token_url: c.token_url.clone(),
            refresh_url: or(&c.refresh_url, &c.token_url),
        }),
        _ => None,
    }
}

/// The card's scheme names, those of its security requirements first (in order), then the
/// rest by name.
fn scheme_order(card: &pb::AgentCard) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for requirement in &card.security_requirements {
        let mut names: Vec<&String> = requirement.schemes.keys().collect();
        names.sort();
        for name in names {
            if !order.contains(name) {
                order.push(name.clone());
            }
        }
    }
    let mut rest: Vec<&String> = card.security_schemes.keys().collect();
    rest.sort();
    for name in rest {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }
    order
}

/// The command that logs in to the agent `reference`, when its card declares an OAuth 2 scheme
/// `auth login` runs.
pub(crate) fn login_hint(card: &pb::AgentCard, reference: &str) -> Option<String> {
    let (name, flow) = scheme_order(card)
        .into_iter()
        .find_map(|name| flow_of(card, &name).map(|f| (name, f)))?;
    let secret = match flow {
        Flow::ClientCredentials { .. } => " (with A2ACLI_CLIENT_SECRET set)",
        Flow::Device { .. } | Flow::OpenId { .. } => "",
    };
    Some(format!(
        "log in: trident auth login -a {} --scheme {} --client-id <id>{secret}",
        client::shell_word(&printable(reference)),
        client::shell_word(&printable(&name))
    ))
}

/// The scopes the card's security requirements name for `scheme`.
fn required_scopes(card: &pb::AgentCard, scheme: &str) -> Vec<String> {
    card.security_requirements
        .iter()
        .find_map(|r| r.schemes.get(scheme))
        .map(|l| l.list.clone())
        .unwrap_or_default()
}

/// The scheme and flow `auth login` uses.
fn choose(card: &pb::AgentCard, args: &Login, reference: &str) -> Result<(String, Flow), Failure> {
    let runnable: Vec<(String, Flow)> = scheme_order(card)
        .into_iter()
        .filter_map(|name| flow_of(card, &name).map(|f| (name, f)))
        .collect();
    if let Some(wanted) = &args.scheme {
        return runnable
            .into_iter()
            .find(|(name, _)| name == wanted)
            .ok_or_else(|| {
                let known = card.security_schemes.contains_key(wanted);
                Failure::usage(if known {
                    format!(
                        "the scheme {wanted:?} of {reference} is not an OAuth 2 device-code or \
                         client-credentials scheme, nor an OpenID Connect one"
                    )
                } else {
                    format!("the card of {reference} declares no scheme {wanted:?}")
                })
                .with_hint(format!("see its schemes: trident card get -a {reference}"))
            });
    }
    let secret = args.client_secret.is_some();
    let preferred = runnable
        .iter()
        .find(|(_, f)| matches!(f, Flow::ClientCredentials { .. }) == secret)
        .or_else(|| runnable.first())
        .cloned();
    preferred.ok_or_else(|| {
        Failure::usage(format!(
            "the card of {reference} declares no OAuth 2 device-code or client-credentials \
             scheme, nor an OpenID Connect one, to log in with"
        ))
        .with_hint(format!("see its schemes: trident card get -a {reference}"))
    })
}

/// The answer of a token endpoint (RFC 6749 §5.1).
#[derive(Debug, Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// An error answer of a token endpoint (RFC 6749 §5.2, RFC 8628 §3.5).
#[derive(Debug, Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// The device authorization response (RFC 8628 §3.2).
#[derive(Debug, Deserialize)]
struct DeviceResponse {
    device_code: String,
    user_code: String,
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    expires_in: u64,
    #[serde(default)]
    interval: Option<u64>,
}

/// What a token request came back with.
enum Answer {
    Token(TokenResponse),
    Error(ErrorResponse),
}

/// The client's credentials for a token request.
struct ClientAuth<'a> {
    id: &'a str,
    secret: Option<&'a str>,
}

/// POSTs `form` to the token endpoint `url` (application/x-www-form-urlencoded, RFC 6749
/// §3.2). With a secret the client authenticates with HTTP Basic (§2.3.1, id and secret each
/// form-encoded first); without, it sends `client_id` in the body (§3.2.1).
async fn token_request(
    http: &reqwest::Client,
    url: &str,
    client: &ClientAuth<'_>,
    form: &[(&str, &str)],
) -> Result<Answer, Failure> {
    // Encoded before any wait, so the future is `Send` (the serializer is not): the console's
    // server makes calls through this path from its tasks.
    let mut fields: Vec<(&str, &str)> = form.to_vec();
    let mut request = http
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json");
    match client.secret {
        Some(secret) => {
            let encode =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            use base64::Engine as _;
            let basic = base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                encode(client.id),
                encode(secret)
            ));
            request = request.header("authorization", format!("Basic {basic}"));
        }
        None => fields.push(("client_id", client.id)),
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let (status, bytes) = exchange(request.body(body), url).await?;
    if status.is_success() {
        let token: TokenResponse = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::local(
                Local::AuthFailed,
                format!("token endpoint {url}: not an OAuth token response: {e}"),
            )
        })?;
        if !token.token_type.eq_ignore_ascii_case("bearer") {
            return Err(Failure::local(
                Local::AuthFailed,
                format!(
                    "token endpoint {url}: a {:?} token, and this tool sends only Bearer tokens",
                    token.token_type
                ),
            ));
        }
        return Ok(Answer::Token(token));
    }
    match serde_json::from_slice::<ErrorResponse>(&bytes) {
        Ok(e) => Ok(Answer::Error(e)),
        Err(_) => Err(Failure::local(
            Local::AuthFailed,
            format!("token endpoint {url}: HTTP {status}"),
        )),
    }
}

/// Sends `request` to `url` and reads the whole answer: its status and body.
async fn exchange(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<(reqwest::StatusCode, bytes::Bytes), Failure> {
    let response = request.send().await.map_err(|e| unreachable_at(url, &e))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| unreachable_at(url, &e))?;
    Ok((status, bytes))
}

fn unreachable_at(url: &str, e: &reqwest::Error) -> Failure {
    let code = if e.is_timeout() {
        Local::Timeout
    } else {
        Local::Unreachable
    };
    Failure::local(code, format!("{url}: {}", trident_core::error_chain(e)))
}

/// `text` from the authorization server without control characters, so what it sends can
/// never drive the terminal it is printed on.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// An OAuth error answer as a failure.
fn refused(what: &str, e: &ErrorResponse) -> Failure {
    let why = e
        .error_description
        .as_deref()
        .map(|d| format!(" ({})", printable(d)))
        .unwrap_or_default();
    Failure::local(
        Local::AuthFailed,
        format!("{what}: {}{why}", printable(&e.error)),
    )
}

/// The HTTP client of the authorization server's endpoints: `--insecure` and `--timeout` as
/// for the card fetch.
fn oauth_http(target: &Target) -> Result<reqwest::Client, Failure> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .danger_accept_invalid_certs(target.insecure);
    if let Some(t) = target.timeout {
        builder = builder.timeout(t);
    }
    builder
        .build()
        .map_err(|e| Failure::local(Local::Internal, e.to_string()))
}

/// `auth login`
async fn login(args: &Login) -> Result<(), Failure> {
    let target = &args.target;
    let card = client::resolve_card(target).await?;
    let reference = target.agent_card.clone().unwrap_or_default();
    let (scheme, flow) = choose(&card, args, &reference)?;
    let client_id = args
        .client_id
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Failure::usage(
                "auth login needs the OAuth client id: --client-id ID (or A2ACLI_CLIENT_ID)",
            )
        })?;
    let secret = args.client_secret.as_deref().filter(|s| !s.is_empty());
    let scopes = if args.scopes.is_empty() {
        required_scopes(&card, &scheme)
    } else {
        args.scopes.clone()
    };
    let scope = scopes.join(" ");
    let client_auth = ClientAuth {
        id: client_id,
        secret,
    };
    let http = oauth_http(target)?;
    // What the card declares (kept with the token), and the flow run: for OpenID Connect,
    // the one its provider's discovery document allows.
    let declared = flow.clone();
    let flow = match &flow {
        Flow::OpenId { discovery_url } => {
            if target.debug {
                client::debug(&format!("auth: OpenID discovery {discovery_url}"));
            }
            discover(&http, discovery_url, secret.is_some()).await?
        }
        _ => flow,
    };
    if target.debug {
        client::debug(&format!(
            "auth: scheme {scheme:?}, flow {}, token endpoint {}, client {client_id}{}",
            flow.name(),
            flow.token_url(),
            if secret.is_some() {
                " with its secret [redacted]"
            } else {
                ""
            }
        ));
    }
    let token = match &flow {
        Flow::ClientCredentials { token_url, .. } => {
            if secret.is_none() {
                return Err(Failure::usage(format!(
                    "the scheme {scheme:?} is the client credentials flow, which needs the \
                     client's secret: --client-secret (or A2ACLI_CLIENT_SECRET)"
                )));
            }
            let mut form = vec![("grant_type", "client_credentials")];
            if !scope.is_empty() {
                form.push(("scope", scope.as_str()));
            }
            match token_request(&http, token_url, &client_auth, &form).await? {
                Answer::Token(t) => t,
                Answer::Error(e) => return Err(refused("the authorization server refused", &e)),
            }
        }
        Flow::Device {
            device_url,
            token_url,
            ..
        } => device_flow(target, &http, device_url, token_url, &client_auth, &scope).await?,
        Flow::OpenId { .. } => {
            return Err(Failure::local(
                Local::Internal,
                "OpenID discovery gave no OAuth 2 flow",
            ));
        }
    };
    let entry = Entry {
        agent: agent_key(target)?,
        scheme: scheme.clone(),
        flow: flow.name().to_owned(),
        token_url: declared.token_url().to_owned(),
        refresh_url: flow.refresh_url().to_owned(),
        client_id: client_id.to_owned(),
        access_token: token.access_token,
        refresh_token: token.refresh_token,
        expires_at: token.expires_in.map(|s| now().saturating_add(s)),
        scopes: token
            .scope
            .map(|s| s.split(' ').map(str::to_owned).collect())
            .unwrap_or(scopes),
    };
    let path = token_path()?;
    let mut file = load(&path)?;
    file.tokens
        .retain(|e| !(e.agent == entry.agent && e.scheme == entry.scheme));
    let summary = summary(&entry, &path);
    file.tokens.push(entry);
    save(&path, &file)?;
    if target.json() {
        client::print_json(&summary)
    } else {
        client::print_text(&summary_text(&summary))
    }
}

/// The device authorization grant (RFC 8628 §3): asks for a code, tells the user where to
/// approve it (stderr), and polls the token endpoint at the interval the server gives (5 s
/// more after each `slow_down`) until a token, a refusal or the code's expiry.
async fn device_flow(
    target: &Target,
    http: &reqwest::Client,
    device_url: &str,
    token_url: &str,
    client: &ClientAuth<'_>,
    scope: &str,
) -> Result<TokenResponse, Failure> {
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    body.append_pair("client_id", client.id);
    if !scope.is_empty() {
        body.append_pair("scope", scope);
    }
    let request = http
        .post(device_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body.finish());
    let (status, bytes) = exchange(request, device_url).await?;
    if !status.is_success() {
        return Err(match serde_json::from_slice::<ErrorResponse>(&bytes) {
            Ok(e) => refused("the device authorization endpoint refused", &e),
            Err(_) => Failure::local(
                Local::AuthFailed,
                format!("device authorization endpoint {device_url}: HTTP {status}"),
            ),
        });
    }
    let device: DeviceResponse = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::local(
            Local::AuthFailed,
            format!("device authorization endpoint {device_url}: not a device authorization response: {e}"),
        )
    })?;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "To sign in, open {} and enter the code {}",
        printable(&device.verification_uri),
        printable(&device.user_code)
    );
    if let Some(complete) = &device.verification_uri_complete {
        let _ = writeln!(err, "(or open {})", printable(complete));
    }
    let _ = writeln!(err, "Waiting for the approval…");
    let _ = err.flush();
    drop(err);
    // Bounded, so no value a server sends can overflow the clock: a day to approve, an hour
    // between polls.
    let lifetime = Duration::from_secs(device.expires_in.min(86_400));
    let deadline = tokio::time::Instant::now() + lifetime;
    let mut interval = Duration::from_secs(device.interval.unwrap_or(5).min(3_600));
    let form = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ("device_code", device.device_code.as_str()),
    ];
    loop {
        tokio::time::sleep(interval).await;
        if tokio::time::Instant::now() >= deadline {
            return Err(Failure::local(
                Local::AuthFailed,
                "the device code expired before it was approved",
            )
            .with_hint(format!(
                "log in again: trident auth login -a {}",
                target.agent_card.as_deref().unwrap_or("<agent>")
            )));
        }
        match token_request(http, token_url, client, &form).await? {
            Answer::Token(t) => return Ok(t),
            Answer::Error(e) => match e.error.as_str() {
                "authorization_pending" => {}
                "slow_down" => interval += Duration::from_secs(5),
                "access_denied" => {
                    return Err(refused("the sign-in was denied", &e));
                }
                "expired_token" => {
                    return Err(
                        refused("the device code expired before it was approved", &e).with_hint(
                            format!(
                                "log in again: trident auth login -a {}",
                                target.agent_card.as_deref().unwrap_or("<agent>")
                            ),
                        ),
                    );
                }
                _ => return Err(refused("the authorization server refused", &e)),
            },
        }
    }
}

/// What `auth login` and `auth status` report of an entry (never a token).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    agent: String,
    scheme: String,
    flow: String,
    client_id: String,
    scopes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    expired: bool,
    refreshable: bool,
    store: String,
}

fn summary(e: &Entry, path: &Path) -> Summary {
    Summary {
        agent: e.agent.clone(),
        scheme: e.scheme.clone(),
        flow: e.flow.clone(),
        client_id: e.client_id.clone(),
        scopes: e.scopes.clone(),
        expires_at: e.expires_at,
        expired: e.expires_at.is_some_and(|t| t <= now()),
        refreshable: e.refresh_token.is_some(),
        store: path.display().to_string(),
    }
}

fn summary_text(s: &Summary) -> String {
    let expires = match s.expires_at {
        None => "unknown".to_owned(),
        Some(t) if s.expired => format!("expired ({} s ago)", now().saturating_sub(t)),
        Some(t) => format!("in {} s", t.saturating_sub(now())),
    };
    format!(
        "Agent: {}\nScheme: {}\nFlow: {}\nClient: {}\nScopes: {}\nExpires: {}\nRefreshable: {}\nStore: {}\n",
        s.agent,
        s.scheme,
        s.flow,
        s.client_id,
        s.scopes.join(" "),
        expires,
        if s.refreshable { "yes" } else { "no" },
        s.store
    )
}

/// `auth status`: the agent's kept tokens, without their values.
async fn status(target: &Target) -> Result<(), Failure> {
    let agent = agent_key(target)?;
    let path = token_path()?;
    let file = load(&path)?;
    let mine: Vec<Summary> = file
        .tokens
        .iter()
        .filter(|e| e.agent == agent)
        .map(|e| summary(e, &path))
        .collect();
    if target.json() {
        return client::print_json(&serde_json::json!({ "tokens": mine }));
    }
    if mine.is_empty() {
        return client::print_text(&format!("No token kept for {agent}\n"));
    }
    let blocks: Vec<String> = mine.iter().map(summary_text).collect();
    client::print_text(&blocks.join("\n"))
}

/// `auth logout`: forgets the agent's kept tokens.
fn logout(target: &Target) -> Result<(), Failure> {
    let agent = agent_key(target)?;
    let path = token_path()?;
    let mut file = load(&path)?;
    let before = file.tokens.len();
    file.tokens.retain(|e| e.agent != agent);
    let removed = before - file.tokens.len();
    if removed > 0 {
        save(&path, &file)?;
    }
    if target.json() {
        return client::print_json(&serde_json::json!({ "agent": agent, "removed": removed }));
    }
    client::print_text(&format!("Removed {removed} token(s) kept for {agent}\n"))
}

/// The kept access token for calls to the agent of `target` whose card is `card`: the first
/// entry for this agent whose scheme the card still declares with the same token endpoint,
/// refreshed first when it has expired and can be. `None` when there is none to send (an
/// expired one that cannot be refreshed is said so on stderr). Returns the scheme too.
pub(crate) async fn stored_token(
    target: &Target,
    card: &pb::AgentCard,
) -> Result<Option<(String, String)>, Failure> {
    stored_token_for(target, card, None).await
}

/// [`stored_token`], of the scheme `only` when given (an in-task `AUTH_REQUIRED` that names
/// the scheme it needs).
pub(crate) async fn stored_token_for(
    target: &Target,
    card: &pb::AgentCard,
    only: Option<&str>,
) -> Result<Option<(String, String)>, Failure> {
    if card.security_schemes.is_empty() {
        return Ok(None);
    }
    let agent = agent_key(target)?;
    let path = token_path()?;
    let mut file = load(&path)?;
    let order: BTreeMap<String, usize> = scheme_order(card)
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, i))
        .collect();
    let mut candidates: Vec<usize> = file
        .tokens
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.agent == agent
                && only.is_none_or(|n| n == e.scheme)
                && flow_of(card, &e.scheme).is_some_and(|f| f.token_url() == e.token_url)
        })
        .map(|(i, _)| i)
        .collect();
    candidates.sort_by_key(|i| order.get(&file.tokens[*i].scheme).copied());
    for i in candidates {
        let entry = &file.tokens[i];
        // A minute's margin: a token about to expire may do so on the way.
        let expired = entry.expires_at.is_some_and(|t| t <= now() + 60);
        if !expired {
            return Ok(Some((entry.scheme.clone(), entry.access_token.clone())));
        }
        let Some(refresh) = entry.refresh_token.clone() else {
            let _ = writeln!(
                std::io::stderr(),
                "warning: the token kept for scheme {:?} has expired; log in again: trident \
                 auth login -a {}",
                entry.scheme,
                target.agent_card.as_deref().unwrap_or("<agent>")
            );
            continue;
        };
        if target.debug {
            client::debug(&format!(
                "auth: refreshing the expired token of scheme {:?} at {}",
                entry.scheme, entry.refresh_url
            ));
        }
        let http = oauth_http(target)?;
        let client_auth = ClientAuth {
            id: &entry.client_id,
            secret: None,
        };
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
        ];
        match token_request(&http, &entry.refresh_url, &client_auth, &form).await? {
            Answer::Token(t) => {
                let entry = &mut file.tokens[i];
                entry.access_token = t.access_token;
                // A new refresh token replaces the old (RFC 6749 §6); else the old one stays.
                if t.refresh_token.is_some() {
                    entry.refresh_token = t.refresh_token;
                }
                entry.expires_at = t.expires_in.map(|s| now().saturating_add(s));
                let found = (entry.scheme.clone(), entry.access_token.clone());
                save(&path, &file)?;
                return Ok(Some(found));
            }
            Answer::Error(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "warning: the expired token of scheme {:?} could not be refreshed ({}); log \
                     in again: trident auth login -a {}",
                    entry.scheme,
                    e.error,
                    target.agent_card.as_deref().unwrap_or("<agent>")
                );
            }
        }
    }
    Ok(None)
}
