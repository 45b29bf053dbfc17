//! One writer per session: a second store instance, or a second process, gets `SessionInUse`
//! until the first store is dropped. Readers never lock.

use panto_core::{Error, SessionStore};
use panto_store_fs::JsonlStore;
use panto_testkit::child::{child_test, report_to_parent, wait_for_child};
use panto_testkit::store_contract::{append_one, reply, user, Driver};

use super::common::{as_dyn, fast_store, loaded_texts};

/// Set in the child process: the directory and session the child appends to.
const CHILD_DIR: &str = "PANTO_STORE_FS_TEST_CHILD_DIR";
const CHILD_ID: &str = "PANTO_STORE_FS_TEST_CHILD_ID";
const CHILD_TEST: &str = "fs::locking::child_process_appends";

#[tokio::test]
async fn a_second_store_instance_gets_session_in_use_until_the_first_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let first = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&first), None);
    d.append(vec![user("mine")]).await;
    let id = d.id();

    let second = fast_store(dir.path());
    match append_one(&*second, &id, &user("theirs")).await {
        Err(Error::SessionInUse { id: busy }) => assert_eq!(busy, id),
        other => panic!("expected SessionInUse, got {other:?}"),
    }
    // Readers do not lock: the second store still lists and loads the session.
    assert_eq!(second.list().await.unwrap()[0].id, id);
    assert_eq!(as_dyn(&second).load(&id).await.unwrap().unwrap().messages.len(), 1);
    // The first store keeps writing.
    d.append(vec![reply("still mine")]).await;

    drop(d);
    drop(first);
    append_one(&*second, &id, &user("mine now")).await.unwrap();
    assert_eq!(loaded_texts(&second, &id).await, ["mine", "still mine", "mine now"]);
}

#[tokio::test]
async fn release_hands_a_session_to_another_store_without_dropping_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let first = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&first), None);
    d.append(vec![user("one")]).await;
    let id = d.id();
    let second = fast_store(dir.path());
    assert!(matches!(
        append_one(&*second, &id, &user("too early")).await,
        Err(Error::SessionInUse { .. })
    ));

    first.release(&id).await.unwrap();
    append_one(&*second, &id, &user("two")).await.unwrap();
    // Now the second store holds it, and the first one is the one turned away.
    assert!(matches!(
        append_one(&*first, &id, &user("not yet")).await,
        Err(Error::SessionInUse { .. })
    ));
    second.release_all().await.unwrap();
    append_one(&*first, &id, &user("three")).await.unwrap();

    assert_eq!(loaded_texts(&first, &id).await, ["one", "two", "three"]);
    // Releasing a session the store never opened, or twice, is fine; a bad id is not.
    first.release(&panto_core::store::new_session_id()).await.unwrap();
    second.release(&id).await.unwrap();
    assert!(matches!(first.release("../x").await, Err(Error::InvalidSessionId(_))));
    assert!(format!("{first:?}").contains("open_for_writing: 1"), "{first:?}");
    first.release_all().await.unwrap();
    assert!(format!("{first:?}").contains("open_for_writing: 0"), "{first:?}");
}

/// Runs this test binary again as a child that appends one message to `id` in `dir`, and
/// returns what it reported.
async fn run_child(dir: &std::path::Path, id: &str) -> String {
    let child = child_test(CHILD_TEST)
        .env(CHILD_DIR, dir)
        .env(CHILD_ID, id)
        .spawn()
        .unwrap();
    wait_for_child(child).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_gets_session_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("parent")]).await;
    let id = d.id();

    assert_eq!(run_child(dir.path(), &id).await, format!("in use: {id}"));

    // Once this process lets go, the child can write.
    drop(d);
    drop(store);
    assert_eq!(run_child(dir.path(), &id).await, "appended");
    let loaded = as_dyn(&fast_store(dir.path())).load(&id).await.unwrap().unwrap();
    assert_eq!(
        loaded.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["parent", "child"]
    );
}

/// The child side of `a_second_process_gets_session_in_use`, run only by it.
#[tokio::test]
#[ignore = "the child half of a_second_process_gets_session_in_use, run only by it"]
async fn child_process_appends() {
    let (Ok(dir), Ok(id)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_ID)) else {
        panic!("run by a_second_process_gets_session_in_use, which sets {CHILD_DIR} and {CHILD_ID}");
    };
    let store = JsonlStore::new(dir);
    let result = match append_one(&*store, &id, &user("child")).await {
        Ok(()) => "appended".to_owned(),
        Err(Error::SessionInUse { id }) => format!("in use: {id}"),
        Err(e) => format!("error: {e}"),
    };
    report_to_parent(&result);
}
