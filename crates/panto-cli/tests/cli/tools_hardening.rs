//! The built-in tools against a hostile model: paths that are not regular files (FIFOs, devices),
//! `[tools] read_roots` with symlink escapes, and bash commands that leave processes behind,
//! including through Ctrl-C. Every call is scripted through the mock server and run by the real
//! binary.

use std::path::Path;
use std::time::Duration;

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

/// Whether process `pid` is alive (a zombie is not: it has ended and waits to be collected).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

/// The pid a command wrote to `file`.
fn pid_in(file: &Path) -> i32 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.trim().parse().unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// Kills the listed pids when dropped, so a failing test leaves no `sleep 1000` behind.
struct KillOnDrop(Vec<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
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

#[tokio::test(flavor = "multi_thread")]
async fn bash_background_jobs_and_setsid_escapes_are_killed_at_the_end_of_the_call() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_1",
        "bash",
        r#"{"command":"sleep 1000 & echo $! > bg.pid; setsid sleep 1000 & echo $! > setsid.pid; (setsid sleep 1000 & echo $! > double.pid); echo started"}"#,
    )])));
    server.push(Reply::sse(script::anthropic_text("Started.")));
    let mut home = Home::new();
    home.anthropic(&server);
    let out = home.run(&["-p", "start servers", "--approve", "auto"], None).await;
    let pids: Vec<i32> = ["bg.pid", "setsid.pid", "double.pid"]
        .iter()
        .map(|f| pid_in(&home.work().join(f)))
        .collect();
    let _cleanup = KillOnDrop(pids.clone());
    assert_eq!(out.ok(), "Started.\n");
    let results = tool_results(&server, 1);
    let (is_error, text) = &results[0];
    assert!(!is_error, "{text}");
    let mut sorted = pids.clone();
    sorted.sort_unstable();
    let listed = sorted.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    assert!(
        text.contains(&format!("[killed 3 processes the command left running: pid {listed}]")),
        "the result says what was killed, by pid: {text}"
    );
    for pid in pids {
        assert!(!alive(pid), "pid {pid} survived the call");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_bash_exits_130_and_leaves_no_process_running() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_1",
        "bash",
        r#"{"command":"setsid sleep 1000 & echo $! > escaped.pid; sleep 1000"}"#,
    )])));
    let mut home = Home::new();
    home.anthropic(&server);
    let child = home.spawn(&["-p", "run it", "--approve", "auto"]);
    let pid_file = home.work().join("escaped.pid");
    tokio::time::timeout(Duration::from_secs(30), async {
        while std::fs::read_to_string(&pid_file).map_or(true, |t| !t.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command starts");
    let escaped = pid_in(&pid_file);
    let _cleanup = KillOnDrop(vec![escaped]);
    let panto = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(panto, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("panto exits after Ctrl-C")
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        !alive(escaped),
        "the setsid'd sleep {escaped} outlived the cancelled call"
    );
}

/// `web_fetch` of a loopback URL: refused by default, naming the address; with `[tools]
/// web_fetch_private = true` the request is made (port 9 on 127.0.0.1, where nothing listens,
/// so it fails to connect instead).
#[tokio::test(flavor = "multi_thread")]
async fn web_fetch_refuses_loopback_unless_the_config_allows_private_addresses() {
    for (config, refused) in [("", true), ("[tools]\nweb_fetch_private = true\n", false)] {
        let server = MockServer::start().await;
        server.push(Reply::sse(script::anthropic_tool_uses(&[(
            "toolu_1",
            "web_fetch",
            r#"{"url":"http://127.0.0.1:9/"}"#,
        )])));
        server.push(Reply::sse(script::anthropic_text("Done.")));
        let mut home = Home::new();
        home.anthropic(&server);
        home.write_config(config);
        let out = home.run(&["-p", "fetch it", "--approve", "auto"], None).await;
        assert_eq!(out.ok(), "Done.\n");
        let results = tool_results(&server, 1);
        assert_eq!(results.len(), 1, "{results:?}");
        assert!(results[0].0, "{results:?}");
        assert_eq!(
            results[0].1.contains("127.0.0.1 is a loopback address"),
            refused,
            "{config:?}: {results:?}"
        );
    }
}
