//! The Anthropic Messages API: request encoding here, stream decoding in [`decoder`].
//!
//! Anthropic is strict about history: roles must alternate, text blocks must not be empty, a
//! thinking block must come back with its signature byte for byte, and the tool results that
//! answer an assistant's calls must open the next user message. The encoder enforces all of this
//! so that any conversation panto holds can be sent.

mod cache;
mod decoder;

use serde_json::{json, Map, Value};

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
pub(crate) fn request_body(req: &ProviderRequest<'_>) -> Value {
    let config = req.config;
    let mut body = Map::new();
    body.insert("model".into(), config.model.clone().into());
    let mut max_tokens = config.max_tokens;
    if let Some(budget) = config.reasoning.anthropic_budget() {
        // The budget counts against max_tokens, which must exceed it; rather than fail, give the
        // answer its configured room on top of the reasoning.
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(max_tokens);
        }
        body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
    }
    body.insert("max_tokens".into(), max_tokens.into());
    body.insert("stream".into(), true.into());
    let system: Vec<Value> = req
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), system.into());
    }
    body.insert("messages".into(), messages(req.messages).into());
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        body.insert("tools".into(), tools.into());
        // The API refuses a forced tool choice while thinking is enabled; the tools' descriptions
        // then have to do the asking.
        if req.require_tool && config.reasoning.anthropic_budget().is_none() {
            body.insert("tool_choice".into(), json!({"type": "any"}));
        }
    }
    cache::place_breakpoints(&mut body, config);
    Value::Object(body)
}

/// The `messages` array: system messages skipped, unsendable blocks dropped, empty messages
/// skipped, consecutive same-role messages merged, and tool results first in each user message.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(Role, Vec<Value>)> = Vec::new();
    for message in messages {
        if message.role == Role::System {
            continue;
        }
        let blocks: Vec<Value> = message.content.iter().filter_map(block).collect();
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((role, content)) if *role == message.role => content.extend(blocks),
            _ => turns.push((message.role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut content)| {
            if role == Role::User {
                // Anthropic rejects a user turn whose tool results follow other content, which a
                // merge (say, a prompt typed after a cancelled tool run) could otherwise produce.
                content.sort_by_key(|b| b["type"] != "tool_result");
            }
            let role = if role == Role::Assistant { "assistant" } else { "user" };
            json!({"role": role, "content": content})
        })
        .collect()
}

/// One content block on the wire, or `None` for a block Anthropic must not receive.
fn block(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Thinking {
            thinking,
            signature: Some(signature),
        } if !signature.is_empty() => {
            json!({"type": "thinking", "thinking": thinking, "signature": signature})
        }
        // Reasoning from an OpenAI-compatible server has no signature, and Anthropic rejects
        // unsigned thinking; the answer that followed it still carries its conclusions.
        ContentBlock::Thinking { .. } => return None,
        ContentBlock::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
        ContentBlock::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let parts: Vec<Value> = content.iter().filter_map(tool_result_part).collect();
            let mut result = Map::new();
            result.insert("type".into(), "tool_result".into());
            result.insert("tool_use_id".into(), tool_use_id.clone().into());
            // `content` is optional on the wire; an empty text part would be rejected.
            if !parts.is_empty() {
                result.insert("content".into(), parts.into());
            }
            if *is_error {
                result.insert("is_error".into(), true.into());
            }
            Value::Object(result)
        }
        ContentBlock::CompactionSummary { summary } => json!({"type": "text", "text": summary_text(summary)}),
        ContentBlock::Image { media_type, data } => image(media_type, data),
        // System blocks travel in the request's `system` field.
        ContentBlock::System { .. } => return None,
        // The Responses API's encrypted reasoning only that API can read.
        ContentBlock::Reasoning { .. } => return None,
    })
}

/// One part of a tool result, or `None` for an empty text part.
fn tool_result_part(part: &ToolResultContent) -> Option<Value> {
    match part {
        ToolResultContent::Text { text } if text.is_empty() => None,
        ToolResultContent::Text { text } => Some(json!({"type": "text", "text": text})),
        ToolResultContent::Image { media_type, data } => Some(image(media_type, data)),
    }
}

/// A base64 image block.
fn image(media_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tool_call_tests;
