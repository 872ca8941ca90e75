//! `trident auth login|status|logout` (a2a-cli SPEC §12.2) and the API key in a query
//! parameter (§12.1), against a live `trident serve --agent demo` that refuses calls without
//! its token, and an OAuth 2 authorization server run here ([`AuthServer`]) that follows
//! RFC 8628 (device authorization grant) and RFC 6749 (client credentials, refresh).
//! Each run has its own configuration directory (`XDG_CONFIG_HOME`), where the tokens go.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::process::{TempDir, Trident};

const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];
pub(crate) const CLIENT_ID: &str = "trident-cli";
pub(crate) const CLIENT_SECRET: &str = "cc-s3cret:&=";

/// The command for `trident ARGS…` with the configuration directory `config` and no
/// inherited a2a-cli variables.
fn command(args: &[&str], config: &TempDir, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args)
        .env_remove("A2ACLI_OUTPUT")
        .env_remove("A2ACLI_AGENT_CARD")
        .env_remove("A2ACLI_BEARER")
        .env_remove("A2ACLI_API_KEY")
        .env_remove("A2ACLI_CLIENT_ID")
        .env_remove("A2ACLI_CLIENT_SECRET")
        .env_remove("TRIDENT_TOKEN")
        .env("XDG_CONFIG_HOME", &config.0)
        .env("HOME", &config.0)
        .env("RUST_LOG", "error")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `trident ARGS…` to completion (bounded in time).
async fn run(args: &[&str], config: &TempDir, env: &[(&str, &str)]) -> Output {
    let mut c = command(args, config, env);
    let run = tokio::task::spawn_blocking(move || c.output().expect("run trident"));
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("trident finished in time")
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// The `error` of the Appendix B envelope of a run with `-o json` that exited `exit`.
#[track_caller]
fn error_object(o: &Output, exit: i32) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(exit),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("one JSON document: {e}\n{}", text(&o.stdout)));
    v["error"].clone()
}

fn field<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(label).and_then(|r| r.strip_prefix(": ")))
}

/// The demo agent's card with `edit` applied, written to a file in `dir`.
pub(crate) async fn edited_card(
    origin: &str,
    dir: &TempDir,
    edit: impl FnOnce(&mut serde_json::Value),
) -> String {
    let url = format!("{origin}/.well-known/agent-card.json");
    let mut card: serde_json::Value = reqwest::get(&url)
        .await
        .expect("card")
        .json()
        .await
        .expect("card json");
    edit(&mut card);
    let path = dir.0.join(format!("card-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, card.to_string()).expect("write card");
    path.display().to_string()
}

/// One device authorization (RFC 8628 §3.2) the server handed out.
#[derive(Debug)]
struct Device {
    user_code: String,
    expires: Instant,
    /// `Some(true)` approved, `Some(false)` denied, `None` pending.
    decision: Option<bool>,
    /// The interval the client must keep, raised by 5 s with each `slow_down` (§3.5).
    interval: Duration,
    last_poll: Option<Instant>,
    /// The poll (1-based) to answer `slow_down` whatever the timing.
    slow_down_at: Option<usize>,
    polls: Vec<(Instant, &'static str)>,
    issued: bool,
}

#[derive(Debug, Default)]
struct AuthState {
    devices: HashMap<String, Device>,
    /// `expires_in` of the next device codes.
    device_lifetime: u64,
    /// Poll (1-based) of the next device code answered with `slow_down`.
    slow_down_at: Option<usize>,
    /// Polls that came sooner than the interval asked for.
    too_soon: usize,
    /// Token requests by grant type.
    grants: Vec<String>,
    /// Refresh tokens that are valid, to the access token they renew to.
    refresh: HashMap<String, String>,
    /// Bodies and headers seen (to check what the client sent).
    client_auth: Vec<String>,
}

/// An OAuth 2 authorization server for the tests: `/device` (RFC 8628 §3.1), `/token` (device
/// code, client credentials with HTTP Basic client authentication, refresh token), and
/// `/approve` `/deny` for the "user".
pub(crate) struct AuthServer {
    pub(crate) origin: String,
    state: Arc<Mutex<AuthState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The device flow's access token (1 s of life, refreshable), what its refresh gives, and
/// the client credentials token.
const DEVICE_TOKEN: &str = "dev-tok-1";
const DEVICE_REFRESH: &str = "dev-refresh-1";
pub(crate) const REFRESHED_TOKEN: &str = "dev-tok-2";
pub(crate) const MACHINE_TOKEN: &str = "cc-tok-1";

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({
            "error": error,
            // With a terminal control sequence, which the client must not pass on.
            "error_description": format!("test server: {error}\u{1b}[2J"),
        })),
    )
        .into_response()
}

fn token(access: &str, expires_in: u64, refresh: Option<&str>) -> Response {
    let mut body = serde_json::json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": expires_in,
    });
    if let Some(r) = refresh {
        body["refresh_token"] = r.into();
    }
    (
        [("cache-control", "no-store"), ("pragma", "no-cache")],
        axum::Json(body),
    )
        .into_response()
}

async fn device_endpoint(
    State(state): State<Arc<Mutex<AuthState>>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if form.get("client_id").map(String::as_str) != Some(CLIENT_ID) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    let mut s = state.lock().expect("state");
    let n = s.devices.len() + 1;
    let device_code = format!("device-code-{n}");
    let user_code = format!("WDJB-MJH{n}");
    let lifetime = s.device_lifetime.max(1);
    let slow_down_at = s.slow_down_at;
    s.devices.insert(
        device_code.clone(),
        Device {
            user_code: user_code.clone(),
            expires: Instant::now() + Duration::from_secs(lifetime),
            decision: None,
            interval: Duration::from_secs(1),
            last_poll: None,
            slow_down_at,
            polls: Vec::new(),
            issued: false,
        },
    );
    axum::Json(serde_json::json!({
        "device_code": device_code,
        "user_code": user_code,
        "verification_uri": "https://auth.example/device",
        "verification_uri_complete": format!("https://auth.example/device?user_code={user_code}"),
        "expires_in": lifetime,
        "interval": 1,
    }))
    .into_response()
}

/// The client id and secret of an `Authorization: Basic` header (RFC 6749 §2.3.1: each
/// form-encoded before joining).
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    use base64::Engine as _;
    let value = headers.get("authorization")?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unform = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((unform(id)?, unform(secret)?))
}

async fn token_endpoint(
    State(state): State<Arc<Mutex<AuthState>>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut s = state.lock().expect("state");
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    s.grants.push(grant.clone());
    match grant.as_str() {
        "client_credentials" => {
            // RFC 6749 §4.4.2: the client MUST authenticate.
            match basic(&headers) {
                Some((id, secret)) if id == CLIENT_ID && secret == CLIENT_SECRET => {
                    s.client_auth.push("basic".into());
                    token(MACHINE_TOKEN, 3600, None)
                }
                _ => oauth_error(StatusCode::UNAUTHORIZED, "invalid_client"),
            }
        }
        "refresh_token" => {
            if form.get("client_id").map(String::as_str) != Some(CLIENT_ID) {
                return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
            }
            let Some(renewed) = form.get("refresh_token").and_then(|r| s.refresh.remove(r)) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            token(&renewed, 3600, None)
        }
        "urn:ietf:params:oauth:grant-type:device_code" => {
            if form.get("client_id").map(String::as_str) != Some(CLIENT_ID) {
                return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
            }
            let code = form.get("device_code").cloned().unwrap_or_default();
            let mut too_soon = false;
            let answer = {
                let Some(d) = s.devices.get_mut(&code) else {
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
                };
                let now = Instant::now();
                let n = d.polls.len() + 1;
                // 100 ms of slack for the scheduler.
                let early = d
                    .last_poll
                    .is_some_and(|last| now + Duration::from_millis(100) < last + d.interval);
                d.last_poll = Some(now);
                let answer = if d.issued {
                    "invalid_grant"
                } else if now >= d.expires {
                    "expired_token"
                } else if early || d.slow_down_at == Some(n) {
                    too_soon |= early;
                    d.interval += Duration::from_secs(5);
                    "slow_down"
                } else {
                    match d.decision {
                        None => "authorization_pending",
                        Some(false) => "access_denied",
                        Some(true) => {
                            d.issued = true;
                            "token"
                        }
                    }
                };
                d.polls.push((now, answer));
                answer
            };
            if too_soon {
                s.too_soon += 1;
            }
            if answer == "token" {
                s.refresh
                    .insert(DEVICE_REFRESH.to_owned(), REFRESHED_TOKEN.to_owned());
                return token(DEVICE_TOKEN, 1, Some(DEVICE_REFRESH));
            }
            oauth_error(StatusCode::BAD_REQUEST, answer)
        }
        _ => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
}

async fn decide(state: &Arc<Mutex<AuthState>>, user_code: &str, approve: bool) -> StatusCode {
    let mut s = state.lock().expect("state");
    match s.devices.values_mut().find(|d| d.user_code == user_code) {
        Some(d) => {
            d.decision = Some(approve);
            StatusCode::NO_CONTENT
        }
        None => StatusCode::NOT_FOUND,
    }
}

impl AuthServer {
    pub(crate) async fn start() -> Self {
        let state = Arc::new(Mutex::new(AuthState {
            device_lifetime: 60,
            ..Default::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        // The OpenID provider configuration (OpenID Connect Discovery 1.0 §3) of the same
        // endpoints, for an openIdConnect scheme.
        let discovery = serde_json::json!({
            "issuer": origin,
            "authorization_endpoint": format!("{origin}/authorize"),
            "token_endpoint": format!("{origin}/token"),
            "device_authorization_endpoint": format!("{origin}/device"),
            "jwks_uri": format!("{origin}/jwks"),
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "grant_types_supported": [
                "urn:ietf:params:oauth:grant-type:device_code",
                "client_credentials",
                "refresh_token"
            ]
        });
        let mirrored = discovery.clone();
        let app = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(move || async move { axum::Json(discovery) }),
            )
            // The same document under a path that is not its issuer's.
            .route(
                "/mirror/.well-known/openid-configuration",
                axum::routing::get(move || async move { axum::Json(mirrored) }),
            )
            .route("/device", post(device_endpoint))
            .route("/token", post(token_endpoint))
            .route(
                "/approve",
                post(
                    |State(s): State<Arc<Mutex<AuthState>>>,
                     Form(f): Form<HashMap<String, String>>| async move {
                        decide(&s, f.get("user_code").map_or("", String::as_str), true).await
                    },
                ),
            )
            .route(
                "/deny",
                post(
                    |State(s): State<Arc<Mutex<AuthState>>>,
                     Form(f): Form<HashMap<String, String>>| async move {
                        decide(&s, f.get("user_code").map_or("", String::as_str), false).await
                    },
                ),
            )
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            origin,
            state,
            task,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, AuthState> {
        self.state.lock().expect("state")
    }

    /// The "user" approves (or denies) the code at the verification URI.
    pub(crate) async fn decide(&self, user_code: &str, approve: bool) {
        let path = if approve { "approve" } else { "deny" };
        let status = reqwest::Client::new()
            .post(format!("{}/{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("user_code={user_code}"))
            .send()
            .await
            .expect("decide")
            .status();
        assert_eq!(status.as_u16(), 204, "{path} {user_code}");
    }

    /// The answers given to the polls of the device code whose user code is `user_code`.
    fn answers(&self, user_code: &str) -> Vec<(Instant, &'static str)> {
        self.state()
            .devices
            .values()
            .find(|d| d.user_code == user_code)
            .map(|d| d.polls.clone())
            .unwrap_or_default()
    }
}

/// The demo agent accepting only the refreshed device-flow token and the client-credentials
/// token, and a card for it declaring both OAuth 2 schemes of `auth`.
async fn agent(auth: &AuthServer, dir: &TempDir) -> (Trident, String) {
    let alice = format!("alice={REFRESHED_TOKEN}");
    let robot = format!("robot={MACHINE_TOKEN}");
    let server = Trident::serve(&[
        "--agent", "demo", "--store", "memory", "--bearer", &alice, "--bearer", &robot,
    ])
    .await;
    let a = &auth.origin;
    let card = edited_card(&server.origin, dir, |c| {
        c["securitySchemes"] = serde_json::json!({
            "people": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
                "deviceAuthorizationUrl": format!("{a}/device"),
                "tokenUrl": format!("{a}/token"),
                "scopes": {"tasks": "send and read tasks"}
            }}}},
            "machines": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
                "tokenUrl": format!("{a}/token"),
                "scopes": {"tasks": "send and read tasks"}
            }}}}
        });
        c["securityRequirements"] = serde_json::json!([
            {"schemes": {"people": {"list": ["tasks"]}}},
            {"schemes": {"machines": {"list": ["tasks"]}}}
        ]);
    })
    .await;
    (server, card)
}

/// Starts `auth login ARGS…` and returns it with the user code it printed on stderr.
pub(crate) fn start_login(
    args: &[&str],
    config: &TempDir,
) -> (std::process::Child, String, std::thread::JoinHandle<String>) {
    let mut child = command(args, config, &[]).spawn().expect("start login");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(code) = line
                .split("enter the code ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
            {
                let _ = tx.send(code.to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let code = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the login printed a user code");
    (child, code, reader)
}

/// Waits for a started login (bounded in time).
pub(crate) async fn finish(
    child: std::process::Child,
    reader: std::thread::JoinHandle<String>,
) -> (Output, String) {
    let done = tokio::task::spawn_blocking(move || {
        let out = child.wait_with_output().expect("login output");
        (out, reader.join().expect("stderr"))
    });
    tokio::time::timeout(Duration::from_secs(60), done)
        .await
        .expect("login finished in time")
        .expect("join")
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_005_007_device_code_login_then_the_token_is_refreshed_and_attached() {
    let auth = AuthServer::start().await;
    // The second poll is answered `slow_down`: the client must then wait 1 + 5 s.
    auth.state().slow_down_at = Some(2);
    let dir = TempDir::new("a2acli-oauth-device");
    let config = TempDir::new("a2acli-oauth-config");
    let (_agent, card) = agent(&auth, &dir).await;

    // Before any login the agent refuses: no credential is sent.
    for t in TRANSPORTS {
        let e = error_object(
            &run(
                &["send", "-a", &card, "--transport", t, "-o", "json", "hi"],
                &config,
                &[],
            )
            .await,
            4,
        );
        assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{t}: {e}");
        // The hint names the login the card asks for (Appendix B).
        let hint = e["hint"].as_str().unwrap_or_default();
        assert!(
            hint.contains("trident auth login -a") && hint.contains("--scheme people"),
            "{t}: {e}"
        );
    }

    // Without --client-secret the device-code scheme is chosen.
    let (child, user_code, reader) = start_login(
        &["auth", "login", "-a", &card, "--client-id", CLIENT_ID],
        &config,
    );
    // The user approves once the client has been told `authorization_pending`.
    let waited = Instant::now();
    while !auth
        .answers(&user_code)
        .iter()
        .any(|(_, a)| *a == "authorization_pending")
    {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "no pending poll"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    auth.decide(&user_code, true).await;
    let (out, err) = finish(child, reader).await;
    let shown = ok(&out);
    assert!(
        err.contains("https://auth.example/device") && err.contains(&user_code),
        "{err}"
    );
    assert_eq!(field(&shown, "Scheme"), Some("people"), "{shown}");
    assert_eq!(field(&shown, "Flow"), Some("device_code"), "{shown}");
    for secret in [DEVICE_TOKEN, DEVICE_REFRESH] {
        assert!(
            !shown.contains(secret) && !err.contains(secret),
            "{shown}{err}"
        );
    }
    let answers: Vec<&str> = auth.answers(&user_code).iter().map(|(_, a)| *a).collect();
    assert_eq!(
        answers,
        ["authorization_pending", "slow_down", "token"],
        "RFC 8628 §3.5 polling"
    );
    let polls = auth.answers(&user_code);
    let after_slow_down = polls[2].0 - polls[1].0;
    assert!(
        after_slow_down >= Duration::from_millis(5900),
        "slow_down adds 5 s to the 1 s interval: polled again after {after_slow_down:?}"
    );
    assert_eq!(auth.state().too_soon, 0, "no poll came before its interval");

    // The token file: private, in the configuration directory.
    let store = config.0.join("a2a-cli/tokens.json");
    #[cfg(unix)]
    {
        assert_eq!(mode(&store), 0o600, "{}", store.display());
        assert_eq!(mode(&config.0.join("a2a-cli")), 0o700);
    }

    // The 1 s token has expired: the next call refreshes it first (RFC 6749 §6), then sends
    // the new one; the agent accepts only that.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for t in TRANSPORTS {
        let o = run(
            &["send", "-a", &card, "--transport", t, "--debug", "hi"],
            &config,
            &[],
        )
        .await;
        let shown = ok(&o);
        assert_eq!(field(&shown, "State"), Some("COMPLETED"), "{t}: {shown}");
        let err = text(&o.stderr);
        assert!(
            err.contains("kept by auth login, scheme \"people\""),
            "{t}: {err}"
        );
        for secret in [DEVICE_TOKEN, DEVICE_REFRESH, REFRESHED_TOKEN] {
            assert!(
                !err.contains(secret) && !shown.contains(secret),
                "{t}: {err}"
            );
        }
    }
    let refreshes = auth
        .state()
        .grants
        .iter()
        .filter(|g| *g == "refresh_token")
        .count();
    assert_eq!(refreshes, 1, "refreshed once, then the new token kept");
    #[cfg(unix)]
    assert_eq!(mode(&store), 0o600, "still private after the refresh");

    // `auth status` shows what is kept, never a token.
    let status = ok(&run(&["auth", "status", "-a", &card], &config, &[]).await);
    assert_eq!(field(&status, "Scheme"), Some("people"), "{status}");
    assert!(!status.contains(REFRESHED_TOKEN), "{status}");

    // Only that agent gets it: another agent's card (no OAuth scheme) gets no credential.
    let other = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let o = run(
        &["send", "-a", &other.origin, "--debug", "hi"],
        &config,
        &[],
    )
    .await;
    ok(&o);
    assert!(
        !text(&o.stderr).contains("credential:"),
        "{}",
        text(&o.stderr)
    );

    // `auth logout` forgets it: refused again.
    ok(&run(&["auth", "logout", "-a", &card], &config, &[]).await);
    let e = error_object(
        &run(&["send", "-a", &card, "-o", "json", "hi"], &config, &[]).await,
        4,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_005_device_code_denied_or_expired_fails_with_exit_4() {
    let auth = AuthServer::start().await;
    let dir = TempDir::new("a2acli-oauth-deny");
    let config = TempDir::new("a2acli-oauth-deny-config");
    let (_agent, card) = agent(&auth, &dir).await;
    let login = [
        "auth",
        "login",
        "-a",
        &card,
        "--scheme",
        "people",
        "--client-id",
        CLIENT_ID,
        "-o",
        "json",
    ];

    // The user denies: `access_denied` ends the login.
    let (child, user_code, reader) = start_login(&login, &config);
    auth.decide(&user_code, false).await;
    let (out, _) = finish(child, reader).await;
    let e = error_object(&out, 4);
    assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("access_denied") && m.contains("test server")),
        "{e}"
    );
    assert!(
        !out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b),
        "no control sequence from the server reaches the terminal"
    );

    // Nobody approves a code that lives 2 s: `expired_token` (or the client's own count of
    // `expires_in`) ends it.
    auth.state().device_lifetime = 2;
    let (child, _, reader) = start_login(&login, &config);
    let (out, _) = finish(child, reader).await;
    let e = error_object(&out, 4);
    assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{e}");
    assert!(
        e["message"].as_str().is_some_and(|m| m.contains("expired")),
        "{e}"
    );

    // No token was kept.
    let e = error_object(
        &run(&["send", "-a", &card, "-o", "json", "hi"], &config, &[]).await,
        4,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_006_007_client_credentials_login_and_attachment() {
    let auth = AuthServer::start().await;
    let dir = TempDir::new("a2acli-oauth-cc");
    let config = TempDir::new("a2acli-oauth-cc-config");
    let (_agent, card) = agent(&auth, &dir).await;

    // A wrong secret: the server refuses the client (`invalid_client`), exit 4.
    let e = error_object(
        &run(
            &[
                "auth",
                "login",
                "-a",
                &card,
                "--client-id",
                CLIENT_ID,
                "--client-secret",
                "wrong",
                "-o",
                "json",
            ],
            &config,
            &[],
        )
        .await,
        4,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("invalid_client")),
        "{e}"
    );

    // The secret from its variable: a client-credentials scheme is chosen, the client
    // authenticates with HTTP Basic.
    let o = run(
        &["auth", "login", "-a", &card, "-o", "json"],
        &config,
        &[
            ("A2ACLI_CLIENT_ID", CLIENT_ID),
            ("A2ACLI_CLIENT_SECRET", CLIENT_SECRET),
        ],
    )
    .await;
    let shown = ok(&o);
    let v: serde_json::Value = serde_json::from_str(&shown).expect("one JSON document");
    assert_eq!(v["scheme"], "machines", "{v}");
    assert_eq!(v["flow"], "client_credentials", "{v}");
    for secret in [MACHINE_TOKEN, CLIENT_SECRET] {
        assert!(
            !shown.contains(secret) && !text(&o.stderr).contains(secret),
            "{shown}"
        );
    }
    assert_eq!(auth.state().client_auth, ["basic"]);
    let store = config.0.join("a2a-cli/tokens.json");
    #[cfg(unix)]
    assert_eq!(mode(&store), 0o600);
    let kept = std::fs::read_to_string(&store).expect("tokens");
    assert!(
        !kept.contains(CLIENT_SECRET),
        "the client secret is not kept"
    );

    // Later calls to that agent carry the token, on every binding.
    for t in TRANSPORTS {
        let shown = ok(&run(&["send", "-a", &card, "--transport", t, "hi"], &config, &[]).await);
        assert_eq!(field(&shown, "State"), Some("COMPLETED"), "{t}: {shown}");
    }
    // Over --insecure, the kept token is warned about as a flag's would be (§12.1).
    let o = run(&["send", "-a", &card, "--insecure", "hi"], &config, &[]).await;
    ok(&o);
    assert!(
        text(&o.stderr).contains("the token auth login kept goes over a connection"),
        "{}",
        text(&o.stderr)
    );
    // A flag's token wins over the kept one.
    let e = error_object(
        &run(
            &["send", "-a", &card, "--bearer", "wrong", "-o", "json", "hi"],
            &config,
            &[],
        )
        .await,
        4,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{e}");
    // The same card file, once it no longer declares the scheme, gets nothing.
    let mut edited: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&card).expect("card")).expect("card json");
    edited["securitySchemes"] = serde_json::json!({});
    edited["securityRequirements"] = serde_json::json!([]);
    std::fs::write(&card, edited.to_string()).expect("write card");
    let o = run(
        &["send", "-a", &card, "--debug", "-o", "json", "hi"],
        &config,
        &[],
    )
    .await;
    assert_eq!(
        error_object(&o, 4)["code"],
        "A2ACLI_ERR_CREDENTIALS_MISSING"
    );
    assert!(
        !text(&o.stderr).contains("credential:"),
        "{}",
        text(&o.stderr)
    );
    // Another configuration directory has no token.
    let elsewhere = TempDir::new("a2acli-oauth-cc-none");
    let e = error_object(
        &run(&["send", "-a", &card, "-o", "json", "hi"], &elsewhere, &[]).await,
        4,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{e}");
}

/// A2ACLI_OUT_007 with a token `auth login` kept (OAuth 2 client credentials): `--debug`
/// shows each exchange on the wire, on every binding (the `Authorization` header or
/// metadata among it, redacted, and the status the agent answered), and the token nowhere,
/// on stderr or stdout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_out_007_auth_004_debug_shows_the_wire_but_never_the_oauth_token() {
    let auth = AuthServer::start().await;
    let dir = TempDir::new("a2acli-oauth-debug");
    let config = TempDir::new("a2acli-oauth-debug-config");
    let (_agent, card) = agent(&auth, &dir).await;
    ok(&run(
        &["auth", "login", "-a", &card, "-o", "json"],
        &config,
        &[
            ("A2ACLI_CLIENT_ID", CLIENT_ID),
            ("A2ACLI_CLIENT_SECRET", CLIENT_SECRET),
        ],
    )
    .await);
    for t in TRANSPORTS {
        let o = run(
            &[
                "send",
                "-a",
                &card,
                "--transport",
                t,
                "--debug",
                "-o",
                "json",
                "hi",
            ],
            &config,
            &[],
        )
        .await;
        let shown = ok(&o);
        let err = text(&o.stderr);
        for secret in [MACHINE_TOKEN, CLIENT_SECRET] {
            assert!(
                !err.contains(secret) && !shown.contains(secret),
                "{t}: {secret} in\n{err}"
            );
        }
        assert!(
            err.contains("debug: credential: Authorization: Bearer [redacted] (kept by auth login"),
            "{t}: {err}"
        );
        let wire = crate::a2acli::wire_lines(&err);
        let tag = if t == "JSONRPC" { "JSON-RPC" } else { t };
        let expected = [
            format!("{tag} → authorization: [redacted]"),
            match t {
                "GRPC" => "GRPC ← grpc-status: 0 (OK)".to_owned(),
                _ => format!("{tag} ← HTTP/1.1 200 OK"),
            },
        ];
        for line in expected {
            assert!(wire.lines().any(|l| l == line), "{t}: {line} in\n{wire}");
        }
    }
}

/// A front for an agent that lets a request through only with the API key `k-123` where its
/// card's scheme puts it (the demo agent itself takes keys in a header only): the query
/// parameter `team_key` (removed before passing the request on) or the cookie `team_key`.
struct KeyFront {
    origin: String,
    /// The key each request carried (`None`: none).
    seen: Arc<Mutex<Vec<Option<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KeyFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Front {
    upstream: String,
    cookie: bool,
    http: reqwest::Client,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

async fn front(State(f): State<Front>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let key = if f.cookie {
        parts
            .headers
            .get_all("cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix("team_key=").map(str::to_owned))
    } else {
        query
            .iter()
            .find(|(k, _)| k == "team_key")
            .map(|(_, v)| v.clone())
    };
    f.seen.lock().expect("seen").push(key.clone());
    if key.as_deref() != Some("k-123") {
        return (StatusCode::UNAUTHORIZED, "no valid team_key").into_response();
    }
    let rest: Vec<(String, String)> = query.into_iter().filter(|(k, _)| k != "team_key").collect();
    let mut url = format!("{}{}", f.upstream, parts.uri.path());
    if !rest.is_empty() {
        url.push('?');
        url.push_str(
            &url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(rest)
                .finish(),
        );
    }
    let Ok(bytes) = axum::body::to_bytes(body, 16 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let mut forward = f.http.request(parts.method, url);
    for (name, value) in &parts.headers {
        if !matches!(name.as_str(), "host" | "content-length" | "cookie") {
            forward = forward.header(name, value);
        }
    }
    let Ok(answer) = forward.body(bytes).send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let mut out = axum::http::Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !matches!(name.as_str(), "content-length" | "transfer-encoding") {
            out = out.header(name, value);
        }
    }
    out.body(axum::body::Body::from_stream(answer.bytes_stream()))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

impl KeyFront {
    async fn start(upstream: &str, cookie: bool) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new().fallback(front).with_state(Front {
            upstream: upstream.to_owned(),
            cookie,
            http: reqwest::Client::new(),
            seen: seen.clone(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { origin, seen, task }
    }
}

/// The agent's card with its interfaces moved to `origin` and an API-key scheme in `place`.
async fn key_card(agent: &str, origin: &str, place: &str, dir: &TempDir) -> String {
    edited_card(agent, dir, |c| {
        for interface in c["supportedInterfaces"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            let moved = interface["url"]
                .as_str()
                .map(|u| u.replace(agent, origin))
                .unwrap_or_default();
            interface["url"] = moved.into();
        }
        c["securitySchemes"] = serde_json::json!({
            "team": {"apiKeySecurityScheme": {"location": place, "name": "team_key"}}
        });
        c["securityRequirements"] = serde_json::json!([{"schemes": {"team": {"list": []}}}]);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_001_api_key_in_a_query_parameter_or_a_cookie() {
    let agent = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let dir = TempDir::new("a2acli-apikey-query");
    let config = TempDir::new("a2acli-apikey-query-config");
    for (place, cookie) in [("query", false), ("cookie", true)] {
        let front = KeyFront::start(&agent.origin, cookie).await;
        let card = key_card(&agent.origin, &front.origin, place, &dir).await;
        for t in ["JSONRPC", "HTTP+JSON"] {
            let o = run(
                &["send", "-a", &card, "--transport", t, "--debug", "hi"],
                &config,
                &[("A2ACLI_API_KEY", "k-123")],
            )
            .await;
            let shown = ok(&o);
            assert_eq!(
                field(&shown, "State"),
                Some("COMPLETED"),
                "{place} {t}: {shown}"
            );
            let err = text(&o.stderr);
            let said = if cookie { "cookie" } else { "query parameter" };
            assert!(
                err.contains(&format!(
                    "credential: API key in {said} team_key: [redacted]"
                )),
                "{place} {t}: {err}"
            );
            assert!(!err.contains("k-123"), "{place} {t}: {err}");
            // The wire as sent: the key's place shown, its value not.
            let wire = crate::a2acli::wire_lines(&err);
            let tag = if t == "JSONRPC" { "JSON-RPC" } else { t };
            let shown = if cookie {
                wire.lines()
                    .any(|l| l == format!("{tag} → cookie: [redacted]"))
            } else {
                wire.lines().any(|l| {
                    l.starts_with(&format!("{tag} → POST http://"))
                        && l.contains("team_key=[redacted]")
                })
            };
            assert!(shown, "{place} {t}: the key's place, redacted, in\n{wire}");
            let e = error_object(
                &run(
                    &[
                        "send",
                        "-a",
                        &card,
                        "--transport",
                        t,
                        "--api-key",
                        "nope",
                        "-o",
                        "json",
                        "hi",
                    ],
                    &config,
                    &[],
                )
                .await,
                4,
            );
            assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{place} {t}: {e}");
        }
        let seen = front.seen.lock().expect("seen").clone();
        assert!(
            seen.iter()
                .all(|k| matches!(k.as_deref(), Some("k-123" | "nope"))),
            "every request carried the key in its {place}: {seen:?}"
        );
    }

    // gRPC has no query string: refused before any call, with the way out.
    let front = KeyFront::start(&agent.origin, false).await;
    let card = key_card(&agent.origin, &front.origin, "query", &dir).await;
    let e = error_object(
        &run(
            &[
                "send",
                "-a",
                &card,
                "--transport",
                "GRPC",
                "--api-key",
                "k-123",
                "-o",
                "json",
                "hi",
            ],
            &config,
            &[],
        )
        .await,
        2,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_USAGE", "{e}");
    assert!(
        e["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--transport JSONRPC")),
        "{e}"
    );

    // A failed exchange names the URL without its query: the key stays out of the error.
    let card = key_card(&agent.origin, "http://127.0.0.1:1", "query", &dir).await;
    for t in ["JSONRPC", "HTTP+JSON"] {
        let o = run(
            &[
                "send",
                "-a",
                &card,
                "--transport",
                t,
                "--api-key",
                "k-secret-9",
                "-o",
                "json",
                "hi",
            ],
            &config,
            &[],
        )
        .await;
        let e = error_object(&o, 3);
        assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE", "{t}: {e}");
        assert!(
            !text(&o.stdout).contains("k-secret-9") && !text(&o.stderr).contains("k-secret-9"),
            "{t}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_001_api_key_in_a_query_parameter_on_a2a_0_3() {
    // An agent that speaks only 0.3, behind the front; its (v0.3) card says `in: query`.
    let agent =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--protocols", "0.3"]).await;
    let dir = TempDir::new("a2acli-apikey-v03");
    let config = TempDir::new("a2acli-apikey-v03-config");
    let front = KeyFront::start(&agent.origin, false).await;
    let url = format!("{}/.well-known/agent-card.json", agent.origin);
    let text_card = reqwest::get(&url)
        .await
        .expect("card")
        .text()
        .await
        .expect("card text");
    let mut card: serde_json::Value =
        serde_json::from_str(&text_card.replace(&agent.origin, &front.origin)).expect("card json");
    card["securitySchemes"] =
        serde_json::json!({"team": {"type": "apiKey", "in": "query", "name": "team_key"}});
    card["security"] = serde_json::json!([{"team": []}]);
    let path = dir.0.join("card-v03.json");
    std::fs::write(&path, card.to_string()).expect("write card");
    let card = path.display().to_string();
    for t in ["JSONRPC", "HTTP+JSON"] {
        let shown = ok(&run(
            &[
                "send",
                "-a",
                &card,
                "--a2a-version",
                "0.3",
                "--transport",
                t,
                "--api-key",
                "k-123",
                "hi",
            ],
            &config,
            &[],
        )
        .await);
        assert_eq!(field(&shown, "State"), Some("COMPLETED"), "{t}: {shown}");
        let e = error_object(
            &run(
                &[
                    "send",
                    "-a",
                    &card,
                    "--a2a-version",
                    "0.3",
                    "--transport",
                    t,
                    "--api-key",
                    "nope",
                    "-o",
                    "json",
                    "hi",
                ],
                &config,
                &[],
            )
            .await,
            4,
        );
        assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{t}: {e}");
    }
    let seen = front.seen.lock().expect("seen").clone();
    assert!(
        !seen.is_empty()
            && seen
                .iter()
                .all(|k| matches!(k.as_deref(), Some("k-123" | "nope"))),
        "every request carried the key in its query: {seen:?}"
    );
}
