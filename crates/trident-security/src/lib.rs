//! Security for Trident agents (A2A v1.0 §6.4, §7.4, §8.11):
//!
//! - [`JwtAuthenticator`]: an [`Authenticator`](trident_core::auth::Authenticator) that
//!   validates `Authorization: Bearer <JWT>` against an issuer's JWKS (fetched over HTTP,
//!   cached, refreshed periodically and on an unknown `kid`, rate-limited).
//! - Agent card signing: [`canonical_card`] (drop `signatures`, ProtoJSON, RFC 8785 JCS),
//!   [`sign_card`] (detached JWS, ES256) and [`verify_card`] (ES256 / RS256).
//! - Signed push notifications: [`notification_jwt`] and [`verify_notification`], so a
//!   webhook receiver can check a notification against the agent's JWKS.
//! - Keys: [`SigningKey`] (EC P-256: generate, PKCS#8 PEM load/save, public JWK/JWKS),
//!   [`Jwk`] and [`JwkSet`].

mod b64;
mod card;
pub mod jcs;
mod jwk;
mod jws;
mod jwt;
mod key;
mod push;

pub use card::{SignatureFailure, VerifyError, canonical_card, sign_card, verify_card};
pub use jwk::{Algorithm, Jwk, JwkSet};
pub use jwt::{JWT_SCHEME, JwtAuthenticator, JwtConfig, JwtError};
pub use key::{KeyError, SigningKey};
pub use push::{
    NotificationClaims, NotificationError, notification_claims, notification_jwt, sign_jwt,
    sign_notification, verify_notification,
};

#[cfg(test)]
mod tests;
