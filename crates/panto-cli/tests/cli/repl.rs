//! The REPL driven through a pseudo-terminal: a turn, slash commands, Ctrl-C mid-stream, the
//! approval question, and history across runs.
//!
//! rexpect is blocking, so each conversation runs on a blocking thread while the mock server
//! keeps serving on the test's runtime.

use std::process::Command;

use panto_testkit::{script, MockServer, Reply};
use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};

use super::support::{all_text, body, panto_bin, Home, KEY};

/// Starts the REPL in `home` on a pseudo-terminal, without colour so output can be matched.
pub fn spawn_repl(home: &Home, args: &[&str]) -> PtySession {
    let mut cmd = Command::new(panto_bin());
    cmd.args(args).env_clear().envs(home.env()).current_dir(home.work());
    cmd.env("TERM", "xterm").env("NO_COLOR", "1");
    spawn_with_options(
        cmd,
        Options::new().timeout_ms(Some(20_000)).strip_ansi_escape_codes(true),
    )
    .expect("panto starts on a pty")
}

/// Runs `f` on a blocking thread and waits for it.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("the pty conversation")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_and_slash_commands() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Hi from the REPL.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let h = std::sync::Arc::new(home);
    let home2 = h.clone();
    blocking(move || {
        let mut p = spawn_repl(&home2, &[]);
        p.exp_string("new session").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("hello there").unwrap();
        p.exp_string("Hi from the REPL.").unwrap();
        // The cost line after the turn (rexpect reads bytes as Latin-1, so match ASCII only).
        p.exp_regex(r"\d+ in .* \d+ out .*\$0\.\d{4}").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/modle").unwrap();
        p.exp_string("unknown command /modle; did you mean /model").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/model").unwrap();
        p.exp_string("model: claude-sonnet-4-5 (via anthropic)").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/cost").unwrap();
        p.exp_string("this run, 1 turn").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/quit").unwrap();
        p.exp_eof().unwrap();
    })
    .await;
    let req = body(&server.requests()[0]);
    assert!(all_text(&req["messages"]).contains("hello there"));
    let files = h.session_files();
    assert_eq!(files.len(), 1);
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(log.contains("Hi from the REPL.") && !log.contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_mid_stream_keeps_the_partial_text_and_returns_to_the_prompt() {
    let server = MockServer::start().await;
    // The stream sends two words and then stalls, as a slow model would.
    let stream = script::anthropic_text("PARTIAL-ONE PARTIAL-TWO and the rest never arrives");
    let text = String::from_utf8(stream.clone()).unwrap();
    let at = text.find("PARTIAL-TWO").unwrap();
    let cut = at + text[at..].find("\n\n").unwrap() + 2;
    server.push(Reply::sse(stream).stall_after(cut));
    server.push(Reply::sse(script::anthropic_text("recovered")));
    let mut home = Home::new();
    home.anthropic(&server);
    let h = std::sync::Arc::new(home);
    let home2 = h.clone();
    blocking(move || {
        let mut p = spawn_repl(&home2, &[]);
        p.exp_string("> ").unwrap();
        p.send_line("tell me a story").unwrap();
        p.exp_string("PARTIAL-TWO").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        p.send_control('c').unwrap();
        p.exp_string("cancelled").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("go on").unwrap();
        p.exp_string("recovered").unwrap();
        p.exp_string("> ").unwrap();
        p.send_control('d').unwrap();
        p.exp_eof().unwrap();
    })
    .await;
    // The second request carries the salvaged partial answer, then the new prompt.
    let req = body(&server.requests()[1]);
    let msgs = req["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let partial = all_text(&msgs[1]["content"]);
    assert!(partial.contains("PARTIAL-ONE PARTIAL-TWO"), "{partial}");
    assert!(!partial.contains("never arrives"), "{partial}");
    // And the session on disk holds it too.
    let log = std::fs::read_to_string(&h.session_files()[0]).unwrap();
    assert!(log.contains("PARTIAL-ONE PARTIAL-TWO"));
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_question_runs_the_tool_on_yes() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "bash",
        r#"{"command":"echo approved > ok.txt"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("File written.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let h = std::sync::Arc::new(home);
    let home2 = h.clone();
    blocking(move || {
        let mut p = spawn_repl(&home2, &[]);
        p.exp_string("> ").unwrap();
        p.send_line("write ok.txt").unwrap();
        p.exp_string("allow bash: echo approved > ok.txt").unwrap();
        p.exp_string("[y]es / [n]o / [a]lways:").unwrap();
        p.send_line("y").unwrap();
        p.exp_string("bash (1 line, 13 bytes)").unwrap();
        p.exp_string("[exit code 0]").unwrap();
        p.exp_string("File written.").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/quit").unwrap();
        p.exp_eof().unwrap();
    })
    .await;
    assert_eq!(std::fs::read_to_string(h.work().join("ok.txt")).unwrap(), "approved\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn history_persists_across_runs_and_continue_resumes() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("noted")));
    server.push(Reply::sse(script::anthropic_text("noted again")));
    let mut home = Home::new();
    home.anthropic(&server);
    let h = std::sync::Arc::new(home);
    let home2 = h.clone();
    blocking(move || {
        let mut p = spawn_repl(&home2, &[]);
        p.exp_string("> ").unwrap();
        p.send_line("remember this line").unwrap();
        p.exp_string("noted").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/quit").unwrap();
        p.exp_eof().unwrap();
    })
    .await;
    let history = std::fs::read_to_string(h.history_file()).expect("a history file");
    assert!(history.contains("remember this line"), "{history}");
    assert!(!history.contains(KEY));

    let home3 = h.clone();
    blocking(move || {
        let mut p = spawn_repl(&home3, &["-c"]);
        // The recap of the resumed session.
        p.exp_string("resumed session").unwrap();
        p.exp_string("you: remember this line").unwrap();
        p.exp_string("> ").unwrap();
        // Up twice: past "/quit" to the prompt typed in the first run.
        p.send("\x1b[A").unwrap();
        p.flush().unwrap();
        p.exp_string("/quit").unwrap();
        p.send("\x1b[A").unwrap();
        p.flush().unwrap();
        p.exp_string("remember this line").unwrap();
        p.send("\r").unwrap();
        p.flush().unwrap();
        p.exp_string("noted again").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/quit").unwrap();
        p.exp_eof().unwrap();
    })
    .await;
    let req = body(&server.requests()[1]);
    let msgs = req["messages"].as_array().unwrap();
    assert_eq!(
        msgs.len(),
        3,
        "the continued session's history plus the recalled line: {msgs:?}"
    );
    assert!(all_text(&msgs[2]["content"]).contains("remember this line"));
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_without_an_id_offers_a_numbered_picker() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("answer one")));
    server.push(Reply::sse(script::openai_text("answer two")));
    server.push(Reply::sse(script::openai_text("picked up")));
    let mut home = Home::new();
    home.openai(&server);
    home.run(&["-p", "topic one"], None).await.ok();
    home.run(&["-p", "topic two"], None).await.ok();
    let h = std::sync::Arc::new(home);
    let home2 = h.clone();
    blocking(move || {
        let mut p = spawn_repl(&home2, &["-r"]);
        // Newest first: "topic two" is 1, "topic one" is 2.
        p.exp_string("1. ").unwrap();
        p.exp_string("topic two").unwrap();
        p.exp_string("2. ").unwrap();
        p.exp_string("topic one").unwrap();
        p.exp_string("resume which session?").unwrap();
        p.send_line("9").unwrap();
        p.exp_string("please type a number from 1 to 2").unwrap();
        p.send_line("2").unwrap();
        p.exp_string("resumed session").unwrap();
        p.exp_string("you: topic one").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("and more").unwrap();
        p.exp_string("picked up").unwrap();
        p.exp_string("> ").unwrap();
        p.send_line("/quit").unwrap();
        p.exp_eof().unwrap();
    })
    .await;
    let req = body(&server.requests()[2]);
    let history = all_text(&req["messages"]);
    assert!(
        history.contains("topic one") && history.contains("and more") && !history.contains("topic two"),
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn piped_repl_keeps_stdout_for_content_and_never_takes_approvals_from_the_pipe() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text_and_tool_uses(
        "Creating it.",
        &[("toolu_01", "bash", r#"{"command":"echo piped > p.txt"}"#)],
    )));
    server.push(Reply::sse(script::anthropic_text("Not created.")));
    server.push(Reply::sse(script::anthropic_text("You said y.")));
    let mut home = Home::new();
    home.anthropic(&server);
    // The "y" is the next prompt, not an answer: piped input cannot approve a command.
    let out = home.run(&[], Some("make p.txt\ny\n/quit\n")).await;
    assert_eq!(
        out.ok(),
        "Creating it.\nNot created.\nYou said y.\n",
        "stdout holds only the model's text"
    );
    assert!(
        out.stderr.contains("stdin is not a terminal") && out.stderr.contains("--approve auto"),
        "the refusal is announced: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("bash {\"command\":\"echo piped > p.txt\"}"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("allow bash"),
        "no question is asked: {}",
        out.stderr
    );
    assert!(!out.stderr.contains('\x1b'), "no colour on a pipe: {:?}", out.stderr);
    assert!(!home.work().join("p.txt").exists());
    // The model is told why, and the "y" went to it as a prompt.
    let refused = all_text(&body(&server.requests()[1])["messages"]);
    assert!(refused.contains("no terminal to ask on"), "{refused}");
    let last = body(&server.requests()[2]);
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(messages[messages.len() - 1]["content"][0]["text"], "y");
}
