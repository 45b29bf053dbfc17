//! Helpers shared by the PostgreSQL store tests.

use std::sync::Arc;

use panto_core::{Conversation, Message, PersistentMessage, Result, SessionStore, ToolDecl};
use panto_store_postgres::PostgresStore;
use panto_testkit::store_contract::{anthropic_wire, tools};

use super::support::server;

/// A store over a fresh, empty database, and the database's URL.
pub async fn fresh_store() -> (Arc<PostgresStore>, String) {
    let url = server().create_database().await;
    let store = PostgresStore::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    (store, url)
}

/// The store as the agent holds it.
pub fn as_dyn(store: &Arc<PostgresStore>) -> Arc<dyn SessionStore> {
    store.clone()
}

/// Appends one message to session `id` as the agent would, with the contract's tools.
pub async fn append_one(store: &PostgresStore, id: &str, message: &Message) -> Result<()> {
    append_with_tools(store, id, message, &tools()).await
}

/// Appends one message to session `id` offering `tools`.
pub async fn append_with_tools(store: &PostgresStore, id: &str, message: &Message, tools: &[ToolDecl]) -> Result<()> {
    let conversation = Conversation {
        messages: vec![message.clone()],
        metadata: None,
    };
    let wire = anthropic_wire();
    store
        .append(
            id,
            &[PersistentMessage {
                message,
                usage: message.usage,
                wire: Some(&wire),
                conversation: &conversation,
                tools_available: tools,
                compaction: None,
            }],
        )
        .await
}

/// The texts of the loaded conversation of session `id`.
pub async fn texts(store: &PostgresStore, id: &str) -> Vec<String> {
    store
        .load(id)
        .await
        .unwrap_or_else(|e| panic!("load({id}): {e}"))
        .unwrap_or_else(|| panic!("load({id}) found no session"))
        .messages
        .iter()
        .map(|m| m.text())
        .collect()
}
