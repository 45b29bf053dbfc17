//! Anthropic Messages streams, shaped like the recordings in `fixtures/wire/anthropic/`.

use panto_core::Usage;

use super::{json_fragments, quote, text_deltas, write_event};
use crate::reply::Reply;

#[derive(Debug, Clone)]
enum Block {
    Text(Vec<String>),
    Thinking { deltas: Vec<String>, signature: String },
    RedactedThinking(String),
    ToolUse { id: String, name: String, input: String },
}

/// A scripted Anthropic Messages stream.
///
/// `build` writes what the real API sends: `message_start` (with usage), a `ping` after the first
/// block starts, for each block `content_block_start`, its deltas and `content_block_stop`, then
/// `message_delta` (stop reason and usage) and `message_stop`. Text is cut into word-sized
/// `text_delta`s and tool input into short `input_json_delta` fragments that split keys, as the
/// API does.
///
/// ```
/// use panto_testkit::script::AnthropicScript;
///
/// let bytes = AnthropicScript::new()
///     .text("Let me look.")
///     .tool_use("toolu_01", "read_file", r#"{"path":"a.txt"}"#)
///     .build();
/// assert!(String::from_utf8(bytes).unwrap().contains(r#""stop_reason":"tool_use""#));
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicScript {
    id: String,
    model: String,
    usage: Option<Usage>,
    blocks: Vec<Block>,
    stop_reason: Option<String>,
    error: Option<(String, String)>,
}

impl Default for AnthropicScript {
    fn default() -> Self {
        AnthropicScript::new()
    }
}

impl AnthropicScript {
    /// An empty message from `claude-sonnet-4-5-20250929` with id `msg_01MockStream…`.
    pub fn new() -> Self {
        AnthropicScript {
            id: "msg_01MockStreamXv3DqLr7TtYk2pBn".to_owned(),
            model: "claude-sonnet-4-5-20250929".to_owned(),
            usage: None,
            blocks: Vec::new(),
            stop_reason: None,
            error: None,
        }
    }

    /// The message id.
    pub fn id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }

    /// The model name reported in `message_start`.
    pub fn model(mut self, model: &str) -> Self {
        self.model = model.to_owned();
        self
    }

    /// The usage reported: `input_tokens`, `cache_read_input_tokens` and
    /// `cache_creation_input_tokens` in `message_start` and `message_delta`, `output_tokens` in
    /// `message_delta` (`message_start` carries 1, as the API reports before generating). Without
    /// this, input is 12 and output is the number of deltas.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// A text block, cut into word-sized deltas.
    pub fn text(self, text: &str) -> Self {
        self.text_deltas(text_deltas(text))
    }

    /// A text block with exactly these deltas.
    pub fn text_deltas<I, S>(mut self, deltas: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.blocks
            .push(Block::Text(deltas.into_iter().map(Into::into).collect()));
        self
    }

    /// A thinking block: word-sized `thinking_delta`s, then one `signature_delta`.
    pub fn thinking(mut self, thinking: &str, signature: &str) -> Self {
        self.blocks.push(Block::Thinking {
            deltas: text_deltas(thinking),
            signature: signature.to_owned(),
        });
        self
    }

    /// A `redacted_thinking` block, which arrives whole in `content_block_start` with no deltas.
    pub fn redacted_thinking(mut self, data: &str) -> Self {
        self.blocks.push(Block::RedactedThinking(data.to_owned()));
        self
    }

    /// A `tool_use` block whose input arrives as `input_json_delta` fragments of `input_json`
    /// (sent as given, so a test may also send invalid JSON).
    pub fn tool_use(mut self, id: &str, name: &str, input_json: &str) -> Self {
        self.blocks.push(Block::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input: input_json.to_owned(),
        });
        self
    }

    /// The stop reason in `message_delta`. Default: `tool_use` when there is a tool use, else
    /// `end_turn`.
    pub fn stop_reason(mut self, reason: &str) -> Self {
        self.stop_reason = Some(reason.to_owned());
        self
    }

    /// Ends the stream with `event: error` (this `error.type` and message) right after the last
    /// block's deltas, before its `content_block_stop`; no `message_delta` or `message_stop`
    /// follows. With no blocks the error follows `message_start` directly.
    pub fn error(mut self, error_type: &str, message: &str) -> Self {
        self.error = Some((error_type.to_owned(), message.to_owned()));
        self
    }

    /// The response body.
    pub fn build(&self) -> Vec<u8> {
        let usage = self.usage.unwrap_or_else(|| Usage {
            input_tokens: 12,
            output_tokens: self.delta_count().max(1) as u64,
            ..Usage::default()
        });
        let mut out = String::new();
        write_event(
            &mut out,
            "message_start",
            &format!(
                r#"{{"type":"message_start","message":{{"id":{},"type":"message","role":"assistant","model":{},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":1,"service_tier":"standard"}}}}}}"#,
                quote(&self.id),
                quote(&self.model),
                usage.input_tokens,
                usage.cache_write_tokens,
                usage.cache_read_tokens
            ),
        );
        if self.blocks.is_empty() {
            write_event(&mut out, "ping", r#"{"type": "ping"}"#);
        }
        let last = self.blocks.len().saturating_sub(1);
        for (index, block) in self.blocks.iter().enumerate() {
            self.write_block(&mut out, index, block);
            if index == 0 {
                write_event(&mut out, "ping", r#"{"type": "ping"}"#);
            }
            self.write_deltas(&mut out, index, block);
            if index == last && self.error.is_some() {
                break;
            }
            write_event(
                &mut out,
                "content_block_stop",
                &format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
            );
        }
        if let Some((error_type, message)) = &self.error {
            write_event(
                &mut out,
                "error",
                &format!(
                    r#"{{"type":"error","error":{{"type":{},"message":{}}}}}"#,
                    quote(error_type),
                    quote(message)
                ),
            );
            return out.into_bytes();
        }
        let has_tool_use = self.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        let stop = self
            .stop_reason
            .clone()
            .unwrap_or_else(|| if has_tool_use { "tool_use" } else { "end_turn" }.to_owned());
        write_event(
            &mut out,
            "message_delta",
            &format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":{},"stop_sequence":null}},"usage":{{"input_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":{}}}}}"#,
                quote(&stop),
                usage.input_tokens,
                usage.cache_write_tokens,
                usage.cache_read_tokens,
                usage.output_tokens
            ),
        );
        write_event(&mut out, "message_stop", r#"{"type":"message_stop"}"#);
        out.into_bytes()
    }

    /// [`AnthropicScript::build`] as an SSE [`Reply`].
    pub fn reply(&self) -> Reply {
        Reply::sse(self.build())
    }

    fn delta_count(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| match b {
                Block::Text(d) => d.len(),
                Block::Thinking { deltas, .. } => deltas.len() + 1,
                Block::RedactedThinking(_) => 0,
                Block::ToolUse { input, .. } => json_fragments(input).len() + 1,
            })
            .sum()
    }

    fn write_block(&self, out: &mut String, index: usize, block: &Block) {
        let content_block = match block {
            Block::Text(_) => r#"{"type":"text","text":""}"#.to_owned(),
            Block::Thinking { .. } => r#"{"type":"thinking","thinking":"","signature":""}"#.to_owned(),
            Block::RedactedThinking(data) => format!(r#"{{"type":"redacted_thinking","data":{}}}"#, quote(data)),
            Block::ToolUse { id, name, .. } => format!(
                r#"{{"type":"tool_use","id":{},"name":{},"input":{{}}}}"#,
                quote(id),
                quote(name)
            ),
        };
        write_event(
            out,
            "content_block_start",
            &format!(r#"{{"type":"content_block_start","index":{index},"content_block":{content_block}}}"#),
        );
    }

    fn write_deltas(&self, out: &mut String, index: usize, block: &Block) {
        let mut delta = |body: String| {
            write_event(
                out,
                "content_block_delta",
                &format!(r#"{{"type":"content_block_delta","index":{index},"delta":{body}}}"#),
            );
        };
        match block {
            Block::Text(deltas) => {
                for d in deltas {
                    delta(format!(r#"{{"type":"text_delta","text":{}}}"#, quote(d)));
                }
            }
            Block::Thinking { deltas, signature } => {
                for d in deltas {
                    delta(format!(r#"{{"type":"thinking_delta","thinking":{}}}"#, quote(d)));
                }
                delta(format!(
                    r#"{{"type":"signature_delta","signature":{}}}"#,
                    quote(signature)
                ));
            }
            Block::RedactedThinking(_) => {}
            Block::ToolUse { input, .. } => {
                // The API's first input fragment is always empty.
                for fragment in std::iter::once(String::new()).chain(json_fragments(input)) {
                    delta(format!(
                        r#"{{"type":"input_json_delta","partial_json":{}}}"#,
                        quote(&fragment)
                    ));
                }
            }
        }
    }
}
