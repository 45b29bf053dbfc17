//! `panto sessions search`: hits newest first with the listing's short ids, JSON, the exit
//! codes, and `-r` resuming at a hit on a branch a rewind left.

use panto_testkit::{script, MockServer, Reply};

use super::support::{sent, Home};

#[tokio::test(flavor = "multi_thread")]
async fn search_finds_what_was_said_and_resumes_on_the_hits_branch() {
    let server = MockServer::start().await;
    for answer in ["a1", "the Ocelot sleeps", "a3", "unrelated", "resumed"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "q1", "--output-format", "json"], None).await;
    let id = out.json_lines()[0]["session_id"].as_str().unwrap().to_owned();
    home.run(&["-r", &id, "-p", "q2 about cats"], None).await.ok();
    // Back to before "q2 about cats": the ocelot's answer is left on another branch.
    home.run(&["-r", &id, "--rewind", "1", "-p", "q2b"], None).await.ok();
    home.run(&["-p", "say something about an ocelot"], None).await.ok();

    let out = home.run(&["sessions", "search", "OCELOT"], None).await;
    let lines: Vec<&str> = out.ok().lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    // Newest first: the last session's prompt, then the left branch's answer.
    assert!(
        lines[0].contains("user") && lines[0].contains("say something about an ocelot"),
        "{lines:?}"
    );
    assert!(!lines[0].contains("(other branch)"), "{lines:?}");
    assert!(
        lines[1].contains("assistant")
            && lines[1].contains("(other branch)")
            && lines[1].ends_with("the Ocelot sleeps"),
        "{lines:?}"
    );
    let short = lines[1].split_whitespace().next().unwrap();
    assert!(id.starts_with(short) && short.len() >= 8, "{short} names {id}");

    let json = home.run(&["sessions", "search", "ocelot", "--json"], None).await;
    let hits: serde_json::Value = serde_json::from_str(json.ok()).unwrap();
    assert_eq!(hits[1]["session"], id.as_str());
    assert_eq!(hits[1]["active_branch"], false);
    assert_eq!(hits[1]["role"], "assistant");
    assert_eq!(hits[1]["snippet"], "the Ocelot sleeps");
    assert_eq!(hits[1]["matched"], serde_json::json!([4, 10]));

    // Tool text only with --tools; nothing found is exit code 1; a bad pattern a usage error.
    let none = home.run(&["sessions", "search", "wombat"], None).await;
    assert_eq!((none.code, none.stdout.as_str()), (Some(1), ""), "{}", none.stderr);
    assert!(none.stderr.contains("wombat"), "{}", none.stderr);
    let bad = home.run(&["sessions", "search", "--regex", "(ocelot"], None).await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("(ocelot"), "{}", bad.stderr);
    let regex = home
        .run(&["sessions", "search", "--regex", r"oce\w+ sleeps$"], None)
        .await;
    assert_eq!(regex.ok().lines().count(), 1, "{}", regex.stdout);
    // Another directory's sessions only with --all.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = home.run_in(elsewhere.path(), &["sessions", "search", "ocelot"]).await;
    assert_eq!(out.code, Some(1), "{}", out.stdout);
    let out = home
        .run_in(elsewhere.path(), &["sessions", "search", "ocelot", "--all"])
        .await;
    assert_eq!(out.ok().lines().count(), 2);

    // -r without a terminal resumes at the newest hit: searched for the left branch's words
    // alone, the session resumes on that branch.
    let resumed = home
        .run(&["sessions", "search", "ocelot sleeps", "-r"], Some("go on\n"))
        .await;
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    let last = server.requests().len() - 1;
    assert_eq!(
        sent(&server, last),
        ["q1", "a1", "q2 about cats", "the Ocelot sleeps", "go on"]
    );
}
