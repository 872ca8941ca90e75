//! Waiting in tests without sleeping as synchronisation: [`until`] polls a condition up to a
//! generous ceiling (a loaded CI machine is slow, never wrong), and [`holds_for`] checks an
//! absence ("nothing more arrives") over a window, failing at the first violation. Prefer
//! waiting on the event itself (a stream item, a channel message) where one exists.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long [`until`] waits before failing.
pub const CEILING: Duration = Duration::from_secs(30);

/// Between two polls.
const POLL: Duration = Duration::from_millis(20);

/// Polls `check` until it returns `Some`, and returns that; fails naming `what` after
/// [`CEILING`].
pub async fn until<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + CEILING;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "waited {CEILING:?} in vain for: {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Checks that `check` holds throughout `window` (polled every 20 ms, and once more at its
/// end), failing naming `what` the first time it does not. For absences, which no event
/// announces: the window is how long something that should not happen is given to happen.
pub async fn holds_for<F, Fut>(what: &str, window: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = Instant::now() + window;
    loop {
        assert!(check().await, "no longer true: {what}");
        let now = Instant::now();
        if now >= end {
            return;
        }
        tokio::time::sleep(POLL.min(end - now)).await;
    }
}
