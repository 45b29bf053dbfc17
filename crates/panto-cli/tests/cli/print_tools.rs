//! Print mode, tool turns, both API styles: the built-in tools run (or are refused) and their
//! results reach the model in the next request.

use panto_testkit::{script, MockServer, Reply};

use super::support::{body, messages, Home};

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_read_tool_turn() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text_and_tool_uses(
        "Let me look.",
        &[("toolu_01", "read", r#"{"path":"notes.txt"}"#)],
    )));
    server.push(Reply::sse(script::anthropic_text("It says mango.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("notes.txt"), "the secret word is mango\n").unwrap();
    let out = home.run(&["-p", "what is in notes.txt?"], None).await;
    assert_eq!(out.ok(), "It says mango.\n", "only the final answer is printed");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = body(&requests[1]);
    let msgs = second["messages"].as_array().unwrap();
    let result = msgs.last().unwrap();
    assert_eq!(result["role"], "user");
    let block = &result["content"][0];
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["tool_use_id"], "toolu_01");
    let text = super::support::all_text(&block["content"]);
    assert!(text.contains("     1\tthe secret word is mango"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_bash_is_refused_in_read_only_print_mode() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_tool_calls(&[(
        "call_1",
        "bash",
        r#"{"command":"touch made.txt"}"#,
    )])));
    server.push(Reply::sse(script::openai_text("I could not run it.")));
    let mut home = Home::new();
    home.openai(&server);
    let out = home.run(&["-p", "make a file"], None).await;
    assert_eq!(out.ok(), "I could not run it.\n");
    assert!(!home.work().join("made.txt").exists(), "read-only must not run bash");
    let second = body(&server.requests()[1]);
    let (role, text) = messages(&second).last().unwrap().clone();
    assert_eq!(role, "tool");
    assert!(text.contains("read-only") && text.contains("--approve auto"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_bash_runs_with_approve_auto() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "bash",
        r#"{"command":"echo made > made.txt && cat made.txt && pwd"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "make a file", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Done.\n");
    assert_eq!(std::fs::read_to_string(home.work().join("made.txt")).unwrap(), "made\n");
    let second = body(&server.requests()[1]);
    let text = super::support::all_text(second["messages"].as_array().unwrap().last().unwrap());
    assert!(text.contains("made\n"), "{text}");
    assert!(
        text.contains(&home.work().display().to_string()),
        "bash runs in the working directory: {text}"
    );
    assert!(text.contains("[exit code 0]"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_parallel_write_and_edit_with_approve_auto() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_tool_calls(&[
        ("call_w", "write", r#"{"path":"out/new.txt","content":"fresh\n"}"#),
        (
            "call_e",
            "edit",
            r#"{"path":"old.txt","old_string":"blue","new_string":"green"}"#,
        ),
    ])));
    server.push(Reply::sse(script::openai_text("Both done.")));
    let mut home = Home::new();
    home.openai(&server);
    std::fs::write(home.work().join("old.txt"), "the sky is blue\n").unwrap();
    let out = home.run(&["-p", "edit things", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Both done.\n");
    assert_eq!(
        std::fs::read_to_string(home.work().join("out/new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.work().join("old.txt")).unwrap(),
        "the sky is green\n"
    );
    let second = body(&server.requests()[1]);
    let tool_messages: Vec<(String, String)> = messages(&second)
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .collect();
    assert_eq!(tool_messages.len(), 2);
    assert!(tool_messages[0].1.contains("created out/new.txt"), "{tool_messages:?}");
    assert!(tool_messages[1].1.contains("edited old.txt"), "{tool_messages:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_failure_reaches_the_model_as_an_error() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "edit",
        r#"{"path":"f.txt","old_string":"absent","new_string":"x"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("Sorry.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("f.txt"), "present\n").unwrap();
    home.run(&["-p", "edit", "--approve", "auto"], None).await.ok();
    let second = body(&server.requests()[1]);
    let block = &second["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(block["is_error"], true);
    assert!(
        super::support::all_text(&block["content"]).contains("not found"),
        "{block}"
    );
}
