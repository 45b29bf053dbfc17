//! The OpenAI Chat Completions API and the servers that imitate it (llama.cpp, vLLM, LiteLLM,
//! OpenRouter, DeepSeek, z.ai, llama-cpp-python): request encoding here, stream decoding in
//! [`decoder`].
//!
//! Chat Completions has no thinking blocks to send back, puts tool results in messages of their
//! own, and allows no images in them; the encoder maps panto's block model onto that.

mod body;
mod decoder;

use std::borrow::Cow;

use body::{Body, Call, CallFunction, Function, ImageUrl, Part, StreamOptions, UserContent, WireMessage, WireTool};

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
pub(crate) fn request_body(req: &ProviderRequest<'_>) -> Vec<u8> {
    super::json_bytes(&wire_body(req))
}

/// The body in its wire form.
fn wire_body<'a>(req: &ProviderRequest<'a>) -> Body<'a> {
    let config = req.config;
    let reasoning = config.reasoning != ReasoningEffort::Off;
    let tools: Vec<WireTool<'a>> = req
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            },
        })
        .collect();
    Body {
        model: &config.model,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: (!reasoning).then_some(config.max_tokens),
        // Reasoning models reject `max_tokens`; `max_completion_tokens` counts the reasoning too.
        reasoning_effort: reasoning.then(|| config.reasoning.as_str()),
        max_completion_tokens: reasoning.then_some(config.max_tokens),
        messages: messages(req.system, req.messages),
        prompt_cache_key: prompt_cache_key(req),
        tool_choice: (req.require_tool && !tools.is_empty()).then_some("required"),
        tools,
    }
}

/// The `messages` array: one system message, then each conversation message mapped on its own.
fn messages<'a>(system: &[&str], messages: &'a [Message]) -> Vec<WireMessage<'a>> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(WireMessage::System {
            content: system.join("\n\n"),
        });
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
fn user<'a>(content: &'a [ContentBlock], out: &mut Vec<WireMessage<'a>>) {
    let mut tool_images: Vec<Part<'a>> = Vec::new();
    let mut parts: Vec<Part<'a>> = Vec::new();
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
            ContentBlock::Text { text } => parts.push(Part::Text {
                text: Cow::Borrowed(text),
            }),
            ContentBlock::CompactionSummary { summary } => parts.push(Part::Text {
                text: Cow::Owned(summary_text(summary)),
            }),
            ContentBlock::Image { media_type, data } => {
                has_image = true;
                parts.push(image_part(media_type, data));
            }
            // Thinking, tool calls and system blocks have no place in a user turn.
            _ => {}
        }
    }
    if !tool_images.is_empty() {
        out.push(WireMessage::User {
            content: UserContent::Parts(tool_images),
        });
    }
    if parts.is_empty() {
        return;
    }
    // Plain text goes as a string, the form every compatible server accepts.
    let content = if has_image {
        UserContent::Parts(parts)
    } else {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_ref()),
                Part::ImageUrl { .. } => None,
            })
            .collect();
        UserContent::Text(texts.join("\n\n"))
    };
    out.push(WireMessage::User { content });
}

/// One `tool` message. Its images cannot travel in it: they are moved to `images` (sent next, in
/// a user message) and the tool message says so.
fn tool_message<'a>(
    id: &'a str,
    content: &'a [ToolResultContent],
    is_error: bool,
    images: &mut Vec<Part<'a>>,
) -> WireMessage<'a> {
    let mut texts: Vec<&str> = Vec::new();
    let mut image_count = 0;
    for part in content {
        match part {
            ToolResultContent::Text { text } if text.is_empty() => {}
            ToolResultContent::Text { text } => texts.push(text),
            ToolResultContent::Image { media_type, data } => {
                if image_count == 0 {
                    images.push(Part::Text {
                        text: Cow::Owned(format!("Image from tool call {id}:")),
                    });
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
    let content = if is_error { format!("Error: {text}") } else { text };
    WireMessage::Tool {
        tool_call_id: id,
        content,
    }
}

/// An assistant message, or `None` when it holds nothing Chat Completions can carry (only
/// thinking, say), since a message with neither content nor tool calls is rejected.
fn assistant(content: &[ContentBlock]) -> Option<WireMessage<'_>> {
    let mut texts: Vec<&str> = Vec::new();
    let mut tool_calls: Vec<Call<'_>> = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => texts.push(text),
            ContentBlock::ToolUse { id, name, input } => tool_calls.push(Call {
                id,
                kind: "function",
                function: CallFunction {
                    name,
                    arguments: input.to_string(),
                },
            }),
            // Reasoning is not sent back: the API has no field for it, and servers that accept
            // `reasoning_content` on input (DeepSeek) reject it there.
            _ => {}
        }
    }
    if texts.is_empty() && tool_calls.is_empty() {
        return None;
    }
    Some(WireMessage::Assistant {
        content: (!texts.is_empty()).then(|| texts.join("\n\n")),
        tool_calls,
    })
}

/// An image content part, as a data URL.
fn image_part<'a>(media_type: &str, data: &str) -> Part<'a> {
    Part::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{media_type};base64,{data}"),
        },
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tool_call_tests;
