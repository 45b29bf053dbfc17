//! [`Script`]: one reply scripted once and sent in the wire form of whichever API style a test
//! runs, for the tests that check the same behaviour on every style.

use panto_core::{ApiStyle, Usage};

use super::{AnthropicScript, OpenAiScript, ResponsesScript};
use crate::Reply;

/// A model reply in the wire form of `style`: text, tool calls and usage, said once for every API
/// style. What only one API has (thinking signatures, encrypted reasoning, finish reasons) stays
/// on that API's own builder.
///
/// ```
/// use panto_core::ApiStyle;
/// use panto_testkit::script::Script;
///
/// for style in [ApiStyle::AnthropicMessages, ApiStyle::OpenAiChat, ApiStyle::OpenAiResponses] {
///     let body = Script::new(style).text("Reading it.").tool_call("call_1", "read", r#"{"path":"a"}"#).build();
///     assert!(String::from_utf8(body).unwrap().contains("call_1"));
/// }
/// ```
#[derive(Debug, Clone)]
pub enum Script {
    /// Anthropic Messages.
    Anthropic(AnthropicScript),
    /// OpenAI Chat Completions.
    OpenAi(OpenAiScript),
    /// OpenAI Responses.
    Responses(ResponsesScript),
}

impl Script {
    /// An empty reply in `style`'s wire form.
    pub fn new(style: ApiStyle) -> Self {
        match style {
            ApiStyle::AnthropicMessages => Script::Anthropic(AnthropicScript::new()),
            ApiStyle::OpenAiChat => Script::OpenAi(OpenAiScript::new()),
            ApiStyle::OpenAiResponses => Script::Responses(ResponsesScript::new()),
        }
    }

    /// The reply's token usage.
    pub fn usage(self, usage: Usage) -> Self {
        match self {
            Script::Anthropic(s) => Script::Anthropic(s.usage(usage)),
            Script::OpenAi(s) => Script::OpenAi(s.usage(usage)),
            Script::Responses(s) => Script::Responses(s.usage(usage)),
        }
    }

    /// A text block, streamed in word-sized deltas.
    pub fn text(self, text: &str) -> Self {
        match self {
            Script::Anthropic(s) => Script::Anthropic(s.text(text)),
            Script::OpenAi(s) => Script::OpenAi(s.text(text)),
            Script::Responses(s) => Script::Responses(s.text(text)),
        }
    }

    /// A tool call: its id, the tool's name and its input as JSON text (streamed in fragments).
    pub fn tool_call(self, id: &str, name: &str, input_json: &str) -> Self {
        match self {
            Script::Anthropic(s) => Script::Anthropic(s.tool_use(id, name, input_json)),
            Script::OpenAi(s) => Script::OpenAi(s.tool_call(id, name, input_json)),
            Script::Responses(s) => Script::Responses(s.tool_call(id, name, input_json)),
        }
    }

    /// The response body's bytes.
    pub fn build(&self) -> Vec<u8> {
        match self {
            Script::Anthropic(s) => s.build(),
            Script::OpenAi(s) => s.build(),
            Script::Responses(s) => s.build(),
        }
    }

    /// The body as a [`Reply`] for the mock server.
    pub fn reply(&self) -> Reply {
        match self {
            Script::Anthropic(s) => s.reply(),
            Script::OpenAi(s) => s.reply(),
            Script::Responses(s) => s.reply(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_style_gets_its_own_builders_bytes() {
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 3,
            ..Usage::default()
        };
        let calls = |s: Script| {
            s.usage(usage)
                .text("Let me look.")
                .tool_call("c1", "ls", r#"{"path":"."}"#)
                .build()
        };
        assert_eq!(
            calls(Script::new(ApiStyle::AnthropicMessages)),
            AnthropicScript::new()
                .usage(usage)
                .text("Let me look.")
                .tool_use("c1", "ls", r#"{"path":"."}"#)
                .build()
        );
        assert_eq!(
            calls(Script::new(ApiStyle::OpenAiChat)),
            OpenAiScript::new()
                .usage(usage)
                .text("Let me look.")
                .tool_call("c1", "ls", r#"{"path":"."}"#)
                .build()
        );
        assert_eq!(
            calls(Script::new(ApiStyle::OpenAiResponses)),
            ResponsesScript::new()
                .usage(usage)
                .text("Let me look.")
                .tool_call("c1", "ls", r#"{"path":"."}"#)
                .build()
        );
    }
}
