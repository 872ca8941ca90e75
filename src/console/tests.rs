use std::net::SocketAddr;

use serde_json::json;
use trident::client::{Binding, Protocol};
use trident::proto as pb;

use super::api::{self, State, loopback_authority, parse, pick};
use super::{Args, ConsoleError, check_listen, page_url};

fn args(listen: &str, allow_remote: bool) -> Args {
    Args {
        agent: None,
        listen: listen.parse().expect("an address"),
        allow_remote,
    }
}

#[test]
fn only_loopback_unless_allowed() {
    assert!(check_listen(&args("127.0.0.1:0", false)).is_ok());
    assert!(check_listen(&args("[::1]:8080", false)).is_ok());
    assert!(matches!(
        check_listen(&args("0.0.0.0:0", false)),
        Err(ConsoleError::NotLoopback(_))
    ));
    assert!(check_listen(&args("0.0.0.0:0", true)).is_ok());
}

#[test]
fn the_url_printed_is_reachable() {
    let at = |a: &str| page_url(a.parse::<SocketAddr>().expect("an address"));
    assert_eq!(at("127.0.0.1:4000"), "http://127.0.0.1:4000/");
    assert_eq!(at("0.0.0.0:4000"), "http://127.0.0.1:4000/");
    assert_eq!(at("[::]:4000"), "http://[::1]:4000/");
}

#[test]
fn loopback_hosts() {
    for host in [
        "127.0.0.1:80",
        "localhost",
        "LOCALHOST:9",
        "[::1]:4000",
        "127.1.2.3",
    ] {
        assert!(loopback_authority(host), "{host}");
    }
    for host in [
        "",
        "example.com",
        "10.0.0.1:80",
        "localhost.evil.example",
        "[::2]:1",
    ] {
        assert!(!loopback_authority(host), "{host}");
    }
}

fn state(preset: Option<&str>) -> State {
    State {
        preset: preset.map(str::to_owned),
        allow_remote: false,
        served: None,
        hooks: std::sync::Arc::new(super::push::Hooks::new(
            "http://127.0.0.1:0/hooks/".to_owned(),
        )),
    }
}

#[test]
fn bad_calls_are_refused_with_a_reason() {
    for body in [
        &b"{"[..],
        b"[]",
        br#"{"agent": "  "}"#,
        br#"{"agent": "x", "extra": true}"#,
        br#"{"agent": 5}"#,
    ] {
        let e = parse(body).expect_err("refused");
        assert_eq!(e.body()["error"]["code"], "bad_request", "{e}");
    }
    let call = parse(br#"{"agent": "127.0.0.1:8080"}"#).expect("a call");
    assert_eq!(call.agent, "127.0.0.1:8080");
}

#[test]
fn the_page_names_network_agents_only() {
    let call = |agent: &str| api::Call {
        agent: agent.to_owned(),
        ..Default::default()
    };
    for agent in [
        "/etc/passwd",
        "./card.json",
        "file:///etc/passwd",
        "catalog:x",
    ] {
        assert!(call(agent).target(&state(None)).is_err(), "{agent}");
    }
    // The command line may name a file.
    assert!(
        call("./card.json")
            .target(&state(Some("./card.json")))
            .is_ok()
    );
    let target = call("127.0.0.1:8080")
        .target(&state(None))
        .expect("a network agent");
    assert_eq!(target.agent_card.as_deref(), Some("127.0.0.1:8080"));
    assert!(target.bearer.is_none() && target.api_key.is_none());
}

#[test]
fn credentials_and_headers_become_the_client_options() {
    let call: api::Call = serde_json::from_value(json!({
        "agent": "127.0.0.1:8080",
        "auth": {
            "bearer": " t0ken ",
            "apiKey": "",
            "headers": [{"name": "X-Team", "value": "blue"}, {"name": "", "value": ""}],
        },
    }))
    .expect("a call");
    let target = call.target(&state(None)).expect("options");
    assert_eq!(target.bearer.as_deref(), Some("t0ken"));
    assert_eq!(target.api_key, None);
    assert_eq!(target.svc_param, ["X-Team:blue"]);

    let bad: api::Call = serde_json::from_value(json!({
        "agent": "127.0.0.1:8080",
        "auth": { "headers": [{"name": "X-Secret", "value": "line\nbreak-secret"}] },
    }))
    .expect("a call");
    let e = bad.target(&state(None)).expect_err("refused");
    assert!(
        !e.to_string().contains("break-secret"),
        "a header's value is never repeated: {e}"
    );
}

#[test]
fn messages_carry_text_metadata_and_task() {
    let call: api::Call = serde_json::from_value(json!({
        "agent": "a",
        "text": "hello",
        "metadata": {"k": 1},
        "taskId": "t1",
        "returnImmediately": true,
    }))
    .expect("a call");
    let request = call.message().expect("a message");
    let message = request.message.expect("the message");
    assert_eq!(message.text(), "hello");
    assert_eq!(message.task_id, "t1");
    assert!(message.metadata.is_some());
    assert_eq!(
        request.configuration.map(|c| c.return_immediately),
        Some(true)
    );

    let empty = api::Call {
        agent: "a".into(),
        text: Some(" ".into()),
        ..Default::default()
    };
    assert!(empty.message().is_err());
    let not_object = api::Call {
        agent: "a".into(),
        text: Some("x".into()),
        metadata: Some(json!([1])),
        ..Default::default()
    };
    assert!(not_object.message().is_err());
}

#[test]
fn list_filters_are_checked() {
    let call = |v: serde_json::Value| serde_json::from_value::<api::Call>(v).expect("a call");
    let request = call(json!({"agent": "a", "status": "working", "pageSize": 5}))
        .list()
        .expect("filters");
    assert_eq!(request.status, i32::from(pb::TaskState::Working));
    assert_eq!(request.page_size, Some(5));
    assert!(
        call(json!({"agent": "a", "status": "sleeping"}))
            .list()
            .is_err()
    );
    assert!(call(json!({"agent": "a", "pageSize": 0})).list().is_err());
}

#[test]
fn the_binding_must_be_one_the_card_offers() {
    let interface = |binding: &str, version: &str| pb::AgentInterface {
        url: "http://127.0.0.1:1".into(),
        protocol_binding: binding.into(),
        protocol_version: version.into(),
        ..Default::default()
    };
    let card = pb::AgentCard {
        supported_interfaces: vec![interface("JSONRPC", "1.0"), interface("GRPC", "0.3")],
        ..Default::default()
    };
    assert_eq!(
        pick(&card, Some("jsonrpc")).expect("offered"),
        (Binding::JsonRpc, Protocol::V1)
    );
    assert_eq!(
        pick(&card, Some("GRPC")).expect("offered"),
        (Binding::Grpc, Protocol::V03)
    );
    assert_eq!(
        pick(&card, None).expect("the first offered"),
        (Binding::JsonRpc, Protocol::V1)
    );
    assert!(pick(&card, Some("HTTP+JSON")).is_err());
    assert!(pick(&card, Some("carrier-pigeon")).is_err());
}

#[test]
fn wire_lines_are_kept_in_order_bounded_and_cut() {
    use super::wire::{MAX_LINE, MAX_LINES, WireLog};
    let log = WireLog::default();
    let sink = log.sink();
    (sink.0)("JSON-RPC → {}");
    (sink.0)(&"é".repeat(MAX_LINE));
    let taken = log.take(false);
    assert_eq!(taken[0], "JSON-RPC → {}");
    assert!(taken[1].ends_with(&format!("… [{MAX_LINE} bytes more]")));
    assert!(taken[1].len() < MAX_LINE + 40);
    assert!(log.take(false).is_empty());
    for i in 0..MAX_LINES + 5 {
        (sink.0)(&format!("line {i}"));
    }
    let taken = log.take(true);
    // Two were kept before: the call's limit counts them.
    assert_eq!(taken.len(), MAX_LINES - 2 + 1);
    assert_eq!(
        taken.last().map(String::as_str),
        Some(format!("[7 more lines not kept: a call keeps {MAX_LINES}]").as_str())
    );
}
