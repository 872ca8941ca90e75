//! The A2A 1.1 preview, client side: [`Preview`] (long-polling GetTask, `ifGenerationMatch`,
//! gap-free streams) and the adapter that sends `A2A-Version: 1.1` on every call.
//!
//! The preview (the specification's dev-1.1 branch) gives every task a `generation`: 1 when
//! it is created, one more per status or artifact event, and each streamed status or artifact
//! event the task's generation after it. A server offers it only to callers that send
//! `A2A-Version: 1.1`, and says so in the card it serves to a card request with that version
//! (interfaces with `protocolVersion: "1.1"`). [`ClientBuilder::preview`] asks for it;
//! [`Agent::preview`] is `Some` when the agent offers it.
//!
//! [`ClientBuilder::preview`]: crate::ClientBuilder::preview
//! [`Agent::preview`]: crate::Agent::preview

use std::sync::Arc;

use futures::StreamExt;
use trident_core::{
    A2aError, A2aReply, A2aRequest, A2aService, AroundCall, CallContext, ErrorKind, EventStream,
    PREVIEW_VERSION, StreamEvent,
};
use trident_proto as pb;
use trident_proto::stream_response::Payload as Event;

/// Whether `interface` offers the A2A 1.1 preview (`protocolVersion` `1.1` or `1.1.x`, what
/// a server lists first in the card it serves to a card request that says
/// `A2A-Version: 1.1`).
pub fn speaks_preview(interface: &pb::AgentInterface) -> bool {
    trident_core::is_preview_version(&interface.protocol_version)
}

/// The card's first A2A 1.1 preview interface for `binding` (see [`speaks_preview`]), if it
/// offers one.
pub fn preview_interface(
    card: &pb::AgentCard,
    binding: crate::Binding,
) -> Option<pb::AgentInterface> {
    card.supported_interfaces
        .iter()
        .find(|i| i.protocol_binding.eq_ignore_ascii_case(binding.card_name()) && speaks_preview(i))
        .cloned()
}

/// The interface to speak the A2A 1.1 preview on instead of `chosen`, the 1.x interface of
/// `card` picked for `binding`: the card's preview twin for that binding, if it has one. A
/// v0.3 interface has none (the preview extends 1.0).
pub fn preview_twin(
    card: &pb::AgentCard,
    binding: crate::Binding,
    chosen: &pb::AgentInterface,
) -> Option<pb::AgentInterface> {
    if crate::speaks_v03(chosen) {
        return None;
    }
    preview_interface(card, binding)
}

/// Sends `A2A-Version: 1.1` (gRPC: `a2a-version` metadata) on every call of `inner`, whatever
/// version the caller's [`CallContext`] names.
pub(crate) struct SpeakPreview {
    inner: Arc<dyn A2aService>,
}

impl SpeakPreview {
    pub(crate) fn new(inner: Arc<dyn A2aService>) -> Self {
        Self { inner }
    }
}

#[async_trait::async_trait]
impl AroundCall for SpeakPreview {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        let mut cx = cx.clone();
        cx.version = Some(PREVIEW_VERSION.to_owned());
        self.inner.call(&cx, req).await
    }
}

/// An agent spoken to in the A2A 1.1 preview: its service (which sends `A2A-Version: 1.1`
/// on every call) and the preview's helpers. Cheap to clone.
///
/// Made by [`Agent::preview`](crate::Agent::preview) when the client asked for the preview
/// ([`ClientBuilder::preview`](crate::ClientBuilder::preview)) and the agent's card offers
/// it; `None` there means the agent is spoken to in 1.0 exactly as without it.
///
/// ```no_run
/// # async fn demo() -> Result<(), trident_core::A2aError> {
/// use trident_client::ClientBuilder;
/// use trident_core::{A2aError, CallContext, ErrorKind};
/// use trident_proto as pb;
///
/// let client = ClientBuilder::new().preview(true).build()?;
/// let agent = client.connect("http://127.0.0.1:8080").await?;
/// let Some(preview) = agent.preview() else {
///     println!("{} does not offer the A2A 1.1 preview", agent.card.name);
///     return Ok(());
/// };
/// let cx = CallContext::new();
/// let get = pb::GetTaskRequest { id: "t-1".into(), ..Default::default() };
/// // Wait for the task to change rather than polling it.
/// let mut task = preview.service().get_task(&cx, get.clone()).await?;
/// while !task.state().is_terminal() && task.state() != pb::TaskState::InputRequired {
///     task = preview.long_poll(&cx, get.clone(), task.generation).await?;
/// }
/// // Reply only if nobody else has changed the task since it was read.
/// let reply = pb::Message {
///     task_id: task.id.clone(),
///     ..pb::Message::user("m-2", vec![pb::Part::text("Ada")])
/// };
/// let request = pb::SendMessageRequest { message: Some(reply), ..Default::default() };
/// match preview.send_message_if(&cx, request, task.generation).await {
///     Ok(_) => println!("sent"),
///     Err(e) if e.kind() == ErrorKind::TaskGenerationMismatch => println!("it changed; read it again"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Preview {
    service: Arc<dyn A2aService>,
}

impl std::fmt::Debug for Preview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preview").finish_non_exhaustive()
    }
}

impl Preview {
    /// The preview spoken to `service`: every call through [`service`](Self::service) and
    /// the helpers sends `A2A-Version: 1.1`. For a service made otherwise than by
    /// [`Client::connect`](crate::Client::connect) (an agent known to offer the preview); an
    /// agent that does not offer it answers as 1.0, and [`long_poll`](Self::long_poll) then
    /// fails rather than return at once forever.
    pub fn new(service: Arc<dyn A2aService>) -> Self {
        Self {
            service: Arc::new(SpeakPreview::new(service)),
        }
    }

    /// A preview of a service that already sends `A2A-Version: 1.1`.
    pub(crate) fn speaking(service: Arc<dyn A2aService>) -> Self {
        Self { service }
    }

    /// The agent, spoken to in the preview: tasks carry their `generation`, stream events
    /// theirs.
    pub fn service(&self) -> &Arc<dyn A2aService> {
        &self.service
    }

    /// GetTask as a long poll: answers once the task's generation is past `seen` (at once if
    /// it is already, or the task has ended), or with the task as it is when the agent's wait
    /// ends first (Trident's `--long-poll-timeout`, 30 s by default). Loop on it with the
    /// generation of the task it returns. `request`'s `currentGeneration` is set to `seen`.
    ///
    /// The call is bounded like any other: by `cx`'s deadline and the client's
    /// [`timeout`](crate::ClientBuilder::timeout), so give a client used for long polls a
    /// timeout longer than the agent's wait (or none). A task answered without a generation
    /// (an agent that does not speak the preview to this client) is a `VersionNotSupported`
    /// error, so a loop never spins on answers that come back at once.
    pub async fn long_poll(
        &self,
        cx: &CallContext,
        mut request: pb::GetTaskRequest,
        seen: i64,
    ) -> Result<pb::Task, A2aError> {
        request.current_generation = Some(seen);
        let task = self.service.get_task(cx, request).await?;
        if task.generation <= 0 {
            return Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                format!(
                    "task {} came back without a generation: the agent does not speak the A2A \
                     {PREVIEW_VERSION} preview to this client",
                    task.id
                ),
            ));
        }
        Ok(task)
    }

    /// SendMessage with the precondition `ifGenerationMatch: generation`: a message to an
    /// existing task is refused with [`ErrorKind::TaskGenerationMismatch`] unless `generation`
    /// is the task's generation when the agent takes it (nobody changed the task since the
    /// caller read it). The agent ignores it for a message that creates a task.
    pub async fn send_message_if(
        &self,
        cx: &CallContext,
        request: pb::SendMessageRequest,
        generation: i64,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        self.service
            .send_message(cx, if_generation_match(request, generation))
            .await
    }

    /// [`send_message_if`](Self::send_message_if), streaming; a mismatch fails the call
    /// before any event.
    pub async fn send_streaming_message_if(
        &self,
        cx: &CallContext,
        request: pb::SendMessageRequest,
        generation: i64,
    ) -> Result<EventStream, A2aError> {
        self.service
            .send_streaming_message(cx, if_generation_match(request, generation))
            .await
    }

    /// `stream` (of this agent, in the preview) with its gaps mended: each status or artifact
    /// event's generation must be the previous one plus one, counting from the stream's
    /// `Task` event (or from `seen`, the generation the caller's view of the task already has
    /// when it resumes a stream; `None` for a new one). On a gap (events lost, or a resumed
    /// stream that starts further on) the task is read again with GetTask and yielded as a
    /// `Task` event, so the consumer's view is whole again, and the stream goes on; events the
    /// task read already includes are not yielded again. A stream whose events carry no
    /// generation (an agent that does not speak the preview) passes unchanged. A failed
    /// GetTask ends the stream with its error.
    pub fn mend_gaps(
        &self,
        cx: CallContext,
        stream: EventStream,
        seen: Option<i64>,
    ) -> EventStream {
        let mender = Mender {
            stream,
            check: GapCheck::new(seen),
            service: Arc::clone(&self.service),
            cx,
            queued: None,
            ended: false,
        };
        futures::stream::unfold(mender, Mender::next).boxed()
    }
}

/// `request` with `configuration.ifGenerationMatch` set to `generation`.
pub fn if_generation_match(
    mut request: pb::SendMessageRequest,
    generation: i64,
) -> pb::SendMessageRequest {
    request
        .configuration
        .get_or_insert_with(Default::default)
        .if_generation_match = Some(generation);
    request
}

/// What [`GapCheck::observe`] makes of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Yield it.
    Pass,
    /// Already in the consumer's view (a task read after a gap includes it): drop it.
    Skip,
    /// Events are missing before it: read task `task_id` again first.
    Gap {
        /// The task to read.
        task_id: String,
    },
}

/// The generation the consumer's view of a streamed task is at, checked against each event.
#[derive(Debug, Clone, Default)]
pub(crate) struct GapCheck {
    last: Option<i64>,
}

impl GapCheck {
    /// A check whose consumer has seen generation `seen` already (`None`: nothing yet).
    pub(crate) fn new(seen: Option<i64>) -> Self {
        Self {
            last: seen.filter(|g| *g > 0),
        }
    }

    /// The generation the consumer's view is at.
    #[cfg(test)]
    pub(crate) fn last(&self) -> Option<i64> {
        self.last
    }

    /// Judges `event` and moves the view on when it passes.
    pub(crate) fn observe(&mut self, event: &pb::StreamResponse) -> Verdict {
        let (task_id, generation) = match &event.payload {
            Some(Event::Task(t)) => {
                if t.generation > 0 {
                    self.last = Some(t.generation);
                }
                return Verdict::Pass;
            }
            Some(Event::StatusUpdate(u)) => (&u.task_id, u.generation),
            Some(Event::ArtifactUpdate(a)) => (&a.task_id, a.generation),
            Some(Event::Message(_)) | None => return Verdict::Pass,
        };
        // No generation: an agent that does not stamp them; nothing to check.
        if generation <= 0 {
            return Verdict::Pass;
        }
        match self.last {
            Some(last) if generation == last.saturating_add(1) => {
                self.last = Some(generation);
                Verdict::Pass
            }
            Some(last) if generation <= last => Verdict::Skip,
            // Further on than the next one, or an update with no view to apply it to.
            _ => Verdict::Gap {
                task_id: task_id.clone(),
            },
        }
    }

    /// After a gap before an event of `generation`: the task read again is the view now.
    /// Whether that event is still to be yielded (the task read does not include it yet).
    pub(crate) fn refetched(&mut self, task: &pb::Task, generation: i64) -> bool {
        if task.generation > 0 {
            self.last = Some(task.generation);
        }
        match self.last {
            Some(last) if generation <= last => false,
            _ => {
                self.last = Some(generation);
                true
            }
        }
    }
}

/// The generation of an update event (0 for anything else).
fn generation_of(event: &pb::StreamResponse) -> i64 {
    match &event.payload {
        Some(Event::StatusUpdate(u)) => u.generation,
        Some(Event::ArtifactUpdate(a)) => a.generation,
        _ => 0,
    }
}

/// The state of [`Preview::mend_gaps`]'s stream.
struct Mender {
    stream: EventStream,
    check: GapCheck,
    service: Arc<dyn A2aService>,
    cx: CallContext,
    /// An event to yield after the task read for the gap before it.
    queued: Option<StreamEvent>,
    ended: bool,
}

impl Mender {
    async fn next(mut self) -> Option<(Result<StreamEvent, A2aError>, Self)> {
        if self.ended {
            return None;
        }
        if let Some(event) = self.queued.take() {
            return Some((Ok(event), self));
        }
        loop {
            let event = match self.stream.next().await? {
                Ok(event) => event,
                Err(e) => {
                    self.ended = true;
                    return Some((Err(e), self));
                }
            };
            match self.check.observe(&event.response) {
                Verdict::Pass => return Some((Ok(event), self)),
                Verdict::Skip => continue,
                Verdict::Gap { task_id } => {
                    let request = pb::GetTaskRequest {
                        id: task_id,
                        ..Default::default()
                    };
                    let task = match self.service.get_task(&self.cx, request).await {
                        Ok(task) => task,
                        Err(e) => {
                            self.ended = true;
                            return Some((Err(e), self));
                        }
                    };
                    if self.check.refetched(&task, generation_of(&event.response)) {
                        self.queued = Some(event);
                    }
                    let read = StreamEvent {
                        seq: u64::try_from(task.generation).ok().filter(|g| *g > 0),
                        response: Arc::new(pb::StreamResponse::new(Event::Task(task))),
                    };
                    return Some((Ok(read), self));
                }
            }
        }
    }
}
