//! Print mode without a terminal: `--rewind N [--rewind-files]` (the REPL's `/rewind`), and
//! steer and follow-up messages read from stdin with `--input-format stream-json`.

use std::process::Stdio;

use panto_testkit::{script, MockServer, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::support::{body, messages, sent, Home, ORIGINAL};

fn lines_of(out: &super::support::Run, kind: &str) -> Vec<Value> {
    out.json_lines().into_iter().filter(|l| l["type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_in_print_mode_goes_back_restores_files_and_keeps_the_abandoned_branch() {
    let server = MockServer::start().await;
    let edit = json!({"path": "a.txt", "old_string": "one", "new_string": "two"}).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "edit", &edit)])));
    server.push(Reply::sse(script::anthropic_text("done1")));
    server.push(Reply::sse(script::anthropic_text("done2")));
    server.push(Reply::sse(script::anthropic_text("after")));
    server.push(Reply::sse(script::anthropic_text("from the start")));
    let mut home = Home::new();
    home.anthropic(&server);
    let a = home.work().join("a.txt");
    std::fs::write(&a, ORIGINAL).unwrap();
    let out = home
        .run(
            &["-p", "change things", "--approve", "auto", "--output-format", "json"],
            None,
        )
        .await;
    out.ok();
    let id = out.json_lines()[0]["session_id"].as_str().unwrap().to_owned();
    home.run(&["-r", &id, "-p", "more"], None).await.ok();
    assert_ne!(std::fs::read(&a).unwrap(), ORIGINAL.as_bytes());

    // A number past the prompts there are is a usage error, and nothing is sent or written.
    let log_before = std::fs::read(home.sessions_dir().join(format!("{id}.jsonl"))).unwrap();
    let out = home.run(&["-r", &id, "--rewind", "3", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--rewind 3: a rewind takes a number from 1 to 2"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 3, "nothing sent");
    assert_eq!(
        std::fs::read(home.sessions_dir().join(format!("{id}.jsonl"))).unwrap(),
        log_before
    );

    // Two prompts back, with files: to before "change things".
    let out = home
        .run(
            &[
                "-r",
                &id,
                "--rewind",
                "2",
                "--rewind-files",
                "-p",
                "again",
                "--output-format",
                "stream-json",
            ],
            None,
        )
        .await;
    out.ok();
    assert_eq!(std::fs::read(&a).unwrap(), ORIGINAL.as_bytes(), "byte for byte");
    assert_eq!(sent(&server, 3), ["again"], "the rewound branch alone");
    let rewind = &lines_of(&out, "rewind")[0];
    assert_eq!(rewind["prompts_back"], 2);
    assert_eq!(rewind["prompt"], "change things");
    assert_eq!(rewind["files"][0]["outcome"], "restored");
    assert!(rewind["files"][0]["path"].as_str().unwrap().ends_with("/a.txt"));
    assert_eq!(out.json_lines()[1]["type"], "rewind", "right after the session line");
    assert!(
        out.stderr.contains("rewound to before “change things”"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("restored "), "{}", out.stderr);
    let log = std::fs::read_to_string(home.sessions_dir().join(format!("{id}.jsonl"))).unwrap();
    assert!(log.contains("done2") && log.contains("\"type\":\"branch\""), "{log}");

    // A new process resumes the rewound branch.
    let out = home.run(&["-r", &id, "--rewind", "1", "-p", "x"], None).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(sent(&server, 4), ["x"], "back to before 'again': the empty start");
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_files_in_print_mode_leaves_a_file_changed_outside_panto_and_says_so() {
    let server = MockServer::start().await;
    let write = json!({"path": "b.txt", "content": "by panto"}).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01", "write", &write,
    )])));
    server.push(Reply::sse(script::anthropic_text("written")));
    server.push(Reply::sse(script::anthropic_text("again")));
    let mut home = Home::new();
    home.anthropic(&server);
    let b = home.work().join("b.txt");
    std::fs::write(&b, "before").unwrap();
    let out = home
        .run(&["-p", "write b", "--approve", "auto", "--output-format", "json"], None)
        .await;
    out.ok();
    let id = out.json_lines()[0]["session_id"].as_str().unwrap().to_owned();
    std::fs::write(&b, "the user's own edit").unwrap();
    let out = home
        .run(
            &[
                "-c",
                "--rewind",
                "1",
                "--rewind-files",
                "-p",
                "retry",
                "--output-format",
                "stream-json",
            ],
            None,
        )
        .await;
    out.ok();
    assert_eq!(
        std::fs::read_to_string(&b).unwrap(),
        "the user's own edit",
        "not overwritten"
    );
    assert!(
        out.stderr
            .contains("b.txt alone: it changed outside panto since panto last wrote it (not overwritten)"),
        "{}",
        out.stderr
    );
    assert_eq!(lines_of(&out, "rewind")[0]["files"][0]["outcome"], "changed_outside");
    assert_eq!(lines_of(&out, "session")[0]["session_id"], id.as_str());

    // --rewind needs a session to rewind.
    let out = home.run(&["--rewind", "1", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--rewind N needs the session to rewind"),
        "{}",
        out.stderr
    );
    let out = home.run(&["-p", "x", "--rewind-files"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn steer_and_follow_up_lines_on_stdin_reach_the_model_in_order() {
    let server = MockServer::start().await;
    let read = json!({"path": "notes.txt"}).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "read", &read)])));
    server.push(Reply::sse(script::anthropic_text("steered answer")));
    server.push(Reply::sse(script::anthropic_text("followed")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("notes.txt"), "the notes").unwrap();
    let stdin = concat!(
        r#"{"type":"steer","text":"look at the notes twice"}"#,
        "\n\n",
        r#"{"type":"follow_up","text":"and now summarise"}"#,
        "\n"
    );
    let out = home
        .run(
            &[
                "-p",
                "read the notes",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
            ],
            Some(stdin),
        )
        .await;
    out.ok();
    assert_eq!(server.requests().len(), 3);
    // The steer joins after the tool result, in the same user message, before the next request.
    let second = body(&server.requests()[1]);
    let last = second["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    let blocks = last["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "tool_result", "{last}");
    assert_eq!(blocks.last().unwrap()["text"], "look at the notes twice", "{last}");
    assert_eq!(
        messages(&second).len(),
        3,
        "the steer joined the results' message: {second}"
    );
    // The follow-up starts a turn of its own after the first one ends.
    assert_eq!(sent(&server, 2).last().map(String::as_str), Some("and now summarise"));
    let kinds: Vec<String> = out
        .json_lines()
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .filter(|k| ["steer", "follow_up_start", "turn_complete", "result"].contains(&k.as_str()))
        .collect();
    assert_eq!(
        kinds,
        ["steer", "turn_complete", "follow_up_start", "turn_complete", "result"]
    );
    let result = out.json_lines().pop().unwrap();
    assert_eq!(result["text"], "followed");
    assert_eq!(result["steps"], 3, "the steps of both turns");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_sent_after_the_turn_ended_runs_before_the_end_of_input() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first answer")));
    server.push(Reply::sse(script::anthropic_text("second answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    let mut child = tokio::process::Command::from(home.command(&[
        "-p",
        "hello",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ]))
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // The turn ends; panto waits for more input rather than exit.
    while let Some(line) = stdout.next_line().await.unwrap() {
        let done = line.contains("\"turn_complete\"");
        seen.push(line);
        if done {
            break;
        }
    }
    stdin
        .write_all(b"{\"type\":\"follow_up\",\"text\":\"one more\"}\n")
        .await
        .unwrap();
    drop(stdin);
    while let Some(line) = stdout.next_line().await.unwrap() {
        seen.push(line);
    }
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "{seen:?}");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(sent(&server, 1), ["hello", "first answer", "one more"]);
    let result: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(result["text"], "second answer");
    assert!(seen.iter().any(|l| l.contains("\"follow_up_start\"")), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_stdin_line_is_named_and_the_turn_goes_on() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("answered anyway")));
    let mut home = Home::new();
    home.anthropic(&server);
    let stdin = "{\"type\":\"steer\"}\nnot json\n{\"type\":\"stear\",\"text\":\"x\"}\n";
    let out = home
        .run(
            &[
                "-p",
                "hello",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
            ],
            Some(stdin),
        )
        .await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let errors = lines_of(&out, "input_error");
    assert_eq!(errors.len(), 3, "{}", out.stdout);
    assert_eq!(
        (errors[0]["line"].as_u64(), errors[0]["error"].as_str()),
        (Some(1), Some("no \"text\""))
    );
    assert_eq!(errors[1]["line"], 2);
    assert!(
        errors[1]["error"].as_str().unwrap().starts_with("not JSON"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2]["error"].as_str().unwrap().contains("unknown type \"stear\""),
        "{}",
        errors[2]
    );
    assert!(out.stderr.contains("stdin line 2: not JSON"), "{}", out.stderr);
    // The turn ran to its end and answered; the result says the input was not all taken.
    let result = out.json_lines().pop().unwrap();
    assert_eq!(result["text"], "answered anyway");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("stdin line 1: no \"text\""),
        "{result}"
    );
    assert_eq!(server.requests().len(), 1);

    let out = home.run(&["-p", "x", "--input-format", "stream-json"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("needs --output-format stream-json"),
        "{}",
        out.stderr
    );
}
