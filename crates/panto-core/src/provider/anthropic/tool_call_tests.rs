//! Tool calls a hostile or broken model sends over the Messages API: what the decoder keeps of
//! them, and which it rejects (`provider::validate`).

use serde_json::{json, Value};

use super::AnthropicDecoder;
use crate::conversation::{ContentBlock, Message, Role};
use crate::event::ToolDetails;
use crate::provider::sse::testing::{decode_chunks, decode_every_way, Decoded};
use crate::provider::validate::{nested_object, RejectedCall, ToolCallCheck, INVALID_NAME};
use crate::provider::ProviderEvent;

/// A message of `tool_use` blocks, one per `(id, name, input)`, the input streamed as given.
fn tool_uses(calls: &[(&str, &str, &str)]) -> Vec<u8> {
    let mut body = String::new();
    let mut event = |name: &str, data: Value| body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "content": [], "model": "m", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    );
    for (index, (id, name, input)) in calls.iter().enumerate() {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": input}}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    body.into_bytes()
}

/// The tool calls of a decoded message as `(id, name, input)`, and its rejected calls.
fn calls(decoded: &Decoded) -> (Vec<(String, String, Value)>, Vec<RejectedCall>) {
    let Some(ProviderEvent::MessageComplete { blocks, rejected, .. }) = decoded.events.last() else {
        panic!("no message: {:?}", decoded.error);
    };
    let calls = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    (calls, rejected.clone())
}

fn call(id: &str, name: &str, input: Value) -> (String, String, Value) {
    (id.to_owned(), name.to_owned(), input)
}

fn rejected(id: &str, reason: &str) -> RejectedCall {
    RejectedCall {
        id: id.to_owned(),
        reason: format!("{reason}; the tool was not run"),
    }
}

#[test]
fn hostile_tool_calls_are_kept_in_a_form_later_requests_and_loads_accept() {
    let deep = nested_object(100);
    let long_id = "x".repeat(41);
    let body = tool_uses(&[
        ("toolu_1", "read", r#"{"path":"a.txt"}"#),
        // The same id again, and a string where the input object belongs.
        ("toolu_1", "read", r#""a.txt""#),
        // An id with a line end; input nested deeper than any store should hold.
        ("toolu_2\n", "read", &deep),
        // An id that is a path; a name carrying a terminal escape.
        ("../../etc/passwd", "read\u{1b}]0;owned\u{7}", "{}"),
        // No id; input cut off (as max_tokens leaves it).
        ("", "read", r#"{"path": "#),
        // An id longer than OpenAI takes back; an array for input.
        (&long_id, "read", "[1]"),
        // A valid id that an earlier minted one already took.
        ("toolu_panto_0", "write", r#"{"path":"b","content":""}"#),
    ]);
    let decoded = decode_every_way::<AnthropicDecoder>("hostile", &body);
    let (calls, rejected_calls) = calls(&decoded);
    assert_eq!(
        calls,
        [
            call("toolu_1", "read", json!({"path": "a.txt"})),
            call("toolu_panto_0", "read", json!({})),
            call("toolu_panto_1", "read", json!({})),
            call("toolu_panto_2", INVALID_NAME, json!({})),
            call("toolu_panto_3", "read", json!({})),
            call("toolu_panto_4", "read", json!({})),
            call("toolu_panto_5", "write", json!({"path": "b", "content": ""})),
        ]
    );
    assert_eq!(
        rejected_calls,
        [
            rejected("toolu_panto_0", "tool input must be a JSON object, got a string"),
            rejected("toolu_panto_1", "tool input is nested more than 64 levels deep"),
            rejected(
                "toolu_panto_2",
                "tool name \"read\\u{1b}]0;owned\\u{7}\" is not valid: names must be 1 to 64 characters of \
                 A-Z, a-z, 0-9, '_' and '-'"
            ),
            rejected(
                "toolu_panto_3",
                "tool input is not valid JSON (EOF while parsing a value at line 1 column 9)"
            ),
            rejected("toolu_panto_4", "tool input must be a JSON object, got an array"),
        ]
    );
    // Consumers saw each call under the id and name it keeps from its first event on.
    let starts: Vec<ToolDetails> = decoded
        .events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockStart { tool, .. } => tool.clone(),
            _ => None,
        })
        .collect();
    let kept: Vec<ToolDetails> = calls
        .iter()
        .map(|(id, name, _)| ToolDetails {
            id: id.clone(),
            name: name.clone(),
        })
        .collect();
    assert_eq!(starts, kept);
}

#[test]
fn ids_taken_earlier_in_the_conversation_are_minted_anew() {
    let history = [Message::new(
        Role::Assistant,
        vec![ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "read".into(),
            input: json!({}),
        }],
    )];
    let body = tool_uses(&[("toolu_1", "read", "{}"), ("toolu_2", "read", "{}")]);
    let decoded = decode_chunks(&mut AnthropicDecoder::new(ToolCallCheck::after(&history)), [&body[..]]);
    let (calls, rejected_calls) = calls(&decoded);
    assert_eq!(
        calls,
        [
            call("toolu_panto_0", "read", json!({})),
            call("toolu_2", "read", json!({}))
        ]
    );
    // A repeated id is the model's slip, not a reason to refuse the call.
    assert_eq!(rejected_calls, []);
}

#[test]
fn input_on_the_block_start_is_checked_too() {
    // Some proxies send the whole input in content_block_start and no deltas.
    let mut body = String::new();
    for (name, data) in [
        (
            "message_start",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"read","input":"a.txt"}}"#,
        ),
        ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ] {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    let decoded = decode_every_way::<AnthropicDecoder>("start input", body.as_bytes());
    assert_eq!(
        calls(&decoded),
        (
            vec![call("t1", "read", json!({}))],
            vec![rejected("t1", "tool input must be a JSON object, got a string")]
        )
    );
}
