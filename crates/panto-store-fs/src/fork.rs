//! Forking a session: what a fork copies of its source (the path to the fork point, the file
//! changes recorded on it) and the new session's file, written whole or not at all.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use chrono::{DateTime, Utc};
use panto_core::store::EntryIds;
use panto_core::{Error, Result};

use crate::commit::Durability;
use crate::format::{
    corrupt, io_error, line_location, parse_entry, Activity, BranchOut, CheckpointOnDisk, ForkOnDisk, HeaderOut,
    BRANCH_TYPE, HEADER_TYPE, MAX_LINE, VERSION,
};
use crate::log::open_log;

/// A file change a fork carries: recorded on the forked path (or at the empty start every path
/// begins at), with the listing activity of the entry it belongs to.
#[derive(Debug)]
pub(crate) struct CarriedChange {
    /// The entry it belongs to.
    pub tip: Option<String>,
    /// The change.
    pub checkpoint: CheckpointOnDisk,
    /// The activity of the path to `tip`.
    pub activity: Activity,
}

/// What a fork of a session copies.
#[derive(Debug)]
pub(crate) struct ForkSource {
    /// The source's metadata bag.
    pub metadata: Option<String>,
    /// The lines of the path to the fork point, each with its `\n`.
    pub lines: Vec<u8>,
    /// Every entry id on the path.
    pub ids: Vec<String>,
    /// The file changes recorded on the path, in the order recorded.
    pub changes: Vec<CarriedChange>,
    /// The activity of the path to the fork point.
    pub activity: Activity,
}

/// What a fork of session `id` at entry `at` copies (see [`ForkSource`]), read from the file at
/// `path` and checked against the scan, so a file changed between the passes is an error rather
/// than a mixed log.
pub(crate) fn fork_lines(path: &Path, id: &str, at: &str) -> Result<ForkSource> {
    let not_found = || panto_core::Error::SessionNotFound(id.to_owned());
    let Some((file, log)) = open_log(path, id)? else {
        return Err(not_found());
    };
    let by_id = log.message_indexes();
    let Some(&end) = by_id.get(at) else {
        return Err(panto_core::Error::UnknownEntry {
            session: id.to_owned(),
            message: format!("it holds no message entry {at:?}"),
        });
    };
    let mut chain = Vec::new();
    let mut next = Some(end);
    while let Some(i) = next {
        chain.push(i);
        next = log.entries[i]
            .entry
            .parent_id
            .as_deref()
            .and_then(|p| by_id.get(p).copied());
    }
    chain.reverse();
    let ids: Vec<String> = chain.iter().map(|&i| log.entries[i].entry.id.clone()).collect();
    let empty_start = Activity::default();
    let changes = log
        .entries
        .iter()
        .filter_map(|logged| {
            let checkpoint = logged.entry.checkpoint.clone()?;
            let activity = match logged.entry.tip.as_deref() {
                None => empty_start.clone(),
                Some(tip) if ids.iter().any(|i| i == tip) => log.entries[by_id[tip]].entry.activity.clone(),
                Some(_) => return None,
            };
            Some(CarriedChange {
                tip: logged.entry.tip.clone(),
                checkpoint,
                activity,
            })
        })
        .collect();
    let activity = log.entries[end].entry.activity.clone();
    let mut lines = Vec::new();
    for i in chain {
        let logged = &log.entries[i];
        let start = lines.len();
        lines.resize(start + logged.len, 0);
        file.read_exact_at(&mut lines[start..], logged.offset)
            .map_err(|e| io_error("reading", path, e))?;
        let location = line_location(path, logged.line);
        let parsed = parse_entry(&lines[start..], &location)?;
        if parsed.id != logged.entry.id || parsed.parent_id != logged.entry.parent_id {
            return Err(corrupt(location, "the file changed while it was being read"));
        }
        lines.push(b'\n');
    }
    Ok(ForkSource {
        metadata: log.header.metadata,
        lines,
        ids,
        changes,
        activity,
    })
}

/// Writes a new session as a fork: the header (with `forked_from`), the source's path lines
/// as they are, then a branch entry keeping the tip for each file change recorded on the
/// path, in order (each belonging to its entry, as in the source, after a switch to that
/// entry where the tip is another) and, when the tip is then not the fork point, a branch
/// entry back to it.
///
/// The whole file is written beside the session's path under a temporary name, synced, and
/// linked to the session's path, so the fork appears whole or not at all: a process killed at
/// any moment leaves no session file, or a complete one (and at worst a `.<id>.fork.*.tmp`
/// file, which no reader looks at). The link fails if the session already exists. The
/// writer is opened by the next append, from the file.
pub(crate) fn write_fork(
    dir: &Path,
    id: &str,
    forked_from: &ForkOnDisk,
    source: &ForkSource,
    now: DateTime<Utc>,
    durability: Durability,
) -> Result<()> {
    let metadata = source.metadata.as_deref();
    let lines = &source.lines;
    let path = dir.join(format!("{id}.jsonl"));
    let cwd = std::env::current_dir().ok();
    let header = HeaderOut {
        kind: HEADER_TYPE,
        version: VERSION,
        id,
        created: now,
        cwd: cwd.as_deref().and_then(Path::to_str),
        metadata,
        forked_from: Some(forked_from),
    };
    let mut buf = Vec::with_capacity(lines.len() + 512);
    crate::json::to_writer(&mut buf, &header).map_err(|e| Error::store("serialising a session header", e))?;
    if buf.len() > MAX_LINE {
        return Err(Error::store(
            format!("forking into {}", path.display()),
            format!(
                "the session header would be a line of {} bytes, over the maximum line size of {MAX_LINE} bytes",
                buf.len()
            ),
        ));
    }
    buf.push(b'\n');
    buf.extend_from_slice(lines);
    let mut ids: HashSet<String> = source.ids.iter().cloned().collect();
    let mut id_source = EntryIds::new();
    let mut tip = source.ids.last().map(String::as_str);
    let mut branch_line = |buf: &mut Vec<u8>,
                           ids: &mut HashSet<String>,
                           parent: Option<&str>,
                           to: Option<&str>,
                           checkpoint: Option<&CheckpointOnDisk>,
                           activity: &Activity|
     -> Result<()> {
        let id = id_source.next_unused(|id| ids.contains(id));
        let entry = BranchOut {
            kind: BRANCH_TYPE,
            id: &id,
            parent_id: parent,
            tip: to,
            checkpoint,
            timestamp: now,
            activity: activity.out(),
        };
        crate::json::to_writer(&mut *buf, &entry).map_err(|e| Error::store("serialising a branch entry", e))?;
        buf.push(b'\n');
        ids.insert(id);
        Ok(())
    };
    // Each change is recorded as it was first (a record keeping the tip, at the entry it
    // belongs to), in the source's order, which a rewind with files needs (the newest
    // record of a file tells what panto left there): so where the change belongs to another
    // entry than the tip, a plain switch to that entry comes first.
    for change in &source.changes {
        let at = change.tip.as_deref();
        if tip != at {
            branch_line(&mut buf, &mut ids, tip, at, None, &change.activity)?;
            tip = at;
        }
        branch_line(&mut buf, &mut ids, tip, at, Some(&change.checkpoint), &change.activity)?;
    }
    let end = source.ids.last().map(String::as_str);
    if tip != end {
        branch_line(&mut buf, &mut ids, tip, end, None, &source.activity)?;
    }
    let temporary = dir.join(format!(".{id}.fork.{}.tmp", uuid::Uuid::now_v7().simple()));
    let written = (|| -> io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        Write::write_all(&mut file, &buf)?;
        if durability == Durability::Fsync {
            file.sync_data()?;
        }
        std::fs::hard_link(&temporary, &path)
    })();
    let _ = std::fs::remove_file(&temporary);
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(Error::store(
                format!("forking into {}", path.display()),
                "a session with the new id already exists",
            ))
        }
        Err(e) => return Err(io_error("forking into", &path, e)),
    }
    if durability == Durability::Fsync {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error("syncing", dir, e))?;
    }
    Ok(())
}
