//! The README's "agent in 15 lines": the block is `crates/trident/examples/readme.rs`, and
//! that program's agent, served by the same builder chain on port 0, answers over every
//! binding.

use std::path::Path;

use trident::client::Binding;
use trident::proto as pb;
use trident::{CallContext, Server};

/// The README program, compiled here (its `main` binds port 8080, so the test builds the same
/// server on port 0 instead).
#[allow(dead_code)]
#[path = "../../crates/trident/examples/readme.rs"]
mod program;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The first `rust` block after `heading` in the markdown file at `path`.
fn rust_block(path: &str, heading: &str) -> String {
    let text = std::fs::read_to_string(root().join(path)).expect("the README");
    let section = text.split(heading).nth(1).expect("the heading");
    section
        .split("```rust\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a rust block")
        .to_owned()
}

#[test]
fn the_readme_agent_is_the_example_program() {
    let example = std::fs::read_to_string(root().join("crates/trident/examples/readme.rs"))
        .expect("the example");
    let readme = rust_block("README.md", "## An agent in 15 lines");
    assert_eq!(readme, example, "README.md's block and the example differ");
    let crate_readme = rust_block("crates/trident/README.md", "# trident");
    assert_eq!(
        crate_readme, example,
        "the facade's README block and the example differ"
    );
    let lines = example
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count();
    assert!(lines <= 15, "{lines} lines");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_agent_answers_over_every_binding() {
    let server = Server::builder(program::Echo)
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let origin = server.interfaces().rest.clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.with_graceful_shutdown(async {
        let _ = stop_rx.await;
    }));
    for binding in Binding::ALL {
        let agent = trident::client::connect(&origin, &[binding])
            .await
            .expect("connect");
        assert_eq!(agent.binding, binding);
        let request = pb::SendMessageRequest {
            message: Some(pb::Message::user(
                format!("m-{binding:?}"),
                vec![pb::Part::text(format!("hello over {binding:?}"))],
            )),
            ..Default::default()
        };
        let reply = agent
            .service
            .send_message(&CallContext::new(), request)
            .await
            .expect("send");
        let Some(pb::send_message_response::Payload::Task(task)) = reply.payload else {
            panic!("{binding:?}: not a task: {reply:?}");
        };
        assert_eq!(task.state(), pb::TaskState::Completed, "{binding:?}");
        let echoed: Vec<&str> = task
            .artifacts
            .iter()
            .flat_map(|a| &a.parts)
            .filter_map(pb::Part::as_text)
            .collect();
        assert_eq!(echoed, [format!("hello over {binding:?}")], "{binding:?}");
    }
    let _ = stop_tx.send(());
    serving
        .await
        .expect("the server task")
        .expect("a clean shutdown");
}
