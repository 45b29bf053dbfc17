//! Tool calls a hostile or broken model (or compatible server) sends over Chat Completions: what
//! the decoder keeps of them, and which it rejects (`provider::validate`).

use serde_json::{json, Value};

use super::OpenAiDecoder;
use crate::conversation::{ContentBlock, Message, Role};
use crate::event::ToolDetails;
use crate::provider::sse::testing::{decode_chunks, decode_every_way, Decoded};
use crate::provider::validate::{nested_object, RejectedCall, ToolCallCheck, INVALID_NAME};
use crate::provider::ProviderEvent;

/// A body of one chunk per `tool_calls` delta, then a finish reason and `[DONE]`.
fn chunks(deltas: &[Value]) -> Vec<u8> {
    let mut body = String::new();
    for delta in deltas {
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Tool calls as OpenAI streams them: the first fragment carries index, id and name, the second
/// the arguments.
fn tool_calls(calls: &[(&str, &str, &str)]) -> Vec<u8> {
    let deltas: Vec<Value> = calls
        .iter()
        .enumerate()
        .flat_map(|(index, (id, name, arguments))| {
            [
                json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}),
                json!({"index": index, "function": {"arguments": arguments}}),
            ]
        })
        .collect();
    chunks(&deltas)
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

fn starts(decoded: &Decoded) -> Vec<ToolDetails> {
    decoded
        .events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockStart { tool, .. } => tool.clone(),
            _ => None,
        })
        .collect()
}

#[test]
fn hostile_tool_calls_are_kept_in_a_form_later_requests_and_loads_accept() {
    let deep = nested_object(127);
    let body = tool_calls(&[
        ("call_1", "read", r#"{"path":"a.txt"}"#),
        ("call_1", "read", "42"),
        ("call 2\r\n", "read", &deep),
        ("../x", "", "{}"),
        ("call_4", "read", "{\"path\": \"a.txt\"} trailing"),
        ("call_5", "read", "null"),
        ("call_panto_0", "write", r#"{"path":"b"}"#),
    ]);
    let decoded = decode_every_way::<OpenAiDecoder>("hostile", &body);
    let (calls, rejected_calls) = calls(&decoded);
    assert_eq!(
        calls,
        [
            call("call_1", "read", json!({"path": "a.txt"})),
            call("call_panto_0", "read", json!({})),
            call("call_panto_1", "read", json!({})),
            call("call_panto_2", INVALID_NAME, json!({})),
            call("call_4", "read", json!({})),
            call("call_5", "read", json!({})),
            call("call_panto_3", "write", json!({"path": "b"})),
        ]
    );
    assert_eq!(
        rejected_calls,
        [
            rejected("call_panto_0", "tool input must be a JSON object, got a number"),
            rejected("call_panto_1", "tool input is nested more than 64 levels deep"),
            rejected(
                "call_panto_2",
                "tool name \"\" is not valid: names must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'"
            ),
            rejected(
                "call_4",
                "tool input is not valid JSON (trailing characters at line 1 column 19)"
            ),
            rejected("call_5", "tool input must be a JSON object, got null"),
        ]
    );
    let kept: Vec<ToolDetails> = calls
        .iter()
        .map(|(id, name, _)| ToolDetails {
            id: id.clone(),
            name: name.clone(),
        })
        .collect();
    let mut shown = starts(&decoded);
    // The empty name was not known to be missing until the call completed.
    assert_eq!(shown[3].name, "");
    shown[3].name = INVALID_NAME.into();
    assert_eq!(shown, kept);
}

#[test]
fn a_server_that_sends_no_ids_gets_minted_ones_from_the_first_event() {
    let decoded = decode_every_way::<OpenAiDecoder>(
        "no ids",
        &chunks(&[
            json!({"index": 0, "function": {"name": "read", "arguments": "{\"path\":"}}),
            json!({"index": 0, "function": {"arguments": "\"a\"}"}}),
            json!({"index": 1, "function": {"name": "read", "arguments": "{}"}}),
        ]),
    );
    let (calls, rejected_calls) = calls(&decoded);
    assert_eq!(
        calls,
        [
            call("call_panto_0", "read", json!({"path": "a"})),
            call("call_panto_1", "read", json!({}))
        ]
    );
    assert_eq!(rejected_calls, []);
    let ids: Vec<String> = starts(&decoded).into_iter().map(|t| t.id).collect();
    assert_eq!(ids, ["call_panto_0", "call_panto_1"]);
}

#[test]
fn a_replaced_id_repeated_on_fragments_without_an_index_still_continues_its_call() {
    // Fragments without an index belong together while they repeat the call's id; the id is
    // too long to keep, which must not split the call.
    let long_id = format!("call_{}", "z".repeat(60));
    let decoded = decode_every_way::<OpenAiDecoder>(
        "long repeated id",
        &chunks(&[
            json!({"id": long_id, "function": {"name": "read", "arguments": "{\"path\":"}}),
            json!({"id": long_id, "function": {"name": "read", "arguments": "\"a\"}"}}),
            json!({"id": "call_2", "function": {"name": "read", "arguments": "{}"}}),
        ]),
    );
    assert_eq!(
        calls(&decoded).0,
        [
            call("call_panto_0", "read", json!({"path": "a"})),
            call("call_2", "read", json!({}))
        ]
    );
}

#[test]
fn ids_taken_earlier_in_the_conversation_are_minted_anew() {
    let history = [Message::new(
        Role::Assistant,
        vec![ContentBlock::ToolUse {
            id: "call_1".into(),
            name: "read".into(),
            input: json!({}),
        }],
    )];
    let body = tool_calls(&[("call_1", "read", "{}")]);
    let decoded = decode_chunks(&mut OpenAiDecoder::new(ToolCallCheck::after(&history)), [&body[..]]);
    assert_eq!(calls(&decoded), (vec![call("call_panto_0", "read", json!({}))], vec![]));
}
