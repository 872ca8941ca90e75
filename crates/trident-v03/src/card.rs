//! The agent card for v0.3 clients.
//!
//! A v0.3 client reads the card's top-level `url`, `preferredTransport`,
//! `additionalInterfaces` and `protocolVersion` (its parsers require `url`); a 1.0 client reads
//! `supportedInterfaces`. The v1.0 AgentCard schema allows no member it does not declare
//! (`additionalProperties: false`), so no one card is valid for both: `trident-server`
//! negotiates on `A2A-Version` (absent means 0.3; the official v0.3 clients send none, the 1.0
//! ones send `1.0` on the card fetch too). 1.0 clients get the 1.0 card alone (its
//! `supportedInterfaces` also listing the 0.3 interfaces, `protocolVersion: "0.3"`, from
//! [`with_v03_interfaces`]); the others get [`combined_json`]: that card plus the v0.3
//! top-level members, which a v0.3 client reads and a lenient 1.0 client ignores. Only
//! `securitySchemes` is spelled differently under the same name (v0.3: `{"type": "apiKey",
//! "in": …}`; 1.0: `{"apiKeySecurityScheme": {"location": …}}`); in the combined card each
//! scheme object carries both spellings side by side, each version reading its own.

use serde_json::{Map, Value, json};
use trident_core::{A2aError, ErrorKind};
use trident_proto as pb;
use trident_proto::v03;

use crate::convert::ToV03;

/// `protocolVersion` of the v0.3 card, as the v0.3 SDKs write it.
pub const V03_PROTOCOL_VERSION: &str = "0.3.0";

/// Whether an `AgentInterface.protocolVersion` is a 0.3 one (`0.3`, `0.3.x`).
pub fn is_v03_version(v: &str) -> bool {
    v == "0.3" || v.starts_with("0.3.")
}

/// The card's interfaces a v0.3 client should use: the 0.3 ones when the card lists any, else
/// all of them (a card from a server that does not say).
fn v03_interfaces(card: &pb::AgentCard) -> Vec<v03::AgentInterface> {
    let any_v03 = card
        .supported_interfaces
        .iter()
        .any(|i| is_v03_version(&i.protocol_version));
    card.supported_interfaces
        .iter()
        .filter(|i| !any_v03 || is_v03_version(&i.protocol_version))
        .map(|i| v03::AgentInterface {
            url: i.url.clone(),
            transport: i.protocol_binding.clone(),
        })
        .collect()
}

impl ToV03 for pb::AgentCard {
    type Out = v03::AgentCard;
    fn to_v03(self) -> v03::AgentCard {
        let interfaces = v03_interfaces(&self);
        let (url, preferred_transport) = interfaces
            .first()
            .map(|i| (i.url.clone(), i.transport.clone()))
            .unwrap_or_default();
        let caps = self.capabilities.unwrap_or_default();
        v03::AgentCard {
            protocol_version: V03_PROTOCOL_VERSION.to_owned(),
            name: self.name,
            description: self.description,
            url,
            preferred_transport,
            additional_interfaces: interfaces,
            provider: self.provider.map(|p| v03::AgentProvider {
                url: p.url,
                organization: p.organization,
            }),
            version: self.version,
            documentation_url: self.documentation_url.unwrap_or_default(),
            capabilities: Some(v03::AgentCapabilities {
                streaming: caps.streaming.unwrap_or(false),
                push_notifications: caps.push_notifications.unwrap_or(false),
                extensions: caps
                    .extensions
                    .into_iter()
                    .map(|e| v03::AgentExtension {
                        uri: e.uri,
                        description: e.description,
                        required: e.required,
                        params: e.params,
                    })
                    .collect(),
            }),
            security_schemes: self
                .security_schemes
                .into_iter()
                .map(|(k, s)| (k, scheme_to_v03(s)))
                .collect(),
            security: self
                .security_requirements
                .into_iter()
                .map(security_to_v03)
                .collect(),
            default_input_modes: self.default_input_modes,
            default_output_modes: self.default_output_modes,
            skills: self
                .skills
                .into_iter()
                .map(|s| v03::AgentSkill {
                    id: s.id,
                    name: s.name,
                    description: s.description,
                    tags: s.tags,
                    examples: s.examples,
                    input_modes: s.input_modes,
                    output_modes: s.output_modes,
                    security: s
                        .security_requirements
                        .into_iter()
                        .map(security_to_v03)
                        .collect(),
                })
                .collect(),
            supports_authenticated_extended_card: caps.extended_agent_card.unwrap_or(false),
            signatures: self
                .signatures
                .into_iter()
                .map(|s| v03::AgentCardSignature {
                    protected: s.protected,
                    signature: s.signature,
                    header: s.header,
                })
                .collect(),
            icon_url: self.icon_url.unwrap_or_default(),
        }
    }
}

fn security_to_v03(r: pb::SecurityRequirement) -> v03::Security {
    v03::Security {
        schemes: r
            .schemes
            .into_iter()
            .map(|(k, l)| (k, v03::StringList { list: l.list }))
            .collect(),
    }
}

fn scheme_to_v03(s: pb::SecurityScheme) -> v03::SecurityScheme {
    use pb::security_scheme::Scheme as S;
    use v03::security_scheme::Scheme as O;
    v03::SecurityScheme {
        scheme: s.scheme.map(|s| match s {
            S::ApiKeySecurityScheme(a) => O::ApiKeySecurityScheme(v03::ApiKeySecurityScheme {
                description: a.description,
                location: a.location,
                name: a.name,
            }),
            S::HttpAuthSecurityScheme(h) => {
                O::HttpAuthSecurityScheme(v03::HttpAuthSecurityScheme {
                    description: h.description,
                    scheme: h.scheme,
                    bearer_format: h.bearer_format,
                })
            }
            S::Oauth2SecurityScheme(o) => O::Oauth2SecurityScheme(v03::OAuth2SecurityScheme {
                description: o.description,
                flows: o.flows.map(flows_to_v03),
                oauth2_metadata_url: o.oauth2_metadata_url,
            }),
            S::OpenIdConnectSecurityScheme(o) => {
                O::OpenIdConnectSecurityScheme(v03::OpenIdConnectSecurityScheme {
                    description: o.description,
                    open_id_connect_url: o.open_id_connect_url,
                })
            }
            S::MtlsSecurityScheme(m) => O::MtlsSecurityScheme(v03::MutualTlsSecurityScheme {
                description: m.description,
            }),
        }),
    }
}

/// OAuth flows; 1.0's device-code flow has no v0.3 form (dropped). The implicit and password
/// flows are deprecated in 1.0 but are v0.3's own, so they carry over.
#[allow(deprecated)]
fn flows_to_v03(f: pb::OAuthFlows) -> v03::OAuthFlows {
    use pb::o_auth_flows::Flow as F;
    use v03::o_auth_flows::Flow as O;
    v03::OAuthFlows {
        flow: f.flow.and_then(|f| match f {
            F::AuthorizationCode(a) => {
                Some(O::AuthorizationCode(v03::AuthorizationCodeOAuthFlow {
                    authorization_url: a.authorization_url,
                    token_url: a.token_url,
                    refresh_url: a.refresh_url,
                    scopes: a.scopes,
                }))
            }
            F::ClientCredentials(c) => {
                Some(O::ClientCredentials(v03::ClientCredentialsOAuthFlow {
                    token_url: c.token_url,
                    refresh_url: c.refresh_url,
                    scopes: c.scopes,
                }))
            }
            F::Implicit(i) => Some(O::Implicit(v03::ImplicitOAuthFlow {
                authorization_url: i.authorization_url,
                refresh_url: i.refresh_url,
                scopes: i.scopes,
            })),
            F::Password(p) => Some(O::Password(v03::PasswordOAuthFlow {
                token_url: p.token_url,
                refresh_url: p.refresh_url,
                scopes: p.scopes,
            })),
            F::DeviceCode(_) => None,
        }),
    }
}

/// The v0.3 JSON-schema form of a v0.3 card (what `/.well-known/agent-card.json` and
/// `agent/getAuthenticatedExtendedCard` carry): the ProtoJSON of the model, with security
/// schemes as `{"type": …}` objects, requirements as `{"name": ["scope"]}` and the members
/// a v0.3 client requires always present.
pub fn json(card: &v03::AgentCard) -> Result<Value, A2aError> {
    let mut v = serde_json::to_value(card).map_err(|e| A2aError::internal(format!("card: {e}")))?;
    let Some(m) = v.as_object_mut() else {
        return Err(A2aError::internal("card: not an object"));
    };
    for (key, default) in [
        ("protocolVersion", json!(V03_PROTOCOL_VERSION)),
        ("name", json!("")),
        ("description", json!("")),
        ("url", json!("")),
        ("version", json!("")),
        ("capabilities", json!({})),
        ("defaultInputModes", json!([])),
        ("defaultOutputModes", json!([])),
        ("skills", json!([])),
    ] {
        m.entry(key).or_insert(default);
    }
    if let Some(Value::Object(schemes)) = m.get_mut("securitySchemes") {
        for s in schemes.values_mut() {
            *s = scheme_json(s);
        }
    }
    if let Some(sec) = m.get_mut("security") {
        *sec = security_json(sec);
    }
    if let Some(Value::Array(skills)) = m.get_mut("skills") {
        for skill in skills {
            for (key, default) in [
                ("id", json!("")),
                ("name", json!("")),
                ("description", json!("")),
                ("tags", json!([])),
            ] {
                if let Some(o) = skill.as_object_mut() {
                    o.entry(key).or_insert(default);
                }
            }
            if let Some(sec) = skill.get_mut("security") {
                *sec = security_json(sec);
            }
        }
    }
    Ok(v)
}

/// `{"schemes": {"name": {"list": [..]}}}` → `{"name": [..]}`, for each requirement.
fn security_json(v: &Value) -> Value {
    let list = v.as_array().into_iter().flatten().map(|req| {
        let mut out = Map::new();
        for (name, scopes) in req
            .get("schemes")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let scopes = scopes.get("list").cloned().unwrap_or_else(|| json!([]));
            out.insert(name.clone(), scopes);
        }
        Value::Object(out)
    });
    Value::Array(list.collect())
}

/// One ProtoJSON `SecurityScheme` (`{"apiKeySecurityScheme": {...}}`) in v0.3's form.
fn scheme_json(v: &Value) -> Value {
    let Some((key, inner)) = v.as_object().and_then(|m| m.iter().next()) else {
        return json!({});
    };
    let mut out = inner.as_object().cloned().unwrap_or_default();
    let kind = match key.as_str() {
        "apiKeySecurityScheme" => {
            if let Some(loc) = out.remove("location") {
                out.insert("in".to_owned(), loc);
            }
            "apiKey"
        }
        "httpAuthSecurityScheme" => "http",
        "oauth2SecurityScheme" => {
            out.entry("flows").or_insert(json!({}));
            "oauth2"
        }
        "openIdConnectSecurityScheme" => "openIdConnect",
        _ => "mutualTLS",
    };
    out.insert("type".to_owned(), json!(kind));
    Value::Object(out)
}

/// The card for clients that do not say they speak 1.x (v0.3 clients): `card`'s 1.0 ProtoJSON
/// (`v1_json`) with the v0.3 top-level members added, and each security scheme carrying both
/// spellings. No 1.0 member is changed, so a signature over `card` still verifies for a
/// verifier that reads the 1.0 card out of it. Not valid against the strict v1.0 schema: 1.0
/// clients get `v1_json` itself.
pub fn combined_json(card: &pb::AgentCard, v1_json: Value) -> Result<Value, A2aError> {
    let old = json(&card.clone().to_v03())?;
    let mut v = v1_json;
    let (Some(m), Some(old)) = (v.as_object_mut(), old.as_object()) else {
        return Err(A2aError::internal("card: not an object"));
    };
    for key in [
        "protocolVersion",
        "url",
        "preferredTransport",
        "additionalInterfaces",
        "supportsAuthenticatedExtendedCard",
        "security",
    ] {
        if let Some(value) = old.get(key) {
            m.insert(key.to_owned(), value.clone());
        }
    }
    if let (Some(Value::Object(new)), Some(Value::Object(old))) =
        (m.get_mut("securitySchemes"), old.get("securitySchemes"))
    {
        for (name, scheme) in new.iter_mut() {
            if let (Some(s), Some(Value::Object(o))) = (scheme.as_object_mut(), old.get(name)) {
                for (k, val) in o {
                    s.entry(k.clone()).or_insert_with(|| val.clone());
                }
            }
        }
    }
    Ok(v)
}

/// `card` with a 0.3 twin (`protocolVersion: "0.3"`) after its interfaces, for each 1.0
/// interface, unless it already lists a 0.3 one: v0.3 is served at the same URLs (JSON-RPC
/// by method name, HTTP+JSON under `/v1/`, gRPC as `a2a.v1.A2AService`).
pub fn with_v03_interfaces(mut card: pb::AgentCard) -> pb::AgentCard {
    if card
        .supported_interfaces
        .iter()
        .any(|i| is_v03_version(&i.protocol_version))
    {
        return card;
    }
    let twins: Vec<pb::AgentInterface> = card
        .supported_interfaces
        .iter()
        .filter(|i| i.tenant.is_empty())
        .map(|i| pb::AgentInterface {
            protocol_version: "0.3".to_owned(),
            ..i.clone()
        })
        .collect();
    card.supported_interfaces.extend(twins);
    card
}

/// Whether a card's JSON is a v0.3 card only: it lists no 1.0 `supportedInterfaces` but has
/// v0.3's top-level `url` (a combined card, which has both, is read as 1.0).
pub fn is_v03_only(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
    !has("supportedInterfaces") && has("url")
}

/// Reads a v0.3 card (its JSON-schema form, as v0.3 agents serve it, or the ProtoJSON of the
/// v0.3 model) into the 1.0 card: see [`ToV1`](crate::ToV1) for `v03::AgentCard`.
pub fn from_json(mut v: Value) -> Result<pb::AgentCard, A2aError> {
    let invalid = |why: String| A2aError::new(ErrorKind::InvalidAgentResponse, why);
    let Some(m) = v.as_object_mut() else {
        return Err(invalid("a v0.3 card must be a JSON object".to_owned()));
    };
    if let Some(Value::Object(schemes)) = m.get_mut("securitySchemes") {
        for s in schemes.values_mut() {
            *s = scheme_in(s);
        }
    }
    if let Some(sec) = m.get_mut("security") {
        *sec = security_in(sec);
    }
    if let Some(Value::Array(skills)) = m.get_mut("skills") {
        for skill in skills {
            if let Some(sec) = skill.get_mut("security") {
                *sec = security_in(sec);
            }
        }
    }
    let card: v03::AgentCard =
        serde_json::from_value(v).map_err(|e| invalid(format!("not a v0.3 agent card: {e}")))?;
    Ok(crate::ToV1::to_v1(card))
}

/// `{"name": ["scope"]}` → `{"schemes": {"name": {"list": ["scope"]}}}` for each requirement
/// (one already in that form is kept).
fn security_in(v: &Value) -> Value {
    let list = v.as_array().into_iter().flatten().map(|req| {
        if req.get("schemes").is_some_and(Value::is_object) {
            return req.clone();
        }
        let mut schemes = Map::new();
        for (name, scopes) in req.as_object().into_iter().flatten() {
            let scopes = if scopes.is_array() {
                scopes.clone()
            } else {
                json!([])
            };
            schemes.insert(name.clone(), json!({ "list": scopes }));
        }
        json!({ "schemes": schemes })
    });
    Value::Array(list.collect())
}

/// One v0.3 `{"type": …}` scheme in the model's ProtoJSON (one already in it is kept).
fn scheme_in(v: &Value) -> Value {
    let Some(m) = v.as_object() else {
        return json!({});
    };
    let Some(kind) = m.get("type").and_then(Value::as_str) else {
        return v.clone();
    };
    let mut inner = m.clone();
    inner.remove("type");
    let key = match kind {
        "apiKey" => {
            if let Some(loc) = inner.remove("in") {
                inner.insert("location".to_owned(), loc);
            }
            "apiKeySecurityScheme"
        }
        "http" => "httpAuthSecurityScheme",
        "oauth2" => "oauth2SecurityScheme",
        "openIdConnect" => "openIdConnectSecurityScheme",
        "mutualTLS" => "mtlsSecurityScheme",
        // An unknown kind: no scheme the model can hold.
        _ => return json!({}),
    };
    // Combined cards carry the 1.0 spelling beside the v0.3 one: keep only v0.3's members.
    inner.retain(|k, _| !k.ends_with("SecurityScheme"));
    json!({ key: inner })
}

/// The card's interfaces: `url` with `preferredTransport` (JSON-RPC when unsaid) first, then
/// `additionalInterfaces` not already listed, each with the card's `protocolVersion`.
fn interfaces_to_v1(card: &v03::AgentCard) -> Vec<pb::AgentInterface> {
    let version = if card.protocol_version.is_empty() {
        "0.3".to_owned()
    } else {
        card.protocol_version.clone()
    };
    let preferred = if card.preferred_transport.is_empty() {
        "JSONRPC"
    } else {
        card.preferred_transport.as_str()
    };
    let mut out: Vec<pb::AgentInterface> = Vec::new();
    let main = (!card.url.is_empty()).then_some((card.url.as_str(), preferred));
    let extra = card
        .additional_interfaces
        .iter()
        .map(|i| (i.url.as_str(), i.transport.as_str()));
    for (url, transport) in main.into_iter().chain(extra) {
        if url.is_empty()
            || out
                .iter()
                .any(|i| i.url == url && i.protocol_binding.eq_ignore_ascii_case(transport))
        {
            continue;
        }
        out.push(pb::AgentInterface {
            url: url.to_owned(),
            protocol_binding: transport.to_owned(),
            tenant: String::new(),
            protocol_version: version.clone(),
        });
    }
    out
}

/// The 1.0 card of a v0.3 agent: its interfaces from `url`, `preferredTransport` and
/// `additionalInterfaces` (each with the card's `protocolVersion`), the extended-card flag
/// in the capabilities, security in 1.0's shapes.
impl crate::ToV1 for v03::AgentCard {
    type Out = pb::AgentCard;
    fn to_v1(self) -> pb::AgentCard {
        let supported_interfaces = interfaces_to_v1(&self);
        let caps = self.capabilities.unwrap_or_default();
        pb::AgentCard {
            name: self.name,
            description: self.description,
            supported_interfaces,
            provider: self.provider.map(|p| pb::AgentProvider {
                url: p.url,
                organization: p.organization,
            }),
            version: self.version,
            documentation_url: (!self.documentation_url.is_empty())
                .then_some(self.documentation_url),
            capabilities: Some(pb::AgentCapabilities {
                streaming: Some(caps.streaming),
                push_notifications: Some(caps.push_notifications),
                extensions: caps
                    .extensions
                    .into_iter()
                    .map(|e| pb::AgentExtension {
                        uri: e.uri,
                        description: e.description,
                        required: e.required,
                        params: e.params,
                    })
                    .collect(),
                extended_agent_card: Some(self.supports_authenticated_extended_card),
            }),
            security_schemes: self
                .security_schemes
                .into_iter()
                .map(|(k, s)| (k, scheme_to_v1(s)))
                .collect(),
            security_requirements: self.security.into_iter().map(security_to_v1).collect(),
            default_input_modes: self.default_input_modes,
            default_output_modes: self.default_output_modes,
            skills: self
                .skills
                .into_iter()
                .map(|s| pb::AgentSkill {
                    id: s.id,
                    name: s.name,
                    description: s.description,
                    tags: s.tags,
                    examples: s.examples,
                    input_modes: s.input_modes,
                    output_modes: s.output_modes,
                    security_requirements: s.security.into_iter().map(security_to_v1).collect(),
                })
                .collect(),
            signatures: self
                .signatures
                .into_iter()
                .map(|s| pb::AgentCardSignature {
                    protected: s.protected,
                    signature: s.signature,
                    header: s.header,
                })
                .collect(),
            icon_url: (!self.icon_url.is_empty()).then_some(self.icon_url),
        }
    }
}

fn security_to_v1(r: v03::Security) -> pb::SecurityRequirement {
    pb::SecurityRequirement {
        schemes: r
            .schemes
            .into_iter()
            .map(|(k, l)| (k, pb::StringList { list: l.list }))
            .collect(),
    }
}

fn scheme_to_v1(s: v03::SecurityScheme) -> pb::SecurityScheme {
    use pb::security_scheme::Scheme as S;
    use v03::security_scheme::Scheme as O;
    pb::SecurityScheme {
        scheme: s.scheme.map(|s| match s {
            O::ApiKeySecurityScheme(a) => S::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
                description: a.description,
                location: a.location,
                name: a.name,
            }),
            O::HttpAuthSecurityScheme(h) => S::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
                description: h.description,
                scheme: h.scheme,
                bearer_format: h.bearer_format,
            }),
            O::Oauth2SecurityScheme(o) => S::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
                description: o.description,
                flows: o.flows.map(flows_to_v1),
                oauth2_metadata_url: o.oauth2_metadata_url,
            }),
            O::OpenIdConnectSecurityScheme(o) => {
                S::OpenIdConnectSecurityScheme(pb::OpenIdConnectSecurityScheme {
                    description: o.description,
                    open_id_connect_url: o.open_id_connect_url,
                })
            }
            O::MtlsSecurityScheme(m) => S::MtlsSecurityScheme(pb::MutualTlsSecurityScheme {
                description: m.description,
            }),
        }),
    }
}

/// OAuth flows, v0.3 → 1.0 (the implicit and password flows are deprecated in 1.0 but kept).
#[allow(deprecated)]
fn flows_to_v1(f: v03::OAuthFlows) -> pb::OAuthFlows {
    use pb::o_auth_flows::Flow as F;
    use v03::o_auth_flows::Flow as O;
    pb::OAuthFlows {
        flow: f.flow.map(|f| match f {
            O::AuthorizationCode(a) => F::AuthorizationCode(pb::AuthorizationCodeOAuthFlow {
                authorization_url: a.authorization_url,
                token_url: a.token_url,
                refresh_url: a.refresh_url,
                scopes: a.scopes,
                pkce_required: false,
            }),
            O::ClientCredentials(c) => F::ClientCredentials(pb::ClientCredentialsOAuthFlow {
                token_url: c.token_url,
                refresh_url: c.refresh_url,
                scopes: c.scopes,
            }),
            O::Implicit(i) => F::Implicit(pb::ImplicitOAuthFlow {
                authorization_url: i.authorization_url,
                refresh_url: i.refresh_url,
                scopes: i.scopes,
            }),
            O::Password(p) => F::Password(pb::PasswordOAuthFlow {
                token_url: p.token_url,
                refresh_url: p.refresh_url,
                scopes: p.scopes,
            }),
        }),
    }
}
