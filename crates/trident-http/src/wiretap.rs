//! [`WireTap`]: a diagnostic hook the clients of every binding call with what they exchange on
//! the wire (HTTP request and status lines, headers, JSON-RPC envelopes, SSE lines; gRPC paths,
//! metadata and statuses), credentials redacted before a line is made.
//!
//! A client holds an `Option<WireTap>`: `None` (the default) costs one check per request and
//! formats nothing. The JSON clients (`HttpClient`) and the gRPC clients both reach this crate,
//! and neither reaches the other, so the hook lives here.

use std::sync::Arc;

/// Where the lines go, and what they must never show.
#[derive(Clone)]
pub struct WireTap {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    sink: Arc<dyn Fn(&str) + Send + Sync>,
    /// Lowercase names of headers (gRPC metadata keys) whose values are never shown.
    headers: Vec<String>,
    /// Names of query parameters whose values are never shown.
    query: Vec<String>,
    /// Values never shown anywhere in a line (a token, a key), longest first.
    values: Vec<String>,
}

/// What a redacted value is shown as.
pub const REDACTED: &str = "[redacted]";

/// Headers that carry credentials by their nature: always redacted.
const SECRET_HEADERS: [&str; 6] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
];

/// Values shorter than this are redacted by name only: replacing every occurrence of a short
/// string would blank out ordinary text, and tell a reader the value besides.
const MIN_SECRET_VALUE: usize = 4;

impl std::fmt::Debug for WireTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireTap")
            .field("headers", &self.inner.headers)
            .field("query", &self.inner.query)
            .field("values", &self.inner.values.len())
            .finish_non_exhaustive()
    }
}

impl WireTap {
    /// A tap writing each line to `sink` (one call per line, no trailing newline). The
    /// headers that carry credentials by nature (`Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `Set-Cookie`, `X-API-Key`, `API-Key`) are always redacted; name more with
    /// [`secret_header`](Self::secret_header).
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            inner: Arc::new(Inner {
                sink: Arc::new(sink),
                headers: SECRET_HEADERS.iter().map(|h| (*h).to_owned()).collect(),
                query: Vec::new(),
                values: Vec::new(),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Never shows the value of the header (or gRPC metadata key) `name`, in any case.
    pub fn secret_header(self, name: &str) -> Self {
        let name = name.trim().to_ascii_lowercase();
        self.edit(|i| {
            if !name.is_empty() && !i.headers.contains(&name) {
                i.headers.push(name);
            }
        })
    }

    /// Never shows the value of the query parameter `name`.
    pub fn secret_query(self, name: &str) -> Self {
        let name = name.to_owned();
        self.edit(|i| {
            if !i.query.contains(&name) {
                i.query.push(name);
            }
        })
    }

    /// Never shows `value` (a token, a key) anywhere in a line, wherever it turns up: a
    /// header of a name nobody declared, a body, an error. Values shorter than four bytes
    /// are redacted by their header's or parameter's name only.
    pub fn secret_value(self, value: &str) -> Self {
        let value = value.to_owned();
        self.edit(|i| {
            if value.len() >= MIN_SECRET_VALUE && !i.values.contains(&value) {
                i.values.push(value);
                i.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
            }
        })
    }

    /// Whether the header (or metadata key) `name` is never shown.
    pub fn is_secret_header(&self, name: &str) -> bool {
        self.inner
            .headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
    }

    /// Writes `text`, one line per line of it: secret values replaced by [`REDACTED`], and
    /// control characters (an agent's escape sequences among them) escaped as `\u{1b}`, so
    /// nothing written can steer a terminal.
    pub fn line(&self, text: &str) {
        self.lines("", text);
    }

    /// [`line`](Self::line), each line of `text` after `prefix` (`"JSON-RPC ← "`).
    pub fn lines(&self, prefix: &str, text: &str) {
        let mut text = text.to_owned();
        for value in &self.inner.values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), REDACTED);
            }
        }
        for line in text.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            (self.inner.sink)(&format!("{prefix}{}", escape_controls(line)));
        }
    }

    /// `name: value` for a header as sent or received: the value [`REDACTED`] when the name
    /// is secret or the value is marked sensitive, else its text (bytes that are not UTF-8
    /// shown as escapes).
    pub fn header(&self, name: &str, value: &[u8], sensitive: bool) -> String {
        if sensitive || self.is_secret_header(name) {
            format!("{name}: {REDACTED}")
        } else {
            format!("{name}: {}", String::from_utf8_lossy(value))
        }
    }

    /// `url` with the value of each secret query parameter [`REDACTED`] (the rest of the URL
    /// as it is).
    pub fn url(&self, url: &str) -> String {
        let Some((base, rest)) = url.split_once('?') else {
            return url.to_owned();
        };
        let (query, fragment) = match rest.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (rest, None),
        };
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| {
                let name = pair.split_once('=').map_or(pair, |(n, _)| n);
                let decoded = percent_decode(name);
                if self.inner.query.contains(&decoded) {
                    format!("{name}={REDACTED}")
                } else {
                    pair.to_owned()
                }
            })
            .collect();
        let mut out = format!("{base}?{}", pairs.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
        out
    }
}

#[cfg(test)]
mod tests;

/// `s` with control characters (but tab) written as `\u{…}` escapes.
fn escape_controls(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return s.to_owned();
    }
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `s` with `%XX` escapes and `+` decoded (a query parameter's name, as a server reads it).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
