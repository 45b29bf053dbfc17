//! What a call of a built-in tool would do, worked out without doing it: the text of an approval
//! question and the change a front end draws. A preview fails exactly as the call would (the
//! tool and its preview share the checks), so a call that cannot run is never asked about.

use std::path::PathBuf;

use serde_json::Value;

use crate::hooks::main_argument;
use crate::{bash, edit, write, ToolContext, ToolName};

/// What a call would do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preview {
    /// One line for an approval question: the whole command for `bash`,
    /// `edit src/a.rs at line 3 (1 occurrence)`, `create notes.txt (12 bytes)`.
    pub summary: String,
    /// The file a `write` or `edit` would change, and how.
    pub change: Option<FileChange>,
}

/// A file's text before and after a `write` or `edit`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileChange {
    /// The file, resolved against the working directory.
    pub path: PathBuf,
    /// Its text now: `None` for a new file, or one that is not UTF-8 text or is too large to
    /// read.
    pub before: Option<String>,
    /// Its text after the call.
    pub after: String,
}

/// The preview of a call of `tool` with `input`; `Err` is the error the call would end with.
pub(crate) async fn preview(ctx: &ToolContext, tool: ToolName, input: &Value) -> Result<Preview, String> {
    match tool {
        ToolName::Edit => edit::preview(ctx, input).await,
        ToolName::Write => write::preview(ctx, input).await,
        ToolName::Bash => bash::preview(ctx, input),
        // The other tools change nothing and are never asked about.
        _ => Ok(Preview {
            summary: format!("{tool} {}", main_argument(tool, input)),
            change: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::context;

    #[tokio::test]
    async fn an_edit_preview_is_the_planned_change_and_fails_as_the_edit_would() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let ctx = context(dir.path());
        let p = preview(
            &ctx,
            ToolName::Edit,
            &json!({"path": "f.rs", "old_string": "fn b", "new_string": "fn c"}),
        )
        .await
        .unwrap();
        assert_eq!(p.summary, "edit f.rs at line 2 (1 occurrence)");
        let change = p.change.unwrap();
        assert_eq!(change.before.as_deref(), Some("fn a() {}\nfn b() {}\n"));
        assert_eq!(change.after, "fn a() {}\nfn c() {}\n");
        // Nothing was written.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
            "fn a() {}\nfn b() {}\n"
        );
        let e = preview(
            &ctx,
            ToolName::Edit,
            &json!({"path": "f.rs", "old_string": "fn z", "new_string": "fn c"}),
        )
        .await
        .unwrap_err();
        assert!(e.starts_with("old_string was not found in f.rs"), "{e}");
    }

    #[tokio::test]
    async fn a_write_preview_shows_the_old_text_or_none_for_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.txt"), "before\n").unwrap();
        let ctx = context(dir.path());
        let p = preview(&ctx, ToolName::Write, &json!({"path": "old.txt", "content": "after\n"}))
            .await
            .unwrap();
        assert_eq!(p.summary, "overwrite old.txt (6 bytes)");
        assert_eq!(p.change.unwrap().before.as_deref(), Some("before\n"));
        let p = preview(&ctx, ToolName::Write, &json!({"path": "new.txt", "content": "x"}))
            .await
            .unwrap();
        assert_eq!(p.summary, "create new.txt (1 bytes)");
        assert_eq!(p.change.unwrap().before, None);
        assert!(!dir.path().join("new.txt").exists());
        let e = preview(&ctx, ToolName::Bash, &json!({"command": "  "}))
            .await
            .unwrap_err();
        assert_eq!(e, "the command is empty");
    }
}
