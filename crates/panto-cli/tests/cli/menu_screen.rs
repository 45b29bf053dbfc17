//! The completion menu through a pseudo-terminal: `/` at the line start and `@` open it under the
//! line as the user types, matching by substring (prefix matches first); Tab takes its first
//! candidate, Esc closes it. Screens are snapshots (`snapshots/`) at 100 and 60 columns.

use panto_testkit::script;
use panto_testkit::{MockServer, Reply};

use super::screen::Terminal;
use super::support::{all_text, blocking, body, Home};
use super::turn_screen::screen_from;

/// Types `/st` on a terminal `cols` wide; returns the screen from the line down with the menu
/// open, the screen after Esc, and after Tab.
async fn slash_menu_at(cols: u16) -> (String, String, String) {
    let server = MockServer::start().await;
    let mut home = Home::new();
    home.anthropic(&server);
    blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 20, cols);
        t.wait_for_prompt();
        t.send("/st");
        t.wait_until("the menu", |s| s.contains("  /status ") && s.contains("  /cost "));
        let open = screen_from(&t.contents(), "> /st");
        t.send("\u{1b}");
        t.wait_until("the menu to close", |s| !s.contains("  /status "));
        let closed = screen_from(&t.contents(), "> /st");
        t.send("\t");
        t.wait_until("Tab to take /status", |s| s.contains("> /status"));
        let taken = screen_from(&t.contents(), "> /status");
        t.send("\r");
        t.wait_until("/status to run", |s| s.lines().any(|l| l.starts_with("approval ")));
        t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        (open, closed, taken)
    })
    .await
}

fn assert_slash_menu(open: &str, closed: &str, taken: &str, cols: usize) {
    let rows: Vec<&str> = open.lines().collect();
    assert_eq!(rows[0], "> /st", "{open}");
    // The prefix match first, then the other commands holding "st".
    assert!(rows[1].starts_with("  /status  model, provider"), "{open}");
    assert!(rows[2].starts_with("  /system  "), "{open}");
    assert!(rows[3].starts_with("  /cost    "), "{open}");
    assert!(
        rows.iter().all(|r| r.chars().count() < cols),
        "rows are cut to the width:\n{open}"
    );
    assert_eq!(closed.trim_end(), "> /st", "Esc closes the menu");
    assert_eq!(
        taken.trim_end(),
        "> /status",
        "Tab took the first candidate; the menu is gone"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_opens_the_command_menu_at_100_columns() {
    let (open, closed, taken) = slash_menu_at(100).await;
    assert_slash_menu(&open, &closed, &taken, 100);
    insta::assert_snapshot!("slash_menu_100_columns", open);
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_opens_the_command_menu_at_60_columns() {
    let (open, closed, taken) = slash_menu_at(60).await;
    assert_slash_menu(&open, &closed, &taken, 60);
    assert!(open.lines().nth(1).unwrap().ends_with('…'), "{open}");
    insta::assert_snapshot!("slash_menu_60_columns", open);
}

/// `@main` finds `src/main.rs` by substring among the project's files (an ignored file left
/// out); Tab puts it in the line, and the file goes with the prompt.
#[tokio::test(flavor = "multi_thread")]
async fn at_opens_the_file_menu_and_tab_takes_the_file() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("It prints hello.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work();
    for (path, text) in [
        ("src/main.rs", "fn main() { println!(\"hello\"); }\n"),
        ("src/lib.rs", "\n"),
        ("docs/domain.md", "\n"),
        ("README.md", "\n"),
        ("target/main.o", "\n"),
        (".gitignore", "target/\n"),
    ] {
        let path = work.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let (open, taken) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 20, 100);
        t.wait_for_prompt();
        t.send("what does @main");
        t.wait_until("the file menu", |s| s.contains("  src/main.rs"));
        let open = screen_from(&t.contents(), "> what does @main");
        t.send("\t");
        t.wait_until("Tab to take src/main.rs", |s| s.contains("> what does @src/main.rs"));
        let taken = screen_from(&t.contents(), "> what does @src/main.rs");
        t.send(" do?\r");
        t.wait_for("It prints hello.");
        t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        (open, taken)
    })
    .await;
    assert_eq!(
        open.trim_end(),
        "> what does @main\n  src/main.rs\n  docs/domain.md",
        "the file name's prefix first, then the substring; the ignored file left out"
    );
    assert_eq!(taken.trim_end(), "> what does @src/main.rs");
    let sent = all_text(&body(&server.requests()[0])["messages"]);
    assert!(
        sent.contains("println!(\\\"hello\\\")") || sent.contains("println!(\"hello\")"),
        "{sent}"
    );
    insta::assert_snapshot!("at_menu_100_columns", open);
}
