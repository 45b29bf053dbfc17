//! `--continue` and `--resume PREFIX` continue the right session, with the right history in the
//! request and the session's model pre-selected; the session file never holds the key.

use panto_testkit::{script, MockServer, Reply};

use super::support::{all_text, body, Home, KEY};

async fn run_json(home: &Home, args: &[&str]) -> serde_json::Value {
    let mut full = args.to_vec();
    full.extend(["--output-format", "json"]);
    let out = home.run(&full, None).await;
    out.ok();
    out.json_lines().remove(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_and_resume_pick_the_right_history() {
    let server = MockServer::start().await;
    for answer in ["alpha answer", "beta answer", "gamma answer", "delta answer"] {
        server.push(Reply::sse(script::openai_text(answer)));
    }
    let mut home = Home::new();
    home.openai(&server);

    let a = run_json(&home, &["-p", "alpha prompt", "-m", "gpt-4o-mini"]).await;
    let b = run_json(&home, &["-p", "beta prompt"]).await;
    let a_id = a["session_id"].as_str().unwrap().to_owned();
    let b_id = b["session_id"].as_str().unwrap().to_owned();
    assert_ne!(a_id, b_id);

    // -c continues B, the most recent.
    let c = run_json(&home, &["-c", "-p", "gamma prompt"]).await;
    assert_eq!(c["session_id"], b_id.as_str());
    let req = body(&server.requests()[2]);
    let history = all_text(&req["messages"]);
    assert!(
        history.contains("beta prompt") && history.contains("beta answer"),
        "{history}"
    );
    assert!(history.contains("gamma prompt"));
    assert!(!history.contains("alpha"), "{history}");
    assert_eq!(req["model"], "gpt-4o", "B used the default model");

    // -r with a unique prefix of A's id resumes A, and A's model is pre-selected.
    let common = a_id.chars().zip(b_id.chars()).take_while(|(x, y)| x == y).count();
    let prefix = &a_id[..common + 1];
    assert!(prefix.len() < a_id.len());
    let d = run_json(&home, &["--resume", prefix, "-p", "delta prompt"]).await;
    assert_eq!(d["session_id"], a_id.as_str());
    let req = body(&server.requests()[3]);
    let roles_and_text: Vec<(String, String)> = super::support::messages(&req);
    let texts: Vec<&str> = roles_and_text.iter().map(|(_, t)| t.as_str()).collect();
    assert!(texts.iter().any(|t| t.contains("alpha prompt")), "{roles_and_text:?}");
    assert!(texts.iter().any(|t| t.contains("alpha answer")), "{roles_and_text:?}");
    assert!(texts.last().unwrap().contains("delta prompt"), "{roles_and_text:?}");
    assert!(!all_text(&req["messages"]).contains("beta"), "{roles_and_text:?}");
    assert_eq!(req["model"], "gpt-4o-mini", "resume pre-selects the session's model");
    // The system prompt is the same, so it is sent once, not repeated.
    assert_eq!(roles_and_text.iter().filter(|(r, _)| r == "system").count(), 1);

    // No file panto wrote holds the key.
    let files = home.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(KEY), "{} holds the API key", file.display());
        assert!(text.contains("gpt-4o"), "the session records the wire model");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_errors_are_usage_errors() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("one")));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-c", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "nothing to continue: {out:?}");
    assert!(out.stderr.contains("no session to continue"), "{}", out.stderr);
    home.run(&["-p", "first"], None).await.ok();
    let out = home.run(&["-r", "ffff", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("ffff"), "{}", out.stderr);
    let out = home.run(&["-r", "../etc", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("not a session id"), "{}", out.stderr);
    // -r without an id needs a terminal to pick on.
    let out = home.run(&["-r", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("terminal"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn changed_system_prompt_is_replaced_on_resume() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first answer")));
    server.push(Reply::sse(script::anthropic_text("second answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("AGENTS.md"), "Old rule.").unwrap();
    home.run(&["-p", "first"], None).await.ok();
    std::fs::write(home.work().join("AGENTS.md"), "New rule.").unwrap();
    home.run(&["-c", "-p", "second"], None).await.ok();
    let req = body(&server.requests()[1]);
    let system = all_text(&req["system"]);
    assert!(
        system.contains("New rule.") && !system.contains("Old rule."),
        "{system}"
    );
    // The log records the replacement as a system entry.
    let log = std::fs::read_to_string(&home.session_files()[0]).unwrap();
    assert!(log.contains("\"replace\""), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn quitting_says_how_to_resume_with_a_short_unique_id() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("The **first** answer.")));
    server.push(Reply::sse(script::anthropic_text("Back.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let (shown, home) = super::support::blocking(move || {
        let mut t = super::screen::Terminal::start(&home, &[]);
        t.wait_for_prompt();
        t.send_line("hello");
        t.wait_for("first answer.");
        t.wait_for_prompt();
        t.send_line("/quit");
        let exited = t.wait_exit();
        assert_eq!(exited.code, Some(0));
        (exited.shown, home)
    })
    .await;
    let hint = shown
        .lines()
        .find_map(|l| l.strip_prefix("resume this session with: panto -r "))
        .unwrap_or_else(|| panic!("no resume hint:\n{shown}"));
    assert!(hint.len() >= 8, "{hint}");
    // Resumed in the REPL, the last answer is shown rendered, as it was when it streamed.
    let hint_owned = hint.to_owned();
    let (recap, home) = super::support::blocking(move || {
        let mut t = super::screen::Terminal::start(&home, &["-r", &hint_owned]);
        t.wait_for_prompt();
        let shown = t.wait_for("resumed session");
        t.send_line("/quit");
        t.wait_exit();
        (shown, home)
    })
    .await;
    assert!(recap.contains("The first answer.") && !recap.contains("**"), "{recap}");
    // The id it names resumes the session.
    let out = home
        .run(&["-r", hint, "-p", "again", "--output-format", "json"], None)
        .await;
    let result: serde_json::Value = serde_json::from_str(out.ok().trim()).unwrap();
    assert!(result["session_id"].as_str().unwrap().starts_with(hint), "{result}");
}
