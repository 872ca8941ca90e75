use super::*;

fn send(parts: usize) -> String {
    let parts = vec![r#"{"text":""}"#; parts].join(",");
    format!(r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{parts}]}}}}"#)
}

fn unbounded() -> JsonLimits {
    JsonLimits::UNBOUNDED
}

#[test]
fn the_shape_count_skips_strings_as_the_byte_at_a_time_count_did() {
    // (values, deepest nesting) as the byte-at-a-time count it replaced found them.
    let sent = send(3);
    let cases: [(&[u8], (usize, usize)); 12] = [
        (b"", (0, 0)),
        (br#"{"a":[1,2,{"b":"x,y]"}]}"#, (5, 3)),
        (br#"{"a":"\"[{,"}"#, (1, 1)),
        (br#"{"a":"\\",[1,2]}"#, (4, 2)),
        (br#"{"a":"unterminated [,{"#, (1, 1)),
        (br#"{"a":"ends in a backslash\"#, (1, 1)),
        (br#""\"#, (0, 0)),
        (br#"[[[["\\\"",[]]]]]"#, (6, 5)),
        (br#"}}}]]],,,"#, (3, 0)),
        (br#"{"x":"a\\\\"}, [1]"#, (3, 1)),
        (b"\"\\", (0, 0)),
        (sent.as_bytes(), (10, 4)),
    ];
    for (case, counted) in cases {
        assert_eq!(
            scan(case, usize::MAX, usize::MAX),
            Ok(counted),
            "{}",
            String::from_utf8_lossy(case)
        );
    }
    assert_eq!(
        scan(br#"{"a":[1,{"b":"]"}]}"#, usize::MAX, usize::MAX),
        Ok((4, 3))
    );
}

fn duplicate(json: &str) -> Option<(String, String)> {
    match scan(json.as_bytes(), usize::MAX, usize::MAX) {
        Err(Refusal::Duplicate { key, path }) => Some((key, path)),
        Ok(_) => None,
        Err(other) => panic!("{json}: {other:?}"),
    }
}

#[test]
fn a_key_twice_in_one_object_is_found_at_any_level_with_its_path() {
    let found = |key: &str, path: &str| Some((key.to_owned(), path.to_owned()));
    assert_eq!(duplicate(r#"{"a":1,"a":2}"#), found("a", ""));
    assert_eq!(
        duplicate(r#"{"message":{"metadata":{"k":1,"j":{},"k":[2]}}}"#),
        found("k", "message.metadata")
    );
    assert_eq!(
        duplicate(r#"{"message":{"parts":[{"text":"x"},{"text":"y","text":"z"}]}}"#),
        found("text", "message.parts[1]")
    );
    assert_eq!(
        duplicate(r#"{"m":{"d":[[1],[2,{"x":{"a":0,"b":1,"a":2}}]]}}"#),
        found("a", "m.d[1][1].x")
    );
    // The same key after unescaping: `\u0061` is `a`, a surrogate pair is its character, and
    // `\/` is `/`.
    assert_eq!(duplicate(r#"{"a":1,"\u0061":2}"#), found("a", ""));
    assert_eq!(duplicate(r#"{"😀":1,"\ud83d\ude00":2}"#), found("😀", ""));
    assert_eq!(duplicate(r#"{"a/b":1,"a\/b":2}"#), found("a/b", ""));
    assert_eq!(duplicate(r#"{"é":1,"\u00e9":2}"#), found("é", ""));
    // A quote inside a key, escaped.
    assert_eq!(duplicate(r#"{"a\"b":1,"a\u0022b":2}"#), found("a\"b", ""));
    // Many keys: the repeat is found among them.
    let many: Vec<String> = (0..5000).map(|i| format!(r#""k{i}":{i}"#)).collect();
    let body = format!(r#"{{"meta":{{{},"k4321":0}}}}"#, many.join(","));
    assert_eq!(duplicate(&body), found("k4321", "meta"));
}

#[test]
fn distinct_keys_and_the_same_key_in_different_objects_pass() {
    for ok in [
        r#"{"a":1,"b":2,"A":3,"a ":4,"\u0062c":5,"b\\c":6}"#,
        r#"{"a":{"a":{"a":1}},"b":{"a":2}}"#,
        r#"[{"a":1},{"a":2},{"a":{"a":3}}]"#,
        // A string value equal to a key is no key.
        r#"{"a":"a","b":"a"}"#,
        r#"{"a":["a","a"],"b":{"c":"a"}}"#,
        // Keys that differ only in an escape that decodes differently.
        r#"{"\n":1,"\\n":2,"n":3}"#,
    ] {
        assert_eq!(duplicate(ok), None, "{ok}");
    }
    assert!(check_json(send(100).as_bytes(), JsonLimits::default()).is_ok());
}

#[test]
fn a_duplicate_is_invalid_params_naming_the_key_and_its_path() {
    let err = check_json(
        br#"{"message":{"metadata":{"tier":"free","tier":"paid"}}}"#,
        JsonLimits::default(),
    )
    .expect_err("a duplicate key");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains(r#""tier""#), "{err}");
    assert!(err.message().contains("message.metadata"), "{err}");
    assert_eq!(
        err.metadata().get("duplicateKey").map(String::as_str),
        Some("tier")
    );
    assert_eq!(
        err.metadata().get("path").map(String::as_str),
        Some("message.metadata")
    );
    // A long key is cut in the message.
    let long = "k".repeat(10_000);
    let err = check_json(
        format!(r#"{{"{long}":1,"{long}":2}}"#).as_bytes(),
        JsonLimits::default(),
    )
    .expect_err("a long duplicate key");
    assert!(err.message().len() < 300, "{}", err.message().len());
}

#[test]
fn values_and_depth_are_bounded_whatever_the_budget() {
    let err = check_json(send(40_000).as_bytes(), unbounded()).expect_err("values");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(
        err.metadata().get("maxValues").map(String::as_str),
        Some("65536")
    );
    let deep = format!("{}1{}", r#"{"a":"#.repeat(70), "}".repeat(70));
    let err = check_json(deep.as_bytes(), unbounded()).expect_err("depth");
    assert!(err.message().contains("deeper"), "{err}");
    let ok = format!("{}1{}", r#"{"a":"#.repeat(64), "}".repeat(64));
    assert!(check_json(ok.as_bytes(), unbounded()).is_ok());
}

#[test]
fn the_memory_budget_bounds_values_by_the_body_size() {
    let limits = JsonLimits::default();
    // A small body of many values: within MAX_JSON_VALUES, beyond 4 × its size + 1 MiB.
    let dense = format!(
        r#"{{"message":{{"metadata":{{{}}}}}}}"#,
        (0..60_000)
            .map(|i| format!(r#""{i}":0"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let err = check_json(dense.as_bytes(), limits).expect_err("too dense");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(
        err.metadata().get("memoryFactor").map(String::as_str),
        Some("4")
    );
    let allowed: usize = err.metadata()["maxValues"].parse().expect("a count");
    assert_eq!(
        allowed,
        (4 * dense.len() + JSON_MEMORY_SLACK - dense.len()) / JSON_VALUE_COST
    );
    // The same body passes a larger factor, and with no budget.
    assert!(
        check_json(
            dense.as_bytes(),
            JsonLimits {
                memory_factor: 64,
                ..limits
            }
        )
        .is_ok()
    );
    assert!(check_json(dense.as_bytes(), unbounded()).is_ok());
    // Ordinary requests are far within it.
    assert!(check_json(send(1000).as_bytes(), limits).is_ok());
    assert_eq!(unbounded().budget(10), None);
    assert_eq!(limits.budget(10), Some(40 + JSON_MEMORY_SLACK));
}

#[test]
fn deep_and_wide_bodies_are_checked_past_the_inline_stacks() {
    // 51 levels (past the 16 frames held inline), the repeat in the innermost object.
    let deep = format!(
        "{}{{\"x\":1,\"y\":2,\"x\":3}}{}",
        r#"{"a":["#.repeat(25),
        "]}".repeat(25)
    );
    let path = vec!["a[0]"; 25].join(".");
    assert_eq!(duplicate(&deep), Some(("x".to_owned(), path)));
    // Keys of an outer object held while an inner one of 100 keys (past the 32 keys held
    // inline) is open and closed: the outer repeat is still found, the inner keys gone.
    let inner: Vec<String> = (0..100).map(|i| format!(r#""i{i}":0"#)).collect();
    let wide = format!(
        r#"{{"o1":0,"o2":{{{}}},"i5":0,"o3":0,"o1":1}}"#,
        inner.join(",")
    );
    assert_eq!(duplicate(&wide), Some(("o1".to_owned(), String::new())));
    let no_repeat = format!(r#"{{"o1":0,"o2":{{{}}},"i5":0}}"#, inner.join(","));
    assert_eq!(duplicate(&no_repeat), None);
    // Objects of up to 16 keys are compared pair by pair, larger ones sorted: both find the
    // repeat wherever it is.
    for n in [2, 15, 16, 17, 40] {
        for at in [0, n / 2, n - 1] {
            let mut keys: Vec<String> = (0..n).map(|i| format!(r#""k{i}":0"#)).collect();
            // The repeat written with an escape: `\u006b` is `k`.
            keys.push(format!(r#""\u006b{at}":1"#));
            let body = format!("{{{}}}", keys.join(","));
            assert_eq!(
                duplicate(&body),
                Some((format!("k{at}"), String::new())),
                "{body}"
            );
        }
    }
}
