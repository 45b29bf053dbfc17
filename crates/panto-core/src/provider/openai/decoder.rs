//! Decoding a Chat Completions stream into [`ProviderEvent`]s.
//!
//! Chat Completions streams have no blocks: each chunk's delta may carry text, reasoning and
//! tool-call fragments. Blocks are synthesised in order of appearance, and the open block is
//! closed when content of another kind (or another tool call) begins. Compatible servers differ
//! in the details, and each difference handled here is named where it is handled.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::http::classify_stream_error;
use crate::provider::sse::json::{or_empty, parse, Str};
use crate::provider::{Decoder, ProviderEvent};

/// Decodes one Chat Completions response.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// Completed blocks; the open block, if any, has index `blocks.len()`.
    blocks: Vec<ContentBlock>,
    /// The block receiving content.
    open: Option<Open>,
    /// Wire indices of tool calls already closed.
    closed_tools: Vec<u64>,
    /// The first finish reason seen for choice 0.
    finish_reason: Option<StopReason>,
    /// The last usage report seen.
    usage: Option<Usage>,
    /// Offset of the last event, for errors raised at end of body.
    last_offset: u64,
    /// Whether `MessageComplete` has been produced.
    done: bool,
}

/// The block being assembled.
#[derive(Debug)]
enum Open {
    Text(String),
    Thinking(String),
    Tool {
        wire_index: u64,
        id: String,
        name: String,
        arguments: String,
    },
}

#[derive(Debug, Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    choices: Option<FirstChoice<'a>>,
    /// Boxed because it is rare and large, and every chunk is moved several times while it is
    /// deserialized.
    usage: Option<Box<WireUsage>>,
    error: Option<IgnoredAny>,
}

/// Choice 0 of a `choices` array. With `n > 1` the chunks of other choices are interleaved with
/// it; they are parsed and dropped without collecting the array.
#[derive(Debug)]
struct FirstChoice<'a>(Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstChoice<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
                let mut first = None;
                while let Some(choice) = seq.next_element::<Choice<'de>>()? {
                    if choice.index == 0 && first.is_none() {
                        first = Some(choice);
                    }
                }
                Ok(FirstChoice(first))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Debug, Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u64,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Str<'a>>,
}

/// The parts of a delta panto reads, with fields of the same meaning folded together. Deltas
/// are most of a stream, and this is deserialized by hand because a smaller struct is markedly
/// faster to move through serde than one field per wire name.
#[derive(Debug, Default)]
struct Delta<'a> {
    /// `content` and `refusal`, which OpenAI streams in place of content when it refuses.
    text: Option<Str<'a>>,
    /// `reasoning_content` (DeepSeek, vLLM, llama.cpp, z.ai) or `reasoning` (OpenRouter); a
    /// server sending both means the same text by them.
    reasoning: Option<Str<'a>>,
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Delta<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a delta object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
                let mut delta = Delta::default();
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    match key.as_str() {
                        "content" | "refusal" => {
                            let value: Option<Str<'de>> = map.next_value()?;
                            delta.text = join(delta.text.take(), value);
                        }
                        "reasoning_content" | "reasoning" => {
                            let value: Option<Str<'de>> = map.next_value()?;
                            if delta.reasoning.as_ref().is_none_or(|r| r.as_str().is_empty()) {
                                delta.reasoning = value;
                            }
                        }
                        "tool_calls" => delta.tool_calls = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(delta)
            }
        }
        d.deserialize_map(V)
    }
}

/// Two optional strings as one: either alone, or both concatenated.
fn join<'a>(a: Option<Str<'a>>, b: Option<Str<'a>>) -> Option<Str<'a>> {
    match (a, b) {
        (Some(a), Some(b)) if a.as_str().is_empty() => Some(b),
        (Some(a), Some(b)) if b.as_str().is_empty() => Some(a),
        (Some(a), Some(b)) => Some(Str(Cow::Owned(format!("{}{}", a.as_str(), b.as_str())))),
        (a, b) => a.or(b),
    }
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Option<Str<'a>>,
    #[serde(borrow)]
    arguments: Option<Str<'a>>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
    /// OpenRouter's count of prompt tokens written to the provider's cache (Anthropic's
    /// `cache_creation_input_tokens`), which it reports within `prompt_tokens`.
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    /// panto's usage: OpenAI's `prompt_tokens` include the cached ones (and, on OpenRouter,
    /// the ones written to the cache); panto's `input_tokens` include neither, as Anthropic's.
    fn to_usage(&self) -> Usage {
        let details = self.prompt_tokens_details.as_ref();
        let cached = details
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        let written = details.and_then(|d| d.cache_write_tokens).unwrap_or(0);
        Usage {
            input_tokens: self
                .prompt_tokens
                .unwrap_or(0)
                .saturating_sub(cached)
                .saturating_sub(written),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: written,
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn on_event(&mut self, event: &str, data: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.last_offset = offset;
        if data.trim_ascii() == "[DONE]" {
            return self.complete(offset, out);
        }
        if event == "error" {
            return Err(classify_stream_error(data));
        }
        let chunk: Chunk = parse("chat.completion.chunk", data, offset)?;
        if chunk.error.is_some() {
            return Err(classify_stream_error(data));
        }
        // Usage comes on its own `choices: []` chunk (OpenAI), on a chunk with an empty delta
        // (LiteLLM), or beside the finish reason (z.ai); any non-null one counts.
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.to_usage());
        }
        let Some(FirstChoice(Some(choice))) = chunk.choices else {
            return Ok(());
        };
        if let Some(delta) = choice.delta {
            self.push_text(BlockKind::Thinking, or_empty(&delta.reasoning), offset, out)?;
            self.push_text(BlockKind::Text, or_empty(&delta.text), offset, out)?;
            for call in delta.tool_calls.iter().flatten() {
                self.tool_call(call, offset, out)?;
            }
        }
        // OpenRouter repeats the finish reason on the usage chunk; the first one stands.
        if let (None, Some(reason)) = (&self.finish_reason, &choice.finish_reason) {
            self.finish_reason = Some(StopReason::from_wire(reason.as_str()));
        }
        Ok(())
    }

    fn on_eof(&mut self, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        // Some servers end the body without `[DONE]`; a finish reason says the message was
        // complete anyway.
        if self.finish_reason.is_some() {
            return self.complete(self.last_offset, out);
        }
        Err(Error::Truncated { expected: "[DONE]" })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl OpenAiDecoder {
    /// Appends text or reasoning, opening a block of that kind if another is open. Empty
    /// strings (`content: ""` beside reasoning, say) never open a block.
    fn push_text(&mut self, kind: BlockKind, s: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if s.is_empty() {
            return Ok(());
        }
        let continues = matches!(
            (&self.open, kind),
            (Some(Open::Text(_)), BlockKind::Text) | (Some(Open::Thinking(_)), BlockKind::Thinking)
        );
        if !continues {
            self.close_open(offset, out)?;
            self.open = Some(if kind == BlockKind::Text {
                Open::Text(String::new())
            } else {
                Open::Thinking(String::new())
            });
            out.push_back(ProviderEvent::BlockStart {
                index: self.blocks.len(),
                kind,
                tool: None,
            });
        }
        let delta = match &mut self.open {
            Some(Open::Text(text)) => {
                text.push_str(s);
                ContentDelta::Text(s.to_owned())
            }
            Some(Open::Thinking(text)) => {
                text.push_str(s);
                ContentDelta::Thinking(s.to_owned())
            }
            _ => return Ok(()),
        };
        out.push_back(ProviderEvent::Delta {
            index: self.blocks.len(),
            delta,
        });
        Ok(())
    }

    /// Applies one tool-call fragment.
    fn tool_call(&mut self, call: &ToolCallDelta<'_>, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        let id = or_empty(&call.id);
        let (name, arguments) = match &call.function {
            Some(f) => (or_empty(&f.name), or_empty(&f.arguments)),
            None => ("", ""),
        };
        let wire_index = match call.index {
            Some(i) => i,
            // Without an index, a new id means a new call and anything else continues the
            // current one.
            None => match &self.open {
                Some(Open::Tool {
                    wire_index,
                    id: open_id,
                    ..
                }) if id.is_empty() || id == open_id.as_str() => *wire_index,
                open => {
                    let open_index = match open {
                        Some(Open::Tool { wire_index, .. }) => Some(*wire_index),
                        _ => None,
                    };
                    self.closed_tools
                        .iter()
                        .copied()
                        .chain(open_index)
                        .max()
                        .map_or(0, |m| m + 1)
                }
            },
        };
        let continues = matches!(&self.open, Some(Open::Tool { wire_index: w, .. }) if *w == wire_index);
        if !continues {
            if self.closed_tools.contains(&wire_index) {
                if arguments.is_empty() {
                    return Ok(());
                }
                return Err(Error::Protocol {
                    offset,
                    message: format!("arguments for tool call {wire_index} arrived after another block began"),
                });
            }
            self.close_open(offset, out)?;
            self.open = Some(Open::Tool {
                wire_index,
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: String::new(),
            });
            out.push_back(ProviderEvent::BlockStart {
                index: self.blocks.len(),
                kind: BlockKind::ToolUse,
                tool: Some(ToolDetails {
                    id: id.to_owned(),
                    name: name.to_owned(),
                }),
            });
        }
        let Some(Open::Tool {
            id: open_id,
            name: open_name,
            arguments: open_arguments,
            ..
        }) = &mut self.open
        else {
            return Ok(());
        };
        // llama-cpp-python repeats the id and the whole name on every fragment: they are taken
        // once, never appended.
        if open_id.is_empty() {
            open_id.push_str(id);
        }
        if open_name.is_empty() {
            open_name.push_str(name);
        }
        if !arguments.is_empty() {
            open_arguments.push_str(arguments);
            out.push_back(ProviderEvent::Delta {
                index: self.blocks.len(),
                delta: ContentDelta::ToolInput(arguments.to_owned()),
            });
        }
        Ok(())
    }

    /// Completes the open block, if any, and announces it.
    fn close_open(&mut self, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let index = self.blocks.len();
        let block = match open {
            Open::Text(text) => ContentBlock::Text { text },
            Open::Thinking(thinking) => ContentBlock::Thinking {
                thinking,
                signature: None,
            },
            Open::Tool {
                wire_index,
                id,
                name,
                arguments,
            } => {
                self.closed_tools.push(wire_index);
                let source = if arguments.trim().is_empty() { "{}" } else { &arguments };
                let input = serde_json::from_str(source).map_err(|e| Error::Protocol {
                    offset,
                    message: format!("tool call {wire_index} ({name}): arguments are not valid JSON: {e}"),
                })?;
                // A call must have an id for its result to refer to; a server that sends none
                // gets one made up.
                let id = if id.is_empty() { format!("call_{index}") } else { id };
                ContentBlock::ToolUse { id, name, input }
            }
        };
        self.blocks.push(block.clone());
        out.push_back(ProviderEvent::BlockComplete { index, block });
        Ok(())
    }

    /// Closes the open block and produces `MessageComplete`.
    fn complete(&mut self, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        self.close_open(offset, out)?;
        let blocks = std::mem::take(&mut self.blocks);
        out.push_back(ProviderEvent::message_complete(
            blocks,
            self.usage,
            self.finish_reason.take(),
        ));
        self.done = true;
        Ok(())
    }
}
