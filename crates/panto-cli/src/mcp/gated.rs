//! One MCP server's tools behind the CLI's approval: `[tools] deny` rules, then `allow` rules,
//! then the gate (which asks, in `ask` mode, for every tool its server did not annotate
//! `readOnlyHint`). In read-only mode only tools annotated read-only, or matched by an `allow`
//! rule (which runs a call in every mode, as for built-in tools), are offered.

use std::sync::Arc;

use panto_core::{ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};
use panto_mcp::McpSource;

use super::rules::{offered_name, NameRule};
use crate::tools::{Approval, Gate, GatedTool};

/// The longest description of a call's arguments in an approval question.
const MAX_WHAT: usize = 300;

/// An [`McpSource`] whose calls pass the CLI's rules and approval gate first.
#[derive(Debug)]
pub struct GatedSource {
    source: Arc<McpSource>,
    gate: Arc<Gate>,
    allow: Vec<NameRule>,
    deny: Vec<NameRule>,
    /// Read-only approval mode: offer only what may run in it.
    read_only_mode: bool,
}

impl GatedSource {
    /// `source` behind `gate` and the MCP rules of `[tools] allow` / `deny`.
    pub fn new(source: Arc<McpSource>, gate: Arc<Gate>, allow: Vec<NameRule>, deny: Vec<NameRule>) -> GatedSource {
        let read_only_mode = gate.mode() == Approval::ReadOnly;
        GatedSource {
            source,
            gate,
            allow,
            deny,
            read_only_mode,
        }
    }

    /// Whether tool `tool` (the server's name for it) is offered: always, but in read-only mode
    /// only when annotated read-only or allowed by a rule.
    pub fn offers(&self, tool: &str) -> bool {
        !self.read_only_mode || self.source.is_read_only(tool) || self.allowed(tool)
    }

    /// Whether an `allow` rule matches tool `tool`: its calls run without asking, in every mode.
    pub fn allowed(&self, tool: &str) -> bool {
        self.allow.iter().any(|r| r.matches(self.source.name(), tool))
    }

    /// Whether the gate may stop a call of `tool` (offered name) to ask first.
    pub fn asks(&self, tool: &str) -> bool {
        let read_only = self.source.is_read_only(tool);
        !self.allowed(tool)
            && self.gate.asks(&GatedTool::Mcp {
                name: &offered_name(self.source.name(), tool),
                read_only,
            })
    }

    /// Whether the call may run: `Err` is the error result the model reads.
    async fn admit(&self, call: &ToolCall) -> Result<(), String> {
        let server = self.source.name();
        let offered = offered_name(server, &call.name);
        if let Some(rule) = self.deny.iter().find(|r| r.matches(server, &call.name)) {
            return Err(format!(
                "the {offered} call did not run: it is denied by the rule {:?} of [tools] deny",
                rule.as_str()
            ));
        }
        if self.allowed(&call.name) {
            return Ok(());
        }
        let tool = GatedTool::Mcp {
            name: &offered,
            read_only: self.source.is_read_only(&call.name),
        };
        self.gate.check_tool(&tool, &describe(&call.input), &call.cancel).await
    }
}

/// The arguments of a call as the approval question shows them: compact JSON, cut at
/// [`MAX_WHAT`] characters.
fn describe(input: &serde_json::Value) -> String {
    let text = input.to_string();
    if text.chars().count() > MAX_WHAT {
        format!("{}…", text.chars().take(MAX_WHAT).collect::<String>())
    } else {
        text
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

    fn generation(&self) -> u64 {
        self.source.generation()
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        match self.admit(&call).await {
            Ok(()) => self.source.call(call).await,
            Err(refusal) => Ok(ToolCallResult::error(refusal)),
        }
    }
}
