//! One conversion per type each way between the A2A 1.0 types ([`pb`]) and the v0.3 types
//! ([`v03`]): [`ToV03`] (1.0 → 0.3) and [`ToV1`] (0.3 → 1.0). Every v0.3 binding decodes into
//! [`v03`], converts with [`ToV1`], calls the one `A2aService`, and converts the answer back
//! with [`ToV03`]. What does not survive is listed in the crate documentation ("Lossy").

use trident_core::A2aError;
use trident_proto as pb;
use trident_proto::v03;
use trident_proto::wkt;

/// 1.0 → v0.3.
pub trait ToV03 {
    /// The v0.3 type.
    type Out;
    /// The v0.3 form of `self`.
    fn to_v03(self) -> Self::Out;
}

/// v0.3 → 1.0.
pub trait ToV1 {
    /// The 1.0 type.
    type Out;
    /// The 1.0 form of `self`.
    fn to_v1(self) -> Self::Out;
}

impl<T: ToV03> ToV03 for Vec<T> {
    type Out = Vec<T::Out>;
    fn to_v03(self) -> Self::Out {
        self.into_iter().map(ToV03::to_v03).collect()
    }
}

impl<T: ToV1> ToV1 for Vec<T> {
    type Out = Vec<T::Out>;
    fn to_v1(self) -> Self::Out {
        self.into_iter().map(ToV1::to_v1).collect()
    }
}

impl<T: ToV03> ToV03 for Option<T> {
    type Out = Option<T::Out>;
    fn to_v03(self) -> Self::Out {
        self.map(ToV03::to_v03)
    }
}

impl<T: ToV1> ToV1 for Option<T> {
    type Out = Option<T::Out>;
    fn to_v1(self) -> Self::Out {
        self.map(ToV1::to_v1)
    }
}

/// `TaskState` (the numbers coincide; v0.3 spells `CANCELLED`).
pub fn task_state_to_v03(state: i32) -> i32 {
    use pb::TaskState as S;
    use v03::TaskState as O;
    (match S::try_from(state).unwrap_or(S::Unspecified) {
        S::Unspecified => O::Unspecified,
        S::Submitted => O::Submitted,
        S::Working => O::Working,
        S::Completed => O::Completed,
        S::Failed => O::Failed,
        S::Canceled => O::Cancelled,
        S::InputRequired => O::InputRequired,
        S::Rejected => O::Rejected,
        S::AuthRequired => O::AuthRequired,
    }) as i32
}

/// `TaskState`, v0.3 → 1.0.
pub fn task_state_to_v1(state: i32) -> i32 {
    use pb::TaskState as S;
    use v03::TaskState as O;
    (match O::try_from(state).unwrap_or(O::Unspecified) {
        O::Unspecified => S::Unspecified,
        O::Submitted => S::Submitted,
        O::Working => S::Working,
        O::Completed => S::Completed,
        O::Failed => S::Failed,
        O::Cancelled => S::Canceled,
        O::InputRequired => S::InputRequired,
        O::Rejected => S::Rejected,
        O::AuthRequired => S::AuthRequired,
    }) as i32
}

/// `Role` (same numbers and names in both versions).
pub fn role_to_v03(role: i32) -> i32 {
    match pb::Role::try_from(role).unwrap_or(pb::Role::Unspecified) {
        pb::Role::Unspecified => v03::Role::Unspecified as i32,
        pb::Role::User => v03::Role::User as i32,
        pb::Role::Agent => v03::Role::Agent as i32,
    }
}

/// `Role`, v0.3 → 1.0.
pub fn role_to_v1(role: i32) -> i32 {
    match v03::Role::try_from(role).unwrap_or(v03::Role::Unspecified) {
        v03::Role::Unspecified => pb::Role::Unspecified as i32,
        v03::Role::User => pb::Role::User as i32,
        v03::Role::Agent => pb::Role::Agent as i32,
    }
}

/// Whether a v0.3 status update with this 1.0 state is the last of its stream (`final`):
/// terminal and interrupted states end a 1.0 stream too.
pub fn is_final(state: i32) -> bool {
    use pb::TaskState as S;
    matches!(
        S::try_from(state),
        Ok(S::Completed
            | S::Failed
            | S::Canceled
            | S::Rejected
            | S::InputRequired
            | S::AuthRequired)
    )
}

/// The key under which a 1.0 data part that is not a JSON object travels in v0.3, whose
/// `DataPart.data` must be an object.
pub const WRAPPED_DATA_KEY: &str = "value";

impl ToV03 for pb::Part {
    type Out = v03::Part;
    fn to_v03(self) -> v03::Part {
        use pb::part::Content;
        let file = |file, media_type: String, filename: String| {
            v03::part::Part::File(v03::FilePart {
                file: Some(file),
                mime_type: media_type,
                name: filename,
            })
        };
        let part = self.content.map(|c| match c {
            Content::Text(t) => v03::part::Part::Text(t),
            Content::Raw(b) => file(
                v03::file_part::File::FileWithBytes(b),
                self.media_type,
                self.filename,
            ),
            Content::Url(u) => file(
                v03::file_part::File::FileWithUri(u),
                self.media_type,
                self.filename,
            ),
            Content::Data(value) => v03::part::Part::Data(v03::DataPart {
                data: Some(value_to_struct(value)),
            }),
        });
        v03::Part {
            part,
            metadata: self.metadata,
        }
    }
}

impl ToV1 for v03::Part {
    type Out = pb::Part;
    fn to_v1(self) -> pb::Part {
        use pb::part::Content;
        let mut out = pb::Part {
            metadata: self.metadata,
            ..Default::default()
        };
        out.content = self.part.map(|p| match p {
            v03::part::Part::Text(t) => Content::Text(t),
            v03::part::Part::File(f) => {
                out.media_type = f.mime_type;
                out.filename = f.name;
                match f.file {
                    Some(v03::file_part::File::FileWithBytes(b)) => Content::Raw(b),
                    Some(v03::file_part::File::FileWithUri(u)) => Content::Url(u),
                    None => Content::Url(String::new()),
                }
            }
            v03::part::Part::Data(d) => Content::Data(struct_to_value(d.data.unwrap_or_default())),
        });
        out
    }
}

/// A 1.0 data value as a v0.3 data object: objects as they are, anything else wrapped under
/// [`WRAPPED_DATA_KEY`].
fn value_to_struct(value: wkt::Value) -> wkt::Struct {
    use pbjson_types::value::Kind;
    match value.0.kind {
        Some(Kind::StructValue(s)) => wkt::Struct(s),
        kind => {
            let mut fields = std::collections::HashMap::new();
            fields.insert(WRAPPED_DATA_KEY.to_owned(), pbjson_types::Value { kind });
            wkt::Struct(pbjson_types::Struct { fields })
        }
    }
}

fn struct_to_value(s: wkt::Struct) -> wkt::Value {
    wkt::Value(pbjson_types::Value {
        kind: Some(pbjson_types::value::Kind::StructValue(s.0)),
    })
}

impl ToV03 for pb::Message {
    type Out = v03::Message;
    fn to_v03(self) -> v03::Message {
        v03::Message {
            message_id: self.message_id,
            context_id: self.context_id,
            task_id: self.task_id,
            role: role_to_v03(self.role),
            content: self.parts.to_v03(),
            metadata: self.metadata,
            extensions: self.extensions,
            reference_task_ids: self.reference_task_ids,
        }
    }
}

impl ToV1 for v03::Message {
    type Out = pb::Message;
    fn to_v1(self) -> pb::Message {
        pb::Message {
            message_id: self.message_id,
            context_id: self.context_id,
            task_id: self.task_id,
            role: role_to_v1(self.role),
            parts: self.content.to_v1(),
            metadata: self.metadata,
            extensions: self.extensions,
            reference_task_ids: self.reference_task_ids,
        }
    }
}

impl ToV03 for pb::Artifact {
    type Out = v03::Artifact;
    fn to_v03(self) -> v03::Artifact {
        v03::Artifact {
            artifact_id: self.artifact_id,
            name: self.name,
            description: self.description,
            parts: self.parts.to_v03(),
            metadata: self.metadata,
            extensions: self.extensions,
        }
    }
}

impl ToV1 for v03::Artifact {
    type Out = pb::Artifact;
    fn to_v1(self) -> pb::Artifact {
        pb::Artifact {
            artifact_id: self.artifact_id,
            name: self.name,
            description: self.description,
            parts: self.parts.to_v1(),
            metadata: self.metadata,
            extensions: self.extensions,
        }
    }
}

impl ToV03 for pb::TaskStatus {
    type Out = v03::TaskStatus;
    fn to_v03(self) -> v03::TaskStatus {
        v03::TaskStatus {
            state: task_state_to_v03(self.state),
            update: self.message.to_v03(),
            timestamp: self.timestamp,
        }
    }
}

impl ToV1 for v03::TaskStatus {
    type Out = pb::TaskStatus;
    fn to_v1(self) -> pb::TaskStatus {
        pb::TaskStatus {
            state: task_state_to_v1(self.state),
            message: self.update.to_v1(),
            timestamp: self.timestamp,
        }
    }
}

impl ToV03 for pb::Task {
    type Out = v03::Task;
    fn to_v03(self) -> v03::Task {
        v03::Task {
            id: self.id,
            context_id: self.context_id,
            status: self.status.to_v03(),
            artifacts: self.artifacts.to_v03(),
            history: self.history.to_v03(),
            metadata: self.metadata,
        }
    }
}

impl ToV1 for v03::Task {
    type Out = pb::Task;
    fn to_v1(self) -> pb::Task {
        pb::Task {
            id: self.id,
            context_id: self.context_id,
            status: self.status.to_v1(),
            artifacts: self.artifacts.to_v1(),
            history: self.history.to_v1(),
            metadata: self.metadata,
            generation: 0,
        }
    }
}

impl ToV03 for pb::TaskStatusUpdateEvent {
    type Out = v03::TaskStatusUpdateEvent;
    fn to_v03(self) -> v03::TaskStatusUpdateEvent {
        let r#final = self.status.as_ref().is_some_and(|s| is_final(s.state));
        v03::TaskStatusUpdateEvent {
            task_id: self.task_id,
            context_id: self.context_id,
            status: self.status.to_v03(),
            r#final,
            metadata: self.metadata,
        }
    }
}

impl ToV1 for v03::TaskStatusUpdateEvent {
    type Out = pb::TaskStatusUpdateEvent;
    fn to_v1(self) -> pb::TaskStatusUpdateEvent {
        pb::TaskStatusUpdateEvent {
            task_id: self.task_id,
            context_id: self.context_id,
            status: self.status.to_v1(),
            metadata: self.metadata,
            generation: 0,
        }
    }
}

impl ToV03 for pb::TaskArtifactUpdateEvent {
    type Out = v03::TaskArtifactUpdateEvent;
    fn to_v03(self) -> v03::TaskArtifactUpdateEvent {
        v03::TaskArtifactUpdateEvent {
            task_id: self.task_id,
            context_id: self.context_id,
            artifact: self.artifact.to_v03(),
            append: self.append,
            last_chunk: self.last_chunk,
            metadata: self.metadata,
        }
    }
}

impl ToV1 for v03::TaskArtifactUpdateEvent {
    type Out = pb::TaskArtifactUpdateEvent;
    fn to_v1(self) -> pb::TaskArtifactUpdateEvent {
        pb::TaskArtifactUpdateEvent {
            task_id: self.task_id,
            context_id: self.context_id,
            artifact: self.artifact.to_v1(),
            append: self.append,
            last_chunk: self.last_chunk,
            metadata: self.metadata,
            generation: 0,
        }
    }
}

impl ToV03 for pb::StreamResponse {
    type Out = v03::StreamResponse;
    fn to_v03(self) -> v03::StreamResponse {
        use pb::stream_response::Payload as P;
        use v03::stream_response::Payload as O;
        v03::StreamResponse {
            payload: self.payload.map(|p| match p {
                P::Task(t) => O::Task(t.to_v03()),
                P::Message(m) => O::Msg(m.to_v03()),
                P::StatusUpdate(u) => O::StatusUpdate(u.to_v03()),
                P::ArtifactUpdate(u) => O::ArtifactUpdate(u.to_v03()),
            }),
        }
    }
}

impl ToV1 for v03::StreamResponse {
    type Out = pb::StreamResponse;
    fn to_v1(self) -> pb::StreamResponse {
        use pb::stream_response::Payload as P;
        use v03::stream_response::Payload as O;
        pb::StreamResponse {
            payload: self.payload.map(|p| match p {
                O::Task(t) => P::Task(t.to_v1()),
                O::Msg(m) => P::Message(m.to_v1()),
                O::StatusUpdate(u) => P::StatusUpdate(u.to_v1()),
                O::ArtifactUpdate(u) => P::ArtifactUpdate(u.to_v1()),
            }),
        }
    }
}

impl ToV03 for pb::SendMessageResponse {
    type Out = v03::SendMessageResponse;
    fn to_v03(self) -> v03::SendMessageResponse {
        use pb::send_message_response::Payload as P;
        use v03::send_message_response::Payload as O;
        v03::SendMessageResponse {
            payload: self.payload.map(|p| match p {
                P::Task(t) => O::Task(t.to_v03()),
                P::Message(m) => O::Msg(m.to_v03()),
            }),
        }
    }
}

impl ToV1 for v03::SendMessageResponse {
    type Out = pb::SendMessageResponse;
    fn to_v1(self) -> pb::SendMessageResponse {
        use pb::send_message_response::Payload as P;
        use v03::send_message_response::Payload as O;
        pb::SendMessageResponse {
            payload: self.payload.map(|p| match p {
                O::Task(t) => P::Task(t.to_v1()),
                O::Msg(m) => P::Message(m.to_v1()),
            }),
        }
    }
}

impl ToV03 for pb::AuthenticationInfo {
    type Out = v03::AuthenticationInfo;
    fn to_v03(self) -> v03::AuthenticationInfo {
        v03::AuthenticationInfo {
            schemes: if self.scheme.is_empty() {
                Vec::new()
            } else {
                vec![self.scheme]
            },
            credentials: self.credentials,
        }
    }
}

impl ToV1 for v03::AuthenticationInfo {
    type Out = pb::AuthenticationInfo;
    fn to_v1(self) -> pb::AuthenticationInfo {
        pb::AuthenticationInfo {
            scheme: self.schemes.into_iter().next().unwrap_or_default(),
            credentials: self.credentials,
        }
    }
}

/// v0.3's `PushNotificationConfig` is the 1.0 `TaskPushNotificationConfig` without its task
/// (and tenant): the 1.0 form has an empty `taskId`.
impl ToV03 for pb::TaskPushNotificationConfig {
    type Out = v03::TaskPushNotificationConfig;
    fn to_v03(self) -> v03::TaskPushNotificationConfig {
        v03::TaskPushNotificationConfig {
            name: config_name(&self.task_id, &self.id),
            push_notification_config: Some(push_config_to_v03(self)),
        }
    }
}

impl ToV1 for v03::TaskPushNotificationConfig {
    type Out = pb::TaskPushNotificationConfig;
    fn to_v1(self) -> pb::TaskPushNotificationConfig {
        let (task_id, name_id) = match parse_config_name(&self.name) {
            Some((t, c)) => (t.to_owned(), c.to_owned()),
            None => (String::new(), String::new()),
        };
        let mut out = push_config_to_v1(self.push_notification_config.unwrap_or_default());
        out.task_id = task_id;
        if out.id.is_empty() {
            out.id = name_id;
        }
        out
    }
}

/// 1.0 config → the v0.3 `PushNotificationConfig` (the task id is dropped).
pub fn push_config_to_v03(c: pb::TaskPushNotificationConfig) -> v03::PushNotificationConfig {
    v03::PushNotificationConfig {
        id: c.id,
        url: c.url,
        token: c.token,
        authentication: c.authentication.to_v03(),
    }
}

/// The v0.3 `PushNotificationConfig` → a 1.0 config with no task id.
pub fn push_config_to_v1(c: v03::PushNotificationConfig) -> pb::TaskPushNotificationConfig {
    pb::TaskPushNotificationConfig {
        id: c.id,
        url: c.url,
        token: c.token,
        authentication: c.authentication.to_v1(),
        ..Default::default()
    }
}

impl ToV03 for pb::SendMessageConfiguration {
    type Out = v03::SendMessageConfiguration;
    fn to_v03(self) -> v03::SendMessageConfiguration {
        v03::SendMessageConfiguration {
            accepted_output_modes: self.accepted_output_modes,
            push_notification: self.task_push_notification_config.map(push_config_to_v03),
            history_length: self.history_length.unwrap_or(0),
            blocking: !self.return_immediately,
        }
    }
}

impl ToV1 for v03::SendMessageConfiguration {
    type Out = pb::SendMessageConfiguration;
    fn to_v1(self) -> pb::SendMessageConfiguration {
        pb::SendMessageConfiguration {
            accepted_output_modes: self.accepted_output_modes,
            task_push_notification_config: self.push_notification.map(push_config_to_v1),
            // v0.3 has no "unset": 0 (the default) meant "all of it", as no `historyLength`.
            history_length: (self.history_length > 0).then_some(self.history_length),
            return_immediately: !self.blocking,
            if_generation_match: None,
        }
    }
}

impl ToV03 for pb::SendMessageRequest {
    type Out = v03::SendMessageRequest;
    fn to_v03(self) -> v03::SendMessageRequest {
        v03::SendMessageRequest {
            request: self.message.to_v03(),
            // No configuration in 1.0 means "blocking"; v0.3's proto default is not.
            configuration: Some(self.configuration.unwrap_or_default().to_v03()),
            metadata: self.metadata,
        }
    }
}

impl ToV1 for v03::SendMessageRequest {
    type Out = pb::SendMessageRequest;
    fn to_v1(self) -> pb::SendMessageRequest {
        pb::SendMessageRequest {
            tenant: String::new(),
            message: self.request.to_v1(),
            configuration: self.configuration.to_v1(),
            metadata: self.metadata,
        }
    }
}

impl ToV03 for pb::ListTaskPushNotificationConfigsResponse {
    type Out = v03::ListTaskPushNotificationConfigResponse;
    fn to_v03(self) -> v03::ListTaskPushNotificationConfigResponse {
        v03::ListTaskPushNotificationConfigResponse {
            configs: self.configs.to_v03(),
            next_page_token: self.next_page_token,
        }
    }
}

impl ToV1 for v03::ListTaskPushNotificationConfigResponse {
    type Out = pb::ListTaskPushNotificationConfigsResponse;
    fn to_v1(self) -> pb::ListTaskPushNotificationConfigsResponse {
        pb::ListTaskPushNotificationConfigsResponse {
            configs: self.configs.to_v1(),
            next_page_token: self.next_page_token,
        }
    }
}

/// `tasks/{task_id}`, v0.3's resource name of a task.
pub fn task_name(task_id: &str) -> String {
    format!("tasks/{task_id}")
}

/// `tasks/{task_id}/pushNotificationConfigs/{config_id}`.
pub fn config_name(task_id: &str, config_id: &str) -> String {
    format!("tasks/{task_id}/pushNotificationConfigs/{config_id}")
}

/// The task id of `tasks/{id}` (a non-empty id without `/`).
pub fn parse_task_name(name: &str) -> Option<&str> {
    name.strip_prefix("tasks/")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The task and config ids of `tasks/{id}/pushNotificationConfigs/{cid}`.
pub fn parse_config_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("tasks/")?;
    let (task, config) = rest.split_once("/pushNotificationConfigs/")?;
    (!task.is_empty() && !task.contains('/') && !config.is_empty() && !config.contains('/'))
        .then_some((task, config))
}

/// v0.3 request → 1.0 request: fails (`InvalidParams`) on a malformed resource name.
pub trait TryToV1 {
    /// The 1.0 request.
    type Out;
    /// The 1.0 form of `self`.
    fn try_to_v1(self) -> Result<Self::Out, A2aError>;
}

fn bad_name(what: &str, name: &str, form: &str) -> A2aError {
    A2aError::invalid_field(what, format!("{name:?} is not of the form {form}"))
}

fn task_id_of(field: &str, name: &str) -> Result<String, A2aError> {
    parse_task_name(name)
        .map(str::to_owned)
        .ok_or_else(|| bad_name(field, name, "tasks/{id}"))
}

fn config_ids_of(name: &str) -> Result<(String, String), A2aError> {
    parse_config_name(name)
        .map(|(t, c)| (t.to_owned(), c.to_owned()))
        .ok_or_else(|| {
            bad_name(
                "name",
                name,
                "tasks/{id}/pushNotificationConfigs/{configId}",
            )
        })
}

impl TryToV1 for v03::SendMessageRequest {
    type Out = pb::SendMessageRequest;
    fn try_to_v1(self) -> Result<pb::SendMessageRequest, A2aError> {
        Ok(self.to_v1())
    }
}

impl TryToV1 for v03::GetTaskRequest {
    type Out = pb::GetTaskRequest;
    fn try_to_v1(self) -> Result<pb::GetTaskRequest, A2aError> {
        Ok(pb::GetTaskRequest {
            tenant: String::new(),
            id: task_id_of("name", &self.name)?,
            // 0 (the proto default) meant "all of it" in v0.3.
            history_length: (self.history_length > 0).then_some(self.history_length),
            current_generation: None,
        })
    }
}

impl TryToV1 for v03::CancelTaskRequest {
    type Out = pb::CancelTaskRequest;
    fn try_to_v1(self) -> Result<pb::CancelTaskRequest, A2aError> {
        Ok(pb::CancelTaskRequest {
            id: task_id_of("name", &self.name)?,
            ..Default::default()
        })
    }
}

impl TryToV1 for v03::TaskSubscriptionRequest {
    type Out = pb::SubscribeToTaskRequest;
    fn try_to_v1(self) -> Result<pb::SubscribeToTaskRequest, A2aError> {
        Ok(pb::SubscribeToTaskRequest {
            tenant: String::new(),
            id: task_id_of("name", &self.name)?,
        })
    }
}

/// The task comes from `parent`; the config id from `configId`, else the config's own `id`,
/// else (as v0.3 servers did) the task id, so a v0.3 client that set one config without an id
/// finds it again under the task's id.
impl TryToV1 for v03::CreateTaskPushNotificationConfigRequest {
    type Out = pb::TaskPushNotificationConfig;
    fn try_to_v1(self) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        let task_id = task_id_of("parent", &self.parent)?;
        let config = self.config.unwrap_or_default();
        let mut out = push_config_to_v1(config.push_notification_config.unwrap_or_default());
        if !self.config_id.is_empty() {
            out.id = self.config_id;
        }
        if out.id.is_empty() {
            out.id = task_id.clone();
        }
        out.task_id = task_id;
        Ok(out)
    }
}

impl TryToV1 for v03::GetTaskPushNotificationConfigRequest {
    type Out = pb::GetTaskPushNotificationConfigRequest;
    fn try_to_v1(self) -> Result<pb::GetTaskPushNotificationConfigRequest, A2aError> {
        let (task_id, id) = config_ids_of(&self.name)?;
        Ok(pb::GetTaskPushNotificationConfigRequest {
            tenant: String::new(),
            task_id,
            id,
        })
    }
}

impl TryToV1 for v03::DeleteTaskPushNotificationConfigRequest {
    type Out = pb::DeleteTaskPushNotificationConfigRequest;
    fn try_to_v1(self) -> Result<pb::DeleteTaskPushNotificationConfigRequest, A2aError> {
        let (task_id, id) = config_ids_of(&self.name)?;
        Ok(pb::DeleteTaskPushNotificationConfigRequest {
            tenant: String::new(),
            task_id,
            id,
        })
    }
}

impl TryToV1 for v03::ListTaskPushNotificationConfigRequest {
    type Out = pb::ListTaskPushNotificationConfigsRequest;
    fn try_to_v1(self) -> Result<pb::ListTaskPushNotificationConfigsRequest, A2aError> {
        Ok(pb::ListTaskPushNotificationConfigsRequest {
            tenant: String::new(),
            task_id: task_id_of("parent", &self.parent)?,
            page_size: self.page_size,
            page_token: self.page_token,
        })
    }
}

impl TryToV1 for v03::GetAgentCardRequest {
    type Out = pb::GetExtendedAgentCardRequest;
    fn try_to_v1(self) -> Result<pb::GetExtendedAgentCardRequest, A2aError> {
        Ok(pb::GetExtendedAgentCardRequest::default())
    }
}
