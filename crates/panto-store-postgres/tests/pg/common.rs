//! Helpers shared by the PostgreSQL store tests.

use std::sync::Arc;

use panto_core::SessionStore;
use panto_store_postgres::PostgresStore;
use panto_testkit::postgres::server;

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
