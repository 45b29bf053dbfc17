//! Torn lines: a crash mid-append leaves a final line without its line end. Readers skip it; the
//! next writer cuts it off and appends after the last complete line.

use std::path::Path;

use panto_core::{ContentBlock, Error, Session, SessionStore, StopReason};
use panto_testkit::store_contract::{append_one, assistant, tool_result, user, Driver};

use super::common::{as_dyn, check_valid, corrupt_parts, fast_store, session_file};

/// Writes a three-entry session into `dir` and returns its id and bytes.
async fn template(dir: &Path) -> (String, Vec<u8>) {
    let store = fast_store(dir);
    let mut d = Driver::new(&as_dyn(&store), Some(r#"{"m":1}"#));
    d.append(vec![user("list the files")]).await;
    d.append(vec![assistant(
        vec![ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "bash".into(),
            input: serde_json::json!({"command": "ls"}),
        }],
        StopReason::ToolUse,
    )])
    .await;
    d.append(vec![tool_result("toolu_1", "Cargo.toml\nsrc\n", false)]).await;
    let bytes = std::fs::read(session_file(&store, &d.id())).unwrap();
    (d.id(), bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_line_torn_at_every_byte_is_skipped_then_repaired() {
    let root = tempfile::tempdir().unwrap();
    let (id, bytes) = template(&root.path().join("template")).await;
    let full = as_dyn(&fast_store(&root.path().join("template")))
        .load(&id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full.messages.len(), 3);
    // The last line runs from just after the second-to-last line end to the end of the file.
    let last_start = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;

    for cut in last_start + 1..bytes.len() {
        let dir = root.path().join(cut.to_string());
        std::fs::create_dir(&dir).unwrap();
        let store = fast_store(&dir);
        let path = session_file(&store, &id);
        std::fs::write(&path, &bytes[..cut]).unwrap();

        let loaded = as_dyn(&store).load(&id).await.unwrap().unwrap();
        assert_eq!(loaded.messages, full.messages[..2], "cut at byte {cut}");
        assert_eq!(loaded.metadata.as_deref(), Some(r#"{"m":1}"#));
        assert_eq!(store.list().await.unwrap()[0].message_count, 2, "cut at byte {cut}");

        // A fresh store instance appends after the last complete line.
        append_one(&*fast_store(&dir), &id, &user("after the crash"))
            .await
            .unwrap();
        let loaded = as_dyn(&store).load(&id).await.unwrap().unwrap();
        assert_eq!(loaded.messages.len(), 3, "cut at byte {cut}");
        assert_eq!(loaded.messages[..2], full.messages[..2]);
        assert_eq!(loaded.messages[2].text(), "after the crash");
        let entries = check_valid(&path);
        assert_eq!(entries.len(), 3, "cut at byte {cut}");
        assert_eq!(
            entries[2]["activity"]["message_count"], 3,
            "the activity continues the count"
        );
        assert_eq!(
            std::fs::read(&path).unwrap()[..last_start],
            bytes[..last_start],
            "committed bytes were rewritten (cut at byte {cut})"
        );
    }
}

#[tokio::test]
async fn a_torn_header_is_reported_and_the_next_append_starts_the_file_again() {
    let root = tempfile::tempdir().unwrap();
    let (id, bytes) = template(&root.path().join("template")).await;
    let header_end = bytes.iter().position(|&b| b == b'\n').unwrap();

    for cut in [1, header_end / 2, header_end] {
        let dir = root.path().join(cut.to_string());
        std::fs::create_dir(&dir).unwrap();
        let store = fast_store(&dir);
        let path = session_file(&store, &id);
        std::fs::write(&path, &bytes[..cut]).unwrap();

        let (location, message) = corrupt_parts(as_dyn(&store).load(&id).await);
        assert_eq!(location, format!("{}:1", path.display()));
        assert!(message.contains("incomplete"), "{message}");
        let (good, problems) = store.list_with_problems().await.unwrap();
        assert!(good.is_empty() && problems.len() == 1, "cut at byte {cut}");

        append_one(&*store, &id, &user("fresh start")).await.unwrap();
        let entries = check_valid(&path);
        assert_eq!(entries.len(), 1);
        let loaded = as_dyn(&store).load(&id).await.unwrap().unwrap();
        assert_eq!(loaded.messages.len(), 1);
        assert_eq!(store.list().await.unwrap()[0].message_count, 1);
    }
}

/// A process killed between creating a new session's file and writing its first batch leaves
/// an empty file (found by `cargo xtask crash-test`). Nothing was committed, so there is no
/// session: it is not listed, reported, resolved or loaded, and the next append to its id
/// writes the file from the start.
#[tokio::test]
async fn an_empty_session_file_is_no_session_and_the_next_append_starts_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("a real session")]).await;
    let real = d.id();
    // An id that shares the real session's first 13 characters (its millisecond timestamp), so
    // a prefix of both is not ambiguous just because of the empty file.
    let empty_id = format!("{}{}", &real[..14], "7000-8000-000000000000");
    let path = session_file(&store, &empty_id);
    std::fs::write(&path, b"").unwrap();

    let (good, problems) = store.list_with_problems().await.unwrap();
    assert_eq!(good.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [real.as_str()]);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(as_dyn(&store).load(&empty_id).await.unwrap().is_none());
    assert!(Session::resolve(store.clone(), &empty_id).await.unwrap().is_none());
    let by_prefix = Session::resolve(store.clone(), &real[..13])
        .await
        .unwrap()
        .expect("the real session");
    assert_eq!(by_prefix.id(), real);
    // The empty file is left in place: its creator may be about to write it.
    assert!(path.exists());

    append_one(&*fast_store(dir.path()), &empty_id, &user("written after all"))
        .await
        .unwrap();
    assert_eq!(check_valid(&path).len(), 1);
    let loaded = as_dyn(&store).load(&empty_id).await.unwrap().unwrap();
    assert_eq!(loaded.messages[0].text(), "written after all");
    assert_eq!(store.list().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_vanished_session_file_is_not_written_into_the_void() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("one")]).await;
    let path = session_file(&store, &d.id());
    std::fs::remove_file(&path).unwrap();
    match append_one(&*store, &d.id(), &user("two")).await {
        Err(Error::SessionNotFound(id)) => assert_eq!(id, d.id()),
        other => panic!("expected SessionNotFound, got {other:?}"),
    }
    // The next append starts the session again in a new file.
    append_one(&*store, &d.id(), &user("three")).await.unwrap();
    let loaded = as_dyn(&store).load(&d.id()).await.unwrap().unwrap();
    assert_eq!(loaded.messages.iter().map(|m| m.text()).collect::<Vec<_>>(), ["three"]);
}
