//! Context the user adds to a prompt by hand: `@path` attaches a file's content, `!command` runs
//! a shell command and offers its output with the next prompt.

use std::path::Path;
use std::process::{Command, Stdio};

/// The most bytes of one `@` file attached.
const LARGEST_MENTION: u64 = 256 * 1024;
/// The most bytes of a `!` command's output kept (shown and offered to the model).
const LARGEST_SHELL_OUTPUT: usize = 30_000;

/// The `@path` words of `text` that name a file (relative to `cwd`, or absolute): each path
/// with its content, or why it could not be attached. Words naming nothing are left alone (an
/// `@mention` of a person, an email address).
pub fn mentions(text: &str, cwd: &Path) -> Vec<(String, Result<String, String>)> {
    let mut out: Vec<(String, Result<String, String>)> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        // A sentence's punctuation after the path is not part of it.
        let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
        if path.is_empty() || out.iter().any(|(p, _)| p == path) {
            continue;
        }
        let full = cwd.join(path);
        // Metadata first, without following a final symlink to a device: a FIFO or a device is
        // never opened.
        let Ok(meta) = std::fs::metadata(&full) else {
            continue;
        };
        let content = if !meta.is_file() {
            Err(format!("@{path} is not a regular file; not attached"))
        } else if meta.len() > LARGEST_MENTION {
            Err(format!(
                "@{path} is {} bytes, more than the {} attached from one file; not attached (the model can read it with the read tool)",
                meta.len(),
                LARGEST_MENTION
            ))
        } else {
            std::fs::read(&full)
                .map_err(|e| format!("cannot read @{path}: {e}"))
                .and_then(|bytes| {
                    String::from_utf8(bytes).map_err(|_| format!("@{path} is not UTF-8 text; not attached"))
                })
        };
        out.push((path.to_owned(), content));
    }
    out
}

/// What the model is told of a file attached with `@path`: its content in a `<file
/// path="...">` element.
pub fn file_context(path: &str, content: &str) -> String {
    let mut out = format!("<file path=\"{path}\">\n{content}");
    if !content.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("</file>");
    out
}

/// Runs `command` with `bash -c` in `cwd` (no stdin; output and errors together), returning its
/// output, cut to [`LARGEST_SHELL_OUTPUT`] bytes, and its exit status as text.
pub fn shell(command: &str, cwd: &Path) -> (String, String) {
    let run = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 2>&1; {command}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .output();
    match run {
        Ok(done) => {
            let mut text = String::from_utf8_lossy(&done.stdout).into_owned();
            if text.len() > LARGEST_SHELL_OUTPUT {
                let mut cut = LARGEST_SHELL_OUTPUT;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                let dropped = text.len() - cut;
                text.truncate(cut);
                text.push_str(&format!("\n[… {dropped} more bytes]"));
            }
            let status = match done.status.code() {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_owned(),
            };
            (text, status)
        }
        Err(e) => (String::new(), format!("cannot run bash: {e}")),
    }
}

/// What the model is told about a `!` command the user ran.
pub fn shell_context(command: &str, output: &str, status: &str) -> String {
    format!("I ran `{command}` in the terminal ({status}). Its output:\n<output>\n{output}</output>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_attach_files_and_leave_other_words() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "hello").unwrap();
        let found = mentions("see @notes.md, ask @alice and mail a@b.c", dir.path());
        assert_eq!(found, vec![("notes.md".to_owned(), Ok("hello".to_owned()))]);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let found = mentions("@sub", dir.path());
        assert!(found[0].1.as_ref().unwrap_err().contains("not a regular file"));
        assert_eq!(
            file_context("notes.md", "hello"),
            "<file path=\"notes.md\">\nhello\n</file>"
        );
    }

    #[test]
    fn shell_output_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let (out, status) = shell("echo out; echo err >&2; exit 3", dir.path());
        assert_eq!((out.as_str(), status.as_str()), ("out\nerr\n", "exit code 3"));
    }
}
