//! `[tools]`: which built-in tools are offered, how they are approved, and their limits.

use std::path::Path;
use std::time::Duration;

use super::file::{Source, ToolsEntry};
use super::{roots, Env};
use crate::exit::Failure;
use crate::tools::{Approval, Roots, ToolName};

/// Built-in tool settings.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// Default timeout of one bash command.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Default cap on a tool's text output, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;

/// `[tools]` over the defaults: every tool, no approval mode (the front end's default), the
/// default limits, file tools unrestricted.
pub fn resolve(section: &ToolsEntry, env: &Env, base_dir: &Path, source: &Source<'_>) -> Result<ToolSettings, Failure> {
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
    })
}
