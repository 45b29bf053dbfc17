//! File checkpoints beside a session: `<dir>/<id>.blobs/<address>`, one file per distinct
//! content, named by its SHA-256 (`panto_core::store::checkpoint_address`).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use panto_core::store::{checkpoint_address, validate_checkpoint_address, MAX_CHECKPOINT_BYTES};
use panto_core::{Error, Result};

use crate::format::io_error;
use crate::open::open_for_reading;

/// The blob directory of session `id` in store directory `dir`.
pub(crate) fn blob_dir(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.blobs"))
}

/// Keeps `content` under its address in the session's blob directory (mode 0700, files 0600),
/// durably: written to a temporary name, synced, renamed into place, the directory synced. A
/// blob already there is kept as it is. A crash leaves at most a temporary file, never a blob
/// with the wrong bytes under an address.
pub(crate) fn put(dir: &Path, id: &str, content: &[u8]) -> Result<String> {
    let address = checkpoint_address(content);
    let blobs = blob_dir(dir, id);
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&blobs)
        .map_err(|e| io_error("creating the checkpoint directory", &blobs, e))?;
    let path = blobs.join(&address);
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok(address);
    }
    let temporary = blobs.join(format!("{address}.{}.tmp", uuid::Uuid::now_v7().simple()));
    let written = (|| -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(&temporary)?;
        file.write_all(content)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        File::open(&blobs)?.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error("writing the checkpoint", &path, e));
    }
    Ok(address)
}

/// The content kept under `address` for session `id`, checked against the address; `None` when
/// there is none. A blob larger than [`MAX_CHECKPOINT_BYTES`] is refused before it is read: no
/// checkpoint is that large, so it was planted or damaged.
pub(crate) fn get(dir: &Path, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
    validate_checkpoint_address(address)?;
    let path = blob_dir(dir, id).join(address);
    let Some((file, meta)) = open_for_reading(&path)? else {
        return Ok(None);
    };
    let oversized = || Error::CorruptSession {
        location: path.display().to_string(),
        message: format!("the checkpoint is larger than any checkpoint panto keeps ({MAX_CHECKPOINT_BYTES} bytes)"),
    };
    let size = meta.len();
    if size > MAX_CHECKPOINT_BYTES {
        return Err(oversized());
    }
    let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // Bounded again while reading: the file may grow after its size was taken.
    file.take(MAX_CHECKPOINT_BYTES + 1)
        .read_to_end(&mut content)
        .map_err(|e| io_error("reading", &path, e))?;
    if content.len() as u64 > MAX_CHECKPOINT_BYTES {
        return Err(oversized());
    }
    if checkpoint_address(&content) != address {
        return Err(Error::CorruptSession {
            location: path.display().to_string(),
            message: "the checkpoint's bytes do not match its address (the file was changed or damaged)".to_owned(),
        });
    }
    Ok(Some(content))
}

/// The addresses of the blobs in session `id`'s blob directory, sorted; other names are skipped.
/// No directory: none.
pub(crate) fn addresses(dir: &Path, id: &str) -> Result<Vec<String>> {
    let blobs = blob_dir(dir, id);
    let entries = match std::fs::read_dir(&blobs) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("listing", &blobs, e)),
    };
    let mut addresses = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error("listing", &blobs, e))?;
        if let Some(name) = entry.file_name().to_str() {
            if validate_checkpoint_address(name).is_ok() {
                addresses.push(name.to_owned());
            }
        }
    }
    addresses.sort();
    Ok(addresses)
}
