//! `write`: create or overwrite a whole file.

use std::sync::Arc;

use async_trait::async_trait;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use crate::preview::{FileChange, Preview};
use crate::{beneath, checkpoint, files, parse_input, running, ToolContext, ToolName};

/// The `write` tool.
#[derive(Debug)]
pub(crate) struct WriteTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: String,
    content: String,
}

impl WriteTool {
    /// A write tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        WriteTool { ctx }
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Write.as_str().into(),
            description: "Write `content` to a file, creating it (and missing parent directories) or replacing \
                          it entirely. To change part of an existing file, prefer edit. Relative paths are \
                          relative to the working directory."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to write."},
                    "content": {"type": "string", "description": "The complete new content."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let Planned { input, path, existed } = prepare(&self.ctx, &call.input).await?;
        // Resolved once: the previous content is read and the new one written through the same
        // opened directory, whatever happens to the path meanwhile.
        let target = {
            let (path, ctx) = (path.clone(), self.ctx.clone());
            running::blocking(format!("write {}", input.path), move || {
                beneath::resolve(&path, &ctx, Some(ToolName::Write)).map(Arc::new)
            })
            .await?
        };
        let previous = {
            let target = target.clone();
            running::blocking(format!("write {}", input.path), move || {
                Ok(checkpoint::previous_content(&target))
            })
            .await?
        };
        // A file too large to keep is still written; the result says a rewind cannot restore it.
        let unkept = match &previous {
            Ok(before) => {
                checkpoint::record(&call, &path, before.as_deref(), input.content.as_bytes()).await?;
                None
            }
            Err(why) if call.checkpoints.is_some() => Some(why.clone()),
            Err(_) => None,
        };
        let content = input.content.clone();
        running::blocking(format!("write {}", input.path), move || {
            target.write(content.as_bytes())
        })
        .await?;
        let (bytes, lines) = (input.content.len(), input.content.lines().count());
        let mut done = format!(
            "{} {} ({bytes} byte{}, {lines} line{})",
            if existed { "overwrote" } else { "created" },
            input.path,
            if bytes == 1 { "" } else { "s" },
            if lines == 1 { "" } else { "s" },
        );
        if let Some(why) = unkept {
            done.push_str(&format!(
                "; no checkpoint of its previous content was kept ({why}), so a rewind cannot restore it"
            ));
        }
        Ok(ToolCallResult::text(done))
    }
}

/// A write checked and not yet done.
struct Planned {
    input: Input,
    path: std::path::PathBuf,
    existed: bool,
}

/// Checks a write as the tool does before writing: its arguments, the path (read roots, not a
/// FIFO or device), and that the sandbox lets it write there.
async fn prepare(ctx: &ToolContext, raw: &serde_json::Value) -> Result<Planned, ToolError> {
    let input: Input = parse_input(ToolName::Write, raw)?;
    let path = ctx.file_path(&input.path)?;
    let existed = {
        let path = path.clone();
        running::blocking(format!("write {}", input.path), move || files::existing_regular(&path)).await?
    };
    ctx.sandbox.check_write(&path)?;
    Ok(Planned { input, path, existed })
}

/// What a write call would change ([`crate::Toolbox::preview`]): the file's text before (when it
/// exists and is UTF-8 text of a size `read` takes) and after. `Err` is the error the call would
/// end with.
pub(crate) async fn preview(ctx: &ToolContext, raw: &serde_json::Value) -> Result<Preview, String> {
    let Planned { input, path, existed } = prepare(ctx, raw).await.map_err(|e| e.to_string())?;
    let before = if existed {
        let (path, roots) = (path.clone(), ctx.roots.clone());
        running::blocking(format!("write {}", input.path), move || {
            Ok(files::read_capped(&path, &roots, crate::read::MAX_FILE_BYTES)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok()))
        })
        .await?
    } else {
        None
    };
    Ok(Preview {
        summary: format!(
            "{} {} ({} bytes)",
            if existed { "overwrite" } else { "create" },
            input.path,
            input.content.len()
        ),
        change: Some(FileChange {
            path,
            before,
            after: input.content,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{call, context, text};
    use crate::Approval;

    #[tokio::test]
    async fn creates_parents_and_reports_what_it_did() {
        let dir = tempfile::tempdir().unwrap();
        let tool = WriteTool::new(context(dir.path()));
        let r = call(&tool, json!({"path": "a/b/c.txt", "content": "hi\nthere\n"})).await;
        assert!(!r.is_error, "{}", text(&r));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "hi\nthere\n"
        );
        assert_eq!(text(&r), "created a/b/c.txt (9 bytes, 2 lines)");
        let r = call(&tool, json!({"path": "a/b/c.txt", "content": "x"})).await;
        assert_eq!(text(&r), "overwrote a/b/c.txt (1 byte, 1 line)");
    }

    #[tokio::test]
    async fn read_only_leaves_the_disk_alone() {
        let dir = tempfile::tempdir().unwrap();
        let tool = crate::testing::guarded(ToolName::Write, dir.path(), Approval::ReadOnly);
        let r = call(tool.as_ref(), json!({"path": "x.txt", "content": "x"})).await;
        assert!(r.is_error && text(&r).contains("read-only"), "{}", text(&r));
        assert!(!dir.path().join("x.txt").exists());
    }

    #[tokio::test]
    async fn never_writes_through_to_a_fifo_or_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let tool = WriteTool::new(context(dir.path()));
        let r = call(&tool, json!({"path": "pipe", "content": "x"})).await;
        assert!(
            r.is_error && text(&r).contains("is a FIFO (named pipe)"),
            "{}",
            text(&r)
        );
        let r = call(&tool, json!({"path": "/dev/null", "content": "x"})).await;
        assert!(
            r.is_error && text(&r).contains("/dev/null is a character device"),
            "{}",
            text(&r)
        );
    }
}
