//! `search` over 100,000 sessions in PostgreSQL, a word said in one of them (issue 49): at most
//! 50 ms. The sessions (a prompt and an answer each, as the `store` bench's listing sessions
//! are generated, server-side) are inserted by one statement, then one session says the word.
//! Also prints the plan of the search's candidate query, which must use the trigram index.
//!
//! Run with `cargo bench -p panto-store-postgres --bench pg_search` (or `cargo xtask bench
//! --only pg_search`).

#![allow(clippy::print_stdout)]

use criterion::{criterion_group, criterion_main, Criterion};
use panto_core::store::SearchQuery;
use panto_core::SessionStore;
use panto_store_postgres::{search_sql, PostgresStore};
use panto_testkit::postgres::{connect, server_with, Durability};
use panto_testkit::store_contract::{append_one, user};

/// The word said once.
const WORD: &str = "quizzaciously";

/// `SESSIONS` sessions of two entries each (a prompt and an answer of ordinary words), in two
/// server-side statements.
const GENERATE: &str = "
insert into panto.sessions (id, created, modified, last_prompt_at, message_count, last_user_message, cwd)
select lpad(to_hex(g), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(g), 12, '0'),
       now() - g * interval '1 second', now(), now() - (g % 86400) * interval '1 second',
       2, 'prompt number ' || g, '/home/ada/src/app'
from generate_series(1, 100000) g;
insert into panto.entries (session_id, seq, id, parent_id, ts, role, message)
select lpad(to_hex(g), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(g), 12, '0'), k, lpad(to_hex(k + 1), 8, '0'),
       case when k = 0 then null else '00000001' end, now(), case when k = 0 then 'user' else 'assistant' end,
       jsonb_build_object('role', case when k = 0 then 'user' else 'assistant' end, 'content',
           jsonb_build_array(jsonb_build_object('type', 'text', 'text',
               case when k = 0 then 'how do I refactor the parser module in project ' || g
                    else 'read the file src/parser.rs, then split the tokenizer out; item ' || md5(g::text) end)))
from generate_series(1, 100000) g cross join generate_series(0, 1) k;
analyze panto.sessions;
analyze panto.entries;
";

fn searching(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let server = server_with(Durability::Fast);
    let url = rt.block_on(server.create_database());
    let store = rt.block_on(PostgresStore::connect(&url)).expect("connect");
    let query = SearchQuery::text(WORD);
    rt.block_on(async {
        let client = connect(&url).await;
        client.batch_execute(GENERATE).await.expect("generate sessions");
        let id = panto_core::store::new_session_id();
        append_one(&*store, &id, &user(&format!("was that answer {WORD} phrased?")))
            .await
            .expect("append");
        store.release(&id).await.expect("release");
        let (sql, pattern) = search_sql(&query);
        let plan = client
            .query(&format!("explain {sql}"), &[&pattern.expect("a pattern")])
            .await
            .expect("explain");
        println!("the search's candidates are planned as:");
        for row in plan {
            println!("  {}", row.get::<_, String>(0));
        }
    });
    assert_eq!(rt.block_on(store.search(&query)).expect("search").len(), 1);

    let mut group = c.benchmark_group("sessions");
    group.sample_size(50);
    group.bench_function("search/100k", |b| {
        b.to_async(&rt).iter(|| async {
            let hits = store.search(&query).await.expect("search");
            assert_eq!(hits.len(), 1);
        })
    });
    group.finish();
}

criterion_group!(benches, searching);
criterion_main!(benches);
