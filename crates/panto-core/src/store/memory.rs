//! The store that keeps sessions in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use chrono::Utc;

use super::id::validate_session_id;
use super::info::{sort_by_recency, SessionInfo};
use super::seam::{CompactionRecord, PersistentMessage, SessionStore};
use super::view::compact_view;
use crate::conversation::{Conversation, Message, Role, Usage};
use crate::error::Result;
use crate::wire::WireIdentity;

/// One message as [`MemoryStore`](crate::MemoryStore) keeps it.
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep serving it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        let mut infos: Vec<SessionInfo> = lock(&self.sessions).values().filter_map(|s| s.info.clone()).collect();
        sort_by_recency(&mut infos);
        Ok(infos)
    }

    async fn info(&self, id: &str) -> Result<Option<SessionInfo>> {
        validate_session_id(id)?;
        Ok(lock(&self.sessions).get(id).and_then(|s| s.info.clone()))
    }

    async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_session_id(prefix)?;
        Ok(lock(&self.sessions)
            .iter()
            .filter(|(id, s)| s.info.is_some() && id.starts_with(prefix))
            .map(|(id, _)| id.clone())
            .collect())
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
                match &record.compaction {
                    Some(c) => {
                        let records = &session.records;
                        compact_view(&mut session.view, c.first_kept, index, |&i| {
                            records[i].message.role == Role::System
                        });
                    }
                    None => session.view.push(index),
                }
                if let Some(info) = session.info.as_mut() {
                    info.record(m.message, m.wire, now);
                }
            }
        }
        lock(&self.appends).push((id.to_owned(), records));
        Ok(())
    }
}
