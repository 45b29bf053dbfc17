//! `read`: a text file with line numbers, or an image as an image.

use async_trait::async_trait;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use crate::{files, parse_input, running, ToolContext, ToolName};

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 2_000;
/// Characters of one line shown before it is cut.
const MAX_LINE_CHARS: usize = 2_000;
/// Files larger than this are refused: reading them whole would blow the context anyway. The read
/// itself stops here too, whatever size the file claims.
pub(crate) const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// The `read` tool.
#[derive(Debug)]
pub(crate) struct ReadTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl ReadTool {
    /// A read tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        ReadTool { ctx }
    }
}

/// Renders lines `offset..offset+limit` (1-based) of `text` with numbers, keeping the output under
/// `max_bytes` and saying how to continue when it stops early.
fn number_lines(text: &str, path: &str, offset: usize, limit: usize, max_bytes: usize) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    if total == 0 {
        return Ok(format!("({path} is empty)"));
    }
    if offset > total {
        return Err(format!(
            "offset {offset} is past the end of {path}, which has {total} lines"
        ));
    }
    let mut out = String::new();
    let mut last = offset - 1;
    for (i, line) in lines.iter().enumerate().skip(offset - 1).take(limit) {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let shown = if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{cut}… [line cut at {MAX_LINE_CHARS} characters]")
        } else {
            line.to_owned()
        };
        let entry = format!("{:>6}\t{shown}\n", i + 1);
        if !out.is_empty() && out.len() + entry.len() > max_bytes {
            break;
        }
        out.push_str(&entry);
        last = i + 1;
    }
    if last < total {
        out.push_str(&format!(
            "[showing lines {offset}-{last} of {total}; call read with offset={} to continue]\n",
            last + 1
        ));
    }
    Ok(out)
}

#[async_trait]
impl Tool for ReadTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Read.as_str().into(),
            description: format!(
                "Read a file. Text comes back with 1-based line numbers (like `cat -n`), from line `offset` \
                 (default 1) for at most `limit` lines (default {DEFAULT_LIMIT}); the output says how to \
                 continue when it stops early. PNG, JPEG, GIF and WebP files come back as images. Relative \
                 paths are relative to the working directory."
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to read."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let input: Input = parse_input(ToolName::Read, &call.input)?;
        let path = self.ctx.file_path(&input.path)?;
        let what = format!("read {}", input.path);
        let offset = input.offset.unwrap_or(1);
        if offset == 0 {
            return Err("offset is 1-based: the first line is 1".into());
        }
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 {
            return Err("limit must be at least 1".into());
        }
        let roots = self.ctx.roots.clone();
        let max_bytes = self.ctx.max_output_bytes;
        let result = running::blocking(what, move || {
            let bytes = files::read_capped(&path, &roots, MAX_FILE_BYTES)?;
            if crate::files::image_format(&bytes).is_some() {
                return Ok(ToolCallResult::image(bytes));
            }
            if bytes.iter().take(8_192).any(|&b| b == 0) {
                return Err(format!(
                    "{} looks binary ({} bytes, holds NUL bytes); not shown",
                    path.display(),
                    bytes.len()
                ));
            }
            let text = String::from_utf8_lossy(&bytes);
            let shown = number_lines(&text, &input.path, offset, limit, max_bytes)?;
            Ok(ToolCallResult::text(shown))
        })
        .await?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use panto_core::ResultPart;

    use super::*;
    use crate::testing::{call, context, text};

    #[tokio::test]
    async fn numbers_lines_and_honours_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\nfour\n").unwrap();
        let tool = ReadTool::new(context(dir.path()));
        let r = call(&tool, json!({"path": "f.txt"})).await;
        assert!(!r.is_error);
        assert_eq!(text(&r), "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n");
        let r = call(&tool, json!({"path": "f.txt", "offset": 2, "limit": 2})).await;
        let t = text(&r);
        assert!(t.starts_with("     2\ttwo\n     3\tthree\n"), "{t}");
        assert!(t.contains("offset=4"), "{t}");
    }

    #[tokio::test]
    async fn images_come_back_as_images() {
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\nrest-of-file".to_vec();
        std::fs::write(dir.path().join("i.png"), &png).unwrap();
        let tool = ReadTool::new(context(dir.path()));
        let r = call(&tool, json!({"path": "i.png"})).await;
        assert_eq!(r.parts, vec![ResultPart::Image(png)]);
    }

    #[tokio::test]
    async fn bad_input_is_an_error_that_says_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "a\n").unwrap();
        let tool = ReadTool::new(context(dir.path()));
        let r = call(&tool, json!({"file": "f.txt"})).await;
        assert!(
            r.is_error && text(&r).contains("invalid arguments for read"),
            "{}",
            text(&r)
        );
        let r = call(&tool, json!({"path": "missing.txt"})).await;
        assert!(r.is_error && text(&r).contains("missing.txt"), "{}", text(&r));
        let r = call(&tool, json!({"path": "f.txt", "offset": 9})).await;
        assert!(r.is_error && text(&r).contains("past the end"), "{}", text(&r));
    }

    #[tokio::test]
    async fn output_is_capped_with_a_continuation_hint() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..2_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), body).unwrap();
        let tool = ReadTool::new(context(dir.path()));
        let t = text(&call(&tool, json!({"path": "big.txt"})).await);
        assert!(t.len() < 4_096 + 200, "{}", t.len());
        assert!(t.contains("of 2000; call read with offset="), "{t}");
    }
}
