//! `trident conformance` as a real process: the shared behaviour suite against our own
//! `trident serve` (every case reported, nothing failed, the JSON report parses), and — ignored,
//! it needs `TRIDENT_INTEROP_PYTHON` — against the official Python SDK's agent, where the table
//! must be complete and the exit code must match the report.

use std::process::Output;
use std::time::Duration;

use trident_conformance::{CASES, Tier, spec};

use crate::harness::PythonAgent;
use crate::process::{Run, Trident, stdout};

/// Runs `trident conformance ARGS…` to completion (bounded in time).
async fn conformance(args: &[&str]) -> Output {
    let mut all = vec!["conformance"];
    all.extend_from_slice(args);
    Run::new(&all)
        .limit(Duration::from_secs(600))
        .output()
        .await
}

/// The table's row of `case`: its marks, one per binding (after the A2A sections it cites).
fn row<'a>(table: &'a str, case: &str) -> Vec<&'a str> {
    table
        .lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(case)).then(|| {
                words
                    .filter(|w| ["pass", "FAIL", "skip"].contains(w))
                    .collect()
            })
        })
        .unwrap_or_else(|| panic!("no row for {case} in\n{table}"))
}

/// The cases the report lists: every case, or only the protocol tier when the agent does not
/// follow the conformance script.
fn listed(scripted: bool) -> impl Iterator<Item = &'static trident_conformance::Case> {
    CASES
        .iter()
        .filter(move |c| scripted || c.tier == Tier::Protocol)
}

/// The `LEVEL: N passed, M failed, K skipped` line of the table.
fn level_line(table: &str, level: &str) -> [usize; 3] {
    let line = table
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{level}: ")))
        .unwrap_or_else(|| panic!("no {level} summary in\n{table}"));
    let n: Vec<usize> = line
        .split(", ")
        .map(|part| {
            part.split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{line}"))
        })
        .collect();
    [n[0], n[1], n[2]]
}

/// Checks the table is complete and consistent with its summaries and the exit code (1 exactly
/// when a MUST case failed); returns the number of failed cells.
fn check_table(o: &Output, bindings: usize, scripted: bool) -> usize {
    let table = stdout(o);
    let mut counts = [0usize; 3];
    for case in listed(scripted) {
        let marks = row(&table, case.name);
        assert_eq!(marks.len(), bindings, "{}: {marks:?}", case.name);
        for m in &marks {
            let i = ["pass", "FAIL", "skip"]
                .iter()
                .position(|w| w == m)
                .unwrap_or_else(|| panic!("{}: mark {m:?}", case.name));
            counts[i] += 1;
        }
    }
    if !scripted {
        for case in CASES.iter().filter(|c| c.tier == Tier::Scripted) {
            assert!(
                !table
                    .lines()
                    .any(|l| l.starts_with(&format!("{} ", case.name))),
                "{} is listed although the scripted tier was skipped",
                case.name
            );
        }
        assert_eq!(
            table.matches("scripted tier skipped: ").count(),
            1,
            "one line for the skipped tier:\n{table}"
        );
    }
    assert!(table.contains("bindings agree: "), "{table}");
    let summary = format!(
        "{} passed, {} failed, {} skipped",
        counts[0], counts[1], counts[2]
    );
    assert!(
        table.contains(&format!("\n{summary}")),
        "{summary} in\n{table}"
    );
    let per_level: Vec<[usize; 3]> = ["MUST", "SHOULD", "MAY"]
        .iter()
        .map(|l| level_line(&table, l))
        .collect();
    for k in 0..3 {
        assert_eq!(
            per_level.iter().map(|l| l[k]).sum::<usize>(),
            counts[k],
            "{table}"
        );
    }
    let expected = if per_level[0][1] == 0 { 0 } else { 1 };
    assert_eq!(
        o.status.code(),
        Some(expected),
        "exit code vs the report; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    counts[1]
}

/// Checks the `--json` report has every listed case on every binding, with its level and
/// section, and counts that add up.
fn check_json(o: &Output, bindings: usize, scripted: bool) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(
        report["bindings"].as_array().map(Vec::len),
        Some(bindings),
        "{report:#}"
    );
    assert_eq!(
        report["scripted"]["ran"], scripted,
        "{:#}",
        report["scripted"]
    );
    let cases = report["cases"].as_array().expect("cases");
    let expected: Vec<_> = listed(scripted).collect();
    assert_eq!(cases.len(), expected.len());
    let mut cells = 0;
    for (case, expected) in cases.iter().zip(expected) {
        assert_eq!(case["case"], expected.name);
        assert_eq!(case["level"], expected.level.name());
        let cited: Vec<&str> = case["spec"]
            .as_array()
            .expect("spec")
            .iter()
            .map(|s| s["section"].as_str().expect("section"))
            .collect();
        assert_eq!(cited, expected.spec, "{case:#}");
        let results = case["results"].as_object().expect("results");
        assert_eq!(results.len(), bindings, "{case:#}");
        for r in results.values() {
            let outcome = r["outcome"].as_str().expect("outcome");
            assert!(["pass", "fail", "skip"].contains(&outcome), "{r}");
            assert_eq!(r["reason"].is_null(), outcome == "pass", "{r}");
            assert!(r["observed"].is_array(), "{r}");
            cells += 1;
        }
    }
    let total: u64 = ["passed", "failed", "skipped"]
        .iter()
        .map(|k| report[k].as_u64().expect("count"))
        .sum();
    assert_eq!(total, cells);
    assert!(report["agree"].is_boolean());
    let must_failed = report["levels"]["MUST"]["failed"]
        .as_u64()
        .expect("MUST failed");
    assert_eq!(o.status.code(), Some(if must_failed == 0 { 0 } else { 1 }));
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_of_our_own_server_is_all_green_over_every_binding() {
    // With the A2A 1.1 preview on: its cases pass, and every 1.0 case still does.
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--protocols",
        "1.0,0.3,1.1-preview",
    ])
    .await;
    let o = conformance(&[&server.origin]).await;
    assert_eq!(check_table(&o, 3, true), 0, "{}", stdout(&o));
    let table = stdout(&o);
    assert!(table.contains("bindings agree: yes"), "{table}");
    for case in trident_conformance::CASES
        .iter()
        .filter(|c| c.name.starts_with("preview_"))
    {
        assert_eq!(row(&table, case.name)[..], ["pass"; 3], "{table}");
    }
    // Without an authenticator every caller is the same: the scoping case says so, honestly.
    assert_eq!(
        row(&table, "other_principals_and_tenants_see_task_not_found")[..],
        ["skip"; 3]
    );
    assert_eq!(
        row(
            &table,
            "follow_up_to_interrupted_task_continues_it_in_order"
        )[..],
        ["pass"; 3]
    );

    let json = conformance(&[&server.origin, "--json"]).await;
    let report = check_json(&json, 3, true);
    assert_eq!(report["failed"], 0);
    assert_eq!(
        report["agree"], true,
        "the bindings disagree: {:#}",
        report["disagreements"]
    );
    assert!(report["passed"].as_u64() > Some(0));
}

/// The README's server (the echo agent, default flags): every protocol case passes or skips
/// for a server switch it cannot have, the scripted tier is one line, and the JUnit report
/// reads back through a real XML parser with the same counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_of_the_echo_agent_passes_the_protocol_tier_and_skips_the_scripted_one() {
    let server = Trident::serve(&["--store", "memory"]).await;
    let dir = std::env::temp_dir().join(format!("trident-junit-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let junit = dir.join("conformance.xml");
    let junit_arg = junit.to_string_lossy().into_owned();
    let o = conformance(&[&server.origin, "--junit", &junit_arg]).await;
    let table = stdout(&o);
    assert_eq!(check_table(&o, 3, false), 0, "{table}");
    assert!(table.contains("bindings agree: yes"), "{table}");
    for line in table.lines().filter(|l| l.starts_with("  skip ")) {
        assert!(
            line.contains("needs a server built with")
                || line.contains("does not offer the A2A 1.1 preview")
                || line.contains("does not tell callers apart")
                || line.contains("before it could be subscribed to"),
            "a protocol case skipped on the echo agent for an unexpected reason: {line}"
        );
    }
    assert!(
        table.contains("scripted tier skipped: the agent answered the handshake"),
        "{table}"
    );

    // Python's xml.etree parses it: one suite per binding, counts that match the table.
    let parsed = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, xml.etree.ElementTree as ET\n\
             root = ET.parse(sys.argv[1]).getroot()\n\
             assert root.tag == 'testsuites', root.tag\n\
             for s in root.findall('testsuite'):\n\
             \x20   cases = s.findall('testcase')\n\
             \x20   assert int(s.get('tests')) == len(cases)\n\
             \x20   f = sum(1 for c in cases if c.find('failure') is not None)\n\
             \x20   k = sum(1 for c in cases if c.find('skipped') is not None)\n\
             \x20   assert int(s.get('failures')) == f and int(s.get('skipped')) == k\n\
             \x20   print(s.get('name'), len(cases), f, k)\n",
        )
        .arg(&junit)
        .output()
        .expect("python3");
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let suites = String::from_utf8_lossy(&parsed.stdout).into_owned();
    let [passed, failed, skipped] = [0, 1, 2].map(|k| {
        ["MUST", "SHOULD", "MAY"]
            .iter()
            .map(|l| level_line(&table, l)[k])
            .sum::<usize>()
    });
    assert_eq!(failed, 0);
    let mut names = Vec::new();
    for line in suites.lines() {
        let v: Vec<&str> = line.split_whitespace().collect();
        names.push(v[0].to_owned());
        let [tests, f, k]: [usize; 3] = [1, 2, 3].map(|i| v[i].parse().expect("count"));
        // Per binding: every listed case, plus the one skipped scripted tier.
        assert_eq!(tests, (passed + failed + skipped) / 3 + 1, "{line}");
        assert_eq!((f, k), (0, skipped / 3 + 1), "{line}");
    }
    assert_eq!(names, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A fake agent whose JSON-RPC endpoint answers every call with a task that has no id:
/// `task_ids_are_generated_by_the_server_and_unique` (MUST) fails on it.
async fn broken_agent() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("addr"));
    let card = serde_json::json!({
        "name": "broken",
        "description": "answers every call with a task without an id",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("{origin}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    });
    let rpc = |body: axum::body::Bytes| async move {
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        axum::Json(serde_json::json!({
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"task": {"id": "", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}},
        }))
    };
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || async move { axum::Json(card) }),
        )
        .route("/rpc", axum::routing::post(rpc));
    tokio::spawn(async move { axum::serve(listener, app).await });
    origin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_exits_1_only_when_a_must_case_fails() {
    let origin = broken_agent().await;
    let must = "task_ids_are_generated_by_the_server_and_unique";
    let should = "invalid_params_errors_name_the_field";
    let o = conformance(&[&origin, "--case", must, "--case", should]).await;
    let table = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{table}");
    assert_eq!(row(&table, must)[..], ["FAIL"]);
    assert_eq!(level_line(&table, "MUST"), [0, 1, 0], "{table}");
    let o = conformance(&[&origin, "--case", should]).await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "a SHOULD failure alone exits 0: {}",
        stdout(&o)
    );
    assert_eq!(level_line(&stdout(&o), "SHOULD"), [0, 1, 0]);
    // `--level must` leaves the SHOULD and MAY cases out.
    let o = conformance(&[&origin, "--level", "must", "--json"]).await;
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let cases = report["cases"].as_array().expect("cases");
    assert!(!cases.is_empty());
    assert!(cases.iter().all(|c| c["level"] == "MUST"), "{report:#}");
    assert_eq!(o.status.code(), Some(1));
    let bad = conformance(&[&origin, "--level", "sometimes"]).await;
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_narrows_to_bindings_and_cases_and_refuses_unknown_ones() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let case = "unknown_task_id_is_task_not_found";
    let o = conformance(&[
        &server.origin,
        "--binding",
        "grpc",
        "--case",
        case,
        "--json",
    ])
    .await;
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(report["bindings"], serde_json::json!(["GRPC"]));
    assert_eq!(report["cases"][0]["case"], case);
    assert_eq!(report["cases"][0]["results"]["GRPC"]["outcome"], "pass");
    assert_eq!(report["cases"][0]["level"], "MUST");
    assert_eq!(report["cases"].as_array().map(Vec::len), Some(1));
    assert_eq!(o.status.code(), Some(0));

    let unknown = conformance(&[&server.origin, "--case", "no_such_case"]).await;
    assert_eq!(unknown.status.code(), Some(2));
    let unreachable = conformance(&["http://127.0.0.1:9"]).await;
    assert_eq!(unreachable.status.code(), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs TRIDENT_INTEROP_PYTHON; run by interop/run.sh"]
async fn conformance_of_the_python_sdk_agent_prints_an_honest_table() {
    let mut agent = PythonAgent::start(&[]).await;
    let o = conformance(&[&agent.card_url]).await;
    println!("{}", stdout(&o));
    check_table(&o, 3, true);
    let json = conformance(&[&agent.card_url, "--json"]).await;
    check_json(&json, 3, true);
    agent.stop();
}

/// A2ACLI_CONFORM_001: every case says which A2A requirement it checks, in each form of the
/// report. Against `trident serve --agent demo`, the table's row of each case names the
/// sections of the A2A v1.0 digest it cites (`§8.4`, `Appendix A`), the JSON report gives
/// each with its number and title, and the JUnit XML carries them as `a2a.spec` properties of
/// each test case, on every binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_cases_name_the_a2a_sections_they_check() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let table = stdout(&conformance(&[&server.origin]).await);
    assert!(table.contains("A2A spec"), "the column's heading: {table}");
    for case in CASES {
        let labels = spec::labels(case.spec);
        assert!(
            labels.starts_with('§') || labels.starts_with("Appendix "),
            "{labels}"
        );
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(case.name))
            .unwrap_or_else(|| panic!("no row for {} in\n{table}", case.name));
        assert!(
            line.contains(&labels),
            "{}: {labels} in {line:?}",
            case.name
        );
    }

    let dir = std::env::temp_dir().join(format!("trident-junit-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let junit = dir.join("conformance.xml");
    let junit_arg = junit.to_string_lossy().into_owned();
    let o = conformance(&[&server.origin, "--json", "--junit", &junit_arg]).await;
    let report = check_json(&o, 3, true);
    for (case, expected) in report["cases"].as_array().expect("cases").iter().zip(CASES) {
        let cited = case["spec"].as_array().expect("spec");
        assert!(!cited.is_empty(), "{case:#}");
        for (s, number) in cited.iter().zip(expected.spec) {
            let section = spec::section(number).expect("a section of the digest");
            assert_eq!(s["title"], section.title, "{case:#}");
            assert_eq!(s["label"], section.label(), "{case:#}");
        }
    }

    // Python's xml.etree reads each test case's `a2a.spec` properties.
    let parsed = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, xml.etree.ElementTree as ET\n\
             root = ET.parse(sys.argv[1]).getroot()\n\
             for s in root.findall('testsuite'):\n\
             \x20   for c in s.findall('testcase'):\n\
             \x20       specs = [p.get('value') for p in c.iter('property') if p.get('name') == 'a2a.spec']\n\
             \x20       print(s.get('name'), c.get('name'), ' | '.join(specs))\n",
        )
        .arg(&junit)
        .output()
        .expect("python3");
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let lines = String::from_utf8_lossy(&parsed.stdout).into_owned();
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        for case in CASES {
            let want: Vec<String> = case
                .spec
                .iter()
                .map(|n| {
                    let s = spec::section(n).expect("a section of the digest");
                    format!("{} {}", s.label(), s.title)
                })
                .collect();
            let line = format!("{binding} {} {}", case.name, want.join(" | "));
            assert!(
                lines.lines().any(|l| l == line),
                "{line} in the JUnit report:\n{lines}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
