//! When and how the conversation is summarised to fit the context window.

use serde::{Deserialize, Serialize};

/// The built-in instruction for compaction summaries.
pub const DEFAULT_COMPACTION_PROMPT: &str = "\
You are summarising a conversation between a user and an AI coding assistant so that the \
assistant can continue the work with only your summary as context. Write a concise but complete \
summary that keeps: the user's goals and every explicit requirement or preference; decisions made \
and why; files, commands, identifiers and values that matter; what was done, what failed and how \
it was fixed; the current state of the work and the immediate next steps. If the transcript begins \
with an earlier summary, fold it in: the new summary must replace it entirely. Write plain prose \
and short lists, no preamble.";

/// When and how the conversation is summarised to fit the context window.
///
/// Start from [`CompactionConfig::default`] and change fields (fields may be added in later
/// versions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CompactionConfig {
    /// Whether panto compacts by itself when the context fills or overflows.
    pub enabled: bool,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Compact before a request when the estimated context exceeds this fraction of the window.
    pub threshold: f64,
    /// How many tokens of the most recent messages survive compaction verbatim.
    pub keep_recent_tokens: u64,
    /// The summary instruction.
    pub compaction_prompt: String,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            enabled: true,
            context_window: 200_000,
            threshold: 0.8,
            keep_recent_tokens: 20_000,
            compaction_prompt: DEFAULT_COMPACTION_PROMPT.to_owned(),
        }
    }
}
