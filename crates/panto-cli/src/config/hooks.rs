//! `[[hooks.before_tool]]` and `typeahead`: the user's command hooks and what Enter does while a
//! turn runs.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::file::Source;
use crate::exit::Failure;

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

/// `[[hooks.before_tool]]`, resolved: the hooks on built-in and MCP tools, in file order.
pub type CommandHooks = Vec<panto_tools::policy::CommandHook>;

/// The command hooks, each checked: its `match` names a built-in tool (`TOOL` or `TOOL(GLOB)`)
/// or tools of one of the MCP `servers` (`server__tool`), its command is not empty, its timeout
/// is at least a second (default `panto_core::DEFAULT_HOOK_TIMEOUT`).
pub fn resolve(section: &HooksEntry, servers: &[&str], source: &Source<'_>) -> Result<CommandHooks, Failure> {
    let mut out = CommandHooks::default();
    for (index, entry) in section.before_tool.iter().enumerate() {
        let entry = entry.get_ref();
        let at = format!("hooks.before_tool[{index}]");
        let rule = super::tools::parse_rule(entry.matcher.get_ref(), servers)
            .map_err(|e| source.error(entry.matcher.span(), format!("{at}.match: {e}")))?;
        if entry.command.get_ref().trim().is_empty() {
            return Err(source.error(entry.command.span(), format!("{at}.command is empty")));
        }
        let timeout = match &entry.timeout_secs {
            Some(secs) if *secs.get_ref() == 0 => {
                return Err(source.error(secs.span(), format!("{at}.timeout_secs must be at least 1")))
            }
            Some(secs) => Duration::from_secs(*secs.get_ref()),
            None => panto_core::DEFAULT_HOOK_TIMEOUT,
        };
        out.push(panto_tools::policy::CommandHook {
            rule,
            command: entry.command.get_ref().clone(),
            timeout,
        });
    }
    Ok(out)
}
