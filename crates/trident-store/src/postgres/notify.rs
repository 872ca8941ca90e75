//! Commit notices between the processes sharing a PostgreSQL schema: what a writer's
//! transaction sends with `pg_notify` (one notification per transaction, listing every task it
//! committed), and the listener that turns what the others send into [`Notice`]s.
//!
//! Payloads are JSON, `n` naming the sending store (so a store skips its own):
//! - one task: `{"n":…,"t":tenant,"o":owner,"i":task,"s":seq}`;
//! - several: `{"n":…,"r":1,"c":[[tenant,owner,task,seq],…]}`. The `r` member makes a
//!   process that only knows the one-task form (an older version) resync, which re-reads
//!   every task it follows: slower, never wrong;
//! - `{"n":…,"r":1}`: resync, when a task's entry alone would not fit in a payload.
//!
//! A notification carries less than 8000 bytes: a transaction whose list does not fit in one
//! sends several (its notifications are delivered together, at commit; PostgreSQL takes its
//! notification lock once per transaction however many it sends).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::{mpsc, oneshot};
use trident_core::store::{Notice, Scope};

/// The NOTIFY channel commits are announced on, per schema: channels are per database, and
/// stores in different schemas of one database must not hear each other's commits.
const CHANNEL: &str = "trident_commits";

/// NOTIFY payloads must stay under 8000 bytes; this leaves room to spare.
pub(crate) const MAX_PAYLOAD: usize = 7_900;

/// The channel of the stores in `schema` (the default schema keeps the plain name; a name
/// past PostgreSQL's 63-byte identifier limit is shortened with a hash of the schema).
pub(crate) fn channel_for(schema: Option<&str>) -> String {
    match schema {
        None => CHANNEL.to_owned(),
        Some(schema) => {
            let name = format!("{CHANNEL}_{schema}");
            if name.len() <= 63 {
                name
            } else {
                format!("{CHANNEL}_{:016x}", fnv1a(schema))
            }
        }
    }
}

/// FNV-1a: stable across processes and versions, unlike the std hasher.
pub(crate) fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Where a store's writers announce their commits: the schema's channel and the store's id.
#[derive(Debug, Clone)]
pub(crate) struct Notify {
    pub(crate) channel: String,
    pub(crate) node: String,
}

/// One committed task, as a notification lists it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Committed<'a> {
    pub(crate) tenant: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) id: &'a str,
    pub(crate) seq: i64,
}

impl Notify {
    /// The payloads announcing `tasks` (empty for none): one, unless the list exceeds
    /// [`MAX_PAYLOAD`].
    pub(crate) fn payloads(&self, tasks: &[Committed<'_>]) -> Vec<String> {
        let single = |t: &Committed<'_>| {
            serde_json::json!({
                "n": self.node, "t": t.tenant, "o": t.owner, "i": t.id, "s": t.seq,
            })
            .to_string()
        };
        if let [task] = tasks {
            let payload = single(task);
            if payload.len() <= MAX_PAYLOAD {
                return vec![payload];
            }
        }
        let node = serde_json::Value::from(self.node.as_str()).to_string();
        let head = format!("{{\"n\":{node},\"r\":1,\"c\":[");
        let tail = "]}";
        let mut payloads = Vec::new();
        let mut resync = false;
        // Entries of the payload being filled.
        let mut entries: Vec<(String, &Committed<'_>)> = Vec::new();
        let mut len = head.len() + tail.len();
        let mut close = |entries: &mut Vec<(String, &Committed<'_>)>, len: &mut usize| {
            match entries.as_slice() {
                [] => {}
                // A list of one (the others spilled into the previous payloads) takes the
                // one-task form every version reads.
                [(_, task)] => payloads.push(single(task)),
                many => {
                    let list: Vec<&str> = many.iter().map(|(e, _)| e.as_str()).collect();
                    payloads.push(format!("{head}{}{tail}", list.join(",")));
                }
            }
            entries.clear();
            *len = head.len() + tail.len();
        };
        for task in tasks {
            let entry = serde_json::json!([task.tenant, task.owner, task.id, task.seq]).to_string();
            if head.len() + entry.len() + tail.len() > MAX_PAYLOAD {
                resync = true;
                continue;
            }
            let comma = usize::from(!entries.is_empty());
            if len + comma + entry.len() > MAX_PAYLOAD {
                close(&mut entries, &mut len);
            }
            len += usize::from(!entries.is_empty()) + entry.len();
            entries.push((entry, task));
        }
        close(&mut entries, &mut len);
        if resync {
            payloads.push(serde_json::json!({ "n": self.node, "r": 1 }).to_string());
        }
        payloads
    }
}

/// The live notice feeds of a store.
pub(crate) type Subscribers = Mutex<Vec<mpsc::UnboundedSender<Notice>>>;

fn broadcast(subscribers: &Subscribers, notice: &Notice) {
    let mut subs = subscribers.lock().unwrap_or_else(|e| e.into_inner());
    subs.retain(|tx| tx.send(notice.clone()).is_ok());
}

/// Parses one notification: nothing for our own commits and for foreign payloads.
pub(crate) fn parse(payload: &str, own: &str) -> Vec<Notice> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(payload) else {
        return Vec::new();
    };
    if v.get("n").and_then(|n| n.as_str()) == Some(own) {
        return Vec::new();
    }
    if let Some(list) = v.get("c").and_then(|c| c.as_array()) {
        let entry = |e: &serde_json::Value| {
            let [tenant, owner, id, seq] = e.as_array()?.as_slice() else {
                return None;
            };
            Some(Notice::Committed {
                scope: Scope::new(tenant.as_str()?, owner.as_str()?),
                task_id: id.as_str()?.to_owned(),
                seq: seq.as_u64()?,
            })
        };
        // A list with an entry we cannot read: what it says is lost, so resync.
        return list
            .iter()
            .map(entry)
            .collect::<Option<Vec<_>>>()
            .unwrap_or_else(|| vec![Notice::Resync]);
    }
    if v.get("r").is_some() {
        return vec![Notice::Resync];
    }
    let single = || {
        Some(Notice::Committed {
            scope: Scope::new(v.get("t")?.as_str()?, v.get("o")?.as_str()?),
            task_id: v.get("i")?.as_str()?.to_owned(),
            seq: v.get("s")?.as_u64()?,
        })
    };
    single().into_iter().collect()
}

/// The listener task: fans notifications out to every live feed until the store is dropped.
/// A lost connection (notifications may have been missed) becomes [`Notice::Resync`] once
/// listening again.
pub(crate) async fn listen(
    mut listener: PgListener,
    channel: String,
    pool: PgPool,
    node: String,
    subscribers: Arc<Subscribers>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        let received = tokio::select! {
            _ = &mut stopped => return,
            r = listener.try_recv() => r,
        };
        match received {
            Ok(Some(n)) => {
                for notice in parse(n.payload(), &node) {
                    broadcast(&subscribers, &notice);
                }
            }
            // The connection was lost and re-established (eager reconnect): whatever was
            // sent meanwhile is gone.
            Ok(None) => {
                tracing::warn!("postgres store: notification connection lost; resync");
                broadcast(&subscribers, &Notice::Resync);
            }
            Err(e) => {
                tracing::warn!(error = %e, "postgres store: notification listener failed");
                // Start over with a new listener, retrying until it listens.
                loop {
                    tokio::select! {
                        _ = &mut stopped => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                    match PgListener::connect_with(&pool).await {
                        Ok(mut fresh) => match fresh.listen(&channel).await {
                            Ok(()) => {
                                listener = fresh;
                                break;
                            }
                            Err(e) => tracing::warn!(error = %e, "postgres store: LISTEN"),
                        },
                        Err(e) => tracing::warn!(error = %e, "postgres store: reconnecting"),
                    }
                }
                broadcast(&subscribers, &Notice::Resync);
            }
        }
    }
}
