//! Moving sessions from the file store into PostgreSQL.
//!
//! [`import_fs`] reads a `panto-store-fs` directory as `docs/session-format.md` specifies it and
//! copies each session, with its full history, into the database: entry ids, parent ids,
//! timestamps (rounded up to the microsecond), usage, wire identities and compaction records
//! are kept, so the imported session lists and loads as it did from the files. The file store
//! does not record the tools offered, so imported entries have no tool manifest
//! ([`ToolManifest::NotRecorded`](crate::ToolManifest::NotRecorded)).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use panto_core::store::validate_session_id;
use panto_core::{Error, Message, Result, Role, SessionInfo, Usage, WireIdentity};
use serde::Deserialize;

use crate::db::{bigint, ceil_micros, pg};
use crate::pool::Pool;
use crate::view::{compact_recorded, ViewEntry};
use crate::writer::{insert_entries, insert_session, message_columns, role_str, EntryRow, NewSession, INSERT_ENTRY};
use crate::PostgresStore;

/// What [`import_fs`] did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// Sessions copied into the database, in id order.
    pub imported: Vec<String>,
    /// Sessions that were already in the database, left as they were (so an import can be run
    /// again after an interruption).
    pub skipped: Vec<String>,
    /// Files that could not be imported, with why: unreadable or corrupt files, file names that
    /// are not session ids, sessions another writer has open. The other files are imported.
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
            Err(e @ Error::SessionInUse { .. }) => report.problems.push((path, e)),
            Err(e) => return Err(e),
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
}

/// A compaction as the file store records it.
#[derive(Debug, Deserialize)]
struct FsCompaction {
    first_kept: Option<String>,
    tokens_before: u64,
    tokens_after: u64,
}

/// An entry line.
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    id: String,
    #[serde(default)]
    parent_id: Option<String>,
    timestamp: DateTime<Utc>,
    message: Message,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    wire: Option<WireIdentity>,
    #[serde(default)]
    compaction: Option<FsCompaction>,
}

/// A session file, read and checked, ready to be written to the database.
#[derive(Debug)]
pub(crate) struct FsSession {
    /// The file, for errors.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// The session's listing info, folded from its entries as every store folds it.
    pub info: SessionInfo,
    /// The conversation metadata.
    pub metadata: Option<String>,
    /// Where the session was started.
    pub cwd: Option<String>,
    /// The entry rows.
    pub rows: Vec<EntryRow>,
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

/// Reads the session file at `path`, named for session `id`. Like the file store's reader: a
/// torn final line (a crash mid-write) is ignored, any other bad line is an error naming it.
fn parse_file(path: &Path, id: &str) -> Result<FsSession> {
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
    // holds any other block, and the session tree's branch entries and forks, which this store
    // does not keep yet (a branch entry is refused below, by name).
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

    let context = format!("importing {}", path.display());
    let created = ceil_micros(header.created);
    let mut info = SessionInfo::new(id, created);
    let mut rows: Vec<EntryRow> = Vec::new();
    let mut ids = HashSet::new();
    let mut view: Vec<ViewEntry> = Vec::new();
    for (i, line) in lines.enumerate() {
        let number = i + 2;
        if line.starts_with(br#"{"type":"branch""#) {
            return Err(corrupt(
                number,
                "a branch entry (a rewind): sessions with branches cannot be imported".to_owned(),
            ));
        }
        let entry: Entry = parse_line(line, &at(number))?;
        if entry.kind != "message" {
            return Err(corrupt(
                number,
                format!(
                    "unknown entry type {:?} (this panto reads \"message\" entries)",
                    entry.kind
                ),
            ));
        }
        if !ids.insert(entry.id.clone()) {
            return Err(corrupt(number, format!("duplicate entry id {:?}", entry.id)));
        }
        let previous = rows.last().map(|r| r.id.as_str());
        if entry.parent_id.as_deref() != previous {
            return Err(corrupt(
                number,
                format!(
                    "the entry follows {:?}, not the entry on the line before it ({previous:?}); sessions with \
                     branches cannot be imported",
                    entry.parent_id
                ),
            ));
        }
        let seq = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        let view_entry = ViewEntry {
            id: entry.id.clone(),
            system: entry.message.role == Role::System,
            seq,
        };
        let compaction_tokens = match &entry.compaction {
            Some(c) => {
                compact_recorded(&mut view, c.first_kept.as_deref(), view_entry)
                    .map_err(|message| corrupt(number, message))?;
                Some((
                    bigint(&context, "tokens_before", c.tokens_before)?,
                    bigint(&context, "tokens_after", c.tokens_after)?,
                ))
            }
            None => {
                view.push(view_entry);
                None
            }
        };
        let ts = ceil_micros(entry.timestamp);
        let (message, message_raw) = message_columns(&context, &entry.message)?;
        let usage = entry
            .usage
            .map(|u| serde_json::to_string(&u))
            .transpose()
            .map_err(|e| Error::store(format!("{context}: serialising usage"), e))?;
        let (a, b, c, d) = crate::db::wire_columns(&context, entry.wire.as_ref())?;
        info.record(&entry.message, entry.wire.as_ref(), ts);
        rows.push(EntryRow {
            seq,
            id: entry.id,
            parent_id: entry.parent_id,
            ts,
            role: role_str(entry.message.role),
            message,
            message_raw,
            usage,
            wire: (a, b.map(str::to_owned), c.map(str::to_owned), d),
            compaction_first_kept: entry.compaction.and_then(|c| c.first_kept),
            compaction_tokens,
            tool_hashes: None,
        });
    }
    Ok(FsSession {
        path: path.to_owned(),
        id: id.to_owned(),
        info,
        metadata: header.metadata,
        cwd: header.cwd,
        rows,
    })
}

/// Writes an imported session in one transaction; `false` when the database already holds it.
/// The caller holds the session's lock.
pub(crate) async fn write(pool: &Pool, session: &FsSession) -> Result<bool> {
    let context = format!("importing session {} from {}", session.id, session.path.display());
    let mut conn = pool.get().await?;
    let insert_entry = conn
        .statement(INSERT_ENTRY)
        .await
        .map_err(|e| pg(format!("{context}: preparing"), e))?;
    let txn = conn.client.transaction().await.map_err(|e| pg(context.clone(), e))?;
    if !insert_session(&txn, &context, &session.new_session()).await? {
        // Dropping the transaction rolls it back; nothing was written.
        return Ok(false);
    }
    insert_entries(&txn, &insert_entry, &context, &session.id, &session.rows).await?;
    txn.commit()
        .await
        .map_err(|e| pg(format!("{context}: committing"), e))?;
    Ok(true)
}

fn parse_line<T: serde::de::DeserializeOwned>(line: &[u8], location: &str) -> Result<T> {
    serde_json::from_slice(line).map_err(|e| Error::CorruptSession {
        location: location.to_owned(),
        message: format!("invalid line at column {}: {e}", e.column()),
    })
}
