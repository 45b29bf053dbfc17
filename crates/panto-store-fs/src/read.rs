//! The second pass of a read: from a scanned log (`log.rs`), the lines a caller needs read back
//! by offset and parsed in full, for `load`, `tree` and the file changes of a session.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use panto_core::store::validate_checkpoint_address;
use panto_core::store::{CheckpointRecord, EntryRef, LoadedBranch, SessionTree, StoredCheckpoint, TreeEntry};
use panto_core::{Message, Result};

use crate::format::{corrupt, io_error, line_location, parse_entry, CheckpointOnDisk, ForkOnDisk};
use crate::log::{open_log, open_stamped_log, EntryOutline, ParsedLog, StampedLog};

/// Reads session `id` from the file at `path` for `load_branch`: the metadata bag, the messages
/// of the active branch's view with their entries, and the fork origin. `None` when there is no
/// such file. The scanned log comes back too (without the metadata bag, which the branch took),
/// for a writer opened next to adopt instead of scanning the file again.
pub(crate) fn load_branch(path: &Path, id: &str) -> Result<Option<(LoadedBranch, StampedLog)>> {
    let Some((file, mut scanned)) = open_stamped_log(path, id)? else {
        return Ok(None);
    };
    let log = &mut scanned.log;
    let messages = read_view(&file, path, log)?;
    let entries = log.view.iter().map(|&i| entry_ref(&log.entries[i].entry)).collect();
    let branch = LoadedBranch {
        conversation: panto_core::Conversation {
            messages,
            metadata: log.header.metadata.take(),
        },
        entries,
        forked_from: log.header.forked_from.clone().map(ForkOnDisk::into_origin),
    };
    Ok(Some((branch, scanned)))
}

/// Reads every message entry of session `id` from the file at `path`, for `tree`. `None` when
/// there is no such file.
pub(crate) fn load_tree(path: &Path, id: &str) -> Result<Option<SessionTree>> {
    let Some((file, log)) = open_log(path, id)? else {
        return Ok(None);
    };
    let mut entries = Vec::new();
    let mut buf = Vec::new();
    for logged in log.entries.iter().filter(|l| l.entry.is_message()) {
        buf.resize(logged.len, 0);
        file.read_exact_at(&mut buf, logged.offset)
            .map_err(|e| io_error("reading", path, e))?;
        let parsed = parse_entry(&buf, &line_location(path, logged.line))?;
        entries.push(TreeEntry::of(entry_ref(&logged.entry), &parsed.message));
    }
    Ok(Some(SessionTree {
        entries,
        tip: log.tip.map(|i| log.entries[i].entry.id.clone()),
    }))
}

/// Every file change recorded in session `id` (the file at `path`), in file order, with the tip
/// each belongs to. Empty when there is no such file. A record whose path is not absolute or
/// whose address could not be one is an error naming its line: a rewind must never write where
/// a damaged line points.
pub(crate) fn load_checkpoints(path: &Path, id: &str) -> Result<Vec<StoredCheckpoint>> {
    let Some((_, log)) = open_log(path, id)? else {
        return Ok(Vec::new());
    };
    let mut records = Vec::new();
    for logged in log.entries {
        let Some(change) = logged.entry.checkpoint else {
            continue;
        };
        records.push(StoredCheckpoint {
            record: checkpoint_record(change, path, logged.line)?,
            entry: logged.entry.tip,
        });
    }
    Ok(records)
}

/// The file change recorded on line `line` of the file at `path`, checked: a record whose path
/// is not absolute or whose address could not be one is an error naming its line, since a
/// rewind must never write where a damaged line points.
pub(crate) fn checkpoint_record(change: CheckpointOnDisk, path: &Path, line: usize) -> Result<CheckpointRecord> {
    let bad = |what: String| corrupt(line_location(path, line), what);
    if !change.path.starts_with('/') {
        return Err(bad(format!("the checkpoint's path {:?} is not absolute", change.path)));
    }
    for address in change.before.iter().chain(&change.after) {
        validate_checkpoint_address(address).map_err(|_| {
            bad(format!(
                "the checkpoint's address {address:?} is not 64 lowercase hex digits"
            ))
        })?;
    }
    Ok(CheckpointRecord {
        path: change.path,
        before: change.before,
        after: change.after,
        restore: change.restore,
    })
}

fn entry_ref(entry: &EntryOutline) -> EntryRef {
    EntryRef {
        id: entry.id.clone(),
        parent: entry.parent_id.clone(),
    }
}

/// The second pass: the messages of the view, in view order, read from `file` by offset and
/// parsed in full.
pub(crate) fn read_view(file: &File, path: &Path, log: &ParsedLog) -> Result<Vec<Message>> {
    // Read in file order, so a view that is most of the file is read front to back.
    let mut order: Vec<(usize, usize)> = log.view.iter().copied().enumerate().collect();
    order.sort_by_key(|&(_, entry)| log.entries[entry].offset);
    let mut messages: Vec<Option<Message>> = (0..log.view.len()).map(|_| None).collect();
    let mut buf = Vec::new();
    for (position, entry) in order {
        let logged = &log.entries[entry];
        buf.resize(logged.len, 0);
        file.read_exact_at(&mut buf, logged.offset)
            .map_err(|e| io_error("reading", path, e))?;
        let location = line_location(path, logged.line);
        let parsed = parse_entry(&buf, &location)?;
        // The line read back must be the line scanned: a file replaced between the passes would
        // otherwise mix two logs into one conversation.
        let e = &logged.entry;
        let same = parsed.id == e.id
            && parsed.parent_id == e.parent_id
            && parsed.timestamp == e.timestamp
            && parsed.compaction == e.compaction
            && parsed.activity == e.activity;
        if !same {
            return Err(corrupt(location, "the file changed while it was being read"));
        }
        messages[position] = Some(parsed.message);
    }
    // Every position was filled above, each exactly once.
    Ok(messages.into_iter().flatten().collect())
}
