//! OpenAI Responses API streams, shaped like the documented events in
//! `fixtures/wire/responses/`.

use panto_core::Usage;
use serde_json::{json, Value};

use super::{json_fragments, text_deltas, write_event};
use crate::reply::Reply;

#[derive(Debug, Clone)]
enum Item {
    Reasoning {
        summary: Vec<String>,
        encrypted: Option<String>,
    },
    Text(Vec<String>),
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// How the response ends.
#[derive(Debug, Clone)]
enum End {
    Completed,
    Incomplete(String),
    Failed(String, String),
    Error(String, String),
}

/// A scripted Responses stream.
///
/// `build` writes what the API sends: `response.created` and `response.in_progress`, then each
/// output item in order (`response.output_item.added`, its deltas and `.done` events,
/// `response.output_item.done`), then `response.completed` with usage (or
/// `response.incomplete`, `response.failed`, or a bare `error` event). A reasoning item streams
/// its summary parts as `response.reasoning_summary_text.delta`s, and its
/// `encrypted_content` arrives with `response.output_item.done`.
///
/// ```
/// use panto_testkit::script::ResponsesScript;
///
/// let bytes = ResponsesScript::new()
///     .reasoning(&["**Looking**"], "gAAAAB-encrypted")
///     .tool_call("call_1", "read_file", r#"{"path":"a.txt"}"#)
///     .build();
/// assert!(String::from_utf8(bytes).unwrap().contains("event: response.completed"));
/// ```
#[derive(Debug, Clone)]
pub struct ResponsesScript {
    model: String,
    usage: Option<Usage>,
    reasoning_tokens: u64,
    items: Vec<Item>,
    end: End,
}

impl Default for ResponsesScript {
    fn default() -> Self {
        ResponsesScript::new()
    }
}

/// A fixed creation time keeps the bytes reproducible.
const CREATED: u64 = 1_757_540_514;

impl ResponsesScript {
    /// An empty response from `gpt-5-2025-08-07`.
    pub fn new() -> Self {
        ResponsesScript {
            model: "gpt-5-2025-08-07".to_owned(),
            usage: None,
            reasoning_tokens: 0,
            items: Vec::new(),
            end: End::Completed,
        }
    }

    /// The model name reported in the response.
    pub fn model(mut self, model: &str) -> Self {
        self.model = model.to_owned();
        self
    }

    /// The usage reported at the end: `input_tokens` is `input_tokens + cache_read_tokens +
    /// cache_write_tokens` (the API counts cached tokens inside the input),
    /// `input_tokens_details.cached_tokens` and `.cache_write_tokens` are the two cache counts,
    /// `output_tokens` is `output_tokens`. Without this, the input is 12
    /// tokens and the output the number of deltas.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// `output_tokens_details.reasoning_tokens` (part of the output tokens).
    pub fn reasoning_tokens(mut self, n: u64) -> Self {
        self.reasoning_tokens = n;
        self
    }

    /// A reasoning item: these summary parts (each cut into word-sized deltas), and
    /// `encrypted_content` on the finished item.
    pub fn reasoning(mut self, summary: &[&str], encrypted: &str) -> Self {
        self.items.push(Item::Reasoning {
            summary: summary.iter().map(|s| (*s).to_owned()).collect(),
            encrypted: Some(encrypted.to_owned()),
        });
        self
    }

    /// A reasoning item without `encrypted_content`, as the API sends one when the request did
    /// not include it.
    pub fn reasoning_without_content(mut self, summary: &[&str]) -> Self {
        self.items.push(Item::Reasoning {
            summary: summary.iter().map(|s| (*s).to_owned()).collect(),
            encrypted: None,
        });
        self
    }

    /// A message item with this text, cut into word-sized deltas.
    pub fn text(mut self, text: &str) -> Self {
        self.items.push(Item::Text(text_deltas(text)));
        self
    }

    /// A message item with exactly these deltas.
    pub fn text_deltas<I, S>(mut self, deltas: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.items
            .push(Item::Text(deltas.into_iter().map(Into::into).collect()));
        self
    }

    /// A function call item; `arguments` is sent as given, in fragments, so a test may also send
    /// invalid JSON.
    pub fn tool_call(mut self, call_id: &str, name: &str, arguments: &str) -> Self {
        self.items.push(Item::Call {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        });
        self
    }

    /// Ends with `response.incomplete` and this `incomplete_details.reason`
    /// (`max_output_tokens`, `content_filter`).
    pub fn incomplete(mut self, reason: &str) -> Self {
        self.end = End::Incomplete(reason.to_owned());
        self
    }

    /// Ends with `response.failed` carrying this error code and message.
    pub fn failed(mut self, code: &str, message: &str) -> Self {
        self.end = End::Failed(code.to_owned(), message.to_owned());
        self
    }

    /// Ends with a bare `error` event with this code and message, and nothing after it.
    pub fn error(mut self, code: &str, message: &str) -> Self {
        self.end = End::Error(code.to_owned(), message.to_owned());
        self
    }

    /// The response object as the terminal events carry it.
    fn response(&self, status: &str, output: &[Value]) -> Value {
        let usage = self.usage.unwrap_or_else(|| Usage {
            input_tokens: 12,
            output_tokens: self.delta_count().max(1) as u64,
            ..Usage::default()
        });
        let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        let done = status != "in_progress";
        json!({
            "id": "resp_mock0001", "object": "response", "created_at": CREATED, "status": status,
            "background": false, "error": null, "incomplete_details": null, "instructions": null,
            "max_output_tokens": null, "model": self.model, "output": output,
            "parallel_tool_calls": true, "previous_response_id": null,
            "reasoning": {"effort": null, "summary": null}, "store": false, "temperature": 1.0,
            "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "top_p": 1.0,
            "truncation": "disabled", "user": null, "metadata": {},
            "usage": if done { json!({
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
                "total_tokens": input + usage.output_tokens,
            }) } else { Value::Null },
        })
    }

    /// The response body.
    // Long: the whole stream in wire order, one event after another, so that it reads as the
    // protocol sends it; split by item kind, the order would be spread over functions.
    pub fn build(&self) -> Vec<u8> {
        let mut out = String::new();
        let mut seq = 0u64;
        let mut ev = |out: &mut String, kind: &str, mut data: Value| {
            data["type"] = kind.into();
            data["sequence_number"] = seq.into();
            seq += 1;
            write_event(out, kind, &data.to_string());
        };
        ev(
            &mut out,
            "response.created",
            json!({"response": self.response("in_progress", &[])}),
        );
        ev(
            &mut out,
            "response.in_progress",
            json!({"response": self.response("in_progress", &[])}),
        );
        let mut output = Vec::new();
        for (index, item) in self.items.iter().enumerate() {
            let done = match item {
                Item::Reasoning { summary, encrypted } => {
                    let id = format!("rs_mock{index:04}");
                    ev(
                        &mut out,
                        "response.output_item.added",
                        json!({"output_index": index,
                        "item": {"id": id, "type": "reasoning", "summary": []}}),
                    );
                    for (part, text) in summary.iter().enumerate() {
                        let head = json!({"item_id": id, "output_index": index, "summary_index": part});
                        let with = |mut v: Value, extra: Value| {
                            for (k, x) in extra.as_object().into_iter().flatten() {
                                v[k] = x.clone();
                            }
                            v
                        };
                        ev(
                            &mut out,
                            "response.reasoning_summary_part.added",
                            with(head.clone(), json!({"part": {"type": "summary_text", "text": ""}})),
                        );
                        for d in text_deltas(text) {
                            ev(
                                &mut out,
                                "response.reasoning_summary_text.delta",
                                with(head.clone(), json!({"delta": d})),
                            );
                        }
                        ev(
                            &mut out,
                            "response.reasoning_summary_text.done",
                            with(head.clone(), json!({"text": text})),
                        );
                        ev(
                            &mut out,
                            "response.reasoning_summary_part.done",
                            with(head, json!({"part": {"type": "summary_text", "text": text}})),
                        );
                    }
                    let mut item = json!({"id": id, "type": "reasoning",
                        "summary": summary.iter().map(|t| json!({"type": "summary_text", "text": t})).collect::<Vec<_>>()});
                    if let Some(e) = encrypted {
                        item["encrypted_content"] = e.as_str().into();
                    }
                    item
                }
                Item::Text(deltas) => {
                    let id = format!("msg_mock{index:04}");
                    ev(
                        &mut out,
                        "response.output_item.added",
                        json!({"output_index": index,
                        "item": {"id": id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
                    );
                    let part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": ""});
                    ev(
                        &mut out,
                        "response.content_part.added",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                    );
                    for d in deltas {
                        ev(
                            &mut out,
                            "response.output_text.delta",
                            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": d, "logprobs": []}),
                        );
                    }
                    let text = deltas.concat();
                    ev(
                        &mut out,
                        "response.output_text.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                    );
                    let part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
                    ev(
                        &mut out,
                        "response.content_part.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                    );
                    json!({"id": id, "type": "message", "status": "completed", "content": [part], "role": "assistant"})
                }
                Item::Call {
                    call_id,
                    name,
                    arguments,
                } => {
                    let id = format!("fc_mock{index:04}");
                    let item = json!({"id": id, "type": "function_call", "status": "in_progress",
                        "arguments": "", "call_id": call_id, "name": name});
                    ev(
                        &mut out,
                        "response.output_item.added",
                        json!({"output_index": index, "item": item}),
                    );
                    for f in json_fragments(arguments) {
                        ev(
                            &mut out,
                            "response.function_call_arguments.delta",
                            json!({"item_id": id, "output_index": index, "delta": f}),
                        );
                    }
                    ev(
                        &mut out,
                        "response.function_call_arguments.done",
                        json!({"item_id": id, "output_index": index, "arguments": arguments}),
                    );
                    json!({"id": id, "type": "function_call", "status": "completed",
                        "arguments": arguments, "call_id": call_id, "name": name})
                }
            };
            ev(
                &mut out,
                "response.output_item.done",
                json!({"output_index": index, "item": done}),
            );
            output.push(done);
        }
        match &self.end {
            End::Completed => ev(
                &mut out,
                "response.completed",
                json!({"response": self.response("completed", &output)}),
            ),
            End::Incomplete(reason) => {
                let mut response = self.response("incomplete", &output);
                response["incomplete_details"] = json!({"reason": reason});
                ev(&mut out, "response.incomplete", json!({"response": response}));
            }
            End::Failed(code, message) => {
                let mut response = self.response("failed", &output);
                response["error"] = json!({"code": code, "message": message});
                ev(&mut out, "response.failed", json!({"response": response}));
            }
            End::Error(code, message) => {
                ev(
                    &mut out,
                    "error",
                    json!({"code": code, "message": message, "param": null}),
                );
            }
        }
        out.into_bytes()
    }

    /// [`ResponsesScript::build`] as an SSE [`Reply`].
    pub fn reply(&self) -> Reply {
        Reply::sse(self.build())
    }

    fn delta_count(&self) -> usize {
        self.items
            .iter()
            .map(|i| match i {
                Item::Reasoning { summary, .. } => summary.iter().map(|s| text_deltas(s).len()).sum(),
                Item::Text(d) => d.len(),
                Item::Call { arguments, .. } => json_fragments(arguments).len(),
            })
            .sum()
    }
}
