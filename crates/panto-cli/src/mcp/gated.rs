//! One MCP server's tools under the CLI's rules and approval. The calls themselves pass straight
//! through ([`GatedSource`]'s `call`): every call of every tool, built-in or MCP, goes through the
//! same hooks on the agent in the order deny rules ([`McpDenyRules`] for MCP tools), command
//! hooks, allow rules, approval (the CLI's `ApprovalHook` in `tools/hook.rs`, which asks the gate,
//! in `ask` mode, about every tool its server did not annotate `readOnlyHint`). What stays here
//! is what is offered: in read-only mode only tools annotated read-only, or matched by an `allow`
//! rule (which runs a call in every mode, as for built-in tools).

use std::sync::Arc;

use panto_core::{BeforeTool, CancellationToken, Hook, ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};
use panto_mcp::McpSource;

use super::rules::{offered_name, NameRule};
use crate::tools::{Approval, Gate, GatedTool};

/// The longest description of a call's arguments in an approval question.
const MAX_WHAT: usize = 300;

/// An [`McpSource`] offered under the CLI's rules and approval mode.
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

    /// The refusal of a `deny` rule that matches tool `tool` (the server's name for it): the
    /// error result the model reads.
    pub fn denial(&self, tool: &str) -> Option<String> {
        let server = self.source.name();
        let rule = self.deny.iter().find(|r| r.matches(server, tool))?;
        Some(format!(
            "the {} call did not run: it is denied by the rule {:?} of [tools] deny",
            offered_name(server, tool),
            rule.as_str()
        ))
    }

    /// Whether a call of `tool` with `input` may run as far as the allow rules and the approval
    /// mode are concerned (the gate asks in `ask` mode): `Err` is the error result the model
    /// reads.
    pub async fn approve(
        &self,
        tool: &str,
        input: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        if self.allowed(tool) {
            return Ok(());
        }
        let offered = offered_name(self.source.name(), tool);
        let gated = GatedTool::Mcp {
            name: &offered,
            read_only: self.source.is_read_only(tool),
        };
        self.gate.check_tool(&gated, &describe(input), cancel).await
    }
}

/// The server and the server's own name of the MCP tool a hook sees as `name`: hooks see a
/// source's tool as `<source>/<tool>` (panto-core's display name).
pub fn find<'a>(sources: &'a [Arc<GatedSource>], name: &'a str) -> Option<(&'a GatedSource, &'a str)> {
    let (server, tool) = name.split_once('/')?;
    sources
        .iter()
        .find(|s| s.name() == server)
        .map(|source| (source.as_ref(), tool))
}

/// The deny rules of `[tools] deny` that name MCP tools, as the first hook on the agent: a denied
/// call is never shown to a hook or asked about.
#[derive(Debug)]
pub struct McpDenyRules {
    sources: Vec<Arc<GatedSource>>,
}

impl McpDenyRules {
    /// The deny rules of these servers.
    pub fn new(sources: Vec<Arc<GatedSource>>) -> McpDenyRules {
        McpDenyRules { sources }
    }
}

#[panto_core::async_trait]
impl Hook for McpDenyRules {
    fn name(&self) -> &str {
        "mcp deny rules"
    }

    async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
        match find(&self.sources, &call.name).and_then(|(source, tool)| source.denial(tool)) {
            Some(refusal) => BeforeTool::Respond(ToolCallResult::error(refusal)),
            None => BeforeTool::Allow,
        }
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

    /// Rules and approval were applied by the hooks before the call got here.
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        self.source.call(call).await
    }
}
