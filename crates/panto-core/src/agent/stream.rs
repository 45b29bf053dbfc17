//! The pull stream of one turn: provider → tools → provider, until a message ends without tool
//! calls.

mod handle;
mod steering;

pub use handle::Stream;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::compaction::{estimate_context_tokens, split_point};
use super::dispatch::Dispatch;
use super::partial::PartialMessage;
use super::steer::RunControl;
use super::typed::{Outcome, OutputSlot};
use super::{retry, Agent, UserMessage};
use crate::conversation::{ContentBlock, Message, Role, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{Event, RetryInfo};
use crate::provider::validate::RejectedCall;
use crate::provider::{ProviderEvent, ProviderRequest, ProviderStream};
use crate::registry::ToolRegistry;
use crate::tool::Tool;
use crate::trace::TurnTrace;
use tracing::Instrument;

/// Where a turn is. Transparent, for consumers that render progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamState {
    /// Not started: the user message is added by the first [`Stream::next`].
    Starting,
    /// A provider request is being sent.
    Requesting,
    /// Waiting before retrying a failed request.
    Retrying,
    /// A response is streaming.
    Streaming,
    /// Tool calls are running.
    RunningTools,
    /// Summarising the conversation before a request.
    Compacting,
    /// The turn ended normally.
    Complete,
    /// The turn ended with an error.
    Failed,
    /// The turn was cancelled.
    Cancelled,
}

enum Phase {
    Start(UserMessage),
    Request,
    Backoff(Duration),
    Streaming(Box<ProviderStream>, PartialMessage),
    Tools(Dispatch),
    /// Compacting before the next request; `overflow` holds the context-overflow error that
    /// triggered it, if one did.
    Compact {
        overflow: bool,
    },
    Finished,
}

/// The state machine of a [`Stream`]'s turns. Its `Drop` ends a turn dropped midway (the
/// [`Stream`]'s documentation says how); a stream in the middle of a `poll_next` holds it in the
/// boxed step future, so that dropping either drops it.
struct Turn<'a> {
    agent: &'a mut Agent,
    phase: Phase,
    state: StreamState,
    queue: VecDeque<Event>,
    cancel: CancellationToken,
    usage: Usage,
    steps: u32,
    attempt: u32,
    overflow_compacted: bool,
    /// The step at which the turn last compacted, so one request never triggers two.
    compacted_at_step: Option<u32>,
    /// A typed turn ([`Agent::run_typed`]): where its result lands, and the agent's registry as
    /// it was before the output tool joined it, put back when the stream is dropped.
    output: Option<(Arc<OutputSlot>, ToolRegistry)>,
    /// Steers and follow-ups sent to this stream (agent/steer.rs).
    control: RunControl,
    /// The turn's tracing span and the request in flight (docs/observability.md).
    trace: TurnTrace,
    /// The turn added tool results that the next request carries and the session does not hold
    /// yet: they are written while that request is on its way.
    unwritten: bool,
    /// The turn was cancelled and the completions of its interrupted tool calls are being
    /// delivered: [`Error::Cancelled`] follows the last of them.
    cancel_pending: bool,
}

impl std::fmt::Debug for Turn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("state", &self.state)
            .field("steps", &self.steps)
            .field("usage", &self.usage)
            .finish_non_exhaustive()
    }
}

impl<'a> Turn<'a> {
    fn new(agent: &'a mut Agent, message: UserMessage) -> Self {
        let trace = TurnTrace::start(&agent.config, agent.session.id(), Some(&message.text));
        Turn {
            agent,
            phase: Phase::Start(message),
            state: StreamState::Starting,
            queue: VecDeque::new(),
            cancel: CancellationToken::new(),
            usage: Usage::default(),
            steps: 0,
            attempt: 1,
            overflow_compacted: false,
            compacted_at_step: None,
            output: None,
            control: RunControl::default(),
            trace,
            unwritten: false,
            cancel_pending: false,
        }
    }

    /// A turn that continues the conversation as it stands, adding no user message
    /// ([`Agent::retry`]).
    fn resumed(agent: &'a mut Agent) -> Self {
        let mut stream = Turn::new(agent, UserMessage::default());
        stream.phase = Phase::Request;
        stream.state = StreamState::Requesting;
        stream
    }

    /// A typed turn: `tool` is offered besides the agent's tools (and recorded with them), the
    /// model must call a tool, and the turn ends once `slot` holds the result.
    fn with_output(
        agent: &'a mut Agent,
        message: UserMessage,
        tool: Arc<dyn Tool>,
        slot: Arc<OutputSlot>,
    ) -> Result<Self> {
        let saved = agent.registry.clone();
        agent.registry.register_tool(tool)?;
        let mut stream = Turn::new(agent, message);
        stream.output = Some((slot, saved));
        Ok(stream)
    }

    /// [`Stream::next`].
    async fn next(&mut self) -> Result<Option<Event>> {
        let result = self.next_event().await;
        self.after_event(result).await
    }

    async fn next_event(&mut self) -> Result<Option<Event>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                self.trace.observe_event(&event);
                return Ok(Some(event));
            }
            if matches!(self.phase, Phase::Finished) {
                if std::mem::take(&mut self.cancel_pending) {
                    return Err(Error::Cancelled);
                }
                return Ok(None);
            }
            if self.cancel.is_cancelled() {
                return self.finish_cancelled().await;
            }
            let token = self.cancel.clone();
            let outcome = tokio::select! {
                biased;
                _ = token.cancelled() => None,
                r = self.traced_step() => Some(r),
            };
            match outcome {
                None => return self.finish_cancelled().await,
                Some(Ok(Some(event))) => {
                    self.trace.observe_event(&event);
                    return Ok(Some(event));
                }
                Some(Ok(None)) => continue,
                Some(Err(e)) => return Err(e),
            }
        }
    }

    /// [`Stream::cancel`].
    async fn cancel(mut self) -> Result<()> {
        self.cancel.cancel();
        self.abandon();
        self.agent.flush().await
    }

    /// Every tool call that started completes before the turn ends: the completions of the calls
    /// the cancel interrupted (`abandon` queued them) come first, then [`Error::Cancelled`].
    async fn finish_cancelled(&mut self) -> Result<Option<Event>> {
        self.abandon();
        self.agent.flush().await?;
        match self.queue.pop_front() {
            Some(event) => {
                self.cancel_pending = true;
                self.trace.observe_event(&event);
                Ok(Some(event))
            }
            None => Err(Error::Cancelled),
        }
    }

    /// Advances the turn by one step inside the turn's span, except while a response streams
    /// ([`Turn::pull_response`](Self::pull_response)).
    async fn traced_step(&mut self) -> Result<Option<Event>> {
        if matches!(self.phase, Phase::Streaming(..)) {
            return self.pull_response().await;
        }
        let span = self.trace.span().clone();
        // A step's future is large (a request's opening, a compaction: kilobytes) and a step is
        // rare next to the deltas a turn pulls; boxed, it is not part of the future every
        // `next` builds and moves.
        Box::pin(self.step().instrument(span)).await
    }

    /// The next event of the streaming response. Its deltas are pulled outside any span: that
    /// happens once per delta, and with a subscriber installed entering and leaving a span costs
    /// more than decoding the delta (docs/performance.md, "Tracing"). Whatever opens a span or
    /// records an event (the end of the message with its tool calls and store appends, or a
    /// failed stream's retry) runs in the turn's span, so the span tree is the same as if the
    /// whole step were. Tracing added on the pulling path must name its `parent:` explicitly.
    async fn pull_response(&mut self) -> Result<Option<Event>> {
        let Phase::Streaming(stream, partial) = &mut self.phase else {
            // Nothing to pull: the turn's loop steps again.
            return Ok(None);
        };
        let end = match stream.next().await {
            Ok(Some(ProviderEvent::MessageComplete {
                blocks,
                usage,
                stop_reason,
                rejected,
            })) => Ok((blocks, usage, stop_reason, rejected)),
            Ok(Some(event)) => {
                partial.observe(&event);
                self.trace.response_progress();
                return Ok(Some(match event {
                    ProviderEvent::BlockStart { index, kind, tool } => Event::BlockStart { index, kind, tool },
                    ProviderEvent::Delta { index, delta } => Event::Delta { index, delta },
                    ProviderEvent::BlockComplete { index, block } => Event::BlockComplete { index, block },
                    ProviderEvent::MessageComplete { .. } => unreachable!("handled above"),
                }));
            }
            Ok(None) => Err((
                Error::Truncated {
                    expected: "the end of the message",
                },
                partial.seen,
            )),
            Err(e) => Err((e, partial.seen)),
        };
        let span = self.trace.span().clone();
        // Boxed for the reason `traced_step` gives: once per response, not per delta.
        match end {
            Ok((blocks, usage, stop_reason, rejected)) => {
                Box::pin(
                    self.complete_message(blocks, usage, stop_reason, &rejected)
                        .instrument(span),
                )
                .await
            }
            Err((error, seen_partial)) => Box::pin(self.retry_or_fail(error, seen_partial).instrument(span)).await,
        }
    }

    /// Advances the turn by one step: one method per phase. Cancel safe: every await leaves
    /// `self` consistent, so the step can be dropped at any await when the turn is cancelled.
    async fn step(&mut self) -> Result<Option<Event>> {
        match &mut self.phase {
            Phase::Finished => Ok(None),
            Phase::Start(message) => {
                let message = std::mem::take(message);
                self.start(message).await
            }
            Phase::Backoff(delay) => {
                let delay = *delay;
                tokio::time::sleep(delay).await;
                self.phase = Phase::Request;
                self.state = StreamState::Requesting;
                Ok(None)
            }
            Phase::Request => self.request().await,
            // Normally pulled by `traced_step`, outside the turn's span.
            Phase::Streaming(..) => self.pull_response().await,
            Phase::Compact { overflow } => {
                let overflow = *overflow;
                self.compact_in_turn(overflow).await
            }
            Phase::Tools(dispatch) => match dispatch.next_completion().await {
                Some(event) => Ok(Some(event)),
                None => self.tools_done().await,
            },
        }
    }

    /// The prompt enters the conversation, and is stored before anything is sent.
    async fn start(&mut self, message: UserMessage) -> Result<Option<Event>> {
        self.phase = Phase::Request;
        self.state = StreamState::Requesting;
        let mut content = Vec::with_capacity(1 + message.attached.len() + message.images.len());
        content.push(ContentBlock::Text { text: message.text });
        content.extend(message.attached.into_iter().map(|text| ContentBlock::Text { text }));
        for (index, image) in message.images.iter().enumerate() {
            match self.agent.process_image(index, image) {
                Ok(block) => content.push(block),
                Err(e) => return Err(self.fail(e)),
            }
        }
        self.agent.conversation.messages.push(Message::new(Role::User, content));
        // The prompt is durable before the provider sees it (a new session waits for its
        // first assistant message): its write is also where a session another writer holds
        // is found, and that must fail the turn before a request is paid for. So must a
        // stale session value (one that says empty while the store holds messages), which
        // taking the session checks.
        if let Err(e) = self.agent.hold_session().await {
            return Err(self.fail(e));
        }
        if let Err(e) = self.agent.flush().await {
            return Err(self.fail(e));
        }
        Ok(None)
    }

    /// Sends the next request (after a compaction, when one is due), writing the tool results it
    /// carries while it travels.
    async fn request(&mut self) -> Result<Option<Event>> {
        if self.steps >= self.agent.config.max_steps {
            return Err(self.fail_written(Error::StepLimit(self.agent.config.max_steps)).await);
        }
        if let Some(event) = self.maybe_compact().await? {
            return Ok(Some(event));
        }
        if let Err(e) = self
            .agent
            .hooks
            .before_request(&self.agent.conversation.messages, &self.cancel)
            .await
        {
            return Err(self.fail_written(e).await);
        }
        let system = self.agent.conversation.effective_system_blocks();
        // A source's tools may have changed since the last step (an MCP server's
        // list_changed); each request offers the current ones.
        self.agent.registry.refresh_sources();
        let tools = self.agent.registry.decls();
        let request = ProviderRequest {
            config: &self.agent.config.provider,
            system: &system,
            messages: &self.agent.conversation.messages,
            tools: &tools,
            require_tool: self.output.is_some(),
            session_id: self.agent.session.id(),
        };
        let request_span = self.trace.request_started(&self.agent.config, self.attempt);
        let opening = match self.agent.config.provider.http_client() {
            // Boxed: the HTTP exchange's future is over a kilobyte, and the step
            // around it would otherwise carry it through its every state.
            Ok(client) => Ok(Box::pin(ProviderStream::start(
                &client,
                &request,
                self.agent.config.idle_timeout,
            ))),
            Err(e) => Err(e),
        };
        drop(system);
        // Tool results this request carries are written while it travels, and are durable
        // before anything of its response is seen, which takes their write off the turn's
        // critical path; an assistant message's stays on it (its tools run only once it is
        // stored, and a turn is complete only once its answer is). Should the write fail,
        // the response is dropped unread and the turn fails with the store's error.
        let (written, opened) = match opening {
            Ok(opening) => {
                let opening = opening.instrument(request_span);
                if std::mem::take(&mut self.unwritten) {
                    let flush = self.agent.flush();
                    tokio::pin!(flush, opening);
                    let (written, mut opened) = tokio::select! {
                        written = &mut flush => (Some(written), opening.await),
                        opened = &mut opening => (None, opened),
                    };
                    let written = match (written, &mut opened) {
                        (Some(written), _) => written,
                        // The response's bytes are read (not decoded) while the write
                        // goes on: see `ProviderStream::read_ahead`.
                        (None, Ok(stream)) => tokio::select! {
                            written = &mut flush => written,
                            never = stream.read_ahead() => match never {},
                        },
                        (None, Err(_)) => flush.await,
                    };
                    (written, opened)
                } else {
                    (Ok(()), opening.await)
                }
            }
            Err(e) => (self.write_unwritten().await, Err(e)),
        };
        if let Err(e) = written {
            return Err(self.fail(e));
        }
        match opened {
            Ok(stream) => {
                self.trace.request_opened(stream.status);
                self.steps += 1;
                self.phase = Phase::Streaming(Box::new(stream), PartialMessage::default());
                self.state = StreamState::Streaming;
                Ok(None)
            }
            Err(e) => self.retry_or_fail(e, false).await,
        }
    }

    /// Compacts in the middle of a turn: before a request that would not fit, or after the
    /// provider said the context overflowed.
    async fn compact_in_turn(&mut self, overflow: bool) -> Result<Option<Event>> {
        // Boxed: a compaction's future is kilobytes, and most steps are not one.
        match Box::pin(self.agent.compact(None, None)).await {
            Ok(result) => {
                self.phase = Phase::Request;
                self.state = StreamState::Requesting;
                // The summary request is one of the turn's requests, and is paid for.
                if let Some(u) = &result.usage {
                    self.usage.accumulate(u);
                }
                Ok(Some(Event::CompactionComplete {
                    tokens_before: result.tokens_before,
                    tokens_after: result.tokens_after,
                    usage: result.usage,
                }))
            }
            Err(e) if overflow => Err(self.fail(Error::OverflowCompactionFailed { source: Box::new(e) })),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Every tool call of the message has completed: their results (and any steers) become the
    /// next user message, and the turn goes on, or ends with a structured result.
    async fn tools_done(&mut self) -> Result<Option<Event>> {
        let Phase::Tools(dispatch) = std::mem::replace(&mut self.phase, Phase::Request) else {
            unreachable!("step calls tools_done only in the tools phase");
        };
        self.state = StreamState::Requesting;
        let mut results = dispatch.into_message();
        if let Err(e) = self.join_steers(&mut results) {
            // The results still belong in the conversation: without them the next
            // request would be invalid.
            self.agent.conversation.messages.push(results);
            return Err(self.fail(e));
        }
        self.agent.conversation.messages.push(results);
        match self.output.as_ref().map(|(slot, _)| slot.outcome()) {
            // The next request carries the results, and writes them on its way.
            None | Some(Outcome::Continue) => {
                self.unwritten = true;
                Ok(None)
            }
            Some(Outcome::Done) => {
                if let Err(e) = self.agent.flush().await {
                    return Err(self.fail(e));
                }
                Ok(Some(self.complete_turn(StopReason::ToolUse)))
            }
            Some(Outcome::Failed(e)) => Err(self.fail_written(e).await),
        }
    }

    async fn complete_message(
        &mut self,
        blocks: Vec<ContentBlock>,
        usage: Option<Usage>,
        stop_reason: StopReason,
        rejected: &[RejectedCall],
    ) -> Result<Option<Event>> {
        self.attempt = 1;
        if let Some(u) = &usage {
            self.usage.accumulate(u);
        }
        self.trace.request_completed(usage.as_ref(), &stop_reason, &blocks);
        let message = Message::assistant(blocks, usage, stop_reason.clone());
        let has_tools = message.tool_uses().next().is_some();
        if has_tools {
            let (dispatch, starts) = Dispatch::start(
                &self.agent.registry,
                &message,
                rejected,
                self.agent.config.max_image_dimension,
                self.cancel.child_token(),
                &self.agent.hooks,
                Some(self.agent.file_checkpoints()),
                crate::trace::Redactor::for_tool_results(&self.agent.config.provider),
            );
            self.queue.extend(starts);
            self.phase = Phase::Tools(dispatch);
            self.state = StreamState::RunningTools;
        } else {
            let complete = self.complete_turn(stop_reason.clone());
            self.queue.push_back(complete);
        }
        self.agent.conversation.messages.push(message);
        if let Err(e) = self.agent.flush().await {
            // The message stays in the conversation and is written by the next flush; its tool
            // calls, never launched, get the interrupted closer. The turn stops here because its
            // durability promise is broken.
            self.abandon();
            self.trace.failed(&e, &self.usage, self.steps);
            self.state = StreamState::Failed;
            return Err(e);
        }
        // Only now, with the message that called them stored, may the tools run
        // (`Dispatch::launch` says why).
        if let Phase::Tools(dispatch) = &mut self.phase {
            dispatch.launch();
        }
        Ok(Some(Event::MessageComplete { usage, stop_reason }))
    }

    /// Ends the turn normally and returns its `TurnComplete`.
    fn complete_turn(&mut self, stop_reason: StopReason) -> Event {
        self.trace.completed(&self.usage, self.steps, &stop_reason);
        self.phase = Phase::Finished;
        self.state = StreamState::Complete;
        Event::TurnComplete {
            usage: self.usage,
            steps: self.steps,
            stop_reason,
        }
    }

    /// Schedules a retry after `error` if it is retryable and attempts remain; otherwise ends the
    /// turn with it.
    async fn retry_or_fail(&mut self, error: Error, seen_partial: bool) -> Result<Option<Event>> {
        self.trace.request_failed(&error);
        if matches!(error, Error::ContextOverflow { .. }) {
            let compact = self.compaction_enabled() && !self.overflow_compacted;
            let tokens = estimate_context_tokens(&self.agent.conversation);
            self.trace.context_overflow(&error, tokens, compact);
        }
        if matches!(error, Error::ContextOverflow { .. }) && self.compaction_enabled() && !self.overflow_compacted {
            self.overflow_compacted = true;
            self.discard_partial();
            return self.compact_for_overflow(error).await;
        }
        let retry = &self.agent.config.retry;
        if error.is_retryable() && self.attempt < retry.max_attempts {
            self.attempt += 1;
            let delay = retry::delay(retry, self.attempt, &error);
            self.discard_partial();
            self.trace.retry(self.attempt, delay, &error, seen_partial);
            self.phase = Phase::Backoff(delay);
            self.state = StreamState::Retrying;
            return Ok(Some(Event::ProviderRetry(RetryInfo {
                attempt: self.attempt,
                delay,
                reason: match &error {
                    // The URL is the same on every attempt, and the error that ends the turn
                    // names it: a retry says only what failed.
                    Error::Connect { message, .. } => format!("could not reach the provider: {message}"),
                    other => other.to_string(),
                },
                discard_partial: seen_partial,
            })));
        }
        Err(self.fail(error))
    }

    /// Drops a failed attempt's stream without keeping any of it: the retry will produce the
    /// message again, and the conversation must never hold both attempts.
    fn discard_partial(&mut self) {
        if matches!(self.phase, Phase::Streaming(..)) {
            self.phase = Phase::Request;
        }
    }

    /// Writes what the turn added for a request it will not send now. A failure to write is
    /// the turn's error.
    async fn write_unwritten(&mut self) -> Result<()> {
        if std::mem::take(&mut self.unwritten) {
            self.agent.flush().await
        } else {
            Ok(())
        }
    }

    /// [`Turn::fail`] for a turn that ends before sending the request that would have carried
    /// its unwritten tool results: they are written first (a failed turn keeps them), and a
    /// failure to write them is the error reported.
    async fn fail_written(&mut self, error: Error) -> Error {
        match self.write_unwritten().await {
            Ok(()) => self.fail(error),
            Err(write) => self.fail(write),
        }
    }

    /// Ends the turn with `error`, keeping what is valid of a streaming message, and returns the
    /// error. Messages already completed were persisted as they completed.
    fn fail(&mut self, error: Error) -> Error {
        self.trace.failed(&error, &self.usage, self.steps);
        // A failed turn ends with its error; its interrupted calls' results are in the message.
        self.salvage(StopReason::Other("error".to_owned()));
        self.state = StreamState::Failed;
        error
    }

    /// Ends the turn as cancelled, in memory: salvage the streaming message, close dispatched
    /// tool calls. The agent's next flush persists it.
    fn abandon(&mut self) {
        if matches!(self.phase, Phase::Finished) {
            return;
        }
        self.trace.cancelled(&self.usage, self.steps);
        let completions = self.salvage(StopReason::Other("cancelled".to_owned()));
        self.queue.extend(completions);
        self.state = StreamState::Cancelled;
    }

    /// Ends the phase in memory: the streaming message's salvaged part, or the dispatched tool
    /// calls' results. Returns the completion events of the tool calls not reported yet.
    fn salvage(&mut self, stop_reason: StopReason) -> Vec<Event> {
        match std::mem::replace(&mut self.phase, Phase::Finished) {
            Phase::Streaming(_, partial) => {
                let blocks = partial.salvage();
                if !blocks.is_empty() {
                    let mut message = Message::new(Role::Assistant, blocks);
                    message.stop_reason = Some(stop_reason);
                    self.agent.conversation.messages.push(message);
                }
                Vec::new()
            }
            Phase::Tools(mut dispatch) => {
                dispatch.abort();
                let completions = dispatch.unreported_completions();
                self.agent.conversation.messages.push(dispatch.into_message());
                completions
            }
            Phase::Start(_) | Phase::Request | Phase::Backoff(_) | Phase::Compact { .. } | Phase::Finished => {
                Vec::new()
            }
        }
    }

    fn compaction_enabled(&self) -> bool {
        self.agent.config.compaction.enabled
    }

    /// Starts automatic compaction before a request when the estimated context exceeds
    /// `threshold × context_window`: returns the `CompactionStart` event and leaves the work to
    /// the `Compact` phase.
    async fn maybe_compact(&mut self) -> Result<Option<Event>> {
        let config = &self.agent.config.compaction;
        if !config.enabled || self.compacted_at_step == Some(self.steps) {
            return Ok(None);
        }
        let tokens = estimate_context_tokens(&self.agent.conversation);
        let limit = (config.threshold * config.context_window as f64) as u64;
        if tokens <= limit || split_point(&self.agent.conversation.messages, config.keep_recent_tokens).is_none() {
            return Ok(None);
        }
        // The consumer sees the compaction start, progress past the last tool results: they
        // must be stored by then (they would otherwise travel with the next request).
        if let Err(e) = self.write_unwritten().await {
            return Err(self.fail(e));
        }
        Ok(Some(self.start_compaction(tokens, false)))
    }

    /// After a context-overflow error: compact and retry the request, once per turn.
    async fn compact_for_overflow(&mut self, error: Error) -> Result<Option<Event>> {
        let config = &self.agent.config.compaction;
        if split_point(&self.agent.conversation.messages, config.keep_recent_tokens).is_none() {
            return Err(self.fail(error));
        }
        let tokens = estimate_context_tokens(&self.agent.conversation);
        Ok(Some(self.start_compaction(tokens, true)))
    }

    fn start_compaction(&mut self, tokens_before: u64, overflow: bool) -> Event {
        self.compacted_at_step = Some(self.steps);
        self.phase = Phase::Compact { overflow };
        self.state = StreamState::Compacting;
        Event::CompactionStart { tokens_before }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.control.close();
        self.cancel.cancel();
        self.abandon();
        if let Some((_, registry)) = self.output.take() {
            self.agent.registry = registry;
        }
    }
}
