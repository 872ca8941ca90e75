use std::net::SocketAddr;

use http::{HeaderMap, HeaderValue};
use trident_core::{Binding, ErrorKind, Peer, Principal};

use super::call_context;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn a_context_holds_the_headers_principal_peer_and_binding() {
    let peer: SocketAddr = "192.0.2.7:4000".parse().expect("an address");
    let mut extensions = http::Extensions::new();
    extensions.insert(Principal::named("alice"));
    extensions.insert(Peer(peer));
    let headers = headers(&[
        ("a2a-version", "1.0"),
        ("a2a-extensions", "urn:a, urn:b"),
        ("last-event-id", "42"),
        ("authorization", "Bearer token"),
        ("grpc-timeout", "5S"),
    ]);
    for binding in [Binding::Grpc, Binding::JsonRpc, Binding::Rest] {
        let cx = call_context(&headers, &extensions, binding).expect("a context");
        assert_eq!(cx.binding, Some(binding));
        assert_eq!(cx.version.as_deref(), Some("1.0"));
        assert_eq!(cx.extensions, ["urn:a", "urn:b"]);
        assert_eq!(cx.last_event_id, Some(42));
        assert_eq!(cx.credentials.as_deref(), Some("Bearer token"));
        assert_eq!(cx.principal.id(), Some("alice"));
        assert_eq!(cx.peer, Some(peer));
        assert!(cx.deadline.is_some());
    }
}

#[test]
fn a_bare_request_is_anonymous_with_no_peer() {
    let cx = call_context(&HeaderMap::new(), &http::Extensions::new(), Binding::Rest)
        .expect("a context");
    assert_eq!(cx.principal, Principal::anonymous());
    assert_eq!(cx.peer, None);
    assert_eq!(cx.version, None);
    assert_eq!(cx.binding, Some(Binding::Rest));
}

#[test]
fn a_last_event_id_that_is_no_sequence_number_is_refused() {
    let e = call_context(
        &headers(&[("last-event-id", "-1")]),
        &http::Extensions::new(),
        Binding::JsonRpc,
    )
    .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    assert!(e.to_string().contains("Last-Event-ID"), "{e}");
}
