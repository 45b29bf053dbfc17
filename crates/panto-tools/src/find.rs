//! `find`: the files under a path whose path matches a glob, with `grep`'s ignore rules.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use ignore::WalkState;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use crate::search::{capped, shown, walker, PathGlob};
use crate::{parse_input, running, ToolContext, ToolName};

/// Paths kept in memory; the count goes on past it.
const MAX_KEPT_PATHS: usize = 100_000;

/// The `find` tool.
#[derive(Debug)]
pub(crate) struct FindTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    pattern: String,
    path: Option<String>,
}

impl FindTool {
    /// A find tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        FindTool { ctx }
    }
}

/// The files under `root` matching `pattern`, sorted, and how many there were. Blocking.
pub(crate) fn find(root: &Path, pattern: &str) -> Result<(Vec<PathBuf>, usize), String> {
    let glob = PathGlob::new(pattern)?;
    let found = Mutex::new((Vec::new(), 0usize));
    walker(root).build_parallel().run(|| {
        let (glob, found) = (&glob, &found);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            if glob.matches(root, path) {
                let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                found.1 += 1;
                if found.0.len() < MAX_KEPT_PATHS {
                    found.0.push(path.to_path_buf());
                }
            }
            WalkState::Continue
        })
    });
    let (mut paths, total) = found.into_inner().unwrap_or_else(|e| e.into_inner());
    paths.sort();
    Ok((paths, total))
}

#[async_trait]
impl Tool for FindTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Find.as_str().into(),
            description: format!(
                "Find files by glob under `path` (default: the working directory), skipping hidden files and \
                 what .gitignore/.ignore exclude. A pattern without `/` matches file names (`*.rs`); with one, \
                 the path below `path` (`src/**/*.rs`). Returns sorted paths, one a line; output beyond {} \
                 bytes is cut and the result says how many there were.",
                self.ctx.max_output_bytes
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob, e.g. `*.toml` or `src/**/mod.rs`."},
                    "path": {"type": "string", "description": "The directory to search (default: the working directory)."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let input: Input = parse_input(ToolName::Find, &call.input)?;
        let raw = input.path.clone().unwrap_or_else(|| ".".into());
        let root = self.ctx.file_path(&raw)?;
        let what = format!("find {} in {raw}", input.pattern);
        let cwd = self.ctx.cwd.clone();
        let max_bytes = self.ctx.max_output_bytes;
        let (paths, total) = running::blocking(what, move || {
            if !root.is_dir() {
                return Err(format!("{} is not a directory", root.display()));
            }
            find(&root, &input.pattern)
        })
        .await?;
        if total == 0 {
            return Ok(ToolCallResult::text("no files found"));
        }
        let lines: Vec<String> = paths.iter().map(|p| shown(p, &cwd)).collect();
        let (mut out, count) = capped(&lines, max_bytes);
        if count < total {
            out.push_str(&format!(
                "[showing {count} of {total} files; output is capped at {max_bytes} bytes: narrow the pattern or path]\n"
            ));
        }
        Ok(ToolCallResult::text(out))
    }
}
