//! Splitting a session file into lines through one bounded buffer: the first pass of every
//! read of a whole log (`log.rs`). No line over the maximum is ever held.

use std::io::{self, Read};

/// How many bytes each read of the first pass asks for at most; lines longer than this grow the
/// buffer.
pub(crate) const CHUNK: usize = 1024 * 1024;

/// The buffer a scan starts with. Most logs opened are small (a new session's is empty): a
/// zeroed megabyte for each would cost more than reading them (a fleet of agents opens one per
/// new session). Reads that fill the buffer double it, up to [`CHUNK`].
const FIRST_READ: usize = 16 * 1024;

/// What [`Lines::next_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<'a> {
    /// A whole line (without its `\n`) and its offset.
    Line(u64, &'a [u8]),
    /// A line longer than the maximum: its offset and its length. Its bytes were never held.
    TooLong { offset: u64, len: u64 },
    /// The end of the committed bytes.
    End,
}

/// Splits a byte stream into `\n`-terminated lines through one reused buffer. Bytes after the
/// last `\n` (a torn line) are never returned. The buffer grows to the longest line, and no
/// further than `max` bytes: a longer line is skipped through a fixed-size scratch buffer and
/// reported with its length, so a damaged file of one 2 GB line costs `max` bytes of memory,
/// not 2 GB.
pub(crate) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// Bytes of `buf` holding data.
    end: usize,
    /// Where the search for the next `\n` resumes: the bytes from `start` up to here hold none,
    /// so a long line is scanned once, not once per read.
    scanned: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// The longest line returned whole.
    max: usize,
    /// Whether the last read filled the buffer: the stream has more, so the next read asks for
    /// more at once.
    filled: bool,
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Lines {
            reader,
            buf: vec![0; FIRST_READ.min(max + 1)],
            start: 0,
            end: 0,
            scanned: 0,
            base: 0,
            eof: false,
            max,
            filled: false,
        }
    }

    /// The next whole line, or a line too long to return, or the end of the committed bytes.
    pub(crate) fn next_line(&mut self) -> io::Result<Next<'_>> {
        loop {
            let from = self.scanned.max(self.start);
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let line_start = self.start;
                let line_end = from + i;
                self.start = line_end + 1;
                self.scanned = self.start;
                let offset = self.base + line_start as u64;
                let len = line_end - line_start;
                if len > self.max {
                    return Ok(Next::TooLong {
                        offset,
                        len: len as u64,
                    });
                }
                return Ok(Next::Line(offset, &self.buf[line_start..line_end]));
            }
            self.scanned = self.end;
            if self.end - self.start > self.max {
                return self.skip_long_line();
            }
            if self.eof {
                return Ok(Next::End);
            }
            self.refill()?;
        }
    }

    /// Reads on past a line already longer than `max` to its end, keeping none of it. A line
    /// end makes it `TooLong`; the end of the stream makes it the torn last line (`End`, with
    /// the line's start as the committed length).
    fn skip_long_line(&mut self) -> io::Result<Next<'_>> {
        let offset = self.base + self.start as u64;
        let mut len = (self.end - self.start) as u64;
        let mut scratch = vec![0; CHUNK];
        loop {
            let n = match self.reader.read(&mut scratch) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                return Ok(Next::End);
            }
            if let Some(i) = memchr::memchr(b'\n', &scratch[..n]) {
                return Ok(Next::TooLong {
                    offset,
                    len: len + i as u64,
                });
            }
            len += n as u64;
        }
    }

    /// Moves the partial line to the front (growing the buffer, up to one byte over `max`,
    /// when the line fills it) and reads more after it.
    fn refill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // `next_line` caught a partial line longer than `max`, so the buffer is at most
            // `max` bytes here and this grows it.
            let grown = (self.buf.len() * 2).min(self.max + 1);
            self.buf.resize(grown, 0);
        } else if self.filled && self.buf.len() < CHUNK.min(self.max + 1) {
            let grown = (self.buf.len() * 2).min(CHUNK.min(self.max + 1));
            self.buf.resize(grown, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.filled = self.end + n == self.buf.len();
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Stream offset just past the last `\n` returned, once `next_line` has returned `End`.
    pub(crate) fn committed(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Whether bytes were read that no line end followed.
    pub(crate) fn has_torn_tail(&self) -> bool {
        self.end > self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::MAX_LINE;

    /// A reader that hands out at most `step` bytes per read, to cross every buffer boundary.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// What the reader returned, owned.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Line(u64, Vec<u8>),
        TooLong(u64, u64),
    }

    /// Every line of `data`, read `step` bytes at a time with `max` as the longest line, up to
    /// the end or the first line too long; the committed length, and the reader's buffer size.
    fn all_lines(data: &[u8], step: usize, max: usize) -> (Vec<Seen>, u64, usize) {
        let mut lines = Lines::new(Trickle { data, step }, max);
        let mut out = Vec::new();
        loop {
            match lines.next_line().unwrap() {
                Next::Line(offset, line) => out.push(Seen::Line(offset, line.to_vec())),
                Next::TooLong { offset, len } => {
                    out.push(Seen::TooLong(offset, len));
                    break;
                }
                Next::End => break,
            }
        }
        (out, lines.committed(), lines.buf.len())
    }

    #[test]
    fn lines_are_the_same_however_the_bytes_arrive_and_a_torn_tail_is_dropped() {
        let long = "x".repeat(3 * CHUNK + 5);
        let data = format!("a\n\nbc\n{long}\nd\ntorn");
        // Byte-at-a-time reads of a short body cross every boundary a line can have.
        let (lines, committed, _) = all_lines(b"a\n\nbc\nd\ntorn", 1, MAX_LINE);
        let line = |offset: u64, bytes: &[u8]| Seen::Line(offset, bytes.to_vec());
        assert_eq!(lines, [line(0, b"a"), line(2, b""), line(3, b"bc"), line(6, b"d")]);
        assert_eq!(committed, 8);
        let expected = vec![
            line(0, b"a"),
            line(2, b""),
            line(3, b"bc"),
            line(6, long.as_bytes()),
            line((7 + long.len()) as u64, b"d"),
        ];
        for step in [4093, CHUNK, usize::MAX] {
            let (lines, committed, _) = all_lines(data.as_bytes(), step, MAX_LINE);
            assert_eq!(lines, expected, "step {step}");
            assert_eq!(committed as usize, data.len() - 4, "step {step}");
        }
    }

    #[test]
    fn a_line_over_the_maximum_is_reported_with_its_length_without_being_held() {
        let huge = 3 * CHUNK + 12_345;
        let data = format!("ab\n{}\n{}\ncd\n", "y".repeat(100), "x".repeat(huge));
        // Byte at a time, every boundary is crossed.
        let (lines, _, _) = all_lines(b"ab\nxxxxxxxxxxx\n", 1, 10);
        assert_eq!(lines, [Seen::Line(0, b"ab".to_vec()), Seen::TooLong(3, 11)]);
        for step in [7, 4096, CHUNK, usize::MAX] {
            // A line exactly as long as the maximum is fine; one byte more is not.
            let (lines, _, buffer) = all_lines(data.as_bytes(), step, 100);
            assert_eq!(
                lines,
                [
                    Seen::Line(0, b"ab".to_vec()),
                    Seen::Line(3, b"y".repeat(100)),
                    Seen::TooLong(104, huge as u64)
                ],
                "step {step}"
            );
            assert!(buffer <= 101, "step {step}: the buffer grew to {buffer} bytes");
            let (lines, _, _) = all_lines(data.as_bytes(), step, 99);
            assert_eq!(lines[1], Seen::TooLong(3, 100), "step {step}");
        }
        // With the real maximum, a line of 3 MiB is read whole and the buffer stays below
        // the maximum plus one byte whatever follows.
        let (lines, _, buffer) = all_lines(data.as_bytes(), usize::MAX, MAX_LINE);
        assert_eq!(lines.len(), 4);
        assert!(buffer <= MAX_LINE + 1);
    }

    #[test]
    fn a_small_log_is_read_through_a_small_buffer_and_a_large_one_through_a_chunk() {
        // A new session's log: a megabyte zeroed to read a few hundred bytes was most of the
        // cost of opening one.
        let small = "line\n".repeat(50);
        let (lines, _, buffer) = all_lines(small.as_bytes(), usize::MAX, MAX_LINE);
        assert_eq!(lines.len(), 50);
        assert_eq!(buffer, FIRST_READ);
        // Many short lines: reads that fill the buffer double it, to a chunk and no further.
        let large = "0123456789abcdef\n".repeat(4 * CHUNK / 17);
        for step in [usize::MAX, 100_000] {
            let (lines, committed, buffer) = all_lines(large.as_bytes(), step, MAX_LINE);
            assert_eq!(lines.len(), 4 * CHUNK / 17, "step {step}");
            assert_eq!(committed as usize, large.len(), "step {step}");
            // A reader that gives 100,000 bytes a read stops the doubling at the first size it
            // does not fill.
            let expected = if step == usize::MAX { CHUNK } else { 128 * 1024 };
            assert_eq!(buffer, expected, "step {step}");
        }
    }

    #[test]
    fn a_torn_last_line_over_the_maximum_is_still_only_a_torn_line() {
        let data = format!("ab\n{}", "x".repeat(2 * CHUNK + 1));
        for step in [4096, usize::MAX] {
            let mut lines = Lines::new(
                Trickle {
                    data: data.as_bytes(),
                    step,
                },
                1000,
            );
            assert_eq!(lines.next_line().unwrap(), Next::Line(0, b"ab"));
            assert_eq!(lines.next_line().unwrap(), Next::End);
            assert_eq!(lines.committed(), 3, "step {step}");
            assert!(lines.has_torn_tail());
            assert!(lines.buf.len() <= 1001);
        }
    }
}
