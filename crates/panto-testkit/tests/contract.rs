//! The SessionStore contract suite against the stores panto-core ships: `MemoryStore` meets it
//! in full; `NullStore` keeps nothing and never fails.

use std::sync::Arc;

use panto_core::{Error, MemoryStore, NullStore, Session, SessionStore};
use panto_testkit::store_contract::{user, Driver};

mod memory_store_meets_the_contract {
    panto_testkit::store_contract_tests!(|| async { panto_core::MemoryStore::new() });
}

#[tokio::test]
async fn memory_store_keeps_the_full_history_through_compaction() {
    // The contract sees the full history only as a count; MemoryStore shows the records.
    let memory = MemoryStore::new();
    let store: Arc<dyn SessionStore> = memory.clone();
    let mut d = Driver::new(&store, None);
    d.append(vec![user("one"), user("two"), user("three")]).await;
    d.compact(2, "the first two").await;
    let records = memory.records(&d.id());
    let texts: Vec<String> = records.iter().map(|r| r.message.text()).collect();
    assert_eq!(texts, vec!["one", "two", "three", ""]);
    assert_eq!(records[3].compaction.map(|c| c.first_kept), Some(2));
    assert_eq!(records[0].tools_available, vec!["read_file", "bash"]);
    assert_eq!(
        store.load(&d.id()).await.unwrap().unwrap().messages.len(),
        2,
        "the view is the summary and the kept message"
    );
}

#[tokio::test]
async fn null_store_keeps_nothing_and_never_fails() {
    let store = NullStore::shared();
    let mut d = Driver::new(&store, Some(r#"{"a":1}"#));
    // Appending succeeds (the driver panics otherwise) and folds into the session's info...
    d.append(vec![user("hello")]).await;
    assert_eq!(d.session.info.message_count, 1);
    // ...but nothing is kept.
    assert!(store.list().await.unwrap().is_empty());
    assert!(store.load(&d.id()).await.unwrap().is_none());
    assert!(Session::resolve(store.clone(), &d.id()).await.unwrap().is_none());
    assert!(Session::resolve(store.clone(), &d.id()[..8]).await.unwrap().is_none());
    assert!(Session::latest(store.clone()).await.unwrap().is_none());
    assert!(matches!(d.session.load().await, Err(Error::SessionNotFound(id)) if id == d.id()));
    // Ids are still checked, so a caller's bad input is reported the same way as elsewhere.
    assert!(matches!(
        Session::resolve(store.clone(), "../x").await,
        Err(Error::InvalidSessionId(id)) if id == "../x"
    ));
}
