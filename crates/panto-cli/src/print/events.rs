//! The JSON lines of print mode: the `session` line stream-json starts with, and the result
//! object both JSON formats end with. The lines between are events, which panto-core writes
//! (`serde_json` of the `Event`, docs/events.md); docs/cli.md documents every field.

use panto_core::store::ForkOrigin;
use panto_core::{StopReason, Usage, EVENT_SCHEMA_VERSION};
use serde_json::{json, Value};

use crate::cost::dollars;

/// What stream-json's first line says about the session the turn runs in.
#[derive(Debug, Clone)]
pub struct SessionLine<'a> {
    /// The session id.
    pub session_id: &'a str,
    /// Whether the session is persisted (false with `--no-session`).
    pub persisted: bool,
    /// Whether an existing session was resumed.
    pub resumed: bool,
    /// The wire model name.
    pub model: &'a str,
    /// The configured alias, if the model was picked by one.
    pub alias: Option<&'a str>,
    /// The API style, as the config file spells it.
    pub api_style: &'a str,
    /// Where the session was forked from (`-r ID --fork`, or an earlier fork resumed).
    pub forked_from: Option<&'a ForkOrigin>,
}

impl SessionLine<'_> {
    /// The `session` object. `version` is the version of the event JSON and of these lines
    /// (docs/events.md): a reader checks it before it reads on.
    pub fn to_json(&self) -> Value {
        json!({
            "type": "session",
            "version": EVENT_SCHEMA_VERSION,
            "session_id": self.session_id,
            "persisted": self.persisted,
            "resumed": self.resumed,
            "model": self.model,
            "alias": self.alias,
            "api_style": self.api_style,
            "forked_from": self.forked_from.map(|f| json!({"session": f.session, "entry": f.entry})),
        })
    }
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
    use super::*;

    #[test]
    fn the_session_line_carries_the_event_json_version() {
        let v = SessionLine {
            session_id: "s",
            persisted: false,
            resumed: true,
            model: "m",
            alias: Some("fast"),
            api_style: "openai-chat",
            forked_from: None,
        }
        .to_json();
        assert_eq!(
            v,
            json!({"type": "session", "version": 2, "session_id": "s", "persisted": false, "resumed": true,
                   "model": "m", "alias": "fast", "api_style": "openai-chat", "forked_from": null})
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
