//! Failures: retry with retry-after, mid-stream errors, truncation, idle streams, overflow.

use std::time::Duration;

use panto_core::{ApiStyle, Error, Event, Role, Session};
use panto_testkit::script::{AnthropicScript, OpenAiScript};
use panto_testkit::{fixture_bytes, MockServer, Reply};
use serde_json::json;

use crate::support::*;

fn retries(events: &[Event]) -> Vec<&panto_core::RetryInfo> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ProviderRetry(info) => Some(info),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    for style in STYLES {
        let server = MockServer::start().await;
        let body = match style {
            ApiStyle::AnthropicMessages => {
                json!({"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}})
            }
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => {
                json!({"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}})
            }
        };
        server.push(Reply::json(429, &body).header("retry-after", "0.02"));
        server.push(Reply::sse(text(style, "made it")));
        let mut agent = agent(style, &server);
        let started = std::time::Instant::now();
        let events = collect(&mut agent, "hi").await.unwrap();
        let r = retries(&events);
        assert_eq!(r.len(), 1, "{style}");
        assert_eq!(r[0].attempt, 2);
        assert_eq!(r[0].delay, Duration::from_millis(20), "{style}: retry-after honoured");
        assert!(r[0].reason.contains("429"), "{}", r[0].reason);
        assert!(!r[0].discard_partial);
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(streamed_text(&events), "made it");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn retry_after_ms_wins_over_retry_after() {
    let server = MockServer::start().await;
    server.push(
        Reply::json(503, &json!({"error":{"message":"busy"}}))
            .header("retry-after", "30")
            .header("retry-after-ms", "5"),
    );
    server.push(Reply::sse(text(ApiStyle::OpenAiChat, "ok")));
    let mut agent = agent(ApiStyle::OpenAiChat, &server);
    let events = collect(&mut agent, "hi").await.unwrap();
    assert_eq!(retries(&events)[0].delay, Duration::from_millis(5));
}

#[tokio::test]
async fn exhausted_retries_name_the_status_and_provider_error() {
    let server = MockServer::start().await;
    let raw = fixture_bytes("anthropic/error-529-overloaded.json").unwrap();
    for _ in 0..3 {
        server.push(Reply::raw(529, raw.clone()).header("content-type", "application/json"));
    }
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let err = collect(&mut agent, "hi").await.unwrap_err();
    match &err {
        Error::Http { status, error_type, .. } => {
            assert_eq!((*status, error_type.as_deref()), (529, Some("overloaded_error")))
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("HTTP 529 (overloaded_error)"), "{err}");
    assert_eq!(server.requests().len(), 3);
    // The user message stays; nothing else was added.
    assert_eq!(agent.conversation().messages.len(), 1);
}

#[tokio::test]
async fn non_retryable_errors_fail_at_once() {
    let server = MockServer::start().await;
    let raw = fixture_bytes("anthropic/error-400-invalid-request.json").unwrap();
    server.push(Reply::raw(400, raw).header("content-type", "application/json"));
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let err = collect(&mut agent, "hi").await.unwrap_err();
    assert!(matches!(err, Error::Http { status: 400, .. }), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn overloaded_error_mid_stream_then_success_keeps_one_attempt() {
    let server = MockServer::start().await;
    // Some text streams before the error: the retry event tells consumers to discard it.
    server.push(Reply::sse(
        AnthropicScript::new()
            .text("partial words")
            .error("overloaded_error", "Overloaded")
            .build(),
    ));
    server.push(Reply::fixture("anthropic/error-event-overloaded.sse"));
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "complete answer")));
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let events = collect(&mut agent, "hi").await.unwrap();
    let r = retries(&events);
    assert_eq!(r.len(), 2);
    assert!(r[0].reason.contains("Overloaded"), "{}", r[0].reason);
    assert!(r[0].discard_partial);
    assert!(!r[1].discard_partial);
    let assistants: Vec<String> = agent
        .conversation()
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text())
        .collect();
    assert_eq!(assistants, vec!["complete answer".to_owned()]);
}

#[tokio::test]
async fn openai_mid_stream_error_payload_is_an_error_with_the_message() {
    let server = MockServer::start().await;
    server.push(Reply::fixture("litellm/chat-mid-stream-error.sse"));
    let mut config = config(ApiStyle::OpenAiChat, &server);
    config.retry.max_attempts = 1;
    let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
    let err = collect(&mut agent, "hi").await.unwrap_err();
    assert!(err.to_string().contains("scripted overload mid-stream"), "{err}");
    // What the user saw ("Partial") is kept as a valid assistant message.
    assert_eq!(agent.conversation().messages.last().unwrap().text(), "Partial");
}

#[tokio::test]
async fn truncated_streams_are_errors_never_complete_messages() {
    for style in STYLES {
        let full = text(style, "this answer gets cut off");
        let server = MockServer::start().await;
        // Every prefix that lacks the terminal event must fail; use a cut in the middle.
        server.push(Reply::sse(full.clone()).end_after(full.len() / 2));
        let mut config = config(style, &server);
        config.retry.max_attempts = 1;
        let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
        let err = collect(&mut agent, "hi").await.unwrap_err();
        assert!(matches!(err, Error::Truncated { .. }), "{style}: {err}");
        assert!(agent
            .conversation()
            .messages
            .iter()
            .all(|m| m.stop_reason != Some(panto_core::StopReason::EndTurn)));
    }
}

#[tokio::test]
async fn truncation_and_idle_streams_are_retried() {
    for style in STYLES {
        let full = text(style, "complete");
        let server = MockServer::start().await;
        server.push(Reply::sse(full.clone()).close_after(full.len() / 3));
        server.push(Reply::sse(full.clone()).stall_after(10));
        server.push(Reply::sse(full));
        let mut config = config(style, &server);
        config.idle_timeout = Duration::from_millis(200);
        let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
        let events = collect(&mut agent, "hi").await.unwrap();
        let r = retries(&events);
        assert_eq!(r.len(), 2, "{style}");
        assert!(r[1].reason.contains("idle"), "{}", r[1].reason);
        assert_eq!(streamed_text(&events), "complete");
    }
}

#[tokio::test]
async fn context_overflow_is_its_own_error() {
    for (style, fixture) in [
        (ApiStyle::AnthropicMessages, "anthropic/error-400-prompt-too-long.json"),
        (ApiStyle::OpenAiChat, "openai/error-400-context-length-exceeded.json"),
        (ApiStyle::OpenAiChat, "litellm/chat-error-400-context.json"),
    ] {
        let server = MockServer::start().await;
        server.push(Reply::raw(400, fixture_bytes(fixture).unwrap()).header("content-type", "application/json"));
        let mut config = config(style, &server);
        config.compaction.enabled = false;
        let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
        let err = collect(&mut agent, "hi").await.unwrap_err();
        assert!(
            matches!(err, Error::ContextOverflow { status: 400, .. }),
            "{fixture}: {err}"
        );
    }
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = panto_core::Config::new(
        panto_core::ProviderConfig::new(ApiStyle::OpenAiChat, "m")
            .with_base_url(format!("http://127.0.0.1:{port}/v1"))
            .with_api_key(KEY),
    );
    config.retry.base_delay = Duration::from_millis(1);
    config.retry.max_attempts = 2;
    let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
    let mut stream = agent.run("hi".into());
    let mut saw_retry = false;
    let err = loop {
        match stream.next().await.map(|e| e.map(checked)) {
            Ok(Some(Event::ProviderRetry(_))) => saw_retry = true,
            Ok(Some(_)) => {}
            Ok(None) => panic!("completed"),
            Err(e) => break e,
        }
    };
    assert!(saw_retry);
    assert!(matches!(err, Error::Connect { .. }), "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
}

#[tokio::test]
async fn openai_stream_without_done_but_with_finish_reason_completes() {
    let server = MockServer::start().await;
    let body = String::from_utf8(OpenAiScript::new().text("no done marker").build()).unwrap();
    let trimmed = body.trim_end().trim_end_matches("data: [DONE]").to_owned();
    server.push(Reply::sse(trimmed));
    let mut agent = agent(ApiStyle::OpenAiChat, &server);
    let events = collect(&mut agent, "hi").await.unwrap();
    assert_eq!(streamed_text(&events), "no done marker");
}

/// A turn that failed keeps its prompt; `Agent::retry` asks again without sending it twice, and
/// refuses once the conversation ends with the model's answer.
#[tokio::test]
async fn a_failed_turn_is_retried_without_its_prompt_twice() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::json(400, &json!({"error": {"message": "bad request"}})));
        server.push(Reply::sse(text(style, "second try")));
        let mut agent = agent(style, &server);
        assert!(matches!(agent.retry().map(|_| ()), Err(Error::NothingToRetry)));
        collect(&mut agent, "the prompt").await.unwrap_err();
        assert_eq!(agent.conversation().messages.last().map(|m| m.role), Some(Role::User));

        let mut events = Vec::new();
        {
            let mut stream = agent.retry().unwrap();
            while let Some(event) = stream.next().await.unwrap() {
                events.push(checked(event));
            }
        }
        assert_eq!(streamed_text(&events), "second try", "{style}");
        let roles: Vec<Role> = agent.conversation().messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant], "{style}: one prompt, one answer");
        let second = body(&server.requests(), 1);
        let wire = wire_messages(style, &second);
        let prompts = wire.iter().filter(|m| m.to_string().contains("the prompt")).count();
        assert_eq!(
            prompts, 1,
            "{style}: the retried request holds the prompt once: {second}"
        );

        let err = agent.retry().map(|_| ()).unwrap_err();
        assert!(matches!(err, Error::NothingToRetry), "{err}");
        assert!(err.to_string().starts_with("nothing to retry"), "{err}");
    }
}

/// The idle timeout counts from the last bytes that arrived, not from the start of the response:
/// a reply that trickles in for four times the timeout completes, and one that stops after such
/// a trickle fails as idle, once, and is retried.
#[tokio::test]
async fn a_slow_but_steady_stream_is_not_idle_and_a_stall_after_it_is() {
    for style in STYLES {
        let full = text(style, "complete");
        let piece = full.len().div_ceil(12);
        let trickle = || {
            Reply::sse(full.clone())
                .chunking(panto_testkit::Chunking::Fixed(piece))
                .delay(Duration::from_millis(50))
        };
        let server = MockServer::start().await;
        server.push(trickle().stall_after(piece * 11));
        server.push(trickle());
        let mut config = config(style, &server);
        config.idle_timeout = Duration::from_millis(150);
        let mut agent = panto_core::Agent::new(config, Session::create(panto_core::NullStore::shared()), None).unwrap();
        let started = std::time::Instant::now();
        let events = collect(&mut agent, "hi").await.unwrap();
        let r = retries(&events);
        assert_eq!(r.len(), 1, "{style}: {r:?}");
        assert!(r[0].reason.contains("idle"), "{}", r[0].reason);
        assert!(r[0].discard_partial, "{style}: the stalled attempt had streamed text");
        let last = agent.conversation().messages.last().unwrap();
        assert!(
            matches!(&last.content[..], [panto_core::ContentBlock::Text { text }] if text == "complete"),
            "{style}: {:?}",
            last.content
        );
        // Two trickles of 12 pieces 50 ms apart: over a second, against a 150 ms timeout.
        assert!(
            started.elapsed() > Duration::from_millis(1000),
            "{:?}",
            started.elapsed()
        );
    }
}
