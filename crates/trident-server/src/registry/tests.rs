use std::time::{Duration, Instant};

use super::{Admission, ConnId, Registry};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn admitted(admission: Admission<&'static str>) -> (ConnId, Option<&'static str>) {
    match admission {
        Admission::Admitted { id, shed } => (id, shed),
        Admission::Refused => panic!("refused"),
    }
}

#[test]
fn at_the_limit_the_connection_idle_the_longest_is_shed() {
    let t0 = Instant::now();
    let mut r = Registry::new(Some(3), None);
    let (a, _) = admitted(r.admit("a", t0));
    let (b, _) = admitted(r.admit("b", t0 + ms(1)));
    let (_c, _) = admitted(r.admit("c", t0 + ms(2)));
    // `a` makes a request and finishes it last: it is now the most recently idle.
    r.start(a);
    r.finish(a, t0 + ms(10));
    let (_d, shed) = admitted(r.admit("d", t0 + ms(11)));
    assert_eq!(shed, Some("b"), "b has been idle the longest");
    assert_eq!(r.open(), 3, "b is closing and no longer counts");
    let (_e, shed) = admitted(r.admit("e", t0 + ms(12)));
    assert_eq!(shed, Some("c"));
    // b's task ends; a closing connection is never chosen twice.
    r.remove(b);
    let (_f, shed) = admitted(r.admit("f", t0 + ms(13)));
    assert_eq!(shed, Some("a"));
}

#[test]
fn busy_connections_are_never_shed_and_a_full_busy_listener_refuses() {
    let t0 = Instant::now();
    let mut r = Registry::new(Some(2), Some(ms(100)));
    let (a, _) = admitted(r.admit("a", t0));
    let (b, _) = admitted(r.admit("b", t0));
    r.start(a);
    r.start(b);
    r.start(b);
    assert_eq!(r.admit("c", t0), Admission::Refused);
    assert_eq!(r.in_flight(b), 2);
    // One of b's two requests ends: still busy.
    r.finish(b, t0 + ms(1));
    assert_eq!(r.admit("c", t0 + ms(1)), Admission::Refused);
    assert!(r.expire(t0 + ms(500)).0.is_empty(), "busy is not idle");
    r.finish(b, t0 + ms(2));
    let (_c, shed) = admitted(r.admit("c", t0 + ms(3)));
    assert_eq!(shed, Some("b"));
}

#[test]
fn idle_connections_expire_after_the_idle_timeout_from_when_they_became_idle() {
    let t0 = Instant::now();
    let mut r = Registry::new(None, Some(ms(100)));
    let (a, _) = admitted(r.admit("a", t0));
    let (b, _) = admitted(r.admit("b", t0 + ms(50)));
    let (expired, next) = r.expire(t0 + ms(10));
    assert!(expired.is_empty());
    assert_eq!(next, Some(t0 + ms(100)), "a's deadline is the next one");
    // b works from 60 to 120 ms: its idle clock restarts at 120.
    r.start(b);
    let (expired, next) = r.expire(t0 + ms(100));
    assert_eq!(expired, ["a"]);
    assert_eq!(
        next,
        Some(t0 + ms(200)),
        "nothing idle: one timeout from now"
    );
    r.finish(b, t0 + ms(120));
    let (expired, next) = r.expire(t0 + ms(200));
    assert!(expired.is_empty());
    assert_eq!(next, Some(t0 + ms(220)));
    assert_eq!(r.expire(t0 + ms(220)).0, ["b"]);
    // Expired connections are closing: not open, not expired again.
    assert_eq!(r.open(), 0);
    assert!(r.expire(t0 + ms(1000)).0.is_empty());
    r.remove(a);
    r.remove(b);
    assert_eq!(r.open(), 0);
}

#[test]
fn a_closing_connection_that_finishes_a_request_does_not_become_idle_again() {
    let t0 = Instant::now();
    let mut r = Registry::new(Some(1), Some(ms(100)));
    let (a, _) = admitted(r.admit("a", t0));
    assert_eq!(r.shed_idlest(), Some("a"));
    // A request raced in before the connection saw the signal.
    r.start(a);
    r.finish(a, t0 + ms(1));
    assert_eq!(r.shed_idlest(), None);
    assert!(r.expire(t0 + ms(500)).0.is_empty());
    // It does not count against the limit while it closes.
    let (_b, shed) = admitted(r.admit("b", t0 + ms(2)));
    assert_eq!(shed, None);
}

#[test]
fn without_limits_nothing_is_shed_or_expired() {
    let t0 = Instant::now();
    let mut r = Registry::new(None, None);
    for i in 0..1000 {
        let (_, shed) = admitted(r.admit("x", t0 + ms(i)));
        assert_eq!(shed, None);
    }
    assert_eq!(r.open(), 1000);
    assert_eq!(r.expire(t0 + Duration::from_secs(3600)), (Vec::new(), None));
    // Unknown ids are ignored.
    r.start(5000);
    r.finish(5000, t0);
    r.remove(5000);
    assert_eq!(r.in_flight(5000), 0);
}

#[test]
fn a_timeout_too_large_for_the_clock_never_expires() {
    let t0 = Instant::now();
    let mut r = Registry::new(None, Some(Duration::MAX));
    admitted(r.admit("a", t0));
    assert_eq!(r.expire(t0 + ms(10)), (Vec::new(), None));
}
