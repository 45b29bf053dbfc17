//! Several processes against one database, as a service runs them: a second process cannot
//! write a session another has open; two processes write their own sessions while a third
//! lists and loads them, and every listing is consistent.
//!
//! The child processes are this test binary run again with a filter that selects one of the
//! `child_*` tests below, which do nothing in a normal run.

use std::collections::HashMap;
use std::process::Child;
use std::time::Duration;

use panto_core::store::PersistentMessage;
use panto_core::{Error, Session, SessionStore};
use panto_store_postgres::PostgresStore;
use panto_testkit::child::{child_test, report_to_parent, wait_for_child};
use panto_testkit::postgres::{server, URL_ENV};
use panto_testkit::store_contract::{anthropic_wire, append_one, reply, tools, user, Driver};

use super::common::{as_dyn, fresh_store, texts};

/// Set in a child: the database, the session and how many batches to write.
const CHILD_DB: &str = "PANTO_PG_TEST_CHILD_DB";
const CHILD_ID: &str = "PANTO_PG_TEST_CHILD_ID";
const CHILD_BATCHES: &str = "PANTO_PG_TEST_CHILD_BATCHES";

/// Starts this test binary as a child running test `test` against database `db`.
fn spawn_child(test: &str, db: &str, id: &str, batches: usize) -> Child {
    child_test(test)
        .env(URL_ENV, &server().base_url)
        .env(CHILD_DB, db)
        .env(CHILD_ID, id)
        .env(CHILD_BATCHES, batches.to_string())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_gets_session_in_use() {
    let (store, db) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("parent")]).await;
    let id = d.id();

    let child = spawn_child("pg::processes::child_appends", &db, &id, 1);
    assert_eq!(wait_for_child(child).await, format!("in use: {id}"));

    // Once this process lets go, the child can write.
    store.release(&id).await.unwrap();
    let child = spawn_child("pg::processes::child_appends", &db, &id, 1);
    assert_eq!(wait_for_child(child).await, "appended");
    assert_eq!(texts(&store, &id).await, ["parent", "child"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_write_while_a_third_lists_and_loads() {
    const BATCHES: usize = 40;
    let (store, db) = fresh_store().await;
    let ids = [panto_core::store::new_session_id(), panto_core::store::new_session_id()];
    let children: Vec<Child> = ids
        .iter()
        .map(|id| spawn_child("pg::processes::child_writes", &db, id, BATCHES))
        .collect();
    let waiting = tokio::spawn(async move {
        let mut reports = Vec::new();
        for child in children {
            reports.push(wait_for_child(child).await);
        }
        reports
    });

    // List and load while the children write. Each batch is a prompt and its reply, so a
    // listing or a load that saw half a batch would show an odd count.
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut partial_views = 0;
    while !waiting.is_finished() {
        let list = store.list().await.unwrap();
        for info in list.iter().filter(|i| ids.contains(&i.id)) {
            assert_eq!(info.message_count % 2, 0, "a listing saw half a batch: {info:?}");
            let before = seen.insert(info.id.clone(), info.message_count).unwrap_or(0);
            assert!(before <= info.message_count, "the message count went down: {info:?}");
            if info.message_count < 2 * BATCHES {
                partial_views += 1;
            }
            let loaded = store.load(&info.id).await.unwrap().expect("a listed session loads");
            assert_eq!(loaded.messages.len() % 2, 0, "a load saw half a batch");
            assert!(loaded.messages.len() >= info.message_count, "a load went back in time");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let reports = waiting.await.unwrap();
    assert_eq!(reports, [format!("wrote {BATCHES}"), format!("wrote {BATCHES}")]);
    assert!(partial_views > 0, "the listing never overlapped the writes");

    let list = store.list().await.unwrap();
    assert_eq!(list.len(), 2);
    for id in &ids {
        let info = list.iter().find(|i| &i.id == id).expect("both sessions are listed");
        assert_eq!(info.message_count, 2 * BATCHES);
        assert_eq!(
            info.last_user_message.as_deref(),
            Some(format!("prompt {}", BATCHES - 1).as_str())
        );
        let want: Vec<String> = (0..BATCHES)
            .flat_map(|i| [format!("prompt {i}"), format!("answer {i}")])
            .collect();
        assert_eq!(texts(&store, id).await, want);
    }
    // Newest prompt first, as every store orders them.
    let mut sorted = list.clone();
    panto_core::store::sort_by_recency(&mut sorted);
    assert_eq!(list, sorted);
}

/// The child side of `a_second_process_gets_session_in_use`, run only by it.
#[tokio::test]
#[ignore = "the child half of a_second_process_gets_session_in_use, run only by it"]
async fn child_appends() {
    let (Ok(db), Ok(id)) = (std::env::var(CHILD_DB), std::env::var(CHILD_ID)) else {
        panic!("run by a_second_process_gets_session_in_use, which sets {CHILD_DB} and {CHILD_ID}");
    };
    let store = PostgresStore::connect(&db).await.unwrap();
    let result = match append_one(&*store, &id, &user("child")).await {
        Ok(()) => "appended".to_owned(),
        Err(Error::SessionInUse { id }) => format!("in use: {id}"),
        Err(e) => format!("error: {e}"),
    };
    report_to_parent(&result);
}

/// The child side of `two_processes_write_while_a_third_lists_and_loads`: writes its session
/// in batches of a prompt and a reply, a little apart. Run only by that test.
#[tokio::test]
#[ignore = "the child half of two_processes_write_while_a_third_lists_and_loads, run only by it"]
async fn child_writes() {
    let (Ok(db), Ok(id), Ok(batches)) = (
        std::env::var(CHILD_DB),
        std::env::var(CHILD_ID),
        std::env::var(CHILD_BATCHES),
    ) else {
        panic!("run by two_processes_write_while_a_third_lists_and_loads, which sets {CHILD_DB}, {CHILD_ID} and {CHILD_BATCHES}");
    };
    let batches: usize = batches.parse().unwrap();
    let store = PostgresStore::connect(&db).await.unwrap();
    let store: std::sync::Arc<dyn SessionStore> = store;
    let mut session = match Session::resolve(store.clone(), &id).await.unwrap() {
        Some(s) => s,
        None => Session::new(
            panto_core::SessionInfo::new(id.clone(), chrono::Utc::now()),
            store.clone(),
        ),
    };
    let mut conversation = panto_core::Conversation::new();
    let wire = anthropic_wire();
    let tools = tools();
    let mut result = format!("wrote {batches}");
    for i in 0..batches {
        let batch = [user(&format!("prompt {i}")), reply(&format!("answer {i}"))];
        conversation.messages.extend(batch.iter().cloned());
        let persistent: Vec<PersistentMessage<'_>> = batch
            .iter()
            .map(|m| PersistentMessage {
                wire: Some(&wire),
                tools_available: &tools,
                ..PersistentMessage::new(m, &conversation)
            })
            .collect();
        if let Err(e) = session.append(&persistent).await {
            result = format!("error at batch {i}: {e}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    report_to_parent(&result);
}
