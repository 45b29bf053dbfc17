//! Compaction: manual, threshold-triggered, on overflow; persisted, resumable, never half-applied.

use std::sync::Arc;

use panto_core::{Agent, ApiStyle, ContentBlock, Event, MemoryStore, Role, Session, SessionStore};
use panto_testkit::{fixture_bytes, MockServer, Reply};
use serde_json::json;

use crate::support::*;

/// An agent on a memory store that has already run three plain turns.
async fn agent_with_history(style: ApiStyle, server: &MockServer, store: &Arc<MemoryStore>) -> Agent {
    agent_with_history_on(style, server, store.clone()).await
}

/// [`agent_with_history`] on any store.
async fn agent_with_history_on(style: ApiStyle, server: &MockServer, store: Arc<dyn SessionStore>) -> Agent {
    let mut config = config(style, server);
    config.compaction.keep_recent_tokens = 30;
    let mut agent = Agent::new(config, Session::create(store), None).unwrap();
    agent.add_system_message("You are the system.").await.unwrap();
    for i in 0..3 {
        server.push(Reply::sse(text_with_usage(
            style,
            &format!("answer number {i} with some words in it"),
            usage(300 + 50 * i, 40),
        )));
        collect(&mut agent, &format!("question number {i} about the project"))
            .await
            .unwrap();
    }
    agent
}

#[tokio::test]
async fn manual_compaction_is_persisted_and_resumes_compacted() {
    for style in STYLES {
        let server = MockServer::start().await;
        let store = MemoryStore::new();
        let mut agent = agent_with_history(style, &server, &store).await;
        let id = agent.session_id().to_owned();
        let history_len = store.records(&id).len();
        server.push(Reply::sse(text_with_usage(
            style,
            "SUMMARY: three questions were answered.",
            usage(900, 30),
        )));

        let result = agent.compact(None, Some("Mention the project.")).await.unwrap();
        assert_eq!(result.summary, "SUMMARY: three questions were answered.");
        assert_eq!(
            result.usage,
            Some(usage(900, 30)),
            "{style}: the summary request's usage"
        );
        assert!(result.tokens_after < result.tokens_before, "{result:?}");
        assert_eq!(result.messages_kept, 2, "the last question and answer are kept");

        // The summary request: the instruction as system prompt, the transcript, no tools.
        let b = body(&server.requests(), 3);
        let sent = b.to_string();
        assert!(
            sent.contains("You are summarising a conversation"),
            "{style}: default instruction"
        );
        assert!(sent.contains("question number 0 about the project"));
        assert!(sent.contains("answer number 1 with some words"));
        assert!(sent.contains("Mention the project."));
        assert!(b.get("tools").is_none() || b["tools"].as_array().is_some_and(|t| t.is_empty()));

        // What the model now sees: system, summary, kept tail.
        let messages = &agent.conversation().messages;
        assert_eq!(messages[0].role, Role::System);
        assert!(
            matches!(&messages[1].content[0], ContentBlock::CompactionSummary { summary } if summary.starts_with("SUMMARY"))
        );
        assert_eq!(messages[2].text(), "question number 2 about the project");
        assert_eq!(messages.len(), 4);

        // The log keeps everything and records the compaction; load returns the compacted view.
        let records = store.records(&id);
        assert_eq!(records.len(), history_len + 1);
        let record = records.last().unwrap().compaction.unwrap();
        assert_eq!(record.first_kept, 5, "system + 2 turns summarised");
        // The log records what the summary cost; the summary message itself carries no usage,
        // so the next context estimate does not count the old transcript.
        assert_eq!(records.last().unwrap().usage, Some(usage(900, 30)));
        assert_eq!(records.last().unwrap().message.usage, None);
        let loaded = store.load(&id).await.unwrap().unwrap();
        assert_eq!(&loaded.messages, messages);

        // And a resumed agent continues from the compacted view (once this one is gone: one
        // live agent writes a session).
        drop(agent);
        let session = Session::resolve(store.clone(), &id).await.unwrap().unwrap();
        let mut resumed = Agent::new(config(style, &server), session, Some(loaded)).unwrap();
        server.push(Reply::sse(text(style, "continuing")));
        collect(&mut resumed, "next").await.unwrap();
        let b = body(&server.requests(), 4);
        assert!(b.to_string().contains("SUMMARY: three questions"));
        assert!(!b.to_string().contains("question number 0"));
    }
}

/// A conversation built by hand for a new session is written into it (it used to be taken as
/// already stored, and a resume lost it); a compaction with the caller's own summary is
/// recorded as `compact` records its own, so a resumed agent sends only the compacted view.
#[tokio::test]
async fn a_hand_built_conversation_compacted_with_its_own_summary_resumes_compacted() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let store = MemoryStore::new();
    let mut conversation = panto_core::Conversation::new();
    conversation.add_system_message("You are the system.");
    for i in 0..3 {
        conversation.add_user_message(format!("question number {i}"));
        conversation.add_assistant_message(vec![ContentBlock::text(format!("answer number {i}"))], None);
    }
    let mut agent = Agent::new(
        config(style, &server),
        Session::create(store.clone()),
        Some(conversation),
    )
    .unwrap();
    let id = agent.session_id().to_owned();
    agent.flush().await.unwrap();
    assert_eq!(store.records(&id).len(), 7, "the given conversation is in the store");

    let refused = agent.compact_with_summary("SUMMARY", 99).await.unwrap_err();
    assert!(
        matches!(refused, panto_core::Error::InvalidCompaction { first_kept: 99, .. }),
        "{refused}"
    );
    let empty = agent.compact_with_summary("  ", 5).await.unwrap_err();
    assert!(empty.to_string().contains("the summary is empty"), "{empty}");
    assert_eq!(store.records(&id).len(), 7, "a refused compaction writes nothing");

    let result = agent.compact_with_summary("SUMMARY: two questions.", 5).await.unwrap();
    assert_eq!(
        (result.messages_summarized, result.messages_kept, result.usage),
        (4, 2, None)
    );
    assert_eq!(store.records(&id).last().unwrap().compaction.unwrap().first_kept, 5);
    assert!(server.requests().is_empty(), "no request was made");
    drop(agent);

    let mut resumed = Agent::resume(
        config(style, &server),
        Session::resolve(store.clone(), &id).await.unwrap().unwrap(),
    )
    .await
    .unwrap();
    server.push(Reply::sse(text(style, "continuing")));
    collect(&mut resumed, "next").await.unwrap();
    let sent = body(&server.requests(), 0).to_string();
    assert!(
        sent.contains("SUMMARY: two questions.") && sent.contains("question number 2"),
        "{sent}"
    );
    assert!(
        !sent.contains("question number 0") && !sent.contains("answer number 1"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_failing_summary_call_changes_nothing() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let store = MemoryStore::new();
    let mut agent = agent_with_history(style, &server, &store).await;
    let id = agent.session_id().to_owned();
    let before = agent.conversation().clone();
    let records_before = store.records(&id);
    server.push(Reply::json(
        400,
        &json!({"type":"error","error":{"type":"invalid_request_error","message":"nope"}}),
    ));
    let err = agent.compact(None, None).await.unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    assert_eq!(agent.conversation(), &before);
    assert_eq!(store.records(&id), records_before);
    assert_eq!(store.load(&id).await.unwrap().unwrap(), before);
}

#[tokio::test]
async fn the_threshold_triggers_compaction_before_a_request() {
    for style in STYLES {
        let server = MockServer::start().await;
        let store = MemoryStore::new();
        let mut agent = agent_with_history(style, &server, &store).await;
        // The last answer reported 400 + 40 tokens; a window of 800 at 0.5 makes the next request
        // (440 + the new prompt's estimate) cross the threshold.
        let mut config = agent.config().clone();
        config.compaction.context_window = 800;
        config.compaction.threshold = 0.5;
        agent.set_config(config);
        server.push(Reply::sse(text_with_usage(style, "SUMMARY of before", usage(700, 20))));
        server.push(Reply::sse(text_with_usage(
            style,
            "answer after compaction",
            usage(150, 9),
        )));
        let events = collect(&mut agent, "a new question that is long enough").await.unwrap();
        // The summary request is part of the turn: its usage is reported with the compaction
        // and counted in the turn's.
        let compaction_usage = events.iter().find_map(|e| match e {
            Event::CompactionComplete { usage, .. } => Some(*usage),
            _ => None,
        });
        assert_eq!(compaction_usage, Some(Some(usage(700, 20))), "{style}");
        let turn_usage = events.iter().find_map(|e| match e {
            Event::TurnComplete { usage, steps, .. } => Some((*usage, *steps)),
            _ => None,
        });
        assert_eq!(turn_usage, Some((usage(850, 29), 1)), "{style}");
        let kinds: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::CompactionStart { .. } => Some("start"),
                Event::CompactionComplete { .. } => Some("complete"),
                Event::MessageComplete { .. } => Some("message"),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, vec!["start", "complete", "message"], "{style}");
        let requests = server.requests();
        let b = body(&requests, requests.len() - 1);
        assert!(b.to_string().contains("SUMMARY of before"), "{style}");
        assert!(b.to_string().contains("a new question that is long enough"));
    }
}

#[tokio::test]
async fn context_overflow_compacts_and_retries_once() {
    for (style, fixture) in [
        (ApiStyle::AnthropicMessages, "anthropic/error-400-prompt-too-long.json"),
        (ApiStyle::OpenAiChat, "openai/error-400-context-length-exceeded.json"),
    ] {
        let server = MockServer::start().await;
        let store = MemoryStore::new();
        let mut agent = agent_with_history(style, &server, &store).await;
        server.push(Reply::raw(400, fixture_bytes(fixture).unwrap()).header("content-type", "application/json"));
        server.push(Reply::sse(text(style, "SUMMARY after overflow")));
        server.push(Reply::sse(text(style, "fits now")));
        let events = collect(&mut agent, "one more").await.unwrap();
        assert!(
            events.iter().any(|e| matches!(e, Event::CompactionComplete { .. })),
            "{style}"
        );
        assert_eq!(streamed_text(&events), "fits now");
        // A second overflow in the same turn is not compacted again: it is reported.
        server.push(Reply::raw(400, fixture_bytes(fixture).unwrap()).header("content-type", "application/json"));
        server.push(Reply::sse(text(style, "SUMMARY again")));
        server.push(Reply::raw(400, fixture_bytes(fixture).unwrap()).header("content-type", "application/json"));
        let err = collect(&mut agent, "and another").await.unwrap_err();
        assert!(
            matches!(err, panto_core::Error::ContextOverflow { .. }),
            "{style}: {err}"
        );
    }
}

/// Tool results normally travel with the next request and are written on its way; when a
/// compaction comes first, the consumer sees it start only once they are stored (a kill there
/// must not lose results the run already went past).
#[tokio::test]
async fn a_compaction_after_a_tool_step_starts_once_the_results_are_stored() {
    for style in STYLES {
        let server = MockServer::start().await;
        let memory = MemoryStore::new();
        let store = SlowResults::new(memory.clone(), std::time::Duration::from_millis(50));
        let mut agent = agent_with_history_on(style, &server, store.clone()).await;
        agent.register_tool(Arc::new(Echo)).unwrap();
        // The history reports 440 tokens, under the threshold of 600; the echoed result (about
        // a thousand tokens) takes the next request over it.
        let mut config = agent.config().clone();
        config.compaction.context_window = 1200;
        config.compaction.threshold = 0.5;
        agent.set_config(config);
        let long = "word ".repeat(800);
        let input = json!({ "text": long }).to_string();
        server.push(Reply::sse(tool_calls(style, &[("t1", "echo", &input)])));
        server.push(Reply::sse(text_with_usage(style, "SUMMARY of before", usage(900, 20))));
        server.push(Reply::sse(text_with_usage(style, "done", usage(150, 9))));
        let mut started = false;
        {
            let mut stream = agent.run("echo the long text".into());
            while let Some(event) = stream.next().await.unwrap() {
                if let Event::CompactionStart { .. } = checked(event) {
                    started = true;
                    assert!(
                        store.written.load(std::sync::atomic::Ordering::SeqCst),
                        "{style}: the compaction started before the tool results were stored"
                    );
                }
            }
        }
        assert!(started, "{style}: no compaction after the tool step");
        let id = agent.session_id().to_owned();
        let results = memory
            .records(&id)
            .iter()
            .filter(|r| {
                r.message
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
            })
            .count();
        assert_eq!(results, 1, "{style}");
    }
}
