//! Loading a 128 MB session of 10,000 entries: with its last compaction near the end, and
//! never compacted.
//!
//! Targets (issue 7): the compacted session loads in under 300 ms with peak RSS under the file
//! size; the never-compacted one (whose whole history is the conversation) in under 1 s.
//!
//! Peak RSS is measured in a fresh child process (this binary, re-run with
//! `PANTO_BENCH_RSS_CHILD`) that does one load and reports its `VmHWM` from `/proc/self/status`:
//! the whole process's peak, its own baseline included, untouched by whatever the bench did
//! before. Also measured: the first append after a resume, which opens the file for writing and
//! so reads it once more (on a copy, so the data set is not changed).

#![allow(clippy::print_stderr)]

mod data;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use panto_core::store::PersistentMessage;
use panto_core::{Conversation, Message, SessionStore};
use panto_store_fs::{Durability, JsonlStore};
use panto_testkit::bench::Facts;
use tokio::runtime::Runtime;

/// A field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The environment variable that turns this binary into the RSS probe: `load:<dir>:<id>` or
/// `reopen:<dir>:<id>`.
const CHILD: &str = "PANTO_BENCH_RSS_CHILD";

/// Runs one operation in a fresh process and returns its peak RSS.
fn peak_rss_in_child(op: &str, dir: &Path, id: &str) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .env(CHILD, format!("{op}:{}:{id}", dir.display()))
        .output()
        .ok()?;
    if !out.status.success() {
        panic!("the RSS probe failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_bytes ")?.trim().parse().ok())
}

/// The child side of [`peak_rss_in_child`].
#[allow(clippy::print_stdout)]
fn rss_child(spec: &str) {
    let mut parts = spec.splitn(3, ':');
    let (Some(op), Some(dir), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{CHILD}={spec:?}: expected op:dir:id");
    };
    let rt: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = Path::new(dir);
    match op {
        "load" => {
            let conversation = load(&rt, &JsonlStore::new(dir), id);
            assert!(!conversation.messages.is_empty());
        }
        "reopen" => {
            let message = Message::new(panto_core::Role::User, vec![panto_core::ContentBlock::text("go on")]);
            reopen_append(&rt, dir, id, &message);
        }
        other => panic!("unknown probe {other:?}"),
    }
    let peak = status_bytes("VmHWM:").unwrap_or_else(|| panic!("no VmHWM in /proc/self/status"));
    println!("peak_rss_bytes {peak}");
}

/// The only session id in `dir`.
fn only_session(dir: &Path) -> String {
    let entries: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".jsonl").map(str::to_owned)
        })
        .collect();
    assert_eq!(entries.len(), 1, "{} holds one session", dir.display());
    entries[0].clone()
}

fn load(rt: &Runtime, store: &JsonlStore, id: &str) -> Conversation {
    rt.block_on(store.load(id))
        .unwrap_or_else(|e| panic!("load failed: {e}"))
        .unwrap_or_else(|| panic!("session {id} not found"))
}

/// A resumed session's first append: a fresh store (so the file is opened for writing) and one
/// message.
fn reopen_append(rt: &Runtime, dir: &Path, id: &str, message: &Message) {
    let store: Arc<JsonlStore> = JsonlStore::with_durability(dir, Durability::None);
    let conversation = Conversation::new();
    let entry = PersistentMessage {
        message,
        usage: None,
        wire: None,
        conversation: &conversation,
        tools_available: &[],
        compaction: None,
    };
    rt.block_on(store.append(id, &[entry]))
        .unwrap_or_else(|e| panic!("append after resume failed: {e}"));
}

fn bench(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut facts = Facts::new("load");
    let sets = [data::SESSION_128MB_COMPACTED, data::SESSION_128MB_FULL];
    let dirs: Vec<_> = sets.iter().map(data::ensure).collect();

    let mut group = c.benchmark_group("load");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    for (spec, dir) in sets.iter().zip(&dirs) {
        let id = only_session(dir);
        let path = dir.join(format!("{id}.jsonl"));
        let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let store = JsonlStore::new(dir);
        let conversation = load(&rt, &store, &id);
        let bench_id = format!("load/{}", spec.name);
        facts.add(&bench_id, "file_bytes", file_bytes);
        facts.add(&bench_id, "entries", spec.entries.unwrap_or(0));
        facts.add(&bench_id, "messages_loaded", conversation.messages.len());
        let peak = peak_rss_in_child("load", dir, &id);
        if let Some(peak) = peak {
            facts.add(&bench_id, "peak_rss_bytes", peak);
        }
        eprintln!(
            "{bench_id}: {file_bytes} bytes, {} messages loaded, peak RSS of a process loading it: {}",
            conversation.messages.len(),
            peak.map_or("unknown".to_owned(), |p| format!("{:.1} MB", p as f64 / 1e6))
        );
        drop(conversation);
        group.throughput(Throughput::Bytes(file_bytes));
        group.bench_function(spec.name, |b| b.iter(|| load(&rt, &store, &id)));

        // The first append after resume, on a copy of the file.
        let scratch = data::root().join(format!("scratch-{}", spec.name));
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(&path, scratch.join(format!("{id}.jsonl"))).unwrap_or_else(|e| panic!("{e}"));
        let message = Message::new(panto_core::Role::User, vec![panto_core::ContentBlock::text("go on")]);
        let peak = peak_rss_in_child("reopen", &scratch, &id);
        let reopen_id = format!("load/{}-reopen-append", spec.name);
        facts.add(&reopen_id, "file_bytes", file_bytes);
        if let Some(peak) = peak {
            facts.add(&reopen_id, "peak_rss_bytes", peak);
        }
        group.bench_function(format!("{}-reopen-append", spec.name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    reopen_append(&rt, &scratch, &id, &message);
                    total += start.elapsed();
                }
                total
            })
        });
        let _ = std::fs::remove_dir_all(&scratch);
    }
    group.finish();
    facts.save();
}

criterion_group!(benches, bench);

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        rss_child(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
