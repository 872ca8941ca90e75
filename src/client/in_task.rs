//! In-task authorization (SPEC §12.3, `A2ACLI_AUTH_011`): a task that pauses at
//! `AUTH_REQUIRED` is resumed with a credential when the tool has one, instead of only being
//! reported.
//!
//! A2A leaves the delivery open ("normally out of band", A2A §7.6.4: the agent explains in
//! the status message what it needs, and SHOULD accept messages on the task meanwhile). This
//! tool's in-band form, documented in `docs/cli.md`:
//!
//! - **What is asked** is read from the status message: its text, and the first data part (or
//!   the message's metadata) naming a `securityScheme` (also `scheme` or `authScheme`), with
//!   optional `scopes` and `authUrl` (also `url`). It is shown on stderr.
//! - **The credential** comes from, in order: `--task-credential` (or
//!   `A2ACLI_TASK_CREDENTIAL`); the token `auth login` kept for the named scheme, when the card
//!   declares it; a prompt on the terminal (input not echoed), only when standard input and
//!   standard error are terminals. Each source is used once; at most three rounds.
//! - **The follow-up** is a message on the same task and context whose one data part is
//!   `{"authorization": {"scheme": NAME, "credentials": VALUE}}` (`scheme` only when named).
//!   The value is redacted wherever this tool prints it (`render::scrub`).
//!
//! Without a credential (no flag, none kept, no terminal) the task is reported as before:
//! exit 0, a warning, and the command to resume it.

use std::io::{IsTerminal, Write};

use trident_proto as pb;

use super::{Session, Target, oauth};
use crate::failure::{Failure, Local};

use crate::render::{CREDENTIAL_KEY as KEY, CREDENTIAL_SECRET as SECRET};
/// How many credentials are sent for one task before the tool stops and reports it.
const MAX_ROUNDS: u32 = 3;

/// What an `AUTH_REQUIRED` status message asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Ask {
    /// The status message's text.
    pub(super) text: String,
    /// The security scheme named, if any.
    pub(super) scheme: Option<String>,
    /// Where to sign in, if said.
    pub(super) url: Option<String>,
    /// The scopes asked for.
    pub(super) scopes: Vec<String>,
}

impl Ask {
    /// Reads what `status` (the task's status, at `AUTH_REQUIRED`) asks for.
    pub(super) fn of(status: Option<&pb::TaskStatus>) -> Self {
        let Some(message) = status.and_then(|s| s.message.as_ref()) else {
            return Self::default();
        };
        let mut ask = Self {
            text: message.text(),
            ..Self::default()
        };
        let objects = message
            .parts
            .iter()
            .filter_map(|p| match &p.content {
                Some(pb::part::Content::Data(d)) => serde_json::to_value(d).ok(),
                _ => None,
            })
            .chain(
                message
                    .metadata
                    .as_ref()
                    .and_then(|m| serde_json::to_value(m).ok()),
            );
        let text = |v: &serde_json::Value, keys: &[&str]| {
            keys.iter()
                .find_map(|k| v.get(*k).and_then(|s| s.as_str()))
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        for object in objects {
            let scheme = text(&object, &["securityScheme", "scheme", "authScheme"]);
            let url = text(&object, &["authUrl", "url"]);
            if scheme.is_none() && url.is_none() {
                continue;
            }
            ask.scheme = scheme;
            ask.url = url;
            ask.scopes = object
                .get("scopes")
                .and_then(|s| s.as_array())
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect();
            break;
        }
        ask
    }

    /// One line for stderr.
    fn describe(&self) -> String {
        let mut line = if self.text.is_empty() {
            "(no explanation given)".to_owned()
        } else {
            self.text.replace('\n', " ")
        };
        if let Some(scheme) = &self.scheme {
            line.push_str(&format!("; scheme {scheme:?}"));
        }
        if !self.scopes.is_empty() {
            line.push_str(&format!("; scopes {}", self.scopes.join(" ")));
        }
        if let Some(url) = &self.url {
            line.push_str(&format!("; sign in at {url}"));
        }
        crate::render::strip_controls(&line)
    }
}

/// The credential sources still unused for one task, and the rounds so far.
pub(super) struct Resolver {
    flag: Option<String>,
    store_tried: bool,
    rounds: u32,
    /// Whether a credential was sent: a later `AUTH_REQUIRED` means it was not accepted.
    sent: bool,
}

impl Resolver {
    /// A resolver with `--task-credential`'s value, if given.
    pub(super) fn new(flag: Option<String>) -> Self {
        Self {
            flag: flag.filter(|f| !f.is_empty()),
            store_tried: false,
            rounds: 0,
            sent: false,
        }
    }

    /// The follow-up message that answers `task` (at `AUTH_REQUIRED`), or `None` when there is
    /// no credential to send: the task is then reported as it is.
    pub(super) async fn follow_up(
        &mut self,
        s: &Session,
        target: &Target,
        task: &pb::Task,
    ) -> Result<Option<pb::Message>, Failure> {
        let ask = Ask::of(task.status.as_ref());
        let mut err = std::io::stderr().lock();
        if self.sent {
            let _ = writeln!(
                err,
                "warning: the agent did not accept the credential sent; task {} still needs \
                 authorization",
                task.id
            );
        }
        drop(err);
        if self.rounds >= MAX_ROUNDS {
            return Ok(None);
        }
        let Some((source, value)) = self.credential(s, target, &ask, &task.id).await? else {
            return Ok(None);
        };
        self.rounds += 1;
        self.sent = true;
        let _ = writeln!(
            std::io::stderr(),
            "note: resuming task {} with the credential from {source}",
            task.id
        );
        let mut authorization = serde_json::Map::new();
        if let Some(scheme) = &ask.scheme {
            authorization.insert("scheme".into(), scheme.clone().into());
        }
        authorization.insert(SECRET.into(), value.into());
        let part = pb::Part::data(serde_json::json!({ KEY: authorization }))
            .with_media_type("application/json");
        let mut message = pb::Message::user(uuid::Uuid::new_v4().to_string(), vec![part]);
        message.task_id.clone_from(&task.id);
        message.context_id.clone_from(&task.context_id);
        Ok(Some(message))
    }

    /// The next credential and where it came from.
    async fn credential(
        &mut self,
        s: &Session,
        target: &Target,
        ask: &Ask,
        task_id: &str,
    ) -> Result<Option<(&'static str, String)>, Failure> {
        // Said only when there is a way to answer; otherwise the outcome's warning does.
        let say = || {
            let _ = writeln!(
                std::io::stderr(),
                "note: task {task_id} needs authorization: {}",
                ask.describe()
            );
        };
        if let Some(value) = self.flag.take() {
            say();
            return Ok(Some(("--task-credential (A2ACLI_TASK_CREDENTIAL)", value)));
        }
        if !std::mem::replace(&mut self.store_tried, true)
            && let Some(scheme) = ask
                .scheme
                .as_deref()
                .filter(|n| s.card.security_schemes.contains_key(*n))
            && let Some((_, token)) = oauth::stored_token_for(target, &s.card, Some(scheme)).await?
        {
            say();
            return Ok(Some(("the token auth login kept", token)));
        }
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Ok(None);
        }
        say();
        let prompt = format!("credential for task {task_id} (not shown; empty to stop): ");
        let typed = tokio::task::spawn_blocking(move || read_secret(&prompt))
            .await
            .map_err(|e| Failure::local(Local::Internal, e.to_string()))?
            .map_err(|e| Failure::local(Local::Internal, format!("reading the terminal: {e}")))?;
        Ok(Some(("the terminal", typed)).filter(|(_, v)| !v.is_empty()))
    }
}

/// Reads a line from the terminal on standard input without echoing it, after `prompt` on
/// stderr; echo is restored whatever happens.
fn read_secret(prompt: &str) -> std::io::Result<String> {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
    let stdin = std::io::stdin();
    let mut err = std::io::stderr();
    write!(err, "{prompt}")?;
    err.flush()?;
    let before = tcgetattr(&stdin)?;
    let mut quiet = before.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    tcsetattr(&stdin, OptionalActions::Now, &quiet)?;
    let mut line = String::new();
    let read = stdin.read_line(&mut line);
    let restored = tcsetattr(&stdin, OptionalActions::Now, &before);
    writeln!(err)?;
    read?;
    restored?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

#[cfg(test)]
mod tests;
