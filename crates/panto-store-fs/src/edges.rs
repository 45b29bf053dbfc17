//! The first and the last complete line of a file, read in blocks from either end: what a
//! listing needs of a session file, with no more than the maximum line size (plus a block) read
//! or held for either.

use std::io::{self, Read, Seek, SeekFrom};

/// How many bytes each read takes. Most entries are shorter, so the tail usually costs one read.
pub(crate) const BLOCK: usize = 8 * 1024;

/// The first line of a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FirstLine {
    /// The file is empty.
    Empty,
    /// The file holds bytes but no line end: the header write was torn.
    Torn,
    /// The first line, without its `\n`.
    Line(Vec<u8>),
    /// More than the maximum line size and no line end: the header line is damaged.
    TooLong,
}

/// Reads from the start of `r` up to the first `\n`, or up to `max` bytes and a block.
pub(crate) fn read_first_line<R: Read>(r: &mut R, max: usize) -> io::Result<FirstLine> {
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
            return Ok(if buf.len() > max {
                FirstLine::TooLong
            } else {
                FirstLine::Line(buf)
            });
        }
        buf.extend_from_slice(&block[..n]);
        if buf.len() > max {
            return Ok(FirstLine::TooLong);
        }
    }
}

/// The last complete line of a file, as [`read_last_complete_line`] found it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LastLine {
    /// There is no `\n` at all.
    None,
    /// The line's byte offset and its bytes (without `\n`).
    Line(u64, Vec<u8>),
    /// The line ending at byte `end` is longer than the maximum line size.
    TooLong { end: u64 },
    /// The bytes after the last `\n` (a torn line) are longer than the maximum line size, and
    /// no `\n` was found in them.
    TornTooLong,
}

/// Finds the last complete line of the first `len` bytes of `r`, reading backwards in blocks
/// until the line end before it. Bytes after the last `\n` (a torn line) are skipped. At most
/// `max` bytes of the torn line and of the line before it are read, and only the line's own
/// blocks are kept: memory is bounded by twice the line, and so by twice `max`.
pub(crate) fn read_last_complete_line<R: Read + Seek>(r: &mut R, len: u64, max: usize) -> io::Result<LastLine> {
    let max = max as u64;
    let mut pos = len;
    // The blocks from the one holding the line end back, newest offset first.
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut end: Option<u64> = None;
    let mut start: Option<u64> = None;
    while pos > 0 && start.is_none() {
        match end {
            None if len - pos > max => return Ok(LastLine::TornTooLong),
            Some(end) if end - pos > max => return Ok(LastLine::TooLong { end }),
            _ => {}
        }
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
            // Blocks of the torn line alone are not kept.
            blocks.push(block);
        }
    }
    let Some(end) = end else {
        return Ok(LastLine::None);
    };
    // No earlier line end: the line starts the file.
    let start = start.unwrap_or(0);
    if end - start > max {
        return Ok(LastLine::TooLong { end });
    }
    // Copy the line out of its blocks, oldest first; `pos` is the offset of the oldest.
    let mut line = Vec::with_capacity((end - start) as usize);
    let mut at = pos;
    for block in blocks.iter().rev() {
        let block_end = at + block.len() as u64;
        let from = start.max(at);
        let to = end.min(block_end);
        if from < to {
            line.extend_from_slice(&block[(from - at) as usize..(to - at) as usize]);
        }
        at = block_end;
    }
    Ok(LastLine::Line(start, line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::MAX_LINE;
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

    /// The last complete line of `data` with `max` as the longest line, and the bytes read.
    fn tail_with(data: &[u8], max: usize) -> (LastLine, usize) {
        let mut r = Counting {
            inner: Cursor::new(data.to_vec()),
            read: 0,
        };
        let found = read_last_complete_line(&mut r, data.len() as u64, max).unwrap();
        (found, r.read)
    }

    /// The last complete line of `data`, if any, and the bytes read.
    fn tail(data: &[u8]) -> (Option<(u64, Vec<u8>)>, usize) {
        let (found, read) = tail_with(data, MAX_LINE);
        let found = match found {
            LastLine::None => None,
            LastLine::Line(start, line) => Some((start, line)),
            other => panic!("no line over the maximum here: {other:?}"),
        };
        (found, read)
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
    fn a_last_line_over_the_maximum_is_reported_after_reading_no_more_than_the_maximum() {
        let max = 10 * BLOCK;
        let data = format!("header\n{}\n", "x".repeat(100 * BLOCK));
        let (found, read) = tail_with(data.as_bytes(), max);
        assert_eq!(
            found,
            LastLine::TooLong {
                end: data.len() as u64 - 1
            }
        );
        assert!(read <= max + 2 * BLOCK, "read {read}");
        // A line of exactly the maximum is read.
        let data = format!("header\n{}\n", "x".repeat(max));
        assert!(matches!(tail_with(data.as_bytes(), max).0, LastLine::Line(7, line) if line.len() == max));

        // A torn tail longer than any line: the file is damaged, and the search stops.
        let data = format!("header\nfirst\n{}", "x".repeat(100 * BLOCK));
        let (found, read) = tail_with(data.as_bytes(), max);
        assert_eq!(found, LastLine::TornTooLong);
        assert!(read <= max + 2 * BLOCK, "read {read}");
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
        let first = |d: &[u8]| read_first_line(&mut Cursor::new(d.to_vec()), MAX_LINE).unwrap();
        assert_eq!(first(b""), FirstLine::Empty);
        assert_eq!(first(b"{\"type\""), FirstLine::Torn);
        assert_eq!(first(b"h\nrest\n"), FirstLine::Line(b"h".to_vec()));
        let long = "h".repeat(3 * BLOCK);
        assert_eq!(
            first(format!("{long}\nx").as_bytes()),
            FirstLine::Line(long.clone().into_bytes())
        );
        // Past the maximum, with or without a line end, the line is not read on.
        for data in [format!("{long}\nx"), long.clone()] {
            let mut r = Counting {
                inner: Cursor::new(data.into_bytes()),
                read: 0,
            };
            assert_eq!(read_first_line(&mut r, BLOCK).unwrap(), FirstLine::TooLong);
            assert!(r.read <= 2 * BLOCK, "read {}", r.read);
        }
    }
}
