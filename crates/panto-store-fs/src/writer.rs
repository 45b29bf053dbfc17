//! The write side of one session: the locked file, the last entry id and the model's current view
//! as entry ids, and the all-or-nothing batch append.

use std::collections::HashSet;
use std::fs::{DirBuilder, File};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use fs4::fs_std::FileExt;
use panto_core::store::CompactionRecord;
use panto_core::store::{compact_view, AppendSpan, EntryIds};
use panto_core::{Error, Message, Result, Role, SessionInfo};

use crate::batch::BatchMessage;
use crate::commit::{commit_batch, CommitFailure, Durability};
use crate::format::io_error;
use crate::format::{
    Activity, ActivityOut, BranchOut, CheckpointOnDisk, CompactionOnDisk, EntryOut, HeaderOut, BRANCH_TYPE,
    HEADER_TYPE, MAX_LINE, MESSAGE_TYPE, VERSION,
};
use crate::log::{scan_log, ParsedLog, Scanned, StampedLog};
use crate::open::{check_regular, open_error, open_for_append, FileStamp};

/// The largest serialisation buffer a writer keeps for its next append.
const MAX_SCRATCH: usize = 1 << 20;

/// One message of the model's current view.
#[derive(Debug, Clone)]
struct ViewEntry {
    id: String,
    system: bool,
}

/// A session open for writing. Holds the exclusive advisory lock on its file for as long as it
/// lives.
#[derive(Debug)]
pub(crate) struct Writer {
    id: String,
    path: PathBuf,
    /// Opened for append, and locked.
    file: File,
    /// The file's device and inode number, which identify it for as long as it is open: an
    /// append compares them with what the path names now, without an `fstat` each time.
    identity: (u64, u64),
    /// The committed length: every byte before it is whole lines.
    len: u64,
    /// True until the header is written (a new file, or one whose only line was torn).
    needs_header: bool,
    /// The newest entry: the parent of the next one.
    last_id: Option<String>,
    /// The messages the model sees, by entry id, so a compaction's index maps to an id in O(1).
    view: Vec<ViewEntry>,
    /// Every entry id in the file, so new ids are unique within it.
    ids: HashSet<String>,
    /// Where new entry ids are drawn from.
    id_source: EntryIds,
    /// The activity as of the newest entry.
    info: SessionInfo,
    /// The buffer a batch is serialised into, kept between appends so that a steady stream of
    /// turns does not grow a new one each time.
    scratch: Vec<u8>,
    /// Set when the file's state is no longer known (a failed rollback, a vanished file); the
    /// store then drops this writer and reopens on the next append.
    pub broken: bool,
}

/// What an append undoes when its batch does not commit.
struct Undo {
    view_len: usize,
    view: Option<Vec<ViewEntry>>,
    last_id: Option<String>,
    info: SessionInfo,
    needs_header: bool,
    new_ids: Vec<String>,
}

impl Writer {
    /// Opens session `id` in `dir` for appending: creates the directory (0700) and file (0600) if
    /// needed, takes the lock, cuts a torn final line and rebuilds the state from the file.
    ///
    /// Only a regular file is opened, never through a link (see `open.rs`), and everything
    /// after (the read, the cut, the appends) goes through that one descriptor: a link planted
    /// in the directory cannot make an append or a repair touch another file.
    ///
    /// `scanned` is a scan of the file made before the lock was taken (by a load): it is taken
    /// instead of reading the file again only when the locked file's stamp (identity, length,
    /// change times) is still the one it was scanned at; otherwise the file is scanned anew.
    pub(crate) fn open(dir: &Path, id: &str, durability: Durability, scanned: Option<StampedLog>) -> Result<Writer> {
        let path = dir.join(format!("{id}.jsonl"));
        // The directory is created only when the open finds it missing: it is there for all
        // but a store's first session, and a `mkdir` of an existing directory still takes its
        // lock, against every other session being created in it.
        let file = match open_for_append(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| io_error("creating the session directory", dir, e))?;
                open_for_append(&path)
            }
            opened => opened,
        }
        .map_err(|e| open_error(&path, e))?;
        match FileExt::try_lock_exclusive(&file) {
            Ok(true) => {}
            Ok(false) => return Err(Error::SessionInUse { id: id.to_owned() }),
            Err(e) => return Err(io_error("locking", &path, e)),
        }
        // Checked once the lock is held, so that the length is the one as of holding it:
        // another writer may have appended before.
        let (mut file, meta) = check_regular(file, &path)?;
        let len = meta.len();
        // Read through the locked handle, so what is parsed is the file that is locked. Only the
        // entries' skeletons are needed to append: ids, roles, compactions and the activity. A
        // new session's file is empty: nothing to read (a fleet of new sessions paid a scan's
        // buffers for each).
        let log = if len == 0 {
            None
        } else if let Some(scanned) = scanned.filter(|s| s.stamp == FileStamp::of(&meta)) {
            Some(scanned.log)
        } else {
            file.seek(SeekFrom::Start(0))
                .map_err(|e| io_error("reading", &path, e))?;
            match scan_log(&file, &path, id)? {
                Scanned::Log(log) => Some(log),
                // Bytes but no whole header (a torn header write): start it again.
                Scanned::Empty | Scanned::TornHeader => None,
            }
        };
        if len == 0 && durability == Durability::Fsync {
            // A new session's name is an entry of the directory: until the directory is synced,
            // a power loss may drop the file with every append synced into it. Once per file,
            // before its first append.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_error("syncing the session directory", dir, e))?;
        }
        let committed = log.as_ref().map_or(0, |log| log.committed);
        if committed < len {
            // A torn final line: a crash mid-write. It was never committed, so cut it before
            // appending after it.
            file.set_len(committed)
                .map_err(|e| io_error("cutting the torn last line of", &path, e))?;
            if durability == Durability::Fsync {
                file.sync_data().map_err(|e| io_error("syncing", &path, e))?;
            }
        }

        let mut writer = Writer {
            id: id.to_owned(),
            path,
            file,
            identity: (meta.dev(), meta.ino()),
            len: committed,
            needs_header: committed == 0,
            last_id: None,
            view: Vec::new(),
            ids: HashSet::new(),
            id_source: EntryIds::new(),
            info: SessionInfo::new(id, Utc::now()),
            scratch: Vec::new(),
            broken: false,
        };
        if let Some(log) = log {
            writer.adopt(log);
        }
        Ok(writer)
    }

    /// Takes the state of a scanned log: the active branch's listing, view and tip, and every id.
    fn adopt(&mut self, log: ParsedLog) {
        self.info = log.info();
        self.view = log
            .view
            .iter()
            .map(|&i| ViewEntry {
                id: log.entries[i].entry.id.clone(),
                system: log.entries[i].entry.is_system(),
            })
            .collect();
        self.last_id = log.tip.map(|i| log.entries[i].entry.id.clone());
        self.ids = log.entries.into_iter().map(|e| e.entry.id).collect();
    }

    /// Reads the whole file again, from the descriptor this writer holds.
    fn rescan(&mut self) -> Result<Option<ParsedLog>> {
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| io_error("reading", &self.path, e))?;
        match scan_log(&self.file, &self.path, &self.id)? {
            Scanned::Log(log) => Ok(Some(log)),
            Scanned::Empty | Scanned::TornHeader => Ok(None),
        }
    }

    /// Appends a branch entry making message entry `tip` (`None`: the empty start) the tip of
    /// the active branch, and takes the new branch's state. All or nothing, like `append`.
    pub(crate) fn switch_branch(
        &mut self,
        tip: Option<&str>,
        now: DateTime<Utc>,
        durability: Durability,
    ) -> Result<()> {
        self.check_still_there()?;
        let Some(log) = self.rescan()? else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let activity = match tip {
            None => Activity::default(),
            Some(tip) => match log.entries.iter().find(|e| e.entry.id == tip && e.entry.is_message()) {
                Some(target) => target.entry.activity.clone(),
                None => {
                    return Err(Error::UnknownEntry {
                        session: self.id.clone(),
                        message: format!("it holds no message entry {tip:?}"),
                    })
                }
            },
        };
        let id = self.mint_id();
        let entry = BranchOut {
            kind: BRANCH_TYPE,
            id: &id,
            parent_id: self.last_id.as_deref(),
            tip,
            checkpoint: None,
            timestamp: now,
            activity: activity.out(),
        };
        let mut buf = Vec::new();
        crate::json::to_writer(&mut buf, &entry).map_err(|e| Error::store("serialising a branch entry", e))?;
        buf.push(b'\n');
        self.commit(&buf, durability)?;
        self.len += buf.len() as u64;
        let log = self.rescan()?.ok_or_else(|| Error::SessionNotFound(self.id.clone()))?;
        self.adopt(log);
        Ok(())
    }

    /// Appends a branch entry that keeps the tip and records the file change `checkpoint`,
    /// belonging to the tip. One line, synced per `durability`; all or nothing like `append`.
    /// The session must have been written already.
    pub(crate) fn record_checkpoint(
        &mut self,
        checkpoint: &CheckpointOnDisk,
        now: DateTime<Utc>,
        durability: Durability,
    ) -> Result<()> {
        self.check_still_there()?;
        if self.needs_header {
            return Err(Error::SessionNotFound(self.id.clone()));
        }
        let id = self.mint_id();
        let entry = BranchOut {
            kind: BRANCH_TYPE,
            id: &id,
            parent_id: self.last_id.as_deref(),
            tip: self.last_id.as_deref(),
            checkpoint: Some(checkpoint),
            timestamp: now,
            activity: ActivityOut::of(&self.info),
        };
        let mut buf = Vec::new();
        crate::json::to_writer(&mut buf, &entry).map_err(|e| Error::store("serialising a checkpoint entry", e))?;
        self.check_line_size(buf.len(), format_args!("the checkpoint entry"))?;
        buf.push(b'\n');
        self.commit(&buf, durability)?;
        self.len += buf.len() as u64;
        self.ids.insert(id);
        self.info.modified = now;
        Ok(())
    }

    /// Appends `batch` as one write of whole lines (after the header, for a new file), then
    /// syncs per `durability`, and returns the entry ids given to the batch's messages. All or
    /// nothing: on error the file is cut back to its previous length and the in-memory state is
    /// restored.
    pub(crate) fn append(
        &mut self,
        batch: &[BatchMessage<'_>],
        metadata: Option<&str>,
        now: DateTime<Utc>,
        durability: Durability,
    ) -> Result<Vec<String>> {
        self.check_still_there()?;
        let mut undo = Undo {
            view_len: self.view.len(),
            // A compaction rewrites the view rather than extending it; only then is a copy kept.
            view: batch.iter().any(|p| p.compaction.is_some()).then(|| self.view.clone()),
            last_id: self.last_id.clone(),
            info: self.info.clone(),
            needs_header: self.needs_header,
            new_ids: Vec::new(),
        };
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let committed = self
            .stage(&mut buf, batch, metadata, now, &mut undo.new_ids)
            .and_then(|()| self.commit(&buf, durability))
            .map(|()| buf.len());
        // A buffer grown by one huge batch is not kept.
        if buf.capacity() <= MAX_SCRATCH {
            self.scratch = buf;
        }
        match committed {
            Ok(n) => {
                self.len += n as u64;
                Ok(undo.new_ids)
            }
            Err(e) => {
                self.restore(undo);
                if self.len == 0 {
                    // Nothing was ever committed to this file: remove it, so a failed first
                    // append leaves no file (an empty one would be no session anyway). Best
                    // effort, and the next append opens the file afresh.
                    let _ = std::fs::remove_file(&self.path);
                    self.broken = true;
                }
                Err(e)
            }
        }
    }

    /// Serialises the batch into `buf` as whole lines, advancing the in-memory state.
    fn stage(
        &mut self,
        buf: &mut Vec<u8>,
        batch: &[BatchMessage<'_>],
        metadata: Option<&str>,
        now: DateTime<Utc>,
        new_ids: &mut Vec<String>,
    ) -> Result<()> {
        let serialise = |e: serde_json::Error| Error::store("serialising a session entry", e);
        if self.needs_header {
            let cwd = std::env::current_dir().ok();
            let header = HeaderOut {
                kind: HEADER_TYPE,
                version: VERSION,
                id: &self.id,
                created: now,
                cwd: cwd.as_deref().and_then(Path::to_str),
                metadata,
                forked_from: None,
            };
            let before = buf.len();
            crate::json::to_writer(buf, &header).map_err(serialise)?;
            self.check_line_size(buf.len() - before, format_args!("the session header"))?;
            buf.push(b'\n');
            self.info = SessionInfo::new(self.id.clone(), now);
            self.needs_header = false;
        }
        for (number, pending) in batch.iter().enumerate() {
            let id = self.mint_id();
            self.ids.insert(id.clone());
            new_ids.push(id.clone());
            let compaction = pending.compaction.map(|c| self.compact(&id, pending.message, &c));
            if compaction.is_none() {
                self.view.push(ViewEntry {
                    id: id.clone(),
                    system: pending.message.role == Role::System,
                });
            }
            self.info.record(pending.message, pending.wire, now);
            let entry = EntryOut {
                kind: MESSAGE_TYPE,
                id: &id,
                parent_id: self.last_id.as_deref(),
                timestamp: now,
                message: pending.message,
                usage: pending.usage,
                wire: pending.wire,
                compaction: compaction.as_ref(),
                activity: ActivityOut::of(&self.info),
            };
            let before = buf.len();
            crate::json::to_writer(buf, &entry).map_err(serialise)?;
            // What the line is, formatted only if it is refused.
            self.check_line_size(buf.len() - before, format_args!("message {} of the batch", number + 1))?;
            buf.push(b'\n');
            self.last_id = Some(id);
        }
        Ok(())
    }

    /// Refuses a line longer than [`MAX_LINE`]: no reader would read it back, so writing it
    /// would make the session fail to load.
    fn check_line_size(&self, len: usize, what: std::fmt::Arguments<'_>) -> Result<()> {
        if len <= MAX_LINE {
            return Ok(());
        }
        Err(Error::store(
            format!("appending to {}", self.path.display()),
            format!(
                "{what} would be a line of {len} bytes, over the maximum line size of {MAX_LINE} bytes; nothing \
                 of the batch was stored"
            ),
        ))
    }

    /// Applies a compaction whose summary is entry `id` to the view, and says how to record it:
    /// the index of the first kept message becomes that message's entry id.
    fn compact(&mut self, id: &str, summary: &Message, c: &CompactionRecord) -> CompactionOnDisk {
        // An index past the end keeps nothing (`compact_view` clamps it), as in `MemoryStore`.
        let first_kept = self.view.get(c.first_kept).map(|v| v.id.clone());
        let summary = ViewEntry {
            id: id.to_owned(),
            system: summary.role == Role::System,
        };
        compact_view(&mut self.view, c.first_kept, summary, |v| v.system);
        CompactionOnDisk {
            first_kept,
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
        }
    }

    /// A new entry id, unique within the file.
    fn mint_id(&mut self) -> String {
        self.id_source.next_unused(|id| self.ids.contains(id))
    }

    fn restore(&mut self, undo: Undo) {
        match undo.view {
            Some(view) => self.view = view,
            None => self.view.truncate(undo.view_len),
        }
        for id in &undo.new_ids {
            self.ids.remove(id);
        }
        self.last_id = undo.last_id;
        self.info = undo.info;
        self.needs_header = undo.needs_header;
    }

    /// Writes `buf` and syncs; on failure cuts the file back to its committed length.
    fn commit(&mut self, buf: &[u8], durability: Durability) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        AppendSpan::record_bytes(&tracing::Span::current(), buf.len());
        match commit_batch(&mut self.file, self.len, buf, durability) {
            Ok(()) => Ok(()),
            Err(CommitFailure { error, rollback }) => {
                if let Some(rollback) = rollback {
                    // The file may now hold part of the batch; its state is unknown.
                    self.broken = true;
                    return Err(Error::store(
                        format!(
                            "appending to {} failed ({error}) and cutting the partial batch off failed too",
                            self.path.display()
                        ),
                        rollback,
                    ));
                }
                Err(io_error("appending to", &self.path, error))
            }
        }
    }

    /// Fails with `SessionNotFound` when the file was deleted or replaced since it was opened
    /// (by another file, or by a link, even one to this file): appending to a file no longer at
    /// the session's path would lose the batch silently.
    fn check_still_there(&mut self) -> Result<()> {
        let same = match std::fs::symlink_metadata(&self.path) {
            Ok(on_disk) => (on_disk.dev(), on_disk.ino()) == self.identity,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io_error("checking", &self.path, e)),
        };
        if same {
            Ok(())
        } else {
            self.broken = true;
            Err(Error::SessionNotFound(self.id.clone()))
        }
    }
}
