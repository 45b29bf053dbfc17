//! The JSON form of an [`Event`]: the one shape stream-json, the C ABI and Go all show.
//!
//! docs/events.md is the specification (the rules, every type, why each field is as it is);
//! docs/events.schema.json is [`event_schema`] written out by `cargo xtask codegen`. The shape is
//! declared once, as [`EventJson`]: serde writes and reads it and schemars derives the schema
//! from the same declaration, so the schema cannot disagree with what panto writes. `Event`
//! keeps its Rust form (a [`Duration`], a [`ContentDelta`] enum) and converts at the edge.
//!
//! The conversion is written as two exhaustive matches: adding an event to `Event` does not
//! compile until it has a JSON form here, so no front end ever meets an event it cannot show.

use std::borrow::Cow;
use std::time::Duration;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{BlockKind, ContentDelta, Event, RetryInfo, ToolDetails};
use crate::conversation::{ContentBlock, StopReason, ToolResultContent, Usage};

/// The version of the event JSON. It changes only when the JSON changes in a way that can break
/// a reader that follows docs/events.md (a type or field removed or renamed, a field's type or
/// meaning changed); new types, new fields and new values of open sets keep it. stream-json's
/// first line carries it as `version`. Version 1 was the two unversioned shapes before it.
pub const EVENT_SCHEMA_VERSION: u32 = 2;

/// One event as JSON: a `type` tag and that type's fields, every field always present (`null`
/// when it has no value). Borrows from the [`Event`] it is written from; owns what it reads.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(rename = "Event")]
enum EventJson<'a> {
    /// A content block of the assistant message being streamed starts.
    BlockStart {
        /// The block's position in the message, from 0.
        index: usize,
        /// What the block holds (an open set: skip blocks of a kind you do not know).
        kind: BlockKind,
        /// For a tool call, its id and name: the name the tool is offered under and the model
        /// used (an MCP tool's `server__tool`), the same name `tool_start` and `tool_complete`
        /// report; `null` for every other kind.
        tool: Option<Cow<'a, ToolDetails>>,
    },
    /// More answer text for the block at `index`.
    TextDelta {
        /// The block's position in the message.
        index: usize,
        /// The text to append.
        text: Cow<'a, str>,
    },
    /// More reasoning text for the block at `index`.
    ThinkingDelta {
        /// The block's position in the message.
        index: usize,
        /// The reasoning to append.
        text: Cow<'a, str>,
    },
    /// A fragment of a tool call's JSON arguments. The fragments of a block concatenate to its
    /// input; one alone is not JSON.
    ToolInputDelta {
        /// The block's position in the message.
        index: usize,
        /// The fragment.
        partial_json: Cow<'a, str>,
    },
    /// The block at `index` is complete, as the conversation now holds it.
    BlockComplete {
        /// The block's position in the message.
        index: usize,
        /// The finished block, in the conversation's JSON form.
        block: Cow<'a, ContentBlock>,
    },
    /// The assistant message is complete and persisted.
    MessageComplete {
        /// What the provider reported for it; `null` when it reported nothing.
        usage: Option<Usage>,
        /// Why the message ended.
        stop_reason: Cow<'a, StopReason>,
    },
    /// A tool call starts running.
    ToolStart {
        /// The call id.
        id: Cow<'a, str>,
        /// The tool's name as offered to the model and as `block_start` announced it (an MCP
        /// tool's `server__tool`).
        name: Cow<'a, str>,
        /// The arguments the model gave.
        input: Cow<'a, serde_json::Value>,
    },
    /// A tool call finished; `content` is what the model will see.
    ToolComplete {
        /// The call id.
        id: Cow<'a, str>,
        /// The tool's name as offered to the model and as `block_start` announced it (an MCP
        /// tool's `server__tool`).
        name: Cow<'a, str>,
        /// The result's parts.
        content: Cow<'a, [ToolResultContent]>,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// A provider request failed and is retried after `delay_ms`.
    Retry {
        /// The attempt about to be made: 2 for the first retry.
        attempt: u32,
        /// How long panto waits before it, in milliseconds.
        delay_ms: u64,
        /// The error that caused the retry, as a sentence.
        reason: Cow<'a, str>,
        /// Whether content of the failed attempt had already been streamed: a reader that
        /// showed it drops it, because the conversation keeps only the new attempt.
        discard_partial: bool,
    },
    /// The conversation is being summarised to fit the context window.
    CompactionStart {
        /// Estimated context tokens before.
        tokens_before: u64,
    },
    /// The conversation was replaced by its summary and the kept tail (and that is persisted).
    CompactionComplete {
        /// Estimated context tokens before.
        tokens_before: u64,
        /// Estimated context tokens after.
        tokens_after: u64,
        /// What the summary request reported (also counted in the turn's usage); `null` when it
        /// reported nothing.
        usage: Option<Usage>,
    },
    /// Text sent to steer the turn joined the conversation after the step's tool results; the
    /// model sees it with the next request. A front end that showed it as queued stops showing
    /// it so.
    Steer {
        /// The text that joined.
        text: Cow<'a, str>,
    },
    /// A queued follow-up starts a new turn on the same stream (or run handle), with this
    /// message as its prompt; the events of that turn follow.
    FollowUpStart {
        /// The message's text.
        text: Cow<'a, str>,
    },
    /// The turn is over: the last event of its turn. A follow-up turn may follow
    /// (`follow_up_start`); the stream ends after the last turn's `turn_complete`.
    TurnComplete {
        /// Usage summed over every request of the turn, a compaction's summary included.
        usage: Usage,
        /// How many requests for a model message the turn made.
        steps: u32,
        /// Why the last message ended.
        stop_reason: Cow<'a, StopReason>,
    },
}

impl<'a> From<&'a Event> for EventJson<'a> {
    fn from(event: &'a Event) -> Self {
        match event {
            Event::BlockStart { index, kind, tool } => EventJson::BlockStart {
                index: *index,
                kind: *kind,
                tool: tool.as_ref().map(Cow::Borrowed),
            },
            Event::Delta { index, delta } => match delta {
                ContentDelta::Text(text) => EventJson::TextDelta {
                    index: *index,
                    text: Cow::Borrowed(text),
                },
                ContentDelta::Thinking(text) => EventJson::ThinkingDelta {
                    index: *index,
                    text: Cow::Borrowed(text),
                },
                ContentDelta::ToolInput(part) => EventJson::ToolInputDelta {
                    index: *index,
                    partial_json: Cow::Borrowed(part),
                },
            },
            Event::BlockComplete { index, block } => EventJson::BlockComplete {
                index: *index,
                block: Cow::Borrowed(block),
            },
            Event::MessageComplete { usage, stop_reason } => EventJson::MessageComplete {
                usage: *usage,
                stop_reason: Cow::Borrowed(stop_reason),
            },
            Event::ToolDispatchStart { id, name, input } => EventJson::ToolStart {
                id: Cow::Borrowed(id),
                name: Cow::Borrowed(name),
                input: Cow::Borrowed(input),
            },
            Event::ToolDispatchComplete {
                id,
                name,
                content,
                is_error,
            } => EventJson::ToolComplete {
                id: Cow::Borrowed(id),
                name: Cow::Borrowed(name),
                content: Cow::Borrowed(content),
                is_error: *is_error,
            },
            Event::ProviderRetry(info) => EventJson::Retry {
                attempt: info.attempt,
                // A delay beyond u64 milliseconds (half a billion years) is written as the most
                // there is rather than wrapped.
                delay_ms: u64::try_from(info.delay.as_millis()).unwrap_or(u64::MAX),
                reason: Cow::Borrowed(&info.reason),
                discard_partial: info.discard_partial,
            },
            Event::CompactionStart { tokens_before } => EventJson::CompactionStart {
                tokens_before: *tokens_before,
            },
            Event::CompactionComplete {
                tokens_before,
                tokens_after,
                usage,
            } => EventJson::CompactionComplete {
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                usage: *usage,
            },
            Event::Steer { text } => EventJson::Steer {
                text: Cow::Borrowed(text),
            },
            Event::FollowUpStart { text } => EventJson::FollowUpStart {
                text: Cow::Borrowed(text),
            },
            Event::TurnComplete {
                usage,
                steps,
                stop_reason,
            } => EventJson::TurnComplete {
                usage: *usage,
                steps: *steps,
                stop_reason: Cow::Borrowed(stop_reason),
            },
        }
    }
}

impl From<EventJson<'_>> for Event {
    fn from(json: EventJson<'_>) -> Self {
        match json {
            EventJson::BlockStart { index, kind, tool } => Event::BlockStart {
                index,
                kind,
                tool: tool.map(Cow::into_owned),
            },
            EventJson::TextDelta { index, text } => Event::Delta {
                index,
                delta: ContentDelta::Text(text.into_owned()),
            },
            EventJson::ThinkingDelta { index, text } => Event::Delta {
                index,
                delta: ContentDelta::Thinking(text.into_owned()),
            },
            EventJson::ToolInputDelta { index, partial_json } => Event::Delta {
                index,
                delta: ContentDelta::ToolInput(partial_json.into_owned()),
            },
            EventJson::BlockComplete { index, block } => Event::BlockComplete {
                index,
                block: block.into_owned(),
            },
            EventJson::MessageComplete { usage, stop_reason } => Event::MessageComplete {
                usage,
                stop_reason: stop_reason.into_owned(),
            },
            EventJson::ToolStart { id, name, input } => Event::ToolDispatchStart {
                id: id.into_owned(),
                name: name.into_owned(),
                input: input.into_owned(),
            },
            EventJson::ToolComplete {
                id,
                name,
                content,
                is_error,
            } => Event::ToolDispatchComplete {
                id: id.into_owned(),
                name: name.into_owned(),
                content: content.into_owned(),
                is_error,
            },
            EventJson::Retry {
                attempt,
                delay_ms,
                reason,
                discard_partial,
            } => Event::ProviderRetry(RetryInfo {
                attempt,
                delay: Duration::from_millis(delay_ms),
                reason: reason.into_owned(),
                discard_partial,
            }),
            EventJson::CompactionStart { tokens_before } => Event::CompactionStart { tokens_before },
            EventJson::CompactionComplete {
                tokens_before,
                tokens_after,
                usage,
            } => Event::CompactionComplete {
                tokens_before,
                tokens_after,
                usage,
            },
            EventJson::Steer { text } => Event::Steer {
                text: text.into_owned(),
            },
            EventJson::FollowUpStart { text } => Event::FollowUpStart {
                text: text.into_owned(),
            },
            EventJson::TurnComplete {
                usage,
                steps,
                stop_reason,
            } => Event::TurnComplete {
                usage,
                steps,
                stop_reason: stop_reason.into_owned(),
            },
        }
    }
}

/// Writes the event JSON of docs/events.md: `serde_json::to_string(&event)` is the line
/// stream-json prints and the payload `panto_event_json` returns.
impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        EventJson::from(self).serialize(serializer)
    }
}

/// Reads the event JSON of this version. A `type` this version does not know is an error (the
/// message names it); a reader of a later panto's output skips such events, as docs/events.md
/// says, before handing the rest here.
impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        EventJson::deserialize(deserializer).map(Event::from)
    }
}

/// The schema of the event JSON, as [`event_schema`] publishes it (there as the root, here as a
/// definition another schema can refer to).
impl JsonSchema for Event {
    fn schema_name() -> Cow<'static, str> {
        EventJson::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Borrowed(concat!(module_path!(), "::Event"))
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        EventJson::json_schema(generator)
    }
}

/// The JSON Schema (draft 2020-12) of the event JSON, the one docs/events.schema.json holds.
///
/// It describes what panto writes: every field is required, a field that may have no value is
/// nullable, and each `type` has one branch of the top-level `oneOf`.
pub fn event_schema() -> serde_json::Value {
    let mut schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Event>();
    schema.insert(
        "title".to_owned(),
        format!("panto event JSON, version {EVENT_SCHEMA_VERSION}").into(),
    );
    schema.insert(
        "description".to_owned(),
        "One event of a panto turn, as stream-json prints it and panto_event_json returns it. \
         docs/events.md is the specification: skip types you do not know, ignore fields you do \
         not know. Generated from crates/panto-core by `cargo xtask codegen`; do not edit."
            .into(),
    );
    let mut schema = schema.to_value();
    plain_descriptions(&mut schema);
    schema
}

/// Turns the rustdoc of every `description` into plain text for readers of the schema: intra-doc
/// links lose their brackets and a line wrapped in the source is one line again.
fn plain_descriptions(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, member) in map.iter_mut() {
                match member {
                    serde_json::Value::String(text) if key == "description" => {
                        let paragraphs: Vec<String> = text
                            .split("\n\n")
                            .map(|paragraph| paragraph.lines().map(str::trim).collect::<Vec<_>>().join(" "))
                            .collect();
                        *text = paragraphs.join("\n\n").replace("[`", "`").replace("`]", "`");
                    }
                    _ => plain_descriptions(member),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}
