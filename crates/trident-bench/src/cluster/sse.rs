//! Reading an SSE stream of the demo agent's `stream N 0` task and checking every event.

use std::time::Instant;

/// One SSE event as parsed.
#[derive(Debug)]
pub(super) struct SseEvent<'a> {
    /// Its `id:`.
    id: Option<u64>,
    /// `event: error`.
    error: bool,
    /// Its `data:` lines, joined with `\n`.
    data: &'a [u8],
}

/// An SSE parser across body frames (lines end with `\n`; a trailing `\r` is dropped).
#[derive(Default)]
pub(super) struct SseParser {
    carry: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    id: Option<u64>,
    bad_id: bool,
    error: bool,
}

impl SseParser {
    /// Feeds body bytes; `on_event` gets every event they complete.
    pub(super) fn feed(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(nl);
            rest = &tail[1..];
            if self.carry.is_empty() {
                self.line(line, &mut on_event)?;
            } else {
                let mut whole = std::mem::take(&mut self.carry);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event)?;
                whole.clear();
                self.carry = whole;
            }
        }
        self.carry.extend_from_slice(rest);
        Ok(())
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            let id = self.id.take();
            if self.bad_id {
                return Err("an event id that is not a sequence number".to_owned());
            }
            if self.has_data || self.error {
                on_event(SseEvent {
                    id,
                    error: self.error,
                    data: &self.data,
                })?;
            }
            self.data.clear();
            self.has_data = false;
            self.error = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"id" => {
                self.id = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                self.bad_id = self.id.is_none();
            }
            b"event" => self.error = value == b"error",
            _ => {}
        }
        Ok(())
    }

    /// The stream ended: nothing may be left half-read.
    pub(super) fn finish(&self) -> Result<(), String> {
        if self.carry.is_empty() && !self.has_data {
            Ok(())
        } else {
            Err("the stream ended in the middle of an event".to_owned())
        }
    }
}

/// What a stream of the demo agent's `stream N 0` task must deliver, checked as it arrives:
/// first the task (seq `s`: 1 for a new task's stream, any for a subscription's snapshot),
/// then every sequence number after `s` once, in order, each the event it must be (seq 2
/// `WORKING`, seq `i + 3` chunk `i`, seq N + 3 `COMPLETED`), and nothing after `COMPLETED`.
#[derive(Debug)]
pub(super) struct Check {
    chunks: usize,
    /// The task this stream must be about (a subscription's).
    of_task: Option<String>,
    pub(super) task_id: Option<String>,
    /// The first event's sequence number (the task's snapshot).
    pub(super) first_seq: u64,
    next: Option<u64>,
    pub(super) events: u64,
    completed: bool,
    /// Arrival per sequence number, when timed.
    pub(super) arrivals: Option<Vec<Option<Instant>>>,
    pub(super) first_arrival: Option<Instant>,
}

impl Check {
    pub(super) fn new(chunks: usize) -> Self {
        Self {
            chunks,
            of_task: None,
            task_id: None,
            first_seq: 0,
            next: None,
            events: 0,
            completed: false,
            arrivals: None,
            first_arrival: None,
        }
    }

    /// Records each event's arrival.
    pub(super) fn timed(mut self) -> Self {
        self.arrivals = Some(vec![None; self.last_seq() as usize + 1]);
        self
    }

    /// The stream must be about `task`.
    pub(super) fn of_task(mut self, task: String) -> Self {
        self.of_task = Some(task);
        self
    }

    /// `COMPLETED`'s sequence number.
    pub(super) fn last_seq(&self) -> u64 {
        self.chunks as u64 + 3
    }

    pub(super) fn event(&mut self, event: SseEvent<'_>, now: Instant) -> Result<(), String> {
        let data = event.data;
        if event.error {
            return Err(format!("error event: {}", String::from_utf8_lossy(data)));
        }
        let seq = event
            .id
            .ok_or_else(|| format!("an event without an id: {}", String::from_utf8_lossy(data)))?;
        if self.completed {
            return Err(format!("event {seq} after COMPLETED"));
        }
        let last = self.last_seq();
        match self.next {
            None => {
                let id = task_id_of(data)?;
                if let Some(of) = &self.of_task
                    && *of != id
                {
                    return Err(format!("a stream of task {id} instead of {of}"));
                }
                if seq == 0 || seq > last {
                    return Err(format!("the task's snapshot at seq {seq} (1..={last})"));
                }
                self.task_id = Some(id);
                self.first_seq = seq;
                self.first_arrival = Some(now);
                self.completed = seq == last;
            }
            Some(next) if seq != next => {
                return Err(format!(
                    "event {seq} where {next} was due ({})",
                    if seq < next {
                        "a repeated event"
                    } else {
                        "events missing"
                    }
                ));
            }
            Some(_) => self.check_event(seq, data)?,
        }
        self.next = Some(seq + 1);
        self.events += 1;
        if let Some(slot) = self.arrivals.as_mut().and_then(|a| a.get_mut(seq as usize)) {
            *slot = Some(now);
        }
        Ok(())
    }

    /// Event `seq` (after the first) must be the one the demo agent makes there.
    fn check_event(&mut self, seq: u64, data: &[u8]) -> Result<(), String> {
        let last = self.last_seq();
        let status = |state: &[u8]| {
            data.starts_with(b"{\"statusUpdate\"")
                && find(data, b"\"state\":\"TASK_STATE_").is_some_and(|i| {
                    data[i + b"\"state\":\"TASK_STATE_".len()..].starts_with(state)
                })
        };
        let ok = if seq == 2 {
            status(b"WORKING\"")
        } else if seq == last {
            self.completed = status(b"COMPLETED\"");
            self.completed
        } else if (3..last).contains(&seq) {
            data.starts_with(b"{\"artifactUpdate\"") && chunk_index(data) == Some(seq - 3)
        } else {
            false
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "event {seq} is not what the task has there: {}",
                String::from_utf8_lossy(&data[..data.len().min(300)])
            ))
        }
    }

    /// The stream ended: it must have reached `COMPLETED`.
    pub(super) fn finish(&self) -> Result<(), String> {
        if self.completed {
            Ok(())
        } else {
            Err(format!(
                "the stream ended after {} events, before COMPLETED (seq {})",
                self.events,
                self.last_seq()
            ))
        }
    }
}

/// The task id of a stream's first event, `{"task":{"id":…}}`.
fn task_id_of(data: &[u8]) -> Result<String, String> {
    let value: serde_json::Value =
        serde_json::from_slice(data).map_err(|e| format!("the first event is not JSON ({e})"))?;
    value
        .get("task")
        .and_then(|t| t.get("id"))
        .and_then(|id| id.as_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the stream did not start with the task: {}",
                String::from_utf8_lossy(&data[..data.len().min(300)])
            )
        })
}

/// `i` of a chunk's text `chunk i of …`.
fn chunk_index(data: &[u8]) -> Option<u64> {
    const TEXT: &[u8] = b"\"text\":\"chunk ";
    let at = find(data, TEXT)? + TEXT.len();
    let digits = data[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&data[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE text of the demo agent's `stream N 0` task, seqs `from..=N + 3` (`from` > 1
    /// starts with a subscription's snapshot).
    fn stream_text(chunks: u64, from: u64) -> String {
        let mut out =
            format!("data: {{\"task\":{{\"id\":\"t1\",\"status\":{{}}}}}}\nid: {from}\n\n");
        for seq in from + 1..=chunks + 3 {
            let data = match seq {
                2 => r#"{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_WORKING"}}}"#
                    .to_owned(),
                s if s == chunks + 3 => {
                    r#"{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_COMPLETED"}}}"#
                        .to_owned()
                }
                s => format!(
                    r#"{{"artifactUpdate":{{"taskId":"t1","artifact":{{"artifactId":"stream","parts":[{{"text":"chunk {} of stream {chunks} 0"}}]}}}}}}"#,
                    s - 3
                ),
            };
            out.push_str(&format!("data: {data}\nid: {seq}\n\n"));
        }
        out
    }

    /// Feeds `text` to a fresh check in frames of `frame` bytes.
    fn run_check(check: &mut Check, text: &str, frame: usize) -> Result<(), String> {
        let mut parser = SseParser::default();
        let now = Instant::now();
        for piece in text.as_bytes().chunks(frame) {
            parser.feed(piece, |e| check.event(e, now))?;
        }
        parser.finish()?;
        check.finish()
    }

    #[test]
    fn a_whole_stream_passes_in_frames_of_any_size() {
        let text = stream_text(20, 1);
        for frame in [1, 7, 64, text.len()] {
            let mut check = Check::new(20).timed();
            run_check(&mut check, &text, frame).expect("a whole stream");
            assert_eq!(check.events, 23);
            assert_eq!(check.task_id.as_deref(), Some("t1"));
            assert_eq!(check.first_seq, 1);
            let arrivals = check.arrivals.as_ref().expect("timed");
            assert!(arrivals[1..].iter().all(Option::is_some), "every seq timed");
        }
        // Keep-alive comments and `\r\n` line ends change nothing.
        let text = format!(":\n\n{}", stream_text(3, 1).replace('\n', "\r\n"));
        run_check(&mut Check::new(3), &text, 5).expect("comments and CRLF");
    }

    #[test]
    fn a_subscription_starts_at_its_snapshot() {
        let mut check = Check::new(10).of_task("t1".to_owned());
        run_check(&mut check, &stream_text(10, 6), 13).expect("from the snapshot");
        assert_eq!((check.first_seq, check.events), (6, 8));
        let mut other = Check::new(10).of_task("t2".to_owned());
        let e = run_check(&mut other, &stream_text(10, 6), 13).expect_err("another task");
        assert!(e.contains("instead of t2"), "{e}");
    }

    #[test]
    fn missing_repeated_wrong_and_extra_events_are_errors() {
        let good = stream_text(5, 1);
        let event = |seq: u64| {
            let start = good
                .find(&format!("id: {}\n\n", seq - 1))
                .expect("previous")
                + format!("id: {}\n\n", seq - 1).len();
            let end = good.find(&format!("id: {seq}\n\n")).expect("this")
                + format!("id: {seq}\n\n").len();
            good[start..end].to_owned()
        };
        let cases = [
            ("missing", good.replace(&event(4), ""), "events missing"),
            (
                "repeated",
                good.replace(&event(4), &format!("{}{}", event(4), event(4))),
                "a repeated event",
            ),
            (
                "wrong chunk",
                good.replace("chunk 2 of", "chunk 3 of"),
                "not what the task has there",
            ),
            (
                "not completed",
                good.replace("TASK_STATE_COMPLETED", "TASK_STATE_FAILED"),
                "not what the task has there",
            ),
            (
                "after COMPLETED",
                format!("{good}data: {{}}\nid: 9\n\n"),
                "after COMPLETED",
            ),
            ("cut short", good.replace(&event(8), ""), "before COMPLETED"),
            (
                "cut mid-event",
                good[..good.len() - 3].to_owned(),
                "in the middle of an event",
            ),
            (
                "error event",
                format!(
                    "{}event: error\ndata: {{\"error\":1}}\n\n",
                    &good[..good.find("id: 2\n\n").expect("seq 2") + 7]
                ),
                "error event",
            ),
            ("no id", good.replace("id: 3\n", ""), "without an id"),
        ];
        for (name, text, expected) in cases {
            let e = run_check(&mut Check::new(5), &text, 11).expect_err(name);
            assert!(e.contains(expected), "{name}: {e}");
        }
    }
}
