//! The handle through which a tool records the files it changes, so that a rewind can put them
//! back (file checkpoints).

use std::fmt;
use std::sync::Arc;

use super::checkpoint::{checkpoint_address, CheckpointRecord};
use super::seam::SessionStore;
use crate::error::{Error, Result};

/// Where a tool records a change to a file before it makes it: the session the call belongs to.
///
/// The agent hands one to every tool call it dispatches ([`ToolCall::checkpoints`]). A tool that
/// changes a file calls [`FileCheckpoints::record_change`] with the file's content before and
/// after, **before** writing: the content before is kept beside the session, content-addressed,
/// and a record of the change is appended to the session, belonging to the assistant message
/// that called the tool. `Agent::file_changes_since` reads these records back when the user
/// rewinds. A store that keeps no checkpoints ([`NullStore`](crate::NullStore)) answers
/// [`Error::Unsupported`], which a tool may ignore ([`FileCheckpoints::is_unsupported`]).
///
/// [`ToolCall::checkpoints`]: crate::ToolCall::checkpoints
#[derive(Clone)]
pub struct FileCheckpoints {
    store: Arc<dyn SessionStore>,
    session: String,
}

impl fmt::Debug for FileCheckpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileCheckpoints")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl FileCheckpoints {
    /// The checkpoints of session `session` in `store`.
    pub fn new(store: Arc<dyn SessionStore>, session: impl Into<String>) -> Self {
        FileCheckpoints {
            store,
            session: session.into(),
        }
    }

    /// The session the changes are recorded in.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// Records that the file at `path` (absolute) changes from `before` (`None`: it does not
    /// exist) to `after` (`None`: it is removed). Durable when it returns; call it before
    /// changing the file, and do not change the file when it fails (except with
    /// [`Error::Unsupported`]: the store keeps no checkpoints, so there is nothing to record).
    pub async fn record_change(&self, path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Result<()> {
        self.record(path, before, after, false).await
    }

    /// Like [`FileCheckpoints::record_change`], for a rewind putting `path` back to `after`.
    pub async fn record_restore(&self, path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Result<()> {
        self.record(path, before, after, true).await
    }

    /// The content kept under `address` (checked against it), `Ok(None)` if there is none.
    pub async fn content(&self, address: &str) -> Result<Option<Vec<u8>>> {
        self.store.get_checkpoint(&self.session, address).await
    }

    /// Whether `error` says only that the store keeps no checkpoints.
    pub fn is_unsupported(error: &Error) -> bool {
        matches!(error, Error::Unsupported(_))
    }

    async fn record(&self, path: &str, before: Option<&[u8]>, after: Option<&[u8]>, restore: bool) -> Result<()> {
        if !path.starts_with('/') {
            return Err(Error::Store {
                context: "recording a file checkpoint".to_owned(),
                source: format!("{path:?} is not an absolute path").into(),
            });
        }
        let before = match before {
            Some(content) => Some(self.store.put_checkpoint(&self.session, content).await?),
            None => None,
        };
        let record = CheckpointRecord {
            path: path.to_owned(),
            before,
            after: after.map(checkpoint_address),
            restore,
        };
        self.store.record_checkpoint(&self.session, &record).await
    }
}
