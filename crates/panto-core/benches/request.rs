//! Building a request's body, in each API style: what the agent does before every request.
//!
//! Two conversations: the third request of the fleet bench's turn (a prompt, two tool calls and
//! their results, one small tool: what a service's agents send thousands of times a second), and
//! a coding session of about 1 MB (a 50-step tool loop with 20 KB tool outputs and eight tools
//! with realistic schemas). No target; `cargo xtask bench` shows the medians for context
//! (docs/performance.md, "Requests built from typed wire structs").

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use panto_core::__bench::request_body;
use panto_core::{ApiStyle, ContentBlock, Message, ProviderConfig, Role, ToolDecl, ToolResultContent};
use serde_json::json;

const STYLES: &[(&str, ApiStyle)] = &[
    ("anthropic", ApiStyle::AnthropicMessages),
    ("openai-chat", ApiStyle::OpenAiChat),
    ("openai-responses", ApiStyle::OpenAiResponses),
];

fn config(style: ApiStyle) -> ProviderConfig {
    ProviderConfig::new(style, "claude-sonnet-4-5")
        .with_base_url("http://127.0.0.1:1")
        .with_api_key("bench-key")
}

/// A tool step: the assistant's text and call, then the user message with its result.
fn step(messages: &mut Vec<Message>, id: &str, input: serde_json::Value, output: String) {
    messages.push(Message::new(
        Role::Assistant,
        vec![
            ContentBlock::text("Let me look."),
            ContentBlock::ToolUse {
                id: id.to_owned(),
                name: "lookup".into(),
                input,
            },
        ],
    ));
    messages.push(Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: id.to_owned(),
            content: vec![ToolResultContent::Text { text: output }],
            is_error: false,
        }],
    ));
}

/// The fleet's third request: a prompt and two tool steps, one tool.
fn fleet_request() -> (Vec<Message>, Vec<ToolDecl>) {
    let mut messages = vec![Message::new(Role::User, vec![ContentBlock::text("What is a fleet?")])];
    for (i, word) in ["fleet", "agent"].iter().enumerate() {
        step(
            &mut messages,
            &format!("toolu_{i}"),
            json!({ "word": word }),
            format!("the entry for {word}"),
        );
    }
    let tools = vec![ToolDecl {
        name: "lookup".into(),
        description: "Looks a word up.".into(),
        input_schema: json!({"type": "object", "properties": {"word": {"type": "string"}}}),
    }];
    (messages, tools)
}

/// A coding session of about 1 MB: 50 tool steps, each result 20 KB of source text, and eight
/// tools whose schemas have a few described properties each.
fn session_1mb() -> (Vec<Message>, Vec<ToolDecl>) {
    let mut messages = vec![Message::new(
        Role::User,
        vec![ContentBlock::text("Find why the parser drops the last line.")],
    )];
    let source = "    let line = lines.next().ok_or(Error::Eof)?; // \"quoted\"\n".repeat(20_000 / 56);
    for i in 0..50 {
        step(
            &mut messages,
            &format!("toolu_{i:02}"),
            json!({ "path": format!("src/file_{i}.rs"), "offset": i * 100 }),
            source.clone(),
        );
    }
    let tools = ["read", "write", "edit", "bash", "grep", "find", "ls", "fetch"]
        .iter()
        .map(|name| ToolDecl {
            name: (*name).into(),
            description: format!("The {name} tool. ").repeat(20),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path of the file, relative to the working directory."},
                    "offset": {"type": "integer", "description": "First line to read, from 1."},
                    "limit": {"type": "integer", "description": "How many lines at most."},
                    "pattern": {"type": "string", "description": "A regular expression."}
                },
                "required": ["path"]
            }),
        })
        .collect();
    (messages, tools)
}

fn bench(c: &mut Criterion) {
    let system = ["You are a coding agent. Be brief."];
    let mut group = c.benchmark_group("request");
    for (name, (messages, tools)) in [("fleet-turn", fleet_request()), ("session-1mb", session_1mb())] {
        for (style_name, style) in STYLES {
            let config = config(*style);
            let bytes = request_body(&config, &system, &messages, &tools).len();
            // A body that lost the conversation must not pass as a fast one.
            assert!(bytes > messages.len() * 10, "{style_name}: a {bytes}-byte body");
            group.throughput(Throughput::Bytes(bytes as u64));
            group.bench_function(BenchmarkId::new(name, style_name), |b| {
                b.iter(|| request_body(&config, &system, &messages, &tools));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
