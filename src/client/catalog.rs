//! Catalog resolution (SPEC §10.1, `A2ACLI_CARD_GET_005`): a card reference `catalog:NAME`
//! is looked up in the agent catalog `--catalog` names and resolved to an Agent Card before
//! anything else happens.
//!
//! A2A defines no registry; the catalog read is the AI Catalog the A2A discovery
//! documentation points to (`/.well-known/ai-catalog.json`: `{"specVersion", "entries": [{
//! "identifier", "type", "url" | "data", "displayName"?, "version"?, "updatedAt"? }]}`). Of its
//! entries only Agent Cards count (`type` `application/a2a-agent-card+json`); nested catalogs
//! are not followed. The choices are in `docs/cli.md`.

use super::{CardSource, Target, card_source, debug, http_client};
use crate::failure::{Failure, Local};

/// An entry type this tool resolves: an A2A Agent Card.
const CARD_TYPE: &str = "application/a2a-agent-card+json";
/// The prefix of a card reference resolved through the catalog.
pub(super) const PREFIX: &str = "catalog:";
/// Where a host's catalog is (the AI Catalog's well-known URI).
const WELL_KNOWN: &str = "/.well-known/ai-catalog.json";

/// What a catalog entry gives: a card reference (its `url`, made absolute), or the card itself
/// (its `data`).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Entry {
    /// A card URL or file path, to be read like any `-a` reference.
    Reference(String),
    /// The card's JSON, inline in the catalog.
    Inline(Vec<u8>),
}

/// A catalog document (only the fields read).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Catalog {
    entries: Vec<CatalogEntry>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CatalogEntry {
    #[serde(default)]
    identifier: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    data: Option<serde_json::Value>,
}

impl CatalogEntry {
    /// The name shown for it: its display name, else its card's name, else its identifier.
    fn shown(&self) -> &str {
        self.display_name
            .as_deref()
            .or_else(|| self.data.as_ref()?.get("name")?.as_str())
            .unwrap_or(&self.identifier)
    }
}

/// Resolves `name` (the part of `catalog:NAME` after the prefix; `NAME@VERSION` picks a
/// version) in the catalog of `target`.
pub(super) async fn resolve(target: &Target, name: &str) -> Result<Entry, Failure> {
    let Some(reference) = target.catalog.as_deref().filter(|c| !c.is_empty()) else {
        return Err(Failure::usage(format!(
            "-a {PREFIX}{name}: no catalog to look it up in: pass --catalog REF (or set \
             A2ACLI_CATALOG)"
        ))
        .with_hint(format!(
            "trident card get --catalog agents.example.com -a {PREFIX}{name}"
        )));
    };
    let source = catalog_source(reference);
    let body = read(target, &source).await?;
    let catalog: Catalog = serde_json::from_slice(&body).map_err(|e| {
        Failure::local(
            Local::CardInvalid,
            format!("catalog {reference}: not an AI Catalog (an object with entries): {e}"),
        )
        .with_hint("a catalog is JSON: {\"specVersion\": \"1.0\", \"entries\": [...]}")
    })?;
    let entry = find(&catalog, name).ok_or_else(|| {
        let names: Vec<&str> = catalog
            .entries
            .iter()
            .filter(|e| e.kind == CARD_TYPE)
            .map(|e| e.identifier.as_str())
            .collect();
        Failure::local(
            Local::CardNotFound,
            format!("catalog {reference} has no Agent Card entry {name:?}"),
        )
        .with_hint(if names.is_empty() {
            "the catalog lists no A2A Agent Card".to_owned()
        } else {
            format!("its agents: {}", names.join(", "))
        })
    })?;
    if target.debug {
        debug(&format!(
            "catalog: {name:?} is entry {:?} ({}) of {source:?}",
            entry.identifier,
            entry.version.as_deref().unwrap_or("no version")
        ));
    }
    match (&entry.url, &entry.data) {
        (_, Some(card)) => Ok(Entry::Inline(card.to_string().into_bytes())),
        (Some(url), None) if !url.is_empty() => Ok(Entry::Reference(absolute(&source, url))),
        _ => Err(Failure::local(
            Local::CardInvalid,
            format!(
                "catalog {reference}: entry {:?} has neither url nor data",
                entry.identifier
            ),
        )),
    }
}

/// The Agent Card entry `name` matches: by identifier, else by display name or card name
/// (case-insensitively); of several (versions of one agent), the one `@VERSION` asks for, else
/// the most recently updated, else the first listed.
fn find<'a>(catalog: &'a Catalog, name: &str) -> Option<&'a CatalogEntry> {
    let (name, version) = match name.rsplit_once('@') {
        Some((n, v)) if !n.is_empty() && !v.is_empty() => (n, Some(v)),
        _ => (name, None),
    };
    let cards = || catalog.entries.iter().filter(|e| e.kind == CARD_TYPE);
    let matching: Vec<&CatalogEntry> = {
        let by_id: Vec<_> = cards().filter(|e| e.identifier == name).collect();
        if by_id.is_empty() {
            cards()
                .filter(|e| e.shown().eq_ignore_ascii_case(name))
                .collect()
        } else {
            by_id
        }
    };
    match version {
        Some(v) => matching
            .into_iter()
            .find(|e| e.version.as_deref() == Some(v)),
        // The first of the latest (`max_by` keeps the last of equals, hence the reversal).
        None => matching
            .into_iter()
            .rev()
            .max_by(|a, b| a.updated_at.cmp(&b.updated_at)),
    }
}

/// Where the catalog `reference` is: a file, a URL used as-is, or a host or origin whose
/// well-known catalog is read.
fn catalog_source(reference: &str) -> CardSource {
    const CARD: &str = trident::CARD_PATH;
    match card_source(reference) {
        CardSource::Url(url) if url.ends_with(CARD) && !reference.ends_with(CARD) => {
            CardSource::Url(format!("{}{WELL_KNOWN}", &url[..url.len() - CARD.len()]))
        }
        other => other,
    }
}

/// An entry's `url` made absolute against the catalog it came from (a URL, or a file's
/// directory).
fn absolute(catalog: &CardSource, url: &str) -> String {
    if url.contains("://") {
        return url.to_owned();
    }
    match catalog {
        CardSource::Url(base) => url::Url::parse(base)
            .and_then(|b| b.join(url))
            .map_or_else(|_| url.to_owned(), String::from),
        CardSource::File(path) => path
            .parent()
            .map_or_else(|| url.into(), |dir| dir.join(url))
            .display()
            .to_string(),
    }
}

/// The catalog's bytes.
async fn read(target: &Target, source: &CardSource) -> Result<Vec<u8>, Failure> {
    let hint = "check --catalog: a file, a URL, or a host serving /.well-known/ai-catalog.json";
    match source {
        CardSource::File(path) => std::fs::read(path).map_err(|e| {
            Failure::local(
                Local::CardNotFound,
                format!("catalog file {}: {e}", path.display()),
            )
            .with_hint(hint)
        }),
        CardSource::Url(url) => {
            let mut request = http_client(target)?
                .get(url)
                .header("accept", "application/json");
            if let Some(t) = target.timeout {
                request = request.timeout(t);
            }
            let response = request.send().await.map_err(|e| {
                let code = if e.is_timeout() {
                    Local::Timeout
                } else {
                    Local::Unreachable
                };
                Failure::local(
                    code,
                    format!("catalog {url}: {}", trident_core::error_chain(&e)),
                )
                .with_hint(hint)
            })?;
            let status = response.status();
            if !status.is_success() {
                return Err(Failure::local(
                    Local::CardNotFound,
                    format!("catalog {url}: HTTP {status}"),
                )
                .with_hint(hint));
            }
            let body = response
                .bytes()
                .await
                .map_err(|e| Failure::local(Local::Unreachable, format!("catalog {url}: {e}")))?;
            if target.debug {
                debug(&format!("catalog: {} bytes from {url}", body.len()));
            }
            Ok(body.to_vec())
        }
    }
}

#[cfg(test)]
mod tests;
