//! A hostile or misconfigured server: redirects, success bodies that are not event streams,
//! oversized events and error bodies, and credentials in the base URL.

use std::sync::Arc;
use std::time::Duration;

use panto_core::{Agent, ApiStyle, Config, Error, MemoryStore, ProviderConfig, SessionStore};
use panto_testkit::script::{AnthropicScript, OpenAiScript};
use panto_testkit::{Chunking, MockServer, Reply};
use serde_json::json;

use crate::support::*;

/// A config for `style` at `base_url`, three attempts with fast retries, and a configured
/// custom header that must not travel either.
fn config_at(style: ApiStyle, base_url: String) -> Config {
    let mut config = Config::new(
        ProviderConfig::new(style, "m")
            .with_base_url(base_url)
            .with_api_key(KEY),
    );
    config.retry.base_delay = Duration::from_millis(1);
    config.retry.max_delay = Duration::from_millis(5);
    config.retry.max_attempts = 3;
    config.idle_timeout = Duration::from_secs(10);
    config.provider.extra_headers = vec![("x-custom-secret".into(), "header-secret".into())];
    config
}

fn base_url(style: ApiStyle, server: &MockServer) -> String {
    match style {
        ApiStyle::AnthropicMessages => server.anthropic_base_url(),
        ApiStyle::OpenAiResponses => {
            unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
        }
        ApiStyle::OpenAiChat => server.openai_base_url(),
    }
}

/// An agent on `config` whose session stores nothing.
fn agent_storing_nothing(config: Config) -> Agent {
    Agent::new(
        config,
        panto_core::Session::create(panto_core::NullStore::shared()),
        None,
    )
    .unwrap()
}

async fn run(config: Config) -> Result<Vec<panto_core::Event>, Error> {
    let mut agent = agent_storing_nothing(config);
    collect(&mut agent, "hi").await
}

#[tokio::test]
async fn a_redirect_is_an_error_naming_the_location_and_nothing_reaches_its_target() {
    for style in STYLES {
        for status in [301, 302, 303, 307, 308] {
            let provider = MockServer::start().await;
            let elsewhere = MockServer::start().await;
            // Were the redirect followed, the second server would answer and the turn succeed.
            elsewhere.push(Reply::sse(text(style, "stolen")));
            let location = format!("{}/collect?from=panto", elsewhere.base_url());
            provider.push(Reply::raw(status, Vec::new()).header("location", &location));
            let err = run(config_at(style, base_url(style, &provider))).await.unwrap_err();
            match &err {
                Error::Redirect {
                    status: got,
                    location: Some(l),
                } => assert_eq!((*got, l.as_str()), (status, location.as_str())),
                other => panic!("{style} {status}: expected a redirect error, got {other}"),
            }
            let message = err.to_string();
            assert!(
                message.contains(&location) && message.contains(&format!("HTTP {status}")),
                "{message}"
            );
            assert!(!err.is_retryable());
            assert_eq!(
                provider.requests().len(),
                1,
                "{style} {status}: a redirect is not retried"
            );
            assert!(
                elsewhere.requests().is_empty(),
                "{style} {status}: the redirect target received {:?}",
                elsewhere.requests()
            );
        }
    }
}

#[tokio::test]
async fn a_redirect_location_is_escaped_bounded_and_stripped_of_credentials() {
    let provider = MockServer::start().await;
    let long = "a".repeat(1000);
    provider.push(Reply::raw(307, Vec::new()).header("location", &format!("http://u:p@evil.test/\t{long}")));
    let err = run(config_at(ApiStyle::OpenAiChat, provider.openai_base_url()))
        .await
        .unwrap_err();
    let Error::Redirect {
        location: Some(location),
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert!(location.starts_with("http://evil.test/\\t"), "{location}");
    assert!(location.len() < 320 && location.ends_with('…'), "{location}");
    // Without a Location header the error still says what happened.
    let provider = MockServer::start().await;
    provider.push(Reply::raw(301, Vec::new()));
    let err = run(config_at(ApiStyle::OpenAiChat, provider.openai_base_url()))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Redirect {
                status: 301,
                location: None
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("no Location header"), "{err}");
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_is_reported_with_its_first_bytes_and_not_retried() {
    let gzip = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48];
    let html = format!("<html>\x1b[2J\x1b]0;owned\x07<body>{}</body></html>", "p".repeat(5000));
    let cases: Vec<(Reply, &str, &str)> = vec![
        (
            Reply::json(200, &json!({"data": []})),
            "got application/json",
            r#""{\"data\":[]}""#,
        ),
        (
            Reply::raw(200, html.clone()).header("content-type", "text/html; charset=utf-8"),
            "got text/html; charset=utf-8",
            "<html>\\u{1b}[2J\\u{1b}]0;owned\\u{7}<body>ppp",
        ),
        (
            Reply::sse(gzip.to_vec()).header("content-encoding", "gzip"),
            "got text/event-stream with Content-Encoding gzip",
            "\\u{1f}\u{fffd}\\u{8}\\0",
        ),
        (Reply::raw(200, "data: {}\n\n"), "got no Content-Type", "data: {}\\n\\n"),
    ];
    for (reply, got, start) in cases {
        let server = MockServer::start().await;
        for _ in 0..3 {
            server.push(reply.clone());
        }
        let err = run(config_at(ApiStyle::AnthropicMessages, server.anthropic_base_url()))
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::NotEventStream { .. }), "{message}");
        assert!(
            message.starts_with("expected text/event-stream from the provider"),
            "{message}"
        );
        assert!(message.contains(got), "{got}: {message}");
        assert!(message.contains(start), "{start}: {message}");
        assert!(!message.contains('\x1b') && !message.contains('\x07'), "{message}");
        assert!(
            message.len() < 2000,
            "the quoted body is bounded: {} bytes",
            message.len()
        );
        assert_eq!(server.requests().len(), 1, "{got}: not retried");
    }
}

#[tokio::test]
async fn an_event_stream_content_type_with_parameters_is_accepted() {
    let server = MockServer::start().await;
    server.push(
        Reply::sse(text(ApiStyle::OpenAiChat, "fine"))
            .header("content-type", "Text/Event-Stream; charset=utf-8")
            .header("content-encoding", "identity"),
    );
    let events = run(config_at(ApiStyle::OpenAiChat, server.openai_base_url()))
        .await
        .unwrap();
    assert_eq!(streamed_text(&events), "fine");
}

#[tokio::test]
async fn an_event_over_the_configured_limit_fails_without_retry() {
    for style in STYLES {
        let server = MockServer::start().await;
        // One text delta of 8 KiB: a well-formed stream, but one event is over the limit.
        let big = "x".repeat(8 * 1024);
        let body = match style {
            ApiStyle::AnthropicMessages => AnthropicScript::new().text_deltas([&big]).build(),
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => OpenAiScript::new().text_deltas([&big]).build(),
        };
        for _ in 0..3 {
            server.push(Reply::sse(body.clone()));
        }
        let mut config = config_at(style, base_url(style, &server));
        config.provider.max_event_bytes = 4096;
        let err = run(config).await.unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::Protocol { .. }), "{style}: {message}");
        assert!(
            message.contains("larger than 4096 bytes (max_event_bytes)"),
            "{message}"
        );
        assert_eq!(server.requests().len(), 1, "{style}: not retried");
        // The default limit lets the same stream through.
        let server = MockServer::start().await;
        server.push(Reply::sse(body));
        let events = run(config_at(style, base_url(style, &server))).await.unwrap();
        assert_eq!(streamed_text(&events), big);
    }
}

/// A server streaming deltas without end cannot grow a message in memory without bound: past
/// `max_response_bytes` the request fails, not retried, after the text that came before it was
/// shown.
#[tokio::test]
async fn a_response_that_never_ends_fails_once_it_passes_the_configured_limit_without_retry() {
    for style in STYLES {
        let server = MockServer::start().await;
        let deltas: Vec<String> = (0..4_000).map(|i| format!("{i:0>100}")).collect();
        let body = match style {
            ApiStyle::AnthropicMessages => AnthropicScript::new().text_deltas(&deltas).build(),
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => OpenAiScript::new().text_deltas(&deltas).build(),
        };
        // More than 400 KB of deltas, and then the body stalls instead of ending: without the
        // limit the turn would wait out the idle timeout.
        let stalled = body.len() - 100;
        for _ in 0..3 {
            server.push(
                Reply::sse(body.clone())
                    .chunking(Chunking::Fixed(1024))
                    .stall_after(stalled),
            );
        }
        let mut config = config_at(style, base_url(style, &server));
        config.provider.max_response_bytes = 64 * 1024;
        let mut agent = agent_storing_nothing(config);
        let mut events = Vec::new();
        let err = tokio::time::timeout(Duration::from_secs(5), async {
            let mut stream = agent.run("hi".into());
            loop {
                match stream.next().await {
                    Ok(Some(event)) => events.push(event),
                    Ok(None) => panic!("{style}: the turn succeeded"),
                    Err(e) => break e,
                }
            }
        })
        .await
        .expect("the limit stops the stream before the idle timeout");
        let message = err.to_string();
        assert!(matches!(err, Error::Protocol { .. }), "{style}: {message}");
        assert!(
            message.contains("passed 65536 bytes (max_response_bytes)"),
            "{style}: {message}"
        );
        assert_eq!(server.requests().len(), 1, "{style}: not retried");
        let shown = streamed_text(&events);
        assert!(
            shown.starts_with(&deltas[..10].concat()) && shown.len() < 64 * 1024,
            "{style}: {} bytes shown",
            shown.len()
        );
    }
}

/// `user:pw-secret`, the credentials the next tests put in a base URL.
const BASIC: &str = "dXNlcjpwdy1zZWNyZXQ=";

#[tokio::test]
async fn credentials_in_the_base_url_are_sent_as_basic_auth_and_never_recorded() {
    let server = MockServer::start().await;
    server.push(Reply::sse(text(ApiStyle::AnthropicMessages, "hello")));
    let url = format!("http://user:pw-secret@{}", server.addr());
    let store: Arc<dyn SessionStore> = MemoryStore::new();
    let mut agent = Agent::new(
        config_at(ApiStyle::AnthropicMessages, url),
        panto_core::Session::create(store.clone()),
        None,
    )
    .unwrap();
    collect(&mut agent, "hi").await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Basic {BASIC}").as_str())
    );
    let listed = store.list().await.unwrap();
    let wire = listed[0].wire.as_ref().expect("a provider identity");
    assert_eq!(wire.base_url, format!("http://{}", server.addr()));
    assert!(!format!("{:?}", agent.config()).contains("pw-secret"));
}

#[tokio::test]
async fn a_connect_error_never_shows_the_credentials_of_the_base_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = config_at(
        ApiStyle::OpenAiChat,
        format!("http://user:pw-secret@127.0.0.1:{port}/v1"),
    );
    config.retry.max_attempts = 1;
    let err = run(config).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Connect { .. }), "{message}");
    assert!(message.contains(&format!("http://127.0.0.1:{port}/v1")), "{message}");
    assert!(
        !message.contains("pw-secret") && !message.contains("user:"),
        "{message}"
    );
    // One short line: the URL once, then the cause a user can act on.
    assert_eq!(message.matches(&format!("127.0.0.1:{port}")).count(), 1, "{message}");
    assert!(message.ends_with(": Connection refused (os error 111)"), "{message}");
}

/// Agents made from clones of one config share one HTTP client: with a server that keeps
/// connections alive, several agents' turns, one after the other, travel over one connection.
/// (Each agent once built its own client and opened its own connection.)
#[tokio::test]
async fn agents_of_one_config_share_their_connections() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.set_keep_alive(true);
        let shared = config(style, &server);
        let mut agents: Vec<Agent> = (0..3).map(|_| agent_storing_nothing(shared.clone())).collect();
        for (i, agent) in agents.iter_mut().enumerate() {
            server.push(Reply::sse(text(style, &format!("answer {i}"))));
            let events = collect(agent, "hello").await.unwrap();
            assert_eq!(streamed_text(&events), format!("answer {i}"));
        }
        assert_eq!(server.requests().len(), 3);
        assert_eq!(
            server.connections(),
            1,
            "{style}: three agents of one config opened {} connections",
            server.connections()
        );

        // A config built on its own has its own client, so its own connection.
        let mut separate = agent_storing_nothing(config(style, &server));
        server.push(Reply::sse(text(style, "apart")));
        collect(&mut separate, "hello").await.unwrap();
        assert_eq!(server.connections(), 2, "{style}");
    }
}

/// Agents sharing a client over HTTP/2 (cleartext, prior knowledge) multiplex their requests
/// on one connection: twenty turns in flight at once, each reply streamed slowly enough that
/// they overlap, open one connection between them, and each agent still gets its own answer.
/// Over HTTP/1.1 the same turns need a connection per request in flight (asserted too, so the
/// overlap is real).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_sharing_a_client_over_http2_use_one_connection() {
    const AGENTS: usize = 20;
    for http2 in [true, false] {
        let server = MockServer::start().await;
        server.set_keep_alive(true);
        let mut shared = config(ApiStyle::AnthropicMessages, &server);
        shared.provider = shared.provider.with_http2_prior_knowledge(http2);
        let mut turns = tokio::task::JoinSet::new();
        for i in 0..AGENTS {
            let key = format!("agent-{i}");
            server.push_keyed(
                &key,
                Reply::sse(text(ApiStyle::AnthropicMessages, &format!("answer {i}")))
                    .chunking(panto_testkit::Chunking::Fixed(64))
                    .delay(Duration::from_millis(20)),
            );
            let mut config = shared.clone();
            config.provider = config.provider.with_header(panto_testkit::KEY_HEADER, key);
            let mut agent = agent_storing_nothing(config);
            turns.spawn(async move { (i, streamed_text(&collect(&mut agent, "hello").await.unwrap())) });
        }
        while let Some(turn) = turns.join_next().await {
            let (i, answer) = turn.unwrap();
            assert_eq!(answer, format!("answer {i}"));
        }
        if http2 {
            assert_eq!(
                server.connections(),
                1,
                "{AGENTS} agents over HTTP/2 opened {} connections",
                server.connections()
            );
        } else {
            assert!(
                server.connections() > 1,
                "over HTTP/1.1 the turns did not overlap: {} connection",
                server.connections()
            );
        }
    }
}

/// Interleaved agents each follow their own script, picked by the `x-mock-key` header.
#[tokio::test]
async fn keyed_scripts_answer_each_agent_from_its_own_queue() {
    let style = ApiStyle::AnthropicMessages;
    let server = MockServer::start().await;
    server.set_keep_alive(true);
    let shared = config(style, &server);
    let mut agents = Vec::new();
    for key in ["a", "b"] {
        let mut config = shared.clone();
        config.provider = config.provider.with_header(panto_testkit::KEY_HEADER, key);
        for step in 0..2 {
            server.push_keyed(key, Reply::sse(text(style, &format!("{key}{step}"))));
        }
        agents.push(agent_storing_nothing(config));
    }
    // b answers before a, and each agent still gets its own replies in order.
    let (a, b) = agents.split_at_mut(1);
    assert_eq!(streamed_text(&collect(&mut b[0], "go").await.unwrap()), "b0");
    assert_eq!(streamed_text(&collect(&mut a[0], "go").await.unwrap()), "a0");
    assert_eq!(streamed_text(&collect(&mut a[0], "go").await.unwrap()), "a1");
    assert_eq!(streamed_text(&collect(&mut b[0], "go").await.unwrap()), "b1");
    assert!(server.served_time("a") > Duration::ZERO);
    // An unscripted key is a 500 naming the key (retried, then failed).
    let err = collect(&mut b[0], "again").await.unwrap_err();
    assert!(err.to_string().contains("x-mock-key \"b\""), "{err}");
}

#[tokio::test]
async fn a_model_listing_past_its_cap_is_refused_instead_of_buffered() {
    let server = MockServer::start().await;
    let client = panto_core::http_client_builder().build().unwrap();
    let provider = config(ApiStyle::OpenAiChat, &server).provider;
    server.set_models(Some(vec!["gpt-5".to_owned(), "gpt-5-mini".to_owned()]));
    let listed = panto_core::list_models(&client, &provider, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(listed, ["gpt-5", "gpt-5-mini"]);
    // About 6 MB of names: no listing is that long, and a hostile server could send more.
    server.set_models(Some((0..100_000).map(|i| format!("model-{i:0>50}")).collect()));
    let err = panto_core::list_models(&client, &provider, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Protocol { message, .. } if message.contains("model listing is longer than")),
        "{err:?}"
    );
}

/// A server that quotes the credentials back in its errors (many do: "invalid x-api-key sk-…")
/// must not get them into the errors and retry reasons panto hands its embedder, which hosts
/// log.
#[tokio::test]
async fn errors_quoting_the_key_or_a_header_value_reach_the_embedder_scrubbed() {
    let echo = format!("invalid x-api-key {KEY} (gateway token header-secret)");
    let cases: Vec<(&str, Vec<Reply>)> = vec![
        (
            "a refused request",
            vec![Reply::json(
                401,
                &json!({"type": "error", "error": {"type": "authentication_error", "message": echo}}),
            )],
        ),
        (
            "an overload, retried, then refused",
            vec![
                Reply::json(
                    529,
                    &json!({"type": "error", "error": {"type": "overloaded_error", "message": echo}}),
                ),
                Reply::raw(401, echo.clone()),
            ],
        ),
        (
            "an error in the middle of the stream",
            vec![Reply::sse(
                AnthropicScript::new().error("invalid_request_error", &echo).build(),
            )],
        ),
        (
            "a page instead of an event stream",
            vec![Reply::raw(200, format!("<p>{echo}</p>")).header("content-type", "text/html")],
        ),
    ];
    for (what, replies) in cases {
        let server = MockServer::start().await;
        for reply in replies {
            server.push(reply);
        }
        let mut agent = agent_storing_nothing(config_at(ApiStyle::AnthropicMessages, server.anthropic_base_url()));
        let mut stream = agent.run("hi".into());
        let mut texts = Vec::new();
        let error = loop {
            match stream.next().await {
                Ok(Some(panto_core::Event::ProviderRetry(retry))) => texts.push(retry.reason),
                Ok(Some(_)) => {}
                Ok(None) => panic!("{what}: the turn succeeded"),
                Err(e) => break e,
            }
        };
        texts.push(error.to_string());
        texts.push(format!("{error:?}"));
        for text in &texts {
            assert!(text.contains("[redacted]"), "{what}: {text}");
            assert!(!text.contains(KEY) && !text.contains("header-secret"), "{what}: {text}");
        }
    }
    // The model listing quotes the same bodies.
    let server = MockServer::start().await;
    server.set_models_reply(Reply::raw(401, echo.clone()));
    let provider = config_at(ApiStyle::AnthropicMessages, server.anthropic_base_url()).provider;
    let client = panto_core::http_client_builder().build().unwrap();
    let err = panto_core::list_models(&client, &provider, Duration::from_secs(10))
        .await
        .unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(matches!(err, Error::Http { status: 401, .. }), "{err:?}");
    assert!(text.contains("[redacted]") && !text.contains(KEY), "{text}");
}

/// An error response is read only so far: a proxy's huge page, or an error body that never
/// ends, must cost neither unbounded memory nor the idle timeout's wait. The start of the body
/// still reaches the embedder, with word that the rest was cut.
#[tokio::test]
async fn an_error_body_too_long_or_endless_is_cut_and_fails_the_turn_at_once() {
    let page = format!("<html>{}</html>", "padding ".repeat(200_000));
    // One that ends, and one that stalls after 200,000 bytes and never ends (the old whole-body
    // read waited out the 10 s idle timeout, then lost the body).
    for reply in [
        Reply::raw(401, page.clone()),
        Reply::raw(401, page).stall_after(200_000),
    ] {
        let server = MockServer::start().await;
        server.push(reply);
        let mut agent = agent_storing_nothing(config_at(ApiStyle::AnthropicMessages, server.anthropic_base_url()));
        let error = tokio::time::timeout(Duration::from_secs(5), async {
            let mut stream = agent.run("hi".into());
            loop {
                match stream.next().await {
                    Ok(Some(_)) => {}
                    Ok(None) => panic!("the turn succeeded"),
                    Err(e) => break e,
                }
            }
        })
        .await
        .expect("the error arrives without waiting for the body's end or the idle timeout");
        let Error::Http { status, message, .. } = &error else {
            panic!("not an HTTP error: {error:?}");
        };
        assert_eq!(*status, 401);
        assert!(message.starts_with("<html>padding padding"), "{}", &message[..100]);
        assert!(
            message.ends_with("(the body was cut at 65536 bytes)"),
            "{}",
            &message[message.len() - 100..]
        );
        assert!(message.len() < 66 * 1024, "{} bytes", message.len());
    }
}

/// A model listing refused with a long or endless body is reported as the refusal it is, read
/// as far as any error's body, not as a listing too long to read.
#[tokio::test]
async fn a_refused_model_listing_reports_its_status_however_long_its_body() {
    let page = format!("<html>{}</html>", "padding ".repeat(600_000));
    for reply in [
        Reply::raw(401, page.clone()),
        Reply::raw(401, page).stall_after(200_000),
    ] {
        let server = MockServer::start().await;
        server.set_models_reply(reply);
        let provider = config_at(ApiStyle::OpenAiChat, server.openai_base_url()).provider;
        let client = panto_core::http_client_builder().build().unwrap();
        let err = tokio::time::timeout(
            Duration::from_secs(5),
            panto_core::list_models(&client, &provider, Duration::from_secs(10)),
        )
        .await
        .expect("the error arrives without waiting for the body's end or the timeout")
        .unwrap_err();
        let Error::Http { status, message, .. } = &err else {
            panic!("not an HTTP error: {err:?}");
        };
        assert_eq!(*status, 401);
        assert!(message.ends_with("(the body was cut at 65536 bytes)"), "{err}");
    }
}
