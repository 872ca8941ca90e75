//! The OpenAPI document: the committed `docs/openapi.json` is what `trident_rest::openapi`
//! generates, and `trident serve` serves the same document at `/openapi.json`.

use crate::harness::{Fixture, Transport};

/// `docs/openapi.json` as `trident openapi` writes it.
fn rendered() -> String {
    let mut text = serde_json::to_string_pretty(&trident_rest::openapi::document())
        .expect("the document encodes");
    text.push('\n');
    text
}

#[test]
fn committed_openapi_json_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered(),
        "{} is stale (or missing): run `cargo run -- openapi` and commit the result",
        path.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_serves_the_document() {
    let f = Fixture::default(Transport::Rest).await;
    let interfaces = f.interfaces.clone().expect("server");
    let response = reqwest::get(format!("{}/openapi.json", interfaces.rest))
        .await
        .expect("GET /openapi.json");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let served: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(served, trident_rest::openapi::document());
}
