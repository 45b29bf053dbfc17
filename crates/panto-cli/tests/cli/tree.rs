//! The session tree from the command line: `/rewind N`, `/tree`, `/fork`, `-r ID --fork`, the
//! fork's origin in `panto sessions` and on stream-json's first line; and the done-criterion of
//! issue 19: rewound and forked sessions, resumed in new processes, each send exactly their own
//! branch to the model.

use panto_testkit::{script, MockServer, Reply};

use super::support::{sent, Home, Talk, ORIGINAL};

/// The header of a session file.
fn header(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_fork_and_resume_each_send_their_own_branch() {
    let server = MockServer::start().await;
    for answer in ["a1", "a2", "a3", "a2-again", "in-fork-answer", "orig-next", "fork-next"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let hint = home
        .in_repl(&[], |p| {
            for (q, a) in [("q1", "a1"), ("q2", "a2"), ("q3", "a3")] {
                p.type_line(q);
                p.expect(a);
            }
            // The picker: the earlier prompts, newest first, the first marked; Esc gives up.
            p.type_line("/rewind");
            // (rexpect reads bytes as Latin-1: the mark `❯` cannot be matched.)
            p.expect("rewind to before which prompt?");
            p.expect(" q3");
            p.expect("  q1");
            p.keys("\x1b");
            p.expect("no prompt picked: nothing changed");
            p.type_line("/rewind 9");
            p.expect("/rewind takes a number from 1 to 3");
            // Two prompts back, picked: to before q2.
            p.type_line("/rewind");
            p.expect("  q1");
            p.keys("\x1b[B");
            p.keys("\r");
            p.expect("rewound to before ");
            p.expect("q2");
            // The rewound prompt is back in the input, to edit: appended to, it is sent edited.
            p.expect("> q2");
            p.send_line("-again").unwrap();
            p.expect("a2-again");
            p.type_line("/tree");
            p.expect("q2-again  (you are here)");
            p.type_line("/fork");
            let (_, hint) = p
                .exp_regex(r"/resume [0-9a-f-]+\)")
                .expect("the fork names the original");
            p.type_line("in-fork");
            p.expect("in-fork-answer");
            p.quit();
            hint
        })
        .await;
    assert_eq!(sent(&server, 3), ["q1", "a1", "q2-again"], "the rewound branch alone");
    assert_eq!(sent(&server, 4), ["q1", "a1", "q2-again", "a2-again", "in-fork"]);

    let files = home.session_files();
    assert_eq!(files.len(), 2, "the original and the fork");
    let (fork, original): (Vec<_>, Vec<_>) = files.iter().partition(|f| header(f)["forked_from"].is_object());
    let fork_id = header(fork[0])["id"].as_str().unwrap().to_owned();
    let original_id = header(original[0])["id"].as_str().unwrap().to_owned();
    assert_eq!(header(fork[0])["forked_from"]["session"], original_id.as_str());
    // The fork was made within a second of the original, so their ids share more than their
    // first 8 characters: the hint's prefix is as long as it takes to name the original alone.
    let prefix = hint.trim_start_matches("/resume ").trim_end_matches(')');
    assert!(
        original_id.starts_with(prefix) && !fork_id.starts_with(prefix) && prefix.len() >= 8,
        "{prefix:?} for {original_id} beside {fork_id}"
    );
    // The abandoned branch is still in the original's log.
    let log = std::fs::read_to_string(original[0]).unwrap();
    assert!(log.contains("\"q3\"") && log.contains("\"type\":\"branch\""), "{log}");

    // Each resumed in a new process sends exactly its own branch.
    home.run(&["-r", &original_id, "-p", "next"], None).await.ok();
    assert_eq!(sent(&server, 5), ["q1", "a1", "q2-again", "a2-again", "next"]);
    home.run(&["-r", &fork_id, "-p", "next"], None).await.ok();
    assert_eq!(
        sent(&server, 6),
        ["q1", "a1", "q2-again", "a2-again", "in-fork", "in-fork-answer", "next"]
    );
}

/// `/fork` right after `/compact` forks at the end of the branch, the summary included: the
/// fork's next request carries the summary, not the messages it replaced.
#[tokio::test(flavor = "multi_thread")]
async fn fork_after_compact_keeps_the_summary() {
    let server = MockServer::start().await;
    for answer in ["a1", "a2", "SUMMARY-OF-Q1-Q2", "in-fork-answer"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        for (q, a) in [("q1", "a1"), ("q2", "a2")] {
            p.type_line(q);
            p.expect(a);
        }
        p.type_line("/compact");
        p.expect("compacted: ");
        p.type_line("/fork");
        p.expect("you are now in the fork");
        p.type_line("in-fork");
        p.expect("in-fork-answer");
        p.quit();
    })
    .await;
    let last = sent(&server, 3);
    assert!(
        last.iter().any(|m| m.contains("SUMMARY-OF-Q1-Q2")),
        "the fork's request carries the summary: {last:?}"
    );
    assert_eq!(last.last().map(String::as_str), Some("in-fork"), "{last:?}");
    let files = home.session_files();
    assert_eq!(files.len(), 2, "the original and the fork");
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_with_fork_names_the_origin_on_stream_json_and_in_the_listing() {
    let server = MockServer::start().await;
    for answer in ["first", "forked"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "hello", "--output-format", "json"], None).await;
    out.ok();
    let id = out.json_lines()[0]["session_id"].as_str().unwrap().to_owned();

    let out = home
        .run(
            &["-r", &id, "--fork", "-p", "again", "--output-format", "stream-json"],
            None,
        )
        .await;
    out.ok();
    let first = &out.json_lines()[0];
    assert_eq!(first["type"], "session");
    let fork_id = first["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, id, "a fork is a new session");
    assert_eq!(first["forked_from"]["session"], id.as_str());
    assert_eq!(sent(&server, 1), ["hello", "first", "again"]);

    let out = home.run(&["sessions", "--json"], None).await;
    out.ok();
    let listed: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    let fork = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == fork_id.as_str())
        .unwrap();
    assert_eq!(fork["forked_from"]["session"], id.as_str());
    let out = home.run(&["sessions"], None).await;
    // The origin is named by a prefix that names it alone (the fork's id shares its first 8
    // characters, both made within a second).
    let origin = out
        .ok()
        .split("(fork of ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no origin in {}", out.ok()));
    assert!(
        id.starts_with(origin) && !fork_id.starts_with(origin) && origin.len() >= 8,
        "{origin:?} for {id} beside {fork_id}"
    );

    let out = home.run(&["-r", "--fork", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--fork needs the session to fork"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_with_files_restores_edited_files_byte_for_byte_and_removes_created_ones() {
    let server = MockServer::start().await;
    let edit = serde_json::json!({"path": "a.txt", "old_string": "one", "new_string": "two"}).to_string();
    let write = serde_json::json!({"path": "sub/new.txt", "content": "created\n"}).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_01", "edit", &edit),
        ("toolu_02", "write", &write),
    ])));
    server.push(Reply::sse(script::anthropic_text("done1")));
    let edit2 = serde_json::json!({"path": "a.txt", "old_string": "café", "new_string": "tea"}).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_03", "edit", &edit2)])));
    server.push(Reply::sse(script::anthropic_text("done2")));
    server.push(Reply::sse(script::anthropic_text("after")));
    let mut home = Home::new();
    home.anthropic(&server);
    let a = home.work().join("a.txt");
    std::fs::write(&a, ORIGINAL).unwrap();
    home.in_repl(&["--approve", "auto"], |p| {
        p.type_line("change things");
        p.expect("done1");
        p.type_line("change more");
        p.expect("done2");
        p.type_line("/rewind 1 --files");
        p.expect("rewound to before ");
        p.expect("change more");
        p.expect("restored ");
        p.expect("a.txt");
        p.type_line("/rewind --files 1");
        p.expect("rewound to before ");
        p.expect("change things");
        // In the order the files were first changed: new.txt, then a.txt.
        p.expect("removed ");
        p.expect("new.txt (it did not exist then)");
        p.expect("restored ");
        p.expect("a.txt");
        p.type_line("again");
        p.expect("after");
        p.quit();
    })
    .await;
    assert_eq!(std::fs::read(&a).unwrap(), ORIGINAL.as_bytes(), "byte for byte");
    assert!(
        !home.work().join("sub/new.txt").exists(),
        "a file created since is removed"
    );
    assert_eq!(sent(&server, 4), ["again"], "the rewound branch alone");
    let log = home
        .session_files()
        .into_iter()
        .find(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(
        log.matches("\"checkpoint\":").count(),
        6,
        "three changes and three restores: {log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_with_files_leaves_a_file_changed_outside_panto_and_says_so() {
    let server = MockServer::start().await;
    let write = serde_json::json!({"path": "b.txt", "content": "by panto"}).to_string();
    let edit = serde_json::json!({"path": "c.txt", "old_string": "one", "new_string": "two"}).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_01", "write", &write),
        ("toolu_02", "edit", &edit),
    ])));
    server.push(Reply::sse(script::anthropic_text("written")));
    let mut home = Home::new();
    home.anthropic(&server);
    let (b, c) = (home.work().join("b.txt"), home.work().join("c.txt"));
    std::fs::write(&b, "before").unwrap();
    std::fs::write(&c, ORIGINAL).unwrap();
    let outside = b.clone();
    home.in_repl(&["--approve", "auto"], move |p| {
        p.type_line("write b");
        p.expect("written");
        std::fs::write(&outside, "the user's own edit").unwrap();
        p.type_line("/rewind 1 --files");
        p.expect("rewound to before ");
        p.expect("write b");
        // The note is broken at spaces to the terminal's width.
        p.exp_regex(r"b\.txt\s+alone:\s+it\s+changed\s+outside\s+panto\s+since\s+panto\s+last\s+wrote\s+it\s+\(not\s+overwritten\)")
            .unwrap();
        p.quit();
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&b).unwrap(),
        "the user's own edit",
        "not overwritten"
    );
    assert_eq!(
        std::fs::read(&c).unwrap(),
        ORIGINAL.as_bytes(),
        "the others are restored"
    );
}
