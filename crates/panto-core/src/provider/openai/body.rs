//! A Chat Completions request body in its wire form, borrowing what it can from the
//! conversation and serialised straight to bytes, as the Messages encoder does
//! (`anthropic/body.rs` says why). Chat Completions joins texts into one string per message,
//! so those are owned; the tools' schemas, the ids and the names are borrowed.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

/// The whole request.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    pub stream: bool,
    /// Without `include_usage` the stream carries no token counts at all.
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    pub messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
}

/// `{"include_usage": true}`.
#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub include_usage: bool,
}

/// `{"type": "function", "function": {…}}`.
#[derive(Debug, Serialize)]
pub(super) struct WireTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: Function<'a>,
}

/// A tool's name, description and input schema.
#[derive(Debug, Serialize)]
pub(super) struct Function<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
}

/// One message, tagged by its role.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum WireMessage<'a> {
    System {
        content: String,
    },
    User {
        content: UserContent<'a>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
    Assistant {
        /// `null` when the message holds only tool calls.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call<'a>>,
    },
}

/// A user message's content: plain text as a string (the form every compatible server
/// accepts), parts only when there is an image.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum UserContent<'a> {
    Text(String),
    Parts(Vec<Part<'a>>),
}

/// A content part.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

/// An image as a data URL.
#[derive(Debug, Serialize)]
pub(super) struct ImageUrl {
    pub url: String,
}

/// A tool call the assistant made.
#[derive(Debug, Serialize)]
pub(super) struct Call<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: CallFunction<'a>,
}

/// The called tool and its arguments, as a JSON string.
#[derive(Debug, Serialize)]
pub(super) struct CallFunction<'a> {
    pub name: &'a str,
    pub arguments: String,
}
