//! [`A2aService`]: one method per RPC of `lf.a2a.v1.A2AService`, implemented once by the
//! engine and once by each binding's client.

// The RPCs as data (`Operation`, `A2aRequest`, `AroundCall`) belong to the service they
// describe: its one `call` takes them, and they dispatch to its methods.
pub(crate) mod operation;

use std::sync::Arc;

use futures::stream::BoxStream;
use trident_proto as pb;

use crate::{A2aError, A2aReply, A2aRequest, CallContext};

/// One event of a stream, with its per-task sequence number when it comes from a task's event
/// log (bindings send it as the SSE `id:`; a direct-reply message has none).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// Sequence number of the event in its task's log. For the first `Task` snapshot of a
    /// stream, the sequence number of the last event that snapshot includes.
    pub seq: Option<u64>,
    /// The event.
    pub response: Arc<pb::StreamResponse>,
}

/// The events of `SendStreamingMessage` or `SubscribeToTask`. An `Err` item ends the stream.
pub type EventStream = BoxStream<'static, Result<StreamEvent, A2aError>>;

/// The A2A operations, independent of any wire format.
///
/// Streaming methods return `Err` for everything known before the first event, so no binding
/// ever answers "200 OK" and then an error it could have sent as a status.
///
/// Adding an RPC to the proto means adding a method here, which fails to compile in the engine,
/// every binding and every client until handled.
///
/// A call decoded into an [`A2aRequest`] enters through [`call`](Self::call): by default it
/// dispatches to the per-RPC method ([`A2aRequest::call`]); a service written against every
/// call ([`AroundCall`](crate::AroundCall): the wrappers) answers it whole, so a request is
/// packed once, where it is decoded, and unpacked once, by the service that reads it.
#[async_trait::async_trait]
pub trait A2aService: Send + Sync + 'static {
    /// Any call, as one [`A2aRequest`]; the answer is the [`A2aReply`] of its operation.
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        req.call(self, cx).await
    }
    /// `SendMessage`.
    async fn send_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError>;
    /// `SendStreamingMessage`.
    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError>;
    /// `GetTask`.
    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError>;
    /// `ListTasks`.
    async fn list_tasks(
        &self,
        cx: &CallContext,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError>;
    /// `CancelTask`.
    async fn cancel_task(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError>;
    /// `SubscribeToTask`.
    async fn subscribe_to_task(
        &self,
        cx: &CallContext,
        req: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError>;
    /// `CreateTaskPushNotificationConfig`.
    async fn create_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError>;
    /// `GetTaskPushNotificationConfig`.
    async fn get_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError>;
    /// `ListTaskPushNotificationConfigs`.
    async fn list_task_push_notification_configs(
        &self,
        cx: &CallContext,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError>;
    /// `GetExtendedAgentCard`.
    async fn get_extended_agent_card(
        &self,
        cx: &CallContext,
        req: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError>;
    /// `DeleteTaskPushNotificationConfig` (idempotent).
    async fn delete_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError>;
}
