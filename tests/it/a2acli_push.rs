//! a2a-cli Tier 3: the local webhook receiver of `send --push-receiver` (SPEC §9.2), and the
//! extensions an agent's card marks required, declared by the tool on its own (SPEC §13.3,
//! A2A §4.6) — against live `trident serve --agent demo` agents, through the real `trident`
//! binary on each binding.

use std::process::Output;

use crate::process::{Run, TempDir, Trident, ok, stderr, stdout};

const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

const REQUIRED: &str = "urn:trident:test:required";
const MORE: &str = "urn:trident:test:more";

async fn run(args: &[&str]) -> Output {
    Run::new(args).output().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_ver_002_the_cards_required_extensions_are_declared_on_every_binding() {
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--require-extension",
        REQUIRED,
    ])
    .await;
    let a = server.origin.as_str();

    // The card says so.
    let card: serde_json::Value =
        serde_json::from_str(&ok(&run(&["card", "get", "-a", a, "-o", "json"]).await))
            .expect("card JSON");
    let declared = card["capabilities"]["extensions"]
        .as_array()
        .expect("extensions on the card");
    assert!(
        declared
            .iter()
            .any(|e| e["uri"] == REQUIRED && e["required"] == true),
        "{card}"
    );

    // The same card with the extension no longer marked required: the tool does not
    // declare it, and the server refuses the call — the server enforces the requirement.
    let dir = TempDir::new("a2acli-ver-002");
    let mut lax = card.clone();
    for e in lax["capabilities"]["extensions"]
        .as_array_mut()
        .expect("extensions")
    {
        e["required"] = serde_json::Value::Bool(false);
    }
    let lax_path = dir.0.join("lax-card.json");
    std::fs::write(&lax_path, lax.to_string()).expect("write card");
    let lax_ref = lax_path.display().to_string();

    for t in TRANSPORTS {
        // Declared without being asked: the call goes through.
        let o = run(&["send", "-a", a, "--transport", t, "--debug", "hi"]).await;
        ok(&o);
        assert!(
            stderr(&o).contains(&format!("extensions: {REQUIRED}")),
            "{t}: {}",
            stderr(&o)
        );
        // --extensions adds more, and the required one is still declared (once).
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--debug",
            "--extensions",
            &format!("{MORE},{REQUIRED}"),
            "hi",
        ])
        .await;
        ok(&o);
        assert!(
            stderr(&o).contains(&format!("extensions: {MORE}, {REQUIRED}\n")),
            "{t}: {}",
            stderr(&o)
        );
        // Other commands declare it too.
        ok(&run(&["task", "list", "-a", a, "--transport", t]).await);

        // Not declared (the card given does not require it): refused by the server.
        let o = run(&["send", "-a", &lax_ref, "--transport", t, "-o", "json", "hi"]).await;
        assert_ne!(o.status.code(), Some(0), "{t}: {}", stdout(&o));
        assert!(
            stdout(&o).contains("ExtensionSupportRequired"),
            "{t}: {}\n{}",
            stdout(&o),
            stderr(&o)
        );
        // Asked for by hand against the same card: accepted.
        ok(&run(&[
            "send",
            "-a",
            &lax_ref,
            "--transport",
            t,
            "--extensions",
            REQUIRED,
            "hi",
        ])
        .await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_push_002_send_push_receiver_prints_each_notification_until_the_end() {
    // The server delivers webhooks to loopback only when told to.
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--push-allow",
        "127.0.0.1",
    ])
    .await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // JSONL: the task as sent, then each notification, the last one terminal.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--push-receiver",
            "127.0.0.1:0",
            "-o",
            "json",
            "stream 3 50",
        ])
        .await;
        let out = ok(&o);
        assert!(
            stderr(&o).contains("receiving push notifications at http://127.0.0.1:"),
            "{t}: {}",
            stderr(&o)
        );
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{t}: {e}: {l}")))
            .collect();
        assert!(lines.len() >= 3, "{t}: {out}");
        let id = lines[0]["task"]["id"].as_str().expect("the task first");
        // Notifications arrived: artifacts of the demo's stream, and the end.
        assert!(
            lines[1..].iter().any(|l| l.get("artifactUpdate").is_some()),
            "{t}: {out}"
        );
        let last = lines.last().expect("a last line");
        let state = last["statusUpdate"]["status"]["state"]
            .as_str()
            .or_else(|| last["task"]["status"]["state"].as_str());
        assert_eq!(state, Some("TASK_STATE_COMPLETED"), "{t}: {out}");
        assert!(
            lines[1..].iter().all(|l| {
                l["statusUpdate"]["taskId"]
                    .as_str()
                    .or(l["artifactUpdate"]["taskId"].as_str())
                    .or(l["task"]["id"].as_str())
                    == Some(id)
            }),
            "{t}: {out}"
        );
        // The token is never shown.
        assert!(!stderr(&o).contains("token"), "{t}: {}", stderr(&o));

        // Text: one block per notification, then the task's identifiers and its end.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--push-receiver",
            "127.0.0.1:0",
            "stream 2 50",
        ])
        .await;
        let out = ok(&o);
        assert!(out.contains("Task ID"), "{t}: {out}");
        assert!(out.contains("COMPLETED"), "{t}: {out}");

        // A task that stops for input ends the wait too.
        let o = run(&[
            "send",
            "-a",
            a,
            "--transport",
            t,
            "--push-receiver",
            "127.0.0.1:0",
            "input",
        ])
        .await;
        let out = ok(&o);
        assert!(out.contains("INPUT_REQUIRED"), "{t}: {out}");
    }

    // A notification without the receiver's token is refused (401), and not printed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let receiver = format!("127.0.0.1:{port}");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(["send", "-a", a, "--push-receiver", &receiver, "-o", "json"])
        .arg("stream 3 400")
        .env_remove("A2ACLI_OUTPUT")
        .env_remove("A2ACLI_AGENT_CARD")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start trident send");
    let forged = serde_json::json!({"statusUpdate": {"taskId": "forged", "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"}}});
    let mut refused = None;
    for _ in 0..50 {
        match reqwest::Client::new()
            .post(format!("http://{receiver}/"))
            .header("a2a-notification-token", "not-the-token")
            .json(&forged)
            .send()
            .await
        {
            Ok(r) => {
                refused = Some(r.status().as_u16());
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    assert_eq!(refused, Some(401));
    let o = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("trident send ran");
    let out = ok(&o);
    assert!(!out.contains("forged"), "{out}");
    assert!(out.contains("TASK_STATE_COMPLETED"), "{out}");
    assert!(
        stderr(&o).contains("refused a notification without this receiver's token"),
        "{}",
        stderr(&o)
    );

    // Without --push-allow the server refuses the loopback webhook: the send fails, no hang.
    let strict = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let o = run(&[
        "send",
        "-a",
        strict.origin.as_str(),
        "--push-receiver",
        "127.0.0.1:0",
        "hello",
    ])
    .await;
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
}
