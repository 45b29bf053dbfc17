//! The typed events a [`Stream`](crate::Stream) yields, and their one JSON form (`json`).

mod json;
#[cfg(test)]
mod tests;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::{ContentBlock, StopReason, ToolResultContent, Usage};

pub use json::{event_schema, EVENT_SCHEMA_VERSION};

/// The kind of a content block as it starts streaming. In JSON: `text`, `thinking`,
/// `redacted_thinking`, `reasoning`, `tool_use` (the `type` of the finished [`ContentBlock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockKind {
    /// Text.
    Text,
    /// Reasoning.
    Thinking,
    /// Encrypted reasoning (arrives whole, no deltas).
    RedactedThinking,
    /// An OpenAI Responses API reasoning item ([`ContentBlock::Reasoning`]): encrypted, arrives
    /// whole, no deltas, not for display (its summary streams as a thinking block before it).
    Reasoning,
    /// A tool call; its arguments stream as JSON fragments.
    ToolUse,
}

/// A piece of a streaming block.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContentDelta {
    /// More text.
    Text(String),
    /// More reasoning.
    Thinking(String),
    /// A fragment of a tool call's JSON arguments (not valid JSON on its own).
    ToolInput(String),
}

/// Why a request is being retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryInfo {
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    /// How long panto waits before it.
    pub delay: Duration,
    /// The error that caused the retry, as a sentence.
    pub reason: String,
    /// Whether content of the failed attempt had already been streamed; a consumer that showed it
    /// should discard it, because the conversation will hold only the new attempt.
    pub discard_partial: bool,
}

/// One step of progress in a turn.
///
/// Its serde form is panto's one event JSON (docs/events.md, schema [`event_schema`]): what
/// stream-json prints, what the C ABI hands out and what Go reads. Variants and JSON `type`s
/// correspond one to one, except [`Event::Delta`], which is `text_delta`, `thinking_delta` or
/// `tool_input_delta` after its [`ContentDelta`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A content block starts. `index` counts blocks within the current assistant message.
    BlockStart {
        /// Block index within the message.
        index: usize,
        /// Its kind.
        kind: BlockKind,
        /// For a tool call: its id and offered name.
        tool: Option<ToolDetails>,
    },
    /// More content for the block at `index`.
    Delta {
        /// Block index within the message.
        index: usize,
        /// The new content.
        delta: ContentDelta,
    },
    /// The block at `index` is complete, as it now stands in the message.
    BlockComplete {
        /// Block index within the message.
        index: usize,
        /// The finished block.
        block: ContentBlock,
    },
    /// An assistant message is complete and part of the conversation (and persisted).
    MessageComplete {
        /// Provider-reported usage for this message.
        usage: Option<Usage>,
        /// Why it ended.
        stop_reason: StopReason,
    },
    /// A tool call starts running.
    ToolDispatchStart {
        /// The call id.
        id: String,
        /// The tool's offered name: as offered to the model and announced by [`Event::BlockStart`]
        /// (a [`ToolSource`](crate::ToolSource)'s tool as `source__tool`).
        name: String,
        /// The arguments.
        input: serde_json::Value,
    },
    /// A tool call finished.
    ToolDispatchComplete {
        /// The call id.
        id: String,
        /// The tool's offered name, as in [`Event::ToolDispatchStart`].
        name: String,
        /// The result as the model will see it.
        content: Vec<ToolResultContent>,
        /// Whether it failed.
        is_error: bool,
    },
    /// A provider request failed and will be retried.
    ProviderRetry(RetryInfo),
    /// Compaction starts (manual or automatic).
    CompactionStart {
        /// Estimated context tokens before.
        tokens_before: u64,
    },
    /// Compaction finished and the conversation was replaced by its summary plus the kept tail.
    CompactionComplete {
        /// Estimated context tokens before.
        tokens_before: u64,
        /// Estimated context tokens after.
        tokens_after: u64,
        /// What the summary request reported; also counted in the turn's usage
        /// ([`Event::TurnComplete`]).
        usage: Option<Usage>,
    },
    /// Text sent to steer the turn ([`RunControl::steer`](crate::RunControl::steer)) joined the
    /// conversation, after the step's tool results, and the model sees it with the next request.
    Steer {
        /// The text that joined.
        text: String,
    },
    /// A follow-up turn starts on the same stream, with this message
    /// ([`RunControl::follow_up`](crate::RunControl::follow_up), or a steer that came after the
    /// model's answer).
    FollowUpStart {
        /// The message's text.
        text: String,
    },
    /// The turn is over: the last message ended without tool calls. The last event of its turn;
    /// a follow-up turn may follow on the same stream ([`Event::FollowUpStart`]).
    TurnComplete {
        /// Usage summed over every request of the turn.
        usage: Usage,
        /// How many requests for a model message the turn made (a compaction's summary request
        /// is not counted here, though its usage is).
        steps: u32,
        /// Why the last message ended.
        stop_reason: StopReason,
    },
}

/// The identity of a tool call announced in [`Event::BlockStart`]; in JSON `{"id", "name"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolDetails {
    /// The call id.
    pub id: String,
    /// The offered name.
    pub name: String,
}
