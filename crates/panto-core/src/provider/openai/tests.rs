use serde_json::{json, Value};

use super::*;
use crate::config::ApiStyle;
use crate::conversation::ToolDecl;
use crate::conversation::{StopReason, SystemMode, Usage};
use crate::error::Error;
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::request_json;
use crate::provider::sse::testing::{decode_every_way, decode_fixture_every_way, Decoded};
use crate::provider::ProviderEvent;

fn config() -> ProviderConfig {
    ProviderConfig::new(ApiStyle::OpenAiChat, "gpt-test")
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
        endpoint("https://api.openai.com/v1/"),
        "https://api.openai.com/v1/chat/completions"
    );
    assert_eq!(
        endpoint("http://127.0.0.1:8080/v1"),
        "http://127.0.0.1:8080/v1/chat/completions"
    );
    let mut c = config();
    c.extra_headers = vec![("HTTP-Referer".into(), "https://example.invalid".into())];
    assert_eq!(
        headers(&c),
        vec![
            ("Authorization".to_owned(), "Bearer sk-test".to_owned()),
            ("HTTP-Referer".to_owned(), "https://example.invalid".to_owned()),
        ]
    );
    // A local server needs no key, and an empty bearer token would be rejected by some.
    c.api_key.clear();
    assert_eq!(
        headers(&c),
        vec![("HTTP-Referer".to_owned(), "https://example.invalid".to_owned())]
    );
}

#[test]
fn request_body_with_every_block_kind() {
    let messages = vec![
        Message::new(
            Role::System,
            vec![ContentBlock::System {
                text: "ignored here".into(),
                mode: SystemMode::Replace,
            }],
        ),
        user(vec![ContentBlock::CompactionSummary {
            summary: "We fixed the build.".into(),
        }]),
        user(vec![text("What's in this picture?"), text("Be brief.")]),
        user(vec![
            text("And this one?"),
            ContentBlock::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        ]),
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "not sent".into(),
                signature: Some("sig".into()),
            },
            text("Let me look."),
            ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "screenshot".into(),
                input: json!({"window": "main"}),
            },
            ContentBlock::ToolUse {
                id: "call_2".into(),
                name: "read".into(),
                input: json!({}),
            },
        ]),
        user(vec![
            ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: vec![
                    ToolResultContent::Text {
                        text: "captured".into(),
                    },
                    ToolResultContent::Image {
                        media_type: "image/jpeg".into(),
                        data: "/9j/4AAQ".into(),
                    },
                ],
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "call_2".into(),
                content: vec![ToolResultContent::Text {
                    text: "no such file".into(),
                }],
                is_error: true,
            },
            text("Thanks."),
        ]),
        assistant(vec![ContentBlock::ToolUse {
            id: "call_3".into(),
            name: "noop".into(),
            input: json!({"n": 1}),
        }]),
        // Neither of these has anything to send, so neither is sent.
        user(vec![text("")]),
        assistant(vec![ContentBlock::Thinking {
            thinking: "hmm".into(),
            signature: None,
        }]),
    ];
    let tools = vec![ToolDecl {
        name: "screenshot".into(),
        description: "Capture a window.".into(),
        input_schema: json!({"type": "object"}),
    }];
    let body = body_for(&config(), &["You are terse.", "Answer in English."], &messages, &tools);
    let expected = json!({
        "model": "gpt-test",
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 8192,
        "messages": [
            {"role": "system", "content": "You are terse.\n\nAnswer in English."},
            {"role": "user", "content": "Summary of the conversation so far:\n\n<summary>We fixed the build.</summary>"},
            {"role": "user", "content": "What's in this picture?\n\nBe brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "And this one?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
            ]},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "screenshot", "arguments": "{\"window\":\"main\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1",
             "content": "captured\n[The tool returned an image; see the next user message.]"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
            {"role": "user", "content": [
                {"type": "text", "text": "Image from tool call call_1:"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}
            ]},
            {"role": "user", "content": "Thanks."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "noop", "arguments": "{\"n\":1}"}}
            ]}
        ],
        "tools": [{"type": "function", "function": {
            "name": "screenshot", "description": "Capture a window.", "parameters": {"type": "object"}
        }}]
    });
    assert_eq!(body, expected);
}

#[test]
fn reasoning_switches_the_token_limit_field() {
    let mut c = config();
    let messages = vec![user(vec![text("hi")])];
    let body = body_for(&c, &[], &messages, &[]);
    assert_eq!(body["max_tokens"], 8192);
    assert!(body.get("reasoning_effort").is_none() && body.get("max_completion_tokens").is_none());
    // No system blocks, no tools: neither is sent.
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    assert!(body.get("tools").is_none());
    for (effort, wire) in [
        (ReasoningEffort::Low, "low"),
        (ReasoningEffort::Medium, "medium"),
        (ReasoningEffort::High, "high"),
    ] {
        c.reasoning = effort;
        c.max_tokens = 4000;
        let body = body_for(&c, &[], &messages, &[]);
        assert_eq!(body["reasoning_effort"], wire);
        assert_eq!(body["max_completion_tokens"], 4000);
        assert!(body.get("max_tokens").is_none());
    }
}

#[test]
fn tool_images_from_several_results_share_one_user_message() {
    let image = |d: &str| ToolResultContent::Image {
        media_type: "image/png".into(),
        data: d.into(),
    };
    let messages = vec![user(vec![
        ContentBlock::ToolResult {
            tool_use_id: "a".into(),
            content: vec![image("AA"), image("BB")],
            is_error: false,
        },
        ContentBlock::ToolResult {
            tool_use_id: "b".into(),
            content: vec![image("CC")],
            is_error: true,
        },
    ])];
    let body = body_for(&config(), &[], &messages, &[]);
    let url = |d: &str| json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{d}")}});
    assert_eq!(
        body["messages"],
        json!([
            {"role": "tool", "tool_call_id": "a", "content": "[The tool returned images; see the next user message.]"},
            {"role": "tool", "tool_call_id": "b", "content": "Error: [The tool returned an image; see the next user message.]"},
            {"role": "user", "content": [
                {"type": "text", "text": "Image from tool call a:"}, url("AA"), url("BB"),
                {"type": "text", "text": "Image from tool call b:"}, url("CC")
            ]}
        ])
    );
}

// ---- decoding ----

fn decode(path: &str) -> Decoded {
    decode_fixture_every_way::<OpenAiDecoder>(path)
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

fn tool_use(id: &str, name: &str, input: serde_json::Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

fn thinking(s: &str) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: s.into(),
        signature: None,
    }
}

/// Asserts a fixture decodes to these blocks, usage and stop reason.
fn assert_message(path: &str, blocks: &[ContentBlock], usage_expected: Option<Usage>, stop: StopReason) -> Decoded {
    let decoded = decode(path);
    let (got_blocks, got_usage, got_stop) = decoded.message();
    assert_eq!(got_blocks, blocks, "{path}");
    assert_eq!(got_usage, usage_expected, "{path}");
    assert_eq!(got_stop, &stop, "{path}");
    decoded
}

#[test]
fn openai_text() {
    let decoded = assert_message(
        "openai/text-basic.sse",
        &[text(
            "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, \
             I recommend checking a reliable weather website or a weather app.",
        )],
        usage(14, 30, 0),
        StopReason::EndTurn,
    );
    // The first chunk's `content: ""` opened nothing; the first delta is the first word.
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
                delta: ContentDelta::Text("I'm".into())
            },
        ]
    );
    assert_message(
        "openai/text-usage-obfuscation.sse",
        &[text("Olá!")],
        usage(20, 2, 0),
        StopReason::EndTurn,
    );
}

#[test]
fn openai_finish_length_and_refusal() {
    assert_message(
        "openai/finish-length.sse",
        &[text("{\"")],
        usage(79, 1, 0),
        StopReason::MaxTokens,
    );
    assert_message(
        "openai/refusal.sse",
        &[text("I'm sorry, I can't assist with that request.")],
        usage(79, 11, 0),
        StopReason::EndTurn,
    );
}

#[test]
fn openai_n3_yields_only_choice_zero() {
    assert_message(
        "openai/multiple-choices-n3.sse",
        &[text(r#"{"city":"San Francisco","temperature":65,"units":"f"}"#)],
        usage(79, 42, 0),
        StopReason::EndTurn,
    );
}

#[test]
fn openai_tool_calls() {
    let decoded = assert_message(
        "openai/tool-call.sse",
        &[tool_use(
            "call_CTf1nWJLqSeRgDqaCG27xZ74",
            "get_weather",
            json!({"city": "San Francisco", "state": "CA"}),
        )],
        usage(48, 19, 0),
        StopReason::ToolUse,
    );
    assert_eq!(
        decoded.events[0],
        ProviderEvent::BlockStart {
            index: 0,
            kind: BlockKind::ToolUse,
            tool: Some(ToolDetails {
                id: "call_CTf1nWJLqSeRgDqaCG27xZ74".into(),
                name: "get_weather".into()
            })
        }
    );
    let decoded = assert_message(
        "openai/parallel-tool-calls.sse",
        &[
            tool_use(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
            ),
            tool_use(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
            ),
        ],
        usage(149, 60, 0),
        StopReason::ToolUse,
    );
    // A fragment for any call may still come, so the calls complete when the message does, one
    // block at a time: the first streamed live, the second's fragments waited, joined.
    let ends: Vec<&ProviderEvent> = decoded.events.iter().rev().take(5).collect();
    assert!(
        matches!(
            ends[..],
            [
                ProviderEvent::MessageComplete { .. },
                ProviderEvent::BlockComplete { index: 1, .. },
                ProviderEvent::Delta { index: 1, .. },
                ProviderEvent::BlockStart { index: 1, .. },
                ProviderEvent::BlockComplete { index: 0, .. },
            ]
        ),
        "{ends:#?}"
    );
    assert_message(
        "openai/parallel-tool-calls-usage.sse",
        &[
            tool_use("call_ehIWdjL1abZk1h8FWGLQ0Hie", "add", json!({"a": 2, "b": 3})),
            tool_use("call_fBSgA47J5VeONggizTIvl7AH", "multiply", json!({"a": 2, "b": 3})),
        ],
        usage(106, 50, 0),
        StopReason::ToolUse,
    );
}

#[test]
fn interleaved_tool_call_fragments_decode_as_if_each_call_came_whole() {
    // The recorded parallel calls with their chunks reordered so that the calls interleave
    // (a derived fixture: see the fixtures' README).
    let interleaved = decode("openai/parallel-tool-calls-interleaved-derived.sse");
    let recorded = decode("openai/parallel-tool-calls.sse");
    assert!(interleaved.error.is_none(), "{:?}", interleaved.error);
    assert_eq!(interleaved.events, recorded.events);
    let (blocks, _, stop) = interleaved.message();
    assert_eq!(
        blocks,
        &[
            tool_use(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
            ),
            tool_use(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
            ),
        ]
    );
    assert_eq!(stop, &StopReason::ToolUse);
}

#[test]
fn text_between_interleaved_tool_calls_keeps_its_place() {
    let body = [
        r#"{"choices":[{"index":0,"delta":{"content":"Checking."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"echo","arguments":"{\"te"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"And "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"echo","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"xt\":\"a\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"done."},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]
    .iter()
    .map(|e| format!("data: {e}\n\n"))
    .collect::<String>();
    let decoded = decode_every_way::<OpenAiDecoder>("text between calls", body.as_bytes());
    let (blocks, _, _) = decoded.message();
    assert_eq!(
        blocks,
        &[
            text("Checking."),
            tool_use("call_a", "echo", json!({"text": "a"})),
            text("And "),
            tool_use("call_b", "echo", json!({})),
            text("done."),
        ]
    );
}

#[test]
fn llamacpp_reasoning_content() {
    assert_message(
        "openai-compat/llamacpp-reasoning-content-tool-call.sse",
        &[
            thinking("We need to call function 'weather' with location \"Florence, Italy\"."),
            tool_use(
                "1wNpqrejg1FCTjf6xq8JRCGKgWZO74AL",
                "weather",
                json!({"location": "Florence, Italy"}),
            ),
        ],
        usage(139, 42, 0),
        StopReason::ToolUse,
    );
    assert_message(
        "openai-compat/llamacpp-text.sse",
        &[
            thinking(
                "The user: \"Say hi in Portuguese\". They want a greeting in Portuguese. Simple: \"Olá!\" or \
                 \"Oi!\". Probably respond with \"Olá!\" or \"Oi!\".\n\nWe should keep it concise. We'll respond.",
            ),
            text("Olá!"),
        ],
        usage(84, 57, 0),
        StopReason::EndTurn,
    );
}

#[test]
fn openrouter_reasoning_with_comments_and_a_repeated_finish_reason() {
    assert_message(
        "openai-compat/openrouter-reasoning-tool-call.sse",
        &[
            thinking(
                "The user is asking for weather information in Florence, Italy. I have access to a weather \
                 function that takes a location parameter. I should call the weather function with \"Florence, \
                 Italy\" or \"Florence\" as the location.\n\nLet me call the weather function with the location \
                 being Florence, Italy (or I could try just \"Florence\" - but \"Florence, Italy\" would be more \
                 specific and accurate).",
            ),
            tool_use(
                "toolu_bdrk_01N8hD5cYDw4WfvnjKXAkA2W",
                "weather",
                json!({"location": "Florence, Italy"}),
            ),
        ],
        with_reasoning(usage(607, 143, 0), 99),
        StopReason::ToolUse,
    );
}

#[test]
fn zai_usage_on_the_finish_chunk_with_cached_tokens() {
    assert_message(
        "openai-compat/zai-reasoning-content-tool-call.sse",
        &[
            thinking(
                "The user is asking about the weather in Florence, Italy. I have a weather function available \
                 that can get weather information for a location. The required parameter is \"location\" which \
                 should be a city name. The user specified \"Florence, Italy\" so I should use \"Florence\" as \
                 the location parameter.",
            ),
            text("I'll check the weather in Florence, Italy for you."),
            tool_use(
                "call_330c741a86144cb7a385bc6d",
                "weather",
                json!({"location": "Florence"}),
            ),
        ],
        // 173 prompt tokens of which 172 were cached.
        with_reasoning(usage(1, 87, 172), 63),
        StopReason::ToolUse,
    );
}

#[test]
fn litellm_dialect() {
    assert_message(
        "litellm/chat-text-mock-response.sse",
        &[text("Hello from the LiteLLM mock.")],
        usage(8, 8, 0),
        StopReason::EndTurn,
    );
    assert_message(
        "litellm/chat-tool-calls-customllm.sse",
        &[
            text("Checking."),
            tool_use("call_a1", "get_weather", json!({"city": "Paris"})),
            tool_use("call_b2", "get_time", json!({"tz": "Europe/Paris"})),
        ],
        usage(12, 9, 0),
        StopReason::ToolUse,
    );
    let decoded = decode("litellm/chat-mid-stream-error.sse");
    match &decoded.error {
        Some(Error::StreamError { error_type, message }) => {
            assert_eq!(error_type.as_deref(), Some("internal_server_error"));
            assert_eq!(message, "litellm.InternalServerError: scripted overload mid-stream");
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
    assert!(decoded.error.as_ref().is_some_and(Error::is_retryable));
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

#[test]
fn llama_cpp_python_dialect() {
    assert_message(
        "llama-cpp-python/text-gemma-base.sse",
        &[text(
            "Say hello in English. mendatang\nSay hello in Spanish. mendatang\nSay hello in German. mendatang\n\
             Say hello in Italian. mendatang\nSay hello in Portuguese. mendatang\nSay hello in Russian.",
        )],
        None,
        StopReason::MaxTokens,
    );
    // The id and name repeat on every fragment; the name must not be repeated with them. The id
    // (`call__0_get_weather_cmpl-143a8c4e-…`, 61 characters) is longer than OpenAI accepts back,
    // so the call gets a minted one.
    let decoded = assert_message(
        "llama-cpp-python/forced-tool-call-grammar.sse",
        &[tool_use("call_panto_0", "get_weather", json!({"city": "Paris"}))],
        None,
        StopReason::ToolUse,
    );
    let starts = decoded
        .events
        .iter()
        .filter(|e| matches!(e, ProviderEvent::BlockStart { .. }))
        .count();
    assert_eq!(starts, 1);
}

fn body(chunks: &[&str]) -> Vec<u8> {
    chunks
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn eof_with_a_finish_reason_completes_and_without_one_is_truncation() {
    let finished = body(&[
        r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ]);
    let decoded = decode_every_way::<OpenAiDecoder>("no done", &finished);
    assert_eq!(decoded.message().0, [text("hi")]);

    let cut = body(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#]);
    let decoded = decode_every_way::<OpenAiDecoder>("cut", &cut);
    assert!(matches!(decoded.error, Some(Error::Truncated { expected: "[DONE]" })));
    assert_eq!(decoded.events.len(), 2);
}

#[test]
fn deepseek_cache_hits_and_block_switching() {
    let stream = body(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"think"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"answer","reasoning_content":null}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":" again"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x","function":{"name":"f","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"k\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"y","function":{"name":"g"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_cache_hit_tokens":60,"prompt_cache_miss_tokens":40}}"#,
        "[DONE]",
    ]);
    let decoded = decode_every_way::<OpenAiDecoder>("deepseek", &stream);
    let (blocks, usage_seen, stop) = decoded.message();
    assert_eq!(
        blocks,
        [
            thinking("think"),
            text("answer"),
            thinking(" again"),
            // Calls without an index: a new id starts a new call.
            tool_use("x", "f", json!({"k": 1})),
            tool_use("y", "g", json!({})),
        ]
    );
    assert_eq!(usage_seen, usage(40, 7, 60));
    assert_eq!(stop, &StopReason::ToolUse);
}

#[test]
fn openrouter_cache_writes_are_split_out_of_the_prompt_tokens() {
    // An Anthropic model through OpenRouter: prompt_tokens counts everything sent, the cache
    // reads and the cache writes included.
    let stream = body(&[
        r#"{"choices":[{"index":0,"delta":{"content":"ok"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":300,"audio_tokens":0}}}"#,
        "[DONE]",
    ]);
    let decoded = decode_every_way::<OpenAiDecoder>("openrouter cache", &stream);
    assert_eq!(
        decoded.message().1,
        Some(Usage {
            input_tokens: 100,
            output_tokens: 5,
            cache_read_tokens: 600,
            cache_write_tokens: 300,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        })
    );
}

#[test]
fn bad_chunks_are_errors() {
    let stream = body(&[r#"{"choices":[{"index":0,"delta":{"content":5}}]}"#]);
    match decode_every_way::<OpenAiDecoder>("bad chunk", &stream).error {
        Some(Error::Protocol { offset: 0, message }) => {
            assert!(message.contains("chat.completion.chunk"), "{message}")
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    let overflow = body(&[
        r#"{"error":{"message":"This model's maximum context length is 4097 tokens.","code":"context_length_exceeded"}}"#,
    ]);
    assert!(matches!(
        decode_every_way::<OpenAiDecoder>("overflow", &overflow).error,
        Some(Error::ContextOverflow { status: 0, .. })
    ));
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
    assert_eq!(body["tool_choice"], json!("required"));
    // Not without tools, and not unless asked.
    let body = request_json(&ProviderRequest {
        require_tool: true,
        ..request(&config(), &messages, &[])
    });
    assert!(body.get("tool_choice").is_none(), "{body}");
    let body = request_json(&request(&config(), &messages, &tools));
    assert!(body.get("tool_choice").is_none(), "{body}");
}
