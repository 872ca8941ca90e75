use super::*;

fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> HeaderList<'a> {
    HeaderList(pairs)
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn bearer_tokens_accept_known_refuse_unknown_and_ignore_other_schemes() {
    let auth = BearerTokens::new().with("t1", "alice");
    let ok = headers(&[("Authorization", "Bearer t1")]);
    assert_eq!(
        block(auth.authenticate(&ok)),
        Ok(Some(Principal::named("alice")))
    );
    let lower = headers(&[("authorization", "bearer   t1 ")]);
    assert_eq!(
        block(auth.authenticate(&lower)),
        Ok(Some(Principal::named("alice")))
    );
    let unknown = headers(&[("Authorization", "Bearer nope")]);
    assert!(matches!(
        block(auth.authenticate(&unknown)),
        Err(AuthRejection::Invalid(_))
    ));
    let basic = headers(&[("Authorization", "Basic dXNlcg==")]);
    assert_eq!(block(auth.authenticate(&basic)), Ok(None));
    assert_eq!(block(auth.authenticate(&headers(&[]))), Ok(None));
}

#[test]
fn api_keys_read_their_header() {
    let auth = ApiKeys::new("X-API-Key").with("k1", "bob");
    let ok = headers(&[("x-api-key", "k1")]);
    assert_eq!(
        block(auth.authenticate(&ok)),
        Ok(Some(Principal::named("bob")))
    );
    let bad = headers(&[("X-API-Key", "k2")]);
    assert!(block(auth.authenticate(&bad)).is_err());
    assert_eq!(block(auth.authenticate(&headers(&[]))), Ok(None));
}

#[test]
fn any_of_fails_closed_on_any_invalid_credential_in_either_order() {
    let bearer: Arc<dyn Authenticator> = Arc::new(BearerTokens::new().with("t1", "alice"));
    let keys: Arc<dyn Authenticator> = Arc::new(ApiKeys::new("x-api-key").with("k1", "bob"));
    let alice_keys: Arc<dyn Authenticator> =
        Arc::new(ApiKeys::new("x-api-key").with("k2", "alice"));
    for auth in [
        AnyOf(vec![bearer.clone(), keys.clone()]),
        AnyOf(vec![keys.clone(), bearer.clone()]),
    ] {
        let refused = |pairs: &[(&str, &str)], why: &str| {
            assert!(
                matches!(
                    block(auth.authenticate(&headers(pairs))),
                    Err(AuthRejection::Invalid(_))
                ),
                "{why}"
            );
        };
        refused(
            &[("Authorization", "Bearer wrong"), ("x-api-key", "k1")],
            "an invalid bearer token next to a valid API key",
        );
        refused(
            &[("Authorization", "Bearer t1"), ("x-api-key", "wrong")],
            "a valid bearer token next to an invalid API key",
        );
        refused(
            &[("Authorization", "Bearer t1"), ("x-api-key", "k1")],
            "valid credentials of two different callers",
        );
        refused(
            &[("Authorization", "Bearer wrong")],
            "an invalid token alone",
        );
        let one = |pairs: &[(&str, &str)]| block(auth.authenticate(&headers(pairs)));
        assert_eq!(
            one(&[("x-api-key", "k1")]),
            Ok(Some(Principal::named("bob")))
        );
        assert_eq!(
            one(&[("Authorization", "Bearer t1")]),
            Ok(Some(Principal::named("alice")))
        );
        assert_eq!(one(&[]), Ok(None));
        assert_eq!(auth.security_schemes().len(), 2);
        assert_eq!(auth.challenges(&AuthRejection::Missing).len(), 2);
    }
    // Two valid credentials of one caller are that caller.
    let both = AnyOf(vec![bearer.clone(), alice_keys]);
    assert_eq!(
        block(both.authenticate(&headers(&[
            ("Authorization", "Bearer t1"),
            ("x-api-key", "k2")
        ]))),
        Ok(Some(Principal::named("alice")))
    );
    assert_eq!(
        AnyOf(vec![bearer, keys]).credential_headers(),
        ["authorization", "x-api-key"]
    );
}

#[test]
fn schemes_reading_one_header_judge_one_credential() {
    // Two tables of bearer tokens (as a static table and a JWT issuer both read
    // `Authorization`): a token one knows is valid even though the other refuses it.
    let auth = AnyOf(vec![
        Arc::new(BearerTokens::new().with("t1", "alice")),
        Arc::new(BearerTokens::new().with("t2", "carol")),
    ]);
    for (token, who) in [("t1", "alice"), ("t2", "carol")] {
        let value = format!("Bearer {token}");
        assert_eq!(
            block(auth.authenticate(&headers(&[("Authorization", &value)]))),
            Ok(Some(Principal::named(who)))
        );
    }
    assert!(
        block(auth.authenticate(&headers(&[("Authorization", "Bearer t3")]))).is_err(),
        "none knows it"
    );
}

#[test]
fn declared_security_lists_each_scheme_as_an_alternative() {
    let mut card = pb::AgentCard::default();
    let auth = AnyOf(vec![
        Arc::new(BearerTokens::new()),
        Arc::new(ApiKeys::new("x-api-key")),
    ]);
    declare_security(&mut card, &auth);
    assert_eq!(card.security_schemes.len(), 2);
    assert_eq!(card.security_requirements.len(), 2);
    assert!(card.security_schemes.contains_key(BEARER_SCHEME));
}

#[test]
fn challenges_follow_rfc_6750() {
    assert_eq!(
        bearer_challenge("a2a", &AuthRejection::Missing),
        "Bearer realm=\"a2a\""
    );
    assert_eq!(
        bearer_challenge("a2a", &AuthRejection::Invalid("token \"x\" expired".into())),
        "Bearer realm=\"a2a\", error=\"invalid_token\", error_description=\"token 'x' expired\""
    );
}

#[test]
fn deny_by_default_allows_only_its_rules() {
    let policy = DenyByDefault::new().allow("alice", "t1").allow_only(
        "*",
        "public",
        &[Operation::GetTask, Operation::ListTasks],
    );
    let alice = Principal::named("alice");
    let bob = Principal::named("bob");
    let anon = Principal::anonymous();
    let access = |p: &'static Principal, tenant: &'static str, operation| Access {
        principal: p,
        tenant,
        operation,
        message: None,
    };
    let alice: &'static Principal = Box::leak(Box::new(alice));
    let bob: &'static Principal = Box::leak(Box::new(bob));
    let anon: &'static Principal = Box::leak(Box::new(anon));
    assert!(
        policy
            .authorize(&access(alice, "t1", Operation::SendMessage))
            .is_ok()
    );
    assert!(
        policy
            .authorize(&access(alice, "t2", Operation::SendMessage))
            .is_err()
    );
    assert!(
        policy
            .authorize(&access(bob, "public", Operation::GetTask))
            .is_ok()
    );
    let refused = policy
        .authorize(&access(bob, "public", Operation::CancelTask))
        .expect_err("not in the operation list");
    assert_eq!(refused.kind(), ErrorKind::PermissionDenied);
    assert!(
        policy
            .authorize(&access(anon, "public", Operation::GetTask))
            .is_err()
    );
    assert!(
        DenyByDefault::new()
            .authorize(&access(alice, "", Operation::GetTask))
            .is_err()
    );
}
