//! The agent card for v0.3 clients.
//!
//! A v0.3 client reads the card's top-level `url`, `preferredTransport`,
//! `additionalInterfaces` and `protocolVersion`; a 1.0 client reads `supportedInterfaces`.
//! Neither version forbids the other's members (both read JSON objects ignoring unknown
//! members), so [`combined_json`] serves one card both can read: the 1.0 card, whose
//! `supportedInterfaces` also lists the 0.3 interfaces (`protocolVersion: "0.3"`), plus the
//! v0.3 top-level members. Only `securitySchemes` is spelled differently under the same name
//! (v0.3: `{"type": "apiKey", "in": …}`; 1.0: `{"apiKeySecurityScheme": {"location": …}}`);
//! each scheme object then carries both spellings side by side, each version reading its own.

use serde_json::{Map, Value, json};
use trident_core::A2aError;
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

/// The one card both generations read: `card`'s 1.0 ProtoJSON (`v1_json`) with the v0.3
/// top-level members added, and each security scheme carrying both spellings.
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
