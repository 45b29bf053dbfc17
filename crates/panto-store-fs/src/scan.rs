//! Bounded reads for `list` and `resolve`: the header line and the last complete line of a
//! session file, and nothing in between.
//!
//! The newest entry carries the running activity summary, so these two lines make a listing
//! exact while the bytes read stay independent of how long the log is.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use panto_core::{Error, Result, SessionInfo};

use crate::format::{corrupt, line_location, parse_header, parse_tail};

/// How many bytes each read takes. Most entries are shorter, so the tail usually costs one read.
const BLOCK: usize = 8 * 1024;

/// The first line of a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FirstLine {
    /// The file is empty.
    Empty,
    /// The file holds bytes but no line end: the header write was torn.
    Torn,
    /// The first line, without its `\n`.
    Line(Vec<u8>),
}

/// Reads from the start of `r` up to the first `\n`.
pub(crate) fn read_first_line<R: Read>(r: &mut R) -> io::Result<FirstLine> {
    let mut buf = Vec::new();
    let mut block = vec![0u8; BLOCK];
    loop {
        let n = r.read(&mut block)?;
        if n == 0 {
            return Ok(if buf.is_empty() {
                FirstLine::Empty
            } else {
                FirstLine::Torn
            });
        }
        if let Some(i) = memchr::memchr(b'\n', &block[..n]) {
            buf.extend_from_slice(&block[..i]);
            return Ok(FirstLine::Line(buf));
        }
        buf.extend_from_slice(&block[..n]);
    }
}

/// Finds the last complete line of the first `len` bytes of `r`, reading backwards in blocks
/// until the line end before it. Returns the line's byte offset and its bytes (without `\n`), or
/// `None` when there is no `\n` at all. Bytes after the last `\n` (a torn line) are skipped.
pub(crate) fn read_last_complete_line<R: Read + Seek>(r: &mut R, len: u64) -> io::Result<Option<(u64, Vec<u8>)>> {
    let mut pos = len;
    // Blocks in the order they were read (newest offset first).
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut end: Option<u64> = None;
    let mut start: Option<u64> = None;
    while pos > 0 && start.is_none() {
        let n = BLOCK.min(usize::try_from(pos).unwrap_or(BLOCK));
        pos -= n as u64;
        r.seek(SeekFrom::Start(pos))?;
        let mut block = vec![0u8; n];
        r.read_exact(&mut block)?;
        let search_to = match end {
            Some(_) => n,
            None => match memchr::memrchr(b'\n', &block) {
                Some(i) => {
                    end = Some(pos + i as u64);
                    i
                }
                None => 0,
            },
        };
        if end.is_some() {
            if let Some(j) = memchr::memrchr(b'\n', &block[..search_to]) {
                start = Some(pos + j as u64 + 1);
            }
        }
        blocks.push(block);
    }
    let Some(end) = end else {
        return Ok(None);
    };
    // No earlier line end: the line starts the file.
    let start = start.unwrap_or(0);
    let mut bytes = Vec::with_capacity(blocks.iter().map(Vec::len).sum());
    for block in blocks.iter().rev() {
        bytes.extend_from_slice(block);
    }
    // `pos` is the offset of the first byte read; both offsets lie within what was read.
    let from = usize::try_from(start - pos).unwrap_or(0);
    let to = usize::try_from(end - pos).unwrap_or(0);
    Ok(Some((start, bytes[from..to].to_vec())))
}

/// Wraps an I/O error with the file it happened on.
pub(crate) fn io_error(doing: &str, path: &Path, e: io::Error) -> Error {
    Error::store(format!("{doing} {}", path.display()), e)
}

/// The listing info of the session stored at `path`, whose file name says it is session `id`,
/// from its header line and its last complete line only.
pub(crate) fn read_info(path: &Path, id: &str) -> Result<SessionInfo> {
    let mut file = File::open(path).map_err(|e| io_error("opening", path, e))?;
    let len = file.metadata().map_err(|e| io_error("reading", path, e))?.len();
    let header_location = line_location(path, 1);
    let header = match read_first_line(&mut file).map_err(|e| io_error("reading", path, e))? {
        FirstLine::Empty => return Err(corrupt(header_location, "the file is empty: it has no session header")),
        FirstLine::Torn => {
            return Err(corrupt(
                header_location,
                "the header line is incomplete (no line end): the first write was interrupted",
            ))
        }
        FirstLine::Line(line) => parse_header(&line, &header_location)?,
    };
    check_header_id(&header.id, id, &header_location)?;
    match read_last_complete_line(&mut file, len).map_err(|e| io_error("reading", path, e))? {
        // Only the header is complete: a session created by an empty batch, or whose first
        // entry was torn.
        None | Some((0, _)) => Ok(SessionInfo::new(header.id, header.created)),
        Some((start, line)) => {
            let location = format!("{}: last line (at byte {start})", path.display());
            let tail = parse_tail(&line, &location)?;
            Ok(tail.activity.into_info(header.id, header.created, tail.timestamp))
        }
    }
}

/// Checks that the header names the session its file name says.
pub(crate) fn check_header_id(header_id: &str, file_id: &str, location: &str) -> Result<()> {
    if header_id == file_id {
        Ok(())
    } else {
        Err(corrupt(
            location,
            format!("the header says session \"{header_id}\" but the file is named for \"{file_id}\""),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A reader that counts the bytes handed out, to prove the tail read is bounded.
    struct Counting {
        inner: Cursor<Vec<u8>>,
        read: usize,
    }

    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n;
            Ok(n)
        }
    }

    impl Seek for Counting {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    fn tail(data: &[u8]) -> (Option<(u64, Vec<u8>)>, usize) {
        let mut r = Counting {
            inner: Cursor::new(data.to_vec()),
            read: 0,
        };
        let found = read_last_complete_line(&mut r, data.len() as u64).unwrap();
        (found, r.read)
    }

    #[test]
    fn tail_read_is_independent_of_log_length() {
        for entries in [10usize, 10_000] {
            let mut data = b"header\n".to_vec();
            for i in 0..entries {
                data.extend_from_slice(format!("{i:01000}\n").as_bytes());
            }
            data.extend_from_slice(b"the last line\n");
            let (found, read) = tail(&data);
            let (start, line) = found.unwrap();
            assert_eq!(line, b"the last line");
            assert_eq!(start as usize, data.len() - 14);
            assert!(read <= BLOCK, "{entries} entries: read {read} bytes");
        }
    }

    #[test]
    fn a_long_last_line_is_read_across_blocks_and_no_further() {
        let long = "x".repeat(3 * BLOCK + 17);
        let data = format!("{}\n{}\n{long}\n", "h".repeat(10 * BLOCK), "y".repeat(5 * BLOCK));
        let (found, read) = tail(data.as_bytes());
        let (start, line) = found.unwrap();
        assert_eq!(line, long.as_bytes());
        assert_eq!(start as usize, data.len() - long.len() - 1);
        assert!(read <= long.len() + 1 + BLOCK, "read {read}");
    }

    #[test]
    fn a_torn_tail_is_skipped() {
        let (found, _) = tail(b"header\nfirst\n{\"torn");
        assert_eq!(found, Some((7, b"first".to_vec())));
        let (found, _) = tail(b"header\n{\"torn");
        assert_eq!(found, Some((0, b"header".to_vec())));
        let (found, _) = tail(b"{\"torn header");
        assert_eq!(found, None);
        let (found, _) = tail(b"");
        assert_eq!(found, None);
    }

    #[test]
    fn a_line_end_on_a_block_boundary_is_found() {
        // The line end that starts the last line sits exactly at the end of the earlier block.
        let first = "a".repeat(BLOCK - 1);
        let last = "b".repeat(BLOCK - 1);
        let data = format!("{first}\n{last}\n");
        let (found, _) = tail(data.as_bytes());
        assert_eq!(found, Some((BLOCK as u64, last.into_bytes())));
    }

    #[test]
    fn first_line_cases() {
        let first = |d: &[u8]| read_first_line(&mut Cursor::new(d.to_vec())).unwrap();
        assert_eq!(first(b""), FirstLine::Empty);
        assert_eq!(first(b"{\"type\""), FirstLine::Torn);
        assert_eq!(first(b"h\nrest\n"), FirstLine::Line(b"h".to_vec()));
        let long = "h".repeat(3 * BLOCK);
        assert_eq!(
            first(format!("{long}\nx").as_bytes()),
            FirstLine::Line(long.into_bytes())
        );
    }
}
