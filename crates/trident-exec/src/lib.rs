//! Any program as an A2A agent: [`Exec`] runs an external command for each task turn and turns
//! the JSON lines it prints into task events.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use trident_exec::{Exec, ExecOptions};
//!
//! let exec = Exec::new(
//!     ExecOptions::new("examples/agents/echo.py")
//!         .timeout(Duration::from_secs(300))
//!         .max_processes(8),
//! );
//! let engine = trident_engine::Engine::builder(Arc::new(exec)).build();
//! # drop(engine);
//! ```
//!
//! # The protocol
//!
//! **One process per task turn.** For every message that starts a task or continues an
//! interrupted one, Trident runs `sh -c CMD` (so `CMD` may hold arguments and pipes) in the
//! server's working directory, with the server's environment plus `A2A_TASK_ID`,
//! `A2A_CONTEXT_ID` and `A2A_TENANT` (may be empty). The program runs in a process group of its
//! own.
//!
//! **stdin**: exactly one JSON line, then end of file:
//!
//! ```text
//! {"taskId":"…","contextId":"…","message":{…},"task":{…} or null,"metadata":{…} or null,"text":"…"}
//! ```
//!
//! The fields come in this order, compact, and `text` is always last, so even a line-oriented
//! tool can pull it out with a greedy match on `"text":"` (as `examples/agents/upper.sh` does).
//!
//! - `text`: the text parts of the user's message joined by newlines;
//! - `message`: the user's message (A2A v1.0 ProtoJSON);
//! - `task`: the task as it was before this turn (ProtoJSON), `null` for a new task;
//! - `metadata`: the request's metadata object, or `null`.
//!
//! **stdout**: one JSON object per line, each an event named by its `type`. Blank lines are
//! ignored. Every event that carries a message or content takes either `text` (one text part)
//! or `parts` (an array of ProtoJSON `Part`s), not both.
//!
//! | line | effect |
//! | --- | --- |
//! | `{"type":"status","state":STATE,"text":"…"}` | status change; `text`/`parts` optional (the agent's status message) |
//! | `{"type":STATE,"text":"…"}` | shorthand for the line above |
//! | `{"type":"artifact","id":"a1","name":"…","description":"…","text":"…","append":false,"last":true}` | an artifact, or a chunk of one; `id` and `text`/`parts` required, `name`/`description` optional, `append` defaults to `false`, `last` to `true` |
//! | `{"type":"reply","text":"…"}` | answer with a direct message and no task: only as the first and only event of a new task's turn |
//!
//! `STATE` is one of `working`, `input-required`, `auth-required`, `completed`, `failed`,
//! `rejected`. `canceled` is refused: canceling is the client's (`CancelTask`).
//!
//! Anything else (not JSON, not an object, an unknown `type` or field, a field of the wrong
//! type, a line over 1 MiB, an event the task refuses such as one after its final state) ends
//! the turn: the process group is killed and the task fails with a message naming the stdout
//! line number and the problem.
//!
//! **stderr** is captured; its last 4 KiB go into the failure message when the program fails.
//!
//! **Exit.** After stdout closes, Trident waits for the program to exit:
//!
//! - status 0: the turn ends. A task the program left `working` is failed by the engine ("the
//!   agent finished without a final state"); a program that printed nothing at all gets the
//!   caller an `InvalidAgentResponse` error.
//! - non-zero status or killed by a signal: the task fails with the status and the stderr tail
//!   (ignored if the task already reached a final state).
//!
//! **Cancel.** When the client cancels the task (it is `canceled` at once), the process group
//! gets SIGKILL and the shell is reaped. The same happens when the optional turn timeout
//! passes (the task fails with "timed out after …") and when the turn is dropped.
//!
//! **Failures** of any kind (protocol error, non-zero exit, timeout, the program cannot be
//! started) end the task `failed` with the explanation as its status message — also when the
//! program failed before printing any event, in which case the task is created failed.
//!
//! A killed program's own children are in its process group and die with it; the shell is
//! reaped here, but a program `sh` forked is re-parented to PID 1 on the kill, so containers
//! need an init that reaps orphans (`docker run --init`).
//!
//! **Pool.** [`ExecOptions::max_processes`] bounds how many programs run at once; turns beyond
//! it wait (the timeout starts when the program starts). Unbounded by default.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::ChildStdout;
use tokio::sync::Semaphore;
use trident_core::{A2aError, AgentExecutor, EventSink, RequestContext};

mod process;
mod protocol;

use process::Proc;
use protocol::{Event, MAX_LINE};

/// How an [`Exec`] runs its program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOptions {
    /// The command, run as `sh -c COMMAND`.
    pub command: String,
    /// Kill the program and fail the task when a turn's program runs longer than this.
    pub timeout: Option<Duration>,
    /// At most this many programs run at once (turns beyond it wait). `None` or `0`: unbounded.
    pub max_processes: Option<usize>,
}

impl ExecOptions {
    /// Runs `command` with no timeout and no bound on concurrent processes.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            timeout: None,
            max_processes: None,
        }
    }

    /// Sets the turn timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Bounds the number of programs running at once (`0`: unbounded).
    pub fn max_processes(mut self, max: usize) -> Self {
        self.max_processes = Some(max);
        self
    }
}

/// An [`AgentExecutor`] that runs an external program per task turn (see the [crate
/// docs](crate) for the protocol).
#[derive(Debug, Clone)]
pub struct Exec {
    command: String,
    timeout: Option<Duration>,
    pool: Option<Arc<Semaphore>>,
}

impl Exec {
    /// An executor running the program described by `options`.
    pub fn new(options: ExecOptions) -> Self {
        Self {
            command: options.command,
            timeout: options.timeout,
            pool: options
                .max_processes
                .filter(|&n| n > 0)
                .map(|n| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS)))),
        }
    }

    /// The command run for each turn.
    pub fn command(&self) -> &str {
        &self.command
    }
}

impl From<ExecOptions> for Exec {
    fn from(options: ExecOptions) -> Self {
        Self::new(options)
    }
}

/// Why a turn's program did not run to its exit.
enum Failure {
    /// Stdout broke the protocol: line number and problem.
    Protocol(usize, String),
    /// Reading stdout or waiting for the program failed.
    Io(String),
}

enum Outcome {
    Cancelled,
    TimedOut(Duration),
    Exited(ExitStatus),
    Failed(Failure),
}

#[async_trait::async_trait]
impl AgentExecutor for Exec {
    async fn execute(&self, ctx: RequestContext, sink: EventSink) -> Result<(), A2aError> {
        let _permit = match &self.pool {
            Some(pool) => tokio::select! {
                biased;
                () = ctx.cancelled() => return Ok(()),
                permit = pool.clone().acquire_owned() => Some(
                    permit.map_err(|_| A2aError::internal("the process pool is closed"))?,
                ),
            },
            None => None,
        };
        if ctx.is_cancelled() {
            return Ok(());
        }
        let replied = AtomicBool::new(false);
        let request = match protocol::request_line(&ctx) {
            Ok(r) => r,
            Err(e) => {
                return fail(
                    &sink,
                    &replied,
                    format!("could not encode the request: {e}"),
                )
                .await;
            }
        };
        let mut proc = match Proc::spawn(&self.command, &ctx) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(command = %self.command, error = %e, "could not start the agent program");
                return fail(
                    &sink,
                    &replied,
                    format!("could not start the agent program: {e}"),
                )
                .await;
            }
        };
        let outcome = {
            let stdin = proc.stdin();
            let stdout = proc.stdout();
            let turn = async {
                // Feed stdin while reading stdout, but stop feeding once stdout ends (a
                // program that never reads its stdin must not hold the turn).
                let feed = Proc::feed(stdin, &request);
                let pumping = pump(stdout, &sink, &replied);
                tokio::pin!(feed, pumping);
                let mut fed = false;
                let pumped = loop {
                    tokio::select! {
                        () = &mut feed, if !fed => fed = true,
                        r = &mut pumping => break r,
                    }
                };
                if let Err(f) = pumped {
                    return Outcome::Failed(f);
                }
                match proc.wait().await {
                    Ok(status) => Outcome::Exited(status),
                    Err(e) => {
                        Outcome::Failed(Failure::Io(format!("waiting for the agent program: {e}")))
                    }
                }
            };
            let deadline = async {
                match self.timeout {
                    Some(d) => {
                        tokio::time::sleep(d).await;
                        d
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = ctx.cancelled() => Outcome::Cancelled,
                d = deadline => Outcome::TimedOut(d),
                outcome = turn => outcome,
            }
        };
        let text = match outcome {
            Outcome::Cancelled => {
                proc.kill().await;
                return Ok(());
            }
            Outcome::Exited(status) if status.success() => return Ok(()),
            Outcome::Exited(status) => {
                let stderr = proc.stderr_tail().await;
                let stderr = if stderr.is_empty() {
                    "(no stderr output)".to_owned()
                } else {
                    format!("stderr:\n{stderr}")
                };
                format!("the agent program {}; {stderr}", describe(status))
            }
            Outcome::TimedOut(d) => {
                proc.kill().await;
                format!("the agent program timed out after {d:?}")
            }
            Outcome::Failed(Failure::Protocol(line, problem)) => {
                proc.kill().await;
                format!("the agent program broke the protocol on stdout line {line}: {problem}")
            }
            Outcome::Failed(Failure::Io(problem)) => {
                proc.kill().await;
                problem
            }
        };
        fail(&sink, &replied, text).await
    }
}

/// Ends the turn failed: the task (created if need be) becomes `FAILED` with `text`, unless the
/// turn already replied or the task is already final; the error is for the engine either way.
async fn fail(sink: &EventSink, replied: &AtomicBool, text: String) -> Result<(), A2aError> {
    if !replied.load(Ordering::Acquire)
        && let Err(e) = sink.fail(text.clone()).await
    {
        tracing::debug!(error = %e, "could not mark the task failed");
    }
    Err(A2aError::internal(text))
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => format!("ended with {status}"),
    }
}

/// At most this many bytes of an offending line are quoted in an error.
const QUOTE: usize = 200;

fn quote(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}

/// Reads event lines until stdout closes, publishing each.
async fn pump(
    stdout: Option<BufReader<ChildStdout>>,
    sink: &EventSink,
    replied: &AtomicBool,
) -> Result<(), Failure> {
    let Some(mut reader) = stdout else {
        return Err(Failure::Io("the agent program has no stdout".to_owned()));
    };
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| Failure::Io(format!("reading the agent program's stdout: {e}")))?;
        if read == 0 {
            return Ok(());
        }
        number += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        } else if line.len() > MAX_LINE {
            return Err(Failure::Protocol(
                number,
                format!("the line is longer than {MAX_LINE} bytes"),
            ));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if replied.load(Ordering::Acquire) {
            return Err(Failure::Protocol(
                number,
                format!("nothing may follow a reply: {}", quote(&line)),
            ));
        }
        let event = protocol::parse_event(&line)
            .map_err(|problem| Failure::Protocol(number, format!("{problem}: {}", quote(&line))))?;
        publish(sink, event, replied).await.map_err(|e| {
            Failure::Protocol(number, format!("the event was refused: {}", e.message()))
        })?;
    }
}

/// Hands one event to the engine.
async fn publish(sink: &EventSink, event: Event, replied: &AtomicBool) -> Result<(), A2aError> {
    match event {
        Event::Status { state, content } => {
            let message = content.map(|c| {
                let mut m = sink.message("");
                m.parts = c.into_parts();
                m
            });
            sink.status(state, message).await
        }
        Event::Artifact {
            artifact,
            append,
            last,
        } => sink.artifact_chunk(artifact, append, last).await,
        Event::Reply { content } => {
            let mut m = sink.message("");
            m.parts = content.into_parts();
            m.task_id.clear();
            sink.reply(m).await?;
            replied.store(true, Ordering::Release);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
