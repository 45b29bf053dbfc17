//! The log file: appended to, created `0600` in a `0700` directory, never through a symbolic
//! link, and rotated by size (`panto.log` → `panto.log.1` → … → `panto.log.{KEPT_FILES}`), so
//! logging at `trace` for days cannot fill the disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use tracing_subscriber::fmt::MakeWriter;

/// The size at which the log rotates.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;

/// How many rotated files are kept besides the live one.
pub const KEPT_FILES: u32 = 3;

#[derive(Debug)]
struct Live {
    file: File,
    len: u64,
}

/// A size-capped, rotating log file shared by every thread that logs.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    kept: u32,
    live: Mutex<Option<Live>>,
}

impl RotatingFile {
    /// Opens (or creates) `path` for appending; its directory is created `0700` if missing.
    pub fn open(path: &Path, max_bytes: u64, kept: u32) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        let live = open_live(path)?;
        Ok(RotatingFile {
            path: path.to_owned(),
            max_bytes,
            kept,
            live: Mutex::new(Some(live)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes one formatted record (the fmt layer hands over whole lines), rotating first when
    /// it would take the file past its cap. A failure loses the record: logging never stops
    /// or disturbs the program.
    fn write_record(&self, buf: &[u8]) {
        let mut live = self.lock();
        if live
            .as_ref()
            .is_some_and(|l| l.len > 0 && l.len + buf.len() as u64 > self.max_bytes)
        {
            *live = None;
            self.rotate();
        }
        if live.is_none() {
            *live = open_live(&self.path).ok();
        }
        if let Some(l) = live.as_mut() {
            if l.file.write_all(buf).is_ok() {
                l.len += buf.len() as u64;
            }
        }
    }

    /// `panto.log.{n}` → `panto.log.{n+1}` from the oldest down (the oldest is replaced), then
    /// `panto.log` → `panto.log.1`.
    fn rotate(&self) {
        let numbered = |n: u32| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{n}"));
            PathBuf::from(p)
        };
        for n in (1..self.kept).rev() {
            let _ = std::fs::rename(numbered(n), numbered(n + 1));
        }
        if self.kept == 0 {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = std::fs::rename(&self.path, numbered(1));
        }
    }
}

/// Opens the live file for appending: `0600`, not through a link, and tightened to `0600` if
/// an older panto or the user left it wider.
fn open_live(path: &Path) -> io::Result<Live> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(Live { file, len: meta.len() })
}

/// The writer of one record.
#[derive(Debug)]
pub struct RecordWriter<'a>(&'a RotatingFile);

impl Write for RecordWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_record(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for RotatingFile {
    type Writer = RecordWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        RecordWriter(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_private_and_rotates_at_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/panto/panto.log");
        let log = RotatingFile::open(&path, 100, 2).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        for i in 0..10 {
            let mut w = log.make_writer();
            w.write_all(format!("record {i} {}\n", "x".repeat(30)).as_bytes())
                .unwrap();
        }
        let read = |suffix: &str| std::fs::read_to_string(format!("{}{suffix}", path.display())).unwrap();
        // 40-byte records, 100-byte cap: two records a file; the newest in the live file.
        assert!(read("").starts_with("record 8 "), "{}", read(""));
        assert!(read(".1").starts_with("record 6 "));
        assert!(read(".2").starts_with("record 4 "));
        assert!(
            !Path::new(&format!("{}.3", path.display())).exists(),
            "only two rotated files kept"
        );
        for suffix in ["", ".1", ".2"] {
            assert_eq!(mode(Path::new(&format!("{}{suffix}", path.display()))), 0o600);
            assert!(read(suffix).len() <= 100);
        }
    }

    #[test]
    fn a_link_in_place_of_the_log_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "").unwrap();
        let path = dir.path().join("panto.log");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(RotatingFile::open(&path, 100, 2).is_err());
    }
}
