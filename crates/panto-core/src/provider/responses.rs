//! The OpenAI Responses API (`POST {base_url}/responses`): request encoding here, stream
//! decoding in [`decoder`].
//!
//! panto uses it statelessly: `store: false`, and every request carries the whole history from
//! the session, so no `previous_response_id` is ever needed. The model's reasoning cannot be
//! read back from the server then, so it is asked for encrypted
//! (`include: ["reasoning.encrypted_content"]`), kept on the assistant message as
//! [`ContentBlock::Reasoning`] and sent back unchanged. A conversation is a list of items:
//! messages, `reasoning`, `function_call` and `function_call_output` (paired by `call_id`).

mod decoder;

use serde_json::{json, Map, Value};

pub(crate) use decoder::ResponsesDecoder;

use super::cache::prompt_cache_key;
use super::openai;
use super::summary_text;
use super::ProviderRequest;
use crate::config::{ProviderConfig, ReasoningEffort};
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};

/// The Responses endpoint under `base_url` (which already ends in `/v1`, as `OPENAI_BASE_URL`
/// does).
pub(crate) fn endpoint(base_url: &str) -> String {
    format!("{}/responses", base_url.trim_end_matches('/'))
}

/// The same headers as Chat Completions: the bearer token, then the configured extras.
pub(crate) fn headers(config: &ProviderConfig) -> Vec<(String, String)> {
    openai::headers(config)
}

/// The JSON body of a streaming, stateless Responses request.
pub(crate) fn request_body(req: &ProviderRequest<'_>) -> Value {
    let config = req.config;
    let mut body = Map::new();
    body.insert("model".into(), config.model.clone().into());
    body.insert("stream".into(), true.into());
    // Nothing is kept on the server: the session is the one record of the conversation.
    body.insert("store".into(), false.into());
    let system: Vec<&str> = req.system.iter().copied().filter(|s| !s.is_empty()).collect();
    if !system.is_empty() {
        body.insert("instructions".into(), system.join("\n\n").into());
    }
    body.insert("input".into(), input(req.messages).into());
    body.insert("max_output_tokens".into(), config.max_tokens.into());
    if let Some(key) = prompt_cache_key(req) {
        body.insert("prompt_cache_key".into(), key.into());
    }
    if config.reasoning != ReasoningEffort::Off {
        // The summary is what a front end shows as thinking; the encrypted reasoning is what the
        // next request needs to continue from it (models without reasoning refuse the include,
        // so it is asked for only with an effort).
        body.insert(
            "reasoning".into(),
            json!({"effort": config.reasoning.as_str(), "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                // `strict` defaults to true on this API, which refuses most hand-written schemas
                // (every property required, no additional properties); panto's tools are not
                // written for it.
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.input_schema, "strict": false})
            })
            .collect();
        body.insert("tools".into(), tools.into());
        if req.require_tool {
            body.insert("tool_choice".into(), "required".into());
        }
    }
    Value::Object(body)
}

/// The `input` items of a conversation, in order.
fn input(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => user(&message.content, &mut out),
            Role::Assistant => assistant(&message.content, &mut out),
        }
    }
    out
}

/// A user message: its tool results as `function_call_output` items first (they answer the
/// calls just before them), then the user's own content as one message item.
fn user(content: &[ContentBlock], out: &mut Vec<Value>) {
    let mut parts: Vec<Value> = Vec::new();
    for block in content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => out.push(json!({
                "type": "function_call_output",
                "call_id": tool_use_id,
                "output": tool_output(content, *is_error),
            })),
            ContentBlock::Text { text } if text.is_empty() => {}
            ContentBlock::Text { text } => parts.push(json!({"type": "input_text", "text": text})),
            ContentBlock::CompactionSummary { summary } => {
                parts.push(json!({"type": "input_text", "text": summary_text(summary)}));
            }
            ContentBlock::Image { media_type, data } => parts.push(image(media_type, data)),
            // Reasoning, tool calls and system blocks have no place in a user turn.
            _ => {}
        }
    }
    if !parts.is_empty() {
        out.push(json!({"type": "message", "role": "user", "content": parts}));
    }
}

/// A tool result's `output`: a string when it is text only, else a list of text and image
/// parts (the API takes images in a function call's output).
fn tool_output(content: &[ToolResultContent], is_error: bool) -> Value {
    let has_image = content.iter().any(|p| matches!(p, ToolResultContent::Image { .. }));
    if !has_image {
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|p| match p {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Image { .. } => None,
            })
            .collect();
        let text = texts.join("\n");
        return if is_error { format!("Error: {text}") } else { text }.into();
    }
    let mut parts: Vec<Value> = Vec::with_capacity(content.len() + 1);
    if is_error {
        parts.push(json!({"type": "input_text", "text": "Error:"}));
    }
    for part in content {
        match part {
            ToolResultContent::Text { text } if text.is_empty() => {}
            ToolResultContent::Text { text } => parts.push(json!({"type": "input_text", "text": text})),
            ToolResultContent::Image { media_type, data } => parts.push(image(media_type, data)),
        }
    }
    parts.into()
}

/// An assistant message: its blocks as items, in order. Reasoning summaries (thinking) are not
/// sent, since the reasoning item they came from carries them; reasoning of another API, which
/// this one cannot read, is left out.
fn assistant(content: &[ContentBlock], out: &mut Vec<Value>) {
    for (i, block) in content.iter().enumerate() {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                out.push(json!({"type": "message", "role": "assistant", "content": text}));
            }
            ContentBlock::ToolUse { id, name, input } => out.push(json!({
                "type": "function_call",
                "call_id": id,
                "name": name,
                "arguments": input.to_string(),
            })),
            ContentBlock::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                // The API refuses a reasoning item that nothing follows (a turn cancelled right
                // after the model reasoned); such reasoning led nowhere and is dropped.
                let followed = content[i + 1..].iter().any(|b| {
                    matches!(b, ContentBlock::ToolUse { .. })
                        || matches!(b, ContentBlock::Text { text } if !text.is_empty())
                });
                if followed {
                    let summary: Vec<Value> = summary
                        .iter()
                        .map(|text| json!({"type": "summary_text", "text": text}))
                        .collect();
                    out.push(json!({
                        "type": "reasoning",
                        "id": id,
                        "summary": summary,
                        "encrypted_content": encrypted_content,
                    }));
                }
            }
            _ => {}
        }
    }
}

/// An input image, as a data URL.
fn image(media_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "image_url": format!("data:{media_type};base64,{data}"), "detail": "auto"})
}

#[cfg(test)]
mod tests;
