//! The [`A2aService`] operations of the [`Engine`]: each decodes its request's intent into
//! the engine's parts (admission, the registry, a turn, the stores) and shapes the answer.

use std::sync::Arc;

use futures::StreamExt;
use trident_proto as pb;

use super::live::{Follow, LiveGuard, StreamEnd, follow};
use super::send::Started;
use super::tokens::{decode_config_token, decode_cursor, encode_config_token, encode_cursor};
use super::{Engine, set_status, store_error, validate};
use crate::store::{StoreError, TaskQuery};
use trident_core::{
    A2aError, A2aService, CallContext, ErrorKind, EventStream, Operation, StreamEvent,
};

/// A push configuration as Create, Get and List return it: its secrets (`token` and
/// `authentication.credentials`) are write-only — kept for delivery, never read back — so a
/// caller that may read a task's configurations cannot learn another client's webhook
/// credentials. The scheme stays, so a reader still sees that authentication is configured.
fn redact_push_secrets(
    mut config: pb::TaskPushNotificationConfig,
) -> pb::TaskPushNotificationConfig {
    config.token.clear();
    if let Some(auth) = &mut config.authentication {
        auth.credentials.clear();
    }
    config
}

/// Applies `historyLength`: unset keeps all, 0 drops all, n keeps the n most recent.
fn trim_history(task: &mut pb::Task, history_length: Option<i32>) {
    if let Some(n) = history_length {
        let n = usize::try_from(n).unwrap_or(0);
        let len = task.history.len();
        if n < len {
            task.history.drain(..len - n);
        }
    }
}

#[async_trait::async_trait]
impl A2aService for Engine {
    async fn send_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        // Only two settings matter here; the configuration itself moves into the turn.
        let (return_immediately, history_length) = req
            .configuration
            .as_ref()
            .map_or((false, None), |c| (c.return_immediately, c.history_length));
        let payload = match self.inner.start(cx, req, false).await? {
            Started::Message(m) => pb::send_message_response::Payload::Message(m),
            Started::Task {
                guard,
                after,
                snapshot,
            } => {
                let mut task = if return_immediately {
                    match snapshot {
                        Some(t) => *t,
                        None => guard.live().lock_seen(&self.inner).await?.task().clone(),
                    }
                } else {
                    self.inner.settle(guard, after, cx).await?
                };
                trim_history(&mut task, history_length);
                self.inner.task_for(cx, &mut task);
                pb::send_message_response::Payload::Task(task)
            }
        };
        Ok(pb::SendMessageResponse {
            payload: Some(payload),
        })
    }

    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        req: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        match self.inner.start(cx, req, true).await? {
            Started::Message(m) => {
                let event = StreamEvent {
                    seq: None,
                    response: Arc::new(pb::StreamResponse::new(
                        pb::stream_response::Payload::Message(m),
                    )),
                };
                Ok(futures::stream::once(async move { Ok(event) }).boxed())
            }
            Started::Task {
                guard,
                after,
                snapshot,
            } => {
                let (inner, live) = (guard.inner(), guard.live());
                let lead = snapshot.map(|t| {
                    let mut t = *t;
                    inner.task_for(cx, &mut t);
                    StreamEvent {
                        seq: Some(after),
                        response: Arc::new(pb::StreamResponse::new(
                            pb::stream_response::Payload::Task(t),
                        )),
                    }
                });
                Ok(follow(
                    inner.clone(),
                    Arc::clone(live),
                    after,
                    lead,
                    Follow {
                        end: StreamEnd::Turn,
                        generations: inner.preview(cx),
                    },
                ))
            }
        }
    }

    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::GetTask, None)?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        validate::history_length(req.history_length)?;
        let mut record = self.inner.record(&scope, &req.id).await?;
        if let Some(current) = req.current_generation
            && self.inner.preview(cx)
            && !super::registry::moved_past(record.last_seq, record.task.state(), current)
        {
            // Boxed: a cold branch (the preview's long poll) whose future every GetTask
            // would otherwise carry.
            record = Box::pin(self.inner.long_poll(cx, &scope, &req.id, current)).await?;
        }
        let mut task = record.task;
        trim_history(&mut task, req.history_length);
        self.inner.task_for(cx, &mut task);
        Ok(task)
    }

    async fn list_tasks(
        &self,
        cx: &CallContext,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::ListTasks, None)?;
        validate::history_length(req.history_length)?;
        let page_size = req.page_size.unwrap_or(50);
        if !(1..=100).contains(&page_size) {
            return Err(A2aError::invalid_field(
                "pageSize",
                format!("must be between 1 and 100, got {page_size}"),
            ));
        }
        let state = match pb::TaskState::try_from(req.status) {
            Ok(pb::TaskState::Unspecified) => None,
            Ok(s) => Some(s),
            Err(_) => {
                return Err(A2aError::invalid_field(
                    "status",
                    format!("unknown state {}", req.status),
                ));
            }
        };
        let after = match req.page_token.as_str() {
            "" => None,
            token => Some(decode_cursor(token)?),
        };
        let query = TaskQuery {
            context_id: Some(req.context_id.clone()).filter(|c| !c.is_empty()),
            state,
            updated_since: req.status_timestamp_after.as_ref().map(|t| t.unix_nanos()),
            after,
            limit: page_size as usize,
        };
        let page = self
            .inner
            .stores
            .tasks
            .list(&scope, &query)
            .await
            .map_err(store_error)?;
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        let tasks = page
            .tasks
            .into_iter()
            .map(|mut t| {
                trim_history(&mut t, req.history_length);
                if !include_artifacts {
                    t.artifacts.clear();
                }
                self.inner.task_for(cx, &mut t);
                t
            })
            .collect();
        Ok(pb::ListTasksResponse {
            tasks,
            next_page_token: page.next.as_ref().map(encode_cursor).unwrap_or_default(),
            page_size,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }

    async fn cancel_task(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        let mut task = self.cancel(cx, req).await?;
        self.inner.task_for(cx, &mut task);
        Ok(task)
    }

    async fn subscribe_to_task(
        &self,
        cx: &CallContext,
        req: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::SubscribeToTask, None)?;
        self.inner.require_streaming()?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        let guard = self.inner.live(&scope, &req.id).await?;
        let (task, last_seq) = {
            // The task as stored: one that another process writes is followed here without
            // being read again (only its events), so it is read now if it moved on.
            let w = guard.live().lock_current(&self.inner).await?;
            (w.task().clone(), w.record().last_seq)
        };
        let (inner, live) = (guard.inner(), guard.live());
        match cx.last_event_id {
            Some(resume) if resume > last_seq => Err(A2aError::invalid_field(
                "Last-Event-ID",
                format!("task {} has no event {resume}", task.id),
            )),
            Some(resume) => Ok(follow(
                inner.clone(),
                Arc::clone(live),
                resume,
                None,
                Follow {
                    end: StreamEnd::Terminal,
                    generations: inner.preview(cx),
                },
            )),
            None if task.state().is_terminal() => Err(A2aError::unsupported(format!(
                "task {} is {}; subscribe to tasks that are still running",
                task.id,
                task.state().as_str_name()
            ))
            .with_meta("taskId", task.id.clone())),
            None => {
                let mut task = task;
                inner.task_for(cx, &mut task);
                let lead = StreamEvent {
                    seq: Some(last_seq),
                    response: Arc::new(pb::StreamResponse::new(
                        pb::stream_response::Payload::Task(task),
                    )),
                };
                Ok(follow(
                    inner.clone(),
                    Arc::clone(live),
                    last_seq,
                    Some(lead),
                    Follow {
                        end: StreamEnd::Terminal,
                        generations: inner.preview(cx),
                    },
                ))
            }
        }
    }

    async fn create_task_push_notification_config(
        &self,
        cx: &CallContext,
        mut req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        let scope = self.inner.admit_push(
            cx,
            &req.tenant,
            Operation::CreateTaskPushNotificationConfig,
            &req.task_id,
        )?;
        let task_id = req.task_id.clone();
        validate::bind_push(&mut req, &task_id, &scope)?;
        self.inner.check_webhook(&req.url).await?;
        let guard = self.inner.live(&scope, &task_id).await?;
        let live = guard.live();
        let mut w = live.lock_current(&self.inner).await?;
        self.inner.put_push(&scope, &req, cx.generation).await?;
        w.push_configured();
        let from = w.record().last_seq;
        if !w.task().state().is_terminal() {
            live.deliver_from(&self.inner, &mut w, from).await;
        }
        Ok(redact_push_secrets(req))
    }

    async fn get_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        let scope = self.inner.admit_push(
            cx,
            &req.tenant,
            Operation::GetTaskPushNotificationConfig,
            &req.task_id,
        )?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        self.inner.record(&scope, &req.task_id).await?;
        self.inner
            .stores
            .push
            .get(&scope, &req.task_id, &req.id)
            .await
            .map_err(store_error)?
            .map(|(config, _)| redact_push_secrets(config))
            .ok_or_else(|| {
                A2aError::new(
                    ErrorKind::TaskNotFound,
                    format!(
                        "task {} has no push notification config {}",
                        req.task_id, req.id
                    ),
                )
                .with_meta("taskId", req.task_id.clone())
                .with_meta("configId", req.id.clone())
            })
    }

    async fn list_task_push_notification_configs(
        &self,
        cx: &CallContext,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        let scope = self.inner.admit_push(
            cx,
            &req.tenant,
            Operation::ListTaskPushNotificationConfigs,
            &req.task_id,
        )?;
        let limit = match req.page_size {
            0 => 100,
            n if (1..=100).contains(&n) => n as usize,
            n => {
                return Err(A2aError::invalid_field(
                    "pageSize",
                    format!("must be between 1 and 100, got {n}"),
                ));
            }
        };
        let after = match req.page_token.as_str() {
            "" => None,
            token => Some(decode_config_token(token)?),
        };
        self.inner.record(&scope, &req.task_id).await?;
        let (configs, more) = self
            .inner
            .stores
            .push
            .list(&scope, &req.task_id, after.as_deref(), limit)
            .await
            .map_err(store_error)?;
        let next_page_token = match configs.last() {
            Some(last) if more => encode_config_token(&last.id),
            _ => String::new(),
        };
        Ok(pb::ListTaskPushNotificationConfigsResponse {
            configs: configs.into_iter().map(redact_push_secrets).collect(),
            next_page_token,
        })
    }

    async fn get_extended_agent_card(
        &self,
        cx: &CallContext,
        req: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        self.inner
            .admit(cx, &req.tenant, Operation::GetExtendedAgentCard, None)?;
        if !self.inner.capability(|c| c.extended_agent_card) {
            return Err(A2aError::unsupported(
                "this agent has no extended agent card",
            ));
        }
        if !cx.principal.is_authenticated() {
            return Err(A2aError::new(
                ErrorKind::Unauthenticated,
                "the extended agent card requires authentication",
            ));
        }
        self.inner
            .extended_card
            .clone()
            .ok_or_else(|| A2aError::of(ErrorKind::ExtendedAgentCardNotConfigured))
    }

    async fn delete_task_push_notification_config(
        &self,
        cx: &CallContext,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        let scope = self.inner.admit_push(
            cx,
            &req.tenant,
            Operation::DeleteTaskPushNotificationConfig,
            &req.task_id,
        )?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        self.inner.record(&scope, &req.task_id).await?;
        self.inner
            .stores
            .push
            .delete(&scope, &req.task_id, &req.id)
            .await
            .map_err(store_error)?;
        if let Some(live) = self.inner.live_now(&scope, &req.task_id) {
            // A guard: the last holder lets the task go from the registry.
            let guard = LiveGuard::new(self.inner.clone(), live);
            guard.live().lock().await.forget_push();
        }
        Ok(())
    }
}

impl Engine {
    /// CancelTask, answering with the task as stored (its generation kept for every caller).
    async fn cancel(
        &self,
        cx: &CallContext,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        let scope = self
            .inner
            .admit(cx, &req.tenant, Operation::CancelTask, None)?;
        validate::id("id", &req.id, &self.inner.config.limits)?;
        let guard = self.inner.live(&scope, &req.id).await?;
        let live = guard.live();
        let snapshot = live.lock_current(&self.inner).await?.task().clone();
        let check = |task: &pb::Task| -> Result<bool, A2aError> {
            match task.state() {
                pb::TaskState::Canceled => Ok(true),
                s if s.is_terminal() => Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    format!("task {} is {}", task.id, s.as_str_name()),
                )
                .with_meta("taskId", task.id.clone())),
                _ => Ok(false),
            }
        };
        if check(&snapshot)? {
            return Ok(snapshot);
        }
        self.inner.executor.cancel(&snapshot).await?;
        // Through `lock_current`: what this process's turn committed behind it is stored
        // first (see `Live::commit_behind`), and the record is the store's.
        let mut w = live.lock_current(&self.inner).await?;
        if check(w.task())? {
            return Ok(w.task().clone());
        }
        w.cancel_turn();
        let event = w.set_status(
            pb::TaskStatus::now(pb::TaskState::Canceled, None),
            req.metadata.clone(),
        );
        match live.commit(&self.inner, &mut w, vec![event]).await {
            Ok(_) => return Ok(w.task().clone()),
            Err(StoreError::Conflict) => {}
            Err(e) => return Err(store_error(e)),
        }
        // Another process wrote the task since it was read here (on a shared store: its turn
        // runs there and commits on). Retrying at the sequence number read anew loses to a
        // writer that commits back to back (one commit every millisecond or two), so the
        // cancel is appended at the end of the task's log as the store has it, under the
        // store's lock on the task: it cannot lose, and the other writer's next commit
        // conflicts, which ends its turn there. A conflict here is a transaction the database
        // aborted (a deadlock victim): tried again a few times.
        let mut attempts = 0;
        loop {
            // Stamped now: it follows the events the other process committed meanwhile.
            let mut status = pb::Task {
                id: w.task().id.clone(),
                context_id: w.task().context_id.clone(),
                ..Default::default()
            };
            let event = set_status(
                &mut status,
                pb::TaskStatus::now(pb::TaskState::Canceled, None),
                req.metadata.clone(),
            );
            match live.append_final(&self.inner, &mut w, event).await {
                Ok(true) => return Ok(w.task().clone()),
                // Ended meanwhile, by another process: canceled too, or not cancelable.
                Ok(false) => {
                    check(w.task())?;
                    return Ok(w.task().clone());
                }
                Err(e) if e.kind() == ErrorKind::Unavailable && attempts < 3 => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }
}
