//! [`JsonlStore`]: the directory of session files, the writer slots of the sessions it has open,
//! and the [`SessionStore`] implementation that hands each call to a blocking thread.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use async_trait::async_trait;
use chrono::Utc;
use panto_core::store::{sort_by_recency, validate_session_id, AppendSpan};
use panto_core::store::{CheckpointRecord, LoadedBranch, PersistentMessage, SessionTree, StoredCheckpoint};
use panto_core::store::{SearchHit, SearchQuery};
use panto_core::{Error, Result, SessionInfo, SessionStore};

use crate::batch::{BatchMessage, OwnedBatchMessage};
use crate::checkpoint;
use crate::commit::Durability;
use crate::fork::{fork_lines, write_fork};
use crate::format::corrupt;
use crate::format::io_error;
use crate::format::{CheckpointOnDisk, ForkOnDisk};
use crate::history::{self, SessionFile};
use crate::listing::{holds_no_session, read_info, read_info_with, Probes};
use crate::log::StampedLog;
use crate::read::{load_branch, load_checkpoints, load_tree};
use crate::writer::Writer;

/// Files in the session directory that could not be read as sessions, each with why: what
/// [`JsonlStore::list_with_problems`] reports beside the sessions it could read.
pub type UnreadableFiles = Vec<(PathBuf, Error)>;

/// The file name extension of session files.
pub(crate) const EXTENSION: &str = "jsonl";

/// A [`SessionStore`] keeping one append-only JSONL file per session in a directory.
///
/// See the [crate documentation](crate) for the guarantees and `docs/session-format.md` for the
/// format. Dropping the store closes its files and releases their locks.
pub struct JsonlStore {
    inner: Arc<Inner>,
}

/// A slot for one session's writer; `None` until the first append opens it, and again after a
/// failure that left the file's state unknown.
type WriterSlot = Arc<Mutex<Option<Writer>>>;

/// The state shared with the blocking threads that do the I/O.
struct Inner {
    dir: PathBuf,
    durability: Durability,
    /// The sessions this store has open for writing. The outer lock is held only to find a
    /// slot; each slot's lock serialises the appends to its session.
    writers: Mutex<HashMap<String, WriterSlot>>,
    /// The scan of the session loaded last, by id, kept for the writer that a resume opens next
    /// (its first append), which takes it when the file has not changed since: a resumed file is
    /// then read once, not twice. One at most, so memory stays bounded by one session's outline.
    loaded: Mutex<Option<(String, StampedLog)>>,
}

impl fmt::Debug for JsonlStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonlStore")
            .field("dir", &self.inner.dir)
            .field("durability", &self.inner.durability)
            .field("open_for_writing", &lock(&self.inner.writers).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The map of slots is plain data that a panic cannot leave half-updated; keep serving it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks a writer slot. A writer that was mid-append when a thread panicked may not match its
/// file any more, so it is dropped (releasing its lock) and the next append reopens the file.
fn lock_slot(slot: &Mutex<Option<Writer>>) -> MutexGuard<'_, Option<Writer>> {
    match slot.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            *guard = None;
            slot.clear_poison();
            guard
        }
    }
}

/// Runs blocking file I/O off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::store("session store worker", e))?
}

impl JsonlStore {
    /// A store over `dir`, syncing every append to disk. Nothing is created until the first
    /// append.
    pub fn new(dir: impl Into<PathBuf>) -> Arc<Self> {
        Self::with_durability(dir, Durability::default())
    }

    /// A store over `dir` with the given durability.
    pub fn with_durability(dir: impl Into<PathBuf>, durability: Durability) -> Arc<Self> {
        Arc::new(JsonlStore {
            inner: Arc::new(Inner {
                dir: dir.into(),
                durability,
                writers: Mutex::new(HashMap::new()),
                loaded: Mutex::new(None),
            }),
        })
    }

    /// The directory the sessions live in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The file that holds (or will hold) session `id`. [`Error::InvalidSessionId`] when `id`
    /// could not be a session id.
    pub fn session_path(&self, id: &str) -> Result<PathBuf> {
        validate_session_id(id)?;
        Ok(self.inner.path_of(id))
    }

    /// Stops writing session `id`: closes its file, which releases its lock at once, so another
    /// process (or store) can resume it. The next append through this store opens the file
    /// again (reading its log). Dropping the session's [`Agent`](panto_core::Agent) does the
    /// same without waiting; this is for a program that appends through
    /// [`Session`](panto_core::Session)s of its own. Call it when no append to the session is in flight: an append that
    /// races it still lands, in a file opened for that append alone.
    pub async fn release(&self, id: &str) -> Result<()> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        // An append in flight holds the slot's lock while it writes; wait for it off the async
        // threads.
        blocking(move || {
            inner.release(&id);
            Ok(())
        })
        .await
    }

    /// Releases every session this store writes (see [`JsonlStore::release`]).
    pub async fn release_all(&self) -> Result<()> {
        let inner = self.inner.clone();
        blocking(move || {
            let ids: Vec<String> = lock(&inner.writers).keys().cloned().collect();
            for id in ids {
                inner.release(&id);
            }
            Ok(())
        })
        .await
    }

    /// The session files in the directory, by session id, sorted; and the `*.jsonl` files whose
    /// names are not session ids, with why. No file is read: a file named for a session may
    /// still be empty (no session), damaged, or not a regular file. A directory that does not
    /// exist yet holds no sessions.
    pub async fn session_files(&self) -> Result<(Vec<(String, PathBuf)>, UnreadableFiles)> {
        let inner = self.inner.clone();
        blocking(move || {
            let (mut files, problems) = inner.session_files()?;
            files.sort();
            Ok((files, problems))
        })
        .await
    }

    /// Session `id` read whole, every entry of every branch as written (see [`SessionFile`]):
    /// what copying a session to another store needs. `None` when there is no such session. The
    /// file is read as [`SessionStore::load`] reads it: a bad line is
    /// [`Error::CorruptSession`] naming the file and line, and a file that is not a regular
    /// file (a link, a FIFO) is an error naming it.
    pub async fn session_file(&self, id: &str) -> Result<Option<SessionFile>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        blocking(move || history::read_session_file(&inner.path_of(&id), &id)).await
    }

    /// The addresses of the checkpoints kept for session `id`, sorted, whether or not a change
    /// record names them; [`SessionStore::get_checkpoint`] reads each. Names in the session's
    /// checkpoint directory that are not addresses (a write a crash interrupted leaves a
    /// `*.tmp`) are not listed.
    pub async fn checkpoint_addresses(&self, id: &str) -> Result<Vec<String>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        blocking(move || checkpoint::addresses(&inner.dir, &id)).await
    }

    /// Every session that could be read, newest first by [`SessionInfo::recency`], and every
    /// `*.jsonl` file that could not, with why, sorted by path.
    ///
    /// A bad file never fails the listing; only a directory that cannot be read does. A
    /// directory that does not exist yet holds no sessions.
    pub async fn list_with_problems(&self) -> Result<(Vec<SessionInfo>, UnreadableFiles)> {
        let inner = self.inner.clone();
        blocking(move || inner.scan_all()).await
    }
}

impl Inner {
    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.{EXTENSION}"))
    }

    /// The session ids named by the `*.jsonl` files in the directory, with their paths; files
    /// whose names are not session ids are returned apart.
    fn session_files(&self) -> Result<(Vec<(String, PathBuf)>, UnreadableFiles)> {
        let mut sessions = Vec::new();
        let mut problems = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((sessions, problems)),
            Err(e) => return Err(io_error("listing", &self.dir, e)),
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    problems.push((self.dir.clone(), io_error("listing", &self.dir, e)));
                    continue;
                }
            };
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
                continue;
            }
            match path.file_stem().and_then(|s| s.to_str()) {
                Some(stem) if validate_session_id(stem).is_ok() => sessions.push((stem.to_owned(), path)),
                _ => {
                    let location = path.display().to_string();
                    problems.push((
                        path,
                        corrupt(location, "the file name is not a session id (lowercase hex and `-`)"),
                    ));
                }
            }
        }
        Ok((sessions, problems))
    }

    fn scan_all(&self) -> Result<(Vec<SessionInfo>, UnreadableFiles)> {
        let (files, mut problems) = self.session_files()?;
        let mut infos = Vec::with_capacity(files.len());
        let mut probes = Probes::default();
        for (id, path) in files {
            match read_info_with(&path, &id, &mut probes) {
                Ok(Some(info)) => infos.push(info),
                Ok(None) => {}
                Err(e) => problems.push((path, e)),
            }
        }
        sort_by_recency(&mut infos);
        problems.sort_by(|a, b| a.0.cmp(&b.0));
        Ok((infos, problems))
    }

    /// The ids of the session files whose names start with `prefix`. File names only, and a
    /// `stat` of each match: no session file is read.
    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let (files, _) = self.session_files()?;
        Ok(files
            .into_iter()
            .filter(|(id, _)| id.starts_with(prefix))
            // An empty file is no session, so it cannot make a prefix ambiguous.
            .filter(|(_, path)| !holds_no_session(path))
            .map(|(id, _)| id)
            .collect())
    }

    /// The listing info of session `id` from its own file alone, without listing the directory.
    fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        let path = self.path_of(id);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => read_info(&path, id),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error("opening", &path, e)),
        }
    }

    fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        let Some((branch, scanned)) = load_branch(&self.path_of(id), id)? else {
            return Ok(None);
        };
        *lock(&self.loaded) = Some((id.to_owned(), scanned));
        Ok(Some(branch))
    }

    /// The scan the last load left for session `id`, if it was of `id`.
    fn take_loaded(&self, id: &str) -> Option<StampedLog> {
        let mut loaded = lock(&self.loaded);
        match loaded.take() {
            Some((loaded_id, scanned)) if loaded_id == id => Some(scanned),
            other => {
                *loaded = other;
                None
            }
        }
    }

    /// Runs `f` on session `id`'s writer, opening it (and taking the session's lock) if needed.
    fn with_writer<T>(&self, id: &str, f: impl FnOnce(&mut Writer) -> Result<T>) -> Result<T> {
        let slot = lock(&self.writers).entry(id.to_owned()).or_default().clone();
        let mut guard = lock_slot(&slot);
        let writer = match &mut *guard {
            Some(writer) => writer,
            empty => empty.insert(Writer::open(&self.dir, id, self.durability, self.take_loaded(id))?),
        };
        let result = f(writer);
        if writer.broken {
            *guard = None;
        }
        result
    }

    fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        // Only an existing session can switch: opening a writer would create the file.
        if self.info(id)?.is_none() {
            return Err(Error::SessionNotFound(id.to_owned()));
        }
        self.with_writer(id, |writer| writer.switch_branch(tip, Utc::now(), self.durability))
    }

    fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        // Only an existing session takes a record: opening a writer would create the file. Only
        // whether the file exists is asked: reading the session (`info`) would cost the whole
        // file on every change a tool makes, and could meet a line that another call of the same
        // turn is appending at that moment (parallel `write` and `edit` failed that way).
        let path = self.path_of(id);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Error::SessionNotFound(id.to_owned())),
            Err(e) => return Err(io_error("opening", &path, e)),
        }
        let change = CheckpointOnDisk {
            path: record.path.clone(),
            before: record.before.clone(),
            after: record.after.clone(),
            restore: record.restore,
        };
        self.with_writer(id, |writer| {
            writer.record_checkpoint(&change, Utc::now(), self.durability)
        })
    }

    fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        let source = fork_lines(&self.path_of(from), from, at)?;
        // The checkpoints the carried file changes name go first, so that once the fork exists a
        // rewind with files finds them. Each is read back checked against its address.
        for change in &source.changes {
            for address in change.checkpoint.before.iter().chain(&change.checkpoint.after) {
                if let Some(content) = checkpoint::get(&self.dir, from, address)? {
                    checkpoint::put(&self.dir, new_id, &content)?;
                }
            }
        }
        let origin = ForkOnDisk {
            session: from.to_owned(),
            entry: at.to_owned(),
        };
        write_fork(&self.dir, new_id, &origin, &source, Utc::now(), self.durability)?;
        // Hold the fork's lock from now on, as after any first append.
        self.with_writer(new_id, |_| Ok(()))
    }

    /// Closes session `id`'s writer, if open, and forgets its slot. The slot stays locked
    /// until it is out of the map, so an append waiting on it finds no writer and opens the file
    /// for itself.
    fn release(&self, id: &str) {
        let Some(slot) = lock(&self.writers).get(id).cloned() else {
            return;
        };
        let mut guard = lock_slot(&slot);
        *guard = None;
        let mut writers = lock(&self.writers);
        if writers.get(id).is_some_and(|current| Arc::ptr_eq(current, &slot)) {
            writers.remove(id);
        }
    }

    /// Lets go of session `id`'s writer without waiting: the slot leaves the map, and the writer
    /// (the open, locked file) is closed now if no append holds it, else when that append ends.
    fn release_now(&self, id: &str) {
        let Some(slot) = lock(&self.writers).remove(id) else {
            return;
        };
        if let Ok(mut guard) = slot.try_lock() {
            *guard = None;
        };
    }

    /// Appends on the caller's thread when that is cheaper than handing the batch to a blocking
    /// thread: without fsync, to a session this store already has open, whose writer is free.
    /// The append is then one `write` into the page cache, a few microseconds, while the hand-off
    /// costs two thread wake-ups and a copy of the batch. `None` when any of that does not hold.
    fn try_append_here(
        &self,
        id: &str,
        batch: &[BatchMessage<'_>],
        metadata: Option<&str>,
    ) -> Option<Result<Vec<String>>> {
        if self.durability != Durability::None {
            return None;
        }
        let slot = lock(&self.writers).get(id)?.clone();
        let mut guard = match slot.try_lock() {
            Ok(guard) => guard,
            // Busy, or poisoned (which `lock_slot` repairs): the blocking path handles both.
            Err(TryLockError::WouldBlock | TryLockError::Poisoned(_)) => return None,
        };
        let writer = guard.as_mut()?;
        let result = writer.append(batch, metadata, Utc::now(), self.durability);
        if writer.broken {
            *guard = None;
        }
        Some(result)
    }

    fn append(&self, id: &str, batch: &[BatchMessage<'_>], metadata: Option<&str>) -> Result<Vec<String>> {
        self.with_writer(id, |writer| writer.append(batch, metadata, Utc::now(), self.durability))
    }
}

// `latest_info` is the default, the first of `list`: recency is the last human prompt, which
// only the files' contents say, so there is no shortcut past reading every session's ends.
#[async_trait]
impl SessionStore for JsonlStore {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        Ok(self.list_with_problems().await?.0)
    }

    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        blocking(move || inner.info(&id)).await
    }

    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_session_id(prefix)?;
        let inner = self.inner.clone();
        let prefix = prefix.to_owned();
        blocking(move || inner.ids_with_prefix(&prefix)).await
    }

    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        blocking(move || inner.load_branch(&id)).await
    }

    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        let tip = tip.map(str::to_owned);
        blocking(move || inner.switch_branch(&id, tip.as_deref())).await
    }

    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        validate_session_id(from)?;
        validate_session_id(new_id)?;
        let inner = self.inner.clone();
        let (from, at, new_id) = (from.to_owned(), at.to_owned(), new_id.to_owned());
        blocking(move || inner.fork(&from, &at, &new_id)).await
    }

    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let (id, content) = (id.to_owned(), content.to_vec());
        blocking(move || checkpoint::put(&inner.dir, &id, &content)).await
    }

    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let (id, address) = (id.to_owned(), address.to_owned());
        blocking(move || checkpoint::get(&inner.dir, &id, &address)).await
    }

    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let (id, record) = (id.to_owned(), record.clone());
        blocking(move || inner.record_checkpoint(&id, &record)).await
    }

    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        blocking(move || load_checkpoints(&inner.path_of(&id), &id)).await
    }

    async fn tree(&self, id: &str) -> Result<Option<SessionTree>> {
        validate_session_id(id)?;
        let inner = self.inner.clone();
        let id = id.to_owned();
        blocking(move || load_tree(&inner.path_of(&id), &id)).await
    }

    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        validate_session_id(id)?;
        // The provenance fields (`conversation`, `tools_available`) are not kept by this store.
        let batch: Vec<BatchMessage<'_>> = messages
            .iter()
            .map(|m| BatchMessage {
                message: m.message,
                usage: m.usage,
                wire: m.wire,
                compaction: m.compaction,
            })
            .collect();
        let metadata = messages.first().and_then(|m| m.conversation.metadata.as_deref());
        let span = AppendSpan::start("jsonl", id, batch.len());
        if let Some(result) = span
            .span()
            .in_scope(|| self.inner.try_append_here(id, &batch, metadata))
        {
            return span.finish(result);
        }
        // Opening a session reads its log, and fsync waits for the disk: both run on a blocking
        // thread, so the batch is copied to move there.
        let owned: Vec<OwnedBatchMessage> = batch.into_iter().map(OwnedBatchMessage::of).collect();
        let metadata = metadata.map(str::to_owned);
        let inner = self.inner.clone();
        let id = id.to_owned();
        // The worker thread records into the span through the caller's subscriber.
        let worker_span = span.span().clone();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let result = blocking(move || {
            let batch: Vec<BatchMessage<'_>> = owned.iter().map(OwnedBatchMessage::borrow).collect();
            tracing::dispatcher::with_default(&dispatch, || {
                worker_span.in_scope(|| inner.append(&id, &batch, metadata.as_deref()))
            })
        })
        .await;
        span.finish(result)
    }

    /// Streams every session file with ripgrep's searcher and decodes only the lines that could
    /// match (see `search.rs`), on as many threads as the machine has cores.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        // A malformed pattern is reported before any file is touched.
        query.matcher()?;
        let inner = self.inner.clone();
        let query = query.clone();
        blocking(move || {
            let (files, _) = inner.session_files()?;
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            crate::search::search_files(files, &query, threads)
        })
        .await
    }

    /// Closes the session's file (releasing its lock) when its agent is dropped; an append still
    /// in flight (a cancelled turn's) closes it when it ends.
    fn release_writer(&self, id: &str) {
        self.inner.release_now(id);
    }
}

#[cfg(test)]
mod tests {
    use panto_core::{ContentBlock, Message, Role};

    use super::*;
    use crate::log::SCANS;

    fn user(text: &str) -> Message {
        Message::new(Role::User, vec![ContentBlock::text(text)])
    }

    fn append(store: &JsonlStore, id: &str, text: &str) {
        let message = user(text);
        let batch = [BatchMessage {
            message: &message,
            usage: None,
            wire: None,
            compaction: None,
        }];
        store.inner.append(id, &batch, None).expect("append");
    }

    fn texts(store: &JsonlStore, id: &str) -> Vec<String> {
        let branch = store.inner.load_branch(id).expect("load").expect("the session exists");
        branch.conversation.messages.iter().map(Message::text).collect()
    }

    fn scans() -> usize {
        SCANS.with(std::cell::Cell::get)
    }

    #[test]
    fn a_resumed_session_is_read_once_for_its_load_and_its_next_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = "0190ab";
        let store = JsonlStore::with_durability(dir.path(), Durability::None);
        append(&store, id, "first");
        store.inner.release(id);

        let resumed = JsonlStore::with_durability(dir.path(), Durability::None);
        let before = scans();
        assert_eq!(texts(&resumed, id), ["first"]);
        append(&resumed, id, "second");
        assert_eq!(
            scans() - before,
            1,
            "the load's scan is the writer's: the file is read once"
        );
        // The append chained onto the loaded tip.
        assert_eq!(texts(&resumed, id), ["first", "second"]);
    }

    #[test]
    fn a_file_changed_between_the_load_and_the_lock_is_read_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = "0190ac";
        let store = JsonlStore::with_durability(dir.path(), Durability::None);
        append(&store, id, "first");
        store.inner.release(id);

        let resumed = JsonlStore::with_durability(dir.path(), Durability::None);
        assert_eq!(texts(&resumed, id), ["first"]);
        // Another process appends before this one takes the lock.
        append(&store, id, "elsewhere");
        store.inner.release(id);
        let before = scans();
        append(&resumed, id, "second");
        assert_eq!(scans() - before, 1, "the changed file is scanned under the lock");
        assert_eq!(texts(&resumed, id), ["first", "elsewhere", "second"]);
    }
}
