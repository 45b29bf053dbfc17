//! The agent persists what it generates, through the session, as the turn goes.

use std::sync::Arc;

use panto_core::store::{PersistentMessage, StoreWrapper};
use panto_core::{
    Agent, ApiStyle, ContentBlock, Conversation, Error, MemoryStore, Message, Role, Session, SessionStore, StopReason,
    SystemMode, ToolResultContent,
};
use panto_testkit::{MockServer, Reply};
use serde_json::json;

use crate::support::*;

fn roles(records: &[panto_core::store::StoredRecord]) -> Vec<Role> {
    records.iter().map(|r| r.message.role).collect()
}

#[tokio::test]
async fn a_full_tool_turn_persists_each_message_as_it_completes() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(style, &[("t1", "echo", r#"{"text":"x"}"#)])));
        server.push(Reply::sse(text(style, "done")));
        let store = MemoryStore::new();
        let session = Session::create(store.clone());
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        agent.register_tool(Arc::new(Echo)).unwrap();
        collect(&mut agent, "use the tool").await.unwrap();

        let records = store.records(&id);
        assert_eq!(
            roles(&records),
            vec![Role::User, Role::Assistant, Role::User, Role::Assistant],
            "{style}"
        );
        assert_eq!(records[0].message.text(), "use the tool");
        assert_eq!(records[1].message.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(records[1].usage, Some(usage(20, 9)));
        assert!(matches!(records[2].message.content[0], ContentBlock::ToolResult { .. }));
        assert_eq!(records[3].message.stop_reason, Some(StopReason::EndTurn));
        assert_eq!(records[3].usage, Some(usage(11, 7)));
        let wire = records[3].wire.as_ref().unwrap();
        assert_eq!(
            (wire.api_style, wire.model.as_str()),
            (style, agent.config().provider.model.as_str())
        );
        assert_eq!(records[3].tools_available, vec!["echo".to_owned()]);
        // A new session is written first when its first assistant message completes: user and
        // assistant in one batch, then each later message as it completes.
        let batches: Vec<usize> = store.appends().iter().map(|(_, b)| b.len()).collect();
        assert_eq!(batches, vec![2, 1, 1], "{style}");
        // And the store's view is the conversation.
        assert_eq!(
            store.load(&id).await.unwrap().unwrap().messages,
            agent.conversation().messages
        );
        assert_eq!(agent.session().info.message_count, 4);
    }
}

#[tokio::test]
async fn a_first_request_that_fails_leaves_no_session() {
    let server = MockServer::start().await;
    server.push(Reply::json(
        400,
        &json!({"type":"error","error":{"type":"invalid_request_error","message":"no"}}),
    ));
    let store = MemoryStore::new();
    let mut agent = agent_on(ApiStyle::AnthropicMessages, &server, Session::create(store.clone()));
    collect(&mut agent, "hi").await.unwrap_err();
    assert!(store.appends().is_empty());
    assert!(store.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failure_mid_turn_keeps_what_was_committed() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(style, &[("t1", "echo", r#"{"text":"x"}"#)])));
        server.push(Reply::json(
            400,
            &json!({"error":{"message":"bad request","type":"invalid_request_error"}}),
        ));
        let store = MemoryStore::new();
        let session = Session::create(store.clone());
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        agent.register_tool(Arc::new(Echo)).unwrap();
        collect(&mut agent, "go").await.unwrap_err();
        assert_eq!(
            roles(&store.records(&id)),
            vec![Role::User, Role::Assistant, Role::User],
            "{style}"
        );
    }
}

#[tokio::test]
async fn system_prompt_changes_are_recorded_as_append_or_replace() {
    let server = MockServer::start().await;
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "ok")));
    let store = MemoryStore::new();
    let session = Session::create(store.clone());
    let id = session.id().to_owned();
    let mut agent = agent_on(ApiStyle::AnthropicMessages, &server, session);
    agent.add_system_message("base").await.unwrap();
    agent.add_system_message("more").await.unwrap();
    assert!(
        store.appends().is_empty(),
        "nothing is written before the first assistant message"
    );
    collect(&mut agent, "hi").await.unwrap();
    agent.set_system_prompt("new").await.unwrap();
    let modes: Vec<SystemMode> = store
        .records(&id)
        .iter()
        .filter_map(|r| match &r.message.content[0] {
            ContentBlock::System { mode, .. } => Some(*mode),
            _ => None,
        })
        .collect();
    assert_eq!(modes, vec![SystemMode::Append, SystemMode::Append, SystemMode::Replace]);
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.effective_system_blocks(), vec!["new"]);
    // System records carry no provider identity: no provider produced them.
    assert!(store.records(&id)[0].wire.is_none());
}

#[tokio::test]
async fn what_a_dropped_stream_leaves_is_persisted_by_the_next_write() {
    let server = MockServer::start().await;
    server.push(Reply::sse(text(ApiStyle::OpenAiChat, "first answer")));
    server.push(Reply::hang());
    server.push(Reply::sse(text(ApiStyle::OpenAiChat, "third")));
    let store = MemoryStore::new();
    let session = Session::create(store.clone());
    let id = session.id().to_owned();
    let mut agent = agent_on(ApiStyle::OpenAiChat, &server, session);
    collect(&mut agent, "one").await.unwrap();
    {
        let mut stream = agent.run("two".into());
        // The user message is persisted when the turn starts; then the request hangs.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(100), stream.next()).await;
    }
    assert_eq!(
        store.records(&id).len(),
        3,
        "the prompt was durable before the provider answered"
    );
    collect(&mut agent, "three").await.unwrap();
    let texts: Vec<String> = store.records(&id).iter().map(|r| r.message.text()).collect();
    assert_eq!(texts, vec!["one", "first answer", "two", "three", "third"]);
}

/// Builds a store holding a turn killed while its tool ran: user, assistant(tool_use), nothing more.
async fn killed_mid_tool(store: &Arc<MemoryStore>, style: ApiStyle) -> String {
    let mut conversation = Conversation::new();
    conversation.add_user_message("run the tool");
    let mut assistant = Message::new(
        Role::Assistant,
        vec![
            ContentBlock::text("Running it."),
            ContentBlock::ToolUse {
                id: "call_9".into(),
                name: "echo".into(),
                input: json!({"text":"x"}),
            },
        ],
    );
    assistant.stop_reason = Some(StopReason::ToolUse);
    conversation.messages.push(assistant);
    let wire = panto_core::wire::ProviderIdentity {
        api_style: style,
        base_url: "http://127.0.0.1:1".into(),
        model: "m".into(),
        reasoning: panto_core::ReasoningEffort::Off,
    };
    let batch: Vec<PersistentMessage<'_>> = conversation
        .messages
        .iter()
        .map(|m| PersistentMessage {
            message: m,
            usage: None,
            wire: Some(&wire),
            conversation: &conversation,
            tools_available: &[],
            compaction: None,
        })
        .collect();
    let mut session = Session::create(store.clone());
    session.append(&batch).await.unwrap();
    session.id().to_owned()
}

#[tokio::test]
async fn resume_after_a_kill_mid_tool_closes_the_call_and_the_next_request_is_valid() {
    for style in STYLES {
        let store = MemoryStore::new();
        let id = killed_mid_tool(&store, style).await;
        let before = store.list().await.unwrap()[0].recency();

        let session = Session::resolve(store.clone(), &id[..8]).await.unwrap().unwrap();
        let conversation = session.load().await.unwrap();
        let server = MockServer::start().await;
        server.push(Reply::sse(text(style, "resumed fine")));
        let mut agent = Agent::new(config(style, &server), session, Some(conversation)).unwrap();
        // The closer is in the conversation at once, and persisted by flush.
        let closer = &agent.conversation().messages[2];
        let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = &closer.content[0]
        else {
            panic!("{closer:?}")
        };
        assert_eq!((tool_use_id.as_str(), *is_error), ("call_9", true));
        assert!(matches!(&content[0], ToolResultContent::Text { text } if text.starts_with("interrupted")));
        agent.flush().await.unwrap();
        assert_eq!(store.records(&id).len(), 3);
        // A synthetic closer is not a human prompt: the session does not move up.
        assert_eq!(store.list().await.unwrap()[0].recency(), before, "{style}");

        collect(&mut agent, "continue").await.unwrap();
        let b = body(&server.requests(), 0);
        let sent = wire_messages(style, &b);
        // user, assistant(tool call), closer (a tool message for OpenAI), then the new prompt
        // (Anthropic merges the closer and the prompt into one user turn).
        match style {
            ApiStyle::AnthropicMessages => assert_eq!(sent.len(), 3),
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => assert_eq!(sent.len(), 4),
        }
    }
}

#[tokio::test]
async fn session_load_of_a_never_written_session_is_not_found() {
    let store = MemoryStore::new();
    let session = Session::create(store.clone());
    assert!(matches!(session.load().await, Err(Error::SessionNotFound(_))));
}

/// A `MemoryStore` whose appends take a while, as a disk's or a database's do.
#[derive(Debug)]
struct SlowAppends(Arc<MemoryStore>);

#[async_trait::async_trait]
impl StoreWrapper for SlowAppends {
    fn inner(&self) -> &dyn SessionStore {
        &*self.0
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> panto_core::Result<Vec<String>> {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        self.0.append(id, messages).await
    }
}

/// `stored`: answers whether the assistant message that called it is already in the store.
#[derive(Debug)]
struct SeesItsCaller {
    store: Arc<MemoryStore>,
    session: String,
}

#[async_trait::async_trait]
impl panto_core::Tool for SeesItsCaller {
    fn declaration(&self) -> panto_core::ToolDecl {
        panto_core::ToolDecl {
            name: "stored".into(),
            description: "Whether the call is stored".into(),
            input_schema: json!({"type": "object"}),
        }
    }
    async fn call(&self, call: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
        let stored = self
            .store
            .records(&self.session)
            .iter()
            .any(|r| r.message.role == Role::Assistant && r.message.tool_uses().any(|(id, _, _)| id == call.id));
        Ok(panto_core::ToolCallResult::text(if stored {
            "stored"
        } else {
            "not stored"
        }))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_runs_only_once_the_message_that_called_it_is_stored() {
    // A tool records its file checkpoints as the calling message's, and a new session exists
    // only from its first assistant message on: tools that started while that message was
    // still being written found no session (parallel `write` and `edit` in `panto -p`).
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(
            style,
            &[("t1", "stored", "{}"), ("t2", "stored", "{}")],
        )));
        server.push(Reply::sse(text(style, "done")));
        let memory = MemoryStore::new();
        let session = Session::create(Arc::new(SlowAppends(memory.clone())));
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        agent
            .register_tool(Arc::new(SeesItsCaller {
                store: memory.clone(),
                session: id.clone(),
            }))
            .unwrap();
        collect(&mut agent, "check").await.unwrap();
        let records = memory.records(&id);
        let results: Vec<&ToolResultContent> = records[2]
            .message
            .content
            .iter()
            .flat_map(|block| match block {
                ContentBlock::ToolResult { content, .. } => content.iter(),
                _ => [].iter(),
            })
            .collect();
        let stored = ToolResultContent::Text { text: "stored".into() };
        assert_eq!(results, vec![&stored, &stored], "{style}");
    }
}

/// A `MemoryStore` whose write of tool results does not finish before the mock has received the
/// request after them (or ten seconds have passed), and says which it was.
#[derive(Debug)]
struct ResultsWrittenLate {
    memory: Arc<MemoryStore>,
    server: Arc<MockServer>,
    /// Set when a write of results saw the next request arrive first.
    overlapped: std::sync::atomic::AtomicBool,
    /// Set when a write of results is stored.
    written: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl StoreWrapper for ResultsWrittenLate {
    fn inner(&self) -> &dyn SessionStore {
        &*self.memory
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> panto_core::Result<Vec<String>> {
        use std::sync::atomic::Ordering;
        if holds_tool_results(messages) {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
            while tokio::time::Instant::now() < deadline {
                if self.server.requests().len() >= 2 {
                    self.overlapped.store(true, Ordering::SeqCst);
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        }
        let ids = self.memory.append(id, messages).await?;
        if holds_tool_results(messages) {
            self.written.store(true, Ordering::SeqCst);
        }
        Ok(ids)
    }
}

/// A tool step's results are written while the request carrying them travels (their write is off
/// the turn's critical path), yet nothing of that request's response reaches the consumer before
/// they are stored.
#[tokio::test]
async fn tool_results_are_written_while_the_next_request_travels_and_stored_before_its_response_shows() {
    use std::sync::atomic::Ordering;
    for style in STYLES {
        let server = Arc::new(MockServer::start().await);
        server.push(Reply::sse(tool_calls(style, &[("t1", "echo", r#"{"text":"x"}"#)])));
        server.push(Reply::sse(text(style, "done")));
        let memory = MemoryStore::new();
        let store = Arc::new(ResultsWrittenLate {
            memory: memory.clone(),
            server: server.clone(),
            overlapped: false.into(),
            written: false.into(),
        });
        let session = Session::create(store.clone());
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        agent.register_tool(Arc::new(Echo)).unwrap();
        let mut tool_done = false;
        {
            let mut stream = agent.run("use the tool".into());
            while let Some(event) = stream.next().await.unwrap() {
                match checked(event) {
                    panto_core::Event::ToolDispatchComplete { .. } => tool_done = true,
                    panto_core::Event::BlockStart { .. } | panto_core::Event::Delta { .. } if tool_done => assert!(
                        store.written.load(Ordering::SeqCst),
                        "{style}: the second response showed before the results were stored"
                    ),
                    _ => {}
                }
            }
        }
        assert!(tool_done, "{style}");
        assert!(
            store.overlapped.load(Ordering::SeqCst),
            "{style}: the next request waited for the results' write"
        );
        assert_eq!(
            roles(&memory.records(&id)),
            vec![Role::User, Role::Assistant, Role::User, Role::Assistant],
            "{style}"
        );
    }
}

/// A `MemoryStore` that refuses to write tool results.
#[derive(Debug)]
struct RefusesResults(Arc<MemoryStore>);

#[async_trait::async_trait]
impl StoreWrapper for RefusesResults {
    fn inner(&self) -> &dyn SessionStore {
        &*self.0
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> panto_core::Result<Vec<String>> {
        if holds_tool_results(messages) {
            return Err(Error::Store {
                context: "writing tool results".into(),
                source: "the disk is full".into(),
            });
        }
        self.0.append(id, messages).await
    }
}

/// When the results' write fails, the turn fails with the store's error and the response to the
/// request that carried them is never shown (nor stored).
#[tokio::test]
async fn a_failed_write_of_tool_results_fails_the_turn_before_the_next_response_shows() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(style, &[("t1", "echo", r#"{"text":"x"}"#)])));
        server.push(Reply::sse(text(style, "never seen")));
        let memory = MemoryStore::new();
        let session = Session::create(Arc::new(RefusesResults(memory.clone())));
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        agent.register_tool(Arc::new(Echo)).unwrap();
        let mut events = Vec::new();
        let error = {
            let mut stream = agent.run("use the tool".into());
            loop {
                match stream.next().await {
                    Ok(Some(event)) => events.push(checked(event)),
                    Ok(None) => panic!("{style}: the turn completed though its results were not written"),
                    Err(e) => break e,
                }
            }
        };
        assert!(matches!(error, Error::Store { .. }), "{style}: {error}");
        assert!(error.to_string().contains("the disk is full"), "{style}: {error}");
        assert!(
            !streamed_text(&events).contains("never seen"),
            "{style}: the response after the failed write was shown"
        );
        assert_eq!(
            roles(&memory.records(&id)),
            vec![Role::User, Role::Assistant],
            "{style}: only what was written before the failure"
        );
        // The results stay in the conversation, for the next write.
        assert_eq!(agent.conversation().messages.len(), 3, "{style}");
    }
}

/// The reply to a request carrying tool results is shown only once they are stored, but it is
/// read while they are written: left in the connection, the unread replies of thousands of
/// agents waiting on a slow store overran the shared HTTP/2 connection's budget for unread
/// frames, which then closed under all of them. Here the reply (8 MiB) is larger than the
/// socket's buffers, so the server can send it whole during the write only if it is read.
#[tokio::test(flavor = "multi_thread")]
async fn a_reply_is_read_while_its_tool_results_are_written_and_shown_after() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    let key = "reads-ahead";
    let mut config = config(style, &server);
    config
        .provider
        .extra_headers
        .push((panto_testkit::KEY_HEADER.to_owned(), key.to_owned()));
    server.push_keyed(key, Reply::sse(tool_calls(style, &[("t1", "echo", r#"{"text":"x"}"#)])));
    let piece = "a".repeat(1 << 20);
    let answer = panto_testkit::script::AnthropicScript::new()
        .text_deltas(vec![piece.clone(); 8])
        .build();
    server.push_keyed(key, Reply::sse(answer));
    let delay = std::time::Duration::from_secs(3);
    let memory = MemoryStore::new();
    let session = Session::create(SlowResults::new(memory.clone(), delay));
    let id = session.id().to_owned();
    let mut agent = Agent::new(config, session, None).unwrap();
    agent.register_tool(Arc::new(Echo)).unwrap();
    let started = std::time::Instant::now();
    let mut text = 0;
    {
        let mut stream = agent.run("use the tool".into());
        while let Some(event) = stream.next().await.unwrap() {
            if let panto_core::Event::Delta {
                delta: panto_core::ContentDelta::Text(t),
                ..
            } = event
            {
                assert!(
                    started.elapsed() >= delay,
                    "the reply showed before the tool results were stored"
                );
                text += t.len();
            }
        }
    }
    assert_eq!(text, 8 << 20);
    assert_eq!(
        roles(&memory.records(&id)),
        vec![Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    // The server's time on the two requests, from each read to its last byte sent: the second
    // would take the whole write if the reply waited unread.
    let served = server.served_time(key);
    assert!(
        served < delay * 2 / 3,
        "the reply waited unread for the results' write: the server spent {served:?} sending it"
    );
}
