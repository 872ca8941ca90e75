//! Where each option of a client command comes from (a2a-cli SPEC §7.2, §8.3): an explicit
//! flag, then an `A2ACLI_<FLAG>` environment variable, then the local `.env` (the first found
//! walking up from the working directory, or the file `--config` names in its place), then the
//! global `.env` (`$XDG_CONFIG_HOME/a2a-cli/.env`, by default `~/.config/a2a-cli/.env`), then
//! the built-in default. `--stream`, `--help`, `--version` and `--config` come from the
//! command line only.
//!
//! The files are dotenv: one `A2ACLI_<FLAG>=value` per line (`export ` allowed, `#`
//! comments, single or double quotes); keys that are not `A2ACLI_*` are ignored, so a
//! project's own `.env` does no harm. A setting from a file or a variable clap does not read
//! itself becomes the flag it stands for, added to the command line before parsing; the
//! source of every setting is kept for `config show`. The files are only read, never written.

use std::path::{Path, PathBuf};

use clap::parser::ValueSource;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// An explicit flag.
    Flag,
    /// An `A2ACLI_*` environment variable.
    Env,
    /// The local `.env`, or the `--config` file.
    LocalFile(PathBuf),
    /// The global `.env`.
    GlobalFile(PathBuf),
    /// The built-in default (or unset).
    Default,
}

impl Source {
    /// The source's name, as the reference implementation spells it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Env => "env",
            Source::LocalFile(_) => "local-file",
            Source::GlobalFile(_) => "global-file",
            Source::Default => "default",
        }
    }

    /// The file, for a file source.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Source::LocalFile(p) | Source::GlobalFile(p) => Some(p),
            _ => None,
        }
    }
}

/// One option of a client command and where its value came from.
#[derive(Debug, Clone)]
pub(crate) struct Setting {
    /// clap's id of the argument.
    pub(crate) id: String,
    /// The long flag, without dashes.
    pub(crate) name: String,
    /// Its variable (`A2ACLI_…`).
    pub(crate) env: String,
    /// Where its value came from.
    pub(crate) source: Source,
    /// A credential (or a service parameter): its value is never shown.
    pub(crate) sensitive: bool,
}

/// Why the settings could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsError {
    /// A file could not be read.
    #[error("config {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of a file is not `KEY=value`.
    #[error("config {}:{line}: {why}", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line number (from 1).
        line: usize,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A value does not fit its flag.
    #[error("{env} from {}: {value:?} is not a boolean (true/false, 1/0, yes/no, on/off)", .path.display())]
    NotABoolean {
        /// The setting.
        env: String,
        /// Its value.
        value: String,
        /// Where it came from.
        path: PathBuf,
    },
}

/// A dotenv file that was read.
#[derive(Debug, Clone)]
struct DotEnv {
    path: PathBuf,
    values: Vec<(String, String)>,
}

impl DotEnv {
    fn read(path: &Path) -> Result<Self, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let values = parse(&text).map_err(|(line, why)| SettingsError::Syntax {
            path: path.to_owned(),
            line,
            why,
        })?;
        Ok(DotEnv {
            path: path.to_owned(),
            values,
        })
    }

    fn get(&self, key: &str) -> Option<&str> {
        // A key given twice: the later line wins.
        self.values
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a dotenv text into its `(KEY, value)` pairs, in order; an error is the line number
/// and what is wrong with it.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, (usize, &'static str)> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, value)) = line.split_once('=') else {
            return Err((n + 1, "expected KEY=value"));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err((n + 1, "a key is letters, digits and _"));
        }
        let value = value.trim();
        let value = if let Some(rest) = value.strip_prefix('"') {
            let mut unquoted = String::new();
            let mut chars = rest.chars();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some('n') => unquoted.push('\n'),
                        Some('t') => unquoted.push('\t'),
                        Some(other) => unquoted.push(other),
                        None => break,
                    },
                    other => unquoted.push(other),
                }
            }
            if !closed || !trailing_is_comment(chars.as_str()) {
                return Err((n + 1, "unterminated or malformed double-quoted value"));
            }
            unquoted
        } else if let Some(rest) = value.strip_prefix('\'') {
            match rest.split_once('\'') {
                Some((inner, after)) if trailing_is_comment(after) => inner.to_owned(),
                _ => return Err((n + 1, "unterminated or malformed single-quoted value")),
            }
        } else {
            match value.find(" #") {
                Some(i) => value[..i].trim_end().to_owned(),
                None => value.to_owned(),
            }
        };
        out.push((key.to_owned(), value));
    }
    Ok(out)
}

fn trailing_is_comment(rest: &str) -> bool {
    let rest = rest.trim();
    rest.is_empty() || rest.starts_with('#')
}

/// Whether `--config FILE` names a dotenv file rather than the TOML settings of `serve`: its
/// name ends in `.env`, or every setting line in it is an `A2ACLI_*` key.
pub(crate) fn is_dotenv(file: &Path) -> bool {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".toml") {
        return false;
    }
    if name.ends_with(".env") {
        return true;
    }
    match std::fs::read_to_string(file) {
        Ok(text) => match parse(&text) {
            Ok(values) => {
                !values.is_empty() && values.iter().all(|(k, _)| k.starts_with("A2ACLI_"))
            }
            Err(_) => false,
        },
        Err(_) => false,
    }
}

/// The global file: `$XDG_CONFIG_HOME/a2a-cli/.env` when that variable is an absolute path
/// (as `git` reads its own), else `$HOME/.config/a2a-cli/.env`.
pub(crate) fn global_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("a2a-cli").join(".env"))
}

/// The local file: the first `.env` walking up from the working directory.
fn local_path() -> Option<PathBuf> {
    let mut dir = std::env::current_dir().ok()?;
    loop {
        let candidate = dir.join(".env");
        if candidate.is_file() {
            return Some(candidate);
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// The flags that come from the command line only (SPEC §7.2).
const EXPLICIT_ONLY: [&str; 4] = ["stream", "help", "version", "config"];

/// Completes `args` (a client command's command line) with the settings of the environment
/// and the files, and says where each of the command's settings comes from. `explicit` is
/// the dotenv file `--config` names, read in place of the local `.env`. Anything that is not
/// a client command is returned as it is.
pub(crate) fn resolve(
    cli: &clap::Command,
    args: Vec<String>,
    explicit: Option<&Path>,
) -> Result<(Vec<String>, Vec<Setting>), SettingsError> {
    // A command line clap refuses is left to the parse that reports it.
    let Ok(matches) = cli.clone().try_get_matches_from(&args) else {
        return Ok((args, Vec::new()));
    };
    let (mut command, mut m) = (cli, &matches);
    while let Some((name, sub)) = m.subcommand() {
        let Some(next) = command.find_subcommand(name) else {
            break;
        };
        command = next;
        m = sub;
    }
    // The client commands are those with an agent to name.
    if !command.get_arguments().any(|a| a.get_id() == "agent_card") {
        return Ok((args, Vec::new()));
    }
    let local = match explicit.map(Path::to_owned).or_else(local_path) {
        Some(path) => Some(DotEnv::read(&path)?),
        None => None,
    };
    let global = match global_path().filter(|p| p.is_file()) {
        Some(path) => Some(DotEnv::read(&path)?),
        None => None,
    };
    for file in [&local, &global].into_iter().flatten() {
        warn_if_readable_by_others(file);
    }
    let mut added = Vec::new();
    let mut settings = Vec::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        let id = arg.get_id().as_str();
        if arg.is_hide_set() || EXPLICIT_ONLY.contains(&long) || EXPLICIT_ONLY.contains(&id) {
            continue;
        }
        let declared = arg.get_env().map(|e| e.to_string_lossy().into_owned());
        let env = declared
            .clone()
            .unwrap_or_else(|| format!("A2ACLI_{}", long.to_ascii_uppercase().replace('-', "_")));
        if !env.starts_with("A2ACLI_") {
            continue;
        }
        let from_file = |file: &Option<DotEnv>| {
            file.as_ref()
                .and_then(|f| f.get(&env).map(|v| (v.to_owned(), f.path.clone())))
        };
        let source = match m.value_source(id) {
            Some(ValueSource::CommandLine) => Source::Flag,
            Some(ValueSource::EnvVariable) => Source::Env,
            _ => {
                // clap reads the variables it declares; the others are read here.
                let from_env = if declared.is_none() {
                    std::env::var(&env).ok()
                } else {
                    None
                };
                if let Some(value) = from_env {
                    added.extend(as_flags(arg, long, &env, &value, Path::new("environment"))?);
                    Source::Env
                } else if let Some((value, path)) = from_file(&local) {
                    added.extend(as_flags(arg, long, &env, &value, &path)?);
                    Source::LocalFile(path)
                } else if let Some((value, path)) = from_file(&global) {
                    added.extend(as_flags(arg, long, &env, &value, &path)?);
                    Source::GlobalFile(path)
                } else {
                    Source::Default
                }
            }
        };
        settings.push(Setting {
            id: id.to_owned(),
            name: long.to_owned(),
            // A service parameter can carry a secret too (--debug redacts them as well).
            sensitive: matches!(long, "bearer" | "api-key" | "svc-param" | "task-credential"),
            env,
            source,
        });
    }
    let mut args = args;
    // Before a `--` (after it everything is a positional argument).
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.splice(at..at, added);
    Ok((args, settings))
}

/// The flags that set `arg` to `value`: `--flag` for a switch that is on (none when off),
/// `--flag=v` for each comma-separated value of `--transport`, else `--flag=value`.
fn as_flags(
    arg: &clap::Arg,
    long: &str,
    env: &str,
    value: &str,
    path: &Path,
) -> Result<Vec<String>, SettingsError> {
    if !arg.get_action().takes_values() {
        return match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(vec![format!("--{long}")]),
            "false" | "0" | "no" | "off" | "" => Ok(Vec::new()),
            _ => Err(SettingsError::NotABoolean {
                env: env.to_owned(),
                value: value.to_owned(),
                path: path.to_owned(),
            }),
        };
    }
    if long == "transport" {
        return Ok(value
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| format!("--{long}={v}"))
            .collect());
    }
    Ok(vec![format!("--{long}={value}")])
}

/// A file that holds a credential must not be readable by others (SPEC §8.3: mode `0600`);
/// the tool reads it anyway, and says so on stderr.
fn warn_if_readable_by_others(file: &DotEnv) {
    use std::os::unix::fs::PermissionsExt;
    let holds_secret = file.values.iter().any(|(k, _)| {
        matches!(
            k.as_str(),
            "A2ACLI_BEARER" | "A2ACLI_API_KEY" | "A2ACLI_TASK_CREDENTIAL"
        )
    });
    let open = std::fs::metadata(&file.path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0);
    if holds_secret && open {
        eprintln!(
            "warning: {} holds a credential and is readable by other users; run: chmod 600 {}",
            file.path.display(),
            file.path.display()
        );
    }
}

/// `config show`: each setting of the client commands, its effective value and its source,
/// as a table (`SETTING  VALUE  SOURCE`, a file source with its path) or, with `-o json`, one
/// array of `{name, envVar, value, source, path?}` (the reference implementation's shape; the
/// protocol has no type for it). Credentials show as `[redacted]`, unset ones as `(unset)`.
pub(crate) fn show(
    settings: &[Setting],
    matches: &clap::ArgMatches,
    json: bool,
) -> std::process::ExitCode {
    use std::io::Write;
    let mut m = matches;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    let rows: Vec<(&Setting, String)> = settings
        .iter()
        .map(|s| {
            let raw: Vec<String> = m
                .get_raw_occurrences(&s.id)
                .into_iter()
                .flatten()
                .flatten()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            let value = if raw.is_empty() {
                "(unset)".to_owned()
            } else if s.sensitive {
                "[redacted]".to_owned()
            } else {
                crate::render::strip_controls(&raw.join(",").replace(['\r', '\n'], " "))
            };
            (s, value)
        })
        .collect();
    let mut out = std::io::stdout().lock();
    let written = if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(s, value)| {
                let mut o = serde_json::json!({
                    "name": s.name,
                    "envVar": s.env,
                    "value": value,
                    "source": s.source.name(),
                });
                if let Some(path) = s.source.path() {
                    o["path"] = path.display().to_string().into();
                }
                o
            })
            .collect();
        writeln!(out, "{}", serde_json::Value::Array(list))
    } else {
        let width = |f: &dyn Fn(&(&Setting, String)) -> usize, title: usize| {
            rows.iter().map(f).max().unwrap_or(0).max(title)
        };
        let name_w = width(&|(s, _)| s.name.len(), "SETTING".len());
        let value_w = width(&|(_, v)| v.chars().count(), "VALUE".len());
        let mut text = format!("{:name_w$}  {:value_w$}  SOURCE\n", "SETTING", "VALUE");
        for (s, value) in &rows {
            let source = match s.source.path() {
                Some(path) => format!("{} ({})", s.source.name(), path.display()),
                None => s.source.name().to_owned(),
            };
            text.push_str(&format!(
                "{:name_w$}  {:value_w$}  {source}\n",
                s.name, value
            ));
        }
        out.write_all(text.as_bytes())
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dotenv_lines() {
        let text = "# a comment\n\nA2ACLI_A=1\nexport A2ACLI_B = two words # note\n\
                    A2ACLI_C=\"quoted # not a comment\\n\"\nA2ACLI_D='single \"x\"'\nA2ACLI_E=\n";
        assert_eq!(
            parse(text).expect("parses"),
            [
                ("A2ACLI_A".to_owned(), "1".to_owned()),
                ("A2ACLI_B".to_owned(), "two words".to_owned()),
                ("A2ACLI_C".to_owned(), "quoted # not a comment\n".to_owned()),
                ("A2ACLI_D".to_owned(), "single \"x\"".to_owned()),
                ("A2ACLI_E".to_owned(), String::new()),
            ]
        );
        assert_eq!(parse("A2ACLI_A").map_err(|e| e.0), Err(1));
        assert_eq!(parse("\nA2ACLI_A=\"open").map_err(|e| e.0), Err(2));
        assert_eq!(parse("A B=1").map_err(|e| e.0), Err(1));
    }
}
