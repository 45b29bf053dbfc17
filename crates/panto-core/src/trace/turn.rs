//! The span of one turn (`invoke_agent`) and the events recorded on it.

use std::time::Duration;

use tracing::field::Empty;
use tracing::Span;

use super::{count, error_type, provider_name, record_usage, retry_event, Redactor, RequestTrace};
use crate::config::Config;
use crate::conversation::{ContentBlock, StopReason, ToolResultContent, Usage};
use crate::error::Error;
use crate::event::Event;

/// The tracing state of one turn: its span, the request in flight, and what may be recorded.
#[derive(Debug)]
pub(crate) struct TurnTrace {
    span: Span,
    request: Option<RequestTrace>,
    /// Built only when the span is enabled (a disabled turn records no text at all).
    redactor: Redactor,
    log_content: bool,
}

impl TurnTrace {
    /// Opens the turn's span, a child of the caller's current span (so a service's request span
    /// holds the turns it runs). With content logging on, `prompt` is recorded as an event.
    pub(crate) fn start(config: &Config, session_id: &str, prompt: Option<&str>) -> Self {
        let provider = &config.provider;
        let name = provider_name(provider.api_style);
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = "invoke_agent panto",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = "panto",
            gen_ai.provider.name = name,
            gen_ai.system = name,
            gen_ai.request.model = provider.model.as_str(),
            gen_ai.conversation.id = session_id,
            panto.api_style = provider.api_style.as_str(),
            panto.turn.steps = Empty,
            panto.turn.outcome = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            gen_ai.usage.cache_creation.input_tokens = Empty,
            gen_ai.response.finish_reasons = Empty,
            error.type = Empty,
        );
        let enabled = !span.is_disabled();
        let trace = TurnTrace {
            redactor: if enabled {
                Redactor::new(provider)
            } else {
                Redactor::default()
            },
            log_content: enabled && config.log_content,
            request: None,
            span,
        };
        if let (true, Some(prompt)) = (trace.log_content, prompt) {
            tracing::event!(
                name: "gen_ai.user.message",
                parent: &trace.span,
                tracing::Level::DEBUG,
                gen_ai.input.messages = %trace.redactor.clean(prompt),
                "user prompt"
            );
        }
        trace
    }

    /// The turn's span: the steps of the turn run inside it.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// A request starts (attempt `attempt`); returns its span, to instrument the send with.
    pub(crate) fn request_started(&mut self, config: &Config, attempt: u32) -> Span {
        let request = RequestTrace::start(&self.span, &config.provider, attempt, "turn");
        let span = request.span().clone();
        self.request = Some(request);
        span
    }

    /// The request's response headers are in.
    pub(crate) fn request_opened(&self, status: u16) {
        if let Some(request) = &self.request {
            request.opened(status);
        }
    }

    /// A decoded event of the response arrived.
    pub(crate) fn response_progress(&mut self) {
        if let Some(request) = &mut self.request {
            request.observe_token();
        }
    }

    /// The request's message is complete.
    pub(crate) fn request_completed(
        &mut self,
        usage: Option<&Usage>,
        stop_reason: &StopReason,
        blocks: &[ContentBlock],
    ) {
        if let Some(request) = self.request.take() {
            let content = self.log_content.then_some((blocks, &self.redactor));
            request.completed(usage, stop_reason, content);
        }
    }

    /// The request failed (it may be retried).
    pub(crate) fn request_failed(&mut self, error: &Error) {
        if let Some(request) = self.request.take() {
            request.failed(error, &self.redactor);
        }
    }

    /// A `panto.retry` event: attempt `attempt` follows after `delay` because of `error`.
    pub(crate) fn retry(&self, attempt: u32, delay: Duration, error: &Error, discard_partial: bool) {
        if self.span.is_disabled() {
            return;
        }
        retry_event(&self.span, attempt, delay, error, discard_partial, &self.redactor);
    }

    /// A `panto.context_overflow` event: the request did not fit the context window; `compact`
    /// says whether the turn compacts and retries (else it fails).
    pub(crate) fn context_overflow(&self, error: &Error, estimated_tokens: u64, compact: bool) {
        if self.span.is_disabled() {
            return;
        }
        tracing::event!(
            name: "panto.context_overflow",
            parent: &self.span,
            tracing::Level::WARN,
            panto.overflow.action = if compact { "compact" } else { "fail" },
            panto.context.estimated_tokens = count(estimated_tokens),
            panto.error.message = %self.redactor.clean(&error.to_string()),
            "the request exceeded the context window"
        );
    }

    /// With content logging on, the tool calls' arguments and results as events (the spans of
    /// the calls themselves are the dispatch's).
    pub(crate) fn observe_event(&self, event: &Event) {
        if !self.log_content {
            return;
        }
        match event {
            Event::ToolDispatchStart { id, name, input } => tracing::event!(
                name: "gen_ai.tool.call",
                parent: &self.span,
                tracing::Level::DEBUG,
                gen_ai.tool.call.id = id.as_str(),
                gen_ai.tool.name = name.as_str(),
                gen_ai.tool.call.arguments = %self.redactor.clean(&input.to_string()),
                "tool call"
            ),
            Event::ToolDispatchComplete { id, name, content, .. } => {
                let text: Vec<&str> = content
                    .iter()
                    .map(|c| match c {
                        ToolResultContent::Text { text } => text.as_str(),
                        ToolResultContent::Image { .. } => "[image]",
                    })
                    .collect();
                tracing::event!(
                    name: "gen_ai.tool.message",
                    parent: &self.span,
                    tracing::Level::DEBUG,
                    gen_ai.tool.call.id = id.as_str(),
                    gen_ai.tool.name = name.as_str(),
                    gen_ai.tool.call.result = %self.redactor.clean(&text.join("\n")),
                    "tool result"
                );
            }
            _ => {}
        }
    }

    /// The turn ended normally.
    pub(crate) fn completed(&self, usage: &Usage, steps: u32, stop_reason: &StopReason) {
        if self.span.is_disabled() {
            return;
        }
        record_usage(&self.span, usage);
        self.span.record("panto.turn.steps", i64::from(steps));
        self.span.record("panto.turn.outcome", "complete");
        self.span.record("gen_ai.response.finish_reasons", stop_reason.as_str());
    }

    /// The turn ended with `error`.
    pub(crate) fn failed(&mut self, error: &Error, usage: &Usage, steps: u32) {
        self.request_failed(error);
        if self.span.is_disabled() {
            return;
        }
        record_usage(&self.span, usage);
        self.span.record("panto.turn.steps", i64::from(steps));
        self.span.record("panto.turn.outcome", "failed");
        self.span.record("error.type", error_type(error));
    }

    /// The turn was cancelled.
    pub(crate) fn cancelled(&mut self, usage: &Usage, steps: u32) {
        self.request_failed(&Error::Cancelled);
        if self.span.is_disabled() {
            return;
        }
        record_usage(&self.span, usage);
        self.span.record("panto.turn.steps", i64::from(steps));
        self.span.record("panto.turn.outcome", "cancelled");
        self.span.record("error.type", "cancelled");
    }
}
