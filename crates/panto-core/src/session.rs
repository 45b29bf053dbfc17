//! The session seam: where an agent's conversation is persisted, and how it is found again.
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

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::conversation::{Conversation, Message, Usage};
use crate::error::{Error, Result};
use crate::tool::ToolDecl;
use crate::wire::WireIdentity;

/// How many characters of the last human prompt [`SessionInfo::last_user_message`] keeps.
pub const LAST_USER_MESSAGE_CHARS: usize = 200;

/// What a listing shows of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id (a UUIDv7 in the built-in stores).
    pub id: String,
    /// When the session was created.
    pub created: DateTime<Utc>,
    /// When the session was last written.
    pub modified: DateTime<Utc>,
    /// When a person last prompted in it ([`Message::is_human_prompt`]).
    pub last_prompt_at: Option<DateTime<Utc>>,
    /// How many messages the log holds (system, user, assistant, tool results, summaries).
    pub message_count: usize,
    /// The start of the last human prompt, at most [`LAST_USER_MESSAGE_CHARS`] characters.
    pub last_user_message: Option<String>,
    /// The provider identity of the last non-system message, for resume pre-selection.
    pub wire: Option<WireIdentity>,
}

impl SessionInfo {
    /// The info of a brand-new, empty session.
    pub fn new(id: impl Into<String>, created: DateTime<Utc>) -> Self {
        SessionInfo {
            id: id.into(),
            created,
            modified: created,
            last_prompt_at: None,
            message_count: 0,
            last_user_message: None,
            wire: None,
        }
    }

    /// The time sessions are ordered by: the last human prompt, else creation.
    ///
    /// This is the one definition of recency: every store's `list` order and `latest` use it, so
    /// opening a session, repairing it, or appending a synthetic closer never moves it up.
    pub fn recency(&self) -> DateTime<Utc> {
        self.last_prompt_at.unwrap_or(self.created)
    }

    /// Folds one appended message into the info, as every store must.
    pub fn record(&mut self, message: &Message, wire: Option<&WireIdentity>, at: DateTime<Utc>) {
        self.message_count += 1;
        self.modified = at;
        if message.is_human_prompt() {
            self.last_prompt_at = Some(at);
            self.last_user_message = Some(truncate_chars(&message.text(), LAST_USER_MESSAGE_CHARS));
        }
        if let Some(wire) = wire {
            self.wire = Some(wire.clone());
        }
    }
}

/// Sorts infos newest first by [`SessionInfo::recency`], ties broken by id (newest UUIDv7 first).
pub fn sort_by_recency(infos: &mut [SessionInfo]) {
    infos.sort_by(|a, b| b.recency().cmp(&a.recency()).then_with(|| b.id.cmp(&a.id)));
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_owned(),
        None => s.to_owned(),
    }
}

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

/// A persistence backend for sessions.
///
/// Object safe: agents hold an `Arc<dyn SessionStore>`. Methods that hand out a [`Session`] take
/// `self: Arc<Self>` so the session can keep the store; call them as `store.clone().create()`.
#[async_trait]
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// A new session handle. Infallible and does no I/O: nothing is stored until the first
    /// append.
    fn create(self: Arc<Self>) -> Session;

    /// Every session, newest first by [`SessionInfo::recency`].
    async fn list(&self) -> Result<Vec<SessionInfo>>;

    /// The session whose id is `id_or_prefix` or, failing that, the only one whose id starts with
    /// it. `Ok(None)` when none matches; [`Error::AmbiguousSession`] when several do.
    async fn resolve(self: Arc<Self>, id_or_prefix: &str) -> Result<Option<Session>>;

    /// The most recent session by [`SessionInfo::recency`].
    async fn latest(self: Arc<Self>) -> Result<Option<Session>>;

    /// The conversation of session `id` as the model should see it, `Ok(None)` if there is no such
    /// session.
    async fn load(&self, id: &str) -> Result<Option<Conversation>>;

    /// Appends `messages` to session `id`, creating it on the first append. All or nothing: after
    /// an error none of the batch is stored.
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<()>;
}

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
    /// A session handle over `store`.
    pub fn new(info: SessionInfo, store: Arc<dyn SessionStore>) -> Self {
        Session { info, store }
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

    /// Appends `messages` and, once stored, folds them into [`Session::info`].
    pub async fn append(&mut self, messages: &[PersistentMessage<'_>]) -> Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        self.store.append(&self.info.id, messages).await?;
        let now = Utc::now();
        for m in messages {
            self.info.record(m.message, m.wire, now);
        }
        Ok(())
    }
}

/// Mints a new session id: a UUIDv7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Checks that `id` could be a session id or id prefix: 1 to 36 characters of lowercase hex and
/// `-`. Stores call this before touching storage, so `../x` or `a/b` never reach a path.
pub fn validate_session_id(id: &str) -> Result<()> {
    let ok = !id.is_empty() && id.len() <= 36 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidSessionId(id.to_owned()))
    }
}

/// Picks, from configured candidates, the ones whose wire identity matches the session's last
/// one: what resume pre-selects. One match: use it. None: use the default. Several: the embedder
/// decides (the CLI takes the first and says so).
pub fn match_models<'a, K>(candidates: &'a [(K, WireIdentity)], info: &SessionInfo) -> Vec<&'a K> {
    let Some(wire) = &info.wire else {
        return Vec::new();
    };
    candidates.iter().filter(|(_, w)| w == wire).map(|(k, _)| k).collect()
}

/// A store that persists nothing and never fails. `list` is empty, `load` finds nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullStore;

impl NullStore {
    /// A null store behind an `Arc`, ready for [`SessionStore::create`].
    pub fn shared() -> Arc<dyn SessionStore> {
        Arc::new(NullStore)
    }
}

#[async_trait]
impl SessionStore for NullStore {
    fn create(self: Arc<Self>) -> Session {
        Session::new(SessionInfo::new(new_session_id(), Utc::now()), self)
    }
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        Ok(Vec::new())
    }
    async fn resolve(self: Arc<Self>, id_or_prefix: &str) -> Result<Option<Session>> {
        validate_session_id(id_or_prefix)?;
        Ok(None)
    }
    async fn latest(self: Arc<Self>) -> Result<Option<Session>> {
        Ok(None)
    }
    async fn load(&self, _id: &str) -> Result<Option<Conversation>> {
        Ok(None)
    }
    async fn append(&self, _id: &str, _messages: &[PersistentMessage<'_>]) -> Result<()> {
        Ok(())
    }
}

/// One message as [`MemoryStore`] keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    /// The message.
    pub message: Message,
    /// Its usage.
    pub usage: Option<Usage>,
    /// Its wire identity.
    pub wire: Option<WireIdentity>,
    /// The names of the tools offered with it.
    pub tools_available: Vec<String>,
    /// The compaction it records.
    pub compaction: Option<CompactionRecord>,
}

#[derive(Debug, Default)]
struct MemorySession {
    info: Option<SessionInfo>,
    metadata: Option<String>,
    records: Vec<StoredRecord>,
    /// Indices into `records` of the messages the model currently sees.
    view: Vec<usize>,
}

/// A store that keeps sessions in memory: the test double, and a store for embedders that keep
/// sessions only for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<HashMap<String, MemorySession>>,
    /// Every append batch, in order, for tests to inspect.
    appends: Mutex<Vec<(String, Vec<StoredRecord>)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Every batch appended so far: session id and records, in order.
    pub fn appends(&self) -> Vec<(String, Vec<StoredRecord>)> {
        lock(&self.appends).clone()
    }

    /// Every record of session `id`, in append order (the whole history, not the compacted view).
    pub fn records(&self, id: &str) -> Vec<StoredRecord> {
        lock(&self.sessions)
            .get(id)
            .map(|s| s.records.clone())
            .unwrap_or_default()
    }

    fn session_handle(self: Arc<Self>, info: SessionInfo) -> Session {
        Session::new(info, self)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep serving it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Applies a compaction to `view`, the messages the model sees (in any representation: indices,
/// entry ids, rows): every system message before index `cut` (clamped to the view) stays, so the
/// effective system prompt survives, then `summary`, then the kept tail from `cut` on.
///
/// The one definition of what a compaction does to a conversation, so that every store's
/// `load` returns the same view (the store contract suite holds them to it).
pub fn compact_view<T: Clone>(view: &mut Vec<T>, cut: usize, summary: T, is_system: impl Fn(&T) -> bool) {
    let cut = cut.min(view.len());
    let mut next: Vec<T> = view[..cut].iter().filter(|v| is_system(v)).cloned().collect();
    next.push(summary);
    next.extend_from_slice(&view[cut..]);
    *view = next;
}

/// Applies one appended record to a view of record indices, honouring compaction records.
pub(crate) fn apply_to_view(
    view: &mut Vec<usize>,
    records_index: usize,
    compaction: Option<&CompactionRecord>,
    is_system: &dyn Fn(usize) -> bool,
) {
    if let Some(c) = compaction {
        compact_view(view, c.first_kept, records_index, |&i| is_system(i));
    } else {
        view.push(records_index);
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    fn create(self: Arc<Self>) -> Session {
        self.session_handle(SessionInfo::new(new_session_id(), Utc::now()))
    }

    async fn list(&self) -> Result<Vec<SessionInfo>> {
        let mut infos: Vec<SessionInfo> = lock(&self.sessions).values().filter_map(|s| s.info.clone()).collect();
        sort_by_recency(&mut infos);
        Ok(infos)
    }

    async fn resolve(self: Arc<Self>, id_or_prefix: &str) -> Result<Option<Session>> {
        validate_session_id(id_or_prefix)?;
        let found = {
            let sessions = lock(&self.sessions);
            if let Some(info) = sessions.get(id_or_prefix).and_then(|s| s.info.clone()) {
                Some(info)
            } else {
                let mut matches: Vec<&SessionInfo> = sessions
                    .values()
                    .filter_map(|s| s.info.as_ref())
                    .filter(|i| i.id.starts_with(id_or_prefix))
                    .collect();
                match matches.len() {
                    0 => None,
                    1 => matches.pop().cloned(),
                    _ => {
                        let mut candidates: Vec<String> = matches.iter().map(|i| i.id.clone()).collect();
                        candidates.sort();
                        return Err(Error::AmbiguousSession {
                            prefix: id_or_prefix.to_owned(),
                            candidates,
                        });
                    }
                }
            }
        };
        Ok(found.map(|info| self.session_handle(info)))
    }

    async fn latest(self: Arc<Self>) -> Result<Option<Session>> {
        let first = self.list().await?.into_iter().next();
        Ok(first.map(|info| self.session_handle(info)))
    }

    async fn load(&self, id: &str) -> Result<Option<Conversation>> {
        validate_session_id(id)?;
        let sessions = lock(&self.sessions);
        Ok(sessions.get(id).filter(|s| s.info.is_some()).map(|s| Conversation {
            messages: s.view.iter().map(|&i| s.records[i].message.clone()).collect(),
            metadata: s.metadata.clone(),
        }))
    }

    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<()> {
        validate_session_id(id)?;
        let now = Utc::now();
        let records: Vec<StoredRecord> = messages
            .iter()
            .map(|m| StoredRecord {
                message: m.message.clone(),
                usage: m.usage,
                wire: m.wire.cloned(),
                tools_available: m.tools_available.iter().map(|t| t.name.clone()).collect(),
                compaction: m.compaction,
            })
            .collect();
        {
            let mut sessions = lock(&self.sessions);
            let session = sessions.entry(id.to_owned()).or_default();
            if session.info.is_none() {
                session.info = Some(SessionInfo::new(id, now));
                session.metadata = messages.first().and_then(|m| m.conversation.metadata.clone());
            }
            for (m, record) in messages.iter().zip(&records) {
                let index = session.records.len();
                session.records.push(record.clone());
                let records = &session.records;
                apply_to_view(&mut session.view, index, record.compaction.as_ref(), &|i| {
                    records[i].message.role == crate::conversation::Role::System
                });
                if let Some(info) = session.info.as_mut() {
                    info.record(m.message, m.wire, now);
                }
            }
        }
        lock(&self.appends).push((id.to_owned(), records));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_with_path_characters_are_rejected() {
        for bad in ["", "../x", "a/b", "ABC", "0190-..", &"a".repeat(37)] {
            assert!(
                matches!(validate_session_id(bad), Err(Error::InvalidSessionId(_))),
                "{bad}"
            );
        }
        validate_session_id(&new_session_id()).unwrap();
        validate_session_id("0190").unwrap();
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hi", 5), "hi");
    }
}
