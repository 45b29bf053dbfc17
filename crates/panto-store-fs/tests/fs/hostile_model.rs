//! A hostile model, end to end over the file store: tool calls with repeated, empty and
//! path-like ids, a name with a terminal escape, a string for input, input nested deeper than
//! a session line can hold, and cut-off JSON. The session they leave loads, the calls that were
//! not well formed never ran, and every later request, resumed in a new process too, passes the
//! mock's validation of the real APIs' rules.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use panto_core::{
    Agent, ApiStyle, Config, Event, SessionStore, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError,
    ToolResultContent,
};
use panto_testkit::script::{AnthropicScript, OpenAiScript, ResponsesScript};
use panto_testkit::{MockServer, Reply};
use serde_json::json;

use super::common::fast_store;

/// `echo`, counting its runs.
struct Echo(Arc<AtomicUsize>);

#[async_trait]
impl Tool for Echo {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "echo".into(),
            description: "Returns its text".into(),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        }
    }
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolCallResult::text(
            call.input["text"].as_str().unwrap_or("").to_owned(),
        ))
    }
}

fn config(style: ApiStyle, server: &MockServer) -> Config {
    let mut config = server.config(style, "sk-test");
    config.retry.max_attempts = 1;
    config
}

/// `{"a":{"a":…}}` nested `levels` deep.
fn nested(levels: usize) -> String {
    format!("{}{{{}", "{\"a\":".repeat(levels - 1), "}".repeat(levels))
}

/// One message of tool calls `(id, name, input JSON)`.
fn tool_calls(style: ApiStyle, calls: &[(&str, &str, &str)]) -> Vec<u8> {
    match style {
        ApiStyle::AnthropicMessages => calls
            .iter()
            .fold(AnthropicScript::new().text("Calling."), |s, (id, name, input)| {
                s.tool_use(id, name, input)
            })
            .build(),
        ApiStyle::OpenAiChat => calls
            .iter()
            .fold(OpenAiScript::new().text("Calling."), |s, (id, name, input)| {
                s.tool_call(id, name, input)
            })
            .build(),
        ApiStyle::OpenAiResponses => calls
            .iter()
            .fold(ResponsesScript::new().text("Calling."), |s, (id, name, input)| {
                s.tool_call(id, name, input)
            })
            .build(),
    }
}

fn text(style: ApiStyle, t: &str) -> Vec<u8> {
    match style {
        ApiStyle::AnthropicMessages => AnthropicScript::new().text(t).build(),
        ApiStyle::OpenAiChat => OpenAiScript::new().text(t).build(),
        ApiStyle::OpenAiResponses => ResponsesScript::new().text(t).build(),
    }
}

/// `(id, error text)` of every finished tool call that failed, in completion order.
fn failed_calls(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolDispatchComplete {
                id,
                content,
                is_error: true,
                ..
            } => Some((
                id.clone(),
                content
                    .iter()
                    .map(|c| match c {
                        ToolResultContent::Text { text } => text.as_str(),
                        ToolResultContent::Image { .. } => "(image)",
                    })
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_hostile_models_tool_calls_leave_a_session_that_loads_and_resumes() {
    for style in [
        ApiStyle::AnthropicMessages,
        ApiStyle::OpenAiChat,
        ApiStyle::OpenAiResponses,
    ] {
        let prefix = match style {
            ApiStyle::AnthropicMessages => "toolu_panto_",
            ApiStyle::OpenAiChat | ApiStyle::OpenAiResponses => "call_panto_",
        };
        let dir = tempfile::tempdir().unwrap();
        let server = MockServer::start().await;
        let runs = Arc::new(AtomicUsize::new(0));
        let deep = nested(126);
        server.push(Reply::sse(tool_calls(
            style,
            &[
                ("call_1", "echo", r#"{"text":"hi"}"#),
                ("call_1", "echo", r#""rm -rf /""#),
                ("x\n../../y", "echo", &deep),
                ("", "echo\u{1b}[2J", "{}"),
                ("call_5", "echo", r#"{"text": "#),
            ],
        )));
        server.push(Reply::sse(text(style, "Done.")));

        let id = {
            let store = fast_store(dir.path());
            let mut agent =
                Agent::new(config(style, &server), panto_core::Session::create(store.clone()), None).unwrap();
            agent.register_tool(Arc::new(Echo(runs.clone()))).unwrap();
            let mut stream = agent.run("go".into());
            let mut events = Vec::new();
            while let Some(event) = stream.next().await.unwrap() {
                events.push(event);
            }
            drop(stream);
            assert_eq!(runs.load(Ordering::SeqCst), 1, "{style}: only the well-formed call ran");
            let mut failed = failed_calls(&events);
            failed.sort();
            let not_run = "; the tool was not run";
            let mut expected = vec![
                (
                    format!("{prefix}0"),
                    format!("tool input must be a JSON object, got a string{not_run}"),
                ),
                (
                    format!("{prefix}1"),
                    format!("tool input is nested more than 64 levels deep{not_run}"),
                ),
                (
                    format!("{prefix}2"),
                    format!(
                        "tool name \"echo\\u{{1b}}[2J\" is not valid: names must be 1 to 64 characters of \
                             A-Z, a-z, 0-9, '_' and '-'{not_run}"
                    ),
                ),
                (
                    "call_5".to_owned(),
                    format!("tool input is not valid JSON (EOF while parsing a value at line 1 column 9){not_run}"),
                ),
            ];
            expected.sort();
            assert_eq!(failed, expected, "{style}");
            agent.session_id().to_owned()
        };

        // Another process loads the session and goes on with it.
        let store = fast_store(dir.path());
        let session = panto_core::Session::resolve(store.clone(), &id)
            .await
            .unwrap()
            .expect("the session is listed");
        let conversation = session.load().await.expect("the session loads");
        assert_eq!(
            conversation.messages.len(),
            4,
            "{style}: prompt, calls, results, answer"
        );
        server.push(Reply::sse(text(style, "Resumed.")));
        let mut agent = Agent::new(config(style, &server), session, Some(conversation)).unwrap();
        agent.register_tool(Arc::new(Echo(runs.clone()))).unwrap();
        let mut stream = agent.run("and now?".into());
        while stream.next().await.unwrap().is_some() {}
        drop(stream);
        drop(agent);

        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{style}");
        for (n, request) in requests.iter().enumerate() {
            assert_eq!(request.validation, None, "{style}: request {n} is invalid for the API");
        }
        let reloaded = fast_store(dir.path()).load(&id).await.unwrap().unwrap();
        assert_eq!(reloaded.messages.last().unwrap().text(), "Resumed.", "{style}");
    }
}
