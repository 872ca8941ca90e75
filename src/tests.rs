//! Unit tests of the command line: settings from a file become flags of the command run.

use clap::{CommandFactory, Parser};

use crate::{Cli, config};

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn file_settings_become_flags_of_the_command_run() {
    let vars = [
        ("TRIDENT_STORE".to_owned(), "memory".to_owned()),
        ("TRIDENT_STRICT_VERSION".to_owned(), "true".to_owned()),
        // A client setting: ignored by serve.
        ("TRIDENT_TOKEN".to_owned(), "secret".to_owned()),
    ];
    let out = config::apply(
        &Cli::command(),
        args(&["trident", "serve", "--listen", "127.0.0.1:0"]),
        &vars,
    )
    .expect("apply");
    assert_eq!(
        out,
        args(&[
            "trident",
            "serve",
            "--store=memory",
            "--strict-version",
            "--listen",
            "127.0.0.1:0"
        ])
    );
}

#[test]
fn flags_win_over_the_file() {
    let vars = [("TRIDENT_STORE".to_owned(), "memory".to_owned())];
    let out = config::apply(
        &Cli::command(),
        args(&["trident", "serve", "--store", "sqlite:x.db"]),
        &vars,
    )
    .expect("apply");
    assert_eq!(out, args(&["trident", "serve", "--store", "sqlite:x.db"]));
}

#[test]
fn unknown_settings_are_refused() {
    let vars = [("TRIDENT_STOR".to_owned(), "memory".to_owned())];
    let err = config::apply(&Cli::command(), args(&["trident", "serve"]), &vars)
        .expect_err("a typo is an error");
    assert!(err.contains("stor"), "{err}");
}

#[test]
fn nested_commands_get_their_settings() {
    let vars = [("TRIDENT_TOKEN".to_owned(), "secret".to_owned())];
    let out = config::apply(
        &Cli::command(),
        args(&["trident", "push", "list", "http://x", "t1"]),
        &vars,
    )
    .expect("apply");
    assert_eq!(
        out,
        args(&[
            "trident",
            "push",
            "list",
            "--bearer=secret",
            "http://x",
            "t1"
        ])
    );
}

#[test]
fn the_command_line_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn connection_limits_come_from_the_file_for_serve_and_gateway() {
    let vars = [
        ("TRIDENT_HEADER_TIMEOUT".to_owned(), "0.5".to_owned()),
        ("TRIDENT_BODY_TIMEOUT".to_owned(), "2".to_owned()),
        ("TRIDENT_IDLE_TIMEOUT".to_owned(), "0".to_owned()),
        ("TRIDENT_MAX_CONNECTIONS".to_owned(), "64".to_owned()),
        ("TRIDENT_MAX_HEADER_BYTES".to_owned(), "8192".to_owned()),
        (
            "TRIDENT_MAX_INFLIGHT_BODY_BYTES".to_owned(),
            "1048576".to_owned(),
        ),
    ];
    for command in ["serve", "gateway"] {
        let out =
            config::apply(&Cli::command(), args(&["trident", command]), &vars).expect("apply");
        assert_eq!(
            out,
            args(&[
                "trident",
                command,
                "--header-timeout=0.5",
                "--body-timeout=2",
                "--idle-timeout=0",
                "--max-connections=64",
                "--max-header-bytes=8192",
                "--max-inflight-body-bytes=1048576",
            ])
        );
        let mut with_upstream = out.clone();
        if command == "gateway" {
            with_upstream.extend(args(&["--upstream", "http://x"]));
        }
        Cli::try_parse_from(&with_upstream).expect("the flags parse");
    }
}

#[tokio::test]
async fn the_event_bus_needs_a_shared_store() {
    let serve = |store: &str| {
        let cli = Cli::try_parse_from([
            "trident",
            "serve",
            "--events",
            "nats://127.0.0.1:1",
            "--store",
            store,
        ])
        .expect("parse");
        match cli.command {
            crate::Command::Serve(args) => args,
            _ => unreachable!("serve"),
        }
    };
    for store in ["memory", "sqlite:trident.db", "memory?max_tasks=10"] {
        let e = crate::serve::event_bus(&serve(store))
            .await
            .expect_err("refused");
        assert!(
            e.starts_with("--events needs a store the replicas share (--store postgres://…)"),
            "{store}: {e}"
        );
    }
    // A shared store passes that check and goes on to connect (to nothing here).
    let e = crate::serve::event_bus(&serve("postgres://u:secret@127.0.0.1:1/db"))
        .await
        .expect_err("nothing listens");
    assert!(
        e.starts_with("--events: connecting to NATS at nats://127.0.0.1:1"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
}
