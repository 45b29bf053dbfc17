//! A session bound to its store, and the one way sessions are made: created, resolved by id or
//! prefix, or the latest.

use std::fmt;
use std::sync::Arc;

use chrono::Utc;

use super::id::{new_session_id, validate_session_id, MAX_SESSION_ID_LEN};
use super::info::SessionInfo;
use super::seam::{LoadedBranch, PersistentMessage, SessionStore, SessionTree};
use crate::conversation::Conversation;
use crate::error::{Error, Result};

/// A session: its info and the store that holds it.
#[derive(Clone)]
pub struct Session {
    /// What a listing shows; kept current by [`Session::append`].
    pub info: SessionInfo,
    /// The store.
    pub store: Arc<dyn SessionStore>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("info", &self.info)
            .field("store", &self.store)
            .finish()
    }
}

impl Session {
    /// A session handle over `store` for a session whose info is known. Prefer
    /// [`Session::create`], [`Session::resolve`] and [`Session::latest`], which find the info.
    pub fn new(info: SessionInfo, store: Arc<dyn SessionStore>) -> Self {
        Session { info, store }
    }

    /// A new session in `store`, with a fresh id ([`new_session_id`]). Infallible and does no
    /// I/O: nothing is stored until the first append.
    pub fn create(store: Arc<dyn SessionStore>) -> Session {
        Session::new(SessionInfo::new(new_session_id(), Utc::now()), store)
    }

    /// The session in `store` whose id is `id_or_prefix` or, failing that, the only one whose id
    /// starts with it. `Ok(None)` when none matches; [`Error::AmbiguousSession`] (every
    /// candidate, sorted) when several do; [`Error::InvalidSessionId`] when `id_or_prefix` could
    /// not be an id.
    pub async fn resolve(store: Arc<dyn SessionStore>, id_or_prefix: &str) -> Result<Option<Session>> {
        validate_session_id(id_or_prefix)?;
        if id_or_prefix.len() == MAX_SESSION_ID_LEN {
            // A whole id is no other id's prefix: look it up without matching.
            let info = store.info(id_or_prefix).await?;
            return Ok(info.map(|info| Session::new(info, store)));
        }
        let mut ids = store.ids_with_prefix(id_or_prefix).await?;
        let id = if ids.iter().any(|id| id == id_or_prefix) {
            id_or_prefix.to_owned()
        } else {
            match ids.len() {
                0 => return Ok(None),
                1 => ids.remove(0),
                _ => {
                    ids.sort();
                    return Err(Error::AmbiguousSession {
                        prefix: id_or_prefix.to_owned(),
                        candidates: ids,
                    });
                }
            }
        };
        // A session deleted since it was matched is not found, as if it had never matched.
        let info = store.info(&id).await?;
        Ok(info.map(|info| Session::new(info, store)))
    }

    /// The most recent session in `store` by [`SessionInfo::recency`], `Ok(None)` when it holds
    /// none.
    pub async fn latest(store: Arc<dyn SessionStore>) -> Result<Option<Session>> {
        let info = store.latest_info().await?;
        Ok(info.map(|info| Session::new(info, store)))
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.info.id
    }

    /// The stored conversation. A session that is not in the store is
    /// [`Error::SessionNotFound`].
    pub async fn load(&self) -> Result<Conversation> {
        self.store
            .load(&self.info.id)
            .await?
            .ok_or_else(|| Error::SessionNotFound(self.info.id.clone()))
    }

    /// The stored active branch: the conversation, each message's entry and the fork origin. A
    /// session that is not in the store is [`Error::SessionNotFound`].
    pub async fn load_branch(&self) -> Result<LoadedBranch> {
        self.store
            .load_branch(&self.info.id)
            .await?
            .ok_or_else(|| Error::SessionNotFound(self.info.id.clone()))
    }

    /// Appends `messages` and, once stored, folds them into [`Session::info`]. Returns the entry
    /// id the store gave each message.
    pub async fn append(&mut self, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let ids = self.store.append(&self.info.id, messages).await?;
        let now = Utc::now();
        for m in messages {
            self.info.record(m.message, m.wire, now);
        }
        Ok(ids)
    }

    /// Makes entry `tip` (`None`: the empty start) the tip of the active branch (see
    /// [`SessionStore::switch_branch`]), and refreshes [`Session::info`] to describe it.
    pub async fn switch_branch(&mut self, tip: Option<&str>) -> Result<()> {
        self.store.switch_branch(&self.info.id, tip).await?;
        self.refresh().await
    }

    /// A new session in the same store whose history is this one's path up to and including
    /// entry `at` (see [`SessionStore::fork`]).
    pub async fn fork(&self, at: &str) -> Result<Session> {
        let new_id = new_session_id();
        self.store.fork(&self.info.id, at, &new_id).await?;
        let info = self
            .store
            .info(&new_id)
            .await?
            .ok_or_else(|| Error::SessionNotFound(new_id.clone()))?;
        Ok(Session::new(info, self.store.clone()))
    }

    /// Every message entry of the session, all branches, and the active tip.
    pub async fn tree(&self) -> Result<SessionTree> {
        self.store
            .tree(&self.info.id)
            .await?
            .ok_or_else(|| Error::SessionNotFound(self.info.id.clone()))
    }

    /// Reads [`Session::info`] again from the store.
    pub async fn refresh(&mut self) -> Result<()> {
        self.info = self
            .store
            .info(&self.info.id)
            .await?
            .ok_or_else(|| Error::SessionNotFound(self.info.id.clone()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ContentBlock, Message, Role};
    use crate::store::memory::MemoryStore;

    /// A store holding one session under each of `ids`.
    async fn store_with(ids: &[&str]) -> Arc<dyn SessionStore> {
        let store = MemoryStore::new();
        let message = Message::new(Role::User, vec![ContentBlock::text("hi")]);
        let conversation = Conversation::new();
        for id in ids {
            store
                .append(id, &[PersistentMessage::new(&message, &conversation)])
                .await
                .unwrap();
        }
        store
    }

    async fn resolved(store: &Arc<dyn SessionStore>, prefix: &str) -> Result<Option<String>> {
        Ok(Session::resolve(store.clone(), prefix)
            .await?
            .map(|s| s.id().to_owned()))
    }

    #[tokio::test]
    async fn an_exact_id_wins_over_the_longer_ids_it_prefixes() {
        let store = store_with(&["ab", "abc", "abd"]).await;
        assert_eq!(resolved(&store, "ab").await.unwrap().as_deref(), Some("ab"));
        assert_eq!(resolved(&store, "abc").await.unwrap().as_deref(), Some("abc"));
        match resolved(&store, "a").await {
            Err(Error::AmbiguousSession { prefix, candidates }) => {
                assert_eq!(prefix, "a");
                assert_eq!(candidates, ["ab", "abc", "abd"], "every candidate, sorted");
            }
            other => panic!("expected AmbiguousSession, got {other:?}"),
        }
        assert_eq!(resolved(&store, "b").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_whole_id_is_looked_up_directly() {
        let id = new_session_id();
        let store = store_with(&[&id]).await;
        assert_eq!(resolved(&store, &id).await.unwrap(), Some(id.clone()));
        let other = new_session_id();
        assert_eq!(resolved(&store, &other).await.unwrap(), None);
    }
}
