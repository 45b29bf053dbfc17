//! One writer per session: a second store gets `SessionInUse` until the first releases the
//! session or is dropped; a store that lost its lock cannot interleave with the new writer.
//! Readers never lock.

use std::time::{Duration, Instant};

use panto_core::{Error, SessionStore};
use panto_store_postgres::PostgresStore;
use panto_testkit::store_contract::{append_one, reply, user, Driver};

use super::common::{as_dyn, fresh_store, texts};
use panto_testkit::postgres::connect;

fn in_use(result: panto_core::Result<()>, id: &str) {
    match result {
        Err(Error::SessionInUse { id: busy }) => assert_eq!(busy, id),
        other => panic!("expected SessionInUse for {id}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_store_gets_session_in_use_until_the_first_releases_it() {
    let (first, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&first), None);
    d.append(vec![user("mine")]).await;
    let id = d.id();

    let second = PostgresStore::connect(&url).await.unwrap();
    in_use(append_one(&*second, &id, &user("theirs")).await, &id);
    // Readers do not lock: the second store still lists and loads the session.
    assert_eq!(second.list().await.unwrap()[0].id, id);
    assert_eq!(texts(&second, &id).await, ["mine"]);
    // The first store keeps writing, and still holds the session afterwards.
    d.append(vec![reply("still mine")]).await;
    in_use(append_one(&*second, &id, &user("theirs")).await, &id);

    first.release(&id).await.unwrap();
    append_one(&*second, &id, &user("mine now")).await.unwrap();
    assert_eq!(texts(&first, &id).await, ["mine", "still mine", "mine now"]);
    // Now the first store is the one shut out.
    in_use(append_one(&*first, &id, &user("again")).await, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_store_releases_its_sessions() {
    let (first, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&first), None);
    d.append(vec![user("mine")]).await;
    let id = d.id();
    let second = PostgresStore::connect(&url).await.unwrap();
    in_use(append_one(&*second, &id, &user("theirs")).await, &id);

    drop(d);
    drop(first);
    // The server releases the locks when it sees the connection close, a moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match append_one(&*second, &id, &user("mine now")).await {
            Ok(()) => break,
            Err(Error::SessionInUse { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            other => panic!("the session was not released after the store was dropped: {other:?}"),
        }
    }
    assert_eq!(texts(&second, &id).await, ["mine", "mine now"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_all_lets_every_session_go_and_the_store_can_write_again() {
    let (first, url) = fresh_store().await;
    let mut a = Driver::new(&as_dyn(&first), None);
    let mut b = Driver::new(&as_dyn(&first), None);
    a.append(vec![user("a")]).await;
    b.append(vec![user("b")]).await;
    let second = PostgresStore::connect(&url).await.unwrap();
    in_use(append_one(&*second, &a.id(), &user("x")).await, &a.id());

    first.release_all().await;
    append_one(&*second, &a.id(), &user("a by second")).await.unwrap();
    append_one(&*second, &b.id(), &user("b by second")).await.unwrap();
    second.release_all().await;
    // The first store takes its sessions back on its next append, and sees what was written
    // meanwhile.
    a.append(vec![user("a by first again")]).await;
    assert_eq!(texts(&first, &a.id()).await, ["a", "a by second", "a by first again"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_lock_connection_died_takes_the_lock_again_or_is_refused() {
    let (first, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&first), None);
    d.append(vec![user("one")]).await;
    let id = d.id();
    let admin = connect(&url).await;
    let kill = |pid: i32| {
        let admin = &admin;
        async move {
            admin.execute("select pg_terminate_backend($1)", &[&pid]).await.unwrap();
        }
    };

    // The lock connection dies: the server releases the lock. Nobody else wants the session,
    // so the store takes the lock again on its next append and goes on.
    let pid = first.lock_backend_pid().await.unwrap().expect("a lock connection");
    kill(pid).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    d.append(vec![reply("two")]).await;
    assert_eq!(texts(&first, &id).await, ["one", "two"]);

    // It dies again, and this time another store takes the session first: the first store is
    // refused rather than writing beside it.
    let pid = first.lock_backend_pid().await.unwrap().expect("a lock connection");
    kill(pid).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = PostgresStore::connect(&url).await.unwrap();
    append_one(&*second, &id, &user("three, by the second store"))
        .await
        .unwrap();
    in_use(append_one(&*first, &id, &user("four?")).await, &id);
    assert_eq!(texts(&second, &id).await, ["one", "two", "three, by the second store"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_was_fenced_out_fails_in_use_instead_of_interleaving() {
    let (store, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("one")]).await;
    let id = d.id();
    // Another writer claims the session (as one does after taking the lock this store lost,
    // in the moment before this store notices).
    let admin = connect(&url).await;
    admin
        .execute(
            "update panto.sessions set writer = 'another-store' where id = $1",
            &[&id],
        )
        .await
        .unwrap();
    in_use(append_one(&*store, &id, &user("two?")).await, &id);
    assert_eq!(texts(&store, &id).await, ["one"], "the fenced batch must not be stored");
    let count: i64 = admin
        .query_one("select count(*) from panto.entries where session_id = $1", &[&id])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_deleted_while_open_is_not_found_then_starts_again() {
    let (store, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("one")]).await;
    let id = d.id();
    let admin = connect(&url).await;
    admin
        .execute("delete from panto.sessions where id = $1", &[&id])
        .await
        .unwrap();
    match append_one(&*store, &id, &user("two")).await {
        Err(Error::SessionNotFound(missing)) => assert_eq!(missing, id),
        other => panic!("expected SessionNotFound, got {other:?}"),
    }
    // As with the file store, the append after that starts the session anew.
    append_one(&*store, &id, &user("three")).await.unwrap();
    assert_eq!(texts(&store, &id).await, ["three"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_from_many_tasks_of_one_store_are_serialised() {
    let (store, _) = fresh_store().await;
    let id = panto_core::store::new_session_id();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move { append_one(&*store, &id, &user(&format!("m{i}"))).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let history = store.history(&id).await.unwrap().unwrap();
    assert_eq!(history.len(), 16);
    for (i, e) in history.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
        let parent = i.checked_sub(1).map(|p| history[p].id.clone());
        assert_eq!(e.parent_id, parent, "entry {i} must follow the one before it");
    }
    let mut got = texts(&store, &id).await;
    got.sort();
    let mut want: Vec<String> = (0..16).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(store.list().await.unwrap()[0].message_count, 16);
}

/// Whether any connection holds the advisory lock of session `id`.
async fn lock_held(url: &str, id: &str) -> bool {
    let key = panto_store_postgres::session_lock_key(id);
    let (classid, objid) = ((key >> 32) as u32 as i64, key as u32 as i64);
    let row = connect(url)
        .await
        .query_one(
            "select count(*) from pg_locks where locktype = 'advisory' and classid::bigint = $1 and objid::bigint = $2",
            &[&classid, &objid],
        )
        .await
        .unwrap();
    row.get::<_, i64>(0) > 0
}

/// Dropping the agent that writes a session releases the session's advisory lock (the release
/// runs on a task, so the test waits for it, up to a bound), and a new agent on another store
/// (another instance of a service) resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_agent_releases_the_session_lock() {
    use panto_core::{Agent, ApiStyle, Config, ProviderConfig, Session};
    use panto_testkit::{script, MockServer, Reply};

    let (first, url) = fresh_store().await;
    let server = MockServer::start().await;
    let config = Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_base_url(server.anthropic_base_url())
            .with_api_key("key"),
    );
    let mut agent = Agent::new(config.clone(), Session::create(as_dyn(&first)), None).unwrap();
    server.push(Reply::sse(script::anthropic_text("first answer")));
    {
        let mut stream = agent.run("first".into());
        while stream.next().await.unwrap().is_some() {}
    }
    let id = agent.session_id().to_owned();
    assert!(lock_held(&url, &id).await);
    let second = PostgresStore::connect(&url).await.unwrap();
    in_use(append_one(&*second, &id, &user("too early")).await, &id);

    drop(agent);
    let deadline = Instant::now() + Duration::from_secs(10);
    while lock_held(&url, &id).await {
        assert!(
            Instant::now() < deadline,
            "the dropped agent's lock on {id} is still held"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(format!("{first:?}").contains("open_for_writing: 0"), "{first:?}");

    let session = Session::resolve(as_dyn(&second), &id)
        .await
        .unwrap()
        .expect("the session");
    let mut resumed = Agent::resume(config, session).await.unwrap();
    server.push(Reply::sse(script::anthropic_text("second answer")));
    {
        let mut stream = resumed.run("second".into());
        while stream.next().await.unwrap().is_some() {}
    }
    assert_eq!(
        texts(&second, &id).await,
        ["first", "first answer", "second", "second answer"]
    );
}

/// `claim` takes a session's lock before any append (a service does so when it makes a session
/// live): another store is refused, and the claiming store's appends continue the session from
/// what its last writer stored, or start it when nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_session_is_refused_to_others_and_continues_from_what_is_stored() {
    let (first, url) = fresh_store().await;
    let second = PostgresStore::connect(&url).await.unwrap();
    let mut d = Driver::new(&as_dyn(&first), None);
    d.append(vec![user("one"), reply("two")]).await;
    let id = d.id();
    first.release(&id).await.unwrap();

    second.claim(&id).await.unwrap();
    assert!(lock_held(&url, &id).await);
    in_use(append_one(&*first, &id, &user("not yours")).await, &id);
    append_one(&*second, &id, &user("three")).await.unwrap();
    assert_eq!(texts(&second, &id).await, ["one", "two", "three"]);
    let history = second.history(&id).await.unwrap().unwrap();
    assert_eq!(
        history[2].parent_id.as_deref(),
        Some(history[1].id.as_str()),
        "the claiming store's first entry follows the stored ones"
    );

    let new_id = panto_core::store::new_session_id();
    second.claim(&new_id).await.unwrap();
    in_use(append_one(&*first, &new_id, &user("mine?")).await, &new_id);
    append_one(&*second, &new_id, &user("started")).await.unwrap();
    assert_eq!(texts(&first, &new_id).await, ["started"]);
}
