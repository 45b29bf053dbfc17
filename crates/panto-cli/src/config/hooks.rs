//! `[[hooks.before_tool]]` and `typeahead`: the user's command hooks and what Enter does while a
//! turn runs.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::file::Source;
use crate::exit::Failure;
use crate::mcp::{McpCommandHook, NameRule};

/// `[hooks]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksEntry {
    /// Programs asked before a tool call runs, in order.
    #[serde(default)]
    pub before_tool: Vec<Spanned<BeforeToolEntry>>,
}

/// One `[[hooks.before_tool]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeforeToolEntry {
    /// `TOOL` or `TOOL(GLOB)` for a built-in tool, `server__tool` (globs allowed) for MCP tools:
    /// which calls the hook is asked about.
    #[serde(rename = "match")]
    pub matcher: Spanned<String>,
    /// The shell command.
    pub command: Spanned<String>,
    /// Seconds it may take; a slower hook denies the call.
    pub timeout_secs: Option<Spanned<u64>>,
}

/// What Enter does with a line typed while a turn runs (`typeahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Typeahead {
    /// The line joins the running turn after the current step's tool results.
    #[default]
    Steer,
    /// The line starts a new turn when this one ends.
    FollowUp,
}

/// `[[hooks.before_tool]]`, resolved: the hooks on built-in tools and those on MCP tools, each
/// in file order.
#[derive(Debug, Clone, Default)]
pub struct CommandHooks {
    /// Hooks whose `match` names a built-in tool.
    pub builtin: Vec<panto_tools::CommandHook>,
    /// Hooks whose `match` names tools of a configured MCP server.
    pub mcp: Vec<McpCommandHook>,
}

/// The command hooks, each checked: its `match` names a built-in tool (`TOOL` or `TOOL(GLOB)`)
/// or tools of one of the MCP `servers` (`server__tool`), its command is not empty, its timeout
/// is at least a second.
pub fn resolve(section: &HooksEntry, servers: &[&str], source: &Source<'_>) -> Result<CommandHooks, Failure> {
    let mut out = CommandHooks::default();
    for (index, entry) in section.before_tool.iter().enumerate() {
        let entry = entry.get_ref();
        let at = format!("hooks.before_tool[{index}]");
        let bad_match = |e: String| source.error(entry.matcher.span(), format!("{at}.match: {e}"));
        let rule = match NameRule::parse(entry.matcher.get_ref(), servers) {
            Some(mcp) => Err(mcp.map_err(bad_match)?),
            None => Ok(panto_tools::Rule::parse(entry.matcher.get_ref()).map_err(|e| bad_match(e.to_string()))?),
        };
        if entry.command.get_ref().trim().is_empty() {
            return Err(source.error(entry.command.span(), format!("{at}.command is empty")));
        }
        let timeout = match &entry.timeout_secs {
            Some(secs) if *secs.get_ref() == 0 => {
                return Err(source.error(secs.span(), format!("{at}.timeout_secs must be at least 1")))
            }
            Some(secs) => Duration::from_secs(*secs.get_ref()),
            None => panto_tools::DEFAULT_HOOK_TIMEOUT,
        };
        let command = entry.command.get_ref().clone();
        match rule {
            Ok(rule) => out.builtin.push(panto_tools::CommandHook { rule, command, timeout }),
            Err(rule) => out.mcp.push(McpCommandHook { rule, command, timeout }),
        }
    }
    Ok(out)
}
