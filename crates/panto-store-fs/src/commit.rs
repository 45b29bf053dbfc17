//! Committing a batch: one write of whole lines, synced per [`Durability`], and cut off again
//! if anything fails, so that a file holds whole batches only.

use std::fs::File;
use std::io::{self, Write};

use panto_core::store::AppendSpan;

/// When an append's bytes reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `fsync` (`fdatasync`) after every batch: when `append` returns, the batch survives a
    /// power loss. The default.
    #[default]
    Fsync,
    /// Leave flushing to the operating system: a batch survives a crash of the process but may
    /// be lost with the machine. For benchmarks and throwaway sessions. An append to a session
    /// the store already has open then runs on the calling thread (it is one `write` into the
    /// page cache), not on a blocking thread.
    None,
}

/// A file a batch can be committed to; a trait so the rollback can be tested with failures.
pub(crate) trait BatchTarget {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    fn sync_data(&mut self) -> io::Result<()>;
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

impl BatchTarget for File {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        Write::write_all(self, buf)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
}

/// Why a commit failed, and whether the rollback failed as well.
#[derive(Debug)]
pub(crate) struct CommitFailure {
    pub error: io::Error,
    pub rollback: Option<io::Error>,
}

/// Writes `buf` (whole lines) to a target whose committed length is `len` with one `write_all`,
/// then syncs per `durability`. On failure the target is cut back to `len`, so no partial line
/// is left.
pub(crate) fn commit_batch<T: BatchTarget>(
    target: &mut T,
    len: u64,
    buf: &[u8],
    durability: Durability,
) -> std::result::Result<(), CommitFailure> {
    let written = target.write_all(buf).and_then(|()| match durability {
        Durability::Fsync => {
            let started = std::time::Instant::now();
            let synced = target.sync_data();
            AppendSpan::record_fsync(&tracing::Span::current(), started.elapsed());
            synced
        }
        Durability::None => Ok(()),
    });
    match written {
        Ok(()) => Ok(()),
        Err(error) => {
            let rollback = target
                .set_len(len)
                .and_then(|()| match durability {
                    Durability::Fsync => target.sync_data(),
                    Durability::None => Ok(()),
                })
                .err();
            Err(CommitFailure { error, rollback })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory file that accepts `room` more bytes, then fails.
    struct Disk {
        data: Vec<u8>,
        room: usize,
        fail_sync: bool,
        fail_set_len: bool,
    }

    impl BatchTarget for Disk {
        fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
            let n = buf.len().min(self.room);
            self.data.extend_from_slice(&buf[..n]);
            self.room -= n;
            if n < buf.len() {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            Ok(())
        }
        fn sync_data(&mut self) -> io::Result<()> {
            if self.fail_sync {
                Err(io::Error::other("sync failed"))
            } else {
                Ok(())
            }
        }
        fn set_len(&mut self, len: u64) -> io::Result<()> {
            if self.fail_set_len {
                return Err(io::Error::other("set_len failed"));
            }
            self.data.truncate(len as usize);
            Ok(())
        }
    }

    fn disk(room: usize) -> Disk {
        Disk {
            data: b"header\nline\n".to_vec(),
            room,
            fail_sync: false,
            fail_set_len: false,
        }
    }

    #[test]
    fn a_write_that_fails_midway_leaves_no_partial_line() {
        let mut d = disk(5);
        let err = commit_batch(&mut d, 12, b"one\ntwo\n", Durability::Fsync).unwrap_err();
        assert_eq!(err.error.kind(), io::ErrorKind::StorageFull);
        assert!(err.rollback.is_none());
        assert_eq!(d.data, b"header\nline\n");
    }

    #[test]
    fn a_failed_sync_rolls_the_batch_back() {
        let mut d = disk(100);
        d.fail_sync = true;
        let err = commit_batch(&mut d, 12, b"one\n", Durability::Fsync).unwrap_err();
        assert_eq!(err.error.to_string(), "sync failed");
        assert_eq!(d.data, b"header\nline\n");
        // Without fsync the same batch commits.
        let mut d = disk(100);
        d.fail_sync = true;
        commit_batch(&mut d, 12, b"one\n", Durability::None).unwrap();
        assert_eq!(d.data, b"header\nline\none\n");
    }

    #[test]
    fn a_failed_rollback_is_reported() {
        let mut d = disk(2);
        d.fail_set_len = true;
        let err = commit_batch(&mut d, 12, b"one\n", Durability::None).unwrap_err();
        assert_eq!(err.rollback.unwrap().to_string(), "set_len failed");
    }
}
