//! A Responses request body in its wire form, borrowing what it can from the conversation and
//! serialised straight to bytes, as the Messages encoder does (`anthropic/body.rs` says why).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

/// The whole request.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    pub stream: bool,
    /// Always false: nothing is kept on the server, the session is the one record.
    pub store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub input: Vec<Item<'a>>,
    pub max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
}

/// `{"effort": …, "summary": "auto"}`.
#[derive(Debug, Serialize)]
pub(super) struct Reasoning {
    pub effort: &'static str,
    pub summary: &'static str,
}

/// A function tool.
#[derive(Debug, Serialize)]
pub(super) struct WireTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
    /// `strict` defaults to true on this API, which refuses most hand-written schemas (every
    /// property required, no additional properties); panto's tools are not written for it.
    pub strict: bool,
}

/// One input item, tagged by its type.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item<'a> {
    Message {
        role: &'static str,
        content: MessageContent<'a>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Output<'a>,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<Summary<'a>>,
        encrypted_content: &'a str,
    },
}

/// A message's content: the assistant's text as a string, the user's as parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum MessageContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

/// A function call's output: a string when it is text only, else parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Output<'a> {
    Text(String),
    Parts(Vec<Part<'a>>),
}

/// An input part.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: String, detail: &'static str },
}

/// `{"type": "summary_text", "text": …}`.
#[derive(Debug, Serialize)]
pub(super) struct Summary<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: &'a str,
}
