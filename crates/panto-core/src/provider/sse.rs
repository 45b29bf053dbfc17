//! Server-sent events: bytes in, events out.
//!
//! The parser follows the WHATWG event-stream grammar with two deliberate departures that real
//! servers need: at end of body an unterminated last line is still a line, and an event without
//! its trailing blank line is still dispatched (the Anthropic SDK fixtures end that way). Invalid
//! UTF-8 is an error instead of being replaced, because a provider payload with replacement
//! characters in it would be silently wrong.
//!
//! It is built for throughput: bytes go into one growing buffer that is scanned with `memchr` and
//! compacted only when the consumed prefix is large, lines are never copied, and an event's data
//! borrows from the buffer unless it spans several `data:` lines.
//!
//! It is built against a hostile server too: every byte is scanned once however the body is cut
//! into chunks (a line that arrives in a million pieces is not re-scanned a million times), and
//! one event may hold at most `max_event_bytes`, so a server cannot make panto buffer without
//! bound. Comment lines between events (keep-alives) are not part of any event and are dropped as
//! they are read.

pub(crate) mod json;

use std::ops::Range;

use memchr::{memchr, memchr2};

use crate::config::DEFAULT_MAX_EVENT_BYTES;
use crate::error::{Error, Result};

/// The UTF-8 byte order mark, skipped at the very start of a body.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The consumed prefix must be at least this long before the buffer is compacted, so that
/// compaction (a `memmove` of the unconsumed tail) happens rarely.
const COMPACT_MIN: usize = 64 * 1024;

/// One SSE event, borrowed from the parser's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    /// The `event:` field, empty when absent.
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
    /// Byte offset of the event's first line in the body.
    pub offset: u64,
}

/// An incremental SSE parser: [`feed`](Self::feed) bytes as they arrive, drain
/// [`next_event`](Self::next_event) until it returns `None`, and call [`finish`](Self::finish) at
/// end of body.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Received bytes not yet discarded. `buf[0]` is body byte `base`.
    buf: Vec<u8>,
    /// Body offset of `buf[0]`.
    base: u64,
    /// Start of the first byte not yet split into lines.
    pos: usize,
    /// `buf[pos..scanned]` holds no line end: the search for the next one resumes here, so a
    /// line delivered in many chunks is scanned once, not once per chunk.
    scanned: usize,
    /// The most bytes one event (its lines with their line ends) may take.
    max_event_bytes: usize,
    /// Start of the current event's first line; the lines from here on are still referenced by
    /// `event_name` and `data_lines`, so compaction keeps them.
    event_start: usize,
    /// Whether a line of the current event has been seen since the last blank line.
    in_event: bool,
    /// Body offset of the current event's first line.
    event_offset: u64,
    /// The value of the current event's last `event:` line, as a range of `buf`.
    event_name: Option<Range<usize>>,
    /// The values of the current event's `data:` lines, as ranges of `buf`.
    data_lines: Vec<Range<usize>>,
    /// Reused buffer for joining multi-line data.
    scratch: String,
    /// The last `id:` value. Kept as the spec requires, though providers do not resume streams.
    last_event_id: String,
    /// The previous line ended with a `\r` that was the last byte received: a `\n` arriving next
    /// belongs to that line end.
    skip_lf: bool,
    /// Whether the start of the body has been checked for a byte order mark.
    bom_checked: bool,
    /// Whether the body has ended ([`finish`](Self::finish) was called).
    eof: bool,
    /// How many bytes the line search has looked at, for the tests that show each byte is
    /// looked at once.
    #[cfg(test)]
    pub(crate) searched: u64,
}

/// What the line loop found.
enum Step {
    /// A complete event is ready to dispatch.
    Dispatch,
    /// No complete event is buffered yet.
    NeedMore,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// An empty parser, positioned at the start of a body, that fails an event longer than
    /// `max_event_bytes`.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseParser {
            buf: Vec::new(),
            base: 0,
            pos: 0,
            scanned: 0,
            max_event_bytes,
            event_start: 0,
            in_event: false,
            event_offset: 0,
            event_name: None,
            data_lines: Vec::new(),
            scratch: String::new(),
            last_event_id: String::new(),
            skip_lf: false,
            bom_checked: false,
            eof: false,
            #[cfg(test)]
            searched: 0,
        }
    }

    /// Appends bytes received from the body. A chunk may end anywhere, even inside a line or a
    /// multi-byte character.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, or `None` when more bytes are needed.
    ///
    /// Fails with [`Error::Protocol`] when the event's `event:` or `data:` value is not UTF-8, or
    /// when the event grows past `max_event_bytes` (as soon as it does, complete or not).
    pub(crate) fn next_event(&mut self) -> Result<Option<SseEvent<'_>>> {
        if !self.bom_checked && !self.check_bom() {
            return Ok(None);
        }
        match self.scan()? {
            Step::NeedMore => Ok(None),
            Step::Dispatch => self.dispatch().map(Some),
        }
    }

    /// Marks the end of the body and returns the next event, treating a last line without a
    /// terminator as complete and dispatching a last event without its trailing blank line.
    ///
    /// A caller that drains [`next_event`](Self::next_event) before every `finish` gets at most
    /// one event here; any further buffered events keep coming from `next_event`.
    pub(crate) fn finish(&mut self) -> Result<Option<SseEvent<'_>>> {
        self.eof = true;
        self.next_event()
    }

    /// Skips a byte order mark at the start of the body. Returns `false` when too few bytes have
    /// arrived to tell.
    fn check_bom(&mut self) -> bool {
        let have = &self.buf[..self.buf.len().min(BOM.len())];
        if have.len() < BOM.len() && BOM.starts_with(have) && !self.eof {
            return false;
        }
        if have == BOM {
            self.pos = BOM.len();
            self.scanned = BOM.len();
            self.event_start = BOM.len();
        }
        self.bom_checked = true;
        true
    }

    /// Reads lines until an event is complete or the buffer runs out of complete lines.
    fn scan(&mut self) -> Result<Step> {
        loop {
            let Some(line) = self.next_line()? else {
                if self.eof && self.in_event && !self.data_lines.is_empty() {
                    return Ok(Step::Dispatch);
                }
                if self.eof {
                    self.reset_event();
                }
                return Ok(Step::NeedMore);
            };
            if line.is_empty() {
                if !self.data_lines.is_empty() {
                    return Ok(Step::Dispatch);
                }
                // A blank line ends an event that had no data: it is not dispatched, and its
                // `event:` name does not carry over.
                self.reset_event();
                continue;
            }
            self.process_line(line)?;
        }
    }

    /// The next complete line as a range of `buf` (without its terminator), or `None` when the
    /// buffer holds no complete line. At end of body the unterminated remainder is a line.
    ///
    /// Fails when the current event, this line included (complete or not), is longer than
    /// `max_event_bytes`.
    fn next_line(&mut self) -> Result<Option<Range<usize>>> {
        if self.skip_lf && self.pos < self.buf.len() {
            if self.buf[self.pos] == b'\n' {
                self.pos += 1;
                self.scanned = self.scanned.max(self.pos);
            }
            self.skip_lf = false;
        }
        let start = self.pos;
        let from = self.scanned.max(start);
        let found = memchr2(b'\n', b'\r', &self.buf[from..]);
        #[cfg(test)]
        {
            self.searched += found.map_or(self.buf.len() - from, |i| i + 1) as u64;
        }
        match found {
            Some(i) => {
                let end = from + i;
                self.check_event_size(end)?;
                let mut next = end + 1;
                if self.buf[end] == b'\r' {
                    match self.buf.get(next) {
                        Some(b'\n') => next += 1,
                        Some(_) => {}
                        // The `\n` of a CRLF may be in the next chunk; it must not count as a
                        // second line end.
                        None => self.skip_lf = true,
                    }
                }
                self.pos = next;
                self.scanned = next;
                Ok(Some(start..end))
            }
            None => {
                self.scanned = self.buf.len();
                self.check_event_size(self.buf.len())?;
                if self.eof && start < self.buf.len() {
                    self.pos = self.buf.len();
                    return Ok(Some(start..self.buf.len()));
                }
                Ok(None)
            }
        }
    }

    /// Fails when the current event, read up to `end`, is longer than `max_event_bytes`. Outside
    /// an event `event_start` is the start of the line being read, so one endless line (a
    /// comment, or no line end at all) is bounded too.
    fn check_event_size(&self, end: usize) -> Result<()> {
        let size = end - self.event_start;
        if size <= self.max_event_bytes {
            return Ok(());
        }
        Err(Error::Protocol {
            offset: self.base + self.event_start as u64,
            message: format!(
                "one SSE event is larger than {} bytes (max_event_bytes); {size} bytes were read without its end",
                self.max_event_bytes
            ),
        })
    }

    /// Interprets one non-blank line of the current event.
    fn process_line(&mut self, range: Range<usize>) -> Result<()> {
        let line = &self.buf[range.clone()];
        if line.first() == Some(&b':') {
            // A comment outside an event (a keep-alive) starts none: it is forgotten at once,
            // so that neither the event size limit nor the buffer counts it.
            if !self.in_event {
                self.event_start = self.pos;
            }
            return Ok(());
        }
        if !self.in_event {
            self.in_event = true;
            self.event_offset = self.base + range.start as u64;
            self.event_start = range.start;
        }
        let (name_end, value_start) = match memchr(b':', line) {
            Some(colon) if line.get(colon + 1) == Some(&b' ') => (colon, colon + 2),
            Some(colon) => (colon, colon + 1),
            None => (line.len(), line.len()),
        };
        let value = range.start + value_start..range.end;
        match &line[..name_end] {
            b"data" => self.data_lines.push(value),
            b"event" => self.event_name = Some(value),
            b"id" => {
                let bytes = &self.buf[value];
                // The spec ignores an id containing NUL.
                if memchr(0, bytes).is_none() {
                    let id = std::str::from_utf8(bytes).map_err(|e| Error::Protocol {
                        offset: self.base + range.start as u64,
                        message: format!("SSE id field is not valid UTF-8: {e}"),
                    })?;
                    self.last_event_id.clear();
                    self.last_event_id.push_str(id);
                }
            }
            // `retry:` only matters to a reconnecting client, and unknown fields are ignored by
            // the spec.
            _ => {}
        }
        Ok(())
    }

    /// Builds the event whose lines have been read, and resets the per-event state.
    fn dispatch(&mut self) -> Result<SseEvent<'_>> {
        let offset = self.event_offset;
        self.in_event = false;
        self.event_start = self.pos;
        let invalid = |what: &str, e: std::str::Utf8Error| Error::Protocol {
            offset,
            message: format!("SSE {what} is not valid UTF-8: {e}"),
        };
        let buf = &self.buf;
        let event = match self.event_name.take() {
            Some(r) => std::str::from_utf8(&buf[r]).map_err(|e| invalid("event name", e)),
            None => Ok(""),
        };
        let data = if let [only] = self.data_lines.as_slice() {
            std::str::from_utf8(&buf[only.clone()]).map_err(|e| invalid("data", e))
        } else {
            let scratch = &mut self.scratch;
            scratch.clear();
            let mut result = Ok(());
            for (i, r) in self.data_lines.iter().enumerate() {
                if i > 0 {
                    scratch.push('\n');
                }
                match std::str::from_utf8(&buf[r.clone()]) {
                    Ok(s) => scratch.push_str(s),
                    Err(e) => {
                        result = Err(invalid("data", e));
                        break;
                    }
                }
            }
            result.map(|()| scratch.as_str())
        };
        self.data_lines.clear();
        Ok(SseEvent {
            event: event?,
            data: data?,
            offset,
        })
    }

    /// Forgets the current event without dispatching it.
    fn reset_event(&mut self) {
        self.in_event = false;
        self.event_name = None;
        self.data_lines.clear();
        self.event_start = self.pos;
    }

    /// Drops the consumed prefix of the buffer when it is large enough to be worth a copy: either
    /// everything is consumed (free), or the prefix is big and at least as long as the tail to
    /// move, which keeps the copying amortised to O(1) per byte.
    fn compact(&mut self) {
        let keep = self.event_start.min(self.pos);
        if keep == 0 {
            return;
        }
        let tail = self.buf.len() - keep;
        if tail != 0 && (keep < COMPACT_MIN || keep < tail) {
            return;
        }
        self.buf.drain(..keep);
        self.base += keep as u64;
        self.pos -= keep;
        self.scanned -= keep;
        self.event_start -= keep;
        if let Some(r) = &mut self.event_name {
            *r = r.start - keep..r.end - keep;
        }
        for r in &mut self.data_lines {
            *r = r.start - keep..r.end - keep;
        }
    }
}

/// Parses a body delivered as `chunks` the way a live body is parsed (drain after every chunk,
/// finish at the end) and returns owned `(event, data, offset)` triples: every event before the
/// first error, and that error. For tests, property tests and benchmarks.
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn collect_events<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<(String, String, u64)>, Option<crate::error::Error>) {
    collect_events_limited(chunks, DEFAULT_MAX_EVENT_BYTES)
}

/// [`collect_events`] with an event size limit.
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn collect_events_limited<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    max_event_bytes: usize,
) -> (Vec<(String, String, u64)>, Option<crate::error::Error>) {
    let mut parser = SseParser::new(max_event_bytes);
    let mut out = Vec::new();
    let mut push = |ev: SseEvent<'_>| out.push((ev.event.to_owned(), ev.data.to_owned(), ev.offset));
    let drain = |parser: &mut SseParser, push: &mut dyn FnMut(SseEvent<'_>)| loop {
        match parser.next_event() {
            Ok(Some(ev)) => push(ev),
            Ok(None) => return None,
            Err(e) => return Some(e),
        }
    };
    for chunk in chunks {
        parser.feed(chunk);
        if let Some(e) = drain(&mut parser, &mut push) {
            return (out, Some(e));
        }
    }
    match parser.finish() {
        Ok(Some(ev)) => push(ev),
        Ok(None) => {}
        Err(e) => return (out, Some(e)),
    }
    let error = drain(&mut parser, &mut push);
    (out, error)
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
