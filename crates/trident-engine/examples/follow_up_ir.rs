//! The engine's cost of a blocking follow-up SendMessage, in process (no binding, the memory
//! store, a current-thread runtime so the run is deterministic): `N` tasks are created (the
//! agent asks for input), then, unless `--no-follow-ups`, each gets one blocking follow-up that
//! the agent answers at once (an artifact, then COMPLETED: the echo's turn). Instructions per
//! follow-up are the difference of two runs under callgrind, divided by `N`:
//!
//! ```text
//! cargo build --release --locked -p trident-engine --example follow_up_ir
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/fu.out target/release/examples/follow_up_ir 2000
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/fu0.out target/release/examples/follow_up_ir 2000 --no-follow-ups
//! # (summary of fu.out − summary of fu0.out) ÷ 2000
//! ```

use std::sync::Arc;

use trident_core::{A2aError, A2aService, AgentExecutor, CallContext, EventSink, RequestContext};
use trident_engine::Engine;
use trident_proto as pb;

/// First turn: asks for input. A follow-up: an artifact, then COMPLETED.
struct Asker;

#[async_trait::async_trait]
impl AgentExecutor for Asker {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        if ctx.task.is_none() {
            return sink.input_required("more, please").await;
        }
        sink.artifact(pb::Artifact::new("answer", vec![pb::Part::text("x")]))
            .await?;
        sink.complete().await
    }
}

/// Sends `message` (blocking) and returns the task it answers with.
async fn send(engine: &Engine, cx: &CallContext, message: pb::Message) -> pb::Task {
    let answer = engine
        .send_message(
            cx,
            pb::SendMessageRequest {
                message: Some(message),
                ..Default::default()
            },
        )
        .await;
    match answer.map(|a| a.payload) {
        Ok(Some(pb::send_message_response::Payload::Task(task))) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let follow_ups = args.next().as_deref() != Some("--no-follow-ups");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let engine = Engine::builder(Arc::new(Asker)).build();
        let cx = CallContext::new();
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let m = pb::Message::user(format!("q{i}"), vec![pb::Part::text("go")]);
            let task = send(&engine, &cx, m).await;
            assert_eq!(task.state(), pb::TaskState::InputRequired);
            ids.push(task.id);
        }
        if follow_ups {
            for (i, id) in ids.into_iter().enumerate() {
                let mut m = pb::Message::user(format!("a{i}"), vec![pb::Part::text("here")]);
                m.task_id = id;
                let task = send(&engine, &cx, m).await;
                assert_eq!(task.state(), pb::TaskState::Completed);
            }
        }
    });
}
