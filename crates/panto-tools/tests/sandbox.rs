//! The sandbox, end to end: bash under `workspace-write` and `read-only`, and the write tools'
//! checks against the same writable set. Linux only; a kernel without Landlock fails these tests
//! (the sandbox fails closed, and so does its test).

use std::path::Path;

use panto_tools::{Options, Sandbox, ToolName};
use serde_json::json;

use crate::support::{call, tool};

fn options(cwd: &Path, sandbox: Sandbox) -> Options {
    let mut o = Options::new(cwd);
    o.sandbox = sandbox;
    o
}

/// A directory outside the workspace and outside the temp directories: under the test's own
/// target directory.
fn outside_dir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tempfile::tempdir_in(base).unwrap()
}

#[tokio::test]
async fn workspace_write_lets_bash_write_the_workspace_and_nothing_outside() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = outside_dir();
    let bash = tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash);
    let target = outside.path().join("escaped.txt");
    let (is_error, text) = call(
        bash.as_ref(),
        json!({"command": format!("echo in > inside.txt && echo out > {}", target.display())}),
    )
    .await;
    assert!(is_error, "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    assert_eq!(std::fs::read_to_string(work.path().join("inside.txt")).unwrap(), "in\n");
    assert!(!target.exists(), "bash wrote outside the workspace");
}

#[tokio::test]
async fn write_and_edit_refuse_paths_outside_the_writable_set() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = outside_dir();
    let o = options(work.path(), Sandbox::WorkspaceWrite);
    let write = tool(&o, ToolName::Write);
    let target = outside.path().join("x.txt");
    let (is_error, text) = call(write.as_ref(), json!({"path": target, "content": "x"})).await;
    assert!(
        is_error && text.contains("outside the directories the sandbox lets tools write"),
        "{text}"
    );
    assert!(!target.exists());
    std::fs::write(&target, "old").unwrap();
    let edit = tool(&o, ToolName::Edit);
    let (is_error, text) = call(
        edit.as_ref(),
        json!({"path": target, "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert!(is_error && text.contains("writable_roots"), "{text}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    let (is_error, text) = call(write.as_ref(), json!({"path": "ok.txt", "content": "x"})).await;
    assert!(!is_error, "{text}");
    // writable_roots opens a directory up.
    let mut o = o.clone();
    o.writable_roots = vec![outside.path().to_path_buf()];
    let (is_error, text) = call(
        tool(&o, ToolName::Write).as_ref(),
        json!({"path": target, "content": "y"}),
    )
    .await;
    assert!(!is_error, "{text}");
}

#[tokio::test]
async fn read_only_stops_every_write() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = options(work.path(), Sandbox::ReadOnly);
    let bash = tool(&o, ToolName::Bash);
    let (is_error, text) = call(
        bash.as_ref(),
        json!({"command": "cat /etc/hostname >/dev/null; echo read-ok; touch made; mktemp"}),
    )
    .await;
    assert!(is_error, "{text}");
    assert!(text.starts_with("read-ok\n"), "{text}");
    assert!(!work.path().join("made").exists());
    let (is_error, text) = call(
        tool(&o, ToolName::Write).as_ref(),
        json!({"path": "w.txt", "content": "x"}),
    )
    .await;
    assert!(is_error && text.contains("sandbox is read-only"), "{text}");
    assert!(!work.path().join("w.txt").exists());
}

#[tokio::test]
async fn the_network_is_closed_unless_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let command = json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")});
    let (is_error, text) = call(
        tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash).as_ref(),
        command.clone(),
    )
    .await;
    assert!(is_error && !text.contains("connected"), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    // Unix sockets stay allowed.
    let (is_error, text) = call(
        tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash).as_ref(),
        json!({"command": "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"unix-ok\")'"}),
    )
    .await;
    assert!(!is_error && text.contains("unix-ok"), "{text}");
    let mut o = options(work.path(), Sandbox::WorkspaceWrite);
    o.sandbox_network = true;
    let (is_error, text) = call(tool(&o, ToolName::Bash).as_ref(), command).await;
    assert!(!is_error && text.contains("connected"), "{text}");
}

#[tokio::test]
async fn a_c_program_compiles_and_runs_in_the_workspace() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(
        work.path().join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n",
    )
    .unwrap();
    let bash = tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash);
    let (is_error, text) = call(bash.as_ref(), json!({"command": "cc -o hello hello.c && ./hello"})).await;
    assert!(!is_error, "{text}");
    assert!(text.starts_with("hello from c\n"), "{text}");
}
