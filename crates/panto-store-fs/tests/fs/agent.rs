//! The agent over the file store, end to end against the mock LLM server: a turn killed at a
//! tool call resumes with a valid request, for both API styles, and the log holds no API key.

use std::sync::Arc;

use async_trait::async_trait;
use panto_core::{
    Agent, ApiStyle, Config, ContentBlock, Event, Role, Session, SessionStore, StopReason, Tool, ToolCall,
    ToolCallResult, ToolDecl, ToolError,
};
use panto_testkit::script::{AnthropicScript, OpenAiScript, ResponsesScript};
use panto_testkit::store_contract::{append_one, user};
use panto_testkit::{MockServer, Reply};
use serde_json::json;

use super::common::{fast_store, lines, session_file};

const KEY: &str = "sk-test-never-in-a-file-41c9";

/// A tool that never returns: the process "dies" while it runs.
struct Hang;

#[async_trait]
impl Tool for Hang {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "hang".into(),
            description: "never returns".into(),
            input_schema: json!({"type":"object"}),
        }
    }
    async fn call(&self, _call: ToolCall) -> Result<ToolCallResult, ToolError> {
        std::future::pending().await
    }
}

fn config(style: ApiStyle, server: &MockServer) -> Config {
    let mut config = server.config(style, KEY);
    config.retry.max_attempts = 1;
    config
}

fn tool_call(style: ApiStyle) -> Vec<u8> {
    match style {
        ApiStyle::AnthropicMessages => AnthropicScript::new()
            .text("Calling.")
            .tool_use("call_7", "hang", "{}")
            .build(),
        ApiStyle::OpenAiChat => OpenAiScript::new()
            .text("Calling.")
            .tool_call("call_7", "hang", "{}")
            .build(),
        ApiStyle::OpenAiResponses => ResponsesScript::new()
            .reasoning(&["**Calling**"], "gAAAAB-hang")
            .text("Calling.")
            .tool_call("call_7", "hang", "{}")
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

#[tokio::test]
async fn a_turn_killed_mid_tool_resumes_with_a_valid_request() {
    for style in [
        ApiStyle::AnthropicMessages,
        ApiStyle::OpenAiChat,
        ApiStyle::OpenAiResponses,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_call(style)));

        // First process: the turn reaches the tool call, then everything is dropped (the store's
        // lock with it) while the tool still runs.
        let id = {
            let store = fast_store(dir.path());
            let mut agent = Agent::new(config(style, &server), Session::create(store.clone()), None).unwrap();
            agent.register_tool(Arc::new(Hang)).unwrap();
            let mut stream = agent.run("start the job".into());
            while let Some(event) = stream.next().await.unwrap() {
                if matches!(event, Event::ToolDispatchStart { .. }) {
                    break;
                }
            }
            std::mem::forget(stream); // no cancel bookkeeping: as if killed
            agent.session_id().to_owned()
        };

        // What reached the disk: user and assistant(tool_use), nothing after.
        let store = fast_store(dir.path());
        let conversation = store.load(&id).await.unwrap().unwrap();
        let roles: Vec<Role> = conversation.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::User, Role::Assistant], "{style}");
        assert_eq!(conversation.messages[1].stop_reason, Some(StopReason::ToolUse));

        // Second process: resume by prefix, continue.
        let session = Session::resolve(store.clone(), &id[..13]).await.unwrap().unwrap();
        let conversation = session.load().await.unwrap();
        server.push(Reply::sse(text(style, "Resumed.")));
        let mut agent = Agent::new(config(style, &server), session, Some(conversation)).unwrap();
        agent.register_tool(Arc::new(Hang)).unwrap();
        let mut stream = agent.run("what happened?".into());
        while stream.next().await.unwrap().is_some() {}
        drop(stream);

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].validation, None, "{style}: the resumed request is valid");
        assert!(String::from_utf8_lossy(&requests[1].body).contains("interrupted"));

        // The log now holds the closer and the new turn, and no key material.
        drop(agent);
        let reloaded = fast_store(dir.path()).load(&id).await.unwrap().unwrap();
        assert!(matches!(
            reloaded.messages[2].content[0],
            ContentBlock::ToolResult { is_error: true, .. }
        ));
        assert_eq!(reloaded.messages.last().unwrap().text(), "Resumed.");
        let path = session_file(&store, &id);
        let raw = std::fs::read_to_string(&path).unwrap();
        assert!(!raw.contains(KEY), "{style}: the API key reached the session file");
        assert!(
            !raw.contains("41c9"),
            "{style}: part of the key reached the session file"
        );
        assert_eq!(lines(&path).len(), 1 + 5, "header + 5 entries");
    }
}

/// Drains a turn, failing on an error.
async fn finish(agent: &mut Agent, prompt: &str) {
    let mut stream = agent.run(prompt.into());
    while stream.next().await.unwrap().is_some() {}
}

#[tokio::test]
async fn dropping_an_agent_closes_its_session_file_and_a_new_agent_can_take_the_session() {
    let style = ApiStyle::AnthropicMessages;
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let store = fast_store(dir.path());
    let other = fast_store(dir.path());

    let mut agent = Agent::new(config(style, &server), Session::create(store.clone()), None).unwrap();
    server.push(Reply::sse(text(style, "first answer")));
    finish(&mut agent, "first").await;
    let id = agent.session_id().to_owned();
    // While the agent lives, its session is open (one locked file) and nobody else writes it.
    assert!(format!("{store:?}").contains("open_for_writing: 1"), "{store:?}");
    assert!(matches!(
        append_one(&*other, &id, &user("not yours")).await,
        Err(panto_core::Error::SessionInUse { .. })
    ));

    drop(agent);
    assert!(
        format!("{store:?}").contains("open_for_writing: 0"),
        "the dropped agent's file is still open: {store:?}"
    );
    // The lock went with the file: another store (as another process would) can write now.
    append_one(&*other, &id, &user("mine for a moment")).await.unwrap();
    other.release(&id).await.unwrap();

    // A new agent in this process, on the same store, resumes and writes the session.
    let session = Session::resolve(store.clone(), &id)
        .await
        .unwrap()
        .expect("the session");
    let mut again = Agent::resume(config(style, &server), session).await.unwrap();
    server.push(Reply::sse(text(style, "second answer")));
    finish(&mut again, "second").await;
    assert!(format!("{store:?}").contains("open_for_writing: 1"), "{store:?}");
    drop(again);
    assert!(format!("{store:?}").contains("open_for_writing: 0"), "{store:?}");

    let texts: Vec<String> = store
        .load(&id)
        .await
        .unwrap()
        .unwrap()
        .messages
        .iter()
        .filter_map(|m| match m.content.first() {
            Some(ContentBlock::Text { text }) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        ["first", "first answer", "mine for a moment", "second", "second answer"]
    );
}
