//! CPU time of a process from `/proc` (Linux only).
//!
//! A process's CPU time is `utime + stime` (fields 14 and 15 of `/proc/<pid>/stat`, summed over
//! all its threads by the kernel), in clock ticks. The tick rate comes from `getconf CLK_TCK`
//! (100 when `getconf` is missing) and is checked once against `/proc/thread-self/schedstat`,
//! which counts a thread's run time in nanoseconds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Converts clock ticks into time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// Clock ticks per second (`CLK_TCK`).
    pub ticks_per_second: u64,
}

impl Clock {
    /// The tick rate from `getconf CLK_TCK`, or 100 (Linux's value on every common
    /// architecture) when it cannot be read.
    pub fn from_getconf() -> Self {
        let ticks = std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100);
        Self {
            ticks_per_second: ticks,
        }
    }

    /// `ticks` as a duration.
    pub fn duration(self, ticks: u64) -> Duration {
        Duration::from_secs_f64(ticks as f64 / self.ticks_per_second as f64)
    }

    /// Checks the tick rate by spinning this thread for about `spin` and comparing its tick
    /// count with its run time in nanoseconds from `/proc/thread-self/schedstat`. Returns the
    /// measured rate, or why it could not be measured.
    pub fn verify(self, spin: Duration) -> Result<f64, String> {
        let before = (thread_ticks()?, thread_runtime_ns()?);
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < spin {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let after = (thread_ticks()?, thread_runtime_ns()?);
        let ns = after.1.saturating_sub(before.1);
        if ns == 0 {
            return Err("schedstat did not advance".to_owned());
        }
        Ok((after.0 - before.0) as f64 / (ns as f64 / 1e9))
    }
}

/// `utime + stime` of process `pid`, in clock ticks.
pub fn process_ticks(pid: u32) -> Result<u64, String> {
    stat_ticks(&format!("/proc/{pid}/stat"))
}

/// `utime + stime` of every process whose command name (`/proc/<pid>/comm`) is `name`, by pid
/// (every `postgres` process of the machine, say). A process that ends while it is read is
/// left out.
pub fn named_process_ticks(name: &str) -> Result<BTreeMap<u32, u64>, String> {
    let dir = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    let mut out = BTreeMap::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            continue;
        };
        if comm.trim_end_matches('\n') != name {
            continue;
        }
        if let Ok(ticks) = process_ticks(pid) {
            out.insert(pid, ticks);
        }
    }
    Ok(out)
}

/// Ticks the processes of `after` spent since `before` (two readings of
/// [`named_process_ticks`]): a process started in between counts from zero; one that ended in
/// between is not counted (its time is lost to this figure).
pub fn ticks_since(before: &BTreeMap<u32, u64>, after: &BTreeMap<u32, u64>) -> u64 {
    after
        .iter()
        .map(|(pid, &t)| t.saturating_sub(before.get(pid).copied().unwrap_or(0)))
        .sum()
}

fn thread_ticks() -> Result<u64, String> {
    stat_ticks("/proc/thread-self/stat")
}

fn thread_runtime_ns() -> Result<u64, String> {
    let path = "/proc/thread-self/schedstat";
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{path}: unexpected contents {text:?}"))
}

fn stat_ticks(path: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    parse_stat_ticks(&text).ok_or_else(|| format!("{path}: unexpected contents {text:?}"))
}

/// `utime + stime` from the text of a `stat` file. The command name (field 2) is in
/// parentheses and may hold spaces, so fields are counted after the last `)`: there, field 3
/// (state) is the first, so utime (14) and stime (15) are the 12th and 13th.
fn parse_stat_ticks(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utime_and_stime_after_the_command_name() {
        let line = "1234 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(parse_stat_ticks(line), Some(300));
        assert!(process_ticks(std::process::id()).is_ok());
    }

    #[test]
    fn named_processes_count_from_their_first_reading_or_from_zero() {
        let before = BTreeMap::from([(10, 100), (11, 50), (12, 7)]);
        // 10 ran 20 ticks, 11 ended, 13 started and ran 5.
        let after = BTreeMap::from([(10, 120), (12, 7), (13, 5)]);
        assert_eq!(ticks_since(&before, &after), 25);
        let me = std::fs::read_to_string("/proc/self/comm").expect("/proc/self/comm");
        let found = named_process_ticks(me.trim_end()).expect("/proc");
        assert!(found.contains_key(&std::process::id()), "{found:?}");
    }
}
