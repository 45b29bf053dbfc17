//! What panto keeps of a model's tool call.
//!
//! A tool call is persisted, sent back on every later request, and read back by every store's
//! loader. A model or a server can put anything into one, so both decoders check each call as
//! it completes, and nothing that a later request or load would refuse enters the conversation:
//!
//! - **Ids** are 1 to [`MAX_TOOL_CALL_ID`] characters of `[A-Za-z0-9_-]`, unique in the
//!   conversation. Anthropic refuses a request whose `tool_use` ids are outside that alphabet
//!   or repeat one another; OpenAI refuses ids longer than 40 characters. A missing, malformed
//!   or repeated id is replaced by a minted one (`toolu_panto_<n>` or `call_panto_<n>`). An id
//!   only pairs a call with its result inside panto's own history, so the call is otherwise
//!   untouched and still runs.
//! - **Names** are offered names ([`is_tool_name`]), the rule every registered tool's name obeys
//!   and both APIs enforce on the calls in a request's history.
//! - **Input** is a JSON object nested at most [`MAX_INPUT_DEPTH`] levels deep.
//!
//! A call with a bad name or input is kept, so that the conversation stays valid, but never
//! as sent: its name becomes [`INVALID_NAME`], its input `{}`, and it is never run. The agent
//! answers it with an error result saying what was wrong ([`RejectedCall`]), so the model can
//! call again properly.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::conversation::{ContentBlock, Message};
use crate::registry::{is_tool_name, tool_name_rule};

/// The longest tool-call id kept as sent, in bytes: OpenAI refuses longer ones.
pub(crate) const MAX_TOOL_CALL_ID: usize = 40;

/// How deeply a tool call's input may nest (`{}` is 1 level, `{"a":[1]}` 2).
///
/// serde_json refuses to read JSON nested deeper than 128 levels, and a stored input sits
/// inside other objects: 4 levels of a JSONL entry (entry, message, content, block), 3 of a
/// PostgreSQL message column, 5 of an Anthropic request body, more wherever an embedder wraps
/// an event. Half the parser's limit leaves room for every one of them, and no real tool's
/// arguments come near it.
pub(crate) const MAX_INPUT_DEPTH: usize = 64;

/// The name a call keeps when the model sent no valid one.
pub(crate) const INVALID_NAME: &str = "invalid_tool_name";

/// The prefix of ids minted for Anthropic `tool_use` blocks.
pub(crate) const ANTHROPIC_ID_PREFIX: &str = "toolu_panto_";

/// The prefix of ids minted for OpenAI tool calls.
pub(crate) const OPENAI_ID_PREFIX: &str = "call_panto_";

/// Whether `id` may stand in the conversation as a tool call's id: 1 to [`MAX_TOOL_CALL_ID`]
/// characters of `[A-Za-z0-9_-]`.
pub(crate) fn is_tool_call_id(id: &str) -> bool {
    (1..=MAX_TOOL_CALL_ID).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name a call is shown and stored under: the model's if it is a offered name, else
/// [`INVALID_NAME`].
pub(crate) fn kept_name(wire: &str) -> &str {
    if is_tool_name(wire) {
        wire
    } else {
        INVALID_NAME
    }
}

/// A tool call kept in the message but not to be run, and the error result it gets instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RejectedCall {
    /// The call's id as it stands in the message.
    pub id: String,
    /// The text of its error result: what was wrong, and that the tool did not run.
    pub reason: String,
}

/// The checks of one response's tool calls: the ids already taken (in the conversation the
/// request carried, and by earlier calls of this response), and the calls rejected so far.
#[derive(Debug, Default)]
pub(crate) struct ToolCallCheck {
    taken: HashSet<String>,
    /// Where minting looks for a free number next, so that minting many ids stays linear.
    next_minted: usize,
    rejected: Vec<RejectedCall>,
}

impl ToolCallCheck {
    /// The check for a response to a request that carried `history`: its tool calls' ids are
    /// taken.
    pub(crate) fn after(history: &[Message]) -> Self {
        ToolCallCheck {
            taken: history
                .iter()
                .flat_map(Message::tool_uses)
                .map(|(id, _, _)| id.to_owned())
                .collect(),
            ..ToolCallCheck::default()
        }
    }

    /// The id a call gets: `wire` when it is a valid id nobody has taken, else a fresh
    /// `<prefix><n>`. Either way it is taken from now on.
    pub(crate) fn id(&mut self, wire: &str, prefix: &str) -> String {
        if is_tool_call_id(wire) && !self.taken.contains(wire) {
            self.taken.insert(wire.to_owned());
            return wire.to_owned();
        }
        loop {
            let id = format!("{prefix}{}", self.next_minted);
            self.next_minted += 1;
            if !self.taken.contains(&id) {
                self.taken.insert(id.clone());
                return id;
            }
        }
    }

    /// The finished call: `id` (from [`ToolCallCheck::id`]), the model's name, and its input as
    /// JSON text. A call with a bad name or input gets [`INVALID_NAME`] or `{}` in their place
    /// and is recorded as rejected.
    pub(crate) fn finish(&mut self, id: String, wire_name: &str, input_json: &str) -> ContentBlock {
        let name = kept_name(wire_name).to_owned();
        let (input, input_problem) = match parse_input(input_json) {
            Ok(input) => (input, None),
            Err(problem) => (Value::Object(Map::new()), Some(problem)),
        };
        let problem = if is_tool_name(wire_name) {
            input_problem
        } else {
            Some(format!(
                "tool name {} is not valid: {}",
                quoted(wire_name),
                tool_name_rule()
            ))
        };
        if let Some(problem) = problem {
            self.rejected.push(RejectedCall {
                id: id.clone(),
                reason: format!("{problem}; the tool was not run"),
            });
        }
        ContentBlock::ToolUse { id, name, input }
    }

    /// The calls rejected so far, leaving none.
    pub(crate) fn take_rejected(&mut self) -> Vec<RejectedCall> {
        std::mem::take(&mut self.rejected)
    }
}

/// A tool call's input: a JSON object at most [`MAX_INPUT_DEPTH`] deep, or what is wrong with
/// it, as a sentence for the model.
fn parse_input(json: &str) -> Result<Value, String> {
    let value: Value = match serde_json::from_str(json) {
        Ok(value) => value,
        // serde_json stops at 128 levels, which is past the limit anyway.
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => return Err(too_deep()),
        Err(e) => return Err(format!("tool input is not valid JSON ({e})")),
    };
    let kind = match &value {
        Value::Object(_) => None,
        Value::Array(_) => Some("an array"),
        Value::String(_) => Some("a string"),
        Value::Number(_) => Some("a number"),
        Value::Bool(_) => Some("a boolean"),
        Value::Null => Some("null"),
    };
    if let Some(kind) = kind {
        return Err(format!("tool input must be a JSON object, got {kind}"));
    }
    if depth(&value) > MAX_INPUT_DEPTH {
        return Err(too_deep());
    }
    Ok(value)
}

fn too_deep() -> String {
    format!("tool input is nested more than {MAX_INPUT_DEPTH} levels deep")
}

/// How many levels of arrays and objects `value` nests: 0 for a scalar, 1 for `{}`.
fn depth(value: &Value) -> usize {
    // serde_json has already bounded the nesting, so recursion is shallow.
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A model's name for the error text: quoted and escaped, and cut short when long.
fn quoted(name: &str) -> String {
    const SHOWN: usize = 64;
    match name.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}…", &name[..cut]),
        None => format!("{name:?}"),
    }
}

/// `{"a":{"a":…{}}}`, nested `levels` deep.
#[cfg(test)]
pub(crate) fn nested_object(levels: usize) -> String {
    format!(
        "{}{{{}",
        "{\"a\":".repeat(levels.saturating_sub(1)),
        "}".repeat(levels.max(1))
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation::Role;

    #[test]
    fn ids_outside_the_alphabet_or_too_long_are_refused() {
        assert!(is_tool_call_id("toolu_01VaRx1jpWCvPhi7L4kywAcd"));
        assert!(is_tool_call_id("call-1_A"));
        assert!(is_tool_call_id(&"x".repeat(MAX_TOOL_CALL_ID)));
        for bad in [
            "",
            "a\nb",
            "../etc",
            "a b",
            "tool.1",
            "é",
            &"x".repeat(MAX_TOOL_CALL_ID + 1),
        ] {
            assert!(!is_tool_call_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn bad_and_repeated_ids_are_minted_unique_in_the_conversation() {
        let history = vec![Message::new(
            Role::Assistant,
            vec![
                ContentBlock::ToolUse {
                    id: "toolu_a".into(),
                    name: "read".into(),
                    input: json!({}),
                },
                ContentBlock::ToolUse {
                    id: "toolu_panto_0".into(),
                    name: "read".into(),
                    input: json!({}),
                },
            ],
        )];
        let mut check = ToolCallCheck::after(&history);
        let ids: Vec<String> = ["toolu_b", "toolu_a", "", "x\ny", "toolu_b", "toolu_panto_2", "../x"]
            .into_iter()
            .map(|wire| check.id(wire, ANTHROPIC_ID_PREFIX))
            .collect();
        assert_eq!(
            ids,
            [
                "toolu_b",
                "toolu_panto_1",
                "toolu_panto_2",
                "toolu_panto_3",
                "toolu_panto_4",
                "toolu_panto_5",
                "toolu_panto_6"
            ]
        );
    }

    #[test]
    fn inputs_that_are_not_objects_are_replaced_and_rejected() {
        let cases = [
            (r#""ls -la""#, "tool input must be a JSON object, got a string"),
            ("[1,2]", "tool input must be a JSON object, got an array"),
            ("42", "tool input must be a JSON object, got a number"),
            ("true", "tool input must be a JSON object, got a boolean"),
            ("null", "tool input must be a JSON object, got null"),
            (
                r#"{"path": "a"#,
                "tool input is not valid JSON (EOF while parsing a string at line 1 column 11)",
            ),
        ];
        for (json, problem) in cases {
            let mut check = ToolCallCheck::default();
            let block = check.finish("call_1".into(), "read", json);
            assert_eq!(
                block,
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "read".into(),
                    input: json!({})
                },
                "{json}"
            );
            assert_eq!(
                check.take_rejected(),
                [RejectedCall {
                    id: "call_1".into(),
                    reason: format!("{problem}; the tool was not run"),
                }],
                "{json}"
            );
        }
    }

    #[test]
    fn depth_is_limited_well_below_the_parsers_limit() {
        let mut check = ToolCallCheck::default();
        let at_limit = nested_object(MAX_INPUT_DEPTH);
        let kept = check.finish("a".into(), "read", &at_limit);
        assert_eq!(
            kept,
            ContentBlock::ToolUse {
                id: "a".into(),
                name: "read".into(),
                input: serde_json::from_str(&at_limit).unwrap(),
            }
        );
        assert_eq!(check.take_rejected(), []);
        // Past the limit, up to where serde_json itself gives up, and beyond.
        for levels in [MAX_INPUT_DEPTH + 1, 126, 127, 128, 129, 500] {
            let block = check.finish("b".into(), "read", &nested_object(levels));
            assert!(
                matches!(&block, ContentBlock::ToolUse { input, .. } if *input == json!({})),
                "{levels}"
            );
            assert_eq!(
                check.take_rejected(),
                [RejectedCall {
                    id: "b".into(),
                    reason: "tool input is nested more than 64 levels deep; the tool was not run".into(),
                }],
                "{levels}"
            );
        }
        // Arrays count as levels too.
        let arrays = format!(
            "{{\"a\":{}{}}}",
            "[".repeat(MAX_INPUT_DEPTH),
            "]".repeat(MAX_INPUT_DEPTH)
        );
        check.finish("c".into(), "read", &arrays);
        assert_eq!(check.take_rejected().len(), 1);
    }

    #[test]
    fn a_bad_name_is_replaced_and_named_in_the_result() {
        let mut check = ToolCallCheck::default();
        let block = check.finish("a".into(), "read\u{1b}[2J../x", r#"{"path":"a"}"#);
        assert_eq!(
            block,
            ContentBlock::ToolUse {
                id: "a".into(),
                name: INVALID_NAME.into(),
                input: json!({"path": "a"}),
            }
        );
        assert_eq!(
            check.take_rejected(),
            [RejectedCall {
                id: "a".into(),
                reason: "tool name \"read\\u{1b}[2J../x\" is not valid: names must be 1 to 64 characters of \
                         A-Z, a-z, 0-9, '_' and '-'; the tool was not run"
                    .into(),
            }]
        );
        check.finish("b".into(), &"n".repeat(300), "{}");
        let reason = &check.take_rejected()[0].reason;
        assert!(
            reason.starts_with(&format!("tool name \"{}\"… is not valid", "n".repeat(64))),
            "{reason}"
        );
        check.finish("c".into(), "", "{}");
        assert!(check.take_rejected()[0]
            .reason
            .starts_with("tool name \"\" is not valid"));
    }
}
