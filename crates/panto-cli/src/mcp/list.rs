//! `panto mcp list` and the REPL's `/mcp`: every configured server, its status, its tools (by
//! the names the model is offered) and why a server is not running.

use std::process::ExitCode;
use std::sync::Arc;

use panto_mcp::{McpSource, ServerStatus};

use super::{GatedSource, McpTools};
use crate::config::{McpServer, Settings};
use crate::exit::Failure;
use crate::tools::{Approval, Gate};
use panto_tools::policy::offered_name;
use panto_tools::ApprovalModeHandle;

/// `panto mcp list`: starts every enabled server, prints the listing, stops them. Exit code 1
/// when a server that is enabled did not start (so a script can check its setup).
pub async fn list_command(settings: &Settings) -> Result<ExitCode, Failure> {
    if settings.mcp_servers.is_empty() {
        println!(
            "no MCP servers configured (add [mcp.servers.NAME] tables to {})",
            settings.config_path_display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Every tool is listed, read-only or not: the listing is not a run in any approval mode.
    let gate = Arc::new(Gate::new(None));
    let tools = McpTools::start(settings, &gate, &ApprovalModeHandle::new(Approval::Auto)).await;
    for line in render(&tools, None).await {
        println!(
            "{}",
            crate::safe::for_stream(&line, std::io::IsTerminal::is_terminal(&std::io::stdout()))
        );
    }
    tools.shutdown().await;
    Ok(if tools.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::EXIT_FAILURE)
    })
}

/// The listing, one line per server and one per tool. `mode` is the run's approval mode (the
/// REPL's `/mcp`), which says which tools are offered and which ask first; `None` lists what
/// each tool is annotated as.
pub async fn render(tools: &McpTools, mode: Option<Approval>) -> Vec<String> {
    let mut lines = Vec::new();
    for server in &tools.configured {
        let started = tools.started.iter().find(|s| s.name() == server.name);
        let failed = tools.failed.iter().find(|(name, _)| name == &server.name);
        let status = match (started, failed) {
            _ if !server.config.enabled => "disabled (enabled = false)".to_owned(),
            (Some(source), _) => match source.status().await {
                ServerStatus::Running => running(source),
                ServerStatus::Stopped { error, .. } => format!("stopped: {error}"),
                _ => "unknown".to_owned(),
            },
            (None, Some((_, why))) => format!("failed: {why}"),
            (None, None) => "not started".to_owned(),
        };
        lines.push(format!("{}  {}  {status}", server.name, transport(server)));
        // Only a stdio server has a standard error to log.
        let stdio = server.config.command.is_some();
        if let Some(log) = server.config.stderr_log.as_ref().filter(|_| failed.is_some() && stdio) {
            lines.push(format!("  its stderr: {}", log.display()));
        }
        if let Some((source, gated)) = started.and_then(|s| tools.gated_of(s.name()).map(|g| (s, g))) {
            lines.extend(tool_lines(source, gated, mode));
        }
    }
    lines
}

/// `running (NAME VERSION, protocol P, N tools)`.
fn running(source: &McpSource) -> String {
    let details = source.details();
    let who = match (&details.server_name, &details.server_version) {
        (Some(name), Some(version)) => format!("{name} {version}, "),
        (Some(name), None) => format!("{name}, "),
        _ => String::new(),
    };
    let count = source.all_tools().len();
    format!(
        "running ({who}protocol {}, {count} tool{})",
        details.protocol_version,
        if count == 1 { "" } else { "s" }
    )
}

/// How the server is reached: `stdio: COMMAND ARGS` or `http: URL`.
fn transport(server: &McpServer) -> String {
    match (&server.config.command, &server.config.url) {
        (Some(command), _) => {
            let mut words = vec![command.clone()];
            words.extend(server.config.args.iter().cloned());
            format!("stdio: {}", words.join(" "))
        }
        (None, Some(url)) => format!("http: {}", panto_core::wire::strip_userinfo(url)),
        (None, None) => "no transport".to_owned(),
    }
}

/// One line per tool: offered name, what approval does with it, the first sentence of its
/// description.
fn tool_lines(source: &McpSource, gated: &GatedSource, mode: Option<Approval>) -> Vec<String> {
    let tools = source.all_tools();
    let width = tools
        .iter()
        .map(|t| offered_name(source.name(), &t.name).len())
        .max()
        .unwrap_or(0);
    let rows: Vec<(String, &str, String)> = tools
        .iter()
        .map(|tool| {
            let read_only = tool.annotations.is_read_only();
            let approval = match (mode, read_only) {
                (None, true) => "read-only",
                (None, false) => "writes: asks first",
                (Some(_), true) => "runs freely (read-only)",
                (Some(Approval::ReadOnly), false) if gated.offers(&tool.name) => "allowed by a rule",
                (Some(Approval::ReadOnly), false) => "not offered (read-only mode)",
                (Some(Approval::Auto), false) => "runs without asking (--approve auto)",
                (Some(Approval::Ask), false) if gated.allowed(&tool.name) => "allowed by a rule",
                (Some(Approval::Ask), false) => "asks first",
            };
            let summary = tool.description.split(". ").next().unwrap_or("").trim_end_matches('.');
            let summary: String = summary.lines().next().unwrap_or("").chars().take(100).collect();
            (offered_name(source.name(), &tool.name), approval, summary)
        })
        .collect();
    // The approval column is as wide as its longest entry, so the summaries line up.
    let approval_width = rows.iter().map(|(_, approval, _)| approval.len()).max().unwrap_or(0);
    rows.into_iter()
        .map(|(name, approval, summary)| format!("  {name:<width$}  {approval:<approval_width$}  {summary}"))
        .collect()
}
