//! panto-mcp's error type.

/// Why a server could not be configured or started. Failures of single tool calls are not
/// errors: they become error results the model reads (see [`crate::McpSource`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration of server `server` is wrong (unknown field, no transport or two, bad
    /// glob, zero timeout). Returned by [`crate::ServerConfig::from_json`],
    /// [`crate::ServerConfig::validate`] and [`crate::McpSource::start`]. Not retryable: fix the
    /// configuration.
    #[error("MCP server `{server}`: {why}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong, naming the field.
        why: String,
    },
    /// The variable named by `bearer_token_env` is not set (or not Unicode). Returned by
    /// [`crate::McpSource::start`]. Retryable once the variable is set.
    #[error("MCP server `{server}`: the bearer token variable `{var}` (bearer_token_env) is not set")]
    MissingToken {
        /// The server's name.
        server: String,
        /// The variable's name (never its value).
        var: String,
    },
    /// The server could not be started or connected, or failed the MCP initialization or the
    /// tool listing. Returned by [`crate::McpSource::start`] and as a [`crate::StartWarning`] by
    /// [`crate::start_all`]. Retryable: the server may be fixed or come up later.
    #[error("MCP server `{server}` failed to start: {why}{}", tail_note(stderr_tail))]
    Start {
        /// The server's name.
        server: String,
        /// What failed.
        why: String,
        /// The last lines the server wrote to its standard error (empty for HTTP servers).
        stderr_tail: String,
    },
    /// Starting took longer than `startup_timeout_secs`. Returned like [`Error::Start`].
    /// Retryable.
    #[error(
        "MCP server `{server}` did not start within {secs} s (startup_timeout_secs){}",
        tail_note(stderr_tail)
    )]
    StartTimeout {
        /// The server's name.
        server: String,
        /// The timeout, in seconds.
        secs: u64,
        /// The last lines the server wrote to its standard error.
        stderr_tail: String,
    },
}

impl Error {
    /// The name of the server the error is about.
    pub fn server(&self) -> &str {
        match self {
            Error::Config { server, .. }
            | Error::MissingToken { server, .. }
            | Error::Start { server, .. }
            | Error::StartTimeout { server, .. } => server,
        }
    }
}

/// The stderr tail as the end of a message, or nothing.
fn tail_note(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with:\n{}", tail.trim_end())
    }
}
