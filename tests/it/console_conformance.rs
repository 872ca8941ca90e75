//! `trident console`'s Conformance and Compare bindings sections in headless Chromium, on
//! `trident serve --agent demo`: conformance runs from the page over every binding the card
//! declares (JSON-RPC, HTTP+JSON, gRPC), each result shown as it finishes in a row per case
//! with a cell per binding and the A2A section it checks, then the summary: no MUST case
//! failed, its counts those of the rows, the bindings agree. Then a SendMessage and a GetTask
//! made over each binding agree, ids and timestamps aside. axe-core checks the page; the
//! screenshots `conformance.png`, `conformance-summary.png` and `compare.png` go to `target/console-screenshots/`.
//!
//! Skipped with the reason printed when chromium, chromedriver or npm is missing, except under
//! CI, where it fails (as the other browser tests).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::console::{
    click_and_wait, data, on_the_demo_agent, screenshots, serious_violations, shown_error, text,
};
use crate::webdriver::Browser;

const BINDINGS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

/// A screenshot at `path` with the element `id` at the top of the window.
async fn shoot(browser: &Browser, id: &str, path: &std::path::Path) {
    browser
        .script(
            "document.getElementById(arguments[0]).scrollIntoView();",
            json!([id]),
        )
        .await;
    browser.screenshot(path).await;
}

/// The bindings the table `id` has a column for.
async fn columns(browser: &Browser, id: &str) -> Value {
    browser
        .script(
            "return [...document.querySelectorAll('#' + arguments[0] + ' thead th[data-binding]')]\
             .map((th) => th.dataset.binding);",
            json!([id]),
        )
        .await
}

/// Runs the comparison of `operation` from the page and waits for its answer: the rows of the
/// fields that differ (none when the bindings agree), after checking a column per binding, no
/// error, and a status that says what the rows show.
async fn compare(browser: &Browser, operation: &str) -> Value {
    browser
        .click(&format!("#compare-operation option[value='{operation}']"))
        .await;
    click_and_wait(
        browser,
        "#run-compare",
        &format!("the comparison of {operation}"),
        "return document.getElementById('compare-status').dataset.done === 'true';",
    )
    .await;
    assert_eq!(
        data(browser, "#compare-status", "operation")
            .await
            .as_deref(),
        Some(operation)
    );
    assert_eq!(
        columns(browser, "compare-results").await,
        json!(BINDINGS),
        "{operation}"
    );
    let fields = browser
        .script(
            "return document.querySelectorAll('#compare-results tbody tr').length;",
            json!([]),
        )
        .await;
    assert!(fields.as_u64() > Some(0), "{operation}: no field shown");
    let differing = browser
        .script(
            "return [...document.querySelectorAll('#compare-results tbody tr.differs')]\
             .map((r) => r.textContent);",
            json!([]),
        )
        .await;
    let agree = data(browser, "#compare-status", "agree").await.as_deref() == Some("true");
    assert_eq!(
        agree,
        differing == json!([]),
        "{operation}: the status and the rows: {differing}"
    );
    assert_eq!(
        text(browser, "#compare-status")
            .await
            .starts_with("The bindings agree"),
        agree
    );
    differing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_runs_conformance_and_compares_the_bindings_of_the_demo_agent() {
    let Some((_agent, _console, browser)) = on_the_demo_agent("console conformance test").await
    else {
        return;
    };
    let shots = screenshots();
    let counted = run_conformance(&browser, "").await;
    // Our agent: no MUST case failed, and the bindings agree.
    assert_eq!(count(&counted, "MUST", "fail"), 0);
    for (key, want) in [("mustFailed", "0"), ("agree", "true")] {
        assert_eq!(
            data(&browser, "#conformance-summary", key).await.as_deref(),
            Some(want),
            "{}\n{}",
            text(&browser, "#conformance-summary").await,
            text(&browser, "#conformance-results").await
        );
    }
    assert_eq!(
        text(&browser, "#conformance-agree").await,
        "The bindings agree."
    );
    let violations = serious_violations(&browser).await;
    assert_eq!(violations, json!([]), "accessibility, conformance run");

    // The bindings side by side: a SendMessage (a task of its own on each), then a GetTask of
    // the task the first one created, which the page fills in.
    let (send, get) = compare_send_and_get(&browser).await;
    assert_eq!(send, json!([]), "SendMessage");
    assert_eq!(get, json!([]), "GetTask");
    shoot(&browser, "compare-heading", &shots.join("compare.png")).await;
    let violations = serious_violations(&browser).await;
    assert_eq!(violations, json!([]), "accessibility, bindings compared");
}

/// The same against the demo agent built with the official Python SDK
/// (`interop/python/agent.py`; run by interop/run.sh, which installs it): the run ends with its
/// summary, every row with a result per binding and the counts those of the rows (the SDK's
/// own failures are its table in interop/conformance/expected.md: not asserted here), and the
/// two comparisons are made over every binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs TRIDENT_INTEROP_PYTHON; run by interop/run.sh"]
async fn console_runs_conformance_and_compares_the_bindings_of_the_python_sdk_agent() {
    let Some(mut agent) =
        crate::console::python_agent(crate::harness::PythonSdk::V1, "console conformance test")
            .await
    else {
        return;
    };
    let (_console, browser) = crate::console::opened(&agent.card_url).await;
    let counted = run_conformance(&browser, "python-").await;
    assert!(count(&counted, "All", "pass") > 0, "{counted:?}");
    let (send, get) = compare_send_and_get(&browser).await;
    eprintln!("the Python SDK agent's bindings compared: SendMessage {send}, GetTask {get}");
    shoot(
        &browser,
        "compare-heading",
        &screenshots().join("python-compare.png"),
    )
    .await;
    agent.stop();
}

/// How many cells of `level` (`All`: every level) have `outcome`.
fn count(counted: &BTreeMap<(String, String), u64>, level: &str, outcome: &str) -> u64 {
    counted
        .iter()
        .filter(|((l, o), _)| (level == "All" || l == level) && o == outcome)
        .map(|(_, n)| *n)
        .sum::<u64>()
}

/// A SendMessage compared over the bindings, then a GetTask of the task the first one
/// created (which the page fills in): the rows that differ in each.
async fn compare_send_and_get(browser: &Browser) -> (Value, Value) {
    browser.type_into("#compare-text", "hello").await;
    let send = compare(browser, "send").await;
    let task = browser
        .script(
            "return document.getElementById('compare-task').value;",
            json!([]),
        )
        .await;
    assert!(
        task.as_str().is_some_and(|t| !t.is_empty()),
        "the task id: {task}"
    );
    (send, compare(browser, "get").await)
}

/// Runs every conformance case from the page over every binding the card declares, watching
/// the results come in one by one, and checks what the page shows: a row per case with the
/// A2A section it checks and a result per binding, at least one pass per binding, and a
/// summary whose counts are the rows'. Returns the cells counted by (level, outcome);
/// screenshots named with `shots_prefix`.
async fn run_conformance(browser: &Browser, shots_prefix: &str) -> BTreeMap<(String, String), u64> {
    let shots = screenshots();
    browser
        .until(
            "the conformance section",
            "return !document.getElementById('conformance-section').hidden \
             && document.querySelectorAll('.conformance-binding').length > 0;",
        )
        .await;
    // A checkbox per binding the card declares for A2A 1.0, each checked.
    let offered = browser
        .script(
            "return [...document.querySelectorAll('.conformance-binding')]\
             .map((b) => [b.value, b.checked]);",
            json!([]),
        )
        .await;
    assert_eq!(
        offered,
        json!([["JSONRPC", true], ["HTTP+JSON", true], ["GRPC", true]])
    );

    // Conformance, every case: the results come in as the cases finish, then the summary.
    let started = std::time::Instant::now();
    browser.click("#run-conformance").await;
    browser
        .until(
            "the run's plan",
            "return document.getElementById('conformance-results').dataset.bindings ?? null;",
        )
        .await;
    let total = browser
        .script(
            "return document.querySelectorAll('#conformance-results td[data-binding]').length;",
            json!([]),
        )
        .await
        .as_u64()
        .expect("a count");
    assert!(total > 0);
    // Progress is watched cell by cell: each wait is for the next result, not the whole run.
    let mut seen_partial = false;
    let mut last = 0;
    loop {
        let progress = browser
            .until(
                "the next conformance result or the summary",
                &format!(
                    "const n = document.querySelectorAll(\
                       '#conformance-results td[data-binding]:not([data-outcome=\"\"])').length; \
                     const done = document.getElementById('conformance-summary').dataset.done === 'true'; \
                     return (done || n > {last}) ? [n, done] : null;"
                ),
            )
            .await;
        let n = progress[0].as_u64().expect("a count");
        seen_partial |= n > 0 && n < total;
        last = n;
        if progress[1] == Value::Bool(true) {
            break;
        }
    }
    eprintln!(
        "conformance from the console: {total} results in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(seen_partial, "the results came in all at once");
    let error = shown_error(browser).await;
    assert!(error.is_null(), "conformance: {error}");

    // Every row has a result per binding, and the A2A section it checks.
    assert_eq!(
        columns(browser, "conformance-results").await,
        json!(BINDINGS)
    );
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#conformance-results tbody tr')].map((r) => ({\
               level: r.dataset.level, spec: r.querySelector('.spec').textContent,\
               cells: [...r.querySelectorAll('td[data-binding]')]\
                 .map((c) => [c.dataset.binding, c.dataset.outcome]) }));",
            json!([]),
        )
        .await;
    let rows = rows.as_array().expect("rows");
    assert!(!rows.is_empty());
    // (level, outcome) -> how many cells, and per binding how many passed.
    let mut counted: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut passed: BTreeMap<String, u64> = BTreeMap::new();
    for row in rows {
        assert!(
            row["spec"]
                .as_str()
                .is_some_and(|s| s.starts_with('§') || s.starts_with("Appendix ")),
            "{row}"
        );
        let cells = row["cells"].as_array().expect("cells");
        let bindings: Vec<&str> = cells.iter().filter_map(|c| c[0].as_str()).collect();
        assert_eq!(bindings, BINDINGS, "{row}");
        for cell in cells {
            let outcome = cell[1].as_str().unwrap_or_default();
            assert!(
                ["pass", "fail", "skip"].contains(&outcome),
                "a cell without its result: {row}"
            );
            let level = row["level"].as_str().unwrap_or_default().to_owned();
            *counted.entry((level, outcome.to_owned())).or_default() += 1;
            if outcome == "pass" {
                *passed
                    .entry(cell[0].as_str().unwrap_or_default().to_owned())
                    .or_default() += 1;
            }
        }
    }
    for binding in BINDINGS {
        assert!(
            passed.get(binding).copied().unwrap_or(0) > 0,
            "{binding}: {passed:?}"
        );
    }
    // The summary: its counts are the rows'.
    let summary = browser
        .script(
            "return [...document.querySelectorAll('#conformance-counts tbody tr')].map((r) => \
               [r.dataset.level, ...[...r.querySelectorAll('td')].map((td) => Number(td.textContent))]);",
            json!([]),
        )
        .await;
    let expected: Vec<Value> = ["MUST", "SHOULD", "MAY", "All"]
        .into_iter()
        .map(|l| {
            json!([
                l,
                count(&counted, l, "pass"),
                count(&counted, l, "fail"),
                count(&counted, l, "skip")
            ])
        })
        .collect();
    assert_eq!(summary, Value::Array(expected));
    for (key, outcome) in [("passed", "pass"), ("failed", "fail"), ("skipped", "skip")] {
        assert_eq!(
            data(browser, "#conformance-summary", key).await,
            Some(count(&counted, "All", outcome).to_string()),
            "{key}"
        );
    }
    shoot(
        browser,
        "conformance-heading",
        &shots.join(format!("{shots_prefix}conformance.png")),
    )
    .await;
    shoot(
        browser,
        "conformance-summary",
        &shots.join(format!("{shots_prefix}conformance-summary.png")),
    )
    .await;
    counted
}

/// The conformance and comparison calls refuse what they cannot run with a JSON error, before
/// any case runs or any binding is called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_conformance_and_compare_refuse_bad_requests() {
    let agent = crate::process::Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let console = crate::process::Trident::console(&[]).await;
    let http = reqwest::Client::new();
    let origin = &agent.origin;
    for (path, body, status, code) in [
        (
            "conformance",
            json!({ "agent": origin, "level": "often" }),
            400,
            "bad_request",
        ),
        (
            "conformance",
            json!({ "agent": origin, "cases": ["no_such_case"] }),
            400,
            "bad_request",
        ),
        (
            "conformance",
            json!({ "agent": origin, "bindings": ["SOAP"] }),
            400,
            "bad_request",
        ),
        (
            "conformance",
            json!({ "agent": origin, "tokens": ["alice"] }),
            400,
            "bad_request",
        ),
        (
            "conformance",
            json!({ "agent": origin, "auth": {} }),
            400,
            "bad_request",
        ),
        (
            "conformance",
            json!({ "agent": "/etc/passwd" }),
            400,
            "bad_request",
        ),
        (
            "conformance",
            json!({ "agent": "127.0.0.1:9" }),
            502,
            "A2ACLI_ERR_UNREACHABLE",
        ),
        (
            "compare/get",
            json!({ "agent": origin }),
            400,
            "bad_request",
        ),
        (
            "compare/send",
            json!({ "agent": origin, "text": " " }),
            400,
            "bad_request",
        ),
        (
            "compare/list",
            json!({ "agent": origin, "pageSize": 0 }),
            400,
            "bad_request",
        ),
    ] {
        let answer = http
            .post(format!("{}/api/{path}", console.origin))
            .json(&body)
            .send()
            .await
            .expect("an answer");
        assert_eq!(answer.status().as_u16(), status, "{path} {body}");
        let error: Value = answer.json().await.expect("a JSON error");
        assert_eq!(error["error"]["code"], code, "{path} {body}: {error}");
    }
}
