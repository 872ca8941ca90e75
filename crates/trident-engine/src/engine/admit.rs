//! Admission: the checks every operation starts with (version, required extensions,
//! tenant, authorization) and the capability switches of the card.

use trident_proto as pb;

use super::{Inner, validate};
use crate::auth::Access;
use crate::store::Scope;
use crate::{A2aError, CallContext, ErrorKind, Operation};

impl Inner {
    /// Version, required extensions, authorization, scope: the checks every operation starts
    /// with.
    pub(crate) fn admit(
        &self,
        cx: &CallContext,
        tenant: &str,
        operation: Operation,
        message: Option<&pb::Message>,
    ) -> Result<Scope, A2aError> {
        match cx
            .version
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            None if self.config.strict_version => {
                return Err(A2aError::new(
                    ErrorKind::VersionNotSupported,
                    "A2A-Version is missing, which means 0.3; this server speaks 1.0",
                )
                .with_meta("supportedVersions", crate::PROTOCOL_VERSION));
            }
            None => {}
            Some(v) if validate::is_v1(v) => {}
            Some(v) => {
                return Err(A2aError::new(
                    ErrorKind::VersionNotSupported,
                    format!("A2A-Version {v} is not supported; this server speaks 1.0"),
                )
                .with_meta("requestedVersion", v)
                .with_meta("supportedVersions", crate::PROTOCOL_VERSION));
            }
        }
        if let Some(caps) = &self.card.capabilities {
            for ext in caps.extensions.iter().filter(|e| e.required) {
                if !cx.extensions.iter().any(|u| u == &ext.uri) {
                    return Err(A2aError::new(
                        ErrorKind::ExtensionSupportRequired,
                        format!("extension {} is required", ext.uri),
                    )
                    .with_meta("extension", ext.uri.clone()));
                }
            }
        }
        validate::tenant(&cx.tenant, &self.config.limits)?;
        validate::tenant(tenant, &self.config.limits)?;
        let tenant = match (cx.tenant.as_str(), tenant) {
            (t, "") | ("", t) => t,
            (a, b) if a == b => a,
            (a, b) => {
                return Err(A2aError::invalid_field(
                    "tenant",
                    format!("{b:?} does not match the path tenant {a:?}"),
                ));
            }
        };
        if let Some(authorizer) = &self.authorizer {
            authorizer.authorize(&Access {
                principal: &cx.principal,
                tenant,
                operation,
                message,
            })?;
        }
        Ok(Scope::new(tenant, cx.principal.id().unwrap_or("")))
    }

    pub(crate) fn capability(&self, f: impl Fn(&pb::AgentCapabilities) -> Option<bool>) -> bool {
        self.card.capabilities.as_ref().and_then(f).unwrap_or(false)
    }

    pub(crate) fn require_streaming(&self) -> Result<(), A2aError> {
        if self.capability(|c| c.streaming) {
            Ok(())
        } else {
            Err(A2aError::unsupported(
                "this agent does not support streaming",
            ))
        }
    }

    /// Refuses a webhook URL the [`WebhookPolicy`] forbids (checked again at every delivery).
    pub(crate) async fn check_webhook(&self, url: &str) -> Result<(), A2aError> {
        self.config
            .webhook_policy
            .check_url(url)
            .await
            .map_err(|e| A2aError::invalid_field("url", e.to_string()))
    }

    pub(crate) fn require_push(&self) -> Result<(), A2aError> {
        if self.capability(|c| c.push_notifications) {
            Ok(())
        } else {
            Err(A2aError::of(ErrorKind::PushNotificationNotSupported))
        }
    }
}
