//! The OpenAI Chat Completions API and the servers that imitate it (llama.cpp, vLLM, LiteLLM,
//! OpenRouter, DeepSeek, z.ai, llama-cpp-python): request encoding here, stream decoding in
//! [`decoder`].
//!
//! Chat Completions has no thinking blocks to send back, puts tool results in messages of their
//! own, and allows no images in them; the encoder maps panto's block model onto that.

mod decoder;

use serde_json::{json, Map, Value};

pub(crate) use decoder::OpenAiDecoder;

use super::cache::prompt_cache_key;
use super::summary_text;
use super::ProviderRequest;
use crate::config::{ProviderConfig, ReasoningEffort};
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};

/// The Chat Completions endpoint under `base_url` (which already ends in `/v1`, as
/// `OPENAI_BASE_URL` does).
pub(crate) fn endpoint(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// The bearer token (left out when the key is empty, as local servers need none), then the
/// configured extras.
pub(crate) fn headers(config: &ProviderConfig) -> Vec<(String, String)> {
    let mut headers = Vec::with_capacity(1 + config.extra_headers.len());
    if !config.api_key.is_empty() {
        headers.push(("Authorization".to_owned(), format!("Bearer {}", config.api_key)));
    }
    headers.extend(config.extra_headers.iter().cloned());
    headers
}

/// The JSON body of a streaming Chat Completions request.
pub(crate) fn request_body(req: &ProviderRequest<'_>) -> Value {
    let config = req.config;
    let mut body = Map::new();
    body.insert("model".into(), config.model.clone().into());
    body.insert("stream".into(), true.into());
    // Without this the stream carries no token counts at all.
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if config.reasoning == ReasoningEffort::Off {
        body.insert("max_tokens".into(), config.max_tokens.into());
    } else {
        // Reasoning models reject `max_tokens`; `max_completion_tokens` counts the reasoning too.
        body.insert("reasoning_effort".into(), config.reasoning.as_str().into());
        body.insert("max_completion_tokens".into(), config.max_tokens.into());
    }
    body.insert("messages".into(), messages(req.system, req.messages).into());
    if let Some(key) = prompt_cache_key(req) {
        body.insert("prompt_cache_key".into(), key.into());
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema
                }})
            })
            .collect();
        body.insert("tools".into(), tools.into());
        if req.require_tool {
            body.insert("tool_choice".into(), "required".into());
        }
    }
    Value::Object(body)
}

/// The `messages` array: one system message, then each conversation message mapped on its own.
fn messages(system: &[&str], messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => user(&message.content, &mut out),
            Role::Assistant => out.extend(assistant(&message.content)),
        }
    }
    out
}

/// A user message: its tool results become `tool` messages first (they must directly follow the
/// assistant's calls), then any tool images in one user message, then the user's own content.
fn user(content: &[ContentBlock], out: &mut Vec<Value>) {
    let mut tool_images: Vec<Value> = Vec::new();
    let mut parts: Vec<Value> = Vec::new();
    let mut has_image = false;
    for block in content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                out.push(tool_message(tool_use_id, content, *is_error, &mut tool_images));
            }
            ContentBlock::Text { text } if text.is_empty() => {}
            ContentBlock::Text { text } => parts.push(json!({"type": "text", "text": text})),
            ContentBlock::CompactionSummary { summary } => {
                parts.push(json!({"type": "text", "text": summary_text(summary)}));
            }
            ContentBlock::Image { media_type, data } => {
                has_image = true;
                parts.push(image_part(media_type, data));
            }
            // Thinking, tool calls and system blocks have no place in a user turn.
            _ => {}
        }
    }
    if !tool_images.is_empty() {
        out.push(json!({"role": "user", "content": tool_images}));
    }
    if parts.is_empty() {
        return;
    }
    // Plain text goes as a string, the form every compatible server accepts.
    let content = if has_image {
        Value::Array(parts)
    } else {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n\n"))
    };
    out.push(json!({"role": "user", "content": content}));
}

/// One `tool` message. Its images cannot travel in it: they are moved to `images` (sent next, in
/// a user message) and the tool message says so.
fn tool_message(id: &str, content: &[ToolResultContent], is_error: bool, images: &mut Vec<Value>) -> Value {
    let mut texts: Vec<&str> = Vec::new();
    let mut image_count = 0;
    for part in content {
        match part {
            ToolResultContent::Text { text } if text.is_empty() => {}
            ToolResultContent::Text { text } => texts.push(text),
            ToolResultContent::Image { media_type, data } => {
                if image_count == 0 {
                    images.push(json!({"type": "text", "text": format!("Image from tool call {id}:")}));
                }
                image_count += 1;
                images.push(image_part(media_type, data));
            }
        }
    }
    let note;
    if image_count > 0 {
        let noun = if image_count == 1 { "an image" } else { "images" };
        note = format!("[The tool returned {noun}; see the next user message.]");
        texts.push(&note);
    }
    let text = texts.join("\n");
    let text = if is_error { format!("Error: {text}") } else { text };
    json!({"role": "tool", "tool_call_id": id, "content": text})
}

/// An assistant message, or `None` when it holds nothing Chat Completions can carry (only
/// thinking, say), since a message with neither content nor tool calls is rejected.
fn assistant(content: &[ContentBlock]) -> Option<Value> {
    let mut texts: Vec<&str> = Vec::new();
    let mut calls: Vec<Value> = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => texts.push(text),
            ContentBlock::ToolUse { id, name, input } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": input.to_string()},
            })),
            // Reasoning is not sent back: the API has no field for it, and servers that accept
            // `reasoning_content` on input (DeepSeek) reject it there.
            _ => {}
        }
    }
    if texts.is_empty() && calls.is_empty() {
        return None;
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let content = if texts.is_empty() {
        Value::Null
    } else {
        texts.join("\n\n").into()
    };
    message.insert("content".into(), content);
    if !calls.is_empty() {
        message.insert("tool_calls".into(), calls.into());
    }
    Some(Value::Object(message))
}

/// An image content part, as a data URL.
fn image_part(media_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}})
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tool_call_tests;
