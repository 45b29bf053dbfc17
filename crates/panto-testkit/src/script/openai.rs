//! OpenAI Chat Completions streams, shaped like the recordings in `fixtures/wire/openai/`.

use panto_core::Usage;

use super::{json_fragments, quote, text_deltas};
use crate::reply::Reply;

#[derive(Debug, Clone)]
enum Part {
    Text(Vec<String>),
    Reasoning(Vec<String>),
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
}

/// A scripted Chat Completions stream (`chat.completion.chunk` objects).
///
/// `build` writes what OpenAI sends: a first chunk with the role, content and tool-call deltas,
/// a chunk with an empty delta and the `finish_reason`, a usage chunk whose `choices` is `[]`,
/// and `data: [DONE]`. A tool call starts with a chunk carrying its `index`, `id`, `type` and
/// `function.name` with empty `arguments`; the arguments follow in short fragments.
///
/// ```
/// use panto_testkit::script::OpenAiScript;
///
/// let bytes = OpenAiScript::new().tool_call("call_1", "read_file", r#"{"path":"a.txt"}"#).build();
/// assert!(String::from_utf8(bytes).unwrap().ends_with("data: [DONE]\n\n"));
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiScript {
    id: String,
    model: String,
    usage: Option<Usage>,
    usage_chunk: bool,
    parts: Vec<Part>,
    finish_reason: Option<String>,
    reasoning_field: String,
    error: Option<(String, String)>,
}

impl Default for OpenAiScript {
    fn default() -> Self {
        OpenAiScript::new()
    }
}

/// A fixed creation time keeps the bytes reproducible.
const CREATED: u64 = 1_727_346_168;

impl OpenAiScript {
    /// An empty completion from `gpt-4o-2024-08-06` with id `chatcmpl-Mock…`.
    pub fn new() -> Self {
        OpenAiScript {
            id: "chatcmpl-MockStream8fKq2LzW0aHn5Yd".to_owned(),
            model: "gpt-4o-2024-08-06".to_owned(),
            usage: None,
            usage_chunk: true,
            parts: Vec::new(),
            finish_reason: None,
            reasoning_field: "reasoning_content".to_owned(),
            error: None,
        }
    }

    /// The completion id.
    pub fn id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }

    /// The model name reported in every chunk.
    pub fn model(mut self, model: &str) -> Self {
        self.model = model.to_owned();
        self
    }

    /// The usage reported in the final usage chunk: `prompt_tokens` is `input_tokens +
    /// cache_read_tokens` (OpenAI counts cached tokens inside the prompt),
    /// `prompt_tokens_details.cached_tokens` is `cache_read_tokens`, `completion_tokens` is
    /// `output_tokens`. `cache_write_tokens` has no OpenAI field and is ignored. Without this,
    /// the prompt is 12 tokens and the completion the number of deltas.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Leaves out the usage chunk, as servers do when the request did not ask for
    /// `stream_options.include_usage`.
    pub fn without_usage_chunk(mut self) -> Self {
        self.usage_chunk = false;
        self
    }

    /// Content, cut into word-sized deltas.
    pub fn text(self, text: &str) -> Self {
        self.text_deltas(text_deltas(text))
    }

    /// Content with exactly these deltas.
    pub fn text_deltas<I, S>(mut self, deltas: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.parts
            .push(Part::Text(deltas.into_iter().map(Into::into).collect()));
        self
    }

    /// Reasoning, cut into word-sized deltas of the reasoning field (`reasoning_content`, as
    /// llama.cpp, z.ai and DeepSeek send it, unless [`OpenAiScript::reasoning_field`] says
    /// otherwise).
    pub fn reasoning(mut self, reasoning: &str) -> Self {
        self.parts.push(Part::Reasoning(text_deltas(reasoning)));
        self
    }

    /// The delta field reasoning arrives in: `reasoning_content` (default) or `reasoning`
    /// (OpenRouter).
    pub fn reasoning_field(mut self, field: &str) -> Self {
        self.reasoning_field = field.to_owned();
        self
    }

    /// A tool call; calls get consecutive `index` values. `arguments` is sent as given, in
    /// fragments, so a test may also send invalid JSON.
    pub fn tool_call(mut self, id: &str, name: &str, arguments: &str) -> Self {
        self.parts.push(Part::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        });
        self
    }

    /// The finish reason. Default: `tool_calls` when there is a tool call, else `stop`.
    pub fn finish_reason(mut self, reason: &str) -> Self {
        self.finish_reason = Some(reason.to_owned());
        self
    }

    /// Ends the stream after the deltas with `data: {"error": {...}}` (this type and message) and
    /// no finish chunk, usage chunk or `[DONE]`, as OpenAI-compatible proxies report a failure
    /// mid-stream.
    pub fn error(mut self, error_type: &str, message: &str) -> Self {
        self.error = Some((error_type.to_owned(), message.to_owned()));
        self
    }

    /// The response body.
    pub fn build(&self) -> Vec<u8> {
        let mut out = String::new();
        let prefix = format!(
            r#"{{"id":{},"object":"chat.completion.chunk","created":{CREATED},"model":{},"system_fingerprint":"fp_mock0001","#,
            quote(&self.id),
            quote(&self.model)
        );
        let chunk = |out: &mut String, delta: &str, finish: &str| {
            out.push_str("data: ");
            out.push_str(&prefix);
            out.push_str(&format!(
                r#""choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}]}}"#
            ));
            out.push_str("\n\n");
        };

        // The role arrives in the first chunk, together with the start of the first part when
        // that is a tool call (as in the recordings), else with empty content.
        let mut parts = self.parts.iter().peekable();
        let mut tool_index = 0usize;
        match parts.peek() {
            Some(Part::ToolCall { id, name, .. }) => {
                let head = tool_head(0, id, name);
                chunk(
                    &mut out,
                    &format!(r#"{{"role":"assistant","content":null,"tool_calls":[{head}],"refusal":null}}"#),
                    "null",
                );
            }
            Some(Part::Reasoning(_)) => chunk(&mut out, r#"{"role":"assistant","content":null}"#, "null"),
            _ => chunk(&mut out, r#"{"role":"assistant","content":"","refusal":null}"#, "null"),
        }
        let mut first = true;
        for part in parts {
            match part {
                Part::Text(deltas) => {
                    for d in deltas {
                        chunk(&mut out, &format!(r#"{{"content":{}}}"#, quote(d)), "null");
                    }
                }
                Part::Reasoning(deltas) => {
                    for d in deltas {
                        chunk(
                            &mut out,
                            &format!(r#"{{{}:{}}}"#, quote(&self.reasoning_field), quote(d)),
                            "null",
                        );
                    }
                }
                Part::ToolCall { id, name, arguments } => {
                    if !first {
                        let head = tool_head(tool_index, id, name);
                        chunk(&mut out, &format!(r#"{{"tool_calls":[{head}]}}"#), "null");
                    }
                    for fragment in json_fragments(arguments) {
                        chunk(
                            &mut out,
                            &format!(
                                r#"{{"tool_calls":[{{"index":{tool_index},"function":{{"arguments":{}}}}}]}}"#,
                                quote(&fragment)
                            ),
                            "null",
                        );
                    }
                    tool_index += 1;
                }
            }
            first = false;
        }
        if let Some((error_type, message)) = &self.error {
            out.push_str(&format!(
                "data: {{\"error\":{{\"message\":{},\"type\":{},\"param\":null,\"code\":null}}}}\n\n",
                quote(message),
                quote(error_type)
            ));
            return out.into_bytes();
        }
        let finish = self
            .finish_reason
            .clone()
            .unwrap_or_else(|| if tool_index > 0 { "tool_calls" } else { "stop" }.to_owned());
        chunk(&mut out, "{}", &quote(&finish));
        if self.usage_chunk {
            let usage = self.usage.unwrap_or_else(|| Usage {
                input_tokens: 12,
                output_tokens: self.delta_count().max(1) as u64,
                ..Usage::default()
            });
            let prompt = usage.input_tokens + usage.cache_read_tokens;
            out.push_str("data: ");
            out.push_str(&prefix);
            out.push_str(&format!(
                r#""choices":[],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{},"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}}}"#,
                usage.output_tokens,
                prompt + usage.output_tokens,
                usage.cache_read_tokens
            ));
            out.push_str("\n\n");
        }
        out.push_str("data: [DONE]\n\n");
        out.into_bytes()
    }

    /// [`OpenAiScript::build`] as an SSE [`Reply`].
    pub fn reply(&self) -> Reply {
        Reply::sse(self.build())
    }

    fn delta_count(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(d) | Part::Reasoning(d) => d.len(),
                Part::ToolCall { arguments, .. } => json_fragments(arguments).len(),
            })
            .sum()
    }
}

/// The first delta of a tool call: everything but the arguments.
fn tool_head(index: usize, id: &str, name: &str) -> String {
    format!(
        r#"{{"index":{index},"id":{},"type":"function","function":{{"name":{},"arguments":""}}}}"#,
        quote(id),
        quote(name)
    )
}
