use serde_json::{json, Value};

use super::*;
use crate::config::{ApiStyle, ReasoningEffort};
use crate::conversation::ToolDecl;
use crate::conversation::{StopReason, SystemMode, Usage};
use crate::error::Error;
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::request_json;
use crate::provider::sse::testing::{decode_every_way, decode_fixture_every_way, fixture, Decoded};
use crate::provider::ProviderEvent;

fn config() -> ProviderConfig {
    let mut c = ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-test")
        .with_base_url("https://api.anthropic.com/")
        .with_api_key("sk-ant-test");
    c.extra_headers = vec![("x-trace".into(), "abc".into())];
    c
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

fn body_for(config: &ProviderConfig, system: &[&str], messages: &[Message], tools: &[ToolDecl]) -> Value {
    request_json(&ProviderRequest {
        config,
        system,
        messages,
        tools,
        require_tool: false,
        session_id: "",
    })
}

#[test]
fn endpoint_and_headers() {
    assert_eq!(
        endpoint("https://api.anthropic.com/"),
        "https://api.anthropic.com/v1/messages"
    );
    assert_eq!(endpoint("http://127.0.0.1:4000"), "http://127.0.0.1:4000/v1/messages");
    assert_eq!(
        headers(&config()),
        vec![
            ("x-api-key".to_owned(), "sk-ant-test".to_owned()),
            ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
            ("x-trace".to_owned(), "abc".to_owned()),
        ]
    );
}

#[test]
fn request_body_with_every_block_kind() {
    let config = config();
    let messages = vec![
        Message::new(
            Role::System,
            vec![ContentBlock::System {
                text: "in the conversation".into(),
                mode: SystemMode::Append,
            }],
        ),
        user(vec![ContentBlock::CompactionSummary {
            summary: "We fixed the build.".into(),
        }]),
        user(vec![
            text("What's the weather?"),
            ContentBlock::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        ]),
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "Let me check.".into(),
                signature: Some("EtYDCkYICxgC+/==".into()),
            },
            ContentBlock::Thinking {
                thinking: "from an OpenAI-compatible server".into(),
                signature: None,
            },
            ContentBlock::RedactedThinking {
                data: "opaque==".into(),
            },
            text(""),
            text("Checking two cities."),
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                input: json!({"city": "Paris"}),
            },
            ContentBlock::ToolUse {
                id: "toolu_2".into(),
                name: "get_weather".into(),
                input: json!({}),
            },
        ]),
        user(vec![
            ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: vec![
                    ToolResultContent::Text { text: "sunny".into() },
                    ToolResultContent::Text { text: String::new() },
                    ToolResultContent::Image {
                        media_type: "image/jpeg".into(),
                        data: "/9j/4AAQ".into(),
                    },
                ],
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "toolu_2".into(),
                content: vec![ToolResultContent::Text {
                    text: "missing city".into(),
                }],
                is_error: true,
            },
        ]),
        // Typed after a cancel: a second user turn in a row.
        user(vec![text("Never mind.")]),
        // Nothing in this one can be sent, so it vanishes, and the user turns around it merge.
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "unsigned".into(),
                signature: None,
            },
            text(""),
        ]),
        user(vec![text("Are you there?")]),
    ];
    let tools = vec![ToolDecl {
        name: "get_weather".into(),
        description: "Weather for a city.".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    let body = body_for(
        &config,
        &["You are terse.", "", "Answer in English."],
        &messages,
        &tools,
    );
    let expected = json!({
        "model": "claude-test",
        "max_tokens": 8192,
        "stream": true,
        "system": [
            {"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Answer in English."}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Summary of the conversation so far:\n\n<summary>We fixed the build.</summary>"},
                {"type": "text", "text": "What's the weather?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Let me check.", "signature": "EtYDCkYICxgC+/=="},
                {"type": "redacted_thinking", "data": "opaque=="},
                {"type": "text", "text": "Checking two cities."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "sunny"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}
                ]},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
                    {"type": "text", "text": "missing city"}
                ], "is_error": true},
                {"type": "text", "text": "Never mind."},
                {"type": "text", "text": "Are you there?"}
            ]}
        ],
        "tools": [{
            "name": "get_weather",
            "description": "Weather for a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}
        }]
    });
    assert_eq!(body, expected);
}

#[test]
fn tool_results_open_a_merged_user_turn() {
    let messages = vec![
        user(vec![text("run it")]),
        assistant(vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "run".into(),
            input: json!({}),
        }]),
        user(vec![text("(note typed while the tool ran)")]),
        user(vec![ContentBlock::ToolResult {
            tool_use_id: "t1".into(),
            content: vec![],
            is_error: false,
        }]),
    ];
    let body = body_for(&config(), &[], &messages, &[]);
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1"},
            {"type": "text", "text": "(note typed while the tool ran)"}
        ]})
    );
    // No system blocks and no tools: both fields are left out.
    let mut keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["max_tokens", "messages", "model", "stream"]);
}

#[test]
fn thinking_budget_and_max_tokens() {
    let mut config = config();
    let messages = vec![user(vec![text("hi")])];
    config.reasoning = ReasoningEffort::Low;
    let body = body_for(&config, &[], &messages, &[]);
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
    assert_eq!(body["max_tokens"], 8192);
    // max_tokens must exceed the budget: the answer keeps its configured room on top.
    config.reasoning = ReasoningEffort::High;
    let body = body_for(&config, &[], &messages, &[]);
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 24576}));
    assert_eq!(body["max_tokens"], 24576 + 8192);
    config.reasoning = ReasoningEffort::Medium;
    config.max_tokens = 8192;
    assert_eq!(body_for(&config, &[], &messages, &[])["max_tokens"], 8192 + 8192);
    config.reasoning = ReasoningEffort::Off;
    assert!(body_for(&config, &[], &messages, &[]).get("thinking").is_none());
}

// ---- decoding ----

fn decode(path: &str) -> Decoded {
    decode_fixture_every_way::<AnthropicDecoder>(path)
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Option<Usage> {
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    })
}

fn tool_use(id: &str, name: &str, input: serde_json::Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

#[test]
fn text_basic_without_trailing_blank_line() {
    let decoded = decode("anthropic/text-basic.sse");
    let delta = |s: &str| ProviderEvent::Delta {
        index: 0,
        delta: ContentDelta::Text(s.into()),
    };
    assert_eq!(
        decoded.events,
        vec![
            ProviderEvent::BlockStart {
                index: 0,
                kind: BlockKind::Text,
                tool: None
            },
            delta("Hello"),
            delta(" there"),
            delta("!"),
            ProviderEvent::BlockComplete {
                index: 0,
                block: text("Hello there!")
            },
            ProviderEvent::MessageComplete {
                blocks: vec![text("Hello there!")],
                usage: usage(11, 6, 0, 0),
                stop_reason: StopReason::EndTurn,
                rejected: vec![],
            },
        ]
    );
}

#[test]
fn padded_recorded_text() {
    let decoded = decode("anthropic/text-recorded-padded.sse");
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [text(
            "The weather in San Francisco, CA is currently **68°F and Sunny**. It's a nice day!"
        )]
    );
    assert_eq!(usage_seen, usage(770, 27, 0, 0));
    assert_eq!(stop, &StopReason::EndTurn);
}

#[test]
fn text_then_tool_use() {
    let decoded = decode("anthropic/text-then-tool-use.sse");
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [
            text("I'll check the current weather in Paris for you."),
            tool_use(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"})
            ),
        ]
    );
    assert_eq!(usage_seen, usage(377, 65, 0, 0));
    assert_eq!(stop, &StopReason::ToolUse);
    assert!(decoded.events.contains(&ProviderEvent::BlockStart {
        index: 1,
        kind: BlockKind::ToolUse,
        tool: Some(ToolDetails {
            id: "toolu_01NRLabsLyVHZPKxbKvkfSMn".into(),
            name: "get_weather".into()
        }),
    }));
    // The argument fragments stream as they came, split mid-key.
    assert!(decoded.events.contains(&ProviderEvent::Delta {
        index: 1,
        delta: ContentDelta::ToolInput("{\"locati".into())
    }));
}

#[test]
fn recorded_tool_use() {
    let decoded = decode("anthropic/tool-use-recorded.sse");
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [tool_use(
            "toolu_018acGYLtfR52q9yDbWaEdQZ",
            "get_weather",
            json!({"location": "San Francisco, CA", "units": "f"})
        )]
    );
    assert_eq!(usage_seen, usage(656, 74, 0, 0));
    assert_eq!(stop, &StopReason::ToolUse);
}

#[test]
fn parallel_tool_use() {
    let decoded = decode("anthropic/parallel-tool-use.sse");
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [
            text("I'll add and multiply the numbers 2 and 3 for you."),
            tool_use("toolu_01UYxUYC2zRPY8wiutnF48eP", "add", json!({"a": 2, "b": 3})),
            tool_use("toolu_01VaRx1jpWCvPhi7L4kywAcd", "multiply", json!({"a": 2, "b": 3})),
        ]
    );
    assert_eq!(usage_seen, usage(502, 137, 0, 0));
    assert_eq!(stop, &StopReason::ToolUse);
}

const FLORENCE_SIGNATURE: &str = "EtYDCkYICxgCKkAVHEWRYo6RgSMs4ZZDX4gW16kdfp2EIXftcLesVephGa/p1m+1Y8mRQPvvKOQICrOkGKYoJBKSNLJ4ukI/mo6LEgx7FMTwIpYzM2WTWT8aDKY6c2i52xIX2NYX3SIwY5gI8frldE4pwUhseod0S0xZV2hTAQhqMCOu4+effAu250K2RPrqrO98+VD/hjF9Kr0C7EzGQ7dZ7MNwrkE+tCARkzIRk5Wtv8vVAhADlMcs78QvxmjOToU65I91p7w2/VP11peDoc9+7AbyldRKGp3chNnQgXHI7ObK89s0ltFBGrLf6tegaQL9httOtcUGCioZnI9LI9vJHMlQeoZiiWRq8hVbHlHc3f6BwBqlUJhYUyk7ld34UoaSNc5UKUNuLAmkOLg3KQLdbI7b3BQVdsWOhNTKd12fRJQcOLhXNSCv7hQ9FtWfV5C+pX59xF6YYIO3TCPUqWSubCtqdrDEoQVWdHtyveFA+4iixZxyqZ7Ea+kzbmc/6pXxwO2MX0rHrbe/yXWYAmU/XxY9HJTzXEO+CibGQOAaHdC11s8gOCFb8EWt3ALguFfj/p2SJtqybC44Alrjnhjqk+7Mi+DoMcINUh7SCK9rVl4VeDhPFVAYAQ==";

#[test]
fn thinking_with_signature_then_tool_use() {
    let decoded = decode("anthropic/thinking-signature-tool-use.sse");
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [
            ContentBlock::Thinking {
                thinking: "The user is asking for weather information for Florence, Italy. I have access to a \
                           weather function that takes a location parameter. The user has provided the location \
                           as \"Florence, Italy\" which is specific enough for the weather function. I have all \
                           the required parameters to make the function call."
                    .into(),
                signature: Some(FLORENCE_SIGNATURE.into()),
            },
            tool_use(
                "toolu_01Js4AMfx5qpTLhwTusnvT68",
                "weather",
                json!({"location": "Florence, Italy"})
            ),
        ]
    );
    assert_eq!(usage_seen, usage(424, 119, 0, 0));
    assert_eq!(stop, &StopReason::ToolUse);
    assert_eq!(
        decoded.events[0],
        ProviderEvent::BlockStart {
            index: 0,
            kind: BlockKind::Thinking,
            tool: None
        }
    );
    // Signatures are kept, not streamed; the empty thinking_delta is not passed on.
    let thinking_deltas = decoded
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                ProviderEvent::Delta {
                    delta: ContentDelta::Thinking(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(thinking_deltas, 21);
}

#[test]
fn litellm_tool_use_with_cumulative_usage_in_message_delta() {
    let decoded = decode("litellm/messages-tool-use-customllm.sse");
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [
            text("Checking."),
            tool_use("call_a1", "get_weather", json!({"city": "Paris"})),
            tool_use("call_b2", "get_time", json!({"tz": "Europe/Paris"})),
        ]
    );
    // message_start said 0/0; message_delta's counts replace them.
    assert_eq!(usage_seen, usage(12, 9, 0, 0));
    assert_eq!(stop, &StopReason::ToolUse);
}

fn assert_stream_error(decoded: &Decoded, error_type: &str, message: &str) {
    match &decoded.error {
        Some(Error::StreamError {
            error_type: t,
            message: m,
        }) => {
            assert_eq!((t.as_deref(), m.as_str()), (Some(error_type), message));
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
}

#[test]
fn error_events() {
    for path in [
        "anthropic/error-event-overloaded.sse",
        "anthropic/error-event-overloaded-observed.sse",
        "anthropic/error-mid-stream-after-message-start.sse",
    ] {
        let decoded = decode(path);
        assert_stream_error(&decoded, "overloaded_error", "Overloaded");
        assert!(decoded.events.is_empty(), "{path}");
        assert!(decoded.error.as_ref().is_some_and(Error::is_retryable));
    }
    let decoded = decode("litellm/messages-mid-stream-error.sse");
    assert_stream_error(
        &decoded,
        "api_error",
        "litellm.InternalServerError: scripted overload mid-stream",
    );
    // What streamed before the error was handed out.
    assert_eq!(
        decoded.events,
        vec![
            ProviderEvent::BlockStart {
                index: 0,
                kind: BlockKind::Text,
                tool: None
            },
            ProviderEvent::Delta {
                index: 0,
                delta: ContentDelta::Text("Partial".into())
            },
        ]
    );
}

/// Builds a stream from `(event, data)` pairs.
fn stream(events: &[(&str, &str)]) -> Vec<u8> {
    let mut body = String::new();
    for (event, data) in events {
        body.push_str(&format!("event: {event}\ndata: {data}\n\n"));
    }
    body.into_bytes()
}

const START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000}}}"#,
);
const END_TURN: (&str, &str) = (
    "message_delta",
    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}"#,
);
const STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

#[test]
fn redacted_thinking_block() {
    // The content_block_start line of the SDK fragment, in a valid message.
    let fragment = String::from_utf8(fixture("anthropic/redacted-thinking-sdk-test-fragment.sse")).unwrap();
    let start = fragment
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|l| l.contains("content_block_start"))
        .unwrap();
    let body = stream(&[
        START,
        ("content_block_start", start),
        ("content_block_stop", r#"{"type": "content_block_stop", "index": 0}"#),
        END_TURN,
        STOP,
    ]);
    let decoded = decode_every_way::<AnthropicDecoder>("redacted", &body);
    let block = ContentBlock::RedactedThinking {
        data: "Redacted".into(),
    };
    assert_eq!(
        decoded.events,
        vec![
            ProviderEvent::BlockStart {
                index: 0,
                kind: BlockKind::RedactedThinking,
                tool: None
            },
            ProviderEvent::BlockComplete {
                index: 0,
                block: block.clone()
            },
            ProviderEvent::MessageComplete {
                blocks: vec![block],
                usage: usage(5, 9, 2000, 100),
                stop_reason: StopReason::EndTurn,
                rejected: vec![],
            },
        ]
    );
}

#[test]
fn start_text_unknown_events_and_unnamed_events() {
    let body = format!(
        "{}event: future_event\ndata: {{\"type\":\"future_event\"}}\n\n\
         data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" world\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"citations_delta\",\"citation\":{{}}}}}}\n\n{}",
        String::from_utf8(stream(&[
            START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hello"}}"#
            ),
        ]))
        .unwrap(),
        String::from_utf8(stream(&[
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            END_TURN,
            STOP
        ]))
        .unwrap(),
    );
    let decoded = decode_every_way::<AnthropicDecoder>("misc", body.as_bytes());
    let (blocks, _, _) = decoded.message();
    assert_eq!(blocks, [text("Hello world")]);
}

#[test]
fn server_tool_blocks_are_skipped_and_indices_stay_dense() {
    let body = stream(&[
        START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}"#,
        ),
        ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"noop","input":{}}}"#,
        ),
        ("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
        STOP,
    ]);
    let decoded = decode_every_way::<AnthropicDecoder>("server tool", &body);
    // A tool call with no argument deltas has empty arguments; without a stop reason on the
    // wire, the tool call decides it.
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(blocks, [tool_use("t", "noop", json!({}))]);
    assert_eq!(usage_seen, usage(5, 1, 2000, 100));
    assert_eq!(stop, &StopReason::ToolUse);
    assert!(matches!(decoded.events[0], ProviderEvent::BlockStart { index: 0, .. }));
}

#[test]
fn eof_before_message_stop_is_truncation() {
    let body = fixture("anthropic/text-basic.sse");
    let cut = String::from_utf8(body).unwrap();
    let cut = &cut[..cut.find("event: message_stop").unwrap()];
    let decoded = decode_every_way::<AnthropicDecoder>("cut", cut.as_bytes());
    assert!(matches!(
        decoded.error,
        Some(Error::Truncated {
            expected: "message_stop"
        })
    ));
    // Everything up to the cut was still decoded.
    assert_eq!(decoded.events.len(), 5);
}

fn protocol_error(body: &[u8]) -> (u64, String) {
    match decode_every_way::<AnthropicDecoder>("bad", body).error {
        Some(Error::Protocol { offset, message }) => (offset, message),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[test]
fn bad_streams_are_protocol_errors_at_the_offending_event() {
    let prefix = stream(&[START]);
    let body = [
        prefix.clone(),
        stream(&[(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
        )]),
    ]
    .concat();
    let (offset, message) = protocol_error(&body);
    assert_eq!(offset, prefix.len() as u64);
    assert!(message.contains("unknown block index 3"), "{message}");

    let opened = [
        prefix.clone(),
        stream(&[(
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"calc","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": "}}"#,
        )]),
    ]
    .concat();

    let body = [
        prefix.clone(),
        stream(&[("content_block_start", r#"{"index":"zero"}"#)]),
    ]
    .concat();
    let (offset, message) = protocol_error(&body);
    assert_eq!(offset, prefix.len() as u64);
    assert!(message.contains("content_block_start"), "{message}");

    let body = [
        opened.clone(),
        stream(&[(
            "content_block_delta",
            r#"{"index":0,"delta":{"type":"text_delta","text":"x"}}"#,
        )]),
    ]
    .concat();
    let (_, message) = protocol_error(&body);
    assert!(message.contains("text_delta for a tool_use block"), "{message}");

    // One block at a time: unlike the OpenAI APIs', Anthropic's protocol promises it.
    let second = stream(&[(
        "content_block_start",
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
    )]);
    let (offset, message) = protocol_error(&[&opened[..], &second[..]].concat());
    assert!(
        message.contains("content block 1 started while block 0 was open"),
        "{message}"
    );
    assert_eq!(offset, opened.len() as u64);
}

#[test]
fn an_overflow_error_event_is_a_context_overflow() {
    let body = stream(&[(
        "error",
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 203284 tokens > 200000 maximum"}}"#,
    )]);
    let decoded = decode_every_way::<AnthropicDecoder>("overflow", &body);
    assert!(matches!(decoded.error, Some(Error::ContextOverflow { status: 0, .. })));
}

fn request<'a>(config: &'a ProviderConfig, messages: &'a [Message], tools: &'a [ToolDecl]) -> ProviderRequest<'a> {
    ProviderRequest {
        config,
        system: &[],
        messages,
        tools,
        require_tool: false,
        session_id: "",
    }
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice() {
    let messages = vec![user(vec![text("answer")])];
    let tools = vec![ToolDecl {
        name: "final_result".into(),
        description: "The result.".into(),
        input_schema: json!({"type": "object"}),
    }];
    let body = request_json(&ProviderRequest {
        require_tool: true,
        ..request(&config(), &messages, &tools)
    });
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    // Not without tools, and not unless asked.
    let body = request_json(&ProviderRequest {
        require_tool: true,
        ..request(&config(), &messages, &[])
    });
    assert!(body.get("tool_choice").is_none(), "{body}");
    let body = request_json(&request(&config(), &messages, &tools));
    assert!(body.get("tool_choice").is_none(), "{body}");
    // Thinking forbids forcing a tool: the choice is left to the model.
    let mut thinking = config();
    thinking.reasoning = crate::config::ReasoningEffort::Low;
    let body = request_json(&ProviderRequest {
        require_tool: true,
        ..request(&thinking, &messages, &tools)
    });
    assert!(body.get("tool_choice").is_none(), "{body}");
}
