//! The built-in tools: `read`, `write`, `edit` and `bash`, and the approval gate in front of the
//! ones that change things.
//!
//! Each tool is a [`panto_core::Tool`]. Paths are relative to the working directory panto started
//! in, and every file tool takes its path through [`ToolContext::file_path`], which applies
//! `[tools] read_roots`. Bad arguments from the model become error results that say what was
//! wrong, never panics.

mod approval;
mod bash;
mod edit;
mod files;
mod processes;
mod read;
mod roots;
mod running;
mod write;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use panto_core::{Tool, ToolError};
use serde::de::DeserializeOwned;

pub use approval::{parse_answer as approval_answer, Answer, Approval, Asker, Gate};
pub use files::{kind as file_kind, open_regular, read_bounded, OpenRefusal};
pub use roots::Roots;
pub use running::{global as running, Running};

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolName {
    /// Read a file or an image.
    Read,
    /// Write a whole file.
    Write,
    /// Replace an exact string in a file.
    Edit,
    /// Run a shell command.
    Bash,
}

impl ToolName {
    /// Every built-in tool, in the order they are offered.
    pub const ALL: [ToolName; 4] = [ToolName::Read, ToolName::Write, ToolName::Edit, ToolName::Bash];

    /// The name the model sees.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Read => "read",
            ToolName::Write => "write",
            ToolName::Edit => "edit",
            ToolName::Bash => "bash",
        }
    }

    /// Whether the tool changes files or runs programs, and so needs approval.
    pub fn needs_approval(self) -> bool {
        !matches!(self, ToolName::Read)
    }

    /// Parses a tool name.
    pub fn parse(name: &str) -> Result<ToolName, String> {
        ToolName::ALL
            .into_iter()
            .find(|t| t.as_str() == name.trim())
            .ok_or_else(|| format!("unknown tool {name:?}; the built-in tools are {}", names_list()))
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn names_list() -> String {
    ToolName::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
}

/// Parses `--tools a,b`; `none` alone selects no tool.
pub fn parse_list(items: &[String]) -> Result<Vec<ToolName>, String> {
    if items.len() == 1 && items[0].trim() == "none" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for item in items {
        let tool = ToolName::parse(item).map_err(|e| format!("--tools: {e} (or `none`)"))?;
        if !out.contains(&tool) {
            out.push(tool);
        }
    }
    Ok(out)
}

/// What every built-in tool needs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The working directory relative paths and commands use.
    pub cwd: PathBuf,
    /// The approval gate.
    pub gate: Arc<Gate>,
    /// Default bash timeout.
    pub bash_timeout: Duration,
    /// Cap on a tool's text output.
    pub max_output_bytes: usize,
    /// The directories file tools may touch (`[tools] read_roots`).
    pub roots: Roots,
}

impl ToolContext {
    /// The path a file tool works on for the model's `raw` path: resolved against the working
    /// directory and checked against the read roots (see [`Roots::check`]). Every tool that takes
    /// a path calls this; none opens a model's path any other way.
    pub fn file_path(&self, raw: &str) -> Result<PathBuf, String> {
        if raw.trim().is_empty() {
            return Err("the path is empty".into());
        }
        let path = Path::new(raw);
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        };
        self.roots.check(&absolute)
    }
}

/// The selected built-in tools, ready to register.
pub fn builtin(names: &[ToolName], ctx: &ToolContext) -> Vec<Arc<dyn Tool>> {
    names
        .iter()
        .map(|name| -> Arc<dyn Tool> {
            match name {
                ToolName::Read => Arc::new(read::ReadTool::new(ctx.clone())),
                ToolName::Write => Arc::new(write::WriteTool::new(ctx.clone())),
                ToolName::Edit => Arc::new(edit::EditTool::new(ctx.clone())),
                ToolName::Bash => Arc::new(bash::BashTool::new(ctx.clone())),
            }
        })
        .collect()
}

/// Decodes a tool's arguments, with an error that names the tool and the problem.
fn parse_input<T: DeserializeOwned>(tool: ToolName, input: &serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(input.clone()).map_err(|e| format!("invalid arguments for {tool}: {e}").into())
}

/// A short one-line rendering of `text` for approval prompts and summaries.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(max_chars).collect();
    if first.chars().count() > max_chars || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the tools' unit tests.

    use super::*;
    use panto_core::{CancellationToken, ResultPart, ToolCall, ToolCallResult};

    /// A context over `dir` with approval `mode` and no terminal.
    pub fn context(dir: &Path, mode: Approval) -> ToolContext {
        ToolContext {
            cwd: dir.to_path_buf(),
            gate: Arc::new(Gate::new(mode, None, "")),
            bash_timeout: Duration::from_secs(10),
            max_output_bytes: 4_096,
            roots: Roots::unrestricted(),
        }
    }

    /// Calls `tool` with `input`, turning an `Err` into an error result as the agent does.
    pub async fn call(tool: &dyn Tool, input: serde_json::Value) -> ToolCallResult {
        call_with(tool, input, CancellationToken::new()).await
    }

    /// Calls `tool` with `input` and a cancel token.
    pub async fn call_with(tool: &dyn Tool, input: serde_json::Value, cancel: CancellationToken) -> ToolCallResult {
        let call = ToolCall {
            id: "t1".into(),
            name: tool.declaration().name,
            input,
            cancel,
        };
        tool.call(call)
            .await
            .unwrap_or_else(|e| ToolCallResult::error(e.to_string()))
    }

    /// The text parts of a result, joined.
    pub fn text(result: &ToolCallResult) -> String {
        result
            .parts
            .iter()
            .filter_map(|p| match p {
                ResultPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_parse_and_reject_unknown_names() {
        let list = parse_list(&["read".into(), "bash".into(), "read".into()]).unwrap();
        assert_eq!(list, [ToolName::Read, ToolName::Bash]);
        assert_eq!(parse_list(&["none".into()]).unwrap(), []);
        let e = parse_list(&["rm".into()]).unwrap_err();
        assert!(e.contains("rm") && e.contains("read, write, edit, bash"), "{e}");
    }
}
