//! The streams that follow a live task (SendStreamingMessage, SubscribeToTask): each reads
//! the task's events after its cursor, from the tail while it keeps up and from the log when
//! it falls behind, and never blocks the writer.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::watch;
use trident_core::{A2aError, EventStream, StreamEvent};
use trident_proto as pb;

use super::{Live, LiveGuard, Progress};
use crate::engine::{Inner, shutting_down};
use crate::store::LoggedEvent;

/// Whether a stream ends after this event: a direct message, or a task reaching a terminal
/// state or `INPUT_REQUIRED` (streams stay open through `AUTH_REQUIRED`).
fn closes_stream(event: &pb::StreamResponse) -> bool {
    use pb::stream_response::Payload;
    let ends = |s: pb::TaskState| s.is_terminal() || s == pb::TaskState::InputRequired;
    match &event.payload {
        Some(Payload::Message(_)) | None => true,
        Some(Payload::Task(t)) => ends(t.state()),
        Some(Payload::StatusUpdate(u)) => u
            .status
            .as_ref()
            .is_some_and(|s| ends(pb::TaskState::try_from(s.state).unwrap_or_default())),
        Some(Payload::ArtifactUpdate(_)) => false,
    }
}

/// Whether the event moves the task to a terminal state.
fn ends_task(event: &pb::StreamResponse) -> bool {
    use pb::stream_response::Payload;
    match &event.payload {
        Some(Payload::Task(t)) => t.state().is_terminal(),
        Some(Payload::StatusUpdate(u)) => u.status.as_ref().is_some_and(|s| {
            pb::TaskState::try_from(s.state)
                .unwrap_or_default()
                .is_terminal()
        }),
        _ => false,
    }
}

/// Where a stream of a task ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// With the turn: at a terminal state or `INPUT_REQUIRED` (SendStreamingMessage; a direct
    /// message ends it too).
    Turn,
    /// At a terminal state only, through interruptions and their follow-up turns
    /// (SubscribeToTask, spec §3.1.6).
    Terminal,
}

impl StreamEnd {
    fn ends_at(self, event: &pb::StreamResponse) -> bool {
        match self {
            StreamEnd::Turn => closes_stream(event),
            StreamEnd::Terminal => ends_task(event),
        }
    }
}

/// How a stream follows its task: where it ends, and whether its events carry generations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Follow {
    pub(crate) end: StreamEnd,
    /// The caller speaks the A2A 1.1 preview: each event carries the task's generation after
    /// it ([`stamped`]). Otherwise the events go out as logged, shared, without one.
    pub(crate) generations: bool,
}

/// `event` (logged as `seq`) as a caller of the A2A 1.1 preview gets it: a copy carrying the
/// task's generation after it, which is its sequence number (see [`crate::store::apply`]).
fn stamped(event: &pb::StreamResponse, seq: u64) -> Arc<pb::StreamResponse> {
    use pb::stream_response::Payload;
    let mut event = event.clone();
    let generation = i64::try_from(seq).unwrap_or(i64::MAX);
    match &mut event.payload {
        Some(Payload::Task(t)) => t.generation = generation,
        Some(Payload::StatusUpdate(u)) => u.generation = generation,
        Some(Payload::ArtifactUpdate(u)) => u.generation = generation,
        Some(Payload::Message(_)) | None => {}
    }
    Arc::new(event)
}

struct Reader {
    guard: LiveGuard,
    /// Keeps the task's log from eviction while this stream may still read it.
    _hold: Option<crate::store::LogHold>,
    end: StreamEnd,
    generations: bool,
    cursor: u64,
    lead: Option<StreamEvent>,
    pending: VecDeque<LoggedEvent>,
    progress: watch::Receiver<Progress>,
    done: bool,
}

impl Reader {
    async fn next(&mut self) -> Option<Result<StreamEvent, A2aError>> {
        if let Some(lead) = self.lead.take() {
            self.done = self.end.ends_at(&lead.response);
            return Some(Ok(lead));
        }
        loop {
            if let Some(e) = self.pending.pop_front() {
                self.cursor = e.seq;
                // A replay from an old cursor passes an INPUT_REQUIRED the task has since
                // answered; only a terminal state or the latest interruption ends the stream.
                let latest = self.progress.borrow().seq;
                if self.end.ends_at(&e.event) && (e.seq >= latest || ends_task(&e.event)) {
                    self.done = true;
                    self.pending.clear();
                }
                let response = if self.generations {
                    stamped(&e.event, e.seq)
                } else {
                    e.event.shared()
                };
                return Some(Ok(StreamEvent {
                    seq: Some(e.seq),
                    response,
                }));
            }
            if self.done {
                return None;
            }
            if self.guard.inner().closing.is_cancelled() {
                self.done = true;
                return Some(Err(shutting_down()));
            }
            let progress = *self.progress.borrow_and_update();
            let live = self.guard.live();
            if let Err(e) = live
                .read_after(self.guard.inner(), self.cursor, &mut self.pending)
                .await
            {
                self.done = true;
                return Some(Err(e));
            }
            if !self.pending.is_empty() {
                continue;
            }
            if progress.state.is_terminal() {
                if self.cursor >= progress.seq {
                    return None;
                }
                // The task ended and nothing is left to read before its end: its log is gone
                // (evicted before this stream held it). Waiting would wait forever.
                self.done = true;
                return Some(Err(A2aError::internal(format!(
                    "task {}'s events after {} are no longer held",
                    live.task_id(),
                    self.cursor
                ))));
            }
            if progress.fault
                && let Some(e) = live.fault_error()
            {
                self.done = true;
                return Some(Err(e));
            }
            // Caught up: an idle stream may wait here for hours, so it keeps no batch buffer
            // meanwhile (the next batch allocates its own).
            if self.pending.capacity() > 0 {
                self.pending = VecDeque::new();
            }
            tokio::select! {
                changed = self.progress.changed() => if changed.is_err() {
                    return None;
                },
                () = self.guard.inner().closing.cancelled() => {
                    self.done = true;
                    return Some(Err(shutting_down()));
                }
            }
        }
    }
}

/// A stream of a live task's events after `cursor`, optionally led by a snapshot.
pub(crate) fn follow(
    inner: Arc<Inner>,
    live: Arc<Live>,
    cursor: u64,
    lead: Option<StreamEvent>,
    how: Follow,
) -> EventStream {
    let progress = live.progress();
    let hold = inner.stores.events.hold(live.scope(), live.task_id());
    let reader = Reader {
        guard: LiveGuard::new(inner, live),
        _hold: hold,
        end: how.end,
        generations: how.generations,
        cursor,
        lead,
        pending: VecDeque::new(),
        progress,
        done: false,
    };
    futures::stream::unfold(reader, |mut r| async move {
        r.next().await.map(|item| (item, r))
    })
    .boxed()
}
