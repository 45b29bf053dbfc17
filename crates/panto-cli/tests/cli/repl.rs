//! The REPL driven through a pseudo-terminal: a turn, slash commands, Ctrl-C mid-stream, the
//! approval question, and history across runs.
//!
//! Each conversation runs through `Home::in_repl` (support.rs).

use panto_testkit::{script, MockServer, Reply};

use super::support::{all_text, body, Home, Talk, KEY};

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_and_slash_commands() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Hi from the REPL.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.expect("new session");
        p.type_line("hello there");
        p.expect("Hi from the REPL.");
        // The cost line after the turn (rexpect reads bytes as Latin-1, so match ASCII only).
        p.exp_regex(r"\d+ in .* \d+ out .*\$0\.\d{4}").unwrap();
        p.type_line("/modle");
        p.expect("unknown command /modle; did you mean /model");
        p.type_line("/model");
        p.expect("model: claude-sonnet-4-5 (via anthropic)");
        p.type_line("/cost");
        p.expect("this run, 1 turn");
        p.quit();
    })
    .await;
    let req = body(&server.requests()[0]);
    assert!(all_text(&req["messages"]).contains("hello there"));
    let files = home.session_files();
    assert_eq!(files.len(), 1);
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(log.contains("Hi from the REPL.") && !log.contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_mid_stream_keeps_the_partial_text_and_returns_to_the_prompt() {
    let server = MockServer::start().await;
    // The stream sends two words and then stalls, as a slow model would.
    let stream = script::anthropic_text("PARTIAL-ONE PARTIAL-TWO and the rest never arrives");
    let text = String::from_utf8(stream.clone()).unwrap();
    let at = text.find("PARTIAL-TWO").unwrap();
    let cut = at + text[at..].find("\n\n").unwrap() + 2;
    server.push(Reply::sse(stream).stall_after(cut));
    server.push(Reply::sse(script::anthropic_text("recovered")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.type_line("tell me a story");
        p.expect("PARTIAL-TWO");
        std::thread::sleep(std::time::Duration::from_millis(200));
        p.send_control('c').unwrap();
        p.expect("cancelled");
        p.type_line("go on");
        p.expect("recovered");
        p.expect("> ");
        p.send_control('d').unwrap();
    })
    .await;
    // The second request carries the salvaged partial answer, then the new prompt.
    let req = body(&server.requests()[1]);
    let msgs = req["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let partial = all_text(&msgs[1]["content"]);
    assert!(partial.contains("PARTIAL-ONE PARTIAL-TWO"), "{partial}");
    assert!(!partial.contains("never arrives"), "{partial}");
    // And the session on disk holds it too.
    let log = std::fs::read_to_string(&home.session_files()[0]).unwrap();
    assert!(log.contains("PARTIAL-ONE PARTIAL-TWO"));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_twice_at_the_prompt_exits_with_the_resume_hint() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("done here")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.type_line("hello");
        p.expect("done here");
        // One Ctrl-C clears the line and says how to leave; the REPL stays.
        p.keys("half-typed");
        p.send_control('c').unwrap();
        p.expect("(Ctrl-C again to exit)");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // Too late for the first one to count: this one only warns again.
        p.send_control('c').unwrap();
        p.expect("(Ctrl-C again to exit)");
        // A second within a second exits, with the hint to resume.
        p.send_control('c').unwrap();
        p.expect("resume this session with: panto -r");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn status_shows_what_the_repl_works_with_and_clear_and_exit_do_what_they_say() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first answer")));
    server.push(Reply::sse(script::anthropic_text("second answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work().display().to_string();
    home.in_repl(&["--approve", "auto"], move |p| {
        p.type_line("first");
        p.expect("first answer");
        p.type_line("/status");
        p.expect("model        claude-sonnet-4-5 (via anthropic)");
        p.expect("provider     anthropic at http://127.0.0.1:");
        p.expect(&format!("directory    {work}"));
        p.expect(" messages)");
        p.expect("approval     auto");
        p.expect("sandbox      ");
        p.expect("MCP servers  none configured");
        // /clear starts a new session, as /new does: the next prompt goes alone.
        p.type_line("/clear");
        p.expect("new session");
        p.type_line("second");
        p.expect("second answer");
        p.type_line("/exit");
    })
    .await;
    let second = body(&server.requests()[1]);
    assert_eq!(second["messages"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(home.session_files().len(), 2);
}

/// `/init` asks the model for an AGENTS.md: a turn like any other, with the request written for it.
#[tokio::test(flavor = "multi_thread")]
async fn init_asks_the_model_to_write_agents_md() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("I will write it.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.type_line("/init");
        p.expect("I will write it.");
        p.quit();
    })
    .await;
    let request = body(&server.requests()[0]);
    let sent = all_text(&request["messages"]);
    assert!(sent.contains("write an AGENTS.md at its root"), "{sent}");
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_question_runs_the_tool_on_yes() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "bash",
        r#"{"command":"echo approved > ok.txt"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("File written.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.type_line("write ok.txt");
        p.expect("allow bash: echo approved > ok.txt");
        p.expect("[a]lways for bash / [f]eedback (no, and say why):");
        // One key answers, and the answer is echoed.
        p.keys("y");
        p.expect("yes");
        p.expect("bash (1 line, 13 bytes)");
        p.expect("[exit code 0]");
        p.expect("File written.");
        p.quit();
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(home.work().join("ok.txt")).unwrap(),
        "approved\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn history_persists_across_runs_and_continue_resumes() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("noted")));
    server.push(Reply::sse(script::anthropic_text("noted again")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.type_line("remember this line");
        p.expect("noted");
        p.quit();
    })
    .await;
    let history = std::fs::read_to_string(home.history_file()).expect("a history file");
    assert!(history.contains("remember this line"), "{history}");
    assert!(!history.contains(KEY));

    home.in_repl(&["-c"], |p| {
        // The recap of the resumed session.
        p.expect("resumed session");
        p.expect("you: remember this line");
        p.expect("> ");
        // Up twice: past "/quit" to the prompt typed in the first run.
        p.keys("\x1b[A");
        p.expect("/quit");
        p.keys("\x1b[A");
        p.expect("remember this line");
        p.keys("\r");
        p.expect("noted again");
        p.quit();
    })
    .await;
    let req = body(&server.requests()[1]);
    let msgs = req["messages"].as_array().unwrap();
    assert_eq!(
        msgs.len(),
        3,
        "the continued session's history plus the recalled line: {msgs:?}"
    );
    assert!(all_text(&msgs[2]["content"]).contains("remember this line"));
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_without_an_id_offers_a_picker() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("answer one")));
    server.push(Reply::sse(script::openai_text("answer two")));
    server.push(Reply::sse(script::openai_text("picked up")));
    let mut home = Home::new();
    home.openai(&server);
    home.run(&["-p", "topic one"], None).await.ok();
    home.run(&["-p", "topic two"], None).await.ok();
    home.in_repl(&["-r"], |p| {
        // Newest first, the first marked: one down is "topic one".
        p.expect("resume which session?");
        p.expect("topic two");
        p.expect("topic one");
        p.keys("\x1b[B");
        p.keys("\r");
        p.expect("resumed session");
        p.expect("you: topic one");
        p.type_line("and more");
        p.expect("picked up");
        p.quit();
    })
    .await;
    let req = body(&server.requests()[2]);
    let history = all_text(&req["messages"]);
    assert!(
        history.contains("topic one") && history.contains("and more") && !history.contains("topic two"),
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tab_completes_a_session_id_after_resume() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("first answer")));
    let mut home = Home::new();
    home.openai(&server);
    home.run(&["-p", "the earlier topic"], None).await.ok();
    let listing = home.run(&["sessions", "--json"], None).await;
    let sessions: serde_json::Value = serde_json::from_str(listing.ok()).unwrap();
    let id = sessions[0]["id"].as_str().unwrap().to_owned();
    // The banner names it by its short id: the only session, so 8 characters.
    let resumed = format!("resumed session {} (", &id[..8]);
    home.in_repl(&[], move |p| {
        p.expect("> ");
        // The session ids are listed when Tab first asks for them.
        p.keys("/resume \t");
        p.expect(&id);
        p.keys("\r");
        p.expect(&resumed);
        p.expect("you: the earlier topic");
        p.quit();
    })
    .await;
}

/// The price table knows model families (`claude-sonnet-4`), not every name in them: Tab after
/// `/model` also offers the model in use and the default, the names typed most.
#[tokio::test(flavor = "multi_thread")]
async fn tab_after_model_offers_the_default_model() {
    let server = MockServer::start().await;
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], move |p| {
        p.expect("> ");
        p.keys("/model claude-sonnet-4-\t");
        p.expect("claude-sonnet-4-5");
        p.keys("\r");
        p.expect("switched to claude-sonnet-4-5");
        p.quit();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn piped_repl_keeps_stdout_for_content_and_never_takes_approvals_from_the_pipe() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text_and_tool_uses(
        "Creating it.",
        &[("toolu_01", "bash", r#"{"command":"echo piped > p.txt"}"#)],
    )));
    server.push(Reply::sse(script::anthropic_text("Not created.")));
    server.push(Reply::sse(script::anthropic_text("You said y.")));
    let mut home = Home::new();
    home.anthropic(&server);
    // The "y" is the next prompt, not an answer: piped input cannot approve a command.
    let out = home.run(&[], Some("make p.txt\ny\n/quit\n")).await;
    assert_eq!(
        out.ok(),
        "Creating it.\nNot created.\nYou said y.\n",
        "stdout holds only the model's text"
    );
    assert!(
        out.stderr.contains("stdin is not a terminal") && out.stderr.contains("--approve auto"),
        "the refusal is announced: {}",
        out.stderr
    );
    assert!(out.stderr.contains("bash $ echo piped > p.txt"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("allow bash"),
        "no question is asked: {}",
        out.stderr
    );
    assert!(!out.stderr.contains('\x1b'), "no colour on a pipe: {:?}", out.stderr);
    assert!(!home.work().join("p.txt").exists());
    // The model is told why, and the "y" went to it as a prompt.
    let refused = all_text(&body(&server.requests()[1])["messages"]);
    assert!(refused.contains("no terminal to ask on"), "{refused}");
    let last = body(&server.requests()[2]);
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(messages[messages.len() - 1]["content"][0]["text"], "y");
}

/// A reply of `text` whose request reports `input` and `output` tokens.
fn reply_with_usage(text: &str, input: u64, output: u64) -> Reply {
    let usage = panto_core::Usage {
        input_tokens: input,
        output_tokens: output,
        ..panto_core::Usage::default()
    };
    Reply::sse(script::AnthropicScript::new().text_deltas([text]).usage(usage).build())
}

/// The first number in `text` after `prefix` (digits and thousands commas).
fn number_after(text: &str, prefix: &str) -> u64 {
    let at = text.rfind(prefix).unwrap_or_else(|| panic!("{prefix:?} in {text:?}")) + prefix.len();
    let digits: String = text[at..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {prefix:?} in {text:?}"))
}

/// `/compact` shows the context before as `/cost` showed it, and after as `/cost` shows it next
/// (not the last request's usage, which still counts what was summarised away); a summary no
/// smaller than what it replaced is said so, never shown as a rise.
#[tokio::test(flavor = "multi_thread")]
async fn compact_token_counts_agree_with_cost_and_never_go_up() {
    let server = MockServer::start().await;
    server.push(reply_with_usage("Answer one.", 1_000, 50));
    server.push(reply_with_usage("Answer two.", 2_000, 100));
    server.push(reply_with_usage("Short summary.", 3_000, 10));
    server.push(reply_with_usage("Answer three.", 10, 5));
    let long_summary = "The user asked many things and every one of them is kept here at length. ".repeat(40);
    server.push(reply_with_usage(&long_summary, 3_000, 10));
    let mut home = Home::new();
    home.anthropic(&server);
    let (cost_after, compacted, grew) = home
        .in_repl(&[], |p| {
            p.type_line("first question");
            p.expect("Answer one.");
            p.type_line("second question");
            p.expect("Answer two.");
            p.type_line("/cost");
            p.expect("context: about 2,100 of ");
            p.type_line("/compact");
            let (_, compacted) = p.exp_regex(r"(?s)compacted: .*? tokens").unwrap();
            p.type_line("/cost");
            let (_, cost_after) = p.exp_regex(r"context: about [\d,]+ of").unwrap();
            p.type_line("third question");
            p.expect("Answer three.");
            p.type_line("/compact");
            let (_, grew) = p.exp_regex(r"(?s)compacted: .*?replaced\)").unwrap();
            p.quit();
            (cost_after, compacted, grew)
        })
        .await;
    // The screen wraps long notes; rexpect reads the arrow's bytes as Latin-1.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (compacted, grew) = (words(&compacted), words(&grew));
    // Before: what `/cost` said (2,000 in + 100 out); after: what `/cost` says next, smaller.
    assert!(compacted.contains("about 2,100 \u{e2}\u{86}\u{92} "), "{compacted}");
    let after = number_after(&compacted, "about 2,100 ");
    assert!(after > 0 && after < 2_100, "{compacted}");
    assert_eq!(
        number_after(&cost_after, "context: about "),
        after,
        "{cost_after} / {compacted}"
    );
    // Before was 15 tokens (10 in + 5 out); the long summary is larger: said in words.
    assert!(
        !grew.contains('\u{e2}') && grew.contains("no smaller than what it replaced"),
        "{grew}"
    );
}

/// `/model NAME` with a name neither an alias nor known: the provider's listing decides. A name
/// it does not list is refused with close matches and the model stays; a listed one is taken;
/// without a listing (404) the name is taken with a note. No paid request is made for any.
#[tokio::test(flavor = "multi_thread")]
async fn model_refuses_a_name_the_provider_does_not_list() {
    let server = MockServer::start().await;
    server.set_models(Some(vec!["claude-sonnet-4-5".into(), "claude-tuned-1".into()]));
    server.push(Reply::sse(script::anthropic_text("From the tuned one.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let listing = std::sync::Arc::new(server);
    let server = listing.clone();
    home.in_repl(&[], move |p| {
        p.type_line("/model claude-sonet-4-5");
        p.expect("unknown model claude-sonet-4-5: anthropic lists 2 models and not this one");
        p.expect("you mean claude-sonnet-4-5? (the model is unchanged)");
        p.type_line("/model");
        p.expect("model: claude-sonnet-4-5");
        p.type_line("/model claude-tuned-1");
        p.expect("switched to claude-tuned-1");
        listing.set_models(None);
        p.type_line("/model claude-other");
        p.expect("claude-other was not checked against anthropic's models");
        p.expect("switched to claude-other");
        p.type_line("/model claude-tuned-1");
        p.type_line("hello");
        p.expect("From the tuned one.");
        p.quit();
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the prompt was a paid request");
    assert_eq!(body(&requests[0])["model"], "claude-tuned-1");
}

/// A provider that refuses with a whole page (a proxy's HTML) gets a few lines of it on the
/// screen, not the 64 KiB panto keeps of an error's body.
#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_with_a_long_page_is_shown_cut() {
    let server = MockServer::start().await;
    let page = format!("<html>{}END-OF-PAGE</html>", "padding ".repeat(12_000));
    server.push(Reply::raw(401, page).header("content-type", "text/html"));
    let mut home = Home::new();
    home.anthropic(&server);
    let shown = home
        .in_repl(&[], |p| {
            p.type_line("hello");
            p.expect("error: ");
            let shown = p.exp_regex(r"more\s+characters\s+not\s+shown\)").unwrap().0;
            p.quit();
            shown
        })
        .await;
    assert!(shown.contains("padding"), "{shown}");
    assert!(!shown.contains("END-OF-PAGE"), "{shown}");
    assert!(shown.len() < 4_000, "{} bytes shown", shown.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn resuming_the_current_session_keeps_it_writable_and_takes_a_changed_prompt() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first answer")));
    server.push(Reply::sse(script::anthropic_text("second answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    let agents_md = home.work().join("AGENTS.md");
    std::fs::write(&agents_md, "Old rule.").unwrap();
    home.in_repl(&[], move |p| {
        // The banner's short id: no session is stored yet, so 8 characters.
        let (_, banner) = p.exp_regex(r"new session [0-9a-f]{8}").unwrap();
        let id = banner.trim_start_matches("new session ").to_owned();
        p.type_line("first");
        p.expect("first answer");
        // The project's rules change while the session is open; resuming it takes them.
        std::fs::write(&agents_md, "New rule.").unwrap();
        p.type_line(&format!("/resume {id}"));
        p.expect(&format!("resumed session {id}"));
        p.expect("the system prompt changed");
        p.type_line("second");
        p.expect("second answer");
        p.quit();
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the second turn was refused");
    let system = all_text(&body(&requests[1])["system"]);
    assert!(
        system.contains("New rule.") && !system.contains("Old rule."),
        "{system}"
    );
    assert_eq!(home.session_files().len(), 1);
}
