//! `append` of one turn to a session file, with and without fsync.
//!
//! Targets (issue 7): with fsync, p99 under 20 ms on this disk; without fsync, under 50 µs.
//!
//! A turn is what one agent turn writes: a prompt, an assistant message with thinking, text and
//! a tool call, a tool result of 4–70 KB, and the final answer (about 28 KB on average). It is
//! appended as one batch, so one `write` and (with fsync) one `fdatasync`. A text turn is the
//! prompt and the answer alone. Every append is also timed on its own, so the percentiles cover
//! every call criterion made (warm-up included), not just sample means. A last pair measures one
//! assistant message per append, which is how the agent writes during a turn.

#![allow(clippy::print_stderr)]

mod data;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use data::content::{self, Corpus, Rng};
use panto_core::store::PersistentMessage;
use panto_core::{Conversation, Message, Session};
use panto_store_fs::{Durability, JsonlStore};
use panto_testkit::bench::Facts;
use tokio::runtime::Runtime;

/// Pre-built turns to cycle through, so that generating content is never timed.
const POOL: usize = 32;

fn turns(corpus: &Corpus, rng: &mut Rng) -> Vec<Vec<Message>> {
    (0..POOL)
        .map(|i| {
            let call = content::tool_call(corpus, rng, i);
            let size = rng.log_uniform(4 * 1024, 70 * 1024);
            vec![
                content::prompt(corpus, rng, 600),
                call.clone(),
                content::tool_result(corpus, rng, &call, size),
                content::answer(corpus, rng, 1500),
            ]
        })
        .collect()
}

/// Appends `batch` as the agent hands messages to a store.
async fn append(session: &mut Session, conversation: &Conversation, batch: &[Message]) {
    let entries: Vec<PersistentMessage<'_>> = batch
        .iter()
        .map(|m| PersistentMessage {
            message: m,
            usage: m.usage,
            wire: None,
            conversation,
            tools_available: &[],
            compaction: None,
        })
        .collect();
    if let Err(e) = session.append(&entries).await {
        panic!("append failed: {e}");
    }
}

/// Nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Which messages of a pooled turn one append carries.
#[derive(Clone, Copy)]
enum Batch {
    /// The whole tool turn: prompt, tool call, tool result, answer.
    ToolTurn,
    /// A turn without tools: the prompt and the answer.
    TextTurn,
    /// One assistant message (the tool call), as the agent appends mid-turn.
    Message,
}

struct Case {
    name: &'static str,
    durability: Durability,
    batch: Batch,
    measurement: Duration,
}

fn bench(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng::new(7);
    let corpus = Corpus::new(&mut rng);
    let pool = turns(&corpus, &mut rng);
    let conversation = Conversation::with_metadata(r#"{"project":"bench"}"#);
    let scratch = data::root().join("scratch-append");
    let mut facts = Facts::new("append");

    let cases = [
        Case {
            name: "turn-fsync",
            durability: Durability::Fsync,
            batch: Batch::ToolTurn,
            measurement: Duration::from_secs(4),
        },
        Case {
            name: "turn-no-fsync",
            durability: Durability::None,
            batch: Batch::ToolTurn,
            measurement: Duration::from_secs(2),
        },
        Case {
            name: "text-turn-no-fsync",
            durability: Durability::None,
            batch: Batch::TextTurn,
            measurement: Duration::from_secs(2),
        },
        Case {
            name: "message-fsync",
            durability: Durability::Fsync,
            batch: Batch::Message,
            measurement: Duration::from_secs(3),
        },
        Case {
            name: "message-no-fsync",
            durability: Durability::None,
            batch: Batch::Message,
            measurement: Duration::from_secs(2),
        },
    ];

    let mut group = c.benchmark_group("append");
    group.sample_size(30).warm_up_time(Duration::from_millis(500));
    for case in &cases {
        let dir = scratch.join(case.name);
        let _ = std::fs::remove_dir_all(&dir);
        let store: Arc<JsonlStore> = JsonlStore::with_durability(&dir, case.durability);
        let mut session = Session::create(store.clone());
        let text_turns: Vec<Vec<Message>> = pool.iter().map(|t| vec![t[0].clone(), t[3].clone()]).collect();
        let batches: Vec<&[Message]> = pool
            .iter()
            .zip(&text_turns)
            .map(|(turn, text)| match case.batch {
                Batch::ToolTurn => &turn[..],
                Batch::TextTurn => &text[..],
                Batch::Message => &turn[1..2],
            })
            .collect();
        let batch_bytes: usize = batches
            .iter()
            .map(|b| serde_json::to_vec(b).map_or(0, |v| v.len()))
            .sum::<usize>()
            / batches.len();
        // The first append writes the header and opens the file; it is not a steady-state append.
        rt.block_on(append(&mut session, &conversation, batches[0]));
        let mut each: Vec<Duration> = Vec::new();
        let mut next = 0;
        group.measurement_time(case.measurement);
        group.throughput(Throughput::Bytes(batch_bytes as u64));
        group.bench_function(case.name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let batch = batches[next % batches.len()];
                    next += 1;
                    let start = Instant::now();
                    rt.block_on(append(&mut session, &conversation, batch));
                    let took = start.elapsed();
                    total += took;
                    each.push(took);
                }
                total
            })
        });
        each.sort();
        let id = format!("append/{}", case.name);
        facts.add(&id, "appends", each.len());
        facts.add(&id, "batch_bytes", batch_bytes);
        for (key, p) in [("p50_ns", 50.0), ("p99_ns", 99.0), ("max_ns", 100.0)] {
            facts.add(&id, key, percentile(&each, p).as_nanos());
        }
        eprintln!(
            "{id}: {} appends, p50 {:?}, p99 {:?}, max {:?}",
            each.len(),
            percentile(&each, 50.0),
            percentile(&each, 99.0),
            percentile(&each, 100.0)
        );
        drop(session);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
    group.finish();
    facts.save();
}

criterion_group!(benches, bench);
criterion_main!(benches);
