//! The card cache of a [`Client`](crate::Client): cards kept for as long as their
//! `Cache-Control` allows, revalidated with their `ETag`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::{CACHE_CONTROL, ETAG, HeaderMap};
use trident_proto as pb;

/// Cards kept at most (a client talks to a handful of agents; this bounds a misuse).
const MAX_CARDS: usize = 256;

#[derive(Debug, Clone)]
struct Entry {
    card: pb::AgentCard,
    etag: Option<String>,
    fresh_until: Instant,
}

/// Cards by URL.
#[derive(Debug, Default)]
pub(crate) struct CardCache {
    entries: Mutex<HashMap<String, Entry>>,
}

/// What the cache holds for a URL.
pub(crate) enum Freshness {
    /// A card still within its `max-age`.
    Fresh(Box<pb::AgentCard>),
    /// A card past it: revalidate with this `ETag`, or fetch anew without one.
    Stale { etag: Option<String> },
    /// Nothing.
    Missing,
}

/// How long a response may be reused, from its `Cache-Control`: `None` for `no-store`, zero
/// for `no-cache` or no `max-age`.
pub(crate) fn max_age(headers: &HeaderMap) -> Option<Duration> {
    let mut age = Duration::ZERO;
    for value in headers.get_all(CACHE_CONTROL) {
        let Ok(value) = value.to_str() else { continue };
        for directive in value.split(',').map(str::trim) {
            let (name, arg) = directive.split_once('=').map_or((directive, ""), |(n, a)| {
                (n.trim(), a.trim().trim_matches('"'))
            });
            match name.to_ascii_lowercase().as_str() {
                "no-store" => return None,
                "no-cache" => return Some(Duration::ZERO),
                "max-age" => {
                    if let Ok(secs) = arg.parse::<u64>() {
                        age = Duration::from_secs(secs);
                    }
                }
                _ => {}
            }
        }
    }
    Some(age)
}

impl CardCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn lookup(&self, url: &str) -> Freshness {
        match self.entries().get(url) {
            Some(e) if e.fresh_until > Instant::now() => Freshness::Fresh(Box::new(e.card.clone())),
            Some(e) => Freshness::Stale {
                etag: e.etag.clone(),
            },
            None => Freshness::Missing,
        }
    }

    /// Keeps `card` as its response's headers allow (or forgets the URL's card when they say
    /// `no-store`).
    pub(crate) fn store(&self, url: &str, card: &pb::AgentCard, headers: &HeaderMap) {
        let mut entries = self.entries();
        let Some(age) = max_age(headers) else {
            entries.remove(url);
            return;
        };
        let etag = headers
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if age.is_zero() && etag.is_none() {
            // Nothing to reuse it by: neither fresh for a while nor revalidatable.
            entries.remove(url);
            return;
        }
        let now = Instant::now();
        if entries.len() >= MAX_CARDS && !entries.contains_key(url) {
            entries.retain(|_, e| e.fresh_until > now || e.etag.is_some());
            if entries.len() >= MAX_CARDS
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, e)| e.fresh_until)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(
            url.to_owned(),
            Entry {
                card: card.clone(),
                etag,
                fresh_until: now.checked_add(age).unwrap_or(now),
            },
        );
    }

    /// A `304 Not Modified`: the kept card again, fresh for the new `max-age`.
    pub(crate) fn revalidated(&self, url: &str, headers: &HeaderMap) -> Option<pb::AgentCard> {
        let mut entries = self.entries();
        let entry = entries.get_mut(url)?;
        let card = entry.card.clone();
        match max_age(headers) {
            None => {
                entries.remove(url);
            }
            Some(age) => {
                let now = Instant::now();
                entry.fresh_until = now.checked_add(age).unwrap_or(now);
                if let Some(etag) = headers.get(ETAG).and_then(|v| v.to_str().ok()) {
                    entry.etag = Some(etag.to_owned());
                }
            }
        }
        Some(card)
    }
}
