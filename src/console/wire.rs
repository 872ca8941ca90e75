//! The wire view: what each API call exchanged with the agent, as the binding carried it.
//!
//! A call gets a [`WireLog`] whose [`sink`](WireLog::sink) becomes the client's wire tap (the
//! one `--debug` uses), so the lines are those the client commands show, credentials already
//! redacted: the card fetch, HTTP request and status lines and headers, JSON-RPC envelopes,
//! SSE lines, gRPC paths, metadata and statuses. A unary answer carries its lines in
//! `"wire"`; a stream sends each as a `{"wire": line}` item before the event it came with.
//!
//! Bounded: a call keeps at most [`MAX_LINES`] lines of at most [`MAX_LINE`] bytes each (a
//! longer line is cut, saying by how much); past the limit the lines are counted, not kept,
//! and one last line says how many were dropped.

use std::sync::{Arc, Mutex, PoisonError};

use crate::client::WireSink;

/// The most lines one call keeps.
pub(crate) const MAX_LINES: usize = 2_000;
/// The longest line kept whole, in bytes.
pub(crate) const MAX_LINE: usize = 16 * 1024;

/// One call's wire lines, shared by the tap (writing) and the answer (taking).
#[derive(Clone, Default)]
pub(crate) struct WireLog(Arc<Mutex<Lines>>);

#[derive(Default)]
struct Lines {
    kept: Vec<String>,
    /// How many were kept in all (taken or not), to stop at [`MAX_LINES`].
    total: usize,
    dropped: usize,
}

impl WireLog {
    /// The tap's receiver of lines.
    pub(crate) fn sink(&self) -> WireSink {
        let log = self.clone();
        WireSink(Arc::new(move |line: &str| log.push(line)))
    }

    fn push(&self, line: &str) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.total >= MAX_LINES {
            lines.dropped += 1;
            return;
        }
        lines.total += 1;
        lines.kept.push(cut(line));
    }

    /// The lines written since the last take, in order; the last take of a call that went
    /// over [`MAX_LINES`] ends with a line saying how many were not kept.
    pub(crate) fn take(&self, last: bool) -> Vec<String> {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut taken = std::mem::take(&mut lines.kept);
        if last && lines.dropped > 0 {
            taken.push(format!(
                "[{} more lines not kept: a call keeps {MAX_LINES}]",
                lines.dropped
            ));
            lines.dropped = 0;
        }
        taken
    }
}

/// `line`, cut to [`MAX_LINE`] bytes at a character boundary.
fn cut(line: &str) -> String {
    if line.len() <= MAX_LINE {
        return line.to_owned();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes more]", &line[..end], line.len() - end)
}
