//! JWS compact serialization (RFC 7515): parsing, header checks, verification against a
//! [`JwkSet`], and ES256 signing.

use serde_json::{Map, Value};

use crate::b64;
use crate::jwk::{Algorithm, JwkSet, KeyFailure};

/// A parsed protected header.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub(crate) alg: Algorithm,
    pub(crate) kid: Option<String>,
}

/// Why a JWS did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JwsFailure {
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("algorithm {0:?} not allowed")]
    AlgorithmNotAllowed(String),
    #[error("unknown key {0:?}")]
    UnknownKey(String),
    #[error("no key in the set fits {0}")]
    NoKey(Algorithm),
    #[error("{0}")]
    Key(KeyFailure),
}

/// Decodes and checks a base64url protected header: JSON object, `alg` among `allowed`,
/// `kid` a string if present, no `crit` (no extension is understood here).
pub(crate) fn parse_header(protected: &str, allowed: &[Algorithm]) -> Result<Header, JwsFailure> {
    let bytes = b64::decode(protected)
        .map_err(|e| JwsFailure::Malformed(format!("protected header is not base64url: {e}")))?;
    let map: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| {
        JwsFailure::Malformed(format!("protected header is not a JSON object: {e}"))
    })?;
    if map.contains_key("crit") {
        return Err(JwsFailure::Malformed(
            "protected header has \"crit\" extensions, none of which are supported".into(),
        ));
    }
    let alg_name = match map.get("alg") {
        Some(Value::String(s)) => s.as_str(),
        _ => {
            return Err(JwsFailure::Malformed(
                "protected header has no \"alg\"".into(),
            ));
        }
    };
    let alg = Algorithm::from_name(alg_name)
        .filter(|a| allowed.contains(a))
        .ok_or_else(|| JwsFailure::AlgorithmNotAllowed(alg_name.to_owned()))?;
    let kid = match map.get("kid") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(JwsFailure::Malformed("\"kid\" is not a string".into())),
    };
    Ok(Header { alg, kid })
}

/// Verifies `signature` (base64url) over `input` with the key(s) of `keys` the header points
/// to. Returns the id of the key that verified (or `""` when it has none).
pub(crate) fn verify(
    header: &Header,
    keys: &JwkSet,
    input: &[u8],
    signature_b64: &str,
) -> Result<String, JwsFailure> {
    let signature = b64::decode(signature_b64)
        .map_err(|e| JwsFailure::Malformed(format!("signature is not base64url: {e}")))?;
    let candidates = keys.candidates(header.kid.as_deref(), header.alg);
    if candidates.is_empty() {
        return Err(match &header.kid {
            Some(kid) => JwsFailure::UnknownKey(kid.clone()),
            None => JwsFailure::NoKey(header.alg),
        });
    }
    let mut failure = JwsFailure::NoKey(header.alg);
    for key in candidates {
        match key.verify(header.alg, input, &signature) {
            Ok(()) => return Ok(key.kid.clone().unwrap_or_default()),
            Err(e) => failure = JwsFailure::Key(e),
        }
    }
    Err(failure)
}

/// A compact JWS split into its parts.
#[derive(Debug)]
pub(crate) struct Compact<'a> {
    pub(crate) protected: &'a str,
    pub(crate) payload: &'a str,
    pub(crate) signature: &'a str,
}

impl<'a> Compact<'a> {
    /// Splits `header.payload.signature`.
    pub(crate) fn split(token: &'a str) -> Result<Self, JwsFailure> {
        let mut parts = token.split('.');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(protected), Some(payload), Some(signature), None)
                if !protected.is_empty() && !signature.is_empty() =>
            {
                Ok(Self {
                    protected,
                    payload,
                    signature,
                })
            }
            _ => Err(JwsFailure::Malformed(
                "not a compact JWS (header.payload.signature)".into(),
            )),
        }
    }

    /// `protected "." payload`: the bytes the signature covers.
    pub(crate) fn signing_input(&self) -> String {
        format!("{}.{}", self.protected, self.payload)
    }

    /// The decoded payload.
    pub(crate) fn payload_bytes(&self) -> Result<Vec<u8>, JwsFailure> {
        b64::decode(self.payload)
            .map_err(|e| JwsFailure::Malformed(format!("payload is not base64url: {e}")))
    }
}
