//! The A2A behaviour suite, written once and run two ways: `tests/it` runs every case against
//! servers it builds itself (in process, on each store, over each binding, with any
//! [`Variant`]), and `trident conformance URL` runs the same cases against any agent, over each
//! binding its card declares ([`Remote`]).
//!
//! A case is an `async fn(&dyn Target) -> Result<(), Skip>`: it asks the [`Target`] for the
//! [`Fixture`] it needs, calls it through `Arc<dyn A2aService>`, and checks the answers with
//! asserts. A panic is the failure signal; [`run_case`] turns one into [`Outcome::Fail`] with
//! its message and location.

// The cases and their helpers assert with `expect`/`unwrap`-style panics on purpose: a panic
// is how a case reports a failed check (tests/it sees a failed test, the runner a FAIL).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use trident_core::{A2aService, CallContext, Principal};
use trident_proto as pb;

pub mod cases;
pub mod helpers;
mod remote;
pub mod spec;
#[cfg(test)]
mod tests;
pub mod wire;

pub use remote::Remote;
pub use wire::Wire;

/// The extension URI the `required_extension` variant's card requires.
pub const REQUIRED_EXT: &str = "https://example.com/ext/required/v1";

/// Where a case's server comes from.
#[async_trait::async_trait]
pub trait Target: Send + Sync {
    /// A server built as `variant` (or one that behaves so), and a client of it; `Err` when
    /// this target cannot provide one.
    async fn fixture(&self, variant: Variant) -> Result<Fixture, Skip>;

    /// `Ok` when the agent follows the conformance script (docs/conformance-script.md), so
    /// the [`Tier::Scripted`] cases apply; otherwise why not. Local servers run the demo agent,
    /// which does.
    async fn scripted(&self) -> Result<(), Skip> {
        Ok(())
    }
}

/// Why a case did not run: its target cannot provide what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

impl Skip {
    /// A skip for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Server-side switches a case may need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Variant {
    /// Push notifications off in the card's capabilities.
    pub no_push: bool,
    /// Streaming off in the card's capabilities.
    pub no_streaming: bool,
    /// `Some(None)`: the card declares an extended card but none is configured;
    /// `Some(Some(card))`: this extended card is served to authenticated callers.
    pub extended_card: Option<Option<pb::AgentCard>>,
    /// An extension the card marks required.
    pub required_extension: Option<&'static str>,
    /// A missing `A2A-Version` is refused instead of read as 1.0.
    pub strict_version: bool,
    /// The A2A 1.1 preview is offered to callers that send `A2A-Version: 1.1`
    /// (`--protocols 1.0,0.3,1.1-preview`).
    pub preview: bool,
}

impl Variant {
    /// What a server must be built with to be this variant, for people.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.no_push {
            parts.push("push notifications off".to_owned());
        }
        if self.no_streaming {
            parts.push("streaming off".to_owned());
        }
        match &self.extended_card {
            Some(None) => parts.push("an extended card declared but not configured".to_owned()),
            Some(Some(card)) => parts.push(format!("the extended card {:?}", card.name)),
            None => {}
        }
        if let Some(uri) = self.required_extension {
            parts.push(format!("the required extension {uri}"));
        }
        if self.strict_version {
            parts.push("a strict A2A-Version policy (missing version refused)".to_owned());
        }
        if self.preview {
            parts.push("the A2A 1.1 preview (--protocols 1.0,0.3,1.1-preview)".to_owned());
        }
        if parts.is_empty() {
            "the default settings".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// A server and a client of it, for one case. Whatever keeps the server alive lives (and is
/// stopped) with the fixture.
pub struct Fixture {
    /// The client (or the engine itself, in process).
    pub svc: Arc<dyn A2aService>,
    /// The server's card, when the target knows it; cases skip on capabilities it turns off.
    pub card: Option<pb::AgentCard>,
    /// `Authorization` values per principal name; `Bearer token-<name>` when absent.
    tokens: Arc<HashMap<String, String>>,
    /// The interface on the wire, when there is one (not in process).
    wire: Option<Wire>,
    _guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture")
            .field("card", &self.card.as_ref().map(|c| &c.name))
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// A fixture calling `svc`.
    pub fn of(svc: Arc<dyn A2aService>) -> Self {
        Self {
            svc,
            card: None,
            tokens: Arc::default(),
            wire: None,
            _guard: None,
        }
    }

    /// Keeps `guard` (a server, a child process, a scratch store…) alive as long as this.
    pub fn with_guard(mut self, guard: impl std::any::Any + Send + Sync) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// The server's card.
    pub fn with_card(mut self, card: pb::AgentCard) -> Self {
        self.card = Some(card);
        self
    }

    /// The interface this fixture's client calls, on the wire.
    pub fn with_wire(mut self, wire: Wire) -> Self {
        self.wire = Some(wire);
        self
    }

    /// The interface on the wire, or [`Skip::no_wire`] in process.
    pub fn needs_wire(&self) -> Result<&Wire, Skip> {
        self.wire.as_ref().ok_or_else(Skip::no_wire)
    }

    /// `Authorization` values per principal name, for [`cx_as`](Self::cx_as).
    pub fn with_tokens(mut self, tokens: Arc<HashMap<String, String>>) -> Self {
        self.tokens = tokens;
        self
    }

    /// A fixture of `target` built as `variant`.
    pub async fn new(target: &dyn Target, variant: Variant) -> Result<Self, Skip> {
        target.fixture(variant).await
    }

    /// A fixture of `target` with the default settings.
    pub async fn default(target: &dyn Target) -> Result<Self, Skip> {
        target.fixture(Variant::default()).await
    }

    /// A fixture of `target` with the default settings, for a case that needs the agent to
    /// follow the conformance script.
    pub async fn scripted(target: &dyn Target) -> Result<Self, Skip> {
        target.scripted().await?;
        target.fixture(Variant::default()).await
    }

    /// A caller named `principal`: in process the principal itself; over the wire the
    /// `Authorization` value the target maps to it (`Bearer token-<principal>` by default).
    pub fn cx_as(&self, principal: &str) -> CallContext {
        match self.tokens.get(principal) {
            Some(authorization) => CallContext::new()
                .with_principal(Principal::named(principal))
                .with_credentials(authorization.clone()),
            None => helpers::cx_as(principal),
        }
    }

    /// The card's capabilities, when the target knows the card.
    pub fn capabilities(&self) -> Option<&pb::AgentCapabilities> {
        self.card.as_ref().and_then(|c| c.capabilities.as_ref())
    }

    /// Skips unless the card (when known) declares streaming.
    pub fn needs_streaming(&self) -> Result<(), Skip> {
        match self.capabilities() {
            Some(c) if c.streaming != Some(true) => {
                Err(Skip::new("the card does not declare streaming"))
            }
            _ => Ok(()),
        }
    }

    /// Skips unless the card (when known) declares push notifications.
    pub fn needs_push(&self) -> Result<(), Skip> {
        match self.capabilities() {
            Some(c) if c.push_notifications != Some(true) => {
                Err(Skip::new("the card does not declare push notifications"))
            }
            _ => Ok(()),
        }
    }

    /// Skips when the card (when known) declares an extended card.
    pub fn needs_no_extended_card(&self) -> Result<(), Skip> {
        match self.capabilities() {
            Some(c) if c.extended_agent_card == Some(true) => Err(Skip::new(
                "the card declares an extended card (the case starts from a server without one)",
            )),
            _ => Ok(()),
        }
    }

    /// Skips when the server does not tell callers apart: `task` was created by `alice`, and
    /// both `mallory` and an anonymous caller can read it. That is what a server that ignores
    /// credentials (or does not know these tokens) does, so scoping cannot be checked.
    pub async fn needs_distinct_principals(&self, task: &pb::Task) -> Result<(), Skip> {
        let get = |cx: CallContext| {
            let svc = self.svc.clone();
            let id = task.id.clone();
            async move {
                svc.get_task(
                    &cx,
                    pb::GetTaskRequest {
                        id,
                        ..Default::default()
                    },
                )
                .await
                .is_ok()
            }
        };
        if get(self.cx_as("mallory")).await && get(helpers::cx()).await {
            return Err(Skip::new(
                "the server does not tell callers apart (mallory and an anonymous caller both \
                 read alice's task): it ignores credentials or does not know these tokens \
                 (see --token)",
            ));
        }
        Ok(())
    }
}

/// How strongly the spec asks for what a case checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The spec says MUST (or MUST NOT): a failure is non-conformance.
    Must,
    /// The spec says SHOULD, or recommends it.
    Should,
    /// Optional behaviour (MAY), or Trident's own choice where the spec is silent.
    May,
}

impl Level {
    /// Every level, strongest first.
    pub const ALL: [Level; 3] = [Level::Must, Level::Should, Level::May];

    /// `MUST`, `SHOULD` or `MAY`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
        }
    }
}

/// What a case needs from the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Holds whatever the agent replies to ordinary text messages: runs against any agent.
    Protocol,
    /// Needs an agent that follows the conformance script (docs/conformance-script.md).
    Scripted,
}

/// One case of the suite.
#[derive(Clone, Copy)]
pub struct Case {
    /// The rule it checks, as a snake_case sentence (also its test name in tests/it).
    pub name: &'static str,
    /// Which agents it applies to.
    pub tier: Tier,
    /// How strongly the spec asks for it.
    pub level: Level,
    /// Where the A2A v1.0 specification says so: the numbers of the sections (one or more)
    /// of the digest the project implements from, as [`spec::SECTIONS`] lists them (`"8.4"`,
    /// `"A"` for Appendix A). A case of Trident's own choice (level [`Level::May`]) cites the
    /// sections its rule builds on.
    pub spec: &'static [&'static str],
    /// Runs it against a target.
    pub run: for<'a> fn(&'a dyn Target) -> BoxFuture<'a, Result<(), Skip>>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Calls `$m!(case: Tier Level ["section", …], …)` for every case in [`cases`], in order: the one
/// list from which both [`CASES`] and the per-transport tests of tests/it are expanded. A case
/// written in `cases.rs` but missing here fails the `every_case_is_registered` tidy test.
#[macro_export]
macro_rules! with_cases {
    ($m:ident) => {
        $m! {
            // ---- protocol: any agent, ordinary text messages ----
            task_ids_are_generated_by_the_server_and_unique: Protocol Must ["8.1"],
            blocking_send_returns_a_task_at_rest: Protocol Must ["8.3"],
            message_to_terminal_task_is_unsupported_operation: Protocol Must ["8.1", "8.2"],
            send_rejects_invalid_messages_with_invalid_params: Protocol Must ["8.2", "A"],
            invalid_params_errors_name_the_field: Protocol Should ["3.4", "4.4", "5.3"],
            limits_are_enforced_with_invalid_params: Protocol May ["A"],
            unknown_task_id_is_task_not_found: Protocol Must ["8.2", "A"],
            context_id_is_generated_when_absent_and_kept_when_given: Protocol Must ["8.2"],
            push_config_in_send_requires_push_capability: Protocol May ["8.2", "8.10"],
            stream_starts_with_a_task_or_one_message_and_closes: Protocol Must ["8.4"],
            streaming_requires_the_capability: Protocol Must ["8.10"],
            subscribe_to_terminal_or_unknown_task_fails: Protocol Must ["8.4"],
            subscribe_to_a_task_in_progress_starts_with_its_snapshot: Protocol Must ["8.4"],
            history_length_unset_zero_n_and_negative: Protocol Must ["8.6"],
            list_tasks_pages_filters_and_counts: Protocol Must ["8.7"],
            list_tasks_omits_artifacts_unless_asked_and_trims_history: Protocol Must ["8.7", "8.6"],
            list_tasks_status_timestamp_after_is_inclusive: Protocol Must ["8.7"],
            cancel_of_finished_or_unknown_task_fails: Protocol Must ["8.8"],
            other_principals_and_tenants_see_task_not_found: Protocol Must ["8.9", "6.5"],
            tenant_in_request_must_match_transport_tenant: Protocol May ["6.5"],
            push_operations_require_the_capability: Protocol Must ["8.10", "8.11"],
            push_config_create_get_list_delete: Protocol Must ["8.11"],
            push_config_urls_are_validated: Protocol Should ["8.11"],
            extended_card_is_unsupported_unless_declared: Protocol Must ["7.3", "8.10"],
            extended_card_rules: Protocol Must ["7.3"],
            required_extension_must_be_activated: Protocol Must ["6.3", "8.10"],
            unsupported_version_is_rejected: Protocol Must ["6.2"],
            missing_version_is_configurable: Protocol May ["6.2"],
            // ---- protocol, on the wire: the card as served and raw requests (cases/raw.rs) ----
            card_is_served_at_the_well_known_path: Protocol Should ["7.1"],
            card_has_the_required_fields: Protocol Must ["7.2"],
            card_is_cacheable: Protocol Should ["7.1"],
            every_declared_interface_answers: Protocol Must ["7.2", "6.5"],
            unknown_method_or_route_is_refused: Protocol Must ["3.4", "4.4", "5.3"],
            malformed_requests_are_refused: Protocol Must ["3.4", "4.4", "5.3"],
            unsupported_version_is_refused_on_the_wire: Protocol Must ["6.2", "A"],
            a2a_errors_carry_error_info: Protocol Must ["3.4", "4.4", "5.3"],
            non_json_content_type_is_refused: Protocol Should ["3.1", "4.1", "A"],
            // ---- the A2A 1.1 preview (cases/preview.rs, here and at the end of the scripted
            // tier): skipped unless the agent offers it. The preview is not in the 1.0 digest;
            // each case cites the 1.0 rules it builds on (§6.2: a request is processed with
            // the semantics of the version it names). ----
            preview_stays_off_the_wire_for_1_0_callers: Protocol Must ["6.2", "2.4"],
            preview_generation_starts_at_one_and_moves_by_one_per_event: Protocol Must ["6.2", "8.4"],
            // ---- scripted: agents following docs/conformance-script.md ----
            follow_up_to_interrupted_task_continues_it_in_order: Scripted Must ["8.12", "8.1"],
            follow_up_right_after_blocking_return_is_accepted: Scripted Must ["8.12", "8.3"],
            auth_required_task_accepts_messages_and_resumes: Scripted Must ["8.12", "6.4"],
            direct_message_reply_creates_no_task: Scripted Must ["8.1"],
            agent_failure_ends_task_failed_with_message: Scripted Must ["8.1"],
            agent_error_before_any_event_reaches_the_caller: Scripted May ["8.2", "A"],
            rejected_task_refuses_follow_ups: Scripted Must ["8.1"],
            context_is_inferred_from_task_and_mismatch_rejected: Scripted Must ["8.2"],
            second_message_to_working_task_is_refused: Scripted May ["8.12"],
            blocking_send_returns_terminal_task_with_artifacts: Scripted Must ["8.3", "8.5"],
            blocking_send_returns_at_interrupted_state: Scripted Must ["8.3"],
            return_immediately_returns_task_in_progress: Scripted Must ["8.3"],
            stream_starts_with_task_and_closes_at_terminal_state: Scripted Must ["8.4"],
            message_only_stream_has_exactly_one_message: Scripted Must ["8.4"],
            stream_closes_at_input_required: Scripted Should ["8.4"],
            subscribe_starts_with_snapshot_then_live_events_without_gap_or_duplicate: Scripted Must ["8.4"],
            subscribe_stays_open_through_interrupted_states: Scripted Must ["8.4"],
            concurrent_streams_each_get_every_event_in_order: Scripted May ["8.4"],
            resume_after_sequence_number_delivers_the_rest_exactly_once: Scripted May ["8.4", "3.3", "4.5"],
            closing_a_stream_does_not_cancel_the_task: Scripted Must ["8.4"],
            cancel_reaches_the_executor_and_ends_canceled: Scripted Must ["8.8"],
            cancel_interrupted_task: Scripted Should ["8.8", "8.1"],
            repeated_cancel_returns_the_canceled_task: Scripted May ["8.8"],
            // ---- scripted, the A2A 1.1 preview (cases/preview.rs) ----
            preview_long_poll_answers_at_once_when_behind_and_at_its_deadline: Scripted Should ["6.2", "8.6"],
            preview_long_poll_wakes_when_the_task_moves_on: Scripted Should ["6.2", "8.6"],
            preview_stale_precondition_is_refused_and_changes_nothing: Scripted Must ["6.2", "8.12", "A"],
            preview_concurrent_follow_ups_with_one_precondition_one_wins: Scripted Must ["6.2", "8.12"],
        }
    };
}

macro_rules! case_table {
    ($($name:ident : $tier:ident $level:ident [$($section:literal),+]),* $(,)?) => {
        mod boxed {
            use super::*;
            $(
                pub(super) fn $name(t: &dyn Target) -> BoxFuture<'_, Result<(), Skip>> {
                    Box::pin(cases::$name(t))
                }
            )*
        }

        /// Every case, in order.
        pub const CASES: &[Case] = &[$(Case {
            name: stringify!($name),
            tier: Tier::$tier,
            level: Level::$level,
            spec: &[$($section),+],
            run: boxed::$name,
        }),*];
    };
}

with_cases!(case_table);

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every check held.
    Pass,
    /// A check failed (the panic message and where), or the case timed out.
    Fail(String),
    /// The target could not provide what the case needs.
    Skip(String),
}

tokio::task_local! {
    /// Where the running case panicked, filled by the hook [`run_case`] installs.
    static PANIC_AT: Arc<Mutex<Option<String>>>;
    /// What the running case observed, normalised (see [`observe`]).
    static OBSERVED: Arc<Mutex<Vec<String>>>;
}

/// Records one normalised observation of the running case (a state, an error kind, the kinds
/// of a stream's events…): free of ids and timestamps, so that two bindings of one agent
/// observe the same lines and [`run_case_observed`] callers can print where they differ.
/// Outside a case it does nothing.
pub fn observe(line: impl Into<String>) {
    let line = line.into();
    let _ = OBSERVED.try_with(|o| {
        if let Ok(mut o) = o.lock() {
            o.push(line);
        }
    });
}

/// How many observations the running case has recorded (0 outside a case); with
/// [`rewind_observations`], a case that repeats a step as often as time allows keeps only what
/// does not depend on how many rounds it managed.
pub fn observation_mark() -> usize {
    OBSERVED
        .try_with(|o| o.lock().map(|o| o.len()).unwrap_or(0))
        .unwrap_or(0)
}

/// Drops the observations recorded after `mark` (see [`observation_mark`]).
pub fn rewind_observations(mark: usize) {
    let _ = OBSERVED.try_with(|o| {
        if let Ok(mut o) = o.lock() {
            o.truncate(mark);
        }
    });
}

/// Installs (once) a panic hook that, inside [`run_case`], records where the case panicked
/// instead of printing; elsewhere it defers to the previous hook.
fn capture_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            let recorded = PANIC_AT.try_with(|slot| {
                if let Ok(mut slot) = slot.lock() {
                    slot.get_or_insert_with(|| at.unwrap_or_default());
                }
            });
            if recorded.is_err() {
                previous(info);
            }
        }));
    });
}

/// Runs `case` against `target` on its own task, bounded by `timeout`: a panic becomes
/// [`Outcome::Fail`] with its message (and location), a [`Skip`] becomes [`Outcome::Skip`].
/// Panics inside cases are not printed (a hook records their location instead).
pub async fn run_case(case: Case, target: Arc<dyn Target>, timeout: Duration) -> Outcome {
    run_case_observed(case, target, timeout).await.0
}

/// [`run_case`], and what the case [`observe`]d until it ended.
pub async fn run_case_observed(
    case: Case,
    target: Arc<dyn Target>,
    timeout: Duration,
) -> (Outcome, Vec<String>) {
    let observed = Arc::new(Mutex::new(Vec::new()));
    let outcome = run_bounded(case, target, timeout, observed.clone()).await;
    let lines = observed.lock().map(|o| o.clone()).unwrap_or_default();
    (outcome, lines)
}

/// Aborts a task when dropped (a no-op once it has finished).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_bounded(
    case: Case,
    target: Arc<dyn Target>,
    timeout: Duration,
    observed: Arc<Mutex<Vec<String>>>,
) -> Outcome {
    capture_panics();
    let at = Arc::new(Mutex::new(None));
    let run = case.run;
    let handle = tokio::spawn(PANIC_AT.scope(
        at.clone(),
        OBSERVED.scope(observed, async move { run(&*target).await }),
    ));
    // The case stops when it times out, and when whoever awaits it gives up (a console page
    // closed in the middle of a run).
    let _abort = AbortOnDrop(handle.abort_handle());
    let outcome = match tokio::time::timeout(timeout, handle).await {
        Err(_) => return Outcome::Fail(format!("timed out after {} s", timeout.as_secs())),
        Ok(outcome) => outcome,
    };
    match outcome {
        Ok(Ok(())) => Outcome::Pass,
        Ok(Err(skip)) => Outcome::Skip(skip.0),
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panicked".to_owned());
            let location = at.lock().ok().and_then(|mut a| a.take());
            Outcome::Fail(match location {
                Some(l) if !l.is_empty() => format!("{message} (at {l})"),
                _ => message,
            })
        }
        Err(e) => Outcome::Fail(format!("the case's task ended: {e}")),
    }
}
