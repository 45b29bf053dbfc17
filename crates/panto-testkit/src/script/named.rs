//! Builders addressed by name with JSON arguments, for the `panto-mock` control API.

use panto_core::Usage;

use crate::Error;
use serde_json::{Map, Value};

use super::{numbered_words, AnthropicScript, OpenAiScript, ResponsesScript};

/// Every builder name [`build_named`] knows, with the arguments it takes. `usage` (optional
/// everywhere but the `*_deltas` builders) is an object with panto's usage fields
/// (`input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`).
///
/// - `anthropic_text {text, usage?}`
/// - `anthropic_tool_uses {calls: [{id, name, input}], text?, usage?}`; `input` is a JSON
///   string sent as is, or any other JSON value, which is serialised
/// - `anthropic_thinking {thinking, signature, text, usage?}`
/// - `anthropic_overloaded_mid_stream {}`
/// - `anthropic_text_deltas {count}`
/// - `openai_text {text, usage?}`
/// - `openai_tool_calls {calls: [{id, name, arguments}], text?, usage?}`
/// - `openai_reasoning {reasoning, text, field?, usage?}`; `field` is the delta field
///   (`reasoning_content` or `reasoning`)
/// - `openai_text_deltas {count}`
/// - `responses_text {text, usage?}` (the OpenAI Responses API)
/// - `responses_tool_calls {calls: [{id, name, arguments}], summary?, encrypted_content?, text?,
///   usage?}`: a reasoning item first when `encrypted_content` is given (with `summary` as its
///   one summary part), then text, then one function call per entry
/// - `responses_reasoning {summary, encrypted_content, text, usage?}`
pub const BUILDERS: &[&str] = &[
    "anthropic_text",
    "anthropic_tool_uses",
    "anthropic_thinking",
    "anthropic_overloaded_mid_stream",
    "anthropic_text_deltas",
    "openai_text",
    "openai_tool_calls",
    "openai_reasoning",
    "openai_text_deltas",
    "responses_text",
    "responses_tool_calls",
    "responses_reasoning",
];

/// Builds the stream of the builder `name` (one of [`BUILDERS`]) from its JSON arguments.
/// Unknown names, missing or mistyped arguments and unknown argument keys are errors that name
/// the builder and the key.
pub fn build_named(name: &str, args: &Value) -> Result<Vec<u8>, Error> {
    let empty = Map::new();
    let map = match args {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => return Err(bad(name, format!("args must be an object, got {other}"))),
    };
    let mut a = Args {
        name,
        map,
        used: Vec::new(),
    };
    let bytes = match name {
        "anthropic_text" => with_usage_a(AnthropicScript::new().text(a.str("text")?), a.usage()?).build(),
        "anthropic_tool_uses" => {
            let mut s = AnthropicScript::new();
            if let Some(text) = a.opt_str("text")? {
                s = s.text(text);
            }
            for (id, tool, input) in a.calls("input")? {
                s = s.tool_use(&id, &tool, &input);
            }
            with_usage_a(s, a.usage()?).build()
        }
        "anthropic_thinking" => {
            let s = AnthropicScript::new()
                .thinking(a.str("thinking")?, a.str("signature")?)
                .text(a.str("text")?);
            with_usage_a(s, a.usage()?).build()
        }
        "anthropic_overloaded_mid_stream" => super::anthropic_overloaded_mid_stream(),
        "anthropic_text_deltas" => AnthropicScript::new().text_deltas(numbered_words(a.count()?)).build(),
        "openai_text" => with_usage_o(OpenAiScript::new().text(a.str("text")?), a.usage()?).build(),
        "openai_tool_calls" => {
            let mut s = OpenAiScript::new();
            if let Some(text) = a.opt_str("text")? {
                s = s.text(text);
            }
            for (id, tool, arguments) in a.calls("arguments")? {
                s = s.tool_call(&id, &tool, &arguments);
            }
            with_usage_o(s, a.usage()?).build()
        }
        "openai_reasoning" => {
            let mut s = OpenAiScript::new();
            if let Some(field) = a.opt_str("field")? {
                s = s.reasoning_field(field);
            }
            let s = s.reasoning(a.str("reasoning")?).text(a.str("text")?);
            with_usage_o(s, a.usage()?).build()
        }
        "openai_text_deltas" => OpenAiScript::new().text_deltas(numbered_words(a.count()?)).build(),
        "responses_text" => with_usage_r(ResponsesScript::new().text(a.str("text")?), a.usage()?).build(),
        "responses_tool_calls" => {
            let mut s = ResponsesScript::new();
            let summary = a.opt_str("summary")?;
            if let Some(encrypted) = a.opt_str("encrypted_content")? {
                s = s.reasoning(&summary.into_iter().collect::<Vec<_>>(), encrypted);
            }
            if let Some(text) = a.opt_str("text")? {
                s = s.text(text);
            }
            for (id, tool, arguments) in a.calls("arguments")? {
                s = s.tool_call(&id, &tool, &arguments);
            }
            with_usage_r(s, a.usage()?).build()
        }
        "responses_reasoning" => {
            let s = ResponsesScript::new()
                .reasoning(&[a.str("summary")?], a.str("encrypted_content")?)
                .text(a.str("text")?);
            with_usage_r(s, a.usage()?).build()
        }
        _ => {
            return Err(Error::Spec(format!(
                "unknown builder {name:?}; known builders: {}",
                BUILDERS.join(", ")
            )))
        }
    };
    a.finish()?;
    Ok(bytes)
}

fn with_usage_a(s: AnthropicScript, usage: Option<Usage>) -> AnthropicScript {
    match usage {
        Some(u) => s.usage(u),
        None => s,
    }
}

fn with_usage_o(s: OpenAiScript, usage: Option<Usage>) -> OpenAiScript {
    match usage {
        Some(u) => s.usage(u),
        None => s,
    }
}

fn with_usage_r(s: ResponsesScript, usage: Option<Usage>) -> ResponsesScript {
    match usage {
        Some(u) => s.usage(u),
        None => s,
    }
}

fn bad(name: &str, message: String) -> Error {
    Error::Spec(format!("builder {name}: {message}"))
}

/// The arguments of one builder call, remembering which keys were read so that unknown (usually
/// misspelt) keys can be reported.
struct Args<'a> {
    name: &'a str,
    map: &'a Map<String, Value>,
    used: Vec<&'static str>,
}

impl<'a> Args<'a> {
    fn opt_str(&mut self, key: &'static str) -> Result<Option<&'a str>, Error> {
        self.used.push(key);
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(bad(self.name, format!("args.{key} must be a string, got {other}"))),
        }
    }

    fn str(&mut self, key: &'static str) -> Result<&'a str, Error> {
        self.opt_str(key)?
            .ok_or_else(|| bad(self.name, format!("args.{key} is required")))
    }

    fn count(&mut self) -> Result<usize, Error> {
        self.used.push("count");
        self.map
            .get("count")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad(self.name, "args.count must be a non-negative integer".to_owned()))
    }

    fn usage(&mut self) -> Result<Option<Usage>, Error> {
        self.used.push("usage");
        match self.map.get("usage") {
            None => Ok(None),
            Some(v) => serde_json::from_value::<Usage>(v.clone())
                .map(Some)
                .map_err(|e| bad(self.name, format!("args.usage: {e}"))),
        }
    }

    /// `calls: [{id, name, <input_key>}]`; the input may be a JSON string (sent as is) or any
    /// other JSON value (serialised).
    fn calls(&mut self, input_key: &str) -> Result<Vec<(String, String, String)>, Error> {
        self.used.push("calls");
        let calls = self
            .map
            .get("calls")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(self.name, "args.calls must be an array".to_owned()))?;
        let mut out = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let field = |key: &str| -> Result<String, Error> {
                call.get(key)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| bad(self.name, format!("args.calls[{i}].{key} must be a string")))
            };
            let input = match call.get(input_key) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => return Err(bad(self.name, format!("args.calls[{i}].{input_key} is required"))),
            };
            out.push((field("id")?, field("name")?, input));
        }
        Ok(out)
    }

    fn finish(&self) -> Result<(), Error> {
        match self.map.keys().find(|k| !self.used.contains(&k.as_str())) {
            Some(unknown) => Err(bad(self.name, format!("unknown argument {unknown:?}"))),
            None => Ok(()),
        }
    }
}
