//! The session seam: the trait a store implements, and what the agent hands it.
//!
//! The write side is rich ([`PersistentMessage`] carries the message, usage, wire identity, the
//! whole conversation and the tools offered) so that an audit store can keep provenance; the read
//! side is minimal ([`SessionStore::load`] returns a [`Conversation`], [`SessionStore::list`]
//! returns [`SessionInfo`]s). A store keeps what it wants of the write side.
//!
//! No API key material ever reaches a store: not the key, not a hash of it.
//!
//! # Audit stores
//! Storing the full tool manifest verbatim on every record re-serialises it each turn. A store
//! that wants provenance should content-address it: hash each tool's name, description and schema,
//! keep one row per distinct hash, and store only the list of hashes per record.

use std::fmt;

use async_trait::async_trait;

use super::id::validate_session_id;
use super::info::SessionInfo;
use crate::conversation::{Conversation, Message, Usage};
use crate::error::Result;
use crate::tool::ToolDecl;
use crate::wire::WireIdentity;

/// A compaction, as recorded with the summary message that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionRecord {
    /// The index, in the conversation as it was before compaction, of the first message kept
    /// verbatim after the summary.
    pub first_kept: usize,
    /// Estimated context tokens before compaction.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
}

/// One message as the agent hands it to a store: rich, for provenance.
#[derive(Debug, Clone, Copy)]
pub struct PersistentMessage<'a> {
    /// The message (with its own metadata).
    pub message: &'a Message,
    /// Provider usage, for assistant messages.
    pub usage: Option<Usage>,
    /// Who produced it on the wire; `None` for system messages, which no provider produced.
    pub wire: Option<&'a WireIdentity>,
    /// The whole conversation at write time, this message included.
    pub conversation: &'a Conversation,
    /// The tools offered to the model for this turn.
    pub tools_available: &'a [ToolDecl],
    /// Set on the summary message a compaction appends.
    pub compaction: Option<CompactionRecord>,
}

impl<'a> PersistentMessage<'a> {
    /// `message`, written as part of `conversation`, with the usage it carries and nothing
    /// else: no wire identity, no tools offered, no compaction. Set the other fields with struct
    /// update syntax (`PersistentMessage { wire: Some(&wire), ..PersistentMessage::new(m, &c) }`).
    pub fn new(message: &'a Message, conversation: &'a Conversation) -> Self {
        PersistentMessage {
            message,
            usage: message.usage,
            wire: None,
            conversation,
            tools_available: &[],
            compaction: None,
        }
    }
}

/// A persistence backend for sessions: small primitives over the store's own storage.
///
/// Object safe: agents hold an `Arc<dyn SessionStore>`. A store implements these `&self`
/// methods; panto-core builds sessions on them, once, for every store:
/// [`Session::create`](crate::Session::create), [`Session::resolve`](crate::Session::resolve) and
/// [`Session::latest`](crate::Session::latest). So a session is always bound to the store it was
/// asked of, and a store that wraps another one (delegating these methods) hands out sessions
/// that write through the wrapper.
///
/// `info`, `ids_with_prefix` and `latest_info` have default implementations over `list`, which
/// are correct but read every session; a store that can answer them directly overrides them.
/// Every method that takes an id (or prefix) checks it with
/// [`validate_session_id`](crate::store::validate_session_id) before touching storage.
#[async_trait]
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// Every session, newest first by [`SessionInfo::recency`].
    async fn list(&self) -> Result<Vec<SessionInfo>>;

    /// The info of session `id` (exactly that id), `Ok(None)` if there is no such session.
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        validate_session_id(id)?;
        Ok(self.list().await?.into_iter().find(|info| info.id == id))
    }

    /// The ids of the sessions whose id starts with `prefix` (an exact match included), in any
    /// order. Only sessions the store holds: a created, never appended session is none.
    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_session_id(prefix)?;
        Ok(self
            .list()
            .await?
            .into_iter()
            .filter(|info| info.id.starts_with(prefix))
            .map(|info| info.id)
            .collect())
    }

    /// The info of the most recent session by [`SessionInfo::recency`]: the first of `list`.
    async fn latest_info(&self) -> Result<Option<SessionInfo>> {
        Ok(self.list().await?.into_iter().next())
    }

    /// The conversation of session `id` as the model should see it, `Ok(None)` if there is no such
    /// session.
    async fn load(&self, id: &str) -> Result<Option<Conversation>>;

    /// Appends `messages` to session `id`, creating it on the first append. All or nothing: after
    /// an error none of the batch is stored.
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<()>;

    /// Session `id` has no writer in this process any more: the [`Agent`](crate::Agent) that
    /// wrote it was dropped. A store that holds something per session it writes (an open,
    /// locked file; an advisory lock) lets it go now, so that what a process holds scales with
    /// its live agents rather than with every session it ever wrote, and another process can
    /// resume the session. The next append takes the session again.
    ///
    /// Called from `Drop`, so it must not block or fail: a store that needs I/O to let go
    /// starts it and returns. The default does nothing (a store that holds nothing per session).
    fn release_writer(&self, id: &str) {
        let _ = id;
    }
}
