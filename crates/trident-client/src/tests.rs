use reqwest::header::{CACHE_CONTROL, ETAG, HeaderMap, HeaderValue};
use trident_proto as pb;

use crate::cache::{CardCache, Freshness, max_age};
use crate::{Binding, choose, no_match};

fn headers(pairs: &[(reqwest::header::HeaderName, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in pairs {
        h.append(n.clone(), HeaderValue::from_static(v));
    }
    h
}

#[test]
fn cache_control_is_read_as_caches_read_it() {
    use std::time::Duration;
    let age = |v: &'static str| max_age(&headers(&[(CACHE_CONTROL, v)]));
    assert_eq!(age("public, max-age=300"), Some(Duration::from_secs(300)));
    assert_eq!(age("MAX-AGE=\"5\""), Some(Duration::from_secs(5)));
    assert_eq!(age("no-cache, max-age=300"), Some(Duration::ZERO));
    assert_eq!(age("max-age=300, no-store"), None);
    assert_eq!(age("max-age=soon"), Some(Duration::ZERO));
    assert_eq!(max_age(&HeaderMap::new()), Some(Duration::ZERO));
}

fn card(name: &str) -> pb::AgentCard {
    pb::AgentCard {
        name: name.to_owned(),
        ..Default::default()
    }
}

#[test]
fn the_cache_keeps_what_it_may_and_nothing_else() {
    let cache = CardCache::default();
    let url = "http://a/.well-known/agent-card.json";
    cache.store(url, &card("a"), &headers(&[(CACHE_CONTROL, "max-age=60")]));
    assert!(matches!(cache.lookup(url), Freshness::Fresh(c) if c.name == "a"));

    cache.store(
        url,
        &card("b"),
        &headers(&[(CACHE_CONTROL, "no-cache"), (ETAG, "\"v2\"")]),
    );
    assert!(matches!(cache.lookup(url), Freshness::Stale { etag: Some(e) } if e == "\"v2\""));
    let again = cache.revalidated(url, &headers(&[(CACHE_CONTROL, "max-age=60")]));
    assert_eq!(again.map(|c| c.name), Some("b".to_owned()));
    assert!(matches!(cache.lookup(url), Freshness::Fresh(_)));

    cache.store(
        url,
        &card("c"),
        &headers(&[(CACHE_CONTROL, "no-store"), (ETAG, "\"v3\"")]),
    );
    assert!(matches!(cache.lookup(url), Freshness::Missing));
    // Neither a max-age nor an ETag: nothing to reuse it by.
    cache.store(url, &card("d"), &HeaderMap::new());
    assert!(matches!(cache.lookup(url), Freshness::Missing));
    assert!(cache.revalidated(url, &HeaderMap::new()).is_none());
}

#[test]
fn a_card_without_a_match_says_what_it_offers() {
    let card = pb::AgentCard {
        supported_interfaces: vec![
            pb::AgentInterface {
                url: "127.0.0.1:50051".to_owned(),
                protocol_binding: "GRPC".to_owned(),
                protocol_version: "1.0".to_owned(),
                ..Default::default()
            },
            pb::AgentInterface {
                url: "http://127.0.0.1:8080/rpc".to_owned(),
                protocol_binding: "JSONRPC".to_owned(),
                protocol_version: "0.3".to_owned(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    assert!(choose(&card, &[Binding::JsonRpc]).is_none());
    let e = no_match(
        "http://127.0.0.1:8080",
        &card,
        &[Binding::JsonRpc, Binding::Rest],
    );
    assert_eq!(
        e.message(),
        "http://127.0.0.1:8080 offers none of the bindings JSONRPC, HTTP+JSON for A2A 1.x; its \
         card lists GRPC at 127.0.0.1:50051 (version 1.0), JSONRPC at \
         http://127.0.0.1:8080/rpc (version 0.3)"
    );
    let empty = no_match("x", &pb::AgentCard::default(), &[]);
    assert!(
        empty.message().ends_with("its card lists no interfaces"),
        "{empty}"
    );
    assert_eq!(choose(&card, &[]).map(|(b, _)| b), Some(Binding::Grpc));
}

#[test]
fn bad_options_fail_the_build() {
    let e = crate::ClientBuilder::new()
        .header("bad header", "x")
        .build()
        .expect_err("a header name with a space");
    assert_eq!(e.kind(), trident_core::ErrorKind::InvalidParams);
    let e = crate::ClientBuilder::new()
        .api_key("x-api-key", "line\nbreak")
        .build()
        .expect_err("a header value with a newline");
    assert_eq!(e.kind(), trident_core::ErrorKind::InvalidParams);
}

#[tokio::test]
async fn a_query_api_key_stays_out_of_debug_and_off_grpc() {
    let builder = crate::ClientBuilder::new().api_key_query("team_key", "k-secret");
    let shown = format!("{builder:?}");
    assert!(shown.contains("team_key=[redacted]"), "{shown}");
    assert!(!shown.contains("k-secret"), "{shown}");
    let client = builder.build().expect("client");
    assert!(!format!("{client:?}").contains("k-secret"));
    let interface = pb::AgentInterface {
        url: "http://127.0.0.1:1".into(),
        protocol_binding: "GRPC".into(),
        protocol_version: "1.0".into(),
        ..Default::default()
    };
    let e = match client.client(Binding::Grpc, &interface).await {
        Ok(_) => panic!("gRPC cannot carry a query parameter"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), trident_core::ErrorKind::InvalidParams);
    assert!(e.message().contains("team_key"), "{e}");
    assert!(!e.message().contains("k-secret"), "{e}");
}
