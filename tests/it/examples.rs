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
