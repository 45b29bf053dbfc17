//! Benchmarks of the PostgreSQL store against a throwaway local server (started by the
//! benchmark, as the tests start theirs):
//!
//! - `append/8_writers`: appends per second with 8 writers on distinct sessions, each with its
//!   own store (its own connections and lock), as 8 worker processes would have. One append is
//!   one batch of one message, one transaction.
//! - `list/100k`, `latest/100k`, `resolve_prefix/100k`: over 100,000 sessions generated
//!   server-side.
//! - `load/100_messages`: a session of 100 messages loaded (what resuming it reads), and
//!   `claim_and_load/100_messages`: taken by another store and loaded, as a service instance
//!   takes a session it has not served before (released after each).
//!
//! The server runs with PostgreSQL's default durability (every commit flushed to disk); set
//! `PANTO_BENCH_PG_DURABILITY=fast` to run it with fsync off instead.
//!
//! Run with `cargo bench -p panto-store-postgres`; the numbers are recorded in docs/stores.md.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use panto_core::{Session, SessionStore};
use panto_store_postgres::PostgresStore;
use panto_testkit::postgres::{connect, server_with, Durability};
use panto_testkit::store_contract::{append_one, reply, user};

const WRITERS: usize = 8;
const SESSIONS: i64 = 100_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

fn durability() -> Durability {
    match std::env::var("PANTO_BENCH_PG_DURABILITY").as_deref() {
        Ok("fast") => Durability::Fast,
        _ => Durability::Fsync,
    }
}

fn appends(c: &mut Criterion) {
    let rt = runtime();
    let server = server_with(durability());
    let url = rt.block_on(server.create_database());
    let stores: Vec<Arc<PostgresStore>> = rt.block_on(async {
        let mut stores = Vec::new();
        for _ in 0..WRITERS {
            stores.push(PostgresStore::connect(&url).await.expect("connect"));
        }
        stores
    });
    let ids: Vec<String> = (0..WRITERS).map(|_| panto_core::store::new_session_id()).collect();

    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(WRITERS as u64));
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("8_writers", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let stores = stores.clone();
            let ids = ids.clone();
            async move {
                let started = Instant::now();
                let writers: Vec<_> = stores
                    .into_iter()
                    .zip(ids)
                    .map(|(store, id)| {
                        tokio::spawn(async move {
                            let (prompt, answer) = (user("what changed?"), reply("three files"));
                            for i in 0..iters {
                                let message = if i % 2 == 0 { &prompt } else { &answer };
                                append_one(&*store, &id, message).await.expect("append");
                            }
                        })
                    })
                    .collect();
                for w in writers {
                    w.await.expect("a writer");
                }
                started.elapsed()
            }
        });
    });
    group.finish();
}

/// Fills the sessions table with `SESSIONS` rows in one server-side statement: a third never
/// prompted, the rest with prompt times spread over a day.
const GENERATE: &str = "insert into panto.sessions (id, created, modified, last_prompt_at, message_count, \
     last_user_message, wire_api_style, wire_base_url, wire_model, wire_reasoning) \
     select lpad(to_hex(g), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(g), 12, '0'), \
            now() - g * interval '1 second', now(), \
            case when g % 3 = 0 then null else now() - (g % 86400) * interval '1 second' end, \
            12, 'prompt number ' || g, 'anthropic-messages', 'https://api.anthropic.com', \
            'claude-sonnet-4-5', 'medium' \
     from generate_series(1, $1::bigint) g";

fn listing(c: &mut Criterion) {
    let rt = runtime();
    let server = server_with(durability());
    let url = rt.block_on(server.create_database());
    let store = rt.block_on(PostgresStore::connect(&url)).expect("connect");
    rt.block_on(async {
        let client = connect(&url).await;
        client.execute(GENERATE, &[&SESSIONS]).await.expect("generate sessions");
        client.batch_execute("analyze panto.sessions").await.expect("analyze");
        // Show how `latest` is planned: it must be one probe of the recency index.
        let plan = client
            .query(
                "explain select id from panto.sessions \
                 order by coalesce(last_prompt_at, created) desc, id desc limit 1",
                &[],
            )
            .await
            .expect("explain");
        println!("latest is planned as:");
        for row in plan {
            println!("  {}", row.get::<_, String>(0));
        }
    });
    assert_eq!(rt.block_on(store.list()).expect("list").len() as i64, SESSIONS);

    let mut group = c.benchmark_group("sessions");
    group.sample_size(10);
    group.bench_function("list/100k", |b| {
        b.to_async(&rt).iter(|| async { store.list().await.expect("list") })
    });
    group.sample_size(100);
    group.bench_function("latest/100k", |b| {
        b.to_async(&rt)
            .iter(|| async { Session::latest(store.clone()).await.expect("latest") })
    });
    group.bench_function("resolve_prefix/100k", |b| {
        b.to_async(&rt)
            .iter(|| async { Session::resolve(store.clone(), "0000beef").await.expect("resolve") })
    });
    group.finish();
}

fn loading(c: &mut Criterion) {
    let rt = runtime();
    let server = server_with(durability());
    let url = rt.block_on(server.create_database());
    let store = rt.block_on(PostgresStore::connect(&url)).expect("connect");
    let id = panto_core::store::new_session_id();
    rt.block_on(async {
        for i in 0..50 {
            append_one(&*store, &id, &user(&format!("question {i}")))
                .await
                .expect("append");
            append_one(&*store, &id, &reply(&format!("answer {i}")))
                .await
                .expect("append");
        }
        store.release(&id).await.expect("release");
    });
    let other = rt.block_on(PostgresStore::connect(&url)).expect("connect");

    let mut group = c.benchmark_group("sessions");
    group.bench_function("load/100_messages", |b| {
        b.to_async(&rt).iter(|| async {
            let loaded = store.load_branch(&id).await.expect("load").expect("the session");
            assert_eq!(loaded.conversation.messages.len(), 100);
        })
    });
    group.bench_function("claim_and_load/100_messages", |b| {
        b.to_async(&rt).iter(|| async {
            other.claim(&id).await.expect("claim");
            let loaded = other.load_branch(&id).await.expect("load").expect("the session");
            assert_eq!(loaded.conversation.messages.len(), 100);
            other.release(&id).await.expect("release");
        })
    });
    group.finish();
}

criterion_group!(benches, appends, listing, loading);
criterion_main!(benches);
