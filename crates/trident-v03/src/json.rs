//! v0.3's JSON-RPC JSON, over the one v0.3 model.
//!
//! v0.3 has two JSON forms of the same objects. Its HTTP+JSON binding sends ProtoJSON of the
//! v0.3 schema, which is the generated serde of [`v03`] as it is. Its JSON-RPC binding sends
//! the JSON-schema form: a `kind` discriminator on tasks, messages, parts and events
//! (`"task"`, `"message"`, `"text"`, `"file"`, `"data"`, `"status-update"`,
//! `"artifact-update"`), lower-case kebab states (`"input-required"`, `"unknown"`) and roles
//! (`"user"`), `parts` (not `content`), file parts as `{"file": {"uri"|"bytes", "mimeType",
//! "name"}}`, data parts as `{"data": {...}}` and `final` always present on status updates.
//!
//! This module rewrites between the two: [`encode`] turns the ProtoJSON of a [`v03`] value
//! into its JSON-RPC form, [`decode`] the reverse before the generated deserializer reads it.
//! No second set of v0.3 types exists.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use trident_core::{A2aError, ErrorKind};
use trident_proto::v03;

use crate::convert::parse_config_name;

/// The JSON-RPC object types this module reshapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `Task`.
    Task,
    /// `Message`.
    Message,
    /// `Task` or `Message` (a `message/send` result; `SendMessageResponse` in the model).
    TaskOrMessage,
    /// One streamed event (`StreamResponse` in the model).
    Event,
    /// `TaskPushNotificationConfig` (`{taskId, pushNotificationConfig}` on JSON-RPC).
    TaskPushConfig,
    /// `MessageSendParams` (`SendMessageRequest` in the model).
    SendParams,
}

/// The JSON-RPC form of a [`v03`] value of `shape`.
pub fn encode<T: Serialize>(shape: Shape, value: &T) -> Result<Value, A2aError> {
    let mut v =
        serde_json::to_value(value).map_err(|e| A2aError::internal(format!("encode: {e}")))?;
    match shape {
        Shape::Task => task_out(&mut v),
        Shape::Message => message_out(&mut v),
        Shape::TaskOrMessage | Shape::Event => {
            // `{"task": {...}}` → the bare object with its `kind`.
            let (key, mut inner) = match v {
                Value::Object(m) => match m.into_iter().next() {
                    Some(kv) => kv,
                    None => return Err(A2aError::internal("an empty result has no v0.3 form")),
                },
                _ => return Err(A2aError::internal("a result must be an object")),
            };
            match key.as_str() {
                "task" => task_out(&mut inner),
                "message" => message_out(&mut inner),
                "statusUpdate" => status_update_out(&mut inner),
                "artifactUpdate" => artifact_update_out(&mut inner),
                other => return Err(A2aError::internal(format!("unknown result {other}"))),
            }
            v = inner;
        }
        Shape::TaskPushConfig => {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            let task_id = parse_config_name(name)
                .map(|(t, _)| t.to_owned())
                .unwrap_or_default();
            let config = v
                .get_mut("pushNotificationConfig")
                .map(Value::take)
                .unwrap_or_else(|| json!({}));
            v = json!({"taskId": task_id, "pushNotificationConfig": push_config_out(config)});
        }
        Shape::SendParams => {
            if let Some(m) = v.get_mut("message") {
                message_out(m);
            }
            if let Some(Value::Object(c)) = v.get_mut("configuration") {
                if let Some(p) = c.remove("pushNotification") {
                    c.insert("pushNotificationConfig".to_owned(), push_config_out(p));
                }
                c.entry("blocking").or_insert(Value::Bool(false));
            }
        }
    }
    Ok(v)
}

/// Reads the JSON-RPC form of a [`v03`] value of `shape`.
pub fn decode<T: DeserializeOwned>(shape: Shape, mut v: Value) -> Result<T, A2aError> {
    match shape {
        Shape::Task => task_in(&mut v)?,
        Shape::Message => message_in(&mut v)?,
        Shape::TaskOrMessage | Shape::Event => {
            let key = match v.get("kind").and_then(Value::as_str) {
                Some("task") => {
                    task_in(&mut v)?;
                    "task"
                }
                Some("message") => {
                    message_in(&mut v)?;
                    "message"
                }
                Some("status-update") if shape == Shape::Event => {
                    status_update_in(&mut v)?;
                    "statusUpdate"
                }
                Some("artifact-update") if shape == Shape::Event => {
                    artifact_update_in(&mut v)?;
                    "artifactUpdate"
                }
                other => {
                    return Err(invalid(format!("unexpected \"kind\" {other:?}")));
                }
            };
            v = json!({ key: v });
        }
        Shape::TaskPushConfig => {
            let task_id = string_field(&v, "taskId")?;
            let mut config = v
                .get_mut("pushNotificationConfig")
                .map(Value::take)
                .ok_or_else(|| invalid("\"pushNotificationConfig\" is required"))?;
            push_config_in(&mut config)?;
            let config_id = config.get("id").and_then(Value::as_str).unwrap_or_default();
            let name = crate::convert::config_name(&task_id, config_id);
            v = json!({"name": name, "pushNotificationConfig": config});
        }
        Shape::SendParams => {
            let obj = v
                .as_object_mut()
                .ok_or_else(|| invalid("params must be an object"))?;
            let m = obj
                .get_mut("message")
                .filter(|m| !m.is_null())
                .ok_or_else(|| A2aError::invalid_field("message", "is required"))?;
            message_in(m)?;
            // v0.3 servers block unless `blocking` is `false`.
            let config = obj.entry("configuration").or_insert_with(|| json!({}));
            if config.is_null() {
                *config = json!({});
            }
            let c = config
                .as_object_mut()
                .ok_or_else(|| invalid("\"configuration\" must be an object"))?;
            if !matches!(c.get("blocking"), Some(Value::Bool(_))) {
                c.insert("blocking".to_owned(), Value::Bool(true));
            }
            if let Some(mut p) = c.remove("pushNotificationConfig")
                && !p.is_null()
            {
                push_config_in(&mut p)?;
                c.insert("pushNotification".to_owned(), p);
            }
        }
    }
    serde_json::from_value(v).map_err(|e| invalid(format!("invalid params: {e}")))
}

fn invalid(message: impl Into<String>) -> A2aError {
    A2aError::new(ErrorKind::InvalidParams, message)
}

/// A required non-empty string member of a params object.
pub(crate) fn string_field(v: &Value, key: &str) -> Result<String, A2aError> {
    match v.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(invalid(format!("\"{key}\" is required")))
        }
        Some(_) => Err(invalid(format!("\"{key}\" must be a string"))),
    }
}

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

fn ensure(m: &mut Map<String, Value>, key: &str, default: Value) {
    m.entry(key).or_insert(default);
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`.
pub fn state_out(name: &str) -> String {
    match name {
        "TASK_STATE_CANCELLED" => "canceled".to_owned(),
        "TASK_STATE_UNSPECIFIED" => "unknown".to_owned(),
        other => other
            .strip_prefix("TASK_STATE_")
            .unwrap_or(other)
            .to_ascii_lowercase()
            .replace('_', "-"),
    }
}

/// `input-required` → `TASK_STATE_INPUT_REQUIRED`.
pub fn state_in(name: &str) -> Result<&'static str, A2aError> {
    Ok(match name {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "completed" => "TASK_STATE_COMPLETED",
        "canceled" => "TASK_STATE_CANCELLED",
        "failed" => "TASK_STATE_FAILED",
        "rejected" => "TASK_STATE_REJECTED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        "unknown" => "TASK_STATE_UNSPECIFIED",
        other => return Err(invalid(format!("unknown task state {other:?}"))),
    })
}

fn role_out(name: &str) -> &'static str {
    match name {
        "ROLE_USER" => "user",
        "ROLE_AGENT" => "agent",
        _ => "unknown",
    }
}

fn role_in(name: &str) -> Result<&'static str, A2aError> {
    match name {
        "user" => Ok("ROLE_USER"),
        "agent" => Ok("ROLE_AGENT"),
        other => Err(A2aError::invalid_field(
            "role",
            format!("unknown role {other:?} (v0.3 roles are \"user\" and \"agent\")"),
        )),
    }
}

fn task_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    m.insert("kind".to_owned(), json!("task"));
    ensure(m, "id", json!(""));
    ensure(m, "contextId", json!(""));
    ensure(m, "status", json!({}));
    if let Some(s) = m.get_mut("status") {
        status_out(s);
    }
    for a in array(m, "artifacts") {
        artifact_out(a);
    }
    for h in array(m, "history") {
        message_out(h);
    }
}

fn task_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("a task must be an object"))?;
    m.remove("kind");
    if let Some(s) = m.get_mut("status") {
        status_in(s)?;
    }
    for a in array(m, "artifacts") {
        artifact_in(a)?;
    }
    for h in array(m, "history") {
        message_in(h)?;
    }
    Ok(())
}

fn array<'a>(m: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Value> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

fn status_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    let state = m
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or("TASK_STATE_UNSPECIFIED");
    let state = state_out(state);
    m.insert("state".to_owned(), json!(state));
    if let Some(msg) = m.get_mut("message") {
        message_out(msg);
    }
}

fn status_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("a status must be an object"))?;
    match m.get("state") {
        Some(Value::String(s)) => {
            let s = state_in(s)?;
            m.insert("state".to_owned(), json!(s));
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err(invalid("\"state\" must be a string")),
    }
    if let Some(msg) = m.get_mut("message").filter(|m| !m.is_null()) {
        message_in(msg)?;
    }
    Ok(())
}

fn message_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    m.insert("kind".to_owned(), json!("message"));
    ensure(m, "messageId", json!(""));
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
    let role = role_out(role);
    m.insert("role".to_owned(), json!(role));
    let mut parts = m.remove("content").unwrap_or_else(|| json!([]));
    for p in parts.as_array_mut().into_iter().flatten() {
        part_out(p);
    }
    m.insert("parts".to_owned(), parts);
}

fn message_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("a message must be an object"))?;
    m.remove("kind");
    match m.get("role") {
        Some(Value::String(r)) => {
            let r = role_in(r)?;
            m.insert("role".to_owned(), json!(r));
        }
        None | Some(Value::Null) => return Err(A2aError::invalid_field("role", "is required")),
        Some(_) => return Err(A2aError::invalid_field("role", "must be a string")),
    }
    let mut parts = m.remove("parts").unwrap_or_else(|| json!([]));
    if parts.is_null() {
        parts = json!([]);
    }
    let list = parts
        .as_array_mut()
        .ok_or_else(|| invalid("\"parts\" must be an array"))?;
    for p in list {
        part_in(p)?;
    }
    m.insert("content".to_owned(), parts);
    Ok(())
}

fn part_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    if m.contains_key("text") {
        m.insert("kind".to_owned(), json!("text"));
    } else if let Some(Value::Object(f)) = m.get_mut("file") {
        if let Some(uri) = f.remove("fileWithUri") {
            f.insert("uri".to_owned(), uri);
        }
        if let Some(bytes) = f.remove("fileWithBytes") {
            f.insert("bytes".to_owned(), bytes);
        }
        m.insert("kind".to_owned(), json!("file"));
    } else if let Some(d) = m.get_mut("data") {
        let inner = d
            .get_mut("data")
            .map(Value::take)
            .unwrap_or_else(|| json!({}));
        *d = inner;
        m.insert("kind".to_owned(), json!("data"));
    } else {
        // A part without content has no v0.3 form; an empty text part is the closest.
        m.insert("kind".to_owned(), json!("text"));
        m.insert("text".to_owned(), json!(""));
    }
}

fn part_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("a part must be an object"))?;
    let kind = match m.remove("kind") {
        Some(Value::String(k)) => k,
        // Tolerated: the kind implied by the one content member present.
        None | Some(Value::Null) => ["text", "file", "data"]
            .into_iter()
            .find(|k| m.contains_key(*k))
            .unwrap_or("text")
            .to_owned(),
        Some(_) => return Err(invalid("a part's \"kind\" must be a string")),
    };
    match kind.as_str() {
        "text" => {
            if !matches!(m.get("text"), Some(Value::String(_))) {
                return Err(invalid("a text part needs a string \"text\""));
            }
        }
        "file" => {
            let f = m
                .get_mut("file")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| invalid("a file part needs a \"file\" object"))?;
            match (f.remove("uri"), f.remove("bytes")) {
                (Some(uri), None) => {
                    f.insert("fileWithUri".to_owned(), uri);
                }
                (None, Some(bytes)) => {
                    f.insert("fileWithBytes".to_owned(), bytes);
                }
                _ => {
                    return Err(invalid(
                        "a file part needs exactly one of \"uri\" and \"bytes\"",
                    ));
                }
            }
        }
        "data" => {
            let d = m
                .remove("data")
                .ok_or_else(|| invalid("a data part needs \"data\""))?;
            if !d.is_object() {
                return Err(invalid("a data part's \"data\" must be an object"));
            }
            m.insert("data".to_owned(), json!({ "data": d }));
        }
        other => return Err(invalid(format!("unknown part kind {other:?}"))),
    }
    Ok(())
}

fn artifact_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    ensure(m, "artifactId", json!(""));
    ensure(m, "parts", json!([]));
    for p in array(m, "parts") {
        part_out(p);
    }
}

fn artifact_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("an artifact must be an object"))?;
    for p in array(m, "parts") {
        part_in(p)?;
    }
    Ok(())
}

fn status_update_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    m.insert("kind".to_owned(), json!("status-update"));
    ensure(m, "taskId", json!(""));
    ensure(m, "contextId", json!(""));
    ensure(m, "final", json!(false));
    ensure(m, "status", json!({}));
    if let Some(s) = m.get_mut("status") {
        status_out(s);
    }
}

fn status_update_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("an event must be an object"))?;
    m.remove("kind");
    if let Some(s) = m.get_mut("status") {
        status_in(s)?;
    }
    Ok(())
}

fn artifact_update_out(v: &mut Value) {
    let Some(m) = obj(v) else { return };
    m.insert("kind".to_owned(), json!("artifact-update"));
    ensure(m, "taskId", json!(""));
    ensure(m, "contextId", json!(""));
    ensure(m, "artifact", json!({}));
    if let Some(a) = m.get_mut("artifact") {
        artifact_out(a);
    }
}

fn artifact_update_in(v: &mut Value) -> Result<(), A2aError> {
    let m = obj(v).ok_or_else(|| invalid("an event must be an object"))?;
    m.remove("kind");
    if let Some(a) = m.get_mut("artifact") {
        artifact_in(a)?;
    }
    Ok(())
}

/// `PushNotificationConfig`: the same members in both forms; `url` always written.
fn push_config_out(mut v: Value) -> Value {
    if let Some(m) = obj(&mut v) {
        ensure(m, "url", json!(""));
    }
    v
}

fn push_config_in(v: &mut Value) -> Result<(), A2aError> {
    if !v.is_object() {
        return Err(invalid("\"pushNotificationConfig\" must be an object"));
    }
    Ok(())
}

/// The JSON-RPC form of a v0.3 `PushNotificationConfig`.
pub fn push_config(c: &v03::PushNotificationConfig) -> Result<Value, A2aError> {
    let v = serde_json::to_value(c).map_err(|e| A2aError::internal(format!("encode: {e}")))?;
    Ok(push_config_out(v))
}
