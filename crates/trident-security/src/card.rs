//! Agent Card signing (A2A v1.0 §7.4): detached JWS over the JCS form of the card.

use serde::Serialize;
use trident_proto as pb;

use crate::b64;
use crate::jwk::{Algorithm, JwkSet};
use crate::jws::{self, JwsFailure};
use crate::key::SigningKey;

/// The signed payload of `card`: its ProtoJSON form without `signatures`, canonicalized with
/// RFC 8785 (JCS).
///
/// Presence follows the spec: REQUIRED fields are always present (even `""` / `[]`),
/// `optional` fields iff set, other default-valued fields omitted; this is what the
/// `trident_proto` serde impls emit.
pub fn canonical_card(card: &pb::AgentCard) -> Vec<u8> {
    let mut card = card.clone();
    card.signatures.clear();
    let mut value = serde_json::to_value(&card)
        // A prost message serializes to a JSON value without I/O and with string map keys
        // only: this cannot fail.
        .expect("ProtoJSON of an AgentCard");
    if let Some(map) = value.as_object_mut() {
        map.remove("signatures");
    }
    crate::jcs::canonicalize(&value)
}

#[derive(Serialize)]
struct ProtectedHeader<'a> {
    alg: &'static str,
    kid: &'a str,
    typ: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    jku: Option<&'a str>,
}

/// Signs `card` with `key` (ES256) and appends the detached JWS to `card.signatures`:
/// `protected` = base64url of `{"alg":"ES256","kid":…,"typ":"JOSE"[,"jku":…]}`, `signature` =
/// base64url of the signature over `protected "." base64url(canonical_card(card))`.
/// Existing signatures are kept (they do not cover each other).
pub fn sign_card(card: &mut pb::AgentCard, key: &SigningKey) {
    let header = ProtectedHeader {
        alg: "ES256",
        kid: key.kid(),
        typ: "JOSE",
        jku: key.jku(),
    };
    let header = serde_json::to_vec(&header).expect("a struct of strings serializes");
    let protected = b64::encode(header);
    let input = format!("{protected}.{}", b64::encode(canonical_card(card)));
    let signature = b64::encode(key.sign(input.as_bytes()));
    card.signatures.push(pb::AgentCardSignature {
        protected,
        signature,
        header: None,
    });
}

/// Why one signature of a card did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureFailure {
    /// Its position in `signatures`.
    pub index: usize,
    /// The `kid` of its protected header, when readable.
    pub kid: Option<String>,
    /// What went wrong (`unknown key "k1"`, `bad signature`, `algorithm "HS256" not allowed` …).
    pub reason: String,
}

impl std::fmt::Display for SignatureFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "signature {}", self.index)?;
        if let Some(kid) = &self.kid {
            write!(f, " (kid {kid:?})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// Why a card's signatures were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The card has no signature.
    #[error("the agent card is not signed")]
    NoSignatures,
    /// No signature verified; one entry per signature.
    #[error("no valid signature: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<SignatureFailure>),
}

/// Checks that at least one of `card.signatures` is a valid JWS (ES256, RS256, RS384 or
/// RS512) over [`canonical_card`] by a key of `keys`, found by the protected header's `kid`
/// (else the unprotected `header`'s; without any `kid`, every key of the right type). Returns the `kid` of the key that verified
/// (`""` if that key has none).
///
/// `jku` is not followed here: fetch the JWKS (over HTTPS, from a source you trust) and pass it.
pub fn verify_card(card: &pb::AgentCard, keys: &JwkSet) -> Result<String, VerifyError> {
    if card.signatures.is_empty() {
        return Err(VerifyError::NoSignatures);
    }
    let payload = b64::encode(canonical_card(card));
    let mut failures = Vec::new();
    for (index, sig) in card.signatures.iter().enumerate() {
        let fail = |kid: Option<String>, e: JwsFailure| SignatureFailure {
            index,
            kid,
            reason: e.to_string(),
        };
        let mut header = match jws::parse_header(&sig.protected, &Algorithm::ALL) {
            Ok(h) => h,
            Err(e) => {
                failures.push(fail(None, e));
                continue;
            }
        };
        if header.kid.is_none() {
            // RFC 7515 allows `kid` in the unprotected header too.
            header.kid = sig
                .header
                .as_ref()
                .and_then(|h| serde_json::to_value(h).ok())
                .and_then(|h| h.get("kid").and_then(|k| k.as_str()).map(str::to_owned));
        }
        let input = format!("{}.{payload}", sig.protected);
        match jws::verify(&header, keys, input.as_bytes(), &sig.signature) {
            Ok(kid) => return Ok(kid),
            Err(e) => failures.push(fail(header.kid.clone(), e)),
        }
    }
    Err(VerifyError::Invalid(failures))
}
