//! The span of one provider request (`chat`): one per attempt.

use std::time::Instant;

use tracing::field::Empty;
use tracing::Span;

use super::{error_status, error_type, millis, provider_name, record_usage, Redactor};
use crate::config::ProviderConfig;
use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::Error;

/// One provider request in flight: its span and the clock its timings are read from.
#[derive(Debug)]
pub(crate) struct RequestTrace {
    span: Span,
    started: Instant,
    first_token_seen: bool,
}

impl RequestTrace {
    /// Opens the span of attempt `attempt` of a request to `config`, as a child of `parent`.
    /// `purpose` says what the request is for: `turn` (the agent loop) or `compaction`.
    pub(crate) fn start(parent: &Span, config: &ProviderConfig, attempt: u32, purpose: &'static str) -> Self {
        let provider = provider_name(config.api_style);
        let span = tracing::info_span!(
            parent: parent,
            "chat",
            otel.name = Empty,
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider,
            gen_ai.system = provider,
            gen_ai.request.model = config.model.as_str(),
            gen_ai.request.max_tokens = i64::from(config.max_tokens),
            panto.api_style = config.api_style.as_str(),
            panto.request.purpose = purpose,
            panto.request.attempt = i64::from(attempt),
            http.response.status_code = Empty,
            panto.time_to_first_byte_ms = Empty,
            panto.time_to_first_token_ms = Empty,
            panto.duration_ms = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            gen_ai.usage.cache_creation.input_tokens = Empty,
            gen_ai.response.finish_reasons = Empty,
            error.type = Empty,
            panto.error.message = Empty,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("chat {}", config.model).as_str());
        }
        RequestTrace {
            span,
            started: Instant::now(),
            first_token_seen: false,
        }
    }

    /// The span, to instrument the request's futures with.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The status line and headers are in: the time to first byte.
    pub(crate) fn opened(&self, status: u16) {
        if self.span.is_disabled() {
            return;
        }
        self.span.record("http.response.status_code", i64::from(status));
        self.span
            .record("panto.time_to_first_byte_ms", millis(self.started.elapsed()));
    }

    /// A decoded event of the response: the first one is the time to first token.
    pub(crate) fn observe_token(&mut self) {
        if self.first_token_seen {
            return;
        }
        self.first_token_seen = true;
        if !self.span.is_disabled() {
            self.span
                .record("panto.time_to_first_token_ms", millis(self.started.elapsed()));
        }
    }

    /// The message is complete: usage, stop reason and duration; with `content`, the message's
    /// blocks as a `gen_ai.choice` event (scrubbed by `redactor`).
    pub(crate) fn completed(
        self,
        usage: Option<&Usage>,
        stop_reason: &StopReason,
        content: Option<(&[ContentBlock], &Redactor)>,
    ) {
        if self.span.is_disabled() {
            return;
        }
        if let Some(usage) = usage {
            record_usage(&self.span, usage);
        }
        self.span.record("gen_ai.response.finish_reasons", stop_reason.as_str());
        self.span.record("panto.duration_ms", millis(self.started.elapsed()));
        if let Some((blocks, redactor)) = content {
            let json = serde_json::to_string(blocks).unwrap_or_default();
            tracing::event!(
                name: "gen_ai.choice",
                parent: &self.span,
                tracing::Level::DEBUG,
                gen_ai.output.messages = %redactor.clean(&json),
                "model output"
            );
        }
    }

    /// The request failed: its class, status and message (scrubbed by `redactor`).
    pub(crate) fn failed(self, error: &Error, redactor: &Redactor) {
        if self.span.is_disabled() {
            return;
        }
        if let Some(status) = error_status(error) {
            self.span.record("http.response.status_code", i64::from(status));
        }
        self.span.record("error.type", error_type(error));
        self.span
            .record("panto.error.message", redactor.clean(&error.to_string()).as_ref());
        self.span.record("panto.duration_ms", millis(self.started.elapsed()));
    }
}
