use std::sync::Arc;

use crate::auth::BearerTokens;
use crate::proto::AgentCard;
use crate::{
    A2aError, AgentExecutor, BuildError, CallContext, EngineConfig, EventSink, ProxyOptions,
    RequestContext, Server, WebhookError, WebhookPolicy, WebhookRequest, WebhookTransport,
};

struct Done;

#[async_trait::async_trait]
impl AgentExecutor for Done {
    async fn execute(&self, _: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        sink.complete().await
    }
}

struct Nowhere;

#[async_trait::async_trait]
impl WebhookTransport for Nowhere {
    async fn post(&self, _: &WebhookRequest) -> Result<(), WebhookError> {
        Ok(())
    }
}

fn card() -> crate::proto::AgentCardBuilder {
    AgentCard::builder("Test", "A test agent")
}

fn bearer() -> Arc<BearerTokens> {
    Arc::new(BearerTokens::new().with("secret", "alice"))
}

async fn refused(builder: crate::ServerBuilder) -> BuildError {
    match builder.bind("127.0.0.1:0").build().await {
        Ok(server) => panic!("built {server:?}"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn incoherent_setups_are_refused_with_the_reason() {
    let e = refused(
        Server::builder(Done)
            .card(card().push_notifications(true).build())
            .without_push_delivery(),
    )
    .await;
    assert!(matches!(e, BuildError::PushWithoutSender), "{e}");

    let e = refused(
        Server::builder(Done)
            .card(card().push_notifications(false).build())
            .webhooks(Arc::new(Nowhere)),
    )
    .await;
    assert!(matches!(e, BuildError::SenderWithoutPush), "{e}");

    let e = refused(Server::builder(Done).card(card().extended_agent_card(true).build())).await;
    assert!(matches!(e, BuildError::ExtendedCardMissing), "{e}");

    let e = refused(
        Server::builder(Done)
            .card(card().build())
            .extended_card(card().build())
            .authenticator(bearer()),
    )
    .await;
    assert!(matches!(e, BuildError::ExtendedCardNotDeclared), "{e}");

    let e = refused(
        Server::builder(Done)
            .card(card().extended_agent_card(true).build())
            .extended_card(card().build()),
    )
    .await;
    assert!(
        matches!(e, BuildError::ExtendedCardWithoutAuthentication),
        "{e}"
    );

    let e = refused(
        Server::builder(Done)
            .card(card().interface("http://a.example/", "JSONRPC").build())
            .public_url("https://b.example"),
    )
    .await;
    assert!(matches!(e, BuildError::InterfacesTwice), "{e}");

    let loopback = WebhookPolicy::new().allow("127.0.0.1").expect("entry");
    let e = refused(
        Server::builder(Done)
            .webhook_policy(WebhookPolicy::new().allow("10.0.0.0/8").expect("entry"))
            .engine_config(EngineConfig {
                webhook_policy: loopback.clone(),
                ..EngineConfig::default()
            }),
    )
    .await;
    assert!(matches!(e, BuildError::WebhookPolicyTwice), "{e}");

    let svc: Arc<dyn crate::A2aService> = Arc::new(crate::Engine::builder(Arc::new(Done)).build());
    let e = refused(Server::service(svc.clone())).await;
    assert!(matches!(e, BuildError::MissingCard), "{e}");
    let e = refused(Server::service(svc).card(card().build()).store("memory")).await;
    assert!(matches!(e, BuildError::NotAnEngine("store")), "{e}");

    let e = refused(Server::builder(Done).proxies(ProxyOptions {
        proxy_protocol: true,
        ..ProxyOptions::default()
    }))
    .await;
    assert!(
        matches!(e, BuildError::ProxyProtocolWithoutTrustedProxies),
        "{e}"
    );

    for path in [
        "rpc",
        "/a//b",
        "/{tenant}",
        "/rpc:send",
        crate::CARD_PATH,
        crate::METRICS_PATH,
    ] {
        let e = refused(Server::builder(Done).jsonrpc_path(path)).await;
        assert!(
            matches!(e, BuildError::JsonRpcPath(ref p) if p == path),
            "{e}"
        );
    }

    let e = refused(Server::builder(Done).store("mysql://nope")).await;
    assert!(matches!(e, BuildError::Store(_)), "{e}");
}

#[tokio::test]
async fn a_listener_that_cannot_bind_says_where() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let e = Server::builder(Done)
        .bind(&addr)
        .build()
        .await
        .expect_err("the port is taken");
    assert!(matches!(e, BuildError::Bind { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("cannot listen on {addr}: ")),
        "{e}"
    );
}

#[tokio::test]
async fn the_card_gets_the_bound_interfaces_and_the_authenticators_schemes() {
    let server = Server::builder(Done)
        .card(card().build())
        .authenticator(bearer())
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    let urls: Vec<(&str, &str)> = server
        .card()
        .supported_interfaces
        .iter()
        .map(|i| (i.protocol_binding.as_str(), i.url.as_str()))
        .collect();
    let (jsonrpc, rest, grpc) = (
        format!("http://{addr}/"),
        format!("http://{addr}"),
        addr.to_string(),
    );
    assert_eq!(
        urls,
        [
            ("JSONRPC", jsonrpc.as_str()),
            ("HTTP+JSON", rest.as_str()),
            ("GRPC", grpc.as_str())
        ]
    );
    assert!(!server.card().security_schemes.is_empty());
    assert_eq!(
        server.card().security_requirements.len(),
        server.card().security_schemes.len()
    );
    assert!(server.engine().is_some());
}

#[tokio::test]
async fn interfaces_given_in_the_card_are_kept_and_a_public_url_fills_them_otherwise() {
    let server = Server::builder(Done)
        .card(
            card()
                .interface("https://agent.example/rpc", "JSONRPC")
                .build(),
        )
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    assert_eq!(server.card().supported_interfaces.len(), 1);
    assert_eq!(server.interfaces().jsonrpc, "https://agent.example/rpc");

    let server = Server::builder(Done)
        .public_url("https://agent.example")
        .grpc_bind("127.0.0.1:0")
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    assert_eq!(server.interfaces().rest, "https://agent.example");
    let grpc = server.grpc_addr().expect("a gRPC listener");
    assert_eq!(server.interfaces().grpc, grpc.to_string());
}

#[tokio::test]
async fn a_signing_key_signs_the_card_and_declares_signed_notifications() {
    let server = Server::builder(Done)
        .signing_key(crate::security::SigningKey::generate())
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let card = server.card();
    assert_eq!(card.signatures.len(), 1);
    let declared = card
        .capabilities
        .iter()
        .flat_map(|c| &c.extensions)
        .any(|e| e.uri == crate::SIGNED_NOTIFICATIONS_EXTENSION);
    assert!(declared);
}

/// A bus that carries nothing (what matters here is whether the builder takes it).
struct NoBus;

#[async_trait::async_trait]
impl crate::store::EventBus for NoBus {
    async fn publish(&self, _: &crate::store::Scope, _: &str, _: &[crate::store::LoggedEvent]) {}

    fn watch(&self, _: &crate::store::Scope, _: &str) -> crate::store::BusWatch {
        Box::new(())
    }

    fn feed(&self) -> crate::store::NoticeFeed {
        Box::pin(futures::stream::empty())
    }
}

/// The in-memory store, saying it is shared with other processes (as PostgreSQL is).
struct SharedMemory(crate::store::MemoryStore);

#[async_trait::async_trait]
impl crate::store::TaskStore for SharedMemory {
    async fn commit(
        &self,
        scope: &crate::store::Scope,
        record: &crate::store::TaskRecord,
        expected_seq: Option<u64>,
        events: &[crate::store::LoggedEvent],
    ) -> Result<(), crate::store::StoreError> {
        self.0.commit(scope, record, expected_seq, events).await
    }

    async fn append(
        &self,
        scope: &crate::store::Scope,
        record: &crate::store::TaskRecord,
        expected_seq: u64,
        events: &[crate::store::LoggedEvent],
    ) -> Result<(), crate::store::StoreError> {
        self.0.append(scope, record, expected_seq, events).await
    }

    async fn append_final(
        &self,
        scope: &crate::store::Scope,
        task_id: &str,
        event: &crate::proto::StreamResponse,
    ) -> Result<Option<u64>, crate::store::StoreError> {
        self.0.append_final(scope, task_id, event).await
    }

    async fn get(
        &self,
        scope: &crate::store::Scope,
        id: &str,
    ) -> Result<Option<crate::store::TaskRecord>, crate::store::StoreError> {
        self.0.get(scope, id).await
    }

    async fn list(
        &self,
        scope: &crate::store::Scope,
        query: &crate::store::TaskQuery,
    ) -> Result<crate::store::TaskPage, crate::store::StoreError> {
        self.0.list(scope, query).await
    }

    async fn renew_leases(
        &self,
        node: &str,
        until_ms: i64,
    ) -> Result<u64, crate::store::StoreError> {
        self.0.renew_leases(node, until_ms).await
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(crate::store::Scope, String)>, crate::store::StoreError> {
        self.0.lapsed_leases(before_ms, limit).await
    }

    fn shared(&self) -> bool {
        true
    }
}

/// An event bus carries events between the processes of one shared store: the builder takes
/// it with such a store, and refuses it with any other (and for a service, which has no
/// engine to publish).
#[tokio::test]
async fn an_event_bus_needs_a_shared_store() {
    let bus: Arc<dyn crate::store::EventBus> = Arc::new(NoBus);
    let e = refused(Server::builder(Done).events(bus.clone())).await;
    assert!(matches!(e, BuildError::EventsWithoutSharedStore), "{e}");
    let e = refused(Server::builder(Done).store("memory").events(bus.clone())).await;
    assert!(matches!(e, BuildError::EventsWithoutSharedStore), "{e}");

    let svc: Arc<dyn crate::A2aService> = Arc::new(crate::Engine::builder(Arc::new(Done)).build());
    let e = refused(
        Server::service(svc)
            .card(card().build())
            .events(bus.clone()),
    )
    .await;
    assert!(matches!(e, BuildError::NotAnEngine("events")), "{e}");

    let memory = Arc::new(crate::store::MemoryStore::new());
    let stores = crate::store::Stores {
        tasks: Arc::new(SharedMemory(crate::store::MemoryStore::new())),
        events: memory.clone(),
        push: memory,
    };
    let server = Server::builder(Done)
        .stores(stores)
        .events(bus)
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("a bus with a shared store");
    assert!(server.engine().is_some_and(|e| e.shares_store()));
}

/// `store::open` takes every spec `--store` does: `memory` itself (with its parameters), the
/// durable stores through `trident-store`, and names every accepted form for anything else.
#[tokio::test]
async fn store_open_takes_memory_and_the_durable_specs() {
    use crate::store::{OpenError, open};
    let stores = open("memory").await.expect("memory");
    assert!(!stores.tasks.shared());
    open("memory?max_tasks=10&terminal_ttl=none")
        .await
        .expect("memory with a retention");
    let Err(err) = open("memory?ttl=5").await else {
        panic!("a bad memory parameter opened");
    };
    assert!(
        matches!(&err, OpenError::Memory(e) if e.param() == "ttl=5"),
        "{err}"
    );
    let Err(err) = open("sqlite:").await else {
        panic!("a SQLite spec without a path opened");
    };
    assert!(matches!(err, OpenError::Durable(_)), "{err}");
    for bad in ["", "mysql://x", "file.db"] {
        let Err(err) = open(bad).await else {
            panic!("{bad:?} opened");
        };
        let text = err.to_string();
        assert!(matches!(err, OpenError::Spec(_)), "{bad}: {text}");
        assert!(
            text.contains("memory") && text.contains("sqlite:PATH") && text.contains("postgres://"),
            "{text}"
        );
    }
    let dir = std::env::temp_dir().join(format!("trident-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let db = dir.join("tasks.db");
    let stores = open(&format!("sqlite:{}", db.display()))
        .await
        .expect("sqlite");
    assert!(!stores.tasks.shared());
    drop(stores);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Answers with the data part it was sent, in an artifact.
struct Mirror;

#[async_trait::async_trait]
impl AgentExecutor for Mirror {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let parts = ctx.message.parts.clone();
        sink.artifact(crate::proto::Artifact::new("mirror", parts))
            .await?;
        sink.complete().await
    }
}

fn data_message() -> crate::proto::SendMessageRequest {
    // `Part::data` takes the facade's own `serde_json`: no dependency of the user's.
    let part = crate::proto::Part::data(crate::serde_json::json!({"n": 1}));
    crate::proto::SendMessageRequest {
        message: Some(crate::proto::Message::user("m-1", vec![part])),
        ..Default::default()
    }
}

/// The agent at `origin`, connected over JSON-RPC by a client of `builder`.
async fn over_jsonrpc(builder: crate::client::ClientBuilder, origin: &str) -> crate::client::Agent {
    builder
        .build()
        .expect("client")
        .connect_with(origin, &[crate::client::Binding::JsonRpc])
        .await
        .expect("connect")
}

#[tokio::test]
async fn jsonrpc_is_served_at_the_path_given_and_the_card_says_so() {
    use crate::client::ClientBuilder;
    let server = Server::builder(Mirror)
        .jsonrpc_path("/a2a/jsonrpc")
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let jsonrpc = format!("http://{}/a2a/jsonrpc", server.local_addr());
    assert_eq!(server.interfaces().jsonrpc, jsonrpc);
    let listed = server
        .card()
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == "JSONRPC")
        .map(|i| i.url.clone());
    assert_eq!(listed.as_deref(), Some(jsonrpc.as_str()));

    let server = server.spawn();
    let agent = over_jsonrpc(ClientBuilder::new(), server.origin()).await;
    assert_eq!(agent.interface.url, jsonrpc);
    let reply = agent
        .service
        .send_message(&CallContext::new(), data_message())
        .await
        .expect("an answer at the path");
    assert!(format!("{reply:?}").contains("mirror"), "{reply:?}");
    // Nothing is served at `/` any more.
    let at_root = reqwest::Client::new()
        .post(format!("{}/", server.origin()))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#)
        .send()
        .await
        .expect("POST /");
    assert!(at_root.status().is_client_error(), "{}", at_root.status());
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_card_url_serves_the_card() {
    let server = Server::builder(Done)
        .card(card().build())
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build");
    let url = server.card_url();
    assert_eq!(
        url,
        format!("http://{}{}", server.local_addr(), crate::CARD_PATH)
    );
    let running = server.spawn();
    assert_eq!(running.card_url(), url);
    let body: crate::serde_json::Value = reqwest::get(&url)
        .await
        .expect("GET the card")
        .json()
        .await
        .expect("JSON");
    assert_eq!(body["name"], "Test");
    running.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_extended_card_gets_the_interfaces_and_security_of_the_public_one() {
    use crate::client::ClientBuilder;
    let server = Server::builder(Done)
        .card(card().extended_agent_card(true).build())
        .extended_card(AgentCard::builder("Test", "More for members").build())
        .authenticator(bearer())
        .signing_key(crate::security::SigningKey::generate())
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build")
        .spawn();
    let public = server.card().clone();
    let agent = over_jsonrpc(ClientBuilder::new().bearer_token("secret"), server.origin()).await;
    let extended = agent
        .service
        .get_extended_agent_card(&CallContext::new(), Default::default())
        .await
        .expect("the extended card");
    assert_eq!(extended.description, "More for members");
    assert_eq!(extended.supported_interfaces, public.supported_interfaces);
    assert!(!extended.security_schemes.is_empty());
    assert_eq!(extended.security_schemes, public.security_schemes);
    assert_eq!(extended.security_requirements, public.security_requirements);
    assert_eq!(extended.signatures.len(), 1, "signed like the public card");
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_listener_bound_before_build_says_its_address_first() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Known before `build()`: e.g. written into a card of one's own.
    let mine = card()
        .interface(format!("http://{addr}/"), "JSONRPC")
        .build();
    let server = Server::builder(Done)
        .card(mine)
        .listener(listener)
        .build()
        .await
        .expect("build");
    assert_eq!(server.local_addr(), addr);
    assert_eq!(server.interfaces().jsonrpc, format!("http://{addr}/"));
    let running = server.spawn();
    let agent = crate::client::connect(running.origin(), &[])
        .await
        .expect("served on the listener given");
    assert_eq!(agent.card.name, "Test");
    running.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn one_client_connects_over_the_binding_each_call_asks_for() {
    use crate::client::{Binding, ClientBuilder};
    use crate::futures::StreamExt;
    let server = Server::builder(Mirror)
        .bind("127.0.0.1:0")
        .build()
        .await
        .expect("build")
        .spawn();
    let client = ClientBuilder::new()
        .prefer(&[Binding::Grpc])
        .build()
        .expect("client");
    for binding in Binding::ALL {
        let agent = client
            .connect_with(server.origin(), &[binding])
            .await
            .expect("connect");
        assert_eq!(agent.binding, binding);
        let mut stream = agent
            .service
            .send_streaming_message(&CallContext::new(), data_message())
            .await
            .expect("stream");
        let mut events = 0;
        while let Some(event) = stream.next().await {
            event.expect("event");
            events += 1;
        }
        assert!(events > 0);
    }
    // The builder's preference still holds for `connect`.
    let agent = client.connect(server.origin()).await.expect("connect");
    assert_eq!(agent.binding, Binding::Grpc);
    server.shutdown().await.expect("shutdown");
}
