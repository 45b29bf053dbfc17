//! What an `edit` or `write` call will change, drawn under its tool line (so the approval
//! question that follows is answered knowing it): a coloured unified diff, or a new file's
//! content, folded when long.
//!
//! Everything shown is untrusted (the model's strings, the file's text) and is neutralised; the
//! colours are panto's.

use similar::{ChangeTag, TextDiff};

use super::Style;

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// At most this many diff lines are shown; the rest is counted.
const MOST_LINES: usize = 40;
/// A file larger than this is not read to diff against: the write's content alone is shown.
const LARGEST_FILE_DIFFED: u64 = 512 * 1024;

/// The preview of a tool call, or `None` when the tool changes no file (or its input is not
/// what the tool takes: the tool itself will say so).
pub fn preview(tool: &str, input: &serde_json::Value, style: Style) -> Option<Vec<String>> {
    let text = |key: &str| input.get(key).and_then(serde_json::Value::as_str);
    match tool {
        "edit" => {
            let (old, new) = (text("old_string")?, text("new_string")?);
            // Against the file, by the edit tool's own matching, so hunks carry its line
            // numbers; the strings alone when the file cannot be read or the edit would not
            // apply (the tool will say why).
            let planned = existing(text("path")?).and_then(|file| {
                panto_tools::files::content_after_edit(&file, input)
                    .ok()
                    .map(|changed| (file, changed))
            });
            let lines = match planned {
                Some((file, changed)) => diff_lines(&file, &changed, style),
                None => diff_lines(old, new, style),
            };
            Some(lines)
        }
        "write" => {
            let content = text("content")?;
            let lines = match existing(text("path")?) {
                Some(old) => diff_lines(&old, content, style),
                None => added_lines(content, style),
            };
            Some(lines)
        }
        _ => None,
    }
}

/// The current text of a regular file at `path`, when it is small and UTF-8. Never opens a
/// FIFO or a device (the metadata is checked first, without following a final symlink).
fn existing(path: &str) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > LARGEST_FILE_DIFFED {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Cuts `lines` to [`MOST_LINES`], saying how many were left out.
fn fold(mut lines: Vec<String>, style: Style) -> Vec<String> {
    if lines.len() > MOST_LINES {
        let hidden = lines.len() - MOST_LINES;
        lines.truncate(MOST_LINES);
        lines.push(style.dim(&format!(
            "    … {hidden} more line{}",
            if hidden == 1 { "" } else { "s" }
        )));
    }
    lines
}

/// A new file: each line of its content as an added line.
fn added_lines(content: &str, style: Style) -> Vec<String> {
    let lines = content
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let shown = style.safe(line);
            format!(
                "{} {}",
                style.dim(&format!("{:>4}", i + 1)),
                style.green(&format!("+{shown}"))
            )
        })
        .collect();
    fold(lines, style)
}

/// A unified diff from `old` to `new`: hunk headers, context dimmed, removals red, additions
/// green.
pub fn diff_lines(old: &str, new: &str, style: Style) -> Vec<String> {
    let diff = TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    for group in diff.grouped_ops(CONTEXT) {
        let (first, last) = match (group.first(), group.last()) {
            (Some(f), Some(l)) => (f, l),
            _ => continue,
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        lines.push(style.cyan(&format!(
            "    @@ -{},{} +{},{} @@",
            old_range.start + 1,
            old_range.len(),
            new_range.start + 1,
            new_range.len()
        )));
        for op in &group {
            for change in diff.iter_changes(op) {
                let text = change.value();
                let text = text.strip_suffix('\n').unwrap_or(text);
                let shown = style.safe(text);
                lines.push(match change.tag() {
                    ChangeTag::Delete => format!("    {}", style.red(&format!("-{shown}"))),
                    ChangeTag::Insert => format!("    {}", style.green(&format!("+{shown}"))),
                    ChangeTag::Equal => format!("    {}", style.dim(&format!(" {shown}"))),
                });
            }
        }
    }
    fold(lines, style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Env;

    /// A terminal without colour: text is neutralised, nothing is styled.
    fn plain() -> Style {
        Style::detect(true, &Env::from_pairs(&[("NO_COLOR", "1")]))
    }

    #[test]
    fn an_edit_is_a_unified_diff() {
        let lines = diff_lines("a\nb\nc\n", "a\nB\nc\n", plain());
        assert_eq!(lines, ["    @@ -1,3 +1,3 @@", "     a", "    -b", "    +B", "     c"]);
    }

    #[test]
    fn an_edit_is_diffed_against_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, body).unwrap();
        let input = serde_json::json!({"path": path, "old_string": "line 12\n", "new_string": "twelve\n"});
        let lines = preview("edit", &input, plain()).unwrap();
        assert_eq!(lines[0], "    @@ -9,7 +9,7 @@");
        assert!(lines.contains(&"    -line 12".to_owned()) && lines.contains(&"    +twelve".to_owned()));
    }

    #[test]
    fn a_new_file_is_its_content_folded() {
        let content: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let input = serde_json::json!({"path": "/nonexistent/dir/x.txt", "content": content});
        let lines = preview("write", &input, plain()).unwrap();
        assert_eq!(lines[0], "   1 +line 1");
        assert_eq!(lines.len(), MOST_LINES + 1);
        assert_eq!(lines[MOST_LINES], "    … 10 more lines");
        assert!(preview("bash", &input, plain()).is_none());
    }

    #[test]
    fn model_bytes_are_neutralised() {
        let lines = diff_lines("x\n", "\x1b]0;title\x07\n", plain());
        assert!(lines.iter().any(|l| l.contains("^[]0;title^G")), "{lines:?}");
    }
}
