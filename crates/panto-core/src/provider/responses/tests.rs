use serde_json::{json, Value};

use super::*;
use crate::config::ApiStyle;
use crate::conversation::ToolDecl;
use crate::conversation::{StopReason, Usage};
use crate::error::Error;
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::request_json;
use crate::provider::sse::testing::{decode_every_way, decode_fixture_every_way, Decoded};
use crate::provider::ProviderEvent;

fn config() -> ProviderConfig {
    ProviderConfig::new(ApiStyle::OpenAiResponses, "gpt-5")
        .with_base_url("https://api.openai.com/v1/")
        .with_api_key("sk-test")
}

fn user(content: Vec<ContentBlock>) -> Message {
    Message::new(Role::User, content)
}

fn assistant(content: Vec<ContentBlock>) -> Message {
    Message::new(Role::Assistant, content)
}

fn text(s: &str) -> ContentBlock {
    ContentBlock::text(s)
}

fn thinking(s: &str) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: s.into(),
        signature: None,
    }
}

fn reasoning(id: &str, summary: &[&str], encrypted: &str) -> ContentBlock {
    ContentBlock::Reasoning {
        id: id.into(),
        summary: summary.iter().map(|s| (*s).to_owned()).collect(),
        encrypted_content: encrypted.into(),
    }
}

fn tool_use(id: &str, name: &str, input: serde_json::Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

fn body_for(
    config: &ProviderConfig,
    system: &[&str],
    messages: &[Message],
    tools: &[ToolDecl],
    require_tool: bool,
) -> Value {
    request_json(&ProviderRequest {
        config,
        system,
        messages,
        tools,
        require_tool,
        session_id: "",
    })
}

#[test]
fn endpoint_and_headers() {
    assert_eq!(
        endpoint("https://api.openai.com/v1/"),
        "https://api.openai.com/v1/responses"
    );
    assert_eq!(
        headers(&config()),
        vec![("Authorization".to_owned(), "Bearer sk-test".to_owned())]
    );
}

#[test]
fn a_stateless_request_carries_the_whole_history_as_items() {
    let messages = vec![
        Message::new(
            Role::System,
            vec![text("ignored: the system prompt travels in `system`")],
        ),
        user(vec![
            text("What is in this picture, and the weather?"),
            ContentBlock::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        ]),
        assistant(vec![
            thinking("**Looking**\n\nA cat."),
            reasoning("rs_1", &["**Looking**", "A cat."], "gAAAAB-enc-1"),
            text("A cat. Checking the weather."),
            tool_use("call_a", "get_weather", json!({"city": "Paris"})),
            tool_use("call_b", "snapshot", json!({})),
        ]),
        user(vec![
            ContentBlock::ToolResult {
                tool_use_id: "call_a".into(),
                content: vec![ToolResultContent::Text { text: "sunny".into() }],
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "call_b".into(),
                content: vec![
                    ToolResultContent::Text { text: "camera".into() },
                    ToolResultContent::Image {
                        media_type: "image/jpeg".into(),
                        data: "/9j/".into(),
                    },
                ],
                is_error: true,
            },
        ]),
        // Anthropic's opaque reasoning is for Anthropic only; a reasoning item nothing follows
        // (a cancelled turn) would be refused.
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "signed".into(),
                signature: Some("sig".into()),
            },
            ContentBlock::RedactedThinking { data: "opaque".into() },
            text("Sunny in Paris."),
            reasoning("rs_2", &[], "gAAAAB-enc-2"),
        ]),
        user(vec![ContentBlock::CompactionSummary { summary: "s".into() }]),
    ];
    let tools = vec![ToolDecl {
        name: "get_weather".into(),
        description: "Weather.".into(),
        input_schema: json!({"type": "object"}),
    }];
    let mut c = config();
    c.reasoning = ReasoningEffort::High;
    c.max_tokens = 1234;
    let body = body_for(&c, &["You are terse.", "Be kind."], &messages, &tools, true);
    assert_eq!(
        body,
        json!({
            "model": "gpt-5",
            "stream": true,
            "store": false,
            "instructions": "You are terse.\n\nBe kind.",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "What is in this picture, and the weather?"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
                ]},
                {"type": "reasoning", "id": "rs_1", "summary": [
                    {"type": "summary_text", "text": "**Looking**"},
                    {"type": "summary_text", "text": "A cat."},
                ], "encrypted_content": "gAAAAB-enc-1"},
                {"type": "message", "role": "assistant", "content": "A cat. Checking the weather."},
                {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call", "call_id": "call_b", "name": "snapshot", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
                {"type": "function_call_output", "call_id": "call_b", "output": [
                    {"type": "input_text", "text": "Error:"},
                    {"type": "input_text", "text": "camera"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/", "detail": "auto"},
                ]},
                {"type": "message", "role": "assistant", "content": "Sunny in Paris."},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "Summary of the conversation so far:\n\n<summary>s</summary>"},
                ]},
            ],
            "max_output_tokens": 1234,
            "reasoning": {"effort": "high", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "tools": [{"type": "function", "name": "get_weather", "description": "Weather.",
                "parameters": {"type": "object"}, "strict": false}],
            "tool_choice": "required",
        })
    );
    // Without an effort, neither reasoning nor the include (models without reasoning refuse
    // it); no tools, no tool choice; no system prompt, no instructions.
    let body = body_for(&config(), &[], &messages[..2], &[], true);
    for absent in ["reasoning", "include", "tools", "tool_choice", "instructions"] {
        assert!(body.get(absent).is_none(), "{absent}: {body}");
    }
}

// ---- decoding ----

fn decode(path: &str) -> Decoded {
    decode_fixture_every_way::<ResponsesDecoder>(path)
}

/// `usage` with this many of its output tokens reported as reasoning.
fn with_reasoning(usage: Option<Usage>, reasoning_tokens: u64) -> Option<Usage> {
    usage.map(|u| Usage { reasoning_tokens, ..u })
}

fn usage(input: u64, output: u64, cache_read: u64) -> Option<Usage> {
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    })
}

fn assert_message(path: &str, blocks: &[ContentBlock], usage_expected: Option<Usage>, stop: StopReason) -> Decoded {
    let decoded = decode(path);
    let (got_blocks, got_usage, got_stop) = decoded.message();
    assert_eq!(got_blocks, blocks, "{path}");
    assert_eq!(got_usage, usage_expected, "{path}");
    assert_eq!(got_stop, &stop, "{path}");
    decoded
}

/// The encrypted reasoning of a fixture's reasoning item.
fn encrypted_of(path: &str, item: &str) -> String {
    let body = String::from_utf8(crate::provider::sse::testing::fixture(path)).unwrap();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let v: Value = serde_json::from_str(data).unwrap();
        if v["type"] == "response.output_item.done" && v["item"]["id"] == item {
            return v["item"]["encrypted_content"].as_str().unwrap().to_owned();
        }
    }
    panic!("{path}: no reasoning item {item}");
}

#[test]
fn text_only() {
    let decoded = assert_message(
        "responses/text-basic.sse",
        &[text("Hello! How can I help you today?")],
        usage(19, 10, 0),
        StopReason::EndTurn,
    );
    assert_eq!(
        decoded.events[..2],
        [
            ProviderEvent::BlockStart {
                index: 0,
                kind: BlockKind::Text,
                tool: None
            },
            ProviderEvent::Delta {
                index: 0,
                delta: ContentDelta::Text("Hello".into())
            },
        ]
    );
}

#[test]
fn reasoning_summary_streams_as_thinking_and_the_encrypted_item_is_kept() {
    let path = "responses/reasoning-summary-function-call.sse";
    let item = "rs_68c1f0a4d1f48190a3c5e7f9b1d3f5a70b1e3d5f7a9c2e4b";
    let first = "**Checking the weather**\n\nThe user asks about Paris.";
    let second = "**Calling get_weather**\n\nI'll call the tool with the city.";
    let decoded = assert_message(
        path,
        &[
            thinking(&format!("{first}\n\n{second}")),
            reasoning(item, &[first, second], &encrypted_of(path, item)),
            tool_use(
                "call_Xk3q9ZrT2wLmN8vB5cYd1FgH",
                "get_weather",
                json!({"location": "Paris, France"}),
            ),
        ],
        // 312 input tokens of which 256 cached; 148 output including 128 of reasoning.
        with_reasoning(usage(56, 148, 256), 128),
        StopReason::ToolUse,
    );
    // The reasoning item arrives whole, after its summary, and is announced as such.
    assert!(decoded.events.contains(&ProviderEvent::BlockStart {
        index: 1,
        kind: BlockKind::Reasoning,
        tool: None
    }));
    assert!(decoded.events.contains(&ProviderEvent::BlockStart {
        index: 2,
        kind: BlockKind::ToolUse,
        tool: Some(ToolDetails {
            id: "call_Xk3q9ZrT2wLmN8vB5cYd1FgH".into(),
            name: "get_weather".into()
        })
    }));
}

#[test]
fn parallel_function_calls() {
    assert_message(
        "responses/parallel-function-calls.sse",
        &[
            tool_use(
                "call_Pq7Lm2Nx9Rt4Vw6Yz8Ab1Cd3",
                "get_weather",
                json!({"location": "Paris"}),
            ),
            tool_use(
                "call_Ef5Gh7Ij9Kl1Mn3Op5Qr7St9",
                "get_weather",
                json!({"location": "Tokyo"}),
            ),
        ],
        usage(83, 52, 0),
        StopReason::ToolUse,
    );
}

#[test]
fn incomplete_responses_end_with_their_reason() {
    let path = "responses/incomplete-max-output-tokens.sse";
    let item = "rs_68c1f0a815d38190e7a9c1d3f5b7d9eb0b1e3d5f7a9c2e4b";
    assert_message(
        path,
        &[
            thinking("**Listing meanings**"),
            reasoning(item, &["**Listing meanings**"], &encrypted_of(path, item)),
            text("A cell is the basic"),
        ],
        with_reasoning(usage(14, 200, 0), 192),
        StopReason::MaxTokens,
    );
    assert_message(
        "responses/incomplete-content-filter.sse",
        &[text("I can")],
        usage(25, 2, 0),
        StopReason::ContentFilter,
    );
}

#[test]
fn failures_are_classified_like_the_other_apis() {
    let error = |path: &str| decode(path).error.unwrap_or_else(|| panic!("{path}: no error"));
    let e = error("responses/failed-server-error.sse");
    assert!(
        matches!(&e, Error::StreamError { error_type: Some(t), .. } if t == "server_error"),
        "{e:?}"
    );
    assert!(e.is_retryable());
    let e = error("responses/error-event-rate-limit.sse");
    assert!(
        matches!(&e, Error::StreamError { error_type: Some(t), message } if t == "rate_limit_exceeded" && message.contains("try again in 2.8s")),
        "{e:?}"
    );
    assert!(e.is_retryable());
    let e = error("responses/error-event-context-length-exceeded.sse");
    assert!(matches!(e, Error::ContextOverflow { .. }), "{e:?}");
    // An error the model caused is not retried.
    let body =
        "event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_prompt\",\"message\":\"bad\",\"param\":null}\n\n";
    let e = decode_every_way::<ResponsesDecoder>("invalid_prompt", body.as_bytes())
        .error
        .unwrap();
    assert!(!e.is_retryable(), "{e:?}");
}

fn body(events: &[&str]) -> Vec<u8> {
    events
        .iter()
        .map(|e| {
            let kind: Value = serde_json::from_str(e).unwrap();
            format!("event: {}\ndata: {e}\n\n", kind["type"].as_str().unwrap())
        })
        .collect::<String>()
        .into_bytes()
}

const COMPLETED: &str =
    r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":5,"output_tokens":1}}}"#;

#[test]
fn a_stream_without_its_terminal_event_is_truncated() {
    let b = body(&[
        r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
        r#"{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}"#,
    ]);
    let decoded = decode_every_way::<ResponsesDecoder>("truncated", &b);
    assert!(
        matches!(
            decoded.error,
            Some(Error::Truncated {
                expected: "response.completed"
            })
        ),
        "{:?}",
        decoded.error
    );
    // What streamed before the cut was delivered first.
    assert!(decoded.events.contains(&ProviderEvent::Delta {
        index: 0,
        delta: ContentDelta::Text("Hi".into())
    }));
}

#[test]
fn unknown_events_are_skipped_and_items_without_deltas_still_count() {
    let b = body(&[
        r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
        r#"{"type":"response.some_future_event","output_index":0,"delta":{"x":1}}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1","content":[{"type":"output_text","text":"Whole."}]}}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"echo","arguments":"{\"a\":1}"}}"#,
        r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"web_search_call","id":"ws_1"}}"#,
        // Without `encrypted_content` (the include was ignored) a reasoning item's summary is
        // still shown, but there is nothing to send back.
        r#"{"type":"response.output_item.done","output_index":3,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Hmm."}]}}"#,
        COMPLETED,
    ]);
    let decoded = decode_every_way::<ResponsesDecoder>("no deltas", &b);
    let (blocks, usage, stop) = decoded.message();
    assert_eq!(
        blocks,
        &[
            text("Whole."),
            tool_use("call_1", "echo", json!({"a": 1})),
            thinking("Hmm.")
        ]
    );
    assert_eq!(usage.map(|u| u.input_tokens), Some(5));
    assert_eq!(stop, &StopReason::ToolUse);
}

#[test]
fn bad_streams_are_errors_naming_what_was_wrong() {
    for (events, expected) in [
        (
            vec![
                r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#,
                r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message"}}"#,
                r#"{"type":"response.output_text.delta","output_index":0,"delta":"b"}"#,
            ],
            "content for output item 0 arrived after it was complete",
        ),
        (
            vec![r#"{"type":"response.function_call_arguments.delta","output_index":4,"delta":"{}"}"#],
            "arguments for output item 4, which is not an open function call",
        ),
        (vec![r#"{"delta":"no type"}"#], "invalid Responses event payload"),
    ] {
        let decoded = decode_every_way::<ResponsesDecoder>(expected, &body_raw(&events));
        let e = decoded.error.unwrap_or_else(|| panic!("{expected}: no error"));
        assert!(e.to_string().contains(expected), "{e}");
    }
}

/// Events without `event:` lines (the decoder reads `type` from the data).
fn body_raw(events: &[&str]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn tool_call_ids_and_names_are_checked_as_they_complete() {
    let b = body(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"call_taken","name":"echo","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"call_taken","name":"echo","arguments":"{}"}}"#,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"call 2","name":"bad.name","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"[1]"}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"call 2","name":"bad.name","arguments":"[1]"}}"#,
        COMPLETED,
    ]);
    let history = vec![assistant(vec![tool_use("call_taken", "echo", json!({}))])];
    let mut decoder = ResponsesDecoder::new(crate::provider::validate::ToolCallCheck::after(&history));
    let decoded = crate::provider::sse::testing::decode_chunks(&mut decoder, [&b[..]]);
    match decoded.events.last() {
        Some(ProviderEvent::MessageComplete { blocks, rejected, .. }) => {
            assert_eq!(
                blocks,
                &[
                    tool_use("call_panto_0", "echo", json!({})),
                    tool_use("call_panto_1", crate::provider::validate::INVALID_NAME, json!({})),
                ]
            );
            assert_eq!(rejected.len(), 1);
            assert_eq!(rejected[0].id, "call_panto_1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_session_id_is_the_prompt_cache_key_when_configured() {
    let keyed = config().with_prompt_cache_key(true);
    let body = request_json(&ProviderRequest {
        config: &keyed,
        system: &[],
        messages: &[],
        tools: &[],
        require_tool: false,
        session_id: "0190abcd",
    });
    assert_eq!(body["prompt_cache_key"], "0190abcd");
    let body = body_for(&config(), &[], &[], &[], false);
    assert!(body.get("prompt_cache_key").is_none(), "{body}");
}

// ---- interleaved output items ----

/// The blocks' start and complete events, as `(start|complete, index)`, in order.
fn block_boundaries(decoded: &Decoded) -> Vec<(&'static str, usize)> {
    decoded
        .events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockStart { index, .. } => Some(("start", *index)),
            ProviderEvent::BlockComplete { index, .. } => Some(("complete", *index)),
            _ => None,
        })
        .collect()
}

#[test]
fn litellm_interleaved_function_calls_decode_in_order_however_the_body_is_cut() {
    // LiteLLM's Responses bridge: data-only lines, `sequence_number`, `[DONE]` after
    // `response.completed`; function call 2 is announced and streams arguments before call 1
    // is done, and the message (item 0) is done last.
    let decoded = assert_message(
        "litellm/responses-tool-calls-interleaved-customllm.sse",
        &[
            text("Checking."),
            tool_use("call_a1", "get_weather", json!({"city": "Paris"})),
            tool_use("call_b2", "get_time", json!({"tz": "Europe/Paris"})),
        ],
        usage(12, 9, 0),
        StopReason::ToolUse,
    );
    // One block at a time, in the order the items were announced; the text streamed live.
    assert_eq!(
        block_boundaries(&decoded),
        [
            ("start", 0),
            ("complete", 0),
            ("start", 1),
            ("complete", 1),
            ("start", 2),
            ("complete", 2)
        ]
    );
    assert_eq!(
        decoded.events[1],
        ProviderEvent::Delta {
            index: 0,
            delta: ContentDelta::Text("Checking.".into())
        }
    );
}

#[test]
fn reasoning_messages_and_function_calls_interleave_in_any_order() {
    let b = body_raw(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"msg_1","content":[]}}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"delta":"Let me "}"#,
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Plan**"}"#,
        r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"echo","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"text\":"}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"delta":"look."}"#,
        // An event that names its item only by id.
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":1,"delta":"Echo it."}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"\"hi\"}"}"#,
        r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"echo","arguments":"{\"text\":\"hi\"}"}}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"message","id":"msg_1","content":[{"type":"output_text","text":"Let me look."}]}}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","encrypted_content":"gAAAAB-enc","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":"Echo it."}]}}"#,
        COMPLETED,
    ]);
    let decoded = decode_every_way::<ResponsesDecoder>("interleaved", &b);
    let (blocks, _, stop) = decoded.message();
    assert_eq!(
        blocks,
        &[
            thinking("**Plan**\n\nEcho it."),
            reasoning("rs_1", &["**Plan**", "Echo it."], "gAAAAB-enc"),
            text("Let me look."),
            tool_use("call_1", "echo", json!({"text": "hi"})),
        ]
    );
    assert_eq!(stop, &StopReason::ToolUse);
    // The reasoning item, announced first, streams live; the others wait for it, their deltas
    // joined.
    assert_eq!(
        decoded.events[..2],
        [
            ProviderEvent::BlockStart {
                index: 0,
                kind: BlockKind::Thinking,
                tool: None
            },
            ProviderEvent::Delta {
                index: 0,
                delta: ContentDelta::Thinking("**Plan**".into())
            },
        ]
    );
    assert!(decoded.events.contains(&ProviderEvent::Delta {
        index: 2,
        delta: ContentDelta::Text("Let me look.".into())
    }));
}

/// The offset and message of the protocol error a body ends in.
fn protocol_error(events: &[&str]) -> (u64, String) {
    let b = body_raw(events);
    match decode_every_way::<ResponsesDecoder>("bad", &b).error {
        Some(Error::Protocol { offset, message }) => (offset, message),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

/// The byte offset of the last event of `events` in their body.
fn offset_of_last(events: &[&str]) -> u64 {
    (body_raw(&events[..events.len() - 1]).len()) as u64
}

#[test]
fn repeated_contradictory_and_late_items_are_errors_naming_the_byte() {
    const ADDED_1: &str = r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"echo","arguments":""}}"#;
    const DONE_1: &str = r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"echo","arguments":"{}"}}"#;
    for (events, expected) in [
        (
            vec![ADDED_1, DONE_1, ADDED_1],
            "function call 1 was announced again after it was complete",
        ),
        (
            vec![
                ADDED_1,
                r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_a","call_id":"call_b","name":"echo","arguments":""}}"#,
            ],
            r#"output item 1 was announced as call "call_b", not "call_a""#,
        ),
        (
            vec![
                ADDED_1,
                r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"fc_a","content":[]}}"#,
            ],
            "output item 1 was announced as a message, not a function call",
        ),
        (
            vec![
                ADDED_1,
                r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_a","call_id":"call_c","name":"echo","arguments":""}}"#,
            ],
            r#"output item 2 has the id "fc_a" of output item 1"#,
        ),
        (vec![ADDED_1, DONE_1, DONE_1], "function call 1 was completed twice"),
        (
            vec![
                ADDED_1,
                DONE_1,
                r#"{"type":"response.function_call_arguments.delta","item_id":"fc_a","output_index":1,"delta":"{}"}"#,
            ],
            "arguments for output item 1, which is not an open function call",
        ),
        (
            vec![
                ADDED_1,
                r#"{"type":"response.output_text.delta","output_index":1,"delta":"hi"}"#,
            ],
            "text for output item 1, which is a function call",
        ),
        (
            vec![
                ADDED_1,
                r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"message","id":"msg_b","content":[]}}"#,
                r#"{"type":"response.output_text.delta","item_id":"fc_a","output_index":2,"delta":"hi"}"#,
            ],
            r#"an event for output item 2 names item "fc_a", which is output item 1"#,
        ),
    ] {
        let (offset, message) = protocol_error(&events);
        assert!(message.contains(expected), "{expected}: {message}");
        assert_eq!(
            offset,
            offset_of_last(&events),
            "{expected}: the offending event's byte"
        );
    }
}

#[test]
fn an_item_announced_again_unchanged_while_open_is_accepted() {
    let b = body(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"echo","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"echo","arguments":""}}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"echo","arguments":"{}"}}"#,
        COMPLETED,
    ]);
    let decoded = decode_every_way::<ResponsesDecoder>("announced twice", &b);
    assert_eq!(decoded.message().0, &[tool_use("call_a", "echo", json!({}))]);
}
