//! The start banner names the session as every id panto prints: by the shortest prefix of its
//! id, 8 characters at least, that no other stored session shares.

use panto_testkit::{script, MockServer, Reply};

use super::screen::Terminal;
use super::support::{blocking, Home};

/// The start banner names the session by the shortest prefix of its id that no other stored
/// session shares, 8 characters at least, never the whole id: a new session's and a resumed
/// one's whose id shares its first 10 characters with another's.
#[tokio::test(flavor = "multi_thread")]
async fn the_banner_names_the_session_by_its_shortest_unique_prefix() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("an answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    let (new_banner, home) = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 40, 100);
        t.wait_for_prompt();
        t.send_line("a question");
        t.wait_for("an answer");
        t.wait_for_prompt();
        let shown = t.wait_for("new session");
        t.send_line("/quit");
        t.wait_exit();
        (shown, home)
    })
    .await;
    let file = home.session_files().pop().unwrap();
    let id = file.file_stem().unwrap().to_str().unwrap().to_owned();
    assert!(
        new_banner.contains(&format!("new session {} · ", &id[..8])),
        "{new_banner}"
    );
    assert!(
        !new_banner.contains(&id[..9]),
        "the banner shows more than 8 characters:\n{new_banner}"
    );

    // A session whose id shares 10 characters with this one's: the resumed banner needs 11.
    let mut twin = id.clone();
    let differs = if &twin[10..11] == "0" { "1" } else { "0" };
    twin.replace_range(10..11, differs);
    let text = std::fs::read_to_string(&file).unwrap().replace(&id, &twin);
    let twin_file = file.with_file_name(format!("{twin}.jsonl"));
    std::fs::write(&twin_file, text).unwrap();
    std::fs::set_permissions(&twin_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let resumed = blocking(move || {
        let mut t = Terminal::start_sized(&home, &["-r", id.as_str()], 40, 100);
        t.wait_for_prompt();
        let shown = t.wait_for("resumed session");
        t.send_line("/quit");
        t.wait_exit();
        (shown, id)
    })
    .await;
    let (shown, id) = resumed;
    assert!(shown.contains(&format!("resumed session {} (", &id[..11])), "{shown}");
    assert!(
        !shown.contains(&id[..12]),
        "the banner shows more than the unique prefix:\n{shown}"
    );
}
