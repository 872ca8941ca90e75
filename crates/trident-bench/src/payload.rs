//! The one request the benchmark sends (in its three encodings), the echo answer the raw
//! baseline builds, and the check that an answer is that echo.

use trident_proto as pb;
use uuid::Uuid;

/// The text every request carries and every answer must echo.
pub const TEXT: &str = "hello trident";

/// The HTTP+JSON body of request `n` (about 100 bytes).
pub fn rest_body(n: u64) -> String {
    format!(
        r#"{{"message":{{"messageId":"m-{n}","role":"ROLE_USER","parts":[{{"text":"{TEXT}"}}]}}}}"#
    )
}

/// The JSON-RPC 2.0 envelope of request `n` (id `n`, params = [`rest_body`]).
pub fn jsonrpc_body(n: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{n},"method":"SendMessage","params":{}}}"#,
        rest_body(n)
    )
}

/// The protobuf request `n`, equal to what [`rest_body`] decodes to.
pub fn grpc_request(n: u64) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message::user(
            format!("m-{n}"),
            vec![pb::Part::text(TEXT)],
        )),
        ..Default::default()
    }
}

/// What the raw baseline answers: the task an echo agent completes in one step. A fresh task
/// id and context id, status `COMPLETED` stamped now, history = the request message (with those
/// ids filled in, as Trident stores it) and one artifact `echo` holding the message's text.
pub fn echo_response(req: pb::SendMessageRequest) -> Result<pb::SendMessageResponse, String> {
    let mut message = req.message.ok_or("message is required")?;
    let task_id = Uuid::new_v4().to_string();
    if message.context_id.is_empty() {
        message.context_id = Uuid::new_v4().to_string();
    }
    message.task_id.clone_from(&task_id);
    let task = pb::Task {
        id: task_id,
        context_id: message.context_id.clone(),
        status: Some(pb::TaskStatus::now(pb::TaskState::Completed, None)),
        artifacts: vec![pb::Artifact::new(
            "echo",
            vec![pb::Part::text(message.text())],
        )],
        history: vec![message],
        metadata: None,
        generation: 0,
    };
    Ok(pb::SendMessageResponse {
        payload: Some(pb::send_message_response::Payload::Task(task)),
    })
}

/// Checks that `resp` is the completed echo task of request `n`.
pub fn check_response(resp: &pb::SendMessageResponse, n: u64) -> Result<(), String> {
    let Some(pb::send_message_response::Payload::Task(task)) = &resp.payload else {
        return Err(format!("expected a task, got {resp:?}"));
    };
    if task.state() != pb::TaskState::Completed {
        return Err(format!("task is {}", task.state().as_str_name()));
    }
    if task.id.is_empty() || task.context_id.is_empty() {
        return Err("task id or context id is empty".to_owned());
    }
    let echoed = task
        .artifacts
        .iter()
        .find(|a| a.artifact_id == "echo")
        .and_then(|a| a.parts.first())
        .and_then(pb::Part::as_text);
    if echoed != Some(TEXT) {
        return Err(format!("no echo artifact with {TEXT:?}: {task:?}"));
    }
    let sent = format!("m-{n}");
    if task.history.first().map(|m| m.message_id.as_str()) != Some(sent.as_str()) {
        return Err(format!("history does not start with message {sent}"));
    }
    Ok(())
}

/// Checks an HTTP+JSON answer body (ProtoJSON of a `SendMessageResponse`).
pub fn check_rest_body(body: &[u8], n: u64) -> Result<(), String> {
    let resp: pb::SendMessageResponse = serde_json::from_slice(body)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(body)))?;
    check_response(&resp, n)
}

/// Checks a JSON-RPC answer body: a success envelope with id `n` around the echo task.
pub fn check_jsonrpc_body(body: &[u8], n: u64) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        jsonrpc: String,
        id: serde_json::Value,
        result: Option<pb::SendMessageResponse>,
        error: Option<serde_json::Value>,
    }
    let env: Envelope = serde_json::from_slice(body)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(body)))?;
    if let Some(error) = env.error {
        return Err(format!("JSON-RPC error {error}"));
    }
    if env.jsonrpc != "2.0" || env.id != n {
        return Err(format!(
            "bad envelope: jsonrpc {:?}, id {}",
            env.jsonrpc, env.id
        ));
    }
    check_response(&env.result.ok_or("no result")?, n)
}

/// A cheap test applied to every JSON answer (the full check runs on a sample): the body
/// names the completed state.
pub fn looks_completed(body: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"TASK_STATE_COMPLETED\"";
    body.windows(NEEDLE.len()).any(|w| w == NEEDLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encodings_agree_and_the_echo_passes_the_check() {
        let from_json: pb::SendMessageRequest =
            serde_json::from_str(&rest_body(7)).expect("valid JSON");
        assert_eq!(from_json, grpc_request(7));
        let rpc: serde_json::Value = serde_json::from_str(&jsonrpc_body(7)).expect("valid JSON");
        assert_eq!(rpc["params"]["message"]["messageId"], "m-7");

        let resp = echo_response(grpc_request(7)).expect("echo");
        check_response(&resp, 7).expect("the echo is correct");
        assert!(check_response(&resp, 8).is_err());
        let json = serde_json::to_vec(&resp).expect("encodes");
        assert!(looks_completed(&json));
        check_rest_body(&json, 7).expect("round trip");
    }
}
