//! Cross-check with the official Python SDK (`a2a.utils.signing` of a2a-sdk 1.3.0), through
//! `interop/signing/check.py`. Ignored unless asked for; needs `TRIDENT_INTEROP_PYTHON`, a
//! Python with a2a-sdk and PyJWT[crypto] (e.g. `interop/.venv/bin/python`):
//!
//! ```text
//! TRIDENT_INTEROP_PYTHON=$PWD/interop/.venv/bin/python \
//!     cargo test -p trident-security -- --ignored --nocapture
//! ```
//!
//! Findings (a2a-sdk 1.3.0): for cards whose REQUIRED members are non-empty the canonical
//! payloads are byte-identical and signatures verify both ways (ES256 both ways, RS256 from
//! Python). The SDK deviates from the spec's presence rules: after `MessageToDict` it removes
//! *every* empty string, list and object recursively (`_clean_empty`), so REQUIRED members
//! that are empty (`"description": ""`, `"skills": []` …), `optional` members explicitly set
//! to `""`, and empty values inside `AgentExtension.params` are left out of its payload while
//! the spec (and we) keep them; it also removes JSON `null`s inside `params` (from objects and
//! arrays). The most common casualty is a security requirement without scopes,
//! `"securityRequirements":[{"schemes":{"jwt":{}}}]` (what `declare_security` writes): the SDK
//! drops the whole member. Such cards do not verify across the two implementations;
//! `spec_presence_differs_from_sdk` pins this down.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use trident_proto as pb;

use crate::{JwkSet, SigningKey, canonical_card, sign_card, verify_card};

fn python() -> String {
    std::env::var("TRIDENT_INTEROP_PYTHON")
        .expect("set TRIDENT_INTEROP_PYTHON to a Python with a2a-sdk and PyJWT[crypto]")
}

fn check_py(args: &[&str], stdin: Option<&Value>) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../interop/signing/check.py"
    );
    let mut child = Command::new(python())
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start check.py");
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(v) = stdin {
            input.write_all(v.to_string().as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "check.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check.py {args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A card every REQUIRED member of which is non-empty (the common case).
fn agreeing_card() -> pb::AgentCard {
    serde_json::from_value(json!({
        "name": "Trident — signed",
        "description": "Cross-checked with the Python SDK: ünïcödé, \"quotes\", \\ and \u{1}",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:9/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "127.0.0.1:10", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"}
        ],
        "provider": {"organization": "Trident", "url": "https://trident.test"},
        "capabilities": {"streaming": true, "pushNotifications": false, "extensions": [
            {"uri": "https://example.com/ext", "required": true,
             "params": {"n": 1.5, "one": 1, "big": 1e21, "small": 1e-7, "list": [1, "x", true, false, 0]}}
        ]},
        "securitySchemes": {"jwt": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}},
        "securityRequirements": [{"schemes": {"jwt": {"list": ["read"]}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Echoes", "tags": ["echo", "€"],
                    "examples": ["hi"]}],
        "iconUrl": "https://trident.test/icon.png",
    }))
    .unwrap()
}

/// The same card with values the spec keeps and the SDK drops.
fn edge_card() -> pb::AgentCard {
    let mut card = agreeing_card();
    card.skills[0].description.clear(); // REQUIRED, empty
    card.documentation_url = Some(String::new()); // `optional`, explicitly set to ""
    // A requirement without scopes: `{"schemes":{"jwt":{}}}` (what `declare_security` writes).
    card.security_requirements = vec![pb::SecurityRequirement {
        schemes: [("jwt".to_owned(), pb::StringList { list: vec![] })]
            .into_iter()
            .collect(),
    }];
    card.capabilities.as_mut().unwrap().extensions[0].params = Some(
        serde_json::from_value(json!({
            "emptyList": [], "emptyObject": {}, "emptyString": "", "null": null,
            "withNull": [1, null], "zero": 0, "no": false,
        }))
        .unwrap(),
    );
    card
}

fn canonical_str(card: &pb::AgentCard) -> String {
    String::from_utf8(canonical_card(card)).unwrap()
}

/// Signs with the SDK, returns (card, jwks, the SDK's canonical payload).
fn python_signed(alg: &str, card: &pb::AgentCard) -> (pb::AgentCard, JwkSet, String) {
    let card_json = serde_json::to_value(card).unwrap();
    let kid = format!("py-{alg}");
    let out = check_py(
        &["sign", "--alg", alg, "--kid", &kid, "--card", "-"],
        Some(&card_json),
    );
    let signed: pb::AgentCard = serde_json::from_value(out["card"].clone()).unwrap();
    let jwks: JwkSet = serde_json::from_value(out["jwks"].clone()).unwrap();
    (signed, jwks, out["canonical"].as_str().unwrap().to_owned())
}

/// Verifies with the SDK: (ok, error, the SDK's canonical payload).
fn python_verify(card: &pb::AgentCard, jwks: &JwkSet) -> (bool, Option<String>, String) {
    let doc = json!({"card": card, "jwks": jwks});
    let out = check_py(&["verify"], Some(&doc));
    (
        out["ok"].as_bool().unwrap(),
        out["error"].as_str().map(str::to_owned),
        out["canonical"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
#[ignore = "needs TRIDENT_INTEROP_PYTHON (a Python with a2a-sdk and PyJWT[crypto])"]
fn python_sdk_verifies_ours_and_we_verify_theirs() {
    let card = agreeing_card();

    // Ours → their verifier.
    let key = SigningKey::generate().with_kid("trident-es256");
    let mut ours = card.clone();
    sign_card(&mut ours, &key);
    let (ok, error, their_canonical) = python_verify(&ours, &key.jwks());
    assert_eq!(
        their_canonical,
        canonical_str(&card),
        "canonical payloads differ"
    );
    assert!(ok, "the Python SDK rejected our ES256 signature: {error:?}");
    eprintln!("ours (ES256) verified by the Python SDK");

    // Theirs → our verifier, ES256 and RS256.
    for alg in ["ES256", "RS256"] {
        let (signed, jwks, their_canonical) = python_signed(alg, &card);
        assert_eq!(
            their_canonical,
            canonical_str(&signed),
            "{alg}: canonical payloads differ"
        );
        let kid = verify_card(&signed, &jwks)
            .unwrap_or_else(|e| panic!("the Python SDK's {alg} signature did not verify: {e}"));
        assert_eq!(kid, format!("py-{alg}"));
        eprintln!("theirs ({alg}) verified by trident-security");
        // And a tampered copy does not.
        let mut tampered = signed.clone();
        tampered.name.push('!');
        assert!(verify_card(&tampered, &jwks).is_err());
    }
}

#[test]
#[ignore = "needs TRIDENT_INTEROP_PYTHON (a2a-sdk and PyJWT[crypto])"]
fn spec_presence_differs_from_sdk() {
    let card = edge_card();
    let ours_canonical = canonical_str(&card);
    let key = SigningKey::generate().with_kid("trident-es256");
    let mut ours = card.clone();
    sign_card(&mut ours, &key);
    let (ok, error, their_canonical) = python_verify(&ours, &key.jwks());
    eprintln!("spec (ours): {ours_canonical}\nPython SDK:  {their_canonical}");

    // Exactly the empty values and nulls differ: ours keeps them, per the spec's presence
    // rules (and JSON values in a Struct are data); the SDK drops them recursively.
    let ours_v: Value = serde_json::from_str(&ours_canonical).unwrap();
    let theirs_v: Value = serde_json::from_str(&their_canonical).unwrap();
    assert_eq!(ours_v["skills"][0]["description"], "");
    assert_eq!(ours_v["documentationUrl"], "");
    assert_eq!(
        ours_v["securityRequirements"],
        json!([{"schemes": {"jwt": {}}}])
    );
    let mut sdk_form = ours_v.clone();
    sdk_form["skills"][0]
        .as_object_mut()
        .unwrap()
        .remove("description");
    let top = sdk_form.as_object_mut().unwrap();
    top.remove("documentationUrl");
    top.remove("securityRequirements"); // {} → dropped, then the emptied parents too
    sdk_form["capabilities"]["extensions"][0]["params"] =
        json!({"withNull": [1], "zero": 0, "no": false});
    assert_eq!(
        theirs_v, sdk_form,
        "differences beyond empty values and nulls"
    );

    // So signatures do not carry across for such cards, in either direction.
    assert!(
        !ok,
        "the SDK now follows the spec's presence rules? {error:?}"
    );
    let (signed, jwks, _) = python_signed("ES256", &card);
    assert!(verify_card(&signed, &jwks).is_err());
    eprintln!("as expected, not interoperable for cards with empty values: {error:?}");
}
