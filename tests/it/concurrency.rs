//! 1,000 tasks × 20 events, 5 subscribers each: one eager, one slow, one joining mid-stream,
//! one resuming from a sequence number, one stalled until the task is over. Every subscriber
//! must get every event after its starting point, in order, exactly once; the producer must
//! never wait for a stalled subscriber; memory must stay within the tails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use trident_core::{A2aError, A2aService, AgentExecutor, EventSink, RequestContext, StreamEvent};
use trident_engine::{Engine, EngineConfig};
use trident_proto as pb;

use crate::harness::{cx, msg, req};

const TASKS: usize = 1_000;
/// Events the agent publishes per task (plus the task snapshot logged at creation).
const EVENTS: u64 = 20;
const LAST_SEQ: u64 = EVENTS + 1;
const TAIL: usize = 4;

/// Publishes WORKING, 18 artifact chunks and COMPLETED; halfway it waits for the test to open
/// its gate, so subscribers can join mid-stream deterministically.
#[derive(Default)]
struct Burst {
    gates: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
}

impl Burst {
    fn gate(&self, key: &str) -> Arc<tokio::sync::Notify> {
        self.gates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.to_owned())
            .or_default()
            .clone()
    }
}

#[async_trait::async_trait]
impl AgentExecutor for Burst {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let gate = self.gate(&ctx.text());
        sink.working().await?;
        for i in 0..EVENTS - 2 {
            if i == 9 {
                gate.notified().await;
            }
            let chunk = pb::Artifact::new("out", vec![pb::Part::text(format!("{i}"))]);
            sink.artifact_chunk(chunk, i > 0, i == EVENTS - 3).await?;
            tokio::task::yield_now().await;
        }
        sink.complete().await
    }
}

fn seqs(events: &[StreamEvent]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e.seq.expect("task events carry a seq"))
        .collect()
}

fn assert_contiguous(name: &str, events: &[StreamEvent], after: u64, reference: &[StreamEvent]) {
    let expected: Vec<u64> = (after + 1..=LAST_SEQ).collect();
    assert_eq!(
        seqs(events),
        expected,
        "{name}: every event after {after}, in order, exactly once"
    );
    for e in events {
        let seq = e.seq.unwrap_or_default();
        assert_eq!(
            e.response,
            reference[(seq - 1) as usize].response,
            "{name}: event {seq} is the logged one"
        );
    }
}

async fn one_task(svc: Arc<dyn A2aService>, burst: Arc<Burst>, n: usize) {
    let key = format!("burst-{n}");
    let gate = burst.gate(&key);
    let mut eager = svc
        .send_streaming_message(&cx(), req(msg(&key)))
        .await
        .expect("stream");
    let first = eager.next().await.expect("first").expect("ok");
    let pb::stream_response::Payload::Task(task) =
        first.response.payload.as_ref().expect("payload")
    else {
        panic!("task first")
    };
    let id = task.id.clone();
    let sub = |after: Option<u64>| {
        let svc = svc.clone();
        let id = id.clone();
        async move {
            let mut c = cx();
            c.last_event_id = after;
            svc.subscribe_to_task(
                &c,
                pb::SubscribeToTaskRequest {
                    id,
                    ..Default::default()
                },
            )
            .await
            .expect("subscribe")
        }
    };
    let slow = sub(Some(0)).await;
    let stalled = sub(Some(0)).await;

    // Read until the agent waits at its gate, then join mid-stream.
    let mut eager_events = vec![first];
    while eager_events.len() < 10 {
        eager_events.push(eager.next().await.expect("event").expect("ok"));
    }
    let mid = sub(None).await;
    // A reconnecting client resumes after an event it has seen.
    let resume_from = (n % 9) as u64 + 1;
    let resumed = sub(Some(resume_from)).await;
    gate.notify_one();

    let slow_reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let mut s = slow;
        while let Some(e) = s.next().await {
            out.push(e.expect("ok"));
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
        out
    });
    let resumed_reader = tokio::spawn(crate::harness::collect(resumed));
    let mid_events = crate::harness::collect(mid).await;
    while let Some(e) = eager.next().await {
        eager_events.push(e.expect("ok"));
    }
    // The producer finished while `stalled` was never polled.
    let done = svc
        .get_task(
            &cx(),
            pb::GetTaskRequest {
                id: id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("get");
    assert_eq!(
        done.state(),
        pb::TaskState::Completed,
        "a stalled subscriber never blocks the task"
    );
    let stalled_events = crate::harness::collect(stalled).await;

    assert_contiguous("eager", &eager_events, 0, &eager_events);
    assert_contiguous("slow", &slow_reader.await.expect("join"), 0, &eager_events);
    assert_contiguous("stalled", &stalled_events, 0, &eager_events);
    assert_contiguous(
        "resumed",
        &resumed_reader.await.expect("join"),
        resume_from,
        &eager_events,
    );
    let snapshot_seq = mid_events[0].seq.expect("snapshot seq");
    assert!(
        matches!(
            mid_events[0].response.payload,
            Some(pb::stream_response::Payload::Task(_))
        ),
        "mid-stream join starts with the snapshot"
    );
    assert!(snapshot_seq >= 10, "joined after the first ten events");
    assert_contiguous("mid-stream", &mid_events[1..], snapshot_seq, &eager_events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_tasks_five_subscribers_each_get_every_event_once_in_order() {
    let burst = Arc::new(Burst::default());
    let engine = Engine::builder(burst.clone())
        .config(EngineConfig {
            tail_capacity: TAIL,
            ..Default::default()
        })
        .build();
    let svc: Arc<dyn A2aService> = Arc::new(engine.clone());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let engine = engine.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut samples = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let s = engine.stats();
                assert!(
                    s.buffered_events <= s.live_tasks * TAIL,
                    "tails stay bounded: {s:?}"
                );
                samples += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            samples
        })
    };
    futures::stream::iter(0..TASKS)
        .map(|n| one_task(svc.clone(), burst.clone(), n))
        .buffer_unordered(100)
        .collect::<Vec<()>>()
        .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = watcher
        .await
        .expect("memory stayed within the tails at every sample");
    assert!(samples > 0);
    // Everything is released once no executor, stream or worker holds a task.
    crate::wait::until("every task released", || {
        let idle = engine.stats().live_tasks == 0;
        async move { idle.then_some(()) }
    })
    .await;
    assert_eq!(
        engine.stats(),
        trident_engine::EngineStats::default(),
        "no task stays in memory"
    );
}
