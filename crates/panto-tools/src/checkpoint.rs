//! File checkpoints for the built-in tools: `write` and `edit` record each file's content before
//! they change it (through the session in their call, [`ToolCall::checkpoints`]), and
//! [`Toolbox::rewind_with_files`] puts the files back when the user rewinds.

use std::path::Path;
use std::sync::Arc;

use panto_core::store::checkpoint_address;
use panto_core::{Agent, FileCheckpoints, FileRestore, ToolCall};
use serde::Serialize;

use crate::beneath::{self, Current, Target};
use crate::{running, Toolbox};

/// The largest file whose previous content a tool keeps. A larger file is still changed, but
/// the tool says a rewind cannot restore it. The same limit as what `read` and `edit` read.
pub const MAX_CHECKPOINT_BYTES: u64 = crate::read::MAX_FILE_BYTES;

/// What a restore reads of a file panto may have written, to compare it: a file larger than
/// any checkpoint was changed outside panto.
const MAX_COMPARED_BYTES: u64 = MAX_CHECKPOINT_BYTES;

/// Records, before a tool changes the file at `path`, that it goes from `before` (`None`: it
/// does not exist) to `after`. Nothing to do for a call without a session or a store that keeps
/// no checkpoints. An error says why the file was left alone.
pub(crate) async fn record(call: &ToolCall, path: &Path, before: Option<&[u8]>, after: &[u8]) -> Result<(), String> {
    let Some(checkpoints) = &call.checkpoints else {
        return Ok(());
    };
    let Some(name) = path.to_str() else {
        return Err(format!(
            "{} was not changed: its path is not UTF-8, so no checkpoint of it can be kept for a rewind",
            path.display()
        ));
    };
    match checkpoints.record_change(name, before, Some(after)).await {
        Ok(()) => Ok(()),
        Err(e) if FileCheckpoints::is_unsupported(&e) => Ok(()),
        Err(e) => Err(format!(
            "{name} was not changed: keeping its previous content for a rewind failed: {e}"
        )),
    }
}

/// The content of the file `target` names before a write, for its checkpoint: `None` when there
/// is no file, `Err` when it is larger than [`MAX_CHECKPOINT_BYTES`] (the write then goes on
/// without a checkpoint, and says so).
pub(crate) fn previous_content(target: &Target) -> Result<Option<Vec<u8>>, String> {
    target.content(MAX_CHECKPOINT_BYTES)
}

/// What a rewind did to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileOutcome {
    /// Put back, byte for byte, to what it held at the rewind point.
    Restored,
    /// Removed: it did not exist at the rewind point.
    Removed,
    /// It already held what it held at the rewind point.
    Unchanged,
    /// Left alone: it changed outside panto since panto last wrote it.
    ChangedOutside,
    /// Left alone: restoring it failed.
    Failed {
        /// Why.
        error: String,
    },
}

/// One file of a rewind with files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoredFile {
    /// The file, as an absolute path.
    pub path: String,
    /// What happened to it.
    #[serde(flatten)]
    pub outcome: FileOutcome,
}

impl Toolbox {
    /// Rewinds `agent` to before the prompt stored as entry `to` ([`Agent::rewind`]) and puts
    /// back every file the built-in tools changed since ([`Agent::file_changes_since`]): each
    /// to its content at that point byte for byte, a file created since removed. A file that
    /// changed outside panto since panto last wrote it is left alone and reported
    /// ([`FileOutcome::ChangedOutside`]), as is one outside where these tools may write. A file
    /// still holding what it held before panto's newest recorded change of it (a process killed
    /// between recording a change and making it) is panto's own, and is restored.
    ///
    /// The order makes a kill at any point recoverable by running the same rewind again:
    /// 1. the files are restored first, while the branch still ends where it did: each restore
    ///    is recorded (belonging to that tip, the end of the branch it undoes) before its file
    ///    is written, so panto never leaves a file it cannot account for (killed between the
    ///    two, the file still holds the record's `before`, which counts as panto's own);
    /// 2. only then is the branch switched.
    ///
    /// Killed during 1, the branch has not moved, the prompt `to` is still there, and the same
    /// rewind again restores the files not yet restored (the restored ones now hold what their
    /// first change since `to` found, so they are left out). Killed after 2, everything is done.
    /// Switching first would make a kill before the restores unrecoverable: the prompt is then
    /// off the active branch, and the files changed only on the abandoned branch are on no path
    /// a later rewind reads.
    ///
    /// Errors: those of [`Agent::file_changes_since`] (then nothing was touched) and of
    /// [`Agent::rewind`] (then the files are restored but the branch was not switched: the same
    /// rewind again switches it, leaving the files as they are).
    pub async fn rewind_with_files(&self, agent: &mut Agent, to: &str) -> panto_core::Result<Vec<RestoredFile>> {
        let changes = agent.file_changes_since(to).await?;
        let checkpoints = agent.file_checkpoints();
        let mut report = Vec::with_capacity(changes.len());
        for change in changes {
            let outcome = self.restore(&checkpoints, &change).await;
            let settled = outcome == FileOutcome::Unchanged
                && change.content.as_deref().map(checkpoint_address) == change.expected;
            if settled {
                // It holds what panto last left there, which is what it held then: nothing to
                // say (it was a candidate only in case panto's newest change was never made).
                continue;
            }
            report.push(RestoredFile {
                path: change.path,
                outcome,
            });
        }
        agent.rewind(to).await?;
        Ok(report)
    }

    /// Whether a rewind may put back the file whose resolved real path is `real`: only inside
    /// the workspace, or, with the sandbox on, inside its writable directories. A session's
    /// checkpoint records are read from its file, which anyone who can write it can fill with
    /// records naming any path (`~/.ssh/authorized_keys`, `~/.bashrc`) and blobs to put there;
    /// a rewind must not become a way to write those. The write tools' limits (`[tools]
    /// read_roots`, the sandbox, the deny rules) were checked when the path was resolved; this
    /// holds when they are off too.
    fn restorable(&self, shown: &str, real: &Path) -> Result<(), String> {
        let workspace = std::path::absolute(&self.ctx.cwd)
            .and_then(|cwd| crate::roots::real_path(&cwd))
            .unwrap_or_else(|_| self.ctx.cwd.clone());
        let sandboxed = self.ctx.sandbox.is_on();
        let inside = real.starts_with(&workspace)
            || (sandboxed && self.ctx.sandbox.writable_dirs().iter().any(|dir| real.starts_with(dir)));
        if inside {
            return Ok(());
        }
        let place = if sandboxed {
            "the workspace and the sandbox's writable directories"
        } else {
            "the workspace"
        };
        Err(format!(
            "{shown} is outside {place} ({}); a rewind restores files there only, so a session file's \
             records cannot make it write elsewhere",
            workspace.display()
        ))
    }

    async fn restore(&self, checkpoints: &FileCheckpoints, change: &FileRestore) -> FileOutcome {
        let path = Path::new(&change.path).to_path_buf();
        if let Err(error) = self
            .ctx
            .roots
            .check(&path)
            .and_then(|_| self.ctx.sandbox.check_write(&path))
        {
            return FileOutcome::Failed { error };
        }
        // Resolved once: what is there is read, and the restore written or removed, through the
        // same opened directory, so a link swapped in on the way cannot send it elsewhere.
        let target = {
            let (path, ctx) = (path.clone(), self.ctx.clone());
            running::blocking(format!("restore {}", change.path), move || {
                beneath::resolve(&path, &ctx, None).map(Arc::new)
            })
            .await
        };
        let target = match target {
            Ok(target) => target,
            Err(error) => return FileOutcome::Failed { error },
        };
        if let Err(error) = self.restorable(&change.path, target.real()) {
            return FileOutcome::Failed { error };
        }
        let current = {
            let target = target.clone();
            running::blocking(format!("restore {}", change.path), move || {
                target.current(MAX_COMPARED_BYTES).map_err(|e| e.to_string())
            })
            .await
        };
        let current = match current {
            Ok(Current::Content(bytes)) => bytes,
            Ok(Current::Foreign) => return FileOutcome::ChangedOutside,
            Err(error) => return FileOutcome::Failed { error },
        };
        if current.as_deref() == change.content.as_deref() {
            return FileOutcome::Unchanged;
        }
        if !change.left_by_panto(current.as_deref().map(checkpoint_address).as_deref()) {
            return FileOutcome::ChangedOutside;
        }
        if let Err(e) = checkpoints
            .record_restore(&change.path, current.as_deref(), change.content.as_deref())
            .await
        {
            if !FileCheckpoints::is_unsupported(&e) {
                return FileOutcome::Failed {
                    error: format!("recording the restore failed, so the file was left alone: {e}"),
                };
            }
        }
        let content = change.content.clone();
        let done = running::blocking(format!("restore {}", change.path), move || match content {
            Some(bytes) => target.write(&bytes),
            None => target.remove(),
        })
        .await;
        match (done, &change.content) {
            (Ok(()), Some(_)) => FileOutcome::Restored,
            (Ok(()), None) => FileOutcome::Removed,
            (Err(error), _) => FileOutcome::Failed { error },
        }
    }
}

#[cfg(test)]
mod tests {
    use panto_core::store::PersistentMessage;
    use panto_core::{Conversation, MemoryStore, Message, Role, SessionStore, Tool, ToolCallResult};
    use serde_json::json;

    use super::*;
    use crate::testing::{context, text};
    use crate::write::WriteTool;

    async fn call_in(tool: &dyn Tool, checkpoints: FileCheckpoints, input: serde_json::Value) -> ToolCallResult {
        let call = ToolCall::new("t1", tool.declaration().name, input).with_checkpoints(checkpoints);
        tool.call(call)
            .await
            .unwrap_or_else(|e| ToolCallResult::error(e.to_string()))
    }

    #[tokio::test]
    async fn a_write_keeps_the_previous_content_and_records_the_change_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, b"old\r\n\xff").unwrap();
        let store = MemoryStore::new();
        let id = panto_core::store::new_session_id();
        let message = Message::new(Role::User, vec![panto_core::ContentBlock::text("hi")]);
        let conversation = Conversation::new();
        let ids = store
            .append(&id, &[PersistentMessage::new(&message, &conversation)])
            .await
            .unwrap();
        let tool = WriteTool::new(context(dir.path()));
        let r = call_in(
            &tool,
            FileCheckpoints::new(store.clone(), id.clone()),
            json!({"path": "f.txt", "content": "new"}),
        )
        .await;
        assert!(!r.is_error, "{}", text(&r));
        let records = store.checkpoints(&id).await.unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].entry.as_deref(), Some(ids[0].as_str()));
        assert_eq!(records[0].record.path, file.to_str().unwrap());
        assert_eq!(
            records[0].record.after.as_deref(),
            Some(checkpoint_address(b"new").as_str())
        );
        let before = records[0].record.before.as_deref().unwrap();
        assert_eq!(
            store.get_checkpoint(&id, before).await.unwrap().unwrap(),
            b"old\r\n\xff"
        );
    }

    #[tokio::test]
    async fn a_change_whose_checkpoint_cannot_be_kept_is_not_made() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "old").unwrap();
        // A session the store does not hold takes no record.
        let store: Arc<dyn SessionStore> = MemoryStore::new();
        let tool = WriteTool::new(context(dir.path()));
        let r = call_in(
            &tool,
            FileCheckpoints::new(store, panto_core::store::new_session_id()),
            json!({"path": "f.txt", "content": "new"}),
        )
        .await;
        assert!(r.is_error, "{}", text(&r));
        assert!(
            text(&r).contains("was not changed: keeping its previous content for a rewind failed"),
            "{}",
            text(&r)
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
    }
}
