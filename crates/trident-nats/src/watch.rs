//! Watches: one core NATS subscription per watched task, shared by every holder of a watch of
//! that task, forwarding the task's messages into the feed.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use async_nats::jetstream::stream::DirectGetErrorKind;
use futures::StreamExt;
use trident_core::store::{Notice, Scope};

use crate::Shared;
use crate::wire::{self, Body};

/// A watched task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) scope: Scope,
    pub(crate) task_id: String,
}

/// The watches in force, by task; an entry lives while a [`Watch`] of it is held.
pub(crate) type Registry = Arc<Mutex<HashMap<Key, Weak<Entry>>>>;

/// One task's subscription: its forwarding task is aborted (and the subscription, which it
/// owns, dropped: the client unsubscribes) when the last holder lets go.
#[derive(Debug)]
pub(crate) struct Entry {
    key: Key,
    registry: Registry,
    task: tokio::task::AbortHandle,
    /// True once the server has the subscription (and the last message was read): what the
    /// tests wait for before they publish.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) ready: tokio::sync::watch::Receiver<bool>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.task.abort();
        let mut map = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // A watch taken since this one's last holder let go has already replaced it.
        if map.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
            map.remove(&self.key);
        }
    }
}

/// What [`EventBus::watch`](trident_core::store::EventBus::watch) returns.
#[derive(Debug)]
pub(crate) struct Watch(#[allow(dead_code)] Arc<Entry>);

/// Watches `key`, or joins the watch already in force.
pub(crate) fn watch(shared: &Arc<Shared>, key: Key) -> Watch {
    let registry = shared.watches.clone();
    let mut map = registry.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(entry) = map.get(&key).and_then(Weak::upgrade) {
        return Watch(entry);
    }
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(follow(shared.clone(), key.clone(), ready_tx)).abort_handle();
    let entry = Arc::new(Entry {
        key: key.clone(),
        registry: registry.clone(),
        task,
        ready,
    });
    map.insert(key, Arc::downgrade(&entry));
    Watch(entry)
}

/// Subscribes to the task's subject and forwards its messages until aborted.
async fn follow(shared: Arc<Shared>, key: Key, ready: tokio::sync::watch::Sender<bool>) {
    let subject = shared.subject(&key.scope, &key.task_id);
    let mut subscription = match shared.client.subscribe(subject.clone()).await {
        Ok(s) => s,
        Err(e) => {
            // Only when the client is closed: nothing will be delivered on this bus again.
            tracing::warn!(%subject, error = %e, "event bus: cannot subscribe");
            shared.feed.resync();
            return;
        }
    };
    let mut last = 0;
    // `watch` returns before the server has the subscription: a message published meanwhile
    // reached no one here. Once the server has it (a flush is a round trip), the stream's last
    // message for the task covers that window (it may be one the reader already has: readers
    // skip sequence numbers they hold).
    if shared.client.flush().await.is_ok() {
        match shared
            .stream
            .direct_get_last_for_subject(subject.clone())
            .await
        {
            Ok(message) => deliver(&shared, &key, &subject, &message.payload, &mut last),
            Err(e) if e.kind() == DirectGetErrorKind::NotFound => {}
            Err(e) => tracing::debug!(%subject, error = %e, "event bus: no last message"),
        }
    }
    ready.send_replace(true);
    while let Some(message) = subscription.next().await {
        deliver(&shared, &key, &subject, &message.payload, &mut last);
    }
}

/// Forwards one message of the task's subject to the feed: skipped when malformed, published
/// by this bus, about another task (a hash collision), or holding only events already
/// forwarded (a republished message, a retry that arrived late); trimmed to the events after
/// `last` otherwise.
fn deliver(shared: &Shared, key: &Key, subject: &str, payload: &[u8], last: &mut u64) {
    let message = match wire::decode(payload) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(%subject, bytes = payload.len(), error = %e, "event bus: malformed message skipped");
            return;
        }
    };
    if message.origin == shared.origin {
        shared.counters.own_messages.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if !message.is_about(&key.scope, &key.task_id) {
        return;
    }
    match message.body {
        Body::Events(mut events) => {
            events.retain(|e| e.seq > *last);
            let Some(newest) = events.last() else {
                return;
            };
            *last = newest.seq;
            shared.feed.send(Notice::Events {
                scope: key.scope.clone(),
                task_id: key.task_id.clone(),
                events,
            });
        }
        Body::Omitted(seq) => {
            if seq > *last {
                *last = seq;
                shared.feed.send(Notice::Committed {
                    scope: key.scope.clone(),
                    task_id: key.task_id.clone(),
                    seq,
                });
            }
        }
    }
}
