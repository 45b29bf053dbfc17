//! The rows an imported session writes: a session the file store read whole
//! ([`panto_store_fs::SessionFile`], checked there: the format has one reader) turned into the
//! session row, entry rows and branch events of this store's schema. What PostgreSQL cannot hold
//! (a NUL character in text, a count over `bigint`) is refused here, naming the file and line.

use std::path::{Path, PathBuf};

use panto_core::store::validate_session_id;
use panto_core::{Error, Result, SessionInfo};
use panto_store_fs::{FileEntryKind, SessionFile};

use crate::db::{bigint, ceil_micros, wire_columns};
use crate::writer::{message_columns, role_str, EntryRow, NewSession};

/// One row of `panto.branch_events`, as an import writes it.
#[derive(Debug)]
pub(crate) struct EventRow {
    pub seq: i64,
    /// How many entries the session held when the event was recorded.
    pub entries_before: i64,
    pub ts: chrono::DateTime<chrono::Utc>,
    /// A switch: the entry that becomes the tip; a file change: the tip it belongs to.
    pub tip: Option<String>,
    /// Set on a file change.
    pub checkpoint: Option<panto_core::store::CheckpointRecord>,
}

/// A session of the file store, ready to be written to the database in one transaction.
#[derive(Debug)]
pub(crate) struct FsSession {
    /// The file, for errors.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// The listing of the active branch, as the file store lists it (times rounded up to the
    /// microsecond, as every time the database holds).
    pub info: SessionInfo,
    /// The conversation metadata.
    pub metadata: Option<String>,
    /// Where the session was started.
    pub cwd: Option<String>,
    /// The entry rows, every branch, in file order.
    pub rows: Vec<EntryRow>,
    /// The branch switches and file changes, in file order.
    pub events: Vec<EventRow>,
}

impl FsSession {
    /// The session row to insert.
    pub(crate) fn new_session(&self) -> NewSession<'_> {
        NewSession {
            info: &self.info,
            metadata: self.metadata.as_deref(),
            cwd: self.cwd.as_deref().filter(|c| !c.contains('\0')),
            writer: None,
        }
    }
}

/// The rows of `file`, the session read from `path`.
pub(crate) fn rows_of(path: &Path, file: SessionFile) -> Result<FsSession> {
    let corrupt = |line: usize, message: String| Error::CorruptSession {
        location: format!("{}:{line}", path.display()),
        message,
    };
    if file.metadata.as_deref().is_some_and(|m| m.contains('\0')) {
        return Err(corrupt(
            1,
            "the metadata contains a NUL character (U+0000), which PostgreSQL text cannot store".to_owned(),
        ));
    }
    if let Some(fork) = &file.forked_from {
        if validate_session_id(&fork.session).is_err() || fork.entry.is_empty() || fork.entry.contains('\0') {
            return Err(corrupt(
                1,
                format!(
                    "forked_from {{session: {:?}, entry: {:?}}} does not name a session and an entry",
                    fork.session, fork.entry
                ),
            ));
        }
    }
    let context = format!("importing {}", path.display());
    let mut rows: Vec<EntryRow> = Vec::new();
    let mut events: Vec<EventRow> = Vec::new();
    // The tip of the active branch as the file store tracks it: the last message entry, or what
    // the last branch entry names.
    let mut tip: Option<String> = None;
    for entry in file.entries {
        let ts = ceil_micros(entry.timestamp);
        let entries_before = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        match entry.kind {
            FileEntryKind::Message {
                message,
                usage,
                wire,
                compaction,
            } => {
                let (message_json, message_raw) = message_columns(&context, &message)?;
                let usage = usage
                    .map(|u| serde_json::to_string(&u))
                    .transpose()
                    .map_err(|e| Error::store(format!("{context}: serialising usage"), e))?;
                let (a, b, c, d) = wire_columns(&context, wire.as_ref())?;
                let compaction_tokens = compaction
                    .as_ref()
                    .map(|c| {
                        Ok::<_, Error>((
                            bigint(&context, "tokens_before", c.tokens_before)?,
                            bigint(&context, "tokens_after", c.tokens_after)?,
                        ))
                    })
                    .transpose()?;
                tip = Some(entry.id.clone());
                rows.push(EntryRow {
                    seq: entries_before,
                    id: entry.id,
                    parent_id: entry.parent_id,
                    ts,
                    role: role_str(message.role),
                    message: message_json,
                    message_raw,
                    usage,
                    wire: (a, b.map(str::to_owned), c.map(str::to_owned), d),
                    compaction_first_kept: compaction.and_then(|c| c.first_kept),
                    compaction_tokens,
                    tool_hashes: None,
                });
            }
            FileEntryKind::Branch { tip: named, checkpoint } => {
                if let Some(record) = &checkpoint {
                    if record.path.contains('\0') {
                        return Err(corrupt(
                            entry.line,
                            format!(
                                "the checkpoint's path {:?} contains a NUL character (U+0000), which PostgreSQL text \
                                 cannot store",
                                record.path
                            ),
                        ));
                    }
                }
                let seq = |events: &Vec<EventRow>| i64::try_from(events.len()).unwrap_or(i64::MAX);
                // A file change belongs to the tip it names and does not move the tip in
                // PostgreSQL; in the file store its line is also a switch to that tip. A record
                // the file store wrote always keeps the tip, but one that names another entry
                // moves it there, so it is imported as a switch followed by the change.
                if checkpoint.is_none() || named != tip {
                    events.push(EventRow {
                        seq: seq(&events),
                        entries_before,
                        ts,
                        tip: named.clone(),
                        checkpoint: None,
                    });
                }
                if let Some(record) = checkpoint {
                    events.push(EventRow {
                        seq: seq(&events),
                        entries_before,
                        ts,
                        tip: named.clone(),
                        checkpoint: Some(record),
                    });
                }
                tip = named;
            }
            // A kind of entry a later file store reads and this import does not know.
            _ => {
                return Err(corrupt(
                    entry.line,
                    "an entry of a kind this panto cannot import".to_owned(),
                ))
            }
        }
    }
    let mut info = file.info;
    info.created = ceil_micros(info.created);
    info.modified = ceil_micros(info.modified);
    info.last_prompt_at = info.last_prompt_at.map(ceil_micros);
    Ok(FsSession {
        path: path.to_owned(),
        id: file.id,
        info,
        metadata: file.metadata,
        cwd: file.cwd,
        rows,
        events,
    })
}
