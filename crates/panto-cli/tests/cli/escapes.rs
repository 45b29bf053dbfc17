//! A hostile model, tool or server cannot drive the terminal: escape sequences in text, thinking,
//! tool calls, tool output and error bodies are shown, not obeyed, whenever the output is a
//! terminal; an approval question shows every character of the command that will run. Checked
//! on the screen a terminal emulator renders (see `screen.rs`), as a user would see it. On a pipe
//! the model's bytes stay as they came.

use panto_testkit::script::AnthropicScript;
use panto_testkit::{script, MockServer, Reply};
use serde_json::json;

use super::screen::Terminal;
use super::support::{blocking, Home};

/// OSC 0: set the window title.
const TITLE: &str = "\x1b]0;PWNED-TITLE\x07";
/// OSC 52: write "rm -rf ~" to the clipboard.
const CLIPBOARD: &str = "\x1b]52;c;cm0gLXJmIH4K\x07";
/// Erase the screen and home the cursor.
const CLEAR: &str = "\x1b[2J\x1b[H";

/// The same sequences as the screen shows them once neutralised.
const TITLE_SHOWN: &str = "^[]0;PWNED-TITLE^G";
const CLIPBOARD_SHOWN: &str = "^[]52;c;cm0gLXJmIH4K^G";
const CLEAR_SHOWN: &str = "^[[2J^[[H";

#[tokio::test(flavor = "multi_thread")]
async fn model_text_and_thinking_are_shown_not_obeyed_in_the_repl() {
    let server = MockServer::start().await;
    let text = format!("Answer {TITLE}{CLIPBOARD}{CLEAR}kept; all good\rOVERWRITTEN; \u{9b}2J c1; \u{202e}txt.exe");
    server.push(Reply::sse(
        AnthropicScript::new()
            .thinking(&format!("plan {TITLE} quietly"), "sig")
            .text(&text)
            .build(),
    ));
    let mut home = Home::new();
    home.anthropic(&server);
    let screen = blocking(move || {
        let mut t = Terminal::start(&home, &[]);
        t.wait_for("new session");
        t.wait_for_prompt();
        t.send_line("hello");
        t.wait_for("txt.exe");
        t.wait_for_prompt();
        let screen = t.contents();
        t.requests().assert_none();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        screen
    })
    .await;
    // Nothing was erased: the banner is still on screen.
    assert!(screen.contains("new session"), "{screen}");
    // The answer is word-wrapped at the terminal's width: compare with line ends as spaces.
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    for shown in [
        format!("plan {TITLE_SHOWN} quietly"),
        format!("Answer {TITLE_SHOWN}{CLIPBOARD_SHOWN}{CLEAR_SHOWN}kept"),
        // A lone CR would have put the cursor back over "all good".
        "all good^MOVERWRITTEN".to_owned(),
        "<U+009B>2J c1".to_owned(),
        "<U+202E>txt.exe".to_owned(),
    ] {
        assert!(words.contains(&shown), "{shown:?} is not on screen:\n{screen}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_question_cannot_be_redrawn_by_the_command() {
    let server = MockServer::start().await;
    // Erase the question's line and draw a harmless one in its place.
    let command = "touch pwned.txt #\u{1b}[2K\u{1b}[1G? allow bash: ls -la";
    let input = json!({ "command": command }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "bash", &input)])));
    server.push(Reply::sse(script::anthropic_text("Fine, not run.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work();
    let screen = blocking(move || {
        let mut t = Terminal::start(&home, &[]);
        t.wait_for_prompt();
        t.send_line("list the files");
        let screen = t.wait_for("say why):");
        t.send("n");
        t.wait_for("Fine, not run.");
        t.requests().assert_none();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        screen
    })
    .await;
    assert!(
        screen.contains("? allow bash: touch pwned.txt #^[[2K^[[1G? allow bash: ls -la"),
        "the question must show the command that would run:\n{screen}"
    );
    assert!(!work.join("pwned.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_question_shows_the_whole_command_however_padded_or_long() {
    let server = MockServer::start().await;
    let padded = format!("ls -la{}; touch pwned.txt", " ".repeat(300));
    let long = format!("echo {} END-OF-COMMAND", "x".repeat(300));
    let blank_lines = format!("touch hidden.txt{}ls", "\n".repeat(60));
    for (id, command) in [("toolu_01", &padded), ("toolu_02", &long), ("toolu_03", &blank_lines)] {
        let input = json!({ "command": command }).to_string();
        server.push(Reply::sse(script::anthropic_tool_uses(&[(id, "bash", &input)])));
    }
    server.push(Reply::sse(script::anthropic_text("Nothing ran.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let questions = blocking(move || {
        let mut t = Terminal::start(&home, &[]);
        t.wait_for_prompt();
        t.send_line("do things");
        let mut questions = Vec::new();
        for n in 1..=3 {
            let shown = t.wait_until("the next question", |s| s.matches("say why):").count() >= n);
            // What the user sees when asked: the visible screen.
            questions.push(t.contents());
            assert!(shown.contains("say why):"));
            t.send("n");
        }
        t.wait_for("Nothing ran.");
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        questions
    })
    .await;
    // The padding cannot push the tail out of sight: its length is shown instead.
    assert!(
        questions[0].contains("? allow bash: ls -la⟨300 spaces⟩; touch pwned.txt"),
        "{}",
        questions[0]
    );
    // A long command is wrapped by the terminal, never cut.
    assert!(
        questions[1].contains(&format!("? allow bash: echo {} END-OF-COMMAND", "x".repeat(300))),
        "{}",
        questions[1]
    );
    // Sixty line ends cannot scroll the start of a command off the screen.
    assert!(
        questions[2].contains("? allow bash: touch hidden.txt\n│ ⟨59 empty lines⟩\n│ ls"),
        "{}",
        questions[2]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_output_and_tool_names_are_shown_not_obeyed() {
    let server = MockServer::start().await;
    let printf = json!({ "command": "printf 'out\\033]0;PWNED-TITLE\\007\\033[2J done\\n'" }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_01", "bash", &printf),
        ("toolu_02", "read\u{1b}]0;PWNED-TITLE\u{7}", r#"{"path":"x"}"#),
    ])));
    server.push(Reply::sse(script::anthropic_text("seen")));
    let mut home = Home::new();
    home.anthropic(&server);
    let screen = blocking(move || {
        let mut t = Terminal::start(&home, &["--approve", "auto"]);
        t.wait_for_prompt();
        t.send_line("look");
        t.wait_for("[exit code 0]");
        // The follow-up request carries the call under a placeholder name (panto-core checks
        // names as they are decoded), so the mock accepts it and the turn ends.
        t.wait_for("seen");
        let screen = t.wait_for_prompt();
        t.requests().assert_none();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        screen
    })
    .await;
    assert!(screen.contains(&format!("out{TITLE_SHOWN}^[[2J done")), "{screen}");
    // The hostile name is never run nor obeyed: the call is shown under its placeholder, and the
    // error result quotes the name with its escapes spelled out.
    assert!(screen.contains("invalid_tool_name failed"), "{screen}");
    assert!(screen.contains("read\\u{1b}]0;PWNED-TITLE\\u{7}"), "{screen}");
    assert!(!screen.contains("error: provider"), "{screen}");
}

/// An error body with escapes in its message.
fn hostile_error() -> Reply {
    Reply::json(
        400,
        &json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": format!("bad request{TITLE}{CLEAR}")},
        }),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_error_body_is_shown_not_obeyed() {
    let server = MockServer::start().await;
    server.push(hostile_error());
    server.push(hostile_error());
    let mut home = Home::new();
    home.anthropic(&server);
    let (repl, print) = blocking(move || {
        // Wide enough for the error on one line (panto breaks a long one between words).
        let mut t = Terminal::start_sized(&home, &[], 40, 200);
        t.wait_for_prompt();
        t.send_line("hi");
        let repl = t.wait_for("error:");
        t.wait_for_prompt();
        t.requests().assert_none();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));

        let print = Terminal::start(&home, &["-p", "hi"]).wait_exit();
        print.requests.assert_none();
        assert_eq!(print.code, Some(1));
        (repl, print.shown)
    })
    .await;
    let shown = format!("bad request{TITLE_SHOWN}{CLEAR_SHOWN}");
    assert!(repl.contains(&shown), "{repl}");
    assert!(repl.contains("new session"), "nothing was erased:\n{repl}");
    assert!(print.contains(&shown), "{print}");
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_neutralises_on_a_terminal_and_keeps_the_bytes_on_a_pipe() {
    let server = MockServer::start().await;
    let answer = format!("Answer {TITLE}{CLEAR}end \u{9b}");
    server.push(Reply::sse(script::anthropic_text(&answer)));
    server.push(Reply::sse(script::anthropic_text(&answer)));
    server.push(Reply::sse(script::anthropic_text(&answer)));
    let mut home = Home::new();
    home.anthropic(&server);

    // To a pipe, the answer is data: byte for byte what the model sent.
    let piped = home.run(&["-p", "hi"], None).await;
    assert_eq!(piped.ok(), format!("{answer}\n"));

    let (text, json) = blocking(move || {
        let text = Terminal::start(&home, &["-p", "hi"]).wait_exit();
        text.requests.assert_none();
        assert_eq!(text.code, Some(0));
        let json = Terminal::start(&home, &["-p", "hi", "--output-format", "json"]).wait_exit();
        json.requests.assert_none();
        assert_eq!(json.code, Some(0));
        (text.shown, json.shown)
    })
    .await;
    assert!(
        text.contains(&format!("Answer {TITLE_SHOWN}{CLEAR_SHOWN}end <U+009B>")),
        "{text}"
    );
    // JSON on a terminal escapes what serde_json leaves raw; the value is unchanged.
    assert!(json.contains(r#"Answer \u001b]0;PWNED-TITLE\u0007"#), "{json}");
    assert!(json.contains(r#"end \u009b"#), "{json}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_listing_shows_hostile_prompts_neutralised() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("ok")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.run(&["-p", &format!("hi {TITLE} there")], None).await.ok();
    let screen = blocking(move || {
        // Wide enough for the whole row (a row is cut to the terminal's width).
        let listing = Terminal::start_sized(&home, &["sessions"], 40, 200).wait_exit();
        listing.requests.assert_none();
        assert_eq!(listing.code, Some(0));
        listing.shown
    })
    .await;
    assert!(screen.contains(&format!("hi {TITLE_SHOWN} there")), "{screen}");
}
