//! Compaction: summarise the older part of the conversation so a long session keeps fitting the
//! context window.
//!
//! The split keeps the most recent messages worth about `keep_recent_tokens`, moved to a boundary
//! that never separates a tool call from its result. The older part is serialised as a readable
//! transcript and sent, with the summary instruction, to the current model with no tools. The model
//! then sees: the effective system prompt, one compaction-summary message, the kept messages. The
//! session log keeps the full history and records the compaction on the summary entry.

use crate::conversation::{ContentBlock, Conversation, Message, Role, ToolResultContent, Usage};
use crate::error::{Error, Result};
use crate::provider::{ProviderEvent, ProviderRequest, ProviderStream};
use crate::store::compact_view;
use crate::store::seam::{CompactionRecord, PersistentMessage};

use super::{retry, Agent};
use crate::trace::{self, RequestTrace};
use tracing::Instrument;

/// How many characters of a tool's input or output the transcript keeps.
pub(crate) const TRANSCRIPT_TOOL_CHARS: usize = 2_000;

/// Characters per token in panto's estimates (a common rule of thumb for English and code).
const CHARS_PER_TOKEN: u64 = 4;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionResult {
    /// The summary that replaced the older messages.
    pub summary: String,
    /// Estimated context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
    /// How many messages the summary replaced.
    pub messages_summarized: usize,
    /// How many recent messages were kept verbatim.
    pub messages_kept: usize,
    /// What the summary request reported, when the provider reported usage. It is recorded with
    /// the summary in the session log and, for a compaction during a turn, counted in the turn's
    /// usage.
    pub usage: Option<Usage>,
}

/// An estimate of a message's tokens from its serialised size.
pub(crate) fn estimate_message_tokens(message: &Message) -> u64 {
    let chars: usize = message
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::RedactedThinking { data } => data.len(),
            // The encrypted reasoning is what the model reads back; its summary is in the
            // thinking block before it.
            ContentBlock::Reasoning { encrypted_content, .. } => encrypted_content.len(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            ContentBlock::ToolResult { content, .. } => content
                .iter()
                .map(|c| match c {
                    ToolResultContent::Text { text } => text.len(),
                    // Providers bill images by area, roughly 1,600 tokens for a large one.
                    ToolResultContent::Image { .. } => 6_400,
                })
                .sum(),
            ContentBlock::System { text, .. } => text.len(),
            ContentBlock::CompactionSummary { summary } => summary.len(),
            ContentBlock::Image { .. } => 6_400,
        })
        .sum();
    (chars as u64).div_ceil(CHARS_PER_TOKEN) + 4
}

/// The estimated context of the next request: the last reported usage (input, cache and output
/// tokens) plus an estimate for every message after the message that reported it.
pub(crate) fn estimate_context_tokens(conversation: &Conversation) -> u64 {
    match conversation.last_usage() {
        Some((index, usage)) => {
            usage.total_input_tokens()
                + usage.output_tokens
                + conversation.messages[index + 1..]
                    .iter()
                    .map(estimate_message_tokens)
                    .sum::<u64>()
        }
        None => conversation.messages.iter().map(estimate_message_tokens).sum(),
    }
}

/// Where to cut: the index of the first kept message. Keeps about `keep_recent_tokens` of the
/// newest messages, then moves the cut older until it does not land on a tool-result message (whose
/// call would be summarised away). `None` when nothing older than the cut would be summarised.
pub(crate) fn split_point(messages: &[Message], keep_recent_tokens: u64) -> Option<usize> {
    let mut kept = 0u64;
    let mut cut = messages.len();
    while cut > 0 {
        let cost = estimate_message_tokens(&messages[cut - 1]);
        if kept + cost > keep_recent_tokens && cut < messages.len() {
            break;
        }
        kept += cost;
        cut -= 1;
    }
    while cut > 0 && cut < messages.len() && starts_with_tool_results(&messages[cut]) {
        cut -= 1;
    }
    let summarizable = messages[..cut].iter().any(|m| m.role != Role::System);
    summarizable.then_some(cut)
}

/// Where a compaction asked for by the user cuts: as [`split_point`], or, when the whole
/// conversation is smaller than `keep_recent_tokens`, before the newest exchange (the last
/// prompt the user typed and what followed it), so asking to compact a short conversation
/// compacts all but that exchange instead of refusing. `None` when nothing is older.
pub(crate) fn manual_split_point(messages: &[Message], keep_recent_tokens: u64) -> Option<usize> {
    split_point(messages, keep_recent_tokens).or_else(|| {
        let mut newest = messages.iter().rposition(Message::is_human_prompt)?;
        // A steer shares its message with tool results, which must stay with their calls.
        while newest > 0 && starts_with_tool_results(&messages[newest]) {
            newest -= 1;
        }
        messages[..newest]
            .iter()
            .any(|m| m.role != Role::System)
            .then_some(newest)
    })
}

fn starts_with_tool_results(message: &Message) -> bool {
    message
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

fn truncated(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}… [{} more bytes]", &text[..i], text.len() - i),
        None => text.to_owned(),
    }
}

/// The older messages as a readable transcript. System messages are left out (the system prompt
/// survives compaction as is); an earlier summary is included so it is folded into the new one.
pub(crate) fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        for block in &message.content {
            let line = match (message.role, block) {
                (Role::System, _) => continue,
                (_, ContentBlock::CompactionSummary { summary }) => format!("[earlier summary]\n{summary}"),
                (Role::User, ContentBlock::Text { text }) => format!("[user]\n{text}"),
                (_, ContentBlock::Text { text }) => format!("[assistant]\n{text}"),
                (
                    _,
                    ContentBlock::Thinking { .. }
                    | ContentBlock::RedactedThinking { .. }
                    | ContentBlock::Reasoning { .. },
                ) => continue,
                (_, ContentBlock::ToolUse { name, input, .. }) => format!(
                    "[assistant called tool {name}]\n{}",
                    truncated(&input.to_string(), TRANSCRIPT_TOOL_CHARS)
                ),
                (_, ContentBlock::ToolResult { content, is_error, .. }) => {
                    let text: Vec<String> = content
                        .iter()
                        .map(|c| match c {
                            ToolResultContent::Text { text } => text.clone(),
                            ToolResultContent::Image { media_type, .. } => format!("[{media_type} image]"),
                        })
                        .collect();
                    let label = if *is_error { "tool error" } else { "tool result" };
                    format!("[{label}]\n{}", truncated(&text.join("\n"), TRANSCRIPT_TOOL_CHARS))
                }
                (_, ContentBlock::Image { media_type, .. }) => format!("[user attached a {media_type} image]"),
                (_, ContentBlock::System { .. }) => continue,
            };
            out.push_str(&line);
            out.push_str("\n\n");
        }
    }
    out
}

impl Agent {
    /// Summarises the older part of the conversation and persists the result. `override_prompt`
    /// replaces the configured summary instruction
    /// ([`CompactionConfig::compaction_prompt`](crate::CompactionConfig::compaction_prompt)) for
    /// this call; `extra_instructions` is appended to the request (e.g. "focus on the API design").
    ///
    /// On error nothing changes: not the conversation, not the log.
    pub async fn compact(
        &mut self,
        override_prompt: Option<&str>,
        extra_instructions: Option<&str>,
    ) -> Result<CompactionResult> {
        let messages = &self.conversation.messages;
        let cut =
            manual_split_point(messages, self.config.compaction.keep_recent_tokens).ok_or(Error::NothingToCompact)?;
        let tokens_before = estimate_context_tokens(&self.conversation);
        let span = trace::compaction_span(tokens_before);
        let (summary, usage) = self
            .request_summary(cut, override_prompt, extra_instructions)
            .instrument(span.clone())
            .await
            .inspect_err(|e| trace::record_error(&span, e))?;
        self.apply_compaction(cut, summary, usage, tokens_before, &span).await
    }

    /// Replaces the messages before `first_kept` (an index into [`Agent::conversation`]'s
    /// messages; system messages stay) with `summary`, a summary the caller wrote, and persists
    /// the result as [`Agent::compact`] persists its own: the session log keeps the full history
    /// and records the compaction on the summary entry, so a resumed session starts from the
    /// summary and the kept messages.
    ///
    /// Errors: [`Error::InvalidCompaction`] for a summary that is empty (or only whitespace) and
    /// for a `first_kept` past the end or on a message of tool results (whose calls would be
    /// summarised away), [`Error::NothingToCompact`] when no
    /// message other than a system message is before `first_kept`, and the store's errors. On
    /// error nothing changes.
    pub async fn compact_with_summary(
        &mut self,
        summary: impl Into<String>,
        first_kept: usize,
    ) -> Result<CompactionResult> {
        let summary = summary.into();
        if summary.trim().is_empty() {
            return Err(Error::InvalidCompaction {
                first_kept,
                reason: "the summary is empty".to_owned(),
            });
        }
        let messages = &self.conversation.messages;
        if first_kept > messages.len() {
            return Err(Error::InvalidCompaction {
                first_kept,
                reason: format!("the conversation has only {} messages", messages.len()),
            });
        }
        if messages.get(first_kept).is_some_and(starts_with_tool_results) {
            return Err(Error::InvalidCompaction {
                first_kept,
                reason: "it holds tool results, whose calls would be summarised away".to_owned(),
            });
        }
        if !messages[..first_kept].iter().any(|m| m.role != Role::System) {
            return Err(Error::NothingToCompact);
        }
        let tokens_before = estimate_context_tokens(&self.conversation);
        let span = trace::compaction_span(tokens_before);
        self.apply_compaction(first_kept, summary, None, tokens_before, &span)
            .await
    }

    /// Persists a compaction at `cut` with `summary` (and the usage of the request that wrote it)
    /// and adopts the compacted conversation; on error nothing changes.
    async fn apply_compaction(
        &mut self,
        cut: usize,
        summary: String,
        usage: Option<Usage>,
        tokens_before: u64,
        span: &tracing::Span,
    ) -> Result<CompactionResult> {
        // Everything before the compaction must be in the log for the record to point into it.
        self.persist(true)
            .instrument(span.clone())
            .await
            .inspect_err(|e| trace::record_error(span, e))?;
        self.hold_session()
            .await
            .inspect_err(|e| trace::record_error(span, e))?;

        // Built beside the live conversation, which is replaced only once the log has the
        // compaction: an error or a cancel at any await leaves both as they were.
        let old = &self.conversation.messages;
        let old_len = old.len();
        let old_roles: Vec<Role> = old.iter().map(|m| m.role).collect();
        let mut next = old.clone();
        let summary_message = Message::new(
            Role::User,
            vec![ContentBlock::CompactionSummary {
                summary: summary.clone(),
            }],
        );
        let summary_index = compact_view(&mut next, cut, summary_message, |m| m.role == Role::System);
        let messages_summarized = old[..cut].iter().filter(|m| m.role != Role::System).count();
        let messages_kept = old.len() - cut;
        let tokens_after = next.iter().map(estimate_message_tokens).sum();
        let record = CompactionRecord {
            first_kept: cut,
            tokens_before,
            tokens_after,
        };
        let candidate = Conversation {
            messages: next,
            metadata: self.conversation.metadata.clone(),
        };
        let tools = self.registry.decls();
        let wire = self.config.provider.wire_identity();
        let entry = PersistentMessage {
            message: &candidate.messages[summary_index],
            // The request that produced the summary; the message itself carries no usage, so the
            // context estimate is not taken from a request that sent the old transcript.
            usage,
            wire: Some(&wire),
            conversation: &candidate,
            tools_available: &tools,
            compaction: Some(record),
        };
        let summary_id = self
            .session
            .append(&[entry])
            .instrument(span.clone())
            .await
            .inspect_err(|e| trace::record_error(span, e))?
            .pop();
        self.conversation = candidate;
        self.persisted = self.conversation.messages.len();
        self.message_ids.resize(old_len, None);
        let mut ids: Vec<(Option<String>, bool)> = self
            .message_ids
            .drain(..)
            .zip(&old_roles)
            .map(|(id, role)| (id, *role == Role::System))
            .collect();
        compact_view(&mut ids, cut, (summary_id, false), |(_, system)| *system);
        self.message_ids = ids.into_iter().map(|(id, _)| id).collect();
        let result = CompactionResult {
            summary,
            tokens_before,
            tokens_after,
            messages_summarized,
            messages_kept,
            usage,
        };
        trace::compaction_finished(
            span,
            trace::CompactionCounts {
                tokens_after: result.tokens_after,
                messages_summarized: result.messages_summarized,
                messages_kept: result.messages_kept,
                usage: result.usage.as_ref(),
            },
        );
        Ok(result)
    }

    /// Sends the transcript of `messages[..cut]` to the model and returns its summary text, with
    /// the usage the provider reported for the request.
    async fn request_summary(
        &self,
        cut: usize,
        override_prompt: Option<&str>,
        extra: Option<&str>,
    ) -> Result<(String, Option<Usage>)> {
        let instruction = override_prompt.unwrap_or(&self.config.compaction.compaction_prompt);
        let mut prompt = format!(
            "Summarise the conversation transcript below.\n\n<transcript>\n{}</transcript>",
            transcript(&self.conversation.messages[..cut])
        );
        if let Some(extra) = extra.filter(|e| !e.trim().is_empty()) {
            prompt.push_str("\n\nAdditional instructions: ");
            prompt.push_str(extra);
        }
        let messages = [Message::new(Role::User, vec![ContentBlock::Text { text: prompt }])];
        let system = [instruction];
        let request = ProviderRequest {
            config: &self.config.provider,
            system: &system,
            messages: &messages,
            tools: &[],
            require_tool: false,
            session_id: self.session.id(),
        };
        // The compaction's span: the summary request's attempts and retries are recorded in it.
        let parent = tracing::Span::current();
        let redactor = if parent.is_disabled() {
            trace::Redactor::default()
        } else {
            trace::Redactor::new(&self.config.provider)
        };
        let mut attempt = 1;
        loop {
            let traced = RequestTrace::start(&parent, &self.config.provider, attempt, "compaction");
            let attempted = self.summary_attempt(&request).instrument(traced.span().clone()).await;
            match &attempted {
                Ok((_, usage)) => traced.completed(usage.as_ref(), &crate::StopReason::EndTurn, None),
                Err(e) => traced.failed(e, &redactor),
            }
            match attempted {
                Ok(summary) => return Ok(summary),
                Err(e) if e.is_retryable() && attempt < self.config.retry.max_attempts => {
                    attempt += 1;
                    let delay = retry::delay(&self.config.retry, attempt, &e);
                    // As a turn's request does: the summary is not streamed to anyone, so there is
                    // no partial output to discard.
                    if !parent.is_disabled() {
                        trace::retry_event(&parent, attempt, delay, &e, false, &redactor);
                    }
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn summary_attempt(&self, request: &ProviderRequest<'_>) -> Result<(String, Option<Usage>)> {
        let client = self.config.provider.http_client()?;
        let mut stream = ProviderStream::open(&client, request, self.config.idle_timeout).await?;
        while let Some(event) = stream.next().await? {
            if let ProviderEvent::MessageComplete { blocks, usage, .. } = event {
                let text: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = text.join("\n").trim().to_owned();
                if text.is_empty() {
                    return Err(Error::EmptySummary);
                }
                return Ok((text, usage));
            }
        }
        Err(Error::Truncated {
            expected: "the end of the summary",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(role: Role, t: &str) -> Message {
        Message::new(role, vec![ContentBlock::text(t)])
    }

    fn tool_pair(id: &str, output: &str) -> [Message; 2] {
        [
            Message::new(
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: id.into(),
                    name: "read".into(),
                    input: json!({"path": "a"}),
                }],
            ),
            Message::new(
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_use_id: id.into(),
                    content: vec![ToolResultContent::Text { text: output.into() }],
                    is_error: false,
                }],
            ),
        ]
    }

    #[test]
    fn split_never_separates_a_tool_call_from_its_result() {
        let mut messages = vec![text(Role::User, "start"), text(Role::Assistant, "ok")];
        messages.extend(tool_pair("t1", &"x".repeat(4_000)));
        messages.extend(tool_pair("t2", &"y".repeat(400)));
        // Keeping ~105 tokens would start the kept part at t2's result (104 tokens); the cut must
        // move to its call.
        let cut = split_point(&messages, 105).unwrap();
        assert_eq!(cut, 4, "{:?}", messages[cut].role);
        assert_eq!(messages[cut].role, Role::Assistant);
    }

    #[test]
    fn a_short_conversation_compacts_all_but_its_newest_exchange() {
        let messages = vec![
            text(Role::System, "sys"),
            text(Role::User, "first"),
            text(Role::Assistant, "one"),
            text(Role::User, "second"),
            text(Role::Assistant, "two"),
        ];
        assert_eq!(split_point(&messages, 1_000_000), None);
        assert_eq!(manual_split_point(&messages, 1_000_000), Some(3));
        // One exchange only: nothing older to summarise.
        assert_eq!(manual_split_point(&messages[..3], 1_000_000), None);
    }

    #[test]
    fn nothing_to_summarise_is_none() {
        let messages = vec![text(Role::System, "sys"), text(Role::User, "hi")];
        assert_eq!(split_point(&messages, 1_000_000), None);
    }

    #[test]
    fn transcript_truncates_tool_output_and_folds_summaries() {
        let mut messages = vec![Message::new(
            Role::User,
            vec![ContentBlock::CompactionSummary {
                summary: "earlier stuff".into(),
            }],
        )];
        messages.extend(tool_pair("t1", &"z".repeat(5_000)));
        let t = transcript(&messages);
        assert!(t.contains("[earlier summary]\nearlier stuff"));
        assert!(t.contains("[assistant called tool read]\n{\"path\":\"a\"}"));
        assert!(t.contains("… [3000 more bytes]"), "{t}");
    }
}
