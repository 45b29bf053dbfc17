//! `write`: create or overwrite a whole file.

use async_trait::async_trait;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use super::{parse_input, resolve_path, ToolContext, ToolName};

/// The `write` tool.
#[derive(Debug)]
pub struct WriteTool {
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
    pub fn new(ctx: ToolContext) -> Self {
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
        let input: Input = parse_input(ToolName::Write, &call.input)?;
        let path = resolve_path(&self.ctx.cwd, &input.path)?;
        let existed = tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file());
        let what = format!(
            "{} {} ({} bytes)",
            if existed { "overwrite" } else { "create" },
            input.path,
            input.content.len()
        );
        self.ctx.gate.check(ToolName::Write, &what, &call.cancel).await?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| format!("cannot create directory {}: {e}", parent.display()))?;
        }
        tokio::fs::write(&path, input.content.as_bytes())
            .await
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let lines = input.content.lines().count();
        Ok(ToolCallResult::text(format!(
            "{} {} ({} bytes, {lines} lines)",
            if existed { "overwrote" } else { "created" },
            input.path,
            input.content.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, context, text};
    use super::super::Approval;
    use super::*;

    #[tokio::test]
    async fn creates_parents_and_reports_what_it_did() {
        let dir = tempfile::tempdir().unwrap();
        let tool = WriteTool::new(context(dir.path(), Approval::Auto));
        let r = call(&tool, json!({"path": "a/b/c.txt", "content": "hi\nthere\n"})).await;
        assert!(!r.is_error, "{}", text(&r));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "hi\nthere\n"
        );
        assert!(text(&r).starts_with("created a/b/c.txt"), "{}", text(&r));
        let r = call(&tool, json!({"path": "a/b/c.txt", "content": "x"})).await;
        assert!(text(&r).starts_with("overwrote"), "{}", text(&r));
    }

    #[tokio::test]
    async fn read_only_leaves_the_disk_alone() {
        let dir = tempfile::tempdir().unwrap();
        let tool = WriteTool::new(context(dir.path(), Approval::ReadOnly));
        let r = call(&tool, json!({"path": "x.txt", "content": "x"})).await;
        assert!(r.is_error && text(&r).contains("read-only"), "{}", text(&r));
        assert!(!dir.path().join("x.txt").exists());
    }
}
