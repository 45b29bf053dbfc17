//! Hooks: the embedder's own code around tool calls, requests and turns.
//!
//! A hook is untrusted in the sense that matters here: it may panic, hang or answer late. Every
//! call of one is bounded by its [`Hook::timeout`] and caught if it panics; around a tool call a
//! failed hook is a denial (the model gets an error result saying why), before a request it ends
//! the turn with [`Error::HookFailed`], after a turn it is ignored. Nothing a hook does can crash
//! the agent or leave a tool call without a result.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::conversation::Message;
use crate::error::Error;
use crate::tool::{ToolCall, ToolCallResult};

/// How long a hook may take by default before it counts as failed.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// What a [`Hook::before_tool`] decides about a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BeforeTool {
    /// No objection: the next hook decides, and the tool runs when every hook allows.
    Allow,
    /// The call does not run; the model gets an error result holding the reason.
    Deny(String),
    /// The call runs with this input instead (later hooks see it too). The conversation keeps
    /// the model's original call; only the tool sees the new input.
    Rewrite(serde_json::Value),
    /// The call does not run, and the model gets this result as the tool's, word for word (no
    /// "denied" wording): a hook that already knows how the call would end, such as an approval
    /// hook whose preview of the call failed as the tool would, or one that answers from a cache.
    /// Later hooks are not asked, and `after_tool` does not run.
    Respond(ToolCallResult),
}

/// What a [`Hook::after_tool`] decides about a result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AfterTool {
    /// The result stands (as earlier hooks left it).
    Keep,
    /// The model sees this result instead.
    Replace(ToolCallResult),
}

/// Code the agent runs around tool calls, requests and turns ([`Agent::add_hook`](crate::Agent::add_hook)).
/// Every method has a default that does nothing, so a hook implements only what it needs.
///
/// Hooks run in the order they were added. Around a tool call they run inside the call's task,
/// so the calls of one step are hooked concurrently, like the tools themselves.
#[async_trait]
pub trait Hook: Send + Sync {
    /// A name for messages: a denial because this hook failed names it.
    fn name(&self) -> &str {
        "hook"
    }

    /// How long each call of this hook may take before it counts as failed; `None` for no limit
    /// (a hook that asks a person, whose answer takes as long as it takes).
    fn timeout(&self) -> Option<Duration> {
        Some(DEFAULT_HOOK_TIMEOUT)
    }

    /// Before a tool runs. `call.name` is the tool's name: a tool's own, or for a
    /// [`ToolSource`](crate::ToolSource)'s tool `source/tool`, the source's name and the tool's
    /// own unencoded (the events name it by its offered name instead, as
    /// [`Event::ToolDispatchStart`](crate::Event::ToolDispatchStart) says); `call.cancel` is
    /// cancelled with the turn.
    async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
        let _ = call;
        BeforeTool::Allow
    }

    /// After a tool ran (not after a denied call), with the result as earlier hooks left it.
    async fn after_tool(&self, call: &ToolCall, result: &ToolCallResult) -> AfterTool {
        let _ = (call, result);
        AfterTool::Keep
    }

    /// Before each provider request, with the messages it sends (read-only); `cancel` is
    /// cancelled with the turn.
    async fn before_request(&self, messages: &[Message], cancel: &CancellationToken) {
        let _ = (messages, cancel);
    }

    /// After a turn completed normally, with the conversation as it ends the turn.
    async fn on_turn_end(&self, messages: &[Message]) {
        let _ = messages;
    }
}

/// The hooks of an agent, cheap to clone into each tool call's task.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    list: Arc<Vec<Arc<dyn Hook>>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.list.iter().map(|h| h.name()).collect();
        f.debug_struct("Hooks").field("hooks", &names).finish()
    }
}

/// Why a hook call produced no answer.
enum Failure {
    Panicked(String),
    TimedOut(Duration),
}

impl Failure {
    fn describe(&self, hook: &str, phase: &str) -> String {
        match self {
            Failure::Panicked(message) => format!("the {phase} hook {hook:?} panicked: {message}"),
            Failure::TimedOut(limit) => format!("the {phase} hook {hook:?} did not answer within {limit:?}"),
        }
    }
}

/// Runs one hook call, bounded by the hook's timeout and with its panic caught.
async fn guarded<T>(hook: &dyn Hook, call: impl Future<Output = T>) -> Result<T, Failure> {
    let caught = AssertUnwindSafe(call).catch_unwind();
    let outcome = match hook.timeout() {
        Some(limit) => tokio::time::timeout(limit, caught)
            .await
            .map_err(|_| Failure::TimedOut(limit))?,
        None => caught.await,
    };
    outcome.map_err(|panic| Failure::Panicked(panic_message(&*panic)))
}

impl Hooks {
    /// Adds a hook after the others.
    pub(super) fn push(&mut self, hook: Arc<dyn Hook>) {
        Arc::make_mut(&mut self.list).push(hook);
    }

    /// Runs a tool call through the hooks: `before_tool` may deny it (the tool does not run and
    /// the result is the denial) or rewrite its input; `after_tool` may replace its result.
    /// `name` is the tool's display name, which hooks see as `call.name`.
    pub(super) async fn around_call<F, Fut>(&self, call: ToolCall, name: &str, run: F) -> ToolCallResult
    where
        F: FnOnce(ToolCall) -> Fut,
        Fut: Future<Output = ToolCallResult>,
    {
        if self.list.is_empty() {
            return run(call).await;
        }
        let mut seen = ToolCall {
            name: name.to_owned(),
            ..call.clone()
        };
        for hook in self.list.iter() {
            match guarded(hook.as_ref(), hook.before_tool(&seen)).await {
                Ok(BeforeTool::Allow) => {}
                Ok(BeforeTool::Rewrite(input)) => seen.input = input,
                Ok(BeforeTool::Deny(reason)) => return denied(&reason),
                Ok(BeforeTool::Respond(result)) => return result,
                Err(failure) => return denied(&failure.describe(hook.name(), "before_tool")),
            }
        }
        let mut result = run(ToolCall {
            input: seen.input.clone(),
            ..call
        })
        .await;
        for hook in self.list.iter() {
            match guarded(hook.as_ref(), hook.after_tool(&seen, &result)).await {
                Ok(AfterTool::Keep) => {}
                Ok(AfterTool::Replace(replacement)) => result = replacement,
                Err(failure) => return ToolCallResult::error(failure.describe(hook.name(), "after_tool")),
            }
        }
        result
    }

    /// Shows every hook the messages of the request about to be sent.
    pub(super) async fn before_request(&self, messages: &[Message], cancel: &CancellationToken) -> Result<(), Error> {
        for hook in self.list.iter() {
            if let Err(failure) = guarded(hook.as_ref(), hook.before_request(messages, cancel)).await {
                return Err(Error::HookFailed {
                    hook: hook.name().to_owned(),
                    message: failure.describe(hook.name(), "before_request"),
                });
            }
        }
        Ok(())
    }

    /// Tells every hook the turn ended; a hook that fails here changes nothing (the turn is
    /// already complete and persisted).
    pub(super) async fn on_turn_end(&self, messages: &[Message]) {
        for hook in self.list.iter() {
            let _ = guarded(hook.as_ref(), hook.on_turn_end(messages)).await;
        }
    }
}

/// The result a denied call gets: an error the model can read.
fn denied(reason: &str) -> ToolCallResult {
    ToolCallResult::error(format!("the call was denied: {reason}"))
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}
