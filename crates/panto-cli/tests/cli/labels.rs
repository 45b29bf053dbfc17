//! What a prompt is called where panto names it (`/tree`, `/rewind`, session listings, the
//! resume banner): what the user typed, never the `!` output or `@file` text attached to it.

use panto_testkit::{script, MockServer, Reply};

use super::screen::Terminal;
use super::support::{all_text, blocking, body, Home};

/// `!` output kept for the next prompt does not follow `/new` into the new session; a prompt
/// with an `@file` is labelled by what was typed in `/tree`, `/sessions`, `panto sessions` and
/// the banner of `panto -c`, while the model still gets the file.
#[tokio::test(flavor = "multi_thread")]
async fn labels_and_previews_show_what_was_typed_not_what_was_attached() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Seen it.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("notes.md"), "NOTE-CONTENT\n").unwrap();
    let (shown, home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 40, 100);
        t.wait_for_prompt();
        t.send_line("!echo SHELL-LEAK");
        t.wait_for("exit code 0");
        t.wait_for_prompt();
        t.send_line("/new");
        t.wait_for("the output of one ! command");
        t.wait_for_prompt();
        t.send_line("look at @notes.md please");
        t.wait_for("Seen it.");
        t.wait_for_prompt();
        t.send_line("/tree");
        t.wait_for("(you are here)");
        t.wait_for_prompt();
        t.send_line("/sessions");
        let shown = t.wait_until("the listing", |s| s.matches("look at @notes.md please").count() >= 3);
        t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (shown, home)
    })
    .await;
    let after = shown.split("> /tree").nth(1).expect("the tree was shown");
    assert!(after.contains("* look at @notes.md please  (you are here)"), "{after}");
    assert!(
        !after.contains("SHELL-LEAK") && !after.contains("NOTE-CONTENT"),
        "{after}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = all_text(&body(&requests[0])["messages"]);
    assert!(
        !sent.contains("SHELL-LEAK"),
        "the ! output stayed with the first session: {sent}"
    );
    assert!(
        sent.contains("<file path=\"notes.md\">\nNOTE-CONTENT\n</file>"),
        "{sent}"
    );

    let listing = home.run(&["sessions"], None).await;
    let listing = listing.ok();
    assert!(listing.contains("look at @notes.md please"), "{listing}");
    assert!(
        !listing.contains("NOTE-CONTENT") && !listing.contains("file path"),
        "{listing}"
    );

    // The resume banner recalls the prompt as typed.
    let banner = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["-c"], 40, 100);
        let banner = t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        banner
    })
    .await;
    assert!(banner.contains("you: look at @notes.md please"), "{banner}");
    assert!(
        !banner.contains("NOTE-CONTENT") && !banner.contains("file path"),
        "{banner}"
    );
}
