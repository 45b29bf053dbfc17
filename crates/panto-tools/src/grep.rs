//! `grep`: a regular expression over the files under a path, the way ripgrep searches: ignore
//! files respected, hidden files and binary files skipped, matches with line numbers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{sinks::Lossy, BinaryDetection, SearcherBuilder};
use ignore::WalkState;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;

use crate::search::{capped, cut_line, shown, walker, PathGlob};
use crate::{parse_input, running, ToolContext, ToolName};

/// Matches kept in memory; the count goes on past it.
const MAX_KEPT_MATCHES: usize = 10_000;

/// The `grep` tool.
#[derive(Debug)]
pub(crate) struct GrepTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
}

impl GrepTool {
    /// A grep tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        GrepTool { ctx }
    }
}

/// One match: the file, the line number and the line.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Match {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: u64,
    /// The line, cut at [`crate::search::MAX_LINE_CHARS`].
    pub text: String,
}

/// What a search found: the first matches (sorted by file and line) and how many there were.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The matches kept, sorted.
    pub matches: Vec<Match>,
    /// Every match, kept or not.
    pub total: usize,
    /// The files not searched because a `read` deny rule protects them.
    pub withheld: usize,
}

/// Searches the files under `root` (or `root` itself, a file) for `pattern`; `glob` limits the
/// files searched (`*.rs`, `src/**`). A file `withhold` answers true for (one a `read` deny rule
/// protects) is not opened, only counted. Blocking.
pub(crate) fn search(
    root: &Path,
    pattern: &str,
    glob: Option<&str>,
    ignore_case: bool,
    withhold: &(dyn Fn(&Path) -> bool + Sync),
) -> Result<Found, String> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| format!("bad pattern: {e}"))?;
    let glob = glob.map(PathGlob::new).transpose()?;
    let kept = Mutex::new(Vec::new());
    let total = AtomicUsize::new(0);
    let withheld = AtomicUsize::new(0);
    walker(root).build_parallel().run(|| {
        let matcher = matcher.clone();
        let glob = glob.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let (kept, total, withheld) = (&kept, &total, &withheld);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            if glob.as_ref().is_some_and(|g| !g.matches(root, path)) {
                return WalkState::Continue;
            }
            if withhold(path) {
                withheld.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            }
            let mut local = Vec::new();
            // An unreadable file is skipped, as ripgrep does (it reports it on stderr).
            let _ = searcher.search_path(
                &matcher,
                path,
                Lossy(|line, text| {
                    local.push((line, cut_line(text)));
                    Ok(true)
                }),
            );
            if local.is_empty() {
                return WalkState::Continue;
            }
            total.fetch_add(local.len(), Ordering::Relaxed);
            let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
            let room = MAX_KEPT_MATCHES.saturating_sub(kept.len());
            kept.extend(local.into_iter().take(room).map(|(line, text)| Match {
                path: path.to_path_buf(),
                line,
                text,
            }));
            WalkState::Continue
        })
    });
    let mut matches = kept.into_inner().unwrap_or_else(|e| e.into_inner());
    matches.sort();
    Ok(Found {
        matches,
        total: total.into_inner(),
        withheld: withheld.into_inner(),
    })
}

#[async_trait]
impl Tool for GrepTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Grep.as_str().into(),
            description: format!(
                "Search file contents with a regular expression (Rust regex syntax, like ripgrep). Searches \
                 the files under `path` (default: the working directory), skipping hidden files, binary files \
                 and what .gitignore/.ignore exclude (`glob` only narrows that set), and files the user's `read` \
                 deny rules protect (the result counts them). Returns `path:line:text` lines sorted by file and line; \
                 output beyond {} bytes is cut and the result says how many matches there were.",
                self.ctx.max_output_bytes
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {"type": "string", "description": "A directory or file to search (default: the working directory)."},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. `*.rs` or `src/**/*.ts`."},
                    "ignore_case": {"type": "boolean", "description": "Match case-insensitively.", "default": false}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let input: Input = parse_input(ToolName::Grep, &call.input)?;
        let raw = input.path.clone().unwrap_or_else(|| ".".into());
        let root = self.ctx.file_path(&raw)?;
        let what = format!("grep {} in {raw}", input.pattern);
        let cwd = self.ctx.cwd.clone();
        let max_bytes = self.ctx.max_output_bytes;
        let policy = self.ctx.policy.clone();
        let found = running::blocking(what, {
            let cwd = cwd.clone();
            move || {
                if !root.exists() {
                    return Err(format!("{} does not exist", root.display()));
                }
                let withhold = |path: &Path| policy.read_denied(path, &cwd).is_some();
                search(
                    &root,
                    &input.pattern,
                    input.glob.as_deref(),
                    input.ignore_case,
                    &withhold,
                )
            }
        })
        .await?;
        let withheld = match found.withheld {
            0 => String::new(),
            1 => "[1 file was not searched: a `read` deny rule protects it]\n".to_owned(),
            n => format!("[{n} files were not searched: a `read` deny rule protects them]\n"),
        };
        if found.total == 0 {
            return Ok(ToolCallResult::text(format!("{withheld}no matches")));
        }
        let lines: Vec<String> = found
            .matches
            .iter()
            .map(|m| format!("{}:{}:{}", shown(&m.path, &cwd), m.line, m.text))
            .collect();
        let (mut out, count) = capped(&lines, max_bytes);
        if count < found.total {
            out.push_str(&format!(
                "[showing {count} of {} matches; output is capped at {max_bytes} bytes: narrow the pattern, path or glob]\n",
                found.total
            ));
        }
        out.push_str(&withheld);
        Ok(ToolCallResult::text(out))
    }
}
