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
use std::path::{Path, PathBuf};

use panto_core::{Result, SessionInfo};

use crate::edges::{read_first_line, read_last_complete_line, FirstLine, LastLine};
use crate::format::{
    check_header_id, corrupt, io_error, line_location, parse_header, parse_tail, ForkOnDisk, TailEntry, MAX_LINE,
};
use crate::open::open_for_reading;
use crate::skim::{skim_tail, skim_tail_end};

/// Files up to this size are read whole with one read: cheaper than two reads at either end.
const SMALL_FILE: u64 = 16 * 1024;

/// How much of a larger file's start is read to find the header line.
const HEAD_PROBE: usize = 1024;

/// How much of a larger file's end is read to find the last line (a final answer with its
/// thinking usually fits) or, for a longer line, its listing fields.
const TAIL_PROBE: usize = 4 * 1024;

/// The listing info of the session stored at `path`, whose file name says it is session `id`,
/// from its header line and its last complete line only. `None` for an empty file, which holds
/// no session (see [`holds_no_session`]).
///
/// The file is opened as every session file is (see `open.rs`): a link, a FIFO or anything but
/// a regular file is an error naming it, and a file that vanished since the directory was read
/// holds no session.
pub(crate) fn read_info(path: &Path, id: &str) -> Result<Option<SessionInfo>> {
    read_info_with(path, id, &mut Probes::default())
}

/// The buffers the reads of [`read_info_with`] go into, kept from one file to the next: a
/// listing of a thousand sessions then zeroes and allocates them once, not once per file.
#[derive(Debug, Default)]
pub(crate) struct Probes {
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// The first `n` bytes of `buf`, grown (zeroed) only past what an earlier file already grew.
fn first(buf: &mut Vec<u8>, n: usize) -> &mut [u8] {
    if buf.len() < n {
        buf.resize(n, 0);
    }
    &mut buf[..n]
}

/// [`read_info`], reading into `probes`.
pub(crate) fn read_info_with(path: &Path, id: &str, probes: &mut Probes) -> Result<Option<SessionInfo>> {
    let Some((file, meta)) = open_for_reading(path)? else {
        return Ok(None);
    };
    if meta.len() == 0 {
        return Ok(None);
    }
    read_info_of(file, meta.len(), path, id, MAX_LINE, probes).map(Some)
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
fn read_info_of(
    mut file: File,
    len: u64,
    path: &Path,
    id: &str,
    max: usize,
    probes: &mut Probes,
) -> Result<SessionInfo> {
    if len <= SMALL_FILE {
        // Exactly `len` bytes: one read, without a second one to find the end of the file.
        let bytes = first(&mut probes.tail, len as usize);
        file.read_exact(bytes).map_err(|e| io_error("reading", path, e))?;
        let bytes = &*bytes;
        let first_line = match memchr::memchr(b'\n', bytes) {
            Some(i) => FirstLine::Line(bytes[..i].to_vec()),
            None if bytes.is_empty() => FirstLine::Empty,
            None => FirstLine::Torn,
        };
        let last = read_last_complete_line(&mut io::Cursor::new(bytes), bytes.len() as u64, max)
            .map_err(|e| io_error("reading", path, e))?;
        return info_from(path, id, first_line, Last::Whole(last), max);
    }
    let read = |e| io_error("reading", path, e);
    // One positioned read at each end finds both lines in almost every session; the block
    // readers take over when a line is longer than its probe.
    let head = first(&mut probes.head, HEAD_PROBE);
    file.read_exact_at(head, 0).map_err(read)?;
    let first_line = match memchr::memchr(b'\n', head) {
        Some(i) => FirstLine::Line(head[..i].to_vec()),
        None => {
            file.seek(SeekFrom::Start(0)).map_err(read)?;
            read_first_line(&mut file, max).map_err(read)?
        }
    };
    // A final answer fits the tail probe. A longer last line (an interrupted session may end in
    // a long tool result) ends with its listing fields, which the probe holds all the same.
    let size = TAIL_PROBE.min(len as usize);
    let probe_start = len - size as u64;
    let tail = first(&mut probes.tail, size);
    file.read_exact_at(tail, probe_start).map_err(read)?;
    let tail = &*tail;
    let last = match memchr::memrchr(b'\n', tail) {
        Some(end) => match memchr::memrchr(b'\n', &tail[..end]) {
            Some(start) => LastLine::Line(probe_start + start as u64 + 1, tail[start + 1..end].to_vec()),
            None => match skim_tail_end(&tail[..end]) {
                Some(skimmed) => return info_from(path, id, first_line, Last::Skimmed(skimmed), max),
                None => read_last_complete_line(&mut file, len, max).map_err(read)?,
            },
        },
        None => read_last_complete_line(&mut file, len, max).map_err(read)?,
    };
    info_from(path, id, first_line, Last::Whole(last), max)
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
    let cwd = header.cwd.clone().map(PathBuf::from);
    let tail = match last {
        // Only the header is complete: a session created by an empty batch, or whose first
        // entry was torn.
        Last::Whole(LastLine::None | LastLine::Line(0, _)) => {
            let mut info = SessionInfo::new(header.id, header.created);
            info.forked_from = forked_from;
            info.cwd = cwd;
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
    info.cwd = cwd;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edges::BLOCK;
    use panto_core::Error;

    /// Lists a session whose header and last line have the given sizes, through `read_info`, and
    /// through a full scan of the file: the two must agree.
    fn info_both_ways(header_extra: usize, last_len: usize) -> (SessionInfo, SessionInfo) {
        use panto_core::store::PersistentMessage;
        use panto_core::{Conversation, Message, Role, SessionStore};

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
        (listed, log.info())
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
            assert_eq!(listed.cwd, std::env::current_dir().ok(), "the header's directory");
        }
    }

    #[test]
    fn probes_kept_from_a_larger_file_list_a_smaller_one_as_it_is() {
        use panto_core::store::PersistentMessage;
        use panto_core::{Conversation, Message, Role, SessionStore};

        let dir = tempfile::tempdir().unwrap();
        let store = crate::JsonlStore::with_durability(dir.path(), crate::Durability::None);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // A large session (both probes used in full), then a small one read whole, then a
        // middling one: each read into what the one before left in the buffers.
        let mut ids = Vec::new();
        for (prompt_len, count) in [(30_000, 3), (10, 1), (3_000, 2)] {
            let id = panto_core::store::new_session_id();
            let conversation = Conversation::new();
            for n in 0..count {
                let m = Message::new(
                    Role::User,
                    vec![panto_core::ContentBlock::text(format!("{n}{}", "p".repeat(prompt_len)))],
                );
                let entry = PersistentMessage {
                    message: &m,
                    usage: None,
                    wire: None,
                    conversation: &conversation,
                    tools_available: &[],
                    compaction: None,
                };
                rt.block_on(store.append(&id, &[entry])).unwrap();
            }
            ids.push((id, count));
        }
        let mut probes = Probes::default();
        for (id, count) in &ids {
            let path = store.session_path(id).unwrap();
            let kept = read_info_with(&path, id, &mut probes).unwrap().unwrap();
            assert_eq!(kept, read_info(&path, id).unwrap().unwrap(), "{id}");
            assert_eq!(kept.message_count, *count);
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
            read_info_of(file, len, &path, &id, max, &mut Probes::default())
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
}
