//! The store that keeps nothing.

use std::sync::Arc;

use async_trait::async_trait;

use super::id::validate_session_id;
use super::info::SessionInfo;
use super::seam::{PersistentMessage, SessionStore};
use crate::conversation::Conversation;
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
    async fn load(&self, _id: &str) -> Result<Option<Conversation>> {
        Ok(None)
    }
    async fn append(&self, _id: &str, _messages: &[PersistentMessage<'_>]) -> Result<()> {
        Ok(())
    }
}
