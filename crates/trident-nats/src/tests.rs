//! The bus against a `nats-server` each test starts on a free port with a store directory of
//! its own (skipped, with a note, where `/usr/sbin/nats-server` is missing; under `CI` that
//! fails instead), and the wire format and feed on their own.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use trident_core::store::{EventBus, LoggedEvent, Notice, NoticeFeed, Scope, SharedEvent};
use trident_proto as pb;

use crate::wire::{self, Body};
use crate::{NatsBus, NatsError, NatsOptions};

const NATS_SERVER: &str = "/usr/sbin/nats-server";

/// A `nats-server` with JetStream on a port and in a directory of its own, killed on drop.
struct Server {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl Server {
    /// Starts one, or `None` (and a note) when there is no `nats-server` here.
    fn start(test: &str) -> Option<Server> {
        if !std::path::Path::new(NATS_SERVER).exists() {
            if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
                panic!(
                    "{test}: CI is set but {NATS_SERVER} is missing: the NATS tests must run in CI"
                );
            }
            eprintln!("{test}: skipped ({NATS_SERVER} is not installed)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!(
            "trident-nats-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("store dir");
        let mut server = Server {
            child: None,
            port,
            dir,
        };
        server.run();
        Some(server)
    }

    /// Starts the process (again) and waits until it accepts connections.
    fn run(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("log file");
        let child = Command::new(NATS_SERVER)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.dir.join("js"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < until, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn bus(server: &Server) -> NatsBus {
    NatsBus::connect(&server.url(), NatsOptions::new())
        .await
        .expect("connect")
}

fn scope() -> Scope {
    Scope::new("tenant.with*dots", "owner >")
}

/// Events `from..from + n` of task `task`: artifact chunks of 16 bytes of text.
fn events(task: &str, from: u64, n: u64) -> Vec<LoggedEvent> {
    (from..from + n)
        .map(|seq| LoggedEvent {
            seq,
            event: SharedEvent::new(pb::StreamResponse::new(
                pb::stream_response::Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
                    task_id: task.into(),
                    context_id: "ctx".into(),
                    artifact: Some(pb::Artifact::new(
                        "answer",
                        vec![pb::Part::text(format!("{seq:016}"))],
                    )),
                    append: seq > 1,
                    last_chunk: false,
                    metadata: None,
                    generation: 0,
                }),
            )),
        })
        .collect()
}

/// The next notice within `wait`.
async fn next(feed: &mut NoticeFeed, wait: Duration) -> Option<Notice> {
    tokio::time::timeout(wait, feed.next()).await.ok().flatten()
}

/// Reads `Notice::Events` of `task` until `n` events came (panics on anything else, or after
/// 10 s).
async fn collect(feed: &mut NoticeFeed, task: &str, n: usize) -> Vec<LoggedEvent> {
    let mut got = Vec::new();
    while got.len() < n {
        match next(feed, Duration::from_secs(10)).await {
            Some(Notice::Events {
                scope: s,
                task_id,
                events,
            }) => {
                assert_eq!((s, task_id.as_str()), (scope(), task));
                got.extend(events);
            }
            other => panic!("after {} events: {other:?}", got.len()),
        }
    }
    got
}

/// Nothing arrives for a while.
async fn quiet(feed: &mut NoticeFeed) {
    if let Some(n) = next(feed, Duration::from_millis(400)).await {
        panic!("unexpected notice: {n:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_task_gets_every_event_once_in_order() {
    let Some(server) = Server::start("a_watched_task_gets_every_event_once_in_order") else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let mut feed = b.feed();
    let _watch = b.watch(&scope(), "t1");
    b.until_watching(&scope(), "t1").await;
    let sent = events("t1", 1, 1000);
    // Calls of 1, 2, 3, ... events: one message each.
    let (mut at, mut size) = (0, 1);
    while at < sent.len() {
        let end = (at + size).min(sent.len());
        a.publish(&scope(), "t1", &sent[at..end]).await;
        at = end;
        size += 1;
    }
    let got = collect(&mut feed, "t1", 1000).await;
    assert_eq!(got, sent);
    quiet(&mut feed).await;
    a.flush().await;
    let stats = a.stats();
    assert_eq!((stats.published_events, stats.dropped_events), (1000, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwatched_tasks_are_not_delivered_and_a_dropped_watch_stops() {
    let Some(server) = Server::start("unwatched_tasks_are_not_delivered_and_a_dropped_watch_stops")
    else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let mut feed = b.feed();
    let watch = b.watch(&scope(), "watched");
    b.until_watching(&scope(), "watched").await;
    a.publish(&scope(), "other", &events("other", 1, 5)).await;
    // The same id in another scope is another task.
    a.publish(
        &Scope::new("tenant.with*dots", "someone else"),
        "watched",
        &events("watched", 1, 5),
    )
    .await;
    a.publish(&scope(), "watched", &events("watched", 1, 3))
        .await;
    assert_eq!(
        collect(&mut feed, "watched", 3).await,
        events("watched", 1, 3)
    );
    quiet(&mut feed).await;

    // A second watch of the task shares the subscription: delivered once, and still watched
    // while one of them is held.
    let second = b.watch(&scope(), "watched");
    drop(watch);
    a.publish(&scope(), "watched", &events("watched", 4, 1))
        .await;
    assert_eq!(
        collect(&mut feed, "watched", 1).await,
        events("watched", 4, 1)
    );
    quiet(&mut feed).await;

    drop(second);
    // The unsubscription reaches the server before the next publish (one connection, in
    // order, and a flush is a round trip).
    b.shared.client.flush().await.expect("flush");
    a.publish(&scope(), "watched", &events("watched", 5, 10))
        .await;
    a.flush().await;
    quiet(&mut feed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_gets_none_of_its_own_events() {
    let Some(server) = Server::start("a_publisher_gets_none_of_its_own_events") else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let (mut own, mut other) = (a.feed(), b.feed());
    let _a_watch = a.watch(&scope(), "t");
    let _b_watch = b.watch(&scope(), "t");
    a.until_watching(&scope(), "t").await;
    b.until_watching(&scope(), "t").await;
    a.publish(&scope(), "t", &events("t", 1, 20)).await;
    assert_eq!(collect(&mut other, "t", 20).await, events("t", 1, 20));
    quiet(&mut own).await;
    // The server did not send them back (`no_echo`): nothing reached the origin filter.
    let own_messages = || a.shared.counters.own_messages.load(Ordering::Relaxed);
    assert_eq!(own_messages(), 0);

    // Nor when a new watch reads the task's last message, which is its own.
    let first = a.watch(&scope(), "t2");
    a.until_watching(&scope(), "t2").await;
    a.publish(&scope(), "t2", &events("t2", 1, 2)).await;
    a.flush().await;
    drop(first);
    let _again = a.watch(&scope(), "t2");
    a.until_watching(&scope(), "t2").await;
    quiet(&mut own).await;
    assert_eq!(own_messages(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_watch_gets_the_last_message_it_may_have_missed() {
    let Some(server) = Server::start("a_new_watch_gets_the_last_message_it_may_have_missed") else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let mut feed = b.feed();
    a.publish(&scope(), "t", &events("t", 1, 2)).await;
    a.publish(&scope(), "t", &events("t", 3, 2)).await;
    a.flush().await;
    // Published before the watch: the stream's last message for the task is delivered (one
    // message per task is kept), then what comes next.
    let _watch = b.watch(&scope(), "t");
    b.until_watching(&scope(), "t").await;
    assert_eq!(collect(&mut feed, "t", 2).await, events("t", 3, 2));
    a.publish(&scope(), "t", &events("t", 5, 1)).await;
    assert_eq!(collect(&mut feed, "t", 1).await, events("t", 5, 1));
    quiet(&mut feed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_republished_message_is_stored_once_and_delivered_once() {
    let Some(server) = Server::start("a_republished_message_is_stored_once_and_delivered_once")
    else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let mut feed = b.feed();
    let _watch = b.watch(&scope(), "t");
    b.until_watching(&scope(), "t").await;
    let sent = events("t", 1, 3);
    a.publish(&scope(), "t", &sent).await;
    assert_eq!(collect(&mut feed, "t", 3).await, sent);

    // The same message again, as a publisher retrying after a lost ack sends it: the stream
    // says it has it, and the watcher does not get the events twice.
    let client = async_nats::connect(server.url()).await.expect("raw client");
    let js = async_nats::jetstream::new(client);
    let part = wire::encode(&scope(), "t", a.origin(), &sent, 1 << 20)
        .pop()
        .expect("one message");
    let hash = wire::task_hash(&scope(), "t");
    let ack = js
        .send_publish(
            a.subject(&scope(), "t"),
            async_nats::jetstream::message::PublishMessage::build()
                .payload(part.payload)
                .message_id(format!("{hash:016x}:1-3")),
        )
        .await
        .expect("publish")
        .await
        .expect("ack");
    assert!(ack.duplicate, "{ack:?}");
    // Through the bus too.
    a.publish(&scope(), "t", &sent).await;
    a.flush().await;
    assert_eq!(a.stats().duplicates, 1);
    quiet(&mut feed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_skipped() {
    let Some(server) = Server::start("malformed_messages_are_skipped") else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let mut feed = b.feed();
    let _watch = b.watch(&scope(), "t");
    b.until_watching(&scope(), "t").await;
    let client = async_nats::connect(server.url()).await.expect("raw client");
    let subject = a.subject(&scope(), "t");
    let mut reversed = events("t", 1, 2);
    reversed.reverse();
    let mut without_event = wire::encode(&scope(), "t", b"x", &events("t", 1, 1), 1 << 20)
        .pop()
        .expect("one message")
        .payload
        .to_vec();
    // Cut inside the event: a truncated message.
    without_event.truncate(without_event.len() - 3);
    for garbage in [
        b"garbage".to_vec(),
        vec![0xff; 64],
        Vec::new(),
        without_event,
        wire::encode(&scope(), "t", b"x", &reversed, 1 << 20)
            .pop()
            .expect("one message")
            .payload
            .to_vec(),
    ] {
        client
            .publish(subject.clone(), garbage.into())
            .await
            .expect("publish");
    }
    client.flush().await.expect("flush");
    a.publish(&scope(), "t", &events("t", 1, 2)).await;
    assert_eq!(collect(&mut feed, "t", 2).await, events("t", 1, 2));
    quiet(&mut feed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_means_resync_and_delivery_resumes() {
    let Some(mut server) = Server::start("a_restarted_server_means_resync_and_delivery_resumes")
    else {
        return;
    };
    let (a, b) = (bus(&server).await, bus(&server).await);
    let (mut a_feed, mut feed) = (a.feed(), b.feed());
    let _watch = b.watch(&scope(), "t");
    b.until_watching(&scope(), "t").await;
    a.publish(&scope(), "t", &events("t", 1, 10)).await;
    assert_eq!(collect(&mut feed, "t", 10).await, events("t", 1, 10));

    server.kill();
    // Published while the server is down: lost (the readers read them from the store).
    a.publish(&scope(), "t", &events("t", 11, 5)).await;
    server.run();
    for (name, feed) in [("watcher", &mut feed), ("publisher", &mut a_feed)] {
        loop {
            match next(feed, Duration::from_secs(30)).await {
                Some(Notice::Resync) => break,
                // The publish made while the server was down, retried once it is back, may
                // overtake the news of the reconnection.
                Some(Notice::Events { events, .. })
                    if events.iter().all(|e| (11..16).contains(&e.seq)) => {}
                other => panic!("{name}: {other:?} instead of Resync"),
            }
        }
    }
    // The memory stream did not survive the restart; the bus makes it again, and the
    // subscription was restored.
    a.publish(&scope(), "t", &events("t", 16, 10)).await;
    let got = collect(&mut feed, "t", 10).await;
    // Events 11..16 may arrive too, if the client got them out before the server stopped
    // reading: what matters is that 16.. arrive, in order, after them.
    let from = got
        .iter()
        .position(|e| e.seq == 16)
        .expect("event 16 arrives");
    assert_eq!(got[from..], events("t", 16, 10)[..got.len() - from]);
    a.flush().await;
    let stats = a.stats();
    assert!(stats.published_events >= 20, "{stats:?}");
}

#[tokio::test]
async fn settings_are_checked_before_connecting() {
    for ns in ["", "has.dot", "has space", "star*", "gt>", &"x".repeat(33)] {
        match NatsBus::connect("nats://127.0.0.1:1", NatsOptions::new().namespace(ns)).await {
            Err(NatsError::Namespace(n)) => assert_eq!(n, ns),
            other => panic!("{ns:?}: {other:?}"),
        }
    }
    let window = NatsOptions::new()
        .max_age(Duration::from_secs(10))
        .duplicate_window(Duration::from_secs(20));
    assert!(matches!(
        NatsBus::connect("nats://127.0.0.1:1", window).await,
        Err(NatsError::Setting(_))
    ));
    assert!(matches!(
        NatsBus::connect(
            "nats://127.0.0.1:1",
            NatsOptions::new().ping_interval(Duration::ZERO)
        )
        .await,
        Err(NatsError::Setting(_))
    ));
    match NatsBus::connect("http://user:secret@host", NatsOptions::new()).await {
        Err(e @ NatsError::Url { .. }) => {
            let text = e.to_string();
            assert!(
                !text.contains("secret") && text.contains("http://host"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn urls_give_servers_and_credentials() {
    let (addrs, credentials) =
        crate::servers("nats://us%40er:p%3Ass@a:4222, nats://b:4223").expect("servers");
    assert_eq!(addrs.len(), 2);
    assert!(matches!(
        credentials,
        Some(crate::Credentials::UserPassword(u, p)) if u == "us@er" && p == "p:ss"
    ));
    assert!(matches!(
        crate::servers("tls://s3cr3t@host").expect("servers").1,
        Some(crate::Credentials::Token(t)) if t == "s3cr3t"
    ));
    assert!(crate::servers("nats://host").expect("servers").1.is_none());
    assert!(crate::servers(" , ").is_err());
    assert_eq!(
        crate::redact("nats://u:p@a:1,nats://b:2,tls://t@c"),
        "nats://a:1,nats://b:2,tls://c"
    );
}

#[test]
fn the_subject_hash_is_stable_and_keeps_ids_out() {
    // Fixed values: every process and every build must agree on a task's subject.
    // (FNV-1a 64 of 0u64 LE, "", 0u64 LE, "", "task", computed independently.)
    let hash = wire::task_hash(&Scope::new("", ""), "task");
    assert_eq!(format!("{hash:016x}"), "26fabc3f0ed7ee8c");
    assert_eq!(
        crate::subject("trident", wire::task_hash(&scope(), "a.b*c >d")),
        format!("trident.ev.{:016x}", wire::task_hash(&scope(), "a.b*c >d"))
    );
    // Where the tenant ends and the owner starts is part of the identity.
    assert_ne!(
        wire::task_hash(&Scope::new("ab", "c"), "t"),
        wire::task_hash(&Scope::new("a", "bc"), "t")
    );
}

#[test]
fn messages_round_trip_and_split_at_the_limit() {
    let sent = events("t", 7, 100);
    let parts = wire::encode(&scope(), "t", b"origin", &sent, 1 << 20);
    assert_eq!(parts.len(), 1);
    let decoded = wire::decode(&parts[0].payload).expect("decode");
    assert!(decoded.is_about(&scope(), "t"));
    assert!(!decoded.is_about(&Scope::new("tenant.with*dots", "other"), "t"));
    assert_eq!(decoded.origin, b"origin");
    assert_eq!(decoded.body, Body::Events(sent.clone()));
    assert_eq!(
        (parts[0].first, parts[0].last, parts[0].events),
        (7, 106, 100)
    );

    // A limit that holds a few events a message: split in order, nothing lost.
    let parts = wire::encode(&scope(), "t", b"origin", &sent, 600);
    assert!(parts.len() >= 10, "{}", parts.len());
    let mut again = Vec::new();
    for p in &parts {
        assert!(p.payload.len() <= 600);
        let Body::Events(events) = wire::decode(&p.payload).expect("decode").body else {
            panic!("an omitted range");
        };
        assert_eq!(
            (p.first, p.last),
            (events[0].seq, events[events.len() - 1].seq)
        );
        again.extend(events);
    }
    assert_eq!(again, sent);

    // An event larger than any message: an omitted range in its place.
    let mut big = events("t", 1, 3);
    big[1] = LoggedEvent {
        seq: 2,
        event: SharedEvent::new(pb::StreamResponse::new(
            pb::stream_response::Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
                task_id: "t".into(),
                artifact: Some(pb::Artifact::new(
                    "a",
                    vec![pb::Part::text("x".repeat(5000))],
                )),
                ..Default::default()
            }),
        )),
    };
    let bodies: Vec<Body> = wire::encode(&scope(), "t", b"o", &big, 4096)
        .iter()
        .map(|p| wire::decode(&p.payload).expect("decode").body)
        .collect();
    assert_eq!(
        bodies,
        [
            Body::Events(big[..1].to_vec()),
            Body::Omitted(2),
            Body::Events(big[2..].to_vec())
        ]
    );
}

#[tokio::test]
async fn a_full_feed_turns_into_resync() {
    let (tx, mut feed) = crate::feed::FeedTx::new(2);
    let notice = |seq| Notice::Committed {
        scope: scope(),
        task_id: "t".into(),
        seq,
    };
    for seq in 1..=5 {
        tx.send(notice(seq));
    }
    assert_eq!(
        next(&mut feed, Duration::from_secs(1)).await,
        Some(Notice::Resync)
    );
    assert_eq!(
        next(&mut feed, Duration::from_secs(1)).await,
        Some(notice(1))
    );
    assert_eq!(
        next(&mut feed, Duration::from_secs(1)).await,
        Some(notice(2))
    );
    assert_eq!(next(&mut feed, Duration::from_millis(100)).await, None);
    // Room again: delivered as usual.
    tx.send(notice(6));
    assert_eq!(
        next(&mut feed, Duration::from_secs(1)).await,
        Some(notice(6))
    );
}

/// Hand-run throughput check against a running NATS (`TRIDENT_NATS_URL`, default the
/// machine's `nats://127.0.0.1:4222`), in a namespace of its own that it deletes afterwards:
///
/// ```text
/// cargo test -p trident-nats --release -- --ignored --nocapture throughput
/// ```
///
/// 50 tasks × 1 000 events of 16-byte chunks from one bus to another that watches them all,
/// published by 50 concurrent writers one event per call, then 16 per call; then what setting
/// up a watch costs: a core subscription (this bus's watch) against an ordered JetStream
/// consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "hand-run: measures throughput through the local NATS"]
async fn throughput() {
    const TASKS: usize = 50;
    const EVENTS: u64 = 1000;
    let url = std::env::var("TRIDENT_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let namespace = format!("bench_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let options = NatsOptions::new().namespace(&namespace);
    let a = Arc::new(
        NatsBus::connect(&url, options.clone())
            .await
            .expect("connect"),
    );
    let b = NatsBus::connect(&url, options).await.expect("connect");
    let mut feed = b.feed();
    let tasks: Vec<String> = (0..TASKS).map(|i| format!("task-{i}")).collect();
    let _watches: Vec<_> = tasks.iter().map(|t| b.watch(&scope(), t)).collect();
    for t in &tasks {
        b.until_watching(&scope(), t).await;
    }
    println!(
        "50 tasks x 1000 events (16-byte chunks, {} bytes encoded each), 2 buses:",
        {
            let e = &events("t", 1, 1)[0];
            prost::Message::encoded_len(&*e.event)
        }
    );
    for (round, per_call) in [1u64, 16].into_iter().enumerate() {
        let first = round as u64 * EVENTS + 1;
        let start = Instant::now();
        let writers: Vec<_> = tasks
            .iter()
            .cloned()
            .map(|task| {
                let a = a.clone();
                tokio::spawn(async move {
                    let all = events(&task, first, EVENTS);
                    for call in all.chunks(per_call as usize) {
                        a.publish(&scope(), &task, call).await;
                    }
                })
            })
            .collect();
        let total = TASKS as u64 * EVENTS;
        let mut delivered = 0u64;
        let mut next_seq: std::collections::HashMap<String, u64> =
            tasks.iter().map(|t| (t.clone(), first)).collect();
        while delivered < total {
            match next(&mut feed, Duration::from_secs(30)).await {
                Some(Notice::Events {
                    task_id, events, ..
                }) => {
                    for e in &events {
                        let expected = next_seq.get_mut(&task_id).expect("a watched task");
                        assert_eq!(e.seq, *expected, "{task_id}: out of order");
                        *expected += 1;
                    }
                    delivered += events.len() as u64;
                }
                other => panic!("after {delivered} events: {other:?}"),
            }
        }
        let delivered_in = start.elapsed();
        for w in writers {
            w.await.expect("writer");
        }
        let queued_in = start.elapsed();
        a.flush().await;
        let acked_in = start.elapsed();
        let rate = |d: Duration| total as f64 / d.as_secs_f64();
        println!(
            "  {per_call:>2} event(s)/publish: publish calls done {:>9.0} events/s, acked {:>9.0} events/s, delivered {:>9.0} events/s ({:.2} s)",
            rate(queued_in.min(delivered_in.max(queued_in))),
            rate(acked_in),
            rate(delivered_in),
            delivered_in.as_secs_f64(),
        );
    }
    let stats = a.stats();
    println!("  publisher: {stats:?}");
    assert_eq!(stats.dropped_events, 0);

    // Watch set-up: 1000 watches (a subscription each, then a flush and a direct get) against
    // 200 ordered JetStream consumers, one after another.
    let start = Instant::now();
    let more: Vec<_> = (0..1000)
        .map(|i| {
            let t = format!("more-{i}");
            let w = b.watch(&scope(), &t);
            (t, w)
        })
        .collect();
    for (t, _) in &more {
        b.until_watching(&scope(), t).await;
    }
    let watches = start.elapsed();
    let client = async_nats::connect(&url).await.expect("raw client");
    let start = Instant::now();
    let mut subs = Vec::new();
    for i in 0..1000 {
        subs.push(
            client
                .subscribe(format!("{namespace}.ev.raw{i}"))
                .await
                .expect("subscribe"),
        );
    }
    client.flush().await.expect("flush");
    let subscriptions = start.elapsed();
    let js = async_nats::jetstream::new(client.clone());
    let stream = js
        .get_stream(format!("{namespace}_events"))
        .await
        .expect("stream");
    let start = Instant::now();
    let mut consumers = Vec::new();
    for i in 0..200 {
        let consumer = stream
            .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
                filter_subject: format!("{namespace}.ev.ordered{i}"),
                deliver_policy: async_nats::jetstream::consumer::DeliverPolicy::New,
                ..Default::default()
            })
            .await
            .expect("ordered consumer");
        consumers.push(consumer.messages().await.expect("messages"));
    }
    let ordered = start.elapsed();
    println!(
        "  watch set-up: {:.1} µs per watch (1000, subscribe + flush + last message), {:.1} µs per bare subscription (1000), {:.0} µs per ordered consumer (200, create + first pull)",
        watches.as_micros() as f64 / 1000.0,
        subscriptions.as_micros() as f64 / 1000.0,
        ordered.as_micros() as f64 / 200.0,
    );
    drop((more, subs, consumers));
    js.delete_stream(format!("{namespace}_events"))
        .await
        .expect("delete the stream");
}
