//! [`PostgresStore`]: the connection pool, the group-commit writer, the session locks and the
//! per-session writer slots, and the [`SessionStore`] implementation over them.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use panto_core::store::{validate_session_id, AppendSpan};
use panto_core::store::{CheckpointRecord, LoadedBranch, PersistentMessage, SessionTree, StoredCheckpoint};
use panto_core::store::{SearchHit, SearchQuery};
use panto_core::{Error, Result, SessionInfo, SessionStore};
use tokio::sync::OwnedMutexGuard;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Config, Row};
use tracing::Instrument;

use crate::db::{self, pg};
use crate::lock::Locker;
use crate::pool::{describe, Conn, Pool};
use crate::read::{self, HistoryEntry, ToolManifest};
use crate::tls::Target;
use crate::tools::ToolHash;
use crate::writer::{self, CommitError, OpenSession};
use crate::{batch, branch, checkpoint, import, migrate};

/// How a [`PostgresStore`] connects.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The most connections the store opens for reads and appends (the connection that holds
    /// its session locks comes on top). Default 8.
    pub pool_size: usize,
    /// The most append statements the store runs at once, each on a connection of the pool.
    /// Appends are written together: each statement writes every append waiting when it starts,
    /// whatever their sessions (a group commit; see `docs/stores.md`). Fewer statements make
    /// bigger batches and cost the database less CPU per append; more overlap the commits' waits.
    /// Default 2, the best of 1 to 4 with the database on the same two cores as a thousand
    /// agents; a database on its own, bigger machine may take more. At least 1, at most
    /// `pool_size` in effect.
    pub appends_in_flight: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: 8,
            appends_in_flight: 2,
        }
    }
}

/// What the store knows of one session it writes: its lock and its open state.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The generation of the lock connection that took the session's lock; `None` when this
    /// store does not hold it.
    lock: Option<u64>,
    /// The open session, while it is known to match the database.
    open: Option<OpenSession>,
    /// Set when the slot was released and removed from the map; a task that waited on it
    /// looks the session up again.
    retired: bool,
}

type SlotRef = Arc<tokio::sync::Mutex<Slot>>;

/// A session's slot, locked: held by whoever writes the session, an append's until its batch's
/// outcome is known.
pub(crate) type SlotGuard = OwnedMutexGuard<Slot>;

/// A session this store is about to write: see [`PostgresStore::open_for_writing`].
struct Writing {
    slot: SlotGuard,
    open: OpenSession,
    /// Whether this store held the session's lock before.
    held: bool,
}

/// A [`SessionStore`] in a PostgreSQL database. See the [crate documentation](crate).
///
/// Connections are opened on the Tokio runtime that calls [`PostgresStore::connect`]; use the
/// store on that runtime. Dropping the store closes its connections, which releases its session
/// locks once the server sees them close (within milliseconds); [`PostgresStore::release_all`]
/// releases them at once.
pub struct PostgresStore {
    config: Config,
    pool: Arc<Pool>,
    /// Writes the appends, many sessions' at a time (`batch.rs`).
    batcher: batch::Batcher,
    /// Shared with the tasks that release a dropped agent's lock (`release_writer`).
    locker: Arc<Locker>,
    /// This store's fencing token (see `writer.rs`).
    token: String,
    /// Sessions this store writes. The outer lock is held only to find a slot; each slot's lock
    /// serialises the appends to its session.
    slots: Mutex<HashMap<String, SlotRef>>,
    /// Tools this store has seen committed to `panto.tools`; they are not sent again.
    known_tools: Mutex<HashSet<ToolHash>>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &describe(&self.config))
            .field("open_for_writing", &lock(&self.slots).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps are plain data that a panic cannot leave half-updated; keep serving them.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PostgresStore {
    /// Connects to the database at `url` (a `postgres://user:password@host:port/dbname` URL or
    /// a `host=… dbname=…` string) and brings the schema up to date. `sslmode=require` (or
    /// `verify-ca`, `verify-full`) connects over TLS with the server's certificate checked against
    /// `sslrootcert=FILE` (PEM) or the Mozilla roots; see `docs/stores.md`.
    pub async fn connect(url: &str) -> Result<Arc<Self>> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`PostgresStore::connect`] with options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Arc<Self>> {
        let target = Target::parse(url)?;
        let config = target.config.clone();
        let mut conn = Conn::connect(&target).await?;
        migrate::migrate(&mut conn.client).await?;
        let pool = Arc::new(Pool::new(target.clone(), options.pool_size));
        pool.put(conn);
        let token = uuid::Uuid::now_v7().to_string();
        Ok(Arc::new(PostgresStore {
            locker: Arc::new(Locker::new(target)),
            config,
            batcher: batch::Batcher::start(
                pool.clone(),
                token.clone(),
                options.appends_in_flight.clamp(1, options.pool_size.max(1)),
            ),
            pool,
            token,
            slots: Mutex::new(HashMap::new()),
            known_tools: Mutex::new(HashSet::new()),
        }))
    }

    /// Stops writing session `id`: releases its lock at once, so another process (or store)
    /// can resume it. The next append through this store takes the lock again. A service that
    /// keeps one store for many requests calls this when it is done with a session.
    pub async fn release(&self, id: &str) -> Result<()> {
        validate_session_id(id)?;
        let slot = lock(&self.slots).get(id).cloned();
        if let Some(slot) = slot {
            self.retire(id, &slot).await;
        }
        Ok(())
    }

    /// Takes the lock of session `id` now, before this store's first append to it:
    /// [`Error::SessionInUse`] when another writer holds it. A service about to serve a session
    /// calls this to learn at once whether another instance writes it. The lock is then held as
    /// one taken by an append is: until the agent of the session is dropped,
    /// [`PostgresStore::release`], or the store is dropped.
    pub async fn claim(&self, id: &str) -> Result<()> {
        validate_session_id(id)?;
        // Opened now, while the lock's look-up says whether the session is stored (the
        // session's first append would otherwise look it up again).
        let mut writing = self.open_for_writing(id).await?;
        writing.slot.open = Some(writing.open);
        Ok(())
    }

    /// Releases every session this store writes (see [`PostgresStore::release`]).
    pub async fn release_all(&self) {
        let slots: Vec<(String, SlotRef)> = lock(&self.slots)
            .iter()
            .map(|(id, slot)| (id.clone(), slot.clone()))
            .collect();
        for (id, slot) in slots {
            self.retire(&id, &slot).await;
        }
        self.locker.unlock_all().await;
    }

    async fn retire(&self, id: &str, slot: &SlotRef) {
        let mut guard = slot.clone().lock_owned().await;
        self.retire_locked(id, &mut guard).await;
    }

    /// Releases the lock of session `id` (if this store holds it), forgets the session and
    /// takes its slot out of the map. The slot is still locked meanwhile, so a task waiting on
    /// it finds it retired and looks up a fresh one.
    async fn retire_locked(&self, id: &str, guard: &mut OwnedMutexGuard<Slot>) {
        if guard.retired {
            return;
        }
        if let Some(generation) = guard.lock.take() {
            self.locker.unlock(id, generation).await;
        }
        guard.open = None;
        guard.retired = true;
        let slot = OwnedMutexGuard::mutex(guard).clone();
        let mut slots = lock(&self.slots);
        if slots.get(id).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            slots.remove(id);
        }
    }

    /// The slot of session `id`, locked.
    async fn slot(&self, id: &str) -> OwnedMutexGuard<Slot> {
        loop {
            let slot = lock(&self.slots).entry(id.to_owned()).or_default().clone();
            let guard = slot.lock_owned().await;
            if !guard.retired {
                return guard;
            }
        }
    }

    /// Makes sure this store holds the lock of session `id`; [`Error::SessionInUse`] when
    /// another writer does. `Some(stored)` when the lock was taken now: whether the session
    /// was stored then (see [`writer::open`]).
    async fn ensure_locked(&self, id: &str, slot: &mut Slot) -> Result<Option<bool>> {
        if let Some(generation) = slot.lock {
            if self.locker.holds(generation) {
                return Ok(None);
            }
            // The lock connection was lost, and the lock with it: what this store knew of the
            // session may be stale.
            slot.lock = None;
            slot.open = None;
        }
        match self.locker.try_lock(id).await? {
            Some(taken) => {
                slot.lock = Some(taken.generation);
                Ok(Some(taken.stored))
            }
            None => Err(Error::SessionInUse { id: id.to_owned() }),
        }
    }

    /// Session `id`'s slot, locked, with this store holding the session's lock, and the
    /// session's open state taken out of the slot (rebuilt from the database when the slot had
    /// none). The caller puts the state back once its write commits. A store that cannot write
    /// the session (another writer has it, or the database cannot be reached) keeps nothing of
    /// it: on an error the slot is retired.
    async fn open_for_writing(&self, id: &str) -> Result<Writing> {
        let mut slot = self.slot(id).await;
        let held = slot.lock.is_some();
        let stored = match self.ensure_locked(id, &mut slot).await {
            Ok(stored) => stored,
            Err(e) => {
                self.retire_locked(id, &mut slot).await;
                return Err(e);
            }
        };
        let open = match slot.open.take() {
            Some(open) => open,
            None => match writer::open(&self.pool, id, &self.token, stored).await {
                Ok(open) => open,
                Err(e) => {
                    self.retire_locked(id, &mut slot).await;
                    return Err(e);
                }
            },
        };
        Ok(Writing { slot, open, held })
    }

    /// The full history of session `id`, oldest first, compactions and the messages they hid
    /// included; `None` when there is no such session.
    pub async fn history(&self, id: &str) -> Result<Option<Vec<HistoryEntry>>> {
        validate_session_id(id)?;
        read::history(&self.pool, id).await
    }

    /// The tools the model was offered with entry `entry_id` of session `session_id` (as
    /// [`HistoryEntry::id`] names it), reconstructed with the [`AUDIT_QUERY`](crate::AUDIT_QUERY); `None` when there
    /// is no such entry.
    pub async fn tools_offered(&self, session_id: &str, entry_id: &str) -> Result<Option<ToolManifest>> {
        validate_session_id(session_id)?;
        read::tools_offered(&self.pool, session_id, entry_id).await
    }

    /// The server process id of the connection holding this store's session locks, if it is
    /// open: what `pg_locks.pid` shows for them.
    pub async fn lock_backend_pid(&self) -> Result<Option<i32>> {
        self.locker.backend_pid().await
    }

    /// Writes an imported session under its lock; `false` when the database already holds it.
    /// A session another writer has open is the file's problem, not the import's.
    pub(crate) async fn import_session(
        &self,
        session: &import::FsSession,
        files: &panto_store_fs::JsonlStore,
    ) -> Result<bool, import::Refused> {
        let id = session.id.as_str();
        let mut slot = self.slot(id).await;
        let held = slot.lock.is_some();
        if let Err(e) = self.ensure_locked(id, &mut slot).await {
            self.retire_locked(id, &mut slot).await;
            return Err(match e {
                Error::SessionInUse { .. } => import::Refused::File(e),
                e => import::Refused::Database(e),
            });
        }
        let result = import::write(&self.pool, session, files).await;
        if held {
            // What this store knew of the session may predate the import.
            slot.open = None;
        } else {
            self.retire_locked(id, &mut slot).await;
        }
        result
    }
}

impl PostgresStore {
    /// Appends the branch event `event` to session `id` under its lock, as an append does.
    /// [`Error::SessionNotFound`] when the session is not stored (nothing is then created).
    async fn branch_event(&self, id: &str, context: String, event: branch::Event<'_>) -> Result<()> {
        let Writing {
            mut slot,
            mut open,
            held,
        } = self.open_for_writing(id).await?;
        if !open.exists {
            if held {
                slot.open = Some(open);
            } else {
                // This store took the lock only to find there is no session: let it go.
                self.retire_locked(id, &mut slot).await;
            }
            return Err(Error::SessionNotFound(id.to_owned()));
        }
        let committed = branch::commit_event(&self.pool, &context, &mut open, &self.token, event).await;
        self.settle(id, &mut slot, open, committed).await
    }

    /// Settles a write to session `id` by its outcome `committed`: a committed write puts
    /// `open` back into the slot; a store another one fenced out lets the session go. Otherwise
    /// `open` is dropped and the next write rebuilds it from the database.
    async fn settle(
        &self,
        id: &str,
        slot: &mut SlotGuard,
        open: OpenSession,
        committed: Result<(), CommitError>,
    ) -> Result<()> {
        match committed {
            Ok(()) => {
                slot.open = Some(open);
                Ok(())
            }
            Err(CommitError::Fenced) => {
                self.retire_locked(id, slot).await;
                Err(Error::SessionInUse { id: id.to_owned() })
            }
            Err(CommitError::Gone) => Err(Error::SessionNotFound(id.to_owned())),
            Err(CommitError::Failed(e)) => Err(e),
        }
    }

    /// [`SessionStore::append`], in its span `span`.
    async fn append_traced(
        &self,
        id: &str,
        messages: &[PersistentMessage<'_>],
        span: &tracing::Span,
    ) -> Result<Vec<String>> {
        let context = format!("appending to session {id}");
        let Writing { slot, mut open, .. } = self.open_for_writing(id).await?;
        // From here on `open` is put back only if the batch commits: a failed batch leaves the
        // slot empty, and the next append rebuilds the state from the database.
        let staged = writer::stage(&mut open, &context, messages, db::now())?;
        if !span.is_disabled() {
            AppendSpan::record_bytes(span, staged.bytes());
        }
        let ids: Vec<String> = staged.rows.iter().map(|row| row.id.clone()).collect();
        let tools: Vec<ToolHash> = staged.tools.keys().copied().collect();
        let append = batch::Append::new(context, &open, staged, |h| lock(&self.known_tools).contains(h))?;
        let started = std::time::Instant::now();
        let written = self.batcher.write(append, slot).await;
        AppendSpan::record_commit(span, started.elapsed());
        // Without its slot back (the writer task is gone) the slot was dropped with `open` out
        // of it: the session's next append rebuilds it from the database.
        let (mut slot, committed) = written?;
        if committed.is_ok() {
            lock(&self.known_tools).extend(tools);
            open.exists = true;
        }
        self.settle(id, &mut slot, open, committed).await?;
        Ok(ids)
    }

    /// The rows `query` returns, on a connection of the pool (prepared there once); `doing`
    /// names the work in an error.
    async fn rows(
        &self,
        query: &'static str,
        params: &[&(dyn ToSql + Sync)],
        doing: impl Into<String>,
    ) -> Result<Vec<Row>> {
        let mut conn = self.pool.get().await?;
        let doing = doing.into();
        let statement = conn.statement(query).await.map_err(|e| pg(doing.clone(), e))?;
        conn.client.query(&statement, params).await.map_err(|e| pg(doing, e))
    }
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        let rows = self.rows(read::LIST, &[], "listing sessions").await?;
        rows.iter().map(read::info_from_row).collect()
    }

    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        validate_session_id(id)?;
        let rows = self.rows(read::BY_ID, &[&id], format!("reading session {id}")).await?;
        rows.first().map(read::info_from_row).transpose()
    }

    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_session_id(prefix)?;
        let doing = format!("finding the sessions whose id starts with {prefix:?}");
        let rows = self.rows(read::IDS_BY_PREFIX, &[&prefix], doing).await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn latest_info(&self) -> Result<Option<SessionInfo>> {
        let rows = self.rows(read::LATEST, &[], "finding the latest session").await?;
        rows.first().map(read::info_from_row).transpose()
    }

    /// Served by the trigram indexes of schema version 4 (see `search.rs`).
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        crate::search::search(&self.pool, query).await
    }

    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        validate_session_id(id)?;
        read::load(&self.pool, id).await
    }

    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        validate_session_id(id)?;
        // The span covers the whole append: waiting for the session's slot, taking its lock,
        // rebuilding its state after a failure, staging and the transaction.
        let span = AppendSpan::start("postgres", id, messages.len());
        let result = self
            .append_traced(id, messages, span.span())
            .instrument(span.span().clone())
            .await;
        span.finish(result)
    }

    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        validate_session_id(id)?;
        let context = format!("switching the branch of session {id}");
        self.branch_event(id, context, branch::Event::Switch(tip)).await
    }

    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        validate_session_id(from)?;
        validate_session_id(new_id)?;
        branch::fork(&self.pool, from, at, new_id).await
    }

    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String> {
        validate_session_id(id)?;
        checkpoint::put(&self.pool, id, content).await
    }

    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
        validate_session_id(id)?;
        checkpoint::get(&self.pool, id, address).await
    }

    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        validate_session_id(id)?;
        let context = format!("recording a change of {:?} in session {id}", record.path);
        self.branch_event(id, context, branch::Event::Checkpoint(record)).await
    }

    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>> {
        validate_session_id(id)?;
        read::checkpoints(&self.pool, id).await
    }

    async fn tree(&self, id: &str) -> Result<Option<SessionTree>> {
        validate_session_id(id)?;
        read::tree(&self.pool, id).await
    }

    /// Forgets the session and releases its advisory lock when its agent is dropped. The
    /// slot is retired at once; the unlock (a round trip on the lock connection) runs on a task
    /// of the current Tokio runtime. A slot busy with an append belongs to another writer of
    /// this store and is left alone, as is everything when no runtime is current (the lock then
    /// lasts until [`PostgresStore::release`] or the store is dropped).
    fn release_writer(&self, id: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(slot) = lock(&self.slots).get(id).cloned() else {
            return;
        };
        let Ok(mut guard) = slot.clone().try_lock_owned() else {
            return;
        };
        if guard.retired {
            return;
        }
        let generation = guard.lock.take();
        guard.open = None;
        guard.retired = true;
        {
            let mut slots = lock(&self.slots);
            if slots.get(id).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                slots.remove(id);
            }
        }
        drop(guard);
        if let Some(generation) = generation {
            // Session-level advisory locks stack: if this store takes the lock again before the
            // unlock runs, the unlock only takes back the earlier hold.
            let locker = Arc::clone(&self.locker);
            let id = id.to_owned();
            runtime.spawn(async move { locker.unlock(&id, generation).await });
        }
    }
}
