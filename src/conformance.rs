//! `trident conformance URL`: the behaviour suite of `trident-conformance` (the same cases
//! `cargo test` runs against our own servers) against any A2A agent, over every binding its
//! card declares. Prints a table case × binding (`pass` / `FAIL` / `skip`, reasons below it),
//! whether the bindings agree, and a summary; `--json` prints the same as one JSON object.
//! Exits 0 when nothing failed, 1 when a case failed, 2 on a usage error and 3 when the card
//! cannot be read.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use trident_client::Binding;
use trident_conformance::{CASES, Case, Outcome, Remote, Target};

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
    /// Run this many cases at once (each in its own tenant).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
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
}

/// Runs the suite as `args` says and prints the report.
pub(crate) async fn run(args: Args) -> ExitCode {
    let card = match trident_client::fetch_card(&args.url).await {
        Ok(card) => card,
        Err(e) => {
            eprintln!("error: {e}");
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
    let cases: Vec<Case> = if args.cases.is_empty() {
        CASES.to_vec()
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
        if let Some(remote) = Remote::new(card.clone(), *b, tokens.clone()) {
            targets.push((*b, Arc::new(remote)));
        }
    }

    let timeout = Duration::from_secs(args.timeout);
    let runs = cases.iter().enumerate().flat_map(|(i, case)| {
        targets.iter().map(move |(binding, target)| {
            let (case, binding, target) = (*case, *binding, target.clone());
            async move {
                let outcome = trident_conformance::run_case(case, target, timeout).await;
                (i, Cell { binding, outcome })
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
    };
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{:#}", report.json())
    } else {
        report.print(&mut out)
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        eprintln!("error: writing the report: {e}");
        return ExitCode::from(3);
    }
    if report.count(|o| matches!(o, Outcome::Fail(_))) > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

struct Report<'a> {
    url: &'a str,
    bindings: &'a [Binding],
    cases: &'a [Case],
    results: &'a [Vec<Cell>],
}

fn word(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail(_) => "fail",
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

impl Report<'_> {
    fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.results
            .iter()
            .flatten()
            .filter(|c| pred(&c.outcome))
            .count()
    }

    /// The cases whose outcome differs between bindings.
    fn disagreements(&self) -> Vec<(&Case, &Vec<Cell>)> {
        self.cases
            .iter()
            .zip(self.results)
            .filter(|(_, row)| {
                row.windows(2)
                    .any(|w| word(&w[0].outcome) != word(&w[1].outcome))
            })
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
                            serde_json::json!({ "outcome": word(&c.outcome), "reason": reason }),
                        )
                    })
                    .collect();
                serde_json::json!({ "case": case.name, "results": results })
            })
            .collect();
        serde_json::json!({
            "url": self.url,
            "bindings": self.bindings.iter().map(|b| b.card_name()).collect::<Vec<_>>(),
            "cases": cases,
            "agree": self.disagreements().is_empty(),
            "passed": self.count(|o| matches!(o, Outcome::Pass)),
            "failed": self.count(|o| matches!(o, Outcome::Fail(_))),
            "skipped": self.count(|o| matches!(o, Outcome::Skip(_))),
        })
    }

    fn print(&self, out: &mut impl Write) -> std::io::Result<()> {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let cols: Vec<usize> = self
            .bindings
            .iter()
            .map(|b| b.card_name().len().max(4))
            .collect();
        writeln!(out, "conformance of {}", self.url)?;
        writeln!(out)?;
        write!(out, "{:width$}", "case")?;
        for (b, w) in self.bindings.iter().zip(&cols) {
            write!(out, "  {:w$}", b.card_name())?;
        }
        writeln!(out)?;
        for (case, row) in self.cases.iter().zip(self.results) {
            write!(out, "{:width$}", case.name)?;
            for (cell, w) in row.iter().zip(&cols) {
                let mark = match cell.outcome {
                    Outcome::Pass => "pass",
                    Outcome::Fail(_) => "FAIL",
                    Outcome::Skip(_) => "skip",
                };
                write!(out, "  {mark:w$}")?;
            }
            writeln!(out)?;
        }
        // Reasons, once per case and reason, naming the bindings it applies to.
        let mut notes = Vec::new();
        for (case, row) in self.cases.iter().zip(self.results) {
            let mut grouped: Vec<(&str, String, Vec<&str>)> = Vec::new();
            for cell in row {
                let (mark, reason) = match &cell.outcome {
                    Outcome::Pass => continue,
                    Outcome::Fail(r) => ("FAIL", one_line(r, 400)),
                    Outcome::Skip(r) => ("skip", one_line(r, 400)),
                };
                match grouped
                    .iter_mut()
                    .find(|(m, r, _)| *m == mark && masked(r) == masked(&reason))
                {
                    Some((_, _, bs)) => bs.push(cell.binding.card_name()),
                    None => grouped.push((mark, reason, vec![cell.binding.card_name()])),
                }
            }
            for (mark, reason, bs) in grouped {
                notes.push(format!(
                    "  {mark} {} [{}]: {reason}",
                    case.name,
                    bs.join(", ")
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
            for (case, row) in differ {
                let cells: Vec<String> = row
                    .iter()
                    .map(|c| format!("{} {}", c.binding.card_name(), word(&c.outcome)))
                    .collect();
                writeln!(out, "  {}: {}", case.name, cells.join(", "))?;
            }
        }
        writeln!(
            out,
            "{} passed, {} failed, {} skipped",
            self.count(|o| matches!(o, Outcome::Pass)),
            self.count(|o| matches!(o, Outcome::Fail(_))),
            self.count(|o| matches!(o, Outcome::Skip(_))),
        )
    }
}
