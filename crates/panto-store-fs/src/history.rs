//! A session file read whole, every entry as it was written: what moving a session to another
//! store needs (`panto-store-postgres`'s import reads the file store through this, so the
//! format has one reader).
//!
//! It reads as `load` does: the file is opened as every session file is (never through a link,
//! never waiting on a FIFO, regular files only), scanned line by line with no line over
//! [`MAX_LINE`](crate::MAX_LINE) held, every line checked, every `parent_id` and `tip` followed
//! and the active branch's view replayed; then each message entry is read back in full. A torn
//! final line is skipped; any other bad line is [`Error::CorruptSession`](panto_core::Error)
//! naming the file and line.

use std::os::unix::fs::FileExt;
use std::path::Path;

use chrono::{DateTime, Utc};
use panto_core::store::{CheckpointRecord, ForkOrigin};
use panto_core::wire::ProviderIdentity;
use panto_core::{Message, Result, SessionInfo, Usage};

use crate::format::io_error;
use crate::format::{corrupt, line_location, parse_whole_entry, ForkOnDisk};
use crate::log::open_log;
use crate::read::checkpoint_record;

/// A session file read whole (see [`JsonlStore::session_file`](crate::JsonlStore::session_file)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionFile {
    /// The session id.
    pub id: String,
    /// When the session was created.
    pub created: DateTime<Utc>,
    /// The directory it was started in, as the header records it.
    pub cwd: Option<String>,
    /// The conversation's metadata bag.
    pub metadata: Option<String>,
    /// Where it was forked from, for a fork.
    pub forked_from: Option<ForkOrigin>,
    /// The listing of its active branch, as [`SessionStore::list`](panto_core::SessionStore::list)
    /// shows it.
    pub info: SessionInfo,
    /// Every entry, in file order, every branch included.
    pub entries: Vec<FileEntry>,
}

/// One entry line of a session file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileEntry {
    /// Its 1-based line number, for errors.
    pub line: usize,
    /// The entry id.
    pub id: String,
    /// The entry it follows (`None`: the empty start).
    pub parent_id: Option<String>,
    /// When it was written.
    pub timestamp: DateTime<Utc>,
    /// What it is.
    pub kind: FileEntryKind,
}

/// What an entry line holds.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FileEntryKind {
    /// A message.
    Message {
        /// The message.
        message: Message,
        /// The usage reported with it.
        usage: Option<Usage>,
        /// The provider and model it was sent with or came from.
        wire: Option<ProviderIdentity>,
        /// The compaction it records, on a compaction's summary.
        compaction: Option<FileCompaction>,
    },
    /// A branch entry: a switch of the active branch's tip, or a file change recorded at it.
    Branch {
        /// The message entry that becomes (or stays) the tip (`None`: the empty start).
        tip: Option<String>,
        /// The file change, checked (an absolute path, addresses that could be checkpoints).
        checkpoint: Option<CheckpointRecord>,
    },
}

/// A compaction as a session file records it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileCompaction {
    /// The first message kept, by entry id (`None`: none was kept).
    pub first_kept: Option<String>,
    /// The estimated tokens before.
    pub tokens_before: u64,
    /// The estimated tokens after.
    pub tokens_after: u64,
}

/// Reads session `id` whole from the file at `path`. `None` when there is no such file, or it is
/// empty (it then holds no session).
pub(crate) fn read_session_file(path: &Path, id: &str) -> Result<Option<SessionFile>> {
    let Some((file, log)) = open_log(path, id)? else {
        return Ok(None);
    };
    let info = log.info();
    let mut entries = Vec::with_capacity(log.entries.len());
    let mut buf = Vec::new();
    for logged in log.entries {
        let skeleton = logged.entry;
        let kind = if skeleton.is_message() {
            buf.resize(logged.len, 0);
            file.read_exact_at(&mut buf, logged.offset)
                .map_err(|e| io_error("reading", path, e))?;
            let location = line_location(path, logged.line);
            let whole = parse_whole_entry(&buf, &location)?;
            // The line read back must be the line scanned.
            if whole.id != skeleton.id || whole.parent_id != skeleton.parent_id {
                return Err(corrupt(location, "the file changed while it was being read"));
            }
            FileEntryKind::Message {
                message: whole.message,
                usage: whole.usage,
                wire: whole.wire,
                compaction: skeleton.compaction.map(|c| FileCompaction {
                    first_kept: c.first_kept,
                    tokens_before: c.tokens_before,
                    tokens_after: c.tokens_after,
                }),
            }
        } else {
            FileEntryKind::Branch {
                tip: skeleton.tip,
                checkpoint: skeleton
                    .checkpoint
                    .map(|change| checkpoint_record(change, path, logged.line))
                    .transpose()?,
            }
        };
        entries.push(FileEntry {
            line: logged.line,
            id: skeleton.id,
            parent_id: skeleton.parent_id,
            timestamp: skeleton.timestamp,
            kind,
        });
    }
    Ok(Some(SessionFile {
        id: log.header.id,
        created: log.header.created,
        cwd: log.header.cwd,
        metadata: log.header.metadata,
        forked_from: log.header.forked_from.map(ForkOnDisk::into_origin),
        info,
        entries,
    }))
}
