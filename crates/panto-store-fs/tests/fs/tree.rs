//! Branches and forks on disk (format version 2): a branch switch is one appended line and
//! nothing committed is rewritten, a fork's file holds the source's lines verbatim, every store
//! instance (a new process) sees the active branch, and version 1 files still load and branch.

use panto_core::{Error, Session, SystemMode};
use panto_testkit::store_contract::{reply, system, user, Driver};

use super::common::{as_dyn, corrupt_parts, fast_store, lines, loaded_texts, session_file};

#[tokio::test]
async fn a_switch_is_one_appended_line_and_a_new_store_continues_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let (id, ids) = {
        let store = fast_store(dir.path());
        let mut d = Driver::new(&as_dyn(&store), None);
        let mut ids = d
            .append(vec![system("Be brief.", SystemMode::Append), user("q1"), reply("a1")])
            .await;
        ids.extend(d.append(vec![user("q2"), reply("a2")]).await);
        (d.id(), ids)
    };
    let store = fast_store(dir.path());
    let path = session_file(&store, &id);
    let before = std::fs::read(&path).unwrap();
    as_dyn(&store).switch_branch(&id, Some(&ids[2])).await.unwrap();
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before), "committed bytes are never rewritten");
    let all = lines(&path);
    assert_eq!(all.len(), 7, "one line more");
    let branch = &all[6];
    let mut keys: Vec<&str> = branch.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["activity", "id", "parent_id", "timestamp", "tip", "type"]);
    assert_eq!(branch["type"], "branch");
    assert_eq!(branch["tip"], ids[2].as_str());
    assert_eq!(branch["parent_id"], ids[4].as_str(), "the switch hangs off the old tip");
    assert_eq!(
        branch["activity"]["message_count"], 3,
        "the listing describes the new branch"
    );
    assert_eq!(branch["activity"]["last_user_message"], "q1");
    drop(store);

    // A new store (as a new process would) loads and continues the active branch.
    let store = fast_store(dir.path());
    assert_eq!(loaded_texts(&store, &id).await, ["", "q1", "a1"]);
    let session = Session::resolve(as_dyn(&store), &id).await.unwrap().unwrap();
    assert_eq!(session.info.message_count, 3);
    let branch = session.load_branch().await.unwrap();
    let mut d = Driver {
        session,
        conversation: branch.conversation,
        wire: panto_testkit::store_contract::anthropic_wire(),
        tools: panto_testkit::store_contract::tools(),
    };
    d.append(vec![user("q2 again"), reply("a2'")]).await;
    let all = lines(&path);
    assert_eq!(all[7]["parent_id"], ids[2].as_str(), "the new branch follows the tip");
    assert_eq!(loaded_texts(&store, &id).await, ["", "q1", "a1", "q2 again", "a2'"]);
    assert_eq!(all[8]["activity"]["message_count"], 5);
}

#[tokio::test]
async fn a_fork_file_holds_the_source_path_verbatim_and_names_its_origin() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), Some(r#"{"k":1}"#));
    let ids = d.append(vec![user("q1"), reply("a1"), user("q2"), reply("a2")]).await;
    let fork = d.session.fork(&ids[1]).await.unwrap();
    let source_text = std::fs::read_to_string(session_file(&store, &d.id())).unwrap();
    let fork_text = std::fs::read_to_string(session_file(&store, fork.id())).unwrap();
    let source_lines: Vec<&str> = source_text.lines().collect();
    let fork_lines: Vec<&str> = fork_text.lines().collect();
    assert_eq!(fork_lines[1..], source_lines[1..3], "the path's lines, byte for byte");
    let header: serde_json::Value = serde_json::from_str(fork_lines[0]).unwrap();
    assert_eq!(header["version"], 2);
    assert_eq!(header["id"], fork.id());
    assert_eq!(header["metadata"], r#"{"k":1}"#);
    assert_eq!(
        header["forked_from"],
        serde_json::json!({"session": d.id(), "entry": ids[1]})
    );
    // The fork's lock is the store's; another store cannot write it meanwhile.
    let other = fast_store(dir.path());
    let taken = as_dyn(&other).switch_branch(fork.id(), None).await;
    assert!(matches!(taken, Err(Error::SessionInUse { .. })), "{taken:?}");
}

/// Every record of a file change in a fork keeps the tip, as in any session, even when the
/// changes it carries belong to entries out of order: the fork switches to the entry first.
#[tokio::test]
async fn a_fork_records_each_carried_change_at_its_entry_without_moving_the_tip() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let dyn_store = as_dyn(&store);
    let mut d = Driver::new(&dyn_store, None);
    let record = |path: &str| panto_core::store::CheckpointRecord {
        path: path.to_owned(),
        before: None,
        after: Some(panto_core::store::checkpoint_address(path.as_bytes())),
        restore: false,
    };
    let mut ids = d.append(vec![user("q1"), reply("a1")]).await;
    dyn_store.record_checkpoint(&d.id(), &record("/w/a")).await.unwrap();
    ids.extend(d.append(vec![user("q2"), reply("a2")]).await);
    dyn_store.record_checkpoint(&d.id(), &record("/w/b")).await.unwrap();
    // Back at "a1", a change there comes after the one at "a2" in the source's order.
    dyn_store.switch_branch(&d.id(), Some(&ids[1])).await.unwrap();
    dyn_store.record_checkpoint(&d.id(), &record("/w/a")).await.unwrap();

    let fork = d.session.fork(&ids[3]).await.unwrap();
    let all = lines(&session_file(&store, fork.id()));
    let mut tip = serde_json::Value::Null;
    let mut recorded = Vec::new();
    for (n, line) in all.iter().enumerate().skip(1) {
        assert_eq!(line["parent_id"], tip, "line {}: every entry follows the tip", n + 1);
        if line["type"] == "branch" {
            if line.get("checkpoint").is_some() {
                assert_eq!(line["tip"], tip, "line {}: a change record keeps the tip", n + 1);
                recorded.push((line["tip"].clone(), line["checkpoint"]["path"].clone()));
            }
            tip = line["tip"].clone();
        } else {
            tip = line["id"].clone();
        }
    }
    assert_eq!(
        recorded,
        [
            (ids[1].as_str().into(), "/w/a".into()),
            (ids[3].as_str().into(), "/w/b".into()),
            (ids[1].as_str().into(), "/w/a".into()),
        ],
        "the changes in the source's order, each at its entry"
    );
    assert_eq!(tip, ids[3].as_str(), "the fork ends at the fork point");
    assert_eq!(loaded_texts(&store, fork.id()).await, ["q1", "a1", "q2", "a2"]);
}

#[tokio::test]
async fn a_version_1_file_loads_and_branches() {
    // The documented version 1 example, as an older panto wrote it.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/session-format.md")).unwrap();
    let example = doc
        .split("```jsonl\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```jsonl block in docs/session-format.md");
    let header: serde_json::Value = serde_json::from_str(example.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], 1, "the first example is a version 1 file");
    let id = header["id"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    std::fs::write(session_file(&store, &id), example).unwrap();

    let branch = as_dyn(&store).load_branch(&id).await.unwrap().unwrap();
    let ids: Vec<&str> = branch.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        ["233cd8c2", "413bdc9b", "39464230", "9655a24c"],
        "the view's entries"
    );
    assert_eq!(
        branch.entries[1].parent.as_deref(),
        Some("9655a24c"),
        "the summary's parent"
    );

    // Rewind to before "And in tests?": the uncompacted path to "There are 4 files in src."
    as_dyn(&store).switch_branch(&id, Some("29299e10")).await.unwrap();
    let texts = loaded_texts(&store, &id).await;
    assert_eq!(
        texts[1..],
        ["How many files are in src?", "", "", "There are 4 files in src."]
    );
    assert_eq!(as_dyn(&store).info(&id).await.unwrap().unwrap().message_count, 5);
}

#[tokio::test]
async fn a_branch_entry_naming_no_message_is_corrupt_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("q1"), reply("a1")]).await;
    store.release_all().await.unwrap();
    let path = session_file(&store, &d.id());
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(
        r#"{"type":"branch","id":"0000000b","parent_id":null,"tip":"ffffffff","timestamp":"2031-01-01T00:00:00Z","activity":{"message_count":0}}"#,
    );
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let (location, message) = corrupt_parts(as_dyn(&store).load(&d.id()).await);
    assert_eq!(location, format!("{}:4", path.display()));
    assert!(message.contains("tip \"ffffffff\" names no earlier entry"), "{message}");
}
