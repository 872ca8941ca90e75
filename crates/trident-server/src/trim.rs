//! Memory given back to the system after a burst of connections closes.
//!
//! glibc's allocator keeps what a thread freed in that thread's arena for reuse: after
//! thousands of connections that each held a request head or body close, their memory is free
//! but stays resident (149 of 153 MB after 6 000 connections with 15 KB heads closed, measured
//! for issue 27). `malloc_trim(0)` hands the free pages of every arena back (the same flood:
//! 34 MB). It walks and locks the arenas, so it is not called per close: once
//! [`CLOSES_BEFORE_TRIM`] connections have closed, one trim is scheduled [`TRIM_DELAY`] later,
//! off the async threads, and runs again a delay later for as long as that many more closed
//! meanwhile — at most one trim per delay, however many connections churn. Elsewhere than
//! glibc, nothing is done: other allocators return large blocks themselves or have no such
//! call.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Closed connections (of every listener in the process) that schedule a trim.
pub(crate) const CLOSES_BEFORE_TRIM: usize = 256;

/// How long after the closes that scheduled it a trim runs: a burst is over by then, and a
/// steady churn is trimmed at most this often.
pub(crate) const TRIM_DELAY: Duration = Duration::from_secs(1);

/// Connections closed since the last trim was scheduled.
static CLOSED: AtomicUsize = AtomicUsize::new(0);
/// A trim is scheduled (or running again): closes meanwhile only count.
static SCHEDULED: AtomicBool = AtomicBool::new(false);
/// Trims run so far (for tests and logs).
static TRIMS: AtomicUsize = AtomicUsize::new(0);

/// A connection closed. Must be called on a Tokio runtime (the connection tasks are).
pub(crate) fn connection_closed() {
    if CLOSED.fetch_add(1, Ordering::Relaxed) + 1 < CLOSES_BEFORE_TRIM {
        return;
    }
    if SCHEDULED.swap(true, Ordering::AcqRel) {
        return;
    }
    CLOSED.store(0, Ordering::Relaxed);
    /// Clears [`SCHEDULED`] when the trimming task ends, also when its runtime is dropped
    /// while it waits: otherwise no trim would ever be scheduled again in this process.
    struct Unschedule;
    impl Drop for Unschedule {
        fn drop(&mut self) {
            SCHEDULED.store(false, Ordering::Release);
        }
    }
    tokio::spawn(async {
        let _unschedule = Unschedule;
        loop {
            tokio::time::sleep(TRIM_DELAY).await;
            let released = tokio::task::spawn_blocking(release_free_memory)
                .await
                .unwrap_or(false);
            TRIMS.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                released,
                "returned free memory to the system after connections closed"
            );
            // Connections that closed while this trim was scheduled schedule none of their
            // own: enough of them make this one run again.
            if CLOSED.swap(0, Ordering::AcqRel) < CLOSES_BEFORE_TRIM {
                break;
            }
        }
    });
}

/// Trims run so far in this process.
#[cfg(test)]
pub(crate) fn trims() -> usize {
    TRIMS.load(Ordering::Relaxed)
}

/// Asks glibc to return the free pages of every arena to the system; whether any came back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn release_free_memory() -> bool {
    // SAFETY: `malloc_trim` takes no pointer and touches only glibc's own free lists, under
    // the arenas' locks; it is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Not glibc: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() -> bool {
    false
}

#[cfg(test)]
mod tests;
