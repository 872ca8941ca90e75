//! Request validation: required fields, sizes and shapes, each failure an `InvalidParams` with
//! the offending field's path.

use trident_proto as pb;
use trident_proto::wkt::Struct;

use crate::store::Scope;
use trident_core::A2aError;
use trident_core::Limits;

/// Whether an `A2A-Version` value means 1.0 (`1`, `1.0`, or `1.0.x`).
pub(super) fn is_v1(v: &str) -> bool {
    let mut parts = v.split('.');
    parts.next() == Some("1") && parts.next().is_none_or(|minor| minor == "0")
}

/// A client-supplied identifier: present, bounded, printable.
pub(super) fn id(field: &str, value: &str, limits: &Limits) -> Result<(), A2aError> {
    if value.is_empty() {
        return Err(A2aError::invalid_field(field, "is required"));
    }
    optional_id(field, value, limits)
}

/// A tenant (empty when none): an opaque routing key, but one that fits a URL path segment,
/// a log line and an index: at most `max_tenant_len` bytes of visible ASCII other than `/`.
pub(super) fn tenant(value: &str, limits: &Limits) -> Result<(), A2aError> {
    if value.len() > limits.max_tenant_len {
        return Err(A2aError::invalid_field(
            "tenant",
            format!(
                "is {} bytes long; a tenant has at most {} bytes",
                value.len(),
                limits.max_tenant_len
            ),
        ));
    }
    if let Some(c) = value.chars().find(|c| !c.is_ascii_graphic() || *c == '/') {
        return Err(A2aError::invalid_field(
            "tenant",
            format!("contains {c:?}; a tenant is visible ASCII (0x21-0x7E) other than '/'"),
        ));
    }
    Ok(())
}

fn optional_id(field: &str, value: &str, limits: &Limits) -> Result<(), A2aError> {
    if value.len() > limits.max_id_len {
        return Err(A2aError::invalid_field(
            field,
            format!("is longer than {} bytes", limits.max_id_len),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(A2aError::invalid_field(
            field,
            "contains control characters",
        ));
    }
    Ok(())
}

pub(super) fn history_length(n: Option<i32>) -> Result<(), A2aError> {
    match n {
        Some(n) if n < 0 => Err(A2aError::invalid_field(
            "historyLength",
            format!("must not be negative, got {n}"),
        )),
        _ => Ok(()),
    }
}

fn depth_of_value(v: &pbjson_types::Value) -> usize {
    use pbjson_types::value::Kind;
    match &v.kind {
        Some(Kind::StructValue(s)) => 1 + s.fields.values().map(depth_of_value).max().unwrap_or(0),
        Some(Kind::ListValue(l)) => 1 + l.values.iter().map(depth_of_value).max().unwrap_or(0),
        _ => 0,
    }
}

fn metadata(field: &str, value: Option<&Struct>, limits: &Limits) -> Result<(), A2aError> {
    if let Some(s) = value {
        let depth = 1 + s.fields.values().map(depth_of_value).max().unwrap_or(0);
        if depth > limits.max_metadata_depth {
            return Err(A2aError::invalid_field(
                field,
                format!("is nested deeper than {} levels", limits.max_metadata_depth),
            ));
        }
    }
    Ok(())
}

/// Checks a SendMessageRequest before anything is created.
pub(super) fn send_request(req: &pb::SendMessageRequest, limits: &Limits) -> Result<(), A2aError> {
    let m = req
        .message
        .as_ref()
        .ok_or_else(|| A2aError::invalid_field("message", "is required"))?;
    id("message.messageId", &m.message_id, limits)?;
    optional_id("message.contextId", &m.context_id, limits)?;
    optional_id("message.taskId", &m.task_id, limits)?;
    match pb::Role::try_from(m.role) {
        Ok(pb::Role::User) => {}
        Ok(pb::Role::Unspecified) => {
            return Err(A2aError::invalid_field(
                "message.role",
                "is required (ROLE_USER)",
            ));
        }
        _ => {
            return Err(A2aError::invalid_field(
                "message.role",
                "must be ROLE_USER for messages sent by a client",
            ));
        }
    }
    if m.parts.is_empty() {
        return Err(A2aError::invalid_field(
            "message.parts",
            "at least one part is required",
        ));
    }
    if m.parts.len() > limits.max_parts {
        return Err(A2aError::invalid_field(
            "message.parts",
            format!("at most {} parts are allowed", limits.max_parts),
        ));
    }
    for (i, part) in m.parts.iter().enumerate() {
        match &part.content {
            None => {
                return Err(A2aError::invalid_field(
                    &format!("message.parts[{i}]"),
                    "needs one of text, raw, url or data",
                ));
            }
            Some(pb::part::Content::Data(v)) if depth_of_value(v) > limits.max_metadata_depth => {
                return Err(A2aError::invalid_field(
                    &format!("message.parts[{i}].data"),
                    format!("is nested deeper than {} levels", limits.max_metadata_depth),
                ));
            }
            Some(_) => {}
        }
        metadata(
            &format!("message.parts[{i}].metadata"),
            part.metadata.as_ref(),
            limits,
        )?;
    }
    metadata("message.metadata", m.metadata.as_ref(), limits)?;
    metadata("metadata", req.metadata.as_ref(), limits)?;
    if let Some(c) = &req.configuration {
        if let Some(n) = c.history_length
            && n < 0
        {
            return Err(A2aError::invalid_field(
                "configuration.historyLength",
                format!("must not be negative, got {n}"),
            ));
        }
        if let Some(p) = &c.task_push_notification_config {
            url("configuration.taskPushNotificationConfig.url", &p.url)?;
        }
    }
    Ok(())
}

fn url(field: &str, value: &str) -> Result<(), A2aError> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(r)
            if !r.is_empty()
                && !r.starts_with('/')
                && !value.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            Ok(())
        }
        _ => Err(A2aError::invalid_field(
            field,
            "must be an absolute http(s) URL",
        )),
    }
}

/// Validates a push configuration and binds it to a task and scope (generating its id).
pub(super) fn bind_push(
    config: &mut pb::TaskPushNotificationConfig,
    task_id: &str,
    scope: &Scope,
) -> Result<(), A2aError> {
    url("url", &config.url)?;
    if !config.task_id.is_empty() && config.task_id != task_id {
        return Err(A2aError::invalid_field("taskId", "does not match the task"));
    }
    if let Some(auth) = &config.authentication {
        if auth.scheme.trim().is_empty() {
            return Err(A2aError::invalid_field(
                "authentication.scheme",
                "is required",
            ));
        }
        if auth.scheme.contains(char::is_whitespace)
            || auth.credentials.chars().any(char::is_control)
        {
            return Err(A2aError::invalid_field(
                "authentication",
                "must be a single scheme token and printable credentials",
            ));
        }
    }
    if config.token.chars().any(char::is_control) {
        return Err(A2aError::invalid_field(
            "token",
            "contains control characters",
        ));
    }
    config.task_id = task_id.to_owned();
    config.tenant = scope.tenant.to_string();
    if config.id.is_empty() {
        config.id = uuid::Uuid::new_v4().to_string();
    } else if config.id.len() > 256 || config.id.chars().any(char::is_control) {
        return Err(A2aError::invalid_field(
            "id",
            "must be at most 256 printable bytes",
        ));
    }
    Ok(())
}
