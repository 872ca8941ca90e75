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

fn parse_token(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, token)) if !name.is_empty() && !token.is_empty() => {
            Ok((name.to_owned(), token.to_owned()))
        }
        _ => Err(format!("{s:?} is not NAME=TOKEN")),
    }
}

/// One cell of the table.
struct Cell {
    binding: Binding,
    outcome: Outcome,
    /// What the case observed, normalised (see `trident_conformance::observe`).
    observed: Vec<String>,
    elapsed: Duration,
}

/// Runs the suite as `args` says and prints the report.
pub(crate) async fn run(args: Args) -> ExitCode {
    let card = match trident_client::fetch_card(&args.url).await {
        Ok(card) => card,
        Err(e) => {
            eprintln!("error: cannot reach the agent: {e}");
            return ExitCode::from(3);
        }
    };
    let declared: Vec<Binding> = Binding::ALL
        .into_iter()
        .filter(|b| trident_client::choose(&card, &[*b]).is_some())
        .collect();
    let bindings: Vec<Binding> = if args.bindings.is_empty() {
        declared.clone()
    } else {
        let mut wanted = Vec::new();
        for b in args.bindings.iter().copied().map(Binding::from) {
            if !declared.contains(&b) {
                eprintln!(
                    "error: the card of {} does not declare {} for A2A 1.x",
                    args.url,
                    b.card_name()
                );
                return ExitCode::from(2);
            }
            if !wanted.contains(&b) {
                wanted.push(b);
            }
        }
        wanted
    };
    if bindings.is_empty() {
        eprintln!(
            "error: the card of {} declares no binding for A2A 1.x",
            args.url
        );
        return ExitCode::from(3);
    }
    let level = Level::from(args.level);
    let mut cases: Vec<Case> = if args.cases.is_empty() {
        CASES.iter().copied().filter(|c| c.level <= level).collect()
    } else {
        let mut chosen = Vec::new();
        for name in &args.cases {
            match CASES.iter().find(|c| c.name == name) {
                Some(c) => chosen.push(*c),
                None => {
                    eprintln!("error: no case is named {name:?}");
                    return ExitCode::from(2);
                }
            }
        }
        chosen
    };
    let mut tokens: HashMap<String, String> = ["alice", "bob", "mallory", "a"]
        .into_iter()
        .map(|n| (n.to_owned(), format!("Bearer token-{n}")))
        .collect();
    for (name, token) in &args.tokens {
        tokens.insert(name.clone(), format!("Bearer {token}"));
    }
    let tokens = Arc::new(tokens);
    let mut targets: Vec<(Binding, Arc<dyn Target>)> = Vec::new();
    for b in &bindings {
        if let Some(remote) = Remote::new(
            card.clone(),
            &trident_client::card_url(&args.url),
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
        && let Err(skip) = probe(target.clone(), Duration::from_secs(args.timeout)).await
    {
        scripted_skip = Some(skip);
        cases.retain(|c| c.tier != Tier::Scripted);
    }

    let timeout = Duration::from_secs(args.timeout);
    let runs = cases.iter().enumerate().flat_map(|(i, case)| {
        targets.iter().map(move |(binding, target)| {
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
    });
    let mut results: Vec<Vec<Cell>> = cases.iter().map(|_| Vec::new()).collect();
    let mut done = futures::stream::iter(runs).buffer_unordered(usize::from(args.jobs));
    while let Some((i, cell)) = done.next().await {
        if let Some(row) = results.get_mut(i) {
            row.push(cell);
        }
    }
    for row in &mut results {
        row.sort_by_key(|c| bindings.iter().position(|b| *b == c.binding));
    }

    let report = Report {
        url: &args.url,
        bindings: &bindings,
        cases: &cases,
        results: &results,
        scripted_skip: scripted_skip.as_deref(),
    };
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

struct Report<'a> {
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
fn masked(reason: &str) -> String {
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

    fn must_failed(&self) -> usize {
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
                    .map(|c| {
                        let reason = match &c.outcome {
                            Outcome::Pass => serde_json::Value::Null,
                            Outcome::Fail(r) | Outcome::Skip(r) => r.clone().into(),
                        };
                        (
                            c.binding.card_name().to_owned(),
                            serde_json::json!({
                                "outcome": word(&c.outcome),
                                "reason": reason,
                                "observed": c.observed,
                            }),
                        )
                    })
                    .collect();
                serde_json::json!({
                    "case": case.name,
                    "tier": match case.tier { Tier::Protocol => "protocol", Tier::Scripted => "scripted" },
                    "level": case.level.name(),
                    "spec": spec_json(case),
                    "results": results,
                })
            })
            .collect();
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
            "url": self.url,
            "bindings": self.bindings.iter().map(|b| b.card_name()).collect::<Vec<_>>(),
            "scripted": match self.scripted_skip {
                None => serde_json::json!({ "ran": true }),
                Some(reason) => serde_json::json!({ "ran": false, "reason": reason }),
            },
            "cases": cases,
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
