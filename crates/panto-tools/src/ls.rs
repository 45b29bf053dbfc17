//! `ls`: the entries of one directory, hidden ones included, directories marked with `/`.

use async_trait::async_trait;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use crate::search::capped;
use crate::{parse_input, running, ToolContext, ToolName};

/// Entries read from one directory at most: a directory with millions of entries is not listed
/// whole.
const MAX_ENTRIES: usize = 100_000;

/// The `ls` tool.
#[derive(Debug)]
pub(crate) struct LsTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: Option<String>,
}

impl LsTool {
    /// An ls tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        LsTool { ctx }
    }
}

/// One line per entry, sorted by name: `name/` for a directory, `name -> target` for a symbolic
/// link, `name (N bytes)` for a file; and whether the listing stopped at [`MAX_ENTRIES`].
fn list(dir: &std::path::Path) -> Result<(Vec<String>, bool), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    let mut more = false;
    for entry in entries {
        if out.len() == MAX_ENTRIES {
            more = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        let line = match entry.file_type() {
            Ok(t) if t.is_dir() => format!("{name}/"),
            Ok(t) if t.is_symlink() => match std::fs::read_link(entry.path()) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => format!("{name} -> ?"),
            },
            Ok(t) if t.is_file() => match entry.metadata() {
                Ok(meta) => format!("{name} ({} bytes)", meta.len()),
                Err(_) => name,
            },
            Ok(t) => format!("{name} ({})", crate::files::kind(t)),
            Err(_) => name,
        };
        out.push(line);
    }
    out.sort();
    Ok((out, more))
}

#[async_trait]
impl Tool for LsTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Ls.as_str().into(),
            description: format!(
                "List a directory (default: the working directory): every entry, hidden ones included, sorted; \
                 directories end in `/`, files show their size, links their target. Output beyond {} bytes is \
                 cut (the result says so). Use find to search a tree.",
                self.ctx.max_output_bytes
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The directory (default: the working directory)."}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let input: Input = parse_input(ToolName::Ls, &call.input)?;
        let raw = input.path.unwrap_or_else(|| ".".into());
        let dir = self.ctx.file_path(&raw)?;
        let what = format!("ls {raw}");
        let max_bytes = self.ctx.max_output_bytes;
        let (lines, more) = running::blocking(what, move || list(&dir)).await?;
        if lines.is_empty() {
            return Ok(ToolCallResult::text(format!("({raw} is empty)")));
        }
        let (mut out, count) = capped(&lines, max_bytes);
        if count < lines.len() || more {
            let of = if more {
                format!("more than {}", lines.len())
            } else {
                lines.len().to_string()
            };
            out.push_str(&format!(
                "[showing {count} of {of} entries; output is capped at {max_bytes} bytes: use find to narrow it]\n"
            ));
        }
        Ok(ToolCallResult::text(out))
    }
}
