//! The shared SessionStore contract, run against the file store with each case in a fresh
//! directory, at the default (fsync) durability.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use panto_core::SessionStore;
use panto_store_fs::FileSystemJSONLStore;
use panto_testkit::store_contract;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_store_meets_the_contract() {
    let root = tempfile::tempdir().unwrap();
    let next = AtomicUsize::new(0);
    store_contract::run_all(|| {
        let dir = root.path().join(next.fetch_add(1, Ordering::Relaxed).to_string());
        FileSystemJSONLStore::new(dir) as Arc<dyn SessionStore>
    })
    .await;
}

#[tokio::test]
async fn the_contract_holds_on_a_current_thread_runtime_too() {
    // The store runs its I/O on blocking threads; a single-threaded runtime must not deadlock.
    let root = tempfile::tempdir().unwrap();
    let store: Arc<dyn SessionStore> = FileSystemJSONLStore::new(root.path());
    store_contract::round_trip_every_content_kind(store.clone()).await;
    store_contract::compaction_loads_the_compacted_view(store).await;
}
