//! What a user sees and can do while a turn runs, through a pseudo-terminal: an edit approval
//! with its diff and the "no, and say why" answer; the spinner naming the running tool; keys
//! typed ahead (never echoed into the answer; Enter steers the running turn, or with `typeahead =
//! "follow-up"` queues a turn after it; shown until taken); Esc. Screens are snapshots
//! (`snapshots/`) at 100 and 60 columns.

use panto_testkit::script::{self, AnthropicScript};
use panto_testkit::{MockServer, Reply};
use serde_json::json;

use super::screen::Terminal;
use super::support::{all_text, blocking, body, Home};

/// The visible screen from the row holding `from` on, trailing blank rows dropped, with the
/// spinner's frame and elapsed seconds masked (the things that vary from run to run).
pub(super) fn screen_from(screen: &str, from: &str) -> String {
    let start = screen
        .find(from)
        .unwrap_or_else(|| panic!("{from:?} is not on screen:\n{screen}"));
    let start = screen[..start].rfind('\n').map_or(0, |i| i + 1);
    let rows: Vec<String> = screen[start..]
        .lines()
        .map(|row| {
            let mut masked = String::new();
            let mut digits = String::new();
            for c in row.chars() {
                let c = if ('\u{2800}'..='\u{28ff}').contains(&c) {
                    '⠿'
                } else {
                    c
                };
                if c.is_ascii_digit() {
                    digits.push(c);
                    continue;
                }
                if c == 's' && !digits.is_empty() && row.contains('…') {
                    masked.push_str("Ns");
                } else {
                    masked.push_str(&digits);
                    masked.push(c);
                }
                digits.clear();
            }
            masked.push_str(&digits);
            // The status line's last part is the turn's duration (alone on a row when the line
            // was wrapped between its parts).
            let is_duration = |part: &str| {
                part.strip_suffix(" s")
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'))
            };
            if is_duration(&masked) {
                masked = "N s".to_owned();
            } else if let Some((rest, last)) = masked.rsplit_once(" · ") {
                if is_duration(last) {
                    masked = format!("{rest} · N s");
                }
            }
            masked.trim_end().to_owned()
        })
        .collect();
    rows.join("\n").trim_end().to_owned()
}

/// The file the edit changes, and the edit.
const SOURCE: &str = "fn main() {\n    let greeting = \"hello\";\n    println!(\"{greeting}\");\n}\n";

/// The screen when asked about the edit, and the text of the request after the answer.
async fn edit_approval_at(cols: u16) -> (String, String) {
    let server = MockServer::start().await;
    let input = json!({
        "path": "main.rs",
        "old_string": "    let greeting = \"hello\";",
        "new_string": "    let greeting = \"hello, world\";\n    let count = 2;",
    })
    .to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "edit", &input)])));
    server.push(Reply::sse(script::anthropic_text("Understood, no change.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("main.rs"), SOURCE).unwrap();
    let work = home.work();
    let screen = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, cols);
        t.wait_for_prompt();
        t.send_line("greet the world");
        t.wait_for("say why):");
        let screen = t.contents();
        t.send("f");
        t.wait_for("what should the model do instead?");
        t.send_line("keep the greeting short");
        t.wait_for("Understood, no change.");
        t.wait_for_prompt();
        t.requests().assert_none();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (screen, home)
    })
    .await;
    let (screen, _home) = screen;
    // Declined: the file is as it was, and the model got the user's words as the result.
    assert_eq!(std::fs::read_to_string(work.join("main.rs")).unwrap(), SOURCE);
    let second = body(&server.requests()[1]);
    let result = all_text(&second["messages"]);
    (screen_from(&screen, "● edit"), result)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_approval_shows_its_diff_at_100_columns() {
    let (screen, result) = edit_approval_at(100).await;
    assert!(screen.contains("-    let greeting = \"hello\";"), "{screen}");
    assert!(screen.contains("+    let greeting = \"hello, world\";"), "{screen}");
    assert!(
        result.contains("the user declined it and said: keep the greeting short"),
        "{result}"
    );
    insta::assert_snapshot!("edit_approval_100_columns", screen);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_approval_shows_its_diff_at_60_columns() {
    let (screen, _) = edit_approval_at(60).await;
    assert!(screen.contains("+    let count = 2;"), "{screen}");
    insta::assert_snapshot!("edit_approval_60_columns", screen);
}

/// A bash command that runs until the test creates `go` in the working directory: the turn is
/// running for as long as the test needs, without timing.
const WAITING_COMMAND: &str = "while [ ! -e go ]; do sleep 0.05; done; echo released";

/// A mock whose model runs `command` with bash, then gives `answers` one request each, and a
/// home set up to talk to it.
async fn bash_then(command: &str, answers: &[&str]) -> (MockServer, Home) {
    let server = MockServer::start().await;
    let input = json!({ "command": command }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "bash", &input)])));
    for answer in answers {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    (server, home)
}

/// Types a line and the start of another while bash runs; with `follow_up` the config says
/// `typeahead = "follow-up"`. Returns the screen while bash ran, the screen after, and the text
/// of each request the mock got.
async fn typed_ahead_at(cols: u16, follow_up: bool) -> (String, String, Vec<String>) {
    let (server, home) = bash_then(WAITING_COMMAND, &["The first answer.", "The queued answer."]).await;
    if follow_up {
        home.write_config("typeahead = \"follow-up\"\n");
    }
    let work = home.work();
    let (spinner, after) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["--approve", "auto"], 30, cols);
        t.wait_for_prompt();
        t.send_line("run the slow thing");
        t.wait_for("running bash…");
        let spinner = t.contents();
        t.send("what next?\r");
        t.send("half typ");
        // Sent to the turn at once, and shown as sent until the turn takes it.
        t.wait_for("sent: what next?  queued: half typ");
        std::fs::write(work.join("go"), "").unwrap();
        t.wait_for(if follow_up {
            "The queued answer."
        } else {
            "The first answer."
        });
        t.wait_for("> half typ");
        let after = t.contents();
        t.send("\x15");
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (spinner, after)
    })
    .await;
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| all_text(&body(r)["messages"]))
        .collect();
    (
        screen_from(&spinner, "> run the slow thing"),
        screen_from(&after, "> run the slow thing"),
        prompts,
    )
}

/// Enter steered the turn: the line joined after bash's result, before the next request, and
/// the model answered it in the same turn.
fn assert_steered(after: &str, prompts: &[String]) {
    // Never echoed into the answer: the answer line is whole, the keys are not beside it; the
    // steer is shown where it joined.
    assert!(after.contains("› what next?\nThe first answer.\n"), "{after}");
    assert!(
        !after.contains("sent: what next?"),
        "taken, so no longer shown as sent: {after}"
    );
    // The unfinished rest is in the prompt's editor.
    assert!(after.ends_with("> half typ"), "{after}");
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(!prompts[0].contains("what next?"), "{prompts:?}");
    let released = prompts[1].find("released").expect("bash's result");
    let steered = prompts[1].find("what next?").expect("the steer");
    assert!(released < steered, "the steer follows the result: {prompts:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_spinner_and_type_ahead_at_100_columns() {
    let (spinner, after, prompts) = typed_ahead_at(100, false).await;
    assert_steered(&after, &prompts);
    insta::assert_snapshot!("tool_spinner_100_columns", spinner);
    insta::assert_snapshot!("type_ahead_100_columns", after);
}

#[tokio::test(flavor = "multi_thread")]
async fn typeahead_follow_up_runs_the_line_after_the_turn() {
    let (_, after, prompts) = typed_ahead_at(100, true).await;
    assert!(after.contains("\nThe first answer.\n"), "{after}");
    assert!(after.contains("› what next?\nThe queued answer."), "{after}");
    assert!(after.ends_with("> half typ"), "{after}");
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    assert!(
        prompts[2].contains("what next?") && !prompts[1].contains("what next?"),
        "{prompts:?}"
    );
}

/// A command typed while a turn runs is the REPL's, not the model's: it waits in the footer,
/// runs at the prompt when the turn ends, and no request carries it.
#[tokio::test(flavor = "multi_thread")]
async fn a_command_typed_during_a_turn_runs_when_the_turn_ends() {
    let (server, home) = bash_then(WAITING_COMMAND, &["The first answer."]).await;
    let work = home.work();
    let (queued, code) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["--approve", "auto"], 30, 100);
        t.wait_for_prompt();
        t.send_line("run the slow thing");
        t.wait_for("running bash…");
        t.send("/quit\r");
        t.wait_for("queued: /quit");
        let queued = t.contents();
        std::fs::write(work.join("go"), "").unwrap();
        t.wait_for("The first answer.");
        (queued, t.wait_exit().code)
    })
    .await;
    assert!(!queued.contains("sent: /quit"), "{queued}");
    assert_eq!(code, Some(0), "the queued /quit ended the REPL");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let text = all_text(&body(request)["messages"]);
        assert!(!text.contains("/quit"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_spinner_and_type_ahead_at_60_columns() {
    let (spinner, after, prompts) = typed_ahead_at(60, false).await;
    assert_steered(&after, &prompts);
    insta::assert_snapshot!("tool_spinner_60_columns", spinner);
    insta::assert_snapshot!("type_ahead_60_columns", after);
}

/// Esc on a `cols`-wide terminal: the first discards the typed keys, the second cancels.
async fn esc_at(cols: u16) -> String {
    let server = MockServer::start().await;
    // A line that is complete (so it is drawn), then the stall.
    let stream = AnthropicScript::new()
        .text_deltas(["STREAMED-PART of a line.\n", "and the rest never arrives"])
        .build();
    let text = String::from_utf8(stream.clone()).unwrap();
    let at = text.find("STREAMED-PART").unwrap();
    let cut = at + text[at..].find("\n\n").unwrap() + 2;
    server.push(Reply::sse(stream).stall_after(cut));
    server.push(Reply::sse(script::anthropic_text("Back again.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let screens = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, cols);
        t.wait_for_prompt();
        t.send_line("tell me");
        t.wait_for("STREAMED-PART");
        t.send("not this");
        t.wait_for("queued: not this");
        // The first Esc discards the keys; the turn goes on.
        t.send("\x1b");
        t.wait_until("the queue gone", |s| !s.contains("queued:"));
        let queued_gone = t.contents();
        // The second cancels it.
        t.send("\x1b");
        t.wait_for("cancelled");
        t.wait_for_prompt();
        let cancelled = t.contents();
        t.send_line("again");
        t.wait_for("Back again.");
        t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (queued_gone, cancelled)
    })
    .await;
    assert!(!screens.0.contains("cancelled"), "{}", screens.0);
    let cancelled = screen_from(&screens.1, "> tell me");
    assert!(!cancelled.contains("not this"), "{cancelled}");
    // The partial answer is kept, and the discarded keys were never sent.
    let second = all_text(&body(&server.requests()[1])["messages"]);
    assert!(
        second.contains("STREAMED-PART") && !second.contains("not this"),
        "{second}"
    );
    cancelled
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_discards_typed_keys_then_cancels_the_turn_at_100_columns() {
    insta::assert_snapshot!("esc_cancels_100_columns", esc_at(100).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_discards_typed_keys_then_cancels_the_turn_at_60_columns() {
    insta::assert_snapshot!("esc_cancels_60_columns", esc_at(60).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_on_the_command_line_is_the_first_message() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Answer one.")));
    server.push(Reply::sse(script::anthropic_text("Answer two.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let home = blocking(move || {
        for (args, prompt, answer) in [
            (&["explain this repo"][..], "explain this repo", "Answer one."),
            // After `--`, a subcommand's name is a prompt.
            (&["--", "sessions"][..], "sessions", "Answer two."),
        ] {
            let mut t = Terminal::start(&home, args);
            let shown = t.wait_for(answer);
            assert!(shown.contains(&format!("> {prompt}\n")), "{shown}");
            t.wait_for_prompt();
            t.send_line("/quit");
            assert_eq!(t.wait_exit().code, Some(0));
        }
        home
    })
    .await;
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| all_text(&body(r)["messages"]))
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(
        prompts[0].starts_with("explain this repo\n") && prompts[1].starts_with("sessions\n"),
        "{prompts:?}"
    );
    // Without `--`, `sessions` is the subcommand.
    let out = home.run(&["sessions"], None).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn bang_runs_a_command_and_at_attaches_a_file_for_the_next_prompt() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Both seen.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("notes.md"), "NOTE-CONTENT\n").unwrap();
    let (shown, _home) = blocking(move || {
        let mut t = Terminal::start(&home, &[]);
        t.wait_for_prompt();
        t.send_line("!echo SHELL-OUTPUT; exit 4");
        t.wait_for("exit code 4");
        t.wait_for_prompt();
        t.send_line("what do @notes.md and the output say?");
        let shown = t.wait_for("Both seen.");
        t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        (shown, home)
    })
    .await;
    assert!(
        shown.contains("  SHELL-OUTPUT\n") && shown.contains("with @notes.md (13 bytes)"),
        "{shown}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the ! command itself sends nothing");
    let sent = all_text(&body(&requests[0])["messages"]);
    assert!(
        sent.contains("I ran `echo SHELL-OUTPUT; exit 4` in the terminal (exit code 4)"),
        "{sent}"
    );
    assert!(sent.contains("SHELL-OUTPUT\n</output>"), "{sent}");
    assert!(
        sent.contains("<file path=\"notes.md\">\nNOTE-CONTENT\n</file>"),
        "{sent}"
    );
}

/// While bash runs, the footer shows the last line it printed, neutralised (its escape byte
/// shown as `^[`, never acted on); the line goes when the call ends.
#[tokio::test(flavor = "multi_thread")]
async fn bash_shows_the_tail_of_its_output_live() {
    let command = "printf 'first line\\nstep 2 of 3 \\033[31mred\\n'; \
                   while [ ! -e go ]; do sleep 0.05; done; echo released";
    // The server answers for as long as it lives.
    let (_server, home) = bash_then(command, &["All done."]).await;
    let work = home.work();
    let (live, after) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["--approve", "auto"], 30, 100);
        t.wait_for_prompt();
        t.send_line("run it");
        t.wait_for("│ step 2 of 3 ^[[31mred");
        let live = t.contents();
        std::fs::write(work.join("go"), "").unwrap();
        t.wait_for("All done.");
        t.wait_for_prompt();
        let after = t.contents();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (live, after)
    })
    .await;
    let live = screen_from(&live, "> run it");
    assert!(live.ends_with("⠿ running bash… Ns │ step 2 of 3 ^[[31mred"), "{live}");
    // Only the last line: the earlier one is gone from the footer.
    let footer = live.lines().last().unwrap();
    assert_eq!(footer.matches("│").count(), 1, "{live}");
    assert!(!after.contains("running bash…"), "{after}");
}

/// A provider that cannot be reached: the retries share one line that each updates, and the turn
/// ends with one error line naming the URL once, instead of a block of lines per attempt.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_provider_takes_one_retry_line_and_one_error_line() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k")
        .set("ANTHROPIC_BASE_URL", &format!("http://127.0.0.1:{port}"));
    home.write_config("[retry]\nmax_attempts = 4\nbase_delay_ms = 200\n");
    let screen = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, 100);
        t.wait_for_prompt();
        t.send_line("hello");
        let retrying = t.wait_for("retry 3/4");
        t.wait_for("could not reach the provider at");
        t.wait_for_prompt();
        let screen = t.contents();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (retrying, screen)
    })
    .await;
    let (retrying, screen) = screen;
    // While retrying, one line: the second retry replaced the first.
    assert!(!retrying.contains("retry 2/4"), "{retrying}");
    assert!(retrying.contains("Connection refused"), "{retrying}");
    // At the end: no retry line is left, and the error names the URL once.
    let after = screen_from(&screen, "> hello");
    assert!(!after.contains("retry"), "{after}");
    assert_eq!(after.matches(&format!("127.0.0.1:{port}")).count(), 1, "{after}");
    assert!(after.lines().count() <= 4, "{after}");
}
