//! What `grep` and `find` share: the walk (ripgrep's, with its ignore rules) and how their
//! capped output is stated.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

/// Characters of one matched line shown before it is cut.
pub(crate) const MAX_LINE_CHARS: usize = 500;

/// A walk of `root` with ripgrep's default rules: hidden files and directories skipped,
/// `.gitignore` (inside a git repository), `.ignore` and `.rgignore` respected, parents' ignore
/// files too; symbolic links not followed (so a link cannot lead the walk out of `read_roots`).
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder.follow_links(false);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    builder.threads(threads);
    builder
}

/// `path` relative to `root` as the model should see it: `src/main.rs`, not an absolute path,
/// when it lies under the working directory `cwd`; else as found.
pub(crate) fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd)
        .map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

/// Cuts `line` at [`MAX_LINE_CHARS`], saying so.
pub(crate) fn cut_line(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut}… [line cut at {MAX_LINE_CHARS} characters]")
}

/// Joins `lines` into at most `max_bytes` bytes. Returns the text and how many lines it holds.
pub(crate) fn capped(lines: &[String], max_bytes: usize) -> (String, usize) {
    let mut out = String::new();
    let mut shown = 0;
    for line in lines {
        if !out.is_empty() && out.len() + line.len() + 1 > max_bytes {
            break;
        }
        out.push_str(line);
        out.push('\n');
        shown += 1;
    }
    (out, shown)
}

/// A `find`/`grep` glob: with a `/` it is matched against the path below the search root
/// (`src/**/*.rs`), without one against the file name (`*.rs`), as `find -name` does. It only
/// selects among the files the ignore rules let through (unlike `rg -g`, it never brings an
/// ignored file back).
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    glob: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    /// Compiles `pattern`; the error names it.
    pub(crate) fn new(pattern: &str) -> Result<PathGlob, String> {
        let whole_path = pattern.contains('/');
        let glob = GlobBuilder::new(pattern)
            .literal_separator(whole_path)
            .build()
            .map_err(|e| format!("bad glob {pattern:?}: {e}"))?;
        Ok(PathGlob {
            glob: glob.compile_matcher(),
            whole_path,
        })
    }

    /// Whether the file at `path`, found under `root`, matches.
    pub(crate) fn matches(&self, root: &Path, path: &Path) -> bool {
        if self.whole_path {
            self.glob.is_match(path.strip_prefix(root).unwrap_or(path))
        } else {
            path.file_name().is_some_and(|name| self.glob.is_match(name))
        }
    }
}
