//! The shared SessionStore contract, run against the PostgreSQL store with each case in a fresh
//! database.

use std::sync::Arc;

use panto_core::SessionStore;
use panto_testkit::store_contract;

use super::common::fresh_store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_meets_the_contract() {
    // The contract asks for stores synchronously; connecting is async, so each store is made
    // on this runtime while the contract's task waits.
    let handle = tokio::runtime::Handle::current();
    store_contract::run_all(|| {
        tokio::task::block_in_place(|| handle.block_on(async { fresh_store().await.0 as Arc<dyn SessionStore> }))
    })
    .await;
}

#[tokio::test]
async fn the_contract_holds_on_a_current_thread_runtime_too() {
    // The connections' I/O runs as tasks on the runtime; a single-threaded one must not stall.
    let (store, _) = fresh_store().await;
    let store: Arc<dyn SessionStore> = store;
    store_contract::round_trip_every_content_kind(store.clone()).await;
    store_contract::compaction_loads_the_compacted_view(store).await;
}
