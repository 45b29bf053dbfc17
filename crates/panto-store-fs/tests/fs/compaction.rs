//! Compaction on disk: the log keeps every entry, the summary records its first kept entry by
//! id, and a reopened session maps compaction indices against the view it rebuilt.

use std::sync::Arc;

use panto_core::{Session, SessionStore, SystemMode};
use panto_testkit::store_contract::{reply, summary, system, user, Driver};

use super::common::{as_dyn, check_valid, fast_store, session_file};

#[tokio::test]
async fn the_log_keeps_the_full_history_and_reopened_writers_map_indices_to_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let sys = system("Be brief.", SystemMode::Append);
    let (u1, a1, u2, a2) = (user("q1"), reply("a1"), user("q2"), reply("a2"));

    let id = {
        let store = fast_store(dir.path());
        let mut d = Driver::new(&as_dyn(&store), None);
        d.append(vec![sys.clone(), u1, a1, u2.clone(), a2.clone()]).await;
        d.id()
        // The store and its lock go here.
    };

    // A new store instance: its writer rebuilds the view by loading, so index 3 is u2.
    let store = fast_store(dir.path());
    let dyn_store = as_dyn(&store);
    let session = Session::resolve(dyn_store.clone(), &id).await.unwrap().unwrap();
    let conversation = session.load().await.unwrap();
    let mut d = Driver {
        session,
        conversation,
        wire: panto_testkit::store_contract::anthropic_wire(),
        tools: panto_testkit::store_contract::tools(),
    };
    d.compact(3, "first").await;
    assert_eq!(
        dyn_store.load(&id).await.unwrap().unwrap().messages,
        vec![sys.clone(), summary("first"), u2.clone(), a2.clone()]
    );

    let entries = check_valid(&session_file(&store, &id));
    assert_eq!(entries.len(), 6, "the log keeps every message");
    let compaction = &entries[5]["compaction"];
    assert_eq!(
        compaction["first_kept"], entries[3]["id"],
        "first_kept names u2's entry"
    );
    assert_eq!(compaction["tokens_before"], 182_000);
    assert_eq!(compaction["tokens_after"], 9_500);
    assert!(
        entries[..5].iter().all(|e| e.get("compaction").is_none()),
        "only the summary entry has a compaction"
    );
    drop(d);
    drop(dyn_store);
    drop(store);

    // Again from a fresh instance: index 3 of the compacted view [sys, first, u2, a2] is a2.
    let store = fast_store(dir.path());
    let dyn_store: Arc<dyn SessionStore> = store.clone();
    let session = Session::resolve(dyn_store.clone(), &id).await.unwrap().unwrap();
    let conversation = session.load().await.unwrap();
    let mut d = Driver {
        session,
        conversation,
        wire: panto_testkit::store_contract::anthropic_wire(),
        tools: panto_testkit::store_contract::tools(),
    };
    d.compact(3, "second").await;
    assert_eq!(
        dyn_store.load(&id).await.unwrap().unwrap().messages,
        vec![sys, summary("second"), a2]
    );
    let entries = check_valid(&session_file(&store, &id));
    assert_eq!(
        entries[6]["compaction"]["first_kept"], entries[4]["id"],
        "first_kept names a2's entry"
    );
    assert_eq!(dyn_store.list().await.unwrap()[0].message_count, 7);
}

#[tokio::test]
async fn a_compaction_that_keeps_nothing_records_null() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("q1"), reply("a1")]).await;
    d.compact(2, "all of it").await;
    let entries = check_valid(&session_file(&store, &d.id()));
    assert_eq!(entries[2]["compaction"]["first_kept"], serde_json::Value::Null);
    // And it reads back the same way from a fresh instance.
    let fresh = as_dyn(&fast_store(dir.path()));
    assert_eq!(
        fresh.load(&d.id()).await.unwrap().unwrap().messages,
        vec![summary("all of it")]
    );
}
