use std::net::SocketAddr;
use std::sync::Arc;

use trident_core::{CallContext, ErrorKind, Principal};
use trident_engine::Engine;

use super::{CallerLimits, Limited, OVERFLOW, SHARD_CAPACITY, shard_of};

fn from(ip: &str) -> CallContext {
    let mut cx = CallContext::new();
    cx.peer = Some(SocketAddr::new(ip.parse().expect("an address"), 40000));
    cx
}

fn key(ip: &str) -> String {
    Limited::key(&from(ip)).to_string()
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
    let engine = Engine::builder(Arc::new(trident_core::agents::Echo)).build();
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
        assert!(
            limited.admit(&from(&ip), false).is_ok(),
            "{ip}: its first request"
        );
        filled += 1;
    }
    // The shard is full of spent buckets: the next two new callers share the overflow bucket
    // (one token), so the second is refused, and the table has not grown.
    let first = next_in_target();
    let second = next_in_target();
    assert!(limited.admit(&from(&first), false).is_ok());
    match limited.admit(&from(&second), false) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::ResourceExhausted),
        Ok(_) => panic!("the overflow bucket is spent"),
    }
    let held: usize = limited.callers.iter().map(|s| super::lock(s).len()).sum();
    assert_eq!(
        held,
        SHARD_CAPACITY + 1,
        "the target shard plus the overflow key"
    );
}
