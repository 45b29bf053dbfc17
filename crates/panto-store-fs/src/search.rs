//! Search over the session files: ripgrep's searcher streams each file for the lines that could
//! hold a match, and only those lines are decoded and confirmed.
//!
//! For literal text the raw lines are searched for the text as serde_json escapes it
//! ([`SearchMatcher::json_line_pattern`]): every line whose decoded strings hold the text holds
//! that. A line found may match only in a key, an id, the copy of the last prompt each entry's
//! `activity` carries, or a tool's text without `tools`: the line is decoded and
//! [`SearchMatcher::match_message`] decides, so only what was said counts. A regular expression
//! may match decoded text that the escaped line does not hold (`\s` for a line break written as
//! `\n`), so with one every message line is decoded.
//!
//! Only a file with a confirmed hit is read further: its outline (`log.rs`) gives the listing
//! and the active branch. A file that cannot be read (damaged, not a regular file) is left out
//! of the hits, as `list` leaves it out of the listing. Lines are bounded by
//! [`MAX_LINE`](crate::MAX_LINE) as every reader's are; a torn final line is not a hit.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{sinks, BinaryDetection, Searcher, SearcherBuilder};
use panto_core::store::{finish_hits, MessageMatch, SearchHit, SearchMatcher, SearchQuery};
use panto_core::{Error, Message, Result, Role};
use serde::Deserialize;

use crate::format::MAX_LINE;
use crate::listing::read_info;
use crate::log::open_log;
use crate::open::open_for_reading;

/// A message entry line as search decodes it; a branch entry has no `message`.
#[derive(Debug, Deserialize)]
struct SearchLine {
    #[serde(rename = "type")]
    kind: String,
    id: String,
    timestamp: DateTime<Utc>,
    #[serde(default)]
    message: Option<Message>,
}

/// A confirmed match in one line of a file.
struct LineHit {
    entry: String,
    role: Role,
    at: DateTime<Utc>,
    matched: MessageMatch,
}

/// Searches the session files `files` (id and path) for `query`, on up to `threads` threads.
pub(crate) fn search_files(
    files: Vec<(String, PathBuf)>,
    query: &SearchQuery,
    threads: usize,
) -> Result<Vec<SearchHit>> {
    let matcher = query.matcher()?;
    let pattern = matcher.json_line_pattern();
    // Every message line holds `"message"`: the pattern that lets every one through.
    let line_matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern.as_deref().unwrap_or("\"message\""))
        .map_err(|e| Error::InvalidSearchPattern {
            pattern: query.pattern.clone(),
            message: e.to_string(),
        })?;
    let next = AtomicUsize::new(0);
    let hits = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, files.len().max(1)) {
            scope.spawn(|| {
                let mut searcher = SearcherBuilder::new()
                    .line_number(true)
                    .binary_detection(BinaryDetection::none())
                    .heap_limit(Some(MAX_LINE + 64 * 1024))
                    .build();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((id, path)) = files.get(i) else { break };
                    // A file that cannot be read is left out, as the listing leaves it out.
                    if let Ok(found) = search_file(&mut searcher, &line_matcher, &matcher, id, path) {
                        if !found.is_empty() {
                            hits.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
                        }
                    }
                }
            });
        }
    });
    let mut hits = hits.into_inner().unwrap_or_else(|e| e.into_inner());
    finish_hits(&mut hits, query.limit);
    Ok(hits)
}

/// The hits in the session file at `path` (session `id`).
fn search_file(
    searcher: &mut Searcher,
    line_matcher: &RegexMatcher,
    matcher: &SearchMatcher,
    id: &str,
    path: &Path,
) -> Result<Vec<SearchHit>> {
    // A query kept to one directory reads the header (and the last line) first.
    if matcher.dir().is_some() {
        match read_info(path, id)? {
            Some(info) if matcher.covers(&info) => {}
            _ => return Ok(Vec::new()),
        }
    }
    let Some((file, _)) = open_for_reading(path)? else {
        return Ok(Vec::new());
    };
    let mut found: Vec<LineHit> = Vec::new();
    let sink = sinks::Bytes(|number, line| {
        // Line 1 is the header (the directory, the metadata bag); a line without its `\n` is a
        // torn write, not committed.
        let Some(line) = line.strip_suffix(b"\n") else {
            return Ok(true);
        };
        if number == 1 {
            return Ok(true);
        }
        let parsed: SearchLine = serde_json::from_slice(line).map_err(io::Error::other)?;
        if parsed.kind != "message" {
            return Ok(true);
        }
        if let Some(message) = parsed.message {
            if let Some(matched) = matcher.match_message(&message) {
                found.push(LineHit {
                    entry: parsed.id,
                    role: message.role,
                    at: parsed.timestamp,
                    matched,
                });
            }
        }
        Ok(true)
    });
    searcher
        .search_file(line_matcher, &file, sink)
        .map_err(|e| Error::store(format!("searching {}", path.display()), e))?;
    if found.is_empty() {
        return Ok(Vec::new());
    }
    // Only now the whole outline: the listing and the active branch.
    let Some((_, log)) = open_log(path, id)? else {
        return Ok(Vec::new());
    };
    let info = log.info();
    if !matcher.covers(&info) {
        return Ok(Vec::new());
    }
    let messages = log.message_indexes();
    let mut active = HashSet::new();
    let mut next = log.tip;
    while let Some(i) = next {
        let entry = &log.entries[i].entry;
        if !active.insert(entry.id.as_str()) {
            break;
        }
        next = entry.parent_id.as_deref().and_then(|p| messages.get(p).copied());
    }
    // Newest entry first within the session (the file order reversed).
    Ok(found
        .into_iter()
        .rev()
        .map(|hit| {
            let on_active = active.contains(hit.entry.as_str());
            SearchHit::new(info.clone(), hit.entry, hit.role, on_active, hit.at, hit.matched)
        })
        .collect())
}
