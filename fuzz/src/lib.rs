//! Shared pieces of the fuzz targets: a service that answers every call at once (so
//! `dispatch_json` runs its request decoding exactly as the server does, without an engine),
//! the request-type selector, and the comparisons the targets assert.

use std::fmt::Debug;

use trident_core::{A2aError, A2aService, CallContext, EventStream, Operation};
use trident_http::{JsonReply, PathVars, dispatch_json};
use trident_proto as pb;

/// Answers every call with the default response (an empty stream for the streaming ones),
/// after checking the decoded request re-encodes.
pub struct NullService;

fn seen<T: serde::Serialize + prost::Message>(req: &T) {
    // What the engine does next with a decoded request: store it (protobuf) and echo it
    // (ProtoJSON). Neither may panic.
    let _ = req.encode_to_vec();
    let _ = serde_json::to_vec(req);
}

#[async_trait::async_trait]
impl A2aService for NullService {
    async fn send_message(
        &self,
        _: &CallContext,
        r: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn send_streaming_message(
        &self,
        _: &CallContext,
        r: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        seen(&r);
        Ok(Box::pin(futures::stream::empty()))
    }
    async fn get_task(&self, _: &CallContext, r: pb::GetTaskRequest) -> Result<pb::Task, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn list_tasks(
        &self,
        _: &CallContext,
        r: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn cancel_task(
        &self,
        _: &CallContext,
        r: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn subscribe_to_task(
        &self,
        _: &CallContext,
        r: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        seen(&r);
        Ok(Box::pin(futures::stream::empty()))
    }
    async fn create_task_push_notification_config(
        &self,
        _: &CallContext,
        r: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        seen(&r);
        Ok(r)
    }
    async fn get_task_push_notification_config(
        &self,
        _: &CallContext,
        r: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn list_task_push_notification_configs(
        &self,
        _: &CallContext,
        r: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn get_extended_agent_card(
        &self,
        _: &CallContext,
        r: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        seen(&r);
        Ok(Default::default())
    }
    async fn delete_task_push_notification_config(
        &self,
        _: &CallContext,
        r: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        seen(&r);
        Ok(())
    }
}

/// `dispatch_json` on [`NullService`]: parses `body` as the request of `op` (`parse_request`),
/// binds `vars`, and encodes the default answer.
pub fn dispatch(op: Operation, body: &[u8], vars: PathVars) -> Result<JsonReply, A2aError> {
    let cx = CallContext::default();
    futures::executor::block_on(dispatch_json(
        &NullService,
        &cx,
        op,
        body,
        vars,
        trident_core::JsonLimits::default(),
    ))
}

/// Names of the request messages, in selector order.
pub const REQUEST_TYPES: [&str; 10] = [
    "SendMessageRequest",
    "GetTaskRequest",
    "ListTasksRequest",
    "CancelTaskRequest",
    "SubscribeToTaskRequest",
    "TaskPushNotificationConfig",
    "GetTaskPushNotificationConfigRequest",
    "ListTaskPushNotificationConfigsRequest",
    "GetExtendedAgentCardRequest",
    "DeleteTaskPushNotificationConfigRequest",
];

/// Runs `$body` with `$t` the request message chosen by `$sel % 10` (see [`REQUEST_TYPES`]).
#[macro_export]
macro_rules! with_request_type {
    ($sel:expr, $t:ident => $body:expr) => {{
        use ::trident_proto as pb;
        match $sel % 10 {
            0 => {
                type $t = pb::SendMessageRequest;
                $body
            }
            1 => {
                type $t = pb::GetTaskRequest;
                $body
            }
            2 => {
                type $t = pb::ListTasksRequest;
                $body
            }
            3 => {
                type $t = pb::CancelTaskRequest;
                $body
            }
            4 => {
                type $t = pb::SubscribeToTaskRequest;
                $body
            }
            5 => {
                type $t = pb::TaskPushNotificationConfig;
                $body
            }
            6 => {
                type $t = pb::GetTaskPushNotificationConfigRequest;
                $body
            }
            7 => {
                type $t = pb::ListTaskPushNotificationConfigsRequest;
                $body
            }
            8 => {
                type $t = pb::GetExtendedAgentCardRequest;
                $body
            }
            _ => {
                type $t = pb::DeleteTaskPushNotificationConfigRequest;
                $body
            }
        }
    }};
}

/// Asserts `a == b`, except where the only difference can be a NaN (a `google.protobuf.Value`
/// number): NaN is not equal to itself, and protobuf carries it faithfully.
pub fn assert_same<T: PartialEq + Debug>(a: &T, b: &T, what: &str) {
    if a != b {
        let (da, db) = (format!("{a:?}"), format!("{b:?}"));
        assert!(
            da.contains("NaN") || db.contains("NaN"),
            "{what}: round trip changed the value\n before: {da}\n after:  {db}"
        );
    }
}

/// Asserts `bytes` is one well-formed JSON value (every reply the server writes must be).
pub fn assert_json(bytes: &[u8], what: &str) {
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        panic!(
            "{what} is not JSON ({e}): {}",
            String::from_utf8_lossy(bytes)
        );
    }
}
