//! `trident console` in headless Chromium (issue 26): the console pointed at `trident serve
//! --agent demo` shows the card, valid, each interface answering; then on each binding
//! (JSON-RPC, HTTP+JSON, gRPC), all through the console's server, a streaming message shows
//! every event in order with its artifact growing chunk by chunk, a task that asks for input
//! is answered and completes, the task list shows the tasks, one is read with its history
//! and artifacts, and one is followed (SubscribeToTask) while it is canceled from the list.
//! axe-core (from `tests/browser`'s npm lock) checks the page for accessibility violations
//! of serious or critical impact. Screenshots go to `target/console-screenshots/`.
//!
//! Skipped with the reason printed when chromium, chromedriver or npm is missing, except
//! under CI, where it fails (as `browser.rs`).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::process::Trident;
use crate::webdriver::{Browser, missing_tools, npm_ci, page_dir};

/// Where the screenshots go: `target/console-screenshots/`.
pub(crate) fn screenshots() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent()
        .map_or_else(|| tmp.clone(), |t| t.to_path_buf())
        .join("console-screenshots")
}

/// The text of the element `css` selects.
pub(crate) async fn text(browser: &Browser, css: &str) -> String {
    let v = browser
        .script(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            json!([css]),
        )
        .await;
    v.as_str()
        .unwrap_or_else(|| panic!("no element {css}"))
        .to_owned()
}

/// The `data-NAME` attribute of the element `css` selects, if set.
pub(crate) async fn data(browser: &Browser, css: &str, name: &str) -> Option<String> {
    browser
        .script(
            "const e = document.querySelector(arguments[0]); \
             return e ? (e.dataset[arguments[1]] ?? null) : null;",
            json!([css, name]),
        )
        .await
        .as_str()
        .map(str::to_owned)
}

/// The error the page shows, if any.
pub(crate) async fn shown_error(browser: &Browser) -> Value {
    browser
        .script(
            "const e = document.getElementById('error'); return e.hidden ? null : e.textContent;",
            json!([]),
        )
        .await
}

/// Clicks `button` and waits until the script `done` holds, then checks that the page shows no
/// error; `what` names what is waited for.
pub(crate) async fn click_and_wait(browser: &Browser, button: &str, what: &str, done: &str) {
    browser.click(button).await;
    browser.until(what, done).await;
    let error = shown_error(browser).await;
    assert!(error.is_null(), "{what}: {error}");
}

/// Sets the checkbox `css` to `on` by clicking it when it is not.
pub(crate) async fn check(browser: &Browser, css: &str, on: bool) {
    let checked = browser
        .script(
            "return document.querySelector(arguments[0]).checked;",
            json!([css]),
        )
        .await;
    if checked != Value::Bool(on) {
        browser.click(css).await;
    }
}

/// Sends `message` from the Talk form and waits for the answer to be shown; returns the
/// task's state and id as the page shows them, after checking no error was shown and the
/// call went over `binding`.
pub(crate) async fn send(browser: &Browser, message: &str, binding: &str) -> (String, String) {
    browser.type_into("#message", message).await;
    click_and_wait(
        browser,
        "#send",
        &format!("the answer to {message:?} over {binding}"),
        "return document.getElementById('timeline').dataset.done === 'true';",
    )
    .await;
    assert_eq!(
        data(browser, "#result-binding", "binding").await.as_deref(),
        Some(binding),
        "{message:?}"
    );
    let state = data(browser, "#result-state", "state").await;
    let id = data(browser, "#result-state", "taskId").await;
    (state.unwrap_or_default(), id.unwrap_or_default())
}

/// The page's axe-core violations of serious or critical impact.
pub(crate) async fn serious_violations(browser: &Browser) -> Value {
    let axe = std::fs::read_to_string(page_dir().join("node_modules/axe-core/axe.min.js"))
        .expect("axe-core is installed by npm ci");
    browser.script(&axe, json!([])).await;
    browser
        .script_async(
            "const done = arguments[arguments.length - 1];\
             axe.run(document, { resultTypes: ['violations'] }).then(\
               (r) => done(r.violations\
                 .filter((v) => v.impact === 'serious' || v.impact === 'critical')\
                 .map((v) => ({ id: v.id, impact: v.impact, help: v.help,\
                   nodes: v.nodes.map((n) => n.target.join(' ')) }))),\
               (e) => done({ error: String(e) }));",
            json!([]),
        )
        .await
}

/// The console pointed at `agent`, and headless Chromium on its page once it shows the card.
pub(crate) async fn opened(agent: &str) -> (Trident, Browser) {
    let console = Trident::console(&[agent]).await;
    let browser = Browser::start().await;
    browser
        .command("timeouts", json!({ "script": 60_000 }))
        .await;
    browser.open(&format!("{}/", console.origin)).await;
    browser
        .until(
            "the card is shown",
            "return document.getElementById('card-status').dataset.valid ?? null;",
        )
        .await;
    (console, browser)
}

/// `trident serve --agent demo --store memory`, the console pointed at it, and headless
/// Chromium on the console's page once it shows the card ([`opened`]). `None` when the
/// browser tools are missing: `test` is said to be skipped, with the reason.
pub(crate) async fn on_the_demo_agent(test: &str) -> Option<(Trident, Trident, Browser)> {
    if let Some(reason) = missing_tools() {
        eprintln!("{test} skipped: {reason}");
        return None;
    }
    npm_ci();
    let agent = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let (console, browser) = opened(&agent.origin).await;
    Some((agent, console, browser))
}

/// The demo agent built with the official Python SDK `sdk` (run by interop/run.sh, which
/// installs it), once the browser tools are there. `None` when they are missing: `test` is
/// said to be skipped, with the reason.
pub(crate) async fn python_agent(
    sdk: crate::harness::PythonSdk,
    test: &str,
) -> Option<crate::harness::PythonAgent> {
    if let Some(reason) = missing_tools() {
        eprintln!("{test} skipped: {reason}");
        return None;
    }
    npm_ci();
    Some(crate::harness::PythonAgent::start_sdk(sdk, &[]).await)
}

/// Lists the tasks from the Tasks form and waits for the list: the task ids shown.
pub(crate) async fn list_tasks(browser: &Browser) -> Vec<String> {
    browser.click("#list-tasks").await;
    browser
        .until(
            "the task list",
            "return document.querySelector('#tasks tbody').dataset.loaded === 'true';",
        )
        .await;
    let listed = browser
        .script(
            "return [...document.querySelectorAll('#tasks tbody tr')].map((r) => r.dataset.taskId);",
            json!([]),
        )
        .await;
    serde_json::from_value(listed).expect("task ids")
}

/// Opens the task `id` from the task list: the text of its detail (history and artifacts).
async fn task_detail(browser: &Browser, id: &str) -> String {
    browser
        .click(&format!("#tasks tr[data-task-id='{id}'] button.open"))
        .await;
    let detail = browser
        .until(
            "the task's detail",
            &format!(
                "const d = document.getElementById('task-detail'); \
                 return d.dataset.taskId === '{id}' ? d.textContent : null;"
            ),
        )
        .await;
    detail.as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_talks_to_the_demo_agent_on_every_binding() {
    let Some((_agent, _console, browser)) = on_the_demo_agent("console test").await else {
        return;
    };
    keyboard(&browser).await;
    drive(&browser, "").await;
}

/// Presses the key `key` (a WebDriver key code: `\u{E004}` Tab, `\u{E007}` Enter) where the
/// focus is.
async fn press(browser: &Browser, key: &str) {
    browser
        .command(
            "actions",
            json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": [
                { "type": "keyDown", "value": key }, { "type": "keyUp", "value": key },
            ] }] }),
        )
        .await;
}

/// The page works from the keyboard: Tab reaches every control of each section in the order
/// of the page, and a message typed and sent with Enter on the focused Send button is
/// answered.
async fn keyboard(browser: &Browser) {
    const TAB: &str = "\u{E004}";
    const ENTER: &str = "\u{E007}";
    browser
        .script(
            "document.activeElement.blur(); window.scrollTo(0, 0);",
            json!([]),
        )
        .await;
    let mut reached = Vec::new();
    for _ in 0..120 {
        press(browser, TAB).await;
        let id = browser
            .script("return document.activeElement.id || null;", json!([]))
            .await;
        if let Some(id) = id.as_str()
            && reached.last().map(String::as_str) != Some(id)
        {
            reached.push(id.to_owned());
        }
    }
    let wanted = [
        "agent",
        "connect",
        "binding",
        "message",
        "send",
        "list-tasks",
        "push-watch",
        "run-conformance",
        "run-compare",
    ];
    let positions: Vec<Option<usize>> = wanted
        .iter()
        .map(|w| reached.iter().position(|r| r == w))
        .collect();
    assert!(
        positions.iter().all(Option::is_some),
        "not reached with Tab: {:?} (reached {reached:?})",
        wanted
            .iter()
            .zip(&positions)
            .filter(|(_, p)| p.is_none())
            .map(|(w, _)| w)
            .collect::<Vec<_>>()
    );
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "Tab order is not the page's: {reached:?}"
    );
    // Typed and sent from the keyboard alone.
    browser
        .script("document.getElementById('message').focus();", json!([]))
        .await;
    let message = browser.find("#message").await;
    browser
        .command(
            &format!("element/{message}/value"),
            json!({ "text": "typed" }),
        )
        .await;
    press(browser, TAB).await;
    let mut on_send = false;
    for _ in 0..20 {
        let id = browser
            .script("return document.activeElement.id;", json!([]))
            .await;
        if id == json!("send") {
            on_send = true;
            break;
        }
        press(browser, TAB).await;
    }
    assert!(on_send, "Tab from the message never reached Send");
    press(browser, ENTER).await;
    browser
        .until(
            "the answer to the message sent with Enter",
            "return document.getElementById('timeline').dataset.done === 'true' \
               && document.querySelector('#artifacts pre')?.textContent === 'typed';",
        )
        .await;
    browser.click("#new-conversation").await;
}

/// The same, against the demo agent built with the official Python SDK
/// (`interop/python/agent.py`; run by interop/run.sh, which installs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs TRIDENT_INTEROP_PYTHON; run by interop/run.sh"]
async fn console_talks_to_the_python_sdk_agent_on_every_binding() {
    let Some(mut agent) = python_agent(crate::harness::PythonSdk::V1, "console test").await else {
        return;
    };
    let (_console, browser) = opened(&agent.card_url).await;
    drive(&browser, "python-").await;
    agent.stop();
}

/// Against the demo agent built with the official **v0.3** Python SDK
/// (`interop/python03/agent.py`; run by interop/run.sh): the console reads its v0.3 card (valid
/// as an A2A 0.3 card, every interface answering) and speaks 0.3 to it on each binding: a
/// stream shown in order, and a task that asks for input answered. (v0.3 has no ListTasks.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs TRIDENT_INTEROP_PYTHON03; run by interop/run.sh"]
async fn console_talks_to_the_v03_python_sdk_agent_on_every_binding() {
    let Some(mut agent) = python_agent(crate::harness::PythonSdk::V03, "console test").await else {
        return;
    };
    let (_console, browser) = opened(&agent.card_url).await;
    assert_eq!(
        data(&browser, "#card-status", "valid").await.as_deref(),
        Some("true"),
        "{}",
        text(&browser, "#card-problems").await
    );
    assert_eq!(
        data(&browser, "#card-status", "generation")
            .await
            .as_deref(),
        Some("0.3")
    );
    assert_eq!(
        data(&browser, "#card-status", "answering").await,
        data(&browser, "#card-status", "interfaces").await,
        "{}",
        text(&browser, "#interfaces").await
    );
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        stream_and_input(&browser, binding, "python03-").await;
    }
    let violations = serious_violations(&browser).await;
    assert_eq!(violations, json!([]), "accessibility, a v0.3 agent");
    agent.stop();
}

/// On `binding`, picked in the page: a stream whose events show in order with its artifact
/// growing chunk by chunk, then a task that asks for input answered in the same task. Returns
/// the two tasks' ids.
async fn stream_and_input(
    browser: &Browser,
    binding: &str,
    shots_prefix: &str,
) -> (String, String) {
    let shots = screenshots();
    browser
        .click(&format!("#binding option[value='{binding}']"))
        .await;
    browser.click("#new-conversation").await;

    // A stream: every event, in order, the artifact growing chunk by chunk.
    check(browser, "#streaming", true).await;
    let (state, streamed) = send(browser, "stream 3 1", binding).await;
    assert_eq!(state, "TASK_STATE_COMPLETED", "{binding}");
    let events = browser
        .script(
            "return [...document.querySelectorAll('#timeline li')].map((li) => li.dataset.event);",
            json!([]),
        )
        .await;
    let events: Vec<String> = serde_json::from_value(events).expect("event kinds");
    assert!(events[0].starts_with("task:"), "{binding}: {events:?}");
    // The artifact's id: `stream` from our agent, `TASK-stream` from the Python SDK's.
    let events: Vec<&str> = events
        .iter()
        .map(|e| match e.strip_prefix("artifact:") {
            Some(id) if id.ends_with("stream") => "artifact:stream",
            _ => e.as_str(),
        })
        .collect();
    assert_eq!(
        events[1..],
        [
            "status:TASK_STATE_WORKING",
            "artifact:stream",
            "artifact:stream",
            "artifact:stream",
            "status:TASK_STATE_COMPLETED",
        ],
        "{binding}"
    );
    assert_eq!(
        text(browser, "#artifacts [data-artifact-id$='stream'] pre").await,
        "chunk 0 of stream 3 1chunk 1 of stream 3 1chunk 2 of stream 3 1",
        "{binding}"
    );
    browser
        .screenshot(&shots.join(format!(
            "{shots_prefix}stream-{}.png",
            binding.replace('+', "-")
        )))
        .await;

    // A task that asks for input, answered in the same task.
    check(browser, "#streaming", false).await;
    browser.click("#new-conversation").await;
    let (state, asking) = send(browser, "input", binding).await;
    assert_eq!(state, "TASK_STATE_INPUT_REQUIRED", "{binding}");
    assert!(
        text(browser, "#reply-hint")
            .await
            .contains("What is your name?"),
        "{binding}"
    );
    let filled = browser
        .script(
            "return document.getElementById('task-id').value;",
            json!([]),
        )
        .await;
    assert_eq!(filled.as_str(), Some(asking.as_str()), "{binding}");
    let (state, answered) = send(browser, "Ada", binding).await;
    assert_eq!(state, "TASK_STATE_COMPLETED", "{binding}");
    assert_eq!(answered, asking, "{binding}: the same task completes");
    assert_eq!(
        text(browser, "#artifacts pre").await,
        "Hello, Ada!",
        "{binding}"
    );
    (streamed, asking)
}

/// Drives the console's page (showing the card) through the card and, on each binding, a
/// stream, an input-required task, the task list, a task read whole, a subscription and a
/// cancel; screenshots are named with `shots_prefix`.
async fn drive(browser: &Browser, shots_prefix: &str) {
    let shots = screenshots();

    // The card, read through the console: valid, each of its three interfaces answering.
    assert_eq!(
        data(browser, "#card-status", "valid").await.as_deref(),
        Some("true"),
        "{}",
        text(browser, "#card-problems").await
    );
    // Each interface the card declares (every binding, in A2A 1.0 and 0.3) answers.
    let declared = data(browser, "#card-status", "interfaces").await;
    assert_eq!(
        data(browser, "#card-status", "answering").await,
        declared,
        "{}",
        text(browser, "#interfaces").await
    );
    let offered = browser
        .script(
            "return [...document.querySelectorAll('#binding option')].map((o) => o.value);",
            json!([]),
        )
        .await;
    let mut offered: Vec<String> = serde_json::from_value(offered).expect("bindings");
    offered.sort();
    assert_eq!(offered, ["GRPC", "HTTP+JSON", "JSONRPC"]);
    assert!(text(browser, "#signature").await.starts_with("absent"));
    assert!(
        text(browser, "#card-raw")
            .await
            .contains("supportedInterfaces")
    );
    let violations = serious_violations(browser).await;
    assert_eq!(violations, json!([]), "accessibility, card shown");
    browser
        .screenshot(&shots.join(format!("{shots_prefix}card.png")))
        .await;

    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let (streamed, asking) = stream_and_input(browser, binding, shots_prefix).await;

        // A task that works until canceled, sent without waiting.
        browser.click("#new-conversation").await;
        check(browser, "#return-immediately", true).await;
        let (_, slow) = send(browser, "slow", binding).await;
        check(browser, "#return-immediately", false).await;
        assert!(!slow.is_empty(), "{binding}");

        // The task list shows them; the slow one is canceled from it.
        let listed = list_tasks(browser).await;
        for id in [&streamed, &asking, &slow] {
            assert!(listed.contains(id), "{binding}: {id} in {listed:?}");
        }
        // A task read whole: its history and artifacts.
        let detail = task_detail(browser, &asking).await;
        assert!(detail.contains("user: Ada"), "{binding}: {detail}");
        assert!(detail.contains("Hello, Ada!"), "{binding}: {detail}");

        // Followed (SubscribeToTask) while it is canceled from the list: the stream shows
        // the cancel and ends.
        let row = format!("#tasks tr[data-task-id='{slow}']");
        browser.click(&format!("{row} button.subscribe")).await;
        browser
            .until(
                "the subscription's first event",
                "return document.querySelector('#timeline li') !== null;",
            )
            .await;
        browser.click(&format!("{row} button.cancel")).await;
        browser
            .until(
                "the subscription's end",
                "return document.getElementById('timeline').dataset.done === 'true';",
            )
            .await;
        let events = browser
            .script(
                "return [...document.querySelectorAll('#timeline li')].map((li) => li.dataset.event);",
                json!([]),
            )
            .await;
        let events: Vec<String> = serde_json::from_value(events).expect("event kinds");
        assert!(events[0].starts_with("task:"), "{binding}: {events:?}");
        assert_eq!(
            events.last().map(String::as_str),
            Some("status:TASK_STATE_CANCELED"),
            "{binding}: {events:?}"
        );
        browser
            .until(
                "the canceled task",
                &format!(
                    "return document.querySelector(\"{row}\").dataset.state === 'TASK_STATE_CANCELED';"
                ),
            )
            .await;
        browser
            .screenshot(&shots.join(format!(
                "{shots_prefix}tasks-{}.png",
                binding.replace('+', "-")
            )))
            .await;
    }

    let violations = serious_violations(browser).await;
    assert_eq!(violations, json!([]), "accessibility, after every call");
}

/// The console refuses a non-loopback address without `--allow-remote`, and its API refuses
/// bad input with a JSON error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_refuses_remote_listen_and_bad_requests() {
    let refused = crate::process::Run::new(&["console", "--listen", "0.0.0.0:0"])
        .output()
        .await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        crate::process::stderr(&refused).contains("--allow-remote"),
        "{}",
        crate::process::stderr(&refused)
    );

    let console = Trident::console(&[]).await;
    let http = reqwest::Client::new();
    let config: Value = http
        .get(format!("{}/api/config", console.origin))
        .send()
        .await
        .expect("config")
        .json()
        .await
        .expect("config JSON");
    assert_eq!(config, json!({ "agent": null, "served": false }));
    for (body, want) in [
        ("not json", "bad_request"),
        (r#"{"agent": ""}"#, "bad_request"),
        (r#"{"agent": "/etc/passwd"}"#, "bad_request"),
        (r#"{"agent": "127.0.0.1:9", "surprise": 1}"#, "bad_request"),
        (
            r#"{"agent": "127.0.0.1:9", "auth": {"headers": [{"name": "bad name", "value": "x"}]}}"#,
            "bad_request",
        ),
    ] {
        let answer = http
            .post(format!("{}/api/card", console.origin))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("an answer");
        assert_eq!(answer.status(), reqwest::StatusCode::BAD_REQUEST, "{body}");
        let error: Value = answer.json().await.expect("a JSON error");
        assert_eq!(error["error"]["code"], want, "{body}: {error}");
    }
    // Not JSON, or from another page: refused before anything is read.
    let text = http
        .post(format!("{}/api/card", console.origin))
        .header("content-type", "text/plain")
        .body(r#"{"agent": "127.0.0.1:9"}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(text.status(), reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let other = http
        .post(format!("{}/api/card", console.origin))
        .header("content-type", "application/json")
        .header("origin", "http://evil.example")
        .body(r#"{"agent": "127.0.0.1:9"}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(other.status(), reqwest::StatusCode::FORBIDDEN);
    // An agent that is not there: the client commands' error, as JSON.
    let gone = http
        .post(format!("{}/api/card", console.origin))
        .header("content-type", "application/json")
        .body(r#"{"agent": "127.0.0.1:9"}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(gone.status(), reqwest::StatusCode::BAD_GATEWAY);
    let error: Value = gone.json().await.expect("a JSON error");
    assert_eq!(error["error"]["code"], "A2ACLI_ERR_UNREACHABLE", "{error}");
}

/// `trident serve --console`: the console at `/console/` beside the agent. Its page is public,
/// its API behind the agent's authentication (a request without the token is refused by the
/// server before the console sees it) and bound to that agent alone. In Chromium: the card
/// fails until the token is typed in the page, then loads; a message with text, a file and a
/// data part reaches the agent whole (the task's history shows each part); the Wire section
/// shows the calls as they went, the token masked everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_served_beside_the_agent_behind_its_authentication() {
    const TOKEN: &str = "console-secret-token";
    let agent = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--console",
        "--bearer",
        &format!("alice={TOKEN}"),
        "--push-allow",
        "127.0.0.1",
    ])
    .await;
    let card_url = format!("{}/.well-known/agent-card.json", agent.origin);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let page = http
        .get(format!("{}/console/", agent.origin))
        .send()
        .await
        .expect("the page");
    assert_eq!(page.status(), reqwest::StatusCode::OK);
    assert!(page.text().await.expect("HTML").contains("Trident console"));
    let bare = http
        .get(format!("{}/console", agent.origin))
        .send()
        .await
        .expect("an answer");
    assert_eq!(bare.status(), reqwest::StatusCode::PERMANENT_REDIRECT);
    assert_eq!(bare.headers()["location"], "/console/");
    let config: Value = http
        .get(format!("{}/console/api/config", agent.origin))
        .send()
        .await
        .expect("config")
        .json()
        .await
        .expect("config JSON");
    assert_eq!(config, json!({ "agent": card_url, "served": true }));
    let call = |token: Option<&str>, agent: &str| {
        let mut request = http
            .post(format!("{}/console/api/card", agent_origin(&card_url)))
            .header("content-type", "application/json")
            .body(json!({ "agent": agent, "auth": { "bearer": token } }).to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let refused = call(None, &card_url).await.expect("an answer");
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    let wrong = call(Some("not-the-token"), &card_url)
        .await
        .expect("an answer");
    assert_eq!(wrong.status(), reqwest::StatusCode::UNAUTHORIZED);
    let read: Value = call(Some(TOKEN), &card_url)
        .await
        .expect("an answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(read["valid"], true, "{read:#}");
    let wire = read["wire"].to_string();
    assert!(wire.contains("card → GET"), "{wire}");
    assert!(!wire.contains(TOKEN), "{wire}");
    // Another agent: the console beside an agent talks to that agent only.
    let elsewhere = call(Some(TOKEN), "http://127.0.0.1:9")
        .await
        .expect("an answer");
    assert_eq!(elsewhere.status(), reqwest::StatusCode::BAD_REQUEST);

    // The push receiver beside the agent: at /console/hooks/, outside its authentication (the
    // agent posts with the webhook's token); the deliveries are read through the API, behind it.
    let api = |path: &str, body: Value| {
        http.post(format!("{}/console/api/{path}", agent.origin))
            .header("content-type", "application/json")
            .bearer_auth(TOKEN)
            .body(body.to_string())
            .send()
    };
    let auth = json!({ "bearer": TOKEN });
    let slow: Value = api(
        "send",
        json!({ "agent": card_url, "auth": auth, "text": "slow", "returnImmediately": true }),
    )
    .await
    .expect("an answer")
    .json()
    .await
    .expect("JSON");
    let slow = slow["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {slow:#}"))
        .to_owned();
    let watched: Value = api(
        "push/watch",
        json!({ "agent": card_url, "auth": auth, "taskId": slow }),
    )
    .await
    .expect("an answer")
    .json()
    .await
    .expect("JSON");
    let hook = watched["webhook"]["url"].as_str().unwrap_or_default();
    assert!(
        hook.starts_with(&format!("{}/console/hooks/", agent.origin)),
        "{watched:#}"
    );
    api(
        "tasks/cancel",
        json!({ "agent": card_url, "auth": auth, "taskId": slow }),
    )
    .await
    .expect("the cancel");
    let delivered = crate::wait::until("the canceled task's delivery", || async {
        let seen: Value = api("push/deliveries", json!({}))
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        seen["deliveries"]
            .as_array()?
            .iter()
            .find(|d| d["state"] == "TASK_STATE_CANCELED")
            .cloned()
    })
    .await;
    assert_eq!(delivered["taskId"], slow.as_str(), "{delivered:#}");
    let unauthenticated = http
        .post(format!("{}/console/api/push/deliveries", agent.origin))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("an answer");
    assert_eq!(unauthenticated.status(), reqwest::StatusCode::UNAUTHORIZED);

    if let Some(reason) = missing_tools() {
        eprintln!("console test skipped in part: {reason}");
        return;
    }
    npm_ci();
    let browser = Browser::start().await;
    browser.open(&format!("{}/console/", agent.origin)).await;
    let shown = browser
        .until(
            "the refusal without credentials",
            "const e = document.getElementById('error'); return e.hidden ? null : e.textContent;",
        )
        .await;
    assert!(
        shown.as_str().unwrap_or_default().contains("401")
            || shown
                .as_str()
                .unwrap_or_default()
                .contains("UNAUTHENTICATED"),
        "{shown}"
    );
    browser.click("#credentials summary").await;
    browser.type_into("#bearer", TOKEN).await;
    browser.click("#connect").await;
    browser
        .until(
            "the card is shown",
            "return document.getElementById('card-status').dataset.valid ?? null;",
        )
        .await;
    assert_eq!(
        data(&browser, "#card-status", "valid").await.as_deref(),
        Some("true")
    );

    // A message of three parts: text, a file, data.
    let dir = std::env::temp_dir().join(format!("trident-console-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("note.txt");
    std::fs::write(&file, "hello").expect("the file");
    browser.click("#binding option[value='JSONRPC']").await;
    browser.type_into("#files", &file.to_string_lossy()).await;
    browser.type_into("#data", r#"{"k": 1}"#).await;
    let (state, id) = send(&browser, "three parts", "JSONRPC").await;
    assert_eq!(state, "TASK_STATE_COMPLETED");
    list_tasks(&browser).await;
    let detail = task_detail(&browser, &id).await;
    assert!(
        detail.contains(r#"user: three parts[file note.txt (text/plain, 5 bytes)]{"k":1}"#),
        "{detail}"
    );

    // A subscription resumed after an event: the events after it only, numbered, then the
    // cancel's.
    browser.click("#new-conversation").await;
    check(&browser, "#return-immediately", true).await;
    let (_, slow) = send(&browser, "slow", "JSONRPC").await;
    check(&browser, "#return-immediately", false).await;
    browser.click("#list-tasks").await;
    browser
        .until(
            "the task list with the slow task",
            &format!(
                "return document.querySelector(\"#tasks tr[data-task-id='{slow}']\") !== null;"
            ),
        )
        .await;
    browser.type_into("#subscribe-after", "1").await;
    let row = format!("#tasks tr[data-task-id='{slow}']");
    browser.click(&format!("{row} button.subscribe")).await;
    let first = browser
        .until(
            "the resumed subscription's first event",
            "const li = document.querySelector('#timeline li'); return li ? li.dataset.seq ?? 'none' : null;",
        )
        .await;
    assert_eq!(first, json!("2"), "the event after #1");
    browser.click(&format!("{row} button.cancel")).await;
    browser
        .until(
            "the subscription's end",
            "return document.getElementById('timeline').dataset.done === 'true';",
        )
        .await;
    let seqs = browser
        .script(
            "return [...document.querySelectorAll('#timeline li')].map((li) => [li.dataset.seq, li.dataset.event]);",
            json!([]),
        )
        .await;
    let seqs: Vec<(String, String)> = serde_json::from_value(seqs).expect("events");
    let numbers: Vec<u64> = seqs.iter().filter_map(|(n, _)| n.parse().ok()).collect();
    assert_eq!(numbers.len(), seqs.len(), "every event numbered: {seqs:?}");
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(
        seqs.last().map(|(_, e)| e.as_str()),
        Some("status:TASK_STATE_CANCELED"),
        "{seqs:?}"
    );
    browser.type_into("#subscribe-after", "").await;

    // The wire: every call, as it went, the token nowhere.
    let wire = text(&browser, "#wire").await;
    assert!(wire.contains("SendMessage"), "{wire}");
    assert!(wire.contains("[redacted]"), "{wire}");
    assert!(!wire.contains(TOKEN), "{wire}");
    let calls = browser
        .script(
            "return [...document.querySelectorAll('#wire > li')].map((li) => li.dataset.call);",
            json!([]),
        )
        .await;
    let calls: Vec<String> = serde_json::from_value(calls).expect("calls");
    assert_eq!(
        calls[..6],
        [
            "tasks/cancel",
            "tasks/subscribe",
            "tasks/list",
            "send",
            "tasks/get",
            "tasks/list"
        ],
        "{calls:?}"
    );
    let violations = serious_violations(&browser).await;
    assert_eq!(violations, json!([]), "accessibility, served");
    browser
        .script(
            "document.getElementById('wire-section').scrollIntoView();",
            json!([]),
        )
        .await;
    browser.screenshot(&screenshots().join("served.png")).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `http://HOST:PORT` of a card URL.
fn agent_origin(card_url: &str) -> &str {
    card_url
        .strip_suffix("/.well-known/agent-card.json")
        .unwrap_or(card_url)
}
