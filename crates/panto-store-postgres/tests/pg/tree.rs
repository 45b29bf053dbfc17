//! The session tree in PostgreSQL beyond the contract: sessions written at schema version 1 load,
//! grow, switch and fork after the upgrade; checkpoints are stored once however many sessions
//! keep them, read only by those sessions, and checked against their address; a branch switch is
//! a write like an append, refused to a second writer.

use panto_core::store::CheckpointRecord;
use panto_core::{ContentBlock, Error, Message, Role, SessionStore};
use panto_store_postgres::{PostgresStore, SCHEMA_VERSION};
use panto_testkit::postgres::{connect, server};
use panto_testkit::store_contract::{append_one, reply, user, Driver};

use super::common::{as_dyn, fresh_store, texts};

/// A database at schema version 1, exactly as a panto of that version left it, holding one
/// session of three messages (ids "e0", "e1", "e2") written as that version wrote them.
async fn version_1_database(id: &str) -> String {
    let url = server().create_database().await;
    let client = connect(&url).await;
    client
        .batch_execute(
            "create schema panto;
             create table panto.schema_migrations (
                 version    integer primary key,
                 name       text not null,
                 applied_at timestamptz not null default now()
             );",
        )
        .await
        .unwrap();
    client
        .batch_execute(include_str!("../../migrations/0001_initial.sql"))
        .await
        .unwrap();
    client
        .execute(
            "insert into panto.schema_migrations (version, name) values (1, 'initial')",
            &[],
        )
        .await
        .unwrap();
    client
        .execute(
            "insert into panto.sessions (id, created, modified, last_prompt_at, message_count, last_user_message, \
             metadata) values ($1, now() - interval '1 hour', now() - interval '1 hour', \
             now() - interval '1 hour', 3, 'second', '{\"v\":1}')",
            &[&id],
        )
        .await
        .unwrap();
    let messages = [
        Message::new(Role::User, vec![ContentBlock::text("first")]),
        Message::new(Role::Assistant, vec![ContentBlock::text("answer")]),
        Message::new(Role::User, vec![ContentBlock::text("second")]),
    ];
    for (seq, message) in messages.iter().enumerate() {
        let json = serde_json::to_string(message).unwrap();
        let parent = seq.checked_sub(1).map(|p| format!("e{p}"));
        client
            .execute(
                "insert into panto.entries (session_id, seq, id, parent_id, ts, role, message, tool_hashes) \
                 values ($1, $2, $3, $4, now() - interval '1 hour', $5, $6::text::jsonb, '{}')",
                &[
                    &id,
                    &(seq as i64),
                    &format!("e{seq}"),
                    &parent,
                    &if message.role == Role::User {
                        "user"
                    } else {
                        "assistant"
                    },
                    &json,
                ],
            )
            .await
            .unwrap();
    }
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_upgrades_and_its_sessions_load_grow_switch_and_fork() {
    let id = panto_core::store::new_session_id();
    let url = version_1_database(&id).await;
    let store = PostgresStore::connect(&url).await.unwrap();
    let versions: Vec<i32> = connect(&url)
        .await
        .query("select version from panto.schema_migrations order by version", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());

    // It loads as it did, with its entries and no origin.
    let branch = store.load_branch(&id).await.unwrap().unwrap();
    assert_eq!(texts(&store, &id).await, ["first", "answer", "second"]);
    let ids: Vec<&str> = branch.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e0", "e1", "e2"]);
    assert_eq!(branch.conversation.metadata.as_deref(), Some(r#"{"v":1}"#));
    assert_eq!(branch.forked_from, None);
    let info = store.info(&id).await.unwrap().unwrap();
    assert_eq!((info.message_count, info.forked_from), (3, None));

    // It grows after its newest entry.
    append_one(&*store, &id, &reply("third")).await.unwrap();
    let branch = store.load_branch(&id).await.unwrap().unwrap();
    assert_eq!(branch.entries[3].parent.as_deref(), Some("e2"));
    assert_eq!(texts(&store, &id).await, ["first", "answer", "second", "third"]);

    // It rewinds to its first answer, keeping the rest in its tree.
    store.switch_branch(&id, Some("e1")).await.unwrap();
    assert_eq!(texts(&store, &id).await, ["first", "answer"]);
    let info = store.info(&id).await.unwrap().unwrap();
    assert_eq!(info.message_count, 2);
    assert_eq!(info.last_user_message.as_deref(), Some("first"));
    let tree = store.tree(&id).await.unwrap().unwrap();
    assert_eq!(tree.entries.len(), 4);
    assert_eq!(tree.tip.as_deref(), Some("e1"));

    // And it forks from the abandoned branch.
    let fork = panto_core::store::new_session_id();
    store.fork(&id, "e2", &fork).await.unwrap();
    assert_eq!(texts(&store, &fork).await, ["first", "answer", "second"]);
    let origin = store.info(&fork).await.unwrap().unwrap().forked_from.unwrap();
    assert_eq!((origin.session.as_str(), origin.entry.as_str()), (id.as_str(), "e2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_are_stored_once_and_read_only_by_the_sessions_that_keep_them() {
    let (store, url) = fresh_store().await;
    let (a, b, c) = (
        panto_core::store::new_session_id(),
        panto_core::store::new_session_id(),
        panto_core::store::new_session_id(),
    );
    let content = b"fn main() {}\n".repeat(100);
    let address = store.put_checkpoint(&a, &content).await.unwrap();
    assert_eq!(store.put_checkpoint(&b, &content).await.unwrap(), address);
    let db = connect(&url).await;
    let blobs: i64 = db
        .query_one("select count(*) from panto.checkpoint_blobs", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(blobs, 1, "the same content is one row");
    assert_eq!(store.get_checkpoint(&b, &address).await.unwrap(), Some(content.clone()));
    // A session that never kept it does not read it, though the database holds it.
    assert_eq!(store.get_checkpoint(&c, &address).await.unwrap(), None);

    // A damaged row is reported, never handed out.
    db.execute(
        "update panto.checkpoint_blobs set content = 'x'::bytea where address = $1",
        &[&address],
    )
    .await
    .unwrap();
    match store.get_checkpoint(&a, &address).await {
        Err(Error::CorruptSession { location, message }) => {
            assert!(location.contains(&address), "{location}");
            assert!(message.contains("do not match its address"), "{message}");
        }
        other => panic!("a damaged checkpoint gave {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_or_a_record_from_a_second_writer_is_refused_and_changes_nothing() {
    let (first, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&first), None);
    let ids = d.append(vec![user("one"), reply("1"), user("two")]).await;
    let id = d.id();
    let second = PostgresStore::connect(&url).await.unwrap();
    match second.switch_branch(&id, Some(&ids[1])).await {
        Err(Error::SessionInUse { id: busy }) => assert_eq!(busy, id),
        other => panic!("a second writer's switch gave {other:?}"),
    }
    let record = CheckpointRecord {
        path: "/srv/a.txt".to_owned(),
        before: None,
        after: None,
        restore: false,
    };
    match second.record_checkpoint(&id, &record).await {
        Err(Error::SessionInUse { id: busy }) => assert_eq!(busy, id),
        other => panic!("a second writer's record gave {other:?}"),
    }
    assert_eq!(texts(&second, &id).await, ["one", "1", "two"]);
    assert_eq!(second.checkpoints(&id).await.unwrap(), []);
    // A relative path is refused by name before it reaches the database.
    let relative = CheckpointRecord {
        path: "a.txt".to_owned(),
        ..record
    };
    let refused = first.record_checkpoint(&id, &relative).await.unwrap_err().to_string();
    assert!(refused.contains("\"a.txt\" is not absolute"), "{refused}");
    // The first writer still writes.
    first.switch_branch(&id, Some(&ids[1])).await.unwrap();
    assert_eq!(texts(&second, &id).await, ["one", "1"]);
}
