//! More a2a-cli rows, in the style of `a2acli.rs` (each test named after the rows it checks,
//! the real binary against a live agent): configuration precedence and `config show`
//! (`A2ACLI_CONFIG_002`), no credential on the card fetch (`A2ACLI_AUTH_008`), `demo-server`
//! (`A2ACLI_DEMO_SERVER_001`), `task download` (`A2ACLI_DOWNLOAD_001`). Each run has `HOME`
//! and `XDG_CONFIG_HOME` in a temporary directory, so no file of the real user is read.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::process::{Run, TempDir, Trident, field, ok, stderr, stdout};

/// Runs `trident ARGS…` in `cwd` with `home` as `HOME` (and `home/.config` as
/// `XDG_CONFIG_HOME`), and `env`.
async fn run_in(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Run::new(args)
        .current_dir(cwd)
        .envs([
            ("HOME", home.to_path_buf()),
            ("XDG_CONFIG_HOME", home.join(".config")),
        ])
        .envs(env.iter().copied())
        .output()
        .await
}

/// `config show -o json`'s entry for `name`.
#[track_caller]
fn setting(shown: &serde_json::Value, name: &str) -> serde_json::Value {
    shown
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no setting {name} in {shown}"))
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_config_002_flag_env_local_global_default_and_config_show() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let origin = server.origin.as_str();
    let dir = TempDir::new("a2acli-config");
    let home = dir.0.join("home");
    let project = dir.0.join("project");
    let cwd = project.join("sub").join("dir");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    let global = home.join(".config").join("a2a-cli").join(".env");
    let local = project.join(".env");
    // The global file names the agent, a transport, a format, a timeout and a credential.
    write(
        &global,
        &format!(
            "# every agent\nA2ACLI_AGENT_CARD={origin}\nA2ACLI_TRANSPORT=GRPC\n\
             A2ACLI_OUTPUT=json\nA2ACLI_TIMEOUT=7s\nA2ACLI_BEARER=global-secret\n"
        ),
    );
    chmod(&global, 0o600);
    // The local one (found walking up from the working directory) overrides two of them,
    // and asks for what only a flag may ask for.
    write(
        &local,
        "DATABASE_URL=postgres://not-ours\nA2ACLI_OUTPUT=text\nexport A2ACLI_TIMEOUT=\"9s\"\n\
         A2ACLI_STREAM=true\n",
    );

    // config show: each setting with its value and source.
    let shown = ok(&run_in(
        &cwd,
        &home,
        &[
            "config",
            "show",
            "-o",
            "json",
            "--svc-param",
            "x-trace:hush",
        ],
        &[("A2ACLI_A2A_VERSION", "1.0")],
    )
    .await);
    assert!(
        !shown.contains("hush") && !shown.contains("global-secret"),
        "{shown}"
    );
    let shown: serde_json::Value =
        serde_json::from_str(&shown).expect("config show -o json is one JSON document");
    let svc = setting(&shown, "svc-param");
    assert_eq!(
        (&svc["value"], &svc["source"]),
        (&"[redacted]".into(), &"flag".into())
    );
    let global_path = global.display().to_string();
    let local_path = local.display().to_string();
    let card = setting(&shown, "agent-card");
    assert_eq!(card["value"], origin, "{shown}");
    assert_eq!(card["source"], "global-file");
    assert_eq!(card["path"], global_path.as_str());
    assert_eq!(card["envVar"], "A2ACLI_AGENT_CARD");
    assert_eq!(setting(&shown, "transport")["value"], "GRPC");
    assert_eq!(setting(&shown, "transport")["source"], "global-file");
    let timeout = setting(&shown, "timeout");
    assert_eq!(
        (&timeout["value"], &timeout["source"], &timeout["path"]),
        (
            &"9s".into(),
            &"local-file".into(),
            &local_path.as_str().into()
        ),
        "local over global: {shown}"
    );
    assert_eq!(setting(&shown, "output")["source"], "flag");
    assert_eq!(setting(&shown, "output")["value"], "json");
    assert_eq!(setting(&shown, "a2a-version")["source"], "env");
    assert_eq!(setting(&shown, "a2a-version")["value"], "1.0");
    let bearer = setting(&shown, "bearer");
    assert_eq!(
        (&bearer["value"], &bearer["source"]),
        (&"[redacted]".into(), &"global-file".into())
    );
    assert_eq!(setting(&shown, "api-key")["value"], "(unset)");
    assert_eq!(setting(&shown, "api-key")["source"], "default");
    assert_eq!(setting(&shown, "verbose")["source"], "default");
    assert!(
        shown.as_array().is_some_and(|all| all
            .iter()
            .all(|s| s["name"] != "stream" && s["name"] != "config")),
        "--stream and --config come from the command line only: {shown}"
    );

    // The same in text: a table, the file named, the credential never shown.
    let text = ok(&run_in(
        &cwd,
        &home,
        &["config", "show"],
        &[("A2ACLI_TIMEOUT", "11s")],
    )
    .await);
    assert!(!text.contains("global-secret"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} line in {text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(line("SETTING"), ["SETTING", "VALUE", "SOURCE"]);
    assert_eq!(line("timeout"), ["timeout", "11s", "env"], "env over files");
    assert_eq!(
        line("output"),
        [
            "output".to_owned(),
            "text".to_owned(),
            "local-file".to_owned(),
            format!("({local_path})")
        ]
    );
    assert_eq!(line("bearer")[1], "[redacted]");
    assert_eq!(line("a2a-version"), ["a2a-version", "auto", "default"]);
    assert_eq!(line("timeout"), ["timeout", "11s", "env"]);

    // The commands use what config show says: the global card and transport, the local
    // text output; A2ACLI_STREAM in a file is ignored (send -o json prints one document).
    let card_text = ok(&run_in(&cwd, &home, &["card", "get"], &[]).await);
    assert_eq!(field(&card_text, "Name"), Some("Trident demo agent"));
    assert!(
        field(&card_text, "Selected Transport").is_some_and(|t| t.starts_with("GRPC")),
        "{card_text}"
    );
    let flag_wins = ok(&run_in(&cwd, &home, &["card", "get", "--transport", "JSONRPC"], &[]).await);
    assert!(
        field(&flag_wins, "Selected Transport").is_some_and(|t| t.starts_with("JSONRPC")),
        "{flag_wins}"
    );
    let env_wins = ok(&run_in(&cwd, &home, &["card", "get"], &[("A2ACLI_OUTPUT", "json")]).await);
    let card: serde_json::Value = serde_json::from_str(&env_wins).expect("env over local: JSON");
    assert_eq!(card["name"], "Trident demo agent");
    let sent = ok(&run_in(&cwd, &home, &["send", "-o", "json", "hello"], &[]).await);
    assert_eq!(sent.trim().lines().count(), 1, "not streamed: {sent}");
    let sent: serde_json::Value = serde_json::from_str(&sent).expect("one document");
    assert_eq!(
        sent["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );

    // A setting only some commands have, from a file: send's --async.
    write(&local, "A2ACLI_ASYNC=true\nA2ACLI_OUTPUT=text\n");
    let started = ok(&run_in(&cwd, &home, &["send", "slow"], &[]).await);
    let id = field(&started, "Task ID").expect("Task ID").to_owned();
    assert!(field(&started, "Poll").is_some(), "{started}");
    ok(&run_in(&cwd, &home, &["task", "cancel", &id], &[]).await);

    // --config names the file read in place of the local .env: settings for one agent.
    let agent_file = dir.0.join("agents").join("demo-rest.env");
    write(
        &agent_file,
        "A2ACLI_TRANSPORT=HTTP+JSON\nA2ACLI_OUTPUT=text\n",
    );
    let scoped = ok(&run_in(
        &cwd,
        &home,
        &[
            "card",
            "get",
            "--config",
            agent_file.to_str().expect("utf-8 path"),
        ],
        &[],
    )
    .await);
    assert!(
        field(&scoped, "Selected Transport").is_some_and(|t| t.starts_with("HTTP+JSON")),
        "{scoped}"
    );
    let shown: serde_json::Value = serde_json::from_str(&ok(&run_in(
        &cwd,
        &home,
        &[
            "config",
            "show",
            "-o",
            "json",
            "--config",
            agent_file.to_str().expect("utf-8 path"),
        ],
        &[],
    )
    .await))
    .expect("one JSON document");
    assert_eq!(
        setting(&shown, "transport")["path"],
        agent_file.display().to_string().as_str()
    );
    // The local .env is not read then: the timeout is the global one.
    assert_eq!(setting(&shown, "timeout")["source"], "global-file");

    // Without any file: the built-in defaults.
    std::fs::remove_file(&local).expect("rm");
    std::fs::remove_file(&global).expect("rm");
    let shown: serde_json::Value = serde_json::from_str(&ok(&run_in(
        &cwd,
        &home,
        &["config", "show", "-o", "json"],
        &[],
    )
    .await))
    .expect("one JSON document");
    assert_eq!(setting(&shown, "agent-card")["source"], "default");
    assert_eq!(setting(&shown, "agent-card")["value"], "(unset)");
    assert_eq!(setting(&shown, "output")["source"], "flag");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_config_002_files_are_checked_and_secrets_kept_private() {
    let dir = TempDir::new("a2acli-config-check");
    let home = dir.0.join("home");
    let cwd = dir.0.join("work");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    let global = home.join(".config").join("a2a-cli").join(".env");

    // A credential in a file others can read: used, and warned about.
    write(&global, "A2ACLI_BEARER=shh\n");
    chmod(&global, 0o644);
    let shown = run_in(&cwd, &home, &["config", "show"], &[]).await;
    ok(&shown);
    assert!(
        stderr(&shown).contains("readable by other users") && stderr(&shown).contains("chmod 600"),
        "{}",
        stderr(&shown)
    );
    assert!(!stdout(&shown).contains("shh") && !stderr(&shown).contains("shh"));
    chmod(&global, 0o600);
    let private = run_in(&cwd, &home, &["config", "show"], &[]).await;
    ok(&private);
    assert!(stderr(&private).is_empty(), "{}", stderr(&private));

    // A malformed line is a usage error naming the file and line.
    write(&cwd.join(".env"), "A2ACLI_OUTPUT=json\nnot a setting\n");
    let bad = run_in(&cwd, &home, &["config", "show", "-o", "json"], &[]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let error: serde_json::Value = serde_json::from_str(&stdout(&bad)).expect("error object");
    assert_eq!(error["error"]["code"], "A2ACLI_ERR_USAGE");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(".env:2")),
        "{error}"
    );
    // A switch must be a boolean.
    write(&cwd.join(".env"), "A2ACLI_VERBOSE=maybe\n");
    let bad = run_in(&cwd, &home, &["config", "show"], &[]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("A2ACLI_VERBOSE"), "{}", stderr(&bad));
    write(&cwd.join(".env"), "A2ACLI_VERBOSE=yes\n");
    let shown: serde_json::Value = serde_json::from_str(&ok(&run_in(
        &cwd,
        &home,
        &["config", "show", "-o", "json"],
        &[],
    )
    .await))
    .expect("one JSON document");
    assert_eq!(setting(&shown, "verbose")["value"], "true");
    assert_eq!(setting(&shown, "verbose")["source"], "local-file");
}

/// Serves `card` at `/.well-known/agent-card.json` on a free port and keeps the headers of
/// every request it gets; returns them and the origin.
async fn card_recorder(
    card: serde_json::Value,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<axum::http::HeaderMap>>>,
    String,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let kept = kept.clone();
            let card = card.clone();
            async move {
                kept.lock().expect("lock").push(headers);
                axum::Json(card)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (seen, format!("http://{addr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_008_the_card_fetch_presents_no_credential() {
    let dir = TempDir::new("a2acli-auth-008");
    let home = dir.0.join("home");
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    // The demo agent's card, served by a recorder: it declares schemes for the A2A calls (a
    // bearer token, and an API key in a header), none for the card endpoint.
    let card = ok(&run_in(
        &dir.0,
        &home,
        &["card", "get", "-a", &server.origin, "-o", "json"],
        &[],
    )
    .await);
    let mut card: serde_json::Value = serde_json::from_str(&card).expect("card");
    card["securitySchemes"] = serde_json::json!({
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
        "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Secret-Key"}},
    });
    let (seen, origin) = card_recorder(card).await;
    for args in [
        vec!["card", "get", "-a", &origin, "--bearer", "tok-123"],
        vec!["send", "-a", &origin, "--bearer", "tok-123", "hi"],
        vec!["send", "-a", &origin, "--api-key", "key-456", "hi"],
        vec!["task", "list", "-a", &origin, "--transport", "GRPC"],
    ] {
        let text = ok(&run_in(
            &dir.0,
            &home,
            &args,
            &[("A2ACLI_BEARER", "tok-789"), ("A2ACLI_API_KEY", "key-000")],
        )
        .await);
        if args[0] == "send" {
            // The credential went to the agent's call, which completed.
            assert_eq!(field(&text, "State"), Some("COMPLETED"), "{text}");
        }
    }
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 4, "one card fetch per run");
    for headers in &seen {
        for name in ["authorization", "x-secret-key", "x-api-key", "cookie"] {
            assert!(
                !headers.contains_key(name),
                "{name} on the card fetch: {headers:?}"
            );
        }
        for (name, value) in headers {
            let value = value.to_str().unwrap_or_default();
            assert!(
                ["tok-", "key-"].iter().all(|s| !value.contains(s)),
                "a credential in {name}: {value}"
            );
        }
    }
}

/// A child process killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_demo_server_001_demo_server_serves_the_demo_agent() {
    use std::io::BufRead;
    let dir = TempDir::new("a2acli-demo-server");
    let home = dir.0.join("home");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(["demo-server", "--port", "0"])
        .current_dir(&dir.0)
        .env("HOME", &home)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start demo-server");
    let out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let _guard = Killed(child);
    // Its banner: the card URL, then the commands to try; drained after that.
    let banner = tokio::task::spawn_blocking(move || {
        let mut lines = out.lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            let done = line.trim_start().starts_with("agent card");
            seen.push(line);
            if done {
                break;
            }
        }
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        seen
    });
    let banner = tokio::time::timeout(Duration::from_secs(60), banner)
        .await
        .expect("demo-server started in time")
        .expect("join");
    let card_url = banner
        .iter()
        .find_map(|l| l.trim().strip_prefix("agent card"))
        .map(|u| u.trim().to_owned())
        .unwrap_or_else(|| panic!("no card URL in {banner:?}"));
    let origin = card_url
        .strip_suffix("/.well-known/agent-card.json")
        .expect("the well-known path")
        .to_owned();
    assert!(
        banner
            .iter()
            .any(|l| l.contains(&format!("trident send -a {origin} hello"))),
        "{banner:?}"
    );
    assert!(
        banner
            .iter()
            .any(|l| l.contains("store: memory") || l.contains("memory")),
        "{banner:?}"
    );
    // The practice the banner suggests works on every binding.
    let card = ok(&run_in(&dir.0, &home, &["card", "get", "-a", &origin], &[]).await);
    assert_eq!(field(&card, "Name"), Some("Trident demo agent"), "{card}");
    for t in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let sent = ok(&run_in(
            &dir.0,
            &home,
            &["send", "-a", &origin, "--transport", t, "hello"],
            &[],
        )
        .await);
        assert_eq!(field(&sent, "State"), Some("COMPLETED"), "{t}: {sent}");
        let asked = ok(&run_in(
            &dir.0,
            &home,
            &["send", "-a", &origin, "--transport", t, "input"],
            &[],
        )
        .await);
        assert_eq!(
            field(&asked, "State"),
            Some("INPUT_REQUIRED"),
            "{t}: {asked}"
        );
    }
    // Flags of its own only: it is not `serve`.
    let help = ok(&run_in(&dir.0, &home, &["demo-server", "--help"], &[]).await);
    assert!(help.contains("--port") && help.contains("--host"), "{help}");
    assert!(!help.contains("--store"), "{help}");
}

/// A JSON-RPC agent whose one task (`t-1`, COMPLETED) has artifacts of every part kind,
/// names that try to leave the directory and a name given twice; it serves the file a URL
/// part names at `/files/x.png`. Returns the path of a card naming it.
async fn artifact_agent(dir: &TempDir) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = serde_json::json!({
        "id": "t-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [
            {"artifactId": "a1", "name": "report", "parts": [
                {"raw": "JVBERi0=", "mediaType": "application/pdf", "filename": "report.pdf"},
                {"url": format!("http://{addr}/files/x.png"), "mediaType": "image/png"},
                {"data": {"k": 1}, "mediaType": "application/json"},
                {"text": "done"},
            ]},
            {"artifactId": "a2", "name": "../../evil", "parts": [
                {"raw": "bm9wZQ==", "filename": "../../escape.txt"},
                {"raw": "bm9wZQ==", "filename": "/tmp/absolute.txt"},
            ]},
            {"artifactId": "a3", "parts": [
                {"raw": "c2Vjb25k", "mediaType": "application/pdf", "filename": "report.pdf"},
            ]},
            {"artifactId": "a4", "name": "local", "parts": [
                {"url": "file:///etc/hostname", "filename": "hostname"},
            ]},
        ],
    });
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
                let task = task.clone();
                async move {
                    let result = match body["method"].as_str() {
                        Some("GetTask") if body["params"]["id"] == "t-1" => {
                            serde_json::json!({"result": task})
                        }
                        _ => serde_json::json!({"error": {"code": -32001, "message": "task not found"}}),
                    };
                    let mut reply = serde_json::json!({"jsonrpc": "2.0", "id": body["id"].clone()});
                    if let (Some(reply), Some(result)) = (reply.as_object_mut(), result.as_object()) {
                        reply.extend(result.clone());
                    }
                    axum::Json(reply)
                }
            }),
        )
        .route(
            "/files/x.png",
            axum::routing::get(|headers: axum::http::HeaderMap| async move {
                // Fetched without the agent's credentials.
                assert!(!headers.contains_key("authorization"), "{headers:?}");
                b"PNGDATA".to_vec()
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let card = serde_json::json!({
        "name": "artifacts", "description": "an agent with artifacts", "version": "1",
        "supportedInterfaces": [
            {"url": format!("http://{addr}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    });
    let path = dir.0.join("artifacts-card.json");
    std::fs::write(&path, card.to_string()).expect("write card");
    path.display().to_string()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map_while(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_download_001_task_download_saves_every_part_safely() {
    let dir = TempDir::new("a2acli-download");
    let home = dir.0.join("home");

    // The demo agent's text artifact: one file per part, named after the artifact.
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let a = server.origin.as_str();
    for t in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let sent = ok(&run_in(
            &dir.0,
            &home,
            &["send", "-a", a, "--transport", t, "stream 3 1"],
            &[],
        )
        .await);
        let id = field(&sent, "Task ID").expect("Task ID").to_owned();
        let out = dir.0.join(format!("demo-{}", t.replace('+', "-")));
        let out_arg = out.display().to_string();
        let args = [
            "task",
            "download",
            &id,
            "-a",
            a,
            "--transport",
            t,
            "--dir",
            &out_arg,
        ];
        let download = || run_in(&dir.0, &home, &args, &[]);
        let text = ok(&download().await);
        assert_eq!(field(&text, "Task ID"), Some(id.as_str()), "{text}");
        assert_eq!(field(&text, "State"), Some("COMPLETED"), "{text}");
        assert_eq!(field(&text, "Files"), Some("3"), "{text}");
        assert_eq!(
            files_in(&out),
            ["stream-1.txt", "stream-2.txt", "stream-3.txt"],
            "{t}"
        );
        for i in 0..3 {
            assert_eq!(
                std::fs::read_to_string(out.join(format!("stream-{}.txt", i + 1))).expect("read"),
                format!("chunk {i} of stream 3 1")
            );
        }
        // Again into the same directory: nothing replaced, new names.
        ok(&download().await);
        assert_eq!(files_in(&out).len(), 6, "{:?}", files_in(&out));
        assert!(out.join("stream-1-1.txt").is_file());
    }

    // Every part kind, hostile names, a collision, an existing file and a symbolic link.
    let card = artifact_agent(&dir).await;
    let out = dir.0.join("out");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("report.pdf"), "mine").expect("write");
    let outside = dir.0.join("outside.txt");
    std::fs::write(&outside, "untouched").expect("write");
    std::os::unix::fs::symlink(&outside, out.join("x.png")).expect("symlink");
    let out_arg = out.display().to_string();
    let run = run_in(
        &dir.0,
        &home,
        &[
            "task",
            "download",
            "t-1",
            "-a",
            &card,
            "--dir",
            &out_arg,
            "--artifact",
            "a1",
            "--artifact",
            "a2",
            "--artifact",
            "a3",
            "-o",
            "json",
            "--bearer",
            "tok",
        ],
        &[],
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&ok(&run)).expect("one JSON document");
    assert_eq!(json["taskId"], "t-1");
    assert_eq!(json["contextId"], "ctx-1");
    assert_eq!(json["state"], "TASK_STATE_COMPLETED");
    let files = json["files"].as_array().expect("files").clone();
    assert_eq!(files.len(), 7, "{json}");
    let read = |name: &str| std::fs::read(out.join(name)).expect(name);
    assert_eq!(
        read("report.pdf"),
        b"mine",
        "an existing file is not replaced"
    );
    assert_eq!(read("report-1.pdf"), b"%PDF-");
    assert_eq!(read("report-2.pdf"), b"second", "a name given twice");
    assert_eq!(
        read("x-1.png"),
        b"PNGDATA",
        "the URL fetched, the link left alone"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "untouched"
    );
    let data: serde_json::Value =
        serde_json::from_slice(&read("report-3.json")).expect("a data part is JSON");
    assert_eq!(data, serde_json::json!({"k": 1}));
    assert_eq!(read("report-4.txt"), b"done");
    // The hostile names are refused: saved under generated names, inside the directory.
    assert_eq!(read("_.._evil-1.bin"), b"nope");
    assert_eq!(read("_.._evil-2.bin"), b"nope");
    assert!(!dir.0.join("escape.txt").exists() && !Path::new("/tmp/absolute.txt").exists());
    let warnings = stderr(&run);
    assert!(
        warnings.contains("../../escape.txt") && warnings.contains("/tmp/absolute.txt"),
        "{warnings}"
    );
    for f in &files {
        let path = f["path"].as_str().expect("path");
        assert!(Path::new(path).starts_with(&out), "{path}");
    }
    let url_file = files
        .iter()
        .find(|f| f["url"].is_string())
        .expect("the URL part");
    assert_eq!(url_file["kind"], "file");
    assert_eq!(url_file["size"], 7);

    // A URL that is not http(s) is not fetched: an error, exit 1.
    let refused = run_in(
        &dir.0,
        &home,
        &[
            "task",
            "download",
            "t-1",
            "-a",
            &card,
            "--dir",
            &out_arg,
            "--artifact",
            "local",
        ],
        &[],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("file:///etc/hostname"),
        "{}",
        stderr(&refused)
    );
    assert!(!out.join("hostname").exists());
    // An artifact the task does not have, and a task the agent does not have.
    let missing = run_in(
        &dir.0,
        &home,
        &[
            "task",
            "download",
            "t-1",
            "-a",
            &card,
            "--artifact",
            "nope",
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    let unknown = run_in(
        &dir.0,
        &home,
        &["task", "download", "t-9", "-a", &card, "-o", "json"],
        &[],
    )
    .await;
    assert_eq!(unknown.status.code(), Some(1), "{}", stderr(&unknown));
    let e: serde_json::Value = serde_json::from_str(&stdout(&unknown)).expect("error object");
    assert_eq!(e["error"]["code"], "TaskNotFoundError", "{e}");
}
