//! Deleting a session (`delete from panto.sessions`) deletes everything of it in the same
//! transaction: entries and branch events (foreign keys), its checkpoint records, and every
//! checkpoint blob no other session keeps; a blob another session (or a fork) keeps stays.

use panto_core::store::CheckpointRecord;
use panto_core::{Session, SessionStore};
use panto_testkit::postgres::connect;
use panto_testkit::store_contract::{append_one, reply, user};

use super::common::{as_dyn, fresh_store};

/// Rows naming session `id` in each table, and the blobs no session keeps.
async fn leftovers(url: &str, id: &str) -> [i64; 5] {
    let row = connect(url)
        .await
        .query_one(
            "select (select count(*) from panto.sessions where id = $1), \
                    (select count(*) from panto.entries where session_id = $1), \
                    (select count(*) from panto.branch_events where session_id = $1), \
                    (select count(*) from panto.session_checkpoints where session_id = $1), \
                    (select count(*) from panto.checkpoint_blobs b where not exists \
                        (select 1 from panto.session_checkpoints s where s.address = b.address))",
            &[&id],
        )
        .await
        .unwrap();
    [row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)]
}

async fn blob_count(url: &str) -> i64 {
    connect(url)
        .await
        .query_one("select count(*) from panto.checkpoint_blobs", &[])
        .await
        .unwrap()
        .get(0)
}

async fn delete(url: &str, id: &str) {
    let deleted = connect(url)
        .await
        .execute("delete from panto.sessions where id = $1", &[&id])
        .await
        .unwrap();
    assert_eq!(deleted, 1, "session {id}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_leaves_nothing_of_it_and_keeps_what_others_share() {
    let (store, url) = fresh_store().await;
    let dyn_store = as_dyn(&store);
    // Session a keeps three contents: two recorded at "1", which a fork at "1" carries (one of
    // them session b keeps too), and one recorded after it, which only a keeps.
    let a = panto_core::store::new_session_id();
    append_one(&*store, &a, &user("one")).await.unwrap();
    append_one(&*store, &a, &reply("1")).await.unwrap();
    let mut kept = Vec::new();
    for content in [&b"forked"[..], b"shared", b"only a"] {
        if content == b"only a" {
            append_one(&*store, &a, &user("two")).await.unwrap();
        }
        let before = store.put_checkpoint(&a, content).await.unwrap();
        let record = CheckpointRecord {
            path: "/work/f.rs".to_owned(),
            before: Some(before.clone()),
            after: None,
            restore: false,
        };
        store.record_checkpoint(&a, &record).await.unwrap();
        kept.push(before);
    }
    store.release(&a).await.unwrap();
    let b = panto_core::store::new_session_id();
    append_one(&*store, &b, &user("two")).await.unwrap();
    assert_eq!(store.put_checkpoint(&b, b"shared").await.unwrap(), kept[1]);
    let source = Session::resolve(dyn_store.clone(), &a).await.unwrap().unwrap();
    let entries = dyn_store.load_branch(&a).await.unwrap().unwrap().entries;
    let fork = source.fork(&entries[1].id).await.unwrap();
    let fork_id = fork.id().to_owned();
    assert_eq!(blob_count(&url).await, 3);

    delete(&url, &a).await;
    assert_eq!(leftovers(&url, &a).await, [0; 5], "nothing of session a remains");
    assert_eq!(blob_count(&url).await, 2, "the content only a kept is gone");
    for (id, address, content) in [(&b, &kept[1], &b"shared"[..]), (&fork_id, &kept[0], b"forked")] {
        assert_eq!(
            store.get_checkpoint(id, address).await.unwrap().as_deref(),
            Some(content),
            "session {id} still reads {address}"
        );
    }

    // Several at once: one statement.
    let deleted = connect(&url)
        .await
        .execute(
            "delete from panto.sessions where id = any($1)",
            &[&vec![b.clone(), fork_id.clone()]],
        )
        .await
        .unwrap();
    assert_eq!(deleted, 2);
    for id in [&b, &fork_id] {
        assert_eq!(leftovers(&url, id).await, [0; 5], "nothing of session {id} remains");
    }
    assert_eq!(blob_count(&url).await, 0);
}
