//! `[[hooks.before_tool]]` entries whose `match` names an MCP tool (`server__tool`, globs
//! allowed, as in `[tools] allow`/`deny`): asked about that server's calls as panto-tools'
//! `PolicyHook` asks the hooks of built-in tools, and in the same place in the order (after the
//! deny rules, before the allow rules and approval). A hook gets the tool's offered name as
//! `tool`, the call's arguments as `input`, and may allow, deny or rewrite them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use panto_core::{BeforeTool, Hook, ToolCall, ToolSource};
use panto_tools::HookVerdict;

use super::gated::{find, GatedSource};
use super::rules::{offered_name, NameRule};

/// One command hook on MCP tools.
#[derive(Debug, Clone)]
pub struct McpCommandHook {
    /// The tools it is asked about.
    pub rule: NameRule,
    /// The shell command (run with `sh -c`).
    pub command: String,
    /// How long it may take before its silence denies the call.
    pub timeout: Duration,
}

/// The command hooks on MCP tools, as one hook on the agent.
#[derive(Debug)]
pub struct McpCommandHooks {
    sources: Vec<Arc<GatedSource>>,
    hooks: Vec<McpCommandHook>,
    cwd: PathBuf,
}

impl McpCommandHooks {
    /// The `hooks` for the tools of `sources`, run in `cwd`.
    pub fn new(sources: Vec<Arc<GatedSource>>, hooks: Vec<McpCommandHook>, cwd: PathBuf) -> McpCommandHooks {
        McpCommandHooks { sources, hooks, cwd }
    }
}

#[panto_core::async_trait]
impl Hook for McpCommandHooks {
    fn name(&self) -> &str {
        "mcp command hooks"
    }

    /// Each command hook has its own timeout.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
        let Some((source, tool)) = find(&self.sources, &call.name) else {
            return BeforeTool::Allow;
        };
        let server = source.name();
        let offered = offered_name(server, tool);
        let mut input = call.input.clone();
        let mut rewritten = false;
        for hook in self.hooks.iter().filter(|h| h.rule.matches(server, tool)) {
            let asked = panto_tools::ask_command(&hook.command, hook.timeout, &offered, &input, &self.cwd);
            let verdict = tokio::select! {
                verdict = asked => verdict,
                _ = call.cancel.cancelled() => return BeforeTool::Deny("the turn was cancelled".into()),
            };
            match verdict {
                HookVerdict::Allow => {}
                HookVerdict::Deny(reason) => return BeforeTool::Deny(reason),
                HookVerdict::Rewrite(new) => {
                    input = new;
                    rewritten = true;
                }
            }
        }
        if rewritten {
            BeforeTool::Rewrite(input)
        } else {
            BeforeTool::Allow
        }
    }
}
