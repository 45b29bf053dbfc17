//! Importing the session tree: every branch, a compaction on one of them, the branch switches,
//! the file-change records, the checkpoint blobs and the fork origin come along, so PostgreSQL
//! answers every question about the imported sessions as the file store does; a damaged
//! checkpoint or a bad branch line refuses its session whole, naming the file and line.

use std::sync::Arc;

use panto_core::store::checkpoint_address;
use panto_core::store::CheckpointRecord;
use panto_core::{Error, SessionStore, SystemMode};
use panto_store_fs::{Durability, JsonlStore};
use panto_store_postgres::{import_fs, PostgresStore};
use panto_testkit::postgres::connect;
use panto_testkit::store_contract::{reply, system, tick, user, Driver};

use super::common::{fresh_store, same_info};

/// Keeps `content` as the checkpoint of a change of `path` in session `id` and records the change.
async fn change(
    store: &Arc<dyn SessionStore>,
    id: &str,
    path: &str,
    content: &[u8],
    restore: bool,
) -> CheckpointRecord {
    let before = store.put_checkpoint(id, content).await.unwrap();
    let record = CheckpointRecord {
        path: path.to_owned(),
        before: Some(before),
        after: Some(checkpoint_address(format!("{path} after").as_bytes())),
        restore,
    };
    store.record_checkpoint(id, &record).await.unwrap();
    record
}

/// PostgreSQL answers as the file store does for session `id`: the active branch, the listing,
/// the tree, the file changes and every checkpoint they name.
async fn same_answers(fs: &JsonlStore, pg: &PostgresStore, id: &str) {
    assert_eq!(
        pg.load_branch(id).await.unwrap(),
        fs.load_branch(id).await.unwrap(),
        "session {id}: the active branch"
    );
    assert_eq!(
        pg.tree(id).await.unwrap(),
        fs.tree(id).await.unwrap(),
        "session {id}: the tree"
    );
    let records = fs.checkpoints(id).await.unwrap();
    assert_eq!(
        pg.checkpoints(id).await.unwrap(),
        records,
        "session {id}: the file changes"
    );
    for stored in &records {
        let address = stored.record.before.as_deref().unwrap();
        let kept = fs.get_checkpoint(id, address).await.unwrap();
        assert!(kept.is_some(), "session {id}: the file store keeps {address}");
        assert_eq!(
            pg.get_checkpoint(id, address).await.unwrap(),
            kept,
            "session {id}: checkpoint {address}"
        );
    }
    same_info(
        &pg.info(id).await.unwrap().unwrap(),
        &fs.info(id).await.unwrap().unwrap(),
    );
}

/// How many rows of each table hold something of session `id`, and how many blobs there are.
async fn rows_of(url: &str, id: &str) -> [i64; 5] {
    let row = connect(url)
        .await
        .query_one(
            "select (select count(*) from panto.sessions where id = $1), \
                    (select count(*) from panto.entries where session_id = $1), \
                    (select count(*) from panto.branch_events where session_id = $1), \
                    (select count(*) from panto.session_checkpoints where session_id = $1), \
                    (select count(*) from panto.checkpoint_blobs)",
            &[&id],
        )
        .await
        .unwrap();
    [row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_branches_checkpoints_and_a_fork_imports_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fs = JsonlStore::with_durability(dir.path(), Durability::None);
    let fs_dyn: Arc<dyn SessionStore> = fs.clone();

    // Branch one: two exchanges, a change at "2", a third exchange, a compaction keeping it,
    // and a change after the compaction.
    let mut d = Driver::new(&fs_dyn, Some(r#"{"ticket":"PAN-19"}"#));
    let id = d.id();
    let mut ids = d
        .append(vec![system("be brief", SystemMode::Append), user("one"), reply("1")])
        .await;
    tick().await;
    ids.extend(d.append(vec![user("two"), reply("2")]).await);
    change(&fs_dyn, &id, "/work/a.rs", b"a before\0\xff", false).await;
    tick().await;
    ids.extend(d.append(vec![user("three"), reply("3")]).await);
    let summary = d.compact(5, "the first two exchanges").await;
    change(&fs_dyn, &id, "/work/b.rs", b"b before", false).await;
    // Branch two, from "1": an exchange, a change and a rewind's restore.
    fs.switch_branch(&id, Some(&ids[2])).await.unwrap();
    d.reload().await;
    tick().await;
    d.append(vec![user("two'"), reply("2'")]).await;
    change(&fs_dyn, &id, "/work/c.rs", b"c before", false).await;
    change(&fs_dyn, &id, "/work/a.rs", b"a before\0\xff", true).await;
    // A fork at "2", which carries the change recorded there; then back to the compacted branch,
    // so the source's last line is a plain switch.
    let fork = d.session.fork(&ids[4]).await.unwrap();
    let fork_id = fork.id().to_owned();
    fs.switch_branch(&id, Some(&summary[0])).await.unwrap();

    let (pg, url) = fresh_store().await;
    let report = import_fs(dir.path(), &pg).await.unwrap();
    let mut both = vec![id.clone(), fork_id.clone()];
    both.sort();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.imported, both);
    same_answers(&fs, &pg, &id).await;
    same_answers(&fs, &pg, &fork_id).await;
    assert_eq!(pg.list().await.unwrap().len(), 2);
    assert_eq!(
        pg.info(&fork_id)
            .await
            .unwrap()
            .unwrap()
            .forked_from
            .map(|f| (f.session, f.entry)),
        Some((id.clone(), ids[4].clone()))
    );
    // Three distinct contents, each stored once though the fork keeps one of them too.
    let counted = rows_of(&url, &id).await;
    assert_eq!(counted[4], 3, "blobs: {counted:?}");

    // Again: nothing changes.
    let again = import_fs(dir.path(), &pg).await.unwrap();
    assert!(again.imported.is_empty());
    assert_eq!(again.skipped, both);
    assert_eq!(rows_of(&url, &id).await, counted);

    // The imported session goes on in PostgreSQL: a switch back to branch two, the same in both.
    pg.switch_branch(&id, Some(&ids[2])).await.unwrap();
    fs.switch_branch(&id, Some(&ids[2])).await.unwrap();
    assert_eq!(pg.load_branch(&id).await.unwrap(), fs.load_branch(&id).await.unwrap());
    let (p, f) = (
        pg.info(&id).await.unwrap().unwrap(),
        fs.info(&id).await.unwrap().unwrap(),
    );
    assert_eq!(
        (p.message_count, p.last_user_message, p.last_prompt_at.is_some()),
        (f.message_count, f.last_user_message, f.last_prompt_at.is_some())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_checkpoint_or_branch_line_refuses_its_session_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fs = JsonlStore::with_durability(dir.path(), Durability::None);
    let fs_dyn: Arc<dyn SessionStore> = fs.clone();
    let mut good = Driver::new(&fs_dyn, None);
    good.append(vec![user("fine"), reply("ok")]).await;

    // A session whose checkpoint blob was changed after it was kept.
    let mut damaged = Driver::new(&fs_dyn, None);
    damaged.append(vec![user("edit it"), reply("done")]).await;
    let record = change(&fs_dyn, &damaged.id(), "/work/a.rs", b"original", false).await;
    let blob = dir
        .path()
        .join(format!("{}.blobs", damaged.id()))
        .join(record.before.as_deref().unwrap());
    std::fs::write(&blob, b"tampered").unwrap();
    // A leftover of an interrupted checkpoint write is not a checkpoint, and is not read.
    std::fs::write(blob.with_extension("0123.tmp"), b"partial").unwrap();

    // A session whose branch line names an entry the file does not hold.
    let mut bad_tip = Driver::new(&fs_dyn, None);
    let ids = bad_tip.append(vec![user("one"), reply("1")]).await;
    fs.switch_branch(&bad_tip.id(), Some(&ids[0])).await.unwrap();
    let bad_path = fs.session_path(&bad_tip.id()).unwrap();
    let text = std::fs::read_to_string(&bad_path).unwrap();
    std::fs::write(
        &bad_path,
        text.replace(&format!(r#""tip":"{}""#, ids[0]), r#""tip":"ffffffff""#),
    )
    .unwrap();

    let (pg, url) = fresh_store().await;
    let report = import_fs(dir.path(), &pg).await.unwrap();
    assert_eq!(report.imported, [good.id()]);
    let mut problems: Vec<(String, String)> = report
        .problems
        .iter()
        .map(|(path, e)| match e {
            Error::CorruptSession { location, message } => {
                (path.display().to_string(), format!("{location}: {message}"))
            }
            other => panic!("{}: expected CorruptSession, got {other:?}", path.display()),
        })
        .collect();
    problems.sort();
    let mut expected = vec![
        (
            fs.session_path(&damaged.id()).unwrap().display().to_string(),
            format!(
                "{}: the checkpoint's bytes do not match its address (the file was changed or damaged)",
                blob.display()
            ),
        ),
        (
            bad_path.display().to_string(),
            format!("{}:4: tip \"ffffffff\" names no earlier entry", bad_path.display()),
        ),
    ];
    expected.sort();
    assert_eq!(problems, expected);
    // Nothing of the refused sessions was stored: no row names them, and no blob was kept.
    for id in [damaged.id(), bad_tip.id()] {
        assert_eq!(rows_of(&url, &id).await, [0, 0, 0, 0, 0], "session {id}");
    }
}

/// A change record naming another entry than the tip (as forks wrote them before the format
/// required records to keep the tip) moves the file store's tip there; the import does the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_recorded_at_another_entry_moves_the_tip_as_in_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let fs = JsonlStore::with_durability(dir.path(), Durability::None);
    let fs_dyn: Arc<dyn SessionStore> = fs.clone();
    let mut d = Driver::new(&fs_dyn, None);
    let id = d.id();
    let ids = d.append(vec![user("one"), reply("1"), user("two"), reply("2")]).await;
    let before = fs.put_checkpoint(&id, b"x before").await.unwrap();
    let path = fs.session_path(&id).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // The activity of "1", the entry the record names.
    let at_one: serde_json::Value = serde_json::from_str(text.lines().nth(2).unwrap()).unwrap();
    let line = serde_json::json!({
        "type": "branch",
        "id": "0000abcd",
        "parent_id": ids[3],
        "tip": ids[1],
        "checkpoint": {"path": "/work/x.rs", "before": before, "after": null},
        "timestamp": chrono::Utc::now(),
        "activity": at_one["activity"],
    });
    std::fs::write(&path, format!("{text}{line}\n")).unwrap();
    assert_eq!(
        fs.load(&id).await.unwrap().unwrap().messages.len(),
        2,
        "the file store moved the tip"
    );

    let (pg, _) = fresh_store().await;
    let report = import_fs(dir.path(), &pg).await.unwrap();
    assert_eq!(report.imported, std::slice::from_ref(&id), "{:?}", report.problems);
    same_answers(&fs, &pg, &id).await;
}
