//! Tracing instrumentation: the spans and events panto-core emits for a turn, its provider
//! requests, its tool calls and its compactions. docs/observability.md lists every name.
//!
//! Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists
//! (`gen_ai.*`, `error.type`, `http.response.status_code`); panto's own are under `panto.`.
//! panto-core only emits: installing a subscriber is the embedder's (or the CLI's) choice, and
//! with none installed every span here is disabled and costs a callsite check.
//!
//! Nothing here ever records the API key or a header value: the request's key and headers are
//! never a field, and text that does go into a field (an error message, content when
//! [`Config::log_content`](crate::Config::log_content) is on) passes through [`Redactor`] first,
//! since a provider may quote the key back in an error body and a user may paste it in a prompt.

mod request;
mod turn;

pub(crate) use crate::provider::redact::Redactor;
pub(crate) use request::RequestTrace;
pub(crate) use turn::TurnTrace;

use std::time::{Duration, Instant};

use tracing::field::Empty;
use tracing::Span;

use crate::config::ApiStyle;
use crate::conversation::{ToolResultContent, Usage};
use crate::error::Error;

/// `gen_ai.provider.name` (and the older `gen_ai.system`) of an API style: the values the GenAI
/// conventions define for the two vendors.
pub(crate) fn provider_name(style: ApiStyle) -> &'static str {
    match style {
        ApiStyle::AnthropicMessages => "anthropic",
        ApiStyle::OpenAiChat | ApiStyle::OpenAiResponses => "openai",
    }
}

/// A count or a size as a field value. Counts are recorded as `i64`: OpenTelemetry has only
/// signed integers, and a `u64` field reaches tracing-opentelemetry as a string (a collector
/// would then see `gen_ai.usage.input_tokens = "120"`, which dashboards cannot sum). No count
/// panto records comes near `i64::MAX`; one that did would saturate.
pub(crate) fn count(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// Milliseconds as a float, the unit of every `*_ms` field.
pub(crate) fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

/// `error.type`: a low-cardinality class of the error (the conventions ask for one that
/// dashboards can group by), never its message.
pub(crate) fn error_type(error: &Error) -> &'static str {
    match error {
        Error::Http { status, .. } => match status {
            408 => "http_408",
            429 => "http_429",
            500..=599 => "http_5xx",
            400..=499 => "http_4xx",
            _ => "http_other",
        },
        Error::ContextOverflow { .. } => "context_overflow",
        Error::StreamError { .. } => "stream_error",
        Error::Truncated { .. } => "truncated",
        Error::IdleTimeout(_) => "idle_timeout",
        Error::Connect { .. } => "connect",
        Error::Redirect { .. } => "redirect",
        Error::NotEventStream { .. } => "not_event_stream",
        Error::Protocol { .. } => "protocol",
        Error::StepLimit(_) => "step_limit",
        Error::Cancelled => "cancelled",
        Error::SessionInUse { .. } => "session_in_use",
        Error::Store { .. } => "store",
        Error::CorruptSession { .. } => "corrupt_session",
        Error::OverflowCompactionFailed { .. } => "overflow_compaction_failed",
        Error::EmptySummary => "empty_summary",
        _ => "other",
    }
}

/// The HTTP status an error carries, if the provider answered at all.
pub(crate) fn error_status(error: &Error) -> Option<u16> {
    match error {
        Error::Http { status, .. } | Error::Redirect { status, .. } => Some(*status),
        Error::ContextOverflow { status, .. } if *status != 0 => Some(*status),
        _ => None,
    }
}

/// Records a usage's token counts on `span` (which declares the `gen_ai.usage.*` fields).
/// `gen_ai.usage.input_tokens` counts every input token, cached or not, as the conventions
/// define it; the cached shares have their own fields.
pub(crate) fn record_usage(span: &Span, usage: &Usage) {
    span.record("gen_ai.usage.input_tokens", count(usage.total_input_tokens()));
    span.record("gen_ai.usage.output_tokens", count(usage.output_tokens));
    span.record("gen_ai.usage.cache_read.input_tokens", count(usage.cache_read_tokens));
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        count(usage.cache_write_tokens),
    );
}

/// The span of one tool call (`execute_tool`), a child of the current span (the turn's).
pub(crate) fn tool_span(name: &str, call_id: &str) -> Span {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        panto.tool.is_error = Empty,
        panto.tool.result_bytes = Empty,
        panto.duration_ms = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("execute_tool {name}").as_str());
    }
    span
}

/// Records how a tool call ended on its span: whether it is an error, the size of its result
/// (text bytes plus base64 image bytes, what goes into the conversation) and how long it ran.
pub(crate) fn tool_finished(span: &Span, started: Instant, content: &[ToolResultContent], is_error: bool) {
    if span.is_disabled() {
        return;
    }
    let bytes: usize = content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.len(),
            ToolResultContent::Image { data, .. } => data.len(),
        })
        .sum();
    span.record("panto.tool.is_error", is_error);
    span.record("panto.tool.result_bytes", count(bytes));
    span.record("panto.duration_ms", millis(started.elapsed()));
    if is_error {
        span.record("error.type", "tool_error");
    }
}

/// The span of one compaction (`panto.compaction`), a child of the current span (the turn's
/// when the turn compacts, none when the embedder calls [`Agent::compact`](crate::Agent::compact)).
pub(crate) fn compaction_span(tokens_before: u64) -> Span {
    tracing::info_span!(
        "panto.compaction",
        panto.compaction.tokens_before = count(tokens_before),
        panto.compaction.tokens_after = Empty,
        panto.compaction.messages_summarized = Empty,
        panto.compaction.messages_kept = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        error.type = Empty,
    )
}

/// What a finished compaction recorded on its span: the numbers of its result.
pub(crate) struct CompactionCounts<'a> {
    pub(crate) tokens_after: u64,
    pub(crate) messages_summarized: usize,
    pub(crate) messages_kept: usize,
    pub(crate) usage: Option<&'a Usage>,
}

/// Records a finished compaction on its span.
pub(crate) fn compaction_finished(span: &Span, counts: CompactionCounts<'_>) {
    if span.is_disabled() {
        return;
    }
    span.record("panto.compaction.tokens_after", count(counts.tokens_after));
    span.record(
        "panto.compaction.messages_summarized",
        count(counts.messages_summarized),
    );
    span.record("panto.compaction.messages_kept", count(counts.messages_kept));
    if let Some(usage) = counts.usage {
        record_usage(span, usage);
    }
}

/// A `panto.retry` event on `parent` (a turn's span, or a compaction's for its summary request):
/// attempt `attempt` follows after `delay` because of `error` (its text scrubbed by `redactor`).
pub(crate) fn retry_event(
    parent: &Span,
    attempt: u32,
    delay: Duration,
    error: &Error,
    discard_partial: bool,
    redactor: &Redactor,
) {
    tracing::event!(
        name: "panto.retry",
        parent: parent,
        tracing::Level::WARN,
        panto.retry.attempt = i64::from(attempt),
        panto.retry.delay_ms = millis(delay),
        panto.retry.reason = %redactor.clean(&error.to_string()),
        panto.retry.discard_partial = discard_partial,
        error.type = error_type(error),
        "retrying the provider request"
    );
}

/// Records on `span` the class of the error that ended it.
pub(crate) fn record_error(span: &Span, error: &Error) {
    span.record("error.type", error_type(error));
}
