//! The store that keeps nothing.

use std::sync::Arc;

use async_trait::async_trait;

use super::checkpoint::{CheckpointRecord, StoredCheckpoint};
use super::id::validate_session_id;
use super::info::SessionInfo;
use super::seam::{LoadedBranch, PersistentMessage, SessionStore, SessionTree};
use crate::error::{Error, Result};

/// A store that persists nothing and never fails to append. `list` is empty, `load` finds
/// nothing; rewind, fork and file checkpoints are [`Error::Unsupported`].
#[derive(Debug, Default, Clone, Copy)]
pub struct NullStore;

impl NullStore {
    /// A null store behind an `Arc`, ready for [`Session::create`](crate::Session::create).
    pub fn shared() -> Arc<dyn SessionStore> {
        Arc::new(NullStore)
    }
}

#[async_trait]
impl SessionStore for NullStore {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        Ok(Vec::new())
    }
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        validate_session_id(id)?;
        Ok(None)
    }
    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_session_id(prefix)?;
        Ok(Vec::new())
    }
    async fn latest_info(&self) -> Result<Option<SessionInfo>> {
        Ok(None)
    }
    async fn load_branch(&self, _id: &str) -> Result<Option<LoadedBranch>> {
        Ok(None)
    }
    async fn append(&self, _id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        // Nothing is kept, but every message still gets an id of its own, as the seam promises.
        Ok(messages
            .iter()
            .map(|_| uuid::Uuid::now_v7().simple().to_string()[24..].to_owned())
            .collect())
    }
    async fn switch_branch(&self, _id: &str, _tip: Option<&str>) -> Result<()> {
        Err(Error::Unsupported("branches (rewind)".to_owned()))
    }
    async fn fork(&self, _from: &str, _at: &str, _new_id: &str) -> Result<()> {
        Err(Error::Unsupported("forks".to_owned()))
    }
    async fn tree(&self, _id: &str) -> Result<Option<SessionTree>> {
        Err(Error::Unsupported("branches (tree)".to_owned()))
    }
    async fn put_checkpoint(&self, _id: &str, _content: &[u8]) -> Result<String> {
        Err(Error::Unsupported("file checkpoints".to_owned()))
    }
    async fn get_checkpoint(&self, _id: &str, _address: &str) -> Result<Option<Vec<u8>>> {
        Err(Error::Unsupported("file checkpoints".to_owned()))
    }
    async fn record_checkpoint(&self, _id: &str, _record: &CheckpointRecord) -> Result<()> {
        Err(Error::Unsupported("file checkpoints".to_owned()))
    }
    async fn checkpoints(&self, _id: &str) -> Result<Vec<StoredCheckpoint>> {
        Err(Error::Unsupported("file checkpoints".to_owned()))
    }
}
