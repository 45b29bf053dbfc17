//! Plain turns: text, thinking, request shape, cancellation.

use panto_core::{ApiStyle, BlockKind, ContentBlock, Event, Role, StopReason, StreamState};
use panto_testkit::script::{AnthropicScript, OpenAiScript};
use panto_testkit::{Chunking, MockServer, Reply};

use crate::support::*;

#[tokio::test]
async fn text_turn_streams_and_records_usage() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(text(style, "Hello there, world!")).chunking(Chunking::EveryByte));
        let mut agent = agent(style, &server);
        let events = collect(&mut agent, "hi").await.unwrap();

        assert_eq!(streamed_text(&events), "Hello there, world!", "{style}");
        assert!(
            matches!(
                events[0],
                Event::BlockStart {
                    index: 0,
                    kind: BlockKind::Text,
                    ..
                }
            ),
            "{style}: {events:?}"
        );
        let complete = events.iter().find_map(|e| match e {
            Event::MessageComplete { usage, stop_reason } => Some((*usage, stop_reason.clone())),
            _ => None,
        });
        assert_eq!(complete, Some((Some(usage(11, 7)), StopReason::EndTurn)), "{style}");
        match events.last() {
            Some(Event::TurnComplete {
                usage: u,
                steps,
                stop_reason,
            }) => {
                assert_eq!(
                    (*u, *steps, stop_reason),
                    (usage(11, 7), 1, &StopReason::EndTurn),
                    "{style}"
                );
            }
            other => panic!("{style}: last event {other:?}"),
        }
        let messages = &agent.conversation().messages;
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].role, Role::Assistant);
        assert_eq!(messages[1].text(), "Hello there, world!");
        assert_eq!(messages[1].usage, Some(usage(11, 7)));
        assert_eq!(messages[1].stop_reason, Some(StopReason::EndTurn));
    }
}

#[tokio::test]
async fn requests_carry_what_each_api_requires() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(text(style, "ok")));
        let mut agent = agent(style, &server);
        agent.add_system_message("You are terse.").await.unwrap();
        agent.register_tool(std::sync::Arc::new(Echo)).unwrap();
        collect(&mut agent, "hi").await.unwrap();

        let requests = server.requests();
        let r = &requests[0];
        let b = body(&requests, 0);
        assert_eq!(b["stream"], true);
        match style {
            ApiStyle::AnthropicMessages => {
                assert_eq!(r.path, "/v1/messages");
                assert_eq!(r.header("x-api-key"), Some(KEY));
                assert!(r.header("anthropic-version").is_some());
                assert_eq!(b["system"][0]["text"], "You are terse.");
                assert_eq!(b["messages"][0]["role"], "user");
                assert_eq!(b["messages"][0]["content"][0]["text"], "hi");
                assert_eq!(b["tools"][0]["name"], "echo");
                assert!(b["tools"][0]["input_schema"].is_object());
                assert!(b["max_tokens"].as_u64().unwrap() > 0);
            }
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => {
                assert_eq!(r.path, "/v1/chat/completions");
                assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
                assert_eq!(b["messages"][0]["role"], "system");
                assert_eq!(b["messages"][0]["content"], "You are terse.");
                assert_eq!(b["messages"][1]["role"], "user");
                assert_eq!(b["stream_options"]["include_usage"], true);
                assert_eq!(b["tools"][0]["type"], "function");
                assert_eq!(b["tools"][0]["function"]["name"], "echo");
            }
        }
    }
}

#[tokio::test]
async fn anthropic_thinking_signature_goes_back_verbatim() {
    let server = MockServer::start().await;
    let signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+sig/==";
    server.push(Reply::sse(
        AnthropicScript::new()
            .thinking("Let me think about this.", signature)
            .text("Answer one.")
            .build(),
    ));
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "Answer two.")));
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let events = collect(&mut agent, "q1").await.unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        Event::BlockStart {
            kind: BlockKind::Thinking,
            ..
        }
    )));
    match &agent.conversation().messages[1].content[0] {
        ContentBlock::Thinking {
            thinking,
            signature: Some(s),
        } => {
            assert_eq!(thinking, "Let me think about this.");
            assert_eq!(s, signature);
        }
        other => panic!("{other:?}"),
    }
    collect(&mut agent, "q2").await.unwrap();
    let b = body(&server.requests(), 1);
    let assistant = &b["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"][0]["type"], "thinking");
    assert_eq!(assistant["content"][0]["signature"], signature);
    assert_eq!(assistant["content"][0]["thinking"], "Let me think about this.");
}

#[tokio::test]
async fn openai_compatible_reasoning_is_surfaced_as_thinking() {
    let server = MockServer::start().await;
    server.push(Reply::sse(
        OpenAiScript::new().reasoning("Pondering.").text("Done.").build(),
    ));
    server.push(Reply::sse(text(ApiStyle::OpenAiChat, "Again.")));
    let mut agent = agent(ApiStyle::OpenAiChat, &server);
    let events = collect(&mut agent, "q").await.unwrap();
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
    assert_eq!(thinking, "Pondering.");
    assert_eq!(streamed_text(&events), "Done.");
    // The next request is valid (the mock validates it) and carries the answer text.
    collect(&mut agent, "again").await.unwrap();
    let b = body(&server.requests(), 1);
    assert_eq!(b["messages"][1]["content"], "Done.");
}

#[tokio::test]
async fn recorded_fixtures_play_through_the_agent() {
    for (style, fixture, expected) in [
        (ApiStyle::AnthropicMessages, "anthropic/text-basic.sse", None),
        (ApiStyle::AnthropicMessages, "anthropic/text-recorded-padded.sse", None),
        (ApiStyle::OpenAiChat, "openai/text-basic.sse", None),
        (ApiStyle::OpenAiChat, "openai-compat/llamacpp-text.sse", None),
        (
            ApiStyle::OpenAiChat,
            "llama-cpp-python/text-gemma-base.sse",
            Some(StopReason::MaxTokens),
        ),
    ] {
        for chunking in [Chunking::Whole, Chunking::EveryByte] {
            let server = MockServer::start().await;
            server.push(Reply::fixture(fixture).chunking(chunking));
            let mut agent = agent(style, &server);
            let events = collect(&mut agent, "hi")
                .await
                .unwrap_or_else(|e| panic!("{fixture}: {e}"));
            let text = streamed_text(&events);
            assert!(!text.is_empty(), "{fixture}");
            assert_eq!(agent.conversation().messages[1].text(), text, "{fixture}");
            if let Some(stop) = &expected {
                assert_eq!(agent.conversation().messages[1].stop_reason.as_ref(), Some(stop));
            }
        }
    }
}

#[tokio::test]
async fn dropping_the_stream_mid_message_keeps_what_was_seen() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(
            Reply::sse(text(style, "one two three four five six seven eight nine ten"))
                .chunking(Chunking::Fixed(40))
                .delay(std::time::Duration::from_millis(30)),
        );
        server.push(Reply::sse(text(style, "fresh")));
        let mut agent = agent(style, &server);
        {
            let mut stream = agent.run("count".into());
            loop {
                match stream.next().await.unwrap().map(checked) {
                    Some(Event::Delta { .. }) => break,
                    Some(_) => {}
                    None => panic!("{style}: ended before a delta"),
                }
            }
            assert_eq!(stream.state(), StreamState::Streaming);
        }
        let messages = &agent.conversation().messages;
        assert_eq!(messages.len(), 2, "{style}: {messages:?}");
        let partial = messages[1].text();
        assert!(!partial.is_empty() && "one two three four five six seven eight nine ten".starts_with(&partial));
        assert_eq!(messages[1].stop_reason, Some(StopReason::Other("cancelled".into())));
        // The conversation is still valid: the next turn's request is accepted.
        collect(&mut agent, "again").await.unwrap();
        let b = body(&server.requests(), 1);
        assert_eq!(wire_messages(style, &b).len(), 3);
    }
}

#[tokio::test]
async fn cancel_token_ends_the_turn_with_cancelled() {
    let server = MockServer::start().await;
    server.push(Reply::hang());
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let mut stream = agent.run("hi".into());
    let token = stream.cancel_token();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        token.cancel();
    });
    let err = loop {
        match stream.next().await.map(|e| e.map(checked)) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the turn completed"),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, panto_core::Error::Cancelled), "{err}");
    assert_eq!(stream.state(), StreamState::Cancelled);
}

#[test]
fn stream_next_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let server = MockServer::start().await;
        let mut agent = agent(ApiStyle::OpenAiChat, &server);
        let mut stream = agent.run("x".into());
        let fut = stream.next();
        assert_send(&fut);
    });
}

/// `Agent::run`'s stream is a `futures::Stream`: consumed by a `StreamExt` combinator it gives
/// the events `Stream::next` gives, and the agent is usable on the next line (no `drop`).
#[tokio::test]
async fn the_stream_is_a_futures_stream_that_frees_the_agent_once_consumed() {
    use futures_util::StreamExt;
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(text(style, "one")));
        server.push(Reply::sse(text(style, "two")));
        let mut agent = agent(style, &server);

        let events: Vec<Event> = agent
            .run("q1".into())
            .map(|event| checked(event.unwrap()))
            .collect()
            .await;
        assert_eq!(streamed_text(&events), "one", "{style}");
        assert!(
            matches!(events.last(), Some(Event::TurnComplete { .. })),
            "{style}: {events:?}"
        );
        // The agent is free: the stream was consumed by value.
        assert_eq!(agent.conversation().messages.len(), 2, "{style}");

        // `StreamExt::next` and the inherent `next` take turns on one stream.
        let mut stream = agent.run("q2".into());
        let first = StreamExt::next(&mut stream).await.unwrap().unwrap();
        assert!(matches!(first, Event::BlockStart { .. }), "{style}: {first:?}");
        let mut rest = Vec::new();
        while let Some(event) = stream.next().await.unwrap() {
            rest.push(event);
            if let Some(event) = StreamExt::next(&mut stream).await {
                rest.push(event.unwrap());
            }
        }
        assert_eq!(streamed_text(&rest), "two", "{style}");
        assert!(
            StreamExt::next(&mut stream).await.is_none(),
            "{style}: the stream stays ended"
        );
        assert_eq!(stream.state(), StreamState::Complete, "{style}");
    }
}
