//! One MCP server's tools as the CLI offers them. The calls pass straight through
//! ([`GatedSource`]'s `call`): every call of every tool, built-in or MCP, goes through panto-tools'
//! one policy chain on the agent (deny rules, command hooks, allow rules, approval; installed by
//! `tools/hook.rs`). What stays here is what is offered: in read-only mode only tools annotated
//! read-only, or matched by an `allow` rule (which runs a call in every mode, as for built-in
//! tools), and whether a call will be asked about (for the tool line's rendering).

use std::sync::Arc;

use panto_core::{ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};
use panto_mcp::McpSource;
use panto_tools::policy::{offered_name, Rule};
use panto_tools::ApprovalModeHandle;

use crate::tools::{Approval, Gate};

/// An [`McpSource`] offered under the CLI's approval mode.
#[derive(Debug)]
pub struct GatedSource {
    source: Arc<McpSource>,
    gate: Arc<Gate>,
    /// The `[tools] allow` rules that name MCP tools.
    allow: Vec<Rule>,
    /// The policy's approval mode, read at each use (it changes with `/approve`): in read-only
    /// mode only what may run in it is offered.
    mode: ApprovalModeHandle,
}

impl GatedSource {
    /// `source` under the approval `mode` (the policy's handle), asking `gate`, with the `allow`
    /// rules (those naming MCP tools count).
    pub fn new(source: Arc<McpSource>, gate: Arc<Gate>, allow: Vec<Rule>, mode: ApprovalModeHandle) -> GatedSource {
        GatedSource {
            source,
            gate,
            allow,
            mode,
        }
    }

    /// Whether tool `tool` (the server's name for it) is offered: always, but in read-only mode
    /// only when annotated read-only or allowed by a rule.
    pub fn offers(&self, tool: &str) -> bool {
        self.mode.get() != Approval::ReadOnly || self.source.is_read_only(tool) || self.allowed(tool)
    }

    /// Whether an `allow` rule matches tool `tool`: its calls run without asking, in every mode.
    pub fn allowed(&self, tool: &str) -> bool {
        self.allow.iter().any(|r| r.names_source_tool(self.source.name(), tool))
    }

    /// Whether a call of `tool` (the server's name for it) will be asked about first.
    pub fn asks(&self, tool: &str) -> bool {
        !self.source.is_read_only(tool)
            && !self.allowed(tool)
            && self.gate.asks(self.mode.get(), &offered_name(self.source.name(), tool))
    }
}

#[panto_core::async_trait]
impl ToolSource for GatedSource {
    fn name(&self) -> &str {
        self.source.name()
    }

    fn tools(&self) -> Vec<ToolDecl> {
        self.source
            .offered_tools()
            .iter()
            .filter(|t| self.offers(&t.name))
            .map(panto_mcp::McpTool::declaration)
            .collect()
    }

    /// Moves when the server's tools change and when the approval mode enters or leaves
    /// read-only (which changes what is offered), so the agent reads the tools again before its
    /// next request.
    fn generation(&self) -> u64 {
        let read_only = u64::from(self.mode.get() == Approval::ReadOnly);
        self.source.generation().wrapping_mul(2) | read_only
    }

    /// Rules and approval were applied by the hooks before the call got here.
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        self.source.call(call).await
    }
}
