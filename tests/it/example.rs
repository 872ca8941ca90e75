//! `examples/call_agent.rs` end to end: an agent written with Trident calls another agent with
//! the client builder and the helpers, and a user reads the answer.

#[allow(dead_code)]
#[path = "../../examples/call_agent.rs"]
mod call_agent;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_another_agent() {
    let answer = call_agent::run("rivers").await.expect("the relay answers");
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(
        lines,
        [
            "chunk 0 of rivers",
            "chunk 1 of rivers",
            "chunk 2 of rivers",
            lines.last().copied().unwrap_or_default(),
        ],
        "{answer}"
    );
    let note = lines.last().copied().unwrap_or_default();
    assert!(note.starts_with("relayed 3 chunks of GRPC task "), "{note}");
}
