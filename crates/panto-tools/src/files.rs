//! Files as the tools see them, for front ends: opening a file a user or model named with the
//! tools' checks ([`open_regular`], [`read_bounded`]; the CLI's image attachments use them, with
//! [`image_format`]), what an `edit` would make of a text ([`content_after_edit`], for a diff
//! drawn from text the front end has), and what a rewind did to the files the tools changed
//! ([`RestoredFile`], [`FileOutcome`], from [`crate::Toolbox::rewind_with_files`]).
//!
//! Inside the crate this module opens and reads the files the file tools work on (writing them:
//! `beneath.rs`): regular files only, and never more bytes than asked for. A path from the model
//! may name a FIFO (opening it blocks until a writer comes, forever), a device (`/dev/zero` never
//! ends, whatever its size says), a socket or a directory. Files are therefore opened with
//! `O_NONBLOCK` (so opening a FIFO returns at once), checked with `fstat` on the descriptor
//! actually opened (so nothing swapped in after a check gets through), and read through a limit
//! (so a size that lies, as in `/proc`, cannot grow memory). Blocking calls: run them through
//! `running::blocking`.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

pub use crate::checkpoint::{FileOutcome, RestoredFile, MAX_CHECKPOINT_BYTES};
pub use crate::edit::content_after_edit;

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
pub(crate) fn not_regular(path: &Path, file_type: FileType, tool: &str) -> String {
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
pub(crate) fn open_for_read(path: &Path, roots: &Roots) -> Result<(File, Metadata), String> {
    let (file, meta) = open_regular(path).map_err(|refusal| match refusal {
        OpenRefusal::NotRegular(file_type) => not_regular(path, file_type, "read"),
        OpenRefusal::Io(e) => format!("cannot read {}: {e}", path.display()),
    })?;
    roots.check_opened(&file, path)?;
    Ok((file, meta))
}

/// The whole content of the regular file at `path`, refused when it holds more than `cap` bytes,
/// whatever its size claims.
pub(crate) fn read_capped(path: &Path, roots: &Roots, cap: u64) -> Result<Vec<u8>, String> {
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
pub(crate) fn existing_regular(path: &Path) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(meta) => Err(not_regular(path, meta.file_type(), "write")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(cannot_write(path, &e)),
    }
}

/// "cannot write PATH: ERROR".
fn cannot_write(path: &Path, error: &std::io::Error) -> String {
    format!("cannot write {}: {error}", path.display())
}

#[cfg(test)]
mod tests {
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::testing::context;
    use crate::{ToolContext, ToolName};

    /// Writes as `write` does, with `ctx`'s limits.
    fn write_regular(path: &Path, ctx: &ToolContext, tool: Option<ToolName>, bytes: &[u8]) -> Result<(), String> {
        crate::beneath::resolve(path, ctx, tool)?.write(bytes)
    }

    /// Writes as `write` does with no sandbox, no roots and no rules.
    fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
        write_regular(path, &context(Path::new("/")), Some(ToolName::Write), bytes)
    }

    #[test]
    fn a_fifo_is_refused_without_blocking_for_read_and_write() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read_capped(&fifo, &Roots::unrestricted(), 100).unwrap_err();
        assert!(e.contains("pipe is a FIFO (named pipe), not a regular file"), "{e}");
        let e = write(&fifo, b"x").unwrap_err();
        assert!(
            e.contains("pipe is a FIFO (named pipe), not a regular file; write"),
            "{e}"
        );
    }

    #[test]
    fn devices_are_refused_and_a_lying_size_cannot_grow_the_read() {
        let e = read_capped(Path::new("/dev/zero"), &Roots::unrestricted(), 100).unwrap_err();
        assert!(e.contains("/dev/zero is a character device"), "{e}");
        let e = write(Path::new("/dev/null"), b"x").unwrap_err();
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
        write(&f, b"long content").unwrap();
        write(&f, b"short").unwrap();
        assert!(existing_regular(&f).unwrap());
        assert_eq!(read_capped(&f, &Roots::unrestricted(), 100).unwrap(), b"short");
        let e = read_capped(&f, &Roots::unrestricted(), 3).unwrap_err();
        assert!(e.contains("is 5 bytes, more than the 3 bytes"), "{e}");
        let e = read_capped(dir.path(), &Roots::unrestricted(), 3).unwrap_err();
        assert!(e.contains("is a directory; use bash (ls)"), "{e}");
    }

    /// What the directory holds besides `keep`: a temporary file left behind shows here.
    fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_reader_sees_the_old_content_or_the_new_never_a_part() {
        // What a kill in the middle of a write could leave is what a reader racing the writes
        // sees: an empty or half-written file, if the write truncates and writes in place.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("plan.md");
        let (a, b) = (vec![b'a'; 256 * 1024], vec![b'b'; 192 * 1024]);
        write(&f, &a).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (f, stop, a, b) = (f.clone(), stop.clone(), a.clone(), b.clone());
            std::thread::spawn(move || {
                let mut reads = 0u32;
                while !stop.load(Ordering::Relaxed) || reads == 0 {
                    let seen = std::fs::read(&f).unwrap();
                    assert!(
                        seen == a || seen == b,
                        "read {} bytes that are neither the old content nor the new",
                        seen.len()
                    );
                    reads += 1;
                }
                reads
            })
        };
        for round in 0..200 {
            write(&f, if round % 2 == 0 { &b } else { &a }).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(others(dir.path(), &["plan.md"]), Vec::<String>::new());
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_read_only_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("run.sh");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, Permissions::from_mode(0o750)).unwrap();
        write(&f, b"#!/bin/sh\nnew\n").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"#!/bin/sh\nnew\n");
        assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o7777, 0o750);

        // Running as root, a mode does not stop a write: only check the refusal where it would.
        let ro = dir.path().join("ro.txt");
        std::fs::write(&ro, "keep").unwrap();
        std::fs::set_permissions(&ro, Permissions::from_mode(0o444)).unwrap();
        if OpenOptions::new().write(true).open(&ro).is_err() {
            let e = write(&ro, b"x").unwrap_err();
            assert!(e.contains("ro.txt") && e.contains("ermission denied"), "{e}");
            assert_eq!(std::fs::read(&ro).unwrap(), b"keep");
        }
        assert_eq!(others(dir.path(), &["run.sh", "ro.txt"]), Vec::<String>::new());
    }

    fn is_link(path: &Path) -> bool {
        std::fs::symlink_metadata(path).unwrap().file_type().is_symlink()
    }

    #[test]
    fn a_link_is_followed_and_kept_and_hard_links_keep_sharing() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "old").unwrap();
        // A relative link, through a second link.
        std::os::unix::fs::symlink("real.txt", dir.path().join("one")).unwrap();
        std::os::unix::fs::symlink("one", dir.path().join("two")).unwrap();
        write(&dir.path().join("two"), b"via links").unwrap();
        assert!(is_link(&dir.path().join("two")));
        assert!(is_link(&dir.path().join("one")));
        assert_eq!(std::fs::read(&real).unwrap(), b"via links");

        // A dangling link: the file it names is created, the link stays.
        std::os::unix::fs::symlink("made.txt", dir.path().join("dangling")).unwrap();
        write(&dir.path().join("dangling"), b"made").unwrap();
        assert!(is_link(&dir.path().join("dangling")));
        assert_eq!(std::fs::read(dir.path().join("made.txt")).unwrap(), b"made");

        // Two names for one file: a write through one is seen through the other.
        let other = dir.path().join("other.txt");
        std::fs::hard_link(&real, &other).unwrap();
        write(&real, b"shared").unwrap();
        assert_eq!(std::fs::read(&other).unwrap(), b"shared");
        assert_eq!(
            others(
                dir.path(),
                &["real.txt", "one", "two", "dangling", "made.txt", "other.txt"]
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_failed_write_leaves_the_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let f = sub.join("f.txt");
        std::fs::write(&f, "old").unwrap();
        // A file name at the limit: the temporary file's name still fits.
        let long = sub.join("x".repeat(255));
        write(&long, b"long name").unwrap();
        assert_eq!(std::fs::read(&long).unwrap(), b"long name");
        // Roots that do not hold the directory: the write is refused and nothing is left.
        let mut ctx = context(dir.path());
        ctx.roots = Roots::new(vec![dir.path().join("elsewhere")]);
        let e = write_regular(&f, &ctx, Some(ToolName::Write), b"new").unwrap_err();
        assert!(e.contains("outside the directories file tools may use"), "{e}");
        assert_eq!(std::fs::read(&f).unwrap(), b"old");
        assert_eq!(others(&sub, &["f.txt", &"x".repeat(255)]), Vec::<String>::new());
    }
}
