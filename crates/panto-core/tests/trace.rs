//! Tracing: the span tree and attributes of a turn (docs/observability.md), retries and
//! context overflow as events, and no secret in anything recorded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine;
use panto_core::{Agent, ApiStyle, Event, MemoryStore, Session};
use panto_store_fs::JsonlStore;
use panto_testkit::trace::{Capture, CapturedSpan};
use panto_testkit::{fixture_bytes, script, MockServer, Reply};
use serde_json::json;

use crate::support::*;

fn number(span: &CapturedSpan, field: &str) -> f64 {
    let value = span
        .field(field)
        .unwrap_or_else(|| panic!("{} has no {field}: {:?}", span.name, span.fields));
    value
        .parse()
        .unwrap_or_else(|_| panic!("{}'s {field} is not a number: {value}", span.name))
}

#[tokio::test]
async fn a_tool_turn_is_one_span_tree_with_genai_attributes() {
    for style in STYLES {
        let capture = Capture::new();
        let _guard = capture.set_default();
        let dir = tempfile::tempdir().unwrap();
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(
            style,
            &[("call_1", "echo", r#"{"text":"hello"}"#)],
        )));
        server.push(Reply::sse(text(style, "done")));
        let session = Session::create(JsonlStore::new(dir.path()));
        let mut agent = agent_on(style, &server, session);
        agent.register_tool(Arc::new(Echo)).unwrap();
        collect(&mut agent, "please echo the magic word").await.unwrap();
        drop(agent);

        assert_eq!(
            capture.tree(),
            [
                "invoke_agent",
                "  chat",
                "  execute_tool",
                "  panto.store.append",
                // The tool's results are written while the request carrying them travels.
                "  chat",
                "  panto.store.append",
                "  panto.store.append",
            ],
            "{style}"
        );
        assert!(capture.spans().iter().all(|s| s.closed), "{style}: every span closed");

        let turn = capture.span("invoke_agent").unwrap();
        let provider = if style == ApiStyle::AnthropicMessages {
            "anthropic"
        } else {
            "openai"
        };
        let model = if style == ApiStyle::AnthropicMessages {
            "claude-sonnet-4-5"
        } else {
            "gpt-4o"
        };
        for (field, want) in [
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.provider.name", provider),
            ("gen_ai.request.model", model),
            ("gen_ai.conversation.id", agent_session_id(&capture).as_str()),
            ("panto.api_style", style.as_str()),
            ("panto.turn.steps", "2"),
            ("panto.turn.outcome", "complete"),
            // 20 + 11 input and 9 + 7 output tokens over the two requests.
            ("gen_ai.usage.input_tokens", "31"),
            ("gen_ai.usage.output_tokens", "16"),
            ("gen_ai.response.finish_reasons", "end_turn"),
        ] {
            assert_eq!(turn.field(field), Some(want), "{style}: turn {field}");
        }

        let chats = capture.spans_named("chat");
        for (chat, (input, output, finish)) in chats.iter().zip([("20", "9", "tool_use"), ("11", "7", "end_turn")]) {
            for (field, want) in [
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.provider.name", provider),
                ("gen_ai.system", provider),
                ("gen_ai.request.model", model),
                ("panto.request.purpose", "turn"),
                ("panto.request.attempt", "1"),
                ("http.response.status_code", "200"),
                ("gen_ai.usage.input_tokens", input),
                ("gen_ai.usage.output_tokens", output),
                ("gen_ai.usage.cache_read.input_tokens", "0"),
                ("gen_ai.response.finish_reasons", finish),
            ] {
                assert_eq!(chat.field(field), Some(want), "{style}: chat {field}");
            }
            let ttfb = number(chat, "panto.time_to_first_byte_ms");
            let ttft = number(chat, "panto.time_to_first_token_ms");
            let duration = number(chat, "panto.duration_ms");
            assert!(
                ttfb <= ttft && ttft <= duration,
                "{style}: {ttfb} <= {ttft} <= {duration}"
            );
            assert_eq!(chat.field("error.type"), None);
        }

        let tool = capture.span("execute_tool").unwrap();
        for (field, want) in [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.tool.call.id", "call_1"),
            ("panto.tool.is_error", "false"),
            ("panto.tool.result_bytes", "5"),
            ("otel.name", "execute_tool echo"),
        ] {
            assert_eq!(tool.field(field), Some(want), "{style}: tool {field}");
        }
        number(&tool, "panto.duration_ms");

        let appends = capture.spans_named("panto.store.append");
        // The assistant's tool call, its result, the answer (a new session's prompt is written
        // with the first assistant message).
        let messages: Vec<&str> = appends
            .iter()
            .map(|a| a.field("panto.store.messages").unwrap())
            .collect();
        assert_eq!(messages, ["2", "1", "1"], "{style}");
        for append in &appends {
            assert_eq!(append.field("panto.store.kind"), Some("jsonl"));
            assert!(number(append, "panto.store.bytes") > 50.0, "{style}: {append:?}");
            number(append, "panto.store.fsync_ms");
        }

        // Content is not recorded unless asked for.
        let all = capture.all_text();
        assert!(
            !all.contains("magic word"),
            "{style}: the prompt leaked into tracing:\n{all}"
        );
        assert!(
            !all.contains("hello"),
            "{style}: tool input leaked into tracing:\n{all}"
        );
        assert!(capture.events_named("gen_ai.choice").is_empty());
    }
}

/// Counts how often any span is entered, the cost that a subscriber pays per enter.
#[derive(Clone, Default)]
struct EnterCount(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for EnterCount {
    fn on_enter(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A streamed response's deltas are pulled outside any span: entering one per delta is a cost
/// per delta that a debug log pays (docs/performance.md, "Tracing"), while the span tree and the
/// request's timings need none of it.
#[tokio::test]
async fn a_streamed_response_enters_no_span_per_delta() {
    use tracing_subscriber::layer::SubscriberExt;

    const DELTAS: usize = 2_000;
    let capture = Capture::new();
    let enters = EnterCount::default();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::registry()
            .with(capture.clone())
            .with(enters.clone()),
    );
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text_deltas(DELTAS)));
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let events = collect(&mut agent, "hi").await.unwrap();
    let deltas = events.iter().filter(|e| matches!(e, Event::Delta { .. })).count();
    assert_eq!(deltas, DELTAS);

    // A few per step (the turn's start, the request, the message's end), however long the
    // response.
    let entered = enters.0.load(Ordering::Relaxed);
    assert!(
        entered < 50,
        "spans were entered {entered} times for a response of {DELTAS} deltas"
    );
    assert_eq!(capture.tree(), ["invoke_agent", "  chat"]);
    let chat = capture.span("chat").unwrap();
    assert_eq!(chat.field("gen_ai.response.finish_reasons"), Some("end_turn"));
    let ttft = number(&chat, "panto.time_to_first_token_ms");
    assert!(ttft <= number(&chat, "panto.duration_ms"));
    let turn = capture.span("invoke_agent").unwrap();
    assert_eq!(turn.field("panto.turn.outcome"), Some("complete"));
    assert!(capture.spans().iter().all(|s| s.closed), "every span closed");
}

/// The session id the turn recorded, checked against the store appends' (the same session).
fn agent_session_id(capture: &Capture) -> String {
    let append = capture.span("panto.store.append").unwrap();
    append.field("gen_ai.conversation.id").unwrap().to_owned()
}

#[tokio::test]
async fn a_retry_is_an_event_between_two_request_spans() {
    let capture = Capture::new();
    let _guard = capture.set_default();
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    server.push(
        Reply::json(
            429,
            &json!({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}),
        )
        .header("retry-after", "0.01"),
    );
    server.push(Reply::sse(text(style, "made it")));
    let mut agent = agent(style, &server);
    collect(&mut agent, "hi").await.unwrap();

    let chats = capture.spans_named("chat");
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0].field("panto.request.attempt"), Some("1"));
    assert_eq!(chats[0].field("http.response.status_code"), Some("429"));
    assert_eq!(chats[0].field("error.type"), Some("http_429"));
    assert!(chats[0].field("panto.error.message").unwrap().contains("slow down"));
    assert_eq!(chats[1].field("panto.request.attempt"), Some("2"));
    assert_eq!(chats[1].field("http.response.status_code"), Some("200"));

    let retries = capture.events_named("panto.retry");
    assert_eq!(retries.len(), 1, "{:?}", capture.events());
    let retry = &retries[0];
    assert_eq!(retry.level, "WARN");
    assert_eq!(retry.field("panto.retry.attempt"), Some("2"));
    assert_eq!(retry.field("panto.retry.delay_ms"), Some("10.0"));
    assert_eq!(retry.field("error.type"), Some("http_429"));
    assert!(retry.field("panto.retry.reason").unwrap().contains("429"));
    let turn = capture.span("invoke_agent").unwrap();
    assert_eq!(retry.span, Some(turn.index), "the retry is an event of the turn");
}

#[tokio::test]
async fn a_context_overflow_is_an_event_and_the_compaction_a_span_with_its_request() {
    let capture = Capture::new();
    let _guard = capture.set_default();
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let store = MemoryStore::new();
    let mut config = config(style, &server);
    config.compaction.keep_recent_tokens = 30;
    let mut agent = Agent::new(config, Session::create(store.clone()), None).unwrap();
    for i in 0..3 {
        server.push(Reply::sse(text(
            style,
            &format!("answer number {i} with some words in it"),
        )));
        collect(&mut agent, &format!("question number {i} about the project"))
            .await
            .unwrap();
    }
    let before = capture.spans().len();
    let fixture = "anthropic/error-400-prompt-too-long.json";
    server.push(Reply::raw(400, fixture_bytes(fixture).unwrap()).header("content-type", "application/json"));
    server.push(Reply::sse(text(style, "SUMMARY after overflow")));
    server.push(Reply::sse(text(style, "fits now")));
    collect(&mut agent, "one more").await.unwrap();

    let overflow = capture.events_named("panto.context_overflow");
    assert_eq!(overflow.len(), 1, "{:?}", capture.events());
    assert_eq!(overflow[0].field("panto.overflow.action"), Some("compact"));
    assert!(overflow[0].field("panto.context.estimated_tokens").is_some());

    let spans = &capture.spans()[before..];
    let turn = spans.iter().find(|s| s.name == "invoke_agent").unwrap();
    let compaction = spans.iter().find(|s| s.name == "panto.compaction").unwrap();
    assert_eq!(compaction.parent, Some(turn.index));
    assert!(compaction.closed);
    assert!(number(compaction, "panto.compaction.tokens_before") > 0.0);
    assert!(compaction.field("panto.compaction.tokens_after").is_some());
    let summary_request = spans
        .iter()
        .find(|s| s.name == "chat" && s.parent == Some(compaction.index))
        .expect("the summary request is a chat span under the compaction");
    assert_eq!(summary_request.field("panto.request.purpose"), Some("compaction"));
    let failed = spans.iter().find(|s| s.name == "chat").unwrap();
    assert_eq!(failed.field("error.type"), Some("context_overflow"));
    assert_eq!(failed.field("http.response.status_code"), Some("400"));
}

#[tokio::test]
async fn a_retried_compaction_summary_is_a_retry_event_between_two_request_spans() {
    let capture = Capture::new();
    let _guard = capture.set_default();
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let mut config = config(style, &server);
    config.compaction.keep_recent_tokens = 30;
    let mut agent = Agent::new(config, Session::create(MemoryStore::new()), None).unwrap();
    for i in 0..3 {
        server.push(Reply::sse(text(
            style,
            &format!("answer number {i} with some words in it"),
        )));
        collect(&mut agent, &format!("question number {i} about the project"))
            .await
            .unwrap();
    }
    let before = capture.spans().len();
    server.push(
        Reply::json(
            529,
            &json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        )
        .header("retry-after", "0.01"),
    );
    server.push(Reply::sse(text(style, "SUMMARY after a retry")));
    let result = agent.compact(None, None).await.unwrap();
    assert_eq!(result.summary, "SUMMARY after a retry");

    let spans = &capture.spans()[before..];
    let compaction = spans.iter().find(|s| s.name == "panto.compaction").unwrap();
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "chat" && s.parent == Some(compaction.index))
        .collect();
    assert_eq!(chats.len(), 2, "{:?}", capture.tree());
    assert_eq!(chats[0].field("panto.request.attempt"), Some("1"));
    assert_eq!(chats[0].field("error.type"), Some("http_5xx"));
    assert_eq!(chats[1].field("panto.request.attempt"), Some("2"));
    assert_eq!(chats[1].field("panto.request.purpose"), Some("compaction"));

    let retries = capture.events_named("panto.retry");
    assert_eq!(retries.len(), 1, "{:?}", capture.events());
    let retry = &retries[0];
    assert_eq!(retry.level, "WARN");
    assert_eq!(
        retry.span,
        Some(compaction.index),
        "the retry is an event of the compaction"
    );
    assert_eq!(retry.field("panto.retry.attempt"), Some("2"));
    assert_eq!(retry.field("panto.retry.delay_ms"), Some("10.0"));
    assert_eq!(retry.field("panto.retry.discard_partial"), Some("false"));
    assert_eq!(retry.field("error.type"), Some("http_5xx"));
    assert!(retry.field("panto.retry.reason").unwrap().contains("529"));
}

#[tokio::test]
async fn no_key_reaches_a_field_even_with_content_on() {
    const SECRET: &str = "sk-ant-api03-SECRET-0123456789abcdef";
    const HEADER_SECRET: &str = "gw-token-SECRET-fedcba9876";
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    let capture = Capture::new();
    let _guard = capture.set_default();
    for style in STYLES {
        let server = MockServer::start().await;
        let echoed = format!("Incorrect API key provided: {SECRET} (Bearer {SECRET}, {b64}, {HEADER_SECRET})");
        server.push(Reply::json(
            503,
            &json!({"error":{"message": echoed, "type":"server_error"}}),
        ));
        let input = json!({"text": format!("the key is {SECRET}")}).to_string();
        server.push(Reply::sse(tool_calls(style, &[("call_1", "echo", &input)])));
        server.push(Reply::sse(text(style, &format!("your key {SECRET} and {b64}"))));
        let mut config = config(style, &server).with_log_content(true);
        config.provider.api_key = SECRET.to_owned();
        config
            .provider
            .extra_headers
            .push(("x-gateway-token".into(), HEADER_SECRET.into()));
        let mut agent = Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
        agent.register_tool(Arc::new(Echo)).unwrap();
        collect(&mut agent, &format!("remember {SECRET} and Bearer {b64}"))
            .await
            .unwrap();
    }
    let all = capture.all_text();
    // Content logging is on: the prompt, the tool call and the answer are there, scrubbed.
    assert!(all.contains("remember [redacted] and Bearer [redacted]"), "{all}");
    assert!(all.contains("the key is [redacted]"), "{all}");
    assert!(all.contains("Incorrect API key provided: [redacted]"), "{all}");
    for secret in [SECRET, b64.as_str(), HEADER_SECRET, "SECRET"] {
        assert!(!all.contains(secret), "{secret} reached a tracing field:\n{all}");
    }
}
