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
use crate::provider::validate::{kept_name, ToolCallCheck, OPENAI_ID_PREFIX};
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
    /// Whether `MessageComplete` has been produced.
    done: bool,
    /// The tool calls' ids and verdicts.
    calls: ToolCallCheck,
}

/// The block being assembled.
#[derive(Debug)]
enum Open {
    Text(String),
    Thinking(String),
    Tool {
        wire_index: u64,
        /// The id as the server sent it with the call's first fragment, which later fragments
        /// may repeat.
        wire_id: String,
        /// The id the call keeps: the server's, or one minted in its place (also when the server
        /// sends none, as some compatible servers do).
        id: String,
        /// The name as the server sent it; checked when the call completes.
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
    completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct CompletionTokensDetails {
    /// The part of `completion_tokens` spent reasoning (o-series and gpt-5 models).
    reasoning_tokens: Option<u64>,
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
            cache_write_1h_tokens: 0,
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn on_event(&mut self, event: &str, data: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        if data.trim_ascii() == "[DONE]" {
            self.complete(out);
            return Ok(());
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
            self.push_text(BlockKind::Thinking, or_empty(&delta.reasoning), out);
            self.push_text(BlockKind::Text, or_empty(&delta.text), out);
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
            self.complete(out);
            return Ok(());
        }
        Err(Error::Truncated { expected: "[DONE]" })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl OpenAiDecoder {
    /// A decoder whose tool calls are checked by `calls`.
    pub(crate) fn new(calls: ToolCallCheck) -> Self {
        OpenAiDecoder {
            calls,
            ..OpenAiDecoder::default()
        }
    }

    /// Appends text or reasoning, opening a block of that kind if another is open. Empty
    /// strings (`content: ""` beside reasoning, say) never open a block.
    fn push_text(&mut self, kind: BlockKind, s: &str, out: &mut VecDeque<ProviderEvent>) {
        if s.is_empty() {
            return;
        }
        let continues = matches!(
            (&self.open, kind),
            (Some(Open::Text(_)), BlockKind::Text) | (Some(Open::Thinking(_)), BlockKind::Thinking)
        );
        if !continues {
            self.close_open(out);
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
            _ => return,
        };
        out.push_back(ProviderEvent::Delta {
            index: self.blocks.len(),
            delta,
        });
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
                    wire_index, wire_id, ..
                }) if id.is_empty() || id == wire_id.as_str() => *wire_index,
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
            self.close_open(out);
            // Consumers see the id the call keeps, and its name as far as it is known yet.
            let kept_id = self.calls.id(id, OPENAI_ID_PREFIX);
            let shown_name = if name.is_empty() { "" } else { kept_name(name) };
            out.push_back(ProviderEvent::BlockStart {
                index: self.blocks.len(),
                kind: BlockKind::ToolUse,
                tool: Some(ToolDetails {
                    id: kept_id.clone(),
                    name: shown_name.to_owned(),
                }),
            });
            self.open = Some(Open::Tool {
                wire_index,
                wire_id: id.to_owned(),
                id: kept_id,
                name: name.to_owned(),
                arguments: String::new(),
            });
        }
        let Some(Open::Tool {
            name: open_name,
            arguments: open_arguments,
            ..
        }) = &mut self.open
        else {
            return Ok(());
        };
        // llama-cpp-python repeats the id and the whole name on every fragment: they are taken
        // once, never appended.
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
    fn close_open(&mut self, out: &mut VecDeque<ProviderEvent>) {
        let Some(open) = self.open.take() else {
            return;
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
                ..
            } => {
                self.closed_tools.push(wire_index);
                let source = if arguments.trim().is_empty() { "{}" } else { &arguments };
                // Arguments that are not a JSON object are kept as a call that does not run,
                // never as a stream error: the model is told why.
                self.calls.finish(id, &name, source)
            }
        };
        self.blocks.push(block.clone());
        out.push_back(ProviderEvent::BlockComplete { index, block });
    }

    /// Closes the open block and produces `MessageComplete`.
    fn complete(&mut self, out: &mut VecDeque<ProviderEvent>) {
        self.close_open(out);
        let blocks = std::mem::take(&mut self.blocks);
        out.push_back(ProviderEvent::message_complete(
            blocks,
            self.usage,
            self.finish_reason.take(),
            self.calls.take_rejected(),
        ));
        self.done = true;
    }
}
