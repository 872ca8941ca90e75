//! [`Authenticator`]: how a server turns a request's credentials into a [`Principal`]. The
//! bindings share one implementation through the server's HTTP layer.

use std::collections::HashMap;

use crate::Principal;

/// Resolves the `Authorization` value of a request (if any) into the caller. `None` means the
/// credentials were not recognized; the caller is then anonymous.
pub trait Authenticator: Send + Sync + 'static {
    /// The principal behind `authorization`.
    fn authenticate(&self, authorization: Option<&str>) -> Option<Principal>;
}

/// Bearer tokens mapped to principals (from configuration).
#[derive(Debug, Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, Principal>,
}

impl StaticTokens {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `Authorization: Bearer <token>` as `principal`.
    pub fn with(
        mut self,
        token: impl Into<String>,
        principal: impl Into<std::sync::Arc<str>>,
    ) -> Self {
        self.tokens
            .insert(token.into(), Principal::named(principal));
        self
    }
}

impl Authenticator for StaticTokens {
    fn authenticate(&self, authorization: Option<&str>) -> Option<Principal> {
        let value = authorization?.trim();
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        self.tokens.get(token.trim()).cloned()
    }
}
