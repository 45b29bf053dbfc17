//! Decoding a Responses API stream into [`ProviderEvent`]s.
//!
//! The stream announces output items (`response.output_item.added`), streams their content
//! (`response.output_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.function_call_arguments.delta`), completes each whole (`response.output_item.done`)
//! and ends with `response.completed`, `response.incomplete` or `response.failed`. Items arrive
//! one after another, so one block is open at a time. A reasoning item becomes a thinking block
//! (its summary, as it streams) followed by a [`ContentBlock::Reasoning`] holding the encrypted
//! reasoning, which arrives whole when the item is done. Events panto has no use for are
//! skipped.

use std::collections::VecDeque;

use serde::Deserialize;

use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::http::is_context_overflow;
use crate::provider::sse::json::{or_empty, parse, Str};
use crate::provider::validate::{kept_name, ToolCallCheck, OPENAI_ID_PREFIX};
use crate::provider::{Decoder, ProviderEvent};

/// Decodes one Responses stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// Completed blocks; the open block, if any, has index `blocks.len()`.
    blocks: Vec<ContentBlock>,
    /// The block receiving content.
    open: Option<Open>,
    /// Output indices of items whose block was closed.
    closed_items: Vec<u64>,
    /// Whether `MessageComplete` has been produced.
    done: bool,
    /// The tool calls' ids and verdicts.
    calls: ToolCallCheck,
}

/// The block being assembled, and the output item it belongs to.
#[derive(Debug)]
enum Open {
    Text {
        item: u64,
        text: String,
    },
    /// A reasoning item's summary, shown as thinking; `part` is the summary part streaming.
    Summary {
        item: u64,
        part: u64,
        text: String,
    },
    Tool {
        item: u64,
        /// The id the call keeps: its `call_id`, or one minted in its place.
        id: String,
        /// The name as the server sent it; checked when the call completes.
        name: String,
        arguments: String,
    },
}

impl Open {
    fn item(&self) -> u64 {
        match self {
            Open::Text { item, .. } | Open::Summary { item, .. } | Open::Tool { item, .. } => *item,
        }
    }
}

/// The fields of a streaming event panto reads; which are present depends on `type`.
#[derive(Debug, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    delta: Option<Str<'a>>,
    output_index: Option<u64>,
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
        let index = event.output_index.unwrap_or(0);
        match event.kind.as_str() {
            "response.output_item.added" => {
                if let Some(item) = event.item.as_ref().filter(|i| i.kind == "function_call") {
                    self.open_tool(index, item, offset, out)?;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                self.push_text(index, None, or_empty(&event.delta), offset, out)?;
            }
            "response.reasoning_summary_text.delta" => {
                let part = event.summary_index.unwrap_or(0);
                self.push_text(index, Some(part), or_empty(&event.delta), offset, out)?;
            }
            "response.function_call_arguments.delta" => {
                self.arguments(index, or_empty(&event.delta), offset, out)?;
            }
            "response.output_item.done" => {
                if let Some(item) = &event.item {
                    self.item_done(index, item, offset, out)?;
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

impl ResponsesDecoder {
    /// A decoder whose tool calls are checked by `calls`.
    pub(crate) fn new(calls: ToolCallCheck) -> Self {
        ResponsesDecoder {
            calls,
            ..ResponsesDecoder::default()
        }
    }

    /// Content for an item whose block was closed is a stream that went back on itself.
    fn check_not_closed(&self, item: u64, offset: u64) -> Result<()> {
        if self.closed_items.contains(&item) && self.open.as_ref().is_none_or(|o| o.item() != item) {
            return Err(Error::Protocol {
                offset,
                message: format!("content for output item {item} arrived after it was complete"),
            });
        }
        Ok(())
    }

    /// Appends text (`summary` is `None`) or reasoning summary text (the summary part) to the
    /// block of output item `item`, opening it if another block is open. A new summary part
    /// starts a new paragraph of the same thinking block.
    fn push_text(
        &mut self,
        item: u64,
        summary: Option<u64>,
        s: &str,
        offset: u64,
        out: &mut VecDeque<ProviderEvent>,
    ) -> Result<()> {
        if s.is_empty() {
            return Ok(());
        }
        self.check_not_closed(item, offset)?;
        let index = self.blocks.len();
        let continues = match (&mut self.open, summary) {
            (Some(Open::Text { item: i, .. }), None) => *i == item,
            (Some(Open::Summary { item: i, .. }), Some(_)) => *i == item,
            _ => false,
        };
        if !continues {
            self.close_open(out);
            let (open, kind) = match summary {
                None => (
                    Open::Text {
                        item,
                        text: String::new(),
                    },
                    BlockKind::Text,
                ),
                Some(part) => (
                    Open::Summary {
                        item,
                        part,
                        text: String::new(),
                    },
                    BlockKind::Thinking,
                ),
            };
            self.open = Some(open);
            out.push_back(ProviderEvent::BlockStart {
                index: self.blocks.len(),
                kind,
                tool: None,
            });
        }
        let delta = match &mut self.open {
            Some(Open::Text { text, .. }) => {
                text.push_str(s);
                ContentDelta::Text(s.to_owned())
            }
            Some(Open::Summary { part, text, .. }) => {
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
            _ => return Ok(()),
        };
        out.push_back(ProviderEvent::Delta { index, delta });
        Ok(())
    }

    /// Opens the block of a function call item, announcing its id and name.
    fn open_tool(&mut self, item: u64, wire: &Item, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if matches!(&self.open, Some(Open::Tool { item: i, .. }) if *i == item) {
            return Ok(());
        }
        if self.closed_items.contains(&item) {
            return Err(Error::Protocol {
                offset,
                message: format!("function call {item} was announced again after it was complete"),
            });
        }
        self.close_open(out);
        let name = wire.name.as_deref().unwrap_or("");
        let id = self.calls.id(wire.call_id.as_deref().unwrap_or(""), OPENAI_ID_PREFIX);
        let shown_name = if name.is_empty() { "" } else { kept_name(name) };
        out.push_back(ProviderEvent::BlockStart {
            index: self.blocks.len(),
            kind: BlockKind::ToolUse,
            tool: Some(ToolDetails {
                id: id.clone(),
                name: shown_name.to_owned(),
            }),
        });
        self.open = Some(Open::Tool {
            item,
            id,
            name: name.to_owned(),
            arguments: String::new(),
        });
        Ok(())
    }

    /// Appends a fragment of the open function call's arguments.
    fn arguments(&mut self, item: u64, s: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        if s.is_empty() {
            return Ok(());
        }
        let index = self.blocks.len();
        match &mut self.open {
            Some(Open::Tool { item: i, arguments, .. }) if *i == item => {
                arguments.push_str(s);
                out.push_back(ProviderEvent::Delta {
                    index,
                    delta: ContentDelta::ToolInput(s.to_owned()),
                });
                Ok(())
            }
            _ => Err(Error::Protocol {
                offset,
                message: format!("arguments for output item {item}, which is not an open function call"),
            }),
        }
    }

    /// An item is complete: closes its block, and emits what only the finished item carries (the
    /// encrypted reasoning; text or arguments a server sent without deltas).
    fn item_done(&mut self, index: u64, item: &Item, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        match item.kind.as_str() {
            "message" => {
                let streamed = matches!(&self.open, Some(Open::Text { item: i, .. }) if *i == index)
                    || self.closed_items.contains(&index);
                if !streamed {
                    let text: String = item.content.iter().map(TextPart::text).collect();
                    self.push_text(index, None, &text, offset, out)?;
                }
                self.close_item(index, out);
            }
            "reasoning" => {
                let streamed = matches!(&self.open, Some(Open::Summary { item: i, .. }) if *i == index)
                    || self.closed_items.contains(&index);
                if !streamed {
                    for (part, summary) in item.summary.iter().enumerate() {
                        self.push_text(index, Some(part as u64), summary.text(), offset, out)?;
                    }
                }
                self.close_item(index, out);
                self.reasoning(item, out);
            }
            "function_call" => {
                self.open_tool(index, item, offset, out)?;
                if let Some(Open::Tool { arguments, name, .. }) = &mut self.open {
                    if name.is_empty() {
                        name.push_str(item.name.as_deref().unwrap_or(""));
                    }
                    let whole = item.arguments.as_deref().unwrap_or("");
                    if arguments.is_empty() && !whole.is_empty() {
                        self.arguments(index, whole, offset, out)?;
                    }
                }
                self.close_item(index, out);
            }
            // Items panto does not offer (built-in tools' calls) carry nothing it keeps.
            _ => {}
        }
        Ok(())
    }

    /// Keeps a finished reasoning item's encrypted reasoning as a block of its own. Without
    /// `encrypted_content` (the server ignored the include) there is nothing a later request
    /// could send back, so nothing is kept.
    fn reasoning(&mut self, item: &Item, out: &mut VecDeque<ProviderEvent>) {
        let (Some(id), Some(encrypted)) = (item.id.as_deref(), item.encrypted_content.as_deref()) else {
            return;
        };
        if id.is_empty() || encrypted.is_empty() {
            return;
        }
        let index = self.blocks.len();
        let block = ContentBlock::Reasoning {
            id: id.to_owned(),
            summary: item.summary.iter().map(|p| p.text().to_owned()).collect(),
            encrypted_content: encrypted.to_owned(),
        };
        out.push_back(ProviderEvent::BlockStart {
            index,
            kind: BlockKind::Reasoning,
            tool: None,
        });
        self.blocks.push(block.clone());
        out.push_back(ProviderEvent::BlockComplete { index, block });
    }

    /// Closes the open block if it belongs to output item `item`, and remembers the item as done.
    fn close_item(&mut self, item: u64, out: &mut VecDeque<ProviderEvent>) {
        if self.open.as_ref().is_some_and(|o| o.item() == item) {
            self.close_open(out);
        }
        if !self.closed_items.contains(&item) {
            self.closed_items.push(item);
        }
    }

    /// Completes the open block, if any, and announces it.
    fn close_open(&mut self, out: &mut VecDeque<ProviderEvent>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let index = self.blocks.len();
        if !self.closed_items.contains(&open.item()) {
            self.closed_items.push(open.item());
        }
        let block = match open {
            Open::Text { text, .. } => ContentBlock::Text { text },
            Open::Summary { text, .. } => ContentBlock::Thinking {
                thinking: text,
                signature: None,
            },
            Open::Tool {
                id, name, arguments, ..
            } => {
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
    fn complete(
        &mut self,
        response: Option<&WireResponse>,
        stop: Option<StopReason>,
        out: &mut VecDeque<ProviderEvent>,
    ) {
        self.close_open(out);
        let usage = response.and_then(|r| r.usage.as_ref()).map(WireUsage::to_usage);
        let blocks = std::mem::take(&mut self.blocks);
        out.push_back(ProviderEvent::message_complete(
            blocks,
            usage,
            stop,
            self.calls.take_rejected(),
        ));
        self.done = true;
    }
}
