//! Clients that keep the caller's promises (issue 17), on every binding: a call to an agent
//! that never answers ends with `DeadlineExceeded` by the deadline; a cancelled caller's request
//! is dropped (the server sees it go); a gateway carries the caller's deadline to its upstream
//! whatever the two bindings; transport errors keep their cause; the card fetch has options and
//! a cache.
//!
//! Waits are bounded by [`RETURNS`], a generous guard: the tests assert that calls return, not
//! how fast.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use trident_client::{Binding, ClientBuilder, Texts, Upstream};
use trident_core::{A2aError, A2aService, CallContext, ErrorKind, EventStream, StreamEvent};
use trident_proto as pb;

use crate::wait::{holds_for, until};

/// How long any call here may take before the test fails: far beyond every deadline used.
const RETURNS: Duration = Duration::from_secs(20);

/// Fails the test when `fut` does not finish within [`RETURNS`].
async fn returns<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(RETURNS, fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not return within {RETURNS:?}"))
}

/// What a [`Probe`] does with a call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Answer (a task; a stream of one event that then stays open).
    Answer,
    /// Never answer.
    Hang,
}

/// A service that records the context of each call, then answers or never does, and counts
/// the calls whose future was dropped before finishing (the server giving up on them because
/// the caller went away).
struct Probe {
    mode: Mode,
    seen: Mutex<Vec<CallContext>>,
    dropped: Arc<AtomicUsize>,
    big: usize,
}

impl Probe {
    fn new(mode: Mode) -> Arc<Self> {
        Arc::new(Self {
            mode,
            seen: Mutex::default(),
            dropped: Arc::default(),
            big: 0,
        })
    }

    fn seen(&self) -> Vec<CallContext> {
        self.seen.lock().expect("lock").clone()
    }

    /// Records `cx`; in `Hang` mode never returns (and counts the drop of the call).
    async fn enter(&self, cx: &CallContext) {
        self.seen.lock().expect("lock").push(cx.clone());
        if self.mode == Mode::Hang {
            struct OnDrop(Arc<AtomicUsize>);
            impl Drop for OnDrop {
                fn drop(&mut self) {
                    self.0.fetch_add(1, Ordering::SeqCst);
                }
            }
            let _guard = OnDrop(self.dropped.clone());
            std::future::pending::<()>().await;
        }
    }

    fn task(&self, id: &str) -> pb::Task {
        pb::Task {
            id: id.to_owned(),
            context_id: "c".to_owned(),
            status: Some(pb::TaskStatus {
                state: pb::TaskState::Working as i32,
                ..Default::default()
            }),
            artifacts: (self.big > 0)
                .then(|| pb::Artifact::new("big", vec![pb::Part::text("x".repeat(self.big))]))
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }
}

#[async_trait::async_trait]
impl A2aService for Probe {
    async fn send_message(
        &self,
        cx: &CallContext,
        _: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse, A2aError> {
        self.enter(cx).await;
        Ok(pb::SendMessageResponse {
            payload: Some(pb::send_message_response::Payload::Task(self.task("t"))),
        })
    }

    async fn send_streaming_message(
        &self,
        cx: &CallContext,
        _: pb::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        self.enter(cx).await;
        let first = StreamEvent {
            seq: Some(1),
            response: Arc::new(pb::StreamResponse::new(pb::stream_response::Payload::Task(
                self.task("t"),
            ))),
        };
        Ok(futures::stream::iter([Ok(first)])
            .chain(futures::stream::pending())
            .boxed())
    }

    async fn get_task(
        &self,
        cx: &CallContext,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        self.enter(cx).await;
        Ok(self.task(&req.id))
    }

    async fn list_tasks(
        &self,
        _: &CallContext,
        _: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn cancel_task(
        &self,
        _: &CallContext,
        _: pb::CancelTaskRequest,
    ) -> Result<pb::Task, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn subscribe_to_task(
        &self,
        _: &CallContext,
        _: pb::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn create_task_push_notification_config(
        &self,
        _: &CallContext,
        _: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn get_task_push_notification_config(
        &self,
        _: &CallContext,
        _: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn list_task_push_notification_configs(
        &self,
        _: &CallContext,
        _: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn get_extended_agent_card(
        &self,
        _: &CallContext,
        _: pb::GetExtendedAgentCardRequest,
    ) -> Result<pb::AgentCard, A2aError> {
        Err(A2aError::unsupported("probe"))
    }

    async fn delete_task_push_notification_config(
        &self,
        _: &CallContext,
        _: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        Err(A2aError::unsupported("probe"))
    }
}

/// Serves `svc` on every binding (and its card) on an ephemeral loopback port; returns the
/// origin.
async fn serve(svc: Arc<dyn A2aService>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let card = trident_server::card_with_interfaces(
        trident_core::default_card("Probe", "Records and stalls"),
        &trident_server::Interfaces::local(addr),
    );
    let app =
        trident_server::app(svc, &card, &trident_server::ServerOptions::default()).expect("app");
    tokio::spawn(trident_server::serve(
        listener,
        app,
        std::future::pending(),
        Duration::ZERO,
    ));
    format!("http://{addr}")
}

/// A client of the agent at `origin` over `binding`.
async fn agent_over(origin: &str, binding: Binding) -> Arc<dyn A2aService> {
    let client = ClientBuilder::new()
        .prefer(&[binding])
        .build()
        .expect("client");
    let agent = client.connect(origin).await.expect("connect");
    assert_eq!(agent.binding, binding);
    agent.service
}

fn get(id: &str) -> pb::GetTaskRequest {
    pb::GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    }
}

fn send() -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message::user("m-1", vec![pb::Part::text("hi")])),
        ..Default::default()
    }
}

fn deadline_error<T: std::fmt::Debug>(r: Result<T, A2aError>, what: &str) -> A2aError {
    let e = r.expect_err(what);
    assert_eq!(e.kind(), ErrorKind::DeadlineExceeded, "{what}: {e}");
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_an_agent_that_never_answers_ends_at_the_deadline() {
    let origin = serve(Probe::new(Mode::Hang)).await;
    for binding in Binding::ALL {
        let agent = agent_over(&origin, binding).await;
        let cx = CallContext::new().with_timeout(Duration::from_millis(300));
        let r = returns("GetTask", agent.get_task(&cx, get("t"))).await;
        let e = deadline_error(r, &format!("{binding} GetTask"));
        assert!(e.is_transport(), "raised here: {e:?}");

        let cx = CallContext::new().with_timeout(Duration::from_millis(300));
        let r = returns("stream", agent.send_streaming_message(&cx, send())).await;
        deadline_error(r.map(|_| ()), &format!("{binding} SendStreamingMessage"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_ends_with_deadline_exceeded() {
    let origin = serve(Probe::new(Mode::Answer)).await;
    for binding in Binding::ALL {
        let agent = agent_over(&origin, binding).await;
        // Long enough for the stream to open on a loaded machine: the deadline must end the
        // stream, not its opening.
        let cx = CallContext::new().with_timeout(Duration::from_secs(2));
        let events = returns("open", agent.send_streaming_message(&cx, send()))
            .await
            .expect("the stream opens");
        let items: Vec<_> = returns("stream", events.collect()).await;
        assert_eq!(items.len(), 2, "{binding}: {items:?}");
        assert_eq!(
            items[0].as_ref().map(|e| e.task_id().map(str::to_owned)),
            Ok(Some("t".to_owned())),
            "{binding}"
        );
        assert_eq!(
            items[1].as_ref().map_err(A2aError::kind).err(),
            Some(ErrorKind::DeadlineExceeded),
            "{binding}"
        );
    }
}

use trident_client::TaskId;

/// A raw HTTP server that reads one request, never answers (or answers only the head of an
/// SSE stream), and reports when the client closes the connection.
async fn silent_http(sse_head: bool) -> (String, tokio::sync::oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (closed, seen) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut buf = vec![0u8; 64 * 1024];
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        if sse_head {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        transfer-encoding: chunked\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
        }
        // The rest of the body, then nothing until the client goes away.
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed.send(());
    });
    (format!("http://{addr}"), seen)
}

fn http_client(binding: Binding, url: &str) -> Arc<dyn A2aService> {
    match binding {
        Binding::JsonRpc => Arc::new(trident_jsonrpc::JsonRpcClient::new(url).expect("client")),
        Binding::Rest => Arc::new(trident_rest::RestClient::new(url).expect("client")),
        Binding::Grpc => unreachable!("HTTP bindings only"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_caller_closes_its_http_request() {
    for binding in [Binding::JsonRpc, Binding::Rest] {
        // A unary call waiting for its answer.
        let (url, closed) = silent_http(false).await;
        let agent = http_client(binding, &url);
        let token = CancellationToken::new();
        let cx = CallContext::new().with_cancellation(token.clone());
        let call = tokio::spawn(async move { agent.get_task(&cx, get("t")).await });
        let waiting = &call;
        holds_for(
            &format!("{binding}: the call waits for its answer"),
            Duration::from_millis(200),
            || async move { !waiting.is_finished() },
        )
        .await;
        token.cancel();
        let r = returns("the cancelled call", call).await.expect("join");
        let e = r.expect_err("cancelled");
        assert!(e.to_string().contains("cancelled"), "{binding}: {e}");
        returns("the server seeing the connection close", closed)
            .await
            .expect("closed");

        // An open stream: it ends, and its response is dropped at once.
        let (url, closed) = silent_http(true).await;
        let agent = http_client(binding, &url);
        let token = CancellationToken::new();
        let cx = CallContext::new().with_cancellation(token.clone());
        let mut events = returns("open", agent.send_streaming_message(&cx, send()))
            .await
            .expect("the head arrives");
        let next = tokio::spawn(async move { events.next().await.map(|e| e.map(|_| ())) });
        let waiting = &next;
        holds_for(
            &format!("{binding}: the stream waits for its next event"),
            Duration::from_millis(200),
            || async move { !waiting.is_finished() },
        )
        .await;
        token.cancel();
        let item = returns("the cancelled stream", next).await.expect("join");
        assert!(item.is_none(), "{binding}: the stream just ends: {item:?}");
        returns("the server seeing the stream close", closed)
            .await
            .expect("closed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_caller_ends_its_call_on_the_server() {
    // gRPC multiplexes calls on one connection: the server sees the call reset, and drops it.
    let probe = Probe::new(Mode::Hang);
    let origin = serve(probe.clone()).await;
    for binding in Binding::ALL {
        let agent = agent_over(&origin, binding).await;
        let before = probe.dropped.load(Ordering::SeqCst);
        let calls = probe.seen().len();
        let token = CancellationToken::new();
        let cx = CallContext::new().with_cancellation(token.clone());
        let call = tokio::spawn(async move { agent.get_task(&cx, get("t")).await });
        let seen = &probe;
        until("the call reaching the server", || async move {
            (seen.seen().len() != calls).then_some(())
        })
        .await;
        token.cancel();
        let r = returns("the cancelled call", call).await.expect("join");
        assert!(r.is_err(), "{binding}");
        if binding == Binding::Grpc {
            until("the server dropping the call", || async move {
                (seen.dropped.load(Ordering::SeqCst) != before).then_some(())
            })
            .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_carries_the_deadline_to_its_upstream_over_each_other_binding() {
    let upstream = Probe::new(Mode::Answer);
    let upstream_origin = serve(upstream.clone()).await;
    for hop in Binding::ALL {
        let gateway = Upstream::new(agent_over(&upstream_origin, hop).await);
        let gateway_origin = serve(Arc::new(gateway)).await;
        for caller in Binding::ALL.into_iter().filter(|b| *b != hop) {
            let agent = agent_over(&gateway_origin, caller).await;
            let cx = CallContext::new().with_timeout(Duration::from_secs(30));
            let task = returns("GetTask", agent.get_task(&cx, get("t")))
                .await
                .unwrap_or_else(|e| panic!("{caller} → gateway → {hop}: {e}"));
            assert_eq!(task.id, "t");
            let seen = upstream.seen().pop().expect("the upstream was called");
            assert_eq!(seen.binding, Some(hop));
            let left = seen
                .deadline
                .unwrap_or_else(|| panic!("{caller} → gateway → {hop}: no deadline upstream"))
                .saturating_duration_since(Instant::now());
            assert!(
                left > Duration::from_secs(10) && left <= Duration::from_secs(30),
                "{caller} → gateway → {hop}: {left:?} left"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_exceeded_upstream_reaches_the_caller_as_such_on_every_binding() {
    let upstream_origin = serve(Probe::new(Mode::Hang)).await;
    for hop in Binding::ALL {
        // The gateway's own timeout fires long before the caller's deadline: the error is the
        // gateway's answer, encoded on the caller's binding with the wire table.
        let to_upstream = ClientBuilder::new()
            .prefer(&[hop])
            .timeout(Duration::from_millis(200))
            .build()
            .expect("client")
            .connect(&upstream_origin)
            .await
            .expect("connect");
        let gateway_origin = serve(Arc::new(Upstream::new(to_upstream.service))).await;
        for caller in Binding::ALL.into_iter().filter(|b| *b != hop) {
            let agent = agent_over(&gateway_origin, caller).await;
            let cx = CallContext::new().with_timeout(Duration::from_secs(30));
            let r = returns("GetTask", agent.get_task(&cx, get("t"))).await;
            let e = deadline_error(r, &format!("{caller} → gateway → {hop}"));
            assert!(!e.is_transport(), "the gateway said so: {e:?}");
        }
    }
}

/// A port nobody listens on.
fn refused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn assert_cause(e: &A2aError, what: &str, needles: &[&str]) {
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{what}: {e:?}");
    assert!(e.is_transport(), "{what}: {e:?}");
    let text = e.to_string().to_ascii_lowercase();
    assert!(
        needles.iter().any(|n| text.contains(n)),
        "{what}: {e} names none of {needles:?}"
    );
    assert!(
        std::error::Error::source(e).is_some(),
        "{what}: the cause is kept as the source"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_errors_keep_their_cause_on_every_binding() {
    let port = refused_port();
    let refused = format!("http://127.0.0.1:{port}");
    let unknown = "http://no-such-agent.invalid";
    let cx = CallContext::new().with_timeout(Duration::from_secs(15));
    for (url, needles) in [
        (refused.as_str(), &["connection refused"][..]),
        (unknown, &["dns", "lookup", "resolve", "name"][..]),
    ] {
        for binding in [Binding::JsonRpc, Binding::Rest] {
            let agent = http_client(binding, url);
            let r = returns("GetTask", agent.get_task(&cx, get("t"))).await;
            assert_cause(&r.expect_err("fails"), &format!("{binding} {url}"), needles);
            let r = returns("stream", agent.send_streaming_message(&cx, send())).await;
            let e = r.map(|_| ()).expect_err("fails");
            assert_cause(&e, &format!("{binding} stream {url}"), needles);
        }
        let grpc_target = url.trim_start_matches("http://");
        let grpc_target = if grpc_target.contains(':') {
            grpc_target.to_owned()
        } else {
            format!("{grpc_target}:80")
        };
        let e = returns(
            "gRPC connect",
            trident_grpc::GrpcClient::connect(&grpc_target),
        )
        .await
        .expect_err("fails");
        assert_cause(&e, &format!("gRPC {grpc_target}"), needles);
        let lazy = trident_grpc::GrpcClient::connect_lazy(
            &grpc_target,
            &trident_grpc::GrpcOptions::default(),
        )
        .expect("lazy");
        let r = returns("gRPC GetTask", lazy.get_task(&cx, get("t"))).await;
        assert_cause(
            &r.expect_err("fails"),
            &format!("gRPC call {grpc_target}"),
            needles,
        );

        let client = ClientBuilder::new().build().expect("client");
        let e = returns("card", client.fetch_card(url))
            .await
            .expect_err("fails");
        assert_cause(&e, &format!("card {url}"), needles);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_answers_are_refused_on_every_binding() {
    let probe = Arc::new(Probe {
        big: 64 * 1024,
        ..Arc::into_inner(Probe::new(Mode::Answer)).expect("sole owner")
    });
    let origin = serve(probe).await;
    for binding in Binding::ALL {
        let agent = ClientBuilder::new()
            .prefer(&[binding])
            .max_response_size(16 * 1024)
            .build()
            .expect("client")
            .connect(&origin)
            .await
            .expect("connect: the card is small");
        let cx = CallContext::new().with_timeout(Duration::from_secs(15));
        let e = returns("GetTask", agent.service.get_task(&cx, get("t")))
            .await
            .expect_err("too large");
        assert_eq!(e.kind(), ErrorKind::InvalidAgentResponse, "{binding}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("16384"),
            "{binding}: the limit is named: {text}"
        );
        let events = returns("stream", agent.service.send_streaming_message(&cx, send())).await;
        let first = match events {
            Ok(mut events) => returns("event", events.next()).await.expect("an item"),
            Err(e) => Err(e),
        };
        let e = first.map(|_| ()).expect_err("too large");
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidAgentResponse,
            "{binding} stream: {e}"
        );
    }
}

/// A card server that counts fetches and records their headers; its `Cache-Control` is set
/// per test. It answers `304` to an `If-None-Match` naming its ETag.
#[derive(Clone)]
struct CardServer {
    fetches: Arc<AtomicUsize>,
    not_modified: Arc<AtomicUsize>,
    headers: Arc<Mutex<Vec<axum::http::HeaderMap>>>,
    cache_control: &'static str,
    delay: Duration,
}

impl CardServer {
    async fn start(cache_control: &'static str, delay: Duration) -> (Self, String) {
        let server = Self {
            fetches: Arc::default(),
            not_modified: Arc::default(),
            headers: Arc::default(),
            cache_control,
            delay,
        };
        let state = server.clone();
        let app = axum::Router::new().route(
            "/.well-known/agent-card.json",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let s = state.clone();
                async move {
                    s.fetches.fetch_add(1, Ordering::SeqCst);
                    s.headers.lock().expect("lock").push(headers.clone());
                    tokio::time::sleep(s.delay).await;
                    let etag = "\"card-v1\"";
                    let common = [("cache-control", s.cache_control), ("etag", etag)];
                    if headers.get("if-none-match").is_some_and(|v| v == etag) {
                        s.not_modified.fetch_add(1, Ordering::SeqCst);
                        return (axum::http::StatusCode::NOT_MODIFIED, common, String::new());
                    }
                    let card = trident_core::default_card("Counted", "Counts its fetches");
                    let body = serde_json::to_string(&card).expect("json");
                    (axum::http::StatusCode::OK, common, body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        (server, format!("http://{addr}"))
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_fetch_sends_the_options_and_honours_cache_control() {
    // max-age: fetched once, then served from the cache (connect included).
    let (server, origin) = CardServer::start("public, max-age=300", Duration::ZERO).await;
    let client = ClientBuilder::new()
        .bearer_token("t0ken")
        .header("x-team", "search")
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let card = client.fetch_card(&origin).await.expect("card");
    assert_eq!(card.name, "Counted");
    assert_eq!(
        client.fetch_card(&origin).await.expect("card").name,
        "Counted"
    );
    let e = client
        .connect(&origin)
        .await
        .expect_err("the card has no interfaces");
    assert!(
        e.to_string().contains("its card lists no interfaces"),
        "{e}"
    );
    assert_eq!(server.fetches(), 1, "one fetch for three uses");
    let headers = server.headers.lock().expect("lock")[0].clone();
    assert_eq!(headers["a2a-version"], trident_core::PROTOCOL_VERSION);
    assert_eq!(headers["authorization"], "Bearer t0ken");
    assert_eq!(headers["x-team"], "search");
    // Clones share the cache; a client without it fetches again.
    client.clone().fetch_card(&origin).await.expect("card");
    assert_eq!(server.fetches(), 1);
    ClientBuilder::new()
        .cache_cards(false)
        .build()
        .expect("client")
        .fetch_card(&origin)
        .await
        .expect("card");
    assert_eq!(server.fetches(), 2);

    // no-cache with an ETag: every use revalidates, and a 304 keeps the card.
    let (server, origin) = CardServer::start("no-cache", Duration::ZERO).await;
    let client = ClientBuilder::new()
        .api_key("x-api-key", "k-1")
        .build()
        .expect("client");
    for _ in 0..3 {
        assert_eq!(
            client.fetch_card(&origin).await.expect("card").name,
            "Counted"
        );
    }
    assert_eq!(server.fetches(), 3);
    assert_eq!(server.not_modified.load(Ordering::SeqCst), 2);
    let seen = server.headers.lock().expect("lock").clone();
    assert!(seen[0].get("if-none-match").is_none());
    assert_eq!(seen[2]["if-none-match"], "\"card-v1\"");
    assert_eq!(seen[2]["x-api-key"], "k-1");

    // no-store: never kept, never revalidated.
    let (server, origin) = CardServer::start("no-store", Duration::ZERO).await;
    let client = ClientBuilder::new().build().expect("client");
    client.fetch_card(&origin).await.expect("card");
    client.fetch_card(&origin).await.expect("card");
    assert_eq!(server.fetches(), 2);
    assert!(
        server.headers.lock().expect("lock")[1]
            .get("if-none-match")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_card_fetch_ends_at_the_timeout() {
    let (_server, origin) = CardServer::start("max-age=60", Duration::from_secs(3600)).await;
    let client = ClientBuilder::new()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    let r = returns("card", client.fetch_card(&origin)).await;
    let e = deadline_error(r, "card");
    assert!(e.to_string().contains("agent-card.json"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_timeout_bounds_calls_and_the_opening_of_streams() {
    let origin = serve(Probe::new(Mode::Answer)).await;
    let hang = serve(Probe::new(Mode::Hang)).await;
    for binding in Binding::ALL {
        // The answering agent must answer within it on a loaded machine too.
        let client = ClientBuilder::new()
            .prefer(&[binding])
            .timeout(Duration::from_secs(1))
            .build()
            .expect("client");
        let agent = client.connect(&hang).await.expect("connect");
        let r = returns(
            "GetTask",
            agent.service.get_task(&CallContext::new(), get("t")),
        )
        .await;
        deadline_error(r, &format!("{binding} GetTask"));
        let r = returns(
            "stream",
            agent
                .service
                .send_streaming_message(&CallContext::new(), send()),
        )
        .await;
        deadline_error(r.map(|_| ()), &format!("{binding} open"));

        // An open stream outlives the timeout: only the caller's own deadline ends it.
        let agent = client.connect(&origin).await.expect("connect");
        let mut events = agent
            .service
            .send_streaming_message(&CallContext::new(), send())
            .await
            .expect("opens");
        let first = returns("first", events.next()).await.expect("an event");
        assert_eq!(first.expect("ok").text(), "", "{binding}");
        let later = tokio::time::timeout(Duration::from_millis(1500), events.next()).await;
        assert!(later.is_err(), "{binding}: still open after the timeout");
    }
}
