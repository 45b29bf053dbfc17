//! Helpers: the fault server's configuration, calls, result text, processes in /proc.

use std::path::Path;
use std::time::{Duration, Instant};

use panto_core::{CancellationToken, ResultPart, ToolCall, ToolCallResult, ToolSource};
use panto_mcp::{McpSource, ServerConfig};

/// The fault server with `args`.
pub fn fault(args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(panto_testkit::mcp::fault_server().to_string_lossy()).args(args.iter().copied())
}

/// Starts the fault server as `name`.
pub async fn start(name: &str, config: ServerConfig) -> McpSource {
    McpSource::start(name, config)
        .await
        .unwrap_or_else(|e| panic!("starting {name}: {e}"))
}

/// Calls `tool` with `input`.
pub async fn call(source: &McpSource, tool: &str, input: serde_json::Value) -> ToolCallResult {
    call_with(source, tool, input, CancellationToken::new()).await
}

pub async fn call_with(
    source: &McpSource,
    tool: &str,
    input: serde_json::Value,
    cancel: CancellationToken,
) -> ToolCallResult {
    ToolSource::call(source, ToolCall::new("c1", tool, input).with_cancel(cancel))
        .await
        .expect("an MCP source returns results, not errors")
}

/// The text parts of a result, joined.
pub fn text(result: &ToolCallResult) -> String {
    result
        .parts
        .iter()
        .filter_map(|p| match p {
            ResultPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The pids a fault server wrote to `file`.
pub fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether process `pid` still runs, or is a zombie this process has not reaped. A zombie of
/// another parent (the server of a SIGKILLed child test, reparented to an init that may not
/// reap) has stopped and is not ours to reap.
pub fn exists(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let (state, ppid) = (
        fields.first().copied(),
        fields.get(1).and_then(|p| p.parse::<u32>().ok()),
    );
    !(state == Some("Z") && ppid != Some(std::process::id()))
}

/// Waits (up to 10 s) until `done` holds; returns whether it did. For effects of other processes
/// (a kill, a file write), which have no event to wait on.
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// [`eventually`] for async tests.
pub async fn eventually_async(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}
