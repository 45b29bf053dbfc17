//! Tool calls on the screen, through a pseudo-terminal: an approval question answered on one key
//! (Esc declines).

use panto_testkit::script;
use panto_testkit::{MockServer, Reply};
use serde_json::json;

use super::screen::Terminal;
use super::support::{all_text, blocking, body, Home};

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
