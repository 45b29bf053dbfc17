//! The store that keeps nothing.

use std::sync::Arc;

use async_trait::async_trait;

use super::id::validate_session_id;
use super::info::SessionInfo;
use super::seam::{LoadedBranch, PersistentMessage, SessionStore};
use crate::error::Result;

/// A store that persists nothing and never fails. `list` is empty, `load` finds nothing.
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
}
