use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, Version, header};

use super::{Rules, problem};

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.append(
            axum::http::HeaderName::try_from(*k).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    map
}

fn check(version: Version, uri: &str, pairs: &[(&str, &str)]) -> Option<StatusCode> {
    let rules = Rules::new(vec!["x-api-key".into(), "X-Api-Key".into()]);
    let uri: Uri = uri.parse().expect("uri");
    problem(&rules, version, &uri, &headers(pairs)).map(|p| p.status)
}

#[test]
fn host_rules_per_version() {
    let ok = Some(StatusCode::BAD_REQUEST);
    assert_eq!(check(Version::HTTP_11, "/", &[("host", "a:1")]), None);
    assert_eq!(check(Version::HTTP_11, "/", &[]), ok, "1.1 without Host");
    assert_eq!(
        check(Version::HTTP_11, "/", &[("host", "a"), ("host", "a")]),
        ok,
        "two Hosts"
    );
    for bad in ["a b", "user@a", "a:b:c", "[::1", "a/b"] {
        assert_eq!(check(Version::HTTP_11, "/", &[("host", bad)]), ok, "{bad}");
    }
    assert_eq!(check(Version::HTTP_11, "/", &[("host", "")]), None, "empty");
    assert_eq!(check(Version::HTTP_10, "/", &[]), None, "1.0 may omit Host");
    assert_eq!(
        check(Version::HTTP_10, "/", &[("host", "a"), ("host", "b")]),
        ok
    );
    // HTTP/2: `:authority` (the URI's), Host optional; both must agree.
    assert_eq!(check(Version::HTTP_2, "http://a:80/x", &[]), None);
    assert_eq!(check(Version::HTTP_2, "/x", &[]), None, "neither");
    assert_eq!(
        check(Version::HTTP_2, "http://A:80/x", &[("host", "a")]),
        None
    );
    assert_eq!(
        check(Version::HTTP_2, "http://a:80/x", &[("host", "b:80")]),
        ok,
        "another authority"
    );
    assert_eq!(
        check(Version::HTTP_2, "http://a/x", &[("host", "a:8080")]),
        ok,
        "another port"
    );
}

#[test]
fn chunked_once_and_no_other_transfer_coding() {
    let h = |te: &[&str]| {
        let mut pairs = vec![("host", "a")];
        pairs.extend(te.iter().map(|v| ("transfer-encoding", *v)));
        check(Version::HTTP_11, "/", &pairs)
    };
    assert_eq!(h(&["chunked"]), None);
    assert_eq!(h(&["Chunked "]), None);
    assert_eq!(h(&["chunked, chunked"]), Some(StatusCode::BAD_REQUEST));
    assert_eq!(h(&["chunked", "chunked"]), Some(StatusCode::BAD_REQUEST));
    assert_eq!(h(&["gzip, chunked"]), Some(StatusCode::NOT_IMPLEMENTED));
}

#[test]
fn credentials_at_most_once() {
    let one = [
        ("host", "a"),
        ("authorization", "Bearer t"),
        ("x-api-key", "k"),
    ];
    assert_eq!(check(Version::HTTP_11, "/", &one), None);
    for twice in ["authorization", "x-api-key"] {
        let mut pairs = one.to_vec();
        pairs.push((twice, "again"));
        assert_eq!(
            check(Version::HTTP_11, "/", &pairs),
            Some(StatusCode::BAD_REQUEST),
            "{twice}"
        );
    }
    // Other headers may repeat.
    let mut pairs = one.to_vec();
    pairs.extend([("accept", "a/b"), ("accept", "c/d")]);
    assert_eq!(check(Version::HTTP_11, "/", &pairs), None);
    assert_eq!(header::AUTHORIZATION, "authorization");
}
