use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{CLOSES_BEFORE_TRIM, SCHEDULED, connection_closed, trims};

/// Polls `done` every 20 ms for up to 30 s, failing with `what`.
async fn within(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A burst of closes is followed by a trim, a second of them later, and once no more
/// connections close the trimming stops (other tests of this binary close connections too, so
/// counts are not exact).
#[tokio::test]
async fn a_burst_of_closes_is_followed_by_a_trim_then_none() {
    let before = trims();
    for _ in 0..CLOSES_BEFORE_TRIM * 3 {
        connection_closed();
    }
    within("a trim after the burst", || trims() > before).await;
    within("the trims stop when the closes do", || {
        !SCHEDULED.load(Ordering::Acquire)
    })
    .await;
}
