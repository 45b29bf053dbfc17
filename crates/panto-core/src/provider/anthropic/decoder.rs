//! Decoding a Messages API stream into [`ProviderEvent`]s.
//!
//! The payload struct is chosen by the SSE `event:` name, which Anthropic always sends, rather
//! than by a serde-tagged enum over the `type` field: a tagged enum buffers the whole object
//! first and is markedly slower. String fields borrow from the event data where they can.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::http::classify_stream_error;
use crate::provider::sse::json::{or_empty, parse, Str};
use crate::provider::validate::{kept_name, ToolCallCheck, ANTHROPIC_ID_PREFIX};
use crate::provider::{Decoder, ProviderEvent};

/// Decodes one Messages API response.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    /// Blocks in the order they started; a block's position is its [`ProviderEvent`] index.
    blocks: Vec<Slot>,
    /// Wire indices of blocks of a kind panto does not model (server tools and the like), whose
    /// events are skipped.
    skipped: Vec<u64>,
    /// Usage so far: from `message_start`, overwritten by `message_delta`'s cumulative counts.
    usage: Option<Usage>,
    /// The stop reason from `message_delta`.
    stop_reason: Option<StopReason>,
    /// Whether `message_stop` has been handled.
    done: bool,
    /// The tool calls' ids and verdicts.
    calls: ToolCallCheck,
}

/// One block of the message, by its wire index.
#[derive(Debug)]
struct Slot {
    wire_index: u64,
    state: SlotState,
}

#[derive(Debug)]
enum SlotState {
    /// Receiving deltas.
    Open(Partial),
    /// `content_block_stop` arrived; this is the block as it stands in the message.
    Closed(ContentBlock),
}

/// A block being assembled from deltas.
#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        /// The id the call keeps (the model's, or one minted in its place).
        id: String,
        /// The name as the model sent it; checked when the block completes.
        name: String,
        /// The concatenated `partial_json` fragments.
        json: String,
        /// The `input` of the block start when it was not the usual empty placeholder.
        start_input: Option<String>,
    },
}

/// Token counts as Anthropic reports them; any field may be absent or null.
#[derive(Debug, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    /// The writes split by lifetime; absent from APIs older than one-hour caching.
    cache_creation: Option<WireCacheCreation>,
}

/// `usage.cache_creation`: how many of the cache writes were for five minutes and for one hour.
#[derive(Debug, Deserialize)]
struct WireCacheCreation {
    ephemeral_1h_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Overwrites the counts this report carries; the others keep their earlier values.
    fn apply_to(&self, usage: &mut Usage) {
        let set = |field: &mut u64, value: Option<u64>| {
            if let Some(v) = value {
                *field = v;
            }
        };
        set(&mut usage.input_tokens, self.input_tokens);
        set(&mut usage.output_tokens, self.output_tokens);
        set(&mut usage.cache_write_tokens, self.cache_creation_input_tokens);
        set(&mut usage.cache_read_tokens, self.cache_read_input_tokens);
        if let Some(creation) = &self.cache_creation {
            set(&mut usage.cache_write_1h_tokens, creation.ephemeral_1h_input_tokens);
        }
        // An untrusted report could claim more one-hour writes than writes; keep the one-hour
        // share within the total so that every sum and price stays consistent.
        usage.cache_write_1h_tokens = usage.cache_write_1h_tokens.min(usage.cache_write_tokens);
    }
}

#[derive(Debug, Deserialize)]
struct MessageStart {
    #[serde(default)]
    message: Option<StartedMessage>,
}

#[derive(Debug, Deserialize)]
struct StartedMessage {
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct BlockStart<'a> {
    index: u64,
    #[serde(borrow)]
    content_block: WireBlock<'a>,
}

/// A `content_block` of any type, flattened: the `type` says which fields matter.
#[derive(Debug, Deserialize)]
struct WireBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Option<Str<'a>>,
    #[serde(borrow)]
    thinking: Option<Str<'a>>,
    #[serde(borrow)]
    signature: Option<Str<'a>>,
    #[serde(borrow)]
    data: Option<Str<'a>>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    name: Option<Str<'a>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: WireDelta<'a>,
}

/// A `delta` of any type. Each type carries exactly one payload field, so all of them land in
/// `value`: a smaller struct is measurably faster to deserialize, and deltas are most of a
/// stream.
#[derive(Debug, Deserialize)]
struct WireDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(
        rename = "text",
        alias = "partial_json",
        alias = "thinking",
        alias = "signature",
        borrow
    )]
    value: Option<Str<'a>>,
}

#[derive(Debug, Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Debug, Deserialize)]
struct MessageDelta<'a> {
    #[serde(borrow)]
    delta: Option<MessageDeltaBody<'a>>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct MessageDeltaBody<'a> {
    #[serde(borrow)]
    stop_reason: Option<Str<'a>>,
}

/// Just the `type` of a payload, for a stream that omits `event:` lines.
#[derive(Debug, Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
}

impl Decoder for AnthropicDecoder {
    fn on_event(&mut self, event: &str, data: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        // Anthropic names every event; a proxy that drops the names still sends `type`.
        let typed;
        let name = if event.is_empty() {
            typed = parse::<Typed>("event", data, offset)?;
            typed.kind.as_ref().map_or("", Str::as_str)
        } else {
            event
        };
        match name {
            "message_start" => {
                let start: MessageStart = parse(name, data, offset)?;
                if let Some(wire) = start.message.and_then(|m| m.usage) {
                    wire.apply_to(self.usage.get_or_insert_with(Usage::default));
                }
                Ok(())
            }
            "content_block_start" => self.block_start(parse(name, data, offset)?, offset, out),
            "content_block_delta" => {
                let delta = match fast_text_delta(data) {
                    Some(delta) => delta,
                    None => parse(name, data, offset)?,
                };
                self.block_delta(delta, offset, out)
            }
            "content_block_stop" => {
                let stop: BlockStop = parse(name, data, offset)?;
                self.block_stop(stop.index, offset, out)
            }
            "message_delta" => {
                let delta: MessageDelta = parse(name, data, offset)?;
                if let Some(reason) = delta.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(StopReason::from_wire(reason.as_str()));
                }
                if let Some(wire) = delta.usage {
                    wire.apply_to(self.usage.get_or_insert_with(Usage::default));
                }
                Ok(())
            }
            "message_stop" => self.message_stop(offset, out),
            "error" => Err(classify_stream_error(data)),
            // `ping` keeps the connection alive; event types added to the API later are skipped
            // as Anthropic's versioning policy asks.
            _ => Ok(()),
        }
    }

    fn on_eof(&mut self, _out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            Ok(())
        } else {
            Err(Error::Truncated {
                expected: "message_stop",
            })
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl AnthropicDecoder {
    /// A decoder whose tool calls are checked by `calls`.
    pub(crate) fn new(calls: ToolCallCheck) -> Self {
        AnthropicDecoder {
            calls,
            ..AnthropicDecoder::default()
        }
    }

    fn block_start(&mut self, start: BlockStart<'_>, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.find(start.index).is_some() || self.skipped.contains(&start.index) {
            return Err(protocol(offset, format!("content block {} started twice", start.index)));
        }
        // The Messages API streams one block at a time, and panto's events promise consumers
        // the same: a block starting while another is open is a stream that broke the protocol.
        // (The last block left open is closed by message_stop.)
        if let Some(open) = self.blocks.iter().find(|s| matches!(s.state, SlotState::Open(_))) {
            return Err(protocol(
                offset,
                format!(
                    "content block {} started while block {} was open",
                    start.index, open.wire_index
                ),
            ));
        }
        let b = start.content_block;
        let index = self.blocks.len();
        let (kind, partial, tool) = match b.kind.as_str() {
            "text" => (BlockKind::Text, Partial::Text(String::new()), None),
            "thinking" => (
                BlockKind::Thinking,
                Partial::Thinking {
                    thinking: String::new(),
                    signature: or_empty(&b.signature).to_owned(),
                },
                None,
            ),
            "redacted_thinking" => (
                BlockKind::RedactedThinking,
                Partial::Redacted(or_empty(&b.data).to_owned()),
                None,
            ),
            "tool_use" => {
                // Consumers see the id and name the call will keep from its start on.
                let id = self.calls.id(or_empty(&b.id), ANTHROPIC_ID_PREFIX);
                let name = or_empty(&b.name).to_owned();
                let tool = ToolDetails {
                    id: id.clone(),
                    name: kept_name(&name).to_owned(),
                };
                let start_input = b.input.map(RawValue::get).filter(|raw| !is_empty_object(raw));
                let partial = Partial::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    start_input: start_input.map(str::to_owned),
                };
                (BlockKind::ToolUse, partial, Some(tool))
            }
            _ => {
                self.skipped.push(start.index);
                return Ok(());
            }
        };
        self.blocks.push(Slot {
            wire_index: start.index,
            state: SlotState::Open(partial),
        });
        out.push_back(ProviderEvent::BlockStart { index, kind, tool });
        // A start may already carry content; it is passed on as a delta so that consumers
        // which only watch deltas see all of it.
        let initial = match kind {
            BlockKind::Text => b.text.as_ref().map(|t| ContentDelta::Text(t.as_str().to_owned())),
            BlockKind::Thinking => b
                .thinking
                .as_ref()
                .map(|t| ContentDelta::Thinking(t.as_str().to_owned())),
            _ => None,
        };
        if let Some(delta) = initial.filter(|d| !delta_text(d).is_empty()) {
            self.apply(index, &delta, offset)?;
            out.push_back(ProviderEvent::Delta { index, delta });
        }
        Ok(())
    }

    fn block_delta(&mut self, d: BlockDelta<'_>, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        let Some(index) = self.find(d.index) else {
            if self.skipped.contains(&d.index) {
                return Ok(());
            }
            return Err(protocol(
                offset,
                format!("content_block_delta for unknown block index {}", d.index),
            ));
        };
        let w = d.delta;
        let delta = match w.kind.as_str() {
            "text_delta" => ContentDelta::Text(or_empty(&w.value).to_owned()),
            "thinking_delta" => ContentDelta::Thinking(or_empty(&w.value).to_owned()),
            "input_json_delta" => ContentDelta::ToolInput(or_empty(&w.value).to_owned()),
            "signature_delta" => {
                // The signature is not content anyone reads; it is kept to send back verbatim.
                return match self.open_mut(index, offset)? {
                    Partial::Thinking { signature, .. } => {
                        signature.push_str(or_empty(&w.value));
                        Ok(())
                    }
                    _ => Err(protocol(
                        offset,
                        format!("signature_delta for non-thinking block {}", d.index),
                    )),
                };
            }
            // Delta types added later (citations and the like) carry nothing panto models.
            _ => return Ok(()),
        };
        if delta_text(&delta).is_empty() {
            // Anthropic sends empty deltas (an empty thinking_delta before the signature, an
            // empty first input_json_delta); they change nothing and would only be noise.
            return self.open_mut(index, offset).map(|_| ());
        }
        self.apply(index, &delta, offset)?;
        out.push_back(ProviderEvent::Delta { index, delta });
        Ok(())
    }

    fn block_stop(&mut self, wire_index: u64, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        let Some(index) = self.find(wire_index) else {
            if self.skipped.contains(&wire_index) {
                return Ok(());
            }
            return Err(protocol(
                offset,
                format!("content_block_stop for unknown block index {wire_index}"),
            ));
        };
        self.close(index, offset, out)
    }

    fn message_stop(&mut self, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        // A block the server never closed is closed here rather than lost.
        for index in 0..self.blocks.len() {
            if matches!(self.blocks[index].state, SlotState::Open(_)) {
                self.close(index, offset, out)?;
            }
        }
        let blocks: Vec<ContentBlock> = std::mem::take(&mut self.blocks)
            .into_iter()
            .filter_map(|slot| match slot.state {
                SlotState::Closed(block) => Some(block),
                SlotState::Open(_) => None,
            })
            .collect();
        out.push_back(ProviderEvent::message_complete(
            blocks,
            self.usage,
            self.stop_reason.take(),
            self.calls.take_rejected(),
        ));
        self.done = true;
        Ok(())
    }

    /// The event index of the block with this wire index.
    fn find(&self, wire_index: u64) -> Option<usize> {
        // Deltas almost always target the newest block, so search from the end.
        self.blocks.iter().rposition(|s| s.wire_index == wire_index)
    }

    /// The open block at `index`, or an error if it was already closed.
    fn open_mut(&mut self, index: usize, offset: u64) -> Result<&mut Partial> {
        let slot = &mut self.blocks[index];
        match &mut slot.state {
            SlotState::Open(partial) => Ok(partial),
            SlotState::Closed(_) => Err(protocol(
                offset,
                format!("delta for block {} after its content_block_stop", slot.wire_index),
            )),
        }
    }

    /// Appends a delta's content to the open block at `index`.
    fn apply(&mut self, index: usize, delta: &ContentDelta, offset: u64) -> Result<()> {
        let wire_index = self.blocks[index].wire_index;
        match (self.open_mut(index, offset)?, delta) {
            (Partial::Text(text), ContentDelta::Text(more)) => text.push_str(more),
            (Partial::Thinking { thinking, .. }, ContentDelta::Thinking(more)) => thinking.push_str(more),
            (Partial::ToolUse { json, .. }, ContentDelta::ToolInput(more)) => json.push_str(more),
            (partial, delta) => {
                return Err(protocol(
                    offset,
                    format!(
                        "{} for a {} block (index {wire_index})",
                        delta_name(delta),
                        partial_name(partial)
                    ),
                ))
            }
        }
        Ok(())
    }

    /// Finishes the block at `index` and announces it.
    fn close(&mut self, index: usize, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        let slot = &mut self.blocks[index];
        let partial = match &mut slot.state {
            SlotState::Open(partial) => partial,
            SlotState::Closed(_) => {
                return Err(protocol(
                    offset,
                    format!("content block {} stopped twice", slot.wire_index),
                ))
            }
        };
        let block = match partial {
            Partial::Text(text) => ContentBlock::Text {
                text: std::mem::take(text),
            },
            Partial::Thinking { thinking, signature } => ContentBlock::Thinking {
                thinking: std::mem::take(thinking),
                signature: (!signature.is_empty()).then(|| std::mem::take(signature)),
            },
            Partial::Redacted(data) => ContentBlock::RedactedThinking {
                data: std::mem::take(data),
            },
            Partial::ToolUse {
                id,
                name,
                json,
                start_input,
            } => {
                let source = if json.trim().is_empty() {
                    start_input.as_deref().unwrap_or("{}")
                } else {
                    json.as_str()
                };
                // Input that is not a JSON object (cut off by max_tokens, say) is kept as a
                // call that does not run, never as a stream error: the model is told why.
                self.calls.finish(std::mem::take(id), name, source)
            }
        };
        slot.state = SlotState::Closed(block.clone());
        out.push_back(ProviderEvent::BlockComplete { index, block });
        Ok(())
    }
}

/// A `content_block_delta` carrying a `text_delta`, read without serde when it has the exact
/// compact shape Anthropic sends and its text needs no unescaping; `None` for anything else,
/// which serde then parses.
///
/// Text deltas are nearly every event of a response, and serde's general path (keys matched one
/// by one, the unknown `type` skipped) is most of their decoding cost. What this accepts, serde
/// parses to the same value: the keys and punctuation are matched byte for byte, the index is
/// plain digits, and the text is a string with no escape and no control character (a string
/// serde would borrow as is). Whitespace is allowed only where the API pads, before the closing
/// braces.
fn fast_text_delta(data: &str) -> Option<BlockDelta<'_>> {
    const HEAD: &str = r#"{"type":"content_block_delta","index":"#;
    const MID: &str = r#","delta":{"type":"text_delta","text":""#;
    let rest = data.strip_prefix(HEAD)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // JSON forbids leading zeros; 18 digits always fit a u64.
    if digits == 0 || digits > 18 || (digits > 1 && rest.starts_with('0')) {
        return None;
    }
    let index: u64 = rest[..digits].parse().ok()?;
    let rest = rest[digits..].strip_prefix(MID)?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    if rest.as_bytes()[end] != b'"' {
        return None;
    }
    let text = &rest[..end];
    if text.bytes().any(|b| b < 0x20) {
        return None;
    }
    let json_ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let tail = rest[end + 1..].strip_prefix('}')?.trim_start_matches(json_ws);
    if !tail.strip_prefix('}')?.trim_start_matches(json_ws).is_empty() {
        return None;
    }
    Some(BlockDelta {
        index,
        delta: WireDelta {
            kind: Str(Cow::Borrowed("text_delta")),
            value: Some(Str(Cow::Borrowed(text))),
        },
    })
}

/// Whether a raw JSON value is `{}` (the placeholder `input` of a streamed tool_use start).
fn is_empty_object(raw: &str) -> bool {
    let inner = raw.trim().strip_prefix('{').and_then(|s| s.strip_suffix('}'));
    inner.is_some_and(|s| s.trim().is_empty())
}

fn delta_text(delta: &ContentDelta) -> &str {
    match delta {
        ContentDelta::Text(s) | ContentDelta::Thinking(s) | ContentDelta::ToolInput(s) => s,
    }
}

fn delta_name(delta: &ContentDelta) -> &'static str {
    match delta {
        ContentDelta::Text(_) => "text_delta",
        ContentDelta::Thinking(_) => "thinking_delta",
        ContentDelta::ToolInput(_) => "input_json_delta",
    }
}

fn partial_name(partial: &Partial) -> &'static str {
    match partial {
        Partial::Text(_) => "text",
        Partial::Thinking { .. } => "thinking",
        Partial::Redacted(_) => "redacted_thinking",
        Partial::ToolUse { .. } => "tool_use",
    }
}

fn protocol(offset: u64, message: String) -> Error {
    Error::Protocol { offset, message }
}

#[cfg(test)]
mod fast_path_tests {
    use proptest::prelude::*;

    use super::*;

    /// What serde makes of a delta: index, delta type and value.
    fn by_serde(data: &str) -> Option<(u64, String, Option<String>)> {
        let d: BlockDelta<'_> = parse("content_block_delta", data, 0).ok()?;
        Some((
            d.index,
            d.delta.kind.as_str().to_owned(),
            d.delta.value.map(|v| v.as_str().to_owned()),
        ))
    }

    #[test]
    fn recorded_text_deltas_take_the_fast_path() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" day!"}   }"#,
            r#"{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"68°F an"}}"#,
        ] {
            let fast = fast_text_delta(data).expect("the fast path takes it");
            let fast = (
                fast.index,
                fast.delta.kind.as_str().to_owned(),
                fast.delta.value.map(|v| v.as_str().to_owned()),
            );
            assert_eq!(Some(fast), by_serde(data));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// Whatever the fast path accepts, serde parses to the same delta.
        #[test]
        fn the_fast_path_agrees_with_serde(
            lead in prop_oneof![Just(""), Just(" ")],
            index in prop_oneof!["0", "[1-9][0-9]{0,19}", "0[0-9]", "-1", "1e2", "1.0"],
            kind in prop_oneof![Just("text_delta"), Just("thinking_delta")],
            text in prop_oneof![
                "[a-z °é🦀]{0,12}".prop_map(|t| format!("\"{t}\"")),
                any::<String>().prop_map(|t| serde_json::to_string(&t).unwrap_or_default()),
                "[a-z\"\\\\\t\n]{0,8}".prop_map(|t| format!("\"{t}\"")),
            ],
            inner in "[ \t\r\n]{0,3}",
            pad in "[ \t\r\nx]{0,6}",
        ) {
            let data = format!(
                r#"{lead}{{"type":"content_block_delta","index":{index},"delta":{{"type":"{kind}","text":{text}}}{inner}}}{pad}"#
            );
            if let Some(fast) = fast_text_delta(&data) {
                let fast = (fast.index, fast.delta.kind.as_str().to_owned(), fast.delta.value.map(|v| v.as_str().to_owned()));
                prop_assert_eq!(Some(fast), by_serde(&data), "{}", data);
            }
        }
    }
}
