//! The Anthropic Messages API: request encoding here, stream decoding in [`decoder`].
//!
//! Anthropic is strict about history: roles must alternate, text blocks must not be empty, a
//! thinking block must come back with its signature byte for byte, and the tool results that
//! answer an assistant's calls must open the next user message. The encoder enforces all of this
//! so that any conversation panto holds can be sent.

mod body;
mod cache;
mod decoder;

use std::borrow::Cow;

use body::{Block, BlockKind, Body, Image, ResultPart, Thinking, ToolChoice, WireMessage, WireTool};

pub(crate) use decoder::AnthropicDecoder;

use super::{summary_text, ProviderRequest};
use crate::config::ProviderConfig;
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};

/// The `anthropic-version` header value panto speaks.
const API_VERSION: &str = "2023-06-01";

/// The Messages endpoint under `base_url` (the host root, as `ANTHROPIC_BASE_URL` means it).
pub(crate) fn endpoint(base_url: &str) -> String {
    format!("{}/v1/messages", base_url.trim_end_matches('/'))
}

/// Authentication and version headers, then the configured extras. The transport inserts them
/// in order, so an extra header of the same name (a proxy's own auth, say) replaces panto's.
pub(crate) fn headers(config: &ProviderConfig) -> Vec<(String, String)> {
    let mut headers = Vec::with_capacity(2 + config.extra_headers.len());
    headers.push(("x-api-key".to_owned(), config.api_key.clone()));
    headers.push(("anthropic-version".to_owned(), API_VERSION.to_owned()));
    headers.extend(config.extra_headers.iter().cloned());
    headers
}

/// The JSON body of a streaming Messages request.
pub(crate) fn request_body(req: &ProviderRequest<'_>) -> Vec<u8> {
    super::json_bytes(&wire_body(req))
}

/// The body in its wire form, breakpoints placed.
fn wire_body<'a>(req: &ProviderRequest<'a>) -> Body<'a> {
    let config = req.config;
    let mut max_tokens = config.max_tokens;
    let budget = config.reasoning.anthropic_budget();
    if let Some(budget) = budget {
        // The budget counts against max_tokens, which must exceed it; rather than fail, give the
        // answer its configured room on top of the reasoning.
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(max_tokens);
        }
    }
    let tools: Vec<WireTool<'a>> = req
        .tools
        .iter()
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
            cache_control: None,
        })
        .collect();
    // The API refuses a forced tool choice while thinking is enabled; the tools' descriptions
    // then have to do the asking.
    let tool_choice = (req.require_tool && !tools.is_empty() && budget.is_none()).then_some(ToolChoice);
    let mut body = Body {
        model: &config.model,
        max_tokens,
        stream: true,
        thinking: budget.map(|budget_tokens| Thinking { budget_tokens }),
        system: req
            .system
            .iter()
            .filter(|text| !text.is_empty())
            .map(|text| Block::new(BlockKind::Text(Cow::Borrowed(text))))
            .collect(),
        messages: messages(req.messages),
        tools,
        tool_choice,
    };
    cache::place_breakpoints(&mut body, config);
    body
}

/// The `messages` array: system messages skipped, unsendable blocks dropped, empty messages
/// skipped, consecutive same-role messages merged, and tool results first in each user message.
fn messages(messages: &[Message]) -> Vec<WireMessage<'_>> {
    let mut turns: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let role = match message.role {
            Role::System => continue,
            Role::Assistant => "assistant",
            Role::User => "user",
        };
        let mut blocks = message.content.iter().filter_map(block).peekable();
        if blocks.peek().is_none() {
            continue;
        }
        match turns.last_mut() {
            Some(turn) if turn.role == role => turn.content.extend(blocks),
            _ => turns.push(WireMessage {
                role,
                content: blocks.collect(),
            }),
        }
    }
    for turn in &mut turns {
        if turn.role == "user" {
            // Anthropic rejects a user turn whose tool results follow other content, which a
            // merge (say, a prompt typed after a cancelled tool run) could otherwise produce.
            // Stable, so each kind keeps its order.
            turn.content
                .sort_by_key(|b| !matches!(b.kind, BlockKind::ToolResult { .. }));
        }
    }
    turns
}

/// One content block on the wire, or `None` for a block Anthropic must not receive.
fn block(block: &ContentBlock) -> Option<Block<'_>> {
    let kind = match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => BlockKind::Text(Cow::Borrowed(text)),
        ContentBlock::Thinking {
            thinking,
            signature: Some(signature),
        } if !signature.is_empty() => BlockKind::Thinking { thinking, signature },
        // Reasoning from an OpenAI-compatible server has no signature, and Anthropic rejects
        // unsigned thinking; the answer that followed it still carries its conclusions.
        ContentBlock::Thinking { .. } => return None,
        ContentBlock::RedactedThinking { data } => BlockKind::RedactedThinking { data },
        ContentBlock::ToolUse { id, name, input } => BlockKind::ToolUse { id, name, input },
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => BlockKind::ToolResult {
            tool_use_id,
            content: content.iter().filter_map(tool_result_part).collect(),
            is_error: *is_error,
        },
        ContentBlock::CompactionSummary { summary } => BlockKind::Text(Cow::Owned(summary_text(summary))),
        ContentBlock::Image { media_type, data } => BlockKind::Image(Image { media_type, data }),
        // System blocks travel in the request's `system` field.
        ContentBlock::System { .. } => return None,
        // The Responses API's encrypted reasoning only that API can read.
        ContentBlock::Reasoning { .. } => return None,
    };
    Some(Block::new(kind))
}

/// One part of a tool result, or `None` for an empty text part.
fn tool_result_part(part: &ToolResultContent) -> Option<ResultPart<'_>> {
    match part {
        ToolResultContent::Text { text } if text.is_empty() => None,
        ToolResultContent::Text { text } => Some(ResultPart::Text(text)),
        ToolResultContent::Image { media_type, data } => Some(ResultPart::Image(Image { media_type, data })),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tool_call_tests;
