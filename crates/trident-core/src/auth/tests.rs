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
fn any_of_takes_the_first_success_and_reports_refusals() {
    let auth = AnyOf(vec![
        Arc::new(BearerTokens::new().with("t1", "alice")),
        Arc::new(ApiKeys::new("x-api-key").with("k1", "bob")),
    ]);
    let both = headers(&[("Authorization", "Bearer wrong"), ("x-api-key", "k1")]);
    assert_eq!(
        block(auth.authenticate(&both)),
        Ok(Some(Principal::named("bob"))),
        "one valid credential is enough"
    );
    let wrong = headers(&[("Authorization", "Bearer wrong")]);
    assert!(block(auth.authenticate(&wrong)).is_err());
    assert_eq!(block(auth.authenticate(&headers(&[]))), Ok(None));
    assert_eq!(auth.security_schemes().len(), 2);
    assert_eq!(auth.challenges(&AuthRejection::Missing).len(), 2);
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
