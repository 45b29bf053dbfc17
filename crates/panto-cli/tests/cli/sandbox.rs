//! `panto -p --approve auto` runs bash in the workspace-write sandbox: it cannot write outside
//! the working directory or reach the network; `--sandbox off` lifts it. `[tools] allow`/`deny`
//! rules decide before the approval mode.

use panto_testkit::{script, MockServer, Reply};

use super::support::{all_text, body, Home};

/// The text of the last tool result the model got in request `n` (0-based).
fn last_result(server: &MockServer, n: usize) -> String {
    let request = body(&server.requests()[n]);
    all_text(request["messages"].as_array().unwrap().last().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_with_approve_auto_cannot_write_outside_or_reach_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Outside the workspace and the temp directories (not under /tmp, even when the checkout is).
    let outside = tempfile::tempdir_in(panto_testkit::outside::outside_base(std::path::Path::new(env!(
        "CARGO_TARGET_TMPDIR"
    ))))
    .unwrap();
    let escaped = outside.path().join("escaped.txt");
    let command = format!(
        "echo in > inside.txt; echo out > {}; exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
        escaped.display()
    );
    let input = serde_json::json!({ "command": command }).to_string();
    let server = MockServer::start().await;
    for _ in 0..2 {
        server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_01", "bash", &input)])));
        server.push(Reply::sse(script::anthropic_text("Done.")));
    }
    let mut home = Home::new();
    home.anthropic(&server);

    let out = home.run(&["-p", "try", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Done.\n");
    assert_eq!(std::fs::read_to_string(home.work().join("inside.txt")).unwrap(), "in\n");
    assert!(!escaped.exists(), "bash wrote outside the workspace");
    let text = last_result(&server, 1);
    // Refused by Landlock, or first by the read-only mounts of the sandbox's mount namespace.
    assert!(
        (text.contains("Permission denied") || text.contains("Read-only file system")) && !text.contains("connected"),
        "{text}"
    );

    let out = home
        .run(&["-p", "try", "--approve", "auto", "--sandbox", "off"], None)
        .await;
    assert_eq!(out.ok(), "Done.\n");
    assert!(escaped.exists(), "--sandbox off lifts the sandbox");
    assert!(last_result(&server, 3).contains("connected"));
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_and_deny_rules_decide_before_the_approval_mode() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_01", "bash", r#"{"command":"touch a.txt"}"#),
        ("toolu_02", "bash", r#"{"command":"touch b.txt"}"#),
        ("toolu_03", "write", r#"{"path":"c.txt","content":"x"}"#),
    ])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config("[tools]\nallow = [\"bash(touch *)\"]\ndeny = [\"bash(*b.txt)\"]\n");
    // Print mode is read-only without --approve auto: only the allow rule lets bash run.
    let out = home.run(&["-p", "go"], None).await;
    assert_eq!(out.ok(), "Done.\n");
    assert!(home.work().join("a.txt").exists());
    assert!(!home.work().join("b.txt").exists());
    assert!(!home.work().join("c.txt").exists());
    let text = last_result(&server, 1);
    assert!(
        text.contains("denied by the rule `bash(*b.txt)` ([tools] deny)"),
        "{text}"
    );
    assert!(
        text.contains("the write tool is not allowed: tool approval is read-only"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_rule_is_an_error_at_its_line() {
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k");
    home.write_config("[tools]\n\ndeny = [\"bash(rm\"]\n");
    let out = home.run(&["-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains(":3:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("tools.deny: bad tool rule `bash(rm`"),
        "{}",
        out.stderr
    );
}

/// The documented `allow = ["bash(git status*)"]` in print mode's read-only default: a compound
/// command that only starts with `git status` is refused, and what the rule does run runs in the
/// workspace-write sandbox although the sandbox is off (nobody approved it).
#[tokio::test(flavor = "multi_thread")]
async fn an_allow_rule_runs_no_compound_command_and_what_it_runs_is_sandboxed() {
    // Outside the workspace and the temp directories (not under /tmp, even when the checkout is).
    let outside = tempfile::tempdir_in(panto_testkit::outside::outside_base(std::path::Path::new(env!(
        "CARGO_TARGET_TMPDIR"
    ))))
    .unwrap();
    let pwned = outside.path().join("pwned");
    let escaped = outside.path().join("escaped");
    let compound = serde_json::json!({ "command": format!("git status; touch {}", pwned.display()) }).to_string();
    let newline = serde_json::json!({ "command": format!("git status\ntouch {}", pwned.display()) }).to_string();
    let touch = serde_json::json!({ "command": format!("touch inside {}", escaped.display()) }).to_string();
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_01", "bash", &compound),
        ("toolu_02", "bash", &newline),
        ("toolu_03", "bash", &touch),
    ])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config("[tools]\nallow = [\"bash(git status*)\", \"bash(touch *)\"]\n");
    let out = home.run(&["-p", "go", "--sandbox", "off"], None).await;
    assert_eq!(out.ok(), "Done.\n");
    assert!(
        !pwned.exists(),
        "a compound command ran on a rule that matched its first part"
    );
    assert!(home.work().join("inside").exists());
    assert!(!escaped.exists(), "a call run by a rule wrote outside the workspace");
    let text = last_result(&server, 1);
    assert_eq!(
        text.matches("the bash tool is not allowed: tool approval is read-only")
            .count(),
        2,
        "{text}"
    );
    // Landlock refuses it, or, in the mount namespace, the read-only mount does first.
    assert!(
        text.contains("Permission denied") || text.contains("Read-only file system"),
        "{text}"
    );
}
