//! The pickers on a terminal (`panto -r`, `/rewind`): arrow keys move, typing filters, Enter
//! picks, Esc gives up; rows are cut to the width and a long list scrolls.

use panto_testkit::{script, MockServer, Reply};

use super::screen::Terminal;
use super::support::{all_text, blocking, body, Home};

const DOWN: &str = "\x1b[B";
const UP: &str = "\x1b[A";

/// A home holding a session for each of `topics`, made in this order (so the last is listed
/// first), on a server that answers `extra` more prompts with "picked up".
async fn sessions(topics: &[&str], extra: usize) -> (MockServer, Home) {
    let server = MockServer::start().await;
    for topic in topics {
        server.push(Reply::sse(script::anthropic_text(&format!("answer about {topic}"))));
    }
    for _ in 0..extra {
        server.push(Reply::sse(script::anthropic_text("picked up")));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    for topic in topics {
        home.run(&["-p", topic], None).await.ok();
    }
    (server, home)
}

/// The row marked in the picker on `screen`.
fn marked(screen: &str) -> &str {
    screen
        .lines()
        .find(|row| row.starts_with('❯'))
        .unwrap_or_else(|| panic!("no row marked:\n{screen}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_resume_picker_moves_with_arrows_scrolls_and_cuts_rows_to_the_width() {
    let topics = [
        "topic one, whose words go on past the width of this terminal",
        "topic two",
        "topic three",
        "topic four",
    ];
    let (server, home) = sessions(&topics, 1).await;
    let screens = blocking(move || {
        // Five rows: three of them for the list, which scrolls.
        let mut t = Terminal::start_sized(&home, &["-r"], 5, 100);
        t.wait_for("resume which session?");
        let first = t.contents();
        t.send(DOWN);
        t.send(DOWN);
        t.send(UP);
        t.send(DOWN);
        t.send("j");
        t.wait_until("the oldest marked", |_| t.contents().contains("(4/4)"));
        let last = t.contents();
        t.send("\r");
        t.wait_for("you: topic one");
        t.wait_for_prompt();
        t.send_line("and more");
        t.wait_for("picked up");
        t.wait_for_prompt();
        t.send_line("/quit");
        let exited = t.wait_exit();
        assert_eq!(exited.code, Some(0));
        (first, last, exited.shown)
    })
    .await;
    let (first, last, shown) = screens;
    assert!(marked(&first).contains("topic four"), "{first}");
    assert!(first.contains("(1/4)") && !first.contains("topic one"), "{first}");
    assert!(marked(&last).contains("topic one, whose words"), "{last}");
    assert!(!last.contains("topic four"), "scrolled: {last}");
    for row in last.lines() {
        assert!(
            row.chars().count() < 100,
            "a row wider than the terminal: {row:?}\n{last}"
        );
    }
    assert!(marked(&last).ends_with('…'), "{last}");
    // The list is gone once picked: what was picked stays, one line.
    assert!(shown.contains("resume which session? "), "{shown}");
    assert!(!shown.contains("topic two"), "{shown}");
    let history = all_text(&body(&server.requests()[4])["messages"]);
    assert!(
        history.contains("topic one") && !history.contains("topic four"),
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_filters_the_resume_picker() {
    let (server, home) = sessions(&["alpha task", "Beta task", "gamma task"], 1).await;
    let filtered = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["-r"], 20, 80);
        t.wait_for("resume which session?");
        t.send("BET");
        t.wait_until("the filter applied", |_| !t.contents().contains("gamma task"));
        let filtered = t.contents();
        t.send("\r");
        t.wait_for("you: Beta task");
        t.wait_for_prompt();
        t.send_line("go on");
        t.wait_for("picked up");
        t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        filtered
    })
    .await;
    assert!(filtered.contains("resume which session? BET"), "{filtered}");
    assert!(marked(&filtered).contains("Beta task"), "{filtered}");
    assert!(!filtered.contains("alpha task"), "{filtered}");
    let history = all_text(&body(&server.requests()[3])["messages"]);
    assert!(history.contains("Beta task") && history.contains("go on"), "{history}");
}

/// A filter of three characters or more also finds sessions by what was said in them: the
/// words typed are only in one session's answer, not in any row.
#[tokio::test(flavor = "multi_thread")]
async fn typing_filters_the_resume_picker_by_what_was_said() {
    let (server, home) = sessions(&["alpha task", "Beta task", "gamma task"], 1).await;
    let filtered = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["-r"], 20, 80);
        t.wait_for("resume which session?");
        t.send("ABOUT GAM");
        t.wait_until("the filter applied", |_| {
            let screen = t.contents();
            screen.contains("? ABOUT GAM") && screen.contains("❯")
        });
        let filtered = t.contents();
        t.send("\r");
        t.wait_for("you: gamma task");
        t.wait_for_prompt();
        t.send_line("go on");
        t.wait_for("picked up");
        t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        filtered
    })
    .await;
    assert!(marked(&filtered).contains("gamma task"), "{filtered}");
    assert!(!filtered.contains("Beta task"), "{filtered}");
    let history = all_text(&body(&server.requests()[3])["messages"]);
    assert!(history.contains("gamma task") && history.contains("go on"), "{history}");
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_gives_up_the_resume_picker_and_ctrl_c_the_rewind_picker() {
    let (server, home) = sessions(&["only topic"], 2).await;
    let (after_esc, home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["-r"], 20, 80);
        t.wait_for("resume which session?");
        t.send("\x1b");
        let exited = t.wait_exit();
        assert_eq!(exited.code, Some(2), "{}", exited.shown);
        (exited.shown, home)
    })
    .await;
    assert!(after_esc.contains("no session picked"), "{after_esc}");
    assert!(!after_esc.contains("only topic"), "the list is erased: {after_esc}");

    let shown = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 20, 80);
        t.wait_for_prompt();
        t.send_line("first prompt");
        t.wait_for("picked up");
        t.wait_for_prompt();
        t.send_line("second prompt");
        t.wait_until("the second answer", |shown| shown.matches("picked up").count() == 2);
        t.wait_for_prompt();
        t.send_line("/rewind");
        t.wait_for("❯ second prompt");
        t.send("\x03");
        t.wait_for("no prompt picked");
        t.wait_for_prompt();
        t.send_line("/rewind");
        t.wait_for("❯ second prompt");
        t.send(DOWN);
        t.send("\r");
        t.wait_for("rewound to before");
        // The rewound prompt is back in the input.
        t.wait_for("> first prompt");
        let shown = t.contents();
        t.send("\x15");
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        shown
    })
    .await;
    assert!(shown.contains("rewound to before “first prompt”"), "{shown}");
    assert_eq!(server.requests().len(), 3);
}
