//! Hooks around tool calls, requests and turns, and what happens when a hook fails.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use panto_core::{
    AfterTool, ApiStyle, BeforeTool, CancellationToken, Error, Event, Hook, Message, ToolCall, ToolCallResult,
};
use panto_testkit::{MockServer, Reply};

use crate::support::*;

/// A hook scripted per test; it records every tool call it was shown.
#[derive(Default)]
struct Scripted {
    before: Option<BeforeTool>,
    after: Option<AfterTool>,
    panic_before: bool,
    hang_before: bool,
    panic_request: bool,
    seen: Mutex<Vec<(String, serde_json::Value)>>,
    requests: Mutex<Vec<usize>>,
    turn_ends: AtomicUsize,
}

#[async_trait]
impl Hook for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(200))
    }
    async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
        self.seen.lock().unwrap().push((call.name.clone(), call.input.clone()));
        if self.panic_before {
            panic!("hook exploded");
        }
        if self.hang_before {
            std::future::pending::<()>().await;
        }
        self.before.clone().unwrap_or(BeforeTool::Allow)
    }
    async fn after_tool(&self, _call: &ToolCall, _result: &ToolCallResult) -> AfterTool {
        self.after.clone().unwrap_or(AfterTool::Keep)
    }
    async fn before_request(&self, messages: &[Message], _cancel: &CancellationToken) {
        if self.panic_request {
            panic!("request hook exploded");
        }
        self.requests.lock().unwrap().push(messages.len());
    }
    async fn on_turn_end(&self, _messages: &[Message]) {
        self.turn_ends.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs one echo call through `hook` and returns the tool result the model got back, as
/// (text, is_error), with the events.
async fn echo_through(hook: Scripted) -> (Arc<Scripted>, (String, bool), Vec<Event>) {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    server.push(Reply::sse(tool_calls(
        style,
        &[("t1", "echo", r#"{"text":"original"}"#)],
    )));
    server.push(Reply::sse(text(style, "ok")));
    let mut agent = agent(style, &server);
    agent.register_tool(Arc::new(Echo)).unwrap();
    let hook = Arc::new(hook);
    agent.add_hook(hook.clone());
    let events = collect(&mut agent, "go").await.unwrap();
    let requests = server.requests();
    let sent = wire_messages(style, &body(&requests, 1));
    let result = sent
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("the second request carries the result");
    let text = result["content"][0]["text"].as_str().unwrap().to_owned();
    (hook, (text, result["is_error"].as_bool().unwrap_or(false)), events)
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_reads_the_reason() {
    let (hook, result, _) = echo_through(Scripted {
        before: Some(BeforeTool::Deny("echo is off today".into())),
        ..Scripted::default()
    })
    .await;
    assert_eq!(result, ("the call was denied: echo is off today".to_owned(), true));
    assert_eq!(
        hook.seen.lock().unwrap().clone(),
        vec![("echo".to_owned(), serde_json::json!({"text":"original"}))]
    );
}

#[tokio::test]
async fn a_response_is_the_result_word_for_word_and_the_tool_does_not_run() {
    let (hook, result, _) = echo_through(Scripted {
        before: Some(BeforeTool::Respond(ToolCallResult::error(
            "old_string was not found in f",
        ))),
        ..Scripted::default()
    })
    .await;
    // Not "the call was denied: …", and not the echo of "original": the hook's result alone.
    assert_eq!(result, ("old_string was not found in f".to_owned(), true));
    assert_eq!(hook.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_rewrite_changes_what_the_tool_gets_and_a_replace_what_the_model_reads() {
    let (_, result, _) = echo_through(Scripted {
        before: Some(BeforeTool::Rewrite(serde_json::json!({"text":"rewritten"}))),
        ..Scripted::default()
    })
    .await;
    assert_eq!(result, ("rewritten".to_owned(), false));
    let (_, result, _) = echo_through(Scripted {
        after: Some(AfterTool::Replace(ToolCallResult::text("replaced"))),
        ..Scripted::default()
    })
    .await;
    assert_eq!(result, ("replaced".to_owned(), false));
}

#[tokio::test]
async fn a_hook_that_panics_or_hangs_is_a_denial_naming_it() {
    let (_, (text, is_error), events) = echo_through(Scripted {
        panic_before: true,
        ..Scripted::default()
    })
    .await;
    assert!(is_error);
    assert_eq!(
        text,
        "the call was denied: the before_tool hook \"scripted\" panicked: hook exploded"
    );
    assert!(matches!(events.last(), Some(Event::TurnComplete { .. })));
    let (_, (text, is_error), _) = echo_through(Scripted {
        hang_before: true,
        ..Scripted::default()
    })
    .await;
    assert!(is_error);
    assert_eq!(
        text,
        "the call was denied: the before_tool hook \"scripted\" did not answer within 200ms"
    );
}

#[tokio::test]
async fn request_and_turn_end_hooks_see_each_request_and_turn() {
    let (hook, _, _) = echo_through(Scripted::default()).await;
    // The first request sends the prompt; the second adds the call and its result.
    assert_eq!(hook.requests.lock().unwrap().clone(), vec![1, 3]);
    assert_eq!(hook.turn_ends.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_request_hook_that_panics_ends_the_turn_with_an_error_and_sends_nothing() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let mut agent = agent(style, &server);
    agent.add_hook(Arc::new(Scripted {
        panic_request: true,
        ..Scripted::default()
    }));
    let error = collect(&mut agent, "go").await.unwrap_err();
    assert!(matches!(error, Error::HookFailed { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the before_request hook \"scripted\" panicked: request hook exploded"
    );
    assert!(server.requests().is_empty());
}
