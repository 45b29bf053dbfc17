//! MCP servers in the CLI: started (in parallel) when the agent starts, in the REPL and in print
//! mode; their tools offered under the rules and approval mode ([`gated`]); listed by `panto mcp list`
//! and `/mcp` ([`list`]).
//!
//! A server that does not start is a warning naming it and quoting the end of its standard
//! error; the others work. A server's standard error goes to `$XDG_STATE_HOME/panto/mcp/<server>.log`
//! (the config sets `stderr_log`), never to the terminal.

mod gated;
mod list;

use std::sync::Arc;

use panto_core::{Agent, ToolSource};
use panto_mcp::McpSource;

pub use gated::GatedSource;
pub use list::{list_command, render};
use panto_tools::policy::{offered_name, Rule, SourceRegistry};
use panto_tools::ApprovalModeHandle;

use crate::config::{McpServer, Settings};
use crate::exit::Failure;
use crate::tools::Gate;

/// The servers of a run: the configured ones, what became of each, and the started ones behind
/// the gate.
#[derive(Debug, Default)]
pub struct McpTools {
    /// Every configured server, in file order.
    configured: Vec<McpServer>,
    /// The started servers, in file order.
    started: Vec<Arc<McpSource>>,
    /// The same, gated, as the agent gets them.
    gated: Vec<Arc<GatedSource>>,
    /// Servers that did not start: name and why (naming it, with its stderr tail).
    failed: Vec<(String, String)>,
}

impl McpTools {
    /// Starts every enabled server of `settings` in parallel. While the approval `mode` (the
    /// policy's handle) is read-only, only tools annotated read-only (or allowed by a rule) are
    /// offered ([`GatedSource`]). Failures are kept for [`McpTools::warnings`].
    pub async fn start(settings: &Settings, gate: &Arc<Gate>, mode: &ApprovalModeHandle) -> McpTools {
        let configured = settings.mcp_servers.clone();
        if configured.iter().all(|s| !s.config.enabled) {
            return McpTools {
                configured,
                ..McpTools::default()
            };
        }
        let started = panto_mcp::start_all(configured.iter().map(|s| (s.name.clone(), s.config.clone()))).await;
        for source in &started.sources {
            source.set_max_result_bytes(settings.tools.max_output_bytes);
        }
        // The rules were checked when the settings were read; those naming MCP tools decide what
        // read-only mode offers.
        let allow: Vec<Rule> = settings
            .tools
            .allow
            .iter()
            .filter_map(|r| Rule::parse(r).ok())
            .filter(|r| r.source_prefix().is_some())
            .collect();
        let gated = started
            .sources
            .iter()
            .map(|source| {
                Arc::new(GatedSource::new(
                    source.clone(),
                    gate.clone(),
                    allow.clone(),
                    mode.clone(),
                ))
            })
            .collect();
        McpTools {
            configured,
            started: started.sources,
            gated,
            failed: started
                .warnings
                .into_iter()
                .map(|w| (w.server.clone(), w.to_string()))
                .collect(),
        }
    }

    /// One line for `/status`: the servers running, and those that did not start.
    pub fn summary(&self) -> String {
        if self.configured.is_empty() {
            return "none configured".to_owned();
        }
        let running: Vec<&str> = self.started.iter().map(|s| s.name()).collect();
        let mut out = format!("{} running", running.len());
        if !running.is_empty() {
            out.push_str(&format!(" ({})", running.join(", ")));
        }
        if !self.failed.is_empty() {
            let failed: Vec<&str> = self.failed.iter().map(|(name, _)| name.as_str()).collect();
            out.push_str(&format!(
                ", {} failed ({}; /mcp says why)",
                failed.len(),
                failed.join(", ")
            ));
        }
        out
    }

    /// One line per server that did not start, naming it and quoting its stderr tail, and where
    /// its log is.
    pub fn warnings(&self) -> Vec<String> {
        self.failed
            .iter()
            .map(|(name, why)| {
                let log = self
                    .configured
                    .iter()
                    .find(|s| &s.name == name)
                    .and_then(|s| s.config.stderr_log.as_ref())
                    .map(|p| format!(" (its log: {})", p.display()))
                    .unwrap_or_default();
                format!("warning: {why}{log}; its tools are not offered")
            })
            .collect()
    }

    /// Prints [`McpTools::warnings`] on stderr.
    pub fn print_warnings(&self) {
        for warning in self.warnings() {
            crate::safe::eprint_line(&warning);
        }
    }

    /// Offers the started servers' tools to `agent`, in file order.
    pub fn register(&self, agent: &mut Agent) -> Result<(), Failure> {
        for source in &self.gated {
            agent
                .register_tool_source(source.clone() as Arc<dyn ToolSource>)
                .map_err(|e| Failure::runtime(format!("MCP server `{}`: {e}", source.name())))?;
        }
        Ok(())
    }

    /// The started servers' annotations, for the approval step of the policy chain (a tool
    /// annotated read-only runs without approval).
    pub fn annotations(&self) -> SourceRegistry {
        let registry = SourceRegistry::new();
        for source in &self.started {
            registry.add(source.clone());
        }
        registry
    }

    /// Whether the call of the tool offered as `wire` will be asked about first (`None`: not an
    /// MCP tool).
    pub fn asks(&self, wire: &str) -> Option<bool> {
        self.started.iter().zip(&self.gated).find_map(|(source, gated)| {
            source
                .offered_tools()
                .iter()
                .find(|t| gated.offers(&t.name) && offered_name(source.name(), &t.name) == wire)
                .map(|t| gated.asks(&t.name))
        })
    }

    /// The gated source of server `name`.
    fn gated_of(&self, name: &str) -> Option<&GatedSource> {
        self.gated.iter().find(|g| g.name() == name).map(|g| g.as_ref())
    }

    /// The MCP tool offered as `wire`: its server and the tool.
    pub fn tool(&self, wire: &str) -> Option<(&McpSource, panto_mcp::McpTool)> {
        self.started.iter().find_map(|source| {
            source
                .offered_tools()
                .into_iter()
                .find(|t| offered_name(source.name(), &t.name) == wire)
                .map(|t| (source.as_ref(), t))
        })
    }

    /// Ends every server's session (stdio servers' process groups are killed).
    pub async fn shutdown(&self) {
        for source in &self.started {
            source.shutdown().await;
        }
    }
}
