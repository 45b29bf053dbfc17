//! Running the tool calls of one assistant message, concurrently, and collecting their results in
//! call order.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::hooks::{panic_message, Hooks};
use super::INTERRUPTED_RESULT;
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};
use crate::event::Event;
use crate::provider::validate::RejectedCall;
use crate::registry::{Target, ToolRegistry};
use crate::tool::{FileCheckpoints, ResultPart, ToolCall, ToolCallResult};
use crate::trace;
use tracing::instrument::{Instrument, WithSubscriber};

#[derive(Debug)]
struct Call {
    id: String,
    name: String,
}

type Outcome = (Vec<ToolResultContent>, bool);

/// How long cancelled tools may take to notice their token before they are aborted.
pub(crate) const ABORT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The tool calls of one message, in flight.
#[derive(Debug)]
pub(crate) struct Dispatch {
    calls: Vec<Call>,
    results: Vec<Option<Outcome>>,
    tasks: JoinSet<(usize, Outcome)>,
    cancel: CancellationToken,
    /// Set by [`Dispatch::launch`]; the calls wait for it (see there).
    go: tokio::sync::watch::Sender<bool>,
}

impl Dispatch {
    /// Sets up every tool call of `message` on the runtime, except the `rejected` ones, which get
    /// their error result without running; the calls run once [`Dispatch::launch`] is called.
    /// Returns the dispatch and one `ToolDispatchStart` event per call, in call order.
    pub fn start(
        registry: &ToolRegistry,
        message: &Message,
        rejected: &[RejectedCall],
        max_image_dimension: u32,
        cancel: CancellationToken,
        hooks: &Hooks,
        checkpoints: Option<FileCheckpoints>,
    ) -> (Self, Vec<Event>) {
        let mut dispatch = Dispatch {
            calls: Vec::new(),
            results: Vec::new(),
            tasks: JoinSet::new(),
            cancel,
            go: tokio::sync::watch::Sender::new(false),
        };
        let mut events = Vec::new();
        for (index, (id, wire_name, input)) in message.tool_uses().enumerate() {
            let resolved = registry.resolve(wire_name);
            let name = resolved
                .as_ref()
                .map_or_else(|| wire_name.to_owned(), |(_, display)| display.clone());
            events.push(Event::ToolDispatchStart {
                id: id.to_owned(),
                name: name.clone(),
                input: input.clone(),
            });
            dispatch.calls.push(Call {
                id: id.to_owned(),
                name: name.clone(),
            });
            dispatch.results.push(None);
            let span = trace::tool_span(&dispatch.calls[index].name, id);
            let started = std::time::Instant::now();
            if let Some(rejected) = rejected.iter().find(|r| r.id == id) {
                let outcome = (vec![text(rejected.reason.clone())], true);
                trace::tool_finished(&span, started, &outcome.0, outcome.1);
                dispatch.tasks.spawn(async move { (index, outcome) });
                continue;
            }
            let Some((target, _)) = resolved else {
                let outcome = (vec![text(format!("unknown tool {wire_name:?}"))], true);
                trace::tool_finished(&span, started, &outcome.0, outcome.1);
                dispatch.tasks.spawn(async move { (index, outcome) });
                continue;
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
            let mut go = dispatch.go.subscribe();
            let stop = dispatch.cancel.clone();
            let task = async move {
                tokio::select! {
                    launched = go.wait_for(|go| *go) => {
                        if launched.is_err() {
                            return (index, (vec![text(INTERRUPTED_RESULT.to_owned())], true));
                        }
                    }
                    () = stop.cancelled() => return (index, (vec![text(INTERRUPTED_RESULT.to_owned())], true)),
                }
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
                // Hooks may deny the call, rewrite its input or replace its result (agent/hooks.rs).
                let result = hooks.around_call(call, &name, invoke).await;
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
                trace::tool_finished(&tracing::Span::current(), started, &outcome.0, outcome.1);
                (index, outcome)
            };
            dispatch.tasks.spawn(task.instrument(span).with_current_subscriber());
        }
        (dispatch, events)
    }

    /// Lets the calls run. The agent calls it once the assistant message that made them is
    /// stored: a tool's file checkpoint is recorded as that message's, and a new session's file
    /// only exists from its first assistant message on, so a tool that ran earlier could change a
    /// file with no session yet to keep its previous content in.
    pub fn launch(&self) {
        self.go.send_replace(true);
    }

    /// Waits for the next call to finish and returns its `ToolDispatchComplete` event; `None` once
    /// every call has finished.
    pub async fn next_completion(&mut self) -> Option<Event> {
        let (index, outcome) = match self.tasks.join_next().await? {
            Ok(done) => done,
            // Tasks catch their own panics, so a join error means the task was aborted; the
            // call then keeps no result and gets the interrupted closer.
            Err(_) => return Box::pin(self.next_completion()).await,
        };
        let call = &self.calls[index];
        let event = Event::ToolDispatchComplete {
            id: call.id.clone(),
            name: call.name.clone(),
            content: outcome.0.clone(),
            is_error: outcome.1,
        };
        self.results[index] = Some(outcome);
        Some(event)
    }

    /// Tells running tools to stop and abandons them: each gets [`ABORT_GRACE`] to notice its
    /// cancellation token and return; what still runs then is aborted.
    pub fn abort(&mut self) {
        self.cancel.cancel();
        // Keep the results of calls that finished but were not reported yet.
        while let Some(joined) = self.tasks.try_join_next() {
            if let Ok((index, outcome)) = joined {
                self.results[index] = Some(outcome);
            }
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        if tasks.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let drained =
                        tokio::time::timeout(ABORT_GRACE, async { while tasks.join_next().await.is_some() {} });
                    if drained.await.is_err() {
                        tasks.abort_all();
                    }
                });
            }
            // Outside a runtime nothing can wait: abort at once.
            Err(_) => tasks.abort_all(),
        }
    }

    /// The tool-result message: one result per call, in call order; a call that never finished
    /// gets the interrupted closer.
    pub fn into_message(mut self) -> Message {
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
        // Dropping the JoinSet aborts the tasks; the token tells cooperative tools first.
        self.cancel.cancel();
    }
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
