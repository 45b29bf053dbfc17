//! File checkpoints on the agent's side: the handle its tools record changes through, and which
//! files a rewind must put back.

use std::collections::{HashMap, HashSet};

use super::Agent;
use crate::error::{Error, Result};
use crate::tool::FileCheckpoints;

/// A file a rewind puts back, as [`Agent::file_changes_since`] finds it. The I/O is the caller's
/// (panto-core touches no files): `panto_tools::rewind_with_files` does it for the built-in tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRestore {
    /// The file, as an absolute path.
    pub path: String,
    /// What it held at the rewind point; `None`: it did not exist, so the rewind removes it.
    pub content: Option<Vec<u8>>,
    /// The address ([`checkpoint_address`](crate::store::checkpoint_address)) of what panto last
    /// left in the file; `None`: panto last removed it. A file whose content has another address
    /// was changed outside panto since, and must be reported rather than overwritten.
    pub expected: Option<String>,
}

impl Agent {
    /// The handle through which this agent's tools record file changes: its current session's.
    pub fn file_checkpoints(&self) -> FileCheckpoints {
        FileCheckpoints::new(self.session.store.clone(), self.session.id())
    }

    /// The files changed (by tools recording [file checkpoints](FileCheckpoints)) since the
    /// human prompt stored as entry `to`, on the active branch: each with what it held before
    /// that prompt and what panto last left in it, in the order they were first changed. Call it
    /// before [`Agent::rewind`] to the same entry, then put the files back; record each restore
    /// with [`FileCheckpoints::record_restore`] so that a later rewind knows what panto left.
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
        // What panto last left in each file: the newest record of it, whatever the branch.
        let mut last_left: HashMap<&str, Option<&str>> = HashMap::new();
        for stored in &records {
            last_left.insert(&stored.record.path, stored.record.after.as_deref());
        }
        // What each file held at the rewind point: the state before the first change after it.
        // A restore record is not a change of the branch but a return to its state, which is
        // what the file held then.
        let mut order: Vec<(&str, Option<&str>)> = Vec::new();
        for stored in &records {
            let on_path = stored.entry.as_deref().is_some_and(|e| since.contains(e));
            if !on_path || order.iter().any(|(path, _)| *path == stored.record.path) {
                continue;
            }
            let then = if stored.record.restore {
                stored.record.after.as_deref()
            } else {
                stored.record.before.as_deref()
            };
            order.push((&stored.record.path, then));
        }

        let checkpoints = self.file_checkpoints();
        let mut restores = Vec::new();
        for (path, then) in order {
            let expected = last_left.get(path).copied().flatten();
            if then == expected {
                // panto left it as it was then: nothing to put back.
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
            });
        }
        Ok(restores)
    }
}
