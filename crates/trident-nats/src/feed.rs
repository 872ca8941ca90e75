//! The one feed of notices: bounded, and never blocking the side that fills it (the NATS
//! client's subscriptions, its event callback). A notice that does not fit is turned into a
//! [`Notice::Resync`]: the reader re-reads every task it follows from the store, which covers
//! whatever was dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use tokio::sync::mpsc;
use trident_core::store::{Notice, NoticeFeed};

/// The sending side of the feed.
#[derive(Debug)]
pub(crate) struct FeedTx {
    tx: mpsc::Sender<Notice>,
    /// A notice was dropped because the feed was full: the reader gets a `Resync` next.
    overflowed: Arc<AtomicBool>,
}

impl FeedTx {
    /// A feed holding at most `capacity` notices, and its reading side.
    pub(crate) fn new(capacity: usize) -> (Self, NoticeFeed) {
        let (tx, mut rx) = mpsc::channel(capacity.max(1));
        let overflowed = Arc::new(AtomicBool::new(false));
        let flag = overflowed.clone();
        let feed = futures::stream::poll_fn(move |cx| {
            // The drop happened before this poll, so a re-read from here on covers it.
            if flag.swap(false, Ordering::AcqRel) {
                return Poll::Ready(Some(Notice::Resync));
            }
            rx.poll_recv(cx)
        });
        (Self { tx, overflowed }, Box::pin(feed))
    }

    /// Hands `notice` to the reader without waiting; when the feed is full, the reader gets a
    /// `Resync` instead.
    pub(crate) fn send(&self, notice: Notice) {
        match self.tx.try_send(notice) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.overflowed.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        "the event bus's feed is full: notices dropped, the engine re-reads \
                         its tasks from the store"
                    );
                }
                // Wakes a reader that emptied the feed between the failed send and the flag
                // (when the feed is still full, the reader has notices to read anyway).
                let _ = self.tx.try_send(Notice::Resync);
            }
            // Nobody reads the feed (not taken yet, or dropped): nothing to tell.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Tells the reader that notices may have been lost.
    pub(crate) fn resync(&self) {
        self.send(Notice::Resync);
    }
}
