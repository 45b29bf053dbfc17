//! Print mode, text turns, both API styles, zero config.

use panto_testkit::{script, MockServer, Reply};

use super::support::{all_text, body, Home, KEY};

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_zero_config_prints_the_answer() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Hello from the mock.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("AGENTS.md"), "Always answer in French.").unwrap();
    let out = home.run(&["-p", "Say hello"], None).await;
    assert_eq!(out.ok(), "Hello from the mock.\n");
    assert_eq!(out.stderr, "", "nothing decorative on a pipe");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    let b = body(req);
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert_eq!(b["messages"][0]["role"], "user");
    assert!(all_text(&b["messages"][0]["content"]).contains("Say hello"));
    let system = all_text(&b["system"]);
    assert!(
        system.contains("Always answer in French."),
        "AGENTS.md is in the system prompt: {system}"
    );
    assert!(
        system.contains(&home.work().display().to_string()),
        "the default prompt names the working directory: {system}"
    );
    // Every built-in tool is offered by default.
    let tools: Vec<&str> = b["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["read", "write", "edit", "bash", "grep", "find", "ls", "web_fetch"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_zero_config_prints_the_answer() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("Bonjour.")));
    let mut home = Home::new();
    home.openai(&server);
    let out = home.run(&["-p", "greet me", "--tools", "read"], None).await;
    assert_eq!(out.ok(), "Bonjour.\n");
    let requests = server.requests();
    let req = &requests[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    let b = body(req);
    assert_eq!(b["model"], "gpt-4o");
    let tools: Vec<&str> = b["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_from_stdin_and_model_flag() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("ok")));
    let mut home = Home::new();
    home.openai(&server);
    let out = home
        .run(&["-p", "-", "-m", "gpt-4o-mini"], Some("a prompt\nover two lines\n"))
        .await;
    assert_eq!(out.ok(), "ok\n");
    let b = body(&server.requests()[0]);
    assert_eq!(
        b["model"], "gpt-4o-mini",
        "-m takes a wire name for the provider in use"
    );
    let last = b["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(all_text(&last["content"]).contains("a prompt\nover two lines"));
}

/// `-m` with a name the provider does not list is refused before any paid request, as `/model`
/// refuses it; a listed one runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_misspelt_model_flag_is_refused_before_the_first_request() {
    let server = MockServer::start().await;
    server.set_models(Some(vec!["claude-sonnet-4-5".into(), "claude-tuned-1".into()]));
    server.push(Reply::sse(script::anthropic_text("tuned")));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "hi", "-m", "claude-sonet-4-5"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("unknown model claude-sonet-4-5: anthropic lists 2 models and not this one; did you mean claude-sonnet-4-5?"),
        "{}",
        out.stderr
    );
    assert!(
        server.requests().iter().all(|r| r.method == "GET"),
        "a request was paid for"
    );
    let out = home.run(&["-p", "hi", "-m", "claude-tuned-1"], None).await;
    assert_eq!(out.ok(), "tuned\n");
}

/// A key the provider refuses (HTTP 401) is named by where it came from, so the user knows which
/// to fix; the key itself never appears.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_names_the_variable_it_came_from() {
    let server = MockServer::start().await;
    server.push(Reply::json(
        401,
        &serde_json::json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("HTTP 401") && out.stderr.contains("the key sent to anthropic was ANTHROPIC_API_KEY's"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(KEY), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_error_is_one_line_and_exit_code_1() {
    let server = MockServer::start().await;
    server.push(Reply::json(
        400,
        &serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}),
    ));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    let err = out.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("400") && err.contains("max_tokens: too large"), "{err}");
    // A first request that fails leaves no session behind.
    assert!(home.session_files().is_empty(), "{:?}", home.session_files());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_session_persists_nothing() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("gone")));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "hi", "--no-session"], None).await;
    assert_eq!(out.ok(), "gone\n");
    assert!(home.session_files().is_empty(), "{:?}", home.session_files());
}
