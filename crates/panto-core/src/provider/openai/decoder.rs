//! Decoding a Chat Completions stream into [`ProviderEvent`]s.
//!
//! Chat Completions streams have no blocks: each chunk's delta may carry text, reasoning and
//! tool-call fragments. Blocks are synthesised in order of appearance. Text and reasoning have no
//! identity on the wire: a text or reasoning block ends when content of another kind (or a tool
//! call) begins. Tool calls are keyed by their `index`, and nothing in the protocol keeps one
//! open at a time: a server may send a fragment of call 1 and then more of call 0. So a tool call
//! is complete only when the message is, and [`BlockOrder`] hands the blocks out one at a time:
//! the first call streams live, a later one's fragments wait until the message ends. Compatible
//! servers differ in the details, and each difference handled here is named where it is handled.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::http::classify_stream_error;
use crate::provider::order::BlockOrder;
use crate::provider::sse::json::{or_empty, parse, Str};
use crate::provider::validate::{kept_name, ToolCallCheck, OPENAI_ID_PREFIX};
use crate::provider::{Decoder, ProviderEvent};

/// Decodes one Chat Completions response.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// The blocks, one at a time.
    order: BlockOrder<Source>,
    /// The text or reasoning block being assembled, while nothing else has begun after it.
    text: Option<TextBlock>,
    /// How many text and reasoning blocks were begun.
    texts: u64,
    /// The tool calls, in the order they began; each is open until the message ends.
    tools: Vec<ToolCall>,
    /// The first finish reason seen for choice 0.
    finish_reason: Option<StopReason>,
    /// The last usage report seen.
    usage: Option<Usage>,
    /// Whether `MessageComplete` has been produced.
    done: bool,
    /// The tool calls' ids and verdicts.
    calls: ToolCallCheck,
}

/// What a block comes from: the `n`th text or reasoning run, or the tool call of a wire index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Text(u64),
    Tool(u64),
}

/// A text or reasoning block being assembled.
#[derive(Debug)]
struct TextBlock {
    n: u64,
    kind: BlockKind,
    text: String,
}

/// A tool call being assembled.
#[derive(Debug)]
struct ToolCall {
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
/// faster to move through serde than one field per JSON key.
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
                self.tool_call(call, out);
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

    /// Appends text or reasoning, beginning a block of that kind if the newest block is another.
    /// Empty strings (`content: ""` beside reasoning, say) never begin a block.
    fn push_text(&mut self, kind: BlockKind, s: &str, out: &mut VecDeque<ProviderEvent>) {
        if s.is_empty() {
            return;
        }
        if self.text.as_ref().is_none_or(|t| t.kind != kind) {
            self.close_text(out);
            let n = self.texts;
            self.texts += 1;
            self.order.open(Source::Text(n));
            self.order.start(Source::Text(n), kind, None, out);
            self.text = Some(TextBlock {
                n,
                kind,
                text: String::new(),
            });
        }
        let Some(block) = &mut self.text else {
            return;
        };
        block.text.push_str(s);
        let delta = if kind == BlockKind::Text {
            ContentDelta::Text(s.to_owned())
        } else {
            ContentDelta::Thinking(s.to_owned())
        };
        self.order.delta(Source::Text(block.n), delta, out);
    }

    /// Completes the text or reasoning block being assembled, if any.
    fn close_text(&mut self, out: &mut VecDeque<ProviderEvent>) {
        let Some(TextBlock { n, kind, text }) = self.text.take() else {
            return;
        };
        let block = if kind == BlockKind::Text {
            ContentBlock::Text { text }
        } else {
            ContentBlock::Thinking {
                thinking: text,
                signature: None,
            }
        };
        self.order.complete(Source::Text(n), block, out);
        self.order.finish(Source::Text(n), out);
    }

    /// Applies one tool-call fragment.
    fn tool_call(&mut self, call: &ToolCallDelta<'_>, out: &mut VecDeque<ProviderEvent>) {
        let id = or_empty(&call.id);
        let (name, arguments) = match &call.function {
            Some(f) => (or_empty(&f.name), or_empty(&f.arguments)),
            None => ("", ""),
        };
        let wire_index = match call.index {
            Some(i) => i,
            // Without an index, a new id means a new call and anything else continues the
            // newest one.
            None => match self.tools.last() {
                Some(newest) if id.is_empty() || id == newest.wire_id => newest.wire_index,
                _ => self.tools.iter().map(|t| t.wire_index).max().map_or(0, |m| m + 1),
            },
        };
        let pos = match self.tools.iter().rposition(|t| t.wire_index == wire_index) {
            Some(pos) => pos,
            None => {
                self.close_text(out);
                // Consumers see the id the call keeps, and its name as far as it is known yet.
                let kept_id = self.calls.id(id, OPENAI_ID_PREFIX);
                let shown_name = if name.is_empty() { "" } else { kept_name(name) };
                let source = Source::Tool(wire_index);
                self.order.open(source);
                self.order.start(
                    source,
                    BlockKind::ToolUse,
                    Some(ToolDetails {
                        id: kept_id.clone(),
                        name: shown_name.to_owned(),
                    }),
                    out,
                );
                self.tools.push(ToolCall {
                    wire_index,
                    wire_id: id.to_owned(),
                    id: kept_id,
                    name: String::new(),
                    arguments: String::new(),
                });
                self.tools.len() - 1
            }
        };
        let tool = &mut self.tools[pos];
        // llama-cpp-python repeats the id and the whole name on every fragment: they are taken
        // once, never appended.
        if tool.name.is_empty() {
            tool.name.push_str(name);
        }
        if !arguments.is_empty() {
            tool.arguments.push_str(arguments);
            self.order.delta(
                Source::Tool(wire_index),
                ContentDelta::ToolInput(arguments.to_owned()),
                out,
            );
        }
    }

    /// Completes every block, in order, and produces `MessageComplete`.
    fn complete(&mut self, out: &mut VecDeque<ProviderEvent>) {
        self.close_text(out);
        for tool in std::mem::take(&mut self.tools) {
            let source = if tool.arguments.trim().is_empty() {
                "{}"
            } else {
                &tool.arguments
            };
            // Arguments that are not a JSON object are kept as a call that does not run,
            // never as a stream error: the model is told why.
            let block = self.calls.finish(tool.id, &tool.name, source);
            self.order.complete(Source::Tool(tool.wire_index), block, out);
            self.order.finish(Source::Tool(tool.wire_index), out);
        }
        let blocks = self.order.take_blocks();
        out.push_back(ProviderEvent::message_complete(
            blocks,
            self.usage,
            self.finish_reason.take(),
            self.calls.take_rejected(),
        ));
        self.done = true;
    }
}
