//! panto's own lines at 60 columns: thinking, a retry line, an approval question's choices, a
//! tool's result and `panto sessions` rows are broken between words (prose, under its own start)
//! or cut with `…` (table rows) by panto, never wrapped mid-word by the terminal.

use panto_testkit::script::AnthropicScript;
use panto_testkit::{script, MockServer, Reply};

use super::screen::Terminal;
use super::support::{blocking, Home};

const COLUMNS: u16 = 60;

/// The rows of `transcript` that the terminal had to wrap (wider than the screen): where it
/// cut a word in two.
fn overflowing(transcript: &str) -> Vec<&str> {
    transcript
        .lines()
        .filter(|row| row.chars().count() > usize::from(COLUMNS))
        .collect()
}

/// Whether `words` are shown in order, each whole on a row (a word split by a line break is
/// not found).
fn shown_whole(transcript: &str, words: &str) -> bool {
    let rows: Vec<&str> = transcript.lines().collect();
    let mut row = 0;
    for word in words.split_whitespace() {
        loop {
            let Some(r) = rows.get(row) else { return false };
            if r.split_whitespace().any(|w| w.contains(word)) {
                break;
            }
            row += 1;
        }
    }
    true
}

const THINKING: &str = "The user wants the listing summarised, so first I should look at \
    what the file holds and then explain every interesting part of it in plain words";
const OUTPUT: &str = "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo \
    lima mike november oscar papa quebec romeo sierra tango";
const OVERLOADED: &str = "The servers are overloaded right now, please try again shortly";

#[tokio::test(flavor = "multi_thread")]
async fn panto_s_own_lines_break_between_words_at_60_columns() {
    let server = MockServer::start().await;
    // A partial answer, then an error: the retry line says the partial answer is discarded.
    server.push(Reply::sse(
        AnthropicScript::new()
            .text("Let me look")
            .error("overloaded_error", OVERLOADED)
            .build(),
    ));
    server.push(Reply::sse(
        AnthropicScript::new()
            .thinking(THINKING, "sig")
            .tool_use("toolu_01", "bash", r#"{"command":"cat out.txt"}"#)
            .build(),
    ));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config("[retry]\nmax_attempts = 3\nbase_delay_ms = 100\n");
    std::fs::write(home.work().join("out.txt"), format!("{OUTPUT}\n")).unwrap();
    let (shown, home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 40, COLUMNS);
        t.wait_for_prompt();
        t.send_line("summarise the listing in out.txt for me, with every detail you find there");
        t.wait_for("[f]eedback");
        t.send("y");
        t.wait_for("Done.");
        t.wait_for_prompt();
        t.send_line("/quit");
        let exited = t.wait_exit();
        assert_eq!(exited.code, Some(0));
        (exited.shown, home)
    })
    .await;
    assert!(
        overflowing(&shown).is_empty(),
        "rows the terminal wrapped: {:?}\n{shown}",
        overflowing(&shown)
    );
    assert!(shown_whole(&shown, THINKING), "{shown}");
    assert!(shown_whole(&shown, OUTPUT), "{shown}");
    assert!(shown_whole(&shown, OVERLOADED), "{shown}");
    assert!(shown_whole(&shown, "the partial answer above is discarded"), "{shown}");
    // The choices, broken between two of them.
    assert!(
        shown.contains("[y]es / [n]o / [a]lways for bash /\n[f]eedback (no, and say why): yes"),
        "{shown}"
    );
    // The result's rows hang under its start.
    assert!(shown.contains("\n    alpha bravo"), "{shown}");

    // `panto sessions` on the same terminal: a row a line, cut with `…`.
    let listing = blocking(move || {
        let t = Terminal::start_sized(&home, &["sessions"], 40, COLUMNS);
        let exited = t.wait_exit();
        assert_eq!(exited.code, Some(0), "{}", exited.shown);
        exited.shown
    })
    .await;
    assert!(overflowing(&listing).is_empty(), "{listing}");
    let row = listing.lines().find(|l| l.contains(" msgs ")).expect("a session row");
    assert!(row.ends_with('…'), "{listing}");
}
