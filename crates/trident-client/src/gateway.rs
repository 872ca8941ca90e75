//! [`Upstream`]: another agent, reached through one of our clients, as the service our server
//! adapters serve. That is the whole gateway: the adapters decode a call on any binding, this
//! forwards it over the upstream's binding, and errors come back as the same [`ErrorKind`] on
//! every binding.
//!
//! What passes through: the request, `A2A-Extensions`, `Authorization` (the upstream
//! authenticates the original caller), W3C `traceparent`/`tracestate`, `Last-Event-ID`, the
//! caller's deadline and cancellation. `A2A-Version` passes through too, except that a call
//! without one is sent as 1.0: the gateway speaks 1.0 to the upstream, and the spec reads a
//! missing header as 0.3.
//!
//! [`ErrorKind`]: trident_core::ErrorKind

use std::sync::Arc;

use trident_core::{A2aError, A2aService, CallContext, EventStream, PROTOCOL_VERSION};
use trident_proto as pb;

/// An upstream agent served as if it were local.
#[derive(Clone)]
pub struct Upstream {
    inner: Arc<dyn A2aService>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Upstream")
    }
}

impl Upstream {
    /// Forwards every call to `inner` (usually a client from [`crate::connect`]).
    pub fn new(inner: Arc<dyn A2aService>) -> Self {
        Self { inner }
    }

    fn cx(cx: &CallContext) -> std::borrow::Cow<'_, CallContext> {
        if cx.version.is_some() {
            std::borrow::Cow::Borrowed(cx)
        } else {
            let mut owned = cx.clone();
            owned.version = Some(PROTOCOL_VERSION.to_owned());
            std::borrow::Cow::Owned(owned)
        }
    }
}

#[async_trait::async_trait]
impl A2aService for Upstream {
    async fn send_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        self.inner.send_message(&Self::cx(cx), req).await
    }

    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        self.inner.send_streaming_message(&Self::cx(cx), req).await
    }

    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        self.inner.get_task(&Self::cx(cx), req).await
    }

    async fn list_tasks(
        &self,
        cx: &CallContext,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        self.inner.list_tasks(&Self::cx(cx), req).await
    }

    async fn cancel_task(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        self.inner.cancel_task(&Self::cx(cx), req).await
    }

    async fn subscribe_to_task(
        &self,
        cx: &CallContext,
        req: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        self.inner.subscribe_to_task(&Self::cx(cx), req).await
    }

    async fn create_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        self.inner
            .create_task_push_notification_config(&Self::cx(cx), req)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        self.inner
            .get_task_push_notification_config(&Self::cx(cx), req)
            .await
    }

    async fn list_task_push_notification_configs(
        &self,
        cx: &CallContext,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        self.inner
            .list_task_push_notification_configs(&Self::cx(cx), req)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        cx: &CallContext,
        req: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        self.inner.get_extended_agent_card(&Self::cx(cx), req).await
    }

    async fn delete_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        self.inner
            .delete_task_push_notification_config(&Self::cx(cx), req)
            .await
    }
}
