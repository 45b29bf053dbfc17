//! Faults seen through an agent: every one leaves a valid session that resumes, and a changed
//! tool list reaches the model.

use std::sync::Arc;

use panto_core::{Agent, ApiStyle, Config, ContentBlock, Session, ToolSource};
use panto_store_fs::JsonlStore;
use panto_testkit::script::AnthropicScript;
use panto_testkit::{MockServer, Reply};
use serde_json::Value;

use crate::support::*;

fn config(server: &MockServer) -> Config {
    let mut config = server.config(ApiStyle::AnthropicMessages, "test-key");
    config.retry.max_attempts = 1;
    config
}

fn tool_call(id: &str, name: &str, input: &str) -> Reply {
    Reply::sse(AnthropicScript::new().tool_use(id, name, input).build())
}

fn answer(text: &str) -> Reply {
    Reply::sse(AnthropicScript::new().text(text).build())
}

async fn run(agent: &mut Agent, prompt: &str) {
    let mut stream = agent.run(prompt.into());
    while stream.next().await.expect("the turn goes on").is_some() {}
}

/// The (tool_use_id, is_error, text) of every tool result in the conversation.
fn results(agent: &Agent) -> Vec<(String, bool, String)> {
    agent
        .conversation()
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((
                tool_use_id.clone(),
                *is_error,
                serde_json::to_string(content).unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_fault_leaves_a_valid_session_that_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let server = MockServer::start().await;
    let source = Arc::new(start("fault", fault(&[]).tool_timeout_secs(1)).await);
    let mut agent = Agent::new(config(&server), Session::create(store.clone()), None).unwrap();
    agent.register_tool_source(source.clone()).unwrap();

    server.push(tool_call("t1", "fault__crash", "{}"));
    server.push(tool_call("t2", "fault__hang", "{}"));
    server.push(tool_call("t3", "fault__big", "{}"));
    server.push(tool_call("t4", "fault__garbage", "{}"));
    server.push(tool_call("t5", "fault__echo", r#"{"text":"survived"}"#));
    server.push(answer("all done"));
    run(&mut agent, "break it").await;

    let seen = results(&agent);
    let ids: Vec<&str> = seen.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2", "t3", "t4", "t5"]);
    assert!(
        seen[0].1 && seen[0].2.contains("MCP server `fault` stopped"),
        "{:?}",
        seen[0]
    );
    assert!(seen[1].1 && seen[1].2.contains("tool_timeout_secs"), "{:?}", seen[1]);
    assert!(
        !seen[2].1 && seen[2].2.contains("output truncated"),
        "{:?}",
        &seen[2].2[seen[2].2.len() - 200..]
    );
    assert!(!seen[3].1 && seen[3].2.contains("after garbage"), "{:?}", seen[3]);
    assert!(!seen[4].1 && seen[4].2.contains("survived"), "{:?}", seen[4]);

    // The session on disk resumes, and the next turn works with the same server.
    let id = agent.session_id().to_owned();
    drop(agent);
    let session = Session::resolve(store.clone(), &id)
        .await
        .unwrap()
        .expect("the session is on disk");
    let mut resumed = Agent::resume(config(&server), session).await.unwrap();
    assert_eq!(results(&resumed).len(), 5, "the tool results were persisted");
    resumed.register_tool_source(source.clone()).unwrap();
    server.push(tool_call("t6", "fault__echo", r#"{"text":"again"}"#));
    server.push(answer("fine"));
    run(&mut resumed, "once more").await;
    let last = results(&resumed).pop().unwrap();
    assert_eq!((last.0.as_str(), last.1), ("t6", false));
    assert!(last.2.contains("again"), "{last:?}");
}

#[tokio::test]
async fn a_changed_tool_list_reaches_the_next_request_in_a_stable_place() {
    let server = MockServer::start().await;
    let first = Arc::new(start("aaa", fault(&[])).await);
    let second = Arc::new(start("zzz", fault(&[]).allow_tool("echo")).await);
    let mut agent = Agent::new(config(&server), Session::create(panto_core::MemoryStore::new()), None).unwrap();
    agent.register_tool_source(first.clone()).unwrap();
    agent.register_tool_source(second).unwrap();
    let before = first.generation();
    // `_` is escaped in offered names (`_5f`).
    server.push(tool_call("t1", "aaa__add_5ftool", "{}"));
    server.push(answer("added"));
    run(&mut agent, "add").await;
    assert!(eventually_async(|| first.generation() != before).await);
    server.push(answer("ok"));
    run(&mut agent, "next").await;

    let offered = |n: usize| -> Vec<String> {
        let body: Value = serde_json::from_slice(&server.requests()[n].body).unwrap();
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let old = offered(0);
    let new = offered(2);
    assert_eq!(new.len(), old.len() + 1);
    assert_eq!(&new[..10], &old[..10], "the first server's tools keep their place");
    assert_eq!(new[10], "aaa__extra");
    assert_eq!(new[11..], old[10..], "the second server's tools follow unchanged");
}
