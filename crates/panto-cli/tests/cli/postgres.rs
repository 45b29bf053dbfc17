//! Sessions in PostgreSQL (`--store postgres://…`): two panto processes on different sessions
//! and a third listing them behave exactly as with the file store; `-c` continues the right one;
//! `panto sessions import` moves file sessions in. Runs against a real PostgreSQL that the test
//! starts itself; a machine without one fails the test with the reason.

use panto_testkit::postgres as pg_server;
use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

use super::support::{all_text, body, Home};

fn database() -> (pg_server::Server, String) {
    let server = pg_server::start(pg_server::Durability::Fast)
        .unwrap_or_else(|e| panic!("these tests need PostgreSQL (.ci/run installs it): {e}"));
    server.createdb("panto_cli").expect("create the test database");
    let url = server.url("panto_cli");
    (server, url)
}

fn listing(stdout: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(stdout.trim())
        .unwrap_or_else(|e| panic!("sessions --json: {e}: {stdout}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_writers_and_a_lister_share_one_database() {
    let (_db, url) = database();
    let mock = MockServer::start().await;
    for answer in ["first answer", "second answer", "continued answer"] {
        mock.push(Reply::sse(script::openai_text(answer)));
    }
    let mut home = Home::new();
    home.openai(&mock);

    // Two processes at once, each on its own new session.
    let args_a = ["--store", &url, "-p", "question one", "--output-format", "json"];
    let args_b = ["--store", &url, "-p", "question two", "--output-format", "json"];
    let (a, b) = tokio::join!(home.run(&args_a, None), home.run(&args_b, None));
    let a: Value = serde_json::from_str(a.ok().trim()).unwrap();
    let b: Value = serde_json::from_str(b.ok().trim()).unwrap();
    assert_ne!(a["session_id"], b["session_id"]);
    assert!(home.session_files().is_empty(), "nothing went to the session directory");

    // A third process lists both, newest prompt first, with exact counts and prompts.
    let out = home.run(&["sessions", "--json", "--store", &url], None).await;
    let listed = listing(out.ok());
    assert_eq!(listed.len(), 2, "{listed:?}");
    let ids: Vec<&str> = listed.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&a["session_id"].as_str().unwrap()) && ids.contains(&b["session_id"].as_str().unwrap()));
    for s in &listed {
        assert!(s["message_count"].as_u64().unwrap() >= 2, "{s}");
        assert!(s["last_user_message"].as_str().unwrap().starts_with("question"), "{s}");
        assert_eq!(s["model"], "gpt-4o");
    }

    // -c continues the most recent one, with its history in the request.
    let newest = listed[0]["id"].as_str().unwrap().to_owned();
    let newest_prompt = listed[0]["last_user_message"].as_str().unwrap().to_owned();
    let c = home
        .run(
            &["--store", &url, "-c", "-p", "and then?", "--output-format", "json"],
            None,
        )
        .await;
    let c: Value = serde_json::from_str(c.ok().trim()).unwrap();
    assert_eq!(c["session_id"], newest.as_str());
    let history = all_text(&body(&mock.requests()[2])["messages"]);
    assert!(
        history.contains(&newest_prompt) && history.contains("and then?"),
        "{history}"
    );

    // Export reads from the database too, by a prefix. Not the first 13 characters: they are
    // a UUIDv7's millisecond timestamp, which the two sessions started together may share (the
    // prefix is then ambiguous, rightly); 23 take in 28 random bits.
    let exported = home
        .run(&["sessions", "--store", &url, "export", &newest[..23]], None)
        .await;
    assert!(exported.ok().contains("and then?"));
}

#[tokio::test(flavor = "multi_thread")]
async fn file_sessions_import_into_the_database() {
    let (_db, url) = database();
    let mock = MockServer::start().await;
    mock.push(Reply::sse(script::anthropic_text("kept in a file")));
    let mut home = Home::new();
    home.anthropic(&mock);
    let made = home
        .run(&["-p", "a file session", "--output-format", "json"], None)
        .await;
    let made: Value = serde_json::from_str(made.ok().trim()).unwrap();
    let dir = home.sessions_dir();

    let first = home
        .run(&["sessions", "--store", &url, "import", dir.to_str().unwrap()], None)
        .await;
    assert!(first.ok().contains("imported 1 session(s)"), "{}", first.stdout);
    let again = home
        .run(&["sessions", "--store", &url, "import", dir.to_str().unwrap()], None)
        .await;
    assert!(again.ok().contains("imported 0 session(s)") && again.stdout.contains("1 already there"));

    let out = home.run(&["sessions", "--json", "--store", &url], None).await;
    let listed = listing(out.ok());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], made["session_id"]);
    assert_eq!(listed[0]["last_user_message"], "a file session");
}

#[tokio::test]
async fn a_store_that_is_not_postgres_is_a_usage_error() {
    let home = Home::new();
    let out = home.run(&["sessions", "--store", "mysql://x"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--store must be a postgres://"), "{}", out.stderr);
    let out = home.run(&["sessions", "import", "/nonexistent"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("needs a PostgreSQL store"), "{}", out.stderr);
}
