//! Branches and forks: rewinding to an earlier point starts a new branch, a fork starts a new
//! session from a path, and compaction on one branch never changes another's view.

use std::sync::Arc;

use panto_core::store::{CheckpointRecord, ForkOrigin, LoadedBranch, StoredCheckpoint};
use panto_core::{Error, Message, Session, SessionStore, SystemMode};

use super::driver::{info_of, tick, Driver};
use super::messages::{reply, system, user};

async fn must_branch(store: &Arc<dyn SessionStore>, id: &str, case: &str) -> LoadedBranch {
    match store.load_branch(id).await {
        Ok(Some(b)) => b,
        Ok(None) => panic!("{case}: load_branch({id}) found no session"),
        Err(e) => panic!("{case}: load_branch({id}) failed: {e}"),
    }
}

async fn must_switch(store: &Arc<dyn SessionStore>, id: &str, tip: Option<&str>, case: &str) {
    if let Err(e) = store.switch_branch(id, tip).await {
        panic!("{case}: switch_branch({id}, {tip:?}) failed: {e}");
    }
}

fn ids_of(branch: &LoadedBranch) -> Vec<String> {
    branch.entries.iter().map(|e| e.id.clone()).collect()
}

/// A session of a system prompt and three exchanges, and the entry ids of its seven messages.
async fn three_exchanges(store: &Arc<dyn SessionStore>) -> (Driver, Vec<String>, Vec<Message>) {
    let mut d = Driver::new(store, Some(r#"{"ticket":"PAN-19"}"#));
    let messages = vec![
        system("be brief", SystemMode::Append),
        user("one"),
        reply("1"),
        user("two"),
        reply("2"),
        user("three"),
        reply("3"),
    ];
    let mut ids = d.append(messages[..3].to_vec()).await;
    tick().await;
    ids.extend(d.append(messages[3..5].to_vec()).await);
    tick().await;
    ids.extend(d.append(messages[5..].to_vec()).await);
    (d, ids, messages)
}

/// A branch switch makes an earlier entry the tip: load returns the path to it, the listing
/// describes it, the next append follows it, and the abandoned entries stay in the tree.
pub async fn a_branch_switch_rewinds_and_keeps_the_log(store: Arc<dyn SessionStore>) {
    const CASE: &str = "a_branch_switch_rewinds_and_keeps_the_log";
    let (mut d, ids, messages) = three_exchanges(&store).await;
    let id = d.id();
    let loaded = must_branch(&store, &id, CASE).await;
    assert_eq!(loaded.conversation.messages, messages, "{CASE}: before the switch");
    assert_eq!(ids_of(&loaded), ids, "{CASE}: load gives the ids append returned");
    assert_eq!(loaded.entries[0].parent, None, "{CASE}: the first entry has no parent");
    assert_eq!(
        loaded.entries[3].parent.as_deref(),
        Some(ids[2].as_str()),
        "{CASE}: parents chain"
    );
    assert_eq!(loaded.forked_from, None, "{CASE}: not a fork");

    // Rewind two prompts: back to before "two".
    tick().await;
    must_switch(&store, &id, Some(&ids[2]), CASE).await;
    let loaded = must_branch(&store, &id, CASE).await;
    assert_eq!(
        loaded.conversation.messages,
        messages[..3],
        "{CASE}: the view after the switch"
    );
    assert_eq!(ids_of(&loaded), ids[..3], "{CASE}: ids after the switch");
    assert_eq!(
        loaded.conversation.metadata.as_deref(),
        Some(r#"{"ticket":"PAN-19"}"#),
        "{CASE}: metadata survives"
    );
    let info = info_of(&store, &id, CASE).await;
    assert_eq!(info.message_count, 3, "{CASE}: the listing counts the active branch");
    assert_eq!(
        info.last_user_message.as_deref(),
        Some("one"),
        "{CASE}: the branch's last prompt"
    );

    d.reload().await;
    tick().await;
    let new_ids = d.append(vec![user("two again"), reply("2'")]).await;
    let loaded = must_branch(&store, &id, CASE).await;
    let mut want = messages[..3].to_vec();
    want.extend([user("two again"), reply("2'")]);
    assert_eq!(loaded.conversation.messages, want, "{CASE}: the new branch");
    assert_eq!(
        loaded.entries[3].parent.as_deref(),
        Some(ids[2].as_str()),
        "{CASE}: it forks at \"1\""
    );
    assert_eq!(ids_of(&loaded)[3..], new_ids, "{CASE}: the new branch's ids");
    assert!(new_ids.iter().all(|n| !ids.contains(n)), "{CASE}: new ids are new");
    let info = info_of(&store, &id, CASE).await;
    assert_eq!(info.message_count, 5, "{CASE}: count of the new branch");
    assert_eq!(info.last_user_message.as_deref(), Some("two again"), "{CASE}: listing");

    let tree = match store.tree(&id).await {
        Ok(Some(t)) => t,
        other => panic!("{CASE}: tree gave {other:?}"),
    };
    let all: Vec<&str> = tree.entries.iter().map(|e| e.entry.id.as_str()).collect();
    let mut want_all: Vec<&str> = ids.iter().map(String::as_str).collect();
    want_all.extend(new_ids.iter().map(String::as_str));
    assert_eq!(all, want_all, "{CASE}: the tree keeps every entry, in append order");
    assert_eq!(tree.tip.as_deref(), Some(new_ids[1].as_str()), "{CASE}: the tip");
    assert_eq!(
        tree.entries.iter().filter(|e| e.is_prompt).count(),
        4,
        "{CASE}: the tree marks prompts"
    );

    // Back to the old branch's end: the abandoned branch is whole again.
    must_switch(&store, &id, Some(&ids[6]), CASE).await;
    let loaded = must_branch(&store, &id, CASE).await;
    assert_eq!(loaded.conversation.messages, messages, "{CASE}: switching back");

    // Back to the empty start.
    must_switch(&store, &id, None, CASE).await;
    let loaded = must_branch(&store, &id, CASE).await;
    assert!(loaded.conversation.messages.is_empty(), "{CASE}: the empty start");
    assert_eq!(
        info_of(&store, &id, CASE).await.message_count,
        0,
        "{CASE}: empty listing"
    );
}

/// A fork is a new session holding the path to the entry it was forked at, with the same entry
/// ids and its origin recorded; the two then grow apart.
pub async fn a_fork_copies_the_path_and_records_its_origin(store: Arc<dyn SessionStore>) {
    const CASE: &str = "a_fork_copies_the_path_and_records_its_origin";
    let (d, ids, messages) = three_exchanges(&store).await;
    let id = d.id();
    let fork = match d.session.fork(&ids[4]).await {
        Ok(fork) => fork,
        Err(e) => panic!("{CASE}: fork failed: {e}"),
    };
    assert_ne!(fork.id(), id, "{CASE}: a fork is a new session");
    let loaded = must_branch(&store, fork.id(), CASE).await;
    assert_eq!(
        loaded.conversation.messages,
        messages[..5],
        "{CASE}: the fork's history"
    );
    assert_eq!(ids_of(&loaded), ids[..5], "{CASE}: the fork keeps the entry ids");
    assert_eq!(
        loaded.conversation.metadata.as_deref(),
        Some(r#"{"ticket":"PAN-19"}"#),
        "{CASE}: the fork keeps the metadata"
    );
    assert_eq!(
        loaded.forked_from,
        Some(ForkOrigin {
            session: id.clone(),
            entry: ids[4].clone(),
        }),
        "{CASE}: the origin"
    );
    assert_eq!(fork.info.message_count, 5, "{CASE}: the fork's listing");
    assert_eq!(
        fork.info.forked_from, loaded.forked_from,
        "{CASE}: the listing names the origin"
    );
    assert_eq!(
        fork.info.last_user_message.as_deref(),
        Some("two"),
        "{CASE}: the fork's listing"
    );

    let mut f = Driver {
        conversation: loaded.conversation.clone(),
        session: fork,
        wire: d.wire.clone(),
        tools: d.tools.clone(),
    };
    f.append(vec![user("fork only"), reply("f")]).await;
    let source = must_branch(&store, &id, CASE).await;
    assert_eq!(
        source.conversation.messages, messages,
        "{CASE}: the source is untouched"
    );
    let loaded = must_branch(&store, &f.id(), CASE).await;
    assert_eq!(loaded.conversation.messages.len(), 7, "{CASE}: the fork grew");
    assert_eq!(
        loaded.conversation.messages[5],
        user("fork only"),
        "{CASE}: the fork grew"
    );

    match Session::resolve(store.clone(), &f.id()).await {
        Ok(Some(found)) => assert_eq!(found.info.message_count, 7, "{CASE}: the fork is listed"),
        other => panic!("{CASE}: resolving the fork gave {other:?}"),
    }
}

/// Compacting on one branch never changes another's view, and a compaction on the new branch
/// applies only there.
pub async fn compaction_on_one_branch_leaves_the_other(store: Arc<dyn SessionStore>) {
    const CASE: &str = "compaction_on_one_branch_leaves_the_other";
    let (mut d, ids, messages) = three_exchanges(&store).await;
    let id = d.id();
    // Compact the whole branch, keeping "three" on.
    let summary_id = d.compact(5, "the first two exchanges").await;
    let compacted = must_branch(&store, &id, CASE).await;
    assert_eq!(
        compacted.conversation.messages.len(),
        4,
        "{CASE}: system, summary, three, 3"
    );
    assert_eq!(compacted.entries[1].id, summary_id[0], "{CASE}: the summary's id");

    // The branch before the compaction, and a new branch from "1".
    must_switch(&store, &id, Some(&ids[6]), CASE).await;
    let before = must_branch(&store, &id, CASE).await;
    assert_eq!(before.conversation.messages, messages, "{CASE}: the uncompacted branch");
    must_switch(&store, &id, Some(&ids[2]), CASE).await;
    d.reload().await;
    d.append(vec![user("other"), reply("o")]).await;
    d.compact(3, "only the first exchange").await;
    let other = must_branch(&store, &id, CASE).await;
    let texts: Vec<String> = other.conversation.messages.iter().map(Message::text).collect();
    assert_eq!(
        other.conversation.messages[0],
        system("be brief", SystemMode::Append),
        "{CASE}: the system prompt survives"
    );
    assert_eq!(
        texts[2..],
        ["other", "o"],
        "{CASE}: the other branch's kept tail: {texts:?}"
    );

    must_switch(&store, &id, Some(&summary_id[0]), CASE).await;
    assert_eq!(
        must_branch(&store, &id, CASE).await.conversation,
        compacted.conversation,
        "{CASE}: the first compaction's view is unchanged"
    );
}

/// Unknown entries and sessions are errors naming them, and change nothing.
pub async fn branch_errors_name_the_entry(store: Arc<dyn SessionStore>) {
    const CASE: &str = "branch_errors_name_the_entry";
    let (d, ids, messages) = three_exchanges(&store).await;
    let id = d.id();
    match store.switch_branch(&id, Some("ffffffff")).await {
        Err(Error::UnknownEntry { session, message }) => {
            assert_eq!(session, id, "{CASE}");
            assert!(message.contains("ffffffff"), "{CASE}: {message}");
        }
        other => panic!("{CASE}: switching to an unknown entry gave {other:?}"),
    }
    match store.fork(&id, "ffffffff", &panto_core::store::new_session_id()).await {
        Err(Error::UnknownEntry { message, .. }) => assert!(message.contains("ffffffff"), "{CASE}: {message}"),
        other => panic!("{CASE}: forking at an unknown entry gave {other:?}"),
    }
    let missing = panto_core::store::new_session_id();
    match store
        .fork(&missing, &ids[0], &panto_core::store::new_session_id())
        .await
    {
        Err(Error::SessionNotFound(s)) => assert_eq!(s, missing, "{CASE}"),
        other => panic!("{CASE}: forking an unknown session gave {other:?}"),
    }
    assert_eq!(
        must_branch(&store, &id, CASE).await.conversation.messages,
        messages,
        "{CASE}: nothing changed"
    );
    assert_eq!(
        store.list().await.map(|l| l.len()).ok(),
        Some(1),
        "{CASE}: no fork was made"
    );
}

/// For a store without branches (`store_contract_tests!(make, without_branches)`): messages
/// still get entry ids that `load_branch` gives back, and a switch or a fork is
/// [`Error::Unsupported`], changing nothing.
pub async fn branches_are_reported_unsupported(store: Arc<dyn SessionStore>) {
    const CASE: &str = "branches_are_reported_unsupported";
    let (d, ids, messages) = three_exchanges(&store).await;
    let id = d.id();
    let loaded = must_branch(&store, &id, CASE).await;
    assert_eq!(ids_of(&loaded), ids, "{CASE}: load gives the ids append returned");
    assert_eq!(
        loaded.entries[1].parent.as_deref(),
        Some(ids[0].as_str()),
        "{CASE}: parents chain"
    );
    let switched = store.switch_branch(&id, Some(&ids[2])).await;
    assert!(
        matches!(switched, Err(Error::Unsupported(_))),
        "{CASE}: switch gave {switched:?}"
    );
    let forked = store.fork(&id, &ids[2], &panto_core::store::new_session_id()).await;
    assert!(
        matches!(forked, Err(Error::Unsupported(_))),
        "{CASE}: fork gave {forked:?}"
    );
    assert_eq!(
        must_branch(&store, &id, CASE).await.conversation.messages,
        messages,
        "{CASE}: nothing changed"
    );
}

/// File checkpoints: content-addressed, byte for byte (any bytes, not only UTF-8), the same bytes
/// stored once, an unknown address found as none and a malformed one refused.
pub async fn checkpoints_round_trip_byte_for_byte(store: Arc<dyn SessionStore>) {
    const CASE: &str = "checkpoints_round_trip_byte_for_byte";
    let id = panto_core::store::new_session_id();
    let content: Vec<u8> = (0..=255u8).chain(*b"fn main() {}\n").collect();
    let address = match store.put_checkpoint(&id, &content).await {
        Ok(a) => a,
        Err(e) => panic!("{CASE}: put_checkpoint failed: {e}"),
    };
    assert_eq!(
        address,
        panto_core::store::checkpoint_address(&content),
        "{CASE}: the address"
    );
    let again = store.put_checkpoint(&id, &content).await.ok();
    assert_eq!(
        again.as_deref(),
        Some(address.as_str()),
        "{CASE}: the same bytes, the same address"
    );
    let empty = store.put_checkpoint(&id, b"").await.ok();
    assert_eq!(
        store.get_checkpoint(&id, empty.as_deref().unwrap_or("")).await.ok(),
        Some(Some(Vec::new()))
    );
    match store.get_checkpoint(&id, &address).await {
        Ok(Some(back)) => assert_eq!(back, content, "{CASE}: byte for byte"),
        other => panic!("{CASE}: get_checkpoint gave {other:?}"),
    }
    let unknown = panto_core::store::checkpoint_address(b"never stored");
    assert_eq!(
        store.get_checkpoint(&id, &unknown).await.ok(),
        Some(None),
        "{CASE}: unknown address"
    );
    assert!(
        store.get_checkpoint(&id, "../../etc/passwd").await.is_err(),
        "{CASE}: a path is no address"
    );
}

/// For a store that keeps no checkpoints: both methods say so.
pub async fn checkpoints_are_reported_unsupported(store: Arc<dyn SessionStore>) {
    const CASE: &str = "checkpoints_are_reported_unsupported";
    let id = panto_core::store::new_session_id();
    let put = store.put_checkpoint(&id, b"x").await;
    assert!(matches!(put, Err(Error::Unsupported(_))), "{CASE}: put gave {put:?}");
    let address = panto_core::store::checkpoint_address(b"x");
    let got = store.get_checkpoint(&id, &address).await;
    assert!(matches!(got, Err(Error::Unsupported(_))), "{CASE}: get gave {got:?}");
    let record = CheckpointRecord {
        path: "/x".to_owned(),
        before: None,
        after: Some(address),
        restore: false,
    };
    let recorded = store.record_checkpoint(&id, &record).await;
    assert!(
        matches!(recorded, Err(Error::Unsupported(_))),
        "{CASE}: record gave {recorded:?}"
    );
    let listed = store.checkpoints(&id).await;
    assert!(
        matches!(listed, Err(Error::Unsupported(_))),
        "{CASE}: checkpoints gave {listed:?}"
    );
}

/// Records of file changes belong to the tip of the active branch when they are recorded, come
/// back in order, and change nothing else: not the tip, the view, the listing's count, nor where
/// the next append goes. A session not stored takes none.
pub async fn checkpoint_records_belong_to_the_tip(store: Arc<dyn SessionStore>) {
    const CASE: &str = "checkpoint_records_belong_to_the_tip";
    let (mut d, ids, messages) = three_exchanges(&store).await;
    let id = d.id();
    let before = match store.put_checkpoint(&id, b"old\r\n").await {
        Ok(a) => a,
        Err(e) => panic!("{CASE}: put_checkpoint failed: {e}"),
    };
    let change = CheckpointRecord {
        path: "/work/src/a.rs".to_owned(),
        before: Some(before.clone()),
        after: Some(panto_core::store::checkpoint_address(b"new")),
        restore: false,
    };
    if let Err(e) = store.record_checkpoint(&id, &change).await {
        panic!("{CASE}: record_checkpoint failed: {e}");
    }
    assert_eq!(
        must_branch(&store, &id, CASE).await.conversation.messages,
        messages,
        "{CASE}: a record changes no view"
    );
    must_switch(&store, &id, Some(&ids[2]), CASE).await;
    let restore = CheckpointRecord {
        path: "/work/new file.txt".to_owned(),
        before: Some(before),
        after: None,
        restore: true,
    };
    if let Err(e) = store.record_checkpoint(&id, &restore).await {
        panic!("{CASE}: record_checkpoint after the switch failed: {e}");
    }
    let records = store.checkpoints(&id).await.unwrap_or_else(|e| panic!("{CASE}: {e}"));
    assert_eq!(
        records,
        [
            StoredCheckpoint {
                entry: Some(ids[6].clone()),
                record: change,
            },
            StoredCheckpoint {
                entry: Some(ids[2].clone()),
                record: restore,
            },
        ],
        "{CASE}: in order, each with the tip it was recorded at"
    );
    let info = info_of(&store, &id, CASE).await;
    assert_eq!(info.message_count, 3, "{CASE}: the listing still describes the branch");
    let next = d.append(vec![user("two again")]).await;
    let loaded = must_branch(&store, &id, CASE).await;
    assert_eq!(
        loaded.entries.last().map(|e| (e.id.clone(), e.parent.clone())),
        Some((next[0].clone(), Some(ids[2].clone()))),
        "{CASE}: the next message follows the tip"
    );
    let stranger = panto_core::store::new_session_id();
    assert!(
        store.record_checkpoint(&stranger, &restore_of()).await.is_err(),
        "{CASE}: a session not stored takes no record"
    );
    assert_eq!(
        store.checkpoints(&stranger).await.ok(),
        Some(Vec::new()),
        "{CASE}: and has none"
    );
}

/// A fork carries the file changes recorded on the forked path, and the checkpoints they name,
/// so that a rewind with files works in the fork: the changes belonging to entries on the path
/// (up to and including the fork point), in their order, and none of those after the fork point
/// or on another branch. The fork's own records then go to the fork alone.
pub async fn a_fork_carries_the_file_changes_of_its_path(store: Arc<dyn SessionStore>) {
    const CASE: &str = "a_fork_carries_the_file_changes_of_its_path";
    let mut d = Driver::new(&store, None);
    let id = d.id();
    // A change after each exchange: "a.rs" at "1", "b.rs" at "2", "c.rs" at "3".
    let mut ids = d.append(vec![user("one"), reply("1")]).await;
    let a = change(&store, &id, "/work/a.rs", b"a before\0\xff", CASE).await;
    ids.extend(d.append(vec![user("two"), reply("2")]).await);
    let b = change(&store, &id, "/work/b.rs", b"b before", CASE).await;
    ids.extend(d.append(vec![user("three"), reply("3")]).await);
    let c = change(&store, &id, "/work/c.rs", b"c before", CASE).await;
    // Back at "1", a change there (after the fork point's), then another branch from "1" with
    // its own change.
    must_switch(&store, &id, Some(&ids[1]), CASE).await;
    let again = change(&store, &id, "/work/r.rs", b"r before", CASE).await;
    d.reload().await;
    d.append(vec![user("two'"), reply("2'")]).await;
    let elsewhere = change(&store, &id, "/work/d.rs", b"d before", CASE).await;

    let fork = match d.session.fork(&ids[3]).await {
        Ok(fork) => fork,
        Err(e) => panic!("{CASE}: fork failed: {e}"),
    };
    let carried = match store.checkpoints(fork.id()).await {
        Ok(records) => records,
        Err(e) => panic!("{CASE}: checkpoints of the fork failed: {e}"),
    };
    assert_eq!(
        carried,
        [
            StoredCheckpoint {
                entry: Some(ids[1].clone()),
                record: a.0.clone(),
            },
            StoredCheckpoint {
                entry: Some(ids[3].clone()),
                record: b.0.clone(),
            },
            StoredCheckpoint {
                entry: Some(ids[1].clone()),
                record: again.0.clone(),
            },
        ],
        "{CASE}: the fork holds the changes of its path, in order, each with its entry"
    );
    for (record, content) in [&a, &b, &again] {
        let address = record.before.as_deref().unwrap_or_default();
        assert_eq!(
            store.get_checkpoint(fork.id(), address).await.ok(),
            Some(Some(content.clone())),
            "{CASE}: the fork reads the checkpoint of {}",
            record.path
        );
    }
    let loaded = must_branch(&store, fork.id(), CASE).await;
    assert_eq!(
        ids_of(&loaded),
        ids[..4],
        "{CASE}: carrying changes keeps the fork's tip"
    );
    assert_eq!(fork.info.message_count, 4, "{CASE}: and its listing");

    // The fork's own change stays in the fork; the source keeps exactly what it had.
    let own = CheckpointRecord {
        path: "/work/e.rs".to_owned(),
        before: None,
        after: Some(panto_core::store::checkpoint_address(b"e")),
        restore: false,
    };
    if let Err(e) = store.record_checkpoint(fork.id(), &own).await {
        panic!("{CASE}: record_checkpoint in the fork failed: {e}");
    }
    let in_fork = store.checkpoints(fork.id()).await.map(|r| r.len()).ok();
    assert_eq!(in_fork, Some(4), "{CASE}: the fork's own record");
    let in_source: Vec<String> = store
        .checkpoints(&id)
        .await
        .unwrap_or_else(|e| panic!("{CASE}: {e}"))
        .into_iter()
        .map(|r| r.record.path)
        .collect();
    assert_eq!(
        in_source,
        [&a.0.path, &b.0.path, &c.0.path, &again.0.path, &elsewhere.0.path].map(String::clone),
        "{CASE}: the source is untouched"
    );
}

/// Keeps `before` as a checkpoint of session `id` and records a change of `path` from it at the
/// tip; returns the record and the content.
async fn change(
    store: &Arc<dyn SessionStore>,
    id: &str,
    path: &str,
    before: &[u8],
    case: &str,
) -> (CheckpointRecord, Vec<u8>) {
    let address = match store.put_checkpoint(id, before).await {
        Ok(a) => a,
        Err(e) => panic!("{case}: put_checkpoint failed: {e}"),
    };
    let record = CheckpointRecord {
        path: path.to_owned(),
        before: Some(address),
        after: Some(panto_core::store::checkpoint_address(path.as_bytes())),
        restore: false,
    };
    if let Err(e) = store.record_checkpoint(id, &record).await {
        panic!("{case}: record_checkpoint of {path} failed: {e}");
    }
    (record, before.to_vec())
}

fn restore_of() -> CheckpointRecord {
    CheckpointRecord {
        path: "/x".to_owned(),
        before: None,
        after: None,
        restore: true,
    }
}
