//! `/api/compare/get`, `/api/compare/list`, `/api/compare/send`: the bindings side by side.
//! One call (GetTask of a task id, ListTasks with the filters, SendMessage of a text) made over
//! each binding the card declares for A2A 1.x, and each answer beside the others, field by
//! field, with what must differ from one call to the next (ids, timestamps, UUIDs and long
//! numbers in text, masked as `trident conformance` masks its reasons) set aside.
//!
//! The request is the API's [`Call`](super::api::Call) (its `binding` is not used: every
//! binding is called). A SendMessage goes once per binding, each time a new message in a new
//! task (the call's task and context ids are not used). The answer:
//! `{"bindings": [name…], "answers": [{"binding", "ok", "answer"}…], "fields": [{"path",
//! "values": [one per binding, null where absent], "differs"}…], "differing": n, "agree"}`,
//! where `answer` is the protocol's object in ProtoJSON, or the error object of a failed call.

use std::collections::{HashMap, HashSet};

use axum::response::IntoResponse as _;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use trident::client::{Binding, Protocol};
use trident::proto as pb;

use super::api::{self, ApiError, State};
use crate::client::{self, Target};
use crate::conformance::{declared, masked};

/// What is shown in place of a value that differs on every call by design.
const VARIES: &str = "(varies)";

/// The call compared.
#[derive(Debug, Clone)]
enum Request {
    Get(pb::GetTaskRequest),
    List(pb::ListTasksRequest),
    Send(Box<pb::SendMessageRequest>),
}

/// `/api/compare/get`: GetTask of the call's task id.
pub(crate) fn get<'a>(
    state: &'a State,
    body: &'a [u8],
) -> BoxFuture<'a, Result<axum::response::Response, ApiError>> {
    Box::pin(compare(state, body, |call| {
        Ok(Request::Get(pb::GetTaskRequest {
            id: call.task()?,
            history_length: call.history_length,
            ..Default::default()
        }))
    }))
}

/// `/api/compare/list`: ListTasks with the call's filters.
pub(crate) fn list<'a>(
    state: &'a State,
    body: &'a [u8],
) -> BoxFuture<'a, Result<axum::response::Response, ApiError>> {
    Box::pin(compare(state, body, |call| Ok(Request::List(call.list()?))))
}

/// `/api/compare/send`: SendMessage of the call's text, once per binding, each in a new task.
pub(crate) fn send<'a>(
    state: &'a State,
    body: &'a [u8],
) -> BoxFuture<'a, Result<axum::response::Response, ApiError>> {
    Box::pin(compare(state, body, |call| {
        let mut request = call.message()?;
        if let Some(message) = request.message.as_mut() {
            message.task_id.clear();
            message.context_id.clear();
        }
        Ok(Request::Send(Box::new(request)))
    }))
}

/// Reads the call, checks it (before the agent is reached), makes it over each binding and
/// answers them side by side.
async fn compare(
    state: &State,
    body: &[u8],
    request: impl FnOnce(&api::Call) -> Result<Request, ApiError>,
) -> Result<axum::response::Response, ApiError> {
    let call = api::parse(body)?;
    let target = call.target(state)?;
    let request = request(&call)?;
    let card = client::resolve_card(&target).await?;
    let bindings = declared(&card);
    if bindings.is_empty() {
        return Err(ApiError::bad(
            "the card declares no binding for A2A 1.x to compare",
        ));
    }
    let calls = bindings
        .iter()
        .map(|b| one(&target, *b, card.clone(), request.clone()));
    let answers = futures::future::join_all(calls).await;
    Ok(axum::Json(side_by_side(&bindings, &answers)).into_response())
}

/// `request` over `binding`: the answer as JSON, or the error's object.
async fn one(
    target: &Target,
    binding: Binding,
    card: pb::AgentCard,
    request: Request,
) -> (bool, Value) {
    let mut target = target.clone();
    target.transport = vec![binding];
    target.protocol = Protocol::V1;
    let answered = async {
        let (svc, cx) = client::service(&target, card).await?;
        match request {
            Request::Get(r) => api::to_json(&svc.get_task(&cx, r).await?),
            Request::List(r) => api::to_json(&svc.list_tasks(&cx, r).await?),
            Request::Send(mut r) => {
                // A message of its own on each binding.
                if let Some(message) = r.message.as_mut() {
                    message.message_id = uuid::Uuid::new_v4().to_string();
                }
                api::to_json(&svc.send_message(&cx, *r).await?)
            }
        }
    };
    match answered.await {
        Ok(answer) => (true, answer),
        Err(e) => (false, e.body()),
    }
}

/// Whether the field `key` holds what differs on every call by design: an id or a time.
fn varies(key: &str) -> bool {
    key == "id"
        || key.ends_with("Id")
        || key.ends_with("Ids")
        || key.eq_ignore_ascii_case("timestamp")
        || key.ends_with("Timestamp")
}

/// `value`'s leaves as `(path, text)`, in order, with what [`varies`] and what [`masked`]
/// masks set aside. Paths are `status.state`, `history[0].parts[0].text`; an empty object or
/// array is a leaf (`{}`, `[]`), a string its text, anything else its JSON.
fn leaves(path: &str, value: &Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                if varies(k) && !v.is_null() {
                    out.push((key(k), VARIES.to_owned()));
                } else {
                    leaves(&key(k), v, out);
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                leaves(&format!("{path}[{i}]"), v, out);
            }
        }
        Value::String(s) => out.push((path.to_owned(), masked(s))),
        other => out.push((path.to_owned(), other.to_string())),
    }
}

/// The answers of `bindings` side by side: every field, with its value on each binding and
/// whether they differ.
fn side_by_side(bindings: &[Binding], answers: &[(bool, Value)]) -> Value {
    let flat: Vec<Vec<(String, String)>> = answers
        .iter()
        .map(|(_, answer)| {
            let mut out = Vec::new();
            leaves("", answer, &mut out);
            out
        })
        .collect();
    let by_path: Vec<HashMap<&str, &str>> = flat
        .iter()
        .map(|f| f.iter().map(|(p, v)| (p.as_str(), v.as_str())).collect())
        .collect();
    // Every path, in the order first seen.
    let mut seen = HashSet::new();
    let paths: Vec<&str> = flat
        .iter()
        .flatten()
        .map(|(p, _)| p.as_str())
        .filter(|p| seen.insert(*p))
        .collect();
    let mut differing = 0;
    let fields: Vec<Value> = paths
        .iter()
        .map(|path| {
            let values: Vec<Option<&str>> = by_path.iter().map(|m| m.get(path).copied()).collect();
            let differs = values.windows(2).any(|w| w.first() != w.get(1));
            differing += usize::from(differs);
            json!({ "path": path, "values": values, "differs": differs })
        })
        .collect();
    json!({
        "bindings": bindings.iter().map(|b| b.card_name()).collect::<Vec<_>>(),
        "answers": bindings.iter().zip(answers).map(|(b, (ok, answer))| json!({
            "binding": b.card_name(),
            "ok": ok,
            "answer": answer,
        })).collect::<Vec<_>>(),
        "fields": fields,
        "differing": differing,
        "agree": differing == 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two answers that differ only in ids, timestamps and the UUIDs of their text agree; a
    /// state that differs, or a field one lacks, is shown.
    #[test]
    fn ids_and_times_are_set_aside_and_the_rest_compared() {
        let task = |id: &str, state: &str, extra: bool| {
            let mut t = json!({
                "id": id,
                "contextId": format!("ctx-{id}"),
                "status": { "state": state, "timestamp": format!("2026-12-04T16:5{}:00Z", id.len()) },
                "history": [{ "messageId": id, "parts": [{ "text": format!("task {}", uuid::Uuid::new_v4()) }] }],
            });
            if extra {
                t["metadata"] = json!({ "k": 1 });
            }
            t
        };
        let bindings = [Binding::JsonRpc, Binding::Rest];
        let same = side_by_side(
            &bindings,
            &[
                (true, task("a", "TASK_STATE_COMPLETED", false)),
                (true, task("bb", "TASK_STATE_COMPLETED", false)),
            ],
        );
        assert_eq!(same["agree"], true, "{same:#}");
        assert_eq!(same["bindings"], json!(["JSONRPC", "HTTP+JSON"]));

        let other = side_by_side(
            &bindings,
            &[
                (true, task("a", "TASK_STATE_COMPLETED", false)),
                (true, task("b", "TASK_STATE_FAILED", true)),
            ],
        );
        assert_eq!(other["agree"], false);
        let differs: Vec<&Value> = other["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["differs"] == true)
            .collect();
        let differing = |path: &str| {
            differs
                .iter()
                .find(|f| f["path"] == path)
                .map(|f| f["values"].clone())
        };
        assert_eq!(differs.len(), 2, "{other:#}");
        assert_eq!(
            differing("status.state"),
            Some(json!(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"]))
        );
        assert_eq!(differing("metadata.k"), Some(json!([null, "1"])));
    }
}
