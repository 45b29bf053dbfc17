//! Driving a session as the agent does, and reading a store with the case named on failure.

use std::sync::Arc;
use std::time::Duration;

use panto_core::store::compact_view;
use panto_core::store::{CompactionRecord, PersistentMessage};
use panto_core::wire::ProviderIdentity;
use panto_core::{Conversation, Message, Result, Role, Session, SessionInfo, SessionStore, ToolDecl};

use super::messages::{anthropic_wire, summary, tools};

/// One session driven as the agent drives it: the model's conversation, kept current, and
/// every batch appended through [`Session::append`] with the provider identity and tools.
#[derive(Debug)]
pub struct Driver {
    /// The session (its info folded by `Session::append`).
    pub session: Session,
    /// The conversation as the model sees it (compactions applied).
    pub conversation: Conversation,
    /// The provider identity stamped on non-system messages from now on.
    pub wire: ProviderIdentity,
    /// The tools offered.
    pub tools: Vec<ToolDecl>,
}

impl Driver {
    /// A new session in `store` whose conversation carries `metadata`.
    pub fn new(store: &Arc<dyn SessionStore>, metadata: Option<&str>) -> Self {
        Driver {
            session: Session::create(store.clone()),
            conversation: Conversation {
                messages: Vec::new(),
                metadata: metadata.map(str::to_owned),
            },
            wire: anthropic_wire(),
            tools: tools(),
        }
    }

    /// The session id.
    pub fn id(&self) -> String {
        self.session.id().to_owned()
    }

    /// Appends `messages` as one batch; returns the entry ids the store gave them.
    pub async fn append(&mut self, messages: Vec<Message>) -> Vec<String> {
        self.append_batch(messages.into_iter().map(|m| (m, None)).collect())
            .await
    }

    /// Appends a compaction: a summary replacing the messages before index `first_kept` of the
    /// current conversation.
    pub async fn compact(&mut self, first_kept: usize, text: &str) -> Vec<String> {
        let record = CompactionRecord {
            first_kept,
            tokens_before: 182_000,
            tokens_after: 9_500,
        };
        self.append_batch(vec![(summary(text), Some(record))]).await
    }

    /// Appends one batch of messages, each with the compaction it records (if any), after
    /// applying them to the model's conversation as the agent does. Returns the entry ids the
    /// store gave them, after checking there is one per message.
    pub async fn append_batch(&mut self, batch: Vec<(Message, Option<CompactionRecord>)>) -> Vec<String> {
        for (message, compaction) in &batch {
            match compaction {
                None => self.conversation.messages.push(message.clone()),
                Some(c) => {
                    compact_view(&mut self.conversation.messages, c.first_kept, message.clone(), |m| {
                        m.role == Role::System
                    });
                }
            }
        }
        let persistent: Vec<PersistentMessage<'_>> = batch
            .iter()
            .map(|(message, compaction)| PersistentMessage {
                message,
                usage: message.usage,
                wire: (message.role != Role::System).then_some(&self.wire),
                conversation: &self.conversation,
                tools_available: &self.tools,
                compaction: *compaction,
            })
            .collect();
        let id = self.session.id().to_owned();
        match self.session.append(&persistent).await {
            Ok(ids) => {
                assert_eq!(
                    ids.len(),
                    persistent.len(),
                    "session {id}: one entry id per appended message"
                );
                ids
            }
            Err(e) => panic!("appending {} message(s) to session {id} failed: {e}", persistent.len()),
        }
    }

    /// Makes the conversation the stored active branch again (after a branch switch).
    pub async fn reload(&mut self) {
        self.conversation = must_load(&self.session.store, &self.id(), "Driver::reload").await;
    }
}

/// The store's listing, or a panic naming `case`.
pub async fn must_list(store: &Arc<dyn SessionStore>, case: &str) -> Vec<SessionInfo> {
    match store.list().await {
        Ok(list) => list,
        Err(e) => panic!("{case}: list failed: {e}"),
    }
}

/// The ids of a listing, in order.
pub fn ids(list: &[SessionInfo]) -> Vec<String> {
    list.iter().map(|i| i.id.clone()).collect()
}

/// The stored conversation of session `id`, or a panic naming `case`.
pub async fn must_load(store: &Arc<dyn SessionStore>, id: &str, case: &str) -> Conversation {
    match store.load(id).await {
        Ok(Some(c)) => c,
        Ok(None) => panic!("{case}: load({id}) found no session"),
        Err(e) => panic!("{case}: load({id}) failed: {e}"),
    }
}

/// The listing info of session `id`, or a panic naming `case`.
pub async fn info_of(store: &Arc<dyn SessionStore>, id: &str, case: &str) -> SessionInfo {
    must_list(store, case)
        .await
        .into_iter()
        .find(|i| i.id == id)
        .unwrap_or_else(|| panic!("{case}: session {id} is not listed"))
}

/// Waits long enough for the clock to move, so that events ordered in the test are ordered in
/// the timestamps the store records.
pub async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// Appends `message` alone to session `id` of `store`, as the agent would write it: in a
/// conversation of its own, with a realistic provider identity and the contract's [`tools`]. For
/// tests that write a session by id, bypassing [`Session`] (a second writer, a child process).
pub async fn append_one(store: &dyn SessionStore, id: &str, message: &Message) -> Result<()> {
    append_offering(store, id, message, &tools()).await
}

/// [`append_one`], offering `tools` instead of the contract's.
pub async fn append_offering(store: &dyn SessionStore, id: &str, message: &Message, tools: &[ToolDecl]) -> Result<()> {
    let conversation = Conversation {
        messages: vec![message.clone()],
        metadata: None,
    };
    let wire = anthropic_wire();
    let entry = PersistentMessage {
        wire: Some(&wire),
        tools_available: tools,
        ..PersistentMessage::new(message, &conversation)
    };
    store.append(id, &[entry]).await.map(|_| ())
}
