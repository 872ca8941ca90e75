//! The runnable examples (`examples/*.rs`) end to end: each is compiled here as a module and
//! its `run` — which serves the agent on a free port and calls it with our client — is driven
//! over every binding, asserting what the agent did, not only that it answered.

use trident::ErrorKind;
use trident::client::Binding;
use trident::proto::TaskState;

#[allow(dead_code)]
#[path = "../../examples/echo.rs"]
mod echo;

#[allow(dead_code)]
#[path = "../../examples/streaming.rs"]
mod streaming;

#[allow(dead_code)]
#[path = "../../examples/multi_turn.rs"]
mod multi_turn;

#[allow(dead_code)]
#[path = "../../examples/cancel.rs"]
mod cancel;

#[allow(dead_code)]
#[path = "../../examples/auth.rs"]
mod auth;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_completes_with_the_text_over_every_binding() {
    for binding in Binding::ALL {
        let text = format!("hello over {binding}");
        let (state, echoed) = echo::run(binding, &text)
            .await
            .unwrap_or_else(|e| panic!("{binding}: {e}"));
        assert_eq!(state, TaskState::Completed, "{binding}");
        assert_eq!(echoed, text, "{binding}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_delivers_every_chunk_in_order_over_every_binding() {
    for binding in Binding::ALL {
        let events = streaming::run(binding, "rivers")
            .await
            .unwrap_or_else(|e| panic!("{binding}: {e}"));
        assert_eq!(
            events,
            [
                "task Submitted",
                "status Working",
                "chunk \"Of rivers I sing,\" append=false last=false",
                "chunk \"one line at a time,\" append=true last=false",
                "chunk \"and then I stop.\" append=true last=true",
                "status Completed",
            ],
            "{binding}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_asks_then_completes_the_same_task_over_every_binding() {
    for binding in Binding::ALL {
        let transcript = multi_turn::run(binding, "Ada")
            .await
            .unwrap_or_else(|e| panic!("{binding}: {e}"));
        assert_eq!(
            transcript,
            [
                "InputRequired: What is your name?",
                "Completed: Hello, Ada!"
            ],
            "{binding}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_agent_midway_over_every_binding() {
    for binding in Binding::ALL {
        let outcome = cancel::run(binding)
            .await
            .unwrap_or_else(|e| panic!("{binding}: {e}"));
        assert_eq!(outcome.canceled, TaskState::Canceled, "{binding}");
        assert_eq!(outcome.last_streamed, TaskState::Canceled, "{binding}");
        // It had made progress (the client waited for a chunk) and stopped long before the end.
        assert!(
            (2..cancel::STEPS).contains(&outcome.stopped_at),
            "{binding}: {outcome:?}"
        );
    }
}

/// What `cancel::Counter`'s sink reaches: the engine's, except that before passing on the
/// first artifact chunk it hands the test a go-ahead to wait for, and waits for it. The test
/// cancels the task meanwhile, so the cancel lands exactly between a step's wait (over: its
/// sleep won) and that step's publish.
struct CancelBeforeChunk {
    sink: trident::EventSink,
    task_id: String,
    first: std::sync::Mutex<
        Option<tokio::sync::mpsc::UnboundedSender<tokio::sync::oneshot::Sender<()>>>,
    >,
}

#[trident::async_trait]
impl trident_core::TurnEvents for CancelBeforeChunk {
    fn task_id(&self) -> &str {
        &self.task_id
    }

    fn agent_message(&self, text: String) -> trident::proto::Message {
        self.sink.message(text)
    }

    async fn reply(&self, message: trident::proto::Message) -> Result<(), trident::A2aError> {
        self.sink.reply(message).await
    }

    async fn update(&self, update: trident_core::TurnUpdate) -> Result<(), trident::A2aError> {
        match update {
            trident_core::TurnUpdate::Status { state, message } => {
                self.sink.status(state, message).await
            }
            trident_core::TurnUpdate::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                let ask = self.first.lock().expect("lock").take();
                if let Some(ask) = ask {
                    let (go, gone) = tokio::sync::oneshot::channel();
                    ask.send(go).expect("the test waits");
                    gone.await.expect("the test answers");
                }
                self.sink.artifact_chunk(artifact, append, last_chunk).await
            }
        }
    }
}

/// `cancel::Counter` with its sink behind [`CancelBeforeChunk`]; says how its turn ended.
struct Hooked {
    counter: cancel::Counter,
    before_chunk: tokio::sync::mpsc::UnboundedSender<tokio::sync::oneshot::Sender<()>>,
    ended: tokio::sync::mpsc::UnboundedSender<Result<(), trident::A2aError>>,
}

#[trident::async_trait]
impl trident::AgentExecutor for Hooked {
    async fn execute(
        &self,
        ctx: trident::RequestContext,
        sink: trident::EventSink,
    ) -> Result<(), trident::A2aError> {
        let hooked = trident::EventSink::new(std::sync::Arc::new(CancelBeforeChunk {
            sink,
            task_id: ctx.task_id.clone(),
            first: std::sync::Mutex::new(Some(self.before_chunk.clone())),
        }));
        let ended = self.counter.execute(ctx, hooked).await;
        let _ = self.ended.send(ended.clone());
        ended
    }
}

/// examples/cancel.rs (commit dfc2f76): a cancel landing between a step's wait and its publish
/// makes the engine refuse the chunk (the task is CANCELED); the agent reports that step as
/// where it stopped and ends its turn cleanly. It used to return the refusal without a report,
/// and the example's `run` waited on the report forever. Driven deterministically: the test
/// cancels while the chunk's publish is held, then lets it through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_between_a_step_and_its_chunk_reports_the_step() {
    use trident::A2aService as _;
    use trident::client::TaskId as _;
    use trident::proto::{
        CancelTaskRequest, Message, Part, SendMessageConfiguration, SendMessageRequest,
    };
    let (stopped, mut stops) = tokio::sync::mpsc::unbounded_channel();
    let (before_chunk, mut chunks) = tokio::sync::mpsc::unbounded_channel();
    let (ended, mut ends) = tokio::sync::mpsc::unbounded_channel();
    let engine = trident_engine::Engine::builder(std::sync::Arc::new(Hooked {
        counter: cancel::Counter { stopped },
        before_chunk,
        ended,
    }))
    .build();
    let cx = trident::CallContext::new();
    let started = engine
        .send_message(
            &cx,
            SendMessageRequest {
                message: Some(Message::user("m-1", vec![Part::text("count")])),
                configuration: Some(SendMessageConfiguration {
                    return_immediately: true,
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .expect("send");
    let id = started.task_id().expect("a task").to_owned();
    let go = tokio::time::timeout(std::time::Duration::from_secs(30), chunks.recv())
        .await
        .expect("step 1's chunk within 30 s")
        .expect("the hook asks");
    let canceled = engine
        .cancel_task(
            &cx,
            CancelTaskRequest {
                id,
                ..Default::default()
            },
        )
        .await
        .expect("cancel");
    assert_eq!(canceled.state(), TaskState::Canceled);
    go.send(()).expect("the chunk waits");
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), ends.recv())
        .await
        .expect("the turn's end within 30 s")
        .expect("the turn ends");
    assert!(
        ended.is_ok(),
        "a chunk refused by the cancel ends the turn cleanly: {ended:?}"
    );
    assert_eq!(
        stops.try_recv(),
        Ok(1),
        "the agent reports the step it was publishing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_refuses_strangers_and_shows_alice_the_extended_card_over_every_binding() {
    for binding in Binding::ALL {
        let outcome = auth::run(binding)
            .await
            .unwrap_or_else(|e| panic!("{binding}: {e}"));
        assert_eq!(outcome.schemes, ["bearer"], "{binding}");
        assert_eq!(
            outcome.anonymous_send,
            Some(ErrorKind::Unauthenticated),
            "{binding}"
        );
        assert_eq!(
            outcome.anonymous_extended,
            Some(ErrorKind::Unauthenticated),
            "{binding}"
        );
        assert_eq!(outcome.extended_skills, ["greet", "vip"], "{binding}");
        assert_eq!(outcome.greeting, "Welcome, alice.", "{binding}");
    }
}
