//! Reading a whole session file: every line checked, the chain to the newest entry followed, and
//! compactions applied to produce the view the model sees.

use std::collections::HashMap;
use std::path::Path;

use panto_core::{Result, Role};

use crate::format::{corrupt, line_location, parse_entry, parse_header, EntryIn, HeaderIn};
use crate::scan::check_header_id;

/// One entry and the line it came from.
#[derive(Debug)]
pub(crate) struct LoggedEntry {
    /// The 1-based line number, for errors.
    pub line: usize,
    /// The entry.
    pub entry: EntryIn,
}

/// A session file, parsed.
#[derive(Debug)]
pub(crate) struct ParsedLog {
    /// Line 1.
    pub header: HeaderIn,
    /// Every entry, in file order.
    pub entries: Vec<LoggedEntry>,
    /// Indices into `entries` of the messages the model sees: the chain ending at the newest
    /// entry, with compactions applied.
    pub view: Vec<usize>,
}

/// The length of the committed part of `bytes`: everything up to and including the last `\n`.
/// What follows is a torn line that a crash left behind.
pub(crate) fn committed_len(bytes: &[u8]) -> usize {
    memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1)
}

/// Parses the session file at `path` (for errors), whose name says it is session `id`, from its
/// bytes. A torn final line is skipped; any other bad line is an error naming the line.
pub(crate) fn parse_log(bytes: &[u8], path: &Path, id: &str) -> Result<ParsedLog> {
    let committed = &bytes[..committed_len(bytes)];
    let header_location = line_location(path, 1);
    if committed.is_empty() {
        let message = if bytes.is_empty() {
            "the file is empty: it has no session header"
        } else {
            "the header line is incomplete (no line end): the first write was interrupted"
        };
        return Err(corrupt(header_location, message));
    }
    // `committed` ends with `\n`, so every piece but the (empty) last one is a whole line.
    let mut lines = committed[..committed.len() - 1].split(|&b| b == b'\n');
    let header = parse_header(lines.next().unwrap_or_default(), &header_location)?;
    check_header_id(&header.id, id, &header_location)?;

    let mut entries: Vec<LoggedEntry> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for (i, line) in lines.enumerate() {
        let number = i + 2;
        let location = line_location(path, number);
        let entry = parse_entry(line, &location)?;
        if let Some(earlier) = by_id.get(&entry.id) {
            let first = entries[*earlier].line;
            return Err(corrupt(
                location,
                format!("duplicate entry id \"{}\" (first used on line {first})", entry.id),
            ));
        }
        if let Some(parent) = &entry.parent_id {
            if !by_id.contains_key(parent) {
                return Err(corrupt(
                    location,
                    format!("parent_id \"{parent}\" names no earlier entry"),
                ));
            }
        }
        by_id.insert(entry.id.clone(), entries.len());
        entries.push(LoggedEntry { line: number, entry });
    }

    let view = build_view(&entries, &by_id, path)?;
    Ok(ParsedLog { header, entries, view })
}

/// Follows parent ids back from the newest entry, then replays that chain oldest first,
/// applying each compaction as `MemoryStore` does.
fn build_view(entries: &[LoggedEntry], by_id: &HashMap<String, usize>, path: &Path) -> Result<Vec<usize>> {
    let mut chain = Vec::new();
    let mut next = entries.len().checked_sub(1);
    while let Some(i) = next {
        chain.push(i);
        // Parents were checked to name earlier lines while parsing, so this walk ends.
        next = entries[i].entry.parent_id.as_ref().and_then(|p| by_id.get(p).copied());
    }
    chain.reverse();

    let mut view: Vec<usize> = Vec::with_capacity(chain.len());
    for i in chain {
        let Some(compaction) = &entries[i].entry.compaction else {
            view.push(i);
            continue;
        };
        let cut = match &compaction.first_kept {
            None => view.len(),
            Some(kept) => view
                .iter()
                .position(|&v| &entries[v].entry.id == kept)
                .ok_or_else(|| {
                    corrupt(
                        line_location(path, entries[i].line),
                        format!("the compaction keeps messages from entry \"{kept}\", which is not in the conversation at that point"),
                    )
                })?,
        };
        // The compacted view: the system messages before the cut (so the effective system prompt
        // survives), the summary, then the kept tail.
        let mut compacted: Vec<usize> = view[..cut]
            .iter()
            .copied()
            .filter(|&v| entries[v].entry.message.role == Role::System)
            .collect();
        compacted.push(i);
        compacted.extend_from_slice(&view[cut..]);
        view = compacted;
    }
    Ok(view)
}
