//! The built-in tools against a hostile model: paths that are not regular files (FIFOs, devices)
//! and `[tools] read_roots` with symlink escapes. Every call is scripted through the mock server
//! and run by the real binary.

use std::path::Path;

use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

use super::support::{all_text, body, Home};

/// The tool results of the last message of request `index`, as (is_error, text), in call order.
fn tool_results(server: &MockServer, index: usize) -> Vec<(bool, String)> {
    let request = body(&server.requests()[index]);
    let last = request["messages"].as_array().unwrap().last().unwrap().clone();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (b["is_error"] == Value::Bool(true), all_text(&b["content"])))
        .collect()
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn read_of_a_fifo_and_of_dev_zero_are_error_results_not_hangs() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_1", "read", r#"{"path":"pipe"}"#),
        ("toolu_2", "read", r#"{"path":"/dev/zero"}"#),
        ("toolu_3", "read", r#"{"path":"/dev/urandom"}"#),
    ])));
    server.push(Reply::sse(script::anthropic_text("None of those are files.")));
    let mut home = Home::new();
    home.anthropic(&server);
    mkfifo(&home.work().join("pipe"));
    // Before the fix the first read blocked forever in open(2), and the run never ended.
    let out = home.run(&["-p", "read them"], None).await;
    assert_eq!(out.ok(), "None of those are files.\n");
    let results = tool_results(&server, 1);
    assert_eq!(results.len(), 3, "{results:?}");
    let fifo = home.work().join("pipe");
    assert!(results[0].0, "{results:?}");
    assert!(
        results[0].1.contains(&format!(
            "{} is a FIFO (named pipe), not a regular file",
            fifo.display()
        )),
        "{results:?}"
    );
    for (result, device) in results[1..].iter().zip(["/dev/zero", "/dev/urandom"]) {
        assert!(result.0, "{result:?}");
        assert!(
            result
                .1
                .contains(&format!("{device} is a character device, not a regular file")),
            "{result:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn write_and_edit_never_go_through_to_a_fifo_or_a_device() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_tool_calls(&[
        ("call_w", "write", r#"{"path":"pipe","content":"into the pipe"}"#),
        ("call_e", "edit", r#"{"path":"pipe","old_string":"a","new_string":"b"}"#),
        ("call_d", "write", r#"{"path":"/dev/null","content":"x"}"#),
    ])));
    server.push(Reply::sse(script::openai_text("Refused.")));
    let mut home = Home::new();
    home.openai(&server);
    mkfifo(&home.work().join("pipe"));
    let out = home.run(&["-p", "write them", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Refused.\n");
    let request = body(&server.requests()[1]);
    let results: Vec<String> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| all_text(&m["content"]))
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].contains("is a FIFO (named pipe), not a regular file; write"),
        "{results:?}"
    );
    assert!(
        results[1].contains("is a FIFO (named pipe), not a regular file; read"),
        "{results:?}"
    );
    assert!(results[2].contains("/dev/null is a character device"), "{results:?}");
    let kind = std::fs::symlink_metadata(home.work().join("pipe")).unwrap().file_type();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&kind),
        "the FIFO is still a FIFO"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn read_roots_confine_every_file_tool_and_symlinks_cannot_escape() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_1", "read", r#"{"path":"allowed/notes.txt"}"#),
        ("toolu_2", "read", r#"{"path":"secret.txt"}"#),
        ("toolu_3", "read", r#"{"path":"allowed/link.txt"}"#),
        ("toolu_4", "read", r#"{"path":"allowed/../secret.txt"}"#),
        (
            "toolu_5",
            "write",
            r#"{"path":"allowed/link.txt","content":"overwritten"}"#,
        ),
        (
            "toolu_6",
            "edit",
            r#"{"path":"allowed/dir/secret.txt","old_string":"key","new_string":"gone"}"#,
        ),
        (
            "toolu_7",
            "write",
            r#"{"path":"allowed/new/file.txt","content":"fresh"}"#,
        ),
    ])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work().canonicalize().unwrap();
    let allowed = work.join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    std::fs::write(allowed.join("notes.txt"), "inside the root\n").unwrap();
    std::fs::write(work.join("secret.txt"), "the private key\n").unwrap();
    std::os::unix::fs::symlink(work.join("secret.txt"), allowed.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&work, allowed.join("dir")).unwrap();
    home.write_config(&format!(
        "[tools]\nread_roots = [{:?}]\n",
        allowed.display().to_string()
    ));
    let out = home.run(&["-p", "look around", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Done.\n");

    let results = tool_results(&server, 1);
    assert_eq!(results.len(), 7, "{results:?}");
    assert!(!results[0].0 && results[0].1.contains("inside the root"), "{results:?}");
    let roots = format!("([tools] read_roots: {})", allowed.display());
    for (i, result) in results.iter().enumerate().take(6).skip(1) {
        assert!(result.0, "call {i}: {result:?}");
        assert!(
            result.1.contains("is outside the directories file tools may use") && result.1.contains(&roots),
            "call {i}: {result:?}"
        );
        assert!(
            !result.1.contains("private key"),
            "call {i} leaked the file: {result:?}"
        );
    }
    let secret = work.join("secret.txt").display().to_string();
    assert!(
        results[2].1.contains(&format!("(it resolves to {secret})")),
        "{results:?}"
    );
    assert!(!results[6].0, "a new file inside the root is fine: {results:?}");
    assert_eq!(
        std::fs::read_to_string(work.join("secret.txt")).unwrap(),
        "the private key\n"
    );
    assert_eq!(std::fs::read_to_string(allowed.join("new/file.txt")).unwrap(), "fresh");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_root_that_does_not_exist_is_a_config_error_naming_its_line() {
    let home = Home::new();
    home.write_config("[tools]\nread_roots = [\n  \"/nonexistent/panto-root\",\n]\n");
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("config.toml:3:") && out.stderr.contains("/nonexistent/panto-root"),
        "{}",
        out.stderr
    );
}
