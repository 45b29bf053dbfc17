//! A session directory someone else can write: a FIFO named like a session hangs neither
//! `panto sessions` nor `-c`, and a directory others can write is warned about on stderr, once.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use panto_testkit::{script, MockServer, Reply};

use super::support::{all_text, body, Home};

/// Makes a FIFO at `path` (with the system's `mkfifo`).
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_named_like_a_session_hangs_neither_listing_nor_continuing() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first answer")));
    server.push(Reply::sse(script::anthropic_text("continued answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.run(&["-p", "first question"], None).await.ok();
    let fifo_id = panto_core::store::new_session_id();
    let fifo = home.sessions_dir().join(format!("{fifo_id}.jsonl"));
    mkfifo(&fifo);
    let named = |stderr: &str| stderr.contains(&fifo.display().to_string()) && stderr.contains("FIFO");

    // Before, each of these waited forever for a writer on the FIFO (the harness gives up
    // after a minute).
    let out = home.run(&["sessions"], None).await;
    assert!(out.ok().contains("first question"), "{}", out.stdout);
    assert!(named(&out.stderr), "{}", out.stderr);

    let out = home.run(&["-c", "-p", "continued question"], None).await;
    assert!(out.ok().contains("continued answer"), "{}", out.stdout);
    assert!(named(&out.stderr), "{}", out.stderr);
    let history = all_text(&body(&server.requests()[1])["messages"]);
    assert!(history.contains("first question"), "{history}");

    // Resuming it by id says what it is.
    let out = home.run(&["-r", &fifo_id, "-p", "x"], None).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        named(&out.stderr) && out.stderr.contains("not a regular file"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_directory_others_can_write_is_warned_about_once() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("an answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.run(&["-p", "a question"], None).await.ok();
    let dir = home.sessions_dir();
    let set_mode = |mode: u32| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();

    set_mode(0o777);
    let warning = format!(
        "panto: warning: the session directory {} is writable by its group and by everyone (mode 0777)",
        dir.display()
    );
    let fix = format!("fix: chmod 700 {}", dir.display());
    for args in [&["sessions"][..], &["sessions", "--json"], &["-c", "-p", "again"]] {
        server.push(Reply::sse(script::anthropic_text("again")));
        let out = home.run(args, None).await;
        out.ok();
        assert_eq!(out.stderr.matches(&warning).count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(&fix), "{args:?}: {}", out.stderr);
    }

    set_mode(0o700);
    let out = home.run(&["sessions"], None).await;
    out.ok();
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}
