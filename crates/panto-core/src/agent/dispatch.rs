//! Running the tool calls of one assistant message, concurrently, and collecting their results in
//! call order.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use super::hooks::{panic_message, Hooks};
use super::INTERRUPTED_RESULT;
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};
use crate::event::Event;
use crate::provider::validate::RejectedCall;
use crate::registry::{Target, ToolRegistry};
use crate::tool::{FileCheckpoints, ResultPart, ToolCall, ToolCallResult};
use crate::trace::{self, Redactor};
use tracing::instrument::{Instrument, WithSubscriber};

#[derive(Debug)]
struct Call {
    id: String,
    name: String,
}

type Outcome = (Vec<ToolResultContent>, bool);

/// One tool call's run, to its outcome: the tool, its hooks, the conversion of its result.
type Run = Pin<Box<dyn Future<Output = (usize, Outcome)> + Send>>;

/// How long cancelled tools may take to notice their token before they are aborted.
pub(crate) const ABORT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The tool calls of one message, in flight.
///
/// The calls run inside the turn's [`Stream`](super::Stream), polled by its `next` like the
/// response before them, rather than as a Tokio task each: a task would cost a spawn and two
/// trips through a busy runtime's queue per call (one to start, one to wake the turn), which a
/// fleet of agents on two cores feels in every tool step's latency. They still run
/// concurrently with each other; a tool with CPU-heavy or blocking work moves it to the blocking
/// pool itself, as it would have to in a task too.
pub(crate) struct Dispatch {
    calls: Vec<Call>,
    results: Vec<Option<Outcome>>,
    /// Calls whose outcome was known without running (rejected, unknown tool), in call order,
    /// not yet reported.
    known: VecDeque<usize>,
    /// The calls to run, set up by [`Dispatch::start`] and moved to `running` by
    /// [`Dispatch::launch`].
    waiting: Vec<Run>,
    running: FuturesUnordered<Run>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("calls", &self.calls)
            .field("waiting", &self.waiting.len())
            .field("running", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Dispatch {
    /// Sets up every tool call of `message`, except the `rejected` ones, which get their error
    /// result without running; the calls run once [`Dispatch::launch`] is called. Returns the
    /// dispatch and one `ToolDispatchStart` event per call, in call order.
    ///
    /// Every result's text passes `secrets` (the provider's key, see
    /// [`Redactor::for_tool_results`]) before anything sees it: a tool that printed the key
    /// (`echo $ANTHROPIC_API_KEY`, `cat .env`) must not put it into the conversation, the
    /// session, the events or the next request.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        registry: &ToolRegistry,
        message: &Message,
        rejected: &[RejectedCall],
        max_image_dimension: u32,
        cancel: CancellationToken,
        hooks: &Hooks,
        checkpoints: Option<FileCheckpoints>,
        secrets: Redactor,
    ) -> (Self, Vec<Event>) {
        let secrets = std::sync::Arc::new(secrets);
        let mut dispatch = Dispatch {
            calls: Vec::new(),
            results: Vec::new(),
            known: VecDeque::new(),
            waiting: Vec::new(),
            running: FuturesUnordered::new(),
            cancel,
        };
        let mut events = Vec::new();
        for (index, (id, wire_name, input)) in message.tool_uses().enumerate() {
            let resolved = registry.resolve(wire_name);
            // Hooks and the trace see a source's tool as `source/tool`; the events carry the
            // name the model called it by, the one `BlockStart` announced, so a consumer can
            // match a call's block to its dispatch.
            let name = resolved
                .as_ref()
                .map_or_else(|| wire_name.to_owned(), |(_, display)| display.clone());
            events.push(Event::ToolDispatchStart {
                id: id.to_owned(),
                name: wire_name.to_owned(),
                input: input.clone(),
            });
            dispatch.calls.push(Call {
                id: id.to_owned(),
                name: wire_name.to_owned(),
            });
            dispatch.results.push(None);
            let span = trace::tool_span(&name, id);
            let started = std::time::Instant::now();
            // A rejected call or an unknown tool has its error result without running.
            let target = match (rejected.iter().find(|r| r.id == id), resolved) {
                (None, Some((target, _))) => target,
                (Some(rejected), _) => {
                    dispatch.known_outcome(index, &span, started, rejected.reason.clone());
                    continue;
                }
                (None, None) => {
                    dispatch.known_outcome(index, &span, started, format!("unknown tool {wire_name:?}"));
                    continue;
                }
            };
            let call = ToolCall {
                id: id.to_owned(),
                name: match &target {
                    Target::Tool(_) => wire_name.to_owned(),
                    Target::Source(_, original) => original.clone(),
                },
                input: input.clone(),
                cancel: dispatch.cancel.child_token(),
                checkpoints: checkpoints.clone(),
            };
            let hooks = hooks.clone();
            let secrets = secrets.clone();
            let run = async move {
                let invoke = |call: ToolCall| async move {
                    let run = async {
                        match &target {
                            Target::Tool(tool) => tool.call(call).await,
                            Target::Source(source, _) => source.call(call).await,
                        }
                    };
                    match AssertUnwindSafe(run).catch_unwind().await {
                        Ok(Ok(result)) => result,
                        Ok(Err(e)) => ToolCallResult::error(e.to_string()),
                        Err(panic) => ToolCallResult::error(format!("the tool panicked: {}", panic_message(&*panic))),
                    }
                };
                // Hooks may deny the call, rewrite its input or replace its result (agent/hooks.rs),
                // with their own panics caught there. The call runs inside the turn's stream, so
                // anything else that panics on its way is caught here too: the call fails, the
                // turn goes on.
                let result = match AssertUnwindSafe(hooks.around_call(call, &name, invoke))
                    .catch_unwind()
                    .await
                {
                    Ok(result) => result,
                    Err(panic) => ToolCallResult::error(format!("the tool call panicked: {}", panic_message(&*panic))),
                };
                // Decoding and resizing an image is CPU work for the blocking pool; text needs
                // none, and the pool's thread hand-off would cost a text result more than its
                // conversion (two wake-ups, felt by every call of a busy fleet).
                let outcome = if result.parts.iter().any(|part| matches!(part, ResultPart::Image(_))) {
                    tokio::task::spawn_blocking(move || convert(result, max_image_dimension))
                        .await
                        .unwrap_or_else(|e| (vec![text(format!("the tool result could not be processed: {e}"))], true))
                } else {
                    convert(result, max_image_dimension)
                };
                let outcome = redact(outcome, &secrets);
                trace::tool_finished(&tracing::Span::current(), started, &outcome.0, outcome.1);
                (index, outcome)
            };
            dispatch
                .waiting
                .push(Box::pin(run.instrument(span).with_current_subscriber()));
        }
        (dispatch, events)
    }

    /// Lets the calls run. The agent calls it once the assistant message that made them is
    /// stored: a tool's file checkpoint is recorded as that message's, and a new session's file
    /// only exists from its first assistant message on, so a tool that ran earlier could change a
    /// file with no session yet to keep its previous content in.
    pub(super) fn launch(&mut self) {
        self.running.extend(self.waiting.drain(..));
    }

    /// Runs the calls until the next one finishes and returns its `ToolDispatchComplete` event;
    /// `None` once every call has finished. Calls whose outcome was known without running are
    /// reported first.
    pub(super) async fn next_completion(&mut self) -> Option<Event> {
        let index = match self.known.pop_front() {
            Some(index) => index,
            None => {
                let (index, outcome) = self.running.next().await?;
                self.results[index] = Some(outcome);
                index
            }
        };
        let call = &self.calls[index];
        let outcome = self.results[index].as_ref().expect("a reported call has its outcome");
        Some(Event::ToolDispatchComplete {
            id: call.id.clone(),
            name: call.name.clone(),
            content: outcome.0.clone(),
            is_error: outcome.1,
        })
    }

    /// Records call `index`'s error result, known without running it, to be reported first.
    fn known_outcome(&mut self, index: usize, span: &tracing::Span, started: std::time::Instant, error: String) {
        let outcome = (vec![text(error)], true);
        trace::tool_finished(span, started, &outcome.0, outcome.1);
        self.results[index] = Some(outcome);
        self.known.push_back(index);
    }

    /// Tells running tools to stop and abandons them: each gets [`ABORT_GRACE`] to notice its
    /// cancellation token and return, on a task of its own; what still runs then is aborted.
    /// Calls never launched are dropped unrun. A call runs only while the dispatch is polled,
    /// so each call that returned was reported and has its result; the others get the
    /// interrupted closer, whatever they return now.
    pub(super) fn abort(&mut self) {
        self.cancel.cancel();
        self.waiting.clear();
        let mut running = std::mem::take(&mut self.running);
        if running.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let drained = tokio::time::timeout(ABORT_GRACE, async { while running.next().await.is_some() {} });
                    // What still runs when the grace ends is dropped with the future.
                    let _ = drained.await;
                });
            }
            // Outside a runtime nothing can run them: they are dropped (aborted) at once.
            Err(_) => drop(running),
        }
    }

    /// After [`Dispatch::abort`]: a `ToolDispatchComplete` for each call not reported yet, in
    /// call order, with its known outcome (a rejected call) or the interrupted result, so that
    /// every call the consumer saw start is seen to complete.
    pub(super) fn unreported_completions(&mut self) -> Vec<Event> {
        let known: Vec<usize> = self.known.drain(..).collect();
        (0..self.calls.len())
            .filter(|index| self.results[*index].is_none() || known.contains(index))
            .map(|index| {
                let call = &self.calls[index];
                let (content, is_error) = self.results[index]
                    .clone()
                    .unwrap_or_else(|| (vec![text(INTERRUPTED_RESULT.to_owned())], true));
                Event::ToolDispatchComplete {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    content,
                    is_error,
                }
            })
            .collect()
    }

    /// The tool-result message: one result per call, in call order; a call that never finished
    /// gets the interrupted closer.
    pub(super) fn into_message(mut self) -> Message {
        let calls = std::mem::take(&mut self.calls);
        let results = std::mem::take(&mut self.results);
        let blocks = calls
            .into_iter()
            .zip(results)
            .map(|(call, result)| {
                let (content, is_error) = result.unwrap_or_else(|| (vec![text(INTERRUPTED_RESULT.to_owned())], true));
                ContentBlock::ToolResult {
                    tool_use_id: call.id,
                    content,
                    is_error,
                }
            })
            .collect();
        Message::new(Role::User, blocks)
    }
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        // The calls' futures are dropped with the dispatch; the token tells what they started
        // (a tool's own tasks and processes) to stop.
        self.cancel.cancel();
    }
}

/// `outcome` with every secret of `secrets` replaced in its text parts. Images are passed as
/// they are: a key drawn into a screenshot is beyond a text search.
fn redact(outcome: Outcome, secrets: &Redactor) -> Outcome {
    if secrets.is_empty() {
        return outcome;
    }
    let (content, is_error) = outcome;
    let content = content
        .into_iter()
        .map(|part| match part {
            ToolResultContent::Text { text } => ToolResultContent::Text {
                text: match secrets.clean(&text) {
                    std::borrow::Cow::Borrowed(_) => text,
                    std::borrow::Cow::Owned(clean) => clean,
                },
            },
            other => other,
        })
        .collect();
    (content, is_error)
}

fn text(text: String) -> ToolResultContent {
    ToolResultContent::Text { text }
}

/// Converts a tool's result into conversation content: text as is, images detected, resized and
/// base64-encoded. An image that cannot be used becomes a text part saying why, and marks the
/// result as an error.
fn convert(result: ToolCallResult, max_image_dimension: u32) -> Outcome {
    let mut is_error = result.is_error;
    let content = result
        .parts
        .into_iter()
        .map(|part| match part {
            ResultPart::Text(t) => text(t),
            ResultPart::Image(bytes) => match crate::image::process(&bytes, max_image_dimension) {
                Ok(p) => ToolResultContent::Image {
                    media_type: p.media_type.to_owned(),
                    data: p.data,
                },
                Err(e) => {
                    is_error = true;
                    text(format!("the tool returned an image panto could not use: {e}"))
                }
            },
        })
        .collect();
    (content, is_error)
}
