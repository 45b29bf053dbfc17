//! Structured output: [`Agent::run_typed`], a turn whose result is a Rust value.
//!
//! The result comes back through a tool: the turn offers one more tool, `final_result`, whose
//! input schema is the result type's, and requires the model to call a tool (`tool_choice` `any`
//! on Anthropic, `required` on OpenAI). The model may call the agent's other tools first; the
//! turn ends once `final_result` was called with arguments that fit. Both APIs constrain tool
//! arguments to the declared schema far better than free text, and the mechanism is the same on
//! every provider. Arguments that do not fit go back to the model as an error result naming the
//! field, so it can correct them, at most [`MAX_CORRECTIONS`] times.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Agent, Stream, UserMessage};
use crate::conversation::{ContentBlock, Role, StopReason};
use crate::error::{Error, Result};
use crate::tool::{
    from_value, is_object_schema, schema_of, Mismatch, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError,
};

/// The name of the tool the result comes back through.
pub(crate) const OUTPUT_TOOL: &str = "final_result";

/// How many times a result that does not fit is sent back to the model for correction before
/// the turn fails with [`Error::InvalidOutput`].
pub(crate) const MAX_CORRECTIONS: u32 = 2;

/// The field a result that is not a JSON object is wrapped in: tool input must be an object.
const WRAPPER_FIELD: &str = "result";

/// A wrapped result, deserialised only to check it (the value is taken from the JSON).
#[derive(Deserialize)]
struct Wrapped<T> {
    #[serde(rename = "result")]
    _result: T,
}

/// What the output tool has seen so far in the turn.
#[derive(Debug, Default)]
enum Verdict {
    /// No call yet, or only calls that did not fit (counted).
    #[default]
    Pending,
    /// A call fitted: its arguments, unwrapped.
    Accepted(Value),
}

/// Shared between the output tool and the stream that ends the turn.
#[derive(Debug, Default)]
pub(crate) struct OutputSlot {
    verdict: Mutex<Verdict>,
    /// The calls that did not fit, and the last one's mismatch.
    rejections: Mutex<(u32, Option<Mismatch>)>,
}

/// What the stream should do after a tool round of a typed turn.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Go on: the model has not given its result yet.
    Continue,
    /// End the turn: the result is in.
    Done,
    /// End the turn with this error: the model's corrections ran out.
    Failed(Error),
}

impl OutputSlot {
    pub(crate) fn outcome(&self) -> Outcome {
        if matches!(
            *self.verdict.lock().unwrap_or_else(PoisonError::into_inner),
            Verdict::Accepted(_)
        ) {
            return Outcome::Done;
        }
        let mut rejections = self.rejections.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *rejections {
            (count, last @ Some(_)) if *count > MAX_CORRECTIONS => {
                let Some(Mismatch { path, message }) = last.take() else {
                    unreachable!("matched Some above")
                };
                Outcome::Failed(Error::InvalidOutput { path, message })
            }
            _ => Outcome::Continue,
        }
    }

    fn take(&self) -> Option<Value> {
        match std::mem::take(&mut *self.verdict.lock().unwrap_or_else(PoisonError::into_inner)) {
            Verdict::Accepted(value) => Some(value),
            Verdict::Pending => None,
        }
    }
}

/// The `final_result` tool of one typed turn.
struct OutputTool<T> {
    decl: ToolDecl,
    wrapped: bool,
    slot: Arc<OutputSlot>,
    check: fn(&Value, bool) -> std::result::Result<(), Mismatch>,
    _result: std::marker::PhantomData<fn() -> T>,
}

/// Whether `input` deserialises into `T` (inside the wrapper when `wrapped`).
fn check<T: DeserializeOwned>(input: &Value, wrapped: bool) -> std::result::Result<(), Mismatch> {
    if wrapped {
        from_value::<Wrapped<T>>(input).map(drop)
    } else {
        from_value::<T>(input).map(drop)
    }
}

#[async_trait]
impl<T: Send + 'static> Tool for OutputTool<T> {
    fn declaration(&self) -> ToolDecl {
        self.decl.clone()
    }

    async fn call(&self, call: ToolCall) -> std::result::Result<ToolCallResult, ToolError> {
        if let Err(mismatch) = (self.check)(&call.input, self.wrapped) {
            let text = mismatch.to_string();
            let mut rejections = self.slot.rejections.lock().unwrap_or_else(PoisonError::into_inner);
            rejections.0 += 1;
            rejections.1 = Some(mismatch);
            return Ok(ToolCallResult::error(format!(
                "{text}. Call {OUTPUT_TOOL} again with a corrected result."
            )));
        }
        let value = if self.wrapped {
            call.input.get(WRAPPER_FIELD).cloned().unwrap_or(Value::Null)
        } else {
            call.input
        };
        let mut verdict = self.slot.verdict.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*verdict, Verdict::Accepted(_)) {
            // Two results in one message: the first one to arrive stands.
            return Ok(ToolCallResult::text(
                "A result was already received; this one is ignored.",
            ));
        }
        *verdict = Verdict::Accepted(value);
        Ok(ToolCallResult::text("Result received."))
    }
}

/// The output tool for `T` and the slot its result lands in.
pub(crate) fn output_tool<T: JsonSchema + DeserializeOwned + Send + 'static>() -> (Arc<dyn Tool>, Arc<OutputSlot>) {
    let schema = schema_of::<T>();
    let wrapped = !is_object_schema(&schema);
    let input_schema = if wrapped {
        json!({"type": "object", "properties": {WRAPPER_FIELD: schema}, "required": [WRAPPER_FIELD]})
    } else {
        schema
    };
    let slot = Arc::new(OutputSlot::default());
    let tool = OutputTool::<T> {
        decl: ToolDecl {
            name: OUTPUT_TOOL.to_owned(),
            description: "Give the final result of the task. Call this exactly once, when the result is complete; \
                          its arguments are the result. Do not answer in plain text."
                .to_owned(),
            input_schema,
        },
        wrapped,
        slot: slot.clone(),
        check: check::<T>,
        _result: std::marker::PhantomData,
    };
    (Arc::new(tool), slot)
}

impl Agent {
    /// Runs a turn whose result is a `T`: structured output.
    ///
    /// The turn is an ordinary one (persisted, compacted, retried like [`Agent::run`]; the
    /// agent's tools stay available) with one more tool, `final_result`, whose input schema is
    /// generated from `T` (doc comments become descriptions; a `T` that is not a JSON object is
    /// wrapped as `{"result": …}`). The model is required to call a tool (`tool_choice` `any` on
    /// Anthropic, except with extended thinking, which forbids forcing; `required` on OpenAI), and
    /// the turn ends when it calls `final_result` with arguments that deserialise into `T`.
    /// Arguments that do not fit go back to the model as an error result naming the field; after
    /// two such corrections the third mismatch ends the turn. Should the model answer in text
    /// instead (a server that ignores `tool_choice`), that text is taken as the JSON of `T`.
    ///
    /// Events are not surfaced; use [`Agent::run`] to render a turn. Dropping the future cancels
    /// the turn as dropping a [`Stream`] does.
    ///
    /// Errors: [`Error::InvalidOutput`] (with the path of the field that does not fit) when the
    /// corrections ran out or the text answer does not fit, [`Error::MissingOutput`] when the
    /// model answered in text that is not JSON, [`Error::InvalidTool`] when a tool named
    /// `final_result` is registered, and everything [`Stream::next`] returns.
    ///
    /// ```
    /// use panto_core::{Agent, ApiStyle, Config, NullStore, ProviderConfig};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// # use panto_testkit::{script, MockServer, Reply};
    ///
    /// /// A city the user asked about.
    /// #[derive(Debug, Deserialize, JsonSchema)]
    /// struct City {
    ///     /// The city's name.
    ///     name: String,
    ///     /// Its country, in English.
    ///     country: String,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> panto_core::Result<()> {
    /// # let server = MockServer::start().await;
    /// # server.push(Reply::sse(script::openai_tool_calls(&[("call_1", "final_result",
    /// #     r#"{"name":"Lisbon","country":"Portugal"}"#)])));
    /// # let base_url = server.openai_base_url();
    /// let config = Config::new(
    ///     ProviderConfig::new(ApiStyle::OpenAiChat, "gpt-5")
    ///         .with_base_url(base_url)
    ///         .with_api_key("my-api-key"),
    /// );
    /// let mut agent = Agent::new(config, panto_core::Session::create(NullStore::shared()), None)?;
    /// let city: City = agent.run_typed("Which city is the capital of Portugal?").await?;
    /// assert_eq!(city.name, "Lisbon");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_typed<T>(&mut self, message: impl Into<UserMessage>) -> Result<T>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        let (tool, slot) = output_tool::<T>();
        let mut stream = Stream::with_output(self, message.into(), tool, slot.clone())?;
        while stream.next().await?.is_some() {}
        drop(stream);
        if let Some(value) = slot.take() {
            return from_value(&value).map_err(|Mismatch { path, message }| Error::InvalidOutput { path, message });
        }
        self.output_from_text()
    }

    /// The result of a typed turn that ended in text: the last assistant message's text as `T`'s
    /// JSON, fenced in a Markdown code block or not.
    fn output_from_text<T: DeserializeOwned>(&self) -> Result<T> {
        let last = self
            .conversation
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant);
        let stop_reason = last.and_then(|m| m.stop_reason.clone()).unwrap_or(StopReason::EndTurn);
        let text: String = last
            .map(|m| {
                m.content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let json = strip_code_fence(text.trim());
        let Ok(value) = serde_json::from_str::<Value>(json) else {
            return Err(Error::MissingOutput { stop_reason });
        };
        from_value(&value).map_err(|Mismatch { path, message }| Error::InvalidOutput { path, message })
    }
}

/// `text` without a surrounding Markdown code fence (```` ```json … ``` ````), if it has one.
fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // Drop the info string (`json`) on the opening line.
    match body.find('\n') {
        Some(newline) => body[newline + 1..].trim(),
        None => body.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::strip_code_fence;

    #[test]
    fn code_fences_come_off() {
        assert_eq!(strip_code_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_code_fence("```\n[1]\n```"), "[1]");
        assert_eq!(strip_code_fence("{\"a\": 1}"), "{\"a\": 1}");
        assert_eq!(strip_code_fence("```json\n{"), "```json\n{");
    }
}
