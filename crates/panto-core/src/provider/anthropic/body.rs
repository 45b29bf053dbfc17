//! A Messages request body in its wire form, borrowed from the conversation and serialised
//! straight to bytes.
//!
//! Why not a `serde_json::Value`: building one copied every string of the conversation and the
//! tools' schemas into a tree of maps, only to write it out and free it, for every request (a
//! cost a fleet of agents feels: docs/performance.md, "Requests built from typed wire
//! structs"). These types
//! hold references; the only thing written into them after they are built is where the cache
//! breakpoints go ([`super::cache`]).

use std::borrow::Cow;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use crate::config::CacheTtl;

/// The whole request.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<Block<'a>>,
    pub messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// `{"type": "enabled", "budget_tokens": …}`.
#[derive(Debug)]
pub(super) struct Thinking {
    pub budget_tokens: u32,
}

impl Serialize for Thinking {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "enabled")?;
        map.serialize_entry("budget_tokens", &self.budget_tokens)?;
        map.end()
    }
}

/// `{"type": "any"}`: the model must call one of the tools.
#[derive(Debug)]
pub(super) struct ToolChoice;

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("type", "any")?;
        map.end()
    }
}

/// A tool definition.
#[derive(Debug, Serialize)]
pub(super) struct WireTool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// One message: a role and its blocks.
#[derive(Debug, Serialize)]
pub(super) struct WireMessage<'a> {
    pub role: &'static str,
    pub content: Vec<Block<'a>>,
}

/// A content block and whether a cache breakpoint is on it.
#[derive(Debug)]
pub(super) struct Block<'a> {
    pub kind: BlockKind<'a>,
    pub cache_control: Option<CacheControl>,
}

impl<'a> Block<'a> {
    pub(super) fn new(kind: BlockKind<'a>) -> Self {
        Block {
            kind,
            cache_control: None,
        }
    }
}

/// What a content block holds, each kind as the API names it.
#[derive(Debug)]
pub(super) enum BlockKind<'a> {
    /// Owned only when panto makes the text up (a compaction summary's framing).
    Text(Cow<'a, str>),
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<ResultPart<'a>>,
        is_error: bool,
    },
    Image(Image<'a>),
}

/// A part of a tool result.
#[derive(Debug)]
pub(super) enum ResultPart<'a> {
    Text(&'a str),
    Image(Image<'a>),
}

/// A base64 image.
#[derive(Debug, Clone, Copy)]
pub(super) struct Image<'a> {
    pub media_type: &'a str,
    pub data: &'a str,
}

/// `{"type": "ephemeral"}`, with `"ttl": "1h"` for the hour-long cache.
#[derive(Debug, Clone, Copy)]
pub(super) struct CacheControl(pub CacheTtl);

impl Serialize for CacheControl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hour = self.0 == CacheTtl::OneHour;
        let mut map = serializer.serialize_map(Some(1 + usize::from(hour)))?;
        map.serialize_entry("type", "ephemeral")?;
        if hour {
            map.serialize_entry("ttl", "1h")?;
        }
        map.end()
    }
}

impl Serialize for Block<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.kind {
            BlockKind::Text(text) => text_entries(&mut map, text)?,
            BlockKind::Thinking { thinking, signature } => {
                map.serialize_entry("type", "thinking")?;
                map.serialize_entry("thinking", thinking)?;
                map.serialize_entry("signature", signature)?;
            }
            BlockKind::RedactedThinking { data } => {
                map.serialize_entry("type", "redacted_thinking")?;
                map.serialize_entry("data", data)?;
            }
            BlockKind::ToolUse { id, name, input } => {
                map.serialize_entry("type", "tool_use")?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("name", name)?;
                map.serialize_entry("input", input)?;
            }
            BlockKind::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                map.serialize_entry("type", "tool_result")?;
                map.serialize_entry("tool_use_id", tool_use_id)?;
                // `content` is optional on the wire; an empty text part would be rejected, so the
                // encoder leaves those out and, with nothing left, the field.
                if !content.is_empty() {
                    map.serialize_entry("content", content)?;
                }
                if *is_error {
                    map.serialize_entry("is_error", &true)?;
                }
            }
            BlockKind::Image(image) => image_entries(&mut map, image)?,
        }
        if let Some(cache) = &self.cache_control {
            map.serialize_entry("cache_control", cache)?;
        }
        map.end()
    }
}

impl Serialize for ResultPart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        match self {
            ResultPart::Text(text) => text_entries(&mut map, text)?,
            ResultPart::Image(image) => image_entries(&mut map, image)?,
        }
        map.end()
    }
}

fn text_entries<M: SerializeMap>(map: &mut M, text: &str) -> Result<(), M::Error> {
    map.serialize_entry("type", "text")?;
    map.serialize_entry("text", text)
}

fn image_entries<M: SerializeMap>(map: &mut M, image: &Image<'_>) -> Result<(), M::Error> {
    /// `{"type": "base64", "media_type": …, "data": …}`.
    struct Source<'a>(&'a Image<'a>);
    impl Serialize for Source<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(3))?;
            map.serialize_entry("type", "base64")?;
            map.serialize_entry("media_type", self.0.media_type)?;
            map.serialize_entry("data", self.0.data)?;
            map.end()
        }
    }
    map.serialize_entry("type", "image")?;
    map.serialize_entry("source", &Source(image))
}
