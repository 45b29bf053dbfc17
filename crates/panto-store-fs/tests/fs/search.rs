//! What only the file store's search can get wrong: it reads raw lines, so what is around the
//! messages (the header, the entries' copies of the last prompt) must not count, every branch's
//! messages are searched in full, each hit carries its entry's own time, and a damaged file is
//! left out rather than failing the search.

use std::io::Write;

use panto_core::store::{SearchQuery, LAST_USER_MESSAGE_CHARS};
use panto_testkit::store_contract::{reply, tick, user, Driver};

use super::common::{as_dyn, fast_store, session_file};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_message_is_searched_on_every_branch_with_its_own_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = as_dyn(&fast_store(dir.path()));
    let mut d = Driver::new(&store, Some(r#"{"project":"narwhal"}"#));
    // The word is past what `tree` previews, on a branch the rewind below leaves.
    let long = format!("{} narwhal", "filler ".repeat(LAST_USER_MESSAGE_CHARS));
    let ids = d.append(vec![user("first"), reply(&long)]).await;
    tick().await;
    store.switch_branch(&d.id(), Some(&ids[0])).await.unwrap();
    d.reload().await;
    d.append(vec![reply("short")]).await;
    let hits = store.search(&SearchQuery::text("NARWHAL")).await.unwrap();
    assert_eq!(hits.len(), 1, "the header's metadata is not a message: {hits:?}");
    assert_eq!(hits[0].entry, ids[1]);
    assert!(!hits[0].on_active_branch);
    assert!(
        hits[0].at < hits[0].session.modified,
        "the entry's own time, not the session's last write"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_file_is_left_out_of_the_hits() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fast_store(dir.path());
    let store = as_dyn(&fs);
    let mut good = Driver::new(&store, None);
    good.append(vec![user("the axolotl")]).await;
    let mut bad = Driver::new(&store, None);
    bad.append(vec![user("another axolotl")]).await;
    fs.release_all().await.unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(session_file(&fs, &bad.id()))
        .unwrap();
    file.write_all(b"{\"type\":\"message\",\"axolotl\":\n").unwrap();
    let hits = store.search(&SearchQuery::text("axolotl")).await.unwrap();
    let sessions: Vec<&str> = hits.iter().map(|h| h.session.id.as_str()).collect();
    assert_eq!(sessions, [good.id().as_str()]);
}
