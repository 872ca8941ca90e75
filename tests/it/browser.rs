//! A web page calls `trident serve` directly from headless Chromium (issue 26): JSON-RPC and
//! HTTP+JSON with `fetch`, gRPC-Web with two real browser clients from npm (Connect's gRPC-Web
//! transport in binary, Google's `grpc-web` in `-text`), unary, server-streaming and an
//! error, all across origins thanks to `--cors-origin`; and the same page from an origin that
//! is not allowed, or against an agent with no `--cors-origin` at all, gets nothing (the
//! browser blocks every call), while the agent sends no `Access-Control-*` header.
//!
//! The page is `tests/browser/` (`page.mjs`, `index.html`), its npm packages pinned by
//! `package-lock.json` (installed with `npm ci` when the lock changed) and bundled with
//! esbuild into a temporary directory; the test serves it on loopback ports of its own (a port
//! is an origin), drives Chromium through chromedriver's WebDriver HTTP API and reads the
//! results the page writes into its DOM. Without chromium, chromedriver or npm the browser
//! test is skipped with the reason printed, except under CI, where it fails (`.ci/run`
//! installs them).

use std::path::Path;
use std::process::Command;

use reqwest::header::{HeaderMap, ORIGIN};
use serde_json::{Value, json};

use crate::process::{TempDir, Trident};
use crate::webdriver::{Browser, missing_tools, npm_ci, page_dir, run};

/// The page in `dir`: `index.html`, `bundle.js` (esbuild's bundle of `page.mjs` and its npm
/// packages, installed by `npm ci` when the lock has changed) and `descriptors.bin` (the
/// agent's protobuf descriptors, which the page builds its messages from).
fn build_page(dir: &Path) {
    let src = page_dir();
    npm_ci();
    let mut esbuild = Command::new(src.join("node_modules/.bin/esbuild"));
    esbuild
        .args([
            "page.mjs",
            "--bundle",
            "--format=esm",
            "--log-level=warning",
        ])
        .arg(format!("--outfile={}", dir.join("bundle.js").display()))
        .current_dir(&src);
    run(esbuild, "esbuild bundle of tests/browser/page.mjs");
    std::fs::copy(src.join("index.html"), dir.join("index.html")).expect("copy index.html");
    std::fs::write(
        dir.join("descriptors.bin"),
        trident_proto::FILE_DESCRIPTOR_SET,
    )
    .expect("write descriptors.bin");
}

/// Serves the files of `dir` on a loopback port of its own: a page origin. Returns
/// `http://127.0.0.1:PORT`.
async fn serve_page(dir: &Path) -> String {
    let file = |name: &str, content_type: &'static str| {
        let body = std::fs::read(dir.join(name)).expect("page file");
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, content_type)], body) }
        })
    };
    let router = axum::Router::new()
        .route(
            "/index.html",
            file("index.html", "text/html; charset=utf-8"),
        )
        .route("/bundle.js", file("bundle.js", "text/javascript"))
        .route(
            "/descriptors.bin",
            file("descriptors.bin", "application/octet-stream"),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the page's port");
    let addr = listener.local_addr().expect("page address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

/// Opens the page at `page` calling `agent` in `browser`, waits for its checks to finish and
/// returns what it wrote into `<pre id="results">`.
async fn page_results(browser: &Browser, page: &str, agent: &str) -> Value {
    let url = format!("{page}/index.html?agent={agent}");
    browser.command("url", json!({ "url": url })).await;
    browser
        .command("timeouts", json!({ "script": 60_000 }))
        .await;
    let text = browser
        .command(
            "execute/async",
            json!({
                "script": "const done = arguments[arguments.length - 1];\
                    (window.done || Promise.reject(new Error('bundle.js did not run')))\
                    .then(() => done(document.getElementById('results').textContent),\
                          (e) => done('page failed: ' + e));",
                "args": [],
            }),
        )
        .await;
    let text = text.as_str().expect("the results are text");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A check that succeeded: its value.
fn ok<'a>(results: &'a Value, check: &str) -> &'a Value {
    let outcome = &results[check];
    assert!(
        outcome.get("ok").is_some(),
        "{check} failed in the browser: {outcome} (all: {results})"
    );
    &outcome["ok"]
}

/// The summary of a completed task echoing `text`.
fn assert_echo(task: &Value, text: &str) {
    assert_eq!(task["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["text"], text, "{task}");
}

/// Every check of the page failed as a blocked cross-origin call does.
fn assert_all_blocked(results: &Value, why: &str) {
    assert!(results.get("page").is_none(), "{why}: {results}");
    for check in [
        "jsonrpc",
        "rest",
        "grpcweb_unary",
        "grpcweb_stream",
        "grpcwebtext_unary",
        "grpcwebtext_stream",
    ] {
        let outcome = &results[check];
        assert!(
            outcome.get("ok").is_none() && outcome.get("error").is_some(),
            "{why}: {check} should be blocked: {outcome}"
        );
    }
    // What a browser says of a call it blocked: fetch (and Connect, over fetch) "Failed to
    // fetch"; grpc-web's XMLHttpRequest an HTTP status of 0 (no response it may read).
    for (check, blocked) in [
        ("jsonrpc", "Failed to fetch"),
        ("rest", "Failed to fetch"),
        ("grpcweb_unary", "Failed to fetch"),
        ("grpcweb_stream", "Failed to fetch"),
        ("grpcwebtext_unary", "http status code: 0"),
        ("grpcwebtext_stream", "http status code: 0"),
    ] {
        let error = results[check]["error"].as_str().unwrap_or_default();
        assert!(error.contains(blocked), "{why}: {check}: {error}");
    }
}

/// The page calls the agent over every binding from an allowed origin; from another origin,
/// and against an agent without `--cors-origin`, every call is blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_calls_the_agent_directly_across_origins() {
    if let Some(reason) = missing_tools() {
        eprintln!("browser test skipped: {reason}");
        return;
    }
    let dir = TempDir::new("trident-page");
    build_page(&dir.0);
    let (allowed, other) = (serve_page(&dir.0).await, serve_page(&dir.0).await);
    let agent = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--cors-origin",
        &allowed,
    ])
    .await;
    let browser = Browser::start().await;

    let results = page_results(&browser, &allowed, &agent.origin).await;
    assert!(results.get("page").is_none(), "{results}");
    assert_echo(ok(&results, "jsonrpc"), "hello from jsonrpc");
    let rest = ok(&results, "rest");
    assert_echo(&rest["sent"], "hello from rest");
    assert_echo(&rest["fetched"], "hello from rest");
    assert_eq!(rest["same"], true, "GET /tasks/ID is the sent task: {rest}");
    assert_echo(ok(&results, "grpcweb_unary"), "hello from grpc-web");
    assert_echo(
        ok(&results, "grpcwebtext_unary"),
        "hello from grpc-web-text",
    );
    // `stream 3 1`: three artifact chunks, in order, between the task and its completion.
    let stream = ok(&results, "grpcweb_stream");
    assert_eq!(
        stream["kinds"],
        json!([
            "task",
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]),
        "{stream}"
    );
    let stream = ok(&results, "grpcwebtext_stream");
    assert_eq!(
        stream["kinds"],
        json!([
            "task",
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]),
        "{stream}"
    );
    // Errors map as on gRPC: an unknown task is NOT_FOUND (5), read by both clients.
    assert_eq!(results["grpcweb_error"]["code"], 5, "{results}");
    assert_eq!(results["grpcwebtext_error"]["code"], 5, "{results}");

    let results = page_results(&browser, &other, &agent.origin).await;
    assert_all_blocked(&results, "from an origin not allowed");

    let closed = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let results = page_results(&browser, &allowed, &closed.origin).await;
    assert_all_blocked(&results, "from an agent without --cors-origin");
}

/// The `Access-Control-*` headers of every response `agent` gives a caller from `origin`:
/// preflights and calls on JSON-RPC, HTTP+JSON and gRPC-Web.
async fn cors_headers(agent: &str, origin: &str) -> Vec<(String, HeaderMap)> {
    let http = reqwest::Client::new();
    let grpc_web = format!("{agent}/lf.a2a.v1.A2AService/GetTask");
    let mut seen = Vec::new();
    for (method, url, content_type) in [
        ("OPTIONS", format!("{agent}/"), None),
        ("OPTIONS", format!("{agent}/message:send"), None),
        ("OPTIONS", grpc_web.clone(), None),
        ("POST", format!("{agent}/"), Some("application/json")),
        (
            "POST",
            format!("{agent}/message:send"),
            Some("application/json"),
        ),
        ("GET", format!("{agent}/tasks/nope"), None),
        ("POST", grpc_web.clone(), Some("application/grpc-web+proto")),
    ] {
        let mut request = http
            .request(method.parse().expect("method"), &url)
            .header(ORIGIN, origin)
            .header("a2a-version", "1.0");
        if method == "OPTIONS" {
            request = request
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", "content-type");
        }
        if let Some(ct) = content_type {
            request = request.header("content-type", ct).body("{}");
        }
        let response = request.send().await.expect("a response");
        let cors: HeaderMap = response
            .headers()
            .iter()
            .filter(|(k, _)| k.as_str().starts_with("access-control-"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        seen.push((format!("{method} {url}"), cors));
    }
    seen
}

/// Without `--cors-origin` no response carries an `Access-Control-*` header, preflights
/// included; with it, the allowed origin gets them on every binding and another origin does
/// not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_headers_only_for_configured_origins() {
    let page = "http://127.0.0.1:9";
    let closed = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    for (what, headers) in cors_headers(&closed.origin, page).await {
        assert!(headers.is_empty(), "no --cors-origin: {what}: {headers:?}");
    }

    let open = Trident::serve_with_env(
        &["--agent", "demo", "--store", "memory"],
        &[(
            "TRIDENT_CORS_ORIGINS",
            "https://other.example, http://127.0.0.1:9",
        )],
    )
    .await;
    for (what, headers) in cors_headers(&open.origin, page).await {
        assert_eq!(
            headers
                .get("access-control-allow-origin")
                .map(|v| v.as_bytes()),
            Some(page.as_bytes()),
            "{what}: {headers:?}"
        );
        assert!(
            headers.get("access-control-allow-credentials").is_none(),
            "{what}"
        );
    }
    for (what, headers) in cors_headers(&open.origin, "http://127.0.0.1:10").await {
        assert!(headers.is_empty(), "another origin: {what}: {headers:?}");
    }

    let refused = Trident::serve_refused(&["--cors-origin", "127.0.0.1:9"]).await;
    assert!(refused.contains("--cors-origin"), "{refused}");
}

/// With authentication on, an allowed origin's preflight (which carries no credentials) is
/// still answered, and a refusal is readable by the page: it can tell 401 from a blocked call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflights_pass_authentication_and_refusals_are_readable() {
    let page = "http://127.0.0.1:9";
    let agent = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--bearer",
        "alice=secret-token",
        "--cors-origin",
        page,
    ])
    .await;
    let http = reqwest::Client::new();
    let preflight = http
        .request(reqwest::Method::OPTIONS, format!("{}/", agent.origin))
        .header(ORIGIN, page)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type, a2a-version",
        )
        .send()
        .await
        .expect("preflight");
    assert_eq!(preflight.status(), reqwest::StatusCode::NO_CONTENT);
    assert_eq!(
        preflight.headers()["access-control-allow-headers"],
        "authorization, content-type, a2a-version"
    );
    let refused = http
        .post(format!("{}/message:send", agent.origin))
        .header(ORIGIN, page)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("refusal");
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(refused.headers()["access-control-allow-origin"], page);
    let exposed = refused.headers()["access-control-expose-headers"]
        .to_str()
        .expect("ASCII");
    assert!(exposed.contains("www-authenticate"), "{exposed}");
}
