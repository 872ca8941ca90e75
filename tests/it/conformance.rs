//! `trident conformance` as a real process: the shared behaviour suite against our own
//! `trident serve` (every case reported, nothing failed, the JSON report parses), and — ignored,
//! it needs `TRIDENT_INTEROP_PYTHON` — against the official Python SDK's agent, where the table
//! must be complete and the exit code must match the report.

use std::process::{Command, Output};
use std::time::Duration;

use trident_conformance::CASES;

use crate::harness::PythonAgent;
use crate::process::Trident;

/// Runs `trident conformance ARGS…` to completion (bounded in time).
async fn conformance(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_trident"))
            .arg("conformance")
            .args(&args)
            .env("RUST_LOG", "error")
            .output()
            .expect("run trident conformance")
    });
    tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("trident conformance finished in time")
        .expect("join")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The table's row of `case`: its marks, one per binding.
fn row<'a>(table: &'a str, case: &str) -> Vec<&'a str> {
    table
        .lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(case)).then(|| words.collect())
        })
        .unwrap_or_else(|| panic!("no row for {case} in\n{table}"))
}

/// Checks the table is complete and consistent with its summary and the exit code; returns
/// the number of failed cells.
fn check_table(o: &Output, bindings: usize) -> usize {
    let table = stdout(o);
    let mut counts = [0usize; 3];
    for case in CASES {
        let marks = row(&table, case.name);
        assert_eq!(marks.len(), bindings, "{}: {marks:?}", case.name);
        for m in marks {
            let i = ["pass", "FAIL", "skip"]
                .iter()
                .position(|w| *w == m)
                .unwrap_or_else(|| panic!("{}: mark {m:?}", case.name));
            counts[i] += 1;
        }
    }
    assert!(table.contains("bindings agree: "), "{table}");
    let summary = format!(
        "{} passed, {} failed, {} skipped",
        counts[0], counts[1], counts[2]
    );
    assert!(table.contains(&summary), "{summary} in\n{table}");
    let expected = if counts[1] == 0 { 0 } else { 1 };
    assert_eq!(
        o.status.code(),
        Some(expected),
        "exit code vs the report; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    counts[1]
}

/// Checks the `--json` report has every case on every binding and counts that add up.
fn check_json(o: &Output, bindings: usize) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(
        report["bindings"].as_array().map(Vec::len),
        Some(bindings),
        "{report:#}"
    );
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), CASES.len());
    let mut cells = 0;
    for (case, expected) in cases.iter().zip(CASES) {
        assert_eq!(case["case"], expected.name);
        let results = case["results"].as_object().expect("results");
        assert_eq!(results.len(), bindings, "{case:#}");
        for r in results.values() {
            let outcome = r["outcome"].as_str().expect("outcome");
            assert!(["pass", "fail", "skip"].contains(&outcome), "{r}");
            assert_eq!(r["reason"].is_null(), outcome == "pass", "{r}");
            cells += 1;
        }
    }
    let total: u64 = ["passed", "failed", "skipped"]
        .iter()
        .map(|k| report[k].as_u64().expect("count"))
        .sum();
    assert_eq!(total, cells);
    assert!(report["agree"].is_boolean());
    let failed = report["failed"].as_u64().expect("failed");
    assert_eq!(o.status.code(), Some(if failed == 0 { 0 } else { 1 }));
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_of_our_own_server_is_all_green_over_every_binding() {
    let server = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let o = conformance(&[&server.origin]).await;
    assert_eq!(check_table(&o, 3), 0, "{}", stdout(&o));
    let table = stdout(&o);
    assert!(table.contains("bindings agree: yes"), "{table}");
    // Without an authenticator every caller is the same: the scoping case says so, honestly.
    assert_eq!(
        row(&table, "other_principals_and_tenants_see_task_not_found"),
        ["skip"; 3]
    );
    assert_eq!(
        row(&table, "task_ids_are_generated_by_the_server_and_unique"),
        ["pass"; 3]
    );

    let json = conformance(&[&server.origin, "--json"]).await;
    let report = check_json(&json, 3);
    assert_eq!(report["failed"], 0);
    assert_eq!(report["agree"], true);
    assert!(report["passed"].as_u64() > Some(0));
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
    check_table(&o, 3);
    let json = conformance(&[&agent.card_url, "--json"]).await;
    check_json(&json, 3);
    agent.stop();
}
