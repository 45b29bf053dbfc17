//! Bounded reads for `list` and `resolve`: the header line and the last complete line of a
//! session file, and nothing in between.
//!
//! The newest entry carries the running activity summary, so these two lines make a listing
//! exact while the bytes read stay independent of how long the log is. Whatever a file holds,
//! no more than [`MAX_LINE`] bytes (plus a block) are read or held for either line: a damaged
//! line longer than that is reported, not read.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

use panto_core::{Error, Result, SessionInfo};

use crate::format::{corrupt, line_location, parse_header, parse_tail, ForkOnDisk, TailEntry, MAX_LINE, MESSAGE_TYPE};
use crate::open::open_for_reading;

/// How many bytes each read takes. Most entries are shorter, so the tail usually costs one read.
const BLOCK: usize = 8 * 1024;

/// Files up to this size are read whole with one read: cheaper than two reads at either end.
const SMALL_FILE: u64 = 16 * 1024;

/// How much of a larger file's start is read to find the header line.
const HEAD_PROBE: usize = 1024;

/// How much of a larger file's end is read to find the last line (a final answer with its
/// thinking usually fits) or, for a longer line, its listing fields.
const TAIL_PROBE: usize = 4 * 1024;

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

/// Wraps an I/O error with the file it happened on.
pub(crate) fn io_error(doing: &str, path: &Path, e: io::Error) -> Error {
    Error::store(format!("{doing} {}", path.display()), e)
}

/// The listing info of the session stored at `path`, whose file name says it is session `id`,
/// from its header line and its last complete line only. `None` for an empty file, which holds
/// no session (see [`holds_no_session`]).
///
/// The file is opened as every session file is (see `open.rs`): a link, a FIFO or anything but
/// a regular file is an error naming it, and a file that vanished since the directory was read
/// holds no session.
pub(crate) fn read_info(path: &Path, id: &str) -> Result<Option<SessionInfo>> {
    let Some((file, meta)) = open_for_reading(path)? else {
        return Ok(None);
    };
    if meta.len() == 0 {
        return Ok(None);
    }
    read_info_of(file, meta.len(), path, id, MAX_LINE).map(Some)
}

/// Whether the file at `path` is empty. An empty session file is what a process leaves when it
/// is killed between creating a session's file and writing its first batch (the store never
/// leaves one otherwise): nothing was committed, so there is no session to list, resolve or
/// load, and the next append to that id writes the file from its start. It is left in place,
/// because its creator may be about to write it.
/// Only an empty *regular* file holds no session; a link is not followed.
pub(crate) fn holds_no_session(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0)
}

/// The listing info from `file`, `len` bytes long, with `max` as the longest line read.
fn read_info_of(mut file: File, len: u64, path: &Path, id: &str, max: usize) -> Result<SessionInfo> {
    if len <= SMALL_FILE {
        // Exactly `len` bytes: one read, without a second one to find the end of the file.
        let mut bytes = vec![0; len as usize];
        file.read_exact(&mut bytes).map_err(|e| io_error("reading", path, e))?;
        let first = match memchr::memchr(b'\n', &bytes) {
            Some(i) => FirstLine::Line(bytes[..i].to_vec()),
            None if bytes.is_empty() => FirstLine::Empty,
            None => FirstLine::Torn,
        };
        let last = read_last_complete_line(&mut io::Cursor::new(&bytes), bytes.len() as u64, max)
            .map_err(|e| io_error("reading", path, e))?;
        return info_from(path, id, first, Last::Whole(last), max);
    }
    let read = |e| io_error("reading", path, e);
    // One positioned read at each end finds both lines in almost every session; the block
    // readers take over when a line is longer than its probe.
    let mut head = vec![0; HEAD_PROBE];
    file.read_exact_at(&mut head, 0).map_err(read)?;
    let first = match memchr::memchr(b'\n', &head) {
        Some(i) => {
            head.truncate(i);
            FirstLine::Line(head)
        }
        None => {
            file.seek(SeekFrom::Start(0)).map_err(read)?;
            read_first_line(&mut file, max).map_err(read)?
        }
    };
    // A final answer fits the tail probe. A longer last line (an interrupted session may end in
    // a long tool result) ends with its listing fields, which the probe holds all the same.
    let size = TAIL_PROBE.min(len as usize);
    let probe_start = len - size as u64;
    let mut tail = vec![0; size];
    file.read_exact_at(&mut tail, probe_start).map_err(read)?;
    let last = match memchr::memrchr(b'\n', &tail) {
        Some(end) => match memchr::memrchr(b'\n', &tail[..end]) {
            Some(start) => LastLine::Line(probe_start + start as u64 + 1, tail[start + 1..end].to_vec()),
            None => match skim_tail_end(&tail[..end]) {
                Some(skimmed) => return info_from(path, id, first, Last::Skimmed(skimmed), max),
                None => read_last_complete_line(&mut file, len, max).map_err(read)?,
            },
        },
        None => read_last_complete_line(&mut file, len, max).map_err(read)?,
    };
    info_from(path, id, first, Last::Whole(last), max)
}

/// The newest entry of a file, as far as `read_info` read it.
enum Last {
    /// The last complete line, or why there is none to read.
    Whole(LastLine),
    /// The listing fields, read from the end of a line too long to read whole.
    Skimmed(TailEntry),
}

/// The listing info from the first line and the newest entry.
fn info_from(path: &Path, id: &str, first: FirstLine, last: Last, max: usize) -> Result<SessionInfo> {
    let header_location = line_location(path, 1);
    let header = match first {
        FirstLine::TooLong => {
            return Err(corrupt(
                header_location,
                format!("the header line is longer than the maximum line size of {max} bytes"),
            ))
        }
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
    let forked_from = header.forked_from.clone().map(ForkOnDisk::into_origin);
    let tail = match last {
        // Only the header is complete: a session created by an empty batch, or whose first
        // entry was torn.
        Last::Whole(LastLine::None | LastLine::Line(0, _)) => {
            let mut info = SessionInfo::new(header.id, header.created);
            info.forked_from = forked_from;
            return Ok(info);
        }
        Last::Skimmed(tail) => tail,
        Last::Whole(LastLine::TooLong { end }) => {
            return Err(corrupt(
                format!("{}: last line (ending at byte {end})", path.display()),
                format!(
                    "the line is longer than the maximum line size of {max} bytes, and does not end with an entry's \
                     listing fields: it is damaged"
                ),
            ))
        }
        Last::Whole(LastLine::TornTooLong) => {
            return Err(corrupt(
                format!("{}: end of file", path.display()),
                format!(
                    "the last {max} bytes hold no line end: the file is damaged (an interrupted write leaves at \
                     most part of one line)"
                ),
            ))
        }
        Last::Whole(LastLine::Line(start, line)) => match skim_tail(&line) {
            Some(tail) => tail,
            None => {
                let location = format!("{}: last line (at byte {start})", path.display());
                parse_tail(&line, &location)?
            }
        },
    };
    let mut info = tail.activity.into_info(header.id, header.created, tail.timestamp);
    info.forked_from = forked_from;
    Ok(info)
}

/// The listing fields of an entry line, found without parsing its message: the line is walked
/// at its top level, values are skipped by structure (strings with `memchr`, at memory speed),
/// and only `type`, `timestamp` and `activity` are parsed.
///
/// The message is most of a line, often tens of kilobytes of tool output, and `list` needs none
/// of it. `None` whenever the line is anything but a plain message entry (a syntax error, a
/// duplicate field, another type): the caller then parses it in full, which gives the error its
/// usual wording. Unlike that full parse, this does not check the JSON grammar inside the values
/// it skips; `load` does.
pub(crate) fn skim_tail(line: &[u8]) -> Option<TailEntry> {
    let pos = skip_ws(line, 0);
    if line.get(pos) != Some(&b'{') {
        return None;
    }
    let fields = skim_fields(line, pos + 1)?;
    let kind: String = serde_json::from_slice(fields.kind?).ok()?;
    if kind != MESSAGE_TYPE {
        return None;
    }
    fields.into_tail(kind)
}

/// The listing fields of an entry line from its **last bytes** alone: `end` is the end of the
/// line (without its `\n`) and may start anywhere inside it.
///
/// The writer puts `timestamp` and `activity` last (see `format::EntryOut`), so the last
/// `,"timestamp":"` in the line starts them: in valid JSON those bytes can only be a key (a
/// quote inside a string is escaped), and no key inside `activity` is `timestamp`. From there the
/// remaining fields are walked as in [`skim_tail`] and must close the line. So a listing reads
/// the same few hundred bytes whether the message before them is 100 bytes or 100 KB.
///
/// Nothing before `timestamp` is seen, the line's `type` included: only message entries follow
/// the header of a version 1 file, and a line damaged there lists but fails when loaded. `None`
/// when the bytes do not end that way (a line from an older writer with another field order, a
/// damaged line): the caller then reads the whole line.
pub(crate) fn skim_tail_end(end: &[u8]) -> Option<TailEntry> {
    const KEY: &[u8] = b",\"timestamp\":\"";
    let at = memchr::memmem::rfind(end, KEY)?;
    let fields = skim_fields(end, at + 1)?;
    fields.into_tail(MESSAGE_TYPE.to_owned())
}

/// The raw values of the fields a listing needs.
#[derive(Default)]
struct Fields<'a> {
    kind: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    activity: Option<&'a [u8]>,
}

impl Fields<'_> {
    fn into_tail(self, kind: String) -> Option<TailEntry> {
        Some(TailEntry {
            kind,
            timestamp: serde_json::from_slice(self.timestamp?).ok()?,
            activity: serde_json::from_slice(self.activity?).ok()?,
        })
    }
}

/// Walks `"key":value` pairs from `pos` (just after a `{` or a `,`) to the `}` that must end
/// `line`, keeping the values of `type`, `timestamp` and `activity`. `None` on anything
/// unexpected, a field seen twice included.
fn skim_fields(line: &[u8], mut pos: usize) -> Option<Fields<'_>> {
    let mut fields = Fields::default();
    loop {
        pos = skip_ws(line, pos);
        if line.get(pos) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(line, pos)?;
        let key = &line[pos + 1..key_end - 1];
        pos = skip_ws(line, key_end);
        if line.get(pos) != Some(&b':') {
            return None;
        }
        pos = skip_ws(line, pos + 1);
        let value_end = skip_value(line, pos)?;
        let value = &line[pos..value_end];
        let slot = match key {
            b"type" => Some(&mut fields.kind),
            b"timestamp" => Some(&mut fields.timestamp),
            b"activity" => Some(&mut fields.activity),
            _ => None,
        };
        if let Some(slot) = slot {
            if slot.replace(value).is_some() {
                return None;
            }
        }
        pos = skip_ws(line, value_end);
        match line.get(pos) {
            Some(b',') => pos += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    (skip_ws(line, pos + 1) == line.len()).then_some(fields)
}

fn skip_ws(line: &[u8], mut pos: usize) -> usize {
    while matches!(line.get(pos), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        pos += 1;
    }
    pos
}

/// The position after the string starting at `pos` (which holds its opening quote).
fn skip_string(line: &[u8], pos: usize) -> Option<usize> {
    // Search for quotes only: tool output is dense with escapes (every newline is one), and
    // stopping at each backslash would cost a search per line of output. A quote closes the
    // string unless an odd number of backslashes precedes it.
    let mut at = pos + 1;
    loop {
        at += memchr::memchr(b'"', line.get(at..)?)?;
        let backslashes = line[pos + 1..at].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(at + 1);
        }
        at += 1;
    }
}

/// The position after the JSON value starting at `pos`, found by structure alone.
fn skip_value(line: &[u8], pos: usize) -> Option<usize> {
    match *line.get(pos)? {
        b'"' => skip_string(line, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = pos;
            loop {
                match *line.get(at)? {
                    b'"' => {
                        at = skip_string(line, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let end = line[pos..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                .map_or(line.len(), |n| pos + n);
            (end > pos).then_some(end)
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
    fn the_tail_skim_agrees_with_the_full_parse_and_declines_what_it_cannot_read() {
        let activity =
            r#"{"message_count":3,"last_prompt_at":null,"last_user_message":"a \"quoted\" }]{[ prompt","wire":null}"#;
        let message = r#"{"role":"user","content":[{"type":"text","text":"x \\\" } ] { [ , \u00e9 \n"}],"metadata":"{\"a\":[1,2]}"}"#;
        let good = format!(
            r#"{{"type":"message","id":"0a0b0c0d","parent_id":null,"timestamp":"2026-01-02T03:04:05Z","message":{message},"usage":{{"input_tokens":1}},"wire":null,"activity":{activity}}}"#
        );
        let skimmed = skim_tail(good.as_bytes()).expect("a plain entry is skimmed");
        let full = parse_tail(good.as_bytes(), "f").unwrap();
        assert_eq!(
            (skimmed.kind, skimmed.timestamp, skimmed.activity),
            (full.kind, full.timestamp, full.activity)
        );
        // Field order does not matter, and whitespace between tokens is allowed.
        let reordered = format!(
            r#" {{ "activity" : {activity} , "message":{message}, "timestamp":"2026-01-02T03:04:05Z","type":"message"}} "#
        );
        assert!(skim_tail(reordered.as_bytes()).is_some());
        // Anything unusual goes to the full parse.
        let declined = [
            good.replace(r#""type":"message""#, r#""type":"session""#),
            good.replace(r#""wire":null"#, r#""activity":{},"wire":null"#),
            good[..good.len() - 1].to_owned(),
            format!("{good}x"),
            good.replace(r#""usage":{"input_tokens":1}"#, r#""usage":{"input_tokens":1"#),
            "not json".to_owned(),
            String::new(),
        ];
        for line in declined {
            assert!(skim_tail(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn the_end_of_a_line_gives_its_listing_fields() {
        let activity =
            r#"{"message_count":3,"last_prompt_at":null,"last_user_message":"say \",\"timestamp\":\" }","wire":null}"#;
        // A tool input with a `timestamp` key of its own, before the entry's.
        let message = r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1,"timestamp":"2020-01-01T00:00:00Z","activity":{}}}]}"#;
        let line = format!(
            r#"{{"type":"message","id":"0a0b0c0d","parent_id":null,"message":{message},"usage":null,"wire":null,"timestamp":"2026-01-02T03:04:05Z","activity":{activity}}}"#
        );
        let full = parse_tail(line.as_bytes(), "f").unwrap();
        // Whatever part of the line is read, as long as it holds the listing fields.
        let from = line.find(r#","timestamp":"2026"#).unwrap();
        for start in [0, 1, 40, from] {
            let skimmed = skim_tail_end(&line.as_bytes()[start..]).expect("the listing fields are found");
            assert_eq!(
                (skimmed.kind.as_str(), skimmed.timestamp, &skimmed.activity),
                (full.kind.as_str(), full.timestamp, &full.activity),
                "from byte {start}"
            );
        }
        // Too little of the line, an older field order, and damaged ends are declined.
        let older = format!(
            r#"{{"type":"message","id":"0a0b0c0d","parent_id":null,"timestamp":"2026-01-02T03:04:05Z","message":{message},"usage":null,"wire":null,"activity":{activity}}}"#
        );
        let declined = [
            line[from + 1..].to_owned(),
            older,
            line[..line.len() - 1].to_owned(),
            format!("{line}}}"),
            line.replace(r#""message_count":3,"#, ""),
            line.replace(r#","activity""#, r#","activity":{},"activity""#),
        ];
        for bytes in declined {
            assert!(skim_tail_end(bytes.as_bytes()).is_none(), "{bytes}");
        }
    }

    /// Lists a session whose header and last line have the given sizes, through `read_info`, and
    /// through a full scan of the file: the two must agree.
    fn info_both_ways(header_extra: usize, last_len: usize) -> (SessionInfo, SessionInfo) {
        use panto_core::{Conversation, Message, PersistentMessage, Role, SessionStore};

        let dir = tempfile::tempdir().unwrap();
        let store = crate::JsonlStore::with_durability(dir.path(), crate::Durability::None);
        let conversation = Conversation::with_metadata("m".repeat(header_extra));
        let id = panto_core::store::new_session_id();
        let filler = Message::new(Role::User, vec![panto_core::ContentBlock::text("f".repeat(20_000))]);
        let last = Message::new(
            Role::Assistant,
            vec![panto_core::ContentBlock::text("l".repeat(last_len))],
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for m in [&filler, &last] {
            let entry = PersistentMessage {
                message: m,
                usage: None,
                wire: None,
                conversation: &conversation,
                tools_available: &[],
                compaction: None,
            };
            rt.block_on(store.append(&id, &[entry])).unwrap();
        }
        let path = store.session_path(&id).unwrap();
        let listed = read_info(&path, &id).unwrap().unwrap();
        let file = File::open(&path).unwrap();
        let log = crate::log::scan_log(&file, &path, &id)
            .unwrap()
            .into_log(&path)
            .unwrap();
        let newest = log.entries.last().unwrap();
        let scanned =
            newest
                .entry
                .activity
                .clone()
                .into_info(log.header.id.clone(), log.header.created, newest.entry.timestamp);
        (listed, scanned)
    }

    #[test]
    fn every_probe_path_lists_what_a_full_scan_reads() {
        // Short lines (the probes), a long header, and last lines that need the second probe
        // and the block reader.
        for (header_extra, last_len) in [
            (10, 100),
            (3000, 100),
            (10, 3000),
            (10, 20_000),
            (10, 100_000),
            (5000, 100_000),
        ] {
            let (listed, scanned) = info_both_ways(header_extra, last_len);
            assert_eq!(listed, scanned, "header +{header_extra}, last line {last_len}");
            assert_eq!(listed.message_count, 2);
        }
    }

    #[test]
    fn a_damaged_line_over_the_maximum_is_reported_by_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let id = panto_core::store::new_session_id();
        let path = dir.path().join(format!("{id}.jsonl"));
        let header = format!(r#"{{"type":"session","version":1,"id":"{id}","created":"2026-01-02T03:04:05Z"}}"#);
        let info = |max: usize| {
            let file = File::open(&path).unwrap();
            let len = file.metadata().unwrap().len();
            read_info_of(file, len, &path, &id, max)
        };
        let max = 4 * BLOCK;

        // A last line that is not an entry and is longer than any line may be.
        std::fs::write(&path, format!("{header}\n{}\n", "\0".repeat(20 * BLOCK))).unwrap();
        let (location, message) = match info(max) {
            Err(Error::CorruptSession { location, message }) => (location, message),
            other => panic!("expected CorruptSession, got {other:?}"),
        };
        let end = header.len() + 1 + 20 * BLOCK;
        assert_eq!(
            location,
            format!("{}: last line (ending at byte {end})", path.display())
        );
        assert!(
            message.contains(&format!("longer than the maximum line size of {max} bytes")),
            "{message}"
        );

        // The same file ending in a torn line that long.
        std::fs::write(&path, format!("{header}\n{}", "\0".repeat(20 * BLOCK))).unwrap();
        let message = info(max).unwrap_err().to_string();
        assert!(
            message.contains("end of file") && message.contains("hold no line end"),
            "{message}"
        );

        // A header line that long.
        std::fs::write(&path, format!("{}\n{header}\n", "\0".repeat(20 * BLOCK))).unwrap();
        let message = info(max).unwrap_err().to_string();
        assert!(message.contains(&format!("{}:1", path.display())), "{message}");
        assert!(
            message.contains("the header line is longer than the maximum"),
            "{message}"
        );

        // With the real maximum, the same lines are read and found not to be JSON.
        std::fs::write(&path, format!("{header}\n{}\n", "\0".repeat(20 * BLOCK))).unwrap();
        assert!(info(MAX_LINE).unwrap_err().to_string().contains("invalid JSON"));
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
