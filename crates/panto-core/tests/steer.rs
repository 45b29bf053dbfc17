//! Run control: steering a running turn and following it with more turns on the same stream.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use panto_core::{
    ApiStyle, Event, MemoryStore, QueueMode, RunControl, Session, SessionStore, Tool, ToolCall, ToolCallResult,
    ToolDecl, ToolError, UserMessage,
};
use panto_testkit::{MockServer, Reply};
use serde_json::{json, Value};

use crate::support::*;

/// `steer_me`: sends a steer through the run handle while it runs (so the steer arrives while
/// tools run), then returns `ran`.
struct SteerWhileRunning {
    control: Arc<Mutex<Option<RunControl>>>,
    text: &'static str,
}

#[async_trait]
impl Tool for SteerWhileRunning {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "steer_me".into(),
            description: "Sends a steer while it runs".into(),
            input_schema: json!({"type":"object"}),
        }
    }
    async fn call(&self, _call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let control = self.control.lock().unwrap().clone().expect("the test set the handle");
        assert!(control.steer(self.text));
        Ok(ToolCallResult::text("ran"))
    }
}

/// The user-side texts of a request, in wire order, as (kind, text): `result` for a tool
/// result, `text` for a user's own text.
fn user_side(style: ApiStyle, body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in wire_messages(style, body) {
        match style {
            ApiStyle::AnthropicMessages if m["role"] == "user" => {
                for b in m["content"].as_array().cloned().unwrap_or_default() {
                    match b["type"].as_str() {
                        Some("tool_result") => out.push(("result".into(), b["tool_use_id"].as_str().unwrap().into())),
                        Some("text") => out.push(("text".into(), b["text"].as_str().unwrap().into())),
                        _ => {}
                    }
                }
            }
            ApiStyle::OpenAiChat if m["role"] == "tool" => {
                out.push(("result".into(), m["tool_call_id"].as_str().unwrap().into()));
            }
            ApiStyle::OpenAiChat if m["role"] == "user" => {
                out.push(("text".into(), m["content"].as_str().unwrap().into()));
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn a_steer_sent_while_tools_run_joins_after_their_results_before_the_next_request() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(style, &[("t1", "steer_me", "{}")])));
        server.push(Reply::sse(text(style, "blue it is")));
        let store = MemoryStore::new();
        let session = Session::create(store.clone());
        let id = session.id().to_owned();
        let mut agent = agent_on(style, &server, session);
        let handle = Arc::new(Mutex::new(None));
        agent
            .register_tool(Arc::new(SteerWhileRunning {
                control: handle.clone(),
                text: "use blue",
            }))
            .unwrap();
        let mut stream = agent.run("paint it".into());
        *handle.lock().unwrap() = Some(stream.control());
        let mut events = Vec::new();
        while let Some(event) = stream.next().await.unwrap() {
            events.push(checked(event));
        }
        drop(stream);

        // The steer joined once the tool's result was in, before the next request.
        let steer_at = events
            .iter()
            .position(|e| matches!(e, Event::Steer { text } if text == "use blue"));
        let result_at = events
            .iter()
            .position(|e| matches!(e, Event::ToolDispatchComplete { .. }));
        let second_message_at = events.iter().rposition(|e| matches!(e, Event::MessageComplete { .. }));
        assert!(
            result_at < steer_at && steer_at < second_message_at,
            "{style}: {events:?}"
        );
        assert!(
            matches!(events.last(), Some(Event::TurnComplete { steps: 2, .. })),
            "{style}"
        );

        // What the mock was asked: the first request had no steer, the second has the result
        // and then the steer, in that order.
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{style}");
        assert_eq!(
            user_side(style, &body(&requests, 0)),
            vec![("text".to_owned(), "paint it".to_owned())],
            "{style}"
        );
        assert_eq!(
            user_side(style, &body(&requests, 1)),
            vec![
                ("text".to_owned(), "paint it".to_owned()),
                ("result".to_owned(), "t1".to_owned()),
                ("text".to_owned(), "use blue".to_owned()),
            ],
            "{style}"
        );

        // Persisted in the results' message, and counted as the last human prompt.
        let records = store.records(&id);
        assert_eq!(records.len(), 4, "{style}");
        assert_eq!(records[2].message.text(), "use blue");
        assert!(records[2].message.is_human_prompt());
        let info = &store.list().await.unwrap()[0];
        assert_eq!(info.last_user_message.as_deref(), Some("use blue"), "{style}");
        assert_eq!(agent.prompts().len(), 2, "the rewind picker lists the steer: {style}");
    }
}

#[tokio::test]
async fn a_steer_after_an_answer_without_tools_becomes_a_follow_up_and_follow_ups_run_in_order() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    server.push(Reply::sse(text(style, "one")));
    server.push(Reply::sse(text(style, "two")));
    server.push(Reply::sse(text(style, "three")));
    let mut agent = agent(style, &server);
    let mut stream = agent.run("first".into());
    let control = stream.control();
    assert!(control.follow_up("third"));
    assert!(control.steer("second"));
    assert_eq!(
        control.pending().iter().map(|(mode, _)| *mode).collect::<Vec<_>>(),
        vec![QueueMode::Steer, QueueMode::FollowUp]
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await.unwrap() {
        events.push(checked(event));
    }
    drop(stream);
    assert!(!control.follow_up("late"), "the stream ended: a later send is refused");
    assert!(control.pending().is_empty());

    let marks: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::FollowUpStart { text } => Some(format!("start {text}")),
            Event::TurnComplete { steps, .. } => Some(format!("complete {steps}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        marks,
        vec!["complete 1", "start second", "complete 1", "start third", "complete 1"]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let last_user = |n: usize| {
        let messages = wire_messages(style, &body(&requests, n));
        messages.last().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        (last_user(0), last_user(1), last_user(2)),
        ("first".into(), "second".into(), "third".into())
    );
    let texts: Vec<String> = agent.conversation().messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, vec!["first", "one", "second", "two", "third", "three"]);
}

#[tokio::test]
async fn what_a_cancelled_turn_did_not_take_is_given_back() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    server.push(Reply::hang());
    let mut agent = agent(style, &server);
    let mut stream = agent.run("first".into());
    let control = stream.control();
    control.steer("not yet");
    control.follow_up(UserMessage::text("later"));
    stream.cancel_token().cancel();
    assert!(matches!(stream.next().await, Err(panto_core::Error::Cancelled)));
    drop(stream);
    assert_eq!(
        control.take_pending(),
        vec![
            (QueueMode::Steer, UserMessage::text("not yet")),
            (QueueMode::FollowUp, UserMessage::text("later"))
        ]
    );
}
