//! Why a client command failed, in the two layers of the a2a-cli error contract (SPEC §11.4):
//! a protocol failure carries the A2A error name the agent reported, a failure of the tool's
//! own an `A2ACLI_ERR_*` code (Appendix D). Each decides the exit status (§11.6) and prints as
//! the Appendix B envelope with `-o json`, as `error:`/`hint:` lines on stderr otherwise.

use std::io::Write;

use trident_core::{A2aError, ErrorKind};

/// A failure of the tool's own (SPEC Appendix D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Local {
    /// Invalid arguments, flags, or flag combination (exit 2).
    Usage,
    /// The `--agent-card` reference could not be resolved to a card (exit 3).
    CardNotFound,
    /// A card was read but is malformed (exit 1).
    CardInvalid,
    /// The agent could not be reached: DNS, connection or TLS (exit 3).
    Unreachable,
    /// The agent requires credentials and none were given (exit 4).
    CredentialsMissing,
    /// Credentials were given and rejected (exit 4).
    AuthFailed,
    /// `--timeout` expired before a terminal state (exit 5).
    Timeout,
    /// Anything else (exit 1).
    Internal,
}

impl Local {
    /// The `A2ACLI_ERR_*` code.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Local::Usage => "A2ACLI_ERR_USAGE",
            Local::CardNotFound => "A2ACLI_ERR_CARD_NOT_FOUND",
            Local::CardInvalid => "A2ACLI_ERR_CARD_INVALID",
            Local::Unreachable => "A2ACLI_ERR_UNREACHABLE",
            Local::CredentialsMissing => "A2ACLI_ERR_CREDENTIALS_MISSING",
            Local::AuthFailed => "A2ACLI_ERR_AUTH_FAILED",
            Local::Timeout => "A2ACLI_ERR_TIMEOUT",
            Local::Internal => "A2ACLI_ERR_INTERNAL",
        }
    }

    /// The exit status of SPEC Appendix D.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Local::Usage => 2,
            Local::CardNotFound | Local::Unreachable => 3,
            Local::CredentialsMissing | Local::AuthFailed => 4,
            Local::Timeout => 5,
            Local::CardInvalid | Local::Internal => 1,
        }
    }
}

/// Why a client command failed; decides the exit code and the error object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The agent answered with an A2A error (exit 1).
    #[error("{}: {}", a2a_name(.0.kind()).unwrap_or("A2AError"), .0.message())]
    Agent(A2aError, Option<String>),
    /// The caller stopped the wait (Ctrl-C); what is known was printed (exit 130, the
    /// shell's status for SIGINT; no error object: the tool did not fail).
    #[error("interrupted: {0}")]
    Interrupted(String),
    /// A failure of the tool's own.
    #[error("{}: {message}", .code.code())]
    Local {
        /// Which.
        code: Local,
        /// What happened.
        message: String,
        /// What to do about it.
        hint: Option<String>,
        /// The transport-level code, when one exists.
        a2a_code: Option<i32>,
    },
}

/// The A2A error name of `kind` (A2A §3.3.2, §5.4), or `None` for a kind A2A does not name
/// (authentication, availability, limits, deadlines: the CLI reports those with its own codes).
pub(crate) fn a2a_name(kind: ErrorKind) -> Option<&'static str> {
    use ErrorKind::*;
    Some(match kind {
        TaskNotFound => "TaskNotFoundError",
        TaskNotCancelable => "TaskNotCancelableError",
        PushNotificationNotSupported => "PushNotificationNotSupportedError",
        UnsupportedOperation => "UnsupportedOperationError",
        ContentTypeNotSupported => "ContentTypeNotSupportedError",
        InvalidAgentResponse => "InvalidAgentResponseError",
        ExtendedAgentCardNotConfigured => "ExtendedAgentCardNotConfiguredError",
        ExtensionSupportRequired => "ExtensionSupportRequiredError",
        VersionNotSupported => "VersionNotSupportedError",
        TaskGenerationMismatch => "TaskGenerationMismatchError",
        ParseError => "JSONParseError",
        InvalidRequest => "InvalidRequestError",
        MethodNotFound => "MethodNotFoundError",
        InvalidParams => "InvalidParamsError",
        Internal => "InternalError",
        Unauthenticated | PermissionDenied | Unavailable | ResourceExhausted | DeadlineExceeded => {
            return None;
        }
    })
}

impl Failure {
    /// A failure of the tool's own.
    pub(crate) fn local(code: Local, message: impl Into<String>) -> Self {
        Failure::Local {
            code,
            message: message.into(),
            hint: None,
            a2a_code: None,
        }
    }

    /// A usage error (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::local(Local::Usage, message)
    }

    /// This failure with `hint`, unless it has one already.
    pub(crate) fn with_hint(mut self, new: impl Into<String>) -> Self {
        match &mut self {
            Failure::Local { hint, .. } | Failure::Agent(_, hint) if hint.is_none() => {
                *hint = Some(new.into());
            }
            _ => {}
        }
        self
    }

    /// Classifies an error from the client: an error the agent answered with keeps its A2A
    /// name; a failed exchange, a passed deadline, or an authentication refusal is the CLI's.
    /// `credentials`: whether the caller supplied any (missing vs rejected).
    pub(crate) fn from_a2a(e: A2aError, credentials: bool) -> Self {
        let a2a_code = Some(e.kind().wire().jsonrpc);
        let local = |code: Local, e: &A2aError| Failure::Local {
            code,
            message: e.message().to_owned(),
            hint: None,
            a2a_code,
        };
        match e.kind() {
            ErrorKind::DeadlineExceeded => local(Local::Timeout, &e),
            ErrorKind::Unavailable => local(Local::Unreachable, &e),
            ErrorKind::Unauthenticated if credentials => local(Local::AuthFailed, &e),
            ErrorKind::Unauthenticated => local(Local::CredentialsMissing, &e),
            ErrorKind::PermissionDenied => local(Local::AuthFailed, &e),
            ErrorKind::ResourceExhausted => local(Local::Internal, &e),
            _ if e.is_transport() => local(Local::Internal, &e),
            _ => Failure::Agent(e, None),
        }
    }

    /// The exit status (SPEC §11.6): 1 for a protocol error, Appendix D's for the CLI's own.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Failure::Agent(..) => 1,
            Failure::Interrupted(_) => 130,
            Failure::Local { code, .. } => code.exit_code(),
        }
    }

    /// The `code` of the error object.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Failure::Agent(e, _) => a2a_name(e.kind()).unwrap_or("A2AError"),
            Failure::Interrupted(_) => "interrupted",
            Failure::Local { code, .. } => code.code(),
        }
    }

    fn message(&self) -> String {
        match self {
            Failure::Agent(e, _) => e.message().to_owned(),
            Failure::Interrupted(message) => message.clone(),
            Failure::Local { message, .. } => message.clone(),
        }
    }

    fn hint(&self) -> Option<&str> {
        match self {
            Failure::Agent(_, Some(h)) => Some(h),
            Failure::Agent(e, None) => match e.kind() {
                ErrorKind::TaskNotFound => {
                    Some("check the id; the agent's tasks: trident task list -a <agent>")
                }
                ErrorKind::TaskNotCancelable => {
                    Some("the task has ended; see its state: trident task get -a <agent> <id>")
                }
                ErrorKind::VersionNotSupported => {
                    Some("to talk to an A2A 0.3 agent, say so: --a2a-version 0.3")
                }
                ErrorKind::UnsupportedOperation => {
                    Some("see what the agent supports: trident card get -a <agent>")
                }
                ErrorKind::TaskGenerationMismatch => {
                    Some("the task changed since; read it again: trident task get -a <agent> <id>")
                }
                _ => None,
            },
            Failure::Interrupted(_) => None,
            Failure::Local { hint: Some(h), .. } => Some(h),
            Failure::Local { code, .. } => match code {
                Local::Usage => Some("see `trident <command> --help`"),
                Local::Unreachable | Local::CardNotFound => Some(
                    "check that the agent runs and the reference is right: trident card get -a <agent>",
                ),
                Local::CredentialsMissing => Some(
                    "pass --bearer TOKEN or --api-key KEY (or set A2ACLI_BEARER / A2ACLI_API_KEY)",
                ),
                Local::AuthFailed => Some("check the credential given with --bearer or --api-key"),
                Local::Timeout => Some("raise --timeout"),
                Local::CardInvalid | Local::Internal => None,
            },
        }
    }

    fn a2a_code(&self) -> Option<i32> {
        match self {
            Failure::Agent(e, _) => Some(e.kind().wire().jsonrpc),
            Failure::Interrupted(_) => None,
            Failure::Local { a2a_code, .. } => *a2a_code,
        }
    }

    /// The Appendix B error object.
    pub(crate) fn envelope(&self, hint: Option<&str>) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "code": self.code(),
                "message": self.message(),
                "hint": self.hint().or(hint),
                "a2aCode": self.a2a_code(),
            }
        })
    }

    /// Reports the failure: with `json`, the error object as one line on stdout (the payload,
    /// so a JSONL stream ends with it); always a line on stderr for people. `hint`: the
    /// command's own advice, used when the failure carries none.
    pub(crate) fn report(&self, json: bool, hint: Option<&str>) {
        if let Failure::Interrupted(why) = self {
            let _ = writeln!(std::io::stderr(), "interrupted: {why}");
            return;
        }
        if json {
            let line = self.envelope(hint).to_string();
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "error: {}: {}", self.code(), self.message());
        if let Some(h) = self.hint().or(hint) {
            let _ = writeln!(err, "hint: {h}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_errors_keep_their_names_and_local_ones_get_codes() {
        let missing = Failure::from_a2a(A2aError::task_not_found("t"), false);
        assert_eq!(
            (missing.code(), missing.exit_code()),
            ("TaskNotFoundError", 1)
        );
        let down = Failure::from_a2a(A2aError::transport("connection refused"), false);
        assert_eq!(
            (down.code(), down.exit_code()),
            ("A2ACLI_ERR_UNREACHABLE", 3)
        );
        let late = Failure::from_a2a(A2aError::local(ErrorKind::DeadlineExceeded, "late"), false);
        assert_eq!((late.code(), late.exit_code()), ("A2ACLI_ERR_TIMEOUT", 5));
        let who = A2aError::new(ErrorKind::Unauthenticated, "who?");
        assert_eq!(Failure::from_a2a(who.clone(), false).exit_code(), 4);
        assert_eq!(
            Failure::from_a2a(who, true).code(),
            "A2ACLI_ERR_AUTH_FAILED"
        );
        let env = Failure::usage("bad").with_hint("see --help").envelope(None);
        assert_eq!(env["error"]["code"], "A2ACLI_ERR_USAGE");
        assert_eq!(env["error"]["hint"], "see --help");
        assert!(env["error"]["a2aCode"].is_null());
    }
}
