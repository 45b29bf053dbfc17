//! Opening session files without trusting what the directory holds: no symbolic link is
//! followed, no open waits on a FIFO, and only regular files are read or written.
//!
//! A `*.jsonl` name in the session directory can name anything: a link to another of the
//! user's files (which an append would write into and a repair would cut), a FIFO (whose reader
//! waits for a writer forever), a device. So every session file is opened with
//! `O_NOFOLLOW | O_NONBLOCK` and then checked with `fstat` on the descriptor: what is checked
//! is what is read, with no window for a swap between a check and the open.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use panto_core::{Error, Result};

use crate::format::io_error;

/// The flags every session file is opened with: the last path component must not be a link,
/// and opening a FIFO returns at once instead of waiting for its other end. `O_NONBLOCK` stays
/// set on the descriptor, which is harmless: reads and writes of a regular file ignore it.
fn flags() -> i32 {
    (OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits()
}

/// Opens the session file at `path` for reading, with its metadata. `None` when there is no
/// such file; an error naming the file and what it is when it is not a regular file.
pub(crate) fn open_for_reading(path: &Path) -> Result<Option<(File, Metadata)>> {
    match OpenOptions::new().read(true).custom_flags(flags()).open(path) {
        Ok(file) => check_regular(file, path).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(open_error(path, e)),
    }
}

/// Opens (creating it `0600` if needed) the session file at `path` for reading and appending,
/// refusing a link. The caller checks it with [`check_regular`] before reading or writing it
/// (after taking its lock, so that the length it reads is the one as of holding it), and names
/// a failure with [`open_error`].
pub(crate) fn open_for_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(flags())
        .open(path)
}

/// What identifies a file's content without reading it: its device and inode, length, and last
/// modification and status change times. Every write, cut or replacement of the file moves at
/// least one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of the file `meta` describes.
    pub(crate) fn of(meta: &Metadata) -> FileStamp {
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The file and its metadata, if `fstat` says it is a regular file.
pub(crate) fn check_regular(file: File, path: &Path) -> Result<(File, Metadata)> {
    let meta = file.metadata().map_err(|e| io_error("reading", path, e))?;
    if meta.is_file() {
        Ok((file, meta))
    } else {
        Err(not_regular(path, meta.file_type()))
    }
}

/// The error for a failed open. `O_NOFOLLOW` makes opening a link fail with `ELOOP`, whose
/// text ("too many levels of symbolic links") would mislead, so a link is named as such.
pub(crate) fn open_error(path: &Path, e: io::Error) -> Error {
    if e.raw_os_error() == Some(Errno::ELOOP as i32) {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if meta.file_type().is_symlink() {
                return not_regular(path, meta.file_type());
            }
        }
    }
    io_error("opening", path, e)
}

/// The error for a session file that is not a regular file.
fn not_regular(path: &Path, kind: FileType) -> Error {
    io_error(
        "opening",
        path,
        io::Error::new(io::ErrorKind::InvalidInput, not_regular_reason(kind)),
    )
}

/// Why a file of type `kind` is not read as a session, and what to do about it.
fn not_regular_reason(kind: FileType) -> String {
    if kind.is_symlink() {
        "it is a symbolic link, and panto does not follow links in the session directory \
         (put the file itself there, or remove the link)"
            .to_owned()
    } else {
        format!(
            "it is {}, not a regular file: panto keeps sessions only in regular files",
            describe_kind(kind)
        )
    }
}

/// How [`describe_kind`] names a symbolic link.
pub(crate) const SYMLINK: &str = "a symbolic link";

/// What a file that is not a regular file is, for messages.
pub(crate) fn describe_kind(kind: FileType) -> &'static str {
    if kind.is_symlink() {
        SYMLINK
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "of an unknown type"
    }
}
