//! Reading a whole session file: every line checked, the chain to the newest entry followed, and
//! compactions applied to produce the view the model sees.
//!
//! A session can be hundreds of megabytes, most of it tool output that a compaction has hidden
//! from the model. So reading is two passes that never hold the file in memory:
//!
//! 1. [`scan_log`] streams the file once through a bounded buffer and parses each entry as a
//!    [`Skeleton`]: everything but the message's content, which serde skips without building
//!    it. That is enough to check every line's JSON and entry fields, follow the chain and apply
//!    compactions, and it is all a writer reopening the file needs.
//! 2. [`read_view`] reads back only the lines of the view, by offset, and parses their messages
//!    in full.
//!
//! Memory is bounded by the longest line plus the view, not by the file. The cost of this split
//! is that the content of a message no longer in the view (compacted away) is checked as JSON
//! but not as a message; `load` still checks in full every message it returns.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use chrono::{DateTime, Utc};
use panto_core::store::{compact_view, validate_checkpoint_address};
use panto_core::{
    CheckpointRecord, EntryRef, LoadedBranch, Message, Result, Role, SessionInfo, SessionTree, StoredCheckpoint,
    TreeEntry,
};
use serde::Deserialize;

use crate::format::{
    corrupt, line_location, parse_entry, parse_header, too_long, Activity, CheckpointOnDisk, CompactionOnDisk,
    ForkOnDisk, HeaderIn, MAX_LINE,
};
use crate::open::open_for_reading;
use crate::scan::{check_header_id, io_error};

/// How many bytes each read of the first pass asks for at most; lines longer than this grow the
/// buffer.
const CHUNK: usize = 1024 * 1024;

/// The buffer a scan starts with. Most logs opened are small (a new session's is empty): a
/// zeroed megabyte for each would cost more than reading them (a fleet of agents opens one per
/// new session). Reads that fill the buffer double it, up to [`CHUNK`].
const FIRST_READ: usize = 16 * 1024;

/// An entry without its message content: what the first pass keeps of every line.
#[derive(Debug, Deserialize)]
pub(crate) struct Skeleton {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub parent_id: Option<String>,
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

impl Skeleton {
    /// Whether this is a message entry (not a branch switch).
    pub fn is_message(&self) -> bool {
        self.message.is_some()
    }

    /// Whether this is a system message.
    pub fn is_system(&self) -> bool {
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
    pub entry: Skeleton,
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
    /// The listing of the active branch, as the newest line records it: a message entry its own
    /// path's, a branch entry the path's to the tip it names.
    pub fn info(&self) -> SessionInfo {
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
        info
    }
}

/// What [`Lines::next_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Next<'a> {
    /// A whole line (without its `\n`) and its offset.
    Line(u64, &'a [u8]),
    /// A line longer than the maximum: its offset and its length. Its bytes were never held.
    TooLong { offset: u64, len: u64 },
    /// The end of the committed bytes.
    End,
}

/// Splits a byte stream into `\n`-terminated lines through one reused buffer. Bytes after the
/// last `\n` (a torn line) are never returned. The buffer grows to the longest line, and no
/// further than `max` bytes: a longer line is skipped through a fixed-size scratch buffer and
/// reported with its length, so a damaged file of one 2 GB line costs `max` bytes of memory,
/// not 2 GB.
struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// Bytes of `buf` holding data.
    end: usize,
    /// Where the search for the next `\n` resumes: the bytes from `start` up to here hold none,
    /// so a long line is scanned once, not once per read.
    scanned: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// The longest line returned whole.
    max: usize,
    /// Whether the last read filled the buffer: the stream has more, so the next read asks for
    /// more at once.
    filled: bool,
}

impl<R: Read> Lines<R> {
    fn new(reader: R, max: usize) -> Self {
        Lines {
            reader,
            buf: vec![0; FIRST_READ.min(max + 1)],
            start: 0,
            end: 0,
            scanned: 0,
            base: 0,
            eof: false,
            max,
            filled: false,
        }
    }

    /// The next whole line, or a line too long to return, or the end of the committed bytes.
    fn next_line(&mut self) -> io::Result<Next<'_>> {
        loop {
            let from = self.scanned.max(self.start);
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let line_start = self.start;
                let line_end = from + i;
                self.start = line_end + 1;
                self.scanned = self.start;
                let offset = self.base + line_start as u64;
                let len = line_end - line_start;
                if len > self.max {
                    return Ok(Next::TooLong {
                        offset,
                        len: len as u64,
                    });
                }
                return Ok(Next::Line(offset, &self.buf[line_start..line_end]));
            }
            self.scanned = self.end;
            if self.end - self.start > self.max {
                return self.skip_long_line();
            }
            if self.eof {
                return Ok(Next::End);
            }
            self.refill()?;
        }
    }

    /// Reads on past a line already longer than `max` to its end, keeping none of it. A line
    /// end makes it `TooLong`; the end of the stream makes it the torn last line (`End`, with
    /// the line's start as the committed length).
    fn skip_long_line(&mut self) -> io::Result<Next<'_>> {
        let offset = self.base + self.start as u64;
        let mut len = (self.end - self.start) as u64;
        let mut scratch = vec![0; CHUNK];
        loop {
            let n = match self.reader.read(&mut scratch) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                return Ok(Next::End);
            }
            if let Some(i) = memchr::memchr(b'\n', &scratch[..n]) {
                return Ok(Next::TooLong {
                    offset,
                    len: len + i as u64,
                });
            }
            len += n as u64;
        }
    }

    /// Moves the partial line to the front (growing the buffer, up to one byte over `max`,
    /// when the line fills it) and reads more after it.
    fn refill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // `next_line` caught a partial line longer than `max`, so the buffer is at most
            // `max` bytes here and this grows it.
            let grown = (self.buf.len() * 2).min(self.max + 1);
            self.buf.resize(grown, 0);
        } else if self.filled && self.buf.len() < CHUNK.min(self.max + 1) {
            let grown = (self.buf.len() * 2).min(CHUNK.min(self.max + 1));
            self.buf.resize(grown, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.filled = self.end + n == self.buf.len();
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Stream offset just past the last `\n` returned, once `next_line` has returned `End`.
    fn committed(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Whether bytes were read that no line end followed.
    fn has_torn_tail(&self) -> bool {
        self.end > self.start
    }
}

/// What the first pass found.
#[derive(Debug)]
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
    pub fn into_log(self, path: &Path) -> Result<ParsedLog> {
        let message = match self {
            Scanned::Log(log) => return Ok(log),
            Scanned::Empty => "the file is empty: it has no session header",
            Scanned::TornHeader => "the header line is incomplete (no line end): the first write was interrupted",
        };
        Err(corrupt(line_location(path, 1), message))
    }
}

/// The first pass: scans the session file read from `reader` (positioned at its start), at
/// `path` (for errors), whose name says it is session `id`. A torn final line is skipped; any
/// other bad line is an error naming the line.
pub(crate) fn scan_log<R: Read>(reader: R, path: &Path, id: &str) -> Result<Scanned> {
    scan_log_with_max(reader, path, id, MAX_LINE)
}

/// [`scan_log`] with `max` as the longest line accepted (smaller in tests).
fn scan_log_with_max<R: Read>(reader: R, path: &Path, id: &str, max: usize) -> Result<Scanned> {
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
fn parse_skeleton(line: &[u8], location: impl FnOnce() -> String) -> Result<Skeleton> {
    match serde_json::from_slice::<Skeleton>(line) {
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

/// Reads session `id` from the file at `path` for `load_branch`: the metadata bag, the messages
/// of the active branch's view with their entries, and the fork origin. `None` when there is no
/// such file.
pub(crate) fn load_branch(path: &Path, id: &str) -> Result<Option<LoadedBranch>> {
    let Some((file, _)) = open_for_reading(path)? else {
        return Ok(None);
    };
    let log = match scan_log(&file, path, id)? {
        // An empty file holds no session (see `scan::holds_no_session`).
        Scanned::Empty => return Ok(None),
        scanned => scanned.into_log(path)?,
    };
    let messages = read_view(&file, path, &log)?;
    let entries = log.view.iter().map(|&i| entry_ref(&log.entries[i].entry)).collect();
    Ok(Some(LoadedBranch {
        conversation: panto_core::Conversation {
            messages,
            metadata: log.header.metadata,
        },
        entries,
        forked_from: log.header.forked_from.map(ForkOnDisk::into_origin),
    }))
}

/// Reads every message entry of session `id` from the file at `path`, for `tree`. `None` when
/// there is no such file.
pub(crate) fn load_tree(path: &Path, id: &str) -> Result<Option<SessionTree>> {
    let Some((file, _)) = open_for_reading(path)? else {
        return Ok(None);
    };
    let log = match scan_log(&file, path, id)? {
        Scanned::Empty => return Ok(None),
        scanned => scanned.into_log(path)?,
    };
    let mut entries = Vec::new();
    let mut buf = Vec::new();
    for logged in log.entries.iter().filter(|l| l.entry.is_message()) {
        buf.resize(logged.len, 0);
        file.read_exact_at(&mut buf, logged.offset)
            .map_err(|e| io_error("reading", path, e))?;
        let parsed = parse_entry(&buf, &line_location(path, logged.line))?;
        entries.push(TreeEntry::of(entry_ref(&logged.entry), &parsed.message));
    }
    Ok(Some(SessionTree {
        entries,
        tip: log.tip.map(|i| log.entries[i].entry.id.clone()),
    }))
}

/// Every file change recorded in session `id` (the file at `path`), in file order, with the tip
/// each belongs to. Empty when there is no such file. A record whose path is not absolute or
/// whose address could not be one is an error naming its line: a rewind must never write where
/// a damaged line points.
pub(crate) fn load_checkpoints(path: &Path, id: &str) -> Result<Vec<StoredCheckpoint>> {
    let Some((file, _)) = open_for_reading(path)? else {
        return Ok(Vec::new());
    };
    let log = match scan_log(&file, path, id)? {
        Scanned::Empty => return Ok(Vec::new()),
        scanned => scanned.into_log(path)?,
    };
    let mut records = Vec::new();
    for logged in log.entries {
        let Some(change) = logged.entry.checkpoint else {
            continue;
        };
        records.push(StoredCheckpoint {
            record: checkpoint_record(change, path, logged.line)?,
            entry: logged.entry.tip,
        });
    }
    Ok(records)
}

/// The file change recorded on line `line` of the file at `path`, checked: a record whose path
/// is not absolute or whose address could not be one is an error naming its line, since a
/// rewind must never write where a damaged line points.
pub(crate) fn checkpoint_record(change: CheckpointOnDisk, path: &Path, line: usize) -> Result<CheckpointRecord> {
    let bad = |what: String| corrupt(line_location(path, line), what);
    if !change.path.starts_with('/') {
        return Err(bad(format!("the checkpoint's path {:?} is not absolute", change.path)));
    }
    for address in change.before.iter().chain(&change.after) {
        validate_checkpoint_address(address).map_err(|_| {
            bad(format!(
                "the checkpoint's address {address:?} is not 64 lowercase hex digits"
            ))
        })?;
    }
    Ok(CheckpointRecord {
        path: change.path,
        before: change.before,
        after: change.after,
        restore: change.restore,
    })
}

/// A file change a fork carries: recorded on the forked path (or at the empty start every path
/// begins at), with the listing activity of the entry it belongs to.
#[derive(Debug)]
pub(crate) struct CarriedChange {
    /// The entry it belongs to.
    pub tip: Option<String>,
    /// The change.
    pub checkpoint: CheckpointOnDisk,
    /// The activity of the path to `tip`.
    pub activity: Activity,
}

/// What a fork of a session copies.
#[derive(Debug)]
pub(crate) struct ForkSource {
    /// The source's metadata bag.
    pub metadata: Option<String>,
    /// The lines of the path to the fork point, each with its `\n`.
    pub lines: Vec<u8>,
    /// Every entry id on the path.
    pub ids: Vec<String>,
    /// The file changes recorded on the path, in the order recorded.
    pub changes: Vec<CarriedChange>,
    /// The activity of the path to the fork point.
    pub activity: Activity,
}

/// What a fork of session `id` at entry `at` copies (see [`ForkSource`]), read from the file at
/// `path` and checked against the scan, so a file changed between the passes is an error rather
/// than a mixed log.
pub(crate) fn fork_lines(path: &Path, id: &str, at: &str) -> Result<ForkSource> {
    let not_found = || panto_core::Error::SessionNotFound(id.to_owned());
    let Some((file, _)) = open_for_reading(path)? else {
        return Err(not_found());
    };
    let log = match scan_log(&file, path, id)? {
        Scanned::Empty => return Err(not_found()),
        scanned => scanned.into_log(path)?,
    };
    let by_id: HashMap<&str, usize> = log
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.entry.is_message())
        .map(|(i, e)| (e.entry.id.as_str(), i))
        .collect();
    let Some(&end) = by_id.get(at) else {
        return Err(panto_core::Error::UnknownEntry {
            session: id.to_owned(),
            message: format!("it holds no message entry {at:?}"),
        });
    };
    let mut chain = Vec::new();
    let mut next = Some(end);
    while let Some(i) = next {
        chain.push(i);
        next = log.entries[i]
            .entry
            .parent_id
            .as_deref()
            .and_then(|p| by_id.get(p).copied());
    }
    chain.reverse();
    let ids: Vec<String> = chain.iter().map(|&i| log.entries[i].entry.id.clone()).collect();
    let empty_start = Activity::default();
    let changes = log
        .entries
        .iter()
        .filter_map(|logged| {
            let checkpoint = logged.entry.checkpoint.clone()?;
            let activity = match logged.entry.tip.as_deref() {
                None => empty_start.clone(),
                Some(tip) if ids.iter().any(|i| i == tip) => log.entries[by_id[tip]].entry.activity.clone(),
                Some(_) => return None,
            };
            Some(CarriedChange {
                tip: logged.entry.tip.clone(),
                checkpoint,
                activity,
            })
        })
        .collect();
    let activity = log.entries[end].entry.activity.clone();
    let mut lines = Vec::new();
    for i in chain {
        let logged = &log.entries[i];
        let start = lines.len();
        lines.resize(start + logged.len, 0);
        file.read_exact_at(&mut lines[start..], logged.offset)
            .map_err(|e| io_error("reading", path, e))?;
        let location = line_location(path, logged.line);
        let parsed = parse_entry(&lines[start..], &location)?;
        if parsed.id != logged.entry.id || parsed.parent_id != logged.entry.parent_id {
            return Err(corrupt(location, "the file changed while it was being read"));
        }
        lines.push(b'\n');
    }
    Ok(ForkSource {
        metadata: log.header.metadata,
        lines,
        ids,
        changes,
        activity,
    })
}

fn entry_ref(entry: &Skeleton) -> EntryRef {
    EntryRef {
        id: entry.id.clone(),
        parent: entry.parent_id.clone(),
    }
}

/// The second pass: the messages of the view, in view order, read from `file` by offset and
/// parsed in full.
pub(crate) fn read_view(file: &File, path: &Path, log: &ParsedLog) -> Result<Vec<Message>> {
    // Read in file order, so a view that is most of the file is read front to back.
    let mut order: Vec<(usize, usize)> = log.view.iter().copied().enumerate().collect();
    order.sort_by_key(|&(_, entry)| log.entries[entry].offset);
    let mut messages: Vec<Option<Message>> = (0..log.view.len()).map(|_| None).collect();
    let mut buf = Vec::new();
    for (position, entry) in order {
        let logged = &log.entries[entry];
        buf.resize(logged.len, 0);
        file.read_exact_at(&mut buf, logged.offset)
            .map_err(|e| io_error("reading", path, e))?;
        let location = line_location(path, logged.line);
        let parsed = parse_entry(&buf, &location)?;
        // The line read back must be the line scanned: a file replaced between the passes would
        // otherwise mix two logs into one conversation.
        let e = &logged.entry;
        let same = parsed.id == e.id
            && parsed.parent_id == e.parent_id
            && parsed.timestamp == e.timestamp
            && parsed.compaction == e.compaction
            && parsed.activity == e.activity;
        if !same {
            return Err(corrupt(location, "the file changed while it was being read"));
        }
        messages[position] = Some(parsed.message);
    }
    // Every position was filled above, each exactly once.
    Ok(messages.into_iter().flatten().collect())
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

    /// A reader that hands out at most `step` bytes per read, to cross every buffer boundary.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// What the reader returned, owned.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Line(u64, Vec<u8>),
        TooLong(u64, u64),
    }

    /// Every line of `data`, read `step` bytes at a time with `max` as the longest line, up to
    /// the end or the first line too long; the committed length, and the reader's buffer size.
    fn all_lines(data: &[u8], step: usize, max: usize) -> (Vec<Seen>, u64, usize) {
        let mut lines = Lines::new(Trickle { data, step }, max);
        let mut out = Vec::new();
        loop {
            match lines.next_line().unwrap() {
                Next::Line(offset, line) => out.push(Seen::Line(offset, line.to_vec())),
                Next::TooLong { offset, len } => {
                    out.push(Seen::TooLong(offset, len));
                    break;
                }
                Next::End => break,
            }
        }
        (out, lines.committed(), lines.buf.len())
    }

    #[test]
    fn lines_are_the_same_however_the_bytes_arrive_and_a_torn_tail_is_dropped() {
        let long = "x".repeat(3 * CHUNK + 5);
        let data = format!("a\n\nbc\n{long}\nd\ntorn");
        // Byte-at-a-time reads of a short body cross every boundary a line can have.
        let (lines, committed, _) = all_lines(b"a\n\nbc\nd\ntorn", 1, MAX_LINE);
        let line = |offset: u64, bytes: &[u8]| Seen::Line(offset, bytes.to_vec());
        assert_eq!(lines, [line(0, b"a"), line(2, b""), line(3, b"bc"), line(6, b"d")]);
        assert_eq!(committed, 8);
        let expected = vec![
            line(0, b"a"),
            line(2, b""),
            line(3, b"bc"),
            line(6, long.as_bytes()),
            line((7 + long.len()) as u64, b"d"),
        ];
        for step in [4093, CHUNK, usize::MAX] {
            let (lines, committed, _) = all_lines(data.as_bytes(), step, MAX_LINE);
            assert_eq!(lines, expected, "step {step}");
            assert_eq!(committed as usize, data.len() - 4, "step {step}");
        }
    }

    #[test]
    fn a_line_over_the_maximum_is_reported_with_its_length_without_being_held() {
        let huge = 3 * CHUNK + 12_345;
        let data = format!("ab\n{}\n{}\ncd\n", "y".repeat(100), "x".repeat(huge));
        // Byte at a time, every boundary is crossed.
        let (lines, _, _) = all_lines(b"ab\nxxxxxxxxxxx\n", 1, 10);
        assert_eq!(lines, [Seen::Line(0, b"ab".to_vec()), Seen::TooLong(3, 11)]);
        for step in [7, 4096, CHUNK, usize::MAX] {
            // A line exactly as long as the maximum is fine; one byte more is not.
            let (lines, _, buffer) = all_lines(data.as_bytes(), step, 100);
            assert_eq!(
                lines,
                [
                    Seen::Line(0, b"ab".to_vec()),
                    Seen::Line(3, b"y".repeat(100)),
                    Seen::TooLong(104, huge as u64)
                ],
                "step {step}"
            );
            assert!(buffer <= 101, "step {step}: the buffer grew to {buffer} bytes");
            let (lines, _, _) = all_lines(data.as_bytes(), step, 99);
            assert_eq!(lines[1], Seen::TooLong(3, 100), "step {step}");
        }
        // With the real maximum, a line of 3 MiB is read whole and the buffer stays below
        // the maximum plus one byte whatever follows.
        let (lines, _, buffer) = all_lines(data.as_bytes(), usize::MAX, MAX_LINE);
        assert_eq!(lines.len(), 4);
        assert!(buffer <= MAX_LINE + 1);
    }

    #[test]
    fn a_small_log_is_read_through_a_small_buffer_and_a_large_one_through_a_chunk() {
        // A new session's log: a megabyte zeroed to read a few hundred bytes was most of the
        // cost of opening one.
        let small = "line\n".repeat(50);
        let (lines, _, buffer) = all_lines(small.as_bytes(), usize::MAX, MAX_LINE);
        assert_eq!(lines.len(), 50);
        assert_eq!(buffer, FIRST_READ);
        // Many short lines: reads that fill the buffer double it, to a chunk and no further.
        let large = "0123456789abcdef\n".repeat(4 * CHUNK / 17);
        for step in [usize::MAX, 100_000] {
            let (lines, committed, buffer) = all_lines(large.as_bytes(), step, MAX_LINE);
            assert_eq!(lines.len(), 4 * CHUNK / 17, "step {step}");
            assert_eq!(committed as usize, large.len(), "step {step}");
            // A reader that gives 100,000 bytes a read stops the doubling at the first size it
            // does not fill.
            let expected = if step == usize::MAX { CHUNK } else { 128 * 1024 };
            assert_eq!(buffer, expected, "step {step}");
        }
    }

    #[test]
    fn a_torn_last_line_over_the_maximum_is_still_only_a_torn_line() {
        let data = format!("ab\n{}", "x".repeat(2 * CHUNK + 1));
        for step in [4096, usize::MAX] {
            let mut lines = Lines::new(
                Trickle {
                    data: data.as_bytes(),
                    step,
                },
                1000,
            );
            assert_eq!(lines.next_line().unwrap(), Next::Line(0, b"ab"));
            assert_eq!(lines.next_line().unwrap(), Next::End);
            assert_eq!(lines.committed(), 3, "step {step}");
            assert!(lines.has_torn_tail());
            assert!(lines.buf.len() <= 1001);
        }
    }

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
