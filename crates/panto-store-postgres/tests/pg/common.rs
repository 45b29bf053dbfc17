//! Helpers shared by the PostgreSQL store tests.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use panto_core::{SessionInfo, SessionStore};
use panto_store_postgres::PostgresStore;
use panto_testkit::postgres::server;

/// Makes the database refuse any entry whose first text block is `FAIL`, from inside the
/// append's transaction, after the rows before it in the batch were inserted.
pub const FAILING_TRIGGER: &str = r#"
create function test_refuse_fail() returns trigger language plpgsql as $$
begin
    if new.message #>> '{content,0,text}' = 'FAIL' then
        raise exception 'refused by the test trigger';
    end if;
    return new;
end $$;
create trigger test_refuse_fail before insert on panto.entries
    for each row execute function test_refuse_fail();
"#;

/// A store over a fresh, empty database, and the database's URL.
pub async fn fresh_store() -> (Arc<PostgresStore>, String) {
    let url = server().create_database().await;
    let store = PostgresStore::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    (store, url)
}

/// The store as the agent holds it.
pub fn as_dyn(store: &Arc<PostgresStore>) -> Arc<dyn SessionStore> {
    store.clone()
}

/// The texts of the loaded conversation of session `id`.
pub async fn texts(store: &PostgresStore, id: &str) -> Vec<String> {
    store
        .load(id)
        .await
        .unwrap_or_else(|e| panic!("load({id}): {e}"))
        .unwrap_or_else(|| panic!("load({id}) found no session"))
        .messages
        .iter()
        .map(|m| m.text())
        .collect()
}

/// `pg` is `fs` rounded up to PostgreSQL's microsecond.
pub fn same_time(pg: DateTime<Utc>, fs: DateTime<Utc>, what: &str) {
    let delta = (pg - fs).num_nanoseconds().unwrap_or(i64::MAX);
    assert!(
        (0..1_000).contains(&delta),
        "{what}: {pg} is not {fs} rounded up to the microsecond"
    );
}

/// The listing of an imported session is the file store's (its directory included), times
/// rounded up to PostgreSQL's microsecond.
pub fn same_info(pg: &SessionInfo, fs: &SessionInfo) {
    assert_eq!(
        (
            &pg.id,
            pg.message_count,
            &pg.last_user_message,
            &pg.wire,
            &pg.forked_from,
            &pg.cwd
        ),
        (
            &fs.id,
            fs.message_count,
            &fs.last_user_message,
            &fs.wire,
            &fs.forked_from,
            &fs.cwd
        )
    );
    same_time(pg.created, fs.created, "created");
    same_time(pg.modified, fs.modified, "modified");
    match (pg.last_prompt_at, fs.last_prompt_at) {
        (Some(p), Some(f)) => same_time(p, f, "last_prompt_at"),
        (p, f) => assert_eq!(p, f, "last_prompt_at"),
    }
}
