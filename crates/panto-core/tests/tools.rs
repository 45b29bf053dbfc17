//! Tool turns: one and several steps, parallel calls, failures, images, cancellation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use base64::Engine;
use panto_core::{Agent, ApiStyle, ContentBlock, Error, Event, Role, Session, StopReason, ToolResultContent};
use panto_testkit::{Chunking, MockServer, Reply};
use serde_json::Value;

use crate::support::*;

/// The tool results the `n`th request sent back, as (call id, text, is_error), per API.
fn sent_results(style: ApiStyle, body: &Value) -> Vec<(String, String, bool)> {
    let messages = wire_messages(style, body);
    match style {
        ApiStyle::AnthropicMessages => messages
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                let text = b["content"]
                    .as_array()
                    .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect::<String>())
                    .unwrap_or_else(|| b["content"].as_str().unwrap_or("").to_owned());
                (
                    b["tool_use_id"].as_str().unwrap().to_owned(),
                    text,
                    b["is_error"].as_bool().unwrap_or(false),
                )
            })
            .collect(),
        ApiStyle::OpenAiResponses => {
            unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
        }
        ApiStyle::OpenAiChat => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                let text = m["content"].as_str().unwrap_or("").to_owned();
                let is_error = text.starts_with("Error: ");
                (m["tool_call_id"].as_str().unwrap().to_owned(), text, is_error)
            })
            .collect(),
    }
}

#[tokio::test]
async fn two_step_tool_turn() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(
            Reply::sse(tool_calls(style, &[("call_1", "echo", r#"{"text":"pong"}"#)])).chunking(Chunking::EveryByte),
        );
        server.push(Reply::sse(text(style, "The tool said pong.")));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Echo)).unwrap();
        let events = collect(&mut agent, "ping it").await.unwrap();

        let starts: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolDispatchStart { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            vec![("call_1".into(), "echo".into(), serde_json::json!({"text":"pong"}))],
            "{style}"
        );
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::ToolDispatchComplete { is_error: false, .. })));
        assert!(
            matches!(events.last(), Some(Event::TurnComplete { steps: 2, .. })),
            "{style}"
        );
        assert_eq!(streamed_text(&events), "The tool said pong.");

        let b = body(&server.requests(), 1);
        assert_eq!(
            sent_results(style, &b),
            vec![("call_1".into(), "pong".into(), false)],
            "{style}"
        );
        let roles: Vec<Role> = agent.conversation().messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::User, Role::Assistant, Role::User, Role::Assistant]);
        assert_eq!(agent.conversation().messages[1].stop_reason, Some(StopReason::ToolUse));
    }
}

#[tokio::test]
async fn parallel_calls_run_concurrently_and_results_keep_call_order() {
    for style in STYLES {
        let server = MockServer::start().await;
        // The first call is slow, so it finishes last; its result must still come first.
        server.push(Reply::sse(tool_calls(
            style,
            &[
                ("call_a", "echo", r#"{"text":"slow","delay_ms":150}"#),
                ("call_b", "echo", r#"{"text":"fast"}"#),
            ],
        )));
        server.push(Reply::sse(text(style, "both done")));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Echo)).unwrap();
        let started = std::time::Instant::now();
        let events = collect(&mut agent, "go").await.unwrap();
        let completions: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolDispatchComplete { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(completions, vec!["call_b", "call_a"], "{style}: completion order");
        let b = body(&server.requests(), 1);
        let results = sent_results(style, &b);
        let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(ids, vec!["call_a", "call_b"], "{style}: results in call order");
        // Concurrency shows in wall time: two sequential calls could not finish in < 2× the slow one.
        assert!(
            started.elapsed() < std::time::Duration::from_millis(290),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn recorded_parallel_tool_fixtures_dispatch_every_call() {
    for (style, fixture, calls) in [
        (ApiStyle::AnthropicMessages, "anthropic/parallel-tool-use.sse", 2),
        (ApiStyle::OpenAiChat, "openai/parallel-tool-calls.sse", 2),
        (
            ApiStyle::OpenAiChat,
            "openai-compat/openrouter-reasoning-tool-call.sse",
            1,
        ),
        (ApiStyle::OpenAiChat, "llama-cpp-python/forced-tool-call-grammar.sse", 1),
    ] {
        let server = MockServer::start().await;
        server.push(Reply::fixture(fixture).chunking(Chunking::EveryByte));
        server.push(Reply::sse(text(style, "done")));
        let mut agent = agent(style, &server);
        let events = collect(&mut agent, "go")
            .await
            .unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let starts = events
            .iter()
            .filter(|e| matches!(e, Event::ToolDispatchStart { .. }))
            .count();
        assert_eq!(starts, calls, "{fixture}");
        // No tool is registered: each call gets an error result, and the follow-up is valid.
        let b = body(&server.requests(), 1);
        let results = sent_results(style, &b);
        assert_eq!(results.len(), calls, "{fixture}");
        assert!(
            results.iter().all(|r| r.2 && r.1.contains("unknown tool")),
            "{fixture}: {results:?}"
        );
    }
}

#[tokio::test]
async fn failing_and_panicking_tools_become_error_results() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(
            style,
            &[("c1", "fail", "{}"), ("c2", "boom", "{}")],
        )));
        server.push(Reply::sse(text(style, "I see the errors.")));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Fail)).unwrap();
        agent.register_tool(Arc::new(Boom)).unwrap();
        let events = collect(&mut agent, "try").await.unwrap();
        assert!(
            matches!(events.last(), Some(Event::TurnComplete { .. })),
            "{style}: the turn goes on"
        );
        let b = body(&server.requests(), 1);
        let results = sent_results(style, &b);
        assert_eq!(results.len(), 2);
        assert!(
            results[0].2 && results[0].1.contains("disk on fire"),
            "{style}: {results:?}"
        );
        assert!(
            results[1].2 && results[1].1.contains("tool exploded"),
            "{style}: {results:?}"
        );
    }
}

#[tokio::test]
async fn tool_images_are_resized_and_encoded_for_each_api() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(
            style,
            &[("img", "picture", r#"{"w":3000,"h":1000}"#)],
        )));
        server.push(Reply::sse(text(style, "nice picture")));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Picture)).unwrap();
        collect(&mut agent, "draw").await.unwrap();

        let stored = agent.conversation().messages[2].content[0].clone();
        let ContentBlock::ToolResult { content, .. } = stored else {
            panic!("{stored:?}")
        };
        let ToolResultContent::Image { media_type, data } = &content[0] else {
            panic!("{content:?}")
        };
        assert_eq!(media_type, "image/png");
        let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!(img.width(), 1568);
        assert!((522..=523).contains(&img.height()), "{}", img.height());

        let b = body(&server.requests(), 1);
        let sent = b.to_string();
        assert!(
            sent.contains(data.as_str()),
            "{style}: the resized image is in the request"
        );
        if style == ApiStyle::OpenAiChat {
            assert!(sent.contains("data:image/png;base64,"));
        }
    }
}

/// A mock that asks for one call of the `wait` tool (id `w1`) and then answers, and an agent with
/// that tool: the notice it gives once started, and whether it saw the cancel.
async fn waiting_agent(style: ApiStyle) -> (MockServer, Agent, Arc<tokio::sync::Notify>, Arc<AtomicBool>) {
    let server = MockServer::start().await;
    server.push(Reply::sse(tool_calls(style, &[("w1", "wait", "{}")])));
    server.push(Reply::sse(text(style, "after")));
    let mut agent = agent(style, &server);
    let started = Arc::new(tokio::sync::Notify::new());
    let saw_cancel = Arc::new(AtomicBool::new(false));
    agent
        .register_tool(Arc::new(Wait {
            started: started.clone(),
            saw_cancel: saw_cancel.clone(),
        }))
        .unwrap();
    (server, agent, started, saw_cancel)
}

/// After a stream was dropped while `wait` ran: the tool saw the cancel (cooperative stop)
/// before being abandoned, its call is closed with an error result, and the agent takes the
/// next turn.
async fn the_wait_call_was_stopped_and_closed(style: ApiStyle, agent: &mut Agent, saw_cancel: &AtomicBool) {
    for _ in 0..100 {
        if saw_cancel.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(saw_cancel.load(Ordering::SeqCst), "{style}: tool was told to stop");
    let messages = &agent.conversation().messages;
    let ContentBlock::ToolResult {
        tool_use_id, is_error, ..
    } = &messages[2].content[0]
    else {
        panic!("{messages:?}")
    };
    assert_eq!((tool_use_id.as_str(), *is_error), ("w1", true));
    collect(agent, "next").await.unwrap();
}

#[tokio::test]
async fn dropping_the_stream_while_tools_run_stops_them_and_closes_the_calls() {
    for style in STYLES {
        let (server, mut agent, started, saw_cancel) = waiting_agent(style).await;
        {
            let mut stream = agent.run("wait".into());
            while let Some(e) = stream.next().await.unwrap().map(checked) {
                if matches!(e, Event::ToolDispatchStart { .. }) {
                    break;
                }
            }
            // The calls run inside the stream, so it is pulled until the tool has started.
            tokio::select! {
                () = started.notified() => {}
                e = stream.next() => panic!("{style}: the turn went on without the tool: {e:?}"),
            }
        }
        the_wait_call_was_stopped_and_closed(style, &mut agent, &saw_cancel).await;
        body(&server.requests(), 1);
    }
}

/// A tool source named `server` offering one tool, `tool`, whose calls answer `called NAME`
/// with the name the tool was called by.
struct OneToolSource {
    server: &'static str,
    tool: &'static str,
}

impl OneToolSource {
    fn new(server: &'static str, tool: &'static str) -> Self {
        OneToolSource { server, tool }
    }
}

#[async_trait::async_trait]
impl panto_core::ToolSource for OneToolSource {
    fn name(&self) -> &str {
        self.server
    }
    fn tools(&self) -> Vec<panto_core::ToolDecl> {
        vec![panto_core::ToolDecl {
            name: self.tool.into(),
            description: "a source's tool".into(),
            input_schema: serde_json::json!({"type":"object"}),
        }]
    }
    async fn call(&self, call: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        Ok(panto_core::ToolCallResult::text(format!("called {}", call.name)))
    }
}

#[tokio::test]
async fn source_tools_get_encoded_wire_names_and_decode_on_call() {
    let server = MockServer::start().await;
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    agent
        .register_tool_source(Arc::new(OneToolSource::new("my.server", "read file")))
        .unwrap();
    let wire = agent.tools()[0].name.clone();
    assert!(
        wire.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "{wire}"
    );
    server.push(Reply::sse(tool_calls(
        ApiStyle::AnthropicMessages,
        &[("s1", &wire, "{}")],
    )));
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "ok")));
    collect(&mut agent, "use it").await.unwrap();
    let results = sent_results(ApiStyle::AnthropicMessages, &body(&server.requests(), 1));
    assert_eq!(results[0].1, "called read file");

    assert!(agent.unregister_tool("my.server"));
    assert!(agent.tools().is_empty());
    let err = agent.register_tool(Arc::new(BadName)).unwrap_err();
    assert!(matches!(err, Error::InvalidTool { .. }), "{err}");
}

#[tokio::test]
async fn a_source_tool_has_one_name_in_block_start_tool_start_and_tool_complete() {
    let server = MockServer::start().await;
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    agent
        .register_tool_source(Arc::new(OneToolSource::new("hold", "slow")))
        .unwrap();
    let wire = agent.tools()[0].name.clone();
    assert_eq!(wire, "hold__slow");
    server.push(Reply::sse(tool_calls(
        ApiStyle::AnthropicMessages,
        &[("s1", &wire, "{}")],
    )));
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "ok")));
    let events = collect(&mut agent, "use it").await.unwrap();
    let announced: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::BlockStart { tool: Some(tool), .. } => Some(tool.name.as_str()),
            _ => None,
        })
        .collect();
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolDispatchStart { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let completed: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolDispatchComplete { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(announced, ["hold__slow"]);
    assert_eq!(started, announced, "tool_start names the call as block_start did");
    assert_eq!(completed, announced, "tool_complete names the call as block_start did");
    // The tool itself still gets its own name.
    let results = sent_results(ApiStyle::AnthropicMessages, &body(&server.requests(), 1));
    assert_eq!(results[0].1, "called slow");
}

/// A source whose tool list grows when its tool is called, as an MCP server's does after
/// `notifications/tools/list_changed`.
struct GrowingSource {
    tools: std::sync::Mutex<Vec<&'static str>>,
    generation: std::sync::atomic::AtomicU64,
}

#[async_trait::async_trait]
impl panto_core::ToolSource for GrowingSource {
    fn name(&self) -> &str {
        "srv"
    }
    fn tools(&self) -> Vec<panto_core::ToolDecl> {
        let names = self.tools.lock().unwrap().clone();
        names
            .into_iter()
            .map(|name| panto_core::ToolDecl {
                name: name.into(),
                description: format!("{name} tool"),
                input_schema: serde_json::json!({"type": "object"}),
            })
            .collect()
    }
    async fn call(&self, _call: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        self.tools.lock().unwrap().insert(1, "added");
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(panto_core::ToolCallResult::text("grew"))
    }
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_source_whose_generation_moves_is_re_read_before_the_next_step_in_a_stable_place() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let mut agent = agent(style, &server);
    agent.register_tool(Arc::new(Echo)).unwrap();
    agent
        .register_tool_source(Arc::new(GrowingSource {
            tools: std::sync::Mutex::new(vec!["first", "last"]),
            generation: 0.into(),
        }))
        .unwrap();
    server.push(Reply::sse(tool_calls(style, &[("g1", "srv__first", "{}")])));
    server.push(Reply::sse(text(style, "done")));
    collect(&mut agent, "grow").await.unwrap();
    let offered = |n: usize| -> Vec<String> {
        body(&server.requests(), n)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(offered(0), ["echo", "srv__first", "srv__last"]);
    // The second request of the same turn offers the new tool in the source's order, after the
    // tools registered before the source.
    assert_eq!(offered(1), ["echo", "srv__first", "srv__added", "srv__last"]);
    assert_eq!(agent.tools().len(), 4);
}

struct BadName;

#[async_trait::async_trait]
impl panto_core::Tool for BadName {
    fn declaration(&self) -> panto_core::ToolDecl {
        panto_core::ToolDecl {
            name: "bad name!".into(),
            description: String::new(),
            input_schema: serde_json::json!({}),
        }
    }
    async fn call(&self, _: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        unreachable!()
    }
}

#[tokio::test]
async fn step_limit_stops_a_runaway_loop_with_a_valid_conversation() {
    let server = MockServer::start().await;
    for i in 0..3 {
        server.push(Reply::sse(tool_calls(
            ApiStyle::OpenAiChat,
            &[(&format!("c{i}"), "echo", r#"{"text":"again"}"#)],
        )));
    }
    let mut config = config(ApiStyle::OpenAiChat, &server);
    config.max_steps = 2;
    let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
    agent.register_tool(Arc::new(Echo)).unwrap();
    let err = collect(&mut agent, "loop").await.unwrap_err();
    assert!(matches!(err, Error::StepLimit(2)), "{err}");
    assert_eq!(server.requests().len(), 2);
    // Every call has its result.
    let last = agent.conversation().messages.last().unwrap();
    assert!(matches!(last.content[0], ContentBlock::ToolResult { .. }));
}

/// A cancel while tools run: every call that was reported started is reported complete (the
/// interrupted ones with their error result) before the turn ends with `Cancelled`.
#[tokio::test]
async fn a_cancel_while_tools_run_completes_every_started_call_before_the_turn_ends() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(
            style,
            &[
                ("c1", "echo", r#"{"text":"fast"}"#),
                ("c2", "echo", r#"{"text":"slow","delay_ms":60000}"#),
                ("c3", "echo", r#"{"text":"slower","delay_ms":60000}"#),
            ],
        )));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Echo)).unwrap();
        let mut stream = agent.run("go".into());
        let token = stream.cancel_token();
        let (mut started, mut completed) = (Vec::new(), Vec::new());
        let end = loop {
            match stream.next().await {
                Ok(Some(Event::ToolDispatchStart { id, .. })) => started.push(id),
                Ok(Some(Event::ToolDispatchComplete {
                    id, content, is_error, ..
                })) => {
                    completed.push((id, is_error, format!("{content:?}")));
                    token.cancel();
                }
                Ok(Some(_)) => {}
                Ok(None) => panic!("{style}: the turn completed"),
                Err(e) => break e,
            }
        };
        assert!(matches!(end, panto_core::Error::Cancelled), "{style}: {end}");
        assert_eq!(started, ["c1", "c2", "c3"], "{style}");
        let ids: Vec<&str> = completed.iter().map(|(id, ..)| id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c3"], "{style}: every started call completes");
        assert!(!completed[0].1, "{style}: {completed:?}");
        for (id, is_error, content) in &completed[1..] {
            assert!(*is_error && content.contains("interrupted"), "{style}: {id}: {content}");
        }
        assert!(
            matches!(stream.next().await, Ok(None)),
            "{style}: the cancel is reported once"
        );
    }
}

/// `leak`: returns a text holding the provider key (and its base64 form), as `cat .env` or
/// `echo $ANTHROPIC_API_KEY` would.
struct Leak;

#[async_trait::async_trait]
impl panto_core::Tool for Leak {
    fn declaration(&self) -> panto_core::ToolDecl {
        panto_core::ToolDecl {
            name: "leak".into(),
            description: "Prints the environment".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    async fn call(&self, _call: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(KEY);
        Ok(panto_core::ToolCallResult::text(format!(
            "API_KEY={KEY}\nencoded: {encoded}\nend"
        )))
    }
}

#[tokio::test]
async fn a_tool_result_holding_the_provider_key_is_stored_sent_and_shown_redacted() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(style, &[("call_1", "leak", "{}")])));
        server.push(Reply::sse(text(style, "Seen.")));
        let store = panto_core::MemoryStore::new();
        let session = Session::create(store.clone());
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        agent.register_tool(Arc::new(Leak)).unwrap();
        let events = collect(&mut agent, "look").await.unwrap();

        let results = sent_results(style, &body(&server.requests(), 1));
        assert_eq!(results.len(), 1, "{style}");
        assert_eq!(
            results[0].1, "API_KEY=[redacted]\nencoded: [redacted]\nend",
            "{style}: the request"
        );
        let completed = events
            .iter()
            .find_map(|e| match e {
                Event::ToolDispatchComplete { content, .. } => Some(content.clone()),
                _ => None,
            })
            .expect("the call completed");
        assert_eq!(
            completed,
            vec![ToolResultContent::Text {
                text: "API_KEY=[redacted]\nencoded: [redacted]\nend".into()
            }],
            "{style}: the event"
        );
        let stored = format!("{:?}", store.records(&id));
        assert!(stored.contains("API_KEY=[redacted]"), "{style}: {stored}");
        assert!(!stored.contains(KEY), "{style}: the key was stored: {stored}");
    }
}

/// A stream dropped while a `poll_next` step is in flight (the step owns the turn then) still
/// ends the turn cleanly: the tool is told to stop and its call is closed in the conversation.
#[tokio::test]
async fn dropping_the_stream_mid_poll_next_closes_the_calls() {
    use futures_util::StreamExt;
    for style in STYLES {
        let (_server, mut agent, started, saw_cancel) = waiting_agent(style).await;
        {
            let mut stream = agent.run("wait".into());
            while let Some(e) = StreamExt::next(&mut stream).await {
                if matches!(e.unwrap(), Event::ToolDispatchStart { .. }) {
                    break;
                }
            }
            tokio::select! {
                () = started.notified() => {}
                e = StreamExt::next(&mut stream) => panic!("{style}: the turn went on without the tool: {e:?}"),
            }
        }
        the_wait_call_was_stopped_and_closed(style, &mut agent, &saw_cancel).await;
    }
}
