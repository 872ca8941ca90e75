//! Headless Chromium driven through chromedriver's WebDriver HTTP API, shared by the browser
//! tests (`browser.rs`, `console.rs`): the tools they need (skipped with the reason printed
//! when missing, except under CI, where it fails), the npm packages of `tests/browser`, and
//! one WebDriver session with the few commands the tests use.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::process::TempDir;
use crate::wait::until;

/// Debian's Chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// Debian's chromedriver.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Where the browser tests' page sources and npm lock are.
pub fn page_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `Some(reason)` when the browser test cannot run here; fails instead under CI.
pub fn missing_tools() -> Option<String> {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER, "npm"]
        .into_iter()
        .filter(|p| !runs(p))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let reason = format!(
        "{} not installed (apt-get install chromium chromium-driver npm)",
        missing.join(", ")
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "{reason}: CI must run the browser test"
    );
    Some(reason)
}

/// Runs `command` to success, or fails saying what it printed.
pub fn run(mut command: Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Installs the npm packages of `tests/browser` with `npm ci` when its lock has changed since
/// the last install.
pub fn npm_ci() {
    let src = page_dir();
    let lock = src.join("package-lock.json");
    let stamp = src.join("node_modules/.trident-lock");
    let installed = std::fs::read(&stamp).ok();
    if installed != std::fs::read(&lock).ok() {
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&src);
        run(npm, "npm ci in tests/browser");
        std::fs::copy(&lock, &stamp).expect("stamp the installed lock");
    }
}

/// Headless Chromium behind chromedriver, one WebDriver session.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    base: String,
    driver: Child,
    _profile: TempDir,
}

impl Browser {
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        until("chromedriver ready", || {
            let request = http.get(format!("{base}/status"));
            async move {
                let status: Value = request.send().await.ok()?.json().await.ok()?;
                status["value"]["ready"].as_bool().filter(|r| *r)
            }
        })
        .await;
        let profile = TempDir::new("trident-chromium");
        let session: Value = http
            .post(format!("{base}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--no-first-run", "--window-size=1280,1100",
                        format!("--user-data-dir={}", profile.0.display()),
                    ],
                },
            }}}))
            .send()
            .await
            .expect("new WebDriver session")
            .json()
            .await
            .expect("session JSON");
        let session = session["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {session}"))
            .to_owned();
        Self {
            http,
            session,
            base,
            driver,
            _profile: profile,
        }
    }

    pub async fn command(&self, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}/{path}", self.base, self.session);
        self.value(path, self.http.post(&url).json(&body)).await
    }

    /// A `GET` command of the session (`screenshot`, …): its value.
    pub async fn query(&self, path: &str) -> Value {
        let url = format!("{}/session/{}/{path}", self.base, self.session);
        self.value(path, self.http.get(&url)).await
    }

    /// The value of WebDriver's answer to `request` (command `path`), which must not be an
    /// error.
    async fn value(&self, path: &str, request: reqwest::RequestBuilder) -> Value {
        let answer: Value = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("WebDriver {path}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("WebDriver {path} answer: {e}"));
        assert!(
            answer["value"].get("error").is_none(),
            "WebDriver {path}: {answer}"
        );
        answer["value"].clone()
    }

    /// Opens `url`.
    pub async fn open(&self, url: &str) {
        self.command("url", json!({ "url": url })).await;
    }

    /// The WebDriver id of the element `css` selects (the first).
    pub async fn find(&self, css: &str) -> String {
        let found = self
            .command("element", json!({ "using": "css selector", "value": css }))
            .await;
        found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    /// Clicks the element `css` selects.
    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.command(&format!("element/{id}/click"), json!({}))
            .await;
    }

    /// Replaces the text of the input `css` selects with `text`, typed.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.command(&format!("element/{id}/clear"), json!({}))
            .await;
        self.command(&format!("element/{id}/value"), json!({ "text": text }))
            .await;
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page: its value.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.command("execute/sync", json!({ "script": script, "args": args }))
            .await
    }

    /// Runs `script` in the page until it calls its last argument back: the value it gave.
    pub async fn script_async(&self, script: &str, args: Value) -> Value {
        self.command("execute/async", json!({ "script": script, "args": args }))
            .await
    }

    /// Waits until `script` returns something other than `null` (or `false`): that value.
    pub async fn until(&self, what: &str, script: &str) -> Value {
        until(what, || async {
            let v = self.script(script, json!([])).await;
            (!v.is_null() && v != Value::Bool(false)).then_some(v)
        })
        .await
    }

    /// Saves a screenshot of the window (PNG) at `path`.
    pub async fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let png = self.query("screenshot").await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("a base64 screenshot"))
            .expect("base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot directory");
        }
        std::fs::write(path, png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    /// Ends the session (chromedriver quits Chromium; killing chromedriver alone would leave
    /// Chromium running), then chromedriver. Blocking, on a plain socket: this runs on a
    /// panic too, where no runtime may be polled.
    fn drop(&mut self) {
        use std::io::{Read, Write};
        let host = self.base.trim_start_matches("http://");
        if let Ok(mut socket) = std::net::TcpStream::connect(host) {
            let _ = socket.set_read_timeout(Some(std::time::Duration::from_secs(30)));
            let request = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n",
                self.session
            );
            if socket.write_all(request.as_bytes()).is_ok() {
                // The answer comes once Chromium has quit; chromedriver may keep the
                // connection open after it, so read the head and `Content-Length` bytes.
                let mut answer = Vec::new();
                let mut chunk = [0u8; 1024];
                while let Ok(n @ 1..) = socket.read(&mut chunk) {
                    answer.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&answer);
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            break;
                        }
                    }
                }
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
