//! Moving sessions from the file store into PostgreSQL.
//!
//! [`import_fs`] reads a `panto-store-fs` directory as `docs/session-format.md` specifies it and
//! copies each session, with its full history, into the database: entry ids, parent ids,
//! timestamps (rounded up to the microsecond), usage, wire identities and compaction records,
//! and the session tree: every branch, the branch switches, the file-change records, the
//! checkpoint blobs beside the file (`<id>.blobs/`, each checked against its address) and the
//! fork origin. So the imported session lists, loads, draws its tree and lists its file changes
//! as it did from the files. The file store does not record the tools offered, so imported
//! entries have no tool manifest ([`ToolManifest::NotRecorded`](crate::ToolManifest::NotRecorded)).

mod parse;

use std::path::{Path, PathBuf};

use panto_core::store::{checkpoint_address, validate_session_id};
use panto_core::{Error, Result};

use crate::branch::INSERT_EVENT;
use crate::checkpoint::PUT;
use crate::db::pg;
use crate::pool::Pool;
use crate::writer::{insert_entries, insert_session, INSERT_ENTRY};
use crate::PostgresStore;

use parse::parse_file;
pub(crate) use parse::FsSession;

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
    let mut report = ImportReport::default();
    let listed = dir.clone();
    let files = blocking(move || session_files(&listed)).await?;
    for file in files {
        let id = match file.id {
            Ok(id) => id,
            Err(e) => {
                report.problems.push((file.path, e));
                continue;
            }
        };
        let path = file.path.clone();
        let parsed = blocking(move || parse_file(&file.path, &id)).await;
        let session = match parsed {
            Ok(session) => session,
            Err(e) => {
                report.problems.push((path, e));
                continue;
            }
        };
        match store.import_session(&session).await {
            Ok(true) => report.imported.push(session.id),
            Ok(false) => report.skipped.push(session.id),
            Err(Refused::File(e)) => report.problems.push((path, e)),
            Err(Refused::Database(e)) => return Err(e),
        }
    }
    Ok(report)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::store("importing sessions", e))?
}

/// A `*.jsonl` file of the directory, and the session id its name gives (or why it gives none).
struct SessionFile {
    path: PathBuf,
    id: Result<String>,
}

/// The `*.jsonl` files of `dir`, sorted by name.
fn session_files(dir: &Path) -> Result<Vec<SessionFile>> {
    let io = |e: std::io::Error| {
        Error::store(
            format!("importing sessions: reading the directory {}", dir.display()),
            e,
        )
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let id = match path.file_stem().and_then(|s| s.to_str()) {
            Some(stem) if validate_session_id(stem).is_ok() => Ok(stem.to_owned()),
            _ => Err(Error::CorruptSession {
                location: path.display().to_string(),
                message: "the file name is not a session id (lowercase hex and `-`)".to_owned(),
            }),
        };
        files.push(SessionFile { path, id });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
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
/// events and its checkpoint blobs. `false` when the database already holds it; on any error
/// the transaction is dropped, which rolls it back, so nothing of the session is stored. The
/// caller holds the session's lock.
pub(crate) async fn write(pool: &Pool, session: &FsSession) -> Result<bool, Refused> {
    let context = format!("importing session {} from {}", session.id, session.path.display());
    let id = session.id.as_str();
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
    // One blob at a time: a session's checkpoints together may be large.
    for (address, path) in &session.blobs {
        let content = read_blob(path.clone(), address.clone()).await.map_err(Refused::File)?;
        txn.execute(&put_blob, &[&id, address, &content])
            .await
            .map_err(|e| pg(format!("{context}: storing checkpoint {address}"), e))?;
    }
    txn.commit()
        .await
        .map_err(|e| pg(format!("{context}: committing"), e))?;
    Ok(true)
}

/// The bytes of the checkpoint blob at `path`, checked against its name `address`. A link, a
/// FIFO or anything else that is not a regular file is refused (the file store never reads one).
async fn read_blob(path: PathBuf, address: String) -> Result<Vec<u8>> {
    blocking(move || {
        let corrupt = |message: &str| Error::CorruptSession {
            location: path.display().to_string(),
            message: message.to_owned(),
        };
        let meta =
            std::fs::symlink_metadata(&path).map_err(|e| Error::store(format!("importing {}", path.display()), e))?;
        if !meta.is_file() {
            return Err(corrupt("the checkpoint is not a regular file"));
        }
        let content = std::fs::read(&path).map_err(|e| Error::store(format!("importing {}", path.display()), e))?;
        if checkpoint_address(&content) != address {
            return Err(corrupt(
                "the checkpoint's bytes do not match its name, their SHA-256 (the file was changed or damaged)",
            ));
        }
        Ok(content)
    })
    .await
}
