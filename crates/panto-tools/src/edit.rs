//! `edit`: replace an exact string in a file.
//!
//! The old text must occur exactly once (or `replace_all` must be set), so an edit never lands in
//! the wrong place; when it does not, the error says which case it is so the model can fix its
//! call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use crate::preview::{FileChange, Preview};
use crate::{beneath, checkpoint, files, parse_input, running, ToolContext, ToolName};

/// The `edit` tool.
#[derive(Debug)]
pub(crate) struct EditTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl EditTool {
    /// An edit tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        EditTool { ctx }
    }
}

/// The planned edit: the new content, how many replacements, and the line of the first.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    content: String,
    count: usize,
    first_line: usize,
}

/// Applies the edit to `content` in memory, or says why it cannot.
fn plan(content: &str, input: &Input) -> Result<Plan, String> {
    if input.old_string.is_empty() {
        return Err("old_string is empty; to create a file or replace all of it, use write".into());
    }
    if input.old_string == input.new_string {
        return Err("old_string and new_string are the same; nothing would change".into());
    }
    let count = content.matches(&input.old_string).count();
    if count == 0 {
        return Err(format!(
            "old_string was not found in {}; it must match exactly, including whitespace and indentation \
             (read the file to copy the text)",
            input.path
        ));
    }
    if count > 1 && !input.replace_all {
        return Err(format!(
            "old_string occurs {count} times in {}; include more surrounding lines to make it unique, or set \
             replace_all to replace every occurrence",
            input.path
        ));
    }
    let at = content.find(&input.old_string).unwrap_or(0);
    let first_line = content[..at].matches('\n').count() + 1;
    let content = if input.replace_all {
        content.replace(&input.old_string, &input.new_string)
    } else {
        content.replacen(&input.old_string, &input.new_string, 1)
    };
    Ok(Plan {
        content,
        count,
        first_line,
    })
}

/// What an `edit` call with `input` makes of a file holding `content`, by the tool's own matching
/// (the old text exactly once, or every occurrence with `replace_all`); `Err` is the error the
/// tool gives (bad arguments, old text missing or ambiguous). For a front end that draws an edit
/// from text it already has; [`crate::Toolbox::preview`] reads the file itself.
pub fn content_after_edit(content: &str, input: &serde_json::Value) -> Result<String, String> {
    let input: Input = parse_input(ToolName::Edit, input).map_err(|e| e.to_string())?;
    Ok(plan(content, &input)?.content)
}

#[async_trait]
impl Tool for EditTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Edit.as_str().into(),
            description: "Replace `old_string` with `new_string` in a file. `old_string` must match the file \
                          exactly (whitespace and indentation included) and occur exactly once, unless \
                          `replace_all` is true. Read the file first to copy the exact text."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to edit."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The replacement."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence.", "default": false}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        // Checked as the preview checks; then the path is resolved once, and the file read,
        // planned on and written through the same opened directory, whatever happens to the
        // path meanwhile. Planned on the file as it is now: after any approval question, whose
        // preview planned the same way on what was there then.
        let Planned { input, path, .. } = prepare(&self.ctx, &call.input).await?;
        let target = {
            let (path, ctx) = (path.clone(), self.ctx.clone());
            running::blocking(format!("edit {}", input.path), move || {
                beneath::resolve(&path, &ctx, Some(ToolName::Edit)).map(Arc::new)
            })
            .await?
        };
        let current = {
            let (target, shown) = (target.clone(), path.clone());
            running::blocking(format!("edit {}", input.path), move || {
                match target.content(crate::read::MAX_FILE_BYTES)? {
                    Some(bytes) => utf8(&shown, bytes),
                    None => Err(format!("cannot read {}: it no longer exists", shown.display())),
                }
            })
            .await?
        };
        let done = plan(&current, &input)?;
        checkpoint::record(&call, &path, Some(current.as_bytes()), done.content.as_bytes()).await?;
        let content = done.content;
        running::blocking(format!("edit {}", input.path), move || target.write(content.as_bytes())).await?;
        Ok(ToolCallResult::text(format!(
            "edited {}: replaced {} occurrence{} (first at line {})",
            input.path,
            done.count,
            if done.count == 1 { "" } else { "s" },
            done.first_line
        )))
    }
}

/// An edit worked out on the file as it is, not yet applied: what the tool writes and what its
/// preview shows.
struct Planned {
    input: Input,
    path: PathBuf,
    current: String,
    plan: Plan,
}

/// `bytes` of the file at `path` as text, or why edit does not take them.
fn utf8(path: &Path, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{} is not UTF-8 text (invalid byte at offset {}); edit changes text files only",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Reads the file and plans the edit, failing as the tool fails: bad arguments, a path outside
/// the read roots, a file that is not UTF-8 text, old text missing or ambiguous, a write the
/// sandbox forbids.
async fn prepare(ctx: &ToolContext, raw: &serde_json::Value) -> Result<Planned, ToolError> {
    let input: Input = parse_input(ToolName::Edit, raw)?;
    let path = ctx.file_path(&input.path)?;
    let current = {
        let (path, roots) = (path.clone(), ctx.roots.clone());
        running::blocking(format!("edit {}", input.path), move || {
            utf8(&path, files::read_capped(&path, &roots, crate::read::MAX_FILE_BYTES)?)
        })
        .await?
    };
    let plan = plan(&current, &input)?;
    ctx.sandbox.check_write(&path)?;
    Ok(Planned {
        input,
        path,
        current,
        plan,
    })
}

/// What an edit call would change ([`crate::Toolbox::preview`]); `Err` is the error the call
/// would end with.
pub(crate) async fn preview(ctx: &ToolContext, raw: &serde_json::Value) -> Result<Preview, String> {
    let planned = prepare(ctx, raw).await.map_err(|e| e.to_string())?;
    let (input, plan) = (&planned.input, &planned.plan);
    Ok(Preview {
        summary: format!(
            "edit {} at line {} ({} occurrence{})",
            input.path,
            plan.first_line,
            plan.count,
            if plan.count == 1 { "" } else { "s" }
        ),
        change: Some(FileChange {
            path: planned.path,
            before: Some(planned.current),
            after: planned.plan.content,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{call, context, text};
    use crate::Approval;

    async fn edit(dir: &std::path::Path, input: serde_json::Value) -> (bool, String) {
        let tool = EditTool::new(context(dir));
        let r = call(&tool, input).await;
        (r.is_error, text(&r))
    }

    #[tokio::test]
    async fn replaces_a_unique_string() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let (err, t) = edit(
            dir.path(),
            json!({"path": "f.rs", "old_string": "fn b", "new_string": "fn c"}),
        )
        .await;
        assert!(!err, "{t}");
        assert!(t.contains("line 2"), "{t}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
            "fn a() {}\nfn c() {}\n"
        );
    }

    #[tokio::test]
    async fn missing_and_ambiguous_text_fail_clearly_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let original = "x = 1\nx = 1\n";
        std::fs::write(dir.path().join("f"), original).unwrap();
        let (err, t) = edit(dir.path(), json!({"path": "f", "old_string": "y", "new_string": "z"})).await;
        assert!(err && t.contains("not found"), "{t}");
        let (err, t) = edit(
            dir.path(),
            json!({"path": "f", "old_string": "x = 1", "new_string": "x = 2"}),
        )
        .await;
        assert!(err && t.contains("occurs 2 times"), "{t}");
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), original);
        let (err, t) = edit(
            dir.path(),
            json!({"path": "f", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
        )
        .await;
        assert!(!err && t.contains("2 occurrences"), "{t}");
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "x = 2\nx = 2\n");
    }

    #[tokio::test]
    async fn refused_in_read_only_mode() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a").unwrap();
        let tool = crate::testing::guarded(ToolName::Edit, dir.path(), Approval::ReadOnly);
        let r = call(
            tool.as_ref(),
            json!({"path": "f", "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(r.is_error && text(&r).contains("read-only"));
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "a");
    }

    #[tokio::test]
    async fn fifos_and_devices_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (err, t) = edit(
            dir.path(),
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(
            err && t.contains("pipe is a FIFO (named pipe), not a regular file"),
            "{t}"
        );
        let (err, t) = edit(
            dir.path(),
            json!({"path": "/dev/zero", "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(err && t.contains("/dev/zero is a character device"), "{t}");
    }
}
