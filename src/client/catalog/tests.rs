use super::*;

fn catalog(entries: serde_json::Value) -> Catalog {
    serde_json::from_value(serde_json::json!({"specVersion": "1.0", "entries": entries}))
        .expect("a catalog")
}

#[test]
fn entries_are_found_by_identifier_name_and_version() {
    let c = catalog(serde_json::json!([
        {"identifier": "urn:air:x:mcp:demo", "type": "application/mcp-server-card+json",
         "url": "https://x/mcp"},
        {"identifier": "urn:air:x:a2a:demo", "type": CARD_TYPE, "version": "1.0.0",
         "updatedAt": "2026-01-01T00:00:00Z", "url": "https://x/v1.json"},
        {"identifier": "urn:air:x:a2a:demo", "type": CARD_TYPE, "version": "2.0.0",
         "updatedAt": "2026-03-01T00:00:00Z", "url": "https://x/v2.json"},
        {"identifier": "urn:air:x:a2a:inline", "type": CARD_TYPE,
         "data": {"name": "Inline Agent"}},
        {"identifier": "urn:air:x:a2a:named", "type": CARD_TYPE, "displayName": "Research",
         "url": "https://x/r.json"}
    ]));
    let url = |name: &str| find(&c, name).and_then(|e| e.url.clone());
    // The latest of two versions, or the one asked for; the MCP entry never.
    assert_eq!(
        url("urn:air:x:a2a:demo").as_deref(),
        Some("https://x/v2.json")
    );
    assert_eq!(
        url("urn:air:x:a2a:demo@1.0.0").as_deref(),
        Some("https://x/v1.json")
    );
    assert!(find(&c, "urn:air:x:a2a:demo@3").is_none());
    assert!(find(&c, "urn:air:x:mcp:demo").is_none());
    // By display name, or the inline card's name, case-insensitively.
    assert_eq!(url("research").as_deref(), Some("https://x/r.json"));
    assert_eq!(
        find(&c, "inline agent").map(|e| e.identifier.as_str()),
        Some("urn:air:x:a2a:inline")
    );
    assert!(find(&c, "nobody").is_none());
}

#[test]
fn the_catalog_and_its_urls_are_located_as_documented() {
    assert_eq!(
        catalog_source("agents.example.com"),
        CardSource::Url("https://agents.example.com/.well-known/ai-catalog.json".into())
    );
    assert_eq!(
        catalog_source("http://127.0.0.1:9/"),
        CardSource::Url("http://127.0.0.1:9/.well-known/ai-catalog.json".into())
    );
    assert_eq!(
        catalog_source("https://x/agents.json"),
        CardSource::Url("https://x/agents.json".into())
    );
    assert_eq!(
        catalog_source("./agents.json"),
        CardSource::File("./agents.json".into())
    );
    let web = CardSource::Url("https://x/dir/catalog.json".into());
    assert_eq!(absolute(&web, "cards/a.json"), "https://x/dir/cards/a.json");
    assert_eq!(absolute(&web, "/a.json"), "https://x/a.json");
    assert_eq!(absolute(&web, "https://y/a.json"), "https://y/a.json");
    let file = CardSource::File("/etc/agents/catalog.json".into());
    assert_eq!(absolute(&file, "a.json"), "/etc/agents/a.json");
}
