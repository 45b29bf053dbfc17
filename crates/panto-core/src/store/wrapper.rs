//! [`StoreWrapper`]: a store that wraps another one writes only what it changes.

use std::fmt;

use async_trait::async_trait;

use super::checkpoint::{CheckpointRecord, StoredCheckpoint};
use super::info::SessionInfo;
use super::seam::{LoadedBranch, PersistentMessage, SessionStore, SessionTree};
use super::search::{SearchHit, SearchQuery};
use crate::conversation::Conversation;
use crate::error::Result;

/// A store that wraps another one (metrics, caching, timing, access control, fault injection):
/// it names its inner store and overrides only the methods it changes; every other method of
/// [`SessionStore`] forwards to the inner store, which is what makes it a store: every type that
/// implements `StoreWrapper` implements [`SessionStore`].
///
/// Every method forwards, the defaulted ones of [`SessionStore`] included (`info`, `load`,
/// `release_writer`, …), so the inner store's own answers (an indexed query, a file name read, a
/// lock let go) are the wrapper's. A wrapper that must see every read (access control, a store that
/// fails on cue) overrides each read it guards, `info`, `ids_with_prefix`, `latest_info` and `load`
/// as well as `list` and `load_branch`: none of them goes through another.
///
/// A store that keeps its own storage implements [`SessionStore`] itself; a type implements one of
/// the two traits, never both.
///
/// A wrapper that counts the appends that pass through it:
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use panto_core::store::{PersistentMessage, StoreWrapper};
/// use panto_core::{async_trait, Conversation, MemoryStore, Result, Session, SessionStore};
///
/// #[derive(Debug)]
/// struct CountsAppends {
///     inner: Arc<dyn SessionStore>,
///     appends: AtomicUsize,
/// }
///
/// #[async_trait]
/// impl StoreWrapper for CountsAppends {
///     fn inner(&self) -> &dyn SessionStore {
///         &*self.inner
///     }
///     async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
///         self.appends.fetch_add(1, Ordering::SeqCst);
///         self.inner.append(id, messages).await
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<()> {
/// let memory = MemoryStore::new();
/// let counting = Arc::new(CountsAppends { inner: memory.clone(), appends: AtomicUsize::new(0) });
/// let mut session = Session::create(counting.clone());
/// let mut conversation = Conversation::new();
/// conversation.add_user_message("hello");
/// session.append(&[PersistentMessage::new(&conversation.messages[0], &conversation)]).await?;
///
/// assert_eq!(counting.appends.load(Ordering::SeqCst), 1);
/// // Every other method reached the memory store: the wrapper lists what it holds.
/// let store: Arc<dyn SessionStore> = counting;
/// assert_eq!(store.list().await?.len(), 1);
/// assert_eq!(memory.load(session.id()).await?, Some(conversation));
/// # Ok(())
/// # }
/// ```
///
/// Call a wrapper's store methods through `dyn SessionStore` (as a [`Session`](crate::Session)
/// does): on the concrete type both traits are in scope and a call such as `counting.list()` is
/// ambiguous.
#[async_trait]
pub trait StoreWrapper: Send + Sync + fmt::Debug {
    /// The store this one wraps: every method not overridden forwards to it.
    fn inner(&self) -> &dyn SessionStore;

    /// [`SessionStore::list`]; forwards.
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        self.inner().list().await
    }

    /// [`SessionStore::info`]; forwards.
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        self.inner().info(id).await
    }

    /// [`SessionStore::ids_with_prefix`]; forwards.
    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner().ids_with_prefix(prefix).await
    }

    /// [`SessionStore::latest_info`]; forwards.
    async fn latest_info(&self) -> Result<Option<SessionInfo>> {
        self.inner().latest_info().await
    }

    /// [`SessionStore::load`]; forwards.
    async fn load(&self, id: &str) -> Result<Option<Conversation>> {
        self.inner().load(id).await
    }

    /// [`SessionStore::load_branch`]; forwards.
    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        self.inner().load_branch(id).await
    }

    /// [`SessionStore::append`]; forwards.
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        self.inner().append(id, messages).await
    }

    /// [`SessionStore::release_writer`]; forwards.
    fn release_writer(&self, id: &str) {
        self.inner().release_writer(id);
    }

    /// [`SessionStore::switch_branch`]; forwards.
    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        self.inner().switch_branch(id, tip).await
    }

    /// [`SessionStore::fork`]; forwards.
    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        self.inner().fork(from, at, new_id).await
    }

    /// [`SessionStore::put_checkpoint`]; forwards.
    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String> {
        self.inner().put_checkpoint(id, content).await
    }

    /// [`SessionStore::get_checkpoint`]; forwards.
    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
        self.inner().get_checkpoint(id, address).await
    }

    /// [`SessionStore::record_checkpoint`]; forwards.
    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        self.inner().record_checkpoint(id, record).await
    }

    /// [`SessionStore::checkpoints`]; forwards.
    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>> {
        self.inner().checkpoints(id).await
    }

    /// [`SessionStore::tree`]; forwards.
    async fn tree(&self, id: &str) -> Result<Option<SessionTree>> {
        self.inner().tree(id).await
    }

    /// [`SessionStore::search`]; forwards.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        self.inner().search(query).await
    }
}

/// A wrapper is a store: each method is the wrapper's, overridden or forwarding. Every method is
/// written here, the defaulted ones included, so none falls back to `SessionStore`'s default
/// (which would answer from the wrapper's `list` rather than the inner store's own method).
#[async_trait]
impl<W: StoreWrapper> SessionStore for W {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        StoreWrapper::list(self).await
    }
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        StoreWrapper::info(self, id).await
    }
    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        StoreWrapper::ids_with_prefix(self, prefix).await
    }
    async fn latest_info(&self) -> Result<Option<SessionInfo>> {
        StoreWrapper::latest_info(self).await
    }
    async fn load(&self, id: &str) -> Result<Option<Conversation>> {
        StoreWrapper::load(self, id).await
    }
    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        StoreWrapper::load_branch(self, id).await
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        StoreWrapper::append(self, id, messages).await
    }
    fn release_writer(&self, id: &str) {
        StoreWrapper::release_writer(self, id);
    }
    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        StoreWrapper::switch_branch(self, id, tip).await
    }
    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        StoreWrapper::fork(self, from, at, new_id).await
    }
    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String> {
        StoreWrapper::put_checkpoint(self, id, content).await
    }
    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
        StoreWrapper::get_checkpoint(self, id, address).await
    }
    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        StoreWrapper::record_checkpoint(self, id, record).await
    }
    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>> {
        StoreWrapper::checkpoints(self, id).await
    }
    async fn tree(&self, id: &str) -> Result<Option<SessionTree>> {
        StoreWrapper::tree(self, id).await
    }
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        StoreWrapper::search(self, query).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::conversation::{ContentBlock, Message, Role};

    /// A store that answers every method, the defaulted ones included, by recording its name.
    #[derive(Debug, Default)]
    struct Records(Mutex<Vec<&'static str>>);

    impl Records {
        fn saw(&self, name: &'static str) {
            self.0.lock().expect("the record").push(name);
        }
    }

    #[async_trait]
    impl SessionStore for Records {
        async fn list(&self) -> Result<Vec<SessionInfo>> {
            self.saw("list");
            Ok(Vec::new())
        }
        async fn info(&self, _: &str) -> Result<Option<SessionInfo>> {
            self.saw("info");
            Ok(None)
        }
        async fn ids_with_prefix(&self, _: &str) -> Result<Vec<String>> {
            self.saw("ids_with_prefix");
            Ok(Vec::new())
        }
        async fn latest_info(&self) -> Result<Option<SessionInfo>> {
            self.saw("latest_info");
            Ok(None)
        }
        async fn load(&self, _: &str) -> Result<Option<Conversation>> {
            self.saw("load");
            Ok(None)
        }
        async fn load_branch(&self, _: &str) -> Result<Option<LoadedBranch>> {
            self.saw("load_branch");
            Ok(None)
        }
        async fn append(&self, _: &str, _: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
            self.saw("append");
            Ok(Vec::new())
        }
        fn release_writer(&self, _: &str) {
            self.saw("release_writer");
        }
        async fn switch_branch(&self, _: &str, _: Option<&str>) -> Result<()> {
            self.saw("switch_branch");
            Ok(())
        }
        async fn fork(&self, _: &str, _: &str, _: &str) -> Result<()> {
            self.saw("fork");
            Ok(())
        }
        async fn put_checkpoint(&self, _: &str, _: &[u8]) -> Result<String> {
            self.saw("put_checkpoint");
            Ok(String::new())
        }
        async fn get_checkpoint(&self, _: &str, _: &str) -> Result<Option<Vec<u8>>> {
            self.saw("get_checkpoint");
            Ok(None)
        }
        async fn record_checkpoint(&self, _: &str, _: &CheckpointRecord) -> Result<()> {
            self.saw("record_checkpoint");
            Ok(())
        }
        async fn checkpoints(&self, _: &str) -> Result<Vec<StoredCheckpoint>> {
            self.saw("checkpoints");
            Ok(Vec::new())
        }
        async fn tree(&self, _: &str) -> Result<Option<SessionTree>> {
            self.saw("tree");
            Ok(None)
        }
        async fn search(&self, _: &SearchQuery) -> Result<Vec<SearchHit>> {
            self.saw("search");
            Ok(Vec::new())
        }
    }

    /// A wrapper that overrides nothing.
    #[derive(Debug)]
    struct Plain(Arc<Records>);

    impl StoreWrapper for Plain {
        fn inner(&self) -> &dyn SessionStore {
            &*self.0
        }
    }

    /// The names of `SessionStore`'s methods, read from its definition, so that a method added to
    /// the trait is one this test calls or fails on.
    fn trait_methods() -> BTreeSet<String> {
        let source = include_str!("seam.rs");
        let start = source
            .find("pub trait SessionStore")
            .expect("seam.rs defines SessionStore");
        let body = &source[start..];
        let end = body.find("\n}\n").expect("the trait's closing brace");
        body[..end]
            .lines()
            .filter_map(|line| {
                let line = line.trim_start();
                let rest = line.strip_prefix("async fn ").or_else(|| line.strip_prefix("fn "))?;
                Some(rest.split(['(', '<']).next().unwrap_or_default().to_owned())
            })
            .collect()
    }

    /// Every method of `SessionStore`, called on a wrapper that overrides none, reaches the
    /// inner store's own method: no method of the wrapper answers from `SessionStore`'s default
    /// (which would call the wrapper's `list` or `load_branch` instead of the inner store's
    /// `info` or `load`), and none is missing.
    #[tokio::test]
    async fn a_wrapper_forwards_every_method_to_the_inner_store() {
        let records = Arc::new(Records::default());
        let store: Arc<dyn SessionStore> = Arc::new(Plain(records.clone()));
        let id = crate::store::new_session_id();
        let message = Message::new(Role::User, vec![ContentBlock::text("hello")]);
        let conversation = Conversation {
            messages: vec![message.clone()],
            metadata: None,
        };
        let address = crate::store::checkpoint_address(b"x");
        let record = CheckpointRecord {
            path: "/tmp/x".into(),
            before: None,
            after: None,
            restore: false,
        };

        store.list().await.expect("list");
        store.info(&id).await.expect("info");
        store.ids_with_prefix(&id).await.expect("ids_with_prefix");
        store.latest_info().await.expect("latest_info");
        store.load(&id).await.expect("load");
        store.load_branch(&id).await.expect("load_branch");
        store
            .append(&id, &[PersistentMessage::new(&message, &conversation)])
            .await
            .expect("append");
        store.release_writer(&id);
        store.switch_branch(&id, None).await.expect("switch_branch");
        store.fork(&id, "e", &id).await.expect("fork");
        store.put_checkpoint(&id, b"x").await.expect("put_checkpoint");
        store.get_checkpoint(&id, &address).await.expect("get_checkpoint");
        store.record_checkpoint(&id, &record).await.expect("record_checkpoint");
        store.checkpoints(&id).await.expect("checkpoints");
        store.tree(&id).await.expect("tree");
        store.search(&SearchQuery::text("x")).await.expect("search");

        let calls = records.0.lock().expect("the record").clone();
        let reached: BTreeSet<String> = calls.iter().map(|name| (*name).to_owned()).collect();
        assert_eq!(
            reached,
            trait_methods(),
            "every SessionStore method forwards to the inner store's own (left: those that reached it; right: the trait's)"
        );
        assert_eq!(
            reached.len(),
            calls.len(),
            "each call reached the inner store once: {calls:?}"
        );
    }
}
