//! Admission: the checks every operation starts with (version, required extensions,
//! tenant, authorization), the capability switches of the card, and the room a principal
//! and a task have for push configurations.

use trident_proto as pb;

use super::{Inner, store_error, validate};
use crate::store::{Generation, Scope};
use trident_core::auth::Access;
use trident_core::{A2aError, CallContext, ErrorKind, Operation};

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
                .with_meta("supportedVersions", trident_core::PROTOCOL_VERSION));
            }
            None => {}
            Some(v) if validate::is_v1(v) => {}
            Some(v) if self.config.preview.is_some() && trident_core::is_preview_version(v) => {}
            Some(v) => {
                let (speaks, supported) = if self.config.preview.is_some() {
                    ("1.0 and the 1.1 preview", "1.0,1.1")
                } else {
                    ("1.0", trident_core::PROTOCOL_VERSION)
                };
                return Err(A2aError::new(
                    ErrorKind::VersionNotSupported,
                    format!("A2A-Version {v} is not supported; this server speaks {speaks}"),
                )
                .with_meta("requestedVersion", v)
                .with_meta("supportedVersions", supported));
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
        Ok(Scope::of(tenant, cx.principal.id().unwrap_or("")))
    }

    /// Whether `cx` is answered with the A2A 1.1 preview's semantics: the server offers it
    /// ([`EngineConfig::preview`](super::EngineConfig::preview)) and the caller asked for it
    /// with `A2A-Version: 1.1` (admitted by [`Inner::admit`]). Everyone else is answered as
    /// by a 1.0 server: no generation in anything, the preview's request fields ignored.
    pub(crate) fn preview(&self, cx: &CallContext) -> bool {
        self.config.preview.is_some()
            && cx
                .version
                .as_deref()
                .is_some_and(trident_core::is_preview_version)
    }

    /// `task` as `cx` gets it: with its generation for a caller of the 1.1 preview
    /// ([`Inner::preview`]), without it (0, not on the wire) for everyone else.
    pub(crate) fn task_for(&self, cx: &CallContext, task: &mut pb::Task) {
        if !self.preview(cx) {
            task.generation = 0;
        }
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

    /// What every push-configuration RPC starts with: [`Inner::admit`] with no message, the
    /// card's push capability, and a readable `task_id`.
    pub(crate) fn admit_push(
        &self,
        cx: &CallContext,
        tenant: &str,
        op: Operation,
        task_id: &str,
    ) -> Result<Scope, A2aError> {
        let scope = self.admit(cx, tenant, op, None)?;
        self.require_push()?;
        validate::id("taskId", task_id, &self.config.limits)?;
        Ok(scope)
    }
}

/// How many locks [`Inner::push_admission`] spreads principals over.
pub(super) const PUSH_ADMISSION_LOCKS: usize = 32;

impl Inner {
    /// Stores a push configuration, within [`EngineConfig::push_limits`] unless it replaces
    /// one (the same id).
    pub(crate) async fn put_push(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: Generation,
    ) -> Result<(), A2aError> {
        // A fixed hasher: the same scope must find the same lock every time.
        let hasher =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
        let i = (std::hash::BuildHasher::hash_one(&hasher, scope) as usize)
            % self.push_admission.len().max(1);
        let _admitted = match self.push_admission.get(i) {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        self.check_push_room(scope, &config.task_id, Some(&config.id))
            .await?;
        self.stores
            .push
            .put(scope, config, generation)
            .await
            .map_err(store_error)
    }

    /// Whether `scope` may add a push configuration to task `task_id` (`id`: the one it would
    /// replace, which needs no room): `ResourceExhausted` past either limit.
    pub(crate) async fn check_push_room(
        &self,
        scope: &Scope,
        task_id: &str,
        id: Option<&str>,
    ) -> Result<(), A2aError> {
        if let Some(id) = id
            && self
                .stores
                .push
                .get(scope, task_id, id)
                .await
                .map_err(store_error)?
                .is_some()
        {
            return Ok(());
        }
        let limits = self.config.push_limits;
        let count = self
            .stores
            .push
            .count(scope, task_id)
            .await
            .map_err(store_error)?;
        if count.task >= limits.per_task as u64 {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "task {task_id} has {} push notification configs, the most one task may \
                     have ({}); delete one first",
                    count.task, limits.per_task
                ),
            )
            .with_meta("taskId", task_id.to_owned())
            .with_meta("limit", "pushConfigsPerTask"));
        }
        if count.active >= limits.per_principal as u64 {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "the caller has {} push notification configs on tasks in progress, the \
                     most one principal may have ({}); delete some, or wait for tasks to end",
                    count.active, limits.per_principal
                ),
            )
            .with_meta("limit", "pushConfigsPerPrincipal"));
        }
        Ok(())
    }
}
