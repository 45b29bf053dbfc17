//! Decoding a Responses API stream into [`ProviderEvent`]s.
//!
//! The stream announces output items (`response.output_item.added`), streams their content
//! (`response.output_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.function_call_arguments.delta`), completes each whole (`response.output_item.done`)
//! and ends with `response.completed`, `response.incomplete` or `response.failed`. Every event
//! names its item by `output_index` (and `item_id`), and nothing in the protocol keeps one item
//! open at a time: OpenAI streams items one after another, LiteLLM's bridge streams a second
//! function call before the first is done and finishes its message last. Each item is decoded
//! on its own, and [`BlockOrder`] hands the blocks out one at a time in the order the items were
//! announced: an item streams live once every item announced before it is done.
//!
//! A reasoning item becomes a thinking block (its summary, as it streams) followed by a
//! [`ContentBlock::Reasoning`] holding the encrypted reasoning, which arrives whole when the item
//! is done. Events panto has no use for are skipped.

use std::collections::VecDeque;

use serde::Deserialize;

use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::http::is_context_overflow;
use crate::provider::order::BlockOrder;
use crate::provider::sse::json::{or_empty, parse, Str};
use crate::provider::validate::{kept_name, ToolCallCheck, OPENAI_ID_PREFIX};
use crate::provider::{Decoder, ProviderEvent};

/// Decodes one Responses stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// Every output item seen, in the order it was first named.
    items: Vec<OutputItem>,
    /// The items' blocks, one at a time, keyed by output index.
    order: BlockOrder<u64>,
    /// Whether `MessageComplete` has been produced.
    done: bool,
    /// The tool calls' ids and verdicts.
    calls: ToolCallCheck,
}

/// The kinds of output item that become blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    Message,
    Reasoning,
    FunctionCall,
}

impl ItemKind {
    fn from_wire(kind: &str) -> Option<Self> {
        match kind {
            "message" => Some(ItemKind::Message),
            "reasoning" => Some(ItemKind::Reasoning),
            "function_call" => Some(ItemKind::FunctionCall),
            _ => None,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            ItemKind::Message => "message",
            ItemKind::Reasoning => "reasoning item",
            ItemKind::FunctionCall => "function call",
        }
    }
}

/// One output item as far as it has streamed.
#[derive(Debug)]
struct OutputItem {
    /// Its `output_index`, the key every event names it by.
    index: u64,
    /// Its `id`, once known; events without an `output_index` name the item by it.
    id: Option<String>,
    kind: ItemKind,
    /// A function call's `call_id` and name as announced, for telling a repeated announcement
    /// from a contradictory one.
    call: Option<(String, String)>,
    /// The block being assembled.
    open: Option<Open>,
    /// Whether content arrived as deltas (then the finished item's copy of it is not used).
    streamed: bool,
    /// Whether the item is done: nothing more may arrive for it.
    complete: bool,
}

/// An item's block being assembled.
#[derive(Debug)]
enum Open {
    Text(String),
    /// A reasoning item's summary, shown as thinking; `part` is the summary part streaming.
    Summary {
        part: u64,
        text: String,
    },
    Tool {
        /// The id the call keeps: its `call_id`, or one minted in its place.
        id: String,
        /// The name as the server sent it; checked when the call completes.
        name: String,
        arguments: String,
    },
}

/// The fields of a streaming event panto reads; which are present depends on `type`.
#[derive(Debug, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    delta: Option<Str<'a>>,
    output_index: Option<u64>,
    #[serde(borrow)]
    item_id: Option<Str<'a>>,
    summary_index: Option<u64>,
    item: Option<Item>,
    /// Boxed: large, and only on the events that begin and end a response.
    response: Option<Box<WireResponse>>,
}

/// Just the `type` of an event.
#[derive(Debug, Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
}

/// The events the decoder reads; every other is skipped.
const KNOWN: &[&str] = &[
    "response.output_item.added",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.function_call_arguments.delta",
    "response.output_item.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

/// An output item.
#[derive(Debug, Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    encrypted_content: Option<String>,
    #[serde(default)]
    summary: Vec<TextPart>,
    #[serde(default)]
    content: Vec<TextPart>,
}

/// A summary part (`summary_text`) or a message content part (`output_text`, `refusal`).
#[derive(Debug, Deserialize)]
struct TextPart {
    text: Option<String>,
    refusal: Option<String>,
}

impl TextPart {
    fn text(&self) -> &str {
        self.text.as_deref().or(self.refusal.as_deref()).unwrap_or("")
    }
}

/// The response object of `response.created`, `.completed`, `.incomplete` and `.failed`.
#[derive(Debug, Deserialize)]
struct WireResponse {
    usage: Option<WireUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<InputTokensDetails>,
    output_tokens_details: Option<OutputTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct OutputTokensDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct InputTokensDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    /// panto's usage: the API's `input_tokens` include the tokens read from and written to the
    /// cache, panto's do not (as Anthropic's); `output_tokens` include the reasoning tokens, as
    /// panto's do.
    fn to_usage(&self) -> Usage {
        let details = self.input_tokens_details.as_ref();
        let cached = details.and_then(|d| d.cached_tokens).unwrap_or(0);
        let written = details.and_then(|d| d.cache_write_tokens).unwrap_or(0);
        Usage {
            input_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_sub(cached)
                .saturating_sub(written),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: written,
            cache_write_1h_tokens: 0,
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// The error a failed response or an `error` event reports: its `code` (`server_error`,
/// `rate_limit_exceeded`, `context_length_exceeded`, …) classified as the other APIs' errors are.
fn stream_error(error: Option<&serde_json::Value>, data: &str) -> Error {
    let field = |key: &str| error.and_then(|e| e.get(key)).and_then(serde_json::Value::as_str);
    let code = field("code").or(field("type")).filter(|c| *c != "error");
    let message = field("message").map_or_else(|| data.trim().to_owned(), str::to_owned);
    if is_context_overflow(code, &message) {
        return Error::ContextOverflow { status: 0, message };
    }
    Error::StreamError {
        error_type: code.map(str::to_owned),
        message,
    }
}

impl Decoder for ResponsesDecoder {
    fn on_event(&mut self, _event: &str, data: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let event: WireEvent = match parse("Responses event", data, offset) {
            Ok(event) => event,
            // An event panto does not read may carry fields of any shape; only one it reads
            // must have the shape it expects.
            Err(e) => match serde_json::from_str::<Kind>(data) {
                Ok(kind) if !KNOWN.contains(&kind.kind.as_str()) => return Ok(()),
                _ => return Err(e),
            },
        };
        match event.kind.as_str() {
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    self.added(event.output_index.unwrap_or(0), item, offset, out)?;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let index = self.key(&event, offset)?;
                self.content(index, None, or_empty(&event.delta), offset, out)?;
            }
            "response.reasoning_summary_text.delta" => {
                let index = self.key(&event, offset)?;
                let part = event.summary_index.unwrap_or(0);
                self.content(index, Some(part), or_empty(&event.delta), offset, out)?;
            }
            "response.function_call_arguments.delta" => {
                let index = self.key(&event, offset)?;
                self.arguments(index, or_empty(&event.delta), offset, out)?;
            }
            "response.output_item.done" => {
                if let Some(item) = &event.item {
                    self.item_done(event.output_index.unwrap_or(0), item, offset, out)?;
                }
            }
            "response.completed" => {
                self.complete(event.response.as_deref(), None, out);
            }
            "response.incomplete" => {
                let reason = event
                    .response
                    .as_deref()
                    .and_then(|r| r.incomplete_details.as_ref())
                    .and_then(|d| d.reason.as_deref());
                let stop = match reason {
                    Some("max_output_tokens") => StopReason::MaxTokens,
                    Some("content_filter") => StopReason::ContentFilter,
                    Some(other) => StopReason::Other(other.to_owned()),
                    None => StopReason::Other("incomplete".to_owned()),
                };
                self.complete(event.response.as_deref(), Some(stop), out);
            }
            "response.failed" => {
                let error = event.response.as_deref().and_then(|r| r.error.as_ref());
                return Err(stream_error(error, data));
            }
            "error" => {
                let value: serde_json::Value = parse("error event", data, offset)?;
                // The error's fields are at the top level; some servers nest them in `error`.
                let error = value.get("error").filter(|e| e.is_object()).unwrap_or(&value);
                return Err(stream_error(Some(error), data));
            }
            // response.created, .in_progress, content and summary part boundaries, the `.done`
            // events repeating what the deltas said, and anything added later.
            _ => {}
        }
        Ok(())
    }

    fn on_eof(&mut self, _out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        Err(Error::Truncated {
            expected: "response.completed",
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

fn protocol(offset: u64, message: String) -> Error {
    Error::Protocol { offset, message }
}

impl ResponsesDecoder {
    /// A decoder whose tool calls are checked by `calls`.
    pub(crate) fn new(calls: ToolCallCheck) -> Self {
        ResponsesDecoder {
            calls,
            ..ResponsesDecoder::default()
        }
    }

    /// The position in `items` of output item `index`.
    fn find(&self, index: u64) -> Option<usize> {
        // Content almost always targets the newest item, so search from the end.
        self.items.iter().rposition(|i| i.index == index)
    }

    /// The output index a content event names: its `output_index`, or the item its `item_id`
    /// names when it has none. An `item_id` that belongs to another item than the index is a
    /// stream contradicting itself.
    fn key(&self, event: &WireEvent<'_>, offset: u64) -> Result<u64> {
        let item_id = event.item_id.as_ref().map(Str::as_str).filter(|id| !id.is_empty());
        let by_id = || item_id.and_then(|id| self.items.iter().find(|i| i.id.as_deref() == Some(id)));
        match event.output_index {
            Some(index) => {
                let matches = |pos: usize| item_id.is_none_or(|id| self.items[pos].id.as_deref() == Some(id));
                if self.find(index).is_none_or(matches) {
                    return Ok(index);
                }
                match by_id() {
                    Some(other) => Err(protocol(
                        offset,
                        format!(
                            "an event for output item {index} names item {:?}, which is output item {}",
                            item_id.unwrap_or(""),
                            other.index
                        ),
                    )),
                    None => Ok(index),
                }
            }
            None => Ok(by_id().map_or(0, |i| i.index)),
        }
    }

    /// Adds output item `index` after every item seen so far.
    fn register(&mut self, index: u64, kind: ItemKind, id: Option<&str>) -> usize {
        self.items.push(OutputItem {
            index,
            id: id.filter(|id| !id.is_empty()).map(str::to_owned),
            kind,
            call: None,
            open: None,
            streamed: false,
            complete: false,
        });
        self.order.open(index);
        self.items.len() - 1
    }

    /// Registers a function call and starts its block, announcing its id and name.
    fn register_call(&mut self, index: u64, wire: &Item, out: &mut VecDeque<ProviderEvent>) -> usize {
        let pos = self.register(index, ItemKind::FunctionCall, wire.id.as_deref());
        let name = wire.name.as_deref().unwrap_or("");
        let call_id = wire.call_id.as_deref().unwrap_or("");
        let id = self.calls.id(call_id, OPENAI_ID_PREFIX);
        let shown_name = if name.is_empty() { "" } else { kept_name(name) };
        self.order.start(
            index,
            BlockKind::ToolUse,
            Some(ToolDetails {
                id: id.clone(),
                name: shown_name.to_owned(),
            }),
            out,
        );
        let item = &mut self.items[pos];
        item.call = Some((call_id.to_owned(), name.to_owned()));
        item.open = Some(Open::Tool {
            id,
            name: name.to_owned(),
            arguments: String::new(),
        });
        pos
    }

    /// `response.output_item.added`: the item takes its place in the order. Announcing an item
    /// again is accepted while it says the same; announcing a finished item, or an open one as
    /// something else, is an error.
    fn added(&mut self, index: u64, wire: &Item, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        // Items panto does not offer (built-in tools' calls) carry nothing it keeps.
        let Some(kind) = ItemKind::from_wire(&wire.kind) else {
            return Ok(());
        };
        let Some(pos) = self.find(index) else {
            self.check_id_is_free(index, wire, offset)?;
            if kind == ItemKind::FunctionCall {
                self.register_call(index, wire, out);
            } else {
                self.register(index, kind, wire.id.as_deref());
            }
            return Ok(());
        };
        let item = &self.items[pos];
        if item.complete {
            return Err(protocol(
                offset,
                format!("{} {index} was announced again after it was complete", item.kind.noun()),
            ));
        }
        self.check_same(pos, kind, wire, "announced", offset)
    }

    /// An item newly named must not carry the id of another.
    fn check_id_is_free(&self, index: u64, wire: &Item, offset: u64) -> Result<()> {
        let Some(id) = wire.id.as_deref().filter(|id| !id.is_empty()) else {
            return Ok(());
        };
        match self.items.iter().find(|i| i.id.as_deref() == Some(id)) {
            Some(other) => Err(protocol(
                offset,
                format!("output item {index} has the id {id:?} of output item {}", other.index),
            )),
            None => Ok(()),
        }
    }

    /// What the server says of a known item (`verb`: announced, completed) must agree with what
    /// it said before: its kind, its id, and a function call's `call_id` and name.
    fn check_same(&mut self, pos: usize, kind: ItemKind, wire: &Item, verb: &str, offset: u64) -> Result<()> {
        let item = &mut self.items[pos];
        let index = item.index;
        let contradiction = |what: String| {
            protocol(
                offset,
                format!("output item {index} was {verb} as {what}, contradicting what the stream said of it before"),
            )
        };
        if item.kind != kind {
            return Err(contradiction(format!("a {}, not a {}", kind.noun(), item.kind.noun())));
        }
        let differs = |known: &str, new: Option<&str>| {
            let new = new.unwrap_or("");
            !known.is_empty() && !new.is_empty() && known != new
        };
        match (wire.id.as_deref().filter(|id| !id.is_empty()), &item.id) {
            (Some(new), Some(known)) if new != known => {
                return Err(contradiction(format!("item {new:?}, not {known:?}")));
            }
            (Some(new), None) => item.id = Some(new.to_owned()),
            _ => {}
        }
        if let Some((call_id, name)) = &item.call {
            if differs(call_id, wire.call_id.as_deref()) {
                return Err(contradiction(format!(
                    "call {:?}, not {call_id:?}",
                    wire.call_id.as_deref().unwrap_or("")
                )));
            }
            if differs(name, wire.name.as_deref()) {
                return Err(contradiction(format!(
                    "a call of {:?}, not {name:?}",
                    wire.name.as_deref().unwrap_or("")
                )));
            }
        }
        Ok(())
    }

    /// Text (`summary` is `None`) or reasoning summary text (the summary part) for output item
    /// `index`; an item nobody announced is a message or reasoning item from here on.
    fn content(
        &mut self,
        index: u64,
        summary: Option<u64>,
        s: &str,
        offset: u64,
        out: &mut VecDeque<ProviderEvent>,
    ) -> Result<()> {
        if s.is_empty() {
            return Ok(());
        }
        let pos = match self.find(index) {
            Some(pos) => pos,
            None => {
                let kind = if summary.is_some() {
                    ItemKind::Reasoning
                } else {
                    ItemKind::Message
                };
                self.register(index, kind, None)
            }
        };
        let item = &mut self.items[pos];
        if item.complete {
            return Err(protocol(
                offset,
                format!("content for output item {index} arrived after it was complete"),
            ));
        }
        if item.kind == ItemKind::FunctionCall {
            return Err(protocol(
                offset,
                format!("text for output item {index}, which is a function call"),
            ));
        }
        item.streamed = true;
        self.push_text(pos, summary, s, out);
        Ok(())
    }

    /// Appends text or summary text to item `pos`'s block, starting one if its open block is of
    /// the other kind. A new summary part starts a new paragraph of the same thinking block.
    fn push_text(&mut self, pos: usize, summary: Option<u64>, s: &str, out: &mut VecDeque<ProviderEvent>) {
        if s.is_empty() {
            return;
        }
        let index = self.items[pos].index;
        let continues = matches!(
            (&self.items[pos].open, summary),
            (Some(Open::Text(_)), None) | (Some(Open::Summary { .. }), Some(_))
        );
        if !continues {
            self.close_block(pos, out);
            let (open, kind) = match summary {
                None => (Open::Text(String::new()), BlockKind::Text),
                Some(part) => (
                    Open::Summary {
                        part,
                        text: String::new(),
                    },
                    BlockKind::Thinking,
                ),
            };
            self.items[pos].open = Some(open);
            self.order.start(index, kind, None, out);
        }
        let delta = match &mut self.items[pos].open {
            Some(Open::Text(text)) => {
                text.push_str(s);
                ContentDelta::Text(s.to_owned())
            }
            Some(Open::Summary { part, text }) => {
                let mut piece = String::new();
                if let Some(new_part) = summary.filter(|p| *p != *part) {
                    *part = new_part;
                    if !text.is_empty() {
                        piece.push_str("\n\n");
                    }
                }
                piece.push_str(s);
                text.push_str(&piece);
                ContentDelta::Thinking(piece)
            }
            _ => return,
        };
        self.order.delta(index, delta, out);
    }

    /// A fragment of function call `index`'s arguments.
    fn arguments(&mut self, index: u64, s: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if s.is_empty() {
            return Ok(());
        }
        let item = self.find(index).map(|pos| &mut self.items[pos]);
        let Some(Open::Tool { arguments, .. }) = item.and_then(|i| i.open.as_mut()) else {
            return Err(protocol(
                offset,
                format!("arguments for output item {index}, which is not an open function call"),
            ));
        };
        arguments.push_str(s);
        self.order.delta(index, ContentDelta::ToolInput(s.to_owned()), out);
        Ok(())
    }

    /// `response.output_item.done`: closes the item's block, and emits what only the finished
    /// item carries (the encrypted reasoning; text or arguments a server sent without deltas).
    fn item_done(&mut self, index: u64, wire: &Item, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        let known = self.find(index);
        let Some(kind) = ItemKind::from_wire(&wire.kind) else {
            if let Some(pos) = known {
                return Err(protocol(
                    offset,
                    format!(
                        "output item {index} was completed as a {:?} item, but it is a {}",
                        wire.kind,
                        self.items[pos].kind.noun()
                    ),
                ));
            }
            // Items panto does not offer (built-in tools' calls) carry nothing it keeps.
            return Ok(());
        };
        let pos = match known {
            Some(pos) if self.items[pos].complete => {
                return Err(protocol(
                    offset,
                    format!("{} {index} was completed twice", self.items[pos].kind.noun()),
                ));
            }
            Some(pos) => {
                self.check_same(pos, kind, wire, "completed", offset)?;
                pos
            }
            None => {
                self.check_id_is_free(index, wire, offset)?;
                if kind == ItemKind::FunctionCall {
                    self.register_call(index, wire, out)
                } else {
                    self.register(index, kind, wire.id.as_deref())
                }
            }
        };
        let streamed = self.items[pos].streamed;
        match kind {
            ItemKind::Message => {
                if !streamed {
                    let text: String = wire.content.iter().map(TextPart::text).collect();
                    self.push_text(pos, None, &text, out);
                }
                self.close_block(pos, out);
            }
            ItemKind::Reasoning => {
                if !streamed {
                    for (part, summary) in wire.summary.iter().enumerate() {
                        self.push_text(pos, Some(part as u64), summary.text(), out);
                    }
                }
                self.close_block(pos, out);
                self.reasoning(index, wire, out);
            }
            ItemKind::FunctionCall => {
                let mut whole = None;
                if let Some(Open::Tool { name, arguments, .. }) = &mut self.items[pos].open {
                    if name.is_empty() {
                        name.push_str(wire.name.as_deref().unwrap_or(""));
                    }
                    let sent = wire.arguments.as_deref().unwrap_or("");
                    if arguments.is_empty() && !sent.is_empty() {
                        arguments.push_str(sent);
                        whole = Some(sent);
                    }
                }
                if let Some(sent) = whole {
                    self.order.delta(index, ContentDelta::ToolInput(sent.to_owned()), out);
                }
                self.close_block(pos, out);
            }
        }
        self.items[pos].complete = true;
        self.order.finish(index, out);
        Ok(())
    }

    /// Keeps a finished reasoning item's encrypted reasoning as a block of its own. Without
    /// `encrypted_content` (the server ignored the include) there is nothing a later request
    /// could send back, so nothing is kept.
    fn reasoning(&mut self, index: u64, item: &Item, out: &mut VecDeque<ProviderEvent>) {
        let (Some(id), Some(encrypted)) = (item.id.as_deref(), item.encrypted_content.as_deref()) else {
            return;
        };
        if id.is_empty() || encrypted.is_empty() {
            return;
        }
        let block = ContentBlock::Reasoning {
            id: id.to_owned(),
            summary: item.summary.iter().map(|p| p.text().to_owned()).collect(),
            encrypted_content: encrypted.to_owned(),
        };
        self.order.start(index, BlockKind::Reasoning, None, out);
        self.order.complete(index, block, out);
    }

    /// Completes item `pos`'s open block, if any.
    fn close_block(&mut self, pos: usize, out: &mut VecDeque<ProviderEvent>) {
        let item = &mut self.items[pos];
        let Some(open) = item.open.take() else {
            return;
        };
        let block = match open {
            Open::Text(text) => ContentBlock::Text { text },
            Open::Summary { text, .. } => ContentBlock::Thinking {
                thinking: text,
                signature: None,
            },
            Open::Tool { id, name, arguments } => {
                let source = if arguments.trim().is_empty() { "{}" } else { &arguments };
                // Arguments that are not a JSON object are kept as a call that does not run,
                // never as a stream error: the model is told why.
                self.calls.finish(id, &name, source)
            }
        };
        self.order.complete(item.index, block, out);
    }

    /// Closes every item still open, in order, and produces `MessageComplete`.
    fn complete(
        &mut self,
        response: Option<&WireResponse>,
        stop: Option<StopReason>,
        out: &mut VecDeque<ProviderEvent>,
    ) {
        for pos in 0..self.items.len() {
            if !self.items[pos].complete {
                self.close_block(pos, out);
                self.items[pos].complete = true;
                self.order.finish(self.items[pos].index, out);
            }
        }
        let usage = response.and_then(|r| r.usage.as_ref()).map(WireUsage::to_usage);
        let blocks = self.order.take_blocks();
        out.push_back(ProviderEvent::message_complete(
            blocks,
            usage,
            stop,
            self.calls.take_rejected(),
        ));
        self.done = true;
    }
}
