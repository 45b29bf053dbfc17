//! The OpenAI Responses API (`POST {base_url}/responses`): request encoding here, stream
//! decoding in [`decoder`].
//!
//! panto uses it statelessly: `store: false`, and every request carries the whole history from
//! the session, so no `previous_response_id` is ever needed. The model's reasoning cannot be
//! read back from the server then, so it is asked for encrypted
//! (`include: ["reasoning.encrypted_content"]`), kept on the assistant message as
//! [`ContentBlock::Reasoning`] and sent back unchanged. A conversation is a list of items:
//! messages, `reasoning`, `function_call` and `function_call_output` (paired by `call_id`).

mod body;
mod decoder;

use std::borrow::Cow;

use body::{Body, Item, MessageContent, Output, Part, Reasoning, Summary, WireTool};

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
pub(crate) fn request_body(req: &ProviderRequest<'_>) -> Vec<u8> {
    super::json_bytes(&wire_body(req))
}

/// The body in its wire form.
fn wire_body<'a>(req: &ProviderRequest<'a>) -> Body<'a> {
    let config = req.config;
    let system: Vec<&str> = req.system.iter().copied().filter(|s| !s.is_empty()).collect();
    let reasoning = config.reasoning != ReasoningEffort::Off;
    let tools: Vec<WireTool<'a>> = req
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            name: &t.name,
            description: &t.description,
            parameters: &t.input_schema,
            strict: false,
        })
        .collect();
    Body {
        model: &config.model,
        stream: true,
        store: false,
        instructions: (!system.is_empty()).then(|| system.join("\n\n")),
        input: input(req.messages),
        max_output_tokens: config.max_tokens,
        prompt_cache_key: prompt_cache_key(req),
        // The summary is what a front end shows as thinking; the encrypted reasoning is what the
        // next request needs to continue from it (models without reasoning refuse the include,
        // so it is asked for only with an effort).
        reasoning: reasoning.then(|| Reasoning {
            effort: config.reasoning.as_str(),
            summary: "auto",
        }),
        include: reasoning.then_some(["reasoning.encrypted_content"]),
        tool_choice: (req.require_tool && !tools.is_empty()).then_some("required"),
        tools,
    }
}

/// The `input` items of a conversation, in order.
fn input(messages: &[Message]) -> Vec<Item<'_>> {
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
fn user<'a>(content: &'a [ContentBlock], out: &mut Vec<Item<'a>>) {
    let mut parts: Vec<Part<'a>> = Vec::new();
    for block in content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => out.push(Item::FunctionCallOutput {
                call_id: tool_use_id,
                output: tool_output(content, *is_error),
            }),
            ContentBlock::Text { text } if text.is_empty() => {}
            ContentBlock::Text { text } => parts.push(Part::InputText {
                text: Cow::Borrowed(text),
            }),
            ContentBlock::CompactionSummary { summary } => parts.push(Part::InputText {
                text: Cow::Owned(summary_text(summary)),
            }),
            ContentBlock::Image { media_type, data } => parts.push(image(media_type, data)),
            // Reasoning, tool calls and system blocks have no place in a user turn.
            _ => {}
        }
    }
    if !parts.is_empty() {
        out.push(Item::Message {
            role: "user",
            content: MessageContent::Parts(parts),
        });
    }
}

/// A tool result's `output`: a string when it is text only, else a list of text and image
/// parts (the API takes images in a function call's output).
fn tool_output(content: &[ToolResultContent], is_error: bool) -> Output<'_> {
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
        return Output::Text(if is_error { format!("Error: {text}") } else { text });
    }
    let mut parts: Vec<Part<'_>> = Vec::with_capacity(content.len() + 1);
    if is_error {
        parts.push(Part::InputText {
            text: Cow::Borrowed("Error:"),
        });
    }
    for part in content {
        match part {
            ToolResultContent::Text { text } if text.is_empty() => {}
            ToolResultContent::Text { text } => parts.push(Part::InputText {
                text: Cow::Borrowed(text),
            }),
            ToolResultContent::Image { media_type, data } => parts.push(image(media_type, data)),
        }
    }
    Output::Parts(parts)
}

/// An assistant message: its blocks as items, in order. Reasoning summaries (thinking) are not
/// sent, since the reasoning item they came from carries them; reasoning of another API, which
/// this one cannot read, is left out.
fn assistant<'a>(content: &'a [ContentBlock], out: &mut Vec<Item<'a>>) {
    for (i, block) in content.iter().enumerate() {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => out.push(Item::Message {
                role: "assistant",
                content: MessageContent::Text(text),
            }),
            ContentBlock::ToolUse { id, name, input } => out.push(Item::FunctionCall {
                call_id: id,
                name,
                arguments: input.to_string(),
            }),
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
                    out.push(Item::Reasoning {
                        id,
                        summary: summary
                            .iter()
                            .map(|text| Summary {
                                kind: "summary_text",
                                text,
                            })
                            .collect(),
                        encrypted_content,
                    });
                }
            }
            _ => {}
        }
    }
}

/// An input image, as a data URL.
fn image<'a>(media_type: &str, data: &str) -> Part<'a> {
    Part::InputImage {
        image_url: format!("data:{media_type};base64,{data}"),
        detail: "auto",
    }
}

#[cfg(test)]
mod tests;
