//! `--output-format json` and `stream-json`, parsed and checked field by field.

use panto_core::Usage;
use panto_testkit::script::AnthropicScript;
use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

use super::support::{Home, Run};

/// The lines of a stream-json run, after checking its frame: a `session` line carrying the event
/// JSON's version first, a `result` line last, and every line between an event that matches
/// docs/events.schema.json.
fn stream_json_lines(out: &Run) -> Vec<Value> {
    let lines = out.json_lines();
    assert_eq!(lines[0]["type"], "session", "{}", out.stdout);
    assert_eq!(lines[0]["version"], panto_core::EVENT_SCHEMA_VERSION, "{}", lines[0]);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result", "{}", out.stdout);
    for event in &lines[1..lines.len() - 1] {
        panto_testkit::assert_event(event);
    }
    lines
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn json_prints_one_result_object() {
    let server = MockServer::start().await;
    server.push(
        AnthropicScript::new()
            .text("Forty-two.")
            .usage(usage(1_000, 200))
            .reply(),
    );
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "answer?", "--output-format", "json"], None).await;
    out.ok();
    let lines = out.json_lines();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    let r = &lines[0];
    assert_eq!(r["type"], "result");
    assert_eq!(r["is_error"], false);
    assert_eq!(r["text"], "Forty-two.");
    assert_eq!(r["stop_reason"], "end_turn");
    assert_eq!(r["model"], "claude-sonnet-4-5");
    assert_eq!(r["usage"]["input_tokens"], 1_000);
    assert_eq!(r["usage"]["output_tokens"], 200);
    // claude-sonnet-4-5 costs $3 / $15 per million tokens: 1,000 in is $0.003 and 200 out is
    // $0.003, so $0.006, which is 600,000 micro-cents.
    assert_eq!(r["cost_micro_cents"], 600_000);
    assert!((r["cost_usd"].as_f64().unwrap() - 0.006).abs() < 1e-12, "{r}");
    let id = r["session_id"].as_str().unwrap();
    let file = home.sessions_dir().join(format!("{id}.jsonl"));
    assert!(file.exists(), "the result names the session that was written: {file:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_prints_every_event_between_session_and_result() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text_and_tool_calls(
        "Reading.",
        &[("call_1", "read", r#"{"path":"a.txt"}"#)],
    )));
    server.push(Reply::sse(script::openai_text("It holds apples.")));
    let mut home = Home::new();
    home.openai(&server);
    std::fs::write(home.work().join("a.txt"), "apples\n").unwrap();
    let out = home
        .run(&["-p", "read a.txt", "--output-format", "stream-json"], None)
        .await;
    out.ok();
    let lines = stream_json_lines(&out);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let session_id = lines[0]["session_id"].as_str().unwrap();
    assert_eq!(lines.last().unwrap()["session_id"], session_id);
    assert_eq!(lines[0]["resumed"], false);
    assert_eq!(lines[0]["api_style"], "openai-chat");

    // Two assistant messages, each completed (and persisted) before the next step.
    assert_eq!(types.iter().filter(|t| **t == "message_complete").count(), 2);
    assert_eq!(types.iter().filter(|t| **t == "turn_complete").count(), 1);
    let tool_start = lines.iter().find(|l| l["type"] == "tool_start").expect("tool_start");
    assert_eq!(tool_start["name"], "read");
    assert_eq!(tool_start["input"]["path"], "a.txt");
    let tool_done = lines
        .iter()
        .find(|l| l["type"] == "tool_complete")
        .expect("tool_complete");
    assert_eq!(tool_done["is_error"], false);
    assert!(tool_done["content"][0]["text"].as_str().unwrap().contains("apples"));
    let text: String = lines
        .iter()
        .filter(|l| l["type"] == "text_delta")
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Reading.It holds apples.");
    // The tool call streams as a block with its id and name, then fragments of its arguments.
    let tool_block = lines
        .iter()
        .find(|l| l["type"] == "block_start" && l["kind"] == "tool_use")
        .expect("a tool_use block_start");
    assert_eq!(tool_block["tool"], serde_json::json!({"id": "call_1", "name": "read"}));
    let text_block = lines
        .iter()
        .find(|l| l["type"] == "block_start" && l["kind"] == "text")
        .expect("a text block_start");
    assert_eq!(text_block["tool"], Value::Null);
    let arguments: String = lines
        .iter()
        .filter(|l| l["type"] == "tool_input_delta" && l["index"] == tool_block["index"])
        .map(|l| l["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(arguments, r#"{"path":"a.txt"}"#);
    let order = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(order("block_start") < order("message_complete"));
    assert!(order("message_complete") < order("tool_start"));
    assert!(order("tool_complete") < order("turn_complete"));
    let result = lines.last().unwrap();
    assert_eq!(result["text"], "It holds apples.");
    assert_eq!(result["steps"], 2);
    assert_eq!(result["is_error"], false);

    // What stream-json reported as complete is in the session file.
    let log = std::fs::read_to_string(home.sessions_dir().join(format!("{session_id}.jsonl"))).unwrap();
    assert!(log.contains("It holds apples."));
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_ends_with_an_error_result_on_failure() {
    let server = MockServer::start().await;
    server.push(Reply::json(
        401,
        &serde_json::json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "hi", "--output-format", "stream-json"], None).await;
    assert_eq!(out.code, Some(1));
    let lines = stream_json_lines(&out);
    let last: &Value = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["is_error"], true);
    assert!(last["error"].as_str().unwrap().contains("invalid x-api-key"), "{last}");
    assert!(out.stderr.contains("invalid x-api-key"));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_in_print_mode_exits_130_and_keeps_what_streamed() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let server = MockServer::start().await;
    let stream = script::anthropic_text("EARLY-WORDS arrive and then the stream stalls");
    let text = String::from_utf8(stream.clone()).unwrap();
    let at = text.find("EARLY-WORDS").unwrap();
    let cut = at + text[at..].find("\n\n").unwrap() + 2;
    server.push(Reply::sse(stream).stall_after(cut));
    let mut home = Home::new();
    home.anthropic(&server);
    let mut child = home.spawn(&["-p", "go", "--output-format", "stream-json"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let wait_for_words = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let done = line.contains("EARLY-WORDS");
            seen.push(line);
            if done {
                return;
            }
        }
        panic!("the stream ended before the words arrived");
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait_for_words)
        .await
        .expect("the first words stream");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push(line);
    }
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(130));
    for line in &seen[1..seen.len() - 1] {
        panto_testkit::assert_event(&serde_json::from_str(line).unwrap());
    }
    let result: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], true);
    assert!(result["error"].as_str().unwrap().contains("interrupted"), "{result}");
    let log = std::fs::read_to_string(&home.session_files()[0]).unwrap();
    assert!(log.contains("EARLY-WORDS"), "the streamed words are persisted: {log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_first_request_reports_nothing_persisted() {
    let server = MockServer::start().await;
    let refusal = serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no"}});
    server.push(Reply::json(400, &refusal));
    server.push(Reply::json(400, &refusal));
    let mut home = Home::new();
    home.anthropic(&server);
    for format in ["json", "stream-json"] {
        let out = home.run(&["-p", "hi", "--output-format", format], None).await;
        assert_eq!(out.code, Some(1), "{out:?}");
        let result = out.json_lines().pop().unwrap();
        assert_eq!(result["type"], "result");
        assert_eq!(result["persisted"], false, "{result}");
        // The id it reports is not one that can be resumed: nothing was written.
        let id = result["session_id"].as_str().unwrap().to_owned();
        let resume = home.run(&["-r", &id, "-p", "again"], None).await;
        assert_eq!(resume.code, Some(2), "{resume:?}");
    }
    assert!(home.session_files().is_empty(), "{:?}", home.session_files());

    // And when the answer arrived, the session is there.
    server.push(Reply::sse(script::anthropic_text("stored")));
    let out = home.run(&["-p", "hi", "--output-format", "json"], None).await;
    let result = out.json_lines().pop().unwrap();
    assert_eq!(result["persisted"], true, "{result}");
    let id = result["session_id"].as_str().unwrap();
    assert!(home.sessions_dir().join(format!("{id}.jsonl")).is_file());
}
