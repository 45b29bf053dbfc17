//! How a failure leaves the process: a one-line reason on stderr and a documented exit code.
//!
//! The codes are part of the command-line contract (docs/cli.md): scripts tell a bad invocation
//! (fix the command or the config) from a failed turn (retry later) from an interrupt.

use std::fmt;
use std::process::ExitCode;

/// Exit code of a failed turn or operation (provider error, I/O error, corrupt session).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of bad usage or configuration (bad flag, bad config, missing key, unknown session).
pub const EXIT_USAGE: u8 = 2;
/// Exit code after Ctrl-C interrupted a turn (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    /// The process exit code.
    pub code: u8,
    /// The reason, one line.
    pub message: String,
}

impl Failure {
    /// A usage or configuration error (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// A runtime failure (exit code 1).
    pub fn runtime(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_FAILURE,
            message: message.into(),
        }
    }

    /// An interrupted turn (exit code 130).
    pub fn interrupted() -> Self {
        Failure {
            code: EXIT_INTERRUPTED,
            message: "interrupted: the turn was cancelled (what streamed before is kept in the session)".into(),
        }
    }

    /// Prints the reason to stderr and returns the exit code.
    pub fn report(self) -> ExitCode {
        // A reason is one line so scripts can show it as is; embedded newlines (multi-line
        // provider messages) are folded.
        let line = self.message.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        // The message may quote a provider's error body or a session file: neutralised on a
        // terminal like every untrusted string.
        crate::safe::eprint_line(&line);
        ExitCode::from(self.code)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<panto_core::Error> for Failure {
    fn from(e: panto_core::Error) -> Self {
        match e {
            panto_core::Error::Cancelled => Failure::interrupted(),
            panto_core::Error::AmbiguousSession { .. }
            | panto_core::Error::InvalidSessionId(_)
            | panto_core::Error::InvalidSearchPattern { .. } => Failure::usage(e.to_string()),
            other => Failure::runtime(other.to_string()),
        }
    }
}

/// Maps any displayable error to a usage failure; for `map_err`.
pub fn usage(e: impl fmt::Display) -> Failure {
    Failure::usage(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_documented_codes() {
        assert_eq!(Failure::from(panto_core::Error::Cancelled).code, EXIT_INTERRUPTED);
        assert_eq!(
            Failure::from(panto_core::Error::InvalidSessionId("../x".into())).code,
            EXIT_USAGE
        );
        assert_eq!(Failure::from(panto_core::Error::StepLimit(3)).code, EXIT_FAILURE);
    }
}
