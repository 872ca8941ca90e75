//! Tier 3 a2a-cli rows, in the style of `a2acli.rs` (each test named after the rows it
//! checks, the real binary against a live agent, on all three bindings): in-task
//! `AUTH_REQUIRED` resolution (`A2ACLI_AUTH_011`) and catalog resolution
//! (`A2ACLI_CARD_GET_005`).

use std::process::Output;

use trident_proto as pb;

use crate::a2acli_chat::Tmux;
use crate::process::{Run, TempDir, Trident, field, ok, stderr, stdout};

/// The bindings as `--transport` names them (the card's names).
const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

async fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    Run::new(args).envs(env.iter().copied()).output().await
}

/// The credential the calendar agent accepts.
const CREDENTIAL: &str = "cal-token-7f3a";

/// An `--exec` agent that needs authorization mid-task: a new task pauses at `AUTH_REQUIRED`
/// with a status message naming the scheme (`calendar`) and scopes it needs; a follow-up
/// carrying [`CREDENTIAL`] for that scheme in the tool's in-band form completes it with an
/// artifact; any other follow-up asks again.
fn calendar_agent(dir: &TempDir) -> String {
    calendar_agent_accepting(dir, CREDENTIAL)
}

/// [`calendar_agent`], accepting `credential` instead of [`CREDENTIAL`].
fn calendar_agent_accepting(dir: &TempDir, credential: &str) -> String {
    let path = dir.0.join("calendar.sh");
    let script = format!(
        r#"#!/bin/sh
IFS= read -r request
answered=no
case "$request" in
  *'"task":null'*) answered=new ;;
  *'"credentials":"{credential}"'*) case "$request" in *'"scheme":"calendar"'*) answered=yes ;; esac ;;
esac
case "$answered" in
  new)
    echo '{{"type":"auth-required","parts":[{{"text":"Sign in to the calendar"}},{{"data":{{"securityScheme":"calendar","scopes":["calendar.read"]}}}}]}}' ;;
  yes)
    echo '{{"type":"artifact","id":"agenda","name":"agenda","text":"3 meetings today"}}'
    echo '{{"type":"completed"}}' ;;
  *)
    echo '{{"type":"auth-required","text":"That credential was not accepted"}}' ;;
esac
"#
    );
    std::fs::write(&path, script).expect("write the agent");
    format!("sh {}", path.display())
}

fn task_of(resp: pb::SendMessageResponse) -> pb::Task {
    match resp.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

#[track_caller]
fn no_credential_shown(o: &Output) {
    let all = format!("{}{}", stdout(o), stderr(o));
    assert!(!all.contains(CREDENTIAL), "the credential is shown:\n{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_011_auth_required_is_resumed_with_a_credential() {
    let dir = TempDir::new("a2acli-in-task-auth");
    let agent = calendar_agent(&dir);
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // Blocking, the credential from the flag: paused, answered, completed; --verbose
        // shows the history (the follow-up among it) and --debug every request, yet the
        // credential appears nowhere.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--task-credential",
                CREDENTIAL,
                "--verbose",
                "--debug",
                "what is on today?",
            ],
            &[],
        )
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        assert!(text.contains("3 meetings today"), "{t}: {text}");
        assert!(
            text.contains("[redacted]"),
            "{t}: the follow-up in the history: {text}"
        );
        let err = stderr(&o);
        assert!(
            err.contains(
                "needs authorization: Sign in to the calendar; scheme \"calendar\"; scopes \
                 calendar.read"
            ) && err.contains("resuming task")
                && err.contains("--task-credential"),
            "{t}: {err}"
        );
        assert!(!err.contains("warning:"), "{t}: {err}");
        no_credential_shown(&o);

        // -o json, the credential from its variable: one document, the completed task.
        let o = run(
            &["send", "-a", a, "--transport", t, "-o", "json", "agenda?"],
            &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
        )
        .await;
        let task = task_of(serde_json::from_str(&ok(&o)).expect("one document"));
        assert_eq!(
            task.state(),
            pb::TaskState::Completed,
            "{t}: {}",
            stderr(&o)
        );
        assert_eq!(task.artifacts.len(), 1, "{t}");
        no_credential_shown(&o);

        // Streaming, JSONL: the pause and then the completion, in one run.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--stream",
                "-o",
                "json",
                "--task-credential",
                CREDENTIAL,
                "agenda?",
            ],
            &[],
        )
        .await;
        let out = ok(&o);
        let states: Vec<String> = out
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSONL line"))
            .filter_map(|v| {
                v["statusUpdate"]["status"]["state"]
                    .as_str()
                    .or(v["task"]["status"]["state"].as_str())
                    .map(str::to_owned)
            })
            .collect();
        let paused = states.iter().position(|s| s == "TASK_STATE_AUTH_REQUIRED");
        let done = states.iter().position(|s| s == "TASK_STATE_COMPLETED");
        assert!(
            paused.is_some() && done.is_some() && paused < done,
            "{t}: {states:?}\n{out}"
        );
        assert!(out.contains("3 meetings today"), "{t}: {out}");
        no_credential_shown(&o);

        // Streaming, text: the summary ends completed.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--stream",
                "--task-credential",
                CREDENTIAL,
                "agenda?",
            ],
            &[],
        )
        .await;
        let out = ok(&o);
        assert_eq!(
            out.lines().rev().find_map(|l| l.strip_prefix("State: ")),
            Some("COMPLETED"),
            "{t}: {out}"
        );
        no_credential_shown(&o);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_011_without_a_credential_the_pause_is_reported_and_resumable() {
    let dir = TempDir::new("a2acli-in-task-auth");
    let agent = calendar_agent(&dir);
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        for stream in [false, true] {
            // No flag, no kept token, no terminal: reported as before, with the way on.
            let mut args = vec!["send", "-a", a, "--transport", t];
            if stream {
                args.push("--stream");
            }
            args.push("agenda?");
            let o = run(&args, &[]).await;
            let text = ok(&o);
            // (A stream's text ends with the summary: its last State line.)
            assert_eq!(
                text.lines().rev().find_map(|l| l.strip_prefix("State: ")),
                Some("AUTH_REQUIRED"),
                "{t}: {text}"
            );
            let id = field(&text, "Task ID").expect("Task ID").to_owned();
            let resume = field(&text, "Resume").expect("Resume").to_owned();
            assert!(
                resume.contains("A2ACLI_TASK_CREDENTIAL=") && resume.contains(&id),
                "{t}: {resume}"
            );
            let err = stderr(&o);
            assert!(
                err.starts_with("warning: ") && err.contains("AUTH_REQUIRED"),
                "{t}: {err}"
            );
            // The Resume line, followed: the credential alone answers the waiting task.
            let o = run(
                &["send", "-a", a, "--transport", t, "--task-id", &id],
                &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
            )
            .await;
            let text = ok(&o);
            assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
            assert_eq!(field(&text, "Task ID"), Some(id.as_str()), "{t}");
            no_credential_shown(&o);
        }

        // A credential the agent does not accept is sent once, then the pause is reported.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--task-credential",
                "wrong",
                "agenda?",
            ],
            &[],
        )
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("AUTH_REQUIRED"), "{t}: {text}");
        let err = stderr(&o);
        assert!(
            err.contains("did not accept the credential") && err.matches("resuming").count() == 1,
            "{t}: {err}"
        );
        // --async returns at once: nothing is answered.
        let o = run(
            &[
                "send",
                "-a",
                a,
                "--transport",
                t,
                "--async",
                "--task-credential",
                CREDENTIAL,
                "agenda?",
            ],
            &[],
        )
        .await;
        let text = ok(&o);
        assert!(!stderr(&o).contains("resuming"), "{t}: {}", stderr(&o));
        assert_ne!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        // --task-credential alone on a task that is not waiting for it is a usage error.
        let o = run(
            &["send", "-a", a, "--transport", t, "-o", "json", "agenda?"],
            &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
        )
        .await;
        let done = task_of(serde_json::from_str(&ok(&o)).expect("one document"));
        let o = run(
            &["send", "-a", a, "--transport", t, "--task-id", &done.id],
            &[("A2ACLI_TASK_CREDENTIAL", CREDENTIAL)],
        )
        .await;
        assert_eq!(o.status.code(), Some(2), "{t}: {}", stderr(&o));
        assert!(stderr(&o).contains("not waiting for authorization"), "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_011_on_a_terminal_the_credential_is_asked_for_unechoed() {
    let dir = TempDir::new("a2acli-in-task-auth");
    let agent = calendar_agent(&dir);
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    let a = server.origin.clone();
    tokio::task::spawn_blocking(move || {
        for t in TRANSPORTS {
            let Some(tmux) = Tmux::start(&["send", "-a", &a, "--transport", t, "agenda?"]) else {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "tmux is not installed: CI must exercise the prompt"
                );
                eprintln!("tmux is not installed: the prompt is not exercised");
                return;
            };
            let asked = |n: usize| move |s: &str| s.matches("credential for task").count() == n;
            tmux.until("the prompt", asked(1));
            // A credential the agent refuses: it asks again, and so does the tool.
            tmux.line("bad-credential-x");
            tmux.until("the second prompt", asked(2));
            tmux.line(CREDENTIAL);
            let screen = tmux.until("the end", |s| s.contains("EXIT="));
            assert!(screen.contains("EXIT=0"), "{t}: {screen}");
            assert_eq!(
                screen.lines().rev().find_map(|l| l.strip_prefix("State: ")),
                Some("COMPLETED"),
                "{t}: {screen}"
            );
            assert!(
                screen.contains("Sign in to the calendar")
                    && screen.contains("did not accept the credential"),
                "{t}: {screen}"
            );
            // Nothing typed was echoed.
            assert!(
                !screen.contains("bad-credential-x") && !screen.contains(CREDENTIAL),
                "{t}: {screen}"
            );
        }
    })
    .await
    .expect("the terminals");
}

/// `A2ACLI_AUTH_011`'s second source: the token `auth login` kept for the scheme the agent
/// names. The real `auth login` (client credentials) against the test's authorization server
/// keeps the token it issued in a private store (its own `XDG_CONFIG_HOME` and `HOME`); a
/// `send` with no `--task-credential` and no terminal then answers the pause with that token,
/// which the agent checks, on each binding, and never shows it. A token kept for another
/// scheme of the same card is not sent for the one named: the pause is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_011_the_token_auth_login_kept_resolves_the_pause() {
    use crate::a2acli_auth::{AuthServer, CLIENT_ID, CLIENT_SECRET, MACHINE_TOKEN, edited_card};

    let auth = AuthServer::start().await;
    let dir = TempDir::new("a2acli-in-task-kept");
    // The agent completes only with the token the authorization server issues.
    let agent = calendar_agent_accepting(&dir, MACHINE_TOKEN);
    let server = Trident::serve(&["--exec", &agent, "--store", "memory"]).await;
    // Its card, as a file, declares two client-credentials schemes of that server: `calendar`,
    // the one the agent names when it pauses, and `machines`.
    let token_url = format!("{}/token", auth.origin);
    let card = edited_card(&server.origin, &dir, |c| {
        let scheme = serde_json::json!({"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": token_url,
            "scopes": {"calendar.read": "read the calendar"}
        }}}});
        c["securitySchemes"] = serde_json::json!({"calendar": scheme, "machines": scheme});
    })
    .await;
    let card = card.as_str();

    #[track_caller]
    fn token_not_shown(o: &Output) {
        let all = format!("{}{}", stdout(o), stderr(o));
        assert!(!all.contains(MACHINE_TOKEN), "the token is shown:\n{all}");
    }
    // `auth login --scheme SCHEME` with the configuration directory `home`: the token is kept
    // there, for SCHEME.
    async fn login(card: &str, home: &TempDir, scheme: &str) {
        let dir = home.0.to_str().expect("a UTF-8 path");
        let o = run(
            &[
                "auth", "login", "-a", card, "--scheme", scheme, "-o", "json",
            ],
            &[
                ("XDG_CONFIG_HOME", dir),
                ("HOME", dir),
                ("A2ACLI_CLIENT_ID", CLIENT_ID),
                ("A2ACLI_CLIENT_SECRET", CLIENT_SECRET),
            ],
        )
        .await;
        let v: serde_json::Value = serde_json::from_str(&ok(&o)).expect("one JSON document");
        assert_eq!(v["scheme"], scheme, "{v}");
        assert_eq!(v["flow"], "client_credentials", "{v}");
        token_not_shown(&o);
        let kept = std::fs::read_to_string(home.0.join("a2a-cli/tokens.json")).expect("the store");
        let kept: serde_json::Value = serde_json::from_str(&kept).expect("the store's JSON");
        let entries = kept["tokens"].as_array().expect("tokens");
        assert_eq!(entries.len(), 1, "{kept}");
        assert_eq!(entries[0]["scheme"], scheme, "{kept}");
        assert_eq!(entries[0]["accessToken"], MACHINE_TOKEN, "{kept}");
    }

    // Logged in to the scheme the agent names: the pause is answered with the kept token.
    let home = TempDir::new("a2acli-in-task-kept-home");
    login(card, &home, "calendar").await;
    let dir = home.0.to_str().expect("a UTF-8 path");
    let env = [("XDG_CONFIG_HOME", dir), ("HOME", dir)];
    for t in TRANSPORTS {
        // Blocking, --verbose and --debug: paused, answered, completed; the token nowhere.
        let o = run(
            &[
                "send",
                "-a",
                card,
                "--transport",
                t,
                "--verbose",
                "--debug",
                "what is on today?",
            ],
            &env,
        )
        .await;
        let text = ok(&o);
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{t}: {text}");
        assert!(text.contains("3 meetings today"), "{t}: {text}");
        assert!(
            text.contains("[redacted]"),
            "{t}: the follow-up in the history: {text}"
        );
        let err = stderr(&o);
        assert!(
            err.contains("needs authorization: Sign in to the calendar; scheme \"calendar\"")
                && err.contains("with the credential from the token auth login kept"),
            "{t}: {err}"
        );
        assert_eq!(err.matches("resuming task").count(), 1, "{t}: {err}");
        assert!(!err.contains("warning:"), "{t}: {err}");
        token_not_shown(&o);

        // Streaming, JSONL: the pause, then the completion.
        let o = run(
            &[
                "send",
                "-a",
                card,
                "--transport",
                t,
                "--stream",
                "-o",
                "json",
                "agenda?",
            ],
            &env,
        )
        .await;
        let out = ok(&o);
        let states: Vec<String> = out
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSONL line"))
            .filter_map(|v| {
                v["statusUpdate"]["status"]["state"]
                    .as_str()
                    .or(v["task"]["status"]["state"].as_str())
                    .map(str::to_owned)
            })
            .collect();
        let paused = states.iter().position(|s| s == "TASK_STATE_AUTH_REQUIRED");
        let done = states.iter().position(|s| s == "TASK_STATE_COMPLETED");
        assert!(
            paused.is_some() && done.is_some() && paused < done,
            "{t}: {states:?}\n{out}"
        );
        assert!(out.contains("3 meetings today"), "{t}: {out}");
        assert!(
            stderr(&o).contains("the token auth login kept"),
            "{t}: {}",
            stderr(&o)
        );
        token_not_shown(&o);
    }

    // Logged in to the card's other scheme only: that token is not sent for `calendar` (the
    // agent would take it: the same value), so the pause is reported, exit 0, resumable.
    let other = TempDir::new("a2acli-in-task-kept-other");
    login(card, &other, "machines").await;
    let dir = other.0.to_str().expect("a UTF-8 path");
    let env = [("XDG_CONFIG_HOME", dir), ("HOME", dir)];
    for t in TRANSPORTS {
        for stream in [false, true] {
            let mut args = vec!["send", "-a", card, "--transport", t];
            if stream {
                args.push("--stream");
            }
            args.push("agenda?");
            let o = run(&args, &env).await;
            let text = ok(&o);
            assert_eq!(
                text.lines().rev().find_map(|l| l.strip_prefix("State: ")),
                Some("AUTH_REQUIRED"),
                "{t}: {text}"
            );
            let id = field(&text, "Task ID").expect("Task ID");
            let resume = field(&text, "Resume").expect("Resume");
            assert!(
                resume.contains("A2ACLI_TASK_CREDENTIAL=") && resume.contains(id),
                "{t}: {resume}"
            );
            let err = stderr(&o);
            assert!(
                err.starts_with("warning: ") && err.contains("AUTH_REQUIRED"),
                "{t}: {err}"
            );
            assert!(!err.contains("resuming"), "{t}: {err}");
            token_not_shown(&o);
        }
    }
}

/// The catalog entry type of an A2A Agent Card.
const CARD_TYPE: &str = "application/a2a-agent-card+json";

/// The `error` of a failed run with `-o json`, after checking its exit status.
#[track_caller]
fn error_of(o: &Output, exit: i32) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(exit), "{}{}", stdout(o), stderr(o));
    let v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("one JSON document");
    v["error"].clone()
}

/// Serves `catalog` at `/.well-known/ai-catalog.json` and `card` at `/cards/demo.json`, on
/// loopback; returns `127.0.0.1:PORT`.
async fn catalog_server(catalog: serde_json::Value, card: serde_json::Value) -> String {
    let app = axum::Router::new()
        .route(
            "/.well-known/ai-catalog.json",
            axum::routing::get(move || async move { axum::Json(catalog) }),
        )
        .route(
            "/cards/demo.json",
            axum::routing::get(move || async move { axum::Json(card) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_card_get_005_catalog_entries_resolve_to_cards_on_every_binding() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let a = server.origin.as_str();
    let card_url = format!("{a}/.well-known/agent-card.json");
    let card: serde_json::Value = reqwest::get(&card_url)
        .await
        .expect("the card")
        .json()
        .await
        .expect("card JSON");
    let name = card["name"].as_str().expect("a name").to_owned();
    let dir = TempDir::new("a2acli-catalog");
    std::fs::write(dir.0.join("demo-card.json"), card.to_string()).expect("write");
    // An AI Catalog file: an entry of another type under the same name first (never taken),
    // an entry by URL, one by a path relative to the catalog, one with the card inline.
    let catalog = serde_json::json!({
        "specVersion": "1.0",
        "host": {"displayName": "Trident tests"},
        "entries": [
            {"identifier": "urn:air:test:a2a:demo", "type": "application/mcp-server-card+json",
             "url": "http://127.0.0.1:9/not-a-card"},
            {"identifier": "urn:air:test:a2a:demo", "type": CARD_TYPE, "url": card_url},
            {"identifier": "urn:air:test:a2a:copy", "type": CARD_TYPE,
             "displayName": "Demo Copy", "url": "demo-card.json"},
            {"identifier": "urn:air:test:a2a:inline", "type": CARD_TYPE, "data": card},
        ]
    });
    let file = dir.0.join("catalog.json");
    std::fs::write(&file, catalog.to_string()).expect("write");
    let file = file.display().to_string();
    for entry in [
        "urn:air:test:a2a:demo",
        "demo copy",
        "urn:air:test:a2a:inline",
    ] {
        let reference = format!("catalog:{entry}");
        let o = run(&["card", "get", "-a", &reference, "--catalog", &file], &[]).await;
        assert_eq!(field(&ok(&o), "Name"), Some(name.as_str()), "{entry}");
        for t in TRANSPORTS {
            let o = run(
                &[
                    "send",
                    "-a",
                    &reference,
                    "--catalog",
                    &file,
                    "--transport",
                    t,
                    "hello",
                ],
                &[],
            )
            .await;
            let text = ok(&o);
            assert_eq!(
                field(&text, "State"),
                Some("COMPLETED"),
                "{entry} {t}: {text}"
            );
        }
    }

    // A catalog served over HTTP, found at a host's well-known URI (A2ACLI_CATALOG), whose
    // entry's URL is relative to it; the agent given positionally.
    let web = serde_json::json!({
        "specVersion": "1.0",
        "entries": [{"identifier": "urn:air:test:a2a:web", "type": CARD_TYPE,
                     "url": "/cards/demo.json"}]
    });
    let host = catalog_server(web, card.clone()).await;
    let env = [("A2ACLI_CATALOG", host.as_str())];
    let o = run(&["card", "get", "catalog:urn:air:test:a2a:web"], &env).await;
    assert_eq!(field(&ok(&o), "Name"), Some(name.as_str()));
    for t in TRANSPORTS {
        let o = run(
            &[
                "send",
                "catalog:urn:air:test:a2a:web",
                "hello",
                "--transport",
                t,
                "-o",
                "json",
            ],
            &env,
        )
        .await;
        let task = task_of(serde_json::from_str(&ok(&o)).expect("one document"));
        assert_eq!(task.state(), pb::TaskState::Completed, "{t}");
        // task get through the same entry finds the task.
        let o = run(
            &[
                "task",
                "get",
                "-a",
                "catalog:urn:air:test:a2a:web",
                "--transport",
                t,
                &task.id,
            ],
            &env,
        )
        .await;
        assert_eq!(field(&ok(&o), "State"), Some("COMPLETED"), "{t}");
    }

    // An unknown entry: A2ACLI_ERR_CARD_NOT_FOUND, exit 3, the hint naming the agents there.
    let o = run(
        &[
            "send",
            "-a",
            "catalog:nobody",
            "--catalog",
            &file,
            "-o",
            "json",
            "hi",
        ],
        &[],
    )
    .await;
    let e = error_of(&o, 3);
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_NOT_FOUND", "{e}");
    assert!(
        e["hint"]
            .as_str()
            .is_some_and(|h| h.contains("urn:air:test:a2a:copy")),
        "{e}"
    );
    // A version of a known entry the catalog does not list: exit 3 too.
    let o = run(
        &[
            "card",
            "get",
            "-a",
            "catalog:urn:air:test:a2a:demo@9",
            "--catalog",
            &file,
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(error_of(&o, 3)["code"], "A2ACLI_ERR_CARD_NOT_FOUND");
    // No catalog to look in: a usage error, exit 2.
    let o = run(
        &[
            "card",
            "get",
            "-a",
            "catalog:urn:air:test:a2a:demo",
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(error_of(&o, 2)["code"], "A2ACLI_ERR_USAGE");
    // A catalog that is not there (a file, a host without one): exit 3.
    let missing = dir.0.join("nothing.json").display().to_string();
    for catalog in [missing.as_str(), a] {
        let o = run(
            &[
                "card",
                "get",
                "-a",
                "catalog:x",
                "--catalog",
                catalog,
                "-o",
                "json",
            ],
            &[],
        )
        .await;
        assert_eq!(
            error_of(&o, 3)["code"],
            "A2ACLI_ERR_CARD_NOT_FOUND",
            "{catalog}"
        );
    }
    // A catalog that is not one: A2ACLI_ERR_CARD_INVALID, exit 1.
    let bad = dir.0.join("bad.json");
    std::fs::write(&bad, "[1, 2, 3]").expect("write");
    let o = run(
        &[
            "card",
            "get",
            "-a",
            "catalog:x",
            "--catalog",
            &bad.display().to_string(),
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(error_of(&o, 1)["code"], "A2ACLI_ERR_CARD_INVALID");
}
