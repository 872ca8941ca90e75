//! The agent's signing key: EC P-256 (ES256).

use std::path::Path;

use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _, LineEnding};

use crate::b64;
use crate::jwk::{Jwk, JwkSet};

/// Why a key could not be loaded or saved.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The PEM is not a PKCS#8 EC P-256 private key.
    #[error("not a PKCS#8 P-256 private key: {0}")]
    Pem(String),
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// An EC P-256 private key with its key id (`kid`) and, optionally, the URL its JWKS is
/// published at (`jku`). Signs ES256. `Debug` does not print the secret.
#[derive(Clone)]
pub struct SigningKey {
    key: p256::ecdsa::SigningKey,
    kid: String,
    jku: Option<String>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &"ES256")
            .field("kid", &self.kid)
            .field("jku", &self.jku)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new random key; its `kid` is its RFC 7638 thumbprint.
    pub fn generate() -> Self {
        Self::from_key(p256::ecdsa::SigningKey::random(&mut rand_core::OsRng))
    }

    fn from_key(key: p256::ecdsa::SigningKey) -> Self {
        let mut this = Self {
            key,
            kid: String::new(),
            jku: None,
        };
        this.kid = this.public_jwk().thumbprint();
        this
    }

    /// Loads a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`); `kid` = thumbprint.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, KeyError> {
        p256::ecdsa::SigningKey::from_pkcs8_pem(pem)
            .map(Self::from_key)
            .map_err(|e| KeyError::Pem(e.to_string()))
    }

    /// The key as PKCS#8 PEM (LF line endings).
    pub fn to_pkcs8_pem(&self) -> Result<String, KeyError> {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .map(|pem| pem.as_str().to_owned())
            .map_err(|e| KeyError::Pem(e.to_string()))
    }

    /// Reads a PKCS#8 PEM file.
    pub fn load_pem_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let pem = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_pkcs8_pem(&pem)
    }

    /// Writes the key as a PKCS#8 PEM file (mode 0600 on Unix; the file must not exist).
    pub fn save_pem_file(&self, path: impl AsRef<Path>) -> Result<(), KeyError> {
        use std::io::Write as _;
        let path = path.as_ref();
        let io = |source| KeyError::Io {
            path: path.display().to_string(),
            source,
        };
        let pem = self.to_pkcs8_pem()?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(io)?;
        file.write_all(pem.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)
    }

    /// Replaces the key id.
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = kid.into();
        self
    }

    /// Sets the JWKS URL put in signed cards' protected headers (`jku`).
    pub fn with_jku(mut self, jku: impl Into<String>) -> Self {
        self.jku = Some(jku.into());
        self
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWKS URL, if set.
    pub fn jku(&self) -> Option<&str> {
        self.jku.as_deref()
    }

    /// The public key as a JWK: `{kty:"EC", crv:"P-256", x, y, kid, alg:"ES256", use:"sig"}`.
    pub fn public_jwk(&self) -> Jwk {
        let point = self.key.verifying_key().to_encoded_point(false);
        Jwk {
            kty: "EC".into(),
            kid: Some(self.kid.clone()),
            alg: Some("ES256".into()),
            use_: Some("sig".into()),
            crv: Some("P-256".into()),
            x: point.x().map(b64::encode),
            y: point.y().map(b64::encode),
            n: None,
            e: None,
        }
    }

    /// A JWKS holding just this key's public part.
    pub fn jwks(&self) -> JwkSet {
        JwkSet::new(vec![self.public_jwk()])
    }

    /// An ES256 signature (`r || s`, 64 bytes) over `input`.
    pub(crate) fn sign(&self, input: &[u8]) -> Vec<u8> {
        let sig: p256::ecdsa::Signature = self.key.sign(input);
        sig.to_bytes().to_vec()
    }
}
