//! [`Timed`]: a [`ClientBuilder::timeout`](crate::ClientBuilder::timeout) applied to every
//! call of one agent's client.

use std::sync::Arc;
use std::time::Duration;

use trident_core::deadline::bounded;
use trident_core::{A2aError, A2aService, CallContext, EventStream};
use trident_proto as pb;

/// Gives every unary call a deadline `timeout` from its start (unless the caller's is
/// earlier), and the opening of every stream the same bound; an open stream keeps only the
/// caller's own deadline.
pub(crate) struct Timed {
    inner: Arc<dyn A2aService>,
    timeout: Duration,
}

impl Timed {
    pub(crate) fn new(inner: Arc<dyn A2aService>, timeout: Duration) -> Self {
        Self { inner, timeout }
    }

    fn cx(&self, cx: &CallContext) -> CallContext {
        cx.clone().with_timeout(self.timeout)
    }

    /// Opens a stream within the timeout; the stream itself runs under `cx` alone.
    async fn open(
        &self,
        cx: &CallContext,
        what: &str,
        open: impl Future<Output = Result<EventStream, A2aError>>,
    ) -> Result<EventStream, A2aError> {
        bounded(&self.cx(cx), what, open).await
    }
}

#[async_trait::async_trait]
impl A2aService for Timed {
    async fn send_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        self.inner.send_message(&self.cx(cx), req).await
    }

    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let open = self.inner.send_streaming_message(cx, req);
        self.open(cx, "SendStreamingMessage", open).await
    }

    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        self.inner.get_task(&self.cx(cx), req).await
    }

    async fn list_tasks(
        &self,
        cx: &CallContext,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        self.inner.list_tasks(&self.cx(cx), req).await
    }

    async fn cancel_task(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        self.inner.cancel_task(&self.cx(cx), req).await
    }

    async fn subscribe_to_task(
        &self,
        cx: &CallContext,
        req: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let open = self.inner.subscribe_to_task(cx, req);
        self.open(cx, "SubscribeToTask", open).await
    }

    async fn create_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        self.inner
            .create_task_push_notification_config(&self.cx(cx), req)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        self.inner
            .get_task_push_notification_config(&self.cx(cx), req)
            .await
    }

    async fn list_task_push_notification_configs(
        &self,
        cx: &CallContext,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        self.inner
            .list_task_push_notification_configs(&self.cx(cx), req)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        cx: &CallContext,
        req: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        self.inner.get_extended_agent_card(&self.cx(cx), req).await
    }

    async fn delete_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        self.inner
            .delete_task_push_notification_config(&self.cx(cx), req)
            .await
    }
}
