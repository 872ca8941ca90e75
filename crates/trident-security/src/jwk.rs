//! JSON Web Keys (RFC 7517) and signature verification with them (RFC 7518 §3).

use p256::ecdsa::signature::Verifier as _;
use rsa::BigUint;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::b64;

/// A JWS algorithm this crate signs or verifies with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// ECDSA P-256 with SHA-256 (signatures are `r || s`, 64 bytes).
    ES256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
}

impl Algorithm {
    /// Every algorithm this crate verifies.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::ES256,
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::RS512,
    ];

    /// The JOSE name (`"ES256"`, `"RS256"` …).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::ES256 => "ES256",
            Algorithm::RS256 => "RS256",
            Algorithm::RS384 => "RS384",
            Algorithm::RS512 => "RS512",
        }
    }

    /// Parses a JOSE name; `None` for algorithms this crate does not support (`none`, `HS256`…).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    fn key_type(self) -> &'static str {
        match self {
            Algorithm::ES256 => "EC",
            _ => "RSA",
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| format!("unsupported JWS algorithm {s:?}"))
    }
}

/// One public JSON Web Key. Members this crate does not use (`x5c`, `key_ops` …) are ignored
/// when parsing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    /// Key type: `EC` or `RSA` (others are kept but never match).
    pub kty: String,
    /// Key id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// Intended algorithm, when the key is restricted to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// Intended use: `sig` (keys with another use are never used to verify).
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
    /// EC curve (`P-256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crv: Option<String>,
    /// EC x coordinate, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    /// EC y coordinate, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
    /// RSA modulus, base64url (big-endian).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    /// RSA public exponent, base64url (big-endian).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
}

/// A JWK Set: `{"keys": [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JwkSet {
    /// The keys.
    #[serde(default)]
    pub keys: Vec<Jwk>,
}

impl JwkSet {
    /// A set of `keys`.
    pub fn new(keys: Vec<Jwk>) -> Self {
        Self { keys }
    }

    /// Parses a JWKS document.
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json)
    }

    /// The key with id `kid`, if any.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| k.kid.as_deref() == Some(kid))
    }

    /// Whether a key has id `kid`.
    pub fn contains(&self, kid: &str) -> bool {
        self.find(kid).is_some()
    }

    /// Keys that could have made an `alg` signature with key id `kid` (when the header names
    /// none, every key of the right type).
    pub(crate) fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> Vec<&Jwk> {
        match kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(|k| k.kid.as_deref() == Some(kid))
                .collect(),
            None => self
                .keys
                .iter()
                .filter(|k| k.kty == alg.key_type())
                .collect(),
        }
    }
}

/// Why a key did not verify a signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeyFailure {
    /// The key cannot make signatures of this algorithm (type, curve, `alg` or `use`).
    #[error("key does not fit {0}: {1}")]
    Unsuitable(Algorithm, String),
    /// The key's parameters are broken.
    #[error("unusable key: {0}")]
    BadKey(String),
    /// The signature does not verify.
    #[error("bad signature")]
    BadSignature,
}

/// Smallest RSA modulus accepted (RFC 7518 §3.3).
const MIN_RSA_BITS: usize = 2048;

impl Jwk {
    /// Verifies `signature` over `input` as an `alg` JWS signature made with this key.
    pub(crate) fn verify(
        &self,
        alg: Algorithm,
        input: &[u8],
        signature: &[u8],
    ) -> Result<(), KeyFailure> {
        if self.kty != alg.key_type() {
            return Err(KeyFailure::Unsuitable(
                alg,
                format!("kty is {:?}", self.kty),
            ));
        }
        if let Some(a) = &self.alg
            && a != alg.name()
        {
            return Err(KeyFailure::Unsuitable(alg, format!("key alg is {a:?}")));
        }
        if let Some(u) = &self.use_
            && u != "sig"
        {
            return Err(KeyFailure::Unsuitable(alg, format!("key use is {u:?}")));
        }
        match alg {
            Algorithm::ES256 => self.verify_es256(input, signature),
            Algorithm::RS256 => self.verify_rsa::<sha2::Sha256>(input, signature),
            Algorithm::RS384 => self.verify_rsa::<sha2::Sha384>(input, signature),
            Algorithm::RS512 => self.verify_rsa::<sha2::Sha512>(input, signature),
        }
    }

    fn member(&self, name: &str, value: &Option<String>) -> Result<Vec<u8>, KeyFailure> {
        let text = value
            .as_deref()
            .ok_or_else(|| KeyFailure::BadKey(format!("missing {name}")))?;
        b64::decode(text).map_err(|e| KeyFailure::BadKey(format!("{name}: {e}")))
    }

    fn verify_es256(&self, input: &[u8], signature: &[u8]) -> Result<(), KeyFailure> {
        if self.crv.as_deref() != Some("P-256") {
            return Err(KeyFailure::Unsuitable(
                Algorithm::ES256,
                format!("crv is {:?}", self.crv),
            ));
        }
        let key = self.es256_key()?;
        let sig =
            p256::ecdsa::Signature::from_slice(signature).map_err(|_| KeyFailure::BadSignature)?;
        key.verify(input, &sig)
            .map_err(|_| KeyFailure::BadSignature)
    }

    pub(crate) fn es256_key(&self) -> Result<p256::ecdsa::VerifyingKey, KeyFailure> {
        let x = self.member("x", &self.x)?;
        let y = self.member("y", &self.y)?;
        if x.len() != 32 || y.len() != 32 {
            return Err(KeyFailure::BadKey(
                "P-256 coordinates must be 32 bytes".into(),
            ));
        }
        let point = p256::EncodedPoint::from_affine_coordinates(
            p256::FieldBytes::from_slice(&x),
            p256::FieldBytes::from_slice(&y),
            false,
        );
        p256::ecdsa::VerifyingKey::from_encoded_point(&point)
            .map_err(|_| KeyFailure::BadKey("not a point on P-256".into()))
    }

    fn verify_rsa<D>(&self, input: &[u8], signature: &[u8]) -> Result<(), KeyFailure>
    where
        D: sha2::Digest + rsa::pkcs8::AssociatedOid,
    {
        let n = BigUint::from_bytes_be(&self.member("n", &self.n)?);
        let e = BigUint::from_bytes_be(&self.member("e", &self.e)?);
        if n.bits() < MIN_RSA_BITS {
            return Err(KeyFailure::BadKey(format!(
                "RSA modulus of {} bits (at least {MIN_RSA_BITS} required)",
                n.bits()
            )));
        }
        let key = rsa::RsaPublicKey::new(n, e).map_err(|e| KeyFailure::BadKey(e.to_string()))?;
        let hashed = D::digest(input);
        key.verify(rsa::Pkcs1v15Sign::new::<D>(), &hashed, signature)
            .map_err(|_| KeyFailure::BadSignature)
    }

    /// RFC 7638 thumbprint (SHA-256, base64url) of an EC or RSA key.
    pub fn thumbprint(&self) -> String {
        let members = match self.kty.as_str() {
            "EC" => serde_json::json!({
                "crv": self.crv, "kty": self.kty, "x": self.x, "y": self.y,
            }),
            _ => serde_json::json!({ "e": self.e, "kty": self.kty, "n": self.n }),
        };
        b64::encode(sha2::Sha256::digest(crate::jcs::canonicalize(&members)))
    }
}
