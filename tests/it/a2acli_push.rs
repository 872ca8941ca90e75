//! a2a-cli Tier 3 (SPEC §13.3, A2A §4.6): the extensions an agent's card marks required are
//! declared by the tool on its own, against a live `trident serve --agent demo
//! --require-extension …`, through the real `trident` binary on each binding.

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
