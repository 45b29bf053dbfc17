//! No server process outlives its source: after a drop, a shutdown, or panto being SIGKILLed.

use std::io::BufRead;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use panto_testkit::child::{child_test, report_to_parent};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn dropping_the_source_kills_the_server_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let source = start(
        "dropped",
        fault(&["--pid-file", pid_file.to_str().unwrap(), "--spawn-grandchild"]),
    )
    .await;
    assert_eq!(text(&call(&source, "echo", json!({"text": "x"})).await), "x");
    let pids = pids(&pid_file);
    assert_eq!(pids.len(), 2, "server and grandchild: {pids:?}");
    assert!(pids.iter().all(|&p| exists(p)));
    drop(source);
    for pid in pids {
        assert!(
            eventually_async(|| !exists(pid)).await,
            "process {pid} is gone (killed and reaped)"
        );
    }
}

#[tokio::test]
async fn shutdown_kills_the_server_and_a_later_call_starts_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let source = start("stopped", fault(&["--pid-file", pid_file.to_str().unwrap()])).await;
    source.shutdown().await;
    let first = pids(&pid_file)[0];
    assert!(eventually_async(|| !exists(first)).await, "server {first} is gone");
    assert_eq!(text(&call(&source, "echo", json!({"text": "again"})).await), "again");
    assert_eq!(pids(&pid_file).len(), 2);
}

/// The child half of the SIGKILL test: starts a server, reports its pid, and waits to be killed.
#[test]
#[ignore = "the child half of a_sigkilled_parent_takes_its_servers_with_it, run only by it"]
fn child_starts_a_server_and_waits() {
    let pid_file = std::env::var("PANTO_MCP_CHILD_PID_FILE")
        .expect("run by a_sigkilled_parent_takes_its_servers_with_it, which sets PANTO_MCP_CHILD_PID_FILE");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let source = start("orphan", fault(&["--pid-file", &pid_file])).await;
        assert_eq!(text(&call(&source, "echo", json!({"text": "x"})).await), "x");
        report_to_parent("started");
        std::future::pending::<()>().await;
    });
}

#[test]
fn a_sigkilled_parent_takes_its_servers_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let mut child = child_test("processes::child_starts_a_server_and_waits")
        .env("PANTO_MCP_CHILD_PID_FILE", &pid_file)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let reported = lines.find(|l| l.as_ref().is_ok_and(|l| l.contains("started")));
    assert!(reported.is_some(), "the child started its server");
    let server = pids(&pid_file)[0];
    assert!(exists(server));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();
    // PR_SET_PDEATHSIG: the kernel kills the server; init reaps it.
    assert!(
        eventually(|| !exists(server)),
        "server {server} outlived its SIGKILLed parent"
    );
}
