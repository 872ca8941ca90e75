//! `task download` (a2a-cli SPEC §7.1, `A2ACLI_DOWNLOAD_001`): every part of a task's
//! artifacts written to a directory, one file per part.
//!
//! - a file part with its bytes: the bytes; with a URL: what an `http(s)` GET of it answers,
//!   fetched without any of the agent's credentials (any other scheme is refused);
//! - a text part: its text; a data part: its JSON, pretty-printed.
//!
//! The file is named by the part's `filename` when it is a plain name, else
//! `<artifact>.<ext>` (`<artifact>-<n>.<ext>` when the artifact has several parts), the
//! artifact's name (else its id) and an extension from the media type. A name from the agent
//! that would leave the directory (a path, `..`, a hidden or control character) is refused:
//! that part is saved under the generated name, with a warning. An existing file is never
//! replaced: the name gets `-1`, `-2`, … before its extension, and files are created
//! exclusively (a symbolic link in the way is not followed).

use std::io::Write;
use std::path::{Path, PathBuf};

use trident_proto as pb;

/// One part written to disk.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Saved {
    /// Where.
    pub(crate) path: PathBuf,
    /// The artifact's id.
    pub(crate) artifact_id: String,
    /// The artifact's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) artifact_name: String,
    /// The part's index in the artifact (from 0).
    pub(crate) part: usize,
    /// `file`, `text` or `data`.
    pub(crate) kind: &'static str,
    /// The part's media type, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) media_type: String,
    /// Bytes written.
    pub(crate) size: u64,
    /// The URL the content was fetched from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
}

/// Why a part could not be saved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DownloadError {
    /// The directory or a file could not be written.
    #[error("{}: {source}", .path.display())]
    Write {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file part's URL could not be fetched.
    #[error("{url}: {why}")]
    Fetch {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// A part with nothing in it to save.
    #[error("artifact {artifact} part {part} has no content")]
    Empty {
        /// The artifact's id.
        artifact: String,
        /// The part's index.
        part: usize,
    },
}

/// A part's content, once known.
enum Content<'a> {
    Bytes(&'a [u8]),
    Owned(Vec<u8>),
}

impl Content<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Content::Bytes(b) => b,
            Content::Owned(b) => b,
        }
    }
}

/// A name from the agent usable as a file name in the directory: one plain path component,
/// no leading dot, no control character, at most 255 bytes.
pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && !name.contains(['/', '\\', ':'])
        && !name.chars().any(char::is_control)
}

/// A file-name stem made of `text`: unsafe characters become `_`.
fn stem_of(text: &str) -> String {
    let stem: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let stem = stem.trim_start_matches('.').to_owned();
    if stem.is_empty() {
        "artifact".to_owned()
    } else {
        stem
    }
}

/// The extension of a part of `kind` with `media_type`.
fn extension(kind: &str, media_type: &str) -> &'static str {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "text/markdown" => "md",
        "text/html" => "html",
        "text/csv" => "csv",
        "application/json" => "json",
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/svg+xml" => "svg",
        "application/zip" => "zip",
        _ => match kind {
            "text" => "txt",
            "data" => "json",
            _ => "bin",
        },
    }
}

/// Creates `dir/name`, or `dir/stem-N.ext` for the first N free, exclusively; writes `bytes`.
fn create_unique(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, DownloadError> {
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, Some(e)),
        _ => (name, None),
    };
    for n in 0u32.. {
        let candidate = match (n, ext) {
            (0, _) => name.to_owned(),
            (n, Some(ext)) => format!("{stem}-{n}.{ext}"),
            (n, None) => format!("{stem}-{n}"),
        };
        let path = dir.join(&candidate);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                return file
                    .write_all(bytes)
                    .and_then(|()| file.flush())
                    .map(|()| path.clone())
                    .map_err(|source| DownloadError::Write { path, source });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(DownloadError::Write { path, source }),
        }
    }
    Err(DownloadError::Write {
        path: dir.to_owned(),
        source: std::io::Error::other("no free file name"),
    })
}

/// Fetches a file part's URL: `http(s)` only, no credentials, within `timeout`.
async fn fetch(
    http: &reqwest::Client,
    url: &str,
    timeout: Option<std::time::Duration>,
) -> Result<Vec<u8>, DownloadError> {
    let failed = |why: String| DownloadError::Fetch {
        url: url.to_owned(),
        why,
    };
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("http" | "https")) {
        return Err(failed("only http and https URLs are fetched".to_owned()));
    }
    let mut request = http.get(url);
    if let Some(t) = timeout {
        request = request.timeout(t);
    }
    let response = request.send().await.map_err(|e| failed(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("HTTP {status}")));
    }
    let body = response.bytes().await.map_err(|e| failed(e.to_string()))?;
    Ok(body.to_vec())
}

/// The last path segment of a URL, if it is a plain name.
fn url_name(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next()?;
    let after_scheme = path.split_once("://").map_or(path, |(_, r)| r);
    let (_, path) = after_scheme.split_once('/')?;
    let last = path.rsplit('/').next()?;
    plain_name(last).then(|| last.to_owned())
}

/// Writes the parts of `artifacts` (those `only` names, by id or name, when not empty) into
/// `dir`, created if missing. Warnings (a refused name) go to `warn`.
pub(crate) async fn save(
    artifacts: &[pb::Artifact],
    only: &[String],
    dir: &Path,
    http: &reqwest::Client,
    timeout: Option<std::time::Duration>,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Saved>, DownloadError> {
    std::fs::create_dir_all(dir).map_err(|source| DownloadError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut saved = Vec::new();
    for a in artifacts {
        if !only.is_empty() && !only.iter().any(|o| *o == a.artifact_id || *o == a.name) {
            continue;
        }
        let base = stem_of(if a.name.is_empty() {
            &a.artifact_id
        } else {
            &a.name
        });
        for (i, part) in a.parts.iter().enumerate() {
            let (kind, content, url) = match &part.content {
                Some(pb::part::Content::Text(t)) => ("text", Content::Bytes(t.as_bytes()), None),
                Some(pb::part::Content::Data(d)) => {
                    let mut json = serde_json::to_vec_pretty(d).unwrap_or_default();
                    json.push(b'\n');
                    ("data", Content::Owned(json), None)
                }
                Some(pb::part::Content::Raw(bytes)) => ("file", Content::Bytes(bytes), None),
                Some(pb::part::Content::Url(url)) => (
                    "file",
                    Content::Owned(fetch(http, url, timeout).await?),
                    Some(url.clone()),
                ),
                None => {
                    return Err(DownloadError::Empty {
                        artifact: a.artifact_id.clone(),
                        part: i,
                    });
                }
            };
            let generated = if a.parts.len() == 1 {
                format!("{base}.{}", extension(kind, &part.media_type))
            } else {
                format!("{base}-{}.{}", i + 1, extension(kind, &part.media_type))
            };
            let name = if part.filename.is_empty() {
                url.as_deref().and_then(url_name).unwrap_or(generated)
            } else if plain_name(&part.filename) {
                part.filename.clone()
            } else {
                warn(format!(
                    "artifact {} part {}: the name {:?} is not a plain file name; saved as {}",
                    a.artifact_id, i, part.filename, generated
                ));
                generated
            };
            let path = create_unique(dir, &name, content.bytes())?;
            saved.push(Saved {
                path,
                artifact_id: a.artifact_id.clone(),
                artifact_name: a.name.clone(),
                part: i,
                kind,
                media_type: part.media_type.clone(),
                size: content.bytes().len() as u64,
                url,
            });
        }
    }
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_agent_stay_in_the_directory() {
        for bad in [
            "",
            "..",
            ".",
            "../x",
            "/etc/passwd",
            "a/b",
            "a\\b",
            ".hidden",
            "c:x",
            "x\ny",
        ] {
            assert!(!plain_name(bad), "{bad:?}");
        }
        for good in ["report.pdf", "x", "a b.txt", "näme.md"] {
            assert!(plain_name(good), "{good:?}");
        }
        assert_eq!(stem_of("../../etc"), "_.._etc");
        assert_eq!(stem_of("..."), "artifact");
        assert_eq!(
            url_name("https://h/files/x.png?s=1"),
            Some("x.png".to_owned())
        );
        assert_eq!(url_name("https://h/files/..%2f"), None);
        assert_eq!(url_name("https://h"), None);
    }
}
