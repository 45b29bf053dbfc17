//! Group commit: the appends of many sessions that wait together are written by one statement,
//! and each keeps its own outcome: a session another store claimed fails alone, an append the
//! database refuses fails alone (named by its session), the rest are stored.

use std::time::Duration;

use panto_core::store::new_session_id;
use panto_core::{Error, SessionStore};
use panto_store_postgres::{PostgresOptions, PostgresStore};
use panto_testkit::postgres::{connect, server};
use panto_testkit::store_contract::{append_one, user};

use super::common::{texts, FAILING_TRIGGER};

/// Waits until a backend of the database waits for a lock (the held row).
async fn until_a_statement_waits_for_a_lock(admin: &tokio_postgres::Client) {
    for _ in 0..1_000 {
        let waiting: i64 = admin
            .query_one(
                "select count(*) from pg_stat_activity \
                 where datname = current_database() and wait_event_type = 'Lock'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no append statement ever waited for the held session row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_written_together_each_keep_their_own_outcome() {
    let url = server().create_database().await;
    // One append statement at a time, so that appends arriving while it runs wait together.
    let mut options = PostgresOptions::default();
    options.appends_in_flight = 1;
    let store = PostgresStore::connect_with(&url, options).await.unwrap();
    let admin = connect(&url).await;
    admin.batch_execute(FAILING_TRIGGER).await.unwrap();

    // Seven sessions; the sixth is then claimed by another store.
    let ids: Vec<String> = (0..7).map(|_| new_session_id()).collect();
    for id in &ids {
        append_one(&*store, id, &user("first")).await.unwrap();
    }
    admin
        .execute(
            "update panto.sessions set writer = 'another-store' where id = $1",
            &[&ids[5]],
        )
        .await
        .unwrap();

    // The first session's row is held, so the statement writing its next append waits, and
    // with it the store's only statement.
    let mut holder = connect(&url).await;
    let hold = holder.transaction().await.unwrap();
    hold.query("select 1 from panto.sessions where id = $1 for update", &[&ids[0]])
        .await
        .unwrap();
    let blocked = {
        let (store, id) = (store.clone(), ids[0].clone());
        tokio::spawn(async move { append_one(&*store, &id, &user("second")).await })
    };
    until_a_statement_waits_for_a_lock(&admin).await;

    // Meanwhile: four sessions of this store, the claimed one, one whose entry the database
    // refuses, and a new session.
    let new_id = new_session_id();
    let mut waiting: Vec<(String, &str)> = ids[1..5].iter().map(|id| (id.clone(), "second")).collect();
    waiting.push((ids[5].clone(), "second, after the claim"));
    waiting.push((ids[6].clone(), "FAIL"));
    waiting.push((new_id.clone(), "hello"));
    let tasks: Vec<_> = waiting
        .iter()
        .map(|(id, text)| {
            let (store, id, text) = (store.clone(), id.clone(), text.to_string());
            tokio::spawn(async move { append_one(&*store, &id, &user(&text)).await })
        })
        .collect();
    // Time for them to reach the store's queue (a lock, a look-up of the session). One that is
    // later goes in a later statement; every outcome below is the same either way.
    tokio::time::sleep(Duration::from_millis(300)).await;
    hold.rollback().await.unwrap();

    blocked.await.unwrap().unwrap();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    for (i, result) in results[..4].iter().enumerate() {
        assert!(result.is_ok(), "session {}: {result:?}", i + 1);
    }
    match &results[4] {
        Err(Error::SessionInUse { id }) => assert_eq!(id, &ids[5]),
        other => panic!("the claimed session: expected SessionInUse, got {other:?}"),
    }
    match &results[5] {
        Err(e @ Error::Store { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains(&format!("appending to session {}", ids[6])),
                "{message}"
            );
            assert!(message.contains("refused by the test trigger"), "{message}");
        }
        other => panic!("the refused append: expected a store error, got {other:?}"),
    }
    assert!(results[6].is_ok(), "the new session: {:?}", results[6]);

    for id in &ids[..5] {
        assert_eq!(texts(&store, id).await, ["first", "second"], "session {id}");
    }
    assert_eq!(
        texts(&store, &ids[5]).await,
        ["first"],
        "the claimed session gets nothing"
    );
    assert_eq!(
        texts(&store, &ids[6]).await,
        ["first"],
        "the refused append stores nothing"
    );
    assert_eq!(texts(&store, &new_id).await, ["hello"]);
    let listing = store.list().await.unwrap();
    let count = |id: &str| listing.iter().find(|s| s.id == id).map(|s| s.message_count);
    assert_eq!(count(&ids[1]), Some(2));
    assert_eq!(count(&ids[5]), Some(1));
    assert_eq!(count(&ids[6]), Some(1));
    assert_eq!(count(&new_id), Some(1));

    // Every session of this store goes on from where it is.
    for id in ids[..5].iter().chain([&ids[6], &new_id]) {
        append_one(&*store, id, &user("after")).await.unwrap();
    }
    assert_eq!(texts(&store, &ids[6]).await, ["first", "after"]);
    assert_eq!(texts(&store, &new_id).await, ["hello", "after"]);
}
