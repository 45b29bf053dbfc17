//! Tool calls on the screen, through a pseudo-terminal: an approval question answered on one key
//! (Esc declines); a long result shown as its head and tail, and in full with Ctrl-O. Screens
//! are snapshots (`snapshots/`) at 100 and 60 columns.

use panto_testkit::script;
use panto_testkit::{MockServer, Reply};
use serde_json::json;

use super::screen::Terminal;
use super::support::{all_text, blocking, body, Home};
use super::turn_screen::screen_from;

/// The question's last words, after which the answer is echoed.
const ASKED: &str = "say why):";

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_takes_one_key_and_esc_declines() {
    let server = MockServer::start().await;
    for (id, command) in [("toolu_01", "echo one > one.txt"), ("toolu_02", "echo two > two.txt")] {
        let input = json!({ "command": command }).to_string();
        server.push(Reply::sse(script::anthropic_tool_uses(&[(id, "bash", &input)])));
    }
    server.push(Reply::sse(script::anthropic_text("Only one file.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work();
    let (shown, _home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, 100);
        t.wait_for_prompt();
        t.send_line("make two files");
        t.wait_for(ASKED);
        // No Enter: the key is the answer, and the answer is echoed.
        t.send("y");
        t.wait_for(&format!("{ASKED} yes"));
        t.wait_until("the second question", |s| s.matches(ASKED).count() >= 2);
        t.send("\u{1b}");
        t.wait_for("Only one file.");
        t.wait_for_prompt();
        t.send_line("/quit");
        (t.wait_exit().shown, home)
    })
    .await;
    assert!(work.join("one.txt").exists(), "y ran the first call:\n{shown}");
    assert!(!work.join("two.txt").exists(), "Esc declined the second:\n{shown}");
    assert!(
        shown.contains("? allow bash: echo two > two.txt") && shown.contains(&format!("{ASKED} no\n")),
        "Esc is echoed as no:\n{shown}"
    );
    assert!(!shown.contains("^["), "Esc is not typed into the answer:\n{shown}");
    // The model is told the call was declined, and the turn went on.
    let third = all_text(&body(&server.requests()[2])["messages"]);
    assert!(
        third.contains("the bash call did not run: the user declined this call"),
        "{third}"
    );
}

/// A bash command printing 300 lines, the last one the verdict.
const THREE_HUNDRED_LINES: &str = "seq -f 'line %g' 1 299; echo '300 passed'";

/// The screen after a turn whose bash call printed 300 lines, from the tool line on; then
/// Ctrl-O at the prompt with a draft typed, and the transcript after it.
async fn long_output_at(cols: u16) -> (String, String) {
    let server = MockServer::start().await;
    let input = json!({ "command": THREE_HUNDRED_LINES }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "bash", &input)])));
    server.push(Reply::sse(script::anthropic_text("All tests pass.")));
    let mut home = Home::new();
    home.anthropic(&server);
    blocking(move || {
        let mut t = Terminal::start_sized(&home, &["--approve", "auto"], 30, cols);
        t.wait_for_prompt();
        t.send_line("run the tests");
        t.wait_for("All tests pass.");
        let collapsed = screen_from(&t.wait_for_prompt(), "● bash");
        t.send("draft");
        t.send("\u{f}");
        let expanded = t.wait_for("    line 150");
        // The draft is back in the prompt, to go on with.
        t.wait_until("the draft back at the prompt", |s| s.trim_end().ends_with("> draft"));
        t.send("\u{15}");
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (collapsed, expanded)
    })
    .await
}

fn assert_head_and_tail(collapsed: &str, expanded: &str) {
    for shown in [
        "    line 1\n",
        "    line 3\n",
        "… 295 more lines (Ctrl-O shows all)",
        "    line 299\n",
        "    300 passed\n",
    ] {
        assert!(collapsed.contains(shown), "{shown:?} is not shown:\n{collapsed}");
    }
    assert!(!collapsed.contains("line 4\n"), "{collapsed}");
    // Ctrl-O: every line, in order.
    let all: Vec<String> = (1..300).map(|n| format!("    line {n}\n")).collect();
    let from = expanded.find("result in full").expect("the expanded result");
    let mut at = from;
    for line in &all {
        at += expanded[at..]
            .find(line.as_str())
            .unwrap_or_else(|| panic!("{line:?} is missing:\n{expanded}"));
    }
    assert!(expanded[at..].contains("    300 passed\n"), "{expanded}");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_tool_output_shows_its_head_and_tail_and_ctrl_o_all_of_it_at_100_columns() {
    let (collapsed, expanded) = long_output_at(100).await;
    assert_head_and_tail(&collapsed, &expanded);
    insta::assert_snapshot!("long_tool_output_100_columns", collapsed);
}

#[tokio::test(flavor = "multi_thread")]
async fn long_tool_output_shows_its_head_and_tail_and_ctrl_o_all_of_it_at_60_columns() {
    let (collapsed, expanded) = long_output_at(60).await;
    assert_head_and_tail(&collapsed, &expanded);
    insta::assert_snapshot!("long_tool_output_60_columns", collapsed);
}

/// Ctrl-O while a turn runs: the last result in full, before the turn ends.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_o_during_a_turn_shows_the_last_tool_result_in_full() {
    let server = MockServer::start().await;
    let long = json!({ "command": THREE_HUNDRED_LINES }).to_string();
    let wait = json!({ "command": "while [ ! -e go ]; do sleep 0.05; done" }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "bash", &long)])));
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_02", "bash", &wait)])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work();
    let (during, _home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["--approve", "auto"], 30, 100);
        t.wait_for_prompt();
        t.send_line("run the tests, then wait");
        t.wait_until("the second call running", |s| s.matches("● bash").count() >= 2);
        t.send("\u{f}");
        let during = t.wait_for("    line 150");
        std::fs::write(work.join("go"), "").unwrap();
        t.wait_for("Done.");
        t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (during, home)
    })
    .await;
    assert!(!during.contains("Done."), "shown while the turn ran:\n{during}");
    assert!(during.contains("    300 passed\n"), "{during}");
}

/// A call the user declined did not fail: it is shown as declined, without the error's ✗ and red.
#[tokio::test(flavor = "multi_thread")]
async fn a_declined_call_is_shown_as_declined_not_as_a_failure() {
    let server = MockServer::start().await;
    let input = json!({ "command": "rm -rf target" }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "bash", &input)])));
    server.push(Reply::sse(script::anthropic_text("I will use the test profile.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let shown = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, 100);
        t.wait_for_prompt();
        t.send_line("clean up");
        t.wait_for(ASKED);
        t.send("f");
        t.wait_for("what should the model do instead?");
        t.send_line("use the test profile");
        t.wait_for("I will use the test profile.");
        let shown = screen_from(&t.wait_for_prompt(), "? allow bash");
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        shown
    })
    .await;
    assert!(
        shown.contains(
            "  ⊘ bash declined\n    the bash call did not run: the user declined it and said: use the test profile\n"
        ),
        "{shown}"
    );
    assert!(!shown.contains('✗') && !shown.contains("failed"), "{shown}");
    insta::assert_snapshot!("declined_call_100_columns", shown);
}

/// The approval mode changes mid-session and the next call obeys it: Shift-Tab goes from `ask`
/// to `auto`, where a write runs without a question; `/approve ask` asks again; in `read-only` a
/// write is refused; `/status` shows the mode.
#[tokio::test(flavor = "multi_thread")]
async fn the_approval_mode_changes_mid_session_and_the_next_call_obeys_it() {
    let server = MockServer::start().await;
    for (id, file) in [
        ("toolu_01", "auto.txt"),
        ("toolu_02", "ask.txt"),
        ("toolu_03", "read-only.txt"),
    ] {
        let input = json!({ "path": file, "content": "x\n" }).to_string();
        server.push(Reply::sse(script::anthropic_tool_uses(&[(id, "write", &input)])));
        server.push(Reply::sse(script::anthropic_text(&format!("Done with {file}."))));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work();
    let (shown, _home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, 100);
        let banner = t.wait_for_prompt();
        assert!(banner.contains("approval ask"), "{banner}");
        // Shift-Tab.
        t.send("\u{1b}[Z");
        t.wait_for("approval auto: every call runs without asking");
        t.wait_for_prompt();
        t.send_line("write auto.txt");
        t.wait_for("Done with auto.txt.");
        t.wait_for_prompt();
        t.send_line("/approve ask");
        t.wait_for("approval ask: calls that change things ask first");
        t.wait_for_prompt();
        t.send_line("write ask.txt");
        t.wait_for(ASKED);
        t.send("n");
        t.wait_for("Done with ask.txt.");
        t.wait_for_prompt();
        t.send_line("/approve");
        t.wait_for("approval ask: calls that change things ask first (ask|auto|read-only; Shift-Tab cycles)");
        t.wait_for_prompt();
        t.send_line("/approve read-only");
        t.wait_for("approval read-only: calls that change things are refused");
        t.wait_for_prompt();
        t.send_line("write read-only.txt");
        t.wait_for("Done with read-only.txt.");
        t.wait_for_prompt();
        t.send_line("/status");
        t.wait_until("/status naming the mode", |s| {
            s.lines()
                .any(|l| l.starts_with("approval ") && l.trim_end().ends_with(" read-only"))
        });
        t.wait_for_prompt();
        t.send_line("/quit");
        (t.wait_exit().shown, home)
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(work.join("auto.txt")).unwrap(),
        "x\n",
        "{shown}"
    );
    assert!(!work.join("ask.txt").exists(), "declined in ask mode:\n{shown}");
    assert!(
        !work.join("read-only.txt").exists(),
        "refused in read-only mode:\n{shown}"
    );
    assert_eq!(
        shown.matches(ASKED).count(),
        1,
        "only the call made in ask mode was asked about:\n{shown}"
    );
    assert!(
        shown.contains("allow write: create ask.txt"),
        "the question names the call:\n{shown}"
    );
    // The model is told why the read-only call did not run, and how to allow it.
    let last = all_text(&body(&server.requests()[5])["messages"]);
    assert!(
        last.contains(
            "the write tool is not allowed: tool approval is read-only (/approve ask or /approve auto allows it)"
        ),
        "{last}"
    );
}
