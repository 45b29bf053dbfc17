//! The one error type of panto-tools.

/// What can go wrong setting up the built-in tools. A tool *call* never fails with this: bad
/// arguments and refused calls become error results the model reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `[tools] allow`/`deny` rule (or an embedder's) does not parse. Returned by
    /// [`crate::policy::Rule::parse`] and [`crate::builtin`]; not retryable: fix the rule.
    #[error("bad tool rule `{rule}`: {why}")]
    BadRule {
        /// The rule as written.
        rule: String,
        /// What is wrong with it.
        why: String,
    },
    /// A tool name that is not a built-in tool. Returned by [`crate::builtin`]; not retryable.
    #[error("{0}")]
    UnknownTool(String),
    /// The options an embedder passed (JSON through the C ABI) do not parse. Returned by
    /// [`crate::Options::from_json`]; not retryable.
    #[error("bad tool options: {0}")]
    BadOptions(String),
    /// The sandbox was asked for and this system cannot provide it (no Landlock or seccomp in the
    /// kernel, or not Linux). Returned by [`crate::builtin`] and [`crate::SandboxConfig::probe`];
    /// not retryable on this system: the message names the setting that turns the sandbox off.
    #[error("{0}")]
    SandboxUnavailable(String),
    /// The working directory or a writable root cannot be resolved. Returned by
    /// [`crate::builtin`]; not retryable as is.
    #[error("{what} {path}: {source}")]
    Path {
        /// Which setting holds the path.
        what: &'static str,
        /// The path.
        path: String,
        /// Why it cannot be used.
        source: std::io::Error,
    },
}
