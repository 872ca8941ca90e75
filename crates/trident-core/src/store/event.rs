//! [`SharedEvent`]: one event of a task's log as the engine, the stores and the readers share
//! it, with its encoded size carried along, or held encoded until someone looks.

use std::sync::{Arc, OnceLock};

use prost::Message as _;
use prost::bytes::BufMut;
use trident_proto as pb;

/// One event of a task's log ([`LoggedEvent::event`](super::LoggedEvent::event)), shared:
/// cloning it clones a pointer. It dereferences to the [`pb::StreamResponse`].
///
/// Two things it spares the hot path. Its encoded size is carried once measured
/// ([`SharedEvent::measured`]: the engine measures every event it commits), so a store that
/// encodes it neither measures it again nor guesses. And an event nobody may look at before
/// it is stored (the `SUBMITTED` task of a blocking call) can be held encoded
/// ([`SharedEvent::task_snapshot`]): encoded once, straight from the task it describes,
/// instead of a copy of that task; a store writes its bytes as they are, and it is decoded
/// only if someone reads it ([`Deref`](std::ops::Deref), [`SharedEvent::shared`]).
#[derive(Clone)]
pub struct SharedEvent(Repr);

/// Which payload an event carries ([`SharedEvent::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A snapshot of the task.
    Task,
    /// A direct reply.
    Message,
    /// A change of the task's status.
    StatusUpdate,
    /// A new or extended artifact.
    ArtifactUpdate,
}

#[derive(Clone)]
enum Repr {
    /// The event, and its encoded size (0: not measured; an event of 0 bytes is measured
    /// again at no cost).
    Value(Arc<pb::StreamResponse>, usize),
    /// The event, encoded: always a task snapshot ([`SharedEvent::task_snapshot`]).
    Encoded(Arc<Encoded>),
}

struct Encoded {
    /// The event's protobuf encoding (as [`prost::Message::encode_to_vec`] writes it).
    bytes: Box<[u8]>,
    /// The event, decoded on first look.
    value: OnceLock<Arc<pb::StreamResponse>>,
}

impl SharedEvent {
    /// `event`, its size measured when first needed.
    pub fn new(event: pb::StreamResponse) -> Self {
        Self(Repr::Value(Arc::new(event), 0))
    }

    /// `event`, its encoded size measured now and carried (for a writer that needs the size
    /// anyway: a store that encodes the event then reserves exactly and measures nothing).
    pub fn measured(event: pb::StreamResponse) -> Self {
        let len = event.encoded_len();
        Self(Repr::Value(Arc::new(event), len))
    }

    /// The event that carries `task` as a snapshot (`StreamResponse { task }`), encoded from
    /// `task` at once: no copy of the task is made, and the event is decoded only when
    /// somebody reads it. For an event that will most likely only ever be stored.
    pub fn task_snapshot(task: &pb::Task) -> Self {
        // `StreamResponse`'s `task` (field 1 of the `payload` oneof), as prost encodes it.
        const TASK: u32 = 1;
        let mut buf = Vec::with_capacity(prost::encoding::message::encoded_len(TASK, task));
        prost::encoding::message::encode(TASK, task, &mut buf);
        Self(Repr::Encoded(Arc::new(Encoded {
            bytes: buf.into_boxed_slice(),
            value: OnceLock::new(),
        })))
    }

    /// The event, shared (for a [`StreamEvent`](crate::StreamEvent)); an encoded one is
    /// decoded once.
    pub fn shared(&self) -> Arc<pb::StreamResponse> {
        match &self.0 {
            Repr::Value(event, _) => event.clone(),
            Repr::Encoded(encoded) => encoded.value().clone(),
        }
    }

    /// Which payload the event carries (`None`: none), without decoding an encoded one.
    pub fn kind(&self) -> Option<EventKind> {
        use pb::stream_response::Payload;
        match &self.0 {
            Repr::Value(event, _) => event.payload.as_ref().map(|p| match p {
                Payload::Task(_) => EventKind::Task,
                Payload::Message(_) => EventKind::Message,
                Payload::StatusUpdate(_) => EventKind::StatusUpdate,
                Payload::ArtifactUpdate(_) => EventKind::ArtifactUpdate,
            }),
            Repr::Encoded(_) => Some(EventKind::Task),
        }
    }

    /// The size of the event's protobuf encoding (carried when known, measured otherwise).
    pub fn encoded_len(&self) -> usize {
        match &self.0 {
            Repr::Value(event, 0) => event.encoded_len(),
            Repr::Value(_, len) => *len,
            Repr::Encoded(encoded) => encoded.bytes.len(),
        }
    }

    /// Writes the event's protobuf encoding (what [`prost::Message::encode_raw`] writes).
    pub fn encode_raw(&self, buf: &mut impl BufMut) {
        match &self.0 {
            Repr::Value(event, _) => event.encode_raw(buf),
            Repr::Encoded(encoded) => buf.put_slice(&encoded.bytes),
        }
    }

    /// The event's protobuf encoding.
    pub fn encode_to_vec(&self) -> Vec<u8> {
        match &self.0 {
            Repr::Value(event, _) => {
                let mut buf = Vec::with_capacity(self.encoded_len());
                event.encode_raw(&mut buf);
                buf
            }
            Repr::Encoded(encoded) => encoded.bytes.to_vec(),
        }
    }

    /// Writes the event's encoding after its length (as
    /// [`prost::Message::encode_length_delimited`], without measuring a carried size again).
    pub fn encode_length_delimited(&self, buf: &mut impl BufMut) {
        prost::encoding::encode_varint(self.encoded_len() as u64, buf);
        self.encode_raw(buf);
    }

    /// The size [`SharedEvent::encode_length_delimited`] writes.
    pub fn length_delimited_len(&self) -> usize {
        let len = self.encoded_len();
        prost::encoding::length_delimiter_len(len) + len
    }
}

#[cfg(test)]
impl SharedEvent {
    /// Whether the event is held decoded (an encoded one once somebody looked at it).
    fn decoded(&self) -> bool {
        match &self.0 {
            Repr::Value(..) => true,
            Repr::Encoded(encoded) => encoded.value.get().is_some(),
        }
    }
}

impl Encoded {
    fn value(&self) -> &Arc<pb::StreamResponse> {
        self.value.get_or_init(|| {
            // The bytes are an encoding of a message, written above: decoding them fails only
            // where prost's decoder is stricter than its encoder (nesting past its recursion
            // limit, which the engine's limits keep requests far from).
            Arc::new(pb::StreamResponse::decode(&self.bytes[..]).unwrap_or_default())
        })
    }
}

impl std::ops::Deref for SharedEvent {
    type Target = pb::StreamResponse;

    fn deref(&self) -> &pb::StreamResponse {
        match &self.0 {
            Repr::Value(event, _) => event,
            Repr::Encoded(encoded) => encoded.value(),
        }
    }
}

impl AsRef<pb::StreamResponse> for SharedEvent {
    fn as_ref(&self) -> &pb::StreamResponse {
        self
    }
}

impl From<pb::StreamResponse> for SharedEvent {
    fn from(event: pb::StreamResponse) -> Self {
        Self::new(event)
    }
}

impl From<Arc<pb::StreamResponse>> for SharedEvent {
    fn from(event: Arc<pb::StreamResponse>) -> Self {
        Self(Repr::Value(event, 0))
    }
}

impl PartialEq for SharedEvent {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for SharedEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        pb::StreamResponse::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> pb::Task {
        let mut message = pb::Message::user("m1", vec![pb::Part::text("hello")]);
        message.task_id = "t".into();
        message.context_id = "c".into();
        pb::Task {
            id: "t".into(),
            context_id: "c".into(),
            status: Some(pb::TaskStatus::now(pb::TaskState::Submitted, None)),
            history: vec![message],
            ..Default::default()
        }
    }

    #[test]
    fn a_task_snapshot_encodes_as_the_event_would_and_decodes_to_it() {
        let task = task();
        let event = pb::StreamResponse::new(pb::stream_response::Payload::Task(task.clone()));
        let shared = SharedEvent::task_snapshot(&task);
        assert_eq!(shared.kind(), Some(EventKind::Task));
        assert_eq!(shared.encode_to_vec(), event.encode_to_vec());
        assert_eq!(shared.encoded_len(), event.encoded_len());
        let mut delimited = Vec::new();
        shared.encode_length_delimited(&mut delimited);
        assert_eq!(delimited, event.encode_length_delimited_to_vec());
        assert_eq!(shared.length_delimited_len(), delimited.len());
        assert!(
            !shared.decoded(),
            "measuring, encoding and `kind` decode nothing"
        );
        assert_eq!(*shared, event);
        assert!(shared.decoded());
        assert_eq!(*shared.shared(), event);
        assert_eq!(shared, SharedEvent::new(event));
    }

    #[test]
    fn a_measured_event_carries_its_size() {
        let event = pb::StreamResponse::new(pb::stream_response::Payload::Task(task()));
        for shared in [SharedEvent::measured(event.clone()), event.clone().into()] {
            assert_eq!(shared.encoded_len(), event.encoded_len());
            assert_eq!(shared.encode_to_vec(), event.encode_to_vec());
            let mut delimited = Vec::new();
            shared.encode_length_delimited(&mut delimited);
            assert_eq!(delimited, event.encode_length_delimited_to_vec());
        }
    }
}
