//! Security behaviour through real `trident serve` processes: per-caller limits on every
//! binding, and authentication per scheme and binding.

use std::time::Duration;

use futures::StreamExt;
use trident_client::Binding;
use trident_core::{CallContext, ErrorKind};
use trident_proto as pb;

use crate::harness::{msg, req};
use crate::process::Trident;

const BINDINGS: [Binding; 3] = [Binding::Grpc, Binding::JsonRpc, Binding::Rest];

/// What `n` SendMessage calls in a row come to.
async fn outcomes(svc: &dyn trident_core::A2aService, n: usize) -> Vec<Result<(), ErrorKind>> {
    let mut outcomes = Vec::new();
    for _ in 0..n {
        outcomes.push(
            svc.send_message(&CallContext::new(), req(msg("hi")))
                .await
                .map(|_| ())
                .map_err(|e| e.kind()),
        );
    }
    outcomes
}

/// Over its request rate a caller gets ResourceExhausted, on every binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_over_its_rate_is_refused_on_every_binding() {
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--rate-limit",
        "0.5",
        "--rate-burst",
        "2",
    ])
    .await;
    for (i, binding) in BINDINGS.into_iter().enumerate() {
        // Each binding's caller from an address of its own, so each starts with a full bucket.
        let octet = 30 + u8::try_from(i).expect("few bindings");
        let svc = client_from(&server, binding, [127, 0, 0, octet].into()).await;
        // The burst, then refusals (the bucket refills at one token per 2 s).
        let outcomes = outcomes(&*svc, 4).await;
        assert!(
            outcomes.contains(&Err(ErrorKind::ResourceExhausted)),
            "{binding:?}: {outcomes:?}"
        );
    }
}

/// A client of `server` over `binding` whose connections come from `ip` (any 127.x.y.z
/// reaches a server on 127.0.0.1).
async fn client_from(
    server: &Trident,
    binding: Binding,
    ip: std::net::IpAddr,
) -> std::sync::Arc<dyn trident_core::A2aService> {
    let http = || {
        reqwest::Client::builder()
            .local_address(ip)
            .build()
            .expect("http client")
    };
    match binding {
        Binding::Rest => std::sync::Arc::new(
            trident_rest::RestClient::with_client(http(), &server.origin).expect("client"),
        ),
        Binding::JsonRpc => std::sync::Arc::new(trident_jsonrpc::JsonRpcClient::with_client(
            http(),
            &format!("{}/", server.origin),
        )),
        Binding::Grpc => {
            let channel = tonic::transport::Endpoint::from_shared(server.origin.clone())
                .expect("endpoint")
                .local_address(Some(ip))
                .connect()
                .await
                .expect("connect");
            std::sync::Arc::new(trident_grpc::GrpcClient::from_channel(
                channel,
                &trident_grpc::GrpcOptions::default(),
            ))
        }
    }
}

/// Anonymous callers are limited by address: one spending its budget leaves another's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_callers_are_limited_per_address() {
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--rate-limit",
        "0.1",
        "--rate-burst",
        "2",
    ])
    .await;
    for (i, binding) in BINDINGS.into_iter().enumerate() {
        let octet = 10 + 2 * u8::try_from(i).expect("few bindings");
        let noisy = client_from(&server, binding, [127, 0, 0, octet].into()).await;
        let quiet = client_from(&server, binding, [127, 0, 0, octet + 1].into()).await;
        let noisy_outcomes = outcomes(&*noisy, 4).await;
        assert!(
            noisy_outcomes.contains(&Err(ErrorKind::ResourceExhausted)),
            "{binding:?}: the noisy caller is limited: {noisy_outcomes:?}"
        );
        for n in 0..2 {
            quiet
                .send_message(&CallContext::new(), req(msg("hi")))
                .await
                .unwrap_or_else(|e| panic!("{binding:?}: quiet caller's request {n}: {e}"));
        }
    }
}

/// A caller may hold at most --max-streams streams; closing one frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_streams_are_limited_per_caller() {
    let server =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--max-streams", "1"]).await;
    for binding in BINDINGS {
        let svc = server.client(binding).await;
        let mut first = svc
            .send_streaming_message(&CallContext::new(), req(msg("slow")))
            .await
            .expect("first stream");
        let _ = first.next().await;
        let second = svc
            .send_streaming_message(&CallContext::new(), req(msg("slow")))
            .await;
        let refused = match second {
            Err(e) => e.kind(),
            Ok(mut s) => match s.next().await {
                Some(Err(e)) => e.kind(),
                other => panic!("{binding:?}: a second stream was served: {other:?}"),
            },
        };
        assert_eq!(refused, ErrorKind::ResourceExhausted, "{binding:?}");
        drop(first);
        // The slot is released once the server notices the client left.
        let svc = &svc;
        crate::wait::until(&format!("{binding:?}: the slot is freed"), || async move {
            match svc
                .send_streaming_message(&CallContext::new(), req(msg("stream 1")))
                .await
            {
                Ok(mut s) => matches!(s.next().await, Some(Ok(_))).then_some(()),
                Err(_) => None,
            }
        })
        .await;
    }
}

/// Once a scheme is configured, only the public card is reachable without credentials; every
/// binding refuses with its own error (and WWW-Authenticate on HTTP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_fail_closed_on_every_binding() {
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--bearer",
        "alice=token-of-alice",
    ])
    .await;
    let card = trident_client::fetch_card(&server.origin)
        .await
        .expect("the public card needs no credentials");
    assert!(
        card.security_schemes.contains_key("bearer"),
        "the card declares the scheme: {:?}",
        card.security_schemes
    );
    for binding in BINDINGS {
        let svc = server.client(binding).await;
        let get = || pb::GetTaskRequest {
            id: "x".into(),
            ..Default::default()
        };
        let missing = svc.get_task(&CallContext::new(), get()).await;
        assert_eq!(
            missing.map_err(|e| e.kind()).err(),
            Some(ErrorKind::Unauthenticated),
            "{binding:?}: no credentials"
        );
        let wrong = svc
            .get_task(&CallContext::new().with_credentials("Bearer nope"), get())
            .await;
        assert_eq!(
            wrong.map_err(|e| e.kind()).err(),
            Some(ErrorKind::Unauthenticated),
            "{binding:?}: unknown token"
        );
        let malformed = svc
            .get_task(&CallContext::new().with_credentials("Bearer"), get())
            .await;
        assert_eq!(
            malformed.map_err(|e| e.kind()).err(),
            Some(ErrorKind::Unauthenticated),
            "{binding:?}: malformed header"
        );
        let alice = CallContext::new().with_credentials("Bearer token-of-alice");
        let task = svc
            .send_message(&alice, req(msg("hi")))
            .await
            .expect("valid token");
        assert!(matches!(
            task.payload,
            Some(pb::send_message_response::Payload::Task(_))
        ));
    }
    // HTTP: 401 with a challenge; other paths (metrics) are closed too.
    let http = reqwest::Client::new();
    for path in ["/tasks/x", "/metrics"] {
        let r = http
            .get(format!("{}{path}", server.origin))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 401, "{path}");
        let challenge = r
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(
            challenge.starts_with("Bearer realm="),
            "{path}: {challenge}"
        );
    }
    let r = http
        .get(format!("{}/tasks/x", server.origin))
        .header("authorization", "Bearer nope")
        .send()
        .await
        .expect("request");
    let challenge = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // JSON-RPC: the error envelope echoes the request id.
    let body: serde_json::Value = http
        .post(format!("{}/", server.origin))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": "req-7", "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(body["id"], "req-7");
    assert_eq!(body["error"]["code"], -31401);
}

/// A signed card verifies with the served JWKS (`trident card --verify`), a gateway can
/// require it, and every push notification carries a JWS over its task, sequence number and
/// body that verifies with the same keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_cards_and_notifications_verify_with_the_served_jwks() {
    use axum::body::Bytes;
    use axum::http::HeaderMap;
    let dir = crate::process::TempDir::new("trident-sign");
    let key = dir.0.join("agent.pem").display().to_string();
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--sign-key",
        &key,
        "--push-allow",
        "127.0.0.1",
    ])
    .await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(["card", &server.origin, "--verify"])
        .output()
        .expect("trident card --verify");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Signature: verified"),
        "{text}"
    );
    let gateway = Trident::gateway(&server.origin, &["--require-signed-upstream"]).await;
    drop(gateway);

    // A raw receiver: the signature covers the exact bytes.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(HeaderMap, Bytes)>();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((headers, body));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let hook = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let svc = server.client(Binding::Rest).await;
    let config = pb::SendMessageConfiguration {
        task_push_notification_config: Some(pb::TaskPushNotificationConfig {
            url: hook,
            ..Default::default()
        }),
        ..Default::default()
    };
    svc.send_message(
        &CallContext::new(),
        crate::harness::req_with(msg("hello"), config),
    )
    .await
    .expect("send");
    let jwks = reqwest::get(format!("{}/.well-known/jwks.json", server.origin))
        .await
        .expect("jwks")
        .bytes()
        .await
        .expect("body");
    let jwks = trident_security::JwkSet::from_json(&jwks).expect("a JWKS");
    let mut seqs = Vec::new();
    while seqs.len() < 3 {
        let (headers, body) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a notification in time")
            .expect("open");
        let token = headers
            .get("a2a-notification-signature")
            .and_then(|v| v.to_str().ok())
            .expect("signed");
        let claims =
            trident_security::verify_notification(token, &body, &jwks, Duration::from_secs(60))
                .expect("the signature verifies with the served keys");
        assert!(
            trident_security::verify_notification(
                token,
                b"{\"tampered\":true}",
                &jwks,
                Duration::from_secs(60)
            )
            .is_err(),
            "another body does not verify"
        );
        seqs.push(claims.seq);
    }
    assert_eq!(seqs, [1, 2, 3], "each event's sequence number is signed");
}

/// JWT bearer tokens checked against a JWKS, and API keys, on every binding: missing,
/// malformed, expired, wrong audience (JWT), unknown (API key) are refused as Unauthenticated;
/// valid credentials are the principal (tasks of one are invisible to the other).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_and_api_key_schemes_on_every_binding() {
    use serde_json::json;
    // The issuer's JWKS, served on loopback.
    let issuer_key = trident_security::SigningKey::generate();
    let jwks = serde_json::to_string(&issuer_key.jwks()).expect("jwks");
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let jwks = jwks.clone();
            async move { jwks }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let jwks_url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = crate::process::TempDir::new("trident-auth");
    let auth = dir.0.join("auth.toml");
    std::fs::write(
        &auth,
        format!(
            "[api_keys]\nheader = \"X-API-Key\"\nkeys = {{ \"key-of-bob\" = \"bob\" }}\n\n\
             [jwt]\nissuer = \"https://issuer.test\"\naudience = \"trident-it\"\n\
             jwks_url = \"{jwks_url}\"\n"
        ),
    )
    .expect("auth file");
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--auth",
        &auth.display().to_string(),
    ])
    .await;
    let card = trident_client::fetch_card(&server.origin)
        .await
        .expect("card");
    assert!(
        card.security_schemes.contains_key("jwt") && card.security_schemes.contains_key("apiKey"),
        "{:?}",
        card.security_schemes.keys().collect::<Vec<_>>()
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let token = |claims: serde_json::Value| trident_security::sign_jwt(&issuer_key, &claims);
    let valid = token(
        json!({"iss": "https://issuer.test", "aud": "trident-it", "sub": "carol", "exp": now + 300}),
    );
    let expired = token(
        json!({"iss": "https://issuer.test", "aud": "trident-it", "sub": "carol", "exp": now - 600}),
    );
    let wrong_audience = token(
        json!({"iss": "https://issuer.test", "aud": "someone-else", "sub": "carol", "exp": now + 300}),
    );
    let other_key = trident_security::sign_jwt(
        &trident_security::SigningKey::generate(),
        &json!({"iss": "https://issuer.test", "aud": "trident-it", "sub": "carol", "exp": now + 300}),
    );
    for binding in BINDINGS {
        let svc = server.client(binding).await;
        let get = || pb::GetTaskRequest {
            id: "x".into(),
            ..Default::default()
        };
        let refused = |cx: CallContext, what: &'static str| {
            let svc = svc.clone();
            async move {
                let r = svc.get_task(&cx, get()).await;
                assert_eq!(
                    r.map_err(|e| e.kind()).err(),
                    Some(ErrorKind::Unauthenticated),
                    "{binding:?}: {what}"
                );
            }
        };
        refused(CallContext::new(), "missing").await;
        refused(
            CallContext::new().with_credentials("Bearer not.a.jwt"),
            "malformed",
        )
        .await;
        refused(
            CallContext::new().with_credentials(format!("Bearer {expired}")),
            "expired",
        )
        .await;
        refused(
            CallContext::new().with_credentials(format!("Bearer {wrong_audience}")),
            "wrong audience",
        )
        .await;
        refused(
            CallContext::new().with_credentials(format!("Bearer {other_key}")),
            "signed by an unknown key",
        )
        .await;
        let carol = CallContext::new().with_credentials(format!("Bearer {valid}"));
        let task = crate::harness::task_of(
            svc.send_message(&carol, req(msg("hi")))
                .await
                .expect("a valid JWT"),
        );
        // API keys: a gRPC client sends metadata, the JSON bindings headers; our clients send
        // only Authorization, so the API key goes through a raw HTTP request below.
        let again = svc
            .get_task(
                &carol,
                pb::GetTaskRequest {
                    id: task.id.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("carol sees her task");
        assert_eq!(again.id, task.id);
    }
    // API key over HTTP+JSON: missing header is 401; unknown key 401; bob's key works, and
    // bob does not see carol's tasks.
    let http = reqwest::Client::new();
    let list = |key: Option<&'static str>| {
        let mut r = http.get(format!("{}/tasks", server.origin));
        if let Some(k) = key {
            r = r.header("x-api-key", k);
        }
        r.send()
    };
    assert_eq!(list(None).await.expect("req").status(), 401);
    assert_eq!(list(Some("nope")).await.expect("req").status(), 401);
    let ok = list(Some("key-of-bob")).await.expect("req");
    assert_eq!(ok.status(), 200);
    let body: serde_json::Value = ok.json().await.expect("json");
    assert_eq!(
        body["totalSize"], 0,
        "bob sees none of carol's tasks: {body}"
    );
}

/// Refused authentications count against the caller's rate like any other request: bad
/// tokens in a loop end in ResourceExhausted (429 with `Retry-After` on HTTP+JSON, a
/// `google.rpc.RetryInfo` on gRPC), not an endless stream of 401s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentications_are_rate_limited_with_retry_after() {
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--bearer",
        "alice=token-of-alice",
        "--rate-limit",
        "0.2",
        "--rate-burst",
        "3",
    ])
    .await;
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..6 {
        let response = http
            .get(format!("{}/tasks", server.origin))
            .header("authorization", "Bearer wrong")
            .send()
            .await
            .expect("HTTP");
        statuses.push(response.status().as_u16());
        if response.status().as_u16() == 429 {
            retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
        }
    }
    assert_eq!(&statuses[..3], &[401, 401, 401], "{statuses:?}");
    assert!(statuses[3..].iter().all(|s| *s == 429), "{statuses:?}");
    assert!(
        retry_after.is_some_and(|s| (1..=5).contains(&s)),
        "Retry-After in whole seconds: {retry_after:?}"
    );
    // The same address is over its rate on the other bindings too, and says when to retry.
    let target = server.origin.trim_start_matches("http://").to_owned();
    let mut grpc =
        trident_proto::a2a_service_client::A2aServiceClient::connect(format!("http://{target}"))
            .await
            .expect("gRPC");
    let mut request = tonic::Request::new(pb::ListTasksRequest::default());
    request
        .metadata_mut()
        .insert("authorization", "Bearer wrong".parse().expect("ascii"));
    let status = grpc.list_tasks(request).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    let details = tonic_types::StatusExt::get_error_details(&status);
    assert!(
        details.retry_info().and_then(|r| r.retry_delay).is_some(),
        "RetryInfo: {details:?}"
    );
    let rpc: serde_json::Value = http
        .post(format!("{}/", server.origin))
        .header("authorization", "Bearer wrong")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("HTTP")
        .json()
        .await
        .expect("JSON");
    assert_eq!(rpc["error"]["code"], -31429, "{rpc}");
    // A valid caller is its own principal, not the address: still served.
    let alice = server.client(Binding::Rest).await;
    alice
        .list_tasks(
            &CallContext::new().with_credentials("Bearer token-of-alice"),
            pb::ListTasksRequest::default(),
        )
        .await
        .expect("alice is served");
}

/// Every credential a request presents must be valid (fail closed): an invalid bearer token
/// next to a valid API key was accepted as the key's caller (the authenticators were tried in
/// turn and the first that accepted won), and a valid bearer token next to an invalid key as
/// the token's. Both are refused on every binding, as are valid credentials of two callers;
/// two valid credentials of one caller are that caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_credential_fails_the_request_whatever_else_is_valid() {
    let dir = crate::process::TempDir::new("trident-auth-both");
    let auth = dir.0.join("auth.toml");
    std::fs::write(
        &auth,
        "[bearer]\n\"token-of-alice\" = \"alice\"\n\n\
         [api_keys]\nheader = \"X-API-Key\"\n\
         keys = { \"key-of-bob\" = \"bob\", \"key-of-alice\" = \"alice\" }\n",
    )
    .expect("auth file");
    let server = Trident::serve(&[
        "--agent",
        "echo",
        "--store",
        "memory",
        "--auth",
        &auth.display().to_string(),
    ])
    .await;
    let http = reqwest::Client::new();
    let mut grpc =
        trident_proto::a2a_service_client::A2aServiceClient::connect(server.origin.clone())
            .await
            .expect("gRPC");
    let cases: [(&str, &str, bool); 5] = [
        ("Bearer wrong", "key-of-bob", false),
        ("Bearer token-of-alice", "wrong", false),
        ("Bearer token-of-alice", "key-of-bob", false),
        ("Bearer token-of-alice", "key-of-alice", true),
        ("", "key-of-bob", true),
    ];
    for (authorization, key, accepted) in cases {
        let what = format!("Authorization {authorization:?} + X-API-Key {key:?}");
        let with_headers = |mut rb: reqwest::RequestBuilder| {
            if !authorization.is_empty() {
                rb = rb.header("authorization", authorization);
            }
            rb.header("x-api-key", key).header("a2a-version", "1.0")
        };
        // HTTP+JSON
        let status = with_headers(http.get(format!("{}/tasks", server.origin)))
            .send()
            .await
            .expect("HTTP")
            .status()
            .as_u16();
        assert_eq!(
            status,
            if accepted { 200 } else { 401 },
            "HTTP+JSON, {what}"
        );
        // JSON-RPC
        let body: serde_json::Value = with_headers(http.post(format!("{}/", server.origin)))
            .json(&serde_json::json!({
                "jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}
            }))
            .send()
            .await
            .expect("HTTP")
            .json()
            .await
            .expect("JSON");
        if accepted {
            assert!(body.get("result").is_some(), "JSON-RPC, {what}: {body}");
        } else {
            assert_eq!(body["error"]["code"], -31401, "JSON-RPC, {what}: {body}");
        }
        // gRPC
        let mut request = tonic::Request::new(pb::ListTasksRequest::default());
        let md = request.metadata_mut();
        if !authorization.is_empty() {
            md.insert("authorization", authorization.parse().expect("ASCII"));
        }
        md.insert("x-api-key", key.parse().expect("ASCII"));
        md.insert("a2a-version", "1.0".parse().expect("ASCII"));
        let outcome = grpc.list_tasks(request).await.map(|_| ());
        match (accepted, outcome) {
            (true, Ok(())) => {}
            (false, Err(status)) => {
                assert_eq!(status.code(), tonic::Code::Unauthenticated, "gRPC, {what}");
            }
            (_, outcome) => panic!("gRPC, {what}: {outcome:?}"),
        }
    }
}

/// A credential header sent twice (`Authorization`, or the API key's header): the first
/// counted and the second was ignored — but a proxy or an authenticator in front may have
/// judged the other one. It is 400 (`InvalidRequest`) in each binding's format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_sent_twice_is_400_on_every_binding() {
    let authenticator = trident_core::AnyOf(vec![
        std::sync::Arc::new(trident_core::BearerTokens::new().with("token-alice", "alice")),
        std::sync::Arc::new(trident_core::ApiKeys::new("X-API-Key").with("key-bob", "bob")),
    ]);
    let engine =
        trident_engine::Engine::builder(std::sync::Arc::new(trident_testkit::agents::Demo)).build();
    let options = trident_server::ServerOptions {
        authenticator: Some(std::sync::Arc::new(authenticator)),
        ..Default::default()
    };
    let (interfaces, task) = crate::harness::spawn_server_with(engine, options).await;
    let http = reqwest::Client::new();
    let mut grpc = trident_proto::a2a_service_client::A2aServiceClient::connect(format!(
        "http://{}",
        interfaces.grpc
    ))
    .await
    .expect("gRPC");
    let twice: [(&str, &str, &str); 2] = [
        ("authorization", "Bearer token-alice", "Bearer someone-else"),
        ("x-api-key", "key-bob", "key-of-someone-else"),
    ];
    for (name, first, second) in twice {
        let with = |rb: reqwest::RequestBuilder| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.append(name, first.parse().expect("value"));
            headers.append(name, second.parse().expect("value"));
            rb.headers(headers).header("a2a-version", "1.0")
        };
        let response = with(http.get(format!("{}/tasks", interfaces.rest)))
            .send()
            .await
            .expect("HTTP");
        assert_eq!(response.status().as_u16(), 400, "HTTP+JSON, {name} twice");
        let body: serde_json::Value = response.json().await.expect("AIP-193");
        assert_eq!(body["error"]["code"], 400, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(name)),
            "{body}"
        );

        let response = with(http.post(&interfaces.jsonrpc))
            .json(&serde_json::json!({
                "jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}
            }))
            .send()
            .await
            .expect("HTTP");
        assert_eq!(response.status().as_u16(), 400, "JSON-RPC, {name} twice");
        let body: serde_json::Value = response.json().await.expect("JSON-RPC");
        assert_eq!(body["error"]["code"], -32600, "{body}");

        let mut request = tonic::Request::new(pb::ListTasksRequest::default());
        let md = request.metadata_mut();
        md.append(name, first.parse().expect("ASCII"));
        md.append(name, second.parse().expect("ASCII"));
        md.insert("a2a-version", "1.0".parse().expect("ASCII"));
        let status = grpc
            .list_tasks(request)
            .await
            .expect_err(&format!("gRPC, {name} twice"));
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    }
    // Once each, they work.
    let response = http
        .get(format!("{}/tasks", interfaces.rest))
        .header("authorization", "Bearer token-alice")
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("HTTP");
    assert_eq!(response.status().as_u16(), 200);
    task.abort();
}
