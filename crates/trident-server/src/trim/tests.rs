use std::time::{Duration, Instant};

use super::{CLOSES_BEFORE_TRIM, connection_closed, trims};

/// A burst of closes schedules one trim, which runs after the delay; a burst of fewer closes
/// schedules none.
#[tokio::test]
async fn a_burst_of_closes_is_followed_by_one_trim() {
    let before = trims();
    for _ in 0..CLOSES_BEFORE_TRIM * 3 {
        connection_closed();
    }
    let start = Instant::now();
    while trims() == before {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no trim after {} closes",
            CLOSES_BEFORE_TRIM * 3
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(trims(), before + 1, "one trim for the whole burst");
}
