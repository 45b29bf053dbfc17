//! The schema: created on first connect, applied once however many processes connect at once,
//! refused when the database is newer than this panto, and kept apart from the application's
//! own tables.

use panto_core::{Error, SessionStore};
use panto_store_postgres::{PostgresStore, SCHEMA_VERSION};
use panto_testkit::store_contract::{append_one, user};

use panto_testkit::postgres::{connect, server};

async fn applied_versions(url: &str) -> Vec<i32> {
    connect(url)
        .await
        .query("select version from panto.schema_migrations order by version", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_again_applies_nothing_twice_and_keeps_the_data() {
    let url = server().create_database().await;
    let first = PostgresStore::connect(&url).await.unwrap();
    let id = panto_core::store::new_session_id();
    append_one(&*first, &id, &user("kept")).await.unwrap();
    assert_eq!(applied_versions(&url).await, (1..=SCHEMA_VERSION).collect::<Vec<_>>());

    let again = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(applied_versions(&url).await, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    assert_eq!(again.list().await.unwrap()[0].id, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_processes_connecting_at_once_to_a_new_database_all_succeed() {
    let url = server().create_database().await;
    let connects: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PostgresStore::connect(&url).await.map(|_| ()) })
        })
        .collect();
    for c in connects {
        c.await.unwrap().unwrap();
    }
    assert_eq!(applied_versions(&url).await, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_newer_than_this_panto_is_refused_with_both_versions() {
    let url = server().create_database().await;
    PostgresStore::connect(&url).await.unwrap();
    let newer = SCHEMA_VERSION + 1;
    connect(&url)
        .await
        .execute(
            "insert into panto.schema_migrations (version, name) values ($1, 'from the future')",
            &[&newer],
        )
        .await
        .unwrap();
    match PostgresStore::connect(&url).await {
        Err(e @ Error::Store { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains(&format!("version {newer}")) && message.contains(&format!("up to {SCHEMA_VERSION}")),
                "{message}"
            );
        }
        other => panic!("expected a store error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applications_own_sessions_table_is_left_alone() {
    let url = server().create_database().await;
    let app = connect(&url).await;
    app.batch_execute(
        "create table public.sessions (token text primary key, user_id int);
         insert into public.sessions values ('abc', 7);",
    )
    .await
    .unwrap();
    let store = PostgresStore::connect(&url).await.unwrap();
    append_one(&*store, &panto_core::store::new_session_id(), &user("hello"))
        .await
        .unwrap();
    let rows = app
        .query("select token, user_id from public.sessions", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].get::<_, String>(0), rows[0].get::<_, i32>(1)),
        ("abc".to_owned(), 7)
    );
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_bad_connection_string_or_an_unreachable_server_is_a_clear_error() {
    match PostgresStore::connect("postgres://u@127.0.0.1:notaport/db").await {
        Err(e) => assert!(
            e.to_string().contains("parsing the PostgreSQL connection string"),
            "{e}"
        ),
        Ok(s) => panic!("connected with a bad port: {s:?}"),
    }
    // A port nothing listens on: the error names where it tried.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    match PostgresStore::connect(&format!("postgres://u:secret@127.0.0.1:{port}/db")).await {
        Err(e) => {
            let message = e.to_string();
            assert!(
                message.contains(&format!("host=127.0.0.1 port={port} dbname=db user=u")),
                "{message}"
            );
            assert!(!message.contains("secret"), "the password must not appear: {message}");
        }
        Ok(s) => panic!("connected to a closed port: {s:?}"),
    }
}
