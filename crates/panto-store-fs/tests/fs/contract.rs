//! The shared SessionStore contract, run against the file store: one test per case, each in a
//! fresh directory, at the default (fsync) durability.

use std::sync::Arc;

use panto_core::SessionStore;
use panto_store_fs::JsonlStore;
use panto_testkit::store_contract;

panto_testkit::store_contract_tests!(|| async {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The store creates its directory on the first append.
    (JsonlStore::new(dir.path().join("sessions")), dir)
});

#[tokio::test]
async fn the_contract_holds_on_a_current_thread_runtime_too() {
    // The store runs its I/O on blocking threads; a single-threaded runtime must not deadlock.
    let root = tempfile::tempdir().unwrap();
    let store: Arc<dyn SessionStore> = JsonlStore::new(root.path());
    store_contract::round_trip_every_content_kind(store.clone()).await;
    store_contract::compaction_loads_the_compacted_view(store).await;
}
