//! Every fault of the fault server gives a clear error result or start-up warning, and the
//! server (or the others) keeps working.

use std::time::Duration;

use panto_core::{CancellationToken, ToolSource};
use panto_mcp::{start_all, Error, ServerConfig, ServerStatus};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_server_that_exits_at_start_is_a_warning_with_its_stderr_and_the_others_work() {
    let started = start_all(vec![
        ("first".to_owned(), fault(&[])),
        ("broken".to_owned(), fault(&["--exit-at-start"])),
        ("missing".to_owned(), ServerConfig::stdio("/nonexistent/mcp-server")),
        ("last".to_owned(), fault(&[])),
    ])
    .await;
    let names: Vec<&str> = started.sources.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["first", "last"], "the others start, in configuration order");
    assert_eq!(started.warnings.len(), 2, "{:?}", started.warnings);
    let broken = started.warnings[0].to_string();
    assert_eq!(started.warnings[0].server, "broken");
    assert!(broken.contains("MCP server `broken` failed to start"), "{broken}");
    assert!(broken.contains("fatal: refusing to start"), "the stderr tail: {broken}");
    let missing = started.warnings[1].to_string();
    assert!(
        missing.contains("`missing`") && missing.contains("/nonexistent/mcp-server"),
        "{missing}"
    );
    let result = call(&started.sources[1], "echo", json!({"text": "still here"})).await;
    assert_eq!(text(&result), "still here");
}

#[tokio::test]
async fn a_start_slower_than_the_timeout_is_a_warning_and_its_process_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let config = fault(&["--slow-start", "30", "--pid-file", pid_file.to_str().unwrap()]).startup_timeout_secs(1);
    let started = start_all(vec![("slow".to_owned(), config)]).await;
    assert!(started.sources.is_empty());
    let warning = &started.warnings[0];
    assert!(
        matches!(warning.error, Error::StartTimeout { secs: 1, .. }),
        "{warning}"
    );
    assert!(
        warning.to_string().contains("`slow` did not start within 1 s"),
        "{warning}"
    );
    let pids = pids(&pid_file);
    assert_eq!(pids.len(), 1);
    assert!(eventually(|| !exists(pids[0])), "the slow server {} is gone", pids[0]);
}

#[tokio::test]
async fn a_slow_start_within_the_timeout_works() {
    let source = start("slow", fault(&["--slow-start", "0.5"])).await;
    assert_eq!(text(&call(&source, "echo", json!({"text": "up"})).await), "up");
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_naming_the_server_and_the_next_call_restarts_it() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let source = start("crashy", fault(&["--pid-file", pid_file.to_str().unwrap()])).await;
    let crashed = call(&source, "crash", json!({})).await;
    assert!(crashed.is_error);
    let message = text(&crashed);
    assert!(
        message.contains("MCP server `crashy` stopped during the call of `crash`"),
        "{message}"
    );
    assert!(message.contains("crashing on purpose"), "the stderr tail: {message}");
    assert!(
        matches!(source.status().await, ServerStatus::Stopped { ref error, .. } if error.contains("crashy")),
        "{:?}",
        source.status().await
    );

    let again = call(&source, "echo", json!({"text": "back"})).await;
    assert!(!again.is_error, "{}", text(&again));
    assert_eq!(text(&again), "back");
    assert_eq!(source.status().await, ServerStatus::Running);
    let pids = pids(&pid_file);
    assert_eq!(pids.len(), 2, "restarted once: {pids:?}");
    assert!(eventually(|| !exists(pids[0])), "the crashed server was reaped");
}

#[tokio::test]
async fn a_server_that_keeps_failing_to_restart_backs_off() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("broken");
    // A shell wrapper: the fault server normally, one that exits at start once `flag` exists.
    let script = format!(
        "if [ -e {} ]; then echo 'fatal: still broken' >&2; exit 1; fi; exec {}",
        flag.display(),
        panto_testkit::mcp::fault_server().display()
    );
    let source = start("flaky", ServerConfig::stdio("sh").args(["-c", &script])).await;
    std::fs::write(&flag, "").unwrap();
    assert!(call(&source, "crash", json!({})).await.is_error);
    let first = text(&call(&source, "echo", json!({})).await);
    assert!(
        first.contains("`flaky` failed to start") && first.contains("still broken"),
        "{first}"
    );
    let second = text(&call(&source, "echo", json!({})).await);
    assert!(second.contains("the next restart is tried in"), "backing off: {second}");
    std::fs::remove_file(&flag).unwrap();
    let ServerStatus::Stopped { retry_in, .. } = source.status().await else {
        panic!("still stopped")
    };
    tokio::time::sleep(retry_in).await;
    assert_eq!(text(&call(&source, "echo", json!({"text": "ok"})).await), "ok");
}

#[tokio::test]
async fn a_call_past_the_tool_timeout_is_an_error_and_the_server_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hang.log");
    let pid_file = dir.path().join("pids");
    let config = fault(&["--pid-file", pid_file.to_str().unwrap()])
        .tool_timeout_secs(1)
        .stderr_log(&log);
    let source = start("hangs", config).await;
    let result = call(&source, "hang", json!({})).await;
    assert!(result.is_error);
    let message = text(&result);
    assert!(
        message.contains("`hangs/hang` did not finish within 1 s (tool_timeout_secs)"),
        "{message}"
    );
    assert!(
        eventually_async(|| std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("hang cancelled"))
        .await,
        "the server was sent notifications/cancelled"
    );
    assert_eq!(text(&call(&source, "echo", json!({"text": "alive"})).await), "alive");
    assert_eq!(pids(&pid_file).len(), 1, "not restarted");
}

#[tokio::test]
async fn a_cancelled_call_tells_the_server_and_returns_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let source = start("cancels", fault(&[]).stderr_log(&log)).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let result = call_with(&source, "hang", json!({}), cancel).await;
    assert!(result.is_error);
    assert!(text(&result).contains("was cancelled"), "{}", text(&result));
    assert!(
        eventually_async(|| std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("hang cancelled"))
        .await,
        "the server was sent notifications/cancelled"
    );
    assert_eq!(text(&call(&source, "echo", json!({"text": "fine"})).await), "fine");
}

#[tokio::test]
async fn a_10_mb_result_is_capped_like_the_built_in_tools() {
    let source = start("big", fault(&[])).await;
    let result = call(&source, "big", json!({})).await;
    assert!(!result.is_error);
    let message = text(&result);
    assert!(
        message.len() < panto_tools::DEFAULT_MAX_OUTPUT_BYTES + 200,
        "{}",
        message.len()
    );
    assert!(
        message.contains(&format!(
            "[output truncated: {} of {} bytes shown",
            panto_tools::DEFAULT_MAX_OUTPUT_BYTES,
            10 * 1024 * 1024
        )),
        "{}",
        &message[message.len() - 200..]
    );
}

#[tokio::test]
async fn lines_that_are_not_json_rpc_do_not_break_the_session() {
    let source = start("garbled", fault(&[])).await;
    let result = call(&source, "garbage", json!({})).await;
    // rmcp skips what it cannot parse; the answer after it still arrives.
    assert_eq!(text(&result), "after garbage", "{result:?}");
    assert_eq!(text(&call(&source, "echo", json!({"text": "ok"})).await), "ok");
}

#[tokio::test]
async fn list_changed_moves_the_generation_and_offers_the_new_tool() {
    let source = start("growing", fault(&[])).await;
    let before = source.generation();
    assert!(!source.tools().iter().any(|t| t.name == "extra"));
    assert_eq!(text(&call(&source, "add_tool", json!({})).await), "added");
    assert!(
        eventually_async(|| source.generation() != before).await,
        "the list was refreshed"
    );
    let names: Vec<String> = source.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names.last().map(String::as_str), Some("extra"), "{names:?}");
    assert_eq!(text(&call(&source, "extra", json!({})).await), "extra ran");
}

#[tokio::test]
async fn an_http_server_without_its_token_variable_is_refused_by_name() {
    let config = ServerConfig::http("http://127.0.0.1:9/mcp").bearer_token_env("PANTO_TEST_UNSET_TOKEN_VAR");
    let err = panto_mcp::McpSource::start("remote", config).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("`remote`: the bearer token variable `PANTO_TEST_UNSET_TOKEN_VAR`"),
        "{err}"
    );
}

#[tokio::test]
async fn an_http_server_that_is_not_there_is_a_start_error_naming_it() {
    let config = ServerConfig::http("http://127.0.0.1:9/mcp").startup_timeout_secs(5);
    let err = panto_mcp::McpSource::start("remote", config).await.unwrap_err();
    assert!(err.to_string().contains("MCP server `remote`"), "{err}");
}
