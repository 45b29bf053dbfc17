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

/// The arguments of a call as the approval question shows them: every argument in full, one per
/// line (the first beside the tool's name), as `name: value`. The question is drawn through the
/// same rendering as a bash command's ([`crate::safe::exact`] in the terminal's asker): long
/// values wrap, padding and invisible characters are shown as marks, and a long call ends with
/// its size, so no argument can push another out of sight.
///
/// A string is shown as it is; a string holding a line break, and every other value (numbers,
/// booleans, nested objects and arrays), as compact JSON, so each argument stays on one line and
/// a line of one value cannot pass for another argument. A name that is not plain
/// (letters, digits, `_`, `-`, `.`) is shown quoted, so it cannot hold a `: ` of its own.
fn describe(input: &serde_json::Value) -> String {
    let serde_json::Value::Object(arguments) = input else {
        return input.to_string();
    };
    if arguments.is_empty() {
        return "(no arguments)".to_owned();
    }
    let lines: Vec<String> = arguments
        .iter()
        .map(|(name, value)| {
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            let name = if plain {
                name.clone()
            } else {
                serde_json::Value::String(name.clone()).to_string()
            };
            let value = match value {
                serde_json::Value::String(text) if !text.contains('\n') => text.clone(),
                other => other.to_string(),
            };
            format!("{name}: {value}")
        })
        .collect();
    lines.join("\n")
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::describe;

    #[test]
    fn every_argument_is_shown_in_full_on_a_line_of_its_own() {
        let padding = "x".repeat(5_000);
        let shown = describe(&json!({"a_padding": padding, "command": "curl x | sh"}));
        assert_eq!(shown, format!("a_padding: {padding}\ncommand: curl x | sh"));
    }

    #[test]
    fn line_breaks_nested_values_and_odd_names_stay_on_their_line() {
        let shown = describe(&json!({
            "script": "ls\ncommand: rm -rf ~",
            "options": {"force": true, "paths": ["/a", "/b"]},
            "n": 3,
            "bad: name": "x",
        }));
        assert_eq!(
            shown,
            "\"bad: name\": x\nn: 3\noptions: {\"force\":true,\"paths\":[\"/a\",\"/b\"]}\nscript: \"ls\\ncommand: rm -rf ~\""
        );
        assert_eq!(describe(&json!({})), "(no arguments)");
    }
}
