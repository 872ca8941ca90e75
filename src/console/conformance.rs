//! `/api/conformance`: `trident conformance` run from the page, planned and run by the
//! command's own code ([`crate::conformance::Plan`]), each case's result streamed as it
//! finishes.
//!
//! The request is a JSON object: the agent, and optionally the `level` (`must`, `should` or
//! `may`, the default), the `bindings` (card names; default every binding the card declares
//! for A2A 1.x), the `cases` by name (default every case of the level), the callers' `tokens`
//! (`NAME=TOKEN`, as `--token`) and each case's `timeout` in seconds. A request the suite cannot
//! run (an unknown case, a binding the card does not declare) is refused before anything runs;
//! otherwise the answer is `text/event-stream`, one `data:` line of JSON each:
//!
//! - `{"plan": {"url", "bindings", "cases": [{case, tier, level, spec}], "scriptedSkip"}}`
//!   first (`scriptedSkip`: why the scripted tier does not run, or `null`);
//! - `{"cell": {"index", "case", "tier", "level", "spec", "binding", "outcome", "reason",
//!   "observed"}}` per case and binding as it finishes (`index` in the plan's cases);
//! - `{"summary": {…}}` last: the JSON report's counts, agreement and scripted tier, and
//!   `mustFailed`.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use trident::client::Binding;
use trident_conformance::Level;

use super::api::{self, ApiError, State};
use crate::client;
use crate::conformance::{Options, Plan, PlanError, case_json, parse_token};

/// How many cases run at once (as the command's default `--jobs`).
const JOBS: usize = 4;

/// The request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Request {
    /// The agent: a host, an origin or a card URL.
    agent: String,
    /// `must`, `should` or `may`.
    #[serde(default)]
    level: Option<String>,
    /// The bindings to test (`JSONRPC`, `HTTP+JSON`, `GRPC`).
    #[serde(default)]
    bindings: Vec<String>,
    /// The cases to run, by name.
    #[serde(default)]
    cases: Vec<String>,
    /// `NAME=TOKEN`: the bearer token of the principal NAME in cases that need several
    /// callers.
    #[serde(default)]
    tokens: Vec<String>,
    /// Seconds a case may take.
    #[serde(default)]
    timeout: Option<u64>,
}

/// The level named `name`.
fn level(name: Option<&str>) -> Result<Level, ApiError> {
    match name.map(str::trim) {
        None | Some("") => Ok(Level::May),
        Some(n) => Level::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(n))
            .ok_or_else(|| ApiError::bad(format!("{n:?} is not a level (must, should, may)"))),
    }
}

/// The suite's options from the request, checked before the agent is reached.
fn options(state: &State, body: &[u8]) -> Result<Options, ApiError> {
    let request: Request = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad(format!("the request is not a valid API call: {e}")))?;
    // The page names agents on the network only, as every API call (the preset alone may
    // be a file, which the suite cannot test: it needs the agent itself).
    let call = api::Call {
        agent: request.agent.clone(),
        ..api::Call::default()
    };
    if call.agent.trim().is_empty() {
        return Err(ApiError::bad("no agent: give its URL or host"));
    }
    call.target(state)?;
    let url = match client::card_source(request.agent.trim()) {
        client::CardSource::Url(url) => url,
        client::CardSource::File(_) => {
            return Err(ApiError::bad(
                "conformance runs against an agent on the network: give its URL or host",
            ));
        }
    };
    let bindings = request
        .bindings
        .iter()
        .map(|b| client::parse_binding(b).map_err(ApiError::bad))
        .collect::<Result<Vec<Binding>, _>>()?;
    let tokens = request
        .tokens
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(|t| parse_token(t).map_err(ApiError::bad))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout = request.timeout.unwrap_or(30);
    if !(1..=600).contains(&timeout) {
        return Err(ApiError::bad("the timeout is from 1 to 600 seconds"));
    }
    Ok(Options {
        url,
        bindings,
        level: level(request.level.as_deref())?,
        cases: request
            .cases
            .iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect(),
        tokens,
        timeout: Duration::from_secs(timeout),
    })
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Unreachable(e) => ApiError::from(e),
            e @ PlanError::NoBinding(_) => ApiError::new(
                axum::http::StatusCode::BAD_GATEWAY,
                "no_binding",
                e.to_string(),
            ),
            e @ (PlanError::Undeclared { .. } | PlanError::UnknownCase(_)) => {
                ApiError::bad(e.to_string())
            }
        }
    }
}

/// `/api/conformance`.
pub(crate) fn answer<'a>(
    state: &'a State,
    body: &'a [u8],
) -> BoxFuture<'a, Result<axum::response::Response, ApiError>> {
    Box::pin(async move {
        let plan = Plan::new(options(state, body)?).await?;
        let head = json!({ "plan": {
            "url": plan.url,
            "bindings": plan.bindings.iter().map(|b| b.card_name()).collect::<Vec<_>>(),
            "cases": plan.cases.iter().map(case_json).collect::<Vec<_>>(),
            "scriptedSkip": plan.scripted_skip,
        }});
        let cells = Box::pin(plan.run(JOBS));
        let rows = plan.rows();
        // Each cell as it finishes, kept for the summary, which comes once they all have.
        let rest = futures::stream::unfold(Some((plan, rows, cells)), |running| async move {
            let (plan, mut rows, mut cells) = running?;
            match cells.next().await {
                Some((i, cell)) => {
                    let mut item = plan.cases.get(i).map(case_json).unwrap_or_default();
                    if let (Some(item), Value::Object(more)) = (item.as_object_mut(), cell.json()) {
                        item.extend(more);
                        item.insert("binding".into(), cell.binding.card_name().into());
                        item.insert("index".into(), i.into());
                    }
                    plan.record(&mut rows, i, cell);
                    Some((json!({ "cell": item }), Some((plan, rows, cells))))
                }
                None => {
                    let report = plan.report(&rows);
                    let mut summary = report.summary();
                    if let Some(s) = summary.as_object_mut() {
                        s.insert("mustFailed".into(), report.must_failed().into());
                    }
                    Some((json!({ "summary": summary }), None))
                }
            }
        });
        Ok(api::event_stream(futures::stream::iter([head]).chain(rest)))
    })
}
