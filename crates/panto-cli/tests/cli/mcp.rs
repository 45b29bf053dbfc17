//! MCP servers in the CLI, against the real servers `cargo xtask mcp-servers` installs
//! (`panto_testkit::real_mcp`; a test panics with what to run when one is missing): a tool turn
//! through `panto -p` with the everything server over stdio and over streamable HTTP and with
//! mcp-server-git, the tool's real output reaching the model; approval and rules; start-up
//! warnings; `panto mcp list`.

use panto_testkit::{real_mcp, script, MockServer, Reply};
use serde_json::Value;

use super::support::{all_text, body, Home, Talk};

/// A TOML string literal of `path`.
fn quoted(path: &std::path::Path) -> String {
    serde_json::to_string(&path.display().to_string()).unwrap()
}

/// The everything server over stdio, as `[mcp.servers.everything]`.
fn everything_stdio() -> String {
    format!(
        "[mcp.servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n",
        quoted(&real_mcp::everything())
    )
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the last message of a request (the tool result the model reads).
fn last_message_text(request: &Value) -> String {
    all_text(request["messages"].as_array().unwrap().last().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_of_the_everything_server_over_stdio_reaches_the_model() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "everything__echo",
        r#"{"message":"mango-4242"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("It echoed.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config(&everything_stdio());
    let out = home.run(&["-p", "echo something"], None).await;
    assert_eq!(out.ok(), "It echoed.\n", "stderr: {}", out.stderr);

    let requests = server.requests();
    let first = body(&requests[0]);
    let tools = offered(&first);
    assert!(tools.contains(&"everything__echo".to_owned()), "{tools:?}");
    // Print mode is read-only: a tool the server does not annotate read-only is not offered.
    assert!(
        !tools.iter().any(|t| t == "everything__gzip-file-as-resource"),
        "a writing tool offered in read-only mode: {tools:?}"
    );
    let result = last_message_text(&body(&requests[1]));
    assert!(result.contains("Echo: mango-4242"), "{result}");

    // The server's stderr went to its log, not to the terminal.
    let log = home.home().join("state/panto/mcp/everything.log");
    let logged = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(logged.contains("Starting default (STDIO) server"), "{logged}");
    assert!(
        !out.stderr.contains("STDIO"),
        "server stderr on the terminal: {}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_of_the_everything_server_over_streamable_http_reaches_the_model() {
    let everything = real_mcp::EverythingHttp::start();
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_tool_calls(&[(
        "call_1",
        "everything__get-sum",
        r#"{"a":1234,"b":4321}"#,
    )])));
    server.push(Reply::sse(script::openai_text("The sum is known.")));
    let mut home = Home::new();
    home.openai(&server);
    home.write_config(&format!(
        "[mcp.servers.everything]\nurl = \"{}\"\nheaders = {{ x-panto-test = \"1\" }}\n",
        everything.url()
    ));
    let out = home.run(&["-p", "add them"], None).await;
    assert_eq!(out.ok(), "The sum is known.\n", "stderr: {}", out.stderr);
    let result = last_message_text(&body(&server.requests()[1]));
    assert!(result.contains("5555"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_of_mcp_server_git_reaches_the_model() {
    let server = MockServer::start().await;
    let mut home = Home::new();
    let repo = home.work().join("repo");
    real_mcp::git_repo(&repo, "notes.txt", "mango\n", "the-mango-commit");
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "git__git_5flog",
        &serde_json::json!({ "repo_path": repo.display().to_string() }).to_string(),
    )])));
    server.push(Reply::sse(script::anthropic_text("One commit.")));
    home.anthropic(&server);
    home.write_config(&format!(
        "[mcp.servers.git]\ncommand = {}\nargs = [\"--repository\", {}]\n",
        quoted(&real_mcp::git()),
        quoted(&repo)
    ));
    let out = home.run(&["-p", "what is the last commit?"], None).await;
    assert_eq!(out.ok(), "One commit.\n", "stderr: {}", out.stderr);
    let requests = server.requests();
    let tools = offered(&body(&requests[0]));
    assert!(tools.contains(&"git__git_5fstatus".to_owned()), "{tools:?}");
    assert!(
        !tools.contains(&"git__git_5fcommit".to_owned()),
        "read-only mode: {tools:?}"
    );
    let result = last_message_text(&body(&requests[1]));
    assert!(result.contains("the-mango-commit"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_approve_auto_writing_tools_are_offered_and_a_deny_rule_refuses_by_offered_name() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_01", "everything__echo", r#"{"message":"denied-one"}"#),
        ("toolu_02", "everything__get-sum", r#"{"a":2,"b":3}"#),
    ])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config(&format!(
        "[tools]\ndeny = [\"everything__echo\"]\n{}",
        everything_stdio()
    ));
    let out = home.run(&["-p", "go", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Done.\n", "stderr: {}", out.stderr);
    let requests = server.requests();
    let tools = offered(&body(&requests[0]));
    assert!(
        tools.contains(&"everything__gzip-file-as-resource".to_owned()),
        "--approve auto offers writing tools: {tools:?}"
    );
    let second = body(&requests[1]);
    let results: Vec<&Value> = second["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let denied = all_text(results[0]);
    assert!(
        denied.contains("denied by the rule `everything__echo` ([tools] deny)") && !denied.contains("Echo:"),
        "{denied}"
    );
    assert!(all_text(results[1]).contains('5'), "{}", all_text(results[1]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_does_not_start_is_a_warning_naming_it_and_its_stderr_and_the_turn_runs() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Hello.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config(
        "[mcp.servers.broken]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"echo boom-on-stderr >&2; exit 3\"]\n",
    );
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.ok(), "Hello.\n");
    assert!(
        out.stderr.contains("MCP server `broken`") && out.stderr.contains("boom-on-stderr"),
        "{}",
        out.stderr
    );
    assert!(offered(&body(&server.requests()[0]))
        .iter()
        .all(|t| !t.starts_with("broken__")));
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_shows_each_server_its_status_and_tools_and_fails_when_one_does_not_start() {
    let home = Home::new();
    home.write_config(&format!(
        "{}\n[mcp.servers.broken]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"echo no-such-thing >&2; exit 1\"]\n\n\
         [mcp.servers.off]\ncommand = \"never-run\"\nenabled = false\n",
        everything_stdio()
    ));
    let out = home.run(&["mcp", "list"], None).await;
    assert_eq!(out.code, Some(1), "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("everything  stdio: ") && lines[0].contains("running (") && lines[0].contains("protocol "),
        "{}",
        out.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("everything__echo ") && l.contains("read-only")),
        "{}",
        out.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("everything__gzip-file-as-resource ") && l.contains("asks first")),
        "{}",
        out.stdout
    );
    let broken = lines.iter().find(|l| l.starts_with("broken  ")).expect(&out.stdout);
    assert!(
        broken.contains("failed:") && broken.contains("no-such-thing"),
        "{broken}"
    );
    let off = lines.iter().find(|l| l.starts_with("off  ")).expect(&out.stdout);
    assert!(off.contains("disabled"), "{off}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_key_of_a_server_names_the_file_the_line_and_the_key() {
    let home = Home::new();
    home.write_config("[mcp.servers.git]\ncommand = \"x\"\nbearer_token = \"T\"\n");
    let out = home.run(&["mcp", "list"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("config.toml:3:") && out.stderr.contains("bearer_token"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_the_repl_a_tool_not_annotated_read_only_is_asked_about_and_a_read_only_one_is_not() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_01",
        "everything__echo",
        r#"{"message":"no-question"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_02",
        "everything__toggle-simulated-logging",
        "{}",
    )])));
    server.push(Reply::sse(script::anthropic_text("Toggled.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config(&everything_stdio());
    home.in_repl(&[], |p| {
        p.type_line("/mcp");
        p.expect("everything__toggle-simulated-logging");
        p.expect("asks first");
        p.type_line("toggle it");
        p.expect("allow everything__toggle-simulated-logging: (no arguments)");
        p.keys("y");
        p.expect("Toggled.");
        p.quit();
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let echoed = last_message_text(&body(&requests[1]));
    assert!(echoed.contains("Echo: no-question"), "{echoed}");
    let toggled = last_message_text(&body(&requests[2]));
    assert!(toggled.contains("simulated, random-leveled logging"), "{toggled}");
}

/// `/mcp` in `--approve auto`: the approval column is as wide as its longest entry
/// ("runs without asking (--approve auto)"), so every tool's summary starts in one column.
#[tokio::test(flavor = "multi_thread")]
async fn the_repl_mcp_listing_keeps_its_columns_aligned() {
    let server = MockServer::start().await;
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config(&everything_stdio());
    let screen = super::support::blocking(move || {
        let mut t = super::screen::Terminal::start_sized(&home, &["--approve", "auto"], 60, 220);
        t.wait_for_prompt();
        t.send_line("/mcp");
        t.wait_for("runs without asking (--approve auto)");
        let screen = t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        screen
    })
    .await;
    let rows: Vec<&str> = screen.lines().filter(|l| l.starts_with("  everything__")).collect();
    assert!(rows.len() > 3, "{screen}");
    // Where each row's third column starts: the first character after its approval entry.
    let approvals = ["runs without asking (--approve auto)", "runs freely (read-only)"];
    let starts: Vec<usize> = rows
        .iter()
        .filter_map(|row| {
            let (at, approval) = approvals.iter().find_map(|a| row.find(a).map(|at| (at, *a)))?;
            let after = at + approval.len();
            Some(after + row[after..].len() - row[after..].trim_start().len())
        })
        .collect();
    assert!(
        starts.len() == rows.len() && starts.windows(2).all(|w| w[0] == w[1]),
        "{starts:?}\n{}",
        rows.join("\n")
    );
    assert!(rows.iter().any(|r| r.contains("runs freely (read-only)")), "{screen}");
}
