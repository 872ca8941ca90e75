//! Unit tests: JCS, card signing, JWT authentication against a loopback JWKS server, push
//! notification JWTs, and (ignored, needs `TRIDENT_INTEROP_PYTHON`) the cross-check with the
//! official Python SDK.

// Panicking on an unexpected value is what a test does.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use trident_core::auth::{AuthRejection, Authenticator, HeaderList};
use trident_proto as pb;

use super::*;

mod interop;

// ---------------------------------------------------------------- JCS

/// The canonicalization example of the spec (§7.4 of the digest).
const SPEC_INPUT: &str = r#"{"name":"Example Agent","description":"","capabilities":{"streaming":false,"pushNotifications":false,"extensions":[]},"skills":[]}"#;
const SPEC_CANONICAL: &str = r#"{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}"#;

fn canon(v: &Value) -> String {
    String::from_utf8(jcs::canonicalize(v)).unwrap()
}

#[test]
fn jcs_spec_example() {
    // The spec's input after its presence rules (empty `extensions` dropped, the explicitly
    // set `false`s and the REQUIRED `""` / `[]` kept), then JCS.
    let presence_applied = json!({
        "name": "Example Agent", "description": "",
        "capabilities": {"streaming": false, "pushNotifications": false},
        "skills": [],
    });
    assert_eq!(canon(&presence_applied), SPEC_CANONICAL);

    // The same input as a card: the presence rules come from ProtoJSON. The spec's example
    // lists only some members; a real card also carries its other REQUIRED members
    // (`supportedInterfaces`, `version`, `defaultInputModes`, `defaultOutputModes`), which
    // are emitted even when empty.
    let card: pb::AgentCard = serde_json::from_str(SPEC_INPUT).unwrap();
    let canonical = String::from_utf8(canonical_card(&card)).unwrap();
    assert_eq!(
        canonical,
        r#"{"capabilities":{"pushNotifications":false,"streaming":false},"defaultInputModes":[],"defaultOutputModes":[],"description":"","name":"Example Agent","skills":[],"supportedInterfaces":[],"version":""}"#
    );
    let spec: Value = serde_json::from_str(SPEC_CANONICAL).unwrap();
    let mut ours: Value = serde_json::from_str(&canonical).unwrap();
    for required in [
        "defaultInputModes",
        "defaultOutputModes",
        "supportedInterfaces",
        "version",
    ] {
        ours.as_object_mut().unwrap().remove(required);
    }
    assert_eq!(canon(&ours), canon(&spec));
}

#[test]
fn jcs_numbers_follow_ecmascript() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (100.0, "100"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.1, "0.1"),
        (1.0 / 3.0, "0.3333333333333333"),
        (4.5e300, "4.5e+300"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9007199254740992.0, "9007199254740992"),
        (333_333_333.333_333_3, "333333333.3333333"),
    ];
    for (x, want) in cases {
        assert_eq!(jcs::format_double(*x), *want, "{x:e}");
        assert_eq!(canon(&json!(x)), *want, "{x:e}");
    }
    assert_eq!(canon(&json!(42)), "42");
    assert_eq!(canon(&json!(-7)), "-7");
    // Beyond 2^53 an integer is printed as the double it becomes.
    assert_eq!(canon(&json!(u64::MAX)), "18446744073709552000");
}

#[test]
fn jcs_strings_and_key_order() {
    // RFC 8785 §3.2.3: sorted by UTF-16 code units (the emoji, a surrogate pair, sorts
    // before U+FB33 although its code point is larger).
    let v: Value = serde_json::from_str(
        r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#,
    )
    .unwrap();
    // The members in the order they appear in the canonical text.
    let text = canon(&v);
    let mut keys: Vec<(usize, String)> = v
        .as_object()
        .unwrap()
        .keys()
        .map(|k| {
            (
                text.find(&format!("{}:", canon(&json!(k)))).unwrap(),
                k.clone(),
            )
        })
        .collect();
    keys.sort();
    let keys: Vec<String> = keys.into_iter().map(|(_, k)| k).collect();
    let want = [
        "\r",
        "1",
        "\u{80}",
        "\u{f6}",
        "\u{20ac}",
        "\u{1f600}",
        "\u{fb33}",
    ];
    assert_eq!(keys, want);
    assert_eq!(
        canon(&json!("\u{1}\u{8}\t\n\u{c}\r\"\\/é€😀\u{7f}")),
        "\"\\u0001\\b\\t\\n\\f\\r\\\"\\\\/é€😀\u{7f}\""
    );
    assert_eq!(
        canon(&json!({"b": [1, {"z": null, "a": true}], "a": {}})),
        r#"{"a":{},"b":[1,{"a":true,"z":null}]}"#
    );
}

// ---------------------------------------------------------------- keys and cards

fn sample_card() -> pb::AgentCard {
    serde_json::from_value(json!({
        "name": "Signed Agent",
        "description": "Signs its card — ünïcödé too",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:9/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "extensions": [
            {"uri": "https://example.com/ext", "params": {"n": 1.5, "big": 1e21, "k": [1, "x"]}}
        ]},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "", "tags": ["echo"]}],
        "documentationUrl": "",
    }))
    .unwrap()
}

#[test]
fn key_pem_roundtrip_and_jwk() {
    let key = SigningKey::generate();
    let pem = key.to_pkcs8_pem().unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
    let again = SigningKey::from_pkcs8_pem(&pem).unwrap();
    assert_eq!(again.public_jwk(), key.public_jwk());
    assert_eq!(again.kid(), key.kid());

    let jwks = serde_json::to_value(key.jwks()).unwrap();
    let k = &jwks["keys"][0];
    assert_eq!(k["kty"], "EC");
    assert_eq!(k["crv"], "P-256");
    assert_eq!(k["alg"], "ES256");
    assert_eq!(k["use"], "sig");
    assert_eq!(k["kid"], key.kid());
    assert_eq!(k["x"].as_str().unwrap().len(), 43);
    assert_eq!(k["y"].as_str().unwrap().len(), 43);
    assert!(k.get("d").is_none() && k.get("n").is_none());
    // kid defaults to the RFC 7638 thumbprint: 32 bytes, base64url.
    assert_eq!(key.kid().len(), 43);
    assert_eq!(key.clone().with_kid("k1").kid(), "k1");
    assert!(!format!("{key:?}").contains("BEGIN"));

    let dir = std::env::temp_dir().join(format!("trident-security-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("key.pem");
    let _ = std::fs::remove_file(&path);
    key.save_pem_file(&path).unwrap();
    assert!(key.save_pem_file(&path).is_err(), "never overwrites");
    let loaded = SigningKey::load_pem_file(&path).unwrap();
    assert_eq!(loaded.public_jwk(), key.public_jwk());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(
        SigningKey::from_pkcs8_pem("nope"),
        Err(KeyError::Pem(_))
    ));
}

#[test]
fn sign_then_verify() {
    let key = SigningKey::generate()
        .with_kid("card-key-1")
        .with_jku("https://agent.example/.well-known/jwks.json");
    let mut card = sample_card();
    sign_card(&mut card, &key);
    assert_eq!(card.signatures.len(), 1);
    let sig = &card.signatures[0];
    let header: Value = serde_json::from_slice(&b64::decode(&sig.protected).unwrap()).unwrap();
    assert_eq!(
        header,
        json!({"alg": "ES256", "kid": "card-key-1", "typ": "JOSE",
               "jku": "https://agent.example/.well-known/jwks.json"})
    );
    assert_eq!(b64::decode(&sig.signature).unwrap().len(), 64);
    assert!(!sig.signature.contains(['=', '+', '/']));
    assert_eq!(verify_card(&card, &key.jwks()).unwrap(), "card-key-1");

    // Through JSON and back (what a client does), the signature still holds.
    let wire = serde_json::to_string(&card).unwrap();
    let received: pb::AgentCard = serde_json::from_str(&wire).unwrap();
    assert_eq!(verify_card(&received, &key.jwks()).unwrap(), "card-key-1");
    // The canonical form ignores the signatures themselves.
    let mut unsigned = card.clone();
    unsigned.signatures.clear();
    assert_eq!(canonical_card(&unsigned), canonical_card(&card));
}

#[test]
fn tampered_or_unknown_fails() {
    let key = SigningKey::generate().with_kid("k1");
    let mut card = sample_card();
    sign_card(&mut card, &key);

    let mut tampered = card.clone();
    tampered.description.push('!');
    let err = verify_card(&tampered, &key.jwks()).unwrap_err();
    assert_eq!(
        err,
        VerifyError::Invalid(vec![SignatureFailure {
            index: 0,
            kid: Some("k1".into()),
            reason: "bad signature".into(),
        }])
    );

    // An `optional` field set to its default is part of the payload.
    let mut tampered = card.clone();
    tampered.capabilities.as_mut().unwrap().push_notifications = Some(false);
    assert!(verify_card(&tampered, &key.jwks()).is_err());

    let other = SigningKey::generate().with_kid("k2");
    let err = verify_card(&card, &other.jwks()).unwrap_err();
    assert!(err.to_string().contains("unknown key \"k1\""), "{err}");
    // Same kid, different key.
    let impostor = SigningKey::generate().with_kid("k1");
    let err = verify_card(&card, &impostor.jwks()).unwrap_err();
    assert!(err.to_string().contains("bad signature"), "{err}");

    let mut unsigned = card.clone();
    unsigned.signatures.clear();
    assert_eq!(
        verify_card(&unsigned, &key.jwks()),
        Err(VerifyError::NoSignatures)
    );

    // `alg: none` and unknown algorithms are refused.
    let mut none = card.clone();
    none.signatures[0].protected = b64::encode(r#"{"alg":"none","kid":"k1"}"#);
    let err = verify_card(&none, &key.jwks()).unwrap_err();
    assert!(
        err.to_string().contains("algorithm \"none\" not allowed"),
        "{err}"
    );
}

#[test]
fn several_signatures_one_valid() {
    // Key rotation: an old signature by a retired key plus a new one.
    let old = SigningKey::generate().with_kid("old");
    let new = SigningKey::generate().with_kid("new");
    let mut card = sample_card();
    sign_card(&mut card, &old);
    sign_card(&mut card, &new);
    assert_eq!(verify_card(&card, &new.jwks()).unwrap(), "new");
    assert_eq!(verify_card(&card, &old.jwks()).unwrap(), "old");
    let nobody = SigningKey::generate().with_kid("x");
    match verify_card(&card, &nobody.jwks()) {
        Err(VerifyError::Invalid(f)) => {
            assert_eq!(f.len(), 2);
            assert_eq!(f[0].kid.as_deref(), Some("old"));
            assert_eq!(f[1].kid.as_deref(), Some("new"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn kid_in_unprotected_header_or_absent() {
    let key = SigningKey::generate().with_kid("k1");
    let mut card = sample_card();
    let input = format!(
        "{}.{}",
        b64::encode(r#"{"alg":"ES256"}"#),
        b64::encode(canonical_card(&card))
    );
    let protected = b64::encode(r#"{"alg":"ES256"}"#);
    card.signatures.push(pb::AgentCardSignature {
        protected,
        signature: b64::encode(key.sign(input.as_bytes())),
        header: Some(serde_json::from_value(json!({"kid": "k1"})).unwrap()),
    });
    // kid from the unprotected header.
    assert_eq!(verify_card(&card, &key.jwks()).unwrap(), "k1");
    // No kid anywhere: every EC key is tried.
    card.signatures[0].header = None;
    let other = SigningKey::generate().with_kid("k0");
    let both = JwkSet::new(vec![other.public_jwk(), key.public_jwk()]);
    assert_eq!(verify_card(&card, &both).unwrap(), "k1");
}

// ---------------------------------------------------------------- JWT authentication

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// An ES256 JWT with `claims`, signed by `key` (header kid = the key's kid).
fn jwt(key: &SigningKey, claims: Value) -> String {
    let header = json!({"alg": "ES256", "typ": "JWT", "kid": key.kid()});
    jwt_with_header(key, header, claims)
}

fn jwt_with_header(key: &SigningKey, header: Value, claims: Value) -> String {
    let input = format!(
        "{}.{}",
        b64::encode(header.to_string()),
        b64::encode(claims.to_string())
    );
    let sig = b64::encode(key.sign(input.as_bytes()));
    format!("{input}.{sig}")
}

const ISS: &str = "https://issuer.test";
const AUD: &str = "trident";

fn claims(sub: &str) -> Value {
    json!({"iss": ISS, "aud": AUD, "sub": sub, "iat": now(), "exp": now() + 300})
}

/// A JWKS served over loopback HTTP; counts fetches; its keys can be replaced.
struct JwksServer {
    url: String,
    keys: Arc<Mutex<JwkSet>>,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl JwksServer {
    async fn start(keys: JwkSet) -> Self {
        let keys = Arc::new(Mutex::new(keys));
        let hits = Arc::new(AtomicUsize::new(0));
        let (k, h) = (keys.clone(), hits.clone());
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let (k, h) = (k.clone(), h.clone());
                async move {
                    h.fetch_add(1, Ordering::SeqCst);
                    let body = serde_json::to_string(&*k.lock().unwrap()).unwrap();
                    ([("content-type", "application/json")], body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url,
            keys,
            hits,
            task,
        }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn set(&self, keys: JwkSet) {
        *self.keys.lock().unwrap() = keys;
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn config(url: &str) -> JwtConfig {
    let mut c = JwtConfig::new(ISS, AUD, url);
    c.leeway = Duration::from_secs(5);
    c.min_refresh_interval = Duration::ZERO;
    c
}

async fn auth_bearer(
    auth: &JwtAuthenticator,
    token: &str,
) -> Result<Option<trident_core::Principal>, AuthRejection> {
    let value = format!("Bearer {token}");
    auth.authenticate(&HeaderList(&[("Authorization", value.as_str())]))
        .await
}

fn reason(r: Result<Option<trident_core::Principal>, AuthRejection>) -> String {
    match r {
        Err(AuthRejection::Invalid(why)) => why,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test]
async fn jwt_cases() {
    let key = SigningKey::generate().with_kid("k1");
    let server = JwksServer::start(key.jwks()).await;
    let auth = JwtAuthenticator::new(config(&server.url));

    // No credentials of this scheme.
    assert_eq!(auth.authenticate(&HeaderList(&[])).await, Ok(None));
    assert_eq!(
        auth.authenticate(&HeaderList(&[("authorization", "Basic YTpi")]))
            .await,
        Ok(None)
    );
    assert_eq!(server.hits(), 0, "nothing fetched before a token arrives");

    // Valid → principal from `sub`.
    let ok = auth_bearer(&auth, &jwt(&key, claims("alice"))).await;
    assert_eq!(ok.unwrap().unwrap().id(), Some("alice"));
    assert_eq!(server.hits(), 1);
    // Cached.
    let ok = auth_bearer(&auth, &jwt(&key, claims("bob"))).await;
    assert_eq!(ok.unwrap().unwrap().id(), Some("bob"));
    assert_eq!(server.hits(), 1);
    // `aud` as an array.
    let mut c = claims("carol");
    c["aud"] = json!(["other", AUD]);
    assert!(auth_bearer(&auth, &jwt(&key, c)).await.is_ok());

    // Malformed.
    let why = reason(auth_bearer(&auth, "not-a-jwt").await);
    assert!(why.starts_with("malformed token"), "{why}");
    let why = reason(auth_bearer(&auth, "a.b.c").await);
    assert!(why.starts_with("malformed token"), "{why}");
    let why = reason(auth_bearer(&auth, &jwt(&key, claims("a")).replace('.', "..")).await);
    assert!(why.starts_with("malformed token"), "{why}");

    // Expired (beyond leeway); within leeway still fine.
    let mut c = claims("a");
    c["exp"] = json!(now() - 3600);
    assert_eq!(reason(auth_bearer(&auth, &jwt(&key, c)).await), "expired");
    let mut c = claims("a");
    c["exp"] = json!(now() - 1);
    assert!(auth_bearer(&auth, &jwt(&key, c)).await.is_ok());
    let mut c = claims("a");
    c.as_object_mut().unwrap().remove("exp");
    assert_eq!(
        reason(auth_bearer(&auth, &jwt(&key, c)).await),
        "missing or invalid claim \"exp\""
    );
    // Not yet valid.
    let mut c = claims("a");
    c["nbf"] = json!(now() + 3600);
    assert_eq!(
        reason(auth_bearer(&auth, &jwt(&key, c)).await),
        "not yet valid"
    );

    // Wrong audience / issuer.
    let mut c = claims("a");
    c["aud"] = json!("someone-else");
    assert_eq!(
        reason(auth_bearer(&auth, &jwt(&key, c)).await),
        "wrong audience"
    );
    let mut c = claims("a");
    c["iss"] = json!("https://evil.test");
    assert_eq!(
        reason(auth_bearer(&auth, &jwt(&key, c)).await),
        "wrong issuer"
    );
    // No principal claim.
    let mut c = claims("a");
    c.as_object_mut().unwrap().remove("sub");
    assert_eq!(
        reason(auth_bearer(&auth, &jwt(&key, c)).await),
        "missing or invalid claim \"sub\""
    );

    // Algorithm not allowed (alg confusion / none).
    let t = jwt_with_header(&key, json!({"alg": "HS256", "kid": "k1"}), claims("a"));
    assert_eq!(
        reason(auth_bearer(&auth, &t).await),
        "algorithm \"HS256\" not allowed"
    );
    let t = jwt_with_header(&key, json!({"alg": "none", "kid": "k1"}), claims("a"));
    assert!(reason(auth_bearer(&auth, &t).await).contains("not allowed"));

    // Signed by another key under a known kid.
    let impostor = SigningKey::generate().with_kid("k1");
    let why = reason(auth_bearer(&auth, &jwt(&impostor, claims("a"))).await);
    assert!(why.starts_with("bad signature"), "{why}");

    // Unknown kid: one refresh, then rejected.
    let before = server.hits();
    let stranger = SigningKey::generate().with_kid("k-unknown");
    let why = reason(auth_bearer(&auth, &jwt(&stranger, claims("a"))).await);
    assert_eq!(why, "unknown key \"k-unknown\"");
    assert_eq!(
        server.hits(),
        before + 1,
        "refreshed once for the unknown kid"
    );

    // Challenges (RFC 6750) and the card declaration.
    let rejection = AuthRejection::Invalid("expired".into());
    assert_eq!(
        auth.challenges(&rejection),
        vec![r#"Bearer realm="a2a", error="invalid_token", error_description="expired""#]
    );
    assert_eq!(
        auth.challenges(&AuthRejection::Missing),
        vec![r#"Bearer realm="a2a""#]
    );
    let schemes = auth.security_schemes();
    assert_eq!(schemes.len(), 1);
    assert_eq!(schemes[0].0, JWT_SCHEME);
    let scheme = serde_json::to_value(&schemes[0].1).unwrap();
    assert_eq!(scheme["httpAuthSecurityScheme"]["scheme"], "Bearer");
    assert_eq!(scheme["httpAuthSecurityScheme"]["bearerFormat"], "JWT");
}

#[tokio::test]
async fn jwt_custom_principal_claim() {
    let key = SigningKey::generate().with_kid("k1");
    let server = JwksServer::start(key.jwks()).await;
    let mut cfg = config(&server.url);
    cfg.principal_claim = "email".into();
    let auth = JwtAuthenticator::new(cfg);
    let mut c = claims("ignored");
    c["email"] = json!("dana@example.com");
    let p = auth_bearer(&auth, &jwt(&key, c)).await.unwrap().unwrap();
    assert_eq!(p.id(), Some("dana@example.com"));
}

#[tokio::test]
async fn jwt_unknown_kids_are_rate_limited() {
    let key = SigningKey::generate().with_kid("k1");
    let server = JwksServer::start(key.jwks()).await;
    let mut cfg = config(&server.url);
    cfg.min_refresh_interval = Duration::from_secs(60);
    let auth = Arc::new(JwtAuthenticator::new(cfg));
    assert!(auth_bearer(&auth, &jwt(&key, claims("a"))).await.is_ok());
    assert_eq!(server.hits(), 1);

    let mut tasks = Vec::new();
    for i in 0..50 {
        let auth = auth.clone();
        tasks.push(tokio::spawn(async move {
            let bogus = SigningKey::generate().with_kid(format!("bogus-{i}"));
            reason(auth_bearer(&auth, &jwt(&bogus, claims("a"))).await)
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().starts_with("unknown key"));
    }
    assert_eq!(
        server.hits(),
        1,
        "within min_refresh_interval of the last fetch"
    );
    // Valid tokens keep working meanwhile.
    assert!(auth_bearer(&auth, &jwt(&key, claims("a"))).await.is_ok());
}

#[tokio::test]
async fn jwt_key_rotation() {
    let k1 = SigningKey::generate().with_kid("k1");
    let k2 = SigningKey::generate().with_kid("k2");
    let server = JwksServer::start(k1.jwks()).await;
    let auth = JwtAuthenticator::new(config(&server.url));
    assert!(auth_bearer(&auth, &jwt(&k1, claims("a"))).await.is_ok());
    let why = reason(auth_bearer(&auth, &jwt(&k2, claims("a"))).await);
    assert_eq!(why, "unknown key \"k2\"");

    // The issuer publishes k2 (and later retires k1).
    server.set(JwkSet::new(vec![k1.public_jwk(), k2.public_jwk()]));
    let p = auth_bearer(&auth, &jwt(&k2, claims("rotated"))).await;
    assert_eq!(p.unwrap().unwrap().id(), Some("rotated"));
    assert!(auth_bearer(&auth, &jwt(&k1, claims("a"))).await.is_ok());
    server.set(k2.jwks());
    assert_eq!(auth.refresh().await.unwrap(), 1);
    assert!(reason(auth_bearer(&auth, &jwt(&k1, claims("a"))).await).starts_with("unknown key"));
    assert!(auth_bearer(&auth, &jwt(&k2, claims("a"))).await.is_ok());
}

#[tokio::test]
async fn jwt_keys_refreshed_when_stale_and_on_timer() {
    let k1 = SigningKey::generate().with_kid("k1");
    let server = JwksServer::start(k1.jwks()).await;
    let mut cfg = config(&server.url);
    cfg.refresh_interval = Duration::from_millis(200);
    cfg.min_refresh_interval = Duration::from_secs(60);
    let auth = Arc::new(JwtAuthenticator::new(cfg));
    assert!(auth_bearer(&auth, &jwt(&k1, claims("a"))).await.is_ok());
    assert_eq!(server.hits(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Stale keys are fetched again on use, but no more than once per min_refresh_interval.
    assert!(auth_bearer(&auth, &jwt(&k1, claims("a"))).await.is_ok());
    assert_eq!(
        server.hits(),
        1,
        "rate limit applies to stale refreshes too"
    );

    // The background timer refreshes regardless.
    let task = auth.spawn_refresh();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.hits() < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(server.hits() >= 3, "hits {}", server.hits());
    task.abort();
}

#[tokio::test]
async fn jwt_stale_keys_refetched() {
    let k1 = SigningKey::generate().with_kid("k1");
    let server = JwksServer::start(k1.jwks()).await;
    let mut cfg = config(&server.url);
    cfg.refresh_interval = Duration::from_millis(100);
    let auth = JwtAuthenticator::new(cfg);
    assert!(auth_bearer(&auth, &jwt(&k1, claims("a"))).await.is_ok());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(auth_bearer(&auth, &jwt(&k1, claims("a"))).await.is_ok());
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn jwt_jwks_unreachable() {
    // A port nothing listens on (bound, then closed).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    drop(listener);
    let auth = JwtAuthenticator::new(config(&url));
    let key = SigningKey::generate();
    let why = reason(auth_bearer(&auth, &jwt(&key, claims("a"))).await);
    assert!(why.starts_with("signing keys unavailable"), "{why}");
}

// ---------------------------------------------------------------- push notifications

#[test]
fn notification_roundtrip() {
    let key = SigningKey::generate().with_kid("push-1");
    let body = br#"{"statusUpdate":{"taskId":"t-1","status":{"state":"TASK_STATE_COMPLETED"}}}"#;
    let token = notification_jwt(&key, "t-1", 7, body);
    let claims = verify_notification(&token, body, &key.jwks(), Duration::from_secs(300)).unwrap();
    assert_eq!(claims.task_id, "t-1");
    assert_eq!(claims.seq, 7);
    assert_eq!(claims.iss, None);
    assert!((claims.iat - now()).abs() < 5);

    let parts: Vec<&str> = token.split('.').collect();
    let header: Value = serde_json::from_slice(&b64::decode(parts[0]).unwrap()).unwrap();
    assert_eq!(
        header,
        json!({"alg": "ES256", "kid": "push-1", "typ": "JWT"})
    );
    let payload: Value = serde_json::from_slice(&b64::decode(parts[1]).unwrap()).unwrap();
    assert_eq!(payload["taskId"], "t-1");
    assert_eq!(payload["bodySha256"].as_str().unwrap().len(), 43);
    assert!(payload.get("iss").is_none());

    // A changed body does not verify.
    let mut changed = body.to_vec();
    changed[20] ^= 1;
    assert_eq!(
        verify_notification(&token, &changed, &key.jwks(), Duration::from_secs(300)),
        Err(NotificationError::BodyMismatch)
    );
    // Another agent's keys do not verify.
    let other = SigningKey::generate().with_kid("push-1");
    assert!(matches!(
        verify_notification(&token, body, &other.jwks(), Duration::from_secs(300)),
        Err(NotificationError::Signature(_))
    ));
    // With an issuer; too old.
    let mut c = notification_claims(Some("https://agent.test"), "t-2", 1, body);
    c.iat -= 3600;
    let token = sign_notification(&key, &c);
    match verify_notification(&token, body, &key.jwks(), Duration::from_secs(300)) {
        Err(NotificationError::Stale(iat)) => assert_eq!(iat, c.iat),
        other => panic!("{other:?}"),
    }
    let fresh = verify_notification(&token, body, &key.jwks(), Duration::from_secs(7200)).unwrap();
    assert_eq!(fresh.iss.as_deref(), Some("https://agent.test"));
    assert!(matches!(
        verify_notification("x.y", body, &key.jwks(), Duration::from_secs(1)),
        Err(NotificationError::Malformed(_))
    ));
}
