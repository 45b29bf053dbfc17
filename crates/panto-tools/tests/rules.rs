//! The `[tools] allow`/`deny` rules through the built-in tools: a bash allow rule runs a compound
//! command only when every simple command matches, and what it runs runs sandboxed; `read` deny
//! rules hold for `grep`; `write` rules hold for `edit`.

use std::path::Path;

use panto_tools::{Approval, Options, Sandbox, ToolName};
use serde_json::json;

use crate::support::{call, tool};

fn options(cwd: &Path, approval: Approval, allow: &[&str], deny: &[&str]) -> Options {
    let mut o = Options::new(cwd);
    o.approval = approval;
    o.allow = allow.iter().map(|r| r.to_string()).collect();
    o.deny = deny.iter().map(|r| r.to_string()).collect();
    o
}

#[tokio::test]
async fn a_bash_allow_rule_does_not_run_a_compound_command_it_only_half_matches() {
    let work = tempfile::tempdir().unwrap();
    let o = options(work.path(), Approval::ReadOnly, &["bash(echo hi*)"], &[]);
    let bash = tool(&o, ToolName::Bash);
    for command in [
        "echo hi; touch pwned",
        "echo hi\ntouch pwned",
        "echo hi && touch pwned",
        "echo hi | touch pwned",
        "echo hi $(touch pwned)",
        "echo hi `touch pwned`",
        "echo hi > pwned",
    ] {
        let (is_error, text) = call(bash.as_ref(), json!({ "command": command })).await;
        assert!(is_error && text.contains("read-only"), "{command:?}: {text}");
        assert!(!work.path().join("pwned").exists(), "{command:?} ran");
    }
    let (is_error, text) = call(bash.as_ref(), json!({"command": "echo hi there; echo hi again"})).await;
    assert!(!is_error && text.starts_with("hi there\nhi again\n"), "{text}");
}

#[tokio::test]
async fn a_bash_deny_rule_refuses_a_compound_command_any_part_of_which_matches() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("keep"), "x").unwrap();
    let o = options(work.path(), Approval::Auto, &[], &["bash(rm *)"]);
    let bash = tool(&o, ToolName::Bash);
    for command in [
        "echo a; rm keep",
        "echo a && rm -f keep",
        "echo $(rm keep)",
        "X=1 rm keep",
    ] {
        let (is_error, text) = call(bash.as_ref(), json!({ "command": command })).await;
        assert!(
            is_error && text.contains("denied by the rule `bash(rm *)`"),
            "{command:?}: {text}"
        );
        assert!(work.path().join("keep").exists(), "{command:?} ran");
    }
}

/// A call an allow rule runs, where nobody approved it, runs in the workspace-write sandbox even
/// with the sandbox off; in `auto` mode, where every call runs unasked, the configured sandbox
/// (off) holds.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_call_an_allow_rule_runs_runs_in_the_sandbox_when_the_sandbox_is_off() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Outside the workspace and the temp directories (not under /tmp, even when the checkout is).
    let outside = tempfile::tempdir_in(panto_testkit::outside::outside_base(std::path::Path::new(env!(
        "CARGO_TARGET_TMPDIR"
    ))))
    .unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!("touch inside.txt {}", target.display());
    for approval in [Approval::ReadOnly, Approval::Ask] {
        let mut o = options(work.path(), approval, &["bash(touch *)"], &[]);
        o.sandbox = Sandbox::Off;
        let toolbox = panto_tools::Toolbox::new(&o).unwrap();
        assert_eq!(
            toolbox.rule_sandbox().map(|s| s.mode()),
            Some(Sandbox::WorkspaceWrite),
            "{approval}"
        );
        let bash = tool(&o, ToolName::Bash);
        let (is_error, text) = call(bash.as_ref(), json!({ "command": command })).await;
        // Landlock refuses it, or, in the mount namespace, the read-only mount does first.
        assert!(
            is_error && (text.contains("Permission denied") || text.contains("Read-only file system")),
            "{approval}: {text}"
        );
        assert!(work.path().join("inside.txt").exists(), "{approval}: {text}");
        assert!(
            !target.exists(),
            "{approval}: a rule-allowed call wrote outside the workspace"
        );
    }
    let mut o = options(work.path(), Approval::Auto, &["bash(touch *)"], &[]);
    o.sandbox = Sandbox::Off;
    let (is_error, text) = call(tool(&o, ToolName::Bash).as_ref(), json!({ "command": command })).await;
    assert!(!is_error, "{text}");
    assert!(target.exists(), "auto mode runs as configured (sandbox off)");
}

#[tokio::test]
async fn grep_withholds_the_files_read_deny_rules_protect_and_says_so() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("prod.env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(work.path().join(".env"), "TOKEN=hidden-hunter2\n").unwrap();
    std::fs::write(work.path().join("app.rs"), "let TOKEN = env();\n").unwrap();
    let o = options(work.path(), Approval::Auto, &[], &["read(*.env)"]);
    let grep = tool(&o, ToolName::Grep);
    let (is_error, text) = call(grep.as_ref(), json!({"pattern": "TOKEN"})).await;
    assert!(!is_error, "{text}");
    assert!(text.contains("app.rs:1:let TOKEN"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("[1 file was not searched: a `read` deny rule protects it]"),
        "{text}"
    );
    for path in [".env", "prod.env"] {
        let (_, text) = call(grep.as_ref(), json!({"pattern": "TOKEN", "path": path})).await;
        assert!(!text.contains("hunter2"), "{path}: {text}");
        assert!(
            text.contains("not searched") && text.contains("no matches"),
            "{path}: {text}"
        );
    }
    // `read` itself refuses, and `find` lists names only (the rule protects contents).
    let (is_error, text) = call(tool(&o, ToolName::Read).as_ref(), json!({"path": "prod.env"})).await;
    assert!(is_error && text.contains("denied by the rule `read(*.env)`"), "{text}");
    let (_, text) = call(tool(&o, ToolName::Find).as_ref(), json!({"pattern": "*.env"})).await;
    assert_eq!(text, "prod.env\n");
}

#[tokio::test]
async fn edit_honours_write_rules_and_read_deny_rules_on_its_path() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("Cargo.lock"), "v1\n").unwrap();
    std::fs::write(work.path().join("prod.env"), "TOKEN=a\n").unwrap();
    std::fs::create_dir(work.path().join("src")).unwrap();
    std::fs::write(work.path().join("src/a.rs"), "old\n").unwrap();
    let o = options(
        work.path(),
        Approval::ReadOnly,
        &["write(src/*)"],
        &["write(*.lock)", "read(*.env)"],
    );
    let edit = tool(&o, ToolName::Edit);
    let (is_error, text) = call(
        edit.as_ref(),
        json!({"path": "Cargo.lock", "old_string": "v1", "new_string": "v2"}),
    )
    .await;
    assert!(
        is_error && text.contains("denied by the rule `write(*.lock)`"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(work.path().join("Cargo.lock")).unwrap(), "v1\n");
    let (is_error, text) = call(
        edit.as_ref(),
        json!({"path": "prod.env", "old_string": "TOKEN=a", "new_string": "TOKEN=b"}),
    )
    .await;
    assert!(is_error && text.contains("denied by the rule `read(*.env)`"), "{text}");
    // A write allow rule lets an edit of its files run in read-only mode.
    let (is_error, text) = call(
        edit.as_ref(),
        json!({"path": "src/a.rs", "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(work.path().join("src/a.rs")).unwrap(), "new\n");
}
