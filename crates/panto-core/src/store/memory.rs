//! The store that keeps sessions in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::checkpoint::{checkpoint_address, validate_checkpoint_address, CheckpointRecord, StoredCheckpoint};
use super::id::{validate_session_id, EntryIds};
use super::info::{sort_by_recency, SessionInfo};
use super::seam::{
    CompactionRecord, EntryRef, ForkOrigin, LoadedBranch, PersistentMessage, SessionStore, SessionTree, TreeEntry,
};
use super::view::compact_view;
use crate::conversation::{Conversation, Message, Role, Usage};
use crate::error::{Error, Result};
use crate::identity::ProviderIdentity;

/// One message as [`MemoryStore`](crate::MemoryStore) keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    /// The message.
    pub message: Message,
    /// Its usage.
    pub usage: Option<Usage>,
    /// Its provider identity.
    pub wire: Option<ProviderIdentity>,
    /// The names of the tools offered with it.
    pub tools_available: Vec<String>,
    /// The compaction it records.
    pub compaction: Option<CompactionRecord>,
}

/// One record of a session's tree.
#[derive(Debug, Clone)]
struct Node {
    id: String,
    parent: Option<usize>,
    at: DateTime<Utc>,
    record: StoredRecord,
}

#[derive(Debug, Default)]
struct MemorySession {
    created: Option<DateTime<Utc>>,
    /// When the session was last written (an append or a branch switch).
    modified: Option<DateTime<Utc>>,
    metadata: Option<String>,
    forked_from: Option<ForkOrigin>,
    /// The working directory of the process when the session was created.
    cwd: Option<std::path::PathBuf>,
    /// Every record, all branches, in append order.
    nodes: Vec<Node>,
    /// The tip of the active branch, an index into `nodes`.
    tip: Option<usize>,
    /// Where new entry ids are drawn from.
    id_source: EntryIds,
}

impl MemorySession {
    fn exists(&self) -> bool {
        self.created.is_some()
    }

    /// Indices of the active branch's records, oldest first.
    fn path(&self) -> Vec<usize> {
        let mut path = Vec::new();
        let mut next = self.tip;
        while let Some(i) = next {
            path.push(i);
            next = self.nodes[i].parent;
        }
        path.reverse();
        path
    }

    /// Indices of the records the model sees on the active branch: the path, compactions applied.
    fn view(&self) -> Vec<usize> {
        let mut view = Vec::new();
        for i in self.path() {
            match &self.nodes[i].record.compaction {
                Some(c) => {
                    compact_view(&mut view, c.first_kept, i, |&v| {
                        self.nodes[v].record.message.role == Role::System
                    });
                }
                None => view.push(i),
            }
        }
        view
    }

    /// The listing of the active branch.
    fn info(&self, id: &str) -> Option<SessionInfo> {
        let mut info = SessionInfo::new(id, self.created?);
        for i in self.path() {
            let node = &self.nodes[i];
            info.record(&node.record.message, node.record.wire.as_ref(), node.at);
        }
        info.modified = self.modified.unwrap_or(info.created);
        info.forked_from = self.forked_from.clone();
        info.cwd = self.cwd.clone();
        Some(info)
    }

    fn entry(&self, i: usize) -> EntryRef {
        EntryRef {
            id: self.nodes[i].id.clone(),
            parent: self.nodes[i].parent.map(|p| self.nodes[p].id.clone()),
        }
    }

    fn find(&self, entry: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == entry)
    }

    fn mint_id(&mut self) -> String {
        let nodes = &self.nodes;
        self.id_source.next_unused(|id| nodes.iter().any(|n| n.id == id))
    }
}

fn unknown_entry(session: &str, entry: &str) -> Error {
    Error::UnknownEntry {
        session: session.to_owned(),
        message: format!("it holds no message entry {entry:?}"),
    }
}

/// A store that keeps sessions in memory: the test double, and a store for embedders that keep
/// sessions only for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<HashMap<String, MemorySession>>,
    /// File checkpoints by session id and address.
    checkpoints: Mutex<HashMap<String, HashMap<String, Vec<u8>>>>,
    /// The records of file changes by session id, in the order they were recorded.
    changes: Mutex<HashMap<String, Vec<StoredCheckpoint>>>,
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

    /// Every record of session `id`, in append order (the whole history, every branch, not the
    /// compacted view).
    pub fn records(&self, id: &str) -> Vec<StoredRecord> {
        lock(&self.sessions)
            .get(id)
            .map(|s| s.nodes.iter().map(|n| n.record.clone()).collect())
            .unwrap_or_default()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep serving it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        let mut infos: Vec<SessionInfo> = lock(&self.sessions).iter().filter_map(|(id, s)| s.info(id)).collect();
        sort_by_recency(&mut infos);
        Ok(infos)
    }

    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        validate_session_id(id)?;
        Ok(lock(&self.sessions).get(id).and_then(|s| s.info(id)))
    }

    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_session_id(prefix)?;
        Ok(lock(&self.sessions)
            .iter()
            .filter(|(id, s)| s.exists() && id.starts_with(prefix))
            .map(|(id, _)| id.clone())
            .collect())
    }

    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        validate_session_id(id)?;
        let sessions = lock(&self.sessions);
        Ok(sessions.get(id).filter(|s| s.exists()).map(|s| {
            let view = s.view();
            LoadedBranch {
                conversation: Conversation {
                    messages: view.iter().map(|&i| s.nodes[i].record.message.clone()).collect(),
                    metadata: s.metadata.clone(),
                },
                entries: view.iter().map(|&i| s.entry(i)).collect(),
                forked_from: s.forked_from.clone(),
            }
        }))
    }

    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
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
        let mut ids = Vec::with_capacity(records.len());
        {
            let mut sessions = lock(&self.sessions);
            let session = sessions.entry(id.to_owned()).or_default();
            if !session.exists() {
                session.created = Some(now);
                session.metadata = messages.first().and_then(|m| m.conversation.metadata.clone());
                session.cwd = std::env::current_dir().ok();
            }
            for record in &records {
                let entry = session.mint_id();
                ids.push(entry.clone());
                session.nodes.push(Node {
                    id: entry,
                    parent: session.tip,
                    at: now,
                    record: record.clone(),
                });
                session.tip = Some(session.nodes.len() - 1);
            }
            session.modified = Some(now);
        }
        lock(&self.appends).push((id.to_owned(), records));
        Ok(ids)
    }

    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        validate_session_id(id)?;
        let mut sessions = lock(&self.sessions);
        let session = sessions
            .get_mut(id)
            .filter(|s| s.exists())
            .ok_or_else(|| Error::SessionNotFound(id.to_owned()))?;
        session.tip = match tip {
            Some(entry) => Some(session.find(entry).ok_or_else(|| unknown_entry(id, entry))?),
            None => None,
        };
        session.modified = Some(Utc::now());
        Ok(())
    }

    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        validate_session_id(from)?;
        validate_session_id(new_id)?;
        let mut sessions = lock(&self.sessions);
        let source = sessions
            .get(from)
            .filter(|s| s.exists())
            .ok_or_else(|| Error::SessionNotFound(from.to_owned()))?;
        let end = source.find(at).ok_or_else(|| unknown_entry(from, at))?;
        let mut path = Vec::new();
        let mut next = Some(end);
        while let Some(i) = next {
            path.push(i);
            next = source.nodes[i].parent;
        }
        path.reverse();
        let nodes: Vec<Node> = path
            .iter()
            .enumerate()
            .map(|(position, &i)| Node {
                parent: position.checked_sub(1),
                ..source.nodes[i].clone()
            })
            .collect();
        let now = Utc::now();
        let fork = MemorySession {
            created: Some(now),
            modified: Some(now),
            metadata: source.metadata.clone(),
            forked_from: Some(ForkOrigin {
                session: from.to_owned(),
                entry: at.to_owned(),
            }),
            cwd: std::env::current_dir().ok(),
            tip: nodes.len().checked_sub(1),
            nodes,
            id_source: EntryIds::new(),
        };
        if sessions.get(new_id).is_some_and(MemorySession::exists) {
            return Err(Error::Store {
                context: format!("forking session {from} into {new_id}"),
                source: "a session with the new id already exists".into(),
            });
        }
        // The file changes recorded on the path (and at the empty start every path begins at)
        // come along, with the checkpoints they name, so a rewind with files works in the fork.
        let on_path: Vec<&str> = path.iter().map(|&i| source.nodes[i].id.as_str()).collect();
        let carried: Vec<StoredCheckpoint> = lock(&self.changes)
            .get(from)
            .map(|changes| {
                changes
                    .iter()
                    .filter(|c| c.entry.as_deref().is_none_or(|e| on_path.contains(&e)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        {
            let mut blobs = lock(&self.checkpoints);
            let named: HashMap<String, Vec<u8>> = blobs
                .get(from)
                .map(|kept| {
                    carried
                        .iter()
                        .flat_map(|c| c.record.before.iter().chain(&c.record.after))
                        .filter_map(|a| kept.get(a).map(|content| (a.clone(), content.clone())))
                        .collect()
                })
                .unwrap_or_default();
            blobs.entry(new_id.to_owned()).or_default().extend(named);
        }
        lock(&self.changes).insert(new_id.to_owned(), carried);
        sessions.insert(new_id.to_owned(), fork);
        Ok(())
    }

    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String> {
        validate_session_id(id)?;
        let address = checkpoint_address(content);
        lock(&self.checkpoints)
            .entry(id.to_owned())
            .or_default()
            .entry(address.clone())
            .or_insert_with(|| content.to_vec());
        Ok(address)
    }

    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
        validate_session_id(id)?;
        validate_checkpoint_address(address)?;
        Ok(lock(&self.checkpoints).get(id).and_then(|c| c.get(address)).cloned())
    }

    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        validate_session_id(id)?;
        let mut sessions = lock(&self.sessions);
        let session = sessions
            .get_mut(id)
            .filter(|s| s.exists())
            .ok_or_else(|| Error::SessionNotFound(id.to_owned()))?;
        let entry = session.tip.map(|i| session.nodes[i].id.clone());
        session.modified = Some(Utc::now());
        lock(&self.changes)
            .entry(id.to_owned())
            .or_default()
            .push(StoredCheckpoint {
                entry,
                record: record.clone(),
            });
        Ok(())
    }

    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>> {
        validate_session_id(id)?;
        Ok(lock(&self.changes).get(id).cloned().unwrap_or_default())
    }

    async fn tree(&self, id: &str) -> Result<Option<SessionTree>> {
        validate_session_id(id)?;
        let sessions = lock(&self.sessions);
        Ok(sessions.get(id).filter(|s| s.exists()).map(|s| SessionTree {
            entries: (0..s.nodes.len())
                .map(|i| TreeEntry::of(s.entry(i), &s.nodes[i].record.message))
                .collect(),
            tip: s.tip.map(|i| s.nodes[i].id.clone()),
        }))
    }
}
