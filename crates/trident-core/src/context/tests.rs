use std::cell::RefCell;

use super::{CallContext, SERVICE_PARAMS};

/// What two contexts built from the same parameters must agree on.
fn summary(cx: &CallContext) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {}",
        cx.version,
        cx.extensions,
        cx.last_event_id,
        cx.credentials,
        cx.trace,
        cx.deadline.is_some()
    )
}

#[test]
fn the_pairs_name_every_parameter_the_lookup_reads() {
    let asked = RefCell::new(Vec::new());
    // A valid `traceparent`, so that `tracestate` is read too.
    let _ = CallContext::from_service_params(|name| {
        asked.borrow_mut().push(name.to_owned());
        (name == "traceparent")
            .then_some(&b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"[..])
    });
    let mut asked = asked.into_inner();
    asked.sort();
    asked.dedup();
    let mut known: Vec<String> = SERVICE_PARAMS.iter().map(|s| (*s).to_owned()).collect();
    known.sort();
    assert_eq!(asked, known);
}

#[test]
fn pairs_read_like_lookups_first_value_first() {
    let pairs: Vec<(&str, &[u8])> = vec![
        ("content-type", b"application/json"),
        ("a2a-version", b" 1.0 "),
        ("a2a-extensions", b"urn:a, urn:b"),
        ("a2a-extensions", b"urn:ignored"),
        ("x-a2a-extensions", b"urn:c"),
        ("last-event-id", b"7"),
        ("authorization", b"Bearer t"),
        (
            "traceparent",
            b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
        ("tracestate", b"k=v"),
        ("grpc-timeout", b"5S"),
        ("a2a-version", b"0.3"),
    ];
    let lookup = CallContext::from_service_params(|name| {
        pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    });
    let paired = CallContext::from_service_param_pairs(pairs.iter().copied());
    assert_eq!(summary(&paired), summary(&lookup));
    assert_eq!(paired.version.as_deref(), Some("1.0"));
    assert_eq!(paired.extensions, ["urn:a", "urn:b", "urn:c"]);
    assert_eq!(paired.last_event_id, Some(7));
    assert!(paired.deadline.is_some());

    // A version that is not text is kept (lossily), as the lookup keeps it.
    let odd: [(&str, &[u8]); 1] = [("a2a-version", b"1.\xff")];
    let paired = CallContext::from_service_param_pairs(odd);
    let lookup =
        CallContext::from_service_params(|n| (n == "a2a-version").then_some(&b"1.\xff"[..]));
    assert_eq!(paired.version, lookup.version);
    assert_eq!(paired.version.as_deref(), Some("1.\u{fffd}"));

    let none = CallContext::from_service_param_pairs(std::iter::empty());
    assert_eq!(
        summary(&none),
        summary(&CallContext::from_service_params(|_| None))
    );
}

#[test]
fn server_adapters_refuse_a_last_event_id_or_deadline_they_cannot_read() {
    use crate::ErrorKind;
    let one = |name: &'static str, value: &'static [u8]| {
        CallContext::try_from_service_param_pairs([(name, value)])
    };
    for bad in [
        &b"-1"[..],
        b"abc",
        b"100000000000000000000000",
        b"18446744073709551616",
        b"1e3",
        b"+3",
        b"1 2",
        b"\xff",
    ] {
        let e = one("last-event-id", bad).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{bad:?}");
        assert!(e.message().contains("Last-Event-ID"), "{e}");
        // The lenient reading still takes it as absent.
        let lenient = CallContext::from_service_param_pairs([("last-event-id", bad)]);
        assert_eq!(lenient.last_event_id, None);
    }
    for (good, seq) in [
        (&b"0"[..], Some(0)),
        (b" 18446744073709551615 ", Some(u64::MAX)),
        (b"", None),
        (b"  ", None),
    ] {
        let cx = one("last-event-id", good).expect("read");
        assert_eq!(cx.last_event_id, seq, "{good:?}");
    }
    for bad in [
        &b"5"[..],
        b"5s",
        b"123456789S",
        b"-1S",
        b"",
        b"1.5m",
        b"\xffS",
    ] {
        let e = one("grpc-timeout", bad).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidRequest, "{bad:?}");
        assert!(e.message().contains("grpc-timeout"), "{e}");
        assert!(
            CallContext::from_service_param_pairs([("grpc-timeout", bad)])
                .deadline
                .is_none()
        );
    }
    assert!(
        one("grpc-timeout", b"250m")
            .expect("read")
            .deadline
            .is_some()
    );
}
