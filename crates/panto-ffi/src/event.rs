//! `panto_event`: one step of a turn, as a kind (an integer) and its JSON.
//!
//! The JSON is panto-core's event JSON (`serde_json` of the `Event`, docs/events.md), the same
//! object stream-json prints; this module only numbers its `type`s for C.

use std::borrow::Cow;
use std::ffi::{c_char, CString};

use panto_core::{ContentDelta, Event};
use serde::Deserialize;

use crate::guard::{free, Handle};

/// A content block starts: `{"type": "block_start", "index", "kind", "tool"}`; `kind` is `text`,
/// `thinking`, `redacted_thinking` or `tool_use`; `tool` is `{"id", "name"}` for a tool call,
/// else null.
pub const PANTO_EVENT_BLOCK_START: i32 = 1;
/// More answer text: `{"type": "text_delta", "index", "text"}`.
pub const PANTO_EVENT_TEXT_DELTA: i32 = 2;
/// More reasoning: `{"type": "thinking_delta", "index", "text"}`.
pub const PANTO_EVENT_THINKING_DELTA: i32 = 3;
/// A fragment of a tool call's JSON arguments (not JSON on its own):
/// `{"type": "tool_input_delta", "index", "partial_json"}`.
pub const PANTO_EVENT_TOOL_INPUT_DELTA: i32 = 4;
/// A block is complete: `{"type": "block_complete", "index", "block"}`, the block as the
/// conversation JSON holds it.
pub const PANTO_EVENT_BLOCK_COMPLETE: i32 = 5;
/// An assistant message is complete and persisted:
/// `{"type": "message_complete", "usage": {...} or null, "stop_reason"}`.
pub const PANTO_EVENT_MESSAGE_COMPLETE: i32 = 6;
/// A tool call starts running: `{"type": "tool_start", "id", "name", "input"}`.
pub const PANTO_EVENT_TOOL_START: i32 = 7;
/// A tool call finished:
/// `{"type": "tool_complete", "id", "name", "content": [{"type": "text", "text"}...], "is_error"}`.
pub const PANTO_EVENT_TOOL_COMPLETE: i32 = 8;
/// A provider request failed and will be retried:
/// `{"type": "retry", "attempt", "delay_ms", "reason", "discard_partial"}`.
pub const PANTO_EVENT_RETRY: i32 = 9;
/// Compaction starts: `{"type": "compaction_start", "tokens_before"}`.
pub const PANTO_EVENT_COMPACTION_START: i32 = 10;
/// Compaction finished:
/// `{"type": "compaction_complete", "tokens_before", "tokens_after", "usage": {...} or null}`.
pub const PANTO_EVENT_COMPACTION_COMPLETE: i32 = 11;
/// The turn is over (the last event of its turn; a follow-up turn may follow on the same run):
/// `{"type": "turn_complete", "usage": {...}, "steps", "stop_reason"}`.
pub const PANTO_EVENT_TURN_COMPLETE: i32 = 12;
/// Text sent with `panto_run_steer` joined the conversation after the step's tool results:
/// `{"type": "steer", "text"}`.
pub const PANTO_EVENT_STEER: i32 = 13;
/// A queued follow-up (`panto_run_follow_up`, or a steer that came after the model's answer)
/// starts a new turn on the same run: `{"type": "follow_up_start", "text"}`.
pub const PANTO_EVENT_FOLLOW_UP_START: i32 = 14;

/// The kind number of each event JSON `type`. A new type in panto-core gets the next number
/// here; a test fails while a type of docs/events.schema.json has none.
const KINDS: [(&str, i32); 14] = [
    ("block_start", PANTO_EVENT_BLOCK_START),
    ("text_delta", PANTO_EVENT_TEXT_DELTA),
    ("thinking_delta", PANTO_EVENT_THINKING_DELTA),
    ("tool_input_delta", PANTO_EVENT_TOOL_INPUT_DELTA),
    ("block_complete", PANTO_EVENT_BLOCK_COMPLETE),
    ("message_complete", PANTO_EVENT_MESSAGE_COMPLETE),
    ("tool_start", PANTO_EVENT_TOOL_START),
    ("tool_complete", PANTO_EVENT_TOOL_COMPLETE),
    ("retry", PANTO_EVENT_RETRY),
    ("compaction_start", PANTO_EVENT_COMPACTION_START),
    ("compaction_complete", PANTO_EVENT_COMPACTION_COMPLETE),
    ("turn_complete", PANTO_EVENT_TURN_COMPLETE),
    ("steer", PANTO_EVENT_STEER),
    ("follow_up_start", PANTO_EVENT_FOLLOW_UP_START),
];

/// One event of a turn.
///
/// Ownership: returned owned by `panto_run_next_event`; freed with `panto_event_free`. Thread
/// safety: plain data; may be read from any thread and moved between threads.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_event {
    kind: i32,
    json: CString,
    /// What the accessors return, taken from the event so C needs no JSON parser for them.
    text: Option<CString>,
    tool_id: Option<CString>,
    tool_name: Option<CString>,
    tool_input: Option<CString>,
}

/// The fields the accessors hand out: (text, tool id, tool name, tool input JSON).
type Fields = (Option<String>, Option<String>, Option<String>, Option<String>);

/// The accessor fields of an event: the text of a text or thinking delta; the id and name of the
/// tool call a block start, tool start or tool complete is about; the input of a tool start.
fn fields(event: &Event) -> Fields {
    match event {
        Event::Delta {
            delta: ContentDelta::Text(text) | ContentDelta::Thinking(text),
            ..
        } => (Some(text.clone()), None, None, None),
        Event::BlockStart { tool: Some(tool), .. } => (None, Some(tool.id.clone()), Some(tool.name.clone()), None),
        Event::ToolDispatchStart { id, name, input } => {
            (None, Some(id.clone()), Some(name.clone()), Some(input.to_string()))
        }
        Event::ToolDispatchComplete { id, name, .. } => (None, Some(id.clone()), Some(name.clone()), None),
        _ => (None, None, None, None),
    }
}

impl Handle for panto_event {}

impl panto_event {
    /// The C form of `event`: its JSON, byte for byte what stream-json prints for it, and the
    /// number of its `type` (0 for a type without one, which a test rules out; the event is
    /// still delivered, so a reader can log it). `None` only if the event cannot be written as
    /// JSON, which cannot happen for `Event` (it has no map with non-string keys).
    pub(crate) fn from_core(event: &Event) -> Option<Self> {
        let json = serde_json::to_string(event).ok()?;
        let kind = serde_json::from_str::<Tag<'_>>(&json)
            .ok()
            .and_then(|tag| KINDS.iter().find(|(known, _)| *known == tag.name))
            .map_or(0, |(_, kind)| *kind);
        let (text, tool_id, tool_name, tool_input) = fields(event);
        Some(panto_event {
            kind,
            json: crate::cstr::to_cstring(json),
            text: text.map(crate::cstr::to_cstring),
            tool_id: tool_id.map(crate::cstr::to_cstring),
            tool_name: tool_name.map(crate::cstr::to_cstring),
            tool_input: tool_input.map(crate::cstr::to_cstring),
        })
    }
}

/// The `type` of an event's JSON; everything else is skipped unread.
#[derive(Deserialize)]
struct Tag<'a> {
    #[serde(rename = "type", borrow)]
    name: Cow<'a, str>,
}

/// The event's kind, one of the `PANTO_EVENT_*` constants (0 when `event` is NULL). New kinds
/// may be added in later versions: ignore kinds you do not know.
///
/// Thread safety: callable from any thread.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_kind(event: *const panto_event) -> i32 {
    crate::guard::guard_or(0, || {
        // SAFETY: the contract makes `event` NULL or live.
        unsafe { event.as_ref() }.map_or(0, |e| e.kind)
    })
}

/// The event's payload, a JSON object whose fields depend on the kind (see the `PANTO_EVENT_*`
/// constants and docs/ffi.md). "" when `event` is NULL.
///
/// Ownership: borrowed from `event`; valid until `panto_event_free(event)`. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_json(event: *const panto_event) -> *const c_char {
    crate::guard::guard_or(c"".as_ptr(), || {
        // SAFETY: the contract makes `event` NULL or live.
        unsafe { event.as_ref() }.map_or(c"".as_ptr(), |e| e.json.as_ptr())
    })
}

/// A borrowed accessor field: NULL when the event is NULL or has no such field.
///
/// # Safety
/// `event` must be NULL or a live event.
unsafe fn field(event: *const panto_event, get: fn(&panto_event) -> &Option<CString>) -> *const c_char {
    crate::guard::guard_or(std::ptr::null(), || {
        // SAFETY: the contract makes `event` NULL or live.
        unsafe { event.as_ref() }
            .and_then(|e| get(e).as_ref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// The text of a `PANTO_EVENT_TEXT_DELTA` or `PANTO_EVENT_THINKING_DELTA` (the JSON's `text`,
/// unescaped; it may be "" but never contains a NUL, which is dropped); NULL for other kinds and
/// when `event` is NULL.
///
/// Ownership: borrowed from `event`; valid until `panto_event_free(event)`. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_text(event: *const panto_event) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { field(event, |e| &e.text) }
}

/// The id of the tool call a `PANTO_EVENT_TOOL_START`, `PANTO_EVENT_TOOL_COMPLETE` or a
/// `PANTO_EVENT_BLOCK_START` of a tool call is about (e.g. `toolu_01`); NULL for other events
/// and when `event` is NULL.
///
/// Ownership: borrowed from `event`; valid until `panto_event_free(event)`. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_tool_id(event: *const panto_event) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { field(event, |e| &e.tool_id) }
}

/// The tool's name for the same events as `panto_event_tool_id`; NULL otherwise.
///
/// Ownership: borrowed from `event`; valid until `panto_event_free(event)`. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_tool_name(event: *const panto_event) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { field(event, |e| &e.tool_name) }
}

/// The arguments of a `PANTO_EVENT_TOOL_START` as a JSON object (e.g. `{"city":"Paris"}`);
/// NULL for other kinds and when `event` is NULL.
///
/// Ownership: borrowed from `event`; valid until `panto_event_free(event)`. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_tool_input_json(event: *const panto_event) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { field(event, |e| &e.tool_input) }
}

/// Frees an event. `panto_event_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per event.
///
/// # Safety
/// `event` must be NULL or an event from `panto_run_next_event` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_free(event: *mut panto_event) {
    // SAFETY: the caller gives up an event not yet freed (or NULL).
    unsafe { free(event) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panto_core::{
        BlockKind, ContentBlock, ContentDelta, RetryInfo, StopReason, ToolDetails, ToolResultContent, Usage,
    };
    use serde_json::{json, Value};
    use std::time::Duration;

    fn payload(event: Event) -> (i32, Value) {
        let e = panto_event::from_core(&event).expect("an event");
        let text = e.json.to_str().unwrap();
        assert_eq!(
            text,
            serde_json::to_string(&event).unwrap(),
            "the bytes stream-json prints"
        );
        let json: Value = serde_json::from_str(text).unwrap();
        panto_testkit::assert_event(&json);
        (e.kind, json)
    }

    #[test]
    fn every_type_of_the_schema_has_a_kind() {
        let mut numbered: Vec<&str> = KINDS.iter().map(|(name, _)| *name).collect();
        numbered.sort_unstable();
        let defined = panto_testkit::event_types().unwrap();
        assert_eq!(
            numbered, defined,
            "every event type of docs/events.schema.json needs a PANTO_EVENT_* number in KINDS, and only those"
        );
        let numbers: Vec<i32> = KINDS.iter().map(|(_, kind)| *kind).collect();
        assert_eq!(
            numbers,
            (1..=KINDS.len() as i32).collect::<Vec<_>>(),
            "kinds are numbered 1, 2, ... in order"
        );
    }

    #[test]
    fn payloads_are_the_event_json() {
        assert_eq!(
            payload(Event::BlockStart {
                index: 1,
                kind: BlockKind::ToolUse,
                tool: Some(ToolDetails {
                    id: "toolu_1".into(),
                    name: "get_weather".into()
                }),
            }),
            (
                PANTO_EVENT_BLOCK_START,
                json!({"type": "block_start", "index": 1, "kind": "tool_use",
                       "tool": {"id": "toolu_1", "name": "get_weather"}})
            )
        );
        assert_eq!(
            payload(Event::BlockStart {
                index: 0,
                kind: BlockKind::Thinking,
                tool: None,
            }),
            (
                PANTO_EVENT_BLOCK_START,
                json!({"type": "block_start", "index": 0, "kind": "thinking", "tool": null})
            )
        );
        assert_eq!(
            payload(Event::Delta {
                index: 0,
                delta: ContentDelta::Text("Hel".into())
            }),
            (
                PANTO_EVENT_TEXT_DELTA,
                json!({"type": "text_delta", "index": 0, "text": "Hel"})
            )
        );
        assert_eq!(
            payload(Event::Delta {
                index: 0,
                delta: ContentDelta::Thinking("Hmm".into())
            }),
            (
                PANTO_EVENT_THINKING_DELTA,
                json!({"type": "thinking_delta", "index": 0, "text": "Hmm"})
            )
        );
        assert_eq!(
            payload(Event::Delta {
                index: 1,
                delta: ContentDelta::ToolInput("{\"ci".into())
            }),
            (
                PANTO_EVENT_TOOL_INPUT_DELTA,
                json!({"type": "tool_input_delta", "index": 1, "partial_json": "{\"ci"})
            )
        );
        assert_eq!(
            payload(Event::BlockComplete {
                index: 0,
                block: ContentBlock::text("Hello")
            }),
            (
                PANTO_EVENT_BLOCK_COMPLETE,
                json!({"type": "block_complete", "index": 0, "block": {"type": "text", "text": "Hello"}})
            )
        );
        assert_eq!(
            payload(Event::ToolDispatchStart {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                input: json!({"city": "Paris"}),
            }),
            (
                PANTO_EVENT_TOOL_START,
                json!({"type": "tool_start", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}})
            )
        );
        assert_eq!(
            payload(Event::ToolDispatchComplete {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                content: vec![ToolResultContent::Text { text: "sunny".into() }],
                is_error: true,
            }),
            (
                PANTO_EVENT_TOOL_COMPLETE,
                json!({"type": "tool_complete", "id": "toolu_1", "name": "get_weather",
                       "content": [{"type": "text", "text": "sunny"}], "is_error": true})
            )
        );
        assert_eq!(
            payload(Event::ProviderRetry(RetryInfo {
                attempt: 2,
                delay: Duration::from_millis(1500),
                reason: "HTTP 529".into(),
                discard_partial: false,
            })),
            (
                PANTO_EVENT_RETRY,
                json!({"type": "retry", "attempt": 2, "delay_ms": 1500, "reason": "HTTP 529",
                       "discard_partial": false})
            )
        );
        assert_eq!(
            payload(Event::CompactionStart { tokens_before: 9 }),
            (
                PANTO_EVENT_COMPACTION_START,
                json!({"type": "compaction_start", "tokens_before": 9})
            )
        );
        assert_eq!(
            payload(Event::CompactionComplete {
                tokens_before: 9,
                tokens_after: 2,
                usage: None,
            }),
            (
                PANTO_EVENT_COMPACTION_COMPLETE,
                json!({"type": "compaction_complete", "tokens_before": 9, "tokens_after": 2, "usage": null})
            )
        );
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        };
        assert_eq!(
            payload(Event::TurnComplete {
                usage,
                steps: 2,
                stop_reason: StopReason::EndTurn
            }),
            (
                PANTO_EVENT_TURN_COMPLETE,
                json!({"type": "turn_complete",
                       "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0,
                                 "cache_write_tokens": 0}, "steps": 2, "stop_reason": "end_turn"})
            )
        );
        assert_eq!(
            payload(Event::MessageComplete {
                usage: None,
                stop_reason: StopReason::ToolUse
            }),
            (
                PANTO_EVENT_MESSAGE_COMPLETE,
                json!({"type": "message_complete", "usage": null, "stop_reason": "tool_use"})
            )
        );
    }
}
