//! The scan every JSON request body goes through before it is decoded ([`check_json`]), on
//! both JSON bindings and in both protocol generations: one pass over the bytes, allocating
//! nothing for an ordinary body (it holds the keys of the objects open where it is), that
//! refuses
//!
//! - more than [`MAX_JSON_VALUES`] values or nesting deeper than [`MAX_JSON_DEPTH`],
//! - a body whose decoding would take more memory than [`JsonLimits`] allow for its size
//!   (each value counted as [`JSON_VALUE_COST`] bytes beside the body's own bytes, an array's
//!   element other than an object or array as half that),
//! - an object that has the same key twice (after unescaping: `"a"` and `"\u0061"` are the
//!   same key), at any level — a JSON parser keeps one of them silently, so what the agent
//!   reads would not be what the client meant (the JSON-RPC envelope's own members are
//!   refused when repeated by its derived decoder; this is the same rule for what it carries).
//!
//! Each is [`ErrorKind::InvalidParams`]. Malformed JSON passes: the parser reports it properly.

use crate::{A2aError, ErrorKind, MAX_JSON_DEPTH, MAX_JSON_VALUES};

/// Bytes each JSON value (an object, an array, an element of either) is counted as when the
/// scan estimates what decoding a body costs: what the decoded form takes per value at most,
/// allocator slack included (a `google.protobuf.Struct` member takes up to ~280 bytes while
/// its map grows, a `Part` some 280 bytes for two values).
pub const JSON_VALUE_COST: usize = 288;

/// Bytes an element of an array is counted as, when it is not itself an object or array: half
/// of [`JSON_VALUE_COST`]. A `google.protobuf.ListValue` element takes at most ~140 bytes while
/// its vector grows (measured for numbers and short strings), so an embedding of 4 096 numbers
/// in a `data` part (37 KB) fits the default budget.
pub const JSON_ELEMENT_COST: usize = JSON_VALUE_COST / 2;

/// The default [`JsonLimits::memory_slack`]: 1 MiB.
pub const JSON_MEMORY_SLACK: usize = 1 << 20;

/// How much memory decoding one JSON request body may take, relative to its size. A body is
/// refused before it is decoded when its values, counted as [`JSON_VALUE_COST`] bytes each,
/// plus its own bytes (its strings, decoded, take no more) exceed
/// `memory_factor × its size + memory_slack`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonLimits {
    /// Multiple of the body's size decoding it may take (default 4; `0`: no bound but
    /// [`MAX_JSON_VALUES`]).
    pub memory_factor: usize,
    /// Bytes decoding any body may take beside `memory_factor` times its size: what small
    /// requests with many values need (default [`JSON_MEMORY_SLACK`], 1 MiB).
    pub memory_slack: usize,
}

impl Default for JsonLimits {
    fn default() -> Self {
        Self {
            memory_factor: 4,
            memory_slack: JSON_MEMORY_SLACK,
        }
    }
}

impl JsonLimits {
    /// No bound on decoding but [`MAX_JSON_VALUES`] and [`MAX_JSON_DEPTH`].
    pub const UNBOUNDED: JsonLimits = JsonLimits {
        memory_factor: 0,
        memory_slack: 0,
    };

    /// The bytes decoding a body of `len` bytes may take (`None`: unbounded).
    pub fn budget(&self, len: usize) -> Option<usize> {
        (self.memory_factor > 0).then(|| {
            self.memory_factor
                .saturating_mul(len)
                .saturating_add(self.memory_slack)
        })
    }
}

/// Checks a JSON request body before it is decoded, in one pass over its bytes: more than
/// [`MAX_JSON_VALUES`] values, nesting deeper than [`MAX_JSON_DEPTH`], values that would take
/// more memory decoded than `limits` allow for its size, or an object with a key twice (after
/// unescaping) is an `Err` of [`ErrorKind::InvalidParams`] naming the bound, or the key and
/// where it is (ErrorInfo `duplicateKey`, `path`). Malformed JSON passes: the parser reports
/// it properly.
pub fn check_json(json: &[u8], limits: JsonLimits) -> Result<(), A2aError> {
    let budget = limits.budget(json.len());
    // The most values the budget leaves room for, counted as JSON_VALUE_COST each; the scan
    // weighs values in halves (an array's scalar element is one half, any other value two).
    let max_values = budget.map(|b| b.saturating_sub(json.len()) / JSON_VALUE_COST);
    let max_halves = max_values.map_or(usize::MAX, |v| v.saturating_mul(2));
    match scan(json, MAX_JSON_VALUES, max_halves) {
        Ok(_) => Ok(()),
        Err(Refusal::Budget) => {
            let max_values = max_values.unwrap_or(usize::MAX);
            let JsonLimits {
                memory_factor: factor,
                memory_slack: slack,
            } = limits;
            Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!(
                    "the request holds more JSON values than a body of {} bytes may (at most \
                     {max_values}: decoding may take {factor} times the body's size and \
                     {slack} bytes, a value counted as {JSON_VALUE_COST}, an array's element \
                     as {JSON_ELEMENT_COST})",
                    json.len()
                ),
            )
            .with_meta("maxValues", max_values.to_string())
            .with_meta("memoryFactor", factor.to_string()))
        }
        Err(Refusal::Values) => Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!("the request holds more than {MAX_JSON_VALUES} JSON values"),
        )
        .with_meta("maxValues", MAX_JSON_VALUES.to_string())),
        Err(Refusal::Depth) => Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!("the request nests JSON deeper than {MAX_JSON_DEPTH} levels"),
        )
        .with_meta("maxDepth", MAX_JSON_DEPTH.to_string())),
        Err(Refusal::Duplicate { key, path }) => {
            let at = if path.is_empty() {
                "at the top level".to_owned()
            } else {
                format!("at {path}")
            };
            Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!("duplicate key {key:?} in the JSON object {at}"),
            )
            .with_meta("duplicateKey", key)
            .with_meta("path", path))
        }
    }
}

/// Why [`scan`] stopped.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// More than the values allowed.
    Values,
    /// Values weighing more than the memory budget allows.
    Budget,
    /// Deeper than [`MAX_JSON_DEPTH`].
    Depth,
    /// `key` twice in the object at `path` (keys and array indices joined as in
    /// `message.parts[0].metadata`; empty: the top level).
    Duplicate { key: String, path: String },
}

/// A key of an open object: where its text (between the quotes) lies in the body, and whether
/// it has escapes.
#[derive(Clone, Copy, Default)]
struct Key {
    start: usize,
    end: usize,
    escaped: bool,
}

/// An open object or array.
#[derive(Clone, Copy, Default)]
struct Frame {
    /// An object (else an array).
    object: bool,
    /// Where this object's keys start in the key stack.
    keys: usize,
    /// The last key read (object) or the index of the element reached (array).
    key: Option<Key>,
    index: usize,
}

/// One pass over `json`: counts values (objects, arrays and their elements outside strings)
/// up to `max_values` and weighs them in halves up to `max_halves` (an array's element that is
/// not an object or array weighs one, any other value two), nesting up to [`MAX_JSON_DEPTH`],
/// and checks each object's keys for a repeat when it closes; `Ok` has the values and the
/// deepest nesting. Malformed JSON is scanned as far as it goes.
fn scan(json: &[u8], max_values: usize, max_halves: usize) -> Result<(usize, usize), Refusal> {
    let mut values = 0usize;
    let mut halves = 0usize;
    let mut deepest = 0usize;
    let mut frames: Stack<Frame, 16> = Stack::new();
    // The keys of every open object, innermost last.
    let mut keys: Stack<Key, 32> = Stack::new();
    // The next string is an object's key: after `{` or `,` in an object.
    let mut expect_key = false;
    let mut i = 0;
    let mut count = |values: &mut usize, weight: usize| {
        *values += 1;
        halves = halves.saturating_add(weight);
        if *values > max_values {
            Err(Refusal::Values)
        } else if halves > max_halves {
            Err(Refusal::Budget)
        } else {
            Ok(())
        }
    };
    while let Some(&b) = json.get(i) {
        match b {
            b'"' => {
                // Skip the string: up to the next quote not escaped by a backslash.
                let start = i + 1;
                let mut escaped = false;
                i += 1;
                while let Some(&c) = json.get(i) {
                    match c {
                        b'\\' => {
                            escaped = true;
                            i += 2;
                        }
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                if expect_key && let Some(frame) = frames.last_mut() {
                    let key = Key {
                        start,
                        end: i.min(json.len()),
                        escaped,
                    };
                    frame.key = Some(key);
                    keys.push(key);
                }
                expect_key = false;
            }
            b'{' | b'[' => {
                // An array's element that is an object or array was weighed one half at its
                // comma (or not at all, the first): the other half here.
                let weight = match frames.items().last() {
                    Some(f) if !f.object && f.index > 0 => 1,
                    _ => 2,
                };
                count(&mut values, weight)?;
                if frames.len() >= MAX_JSON_DEPTH {
                    return Err(Refusal::Depth);
                }
                frames.push(Frame {
                    object: b == b'{',
                    keys: keys.len(),
                    key: None,
                    index: 0,
                });
                deepest = deepest.max(frames.len());
                expect_key = b == b'{';
            }
            b'}' | b']' => {
                if let Some(frame) = frames.pop()
                    && frame.object
                {
                    let own = keys.items_mut().get_mut(frame.keys..).unwrap_or_default();
                    if let Some(key) = repeated(json, own) {
                        return Err(Refusal::Duplicate {
                            key: shown(json, key),
                            path: path(json, frames.items()),
                        });
                    }
                    keys.truncate(frame.keys);
                }
                expect_key = false;
            }
            b',' => {
                let weight = match frames.items().last() {
                    Some(f) if !f.object => 1,
                    _ => 2,
                };
                count(&mut values, weight)?;
                match frames.last_mut() {
                    Some(f) if f.object => expect_key = true,
                    Some(f) => f.index += 1,
                    None => {}
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok((values, deepest))
}

/// A stack that holds its first `N` items inline and moves them to the heap past that: the
/// scan of an ordinary body allocates nothing.
struct Stack<T, const N: usize> {
    inline: [T; N],
    heap: Vec<T>,
    on_heap: bool,
    len: usize,
}

impl<T: Copy + Default, const N: usize> Stack<T, N> {
    fn new() -> Self {
        Self {
            inline: [T::default(); N],
            heap: Vec::new(),
            on_heap: false,
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn items(&self) -> &[T] {
        if self.on_heap {
            &self.heap
        } else {
            self.inline.get(..self.len).unwrap_or_default()
        }
    }

    fn items_mut(&mut self) -> &mut [T] {
        if self.on_heap {
            &mut self.heap
        } else {
            self.inline.get_mut(..self.len).unwrap_or_default()
        }
    }

    fn last_mut(&mut self) -> Option<&mut T> {
        self.items_mut().last_mut()
    }

    fn push(&mut self, item: T) {
        if !self.on_heap {
            if let Some(slot) = self.inline.get_mut(self.len) {
                *slot = item;
                self.len += 1;
                return;
            }
            self.heap.reserve(2 * N);
            self.heap.extend_from_slice(&self.inline);
            self.on_heap = true;
        }
        self.heap.push(item);
        self.len += 1;
    }

    fn pop(&mut self) -> Option<T> {
        let last = self.items().last().copied()?;
        self.truncate(self.len - 1);
        Some(last)
    }

    fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
            if self.on_heap {
                self.heap.truncate(len);
            }
        }
    }
}

/// Objects with at most this many keys are checked pair by pair; larger ones are sorted.
const PAIRWISE: usize = 16;

/// A key that `keys` (one object's) holds twice, if any (the later of the two). May reorder
/// them.
fn repeated(json: &[u8], keys: &mut [Key]) -> Option<Key> {
    if keys.len() <= PAIRWISE {
        for (i, a) in keys.iter().enumerate() {
            for b in keys.get(i + 1..).unwrap_or_default() {
                if same(json, a, b) {
                    return Some(*b);
                }
            }
        }
        return None;
    }
    keys.sort_unstable_by(|a, b| compare(json, a, b));
    keys.windows(2)
        .find(|w| compare(json, &w[0], &w[1]).is_eq())
        .map(|w| w[1])
}

/// Whether two keys are the same once unescaped.
fn same(json: &[u8], a: &Key, b: &Key) -> bool {
    if !a.escaped && !b.escaped {
        a.end.saturating_sub(a.start) == b.end.saturating_sub(b.start)
            && raw(json, a) == raw(json, b)
    } else {
        compare(json, a, b).is_eq()
    }
}

/// Orders keys by their unescaped bytes.
fn compare(json: &[u8], a: &Key, b: &Key) -> std::cmp::Ordering {
    let (ra, rb) = (raw(json, a), raw(json, b));
    if !a.escaped && !b.escaped {
        ra.cmp(rb)
    } else {
        Unescaped::new(ra).cmp(Unescaped::new(rb))
    }
}

fn raw<'a>(json: &'a [u8], key: &Key) -> &'a [u8] {
    json.get(key.start..key.end).unwrap_or_default()
}

/// At most this many bytes of a key are shown in an error.
const SHOWN: usize = 64;

/// A key as text for an error message, cut to [`SHOWN`] bytes.
fn shown(json: &[u8], key: Key) -> String {
    let bytes: Vec<u8> = Unescaped::new(raw(json, &key)).take(SHOWN + 1).collect();
    let mut text = String::from_utf8_lossy(bytes.get(..SHOWN).unwrap_or(&bytes)).into_owned();
    if bytes.len() > SHOWN {
        text.push('…');
    }
    text
}

/// Where the innermost of `frames` is: its keys and indices joined (`a.b[2].c`).
fn path(json: &[u8], frames: &[Frame]) -> String {
    let mut out = String::new();
    for f in frames {
        if f.object {
            if let Some(key) = f.key {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&shown(json, key));
            }
        } else {
            out.push_str(&format!("[{}]", f.index));
        }
    }
    out
}

/// The bytes a JSON string's text stands for: escapes decoded (`\u` escapes, surrogate pairs
/// included, as UTF-8). Malformed escapes decode to something consistent; the parser refuses
/// them anyway.
struct Unescaped<'a> {
    raw: &'a [u8],
    i: usize,
    pending: [u8; 4],
    pending_at: usize,
    pending_len: usize,
}

impl<'a> Unescaped<'a> {
    fn new(raw: &'a [u8]) -> Self {
        Self {
            raw,
            i: 0,
            pending: [0; 4],
            pending_at: 0,
            pending_len: 0,
        }
    }

    /// The four hex digits at `at` as a number.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.raw.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        u32::from_str_radix(text, 16).ok()
    }

    /// Decodes the escape at `self.i` (a backslash) and moves past it.
    fn escape(&mut self) -> char {
        let Some(&e) = self.raw.get(self.i + 1) else {
            self.i += 1;
            return '\\';
        };
        self.i += 2;
        match e {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let Some(unit) = self.hex4(self.i) else {
                    return char::REPLACEMENT_CHARACTER;
                };
                self.i += 4;
                let code = if (0xD800..0xDC00).contains(&unit)
                    && self.raw.get(self.i..self.i + 2) == Some(b"\\u")
                    && let Some(low) = self.hex4(self.i + 2)
                    && (0xDC00..0xE000).contains(&low)
                {
                    self.i += 6;
                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    unit
                };
                char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            other => char::from(other),
        }
    }
}

impl Iterator for Unescaped<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        if self.pending_at < self.pending_len {
            let b = self.pending.get(self.pending_at).copied();
            self.pending_at += 1;
            return b;
        }
        let &b = self.raw.get(self.i)?;
        if b != b'\\' {
            self.i += 1;
            return Some(b);
        }
        let c = self.escape();
        let len = c.encode_utf8(&mut self.pending).len();
        self.pending_len = len;
        self.pending_at = 1;
        self.pending.first().copied()
    }
}

#[cfg(test)]
mod tests;
