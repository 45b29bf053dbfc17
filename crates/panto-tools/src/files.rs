//! Opening, reading and writing the files the file tools work on, and the images the CLI attaches
//! to a prompt: regular files only, and never more bytes than asked for.
//!
//! A path from the model may name a FIFO (opening it blocks until a writer comes, forever), a
//! device (`/dev/zero` never ends, whatever its size says), a socket or a directory. Files are
//! therefore opened with `O_NONBLOCK` (so opening a FIFO returns at once), checked with `fstat` on
//! the descriptor actually opened (so nothing swapped in after a check gets through), and read
//! through a limit (so a size that lies, as in `/proc`, cannot grow memory). Blocking calls: run
//! them through [`crate::running::blocking`].

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::roots::Roots;

/// Flags for every open: a FIFO or device must not block the open, and a terminal must not become
/// panto's controlling terminal.
const OPEN_FLAGS: i32 = nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY;

/// What kind of file `kind` is, for "X is a FIFO, not a regular file".
pub fn kind(kind: FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// The refusal for a path that is not a regular file. `tool` is the verb: `read`, `write`.
fn not_regular(path: &Path, file_type: FileType, tool: &str) -> String {
    if file_type.is_dir() && tool == "read" {
        return format!("{} is a directory; use bash (ls) to list it", path.display());
    }
    format!(
        "{} is {}, not a regular file; {tool} only works on regular files",
        path.display(),
        kind(file_type)
    )
}

/// The image format of `bytes`, by its signature: one the providers take, or `None`. `read`
/// returns such a file as an image; the CLI's attachments use it too.
pub fn image_format(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("PNG")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("JPEG")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("GIF")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("WebP")
    } else {
        None
    }
}

/// Why [`open_regular`] refused a path.
#[derive(Debug)]
pub enum OpenRefusal {
    /// It exists and is not a regular file: this is what it is.
    NotRegular(FileType),
    /// It could not be opened or examined.
    Io(std::io::Error),
}

/// Opens the regular file at `path` for reading, and nothing else: a FIFO does not block the
/// open, and what the descriptor turns out to be (a FIFO, a device, a directory) is refused. The
/// one way panto opens a file it was given a path to, whoever gave it (a tool call, `--image`).
pub fn open_regular(path: &Path) -> Result<(File, Metadata), OpenRefusal> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(OPEN_FLAGS)
        .open(path)
        .map_err(|e| match std::fs::metadata(path) {
            // A socket cannot be opened at all (`ENXIO`): say what it is rather than the error.
            Ok(meta) if !meta.is_file() => OpenRefusal::NotRegular(meta.file_type()),
            _ => OpenRefusal::Io(e),
        })?;
    let meta = file.metadata().map_err(OpenRefusal::Io)?;
    if !meta.is_file() {
        return Err(OpenRefusal::NotRegular(meta.file_type()));
    }
    Ok((file, meta))
}

/// Reads `file` to its end, or `None` once it holds more than `cap` bytes, whatever its size
/// claimed (a `/proc` file says 0).
pub fn read_bounded(file: File, size_hint: u64, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::with_capacity(usize::try_from(size_hint.min(cap)).unwrap_or(0));
    file.take(cap + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// Opens the regular file at `path` for reading, after `roots` passed it.
pub fn open_for_read(path: &Path, roots: &Roots) -> Result<(File, Metadata), String> {
    let (file, meta) = open_regular(path).map_err(|refusal| match refusal {
        OpenRefusal::NotRegular(file_type) => not_regular(path, file_type, "read"),
        OpenRefusal::Io(e) => format!("cannot read {}: {e}", path.display()),
    })?;
    roots.check_opened(&file, path)?;
    Ok((file, meta))
}

/// Why an open for writing failed. A FIFO cannot be opened for writing without a reader: that
/// says what the path is rather than the bare system error.
fn open_error(path: &Path, error: &std::io::Error, tool: &str) -> String {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => not_regular(path, meta.file_type(), tool),
        _ => format!("cannot {tool} {}: {error}", path.display()),
    }
}

/// The whole content of the regular file at `path`, refused when it holds more than `cap` bytes,
/// whatever its size claims.
pub fn read_capped(path: &Path, roots: &Roots, cap: u64) -> Result<Vec<u8>, String> {
    let (file, meta) = open_for_read(path, roots)?;
    let hint = "use bash (head, sed -n, grep) to look at parts of it";
    if meta.len() > cap {
        return Err(format!(
            "{} is {} bytes, more than the {cap} bytes the file tools read; {hint}",
            path.display(),
            meta.len()
        ));
    }
    read_bounded(file, meta.len(), cap)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .ok_or_else(|| {
            format!(
                "{} holds more than the {cap} bytes the file tools read (its size says {} bytes); {hint}",
                path.display(),
                meta.len()
            )
        })
}

/// Whether `path` is an existing regular file; an error for anything else that exists (a FIFO,
/// a device, a directory), so a write never goes through to one.
pub fn existing_regular(path: &Path) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(meta) => Err(not_regular(path, meta.file_type(), "write")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot write {}: {e}", path.display())),
    }
}

/// Replaces the content of the regular file at `path` with `bytes`, creating it when missing.
/// Anything that is not a regular file is refused before a byte is written.
pub fn write_regular(path: &Path, roots: &Roots, bytes: &[u8]) -> Result<(), String> {
    existing_regular(path)?;
    // No O_TRUNC: the file is truncated only once the descriptor proves to be a regular file.
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(OPEN_FLAGS)
        .open(path)
        .map_err(|e| open_error(path, &e, "write"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(not_regular(path, meta.file_type(), "write"));
    }
    roots.check_opened(&file, path)?;
    file.set_len(0)
        .and_then(|()| file.write_all(bytes))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_for_read_and_write() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read_capped(&fifo, &Roots::unrestricted(), 100).unwrap_err();
        assert!(e.contains("pipe is a FIFO (named pipe), not a regular file"), "{e}");
        let e = write_regular(&fifo, &Roots::unrestricted(), b"x").unwrap_err();
        assert!(
            e.contains("pipe is a FIFO (named pipe), not a regular file; write"),
            "{e}"
        );
    }

    #[test]
    fn devices_are_refused_and_a_lying_size_cannot_grow_the_read() {
        let e = read_capped(Path::new("/dev/zero"), &Roots::unrestricted(), 100).unwrap_err();
        assert!(e.contains("/dev/zero is a character device"), "{e}");
        let e = write_regular(Path::new("/dev/null"), &Roots::unrestricted(), b"x").unwrap_err();
        assert!(e.contains("/dev/null is a character device"), "{e}");
        // /proc files say they are empty and are not: the limit holds anyway.
        let e = read_capped(Path::new("/proc/self/maps"), &Roots::unrestricted(), 10).unwrap_err();
        assert!(
            e.contains("holds more than the 10 bytes") && e.contains("size says 0 bytes"),
            "{e}"
        );
    }

    #[test]
    fn regular_files_round_trip_and_a_write_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f.txt");
        assert!(!existing_regular(&f).unwrap());
        write_regular(&f, &Roots::unrestricted(), b"long content").unwrap();
        write_regular(&f, &Roots::unrestricted(), b"short").unwrap();
        assert!(existing_regular(&f).unwrap());
        assert_eq!(read_capped(&f, &Roots::unrestricted(), 100).unwrap(), b"short");
        let e = read_capped(&f, &Roots::unrestricted(), 3).unwrap_err();
        assert!(e.contains("is 5 bytes, more than the 3 bytes"), "{e}");
        let e = read_capped(dir.path(), &Roots::unrestricted(), 3).unwrap_err();
        assert!(e.contains("is a directory; use bash (ls)"), "{e}");
    }
}
