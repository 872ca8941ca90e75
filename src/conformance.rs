//! `trident conformance URL`: the behaviour suite of `trident-conformance` (the same cases
//! `cargo test` runs against our own servers) against any A2A agent, over every binding its
//! card declares.
//!
//! Two tiers: the protocol cases run against any agent; the scripted ones only when the agent
//! answers the conformance script's handshake (docs/conformance-script.md), probed once; when
//! it does not, the whole tier is one line of the report saying how to enable it. The table
//! groups the cases by level (MUST / SHOULD / MAY) with the A2A requirement each checks (the
//! sections of the A2A v1.0 digest it cites, `trident_conformance::spec`); where bindings
//! disagree it prints what each observed. `--json` prints the same as one JSON object (each
//! case's `spec`: number, label, title), `--junit FILE` writes JUnit XML for CI (each test
//! case's `a2a.spec` properties).
//!
//! Exit status: 0 when no MUST case failed, 1 when one did, 2 on a usage error, 3 when the
//! agent (its card) cannot be reached.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use trident_client::Binding;
use trident_conformance::{CASES, Case, Level, Outcome, Remote, Target, Tier, spec};

use crate::client::BindingArg;

/// `conformance`
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The agent: its origin (the card is read from /.well-known/agent-card.json) or the URL
    /// of its card.
    url: String,
    /// Test only this binding (repeatable; default: every binding the card declares).
    #[arg(long = "binding", value_enum)]
    bindings: Vec<BindingArg>,
    /// Print a JSON report instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the report as JUnit XML to FILE (one test suite per binding).
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
    /// Run only the cases of this level and stronger: `must`, `should` or `may` (all).
    #[arg(long, value_enum, default_value = "may")]
    level: LevelArg,
    /// Run only this case (repeatable; the names are the table's rows).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Act as principal NAME with `Authorization: Bearer TOKEN` in cases that need several
    /// callers (repeatable; default alice=token-alice, bob=token-bob, mallory=token-mallory,
    /// a=token-a).
    #[arg(long = "token", value_name = "NAME=TOKEN", value_parser = parse_token)]
    tokens: Vec<(String, String)>,
    /// Give up on a case after this many seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Run this many cases at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
}

/// `--level`
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LevelArg {
    /// MUST cases only.
    Must,
    /// MUST and SHOULD cases.
    Should,
    /// Every case.
    May,
}

impl From<LevelArg> for Level {
    fn from(l: LevelArg) -> Self {
        match l {
            LevelArg::Must => Level::Must,
            LevelArg::Should => Level::Should,
            LevelArg::May => Level::May,
        }
    }
}

/// `NAME=TOKEN` (as `--token`): the principal and its bearer token.
pub(crate) fn parse_token(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, token)) if !name.is_empty() && !token.is_empty() => {
            Ok((name.to_owned(), token.to_owned()))
        }
        _ => Err(format!("{s:?} is not NAME=TOKEN")),
    }
}

/// One cell of the table: how one case ended on one binding.
pub(crate) struct Cell {
    /// The binding it ran over.
    pub(crate) binding: Binding,
    /// How it ended.
    pub(crate) outcome: Outcome,
    /// What the case observed, normalised (see `trident_conformance::observe`).
    observed: Vec<String>,
    elapsed: Duration,
}

impl Cell {
    /// The cell as the JSON report shows it: `outcome`, `reason` (`null` on a pass) and
    /// `observed`.
    pub(crate) fn json(&self) -> serde_json::Value {
        let reason = match &self.outcome {
            Outcome::Pass => serde_json::Value::Null,
            Outcome::Fail(r) | Outcome::Skip(r) => r.clone().into(),
        };
        serde_json::json!({
            "outcome": word(&self.outcome),
            "reason": reason,
            "observed": self.observed,
        })
    }
}

/// What to run: the agent, the bindings (none: every binding its card declares), the level,
/// the cases by name (none: every case of the level), the callers' tokens and each case's time
/// limit. The command's options, or the console's.
pub(crate) struct Options {
    /// The agent's origin or the URL of its card.
    pub(crate) url: String,
    /// The bindings to test, in this order.
    pub(crate) bindings: Vec<Binding>,
    /// The weakest level to run.
    pub(crate) level: Level,
    /// The cases to run, by name.
    pub(crate) cases: Vec<String>,
    /// `(principal, token)`: the bearer token a case acting as that principal sends.
    pub(crate) tokens: Vec<(String, String)>,
    /// How long one case may take.
    pub(crate) timeout: Duration,
}

/// Why the suite cannot run as asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// The card could not be read.
    #[error("cannot reach the agent: {0}")]
    Unreachable(trident_core::A2aError),
    /// A binding asked for is not one the card declares.
    #[error("the card of {url} does not declare {binding} for A2A 1.x")]
    Undeclared {
        /// The agent.
        url: String,
        /// The binding's card name.
        binding: &'static str,
    },
    /// The card declares no binding this suite speaks.
    #[error("the card of {0} declares no binding for A2A 1.x")]
    NoBinding(String),
    /// A case asked for does not exist.
    #[error("no case is named {0:?}")]
    UnknownCase(String),
}

impl PlanError {
    /// The command's exit status for it: 3 when the agent cannot be used, 2 for a usage
    /// error.
    fn status(&self) -> u8 {
        match self {
            PlanError::Unreachable(_) | PlanError::NoBinding(_) => 3,
            PlanError::Undeclared { .. } | PlanError::UnknownCase(_) => 2,
        }
    }
}

/// The bindings `card` declares for A2A 1.x, in [`Binding::ALL`]'s order.
pub(crate) fn declared(card: &trident::proto::AgentCard) -> Vec<Binding> {
    Binding::ALL
        .into_iter()
        .filter(|b| trident_client::choose(card, &[*b]).is_some())
        .collect()
}

/// A run of the suite, planned: the cases to run over each binding, and whether the scripted
/// tier applies (the agent answered its handshake).
pub(crate) struct Plan {
    /// The agent.
    pub(crate) url: String,
    /// The bindings, in the report's order.
    pub(crate) bindings: Vec<Binding>,
    /// The cases, in the report's order.
    pub(crate) cases: Vec<Case>,
    /// Why the scripted tier does not run, when it does not.
    pub(crate) scripted_skip: Option<String>,
    targets: Vec<(Binding, Arc<dyn Target>)>,
    timeout: Duration,
}

impl Plan {
    /// Reads the agent's card, picks the bindings and the cases `options` ask for, and probes
    /// the scripted tier's handshake once when a scripted case is among them.
    pub(crate) async fn new(options: Options) -> Result<Self, PlanError> {
        let card = trident_client::fetch_card(&options.url)
            .await
            .map_err(PlanError::Unreachable)?;
        let declared = declared(&card);
        let bindings: Vec<Binding> = if options.bindings.is_empty() {
            declared.clone()
        } else {
            let mut wanted = Vec::new();
            for b in options.bindings {
                if !declared.contains(&b) {
                    return Err(PlanError::Undeclared {
                        url: options.url,
                        binding: b.card_name(),
                    });
                }
                if !wanted.contains(&b) {
                    wanted.push(b);
                }
            }
            wanted
        };
        if bindings.is_empty() {
            return Err(PlanError::NoBinding(options.url));
        }
        let mut cases: Vec<Case> = if options.cases.is_empty() {
            CASES
                .iter()
                .copied()
                .filter(|c| c.level <= options.level)
                .collect()
        } else {
            let mut chosen = Vec::new();
            for name in options.cases {
                match CASES.iter().find(|c| c.name == name) {
                    Some(c) => chosen.push(*c),
                    None => return Err(PlanError::UnknownCase(name)),
                }
            }
            chosen
        };
        let mut tokens: HashMap<String, String> = ["alice", "bob", "mallory", "a"]
            .into_iter()
            .map(|n| (n.to_owned(), format!("Bearer token-{n}")))
            .collect();
        for (name, token) in options.tokens {
            tokens.insert(name, format!("Bearer {token}"));
        }
        let tokens = Arc::new(tokens);
        let mut targets: Vec<(Binding, Arc<dyn Target>)> = Vec::new();
        for b in &bindings {
            if let Some(remote) = Remote::new(
                card.clone(),
                &trident_client::card_url(&options.url),
                *b,
                tokens.clone(),
            ) {
                targets.push((*b, Arc::new(remote)));
            }
        }

        // One handshake decides whether the scripted tier applies.
        let mut scripted_skip = None;
        if cases.iter().any(|c| c.tier == Tier::Scripted)
            && let Some((_, target)) = targets.first()
            && let Err(skip) = probe(target.clone(), options.timeout).await
        {
            scripted_skip = Some(skip);
            cases.retain(|c| c.tier != Tier::Scripted);
        }
        Ok(Self {
            url: options.url,
            bindings,
            cases,
            scripted_skip,
            targets,
            timeout: options.timeout,
        })
    }

    /// Runs every case over every binding, `jobs` at a time: each cell as it finishes, with
    /// the index of its case in [`cases`](Self::cases).
    pub(crate) fn run(
        &self,
        jobs: usize,
    ) -> impl futures::Stream<Item = (usize, Cell)> + Send + use<> {
        let timeout = self.timeout;
        let runs: Vec<_> = self
            .cases
            .iter()
            .enumerate()
            .flat_map(|(i, case)| {
                self.targets.iter().map(move |(binding, target)| {
                    let (case, binding, target) = (*case, *binding, target.clone());
                    async move {
                        let started = Instant::now();
                        let (outcome, observed) =
                            trident_conformance::run_case_observed(case, target, timeout).await;
                        let elapsed = started.elapsed();
                        (
                            i,
                            Cell {
                                binding,
                                outcome,
                                observed,
                                elapsed,
                            },
                        )
                    }
                })
            })
            .collect();
        futures::stream::iter(runs).buffer_unordered(jobs.max(1))
    }

    /// An empty row per case, for [`record`](Self::record).
    pub(crate) fn rows(&self) -> Vec<Vec<Cell>> {
        self.cases.iter().map(|_| Vec::new()).collect()
    }

    /// Puts the cell of case `i` in its row, in the order of the bindings.
    pub(crate) fn record(&self, rows: &mut [Vec<Cell>], i: usize, cell: Cell) {
        let order = |b: Binding| self.bindings.iter().position(|x| *x == b);
        if let Some(row) = rows.get_mut(i) {
            let at = row.partition_point(|c| order(c.binding) <= order(cell.binding));
            row.insert(at, cell);
        }
    }

    /// The report of `rows` (as [`record`](Self::record) filled them).
    pub(crate) fn report<'a>(&'a self, rows: &'a [Vec<Cell>]) -> Report<'a> {
        Report {
            url: &self.url,
            bindings: &self.bindings,
            cases: &self.cases,
            results: rows,
            scripted_skip: self.scripted_skip.as_deref(),
        }
    }
}

/// Runs the suite as `args` says and prints the report.
pub(crate) async fn run(args: Args) -> ExitCode {
    let options = Options {
        url: args.url,
        bindings: args.bindings.into_iter().map(Binding::from).collect(),
        level: Level::from(args.level),
        cases: args.cases,
        tokens: args.tokens,
        timeout: Duration::from_secs(args.timeout),
    };
    let plan = match Plan::new(options).await {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(e.status());
        }
    };
    let mut rows = plan.rows();
    let mut done = std::pin::pin!(plan.run(usize::from(args.jobs)));
    while let Some((i, cell)) = done.next().await {
        plan.record(&mut rows, i, cell);
    }

    let report = plan.report(&rows);
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, report.junit())
    {
        eprintln!("error: writing {}: {e}", path.display());
        return ExitCode::from(2);
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{:#}", report.json())
    } else {
        report.print(&mut out)
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        eprintln!("error: writing the report: {e}");
        return ExitCode::from(2);
    }
    if report.must_failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The scripted tier's handshake over `target`, bounded in time; a panic (the agent could not
/// be reached) is a reason too.
async fn probe(target: Arc<dyn Target>, timeout: Duration) -> Result<(), String> {
    let handle = tokio::spawn(async move { target.scripted().await });
    match tokio::time::timeout(timeout, handle).await {
        Err(_) => Err(format!(
            "the handshake got no answer in {} s",
            timeout.as_secs()
        )),
        Ok(Err(e)) => Err(format!("the handshake failed: {e}")),
        Ok(Ok(r)) => r.map_err(|s| s.0),
    }
}

/// The report of a run: the table, the JSON report, the JUnit XML.
pub(crate) struct Report<'a> {
    url: &'a str,
    bindings: &'a [Binding],
    cases: &'a [Case],
    results: &'a [Vec<Cell>],
    /// Why the scripted tier did not run, when it did not.
    scripted_skip: Option<&'a str>,
}

fn word(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail(_) => "fail",
        Outcome::Skip(_) => "skip",
    }
}

fn mark(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail(_) => "FAIL",
        Outcome::Skip(_) => "skip",
    }
}

/// A reason on one line, at most `max` characters.
fn one_line(reason: &str, max: usize) -> String {
    let flat = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

/// `reason` with what differs from one run to the next (UUIDs, long numbers such as
/// timestamps) masked, so one reason seen on several bindings is listed once.
pub(crate) fn masked(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let digits = word.chars().filter(char::is_ascii_digit).count();
        let hex = word.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if (hex && word.len() >= 32 && word.contains('-')) || digits >= 6 {
            out.push('#');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in reason.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Where the bindings of one row disagree: their outcomes, or the first observation that
/// differs. `None` when they agree.
fn difference(row: &[Cell]) -> Option<Vec<(Binding, String)>> {
    let first = row.first()?;
    let same = |c: &Cell| {
        word(&c.outcome) == word(&first.outcome)
            && c.observed.iter().map(|o| masked(o)).collect::<Vec<_>>()
                == first.observed.iter().map(|o| masked(o)).collect::<Vec<_>>()
    };
    if row.iter().all(same) {
        return None;
    }
    let at = (0..row.iter().map(|c| c.observed.len()).max().unwrap_or(0)).find(|&i| {
        row.iter().any(|c| {
            c.observed.get(i).map(|o| masked(o)) != first.observed.get(i).map(|o| masked(o))
        })
    });
    Some(
        row.iter()
            .map(|c| {
                let seen = match at {
                    Some(i) => match c.observed.get(i) {
                        Some(o) => format!("observed #{}: {}", i + 1, one_line(o, 160)),
                        None => format!("observed #{}: (nothing; it stopped earlier)", i + 1),
                    },
                    None => "the same observations".to_owned(),
                };
                (c.binding, format!("{}, {seen}", word(&c.outcome)))
            })
            .collect(),
    )
}

/// The sections of the A2A specification `case` checks, for the JSON report: each with its
/// number in the digest (`"8.4"`, `"A"`), its label (`§8.4`) and its title.
fn spec_json(case: &Case) -> serde_json::Value {
    case.spec
        .iter()
        .map(|n| match spec::section(n) {
            Some(s) => {
                serde_json::json!({"section": s.number, "label": s.label(), "title": s.title})
            }
            None => serde_json::json!({"section": n}),
        })
        .collect()
}

/// A case as the JSON report names it: `case`, `tier`, `level` and `spec`.
pub(crate) fn case_json(case: &Case) -> serde_json::Value {
    serde_json::json!({
        "case": case.name,
        "tier": match case.tier { Tier::Protocol => "protocol", Tier::Scripted => "scripted" },
        "level": case.level.name(),
        "spec": spec_json(case),
    })
}

/// `§8.4 Streams (SendStreamingMessage and SubscribeToTask)`: a section cited, with its title.
fn section_text(number: &str) -> String {
    match spec::section(number) {
        Some(s) => format!("{} {}", s.label(), s.title),
        None => number.to_owned(),
    }
}

/// Escapes `s` for XML text and attribute values, dropping characters XML 1.0 cannot carry.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

impl Report<'_> {
    fn cells(&self) -> impl Iterator<Item = (&Case, &Cell)> {
        self.cases
            .iter()
            .zip(self.results)
            .flat_map(|(case, row)| row.iter().map(move |cell| (case, cell)))
    }

    fn count(&self, level: Option<Level>, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.cells()
            .filter(|(case, cell)| level.is_none_or(|l| case.level == l) && pred(&cell.outcome))
            .count()
    }

    /// How many MUST cells failed.
    pub(crate) fn must_failed(&self) -> usize {
        self.count(Some(Level::Must), |o| matches!(o, Outcome::Fail(_)))
    }

    /// The cases whose bindings disagree, with the difference.
    fn disagreements(&self) -> Vec<(&Case, Vec<(Binding, String)>)> {
        self.cases
            .iter()
            .zip(self.results)
            .filter_map(|(case, row)| difference(row).map(|d| (case, d)))
            .collect()
    }

    fn json(&self) -> serde_json::Value {
        let cases: Vec<_> = self
            .cases
            .iter()
            .zip(self.results)
            .map(|(case, row)| {
                let results: serde_json::Map<_, _> = row
                    .iter()
                    .map(|c| (c.binding.card_name().to_owned(), c.json()))
                    .collect();
                let mut json = case_json(case);
                json["results"] = results.into();
                json
            })
            .collect();
        let mut json = self.summary();
        json["url"] = self.url.into();
        json["bindings"] = self
            .bindings
            .iter()
            .map(|b| b.card_name())
            .collect::<Vec<_>>()
            .into();
        json["cases"] = cases.into();
        json
    }

    /// The report's counts: per level (`levels`) and in all (`passed`, `failed`, `skipped`),
    /// whether the bindings agree and where they do not (`agree`, `disagreements`), and
    /// whether the scripted tier ran (`scripted`).
    pub(crate) fn summary(&self) -> serde_json::Value {
        let levels: serde_json::Map<_, _> = Level::ALL
            .iter()
            .map(|l| {
                (
                    l.name().to_owned(),
                    serde_json::json!({
                        "passed": self.count(Some(*l), |o| matches!(o, Outcome::Pass)),
                        "failed": self.count(Some(*l), |o| matches!(o, Outcome::Fail(_))),
                        "skipped": self.count(Some(*l), |o| matches!(o, Outcome::Skip(_))),
                    }),
                )
            })
            .collect();
        let disagreements: Vec<_> = self
            .disagreements()
            .into_iter()
            .map(|(case, d)| {
                let by: serde_json::Map<_, _> = d
                    .into_iter()
                    .map(|(b, s)| (b.card_name().to_owned(), s.into()))
                    .collect();
                serde_json::json!({ "case": case.name, "bindings": by })
            })
            .collect();
        serde_json::json!({
            "scripted": match self.scripted_skip {
                None => serde_json::json!({ "ran": true }),
                Some(reason) => serde_json::json!({ "ran": false, "reason": reason }),
            },
            "agree": disagreements.is_empty(),
            "disagreements": disagreements,
            "levels": levels,
            "passed": self.count(None, |o| matches!(o, Outcome::Pass)),
            "failed": self.count(None, |o| matches!(o, Outcome::Fail(_))),
            "skipped": self.count(None, |o| matches!(o, Outcome::Skip(_))),
        })
    }

    /// JUnit XML: one `<testsuite>` per binding, one `<testcase>` per case (classname
    /// `conformance.<BINDING>.<LEVEL>`); a skipped scripted tier is one skipped test case.
    fn junit(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let total = |pred: fn(&Outcome) -> bool| self.count(None, pred);
        let tier_skip = usize::from(self.scripted_skip.is_some()) * self.bindings.len();
        out.push_str(&format!(
            "<testsuites name=\"trident conformance\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
            self.cells().count() + tier_skip,
            total(|o| matches!(o, Outcome::Fail(_))),
            total(|o| matches!(o, Outcome::Skip(_))) + tier_skip,
        ));
        for binding in self.bindings {
            let cells: Vec<(&Case, &Cell)> = self
                .cells()
                .filter(|(_, c)| c.binding == *binding)
                .collect();
            let n =
                |pred: fn(&Outcome) -> bool| cells.iter().filter(|(_, c)| pred(&c.outcome)).count();
            let tier = usize::from(self.scripted_skip.is_some());
            let time: f64 = cells.iter().map(|(_, c)| c.elapsed.as_secs_f64()).sum();
            out.push_str(&format!(
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{time:.3}\">\n",
                xml(binding.card_name()),
                cells.len() + tier,
                n(|o| matches!(o, Outcome::Fail(_))),
                n(|o| matches!(o, Outcome::Skip(_))) + tier,
            ));
            out.push_str(&format!(
                "    <properties><property name=\"url\" value=\"{}\"/></properties>\n",
                xml(self.url)
            ));
            for (case, cell) in &cells {
                out.push_str(&format!(
                    "    <testcase classname=\"conformance.{}.{}\" name=\"{}\" time=\"{:.3}\">",
                    xml(binding.card_name()),
                    case.level.name(),
                    xml(case.name),
                    cell.elapsed.as_secs_f64(),
                ));
                // The A2A requirement it checks, one property per section cited.
                out.push_str("\n      <properties>");
                for number in case.spec {
                    out.push_str(&format!(
                        "<property name=\"a2a.spec\" value=\"{}\"/>",
                        xml(&section_text(number))
                    ));
                }
                out.push_str("</properties>");
                match &cell.outcome {
                    Outcome::Pass => out.push_str("\n    "),
                    Outcome::Fail(r) => out.push_str(&format!(
                        "\n      <failure message=\"{}\" type=\"{}\">{} (A2A {})</failure>\n    ",
                        xml(&one_line(r, 400)),
                        case.level.name(),
                        xml(r),
                        xml(&spec::labels(case.spec)),
                    )),
                    Outcome::Skip(r) => out.push_str(&format!(
                        "\n      <skipped message=\"{}\"/>\n    ",
                        xml(&one_line(r, 400))
                    )),
                }
                out.push_str("</testcase>\n");
            }
            if let Some(reason) = self.scripted_skip {
                out.push_str(&format!(
                    "    <testcase classname=\"conformance.{}\" name=\"scripted_tier\" time=\"0\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    xml(binding.card_name()),
                    xml(&one_line(reason, 400)),
                ));
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }

    fn print(&self, out: &mut impl Write) -> std::io::Result<()> {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let labels: Vec<String> = self.cases.iter().map(|c| spec::labels(c.spec)).collect();
        let sections = labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(8)
            .max(8);
        let cols: Vec<usize> = self
            .bindings
            .iter()
            .map(|b| b.card_name().len().max(4))
            .collect();
        writeln!(out, "conformance of {}", self.url)?;
        for level in Level::ALL {
            let rows: Vec<_> = self
                .cases
                .iter()
                .zip(self.results)
                .zip(&labels)
                .filter(|((c, _), _)| c.level == level)
                .collect();
            if rows.is_empty() {
                continue;
            }
            writeln!(out)?;
            write!(out, "{:width$}  {:sections$}", level.name(), "A2A spec")?;
            for (b, w) in self.bindings.iter().zip(&cols) {
                write!(out, "  {:w$}", b.card_name())?;
            }
            writeln!(out)?;
            for ((case, row), label) in rows {
                write!(out, "{:width$}  {:sections$}", case.name, label)?;
                for (cell, w) in row.iter().zip(&cols) {
                    write!(out, "  {:w$}", mark(&cell.outcome))?;
                }
                writeln!(out)?;
            }
        }
        if let Some(reason) = self.scripted_skip {
            writeln!(out)?;
            writeln!(out, "scripted tier skipped: {}", one_line(reason, 600))?;
        }
        // Reasons, once per case and reason, naming the bindings it applies to.
        let mut notes = Vec::new();
        for (case, row) in self.cases.iter().zip(self.results) {
            let mut grouped: Vec<(&str, String, Vec<&str>)> = Vec::new();
            for cell in row {
                let (m, reason) = match &cell.outcome {
                    Outcome::Pass => continue,
                    Outcome::Fail(r) => ("FAIL", one_line(r, 400)),
                    Outcome::Skip(r) => ("skip", one_line(r, 400)),
                };
                match grouped
                    .iter_mut()
                    .find(|(g, r, _)| *g == m && masked(r) == masked(&reason))
                {
                    Some((_, _, bs)) => bs.push(cell.binding.card_name()),
                    None => grouped.push((m, reason, vec![cell.binding.card_name()])),
                }
            }
            for (m, reason, bs) in grouped {
                notes.push(format!(
                    "  {m} {} [{}] ({} {}): {reason}",
                    case.name,
                    bs.join(", "),
                    case.level.name(),
                    spec::labels(case.spec),
                ));
            }
        }
        if !notes.is_empty() {
            writeln!(out)?;
            writeln!(out, "reasons:")?;
            for n in notes {
                writeln!(out, "{n}")?;
            }
        }
        writeln!(out)?;
        let differ = self.disagreements();
        if differ.is_empty() {
            writeln!(out, "bindings agree: yes")?;
        } else {
            writeln!(out, "bindings agree: no")?;
            for (case, d) in differ {
                writeln!(out, "  {}:", case.name)?;
                for (b, what) in d {
                    writeln!(out, "    {:8} {what}", b.card_name())?;
                }
            }
        }
        for level in Level::ALL {
            writeln!(
                out,
                "{}: {} passed, {} failed, {} skipped",
                level.name(),
                self.count(Some(level), |o| matches!(o, Outcome::Pass)),
                self.count(Some(level), |o| matches!(o, Outcome::Fail(_))),
                self.count(Some(level), |o| matches!(o, Outcome::Skip(_))),
            )?;
        }
        writeln!(
            out,
            "{} passed, {} failed, {} skipped",
            self.count(None, |o| matches!(o, Outcome::Pass)),
            self.count(None, |o| matches!(o, Outcome::Fail(_))),
            self.count(None, |o| matches!(o, Outcome::Skip(_))),
        )
    }
}
