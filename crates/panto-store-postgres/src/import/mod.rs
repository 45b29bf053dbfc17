//! Moving sessions from the file store into PostgreSQL.
//!
//! [`import_fs`] reads a `panto-store-fs` directory through the file store itself
//! ([`JsonlStore::session_file`], the format's one reader, with its bounds: no link followed,
//! no FIFO waited on, no line over [`MAX_LINE`](panto_store_fs::MAX_LINE) held) and copies each
//! session, with its full history, into the database: entry ids, parent ids, timestamps
//! (rounded up to the microsecond), usage, provider identities and compaction records, and the
//! session tree: every branch, the branch switches, the file-change records, the checkpoint
//! blobs beside the file (each read as the file store reads it: bounded, and checked against its
//! address) and the fork origin. So the imported session lists, loads, draws its tree and lists
//! its file changes as it did from the files. The file store does not record the tools offered,
//! so imported entries have no tool manifest
//! ([`ToolManifest::NotRecorded`](crate::ToolManifest::NotRecorded)).
//!
//! Reading goes through the file store's own API rather than the [`SessionStore`] trait: the
//! trait's `append` mints new entry ids and times, while an import keeps the history as it was.

mod rows;

use std::path::{Path, PathBuf};

use panto_core::{Error, Result, SessionStore};
use panto_store_fs::{Durability, JsonlStore};

use crate::branch::INSERT_EVENT;
use crate::checkpoint::PUT;
use crate::db::pg;
use crate::pool::Pool;
use crate::writer::{insert_entries, insert_session, INSERT_ENTRY};
use crate::PostgresStore;

pub(crate) use rows::FsSession;

/// What [`import_fs`] did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// Sessions copied into the database, in id order.
    pub imported: Vec<String>,
    /// Sessions that were already in the database, left as they were (so an import can be run
    /// again after an interruption).
    pub skipped: Vec<String>,
    /// Files that could not be imported, with why: unreadable or corrupt files (a bad line is
    /// named by file and line), damaged or unreadable checkpoint blobs beside them, file names
    /// that are not session ids, sessions another writer has open. Nothing of such a session is
    /// stored; the other files are imported.
    pub problems: Vec<(PathBuf, Error)>,
}

/// Copies every session of the file store directory `dir` into `store`.
///
/// Each session is copied in one transaction, under its advisory lock, and only if the database
/// does not hold it yet. A file that cannot be imported is reported in
/// [`ImportReport::problems`] and does not stop the others; a directory that cannot be read, or
/// a database failure, is an error.
pub async fn import_fs(dir: impl AsRef<Path>, store: &PostgresStore) -> Result<ImportReport> {
    let dir = dir.as_ref().to_owned();
    // The file store takes a missing directory for an empty one; an import of one is a mistake.
    let checked = dir.clone();
    blocking(move || {
        std::fs::read_dir(&checked).map(drop).map_err(|e| {
            Error::store(
                format!("importing sessions: reading the directory {}", checked.display()),
                e,
            )
        })
    })
    .await?;
    // Only read: durability does not matter.
    let files = JsonlStore::with_durability(&dir, Durability::None);
    let (sessions, problems) = files.session_files().await?;
    let mut report = ImportReport {
        problems,
        ..ImportReport::default()
    };
    for (id, path) in sessions {
        let session = match files.session_file(&id).await {
            // An empty file holds no session (the file store lists none there).
            Ok(None) => continue,
            Ok(Some(file)) => rows::rows_of(&path, file),
            Err(e) => Err(e),
        };
        let session = match session {
            Ok(session) => session,
            Err(e) => {
                report.problems.push((path, e));
                continue;
            }
        };
        match store.import_session(&session, &files).await {
            Ok(true) => report.imported.push(session.id),
            Ok(false) => report.skipped.push(session.id),
            Err(Refused::File(e)) => report.problems.push((path, e)),
            Err(Refused::Database(e)) => return Err(e),
        }
    }
    report.problems.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(report)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::store("importing sessions", e))?
}

/// Why a session was not imported.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Something of the session itself: another writer has it open, a checkpoint blob is
    /// damaged or unreadable. Reported in [`ImportReport::problems`]; the other files go on.
    File(Error),
    /// The database failed: the import stops.
    Database(Error),
}

impl From<Error> for Refused {
    fn from(e: Error) -> Self {
        Refused::Database(e)
    }
}

/// Writes an imported session in one transaction: the session row, its entries, its branch
/// events and its checkpoint blobs, read from `files`. `false` when the database already holds
/// it; on any error the transaction is dropped, which rolls it back, so nothing of the session
/// is stored. The caller holds the session's lock.
pub(crate) async fn write(pool: &Pool, session: &FsSession, files: &JsonlStore) -> Result<bool, Refused> {
    let context = format!("importing session {} from {}", session.id, session.path.display());
    let id = session.id.as_str();
    let addresses = files.checkpoint_addresses(id).await.map_err(Refused::File)?;
    let mut conn = pool.get().await?;
    let preparing = |e| Refused::Database(pg(format!("{context}: preparing"), e));
    let insert_entry = conn.statement(INSERT_ENTRY).await.map_err(preparing)?;
    let insert_event = conn.statement(INSERT_EVENT).await.map_err(preparing)?;
    let put_blob = conn.statement(PUT).await.map_err(preparing)?;
    let txn = conn.client.transaction().await.map_err(|e| pg(context.clone(), e))?;
    if !insert_session(&txn, &context, &session.new_session()).await? {
        return Ok(false);
    }
    insert_entries(&txn, &insert_entry, &context, id, &session.rows).await?;
    for event in &session.events {
        let change = event.checkpoint.as_ref();
        txn.execute(
            &insert_event,
            &[
                &id,
                &event.seq,
                &event.entries_before,
                &event.ts,
                &event.tip,
                &change.map(|c| c.path.as_str()),
                &change.and_then(|c| c.before.as_deref()),
                &change.and_then(|c| c.after.as_deref()),
                &change.map(|c| c.restore),
            ],
        )
        .await
        .map_err(|e| pg(format!("{context}: inserting branch event {}", event.seq), e))?;
    }
    // One blob at a time: a session's checkpoints together may be large. A blob removed since
    // it was listed is not there to copy.
    for address in &addresses {
        let Some(content) = files.get_checkpoint(id, address).await.map_err(Refused::File)? else {
            continue;
        };
        txn.execute(&put_blob, &[&id, address, &content])
            .await
            .map_err(|e| pg(format!("{context}: storing checkpoint {address}"), e))?;
    }
    txn.commit()
        .await
        .map_err(|e| pg(format!("{context}: committing"), e))?;
    Ok(true)
}
