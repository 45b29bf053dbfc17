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
    /// `api_error`, a server error or a rate limit (the Responses API's `rate_limit_exceeded`).
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
    /// The provider answered with a redirect (HTTP 3xx). panto follows none: the request carries
    /// the API key, configured headers and the whole conversation, which must not go to an
    /// address the configuration does not name. Returned by `Stream::next` and
    /// `Agent::compact`. Not retryable: point `base_url` at the new address instead.
    #[error(
        "the provider redirected the request (HTTP {status}) to {}; panto does not follow redirects, \
         which would send the API key elsewhere: set base_url to the new address if you trust it",
        location.as_deref().unwrap_or("nowhere (no Location header)")
    )]
    Redirect {
        /// The HTTP status (301, 302, 303, 307, 308, …).
        status: u16,
        /// The `Location` header as sent, without credentials, escaped (control characters as
        /// `\u{..}`) and cut to 300 bytes; `None` when absent.
        location: Option<String>,
    },
    /// The provider answered a streaming request with success, but not with an event stream: a
    /// JSON document, an HTML page, a compressed body. Usually a wrong `base_url` or a proxy in
    /// the way. Returned by `Stream::next` and `Agent::compact`. Not retryable.
    #[error("expected text/event-stream from the provider, got {content_type}; the body starts with \"{body_start}\"")]
    NotEventStream {
        /// The `Content-Type` received (escaped, cut to 300 bytes), or `no Content-Type`, with
        /// the `Content-Encoding` when the body was compressed.
        content_type: String,
        /// The first 200 bytes of the body, escaped (control characters, quotes and backslashes
        /// as `\n`, `\u{1b}`, …), with `…` when there was more.
        body_start: String,
    },
    /// The provider sent bytes panto cannot interpret: invalid SSE, invalid JSON, an event
    /// missing a required field, one server-sent event larger than
    /// [`ProviderConfig::max_event_bytes`](crate::ProviderConfig::max_event_bytes), or a response
    /// longer than [`ProviderConfig::max_response_bytes`](crate::ProviderConfig::max_response_bytes); or a model
    /// listing ([`list_models`](crate::list_models)) that is not one. Not retryable.
    #[error("malformed provider stream at byte {offset}: {message}")]
    Protocol {
        /// Offset of the offending event in the response body.
        offset: u64,
        /// What was wrong.
        message: String,
    },
    /// A tool name or registration is not acceptable. Returned by `Agent::register_tool` and
    /// `Agent::register_tool_source`, and by `Agent::run_typed` when a registered tool already
    /// has the name of its result tool (`final_result`). Not retryable.
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
    /// A session holds no entry with this id, or the entry cannot be used as asked (a rewind
    /// names a message that is not a human prompt on the active branch). Returned by
    /// `Agent::rewind`, `Agent::fork`, `Session::fork` and the stores' `switch_branch` and `fork`.
    /// Not retryable.
    #[error("session {session}: {message}")]
    UnknownEntry {
        /// The session id.
        session: String,
        /// What was asked and why it cannot be done, naming the entry id.
        message: String,
    },
    /// The store does not keep what was asked of it (branches, forks or file checkpoints; for
    /// example `NullStore`, which keeps nothing). Returned by `SessionStore` methods whose
    /// default implementation is "unsupported". Not retryable.
    #[error("the session store does not support {0}")]
    Unsupported(String),
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
    /// A search's text is empty or its regular expression is malformed. Returned by
    /// [`SearchQuery::matcher`](crate::store::SearchQuery::matcher) and so by
    /// `SessionStore::search`. Not retryable.
    #[error("invalid search pattern {pattern:?}: {message}")]
    InvalidSearchPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
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
    /// A hook's `before_request` panicked or did not answer within its timeout, so the request
    /// was not sent. Returned by [`Stream::next`](crate::Stream::next); not retryable (the turn
    /// ends; [`Agent::retry`](crate::Agent::retry) asks again).
    #[error("{message}")]
    HookFailed {
        /// The hook's [`Hook::name`](crate::Hook::name).
        hook: String,
        /// What went wrong, naming the hook.
        message: String,
    },
    /// An HTTP header panto would send is not a valid header: an entry of
    /// [`ProviderConfig::extra_headers`](crate::ProviderConfig::extra_headers), or the API key
    /// (which travels in a header) holding a newline or another byte a header cannot carry.
    /// Returned by [`Stream::next`](crate::Stream::next) and [`Agent::compact`](crate::Agent::compact)
    /// before anything is sent. Not retryable: fix the configuration. The message names the
    /// header, never its value (it may be the key).
    #[error("invalid HTTP header {name:?}: {reason}")]
    InvalidHeader {
        /// The header's name (as configured, when the name itself is the problem).
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be set up (its TLS backend failed to initialise). Returned by
    /// [`Agent::new`](crate::Agent::new) and [`Agent::resume`](crate::Agent::resume). Not
    /// retryable.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
    /// An image attached to a [`UserMessage`](crate::UserMessage) cannot be used (not PNG,
    /// JPEG, GIF or WebP, or not decodable). Returned by the first
    /// [`Stream::next`](crate::Stream::next) of the turn, before anything is added to the
    /// conversation or sent. Not retryable.
    #[error("image {index} of the user message cannot be used: {message}")]
    InvalidImage {
        /// The image's index in [`UserMessage::images`](crate::UserMessage::images), from 0.
        index: usize,
        /// Why.
        message: String,
    },
    /// [`Agent::new`](crate::Agent::new) was given a session that already holds messages but no
    /// conversation: a new chain would be appended to the old log that the model never saw.
    /// Resume it with [`Agent::resume`](crate::Agent::resume), or pass the loaded conversation.
    /// Not retryable.
    #[error("session {id} already holds {message_count} messages: resume it with Agent::resume (or pass its conversation to Agent::new)")]
    SessionNotLoaded {
        /// The session id.
        id: String,
        /// How many messages the store holds for it.
        message_count: usize,
    },
    /// Compaction was asked for, but no message is older than the newest exchange (the last
    /// prompt and what followed it), so there is nothing to summarise. Returned by
    /// [`Agent::compact`](crate::Agent::compact). Not retryable.
    #[error("nothing to compact: the conversation has no messages older than its newest exchange")]
    NothingToCompact,
    /// A retry was asked for, but the conversation does not end with a message waiting for the
    /// model's answer (a user prompt or tool results): the last turn ended with the model's
    /// (possibly partial) answer, or there is no turn at all. Returned by
    /// [`Agent::retry`](crate::Agent::retry). Not retryable: send a new message instead.
    #[error("nothing to retry: the conversation does not end with a message waiting for the model's answer")]
    NothingToRetry,
    /// The model answered the compaction request without any text. Returned by
    /// [`Agent::compact`](crate::Agent::compact) and by [`Stream::next`](crate::Stream::next)
    /// during automatic compaction; nothing changed. Not retried by the agent; calling
    /// `compact` again may succeed.
    #[error("the compaction summary came back empty")]
    EmptySummary,
    /// A compaction with the caller's summary cannot be made: the summary is empty, or the
    /// conversation cannot be cut at the index given (past the end, or on tool results whose
    /// calls would be summarised away).
    /// Returned by [`Agent::compact_with_summary`](crate::Agent::compact_with_summary); nothing
    /// changed. Not retryable.
    #[error("cannot compact before message {first_kept}: {reason}")]
    InvalidCompaction {
        /// The index of the first message to keep, as given.
        first_kept: usize,
        /// What is wrong.
        reason: String,
    },
    /// The request overflowed the context window and the compaction that should have made room
    /// failed (`source` says why). Returned by [`Stream::next`](crate::Stream::next). Not
    /// retryable as is: the conversation is too long for the model.
    #[error("the context window overflowed and compacting the conversation failed: {source}")]
    OverflowCompactionFailed {
        /// Why compaction failed.
        #[source]
        source: Box<Error>,
    },
    /// The model's structured result does not fit the requested type. Returned by
    /// [`Agent::run_typed`](crate::Agent::run_typed) once the model has had its chance to correct
    /// it. Not retryable as is (running the prompt again may succeed).
    #[error("the model's result does not fit the expected type at {path}: {message}")]
    InvalidOutput {
        /// Where in the result, as a path like `items[2].name` (`.` for the whole value).
        path: String,
        /// What is wrong (serde's message).
        message: String,
    },
    /// The turn ended without a structured result: the model answered in plain text that is not
    /// the requested JSON. Returned by [`Agent::run_typed`](crate::Agent::run_typed). Not
    /// retryable as is.
    #[error("the model ended the turn ({stop_reason}) without giving its result")]
    MissingOutput {
        /// Why the last message stopped.
        stop_reason: crate::StopReason,
    },
}

impl Error {
    /// Whether the agent's retry loop tries the request again after this error.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Http { status, .. } => matches!(status, 408 | 409 | 425 | 429 | 500..=599),
            Error::StreamError { error_type, .. } => matches!(
                error_type.as_deref(),
                Some(
                    "overloaded_error"
                        | "api_error"
                        | "internal_server_error"
                        | "server_error"
                        | "rate_limit_error"
                        | "rate_limit_exceeded"
                        | "server_is_overloaded"
                ) | None
            ),
            Error::Truncated { .. } | Error::IdleTimeout(_) | Error::Connect { .. } => true,
            _ => false,
        }
    }

    /// Whether the fault is upstream: the provider failed the request (an error status, a
    /// refused or timed-out connection, a redirect, a stream cut, broken or not the API's, a
    /// context overflow) or the model's answer could not be used (a compaction without a
    /// summary, structured output missing or invalid). Not the embedder's input, the session or
    /// a tool. The C ABI reports these as `PANTO_ERR_PROVIDER`; a service in front of panto
    /// answers them as a bad gateway (`examples/service`).
    pub fn is_provider_failure(&self) -> bool {
        matches!(
            self,
            Error::Http { .. }
                | Error::ContextOverflow { .. }
                | Error::StreamError { .. }
                | Error::Truncated { .. }
                | Error::IdleTimeout(_)
                | Error::Connect { .. }
                | Error::Redirect { .. }
                | Error::NotEventStream { .. }
                | Error::Protocol { .. }
                | Error::EmptySummary
                | Error::OverflowCompactionFailed { .. }
                | Error::InvalidOutput { .. }
                | Error::MissingOutput { .. }
        )
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
