//! A session's history as every export reads it: its messages with their entries, usage,
//! provider identities and compactions, the active branch's tip, and where it started.
//!
//! Read from the store's own full-history reader (the file store's `session_file`,
//! PostgreSQL's `history`), so hidden messages (before a compaction) and other branches are
//! there; any other store gives its active branch through the trait (`load_branch`).

use chrono::{DateTime, Utc};
use panto_core::store::ForkOrigin;
use panto_core::wire::ProviderIdentity;
use panto_core::{Message, Session, Usage};
use panto_store_fs::FileEntryKind;

use crate::exit::Failure;
use crate::store::OpenStore;

/// A compaction, its kept message named by entry id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Compaction {
    /// The entry of the first message kept verbatim after the summary (`None`: none was kept).
    pub first_kept: Option<String>,
    /// The estimated context tokens before.
    pub tokens_before: u64,
    /// The estimated context tokens after.
    pub tokens_after: u64,
}

/// One message entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The entry id.
    pub id: String,
    /// The entry it follows (`None`: a first entry).
    pub parent: Option<String>,
    /// When it was stored, when the store says.
    pub timestamp: Option<DateTime<Utc>>,
    /// The message, as stored.
    pub message: Message,
    /// The usage reported with it.
    pub usage: Option<Usage>,
    /// Who produced it on the wire.
    pub wire: Option<ProviderIdentity>,
    /// Set on a compaction's summary.
    pub compaction: Option<Compaction>,
}

/// A session's history.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// The session id.
    pub id: String,
    /// When it was created.
    pub created: DateTime<Utc>,
    /// The directory it was started in.
    pub cwd: Option<String>,
    /// The conversation's metadata bag (a JSON document kept as a string).
    pub metadata: Option<String>,
    /// Where it was forked from.
    pub forked_from: Option<ForkOrigin>,
    /// The active branch's tip (`None`: the empty start).
    pub tip: Option<String>,
    /// Every message entry held, in the order stored (a parent before its children).
    pub entries: Vec<Entry>,
}

impl History {
    /// The entries of the active branch, first to tip.
    pub fn active_path(&self) -> Vec<&Entry> {
        let mut path = Vec::new();
        let mut next = self.tip.as_deref();
        // Bounded by the entry count, so a cycle in damaged data cannot loop.
        while let Some(id) = next {
            if path.len() > self.entries.len() {
                break;
            }
            let Some(entry) = self.entries.iter().find(|e| e.id == id) else {
                break;
            };
            path.push(entry);
            next = entry.parent.as_deref();
        }
        path.reverse();
        path
    }

    /// Keeps only the active branch's entries.
    pub fn keep_active_path(&mut self) {
        let keep: Vec<String> = self.active_path().iter().map(|e| e.id.clone()).collect();
        self.entries.retain(|e| keep.contains(&e.id));
    }
}

/// The history of `session`, read from `store`.
pub async fn read(store: &OpenStore, session: &Session) -> Result<History, Failure> {
    let id = session.id();
    let branch = session.load_branch().await?;
    let info = &session.info;
    let mut history = History {
        id: id.to_owned(),
        created: info.created,
        cwd: info.cwd.as_deref().and_then(|c| c.to_str()).map(str::to_owned),
        metadata: branch.conversation.metadata.clone(),
        forked_from: branch.forked_from.clone(),
        tip: branch.entries.last().map(|e| e.id.clone()),
        entries: Vec::new(),
    };
    if let Some(files) = store.files() {
        let file = files
            .session_file(id)
            .await?
            .ok_or_else(|| Failure::usage(format!("session {id} holds no messages")))?;
        for entry in file.entries {
            if let FileEntryKind::Message {
                message,
                usage,
                wire,
                compaction,
            } = entry.kind
            {
                history.entries.push(Entry {
                    id: entry.id,
                    parent: entry.parent_id,
                    timestamp: Some(entry.timestamp),
                    message,
                    usage,
                    wire,
                    compaction: compaction.map(|c| Compaction {
                        first_kept: c.first_kept,
                        tokens_before: c.tokens_before,
                        tokens_after: c.tokens_after,
                    }),
                });
            }
        }
    } else if let Some(pg) = store.postgres() {
        let entries = pg
            .history(id)
            .await?
            .ok_or_else(|| Failure::usage(format!("session {id} holds no messages")))?;
        for entry in entries {
            history.entries.push(Entry {
                id: entry.id,
                parent: entry.parent_id,
                timestamp: Some(entry.timestamp),
                message: entry.message,
                usage: entry.usage,
                wire: entry.wire,
                compaction: entry.compaction.map(|c| Compaction {
                    first_kept: c.first_kept,
                    tokens_before: c.tokens_before,
                    tokens_after: c.tokens_after,
                }),
            });
        }
    } else {
        // Another store: the active branch as the model sees it, which is what it offers.
        for (message, entry) in branch.conversation.messages.iter().zip(&branch.entries) {
            history.entries.push(Entry {
                id: entry.id.clone(),
                parent: entry.parent.clone(),
                timestamp: None,
                message: message.clone(),
                usage: message.usage,
                wire: None,
                compaction: None,
            });
        }
        return Ok(history);
    }
    // The tip is the store's: the view's last entry is the tip unless the active branch is
    // empty (a rewind to the start), which the tree says.
    history.tip = session.tree().await?.tip;
    Ok(history)
}
