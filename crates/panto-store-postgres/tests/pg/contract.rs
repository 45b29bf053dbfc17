//! The shared SessionStore contract, run against the PostgreSQL store: one test per case, each
//! in a fresh database.

use std::sync::Arc;

use panto_core::SessionStore;
use panto_testkit::store_contract;

use super::common::fresh_store;

panto_testkit::store_contract_tests!(|| async { fresh_store().await.0 });

#[tokio::test]
async fn the_contract_holds_on_a_current_thread_runtime_too() {
    // The connections' I/O runs as tasks on the runtime; a single-threaded one must not stall.
    let (store, _) = fresh_store().await;
    let store: Arc<dyn SessionStore> = store;
    store_contract::round_trip_every_content_kind(store.clone()).await;
    store_contract::compaction_loads_the_compacted_view(store).await;
}
