//! Where sessions are kept: `session_dir` and `[store] url` from the file, and the choice among
//! the flags, the environment and the file.

use std::path::{Path, PathBuf};

use super::file::{FileConfig, Source};
use super::{Env, Settings};
use crate::exit::Failure;

/// The file's `session_dir` (expanded, relative to the file's directory) and `[store] url`.
pub fn resolve(
    file: &FileConfig,
    env: &Env,
    base_dir: &Path,
    source: &Source<'_>,
) -> Result<(Option<PathBuf>, Option<String>), Failure> {
    let session_dir = match &file.session_dir {
        Some(d) => Some(
            env.expand(d.get_ref(), base_dir)
                .map_err(|e| source.error(d.span(), format!("session_dir {e}")))?,
        ),
        None => None,
    };
    let store_url = match &file.store.url {
        Some(url) if !is_postgres_url(url.get_ref()) => {
            return Err(source.error(url.span(), "store.url must be a postgres:// or postgresql:// URL"))
        }
        Some(url) => Some(url.get_ref().clone()),
        None => None,
    };
    Ok((session_dir, store_url))
}

/// Whether `url` names a PostgreSQL database.
fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The PostgreSQL store URL: `--store`, else `PANTO_STORE`, else `[store] url` from the file;
/// `None` keeps sessions in the session directory.
pub fn store_url(flag: Option<&str>, settings: &Settings, env: &Env) -> Result<Option<String>, Failure> {
    let (url, source) = match (flag, env.get("PANTO_STORE")) {
        (Some(url), _) => (url.to_owned(), "--store"),
        (None, Some(url)) if !url.is_empty() => (url.to_owned(), "PANTO_STORE"),
        _ => return Ok(settings.store_url.clone()),
    };
    if !is_postgres_url(&url) {
        return Err(Failure::usage(format!(
            "{source} must be a postgres:// or postgresql:// URL (sessions in files need no store URL)"
        )));
    }
    Ok(Some(url))
}

/// The session directory: `--session-dir`, else `PANTO_SESSION_DIR`, else `session_dir` from the
/// file, else the XDG data directory. A leading `~/` is expanded wherever it comes from (a quoted
/// `'~/s'` reaches panto unexpanded).
pub fn session_dir(flag: Option<&Path>, settings: &Settings, env: &Env) -> Result<PathBuf, Failure> {
    if let Some(dir) = flag {
        return env
            .expand_path(dir)
            .map_err(|e| Failure::usage(format!("--session-dir {e}")));
    }
    if let Some(dir) = env.get("PANTO_SESSION_DIR") {
        return env
            .expand_home(dir)
            .map_err(|e| Failure::usage(format!("PANTO_SESSION_DIR {e}")));
    }
    if let Some(dir) = &settings.session_dir {
        return Ok(dir.clone());
    }
    env.default_session_dir().ok_or_else(|| {
        Failure::usage("cannot place sessions: neither HOME nor XDG_DATA_HOME is set (use --session-dir)")
    })
}
