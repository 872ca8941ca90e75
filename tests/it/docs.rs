//! The documentation still works: every relative link in README.md, ARCHITECTURE.md,
//! docs/*.md and the other READMEs reaches a file (and its `#anchor` a heading of that file,
//! as GitHub writes heading ids), and every `trident …` command in their shell blocks names
//! subcommands and flags the built binary accepts (and every `bash SCRIPT` a script that
//! exists).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The markdown files the checks read: the README, ARCHITECTURE.md, every page of docs/ and
/// the other READMEs and tables the docs link to.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "crates/trident/README.md",
        "examples/README.md",
        "fuzz/README.md",
        "interop/conformance/expected.md",
        "interop/gateway03-expected.md",
        "interop/python/README-agent.md",
    ]
    .iter()
    .map(|p| root().join(p))
    .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn name(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A page split into its prose (fenced blocks blanked, so line numbers stay) and its fenced
/// blocks (info string, first line number, lines).
struct Parsed {
    prose: Vec<String>,
    blocks: Vec<(String, usize, Vec<String>)>,
}

fn parse(text: &str) -> Parsed {
    let mut prose = Vec::new();
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match open.take() {
            Some(block) if fence => blocks.push(block),
            Some(mut block) => {
                block.2.push(line.to_owned());
                open = Some(block);
            }
            None if fence => {
                let info = line.trim_start().trim_start_matches('`').trim().to_owned();
                open = Some((info, i + 2, Vec::new()));
            }
            None => {
                prose.push(line.to_owned());
                continue;
            }
        }
        prose.push(String::new());
    }
    assert!(open.is_none(), "a fenced block is not closed");
    Parsed { prose, blocks }
}

/// The ids GitHub gives a page's headings: the heading's text lower-cased, every character
/// but letters, digits, `_`, `-` and spaces dropped, spaces made `-`; a repeated id gets
/// `-1`, `-2`, … in order.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut ids = BTreeSet::new();
    for line in parse(text).prose {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let id: String = link_texts(heading.trim())
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(id.clone()).or_insert(0);
        ids.insert(if *n == 0 { id } else { format!("{id}-{n}") });
        *n += 1;
    }
    ids
}

/// `[text](target)` replaced by `text`, as a heading's id is made from its rendered text.
fn link_texts(s: &str) -> String {
    let mut out = s.to_owned();
    while let Some((start, end)) = links(&out).first().map(|l| (l.0, l.2)) {
        let text_end = out[start..].find("](").expect("a link") + start;
        out = format!(
            "{}{}{}",
            &out[..start],
            &out[start + 1..text_end],
            &out[end..]
        );
    }
    out
}

/// The links of a paragraph outside inline code: (start of `[`, target, end after `)`).
fn links(line: &str) -> Vec<(usize, String, usize)> {
    let mut found = Vec::new();
    let mut in_code = false;
    let mut opens = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b'[' if !in_code => opens.push(i),
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                if let (Some(start), Some(len)) = (opens.pop(), line[i + 2..].find(')')) {
                    let target = line[i + 2..i + 2 + len].to_owned();
                    found.push((start, target, i + 3 + len));
                    i += 2 + len;
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The paragraphs of a page's prose, each on one line (a link's text may span lines), with
/// the number of its first line.
fn paragraphs(prose: &[String]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (n, line) in prose.iter().enumerate() {
        if line.trim().is_empty() {
            open = false;
        } else if open {
            let last = &mut out.last_mut().expect("an open paragraph").1;
            last.push(' ');
            last.push_str(line.trim());
        } else {
            out.push((n, line.trim().to_owned()));
            open = true;
        }
    }
    out
}

#[test]
fn every_relative_link_reaches_a_file_and_its_heading() {
    let mut anchor_cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        for (n, paragraph) in paragraphs(&parse(&text).prose) {
            for (_, target, _) in links(&paragraph) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().expect("a directory").join(file)
                };
                let at = format!("{}:{}: {target}", name(&page), n + 1);
                if !path.exists() {
                    broken.push(format!("{at}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                let path = path.canonicalize().expect("an existing path");
                let ids = anchor_cache
                    .entry(path.clone())
                    .or_insert_with(|| anchors(&read(&path)));
                if !ids.contains(anchor) {
                    broken.push(format!("{at}: no heading with that id (has: {ids:?})"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked >= 40,
        "only {checked} relative links found: is the parser reading them?"
    );
}

/// A shell line's words, quotes removed; `;`, `|` and `&` end a command (`None`), `#` a line.
fn words(line: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut has_word = false;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                has_word = true;
            }
            (None, '#') if !has_word => break,
            (None, ';' | '|' | '&' | ' ' | '\t') => {
                if has_word {
                    out.push(Some(std::mem::take(&mut word)));
                    has_word = false;
                }
                if c != ' ' && c != '\t' {
                    out.push(None);
                }
            }
            (None, c) => {
                word.push(c);
                has_word = true;
            }
        }
    }
    if has_word {
        out.push(Some(word));
    }
    out
}

/// The commands of a fenced block: every line of a shell block, the `$ ` lines of a
/// transcript (`text`, `console`); continuation lines joined.
fn commands(info: &str, lines: &[String]) -> Vec<Vec<String>> {
    let shell = matches!(info, "sh" | "shell" | "bash");
    if !shell && !matches!(info, "text" | "console") {
        return Vec::new();
    }
    let mut joined: Vec<String> = Vec::new();
    let mut continued = false;
    for line in lines {
        let line = line.trim();
        let command = if continued {
            Some(line)
        } else if shell {
            Some(line.strip_prefix("$ ").unwrap_or(line))
        } else {
            line.strip_prefix("$ ")
        };
        let Some(command) = command else { continue };
        let (command, more) = match command.strip_suffix('\\') {
            Some(c) => (c, true),
            None => (command, false),
        };
        if continued {
            joined.last_mut().expect("a command").push_str(command);
        } else {
            joined.push(command.to_owned());
        }
        continued = more;
    }
    let mut out = Vec::new();
    for line in joined {
        let mut current = Vec::new();
        for word in words(&line).into_iter().chain([None]) {
            match word {
                Some(w) => current.push(w),
                None if current.is_empty() => {}
                None => out.push(std::mem::take(&mut current)),
            }
        }
    }
    out
}

/// The arguments a command passes to the `trident` binary, if it runs it: `trident …`,
/// `target/…/trident …`, or `cargo run [--release] -- …` (the workspace's default binary).
fn trident_args(command: &[String]) -> Option<&[String]> {
    let start = command.iter().position(|w| !w.contains('='))?;
    let command = &command[start..];
    let first = command.first()?;
    if first == "trident" || first.ends_with("/trident") {
        return Some(&command[1..]);
    }
    if command.get(1).map(String::as_str) == Some("run") && first == "cargo" {
        let dashes = command.iter().position(|w| w == "--")?;
        let picks_another = command[..dashes]
            .iter()
            .any(|w| matches!(w.as_str(), "-p" | "--package" | "--example" | "--bin"));
        return (!picks_another).then(|| &command[dashes + 1..]);
    }
    None
}

/// `trident <path…> --help`: its subcommands and its flags.
struct Help {
    subcommands: BTreeSet<String>,
    flags: BTreeSet<String>,
}

fn help<'a>(cache: &'a mut BTreeMap<Vec<String>, Help>, path: &[String]) -> &'a Help {
    cache.entry(path.to_vec()).or_insert_with(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_trident"))
            .args(path)
            .arg("--help")
            .output()
            .expect("run trident");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "trident {} --help: {}{}",
            path.join(" "),
            text,
            String::from_utf8_lossy(&out.stderr)
        );
        let mut subcommands = BTreeSet::new();
        let mut flags = BTreeSet::new();
        let mut in_commands = false;
        for line in text.lines() {
            if !line.starts_with(' ') {
                in_commands = line == "Commands:";
                continue;
            }
            let trimmed = line.trim_start();
            if in_commands
                && line.starts_with("  ")
                && !line.starts_with("   ")
                && let Some(word) = trimmed.split_whitespace().next()
            {
                subcommands.insert(word.to_owned());
            }
            if trimmed.starts_with('-') {
                for word in trimmed.split([' ', ',', '=']) {
                    if let Some(flag) = word.strip_prefix("--") {
                        flags.insert(flag.to_owned());
                    }
                }
            }
        }
        Help { subcommands, flags }
    })
}

#[test]
fn every_documented_command_is_one_the_binary_accepts() {
    let mut cache = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut checked = BTreeSet::new();
    for page in pages() {
        for (info, first_line, lines) in parse(&read(&page)).blocks {
            for command in commands(&info, &lines) {
                let at = format!("{}:{first_line}: {}", name(&page), command.join(" "));
                if command.first().map(String::as_str) == Some("bash") {
                    if let Some(script) = command.get(1)
                        && !root().join(script).is_file()
                    {
                        wrong.push(format!("{at}: no script {script}"));
                    }
                    continue;
                }
                let Some(args) = trident_args(&command) else {
                    continue;
                };
                let mut path: Vec<String> = Vec::new();
                let mut flags = BTreeSet::new();
                let mut rest = args.iter();
                loop {
                    let here = help(&mut cache, &path);
                    flags.extend(here.flags.iter().cloned());
                    if here.subcommands.is_empty() {
                        break;
                    }
                    match rest.next() {
                        Some(word) if here.subcommands.contains(word) => path.push(word.clone()),
                        other => {
                            wrong.push(format!(
                                "{at}: {other:?} is not a subcommand of `trident {}` ({:?})",
                                path.join(" "),
                                here.subcommands
                            ));
                            break;
                        }
                    }
                }
                for word in rest {
                    let Some(flag) = word.strip_prefix("--") else {
                        continue;
                    };
                    let flag = flag.split('=').next().unwrap_or(flag);
                    if !flag.is_empty() && !flags.contains(flag) {
                        wrong.push(format!(
                            "{at}: `trident {}` has no --{flag}",
                            path.join(" ")
                        ));
                    }
                }
                checked.insert(path.join(" "));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands that do not work:\n{}",
        wrong.join("\n")
    );
    for expected in [
        "serve",
        "gateway",
        "send",
        "conformance",
        "console",
        "card get",
        "task get",
    ] {
        assert!(
            checked.contains(expected),
            "no `trident {expected}` found in the docs' shell blocks (found: {checked:?})"
        );
    }
}
