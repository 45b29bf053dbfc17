//! The session seam: the trait a store implements, and what the agent hands it.
//!
//! The write side is rich ([`PersistentMessage`] carries the message, usage, provider identity, the
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

use super::checkpoint::{CheckpointRecord, StoredCheckpoint};
use super::id::validate_session_id;
use super::info::SessionInfo;
use super::search::{SearchHit, SearchQuery};
use crate::conversation::ToolDecl;
use crate::conversation::{Conversation, Message, Role, Usage};
use crate::error::Result;
use crate::identity::ProviderIdentity;

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
    pub wire: Option<&'a ProviderIdentity>,
    /// The whole conversation at write time, this message included.
    pub conversation: &'a Conversation,
    /// The tools offered to the model for this turn.
    pub tools_available: &'a [ToolDecl],
    /// Set on the summary message a compaction appends.
    pub compaction: Option<CompactionRecord>,
}

impl<'a> PersistentMessage<'a> {
    /// `message`, written as part of `conversation`, with the usage it carries and nothing
    /// else: no provider identity, no tools offered, no compaction. Set the other fields with struct
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
/// Required: the log (`list`, `load_branch`, `append`), the session tree (`switch_branch` for
/// rewind, `fork`, `tree`) and file checkpoints (`put_checkpoint`, `get_checkpoint`,
/// `record_checkpoint`, `checkpoints`). A store without branches or checkpoints says so in
/// those methods with [`Error::Unsupported`](crate::Error::Unsupported). That is a choice the
/// compiler asks every store to make, and a wrapper cannot lose rewind, fork or file checkpoints
/// by leaving the methods out: a [`StoreWrapper`](crate::store::StoreWrapper) forwards them.
///
/// `info`, `ids_with_prefix`, `latest_info` and `load` have default implementations over `list`
/// and `load_branch`, which are correct but read every session; a store that can answer them
/// directly overrides them. `release_writer` does nothing by default. Every method that takes an
/// id (or prefix) checks it with [`validate_session_id`](crate::store::validate_session_id)
/// before touching storage.
///
/// A store that wraps another one (metrics, caching, access control) implements
/// [`StoreWrapper`](crate::store::StoreWrapper) instead: it names the inner store and overrides
/// only what it changes, and every method it leaves out, defaulted ones included, forwards to the
/// inner store.
///
/// A store with storage of its own implements this trait; one without branches or checkpoints
/// answers them itself:
///
/// ```
/// use panto_core::store::{CheckpointRecord, LoadedBranch, PersistentMessage, SessionTree, StoredCheckpoint};
/// use panto_core::{async_trait, Error, Result, SessionInfo, SessionStore};
///
/// /// A read-only archive that holds no session.
/// #[derive(Debug)]
/// struct Empty;
///
/// fn unsupported<T>(what: &str) -> Result<T> {
///     Err(Error::Unsupported(what.to_owned()))
/// }
///
/// #[async_trait]
/// impl SessionStore for Empty {
///     async fn list(&self) -> Result<Vec<SessionInfo>> { Ok(Vec::new()) }
///     async fn load_branch(&self, _: &str) -> Result<Option<LoadedBranch>> { Ok(None) }
///     async fn append(&self, _: &str, _: &[PersistentMessage<'_>]) -> Result<Vec<String>> { unsupported("writes") }
///     async fn switch_branch(&self, _: &str, _: Option<&str>) -> Result<()> { unsupported("branches") }
///     async fn fork(&self, _: &str, _: &str, _: &str) -> Result<()> { unsupported("forks") }
///     async fn tree(&self, _: &str) -> Result<Option<SessionTree>> { unsupported("branches") }
///     async fn put_checkpoint(&self, _: &str, _: &[u8]) -> Result<String> { unsupported("checkpoints") }
///     async fn get_checkpoint(&self, _: &str, _: &str) -> Result<Option<Vec<u8>>> { unsupported("checkpoints") }
///     async fn record_checkpoint(&self, _: &str, _: &CheckpointRecord) -> Result<()> { unsupported("checkpoints") }
///     async fn checkpoints(&self, _: &str) -> Result<Vec<StoredCheckpoint>> { unsupported("checkpoints") }
/// }
/// ```
///
/// One that leaves out the session tree and the checkpoints does not compile (it would otherwise
/// answer every rewind and fork with [`Error::Unsupported`](crate::Error::Unsupported) at run
/// time without having said so):
///
/// ```compile_fail,E0046
/// use panto_core::store::{LoadedBranch, PersistentMessage};
/// use panto_core::{async_trait, Result, SessionInfo, SessionStore};
///
/// #[derive(Debug)]
/// struct LogOnly;
///
/// #[async_trait]
/// impl SessionStore for LogOnly {
///     async fn list(&self) -> Result<Vec<SessionInfo>> { Ok(Vec::new()) }
///     async fn load_branch(&self, _: &str) -> Result<Option<LoadedBranch>> { Ok(None) }
///     async fn append(&self, _: &str, _: &[PersistentMessage<'_>]) -> Result<Vec<String>> { Ok(Vec::new()) }
/// }
/// ```
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
    /// session: the [active branch](LoadedBranch) without its entry ids.
    async fn load(&self, id: &str) -> Result<Option<Conversation>> {
        Ok(self.load_branch(id).await?.map(|branch| branch.conversation))
    }

    /// The active branch of session `id`: its conversation as the model should see it (the path
    /// from the first entry to the branch's tip, compactions on that path applied), the entry
    /// of every message, and where the session was forked from. `Ok(None)` if there is no such
    /// session.
    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>>;

    /// Appends `messages` to session `id` after the tip of its active branch, creating the
    /// session on the first append, and returns the entry id the store gave each message, in
    /// order. All or nothing: after an error none of the batch is stored.
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>>;

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

    /// Makes entry `tip` (or, with `None`, the empty start before the first entry) the tip of
    /// session `id`'s active branch: the next append follows it, and `load_branch` and the
    /// listing describe the path to it. A store records the switch as an appended entry; every
    /// entry after the old tip stays in the log. [`Error::UnknownEntry`](crate::Error::UnknownEntry) when the session holds no
    /// message entry `tip`; [`Error::Unsupported`](crate::Error::Unsupported) from a store without branches.
    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()>;

    /// Starts session `new_id` whose history is the path of session `from` up to and including
    /// its entry `at` (entry ids kept), recording [`ForkOrigin`] `{from, at}` with it. All or
    /// nothing. [`Error::UnknownEntry`](crate::Error::UnknownEntry) when `from` holds no message entry `at`,
    /// [`Error::SessionNotFound`](crate::Error::SessionNotFound) when there is no session `from`, [`Error::Unsupported`](crate::Error::Unsupported) from a
    /// store without forks.
    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()>;

    /// Keeps `content` (the previous content of a file a tool changes) beside session `id`,
    /// content-addressed, and returns its address ([`checkpoint_address`](crate::store::checkpoint_address)):
    /// storing the same bytes twice keeps one copy. Durable when it returns. A checkpoint may be
    /// kept before the session's first append. [`Error::Unsupported`](crate::Error::Unsupported) from a store that keeps
    /// nothing (`NullStore`).
    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String>;

    /// The content kept under `address` for session `id`, `Ok(None)` if there is none. A store
    /// checks the bytes against the address before handing them out (a damaged blob is
    /// [`Error::CorruptSession`](crate::Error::CorruptSession), never restored). [`Error::Unsupported`](crate::Error::Unsupported) as for
    /// [`SessionStore::put_checkpoint`].
    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>>;

    /// Appends `record` to session `id`, belonging to the tip of its active branch (the tip does
    /// not move), durably: a rewind later finds which files changed after a point from these
    /// records. The session must be stored already ([`Error::SessionNotFound`](crate::Error::SessionNotFound) otherwise).
    /// [`Error::Unsupported`](crate::Error::Unsupported) from a store that keeps no checkpoints.
    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()>;

    /// Every [`CheckpointRecord`] of session `id`, all branches, in the order they were recorded,
    /// with the entry each belongs to. Empty for a session without any (or no such session).
    /// [`Error::Unsupported`](crate::Error::Unsupported) as for [`SessionStore::record_checkpoint`].
    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>>;

    /// The messages of the store's sessions that match `query`, newest first
    /// ([`finish_hits`](crate::store::finish_hits)), at most [`SearchQuery::limit`]: prompts and
    /// answers, and tool inputs and outputs with [`SearchQuery::tools`], every branch, each
    /// message at most once (its first match, as [`SearchMatcher::match_message`](crate::store::SearchMatcher::match_message)
    /// finds it). [`Error::InvalidSearchPattern`](crate::Error::InvalidSearchPattern) for a
    /// malformed pattern.
    ///
    /// The default ([`scan_search`](crate::store::scan_search)) reads every session with `list`,
    /// `tree` and `load_branch`; it searches a message off the active branch's view only by the
    /// start of its text that `tree` gives. A store that can do better (an index, a scan of
    /// raw records) overrides it.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        super::search::scan_search(self, query).await
    }

    /// Every entry of session `id` (all branches), in the order they were appended, for drawing
    /// the session's tree. `Ok(None)` if there is no such session; [`Error::Unsupported`](crate::Error::Unsupported) from a
    /// store without branches.
    async fn tree(&self, id: &str) -> Result<Option<SessionTree>>;
}

/// Where a forked session came from: the session and the entry its history ends at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkOrigin {
    /// The id of the session it was forked from.
    pub session: String,
    /// The entry of that session the fork's history ends at (included).
    pub entry: String,
}

/// One entry of a message on a branch, as a store assigned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRef {
    /// The entry id: unique within the session, stable for its life (a fork keeps it).
    pub id: String,
    /// The entry this one follows in the tree (`None` for a first entry). With compaction it may
    /// be an entry the view no longer shows.
    pub parent: Option<String>,
}

/// A session's active branch, as [`SessionStore::load_branch`] returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedBranch {
    /// The conversation as the model should see it.
    pub conversation: Conversation,
    /// The entry of each message of `conversation.messages`, index for index.
    pub entries: Vec<EntryRef>,
    /// Set when the session was forked from another.
    pub forked_from: Option<ForkOrigin>,
}

/// One message entry of a session's tree, as [`SessionStore::tree`] returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeEntry {
    /// The entry and its parent.
    pub entry: EntryRef,
    /// The message's role.
    pub role: Role,
    /// The start of its text, at most [`LAST_USER_MESSAGE_CHARS`](crate::store::LAST_USER_MESSAGE_CHARS)
    /// characters; of a prompt, the start of what was typed ([`Message::prompt_text`]).
    pub preview: String,
    /// Whether it is a human prompt ([`Message::is_human_prompt`]).
    pub is_prompt: bool,
}

/// Every message entry of a session, all branches, and the active tip.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionTree {
    /// The entries in the order they were appended (a parent always before its children).
    pub entries: Vec<TreeEntry>,
    /// The tip of the active branch (`None`: the empty start).
    pub tip: Option<String>,
}

impl TreeEntry {
    /// The tree entry of `message` stored as `entry`.
    pub fn of(entry: EntryRef, message: &Message) -> Self {
        let is_prompt = message.is_human_prompt();
        // A prompt is labelled by what was typed, not by the text attached to it.
        let text: std::borrow::Cow<'_, str> = if is_prompt {
            message.prompt_text().into()
        } else {
            message.text().into()
        };
        TreeEntry {
            entry,
            role: message.role,
            preview: super::info::truncate_chars(&text, super::info::LAST_USER_MESSAGE_CHARS),
            is_prompt,
        }
    }
}
