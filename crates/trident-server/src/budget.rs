//! The request-body budget of one listener: how many bytes of request bodies it holds at
//! once, received and not yet complete (issue 27). Each binding buffers a body until it has
//! all of it (JSON-RPC and HTTP+JSON read it whole, gRPC holds its one message until the body
//! ends), so a client that sends all but the last bytes of a body holds that much of the
//! server's memory until the body timeout, and without a budget nothing bounds the total but
//! connections × the largest body.
//!
//! Bytes are charged as they arrive, to the request they belong to. When a new frame does not
//! fit, the requests that received bytes the longest ago — stalled ones first — are cut off
//! until it does: each is told (its body's next read fails, and the server answers it
//! `ResourceExhausted`) and its charge is dropped at once, its memory going as soon as its
//! handler sees the error. A request whose own body is larger than the whole budget is the
//! one refused. A request's charge ends when its body is complete, fails or is dropped
//! (the client gone, a timeout, the handler done with it), so nothing holds budget for
//! longer than its body takes to arrive.
//!
//! Pure bookkeeping (the body wrapper in [`crate::connections`] does the telling), tested
//! without sockets.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::task::AtomicWaker;

/// How one request learns it was cut off: a flag and the waker of whoever reads its body.
#[derive(Debug, Default)]
pub(crate) struct Cut {
    cut: AtomicBool,
    waker: AtomicWaker,
}

impl Cut {
    /// Registers the reader to wake, then says whether the request was cut off (in that order,
    /// so a cut between the two is never missed).
    pub(crate) fn register(&self, waker: &std::task::Waker) -> bool {
        self.waker.register(waker);
        self.cut.load(Ordering::Acquire)
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        self.waker.wake();
    }
}

/// A request's place in the budget: its key (the budget's tick at its last charge).
pub(crate) type Place = u64;

/// Why a frame could not be charged; either way the request holds nothing any more.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The request alone would be larger than the whole budget.
    TooLarge,
    /// The request was cut off for others since its last charge.
    Cut,
}

#[derive(Debug)]
struct Holder {
    charged: usize,
    cut: Arc<Cut>,
}

#[derive(Debug, Default)]
struct State {
    used: usize,
    tick: u64,
    /// Requests holding budget, by the tick of their last charge: the first received bytes
    /// the longest ago.
    holders: BTreeMap<Place, Holder>,
}

/// The request-body budget of one listener (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    state: Mutex<State>,
}

impl Budget {
    /// A budget of `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Plain bookkeeping: a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The budget, in bytes.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Bytes charged now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.state().used
    }

    /// Charges `bytes` more to the request at `place` (`None`: its first charge, told through
    /// `cut` if it is ever cut off), cutting off the requests that received bytes the longest
    /// ago until they fit. Returns the request's new place; on `Err` the request holds nothing.
    pub(crate) fn charge(
        &self,
        place: Option<Place>,
        cut: &Arc<Cut>,
        bytes: usize,
    ) -> Result<Place, Refused> {
        let mut state = self.state();
        let mut holder = match place {
            None => Holder {
                charged: 0,
                cut: cut.clone(),
            },
            Some(place) => state.holders.remove(&place).ok_or(Refused::Cut)?,
        };
        state.used -= holder.charged;
        let Some(wanted) = holder.charged.checked_add(bytes).filter(|w| *w <= self.max) else {
            return Err(Refused::TooLarge);
        };
        while state.used + wanted > self.max {
            // Never empty here: `used` is what the holders (the request itself excluded) hold,
            // and `wanted` alone fits.
            let Some((_, victim)) = state.holders.pop_first() else {
                break;
            };
            state.used -= victim.charged;
            victim.cut.cut();
        }
        holder.charged = wanted;
        state.used += wanted;
        state.tick += 1;
        let place = state.tick;
        state.holders.insert(place, holder);
        Ok(place)
    }

    /// The request at `place` holds nothing any more (its body is complete, failed or gone).
    pub(crate) fn release(&self, place: Place) {
        let mut state = self.state();
        if let Some(holder) = state.holders.remove(&place) {
            state.used -= holder.charged;
        }
    }
}

#[cfg(test)]
mod tests;
