//! The OpenAI Responses API end to end: recorded-shape fixtures over loopback, a tool turn whose
//! reasoning goes back with the next request, retries, and a conversation moved between styles.

use std::sync::Arc;

use panto_core::{ApiStyle, BlockKind, ContentBlock, Error, Event, StopReason};
use panto_testkit::script::ResponsesScript;
use panto_testkit::{Chunking, MockServer, Reply};

use crate::support::*;

const STYLE: ApiStyle = ApiStyle::OpenAiResponses;

#[tokio::test]
async fn fixtures_play_through_the_agent_whole_and_byte_by_byte() {
    for (fixture, text, stop) in [
        (
            "responses/text-basic.sse",
            "Hello! How can I help you today?",
            StopReason::EndTurn,
        ),
        (
            "responses/incomplete-max-output-tokens.sse",
            "A cell is the basic",
            StopReason::MaxTokens,
        ),
        (
            "responses/incomplete-content-filter.sse",
            "I can",
            StopReason::ContentFilter,
        ),
    ] {
        let mut seen = Vec::new();
        for chunking in [Chunking::Whole, Chunking::EveryByte] {
            let server = MockServer::start().await;
            server.push(Reply::fixture(fixture).chunking(chunking));
            let mut agent = agent(STYLE, &server);
            let events = collect(&mut agent, "hi")
                .await
                .unwrap_or_else(|e| panic!("{fixture}: {e}"));
            assert_eq!(streamed_text(&events), text, "{fixture}");
            let message = &agent.conversation().messages[1];
            assert_eq!(message.text(), text, "{fixture}");
            assert_eq!(message.stop_reason.as_ref(), Some(&stop), "{fixture}");
            seen.push((events, message.clone()));
        }
        assert_eq!(seen[0], seen[1], "{fixture}: byte-by-byte delivery decodes the same");
    }
}

#[tokio::test]
async fn a_tool_turn_sends_its_reasoning_back_and_the_mock_accepts_it() {
    let server = MockServer::start().await;
    server.push(Reply::fixture("responses/reasoning-summary-function-call.sse").chunking(Chunking::EveryByte));
    server.push(Reply::sse(ResponsesScript::new().text("Sunny.").build()));
    let mut agent = agent(STYLE, &server);
    agent.register_tool(Arc::new(GetWeather)).unwrap();
    let events = collect(&mut agent, "weather in Paris?").await.unwrap();

    // The summary streamed as thinking; the reasoning item was announced but carries no deltas.
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Delta {
                delta: panto_core::ContentDelta::Thinking(t),
                ..
            } => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(thinking.starts_with("**Checking the weather**"), "{thinking}");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::BlockStart {
            kind: BlockKind::Reasoning,
            ..
        }
    )));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = body(&requests, 1);
    let input = second["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "reasoning", "function_call", "function_call_output"]);
    assert_eq!(input[1]["id"], "rs_68c1f0a4d1f48190a3c5e7f9b1d3f5a70b1e3d5f7a9c2e4b");
    assert!(input[1]["encrypted_content"].as_str().unwrap().starts_with("gAAAAAB"));
    assert_eq!(input[2]["call_id"], "call_Xk3q9ZrT2wLmN8vB5cYd1FgH");
    assert_eq!(input[3]["call_id"], "call_Xk3q9ZrT2wLmN8vB5cYd1FgH");
    assert_eq!(input[3]["output"], "sunny in Paris, France");
    // Summary text is not sent twice: the thinking block stays home.
    assert!(!second.to_string().contains(r#""type":"thinking""#));
}

#[tokio::test]
async fn a_failed_response_is_retried_like_the_other_apis() {
    let server = MockServer::start().await;
    server.push(Reply::fixture("responses/failed-server-error.sse"));
    server.push(Reply::fixture("responses/error-event-rate-limit.sse"));
    server.push(Reply::sse(ResponsesScript::new().text("third time").build()));
    let mut retrying = agent(STYLE, &server);
    let events = collect(&mut retrying, "hi").await.unwrap();
    let retries = events.iter().filter(|e| matches!(e, Event::ProviderRetry(_))).count();
    assert_eq!(retries, 2);
    assert_eq!(streamed_text(&events), "third time");

    // A context overflow is not retried as is: it compacts first (nothing to compact here, so
    // the error comes back).
    let server = MockServer::start().await;
    for _ in 0..3 {
        server.push(Reply::fixture("responses/error-event-context-length-exceeded.sse"));
    }
    let mut overflowing = agent(STYLE, &server);
    let err = collect(&mut overflowing, "hi").await.unwrap_err();
    assert!(matches!(err, Error::ContextOverflow { .. }), "{err:?}");
}

#[tokio::test]
async fn a_conversation_moves_between_styles_without_the_other_apis_reasoning() {
    let server = MockServer::start().await;
    server.push(Reply::sse(
        ResponsesScript::new()
            .reasoning(&["**Greeting**"], "gAAAAB-opaque")
            .text("Hi there.")
            .build(),
    ));
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "Hello again.")));
    server.push(Reply::sse(text(ApiStyle::OpenAiChat, "And again.")));
    let mut agent = agent(STYLE, &server);
    collect(&mut agent, "hi").await.unwrap();
    assert_eq!(agent.conversation().reasoning_unsendable_in(STYLE), 0);
    assert_eq!(
        agent
            .conversation()
            .reasoning_unsendable_in(ApiStyle::AnthropicMessages),
        1
    );
    assert!(matches!(
        agent.conversation().messages[1].content[..],
        [
            ContentBlock::Thinking { .. },
            ContentBlock::Reasoning { .. },
            ContentBlock::Text { .. }
        ]
    ));

    for style in [ApiStyle::AnthropicMessages, ApiStyle::OpenAiChat] {
        agent.set_config(config(style, &server));
        collect(&mut agent, "again").await.unwrap();
    }
    let requests = server.requests();
    for n in [1, 2] {
        let b = body(&requests, n);
        assert!(!b.to_string().contains("gAAAAB-opaque"), "request {n}: {b}");
        assert!(
            b.to_string().contains("Hi there."),
            "the conversation carries over: {b}"
        );
    }
}

#[tokio::test]
async fn litellm_interleaved_function_calls_both_run_and_both_results_go_back() {
    // LiteLLM's bridge streams function call 2 before call 1 is done; delivered a byte at a time.
    let server = MockServer::start().await;
    server.push(Reply::fixture("litellm/responses-tool-calls-interleaved-customllm.sse").chunking(Chunking::EveryByte));
    server.push(Reply::sse(ResponsesScript::new().text("Sunny, and 14:00.").build()));
    let mut agent = agent(STYLE, &server);
    agent.register_tool(Arc::new(Answer("get_weather"))).unwrap();
    agent.register_tool(Arc::new(Answer("get_time"))).unwrap();
    let events = collect(&mut agent, "weather and time in Paris?").await.unwrap();

    let started: Vec<(&str, &str, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolDispatchStart { id, name, input } => Some((id.as_str(), name.as_str(), input.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            ("call_a1", "get_weather", r#"{"city":"Paris"}"#.to_owned()),
            ("call_b2", "get_time", r#"{"tz":"Europe/Paris"}"#.to_owned()),
        ]
    );
    let first = &agent.conversation().messages[1];
    assert_eq!(first.text(), "Checking.");
    assert_eq!(first.stop_reason.as_ref(), Some(&StopReason::ToolUse));

    let second = body(&server.requests(), 1);
    let outputs: Vec<(String, String)> = second["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| (i["call_id"].as_str().unwrap().to_owned(), i["output"].to_string()))
        .collect();
    assert_eq!(
        outputs,
        [
            (
                "call_a1".to_owned(),
                r#""get_weather ran with {\"city\":\"Paris\"}""#.to_owned()
            ),
            (
                "call_b2".to_owned(),
                r#""get_time ran with {\"tz\":\"Europe/Paris\"}""#.to_owned()
            ),
        ]
    );
    assert_eq!(streamed_text(&events), "Checking.Sunny, and 14:00.");
}

/// A tool of the given name whose result repeats its arguments.
struct Answer(&'static str);

#[panto_core::async_trait]
impl panto_core::Tool for Answer {
    fn declaration(&self) -> panto_core::ToolDecl {
        panto_core::ToolDecl {
            name: self.0.into(),
            description: "Answers".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(&self, call: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        Ok(panto_core::ToolCallResult::text(format!(
            "{} ran with {}",
            self.0, call.input
        )))
    }
}

/// `get_weather`: a fixed answer naming its location.
struct GetWeather;

#[panto_core::async_trait]
impl panto_core::Tool for GetWeather {
    fn declaration(&self) -> panto_core::ToolDecl {
        panto_core::ToolDecl {
            name: "get_weather".into(),
            description: "The weather".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(&self, call: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        let location = call.input["location"].as_str().unwrap_or("nowhere");
        Ok(panto_core::ToolCallResult::text(format!("sunny in {location}")))
    }
}
