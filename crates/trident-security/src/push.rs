//! Signed push notifications: a compact JWS (a JWT) that binds one webhook POST body to the
//! task and sequence number it belongs to, signed with the agent's key. A receiver checks it
//! with the agent's JWKS ([`verify_notification`]).
//!
//! Claims: `{"iss"?, "iat", "taskId", "seq", "bodySha256"}` where `bodySha256` is the base64url
//! SHA-256 of the exact body bytes sent. Header: `{"alg":"ES256","kid":…,"typ":"JWT"}`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::b64;
use crate::jwk::{Algorithm, JwkSet};
use crate::jws::{self, Compact, JwsFailure};
use crate::key::SigningKey;

/// The claims of a notification JWT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationClaims {
    /// The agent (issuer), when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// Issued at (seconds since the Unix epoch).
    pub iat: i64,
    /// The task the notification is about.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The notification's sequence number for this task and webhook.
    pub seq: u64,
    /// base64url(SHA-256(body)).
    #[serde(rename = "bodySha256")]
    pub body_sha256: String,
}

/// Why a notification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotificationError {
    /// The token is not a well-formed JWS / JWT.
    #[error("malformed notification token: {0}")]
    Malformed(String),
    /// No key of the JWKS verifies it (unknown `kid`, bad signature, algorithm not allowed).
    #[error("notification signature not valid: {0}")]
    Signature(String),
    /// The body is not the one that was signed.
    #[error("body does not match bodySha256")]
    BodyMismatch,
    /// `iat` is older than the accepted age, or in the future.
    #[error("notification is stale or from the future (iat {0})")]
    Stale(i64),
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Claims for `body` of notification `seq` about `task_id`, issued now.
pub fn notification_claims(
    issuer: Option<&str>,
    task_id: &str,
    seq: u64,
    body: &[u8],
) -> NotificationClaims {
    NotificationClaims {
        iss: issuer.map(str::to_owned),
        iat: now(),
        task_id: task_id.to_owned(),
        seq,
        body_sha256: b64::encode(sha2::Sha256::digest(body)),
    }
}

/// Signs `claims` (ES256) as a compact JWT.
pub fn sign_notification(key: &SigningKey, claims: &NotificationClaims) -> String {
    sign_jwt(
        key,
        &serde_json::to_value(claims).unwrap_or(serde_json::Value::Null),
    )
}

/// Signs any `claims` object as a compact ES256 JWT (header `alg`, `kid`, `typ: JWT`): for
/// an operator issuing tokens that a [`crate::JwtAuthenticator`] with this key's JWKS accepts,
/// and for tests.
pub fn sign_jwt(key: &SigningKey, claims: &serde_json::Value) -> String {
    let header = serde_json::json!({ "alg": "ES256", "kid": key.kid(), "typ": "JWT" });
    let input = format!(
        "{}.{}",
        b64::encode(header.to_string()),
        b64::encode(claims.to_string())
    );
    let signature = b64::encode(key.sign(input.as_bytes()));
    format!("{input}.{signature}")
}

/// A compact JWT for notification `seq` of task `task_id` carrying `body` (no `iss`).
pub fn notification_jwt(key: &SigningKey, task_id: &str, seq: u64, body: &[u8]) -> String {
    sign_notification(key, &notification_claims(None, task_id, seq, body))
}

/// Checks a notification: signature by a key of `keys` (ES256 or RS256, key by `kid`),
/// `bodySha256` equal to the SHA-256 of `body`, and `iat` no older than `max_age` (and at
/// most one minute in the future). The caller still compares `taskId` (and `iss`, if it
/// expects one) with what it knows, and may use `seq` to drop replays.
pub fn verify_notification(
    token: &str,
    body: &[u8],
    keys: &JwkSet,
    max_age: Duration,
) -> Result<NotificationClaims, NotificationError> {
    let signature = |e: JwsFailure| match e {
        JwsFailure::Malformed(m) => NotificationError::Malformed(m),
        e => NotificationError::Signature(e.to_string()),
    };
    let parts = Compact::split(token).map_err(signature)?;
    let header = jws::parse_header(parts.protected, &[Algorithm::ES256, Algorithm::RS256])
        .map_err(signature)?;
    jws::verify(
        &header,
        keys,
        parts.signing_input().as_bytes(),
        parts.signature,
    )
    .map_err(signature)?;
    let payload = parts.payload_bytes().map_err(signature)?;
    let claims: NotificationClaims = serde_json::from_slice(&payload)
        .map_err(|e| NotificationError::Malformed(format!("claims: {e}")))?;
    let digest = b64::encode(sha2::Sha256::digest(body));
    if claims.body_sha256 != digest {
        return Err(NotificationError::BodyMismatch);
    }
    let age = now() - claims.iat;
    if age < -60 || age > max_age.as_secs() as i64 {
        return Err(NotificationError::Stale(claims.iat));
    }
    Ok(claims)
}
