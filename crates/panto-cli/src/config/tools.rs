//! `[tools]`: which built-in tools are offered, how they are approved, and their limits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::file::{Source, ToolsEntry};
use super::{roots, Env, McpServer};
use crate::exit::Failure;
use crate::tools::{Approval, Roots, Sandbox, ToolName};
use panto_tools::policy::offered_name;

/// Built-in tool settings.
#[derive(Debug, Clone)]
pub struct ToolSettings {
    /// The REPL's approval mode, when configured.
    pub approval: Option<Approval>,
    /// The tools offered.
    pub enabled: Vec<ToolName>,
    /// Default bash timeout.
    pub bash_timeout: Duration,
    /// Cap on tool output returned to the model, in bytes.
    pub max_output_bytes: usize,
    /// The directories the file tools may use (`read_roots`); unrestricted by default.
    pub read_roots: Roots,
    /// `allow` rules, of built-in tools and MCP tools (`server__tool`), each checked to parse
    /// and an MCP rule to name a configured server.
    pub allow: Vec<String>,
    /// `deny` rules, checked as `allow` is.
    pub deny: Vec<String>,
    /// The configured sandbox; `None` leaves it to the front end's default.
    pub sandbox: Option<Sandbox>,
    /// Whether sandboxed commands may use the network.
    pub sandbox_network: bool,
    /// More directories the `workspace-write` sandbox lets tools write, resolved.
    pub writable_roots: Vec<PathBuf>,
    /// Whether `web_fetch` may connect to loopback, private, link-local and unique-local
    /// addresses.
    pub web_fetch_private: bool,
}

pub use panto_tools::{DEFAULT_BASH_TIMEOUT, DEFAULT_MAX_OUTPUT_BYTES};

/// `[tools]` over the defaults: every tool, no approval mode (the front end's default), the
/// default limits, file tools unrestricted.
pub fn resolve(
    section: &ToolsEntry,
    mcp_servers: &[McpServer],
    env: &Env,
    base_dir: &Path,
    source: &Source<'_>,
) -> Result<ToolSettings, Failure> {
    let servers: Vec<&str> = mcp_servers.iter().map(|s| s.name.as_str()).collect();
    let allow = rules(section.allow.as_deref(), "tools.allow", &servers, source)?;
    let deny = rules(section.deny.as_deref(), "tools.deny", &servers, source)?;
    let enabled = match &section.enabled {
        Some(list) => {
            let mut out = Vec::new();
            for name in list {
                let tool = ToolName::parse(name.get_ref())
                    .map_err(|e| source.error(name.span(), format!("tools.enabled: {e}")))?;
                if !out.contains(&tool) {
                    out.push(tool);
                }
            }
            out
        }
        None => ToolName::ALL.to_vec(),
    };
    Ok(ToolSettings {
        approval: section.approval,
        enabled,
        bash_timeout: source
            .at_least(section.bash_timeout_secs.as_ref(), 1, "tools.bash_timeout_secs", "")?
            .map_or(DEFAULT_BASH_TIMEOUT, Duration::from_secs),
        max_output_bytes: source
            .at_least(section.max_output_bytes.as_ref(), 1024, "tools.max_output_bytes", "")?
            .unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
        read_roots: roots::resolve(section.read_roots.as_ref(), env, base_dir, |span, message| {
            source.error(span, message)
        })?,
        allow,
        deny,
        sandbox: section.sandbox,
        sandbox_network: section.sandbox_network.unwrap_or(false),
        writable_roots: writable_roots(section.writable_roots.as_deref(), env, base_dir, source)?,
        web_fetch_private: section.web_fetch_private.unwrap_or(false),
    })
}

/// The rules of `allow` or `deny`, each parsed now so a bad one is an error at its line: a
/// built-in tool's, or one naming a tool of a configured MCP server (`server__tool`).
fn rules(
    list: Option<&[Spanned<String>]>,
    key: &str,
    servers: &[&str],
    source: &Source<'_>,
) -> Result<Vec<String>, Failure> {
    let mut out = Vec::new();
    for rule in list.unwrap_or_default() {
        parse_rule(rule.get_ref(), servers).map_err(|e| source.error(rule.span(), format!("{key}: {e}")))?;
        out.push(rule.get_ref().clone());
    }
    Ok(out)
}

/// Parses a rule of `[tools] allow`/`deny` or a hook's `match`: a built-in tool's, or an MCP
/// tool's whose server part is one of `servers` (as written or as offered).
pub fn parse_rule(text: &str, servers: &[&str]) -> Result<panto_tools::policy::Rule, String> {
    let rule = panto_tools::policy::Rule::parse(text).map_err(|e| e.to_string())?;
    if let Some(prefix) = rule.source_prefix() {
        let configured = servers
            .iter()
            .any(|s| prefix == *s || offered_name(s, "").strip_suffix("__") == Some(prefix));
        if !configured {
            let known = if servers.is_empty() {
                "no MCP server is configured".to_owned()
            } else {
                format!("the configured servers are {}", servers.join(", "))
            };
            return Err(format!(
                "{:?} names no built-in tool and no configured MCP server ({known})",
                rule.as_str()
            ));
        }
    }
    Ok(rule)
}

/// `writable_roots`: each expanded (`~/`, relative to the config file's directory) and resolved;
/// a missing directory is an error at its line.
fn writable_roots(
    list: Option<&[Spanned<String>]>,
    env: &Env,
    base_dir: &Path,
    source: &Source<'_>,
) -> Result<Vec<PathBuf>, Failure> {
    let mut out = Vec::new();
    for raw in list.unwrap_or_default() {
        let path = env
            .expand(raw.get_ref(), base_dir)
            .map_err(|e| source.error(raw.span(), format!("tools.writable_roots {e}")))?;
        let real = path
            .canonicalize()
            .map_err(|e| source.error(raw.span(), format!("tools.writable_roots: {}: {e}", path.display())))?;
        out.push(real);
    }
    Ok(out)
}
