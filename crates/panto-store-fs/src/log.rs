//! Reading a whole session file: every line checked, the chain to the newest entry followed, and
//! compactions applied to produce the view the model sees.
//!
//! A session can be hundreds of megabytes, most of it tool output that a compaction has hidden
//! from the model. So reading is two passes that never hold the file in memory:
//!
//! 1. [`scan_log`] streams the file once through a bounded buffer and parses each entry as a
//!    [`EntryOutline`]: everything but the message's content, which serde skips without building
//!    it. That is enough to check every line's JSON and entry fields, follow the chain and apply
//!    compactions, and it is all a writer reopening the file needs.
//! 2. `read.rs` reads back only the lines a caller needs (the view's, for `load`), by offset,
//!    and parses their messages in full.
//!
//! Memory is bounded by the longest line plus the view, not by the file. The cost of this split
//! is that the content of a message no longer in the view (compacted away) is checked as JSON
//! but not as a message; `load` still checks in full every message it returns.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use panto_core::store::compact_view;
use panto_core::{Result, Role, SessionInfo};
use serde::Deserialize;

use crate::format::{
    check_header_id, corrupt, io_error, line_location, parse_entry, parse_header, too_long, Activity, CheckpointOnDisk,
    CompactionOnDisk, ForkOnDisk, HeaderIn, MAX_LINE,
};
use crate::lines::{Lines, Next};
use crate::open::{open_for_reading, FileStamp};

/// An entry without its message content: what the first pass keeps of every line.
#[derive(Debug, Deserialize)]
pub(crate) struct EntryOutline {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub parent_id: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::read")]
    pub timestamp: DateTime<Utc>,
    /// Set on message entries; a branch entry has none.
    #[serde(default)]
    pub message: Option<MessageRole>,
    #[serde(default)]
    pub compaction: Option<CompactionOnDisk>,
    /// On a branch entry: the entry that becomes the tip (`None`: the empty start).
    #[serde(default)]
    pub tip: Option<String>,
    /// On a branch entry that records a file change (it keeps the tip): the change.
    #[serde(default)]
    pub checkpoint: Option<CheckpointOnDisk>,
    pub activity: Activity,
}

impl EntryOutline {
    /// Whether this is a message entry (not a branch switch).
    pub(crate) fn is_message(&self) -> bool {
        self.message.is_some()
    }

    /// Whether this is a system message.
    pub(crate) fn is_system(&self) -> bool {
        self.message.as_ref().is_some_and(|m| m.role == Role::System)
    }
}

/// The role of an entry's message; its content is skipped.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageRole {
    pub role: Role,
}

/// One entry's skeleton and where its line is.
#[derive(Debug)]
pub(crate) struct LoggedEntry {
    /// The 1-based line number, for errors.
    pub line: usize,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// Length of the line without its `\n`.
    pub len: usize,
    /// The entry, without its message content.
    pub entry: EntryOutline,
}

/// A session file, scanned.
#[derive(Debug)]
pub(crate) struct ParsedLog {
    /// Line 1.
    pub header: HeaderIn,
    /// Every entry, in file order.
    pub entries: Vec<LoggedEntry>,
    /// Indices into `entries` of the messages the model sees: the chain ending at the active
    /// branch's tip, with compactions applied.
    pub view: Vec<usize>,
    /// The tip of the active branch: the last message entry, or what the last branch entry
    /// names (`None`: the empty start).
    pub tip: Option<usize>,
    /// The committed length: everything up to and including the last `\n`. Bytes after it are a
    /// torn line that a crash left behind.
    pub committed: u64,
}

impl ParsedLog {
    /// The index in `entries` of each message entry, by entry id.
    pub(crate) fn message_indexes(&self) -> HashMap<&str, usize> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.entry.is_message())
            .map(|(i, e)| (e.entry.id.as_str(), i))
            .collect()
    }

    /// The listing of the active branch, as the newest line records it: a message entry its own
    /// path's, a branch entry the path's to the tip it names.
    pub(crate) fn info(&self) -> SessionInfo {
        let mut info = match self.entries.last() {
            Some(last) => {
                last.entry
                    .activity
                    .clone()
                    .into_info(self.header.id.clone(), self.header.created, last.entry.timestamp)
            }
            None => SessionInfo::new(self.header.id.clone(), self.header.created),
        };
        info.forked_from = self.header.forked_from.clone().map(ForkOnDisk::into_origin);
        info.cwd = self.header.cwd.as_ref().map(PathBuf::from);
        info
    }
}

/// What the first pass found.
#[derive(Debug)]
// `Log` is what nearly every scan returns, and a `Scanned` is unwrapped at once: boxing it would
// only add an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Scanned {
    /// The file is empty.
    Empty,
    /// The file holds bytes but no line end: the header write was torn.
    TornHeader,
    /// A header and the entries after it.
    Log(ParsedLog),
}

impl Scanned {
    /// The log, or the error a reader gives for a file without a complete header line.
    pub(crate) fn into_log(self, path: &Path) -> Result<ParsedLog> {
        let message = match self {
            Scanned::Log(log) => return Ok(log),
            Scanned::Empty => "the file is empty: it has no session header",
            Scanned::TornHeader => "the header line is incomplete (no line end): the first write was interrupted",
        };
        Err(corrupt(line_location(path, 1), message))
    }
}

/// Opens the session file at `path` (named for session `id`) as every session file is opened
/// (see `open.rs`) and scans it. `None` when there is no such file, or it is empty: an empty file
/// holds no session (see `listing::holds_no_session`).
pub(crate) fn open_log(path: &Path, id: &str) -> Result<Option<(File, ParsedLog)>> {
    Ok(open_stamped_log(path, id)?.map(|(file, scanned)| (file, scanned.log)))
}

/// A scanned log with the stamp of the file as it was before the scan began: a writer that
/// later locks the file takes the log instead of scanning again when the file's stamp is still
/// the same (see `Writer::open`).
#[derive(Debug)]
pub(crate) struct StampedLog {
    /// The file's identity and last change, from `fstat` before the scan.
    pub stamp: FileStamp,
    /// The scan.
    pub log: ParsedLog,
}

/// [`open_log`], keeping the file's stamp with its log.
pub(crate) fn open_stamped_log(path: &Path, id: &str) -> Result<Option<(File, StampedLog)>> {
    let Some((file, meta)) = open_for_reading(path)? else {
        return Ok(None);
    };
    // Taken before the scan: a change made while it reads (an append, a cut) moves the length
    // or the change time past this stamp, so a writer comparing it rescans.
    let stamp = FileStamp::of(&meta);
    match scan_log(&file, path, id)? {
        Scanned::Empty => Ok(None),
        scanned => Ok(Some((
            file,
            StampedLog {
                stamp,
                log: scanned.into_log(path)?,
            },
        ))),
    }
}

/// The first pass: scans the session file read from `reader` (positioned at its start), at
/// `path` (for errors), whose name says it is session `id`. A torn final line is skipped; any
/// other bad line is an error naming the line.
pub(crate) fn scan_log<R: Read>(reader: R, path: &Path, id: &str) -> Result<Scanned> {
    scan_log_with_max(reader, path, id, MAX_LINE)
}

#[cfg(test)]
thread_local! {
    /// How many scans this thread has made: tests check that a file is read once, not twice.
    pub(crate) static SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// [`scan_log`] with `max` as the longest line accepted (smaller in tests).
fn scan_log_with_max<R: Read>(reader: R, path: &Path, id: &str, max: usize) -> Result<Scanned> {
    #[cfg(test)]
    SCANS.with(|n| n.set(n.get() + 1));
    let mut lines = Lines::new(reader, max);
    let read_error = |e| io_error("reading", path, e);
    let header_location = line_location(path, 1);
    let header = match lines.next_line().map_err(read_error)? {
        Next::Line(_, line) => Some(parse_header(line, &header_location)?),
        Next::TooLong { len, .. } => return Err(corrupt(header_location, too_long(len, max))),
        Next::End => None,
    };
    let Some(header) = header else {
        return Ok(if lines.has_torn_tail() {
            Scanned::TornHeader
        } else {
            Scanned::Empty
        });
    };
    check_header_id(&header.id, id, &header_location)?;

    let mut entries: Vec<LoggedEntry> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut tip: Option<usize> = None;
    let mut number = 1;
    loop {
        number += 1;
        let (offset, line) = match lines.next_line().map_err(read_error)? {
            Next::Line(offset, line) => (offset, line),
            Next::TooLong { len, .. } => return Err(corrupt(line_location(path, number), too_long(len, max))),
            Next::End => break,
        };
        let entry = parse_skeleton(line, || line_location(path, number))?;
        if let Some(earlier) = by_id.get(&entry.id) {
            let first = entries[*earlier].line;
            return Err(corrupt(
                line_location(path, number),
                format!("duplicate entry id \"{}\" (first used on line {first})", entry.id),
            ));
        }
        let message_entry = |field: &str, named: &str| match by_id.get(named) {
            Some(&i) if entries[i].entry.is_message() => Ok(i),
            Some(_) => Err(corrupt(
                line_location(path, number),
                format!("{field} \"{named}\" names a branch entry, not a message"),
            )),
            None => Err(corrupt(
                line_location(path, number),
                format!("{field} \"{named}\" names no earlier entry"),
            )),
        };
        if let Some(parent) = &entry.parent_id {
            message_entry("parent_id", parent)?;
        }
        tip = if entry.is_message() {
            Some(entries.len())
        } else {
            match &entry.tip {
                Some(named) => Some(message_entry("tip", named)?),
                None => None,
            }
        };
        by_id.insert(entry.id.clone(), entries.len());
        entries.push(LoggedEntry {
            line: number,
            offset,
            len: line.len(),
            entry,
        });
    }
    let committed = lines.committed();
    let view = build_view(&entries, &by_id, tip, path)?;
    Ok(Scanned::Log(ParsedLog {
        header,
        entries,
        view,
        tip,
        committed,
    }))
}

/// Parses an entry line without its message content. A line this rejects is parsed again in
/// full, so the error is the one [`parse_entry`] gives (naming the field or the column).
/// `location` names the line; it is formatted only when the line is bad, since this runs for
/// every line of a log.
fn parse_skeleton(line: &[u8], location: impl FnOnce() -> String) -> Result<EntryOutline> {
    match serde_json::from_slice::<EntryOutline>(line) {
        Ok(skeleton) if skeleton.kind == crate::format::MESSAGE_TYPE && skeleton.is_message() => Ok(skeleton),
        Ok(skeleton) if skeleton.kind == crate::format::BRANCH_TYPE && !skeleton.is_message() => Ok(skeleton),
        Ok(skeleton) if skeleton.kind == crate::format::BRANCH_TYPE => {
            Err(corrupt(location(), "a branch entry carries no `message`"))
        }
        Ok(_) | Err(_) => {
            let location = location();
            match parse_entry(line, &location) {
                Err(e) => Err(e),
                // The full parse accepted what the skeleton did not; that cannot happen for a
                // well-formed entry, so name the line rather than guess.
                Ok(_) => Err(corrupt(location, "the entry could not be read")),
            }
        }
    }
}

/// Follows parent ids back from the active branch's tip, then replays that chain oldest first,
/// applying each compaction as `MemoryStore` does.
fn build_view(
    entries: &[LoggedEntry],
    by_id: &HashMap<String, usize>,
    tip: Option<usize>,
    path: &Path,
) -> Result<Vec<usize>> {
    let mut chain = Vec::new();
    let mut next = tip;
    while let Some(i) = next {
        chain.push(i);
        // Parents were checked to name earlier lines while parsing, so this walk ends.
        next = entries[i].entry.parent_id.as_ref().and_then(|p| by_id.get(p).copied());
    }
    chain.reverse();

    let mut view: Vec<usize> = Vec::with_capacity(chain.len());
    for i in chain {
        let Some(compaction) = &entries[i].entry.compaction else {
            view.push(i);
            continue;
        };
        let cut = match &compaction.first_kept {
            None => view.len(),
            Some(kept) => view
                .iter()
                .position(|&v| &entries[v].entry.id == kept)
                .ok_or_else(|| {
                    corrupt(
                        line_location(path, entries[i].line),
                        format!("the compaction keeps messages from entry \"{kept}\", which is not in the conversation at that point"),
                    )
                })?,
        };
        compact_view(&mut view, cut, i, |&v| entries[v].entry.is_system());
    }
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_maximum_names_the_file_line_and_length() {
        let id = "0190ab";
        let header = format!(r#"{{"type":"session","version":1,"id":"{id}","created":"2026-01-02T03:04:05Z"}}"#);
        let path = Path::new("/sessions/0190ab.jsonl");
        let data = format!("{header}\n{}\n", "z".repeat(500));
        let error = scan_log_with_max(data.as_bytes(), path, id, 300).unwrap_err();
        match error {
            panto_core::Error::CorruptSession { location, message } => {
                assert_eq!(location, "/sessions/0190ab.jsonl:2");
                assert_eq!(
                    message,
                    "the line is 500 bytes long, over the maximum line size of 300 bytes"
                );
            }
            other => panic!("expected CorruptSession, got {other:?}"),
        }
        let error = scan_log_with_max(data.as_bytes(), path, id, 50).unwrap_err();
        assert!(error.to_string().contains("0190ab.jsonl:1"), "{error}");
        assert!(
            error.to_string().contains(&format!("{} bytes long", header.len())),
            "{error}"
        );
    }
}
