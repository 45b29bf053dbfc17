//! `panto sessions` (table, JSON, export) and `panto models`.

use panto_testkit::{script, MockServer, Reply};

use super::support::Home;

#[tokio::test(flavor = "multi_thread")]
async fn sessions_list_newest_first_and_export() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first answer")));
    server.push(Reply::sse(script::anthropic_text("second answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.run(&["-p", "older question"], None).await.ok();
    home.run(&["-p", "newer question"], None).await.ok();

    let out = home.run(&["sessions", "--json"], None).await;
    let list: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["last_user_message"], "newer question");
    assert_eq!(list[1]["last_user_message"], "older question");
    // system prompt, user prompt, assistant answer
    assert_eq!(list[0]["message_count"], 3);
    assert_eq!(list[0]["model"], "claude-sonnet-4-5");
    assert_eq!(list[0]["api_style"], "anthropic-messages");
    assert!(list[0]["last_prompt_at"].is_string());

    let table = home.run(&["sessions"], None).await;
    let rows: Vec<&str> = table.ok().lines().collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].contains("newer question") && rows[0].contains("claude-sonnet-4-5"),
        "{rows:?}"
    );
    let newest = list[0]["id"].as_str().unwrap();
    let short = rows[0].split_whitespace().next().unwrap();
    assert!(
        newest.starts_with(short) && short.len() >= 8,
        "{short} is a prefix of {newest}"
    );

    let md = home.run(&["sessions", "export", newest], None).await;
    let md = md.ok();
    assert!(md.starts_with(&format!("# Session {newest}")), "{md}");
    assert!(
        md.contains("## User\n\nnewer question") && md.contains("## Assistant\n\nsecond answer"),
        "{md}"
    );

    let json = home.run(&["sessions", "export", short, "--format", "json"], None).await;
    let document: serde_json::Value = serde_json::from_str(json.ok()).unwrap();
    assert_eq!(
        (document["format"].as_str(), document["version"].as_u64()),
        (Some("panto-session"), Some(1))
    );
    let roles: Vec<&str> = document["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);

    let missing = home.run(&["sessions", "export", "ffffffff"], None).await;
    assert_eq!(missing.code, Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_origin_with_multibyte_characters_is_listed_not_a_panic() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.run(&["-p", "question"], None).await.ok();
    let file = home.session_files().pop().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    // Eight bytes end inside the third character.
    header["forked_from"] = serde_json::json!({"session": "ééééééé-fork", "entry": "e1"});
    std::fs::write(&file, format!("{header}\n{rest}")).unwrap();

    let out = home.run(&["sessions"], None).await;
    assert!(out.ok().contains("(fork of ééééééé-)"), "{}", out.ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_on_an_empty_store_and_a_custom_dir() {
    let mut home = Home::new();
    let out = home.run(&["sessions", "--json"], None).await;
    assert_eq!(out.ok().trim(), "[]");
    let custom = home.dir.path().join("elsewhere");
    home.set("PANTO_SESSION_DIR", custom.to_str().unwrap());
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("stored elsewhere")));
    home.openai(&server);
    home.run(&["-p", "q"], None).await.ok();
    assert!(home.session_files().is_empty());
    assert_eq!(super::support::files_under(&custom).len(), 1);
    let out = home.run(&["sessions", "--json"], None).await;
    let list: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn models_lists_aliases_and_marks_the_default() {
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k");
    home.write_config(
        "default_model = \"big\"\n[models.small]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\n[models.big]\nprovider = \"anthropic\"\nmodel = \"claude-opus-4-5\"\n",
    );
    let out = home.run(&["models"], None).await;
    let rows: Vec<&str> = out.ok().lines().collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].starts_with("  small") && rows[0].contains("claude-haiku-4-5"),
        "{rows:?}"
    );
    assert!(
        rows[1].starts_with("* big") && rows[1].contains("claude-opus-4-5"),
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quoted_tilde_session_dir_is_expanded_and_tilde_user_is_refused() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("stored at home")));
    server.push(Reply::sse(script::anthropic_text("stored at home too")));
    let mut home = Home::new();
    home.anthropic(&server);
    // As `PANTO_SESSION_DIR='~/s'` sets it: the shell left the `~` alone.
    home.set("PANTO_SESSION_DIR", "~/s");
    home.run(&["-p", "q"], None).await.ok();
    assert_eq!(super::support::files_under(&home.home().join("s")).len(), 1);
    assert!(!home.work().join("~").exists(), "no directory literally named ~");

    home.set("PANTO_SESSION_DIR", "~bob/s");
    let out = home.run(&["-p", "q"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("PANTO_SESSION_DIR") && out.stderr.contains("~bob/s") && out.stderr.contains("~user"),
        "{}",
        out.stderr
    );
    // `--session-dir=~/t` is not expanded by the shell either.
    home.run(&["--session-dir=~/t", "-p", "q"], None).await.ok();
    assert_eq!(super::support::files_under(&home.home().join("t")).len(), 1);
    assert_eq!(server.requests().len(), 2, "~bob sent nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unusable_session_dir_fails_before_the_request() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("never asked for")));
    let mut home = Home::new();
    home.anthropic(&server);
    // A regular file where a directory must be: no one can create the session there, not even
    // root (the tests may run as root, who writes through permissions).
    let blocker = home.work().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let dir = blocker.join("sessions");
    home.set("PANTO_SESSION_DIR", dir.to_str().unwrap());
    for args in [&["-p", "paid question"][..], &[][..]] {
        let out = home.run(args, Some("a REPL question\n")).await;
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(
            out.stderr
                .contains(&format!("cannot use the session directory {}", dir.display()))
                && out.stderr.contains("--no-session"),
            "{}",
            out.stderr
        );
    }
    assert!(server.requests().is_empty(), "no request was sent");
}
