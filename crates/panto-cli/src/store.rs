//! Where sessions are kept, and the one way to open that store: every command that reads or
//! writes sessions (the REPL, print mode, `panto sessions`) opens it here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panto_core::{Error, NullStore, Session, SessionInfo, SessionStore};
use panto_store_fs::{JsonlStore, UnreadableFiles};
use panto_store_postgres::PostgresStore;

use crate::exit::Failure;

/// Where sessions are kept, as the command line, the environment and the config file decided
/// ([`crate::config::store_url`], [`crate::config::session_dir`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// Nowhere: `--no-session`, the conversation lives as long as the process.
    Nowhere,
    /// One JSONL file per session in this directory.
    Directory(PathBuf),
    /// A PostgreSQL database at this URL.
    Postgres(String),
}

/// An open session store and how to name it in messages.
pub struct OpenStore {
    /// The store.
    pub store: Arc<dyn SessionStore>,
    /// The file store, when sessions are files: its listing also reports unreadable files.
    files: Option<Arc<JsonlStore>>,
    /// The PostgreSQL store, when sessions are there: exports read its full history.
    postgres: Option<Arc<PostgresStore>>,
    /// Where sessions are, for messages (a database URL without its password).
    pub place: String,
}

impl StoreLocation {
    /// PostgreSQL at `url` when there is one, else the directory `dir`.
    pub fn new(url: Option<String>, dir: PathBuf) -> StoreLocation {
        match url {
            Some(url) => StoreLocation::Postgres(url),
            None => StoreLocation::Directory(dir),
        }
    }

    /// Whether sessions opened here are kept.
    pub fn persists(&self) -> bool {
        *self != StoreLocation::Nowhere
    }

    /// Where sessions are, for messages: the database (without its password), the directory, or
    /// none.
    pub fn place(&self) -> String {
        match self {
            StoreLocation::Nowhere => "(no session store)".to_owned(),
            StoreLocation::Directory(dir) => dir.display().to_string(),
            StoreLocation::Postgres(url) => redact_password(url),
        }
    }

    /// Opens the store to read from it: nothing is created.
    pub async fn open(&self) -> Result<OpenStore, Failure> {
        let (store, files, postgres): (Arc<dyn SessionStore>, _, _) = match self {
            StoreLocation::Nowhere => (NullStore::shared(), None, None),
            StoreLocation::Directory(dir) => {
                let files = open_fs_store(dir);
                (files.clone(), Some(files), None)
            }
            StoreLocation::Postgres(url) => {
                let pg = connect_postgres(url).await?;
                (pg.clone(), None, Some(pg))
            }
        };
        Ok(OpenStore {
            store,
            files,
            postgres,
            place: self.place(),
        })
    }

    /// Opens the store a run writes its session to. A session directory is made ready first
    /// ([`ensure_session_dir`]), so a run that could not store its session sends nothing.
    pub async fn open_for_writing(&self) -> Result<OpenStore, Failure> {
        if let StoreLocation::Directory(dir) = self {
            ensure_session_dir(dir)?;
        }
        self.open().await
    }
}

impl OpenStore {
    /// The file store, when sessions are files.
    pub fn files(&self) -> Option<&Arc<JsonlStore>> {
        self.files.as_ref()
    }

    /// The PostgreSQL store, when sessions are there.
    pub fn postgres(&self) -> Option<&Arc<PostgresStore>> {
        self.postgres.as_ref()
    }

    /// The session whose id is or starts with `id`; the error names the store.
    pub async fn resolve(&self, id: &str) -> Result<Session, Failure> {
        let id = id.trim();
        match Session::resolve(self.store.clone(), id).await {
            Ok(Some(session)) => Ok(session),
            Ok(None) => Err(Failure::usage(format!("no session matches {id:?} in {}", self.place))),
            Err(Error::InvalidSessionId(_)) => Err(Failure::usage(format!(
                "{id:?} is not a session id or prefix (session ids are lowercase hex and `-`)"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Every session, newest first, and the session files that could not be read (a database
    /// reports none: it fails or lists).
    pub async fn list_with_problems(&self) -> Result<(Vec<SessionInfo>, UnreadableFiles), Failure> {
        Ok(match &self.files {
            Some(files) => files.list_with_problems().await?,
            None => (self.store.list().await?, Vec::new()),
        })
    }
}

/// The filesystem store over `dir`. Creates nothing until the first append.
pub fn open_fs_store(dir: &Path) -> Arc<JsonlStore> {
    // What makes the directory unsafe to trust (others can write it, links or FIFOs named like
    // sessions) is said on stderr, once per run: every command opens its store once.
    for warning in panto_store_fs::check_dir(dir) {
        eprintln!("panto: warning: {warning}");
    }
    JsonlStore::new(dir)
}

/// The PostgreSQL store at `url` (migrated to the current schema).
pub async fn connect_postgres(url: &str) -> Result<Arc<PostgresStore>, Failure> {
    Ok(PostgresStore::connect(url).await?)
}

/// Creates the session directory (0700, as the store would) and proves that a file can be
/// created in it. The store writes nothing until the first answer arrives; without this check a
/// directory that cannot take the session is found only after the paid request.
pub fn ensure_session_dir(dir: &Path) -> Result<(), Failure> {
    use std::os::unix::fs::DirBuilderExt;
    let fail = |why: String| {
        Failure::usage(format!(
            "cannot use the session directory {}: {why} (choose another with --session-dir or \
             PANTO_SESSION_DIR, or run with --no-session)",
            dir.display()
        ))
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| fail(e.to_string()))?;
    // Not a `.jsonl` name, so a listing never takes it for a session, even if a crash left it.
    let probe = dir.join(format!(".panto-write-check-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .map_err(|e| fail(format!("cannot create a file in it: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// `postgres://user:secret@host/db` as `postgres://user:***@host/db`: a database password is as
/// secret as an API key and must not reach a terminal or a log. The store's own rule, which
/// also hides a password holding `@`, `:` or `/`, and a `password=` parameter.
pub fn redact_password(url: &str) -> String {
    panto_store_postgres::redact_connection_string(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_passwords_never_reach_messages() {
        assert_eq!(
            redact_password("postgres://panto:s3cret@db:5432/panto"),
            "postgres://panto:***@db:5432/panto"
        );
        assert_eq!(
            redact_password("postgres://panto@db/panto"),
            "postgres://panto@db/panto"
        );
        let location = StoreLocation::new(Some("postgres://u:pw@h/d".into()), PathBuf::from("/x"));
        assert!(!location.place().contains("pw"));
        assert_eq!(redact_password("postgres://u:p@ss:w/rd@h/d"), "postgres://u:***@h/d");
        assert_eq!(StoreLocation::Nowhere.place(), "(no session store)");
        assert_eq!(StoreLocation::new(None, PathBuf::from("/x")).place(), "/x");
    }
}
