//! The console's push-notification receiver: in headless Chromium, on `trident serve --agent
//! demo --push-allow 127.0.0.1` (the server refuses loopback webhooks otherwise), on each
//! binding (JSON-RPC, HTTP+JSON, gRPC) a task that works until canceled is watched with a
//! webhook of the console's from the Push section, canceled from the task list, and the
//! cancel's delivery shows up in the page with the task's id and state, its token headers
//! masked; axe-core checks the page, and a screenshot `push-<binding>.png` goes next to the
//! console test's. Without a browser, the receiver refuses posts without the webhook's token
//! or with another (`401`), too large (`413`) or to no webhook (`404`), and shows none of them;
//! the API lists and deletes the task's configs.
//!
//! The browser test is skipped with the reason printed when chromium, chromedriver or npm is
//! missing, except under CI, where it fails (as `console.rs`).

use serde_json::{Value, json};

use crate::console::{check, data, opened, screenshots, send, serious_violations, text};
use crate::process::Trident;
use crate::wait::until;
use crate::webdriver::{missing_tools, npm_ci};

/// The demo agent, delivering webhooks to loopback.
async fn push_agent() -> Trident {
    Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--push-allow",
        "127.0.0.1",
    ])
    .await
}

/// Whether `value` is a secret as the console masks it: two characters and `…`.
fn masked(value: &str) -> bool {
    value.chars().count() == 3 && value.ends_with('…')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_receives_push_deliveries_on_every_binding() {
    if let Some(reason) = missing_tools() {
        eprintln!("console push test skipped: {reason}");
        return;
    }
    npm_ci();
    let agent = push_agent().await;
    drive(&agent.origin, "", true).await;
}

/// The same against the demo agent built with the official Python SDK
/// (`interop/python/agent.py`; run by interop/run.sh, which installs it). Its push sender
/// sends the token in `X-A2A-Notification-Token` only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs TRIDENT_INTEROP_PYTHON; run by interop/run.sh"]
async fn console_receives_push_deliveries_from_the_python_sdk_agent() {
    let Some(mut agent) =
        crate::console::python_agent(crate::harness::PythonSdk::V1, "console push test").await
    else {
        return;
    };
    drive(&agent.card_url, "python-", false).await;
    agent.stop();
}

/// On each binding, a task watched from the Push section of the console pointed at `agent`,
/// canceled, and its delivery shown; the token in both headers when `both_token_headers`, in
/// one at least otherwise, always masked. Screenshots are named with `shots_prefix`.
async fn drive(agent: &str, shots_prefix: &str, both_token_headers: bool) {
    let (console, browser) = opened(agent).await;
    let shots = screenshots();
    browser
        .until(
            "the Push section",
            "return !document.getElementById('push-section').hidden;",
        )
        .await;
    let violations = serious_violations(&browser).await;
    assert_eq!(violations, json!([]), "accessibility, Push section shown");

    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        browser
            .click(&format!("#binding option[value='{binding}']"))
            .await;
        browser.click("#new-conversation").await;
        check(&browser, "#streaming", false).await;

        // A task that works until canceled, sent without waiting: the Push section's task
        // id is filled in with it.
        check(&browser, "#return-immediately", true).await;
        let (_, slow) = send(&browser, "slow", binding).await;
        check(&browser, "#return-immediately", false).await;
        assert!(!slow.is_empty(), "{binding}");
        let filled = browser
            .script(
                "return document.getElementById('push-task').value;",
                json!([]),
            )
            .await;
        assert_eq!(filled.as_str(), Some(slow.as_str()), "{binding}");

        // Watched with a webhook of the console's, configured on the binding picked.
        browser.click("#push-watch").await;
        browser
            .until(
                "the webhook's config",
                &format!(
                    "const e = document.getElementById('error');\
                     if (!e.hidden) return 'error: ' + e.textContent;\
                     return document.getElementById('push-config').dataset.taskId === '{slow}';"
                ),
            )
            .await;
        let error = browser
            .script(
                "const e = document.getElementById('error'); return e.hidden ? null : e.textContent;",
                json!([]),
            )
            .await;
        assert!(error.is_null(), "watch over {binding}: {error}");
        assert_eq!(
            data(&browser, "#push-config", "binding").await.as_deref(),
            Some(binding)
        );
        let url = data(&browser, "#push-config", "url")
            .await
            .unwrap_or_default();
        assert!(
            url.starts_with(&format!("{}/hooks/", console.origin)),
            "{binding}: {url}"
        );
        let config: Value =
            serde_json::from_str(&text(&browser, "#push-config").await).expect("config JSON");
        assert_eq!(config["url"], json!(url), "{binding}: {config}");
        if let Some(token) = config["token"].as_str() {
            assert!(
                masked(token),
                "{binding}: the config's token shown: {config}"
            );
        }

        // Canceled from the task list: the cancel is delivered to the webhook.
        crate::console::list_tasks(&browser).await;
        let row = format!("#tasks tr[data-task-id='{slow}']");
        browser.click(&format!("{row} button.cancel")).await;
        browser
            .until(
                "the canceled task",
                &format!(
                    "return document.querySelector(\"{row}\").dataset.state === 'TASK_STATE_CANCELED';"
                ),
            )
            .await;
        let delivered =
            format!("#push-deliveries li[data-task-id='{slow}'][data-state='TASK_STATE_CANCELED']");
        browser
            .until(
                "the cancel's delivery",
                &format!("return document.querySelector(\"{delivered}\") !== null;"),
            )
            .await;
        assert_eq!(
            data(&browser, &delivered, "kind").await.as_deref(),
            Some("statusUpdate"),
            "{binding}"
        );
        let webhook = url.rsplit('/').next().unwrap_or_default();
        assert_eq!(
            data(&browser, &delivered, "webhook").await.as_deref(),
            Some(webhook),
            "{binding}"
        );
        // Every delivery of this task came to its webhook and is about it.
        let about = browser
            .script(
                "return [...document.querySelectorAll('#push-deliveries li')]\
                   .filter((li) => li.dataset.webhook === arguments[0])\
                   .map((li) => li.dataset.taskId);",
                json!([webhook]),
            )
            .await;
        let about: Vec<String> = serde_json::from_value(about).expect("task ids");
        assert!(
            !about.is_empty() && about.iter().all(|t| *t == slow),
            "{binding}: {about:?}"
        );
        // The token came in both headers (one at least from other agents), shown masked.
        let mut tokens = 0;
        for name in ["a2a-notification-token", "x-a2a-notification-token"] {
            let css = format!("{delivered} dd[data-header='{name}']");
            let present = browser
                .script(
                    "return document.querySelector(arguments[0]) !== null;",
                    json!([css]),
                )
                .await;
            if present != Value::Bool(true) && !both_token_headers {
                continue;
            }
            tokens += 1;
            let shown = text(&browser, &css).await;
            assert!(masked(&shown), "{binding}: {name} shown as {shown:?}");
            assert_eq!(
                data(&browser, &css, "masked").await.as_deref(),
                Some("true")
            );
        }
        assert!(tokens > 0, "{binding}: no token header");
        assert!(
            text(
                &browser,
                &format!("{delivered} dd[data-header='content-type']")
            )
            .await
            .contains("json"),
            "{binding}"
        );
        let body = text(&browser, &format!("{delivered} pre.push-body")).await;
        let body: Value = serde_json::from_str(&body).expect("the body as JSON");
        assert_eq!(body["statusUpdate"]["taskId"], json!(slow), "{binding}");
        // No token (32 hex digits: ids are UUIDs with dashes) anywhere in the section.
        let leaked = browser
            .script(
                "return (document.getElementById('push-section').textContent\
                   .match(/[0-9a-f]{32}/g) || []).filter((m) => !arguments[0].includes(m));",
                json!([webhook]),
            )
            .await;
        assert_eq!(leaked, json!([]), "{binding}: a token shown");
        browser
            .script(
                "document.querySelector(arguments[0]).scrollIntoView();",
                json!([delivered]),
            )
            .await;
        browser
            .screenshot(&shots.join(format!(
                "{shots_prefix}push-{}.png",
                binding.replace('+', "-")
            )))
            .await;
    }

    let violations = serious_violations(&browser).await;
    assert_eq!(violations, json!([]), "accessibility, deliveries shown");
}

/// A `POST` of `body` as JSON to the console's `path`: the status and the JSON answer.
async fn call(http: &reqwest::Client, console: &Trident, path: &str, body: Value) -> (u16, Value) {
    let answer = http
        .post(format!("{}{path}", console.origin))
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = answer.status().as_u16();
    let value = answer.json().await.unwrap_or(Value::Null);
    (status, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_push_receiver_keeps_only_posts_with_the_webhooks_token() {
    let agent = push_agent().await;
    let console = Trident::console(&[&agent.origin]).await;
    let http = reqwest::Client::new();
    let a = agent.origin.as_str();

    let (status, sent) = call(
        &http,
        &console,
        "/api/send",
        json!({ "agent": a, "binding": "JSONRPC", "text": "slow", "returnImmediately": true }),
    )
    .await;
    assert_eq!(status, 200, "{sent}");
    let task = sent["result"]["task"]["id"]
        .as_str()
        .expect("a task")
        .to_owned();

    // A task id is required before the agent is called.
    let (status, refused) = call(
        &http,
        &console,
        "/api/push/watch",
        json!({ "agent": a, "binding": "HTTP+JSON" }),
    )
    .await;
    assert_eq!(status, 400, "{refused}");

    let (status, watched) = call(
        &http,
        &console,
        "/api/push/watch",
        json!({ "agent": a, "binding": "HTTP+JSON", "taskId": task }),
    )
    .await;
    assert_eq!(status, 200, "{watched}");
    assert_eq!(watched["binding"], "HTTP+JSON");
    let url = watched["webhook"]["url"]
        .as_str()
        .expect("the webhook's URL")
        .to_owned();
    let webhook = watched["webhook"]["id"].as_str().expect("an id").to_owned();
    assert_eq!(url, format!("{}/hooks/{webhook}", console.origin));
    assert_eq!(watched["result"]["id"], json!(webhook), "{watched}");
    assert_eq!(watched["result"]["taskId"], json!(task), "{watched}");
    assert!(
        watched["result"]["token"]
            .as_str()
            .is_none_or(|t| t.ends_with('…')),
        "{watched}"
    );

    // Refused, and kept nowhere: no token, another token, too large, no such webhook.
    let marker = json!({ "statusUpdate": { "taskId": "forged", "status": { "state": "TASK_STATE_FAILED" } } });
    let no_token = http.post(&url).json(&marker).send().await.expect("post");
    assert_eq!(no_token.status().as_u16(), 401);
    let wrong = http
        .post(&url)
        .header("a2a-notification-token", "0123456789abcdef0123456789abcdef")
        .header("x-a2a-notification-token", "not-it")
        .json(&marker)
        .send()
        .await
        .expect("post");
    assert_eq!(wrong.status().as_u16(), 401);
    // Refused before its body is read, so the server closes the connection after answering:
    // said up front, so that the client does not reuse it for the next request (which would
    // race the close and fail with an incomplete message).
    let large = http
        .post(&url)
        .header("content-type", "application/json")
        .header("connection", "close")
        .body(vec![b' '; 300 * 1024])
        .send()
        .await
        .expect("post");
    assert_eq!(large.status().as_u16(), 413);
    let nowhere = http
        .post(format!("{}/hooks/no-such-webhook", console.origin))
        .json(&marker)
        .send()
        .await
        .expect("post");
    assert_eq!(nowhere.status().as_u16(), 404);
    let (status, none) = call(&http, &console, "/api/push/deliveries", json!({})).await;
    assert_eq!(status, 200, "{none}");
    assert_eq!(none["deliveries"], json!([]), "{none}");
    assert_eq!(none["refused"], 3, "{none}");

    // The list of deliveries answers the page only, as the rest of the API.
    let plain = http
        .post(format!("{}/api/push/deliveries", console.origin))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("post");
    assert_eq!(plain.status().as_u16(), 415);
    let other = http
        .post(format!("{}/api/push/deliveries", console.origin))
        .header("content-type", "application/json")
        .header("origin", "http://evil.example")
        .body("{}")
        .send()
        .await
        .expect("post");
    assert_eq!(other.status().as_u16(), 403);

    // A second webhook on the task, on JSON-RPC; the task's configs are both the console's.
    let (status, second) = call(
        &http,
        &console,
        "/api/push/watch",
        json!({ "agent": a, "binding": "JSONRPC", "taskId": task }),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    let second_url = second["webhook"]["url"].as_str().expect("a URL").to_owned();
    let second_id = second["webhook"]["id"].as_str().expect("an id").to_owned();
    let (status, configs) = call(
        &http,
        &console,
        "/api/push/configs",
        json!({ "agent": a, "binding": "GRPC", "taskId": task }),
    )
    .await;
    assert_eq!(status, 200, "{configs}");
    let mut listed: Vec<Value> = configs["result"]["configs"]
        .as_array()
        .expect("configs")
        .clone();
    listed.sort_by_key(|c| c["config"]["id"].to_string());
    let mut want = vec![
        json!({ "config": watched["result"], "console": true }),
        json!({ "config": second["result"], "console": true }),
    ];
    want.sort_by_key(|c| c["config"]["id"].to_string());
    assert_eq!(listed, want, "{configs}");

    // The second deleted: gone from the agent, and the console forgets its webhook.
    let (status, deleted) = call(
        &http,
        &console,
        "/api/push/delete",
        json!({ "agent": a, "taskId": task, "configId": second_id }),
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["webhookForgotten"], true, "{deleted}");
    let gone = http
        .post(&second_url)
        .json(&marker)
        .send()
        .await
        .expect("post");
    assert_eq!(gone.status().as_u16(), 404);
    let (_, configs) = call(
        &http,
        &console,
        "/api/push/configs",
        json!({ "agent": a, "taskId": task }),
    )
    .await;
    assert_eq!(
        configs["result"]["configs"],
        json!([{ "config": watched["result"], "console": true }]),
        "{configs}"
    );
    // A config id is required before the agent is called.
    let (status, refused) = call(
        &http,
        &console,
        "/api/push/delete",
        json!({ "agent": a, "taskId": task }),
    )
    .await;
    assert_eq!(status, 400, "{refused}");

    // The agent's own delivery of the cancel is kept, its token masked.
    let (status, canceled) = call(
        &http,
        &console,
        "/api/tasks/cancel",
        json!({ "agent": a, "taskId": task }),
    )
    .await;
    assert_eq!(status, 200, "{canceled}");
    let kept = until("the cancel's delivery", || async {
        let (_, answer) = call(&http, &console, "/api/push/deliveries", json!({})).await;
        let deliveries = answer["deliveries"].as_array()?.clone();
        deliveries
            .iter()
            .any(|d| d["state"] == "TASK_STATE_CANCELED")
            .then_some(answer)
    })
    .await;
    let deliveries = kept["deliveries"].as_array().expect("deliveries");
    for d in deliveries {
        assert_eq!(d["taskId"], json!(task), "{d}");
        assert_eq!(d["watchedTask"], json!(task), "{d}");
        assert_eq!(d["webhook"], json!(webhook), "{d}");
        assert_eq!(d["binding"], "HTTP+JSON", "{d}");
        let headers = d["headers"].as_array().expect("headers");
        let value = |name: &str| {
            headers
                .iter()
                .find(|h| h["name"] == name)
                .and_then(|h| h["value"].as_str())
                .unwrap_or_else(|| panic!("no header {name}: {d}"))
        };
        assert!(masked(value("a2a-notification-token")), "{d}");
        assert!(masked(value("x-a2a-notification-token")), "{d}");
        assert!(value("a2a-notification-id").starts_with(&task), "{d}");
        assert_ne!(d["body"]["statusUpdate"]["taskId"], "forged", "{d}");
    }
    assert_eq!(kept["refused"], 3, "{kept}");
    let last = kept["last"].as_u64().expect("last");
    let (_, later) = call(
        &http,
        &console,
        "/api/push/deliveries",
        json!({ "after": last }),
    )
    .await;
    assert_eq!(later["deliveries"], json!([]), "{later}");
}
