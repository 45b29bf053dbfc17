//! The conversation model: messages, content blocks, usage.
//!
//! These are plain data types. They serialise with serde into the shape the session stores write,
//! and every variant round-trips exactly: providers require some fields (thinking signatures,
//! redacted thinking data) to come back byte for byte on later turns.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::identity::ApiStyle;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The human, tool results, and compaction summaries (providers see all three as user turns).
    User,
    /// The model.
    Assistant,
    /// System prompt changes ([`ContentBlock::System`]); providers receive the replayed result of
    /// [`Conversation::effective_system_blocks`], never these messages directly.
    System,
}

/// Whether a system block adds to the system prompt or replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SystemMode {
    /// Appended after the system blocks before it.
    Append,
    /// Replaces every system block before it.
    Replace,
}

/// One part of a tool result as the conversation holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultContent {
    /// Text output.
    Text {
        /// The text.
        text: String,
    },
    /// An image, already resized to the configured maximum and base64-encoded.
    Image {
        /// IANA media type, e.g. `image/png`.
        media_type: String,
        /// Base64 (standard alphabet, padded) of the image bytes.
        data: String,
    },
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning. Anthropic requires `signature` back verbatim on later turns.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Provider signature over the reasoning; `None` where the provider sends none
        /// (OpenAI-compatible `reasoning_content`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted; sent back verbatim.
    RedactedThinking {
        /// The opaque payload.
        data: String,
    },
    /// A reasoning item of the OpenAI Responses API (`openai-responses`): the model's encrypted
    /// reasoning, sent back unchanged on later requests to that API (which is stateless, so the
    /// reasoning must travel with the history) and never shown. Its summary is also in the
    /// [`ContentBlock::Thinking`] block before it, which is what a front end shows. Requests in
    /// another API style leave it out.
    Reasoning {
        /// The item's id (`rs_…`).
        id: String,
        /// The summary parts, as the API returned them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        /// The encrypted reasoning (`encrypted_content`).
        encrypted_content: String,
    },
    /// A tool call made by the model.
    ToolUse {
        /// Provider-assigned call id.
        id: String,
        /// Offered name of the tool.
        name: String,
        /// Arguments as JSON.
        input: serde_json::Value,
    },
    /// The result of a tool call, in a user message.
    ToolResult {
        /// The id of the [`ContentBlock::ToolUse`] this answers.
        tool_use_id: String,
        /// Text and image parts.
        content: Vec<ToolResultContent>,
        /// Whether the tool failed; the model sees the failure.
        #[serde(default)]
        is_error: bool,
    },
    /// A system prompt change (in a [`Role::System`] message).
    System {
        /// The text.
        text: String,
        /// Append to or replace the system prompt so far.
        mode: SystemMode,
    },
    /// A summary of earlier conversation that compaction replaced.
    CompactionSummary {
        /// The summary text.
        summary: String,
    },
    /// An image the user attached.
    Image {
        /// IANA media type, e.g. `image/png`.
        media_type: String,
        /// Base64 of the image bytes.
        data: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The API style whose opaque reasoning this block is, if it is some: signed or redacted
    /// thinking is Anthropic's, a reasoning item the Responses API's. Only that style can take it
    /// back; a request in another style leaves it out.
    pub fn opaque_reasoning_style(&self) -> Option<ApiStyle> {
        match self {
            ContentBlock::Thinking {
                signature: Some(signature),
                ..
            } if !signature.is_empty() => Some(ApiStyle::AnthropicMessages),
            ContentBlock::RedactedThinking { .. } => Some(ApiStyle::AnthropicMessages),
            ContentBlock::Reasoning { .. } => Some(ApiStyle::OpenAiResponses),
            _ => None,
        }
    }
}

/// Token counts reported by a provider for one model response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens, including reasoning.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache, at every lifetime (Anthropic's
    /// `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// How many of `cache_write_tokens` were written with the one-hour lifetime (Anthropic's
    /// `cache_creation.ephemeral_1h_input_tokens`), which is billed at its own rate; the rest
    /// were written for five minutes. Absent from JSON when zero, as before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_tokens: u64,
    /// How many of `output_tokens` the model spent reasoning (OpenAI's
    /// `output_tokens_details.reasoning_tokens` / `completion_tokens_details.reasoning_tokens`),
    /// for display: they are billed as output and already counted there. Absent from JSON when
    /// zero, as before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds `other` into `self`, field by field. The counts come from a provider, so a sum that
    /// would overflow stays at `u64::MAX` instead.
    pub fn accumulate(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.cache_write_1h_tokens = self.cache_write_1h_tokens.saturating_add(other.cache_write_1h_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }

    /// The cache writes with the five-minute lifetime: every write not counted as one-hour.
    pub fn cache_write_5m_tokens(&self) -> u64 {
        self.cache_write_tokens.saturating_sub(self.cache_write_1h_tokens)
    }

    /// The share of this usage's input that was read from the prompt cache, from 0.0 to 1.0:
    /// `cache_read_tokens / total_input_tokens()`, 0.0 when there was no input. This is what a
    /// front end shows as "84% cached"; writes count as uncached, since they are billed above
    /// the input price.
    pub fn cached_fraction(&self) -> f64 {
        match self.total_input_tokens() {
            0 => 0.0,
            total => self.cache_read_tokens as f64 / total as f64,
        }
    }

    /// [`Usage::cached_fraction`] as a whole percentage, rounded down so that "100% cached"
    /// means nothing at all was billed at the input or write price.
    pub fn cached_percent(&self) -> u64 {
        match self.total_input_tokens() {
            0 => 0,
            total => (u128::from(self.cache_read_tokens) * 100 / u128::from(total)) as u64,
        }
    }

    /// Every input token the request carried: uncached, cache reads and cache writes.
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

/// Why the model stopped, as the wire said it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished its turn (Anthropic `end_turn`, OpenAI `stop`).
    EndTurn,
    /// The model wants tool results (Anthropic `tool_use`, OpenAI `tool_calls`).
    ToolUse,
    /// The output token limit was hit (Anthropic `max_tokens`, OpenAI `length`).
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The model refused (Anthropic `refusal`).
    Refusal,
    /// Output was filtered (OpenAI `content_filter`).
    ContentFilter,
    /// The provider paused a long turn (Anthropic `pause_turn`).
    PauseTurn,
    /// Any other value, kept verbatim.
    Other(String),
}

impl StopReason {
    /// The canonical spelling written to session logs.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
            StopReason::ContentFilter => "content_filter",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Other(s) => s,
        }
    }

    /// Maps a wire value from either API onto a variant.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "end_turn" | "stop" => StopReason::EndTurn,
            "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
            "max_tokens" | "length" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" => StopReason::Refusal,
            "content_filter" => StopReason::ContentFilter,
            "pause_turn" => StopReason::PauseTurn,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A string: one of the values [`StopReason::as_str`] names, or another provider value verbatim.
impl JsonSchema for StopReason {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("StopReason")
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Why the model stopped: end_turn, tool_use, max_tokens, stop_sequence, refusal, content_filter, pause_turn, or another provider value verbatim (an open set).",
            "type": "string",
            "examples": ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "content_filter", "pause_turn"]
        })
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(StopReason::from_wire(&s))
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Provider usage for an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why an assistant message ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// An opaque bag for the embedder: by contract a JSON document, never parsed by panto, kept
    /// through persistence verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
}

impl Message {
    /// A message with `role` and `content` and nothing else.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Message {
            role,
            content,
            usage: None,
            stop_reason: None,
            metadata: None,
        }
    }

    /// The assistant message a provider response completes as: its blocks, usage and stop
    /// reason.
    pub(crate) fn assistant(content: Vec<ContentBlock>, usage: Option<Usage>, stop_reason: StopReason) -> Self {
        Message {
            usage,
            stop_reason: Some(stop_reason),
            ..Message::new(Role::Assistant, content)
        }
    }

    /// Whether a person typed this message: a user message with text or an image, as opposed to
    /// tool results, compaction summaries and synthetic closers. A steer (text a person sent
    /// while the turn ran, after a step's tool results in the same message) is a prompt too.
    ///
    /// This is the one definition of "human prompt" that session recency uses in every store.
    pub fn is_human_prompt(&self) -> bool {
        self.role == Role::User
            && self
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text { .. } | ContentBlock::Image { .. }))
            && !self
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::CompactionSummary { .. }))
    }

    /// What a person typed, for labels and previews: the first text block (empty when there is
    /// none). Text attached to a prompt (a shell command's output, a file's content) follows it
    /// in blocks of its own and is not part of it.
    pub fn prompt_text(&self) -> &str {
        self.content
            .iter()
            .find_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }

    /// The text of every text block, joined with newlines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls in this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// A linear chain of messages plus an opaque, creation-time metadata bag.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// The messages, oldest first. Public for surgery (custom compaction, context management).
    pub messages: Vec<Message>,
    /// An opaque bag fixed at creation: by contract a JSON document, never parsed by panto. Stores
    /// keep it in the session header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the conversation waits for the model's answer: its last message, system prompt
    /// changes aside, is a user message or tool results (what a failed turn leaves), so
    /// [`Agent::retry`](crate::Agent::retry) can ask the model again.
    pub fn awaits_answer(&self) -> bool {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role != Role::System)
            .is_some_and(|m| m.role == Role::User)
    }

    /// An empty conversation carrying `metadata`.
    pub fn with_metadata(metadata: impl Into<String>) -> Self {
        Conversation {
            messages: Vec::new(),
            metadata: Some(metadata.into()),
        }
    }

    /// Appends a user message with one text block.
    pub fn add_user_message(&mut self, text: impl Into<String>) {
        self.messages
            .push(Message::new(Role::User, vec![ContentBlock::text(text)]));
    }

    /// Appends an assistant message.
    pub fn add_assistant_message(&mut self, blocks: Vec<ContentBlock>, usage: Option<Usage>) {
        let mut message = Message::new(Role::Assistant, blocks);
        message.usage = usage;
        self.messages.push(message);
    }

    /// Appends a system block that adds to the system prompt.
    pub fn add_system_message(&mut self, text: impl Into<String>) {
        self.push_system(text.into(), SystemMode::Append);
    }

    /// Appends a system block that replaces the whole system prompt so far.
    pub fn replace_system_message(&mut self, text: impl Into<String>) {
        self.push_system(text.into(), SystemMode::Replace);
    }

    fn push_system(&mut self, text: String, mode: SystemMode) {
        self.messages
            .push(Message::new(Role::System, vec![ContentBlock::System { text, mode }]));
    }

    /// Appends a compaction summary (a user-role message holding one summary block).
    pub fn add_compaction_summary(&mut self, summary: impl Into<String>) {
        self.messages.push(Message::new(
            Role::User,
            vec![ContentBlock::CompactionSummary {
                summary: summary.into(),
            }],
        ));
    }

    /// How many blocks of opaque reasoning ([`ContentBlock::opaque_reasoning_style`]) a request
    /// in `style` leaves out: reasoning another API produced, which only that API can read. A
    /// front end resuming a session under another style says so.
    pub fn reasoning_unsendable_in(&self, style: ApiStyle) -> usize {
        self.messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| b.opaque_reasoning_style().is_some_and(|s| s != style))
            .count()
    }

    /// The system prompt the provider sees: every system block replayed in order, where a
    /// [`SystemMode::Replace`] block discards those before it.
    pub fn effective_system_blocks(&self) -> Vec<&str> {
        let mut blocks = Vec::new();
        for message in &self.messages {
            for block in &message.content {
                if let ContentBlock::System { text, mode } = block {
                    if *mode == SystemMode::Replace {
                        blocks.clear();
                    }
                    blocks.push(text.as_str());
                }
            }
        }
        blocks
    }

    /// The last assistant message's usage, if any.
    pub fn last_usage(&self) -> Option<(usize, Usage)> {
        self.messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, m)| (m.role == Role::Assistant).then_some(m.usage.map(|u| (i, u))).flatten())
    }
}

/// A tool as offered to the model: name, description and JSON schema of its input.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolDecl {
    /// The name. For [`Agent::register_tool`](crate::Agent::register_tool) it must already be a
    /// offered name: 1 to 64 characters of `[A-Za-z0-9_-]`. Names from a [`ToolSource`](crate::ToolSource) may be
    /// anything; panto encodes them.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the input object.
    pub input_schema: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_share_counts_reads_over_all_input() {
        let usage = Usage {
            input_tokens: 100,
            cache_read_tokens: 840,
            cache_write_tokens: 60,
            cache_write_1h_tokens: 20,
            reasoning_tokens: 0,
            ..Usage::default()
        };
        assert_eq!(usage.cached_percent(), 84);
        assert!((usage.cached_fraction() - 0.84).abs() < 1e-12);
        assert_eq!(usage.cache_write_5m_tokens(), 40);
        assert_eq!(Usage::default().cached_percent(), 0);
        assert_eq!(Usage::default().cached_fraction(), 0.0);
        // 99.9% is not shown as 100%: something was still billed above the read price.
        let almost = Usage {
            input_tokens: 1,
            cache_read_tokens: 999,
            ..Usage::default()
        };
        assert_eq!(almost.cached_percent(), 99);
    }

    #[test]
    fn usage_from_a_provider_cannot_overflow_a_sum() {
        let huge = Usage {
            input_tokens: u64::MAX,
            cache_read_tokens: u64::MAX,
            cache_write_tokens: u64::MAX,
            cache_write_1h_tokens: u64::MAX,
            output_tokens: u64::MAX,
            reasoning_tokens: u64::MAX,
        };
        let mut total = huge;
        total.accumulate(&huge);
        assert_eq!(total, huge);
        assert_eq!(huge.total_input_tokens(), u64::MAX);
        assert!(huge.cached_percent() <= 100);
    }

    #[test]
    fn system_blocks_replay_append_and_replace() {
        let mut c = Conversation::new();
        c.add_system_message("a");
        c.add_system_message("b");
        c.add_user_message("hi");
        assert_eq!(c.effective_system_blocks(), vec!["a", "b"]);
        c.replace_system_message("c");
        c.add_system_message("d");
        assert_eq!(c.effective_system_blocks(), vec!["c", "d"]);
    }

    #[test]
    fn human_prompt_excludes_tool_results_and_summaries() {
        let mut c = Conversation::new();
        c.add_user_message("hi");
        c.add_compaction_summary("s");
        c.messages.push(Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "t".into(),
                content: vec![],
                is_error: true,
            }],
        ));
        // A steer: text a person sent mid-turn, after the step's tool results.
        c.messages.push(Message::new(
            Role::User,
            vec![
                ContentBlock::ToolResult {
                    tool_use_id: "u".into(),
                    content: vec![],
                    is_error: false,
                },
                ContentBlock::Text { text: "steer".into() },
            ],
        ));
        let flags: Vec<bool> = c.messages.iter().map(Message::is_human_prompt).collect();
        assert_eq!(flags, vec![true, false, false, true]);
    }

    #[test]
    fn stop_reason_maps_both_apis() {
        assert_eq!(StopReason::from_wire("stop"), StopReason::EndTurn);
        assert_eq!(StopReason::from_wire("tool_calls"), StopReason::ToolUse);
        assert_eq!(StopReason::from_wire("length"), StopReason::MaxTokens);
        assert_eq!(StopReason::from_wire("weird").as_str(), "weird");
    }
}
