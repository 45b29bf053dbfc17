//! The one error type of `panto-core` and of the session stores built on it.

use std::time::Duration;

/// Everything that can go wrong in panto-core, and in a [`SessionStore`](crate::SessionStore).
///
/// Each variant says who returns it and whether the agent retries it by itself
/// ([`Error::is_retryable`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The provider answered with a non-success HTTP status. Returned by
    /// [`Stream::next`](crate::Stream::next) after retries are exhausted. Retryable when the status is 408, 429,
    /// 5xx or 529.
    #[error("provider returned HTTP {status}{}: {message}", error_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default())]
    Http {
        /// The HTTP status.
        status: u16,
        /// The provider's error type (`rate_limit_error`, `invalid_request_error`, …).
        error_type: Option<String>,
        /// The provider's message, or the raw body when it is not the usual JSON shape.
        message: String,
        /// What `retry-after` / `retry-after-ms` asked for.
        retry_after: Option<Duration>,
    },
    /// The request did not fit the model's context window. Returned by `Stream::next`; not
    /// retried as is, but automatic compaction reacts to it by compacting and retrying once.
    #[error("context window exceeded (HTTP {status}): {message}")]
    ContextOverflow {
        /// The HTTP status (usually 400), or 0 when it arrived mid-stream.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider sent an error in the middle of a stream (`event: error`, or a `data:`
    /// payload holding `{"error": …}`). Retryable when the type is `overloaded_error`,
    /// `api_error` or a server error.
    #[error("provider stream error{}: {message}", error_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default())]
    StreamError {
        /// The provider's error type.
        error_type: Option<String>,
        /// The provider's message.
        message: String,
    },
    /// The response ended before its terminal event (`message_stop`, `[DONE]` or a
    /// `finish_reason`). Retryable when nothing had been streamed yet.
    #[error("provider stream ended before {expected}")]
    Truncated {
        /// What the stream still owed.
        expected: &'static str,
    },
    /// No byte arrived for [`Config::idle_timeout`](crate::Config::idle_timeout). Retryable.
    #[error("provider stream idle for {0:?}")]
    IdleTimeout(Duration),
    /// The connection failed (refused, reset, DNS, TLS). Retryable before the first byte.
    #[error("could not reach the provider at {url}: {message}")]
    Connect {
        /// The request URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The provider sent bytes panto cannot interpret: invalid SSE, invalid JSON, or an event
    /// missing a required field. Not retryable.
    #[error("malformed provider stream at byte {offset}: {message}")]
    Protocol {
        /// Offset of the offending event in the response body.
        offset: u64,
        /// What was wrong.
        message: String,
    },
    /// A tool name or registration is not acceptable. Returned by `Agent::register_tool` and
    /// `Agent::register_tool_source`. Not retryable.
    #[error("invalid tool {name:?}: {reason}")]
    InvalidTool {
        /// The offending name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The turn reached [`Config::max_steps`](crate::Config::max_steps) provider requests.
    /// Not retryable.
    #[error("turn stopped after {0} provider requests (max_steps)")]
    StepLimit(u32),
    /// The session is open for writing in another process (or another store handle). Returned
    /// by `SessionStore::append`. Not retryable until the other writer closes.
    #[error("session {id} is in use by another writer")]
    SessionInUse {
        /// The session id.
        id: String,
    },
    /// No session has this id. Returned by `Session::load` and `SessionStore::append` when the
    /// session vanished. Not retryable.
    #[error("no session {0}")]
    SessionNotFound(String),
    /// An id prefix matches more than one session. Returned by `Session::resolve`.
    #[error("session prefix {prefix:?} is ambiguous: {}", candidates.join(", "))]
    AmbiguousSession {
        /// The prefix.
        prefix: String,
        /// Every matching id.
        candidates: Vec<String>,
    },
    /// A session id is not well formed (an empty string, `/`, `..`, or other characters outside
    /// an id's alphabet). Returned by stores before they touch storage.
    #[error("invalid session id {0:?}")]
    InvalidSessionId(String),
    /// Stored session data cannot be read: a bad line, an unknown format version. `location`
    /// names the file and line (or the row). Not retryable; nothing already committed is lost.
    #[error("corrupt session data at {location}: {message}")]
    CorruptSession {
        /// File and line, or table and row.
        location: String,
        /// What was wrong.
        message: String,
    },
    /// The storage backend failed (I/O, database). Returned by stores.
    #[error("session store: {context}: {source}")]
    Store {
        /// What the store was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The turn was cancelled by the consumer. Returned by `Stream::next` after
    /// `Stream::cancel`.
    #[error("turn cancelled")]
    Cancelled,
    /// An operation is not valid in the agent's current state (e.g. compacting an empty
    /// conversation).
    #[error("{0}")]
    InvalidState(String),
}

impl Error {
    /// Whether the agent's retry loop tries the request again after this error.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Http { status, .. } => matches!(status, 408 | 409 | 425 | 429 | 500..=599),
            Error::StreamError { error_type, .. } => matches!(
                error_type.as_deref(),
                Some("overloaded_error" | "api_error" | "internal_server_error" | "server_error" | "rate_limit_error")
                    | None
            ),
            Error::Truncated { .. } | Error::IdleTimeout(_) | Error::Connect { .. } => true,
            _ => false,
        }
    }

    /// Wraps a storage error with what the store was doing.
    pub fn store(context: impl Into<String>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Store {
            context: context.into(),
            source: source.into(),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
