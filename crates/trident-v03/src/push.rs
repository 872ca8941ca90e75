//! v0.3's push notifications: what a webhook configured through a v0.3 request receives.
//!
//! The v0.3 SDKs' senders (a2a-sdk 0.3.26 `BasePushNotificationSender`, @a2a-js/sdk 0.3.14
//! `DefaultPushNotificationSender`) POST the task itself — its whole current state, in the
//! JSON-RPC JSON (`kind: "task"`, lower-case states, `parts`) — as `application/json`, with the
//! configuration's token in `X-A2A-Notification-Token`. 1.0 POSTs one `StreamResponse` per
//! event instead. The engine, which does not speak v0.3, is handed [`task_body`] by the server
//! builder and sends it for every configuration created through a v0.3 call
//! ([`trident_core::Generation::V03`]); the headers are the engine's `webhook_request`.

use trident_core::A2aError;
use trident_proto as pb;

use crate::convert::ToV03;
use crate::json::{Shape, encode};

/// The body of a v0.3 push notification about `task`: the task in v0.3's JSON.
pub fn task_body(task: &pb::Task) -> Result<Vec<u8>, A2aError> {
    let value = encode(Shape::Task, &task.clone().to_v03())?;
    serde_json::to_vec(&value).map_err(|e| A2aError::internal(format!("encode: {e}")))
}
