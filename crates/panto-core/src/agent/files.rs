//! File checkpoints on the agent's side: the handle its tools record changes through, and which
//! files a rewind must put back.

use std::collections::{HashMap, HashSet};

use super::Agent;
use crate::error::{Error, Result};
use crate::tool::FileCheckpoints;

/// A file a rewind puts back, as [`Agent::file_changes_since`] finds it. The I/O is the caller's
/// (panto-core touches no files): `panto_tools::Toolbox::rewind_with_files` does it for the
/// built-in tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRestore {
    /// The file, as an absolute path.
    pub path: String,
    /// What it held at the rewind point; `None`: it did not exist, so the rewind removes it.
    pub content: Option<Vec<u8>>,
    /// The address ([`checkpoint_address`](crate::store::checkpoint_address)) of what panto last
    /// left in the file (the `after` of its newest record); `None`: panto last removed it.
    pub expected: Option<String>,
    /// The address of what the file held before panto's newest recorded change of it (that
    /// record's `before`); `None`: it did not exist. A process killed between recording a change
    /// and making it leaves this in the file: the change never happened, and the file is still
    /// in panto's own state. Restoring over it loses nothing (this content is kept as a
    /// checkpoint). A file holding neither this nor [`FileRestore::expected`] was changed
    /// outside panto since, and must be reported rather than overwritten.
    pub unmade: Option<String>,
}

impl FileRestore {
    /// Whether a file whose content has `address` (`None`: there is no file) is in a state panto
    /// left it in: [`FileRestore::expected`], or [`FileRestore::unmade`] when panto's newest
    /// change of it was recorded but never made.
    pub fn left_by_panto(&self, address: Option<&str>) -> bool {
        address == self.expected.as_deref() || address == self.unmade.as_deref()
    }
}

impl Agent {
    /// The handle through which this agent's tools record file changes: its current session's.
    pub fn file_checkpoints(&self) -> FileCheckpoints {
        FileCheckpoints::new(self.session.store.clone(), self.session.id())
    }

    /// The files changed (by tools recording [file checkpoints](FileCheckpoints)) since the
    /// human prompt stored as entry `to`, on the active branch: each with what it held before
    /// that prompt and what panto last left in it, in the order they were first changed. A file
    /// panto's records say already holds what it held then is left out, unless panto's newest
    /// change of it may never have been made (see [`FileRestore::unmade`]).
    ///
    /// A rewind with files calls it, then puts the files back, recording each restore with
    /// [`FileCheckpoints::record_restore`] before writing the file (so a later rewind knows what
    /// panto left there), and only then calls [`Agent::rewind`] to the same entry: a process
    /// killed in between leaves the branch where it was, and the same rewind run again finds the
    /// files it has not restored yet (`panto_tools::Toolbox::rewind_with_files` does this).
    ///
    /// Errors: [`Error::UnknownEntry`] when `to` is not a prompt on the active branch, the
    /// store's errors ([`Error::Unsupported`] for a store without checkpoints or branches), and
    /// [`Error::CorruptSession`] when a kept checkpoint is missing or damaged.
    pub async fn file_changes_since(&mut self, to: &str) -> Result<Vec<FileRestore>> {
        self.flush().await?;
        let tree = self.session.tree().await?;
        let unknown = |message: String| Error::UnknownEntry {
            session: self.session.id().to_owned(),
            message,
        };
        let parents: HashMap<&str, Option<&str>> = tree
            .entries
            .iter()
            .map(|e| (e.entry.id.as_str(), e.entry.parent.as_deref()))
            .collect();
        // The active path from its tip back to `to`: the entries whose changes are undone.
        let mut since: HashSet<&str> = HashSet::new();
        let mut next = tree.tip.as_deref();
        let mut found = false;
        while let Some(id) = next {
            since.insert(id);
            if id == to {
                found = true;
                break;
            }
            next = parents.get(id).copied().flatten();
        }
        if !found {
            return Err(unknown(format!("no message {to:?} on the active branch")));
        }
        if !tree.entries.iter().any(|e| e.entry.id == to && e.is_prompt) {
            return Err(unknown(format!(
                "message {to:?} is not a prompt: a rewind goes back to a prompt"
            )));
        }

        let records = self.session.store.checkpoints(self.session.id()).await?;
        // What panto last left in each file: the newest record of it, whatever the branch, as
        // (after, before): the file holds `before` if that change was recorded but never made.
        let mut last_left: HashMap<&str, (Option<&str>, Option<&str>)> = HashMap::new();
        for stored in &records {
            let record = &stored.record;
            last_left.insert(&record.path, (record.after.as_deref(), record.before.as_deref()));
        }
        // What each file held at the rewind point: the state before the first change after it.
        // A restore record counts like any change: a rewind records its restores at the tip it
        // rewinds from, before switching away (see `panto_tools::Toolbox::rewind_with_files`),
        // so on the path it is a change of that tip, from what the branch left to the restored
        // content. (A rewind that never switched, killed in between, is thus run again from
        // the right state.)
        let mut order: Vec<(&str, Option<&str>)> = Vec::new();
        for stored in &records {
            let on_path = stored.entry.as_deref().is_some_and(|e| since.contains(e));
            if !on_path || order.iter().any(|(path, _)| *path == stored.record.path) {
                continue;
            }
            order.push((&stored.record.path, stored.record.before.as_deref()));
        }

        let checkpoints = self.file_checkpoints();
        let mut restores = Vec::new();
        for (path, then) in order {
            let (expected, unmade) = last_left.get(path).copied().unwrap_or_default();
            if then == expected && then == unmade {
                // panto left it as it was then, whether or not its newest change was made:
                // nothing to put back.
                continue;
            }
            let content = match then {
                None => None,
                Some(address) => Some(
                    checkpoints
                        .content(address)
                        .await?
                        .ok_or_else(|| Error::CorruptSession {
                            location: format!("session {}", self.session.id()),
                            message: format!("the checkpoint {address} of {path} is missing"),
                        })?,
                ),
            };
            restores.push(FileRestore {
                path: path.to_owned(),
                content,
                expected: expected.map(str::to_owned),
                unmade: unmade.map(str::to_owned),
            });
        }
        Ok(restores)
    }
}
