//! `[tools]`: which built-in tools are offered, how they are approved, and their limits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::file::{Source, ToolsEntry};
use super::{roots, Env, McpServer};
use crate::exit::Failure;
use crate::mcp::NameRule;
use crate::tools::{Approval, Roots, Sandbox, ToolName};

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
    /// `allow` rules of built-in tools, each checked to parse.
    pub allow: Vec<String>,
    /// `deny` rules of built-in tools, each checked to parse.
    pub deny: Vec<String>,
    /// `allow` rules that name MCP tools (`server__tool`).
    pub mcp_allow: Vec<NameRule>,
    /// `deny` rules that name MCP tools.
    pub mcp_deny: Vec<NameRule>,
    /// The configured sandbox; `None` leaves it to the front end's default.
    pub sandbox: Option<Sandbox>,
    /// Whether sandboxed commands may use the network.
    pub sandbox_network: bool,
    /// More directories the `workspace-write` sandbox lets tools write, resolved.
    pub writable_roots: Vec<PathBuf>,
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
    let (allow, mcp_allow) = rules(section.allow.as_deref(), "tools.allow", &servers, source)?;
    let (deny, mcp_deny) = rules(section.deny.as_deref(), "tools.deny", &servers, source)?;
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
        mcp_allow,
        mcp_deny,
        sandbox: section.sandbox,
        sandbox_network: section.sandbox_network.unwrap_or(false),
        writable_roots: writable_roots(section.writable_roots.as_deref(), env, base_dir, source)?,
    })
}

/// The rules of `allow` or `deny`, each parsed now so a bad one is an error at its line: those
/// of built-in tools, and those naming a tool of a configured MCP server (`server__tool`).
fn rules(
    list: Option<&[Spanned<String>]>,
    key: &str,
    servers: &[&str],
    source: &Source<'_>,
) -> Result<(Vec<String>, Vec<NameRule>), Failure> {
    let (mut builtin, mut mcp) = (Vec::new(), Vec::new());
    for rule in list.unwrap_or_default() {
        if let Some(parsed) = NameRule::parse(rule.get_ref(), servers) {
            mcp.push(parsed.map_err(|e| source.error(rule.span(), format!("{key}: {e}")))?);
            continue;
        }
        panto_tools::Rule::parse(rule.get_ref()).map_err(|e| source.error(rule.span(), format!("{key}: {e}")))?;
        builtin.push(rule.get_ref().clone());
    }
    Ok((builtin, mcp))
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
