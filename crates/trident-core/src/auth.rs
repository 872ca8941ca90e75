//! Authentication and authorization, shared by every binding.
//!
//! - An [`Authenticator`] turns a request's credentials (headers, or gRPC metadata, which
//!   arrive as HTTP/2 headers) into a [`Principal`], or says why it cannot. Implementations
//!   here: [`BearerTokens`] and [`ApiKeys`] (from configuration), [`AnyOf`] (several schemes;
//!   any may authenticate the caller, and every credential sent must be valid). JWT bearer validation against a JWKS lives in
//!   `trident-security`. Each also describes itself for the agent card (`securitySchemes`) and
//!   for `WWW-Authenticate` challenges.
//! - An [`Authorizer`] decides, per call, whether an authenticated caller may perform an
//!   operation on a tenant ([`Access`]); [`DenyByDefault`] allows only what its rules list.
//!
//! The server layer enforces authentication before any binding sees the request (fail closed:
//! once an authenticator is configured only the public agent card is reachable without
//! credentials); the engine asks the authorizer before touching storage.

use std::collections::HashMap;
use std::sync::Arc;

use trident_proto as pb;

use crate::{A2aError, ErrorKind, Operation, Principal};

/// Where an authenticator reads credentials from: request headers, looked up
/// case-insensitively (gRPC metadata are HTTP/2 headers).
pub trait Credentials: Sync {
    /// The value of header `name`, if present and valid UTF-8.
    fn header(&self, name: &str) -> Option<&str>;
}

/// Credentials from a list of `(name, value)` pairs (for tests and custom front ends).
#[derive(Debug, Clone, Copy)]
pub struct HeaderList<'a>(pub &'a [(&'a str, &'a str)]);

impl Credentials for HeaderList<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// Why credentials were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthRejection {
    /// No credentials this server accepts were sent.
    #[error("authentication required")]
    Missing,
    /// Credentials were sent but are not valid (unknown, malformed, expired, wrong audience…).
    #[error("invalid credentials: {0}")]
    Invalid(String),
}

impl AuthRejection {
    /// The `Unauthenticated` error a binding sends for this rejection.
    pub fn to_error(&self) -> A2aError {
        match self {
            AuthRejection::Missing => A2aError::new(
                ErrorKind::Unauthenticated,
                "authentication required: send credentials of a scheme the agent card declares",
            ),
            AuthRejection::Invalid(why) => A2aError::new(
                ErrorKind::Unauthenticated,
                format!("invalid credentials: {why}"),
            ),
        }
    }
}

/// Resolves a request's credentials into the caller.
#[async_trait::async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// `Ok(Some(p))`: authenticated as `p`. `Ok(None)`: no credentials of this scheme were sent.
    /// `Err(Invalid)`: credentials of this scheme were sent but are not valid.
    async fn authenticate(
        &self,
        request: &dyn Credentials,
    ) -> Result<Option<Principal>, AuthRejection>;

    /// `WWW-Authenticate` challenges for a refused request (e.g. `Bearer realm="a2a"`).
    fn challenges(&self, rejection: &AuthRejection) -> Vec<String>;

    /// The scheme(s) to declare in the agent card's `securitySchemes`, by name.
    fn security_schemes(&self) -> Vec<(String, pb::SecurityScheme)>;

    /// The request headers this authenticator reads its credentials from, lowercase (e.g.
    /// `["authorization"]`, or an API key's header). Schemes that read the same headers judge
    /// the same credential: [`AnyOf`] accepts it when one of them does (a static bearer table
    /// and a JWT issuer both read `Authorization: Bearer`). The server refuses a request that
    /// repeats one of these headers (which copy would count is ambiguous). The default, none
    /// named, makes a scheme's refusal final in [`AnyOf`].
    fn credential_headers(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The header bearer tokens (and other RFC 7235 schemes) arrive in, lowercase.
pub const AUTHORIZATION: &str = "authorization";

/// Splits `Authorization: <scheme> <token>`; the scheme compared case-insensitively.
pub fn authorization_token<'a>(request: &'a dyn Credentials, scheme: &str) -> Option<&'a str> {
    let value = request.header(AUTHORIZATION)?.trim();
    let (s, token) = value.split_once(' ')?;
    s.eq_ignore_ascii_case(scheme).then(|| token.trim())
}

/// A challenge in RFC 6750 form: `Bearer realm="a2a"` plus `error="invalid_token"` and a
/// description when credentials were refused.
pub fn bearer_challenge(realm: &str, rejection: &AuthRejection) -> String {
    match rejection {
        AuthRejection::Missing => format!("Bearer realm=\"{realm}\""),
        AuthRejection::Invalid(why) => format!(
            "Bearer realm=\"{realm}\", error=\"invalid_token\", error_description=\"{}\"",
            why.replace(['"', '\\'], "'")
        ),
    }
}

/// Bearer tokens mapped to principals (from configuration).
#[derive(Debug, Clone, Default)]
pub struct BearerTokens {
    tokens: HashMap<String, Principal>,
}

/// The name [`BearerTokens`] declares itself under in the card.
pub const BEARER_SCHEME: &str = "bearer";

impl BearerTokens {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `Authorization: Bearer <token>` as `principal`.
    pub fn with(mut self, token: impl Into<String>, principal: impl Into<Arc<str>>) -> Self {
        self.tokens
            .insert(token.into(), Principal::named(principal));
        self
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[async_trait::async_trait]
impl Authenticator for BearerTokens {
    async fn authenticate(
        &self,
        request: &dyn Credentials,
    ) -> Result<Option<Principal>, AuthRejection> {
        let Some(token) = authorization_token(request, "bearer") else {
            return Ok(None);
        };
        match self.tokens.get(token) {
            Some(p) => Ok(Some(p.clone())),
            None => Err(AuthRejection::Invalid("unknown bearer token".into())),
        }
    }

    fn challenges(&self, rejection: &AuthRejection) -> Vec<String> {
        vec![bearer_challenge("a2a", rejection)]
    }

    fn credential_headers(&self) -> Vec<String> {
        vec![AUTHORIZATION.to_owned()]
    }

    fn security_schemes(&self) -> Vec<(String, pb::SecurityScheme)> {
        vec![(
            BEARER_SCHEME.to_owned(),
            pb::SecurityScheme {
                scheme: Some(pb::security_scheme::Scheme::HttpAuthSecurityScheme(
                    pb::HttpAuthSecurityScheme {
                        description: "An opaque bearer token issued by the operator".into(),
                        scheme: "Bearer".into(),
                        bearer_format: String::new(),
                    },
                )),
            },
        )]
    }
}

/// Keeps the old name working: bearer tokens from configuration.
pub type StaticTokens = BearerTokens;

/// API keys sent in a header, mapped to principals.
#[derive(Debug, Clone)]
pub struct ApiKeys {
    header: String,
    keys: HashMap<String, Principal>,
}

/// The name [`ApiKeys`] declares itself under in the card.
pub const API_KEY_SCHEME: &str = "apiKey";

impl ApiKeys {
    /// Keys read from header `header` (e.g. `X-API-Key`).
    pub fn new(header: impl Into<String>) -> Self {
        Self {
            header: header.into().to_ascii_lowercase(),
            keys: HashMap::new(),
        }
    }

    /// Accepts `key` as `principal`.
    pub fn with(mut self, key: impl Into<String>, principal: impl Into<Arc<str>>) -> Self {
        self.keys.insert(key.into(), Principal::named(principal));
        self
    }
}

#[async_trait::async_trait]
impl Authenticator for ApiKeys {
    async fn authenticate(
        &self,
        request: &dyn Credentials,
    ) -> Result<Option<Principal>, AuthRejection> {
        let Some(key) = request.header(&self.header).map(str::trim) else {
            return Ok(None);
        };
        match self.keys.get(key) {
            Some(p) => Ok(Some(p.clone())),
            None => Err(AuthRejection::Invalid(format!(
                "unknown API key in {}",
                self.header
            ))),
        }
    }

    fn challenges(&self, _rejection: &AuthRejection) -> Vec<String> {
        // RFC 7235 has no API-key scheme; name the header so a client knows what to send.
        vec![format!("ApiKey realm=\"a2a\", header=\"{}\"", self.header)]
    }

    fn credential_headers(&self) -> Vec<String> {
        vec![self.header.clone()]
    }

    fn security_schemes(&self) -> Vec<(String, pb::SecurityScheme)> {
        vec![(
            API_KEY_SCHEME.to_owned(),
            pb::SecurityScheme {
                scheme: Some(pb::security_scheme::Scheme::ApiKeySecurityScheme(
                    pb::ApiKeySecurityScheme {
                        description: "An API key issued by the operator".into(),
                        location: "header".into(),
                        name: self.header.clone(),
                    },
                )),
            },
        )]
    }
}

/// Several schemes, any of which may authenticate the caller — and fail closed: every scheme
/// looks at the request, and **every credential presented must be valid**. A credential one
/// scheme refuses fails the request, whatever another accepted, unless a scheme reading the same
/// headers ([`Authenticator::credential_headers`]) accepts that same credential (a static
/// bearer table and a JWT issuer both read `Authorization`). An invalid bearer token next to a
/// valid API key is refused, in whatever order the schemes are listed; so are valid
/// credentials naming two different callers.
#[derive(Clone)]
pub struct AnyOf(pub Vec<Arc<dyn Authenticator>>);

impl std::fmt::Debug for AnyOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AnyOf({} schemes)", self.0.len())
    }
}

#[async_trait::async_trait]
impl Authenticator for AnyOf {
    async fn authenticate(
        &self,
        request: &dyn Credentials,
    ) -> Result<Option<Principal>, AuthRejection> {
        // Every scheme's verdict, with the headers it read.
        let mut verdicts = Vec::with_capacity(self.0.len());
        for auth in &self.0 {
            verdicts.push((auth.credential_headers(), auth.authenticate(request).await));
        }
        let accepted_by_a_twin = |headers: &[String]| {
            !headers.is_empty()
                && verdicts
                    .iter()
                    .any(|(h, v)| h.as_slice() == headers && matches!(v, Ok(Some(_))))
        };
        for (headers, verdict) in &verdicts {
            if let Err(rejection) = verdict
                && !accepted_by_a_twin(headers)
            {
                return Err(rejection.clone());
            }
        }
        let mut caller: Option<&Principal> = None;
        for (_, verdict) in &verdicts {
            if let Ok(Some(p)) = verdict {
                match caller {
                    Some(first) if first != p => {
                        return Err(AuthRejection::Invalid(
                            "the credentials sent name different callers".into(),
                        ));
                    }
                    _ => caller = Some(p),
                }
            }
        }
        Ok(caller.cloned())
    }

    fn credential_headers(&self) -> Vec<String> {
        let mut headers: Vec<String> = self.0.iter().flat_map(|a| a.credential_headers()).collect();
        headers.sort();
        headers.dedup();
        headers
    }

    fn challenges(&self, rejection: &AuthRejection) -> Vec<String> {
        self.0
            .iter()
            .flat_map(|a| a.challenges(rejection))
            .collect()
    }

    fn security_schemes(&self) -> Vec<(String, pb::SecurityScheme)> {
        self.0.iter().flat_map(|a| a.security_schemes()).collect()
    }
}

/// Writes `authenticator`'s schemes into `card`: `securitySchemes`, and a requirement that
/// any one of them be satisfied (`securityRequirements` lists alternatives). A scheme the card
/// already declares under the same name is left as it is.
pub fn declare_security(card: &mut pb::AgentCard, authenticator: &dyn Authenticator) {
    for (name, scheme) in authenticator.security_schemes() {
        if card.security_schemes.contains_key(&name) {
            continue;
        }
        card.security_requirements.push(pb::SecurityRequirement {
            schemes: [(name.clone(), pb::StringList { list: Vec::new() })]
                .into_iter()
                .collect(),
        });
        card.security_schemes.insert(name, scheme);
    }
}

/// One call, as an [`Authorizer`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// The caller.
    pub principal: &'a Principal,
    /// The tenant the call addresses ("" when none).
    pub tenant: &'a str,
    /// The operation.
    pub operation: Operation,
    /// The message, for SendMessage and SendStreamingMessage (its metadata may name a skill).
    pub message: Option<&'a pb::Message>,
}

/// Decides whether a call may proceed. Called by the engine after authentication and before
/// any store access; a refusal is `PermissionDenied` (existence of a task is never revealed:
/// task-level visibility is the owner scope, which answers `TaskNotFound`).
pub trait Authorizer: Send + Sync + 'static {
    /// `Ok` to allow; an error (usually `PermissionDenied`) to refuse.
    fn authorize(&self, access: &Access<'_>) -> Result<(), A2aError>;
}

/// Allows only what a rule allows: rules map a principal (or `*` for any authenticated
/// caller) to the tenants (or `*`) and operations (or all) it may use. Anonymous callers are
/// refused unless a rule names the principal `anonymous`.
#[derive(Debug, Clone, Default)]
pub struct DenyByDefault {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    principal: String,
    tenant: String,
    operations: Option<Vec<Operation>>,
}

impl DenyByDefault {
    /// No rule: everything is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows `principal` (`*`: any authenticated caller; `anonymous`: callers without
    /// credentials) every operation on `tenant` (`*`: any tenant; `""`: no tenant).
    pub fn allow(mut self, principal: &str, tenant: &str) -> Self {
        self.rules.push(Rule {
            principal: principal.to_owned(),
            tenant: tenant.to_owned(),
            operations: None,
        });
        self
    }

    /// Allows `principal` only `operations` on `tenant`.
    pub fn allow_only(mut self, principal: &str, tenant: &str, operations: &[Operation]) -> Self {
        self.rules.push(Rule {
            principal: principal.to_owned(),
            tenant: tenant.to_owned(),
            operations: Some(operations.to_vec()),
        });
        self
    }
}

impl Authorizer for DenyByDefault {
    fn authorize(&self, access: &Access<'_>) -> Result<(), A2aError> {
        let who = access.principal.id();
        let allowed = self.rules.iter().any(|r| {
            let principal = match (r.principal.as_str(), who) {
                ("anonymous", None) => true,
                ("*", Some(_)) => true,
                (p, Some(id)) => p == id,
                _ => false,
            };
            principal
                && (r.tenant == "*" || r.tenant == access.tenant)
                && r.operations
                    .as_ref()
                    .is_none_or(|ops| ops.contains(&access.operation))
        });
        if allowed {
            Ok(())
        } else {
            Err(A2aError::new(
                ErrorKind::PermissionDenied,
                format!(
                    "{} may not call {} on tenant {:?}",
                    who.unwrap_or("an anonymous caller"),
                    access.operation.name(),
                    access.tenant
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests;
