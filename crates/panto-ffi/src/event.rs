//! `panto_event`: one step of a turn, as a kind (an integer) and a JSON payload.
//!
//! The payload of each kind is documented in docs/ffi.md; the tests in this module pin it.

use std::ffi::{c_char, CString};

use panto_core::{BlockKind, ContentDelta, Event};
use serde_json::{json, Value};

use crate::guard::take;

/// A content block starts: `{"index", "type": "text"|"thinking"|"redacted_thinking"|"tool_use"}`
/// plus `"id"` and `"name"` for a tool call.
pub const PANTO_EVENT_BLOCK_START: i32 = 1;
/// More text: `{"index", "text"}`.
pub const PANTO_EVENT_TEXT_DELTA: i32 = 2;
/// More reasoning: `{"index", "text"}`.
pub const PANTO_EVENT_THINKING_DELTA: i32 = 3;
/// A fragment of a tool call's JSON arguments (not JSON on its own): `{"index", "partial_json"}`.
pub const PANTO_EVENT_TOOL_INPUT_DELTA: i32 = 4;
/// A block is complete: `{"index", "block"}`, the block as the conversation JSON holds it.
pub const PANTO_EVENT_BLOCK_COMPLETE: i32 = 5;
/// An assistant message is complete and persisted: `{"usage": {...} or null, "stop_reason"}`.
pub const PANTO_EVENT_MESSAGE_COMPLETE: i32 = 6;
/// A tool call starts running: `{"id", "name", "input"}`.
pub const PANTO_EVENT_TOOL_START: i32 = 7;
/// A tool call finished: `{"id", "name", "content": [{"type": "text", "text"}...], "is_error"}`.
pub const PANTO_EVENT_TOOL_COMPLETE: i32 = 8;
/// A provider request failed and will be retried:
/// `{"attempt", "delay_ms", "reason", "discard_partial"}`.
pub const PANTO_EVENT_RETRY: i32 = 9;
/// Compaction starts: `{"tokens_before"}`.
pub const PANTO_EVENT_COMPACTION_START: i32 = 10;
/// Compaction finished: `{"tokens_before", "tokens_after"}`.
pub const PANTO_EVENT_COMPACTION_COMPLETE: i32 = 11;
/// The turn is over (always the last event): `{"usage": {...}, "steps", "stop_reason"}`.
pub const PANTO_EVENT_TURN_COMPLETE: i32 = 12;

/// One event of a turn.
///
/// Ownership: returned owned by `panto_run_next_event`; freed with `panto_event_free`. Thread
/// safety: plain data; may be read from any thread and moved between threads.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_event {
    kind: i32,
    json: CString,
}

impl panto_event {
    fn new(kind: i32, payload: Value) -> Self {
        panto_event {
            kind,
            json: crate::cstr::to_cstring(payload.to_string()),
        }
    }

    /// The C form of `event`, or `None` for a kind this version of libpanto does not know
    /// (panto-core's events are non-exhaustive; an unknown one is skipped, not misreported).
    pub(crate) fn from_core(event: &Event) -> Option<Self> {
        let (kind, payload) = match event {
            Event::BlockStart { index, kind, tool } => {
                let mut payload = json!({ "index": index, "type": block_kind(*kind)? });
                if let Some(tool) = tool {
                    payload["id"] = Value::from(tool.id.as_str());
                    payload["name"] = Value::from(tool.name.as_str());
                }
                (PANTO_EVENT_BLOCK_START, payload)
            }
            Event::Delta { index, delta } => match delta {
                ContentDelta::Text(text) => (PANTO_EVENT_TEXT_DELTA, json!({ "index": index, "text": text })),
                ContentDelta::Thinking(text) => (PANTO_EVENT_THINKING_DELTA, json!({ "index": index, "text": text })),
                ContentDelta::ToolInput(part) => (
                    PANTO_EVENT_TOOL_INPUT_DELTA,
                    json!({ "index": index, "partial_json": part }),
                ),
                _ => return None,
            },
            Event::BlockComplete { index, block } => (
                PANTO_EVENT_BLOCK_COMPLETE,
                json!({ "index": index, "block": serde_json::to_value(block).ok()? }),
            ),
            Event::MessageComplete { usage, stop_reason } => (
                PANTO_EVENT_MESSAGE_COMPLETE,
                json!({ "usage": usage, "stop_reason": stop_reason.as_str() }),
            ),
            Event::ToolDispatchStart { id, name, input } => (
                PANTO_EVENT_TOOL_START,
                json!({ "id": id, "name": name, "input": input }),
            ),
            Event::ToolDispatchComplete {
                id,
                name,
                content,
                is_error,
            } => (
                PANTO_EVENT_TOOL_COMPLETE,
                json!({ "id": id, "name": name, "content": content, "is_error": is_error }),
            ),
            Event::ProviderRetry(info) => (
                PANTO_EVENT_RETRY,
                json!({
                    "attempt": info.attempt,
                    "delay_ms": u64::try_from(info.delay.as_millis()).unwrap_or(u64::MAX),
                    "reason": info.reason,
                    "discard_partial": info.discard_partial,
                }),
            ),
            Event::CompactionStart { tokens_before } => {
                (PANTO_EVENT_COMPACTION_START, json!({ "tokens_before": tokens_before }))
            }
            Event::CompactionComplete {
                tokens_before,
                tokens_after,
                usage,
            } => (
                PANTO_EVENT_COMPACTION_COMPLETE,
                json!({ "tokens_before": tokens_before, "tokens_after": tokens_after, "usage": usage }),
            ),
            Event::TurnComplete {
                usage,
                steps,
                stop_reason,
            } => (
                PANTO_EVENT_TURN_COMPLETE,
                json!({ "usage": usage, "steps": steps, "stop_reason": stop_reason.as_str() }),
            ),
            _ => return None,
        };
        Some(panto_event::new(kind, payload))
    }
}

fn block_kind(kind: BlockKind) -> Option<&'static str> {
    Some(match kind {
        BlockKind::Text => "text",
        BlockKind::Thinking => "thinking",
        BlockKind::RedactedThinking => "redacted_thinking",
        BlockKind::ToolUse => "tool_use",
        _ => return None,
    })
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

/// Frees an event. `panto_event_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per event.
///
/// # Safety
/// `event` must be NULL or an event from `panto_run_next_event` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_event_free(event: *mut panto_event) {
    crate::guard::guard_void(|| {
        // SAFETY: the caller gives up a live event (or NULL).
        drop(unsafe { take(event) });
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use panto_core::{ContentBlock, RetryInfo, StopReason, ToolDetails, ToolResultContent, Usage};
    use std::time::Duration;

    fn payload(event: Event) -> (i32, Value) {
        let e = panto_event::from_core(&event).expect("a known event");
        (e.kind, serde_json::from_str(e.json.to_str().unwrap()).unwrap())
    }

    #[test]
    fn payloads_have_the_documented_shape() {
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
                json!({"index": 1, "type": "tool_use", "id": "toolu_1", "name": "get_weather"})
            )
        );
        assert_eq!(
            payload(Event::Delta {
                index: 0,
                delta: ContentDelta::Text("Hel".into())
            }),
            (PANTO_EVENT_TEXT_DELTA, json!({"index": 0, "text": "Hel"}))
        );
        assert_eq!(
            payload(Event::Delta {
                index: 1,
                delta: ContentDelta::ToolInput("{\"ci".into())
            }),
            (
                PANTO_EVENT_TOOL_INPUT_DELTA,
                json!({"index": 1, "partial_json": "{\"ci"})
            )
        );
        assert_eq!(
            payload(Event::BlockComplete {
                index: 0,
                block: ContentBlock::text("Hello")
            }),
            (
                PANTO_EVENT_BLOCK_COMPLETE,
                json!({"index": 0, "block": {"type": "text", "text": "Hello"}})
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
                json!({"id": "toolu_1", "name": "get_weather",
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
                json!({"attempt": 2, "delay_ms": 1500, "reason": "HTTP 529", "discard_partial": false})
            )
        );
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        };
        assert_eq!(
            payload(Event::TurnComplete {
                usage,
                steps: 2,
                stop_reason: StopReason::EndTurn
            }),
            (
                PANTO_EVENT_TURN_COMPLETE,
                json!({"usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0,
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
                json!({"usage": null, "stop_reason": "tool_use"})
            )
        );
    }
}
