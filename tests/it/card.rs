//! The agent card endpoint: three interfaces, caching headers, conditional GET, and a client
//! that picks a binding from it.

use crate::harness::{Fixture, Transport, cx, send_task};
use trident_client::Binding;
use trident_proto as pb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_lists_three_interfaces_and_supports_conditional_get() {
    let f = Fixture::default(Transport::Rest).await;
    let interfaces = f.interfaces.clone().expect("server");
    let url = format!("{}/.well-known/agent-card.json", interfaces.rest);
    let http = reqwest::Client::new();
    let response = http.get(&url).send().await.expect("card");
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/json");
    assert!(
        headers["cache-control"]
            .to_str()
            .expect("ascii")
            .contains("max-age=")
    );
    let etag = headers["etag"].clone();
    let last_modified = headers["last-modified"].clone();
    let card: pb::AgentCard =
        serde_json::from_slice(&response.bytes().await.expect("body")).expect("card JSON");
    let bindings: Vec<_> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            (
                i.protocol_binding.as_str(),
                i.url.as_str(),
                i.protocol_version.as_str(),
            )
        })
        .collect();
    assert_eq!(
        bindings,
        [
            ("JSONRPC", interfaces.jsonrpc.as_str(), "1.0"),
            ("HTTP+JSON", interfaces.rest.as_str(), "1.0"),
            ("GRPC", interfaces.grpc.as_str(), "1.0"),
        ]
    );
    assert!(
        !interfaces.grpc.contains("://"),
        "gRPC url is bare host:port"
    );
    let caps = card.capabilities.as_ref().expect("capabilities");
    assert_eq!(
        (caps.streaming, caps.push_notifications),
        (Some(true), Some(true))
    );

    let again = http
        .get(&url)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .expect("conditional");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag);
    let since = http
        .get(&url)
        .header("if-modified-since", last_modified)
        .send()
        .await
        .expect("conditional");
    assert_eq!(since.status(), 304);
    let changed = http
        .get(&url)
        .header("if-none-match", "\"other\"")
        .send()
        .await
        .expect("conditional");
    assert_eq!(changed.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reads_the_card_and_connects_over_each_preferred_binding() {
    let f = Fixture::default(Transport::Rest).await;
    let origin = f.interfaces.clone().expect("server").rest;
    for binding in Binding::ALL {
        let agent = trident_client::connect(&origin, &[binding])
            .await
            .expect("connect");
        assert_eq!(agent.binding, binding);
        assert_eq!(agent.interface.protocol_binding, binding.card_name());
        let task = send_task(&*agent.service, &cx(), "hello").await;
        assert_eq!(task.state(), pb::TaskState::Completed, "{binding:?}");
    }
    let default = trident_client::connect(&origin, &[])
        .await
        .expect("connect");
    assert_eq!(
        default.binding,
        Binding::JsonRpc,
        "no preference: the card's order decides among all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_can_have_a_listener_of_its_own() {
    use std::sync::Arc;
    use trident_server::{Bindings, ServerOptions};
    let engine = trident_engine::Engine::builder(Arc::new(trident_core::agents::Demo)).build();
    let svc: Arc<dyn trident_core::A2aService> = Arc::new(engine);
    let http = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let mut interfaces = trident_server::Interfaces::local(http.local_addr().expect("addr"));
    interfaces.grpc = grpc.local_addr().expect("addr").to_string();
    let card = trident_server::card_with_interfaces(
        trident_core::default_card("Split", "Split listeners"),
        &interfaces,
    );
    let http_app = trident_server::app(
        svc.clone(),
        &card,
        &ServerOptions {
            bindings: Bindings::HTTP,
            ..Default::default()
        },
    )
    .expect("app");
    let grpc_app = trident_server::app(
        svc,
        &card,
        &ServerOptions {
            bindings: Bindings::GRPC,
            ..Default::default()
        },
    )
    .expect("app");
    let servers = [
        tokio::spawn(async move {
            let _ = trident_server::serve(
                http,
                http_app,
                std::future::pending(),
                std::time::Duration::ZERO,
            )
            .await;
        }),
        tokio::spawn(async move {
            let _ = trident_server::serve(
                grpc,
                grpc_app,
                std::future::pending(),
                std::time::Duration::ZERO,
            )
            .await;
        }),
    ];
    for binding in Binding::ALL {
        let agent = trident_client::connect(&interfaces.rest, &[binding])
            .await
            .expect("connect");
        let task = send_task(&*agent.service, &cx(), "hello").await;
        assert_eq!(task.state(), pb::TaskState::Completed, "{binding:?}");
    }
    // Each listener serves only its bindings.
    let http_port_grpc = trident_grpc::GrpcClient::connect(&interfaces.rest.replace("http://", ""))
        .await
        .expect("h2c connects");
    assert!(
        send_task_result(&http_port_grpc).await.is_err(),
        "no gRPC on the HTTP listener"
    );
    let card_on_grpc = reqwest::get(format!(
        "http://{}/.well-known/agent-card.json",
        interfaces.grpc
    ))
    .await
    .expect("http");
    assert_eq!(card_on_grpc.status(), 404, "no card on the gRPC listener");
    for s in servers {
        s.abort();
    }
}

async fn send_task_result(
    svc: &dyn trident_core::A2aService,
) -> Result<pb::SendMessageResponse, trident_core::A2aError> {
    svc.send_message(&cx(), crate::harness::req(crate::harness::msg("hello")))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activated_extensions_are_echoed_on_every_binding() {
    use std::sync::Arc;
    const GEO: &str = "https://example.com/ext/geo/v1";
    let mut card = trident_core::default_card("Ext", "Declares one extension");
    card.capabilities
        .get_or_insert_with(Default::default)
        .extensions
        .push(pb::AgentExtension {
            uri: GEO.into(),
            ..Default::default()
        });
    let engine = trident_engine::Engine::builder(Arc::new(trident_core::agents::Demo))
        .card(card)
        .build();
    let (interfaces, server) = crate::harness::spawn_server(engine).await;
    let http = reqwest::Client::new();
    let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let rest = http
        .post(format!("{}/message:send", interfaces.rest))
        .header("content-type", "application/json")
        .header(
            "a2a-extensions",
            format!("https://unknown.example/x, {GEO}"),
        )
        .body(body)
        .send()
        .await
        .expect("rest");
    assert_eq!(rest.status(), 200);
    assert_eq!(
        rest.headers()["a2a-extensions"],
        GEO,
        "only declared extensions are activated"
    );
    let plain = http
        .post(format!("{}/message:send", interfaces.rest))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("rest");
    assert!(plain.headers().get("a2a-extensions").is_none());
    let mut grpc = trident_grpc::GrpcClient::connect(&interfaces.grpc)
        .await
        .expect("grpc")
        .raw();
    let mut request = tonic::Request::new(crate::harness::req(crate::harness::msg("hi")));
    request
        .metadata_mut()
        .insert("a2a-extensions", GEO.parse().expect("ascii"));
    let response = grpc.send_message(request).await.expect("grpc");
    assert_eq!(
        response
            .metadata()
            .get("a2a-extensions")
            .and_then(|v| v.to_str().ok()),
        Some(GEO)
    );
    server.abort();
}
