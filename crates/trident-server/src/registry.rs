//! The open connections of one listener: how many requests each has in flight, since when the
//! idle ones are idle, and which to close — when one has been idle for the idle timeout, or
//! when the listener is at its connection limit and a new connection needs the room.
//!
//! Pure bookkeeping (the caller passes the clock and gets back the handles to signal), so it
//! is tested without sockets. A connection is *idle* while no request is in flight on it: an
//! HTTP/1.1 connection between requests or still sending its first request head, an HTTP/2
//! connection without open streams. A request is in flight from the moment its head is
//! complete until its response (a stream included) has ended, so an open stream is never idle.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// A connection's key in the [`Registry`].
pub(crate) type ConnId = u64;

/// What [`Registry::admit`] decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission<T> {
    /// The connection is registered as `id`; `shed` is the connection closed to make room
    /// (signal it), if the listener was at its limit.
    Admitted {
        /// The new connection's key.
        id: ConnId,
        /// The connection to close for it.
        shed: Option<T>,
    },
    /// At the limit with no idle connection to close: refuse the new one.
    Refused,
}

#[derive(Debug)]
struct Entry<T> {
    handle: T,
    in_flight: usize,
    /// Since when it has been idle; `Some` exactly when it is in [`Registry::idle`].
    idle_since: Option<Instant>,
    /// Told to close (shed or expired): no longer counted against the limit, never chosen
    /// again.
    closing: bool,
}

/// The open connections of one listener (see the module docs).
#[derive(Debug)]
pub(crate) struct Registry<T> {
    max: Option<usize>,
    idle_timeout: Option<Duration>,
    next_id: ConnId,
    entries: HashMap<ConnId, Entry<T>>,
    /// Idle connections that are not closing, idle-longest first.
    idle: BTreeSet<(Instant, ConnId)>,
    closing: usize,
}

impl<T: Clone> Registry<T> {
    /// A registry admitting at most `max` connections at once (`None`: any number) and
    /// expiring connections idle for `idle_timeout` (`None`: never).
    pub(crate) fn new(max: Option<usize>, idle_timeout: Option<Duration>) -> Self {
        Self {
            max,
            idle_timeout,
            next_id: 0,
            entries: HashMap::new(),
            idle: BTreeSet::new(),
            closing: 0,
        }
    }

    /// Connections that are open and not told to close.
    pub(crate) fn open(&self) -> usize {
        self.entries.len() - self.closing
    }

    /// Registers a new (idle) connection. At the limit, the connection idle the longest is
    /// shed to make room; without an idle one the new connection is refused.
    pub(crate) fn admit(&mut self, handle: T, now: Instant) -> Admission<T> {
        let shed = match self.max {
            Some(max) if self.open() >= max => match self.shed_idlest() {
                Some(shed) => Some(shed),
                None => return Admission::Refused,
            },
            _ => None,
        };
        let id = self.next_id;
        self.next_id += 1;
        self.entries.insert(
            id,
            Entry {
                handle,
                in_flight: 0,
                idle_since: Some(now),
                closing: false,
            },
        );
        self.idle.insert((now, id));
        Admission::Admitted { id, shed }
    }

    /// Marks the connection idle the longest as closing and returns its handle (also what to
    /// do when the process is out of file descriptors).
    pub(crate) fn shed_idlest(&mut self) -> Option<T> {
        let (_, id) = self.idle.pop_first()?;
        self.close(id)
    }

    fn close(&mut self, id: ConnId) -> Option<T> {
        let entry = self.entries.get_mut(&id)?;
        entry.idle_since = None;
        if !entry.closing {
            entry.closing = true;
            self.closing += 1;
        }
        Some(entry.handle.clone())
    }

    /// A request started on `id`.
    pub(crate) fn start(&mut self, id: ConnId) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.in_flight += 1;
        if let Some(since) = entry.idle_since.take() {
            self.idle.remove(&(since, id));
        }
    }

    /// A request on `id` ended (its response is complete, or was abandoned).
    pub(crate) fn finish(&mut self, id: ConnId, now: Instant) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.in_flight = entry.in_flight.saturating_sub(1);
        if entry.in_flight == 0 && !entry.closing && entry.idle_since.is_none() {
            entry.idle_since = Some(now);
            self.idle.insert((now, id));
        }
    }

    /// Requests in flight on `id` (0 for an unknown connection).
    pub(crate) fn in_flight(&self, id: ConnId) -> usize {
        self.entries.get(&id).map_or(0, |e| e.in_flight)
    }

    /// The connection `id` is gone.
    pub(crate) fn remove(&mut self, id: ConnId) {
        if let Some(entry) = self.entries.remove(&id) {
            if let Some(since) = entry.idle_since {
                self.idle.remove(&(since, id));
            }
            if entry.closing {
                self.closing -= 1;
            }
        }
    }

    /// Marks every connection idle for the idle timeout as closing and returns their handles,
    /// with when to look again (the next expiry, or one idle timeout from `now`: no connection
    /// becoming idle later can expire sooner). Nothing expires without an idle timeout.
    pub(crate) fn expire(&mut self, now: Instant) -> (Vec<T>, Option<Instant>) {
        let Some(timeout) = self.idle_timeout else {
            return (Vec::new(), None);
        };
        let mut expired = Vec::new();
        while let Some(&(since, id)) = self.idle.first() {
            // A timeout too large for the clock never expires.
            let Some(deadline) = since.checked_add(timeout) else {
                return (expired, None);
            };
            if deadline > now {
                return (expired, Some(deadline));
            }
            self.idle.pop_first();
            expired.extend(self.close(id));
        }
        (expired, now.checked_add(timeout))
    }
}

#[cfg(test)]
mod tests;
