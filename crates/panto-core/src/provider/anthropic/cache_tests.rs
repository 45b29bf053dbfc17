use serde_json::{json, Value};

use super::*;
use crate::config::{ApiStyle, CacheTtl};
use crate::conversation::ToolDecl;
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};
use crate::provider::request_json as request_body;
use crate::provider::ProviderRequest;

/// Text of about `tokens` tokens by panto's estimate.
fn filler(tokens: usize) -> String {
    "word ".repeat(tokens * BYTES_PER_TOKEN / 5)
}

fn config() -> ProviderConfig {
    ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
        .with_base_url("http://127.0.0.1:1")
        .with_api_key("k")
}

fn tools() -> Vec<ToolDecl> {
    ["read", "write"]
        .iter()
        .map(|name| ToolDecl {
            name: (*name).into(),
            description: filler(600),
            input_schema: json!({"type": "object"}),
        })
        .collect()
}

/// A tool loop of `steps` steps after one prompt: each step an assistant message with a text
/// and a tool call, then a user message with its result.
fn tool_loop(steps: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(Role::User, vec![ContentBlock::text("Fix the bug.")])];
    for step in 0..steps {
        messages.push(Message::new(
            Role::Assistant,
            vec![
                ContentBlock::text(format!("Step {step}.")),
                ContentBlock::ToolUse {
                    id: format!("toolu_{step:02}"),
                    name: "read".into(),
                    input: json!({"path": format!("f{step}")}),
                },
            ],
        ));
        messages.push(Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: format!("toolu_{step:02}"),
                content: vec![ToolResultContent::Text { text: filler(50) }],
                is_error: false,
            }],
        ));
    }
    messages
}

fn body(config: &ProviderConfig, system: &[&str], messages: &[Message], tools: &[ToolDecl]) -> Value {
    request_body(&ProviderRequest {
        config,
        system,
        messages,
        tools,
        require_tool: false,
        session_id: "",
    })
}

/// Where the breakpoints are, as (array, index, block index) paths.
fn marked(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if tool.get("cache_control").is_some() {
            out.push(format!("tools[{i}]"));
        }
    }
    for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
        if block.get("cache_control").is_some() {
            out.push(format!("system[{i}]"));
        }
    }
    for (m, message) in body["messages"].as_array().into_iter().flatten().enumerate() {
        for (b, block) in message["content"].as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                out.push(format!("messages[{m}][{b}]"));
            }
        }
    }
    out
}

#[test]
fn tools_system_and_newest_message_get_the_breakpoints() {
    let system = filler(600);
    let body = body(&config(), &[&system], &tool_loop(3), &tools());
    assert_eq!(marked(&body), ["tools[1]", "system[0]", "messages[6][0]"]);
    assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
}

#[test]
fn the_previous_end_is_marked_when_beyond_the_lookback() {
    // 25 tool results in one user message put the newest block 25 blocks past the previous
    // request's breakpoint (the prompt), beyond the API's 20-block lookback.
    let mut messages = vec![Message::new(Role::User, vec![ContentBlock::text(filler(2000))])];
    let calls: Vec<ContentBlock> = (0..25)
        .map(|i| ContentBlock::ToolUse {
            id: format!("toolu_{i:02}"),
            name: "read".into(),
            input: json!({}),
        })
        .collect();
    messages.push(Message::new(Role::Assistant, calls));
    let results = (0..25)
        .map(|i| ContentBlock::ToolResult {
            tool_use_id: format!("toolu_{i:02}"),
            content: vec![ToolResultContent::Text { text: "ok".into() }],
            is_error: false,
        })
        .collect();
    messages.push(Message::new(Role::User, results));
    let body = body(&config(), &["Be brief."], &messages, &tools());
    assert_eq!(
        marked(&body),
        ["tools[1]", "system[0]", "messages[0][0]", "messages[2][24]"]
    );
    // Within the lookback, the previous end needs no breakpoint of its own.
    let body = request_body(&ProviderRequest {
        config: &config(),
        system: &["Be brief."],
        messages: &messages[..1],
        tools: &tools(),
        require_tool: false,
        session_id: "",
    });
    assert_eq!(marked(&body), ["tools[1]", "system[0]", "messages[0][0]"]);
}

#[test]
fn never_more_than_four_and_never_on_thinking_or_empty_text() {
    for steps in [0, 1, 5, 30] {
        let mut messages = tool_loop(steps);
        // An assistant message ending in thinking, then an empty text.
        messages.push(Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::RedactedThinking { data: "x".into() },
            ],
        ));
        let body = body(&config(), &[&filler(2000)], &messages, &tools());
        let marks = marked(&body);
        assert!(marks.len() <= MAX_BREAKPOINTS, "{marks:?}");
        for message in body["messages"].as_array().unwrap() {
            for block in message["content"].as_array().unwrap() {
                if block.get("cache_control").is_some() {
                    let kind = block["type"].as_str().unwrap();
                    assert!(!kind.contains("thinking"), "breakpoint on {block}");
                    assert!(kind != "text" || block["text"] != "", "breakpoint on {block}");
                }
            }
        }
        // The newest breakpoint is on the last block that can carry one.
        assert!(marks.last().unwrap().starts_with("messages"), "{marks:?}");
    }
}

#[test]
fn nothing_below_the_minimum_cacheable_size() {
    // A short system prompt alone is too small to cache; the tools too.
    let body = body(&config(), &["Be brief."], &tool_loop(1), &[]);
    assert!(marked(&body).is_empty(), "{body}");
    // Haiku needs twice the prefix Sonnet does.
    let system = filler(1500);
    let sonnet = body_for_model("claude-sonnet-4-5", &system);
    let haiku = body_for_model("claude-3-5-haiku-latest", &system);
    assert_eq!(marked(&sonnet), ["system[0]", "messages[2][0]"]);
    assert_eq!(marked(&haiku), ["messages[2][0]"]);
}

fn body_for_model(model: &str, system: &str) -> Value {
    let mut config = config();
    config.model = model.into();
    let mut messages = tool_loop(1);
    messages[0].content = vec![ContentBlock::text(filler(1000))];
    body(&config, &[system], &messages, &[])
}

#[test]
fn off_sends_no_breakpoints_and_one_hour_says_so() {
    let system = filler(2000);
    let off = config().with_cache(CacheMode::Off);
    assert!(marked(&body(&off, &[&system], &tool_loop(2), &tools())).is_empty());
    let hour = config().with_cache_ttl(CacheTtl::OneHour);
    let body = body(&hour, &[&system], &tool_loop(2), &tools());
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
}

#[test]
fn minimum_sizes_by_model() {
    assert_eq!(min_cacheable_tokens("claude-sonnet-4-5-20250929"), 1024);
    assert_eq!(min_cacheable_tokens("claude-opus-4-1"), 1024);
    assert_eq!(min_cacheable_tokens("claude-opus-4-5"), 4096);
    assert_eq!(min_cacheable_tokens("claude-haiku-4-5"), 4096);
    assert_eq!(min_cacheable_tokens("claude-3-5-haiku-20241022"), 2048);
}
