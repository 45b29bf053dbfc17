//! The session tree from the command line: `/rewind N`, `/tree`, `/fork`, `-r ID --fork`, the
//! fork's origin in `panto sessions` and on stream-json's first line; and the done-criterion of
//! issue 19: rewound and forked sessions, resumed in new processes, each send exactly their own
//! branch to the model.

use panto_testkit::{script, MockServer, Reply};

use super::support::{body, Home, Talk};

/// The texts of the user and assistant messages of request `n` (the system prompt left out).
fn sent(server: &MockServer, n: usize) -> Vec<String> {
    let request = body(&server.requests()[n]);
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match &m["content"] {
            serde_json::Value::String(text) => text.clone(),
            blocks => blocks
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect()
}

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
    home.in_repl(&[], |p| {
        for (q, a) in [("q1", "a1"), ("q2", "a2"), ("q3", "a3")] {
            p.type_line(q);
            p.expect(a);
        }
        p.type_line("/rewind");
        p.expect("1. q3");
        p.expect("3. q1");
        p.type_line("/rewind 9");
        p.expect("/rewind takes a number from 1 to 3");
        // Two prompts back: to before q2.
        p.type_line("/rewind 2");
        p.expect("rewound to before");
        p.type_line("q2-again");
        p.expect("a2-again");
        p.type_line("/tree");
        p.expect("q2-again  (you are here)");
        p.type_line("/fork");
        p.expect("you are now in the fork");
        p.type_line("in-fork");
        p.expect("in-fork-answer");
        p.quit();
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
    assert!(out.ok().contains(&format!("(fork of {})", &id[..8])), "{}", out.ok());

    let out = home.run(&["-r", "--fork", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--fork needs the session to fork"),
        "{}",
        out.stderr
    );
}
