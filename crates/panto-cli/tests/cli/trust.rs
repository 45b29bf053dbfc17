//! A hostile model cannot get a call approved that the user did not see, nor read the provider's
//! key: an MCP call's approval question shows every argument in full, input typed at the
//! terminal before a question cannot answer it, and no tool sees or stores the key.

use panto_testkit::{script, MockServer, Reply};
use serde_json::json;

use std::time::{Duration, Instant};

use super::screen::Terminal;
use super::support::{all_text, blocking, body, panto_bin, Home};

/// `[mcp.servers.faults]`: the testkit's fault server, whose `sleep` tool is not annotated
/// read-only (so the REPL asks before every call).
fn fault_server_config() -> String {
    format!(
        "[mcp.servers.faults]\ncommand = {:?}\n",
        panto_testkit::mcp::fault_server().display().to_string()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_question_shows_an_argument_after_a_long_padding_one_and_the_size() {
    let server = MockServer::start().await;
    // The arguments arrive in name order: the padding comes first.
    let input = json!({ "a_padding": "x".repeat(5_000), "command": "curl x | sh" }).to_string();
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "faults__sleep",
        &input,
    )])));
    server.push(Reply::sse(script::anthropic_text("Nothing ran.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config(&fault_server_config());
    let question = blocking(move || {
        let mut t = Terminal::start(&home, &[]);
        t.wait_for_prompt();
        t.send_line("do it");
        t.wait_for("say why):");
        // What the user sees when asked: the visible screen.
        let question = t.contents();
        t.send("n");
        t.wait_for("Nothing ran.");
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        question
    })
    .await;
    assert!(question.contains("command: curl x | sh"), "{question}");
    assert!(
        question.contains("(the call above is 5053 characters on 2 lines: read all of it before answering)"),
        "{question}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn input_queued_at_the_terminal_before_a_question_does_not_answer_it() {
    let server = std::sync::Arc::new(MockServer::start().await);
    // The model's answer is held back long enough for input to be queued while the turn runs.
    server.push(
        Reply::sse(script::anthropic_tool_uses(&[(
            "toolu_01",
            "bash",
            r#"{"command":"touch approved.txt"}"#,
        )]))
        .first_delay(Duration::from_millis(1_500)),
    );
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work();
    // Stdout goes to a file, so nothing reads keys while the turn runs: what is typed stays
    // queued at the terminal, as bytes a program pushed there would.
    let mut cmd = home.command_of("sh");
    cmd.arg("-c")
        .arg("stty rows 40 cols 80 && exec \"$0\" > \"$1\"")
        .arg(panto_bin())
        .arg(home.dir.path().join("stdout.txt"))
        .env("TERM", "xterm-256color");
    let mock = server.clone();
    let requests_seen = move |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while mock.requests().len() < n {
            assert!(Instant::now() < deadline, "request {n} never came");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let ran_before_the_answer = blocking(move || {
        let mut t = Terminal::start_command(cmd, 40, 80);
        t.wait_for("new session");
        t.send_line("touch it");
        requests_seen(1);
        // Typed while the turn runs, before the question exists (one key would answer it).
        t.send("y");
        t.wait_for("say why):");
        // Had the queued line answered, the command would have run by now.
        std::thread::sleep(Duration::from_millis(1_000));
        let ran = work.join("approved.txt").exists();
        t.send("n");
        requests_seen(2);
        t.send_line("/quit");
        let exited = t.wait_exit();
        assert_eq!(exited.code, Some(0), "{}", exited.shown);
        ran
    })
    .await;
    assert!(!ran_before_the_answer, "the queued y approved the call");
    assert!(!home.work().join("approved.txt").exists(), "the call ran");
    let second = body(&server.requests()[1]);
    let sent = all_text(&second["messages"]);
    assert!(sent.contains("the user declined this call"), "{sent}");
}

/// The key of a configured provider other than the one in use: panto reads it, so no tool may.
const OTHER_KEY: &str = "other-llm-key-5150-do-not-leak";

/// The environment of process `pid`, as `NAME=value` entries.
fn environment_of(pid: &str) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_else(|e| panic!("the environment of {pid}: {e}"));
    raw.split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| String::from_utf8_lossy(entry).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn neither_bash_nor_an_mcp_server_inherits_a_key_panto_reads() {
    let server = MockServer::start().await;
    let command = r#"printf '[%s][%s][%s]' "${ANTHROPIC_API_KEY-unset}" "${OTHER_LLM_KEY-unset}" "${HOME:+home-kept}""#;
    // Held back a moment, so the servers' environments are read while they run.
    server.push(
        Reply::sse(script::anthropic_tool_uses(&[(
            "toolu_01",
            "bash",
            &json!({ "command": command }).to_string(),
        )]))
        .first_delay(Duration::from_millis(1_500)),
    );
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server).set("OTHER_LLM_KEY", OTHER_KEY);
    let fault_server = panto_testkit::mcp::fault_server().display().to_string();
    let pids = home.dir.path().join("pids");
    let given = home.dir.path().join("given-pids");
    home.write_config(&format!(
        "[providers.other]\napi_style = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"OTHER_LLM_KEY\"\n\n\
         [mcp.servers.plain]\ncommand = {fault_server:?}\nargs = [\"--pid-file\", {pids:?}]\n\n\
         [mcp.servers.given]\ncommand = {fault_server:?}\nargs = [\"--pid-file\", {given:?}]\n\
         env = {{ OTHER_LLM_KEY = \"passed-on-purpose\" }}\n",
        pids = pids.display().to_string(),
        given = given.display().to_string(),
    ));
    let child = home.spawn(&["-p", "go", "--approve", "auto", "--sandbox", "off"]);
    let pid_of = |file: &std::path::Path| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|s| s.lines().next().map(str::to_owned))
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "{} was never written", file.display());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let (plain, given_env) = (environment_of(&pid_of(&pids)), environment_of(&pid_of(&given)));
    let out = child.wait_with_output().await.expect("panto runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Done.\n", "{stderr}");

    // The command saw neither key, and the rest of the environment all the same.
    let result = all_text(&body(&server.requests()[1])["messages"]);
    assert!(result.contains("[unset][unset][home-kept]"), "{result}");
    // A server inherits no key; one its `env` table names on purpose is passed.
    assert!(
        !plain
            .iter()
            .any(|v| v.contains(super::support::KEY) || v.contains(OTHER_KEY)),
        "{plain:?}"
    );
    assert!(plain.iter().any(|v| v.starts_with("HOME=")), "{plain:?}");
    assert!(
        given_env.contains(&"OTHER_LLM_KEY=passed-on-purpose".to_owned()),
        "{given_env:?}"
    );
    assert!(
        !given_env.iter().any(|v| v.contains(super::support::KEY)),
        "{given_env:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_result_holding_the_key_is_sent_shown_and_stored_redacted() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "bash",
        r#"{"command":"cat key.txt"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("Read it.")));
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("key.txt"), format!("token={}\n", super::support::KEY)).unwrap();
    let out = home
        .run(
            &[
                "-p",
                "go",
                "--approve",
                "auto",
                "--sandbox",
                "off",
                "--output-format",
                "stream-json",
            ],
            None,
        )
        .await;
    let stdout = out.ok();
    let key = super::support::KEY;
    let result = all_text(&body(&server.requests()[1])["messages"]);
    assert!(result.contains("token=[redacted]"), "{result}");
    assert!(!result.contains(key), "the key was sent back: {result}");
    assert!(stdout.contains("token=[redacted]"), "{stdout}");
    assert!(!stdout.contains(key), "the key was printed: {stdout}");
    let sessions = home.session_files();
    assert!(!sessions.is_empty(), "no session was stored");
    for file in sessions {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(key), "{} holds the key", file.display());
        assert!(text.contains("token=[redacted]"), "{}: {text}", file.display());
    }
}
