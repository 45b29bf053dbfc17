//! What about a session directory makes its sessions unsafe to trust: who else can write it,
//! and names in it that look like sessions but are not regular files.
//!
//! Whoever can write the directory can plant a session that a later `-c` resumes (a
//! conversation the model then trusts as the user's own), replace one, or plant a FIFO or a
//! link. The store never follows such a link nor waits on such a FIFO (see `open.rs`); these
//! checks tell the user, so the directory gets fixed.

use std::fmt;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use panto_core::store::validate_session_id;

use crate::open::{describe_kind, SYMLINK};
use crate::store::EXTENSION;

/// Something about a session directory that lets someone other than its user change what panto
/// reads from it, found by [`check_dir`]. Its `Display` says what was found, why it matters and
/// the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirWarning {
    /// The directory is writable by its group or by everyone (`mode & 0o022`): other users can
    /// add, replace or remove session files.
    WritableByOthers {
        /// The session directory.
        dir: PathBuf,
        /// Its permission bits (`mode & 0o7777`).
        mode: u32,
    },
    /// The directory belongs to another user, who can change its files and its permissions.
    ForeignOwner {
        /// The session directory.
        dir: PathBuf,
        /// The uid that owns it.
        owner: u32,
        /// The effective uid of this process.
        user: u32,
    },
    /// A `<session id>.jsonl` entry that is not a regular file (a symbolic link, a FIFO, a
    /// device, a directory): no session is read from it or written to it, and listing reports
    /// it.
    NotRegularFile {
        /// The entry.
        path: PathBuf,
        /// What it is: "a symbolic link", "a FIFO (named pipe)", ...
        kind: &'static str,
    },
}

impl DirWarning {
    /// The directory or file the warning is about.
    pub fn path(&self) -> &Path {
        match self {
            DirWarning::WritableByOthers { dir, .. } | DirWarning::ForeignOwner { dir, .. } => dir,
            DirWarning::NotRegularFile { path, .. } => path,
        }
    }
}

impl fmt::Display for DirWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirWarning::WritableByOthers { dir, mode } => {
                let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
                    (true, true) => "its group and by everyone",
                    (true, false) => "its group",
                    _ => "everyone",
                };
                write!(
                    f,
                    "the session directory {} is writable by {who} (mode {mode:04o}): other users can plant or \
                     replace sessions that panto would resume; fix: chmod 700 {}",
                    dir.display(),
                    shell_quote(dir)
                )
            }
            DirWarning::ForeignOwner { dir, owner, user } => write!(
                f,
                "the session directory {} belongs to user {owner}, not to you (user {user}): its owner can \
                 plant or replace sessions that panto would resume; fix: use a session directory of your own \
                 (--session-dir), or have it given to you (chown {user} {})",
                dir.display(),
                shell_quote(dir)
            ),
            DirWarning::NotRegularFile { path, kind } => {
                let fix = if *kind == SYMLINK {
                    "replace the link with the file it points to, or remove it".to_owned()
                } else {
                    format!("remove it (rm {})", shell_quote(path))
                };
                write!(
                    f,
                    "{} is {kind}, not a regular file: panto does not read or write a session through it, and \
                     skips it; fix: {fix}",
                    path.display()
                )
            }
        }
    }
}

/// Checks the session directory `dir` before a store reads it: whether anyone but this process's
/// user can write it, and whether any `<session id>.jsonl` in it is not a regular file.
///
/// Returns nothing for a directory that does not exist yet (the store creates it `0700`), and
/// nothing for what it cannot read: the store's own operations report those errors. The cost
/// is one `stat` and one read of the directory's entries (no file is opened). Libraries never
/// print; a program shows these to its user once, at start-up (the `panto` CLI does, on
/// stderr).
pub fn check_dir(dir: &Path) -> Vec<DirWarning> {
    let mut warnings = Vec::new();
    // Through a link to the directory, as the store itself goes: it is the directory reached
    // that matters.
    let meta = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => meta,
        _ => return warnings,
    };
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        warnings.push(DirWarning::WritableByOthers {
            dir: dir.to_owned(),
            mode,
        });
    }
    let user = nix::unistd::geteuid().as_raw();
    if meta.uid() != user {
        warnings.push(DirWarning::ForeignOwner {
            dir: dir.to_owned(),
            owner: meta.uid(),
            user,
        });
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut odd: Vec<DirWarning> = entries
            .filter_map(|entry| not_regular_entry(entry.ok()?).ok().flatten())
            .collect();
        odd.sort_by(|a, b| a.path().cmp(b.path()));
        warnings.extend(odd);
    }
    warnings
}

/// A warning for `entry` when it is named `<session id>.jsonl` and is not a regular file. The
/// type comes from the directory listing itself (`d_type`), so a regular file costs no system
/// call. Other names are never read as sessions (listing reports them), and a name that is a
/// session id cannot hold a control character that would reach the user's terminal.
fn not_regular_entry(entry: std::fs::DirEntry) -> io::Result<Option<DirWarning>> {
    // The type first: nearly every entry is a regular file, which needs no path built.
    let kind = entry.file_type()?;
    if kind.is_file() {
        return Ok(None);
    }
    let path = entry.path();
    if path.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
        return Ok(None);
    }
    let named_like_a_session = path
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|stem| validate_session_id(stem).is_ok());
    if !named_like_a_session {
        return Ok(None);
    }
    Ok(Some(DirWarning::NotRegularFile {
        path,
        kind: describe_kind(kind),
    }))
}

/// `path` as a shell word, for the fix a warning suggests.
fn shell_quote(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_quote_paths_for_the_shell() {
        assert_eq!(
            shell_quote(Path::new("/home/ada/.local/share/panto")),
            "/home/ada/.local/share/panto"
        );
        assert_eq!(shell_quote(Path::new("/tmp/my sessions")), "'/tmp/my sessions'");
        assert_eq!(shell_quote(Path::new("/tmp/it's")), r"'/tmp/it'\''s'");
    }
}
