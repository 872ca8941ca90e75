//! `trident chat` (a2a-cli SPEC §7.1, §8.1; row `A2ACLI_CHAT_001`) against a live `trident
//! serve --agent demo`: on a real terminal (a detached tmux session, keys sent and the screen
//! read back) over each binding, and without one (piped standard input).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{Run, TempDir, Trident, field, ok, stderr, stdout};

/// The bindings as `--transport` names them.
const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

async fn demo() -> Trident {
    Trident::serve(&["--agent", "demo", "--store", "memory"]).await
}

/// A tmux server of its own (its own socket) running one command in a detached session;
/// killed on drop. (Also used by `a2acli_tier3.rs`.)
pub(crate) struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    /// `trident ARGS…` in a fresh terminal, then `EXIT=<status>` once it ends. `None` when
    /// tmux is not installed.
    pub(crate) fn start(args: &[&str]) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            return None;
        }
        // A socket path of its own (`-S`), removed on drop: none is left behind.
        let socket = std::env::temp_dir().join(format!("trident-chat-{}", uuid::Uuid::new_v4()));
        let no_config = std::env::temp_dir().join("trident-tests-no-config");
        let words: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_trident"))
            .chain(args.iter().copied())
            .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
            .collect();
        let script = format!(
            "env -u TMUX RUST_LOG=error XDG_CONFIG_HOME='{}' {}; echo EXIT=$?; sleep 600",
            no_config.display(),
            words.join(" ")
        );
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "250", "-y", "80", "sh", "-c", &script])
            .env_remove("TMUX")
            .status()
            .expect("tmux new-session");
        assert!(status.success(), "tmux new-session failed");
        Some(Self { socket })
    }

    /// Types `keys` (tmux key names: text, `Enter`, `C-d`).
    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-t", "0"])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// A line typed and entered.
    pub(crate) fn line(&self, text: &str) {
        self.keys(&["-l", text]);
        self.keys(&["Enter"]);
    }

    /// The whole screen with its history, wrapped lines joined, attributes kept as escape
    /// sequences (`-e`).
    fn screen(&self) -> String {
        let o = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p", "-e", "-J", "-S", "-"])
            .args(["-t", "0"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The screen once `done` holds of it (fails the test after 30 s).
    #[track_caller]
    pub(crate) fn until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["kill-server"])
            .status();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Whether a screen line is a prompt (`> `, then what was typed; tmux trims the trailing
/// space of an empty one).
fn is_prompt(line: &str) -> bool {
    line == ">" || line.starts_with("> ")
}

/// How many prompts the screen shows.
fn prompts(screen: &str) -> usize {
    screen.lines().filter(|l| is_prompt(l)).count()
}

/// The screen's lines after the `n`th prompt (1-based).
fn after_prompt(screen: &str, n: usize) -> String {
    let mut seen = 0;
    let mut out = String::new();
    for l in screen.lines() {
        if is_prompt(l) {
            seen += 1;
        }
        if seen >= n {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Chats one conversation on a terminal: `input` asks for a name (INPUT_REQUIRED), the next
/// line answers it in the same task, the line after that starts a new task in the same
/// context, `/new` a new context; then `end` (`/quit` or Ctrl-D) ends it with exit 0 and the
/// context to go on with.
fn conversation(card: &str, transport: &str, end: &str) {
    let Some(tmux) = Tmux::start(&["chat", "-a", card, "--transport", transport]) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is not installed: CI must run the terminal half ({transport})"
        );
        eprintln!("tmux is not installed: skipping the terminal half of {transport}");
        return;
    };
    let t = transport;
    tmux.until("the first prompt", |s| prompts(s) == 1);

    tmux.line("input");
    let s = tmux.until("the question", |s| prompts(s) == 2);
    let asked = after_prompt(&s, 1);
    assert!(asked.contains("State: INPUT_REQUIRED"), "{t}:\n{s}");
    // The reply is the next line, not a `send` to run.
    assert!(asked.contains("type your reply"), "{t}:\n{s}");
    assert!(!asked.contains("Resume:"), "{t}:\n{s}");
    let task = field(&asked, "Task ID").expect("Task ID").to_owned();
    let context = field(&asked, "Context ID").expect("Context ID").to_owned();

    // The reply continues the waiting task, with no --task-id typed.
    tmux.line("Ada");
    let s = tmux.until("the answer", |s| prompts(s) == 3);
    let answered = after_prompt(&s, 2);
    assert!(answered.contains("Hello, Ada!"), "{t}:\n{s}");
    assert!(answered.contains("State: COMPLETED"), "{t}:\n{s}");
    assert_eq!(
        field(&answered, "Task ID"),
        Some(task.as_str()),
        "{t}:\n{s}"
    );
    assert_eq!(
        field(&answered, "Context ID"),
        Some(context.as_str()),
        "{t}"
    );

    // The task is done: the next line is a new task, in the same context.
    tmux.line("hello there");
    let s = tmux.until("the echo", |s| prompts(s) == 4);
    let echoed = after_prompt(&s, 3);
    assert!(echoed.contains("  hello there"), "{t}:\n{s}");
    assert!(echoed.contains("State: COMPLETED"), "{t}:\n{s}");
    let next = field(&echoed, "Task ID").expect("Task ID");
    assert_ne!(next, task, "{t}: a finished task is not continued:\n{s}");
    assert_eq!(field(&echoed, "Context ID"), Some(context.as_str()), "{t}");

    // `/new`: the next message starts a context of its own; nothing is sent for it.
    tmux.line("/new");
    tmux.until("the prompt after /new", |s| prompts(s) == 5);
    tmux.line("again");
    let s = tmux.until("the echo in a new context", |s| prompts(s) == 6);
    let fresh = after_prompt(&s, 5);
    assert!(fresh.contains("  again"), "{t}:\n{s}");
    let other = field(&fresh, "Context ID").expect("Context ID").to_owned();
    assert_ne!(other, context, "{t}: /new keeps the context:\n{s}");

    // An empty line sends nothing and prompts again.
    tmux.keys(&["Enter"]);
    tmux.until("the prompt after an empty line", |s| prompts(s) == 7);

    if end == "C-d" {
        tmux.keys(&["C-d"]);
    } else {
        tmux.line(end);
    }
    let s = tmux.until("the end", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{t}: {end} ends it cleanly:\n{s}");
    let tail = after_prompt(&s, 7);
    assert!(
        tail.contains(&format!("Context ID: {other}")),
        "{t}: the context to go on with is shown at the end:\n{s}"
    );
    // Plain text only: the capture keeps attribute sequences (`-e`), and there are none.
    assert!(!s.contains('\u{1b}'), "{t}:\n{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_chat_001_carries_context_and_task_across_turns_on_a_terminal() {
    let server = demo().await;
    let origin = server.origin.clone();
    tokio::task::spawn_blocking(move || {
        for (t, end) in TRANSPORTS.into_iter().zip(["/quit", "C-d", "/exit"]) {
            conversation(&origin, t, end);
        }
    })
    .await
    .expect("the chats");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_chat_001_without_streaming_each_turn_blocks_for_the_result() {
    let server = demo().await;
    let dir = TempDir::new("a2acli-chat-nostream");
    let o = Run::new(&["card", "get", "-a", &server.origin, "-o", "json"])
        .output()
        .await;
    let mut card: serde_json::Value = serde_json::from_str(&ok(&o)).expect("card");
    card["capabilities"]["streaming"] = serde_json::Value::Bool(false);
    let path = dir.0.join("card.json");
    std::fs::write(&path, card.to_string()).expect("write card");
    let path = path.display().to_string();
    tokio::task::spawn_blocking(move || {
        for t in TRANSPORTS {
            conversation(&path, t, "C-d");
        }
    })
    .await
    .expect("the chats");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_chat_001_without_a_terminal_it_never_reads_input() {
    let server = demo().await;
    let a = server.origin.as_str();
    for t in TRANSPORTS {
        // No message: a usage error (exit 2), the envelope with -o json; nothing read.
        let o = Run::new(&["chat", "-a", a, "--transport", t, "-o", "json"])
            .stdin(Some(b"hello\n"))
            .output()
            .await;
        assert_eq!(o.status.code(), Some(2), "{t}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one document");
        assert_eq!(v["error"]["code"], "A2ACLI_ERR_USAGE", "{t}: {v}");
        assert!(stderr(&o).contains("terminal"), "{t}: {}", stderr(&o));

        // A message: sent once, like send; the piped lines are not read as further turns.
        let o = Run::new(&["chat", "-a", a, "--transport", t, "input"])
            .stdin(Some(b"Ada\n/quit\n"))
            .output()
            .await;
        let out = ok(&o);
        assert!(out.contains("State: INPUT_REQUIRED"), "{t}: {out}");
        assert!(!out.contains("Hello, Ada!"), "{t}: {out}");
        assert!(!stderr(&o).contains("> "), "{t}: no prompt: {}", stderr(&o));
        assert!(
            !out.contains('\u{1b}') && !stderr(&o).contains('\u{1b}'),
            "{t}"
        );
    }
}
