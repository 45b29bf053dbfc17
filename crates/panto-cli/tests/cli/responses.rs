//! The OpenAI Responses API through the CLI: a provider with `api_style = "openai-responses"`,
//! chosen by alias with `-m`; a tool turn with reasoning, continued in a second process, sends
//! the encrypted reasoning back; a session moved to another API style keeps its conversation.

use panto_testkit::script::ResponsesScript;
use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

use super::support::{body, Home, KEY};

const ENCRYPTED: &str = "gAAAAABowQ3kR7vN2pXq8LmZt5Yc1Hs9Wd4Fb6Jk0Ue3Ri7To2Pa5Sg8Dh1Fj4Kl6Zx9Cv3==";

fn config(server: &MockServer) -> String {
    format!(
        "[providers.codex]\napi_style = \"openai-responses\"\nbase_url = \"{}\"\napi_key_env = \"OPENAI_API_KEY\"\n\n\
         [models.think]\nprovider = \"codex\"\nmodel = \"gpt-5\"\nreasoning = \"medium\"\n",
        server.openai_base_url()
    )
}

/// The `input` items of a request, as `(type, call_id or role)`.
fn items(request: &Value) -> Vec<(String, String)> {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let kind = item["type"].as_str().unwrap_or("message").to_owned();
            let what = item["call_id"]
                .as_str()
                .or(item["role"].as_str())
                .or(item["id"].as_str());
            (kind, what.unwrap_or("").to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_turn_with_reasoning_continued_in_a_second_process_sends_the_reasoning_back() {
    let server = MockServer::start().await;
    // Process 1: reasoning, then two parallel reads; then the answer.
    server.push(Reply::sse(
        ResponsesScript::new()
            .reasoning(&["**Reading the notes**"], ENCRYPTED)
            .tool_call("call_Ab12", "read", r#"{"path":"notes.txt"}"#)
            .tool_call("call_Cd34", "read", r#"{"path":"todo.txt"}"#)
            .build(),
    ));
    server.push(Reply::sse(
        ResponsesScript::new()
            .reasoning(&["**Answering**"], "gAAAAB-second")
            .text("Mango, then buy milk.")
            .build(),
    ));
    // Process 2 (-c): the answer to a follow-up.
    server.push(Reply::sse(script::responses_text("Still mango.")));
    let mut home = Home::new();
    home.write_config(&config(&server));
    home.set("OPENAI_API_KEY", KEY);
    std::fs::write(home.work().join("notes.txt"), "the secret word is mango\n").unwrap();
    std::fs::write(home.work().join("todo.txt"), "buy milk\n").unwrap();

    let out = home.run(&["-m", "think", "-p", "what do my files say?"], None).await;
    assert_eq!(out.ok(), "Mango, then buy milk.\n", "only the final answer is printed");
    assert!(
        !out.stdout.contains("Reading the notes"),
        "thinking is not part of the answer"
    );

    let out = home.run(&["-c", "-p", "and again?"], None).await;
    assert_eq!(out.ok(), "Still mango.\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(
            request.validation, None,
            "the mock validates every request as the API does"
        );
    }
    let first = body(&requests[0]);
    assert_eq!(first["store"], false);
    assert_eq!(first["reasoning"]["effort"], "medium");
    assert_eq!(first["include"], serde_json::json!(["reasoning.encrypted_content"]));

    // The second process resumed with the alias's model (the session's provider identity) and sent
    // the whole history: both reasoning items unchanged, the calls and their outputs by call_id.
    let third = body(&requests[2]);
    assert_eq!(third["model"], "gpt-5");
    assert_eq!(
        third["reasoning"]["effort"], "medium",
        "-c pre-selects the session's model"
    );
    let kinds = items(&third);
    let expected: Vec<(String, String)> = [
        ("message", "user"),
        ("reasoning", "rs_mock0000"),
        ("function_call", "call_Ab12"),
        ("function_call", "call_Cd34"),
        ("function_call_output", "call_Ab12"),
        ("function_call_output", "call_Cd34"),
        ("reasoning", "rs_mock0000"),
        ("message", "assistant"),
        ("message", "user"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(kinds, expected);
    let input = third["input"].as_array().unwrap();
    assert_eq!(input[1]["encrypted_content"], ENCRYPTED);
    assert_eq!(input[1]["summary"][0]["text"], "**Reading the notes**");
    assert_eq!(input[6]["encrypted_content"], "gAAAAB-second");
    assert!(input[4]["output"]
        .as_str()
        .unwrap()
        .contains("the secret word is mango"));
    assert!(input[5]["output"].as_str().unwrap().contains("buy milk"));

    // The session file records the style and holds the reasoning, never the key.
    let files = home.session_files();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains(r#""api_style":"openai-responses""#));
    assert!(text.contains(ENCRYPTED));
    assert!(!text.contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_responses_session_resumed_on_chat_completions_keeps_the_conversation_and_says_what_it_drops() {
    let server = MockServer::start().await;
    server.push(Reply::sse(
        ResponsesScript::new()
            .reasoning(&["**Thinking**"], ENCRYPTED)
            .text("Hello from Responses.")
            .build(),
    ));
    server.push(Reply::sse(script::openai_text("Hello from Chat.")));
    let mut home = Home::new();
    home.write_config(&config(&server));
    home.set("OPENAI_API_KEY", KEY);
    home.set("OPENAI_BASE_URL", &server.openai_base_url());
    home.run(&["-m", "think", "-p", "hi"], None).await.ok();

    // The built-in `openai` provider speaks Chat Completions.
    let mut text = config(&server);
    text.push_str("\n[models.chat]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n");
    home.write_config(&text);
    let out = home.run(&["-c", "-m", "chat", "-p", "again"], None).await;
    assert_eq!(out.ok(), "Hello from Chat.\n");
    assert!(
        out.stderr
            .contains("1 block of another API's encrypted reasoning is not sent to openai-chat"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests[1].path, "/v1/chat/completions");
    assert_eq!(requests[1].validation, None);
    let chat = body(&requests[1]);
    let history = super::support::all_text(&chat["messages"]);
    assert!(
        history.contains("hi") && history.contains("Hello from Responses."),
        "{history}"
    );
    assert!(
        !chat.to_string().contains(ENCRYPTED),
        "the other API's reasoning is not sent"
    );
}
