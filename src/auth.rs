//! `--auth FILE`: who may call the agent. A TOML file:
//!
//! ```toml
//! allow_anonymous = false          # default: fail closed once any scheme is configured
//!
//! [bearer]                          # opaque bearer tokens -> principals
//! "token-of-alice" = "alice"
//!
//! [api_keys]                        # API keys in a header -> principals
//! header = "X-API-Key"
//! keys = { "key-of-bob" = "bob" }
//!
//! [jwt]                             # JWT bearer tokens checked against a JWKS
//! issuer = "https://issuer.example"
//! audience = "my-agent"
//! jwks_url = "https://issuer.example/.well-known/jwks.json"
//!
//! [[authorization.allow]]           # present = deny by default; one entry per rule
//! principal = "alice"               # or "*" (any authenticated caller) or "anonymous"
//! tenant = "*"                      # or a tenant, or "" (requests without one)
//! operations = ["GetTask"]          # optional: default all operations
//! ```
//!
//! `--bearer PRINCIPAL=TOKEN` adds bearer tokens without a file. With several schemes, a
//! request may authenticate by any of them, but every credential it sends must be valid
//! ([`AnyOf`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use trident_core::{
    AnyOf, ApiKeys, Authenticator, Authorizer, BearerTokens, DenyByDefault, Operation,
};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthFile {
    #[serde(default)]
    allow_anonymous: bool,
    #[serde(default)]
    bearer: BTreeMap<String, String>,
    api_keys: Option<ApiKeysSection>,
    jwt: Option<JwtSection>,
    authorization: Option<AuthorizationSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiKeysSection {
    header: String,
    keys: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JwtSection {
    issuer: String,
    audience: String,
    jwks_url: String,
    /// Claim naming the principal (default `sub`).
    principal_claim: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthorizationSection {
    #[serde(default)]
    allow: Vec<AllowRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowRule {
    principal: String,
    tenant: String,
    operations: Option<Vec<String>>,
}

/// What `--auth` and `--bearer` configure.
#[derive(Default)]
pub(crate) struct Security {
    /// Every configured scheme (`None`: no authentication).
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// Requests without credentials pass as anonymous.
    pub(crate) allow_anonymous: bool,
    /// The deny-by-default policy, when the file has `[authorization]`.
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
}

/// Reads `file` (if any) and the `--bearer PRINCIPAL=TOKEN` values.
pub(crate) fn load(file: Option<&Path>, bearer: &[String]) -> Result<Security, String> {
    let parsed: AuthFile = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--auth {}: {e}", path.display()))?;
            toml::from_str(&text).map_err(|e| format!("--auth {}: {e}", path.display()))?
        }
        None => AuthFile::default(),
    };
    let mut schemes: Vec<Arc<dyn Authenticator>> = Vec::new();
    let mut tokens = BearerTokens::new();
    for (token, principal) in &parsed.bearer {
        tokens = tokens.with(token.clone(), principal.as_str());
    }
    for pair in bearer {
        let (principal, token) = pair
            .split_once('=')
            .filter(|(p, t)| !p.is_empty() && !t.is_empty())
            .ok_or_else(|| format!("--bearer {pair:?}: expected PRINCIPAL=TOKEN"))?;
        tokens = tokens.with(token, principal);
    }
    if !tokens.is_empty() {
        schemes.push(Arc::new(tokens));
    }
    if let Some(section) = parsed.api_keys {
        let mut keys = ApiKeys::new(section.header);
        for (key, principal) in section.keys {
            keys = keys.with(key, principal.as_str());
        }
        schemes.push(Arc::new(keys));
    }
    if let Some(jwt) = parsed.jwt {
        let mut config = trident_security::JwtConfig::new(jwt.issuer, jwt.audience, jwt.jwks_url);
        if let Some(claim) = jwt.principal_claim {
            config.principal_claim = claim;
        }
        let authenticator = Arc::new(trident_security::JwtAuthenticator::new(config));
        // Keys are refreshed in the background (and on an unknown key id).
        authenticator.spawn_refresh();
        schemes.push(authenticator);
    }
    let authorizer = match parsed.authorization {
        None => None,
        Some(section) => {
            let mut policy = DenyByDefault::new();
            for rule in section.allow {
                policy = match rule.operations {
                    None => policy.allow(&rule.principal, &rule.tenant),
                    Some(names) => {
                        let ops = names
                            .iter()
                            .map(|n| {
                                Operation::ALL
                                    .into_iter()
                                    .find(|o| o.name() == n)
                                    .ok_or_else(|| {
                                        format!("[authorization]: unknown operation {n:?}")
                                    })
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        policy.allow_only(&rule.principal, &rule.tenant, &ops)
                    }
                };
            }
            Some(Arc::new(policy) as Arc<dyn Authorizer>)
        }
    };
    let authenticator: Option<Arc<dyn Authenticator>> = match schemes.len() {
        0 => None,
        1 => schemes.pop(),
        _ => Some(Arc::new(AnyOf(schemes))),
    };
    Ok(Security {
        authenticator,
        allow_anonymous: parsed.allow_anonymous,
        authorizer,
    })
}
