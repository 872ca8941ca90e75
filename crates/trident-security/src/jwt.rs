//! JWT bearer authentication against an issuer's JWKS (RFC 7519, RFC 6750).

use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use trident_core::Principal;
use trident_core::auth::{
    AuthRejection, Authenticator, Credentials, authorization_token, bearer_challenge,
};
use trident_proto as pb;

use crate::jwk::{Algorithm, JwkSet};
use crate::jws::{self, Compact, JwsFailure};

/// The name [`JwtAuthenticator`] declares itself under in the card (by default).
pub const JWT_SCHEME: &str = "jwt";

/// Largest JWKS document accepted.
const MAX_JWKS_BYTES: usize = 1 << 20;

/// What a [`JwtAuthenticator`] accepts.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// Required `iss`.
    pub issuer: String,
    /// Required `aud` (a string equal to it, or an array containing it).
    pub audience: String,
    /// Where the issuer's JWKS is fetched from (`https://`, or `http://` e.g. on loopback).
    pub jwks_url: String,
    /// Accepted `alg` values (default ES256 and RS256).
    pub algorithms: Vec<Algorithm>,
    /// Clock skew allowed on `exp` and `nbf` (default 60 s).
    pub leeway: Duration,
    /// The claim that names the principal (default `sub`); it must be a non-empty string.
    pub principal_claim: String,
    /// Keys older than this are fetched again before use (default 10 min).
    pub refresh_interval: Duration,
    /// At most one fetch per this interval when a token names an unknown `kid`, or when a
    /// fetch fails (default 30 s): a flood of bogus key ids cannot hammer the JWKS server.
    pub min_refresh_interval: Duration,
    /// Timeout of one JWKS fetch (default 10 s).
    pub fetch_timeout: Duration,
    /// The name in the card's `securitySchemes` (default [`JWT_SCHEME`]).
    pub scheme_name: String,
    /// The `realm` of `WWW-Authenticate` challenges (default `a2a`).
    pub realm: String,
}

impl JwtConfig {
    /// Tokens from `issuer` for `audience`, keys from `jwks_url`; other settings default.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks_url: impl Into<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            jwks_url: jwks_url.into(),
            algorithms: vec![Algorithm::ES256, Algorithm::RS256],
            leeway: Duration::from_secs(60),
            principal_claim: "sub".into(),
            refresh_interval: Duration::from_secs(600),
            min_refresh_interval: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(10),
            scheme_name: JWT_SCHEME.into(),
            realm: "a2a".into(),
        }
    }
}

/// Why a token was refused. `Display` is the reason given to the client (in the
/// `error_description` of the challenge and the error message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Not a compact JWS, or its parts do not decode.
    #[error("malformed token: {0}")]
    Malformed(String),
    /// `alg` not among the accepted ones.
    #[error("algorithm {0:?} not allowed")]
    AlgorithmNotAllowed(String),
    /// No key of the issuer's JWKS has the token's `kid` (even after a refresh).
    #[error("unknown key {0:?}")]
    UnknownKey(String),
    /// The signature does not verify.
    #[error("bad signature: {0}")]
    BadSignature(String),
    /// `exp` (plus leeway) has passed.
    #[error("expired")]
    Expired,
    /// `nbf` (minus leeway) is in the future.
    #[error("not yet valid")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("wrong issuer")]
    WrongIssuer,
    /// `aud` does not name the configured audience.
    #[error("wrong audience")]
    WrongAudience,
    /// A required claim is absent or of the wrong type.
    #[error("missing or invalid claim {0:?}")]
    MissingClaim(String),
    /// The issuer's keys could not be fetched and none are cached.
    #[error("signing keys unavailable: {0}")]
    KeysUnavailable(String),
}

impl From<JwsFailure> for JwtError {
    fn from(e: JwsFailure) -> Self {
        match e {
            JwsFailure::Malformed(m) => JwtError::Malformed(m),
            JwsFailure::AlgorithmNotAllowed(a) => JwtError::AlgorithmNotAllowed(a),
            JwsFailure::UnknownKey(k) => JwtError::UnknownKey(k),
            e @ JwsFailure::NoKey(_) => JwtError::UnknownKey(e.to_string()),
            JwsFailure::Key(k) => JwtError::BadSignature(k.to_string()),
        }
    }
}

#[derive(Debug, Default)]
struct Cache {
    keys: Option<Arc<JwkSet>>,
    fetched_at: Option<Instant>,
}

/// Validates `Authorization: Bearer <JWT>` against an issuer's JWKS: signature (`alg` among
/// the accepted ones, key by `kid`), `iss`, `aud`, `exp` (required), `nbf`; the principal is
/// the configured claim (`sub`).
///
/// Keys are fetched on first use, cached, fetched again when older than
/// `refresh_interval` (or by [`spawn_refresh`](Self::spawn_refresh) on a timer) and when a
/// token names an unknown `kid` — then at most once per `min_refresh_interval`. A failed
/// fetch keeps the cached keys.
pub struct JwtAuthenticator {
    config: JwtConfig,
    client: reqwest::Client,
    cache: RwLock<Cache>,
    /// Held while fetching (one fetch at a time); holds the time of the last attempt.
    fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl JwtAuthenticator {
    /// An authenticator with its own HTTP client (no proxy, `fetch_timeout`).
    pub fn new(config: JwtConfig) -> Self {
        let client = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            .build()
            .unwrap_or_default();
        Self::with_client(config, client)
    }

    /// An authenticator fetching keys with `client` (e.g. one built with TLS settings).
    pub fn with_client(config: JwtConfig, client: reqwest::Client) -> Self {
        Self {
            config,
            client,
            cache: RwLock::new(Cache::default()),
            fetch: tokio::sync::Mutex::new(None),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &JwtConfig {
        &self.config
    }

    /// Fetches the JWKS now (whatever the rate limit) and caches it; returns the key count.
    pub async fn refresh(&self) -> Result<usize, JwtError> {
        let mut last = self.fetch.lock().await;
        *last = Some(Instant::now());
        let keys = self.fetch_and_store().await?;
        Ok(keys.keys.len())
    }

    /// Refreshes the keys every `refresh_interval` in a background task, until the
    /// authenticator is dropped (or the handle aborted).
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn spawn_refresh(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak: Weak<Self> = Arc::downgrade(self);
        let period = self.config.refresh_interval.max(Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(this) = weak.upgrade() else { return };
                if let Err(e) = this.refresh().await {
                    tracing::warn!(url = %this.config.jwks_url, error = %e, "JWKS refresh failed");
                }
            }
        })
    }

    /// Validates `token`; returns its claims.
    pub async fn validate(&self, token: &str) -> Result<Map<String, Value>, JwtError> {
        let parts = Compact::split(token)?;
        let header = jws::parse_header(parts.protected, &self.config.algorithms)?;
        let payload = parts.payload_bytes()?;
        let keys = self.keys_for(header.kid.as_deref()).await?;
        jws::verify(
            &header,
            &keys,
            parts.signing_input().as_bytes(),
            parts.signature,
        )?;
        let claims: Map<String, Value> = serde_json::from_slice(&payload)
            .map_err(|e| JwtError::Malformed(format!("claims are not a JSON object: {e}")))?;
        self.check_claims(&claims)?;
        Ok(claims)
    }

    fn check_claims(&self, claims: &Map<String, Value>) -> Result<(), JwtError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let leeway = self.config.leeway.as_secs_f64();
        let time = |name: &str| -> Result<Option<f64>, JwtError> {
            match claims.get(name) {
                None => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| JwtError::MissingClaim(name.to_owned())),
            }
        };
        let exp = time("exp")?.ok_or_else(|| JwtError::MissingClaim("exp".into()))?;
        if now >= exp + leeway {
            return Err(JwtError::Expired);
        }
        if let Some(nbf) = time("nbf")?
            && now + leeway < nbf
        {
            return Err(JwtError::NotYetValid);
        }
        if claims.get("iss").and_then(Value::as_str) != Some(self.config.issuer.as_str()) {
            return Err(JwtError::WrongIssuer);
        }
        let audience = self.config.audience.as_str();
        let aud_ok = match claims.get("aud") {
            Some(Value::String(a)) => a == audience,
            Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(audience)),
            _ => false,
        };
        if !aud_ok {
            return Err(JwtError::WrongAudience);
        }
        let name = &self.config.principal_claim;
        match claims.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(()),
            _ => Err(JwtError::MissingClaim(name.clone())),
        }
    }

    fn cached(&self) -> (Option<Arc<JwkSet>>, bool) {
        let cache = self
            .cache
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = cache
            .fetched_at
            .is_some_and(|t| t.elapsed() < self.config.refresh_interval);
        (cache.keys.clone(), fresh)
    }

    /// The keys to check a token with key id `kid` against: the cache when fresh and it knows
    /// `kid`; otherwise a fetch (rate-limited once keys are cached).
    async fn keys_for(&self, kid: Option<&str>) -> Result<Arc<JwkSet>, JwtError> {
        let usable = |keys: &Option<Arc<JwkSet>>, fresh: bool| match keys {
            Some(k) if fresh && kid.is_none_or(|kid| k.contains(kid)) => Some(k.clone()),
            _ => None,
        };
        let (keys, fresh) = self.cached();
        if let Some(k) = usable(&keys, fresh) {
            return Ok(k);
        }
        let mut last = self.fetch.lock().await;
        // Another request may have fetched while this one waited.
        let (keys, fresh) = self.cached();
        if let Some(k) = usable(&keys, fresh) {
            return Ok(k);
        }
        if let Some(current) = &keys
            && last.is_some_and(|t| t.elapsed() < self.config.min_refresh_interval)
        {
            // Rate-limited: answer from the cache (an unknown kid stays unknown).
            return Ok(current.clone());
        }
        *last = Some(Instant::now());
        match self.fetch_and_store().await {
            Ok(k) => Ok(k),
            Err(e) => match keys {
                Some(current) => {
                    tracing::warn!(url = %self.config.jwks_url, error = %e, "JWKS refresh failed; using cached keys");
                    Ok(current)
                }
                None => Err(e),
            },
        }
    }

    async fn fetch_and_store(&self) -> Result<Arc<JwkSet>, JwtError> {
        let keys = Arc::new(self.fetch_jwks().await?);
        tracing::debug!(url = %self.config.jwks_url, keys = keys.keys.len(), "JWKS fetched");
        let mut cache = self
            .cache
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.keys = Some(keys.clone());
        cache.fetched_at = Some(Instant::now());
        Ok(keys)
    }

    async fn fetch_jwks(&self) -> Result<JwkSet, JwtError> {
        let unavailable = |e: String| JwtError::KeysUnavailable(e);
        let mut response = self
            .client
            .get(&self.config.jwks_url)
            .header("accept", "application/json")
            .timeout(self.config.fetch_timeout)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| unavailable(e.to_string()))?;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unavailable(e.to_string()))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_JWKS_BYTES {
                return Err(unavailable(format!(
                    "JWKS larger than {MAX_JWKS_BYTES} bytes"
                )));
            }
        }
        JwkSet::from_json(&body).map_err(|e| unavailable(format!("JWKS is not valid: {e}")))
    }
}

#[async_trait::async_trait]
impl Authenticator for JwtAuthenticator {
    async fn authenticate(
        &self,
        request: &dyn Credentials,
    ) -> Result<Option<Principal>, AuthRejection> {
        let Some(token) = authorization_token(request, "bearer") else {
            return Ok(None);
        };
        match self.validate(token).await {
            Ok(claims) => {
                let id = claims
                    .get(&self.config.principal_claim)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Ok(Some(Principal::named(id)))
            }
            Err(e) => Err(AuthRejection::Invalid(e.to_string())),
        }
    }

    fn challenges(&self, rejection: &AuthRejection) -> Vec<String> {
        vec![bearer_challenge(&self.config.realm, rejection)]
    }

    fn credential_headers(&self) -> Vec<String> {
        vec![trident_core::auth::AUTHORIZATION.to_owned()]
    }

    fn security_schemes(&self) -> Vec<(String, pb::SecurityScheme)> {
        vec![(
            self.config.scheme_name.clone(),
            pb::SecurityScheme {
                scheme: Some(pb::security_scheme::Scheme::HttpAuthSecurityScheme(
                    pb::HttpAuthSecurityScheme {
                        description: format!(
                            "A JWT issued by {} for audience {}",
                            self.config.issuer, self.config.audience
                        ),
                        scheme: "Bearer".into(),
                        bearer_format: "JWT".into(),
                    },
                )),
            },
        )]
    }
}
