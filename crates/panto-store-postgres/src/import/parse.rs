//! Reading one session of a file store directory, as `docs/session-format.md` specifies it and
//! as the file store reads it: the JSONL file line by line (message entries, branch switches,
//! file-change records, the fork origin), checked, and the checkpoint blobs beside it listed.
//! Nothing here touches the database; what it returns is ready to be written in one transaction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use panto_core::store::{validate_checkpoint_address, validate_session_id};
use panto_core::{CheckpointRecord, Error, ForkOrigin, Message, Result, Role, SessionInfo, Usage, WireIdentity};
use serde::Deserialize;

use crate::db::{bigint, ceil_micros, wire_columns};
use crate::view::{compact_recorded, ViewEntry};
use crate::writer::{message_columns, role_str, EntryRow, NewSession};

/// Line 1 of a session file.
#[derive(Debug, Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    version: u64,
    id: String,
    created: DateTime<Utc>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    metadata: Option<String>,
    /// Set on forks (version 2).
    #[serde(default)]
    forked_from: Option<FsFork>,
}

/// A fork's origin as the header records it.
#[derive(Debug, Deserialize)]
struct FsFork {
    session: String,
    entry: String,
}

/// A compaction as the file store records it.
#[derive(Debug, Deserialize)]
struct FsCompaction {
    first_kept: Option<String>,
    tokens_before: u64,
    tokens_after: u64,
}

/// A file change as a branch entry records it.
#[derive(Debug, Deserialize)]
struct FsCheckpoint {
    path: String,
    before: Option<String>,
    after: Option<String>,
    #[serde(default)]
    restore: bool,
}

/// An entry line: a message entry, or a branch entry (a switch, or a file change that keeps the
/// tip).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    id: String,
    #[serde(default)]
    parent_id: Option<String>,
    timestamp: DateTime<Utc>,
    /// Set on message entries only.
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    wire: Option<WireIdentity>,
    #[serde(default)]
    compaction: Option<FsCompaction>,
    /// On a branch entry: the message entry that becomes the tip (`None`: the empty start).
    #[serde(default)]
    tip: Option<String>,
    /// On a branch entry that records a file change.
    #[serde(default)]
    checkpoint: Option<FsCheckpoint>,
}

/// One row of `panto.branch_events`, as an import writes it.
#[derive(Debug)]
pub(crate) struct EventRow {
    pub seq: i64,
    /// How many entries the session held when the event was recorded.
    pub entries_before: i64,
    pub ts: DateTime<Utc>,
    /// A switch: the entry that becomes the tip; a file change: the tip it belongs to.
    pub tip: Option<String>,
    /// Set on a file change.
    pub checkpoint: Option<CheckpointRecord>,
}

/// A session file, read and checked, ready to be written to the database.
#[derive(Debug)]
pub(crate) struct FsSession {
    /// The file, for errors.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// The session's listing info: the active branch, folded from its entries as every store
    /// folds it.
    pub info: SessionInfo,
    /// The conversation metadata.
    pub metadata: Option<String>,
    /// Where the session was started.
    pub cwd: Option<String>,
    /// The entry rows, every branch, in file order.
    pub rows: Vec<EntryRow>,
    /// The branch switches and file changes, in file order.
    pub events: Vec<EventRow>,
    /// The checkpoint blobs beside the file (`<id>.blobs/<address>`), by address; their bytes
    /// are read, and checked against the address, when they are written.
    pub blobs: Vec<(String, PathBuf)>,
}

impl FsSession {
    /// The session row to insert.
    pub fn new_session(&self) -> NewSession<'_> {
        NewSession {
            info: &self.info,
            metadata: self.metadata.as_deref(),
            cwd: self.cwd.as_deref().filter(|c| !c.contains('\0')),
            writer: None,
        }
    }
}

/// What the listing and the view need of each message entry besides its row.
#[derive(Debug)]
struct Node {
    /// Its line, for errors.
    line: usize,
    /// The index of its parent among the rows.
    parent: Option<usize>,
    /// The message, when it is a human prompt (the listing shows the last one); other messages
    /// are not kept, so a long session is not held twice.
    prompt: Option<Message>,
    wire: Option<WireIdentity>,
}

/// What an entry id names: a message entry (its index among the rows) or a branch entry.
#[derive(Debug, Clone, Copy)]
enum Named {
    Message(usize),
    Branch,
}

/// Reads the session file at `path`, named for session `id`, and lists its checkpoint blobs.
/// Like the file store's reader: a torn final line (a crash mid-write) is ignored, any other bad
/// line is an error naming it, and every `parent_id` and `tip` must name a message entry on an
/// earlier line.
pub(crate) fn parse_file(path: &Path, id: &str) -> Result<FsSession> {
    let bytes = std::fs::read(path).map_err(|e| Error::store(format!("importing {}", path.display()), e))?;
    let at = |line: usize| format!("{}:{line}", path.display());
    let corrupt = |line: usize, message: String| Error::CorruptSession {
        location: at(line),
        message,
    };
    // Everything after the last line end is a torn line that was never committed.
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        return Err(corrupt(1, "the file has no complete session header".to_owned()));
    };
    let committed = &bytes[..end];
    let mut lines = committed.split(|&b| b == b'\n');
    let header: Header = parse_line(lines.next().unwrap_or_default(), &at(1))?;
    if header.kind != "session" {
        return Err(corrupt(
            1,
            format!("line 1 is a {:?} line, not the session header", header.kind),
        ));
    }
    // Version 2 added the Responses API's reasoning blocks, which a message column holds as it
    // holds any other block, and the session tree (branch entries, the fork origin), which
    // `panto.branch_events` and the session row's `forked_from_*` columns hold. A version 1
    // file may hold branch entries too (appended by a later panto; its header is never
    // rewritten).
    if !(1..=2).contains(&header.version) {
        return Err(corrupt(
            1,
            format!(
                "unsupported session format version {}; this panto reads versions 1 to 2",
                header.version
            ),
        ));
    }
    if header.id != id {
        return Err(corrupt(
            1,
            format!(
                "the header says session {:?} but the file is named for {id:?}",
                header.id
            ),
        ));
    }
    if header.metadata.as_deref().is_some_and(|m| m.contains('\0')) {
        return Err(corrupt(
            1,
            "the metadata contains a NUL character (U+0000), which PostgreSQL text cannot store".to_owned(),
        ));
    }
    let forked_from = match header.forked_from {
        None => None,
        Some(fork) => {
            if validate_session_id(&fork.session).is_err() || fork.entry.is_empty() || fork.entry.contains('\0') {
                return Err(corrupt(
                    1,
                    format!(
                        "forked_from {{session: {:?}, entry: {:?}}} does not name a session and an entry",
                        fork.session, fork.entry
                    ),
                ));
            }
            Some(ForkOrigin {
                session: fork.session,
                entry: fork.entry,
            })
        }
    };

    let context = format!("importing {}", path.display());
    let created = ceil_micros(header.created);
    let mut rows: Vec<EntryRow> = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut events: Vec<EventRow> = Vec::new();
    // Every entry id, branch entries' included (ids are unique within a file), with its line.
    let mut by_id: HashMap<String, (usize, Named)> = HashMap::new();
    // The tip of the active branch as the file store tracks it: the last message entry, or
    // what the last branch entry names.
    let mut tip: Option<usize> = None;
    let mut modified = created;
    for (i, line) in lines.enumerate() {
        let number = i + 2;
        let entry: Entry = parse_line(line, &at(number))?;
        if let Some((first, _)) = by_id.get(&entry.id) {
            return Err(corrupt(
                number,
                format!("duplicate entry id {:?} (first used on line {first})", entry.id),
            ));
        }
        let message_entry = |field: &str, named: &str| match by_id.get(named) {
            Some((_, Named::Message(row))) => Ok(*row),
            Some((_, Named::Branch)) => Err(corrupt(
                number,
                format!("{field} {named:?} names a branch entry, not a message"),
            )),
            None => Err(corrupt(number, format!("{field} {named:?} names no earlier entry"))),
        };
        let parent = entry
            .parent_id
            .as_deref()
            .map(|p| message_entry("parent_id", p))
            .transpose()?;
        let ts = ceil_micros(entry.timestamp);
        modified = ts;
        let entries_before = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        match entry.kind.as_str() {
            "message" => {
                let Some(message) = entry.message else {
                    return Err(corrupt(number, "a message entry carries no `message`".to_owned()));
                };
                let (message_json, message_raw) = message_columns(&context, &message)?;
                let usage = entry
                    .usage
                    .map(|u| serde_json::to_string(&u))
                    .transpose()
                    .map_err(|e| Error::store(format!("{context}: serialising usage"), e))?;
                let (a, b, c, d) = wire_columns(&context, entry.wire.as_ref())?;
                let compaction_tokens = entry
                    .compaction
                    .as_ref()
                    .map(|c| {
                        Ok::<_, Error>((
                            bigint(&context, "tokens_before", c.tokens_before)?,
                            bigint(&context, "tokens_after", c.tokens_after)?,
                        ))
                    })
                    .transpose()?;
                let row = EntryRow {
                    seq: entries_before,
                    id: entry.id.clone(),
                    parent_id: entry.parent_id,
                    ts,
                    role: role_str(message.role),
                    message: message_json,
                    message_raw,
                    usage,
                    wire: (a, b.map(str::to_owned), c.map(str::to_owned), d),
                    compaction_first_kept: entry.compaction.and_then(|c| c.first_kept),
                    compaction_tokens,
                    tool_hashes: None,
                };
                nodes.push(Node {
                    line: number,
                    parent,
                    prompt: message.is_human_prompt().then_some(message),
                    wire: entry.wire,
                });
                by_id.insert(entry.id, (number, Named::Message(rows.len())));
                tip = Some(rows.len());
                rows.push(row);
            }
            "branch" => {
                if entry.message.is_some() {
                    return Err(corrupt(number, "a branch entry carries a `message`".to_owned()));
                }
                let named = entry.tip.as_deref().map(|t| message_entry("tip", t)).transpose()?;
                let seq = |events: &Vec<EventRow>| i64::try_from(events.len()).unwrap_or(i64::MAX);
                let checkpoint = entry
                    .checkpoint
                    .map(|c| checkpoint_record(c).map_err(|message| corrupt(number, message)))
                    .transpose()?;
                // A file change belongs to the tip it names and does not move the tip in
                // PostgreSQL; in the file store its line is also a switch to that tip. A record
                // the file store wrote always keeps the tip, but one that names another entry
                // moves it there, so it is imported as a switch followed by the change.
                if checkpoint.is_none() || named != tip {
                    events.push(EventRow {
                        seq: seq(&events),
                        entries_before,
                        ts,
                        tip: entry.tip.clone(),
                        checkpoint: None,
                    });
                }
                if let Some(record) = checkpoint {
                    events.push(EventRow {
                        seq: seq(&events),
                        entries_before,
                        ts,
                        tip: entry.tip,
                        checkpoint: Some(record),
                    });
                }
                by_id.insert(entry.id, (number, Named::Branch));
                tip = named;
            }
            other => {
                return Err(corrupt(
                    number,
                    format!("unknown entry type {other:?} (this panto reads \"message\" and \"branch\" entries)"),
                ));
            }
        }
    }

    // The active branch: its view must replay (the file store refuses to load it otherwise),
    // and the listing describes it.
    let mut active = Vec::new();
    let mut next = tip;
    while let Some(i) = next {
        active.push(i);
        // Parents name earlier lines (checked above), so this ends.
        next = nodes[i].parent;
    }
    active.reverse();
    let mut view: Vec<ViewEntry> = Vec::with_capacity(active.len());
    let mut info = SessionInfo::new(id, created);
    // What `SessionInfo::record` folds of a message that is not a human prompt: the count.
    let not_a_prompt = Message::new(Role::Assistant, Vec::new());
    for &i in &active {
        let row = &rows[i];
        let entry = ViewEntry {
            id: row.id.clone(),
            system: row.role == role_str(Role::System),
            seq: row.seq,
        };
        if row.compaction_tokens.is_some() {
            compact_recorded(&mut view, row.compaction_first_kept.as_deref(), entry)
                .map_err(|message| corrupt(nodes[i].line, message))?;
        } else {
            view.push(entry);
        }
        let node = &nodes[i];
        info.record(
            node.prompt.as_ref().unwrap_or(&not_a_prompt),
            node.wire.as_ref(),
            row.ts,
        );
    }
    // The listing's `modified` is the last line's time, as the file store lists it.
    info.modified = modified;
    info.forked_from = forked_from;
    let blobs = blob_files(&path.with_extension("blobs"))?;
    Ok(FsSession {
        path: path.to_owned(),
        id: id.to_owned(),
        info,
        metadata: header.metadata,
        cwd: header.cwd,
        rows,
        events,
        blobs,
    })
}

/// A file change as a record, checked as the file store checks it on reading (and as the
/// database's checks would, with a message naming the field).
fn checkpoint_record(c: FsCheckpoint) -> std::result::Result<CheckpointRecord, String> {
    if !c.path.starts_with('/') {
        return Err(format!("the checkpoint's path {:?} is not absolute", c.path));
    }
    if c.path.contains('\0') {
        return Err(format!(
            "the checkpoint's path {:?} contains a NUL character (U+0000), which PostgreSQL text cannot store",
            c.path
        ));
    }
    for address in c.before.iter().chain(&c.after) {
        if validate_checkpoint_address(address).is_err() {
            return Err(format!(
                "the checkpoint's address {address:?} is not 64 lowercase hex digits"
            ));
        }
    }
    Ok(CheckpointRecord {
        path: c.path,
        before: c.before,
        after: c.after,
        restore: c.restore,
    })
}

/// The checkpoint blobs in the blob directory `dir` (`<id>.blobs`), by address, sorted: every
/// entry named by a checkpoint address. Other names (`*.tmp`: a write a crash interrupted) are
/// never read by the file store and are left behind. No directory: no blobs.
fn blob_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let io = |e: std::io::Error| {
        Error::store(
            format!("importing: reading the checkpoint directory {}", dir.display()),
            e,
        )
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let mut blobs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io)?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if validate_checkpoint_address(&name).is_ok() {
            blobs.push((name, entry.path()));
        }
    }
    blobs.sort();
    Ok(blobs)
}

fn parse_line<T: serde::de::DeserializeOwned>(line: &[u8], location: &str) -> Result<T> {
    serde_json::from_slice(line).map_err(|e| Error::CorruptSession {
        location: location.to_owned(),
        message: format!("invalid line at column {}: {e}", e.column()),
    })
}
