//! [`LocalHub`]: an [`EventBus`] connecting engines in one process, for tests of cluster
//! mode without a message broker. Each engine joins the hub ([`LocalHub::join`]) and gets a
//! bus of its own; what one publishes reaches every other member's feed that watches the task,
//! at once and in order. [`LocalHub::drop_messages`] makes it lose publishes, and
//! [`LocalHub::resync`] tells every member that some may have been lost, as a broker
//! connection that dropped and came back would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use tokio::sync::mpsc;
use trident_core::store::{BusWatch, EventBus, LoggedEvent, Notice, NoticeFeed, Scope};

/// A task, as the hub keys its watches.
type Key = (Scope, String);

/// Connects the buses of engines in one process (see the [module](self) docs).
#[derive(Clone, Default)]
pub struct LocalHub {
    shared: Arc<Hub>,
}

impl std::fmt::Debug for LocalHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalHub")
            .field("members", &lock(&self.shared.members).len())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Hub {
    members: Mutex<Vec<Member>>,
    /// Publishes are lost while set.
    dropping: AtomicBool,
    /// Publishes made (lost ones included).
    published: AtomicUsize,
    /// Events lost.
    dropped: AtomicUsize,
}

struct Member {
    id: usize,
    /// Watches per task (one engine may watch a task twice for a moment).
    watches: HashMap<Key, usize>,
    /// Where the member's feed reads from.
    feed: mpsc::UnboundedSender<Notice>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LocalHub {
    /// A hub without members.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new member's bus, for one engine.
    pub fn join(&self) -> Arc<dyn EventBus> {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = {
            let mut members = lock(&self.shared.members);
            let id = members.len();
            members.push(Member {
                id,
                watches: HashMap::new(),
                feed: tx,
            });
            id
        };
        Arc::new(LocalBus {
            hub: self.shared.clone(),
            id,
            feed: Mutex::new(Some(rx)),
        })
    }

    /// Loses every publish while `drop` is set (as a broker that lost messages would).
    pub fn drop_messages(&self, drop: bool) {
        self.shared.dropping.store(drop, Ordering::SeqCst);
    }

    /// Sends [`Notice::Resync`] to every member (its connection came back: it may have
    /// missed events).
    pub fn resync(&self) {
        for member in lock(&self.shared.members).iter() {
            let _ = member.feed.send(Notice::Resync);
        }
    }

    /// Publishes made so far (including lost ones).
    pub fn published(&self) -> usize {
        self.shared.published.load(Ordering::SeqCst)
    }

    /// Events lost so far ([`LocalHub::drop_messages`]), however many publishes carried them.
    pub fn dropped(&self) -> usize {
        self.shared.dropped.load(Ordering::SeqCst)
    }

    /// How many members watch the task `task_id` of `scope`.
    pub fn watchers(&self, scope: &Scope, task_id: &str) -> usize {
        let key = (scope.clone(), task_id.to_owned());
        lock(&self.shared.members)
            .iter()
            .filter(|m| m.watches.get(&key).is_some_and(|n| *n > 0))
            .count()
    }
}

/// One member's bus.
struct LocalBus {
    hub: Arc<Hub>,
    id: usize,
    feed: Mutex<Option<mpsc::UnboundedReceiver<Notice>>>,
}

/// Stops a member's watch of a task when dropped.
struct Watch {
    hub: Arc<Hub>,
    id: usize,
    key: Key,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut members = lock(&self.hub.members);
        if let Some(member) = members.iter_mut().find(|m| m.id == self.id)
            && let Some(n) = member.watches.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                member.watches.remove(&self.key);
            }
        }
    }
}

#[async_trait::async_trait]
impl EventBus for LocalBus {
    async fn publish(&self, scope: &Scope, task_id: &str, events: &[LoggedEvent]) {
        self.hub.published.fetch_add(1, Ordering::SeqCst);
        if self.hub.dropping.load(Ordering::SeqCst) {
            self.hub.dropped.fetch_add(events.len(), Ordering::SeqCst);
            return;
        }
        let key = (scope.clone(), task_id.to_owned());
        for member in lock(&self.hub.members).iter() {
            if member.id != self.id && member.watches.contains_key(&key) {
                let _ = member.feed.send(Notice::Events {
                    scope: scope.clone(),
                    task_id: task_id.to_owned(),
                    events: events.to_vec(),
                });
            }
        }
    }

    fn watch(&self, scope: &Scope, task_id: &str) -> BusWatch {
        let key = (scope.clone(), task_id.to_owned());
        if let Some(member) = lock(&self.hub.members).iter_mut().find(|m| m.id == self.id) {
            *member.watches.entry(key.clone()).or_default() += 1;
        }
        Box::new(Watch {
            hub: self.hub.clone(),
            id: self.id,
            key,
        })
    }

    fn feed(&self) -> NoticeFeed {
        match lock(&self.feed).take() {
            Some(mut rx) => futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed(),
            // Taken once, by the engine.
            None => futures::stream::empty().boxed(),
        }
    }
}
