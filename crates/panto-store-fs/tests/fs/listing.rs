//! `list` over a large directory with bad files in it, and the bounded reads that make a listing
//! independent of how long each log is.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use panto_core::{ContentBlock, Error, Message, Role, Session};
use panto_testkit::store_contract::{reply, user, Driver};
use serde_json::json;

use super::common::{as_dyn, corrupt_parts, fast_store, session_file};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_sessions_list_in_order_and_bad_files_are_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut written = Vec::new();
    for i in 0..1_000 {
        // One store per session, as separate runs of the CLI would: each keeps its file open.
        let store = fast_store(dir.path());
        let mut d = Driver::new(&as_dyn(&store), None);
        d.append(vec![user(&format!("prompt {i}")), reply("ok")]).await;
        written.push(d.id());
    }

    // The bad files, each with why it must be reported.
    let bad = |name: &str| dir.path().join(name);
    let new_id = panto_core::store::new_session_id;
    let mut expected_problems: Vec<(PathBuf, &str)> = Vec::new();

    let garbage = bad(&format!("{}.jsonl", new_id()));
    std::fs::write(&garbage, b"\x00\x01\x02 not a header\n{\"type\":\"message\"}\n").unwrap();
    expected_problems.push((garbage, "invalid JSON"));

    // An empty file holds no session (a kill before the first write leaves one): neither
    // listed nor reported.
    std::fs::write(bad(&format!("{}.jsonl", new_id())), b"").unwrap();

    let torn_header = bad(&format!("{}.jsonl", new_id()));
    std::fs::write(&torn_header, br#"{"type":"session","version":1,"id":"#).unwrap();
    expected_problems.push((torn_header, "incomplete"));

    let not_a_header = bad(&format!("{}.jsonl", new_id()));
    std::fs::write(
        &not_a_header,
        format!("{}\n", json!({"type": "message", "id": "00000000"})),
    )
    .unwrap();
    expected_problems.push((not_a_header, "must be the session header"));

    let future_id = new_id();
    let future = bad(&format!("{future_id}.jsonl"));
    std::fs::write(
        &future,
        format!(
            "{}\n",
            json!({"type": "session", "version": 7, "id": future_id, "created": "2030-01-01T00:00:00Z"})
        ),
    )
    .unwrap();
    expected_problems.push((future, "version 7"));

    let badly_named = bad("notes.jsonl");
    std::fs::copy(dir.path().join(format!("{}.jsonl", written[0])), &badly_named).unwrap();
    expected_problems.push((badly_named, "not a session id"));

    // Not a session file at all: ignored.
    std::fs::write(bad("README.txt"), "hello").unwrap();

    // A good session whose file cannot be opened. As root (CI), permissions do not stop reads,
    // so there it lists as usual; otherwise it is a problem.
    let unreadable_id = new_id();
    let unreadable = bad(&format!("{unreadable_id}.jsonl"));
    let template = std::fs::read_to_string(dir.path().join(format!("{}.jsonl", written[0]))).unwrap();
    std::fs::write(&unreadable, template.replace(&written[0], &unreadable_id)).unwrap();
    std::fs::set_permissions(&unreadable, std::fs::Permissions::from_mode(0o000)).unwrap();
    let readable_anyway = std::fs::File::open(&unreadable).is_ok();
    if !readable_anyway {
        expected_problems.push((unreadable.clone(), "opening"));
    }
    expected_problems.sort();

    let store = fast_store(dir.path());
    let (good, problems) = store.list_with_problems().await.unwrap();
    let mut expected_good: Vec<String> = written.iter().rev().cloned().collect();
    if readable_anyway {
        // A copy of the first session, it has the same prompt time; the tie goes to the newer
        // id, which is the copy's.
        expected_good.insert(expected_good.len() - 1, unreadable_id.clone());
    }
    let good_ids: Vec<String> = good.iter().map(|i| i.id.clone()).collect();
    assert_eq!(good_ids.len(), expected_good.len());
    assert_eq!(
        good_ids, expected_good,
        "newest prompt first (ties broken by the newer id)"
    );
    assert!(good.iter().all(|i| i.message_count == 2));
    assert_eq!(good[0].last_user_message.as_deref(), Some("prompt 999"));

    let problem_paths: Vec<&PathBuf> = problems.iter().map(|(p, _)| p).collect();
    assert_eq!(
        problem_paths,
        expected_problems.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        "every bad file is reported, in path order"
    );
    for ((path, error), (_, why)) in problems.iter().zip(&expected_problems) {
        let shown = error.to_string();
        assert!(shown.contains(&path.display().to_string()), "{shown}");
        assert!(shown.contains(why), "{} should say {why:?}: {shown}", path.display());
    }

    // `list` is the good part; `latest` its first.
    let listed = as_dyn(&store).list().await.unwrap();
    assert_eq!(listed, good);
    assert_eq!(
        Session::latest(as_dyn(&store))
            .await
            .unwrap()
            .map(|s| s.id().to_owned()),
        Some(written[999].clone())
    );
    std::fs::set_permissions(&unreadable, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_first_message_and_many_entries_list_exactly_without_reading_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), None);
    // 24 MiB of tool output in the first message.
    let huge = "0123456789abcdef".repeat(24 * 1024 * 1024 / 16);
    d.append(vec![Message::new(Role::User, vec![ContentBlock::text(huge.clone())])])
        .await;
    for batch in 0..20 {
        let mut messages = Vec::new();
        for i in 0..50 {
            messages.push(user(&format!("prompt {batch}.{i}")));
            messages.push(reply("ok"));
        }
        d.append(messages).await;
    }
    let id = d.id();
    let path = session_file(&store, &id);

    let info = &store.list_with_problems().await.unwrap().0[0];
    assert_eq!(info.message_count, 1 + 20 * 100);
    assert_eq!(info.last_user_message.as_deref(), Some("prompt 19.49"));
    assert_eq!(info.wire, d.session.info.wire);

    // Overwrite the middle of the huge message (line 2) with bytes that are not JSON, keeping
    // every line end. A listing that read line 2 would now fail; it must not change at all.
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 4;
    assert!(bytes[middle..middle + 64].iter().all(|b| b.is_ascii_hexdigit()));
    bytes[middle..middle + 64].fill(b'"');
    std::fs::write(&path, &bytes).unwrap();
    let (good, problems) = fast_store(dir.path()).list_with_problems().await.unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        &good[0], info,
        "the listing must come from the header and the last line only"
    );

    // Loading reads everything, and says where the damage is.
    drop(d);
    let (location, _) = corrupt_parts(as_dyn(&fast_store(dir.path())).load(&id).await);
    assert_eq!(location, format!("{}:2", path.display()));
    // And `resolve`, which reads only the match's header and tail, still finds it.
    let found = Session::resolve(as_dyn(&store), &id[..20]).await.unwrap().unwrap();
    assert_eq!(found.info.message_count, 2001);
    assert!(matches!(found.load().await, Err(Error::CorruptSession { .. })));
}
