//! One running program: spawning it in its own process group, feeding stdin, keeping the tail
//! of stderr, and killing the whole group.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinHandle;
use trident_core::RequestContext;

/// How much of stderr is kept (the end of it).
pub(crate) const STDERR_TAIL: usize = 4096;

/// How long to wait, after the program exits, for the rest of its stderr (a background process
/// it left may hold the pipe open).
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// A spawned program. Dropping it kills the program's process group if it was not reaped.
pub(crate) struct Proc {
    child: Child,
    /// The process group (the shell's pid), while the shell is not reaped.
    group: Option<rustix::process::Pid>,
    stderr: Arc<Mutex<Tail>>,
    stderr_task: Option<JoinHandle<()>>,
}

impl Proc {
    /// Starts `sh -c command` for the turn in `ctx`, in a new process group.
    pub(crate) fn spawn(command: &str, ctx: &RequestContext) -> std::io::Result<Self> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("A2A_TASK_ID", &ctx.task_id)
            .env("A2A_CONTEXT_ID", &ctx.context_id)
            .env("A2A_TENANT", &ctx.tenant)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw);
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let stderr_task = child.stderr.take().map(|pipe| {
            let tail = stderr.clone();
            tokio::spawn(collect_tail(pipe, tail))
        });
        Ok(Self {
            child,
            group,
            stderr,
            stderr_task,
        })
    }

    /// Takes the stdout pipe (once).
    pub(crate) fn stdout(&mut self) -> Option<BufReader<ChildStdout>> {
        self.child.stdout.take().map(BufReader::new)
    }

    /// Writes `request` to stdin and closes it. Errors (the program exited or closed stdin
    /// without reading) are ignored: reading stdin is the program's business.
    pub(crate) async fn feed(stdin: Option<tokio::process::ChildStdin>, request: &[u8]) {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(request).await;
            let _ = stdin.shutdown().await;
        }
    }

    /// Takes the stdin pipe (once).
    pub(crate) fn stdin(&mut self) -> Option<tokio::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// Waits for the shell to exit and reaps it.
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.group = None;
        Ok(status)
    }

    /// SIGKILLs the process group and reaps the shell.
    pub(crate) async fn kill(&mut self) {
        self.kill_group();
        if let Err(e) = self.child.kill().await {
            tracing::debug!(error = %e, "killing the agent program");
        }
        self.group = None;
    }

    fn kill_group(&self) {
        if let Some(group) = self.group {
            // ESRCH (the group is gone already) is fine.
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }

    /// The last [`STDERR_TAIL`] bytes of stderr, once the pipe closed or after a short grace.
    pub(crate) async fn stderr_tail(&mut self) -> String {
        if let Some(task) = self.stderr_task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(STDERR_GRACE, task).await.is_err() {
                abort.abort();
            }
        }
        match self.stderr.lock() {
            Ok(t) => t.text(),
            Err(poisoned) => poisoned.into_inner().text(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // The shell is not reaped, so its pid (the group id) cannot have been reused.
        // `kill_on_drop` then kills and reaps the shell itself.
        self.kill_group();
        if let Some(task) = &self.stderr_task {
            task.abort();
        }
    }
}

/// The end of a byte stream.
#[derive(Default)]
pub(crate) struct Tail {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > STDERR_TAIL {
            let cut = self.bytes.len() - STDERR_TAIL;
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        let text = text.trim();
        if self.truncated {
            format!("…{text}")
        } else {
            text.to_owned()
        }
    }
}

async fn collect_tail(mut pipe: impl AsyncRead + Unpin, tail: Arc<Mutex<Tail>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => match tail.lock() {
                Ok(mut t) => t.push(&buf[..n]),
                Err(poisoned) => poisoned.into_inner().push(&buf[..n]),
            },
        }
    }
}
