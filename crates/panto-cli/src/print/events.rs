//! The JSON shapes of print mode: one object per [`Event`] for `stream-json`, and the result
//! object both JSON formats end with. docs/cli.md documents every field.

use panto_core::{BlockKind, ContentDelta, Event, StopReason, Usage};
use serde_json::{json, Value};

use crate::cost::dollars;

fn kind_str(kind: &BlockKind) -> &'static str {
    match kind {
        BlockKind::Text => "text",
        BlockKind::Thinking => "thinking",
        BlockKind::RedactedThinking => "redacted_thinking",
        BlockKind::ToolUse => "tool_use",
        _ => "unknown",
    }
}

/// The `stream-json` line of one event; `None` for event kinds this version does not know (the
/// core's event set may grow).
pub fn event_json(event: &Event) -> Option<Value> {
    Some(match event {
        Event::BlockStart { index, kind, tool } => {
            let mut v = json!({"type": "block_start", "index": index, "kind": kind_str(kind)});
            if let Some(tool) = tool {
                v["tool"] = json!({"id": tool.id, "name": tool.name});
            }
            v
        }
        Event::Delta { index, delta } => {
            let (kind, text) = match delta {
                ContentDelta::Text(t) => ("text", t),
                ContentDelta::Thinking(t) => ("thinking", t),
                ContentDelta::ToolInput(t) => ("tool_input", t),
                _ => return None,
            };
            json!({"type": "delta", "index": index, "kind": kind, "text": text})
        }
        Event::BlockComplete { index, block } => json!({
            "type": "block_complete",
            "index": index,
            "block": serde_json::to_value(block).unwrap_or(Value::Null),
        }),
        Event::MessageComplete { usage, stop_reason } => json!({
            "type": "message_complete",
            "usage": usage,
            "stop_reason": stop_reason.as_str(),
        }),
        Event::ToolDispatchStart { id, name, input } => json!({
            "type": "tool_start", "id": id, "name": name, "input": input,
        }),
        Event::ToolDispatchComplete {
            id,
            name,
            content,
            is_error,
        } => json!({
            "type": "tool_complete",
            "id": id,
            "name": name,
            "content": serde_json::to_value(content).unwrap_or(Value::Null),
            "is_error": is_error,
        }),
        Event::ProviderRetry(info) => json!({
            "type": "retry",
            "attempt": info.attempt,
            "delay_ms": u64::try_from(info.delay.as_millis()).unwrap_or(u64::MAX),
            "reason": info.reason,
            "discard_partial": info.discard_partial,
        }),
        Event::CompactionStart { tokens_before } => json!({
            "type": "compaction_start", "tokens_before": tokens_before,
        }),
        Event::CompactionComplete {
            tokens_before,
            tokens_after,
            usage,
        } => json!({
            "type": "compaction_complete", "tokens_before": tokens_before, "tokens_after": tokens_after,
            "usage": usage,
        }),
        Event::TurnComplete {
            usage,
            steps,
            stop_reason,
        } => json!({
            "type": "turn_complete",
            "usage": usage,
            "steps": steps,
            "stop_reason": stop_reason.as_str(),
        }),
        _ => return None,
    })
}

/// What a finished (or failed) print-mode turn reports.
#[derive(Debug, Clone)]
pub struct TurnResult {
    /// The session id.
    pub session_id: String,
    /// Whether the session is persisted (false with `--no-session`).
    pub persisted: bool,
    /// The model's label and wire name.
    pub model: String,
    /// The final assistant text (empty when the turn failed before one).
    pub text: String,
    /// Usage over the turn.
    pub usage: Usage,
    /// Cost in micro-cents, when pricing is known.
    pub cost: Option<u64>,
    /// Why the last message stopped.
    pub stop_reason: Option<StopReason>,
    /// Provider requests made.
    pub steps: u32,
    /// The error, when the turn failed.
    pub error: Option<String>,
}

impl TurnResult {
    /// The `result` object.
    pub fn to_json(&self) -> Value {
        json!({
            "type": "result",
            "is_error": self.error.is_some(),
            "error": self.error,
            "session_id": self.session_id,
            "persisted": self.persisted,
            "model": self.model,
            "text": self.text,
            "stop_reason": self.stop_reason.as_ref().map(StopReason::as_str),
            "steps": self.steps,
            "usage": self.usage,
            "cost_micro_cents": self.cost,
            "cost_usd": self.cost.map(dollars),
        })
    }
}

#[cfg(test)]
mod tests {
    use panto_core::{ContentBlock, ToolDetails};

    use super::*;

    #[test]
    fn events_map_to_typed_lines() {
        let v = event_json(&Event::BlockStart {
            index: 1,
            kind: BlockKind::ToolUse,
            tool: Some(ToolDetails {
                id: "t".into(),
                name: "bash".into(),
            }),
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"type": "block_start", "index": 1, "kind": "tool_use", "tool": {"id": "t", "name": "bash"}})
        );
        let v = event_json(&Event::BlockComplete {
            index: 0,
            block: ContentBlock::text("hi"),
        })
        .unwrap();
        assert_eq!(v["block"], json!({"type": "text", "text": "hi"}));
        let v = event_json(&Event::MessageComplete {
            usage: None,
            stop_reason: StopReason::ToolUse,
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"type": "message_complete", "usage": null, "stop_reason": "tool_use"})
        );
    }

    #[test]
    fn result_carries_cost_in_both_units() {
        let r = TurnResult {
            session_id: "s".into(),
            persisted: true,
            model: "m".into(),
            text: "t".into(),
            usage: Usage::default(),
            cost: Some(150_000_000),
            stop_reason: Some(StopReason::EndTurn),
            steps: 1,
            error: None,
        };
        let v = r.to_json();
        assert_eq!(v["cost_micro_cents"], 150_000_000);
        assert_eq!(v["cost_usd"], 1.5);
        assert_eq!(v["is_error"], false);
        assert_eq!(v["stop_reason"], "end_turn");
    }
}
