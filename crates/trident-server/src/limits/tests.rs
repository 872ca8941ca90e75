use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use trident_core::{
    A2aError, A2aReply, A2aRequest, A2aService, AroundCall, CallContext, ErrorKind, Principal,
};
use trident_engine::Engine;
use trident_proto as pb;

use super::{CallerLimits, Limited, OVERFLOW, SHARD_CAPACITY, shard_of};

fn from(ip: &str) -> CallContext {
    let mut cx = CallContext::new();
    cx.peer = Some(SocketAddr::new(ip.parse().expect("an address"), 40000));
    cx
}

fn key(ip: &str) -> String {
    Limited::key(&from(ip)).to_string()
}

/// Whether one request from `ip` is within its rate.
fn charged(limited: &Limited, ip: &str) -> bool {
    limited
        .charge(&Principal::anonymous(), from(ip).peer)
        .is_ok()
}

#[test]
fn anonymous_callers_are_keyed_by_ipv4_address_or_ipv6_64() {
    assert_eq!(key("10.0.0.1"), "address 10.0.0.1");
    assert_ne!(key("10.0.0.1"), key("10.0.0.2"));
    // An IPv4-mapped IPv6 address is the IPv4 caller.
    assert_eq!(key("::ffff:10.0.0.1"), key("10.0.0.1"));
    // One /64 is one caller; the next /64 another.
    assert_eq!(key("2001:db8::1"), "address 2001:db8::/64");
    assert_eq!(key("2001:db8::1"), key("2001:db8::ffff:ffff:ffff:1"));
    assert_ne!(key("2001:db8::1"), key("2001:db8:0:1::1"));
    // Authenticated callers are their principal wherever they connect from.
    let named = from("10.0.0.1").with_principal(Principal::named("alice"));
    assert_eq!(&*Limited::key(&named), "principal alice");
    assert_eq!(&*Limited::key(&CallContext::new()), OVERFLOW);
}

/// Found in review: keying anonymous callers by address let rotating addresses grow the
/// table without bound. A full shard sends new callers to one shared bucket instead.
#[tokio::test]
async fn the_caller_table_stays_bounded_whatever_the_addresses() {
    let limits = CallerLimits {
        // Spent buckets stay spent for the whole test, so nothing can be forgotten.
        rate: 0.001,
        burst: 1,
        max_streams: 0,
    };
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo)).build();
    let limited = Limited::new(Arc::new(engine), limits);
    let target = shard_of(&Limited::key(&from("10.0.0.0")));
    let mut addresses = (0u32..).map(|n| std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string());
    let mut filled = 0;
    let mut next_in_target = || {
        addresses
            .by_ref()
            .find(|ip| shard_of(&Limited::key(&from(ip))) == target)
            .expect("addresses enough")
    };
    while filled < SHARD_CAPACITY {
        let ip = next_in_target();
        assert!(charged(&limited, &ip), "{ip}: its first request");
        filled += 1;
    }
    // The shard is full of spent buckets: the next two new callers share the overflow bucket
    // (one token), so the second is refused, and the table has not grown.
    let first = next_in_target();
    let second = next_in_target();
    assert!(charged(&limited, &first));
    match limited.charge(&Principal::anonymous(), from(&second).peer) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::ResourceExhausted),
        Ok(()) => panic!("the overflow bucket is spent"),
    }
    let held: usize = limited.callers.iter().map(|s| super::lock(s).len()).sum();
    assert_eq!(
        held,
        SHARD_CAPACITY + 1,
        "the target shard plus the overflow key"
    );
}

fn get_task() -> pb::GetTaskRequest {
    pb::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    }
}

/// Calls are not charged the rate: the edge charged their request. A caller over its rate at
/// the edge still reaches the service through `Limited`.
#[tokio::test]
async fn calls_are_not_charged_again() {
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo)).build();
    let limits = CallerLimits {
        rate: 0.001,
        burst: 1,
        max_streams: 0,
    };
    let limited = Limited::new(Arc::new(engine), limits);
    let cx = from("10.0.0.1");
    assert!(charged(&limited, "10.0.0.1"));
    assert!(!charged(&limited, "10.0.0.1"), "the burst is spent");
    for _ in 0..3 {
        let e = limited
            .get_task(&cx, get_task())
            .await
            .expect_err("no such task");
        assert_eq!(e.kind(), ErrorKind::TaskNotFound);
    }
}

/// Counts the calls that reach the service.
struct Counted {
    inner: Arc<dyn A2aService>,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl AroundCall for Counted {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.call(cx, req).await
    }
}

fn stream_request() -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: "m1".into(),
            role: pb::Role::User.into(),
            parts: vec![pb::Part::text("hello")],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A stream over the caller's limit is refused before the service sees it; the slot is free
/// again once the open stream is dropped, and another caller has slots of its own.
#[tokio::test]
async fn a_stream_over_the_limit_never_reaches_the_service() {
    let engine = Engine::builder(Arc::new(trident_testkit::agents::Echo)).build();
    let counted = Arc::new(Counted {
        inner: Arc::new(engine),
        calls: AtomicUsize::new(0),
    });
    let limits = CallerLimits {
        rate: 0.0,
        burst: 0,
        max_streams: 1,
    };
    let limited = Limited::new(counted.clone(), limits);
    let cx = from("10.0.0.1");
    let open = limited
        .send_streaming_message(&cx, stream_request())
        .await
        .expect("the first stream");
    let refused = limited
        .send_streaming_message(&cx, stream_request())
        .await
        .err()
        .expect("over the limit");
    assert_eq!(refused.kind(), ErrorKind::ResourceExhausted);
    assert_eq!(
        counted.calls.load(Ordering::Relaxed),
        1,
        "refused before the call"
    );
    // Unary calls pass whatever the streams.
    assert!(limited.get_task(&cx, get_task()).await.is_err());
    assert_eq!(counted.calls.load(Ordering::Relaxed), 2);
    let other = limited
        .send_streaming_message(&from("10.0.0.2"), stream_request())
        .await
        .expect("another caller's stream");
    drop(open);
    let again = limited
        .send_streaming_message(&cx, stream_request())
        .await
        .expect("the slot is free");
    drop((other, again));
}
