//! `list` (and `resolve` by id prefix) over directories of many sessions.
//!
//! Targets (issue 7): 1,000 sessions under 30 ms; 10,000 under 150 ms; 10,000 sessions of 1 MB
//! at most 1.5× as long as 10,000 of 1 KB. The 10 GB set (`cargo xtask bench-data --large`) is
//! measured only when it has been built.
//!
//! The page cache is warm: every iteration after the first reads files the kernel has cached.
//! With `PANTO_BENCH_COLD=1` (root only) each iteration first drops the page cache, which also
//! slows everything else on the machine while it runs.

#![allow(clippy::print_stderr)]

mod data;

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use panto_core::{Session, SessionStore};
use panto_store_fs::JsonlStore;
use panto_testkit::bench::Facts;
use tokio::runtime::Runtime;

fn cold() -> bool {
    std::env::var_os("PANTO_BENCH_COLD").is_some_and(|v| v == "1")
}

/// Writes dirty pages out and drops the page cache, so the next read comes from the disk.
fn drop_caches() {
    let synced = std::process::Command::new("sync").status().is_ok_and(|s| s.success());
    if !synced || std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_err() {
        panic!("PANTO_BENCH_COLD=1 needs root: cannot drop the page cache");
    }
}

/// Bytes in the directory's files.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut facts = Facts::new("list");
    let suffix = if cold() { "-cold" } else { "" };
    let mut sets = vec![data::SESSIONS_1K_1MB, data::SESSIONS_10K_1KB];
    if data::is_ready(&data::SESSIONS_10K_1MB) {
        sets.push(data::SESSIONS_10K_1MB);
    } else {
        eprintln!(
            "list: {} not built (cargo xtask bench-data --large); skipped",
            data::SESSIONS_10K_1MB.name
        );
    }

    let mut group = c.benchmark_group("list");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for spec in &sets {
        let dir = data::ensure(spec);
        let store = JsonlStore::new(&dir);
        let listed = rt
            .block_on(store.list_with_problems())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed.0.len(), spec.sessions, "{}: every session is listed", spec.name);
        assert!(listed.1.is_empty(), "{}: problems {:?}", spec.name, listed.1);
        let name = format!("{}{suffix}", spec.name);
        let id = format!("list/{name}");
        facts.add(&id, "sessions", spec.sessions);
        facts.add(&id, "bytes", dir_bytes(&dir));
        group.throughput(Throughput::Elements(spec.sessions as u64));
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if cold() {
                        drop_caches();
                    }
                    let start = Instant::now();
                    let infos = rt.block_on(store.list()).unwrap_or_else(|e| panic!("{e}"));
                    total += start.elapsed();
                    assert_eq!(infos.len(), spec.sessions);
                }
                total
            })
        });
    }
    group.finish();

    // Resume by id prefix: the file names are matched, and only the one session's header and
    // last line are read.
    let mut group = c.benchmark_group("resolve");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let spec = data::SESSIONS_1K_1MB;
    let store = JsonlStore::new(data::dir(&spec));
    let infos = rt.block_on(store.list()).unwrap_or_else(|e| panic!("{e}"));
    let target = &infos[infos.len() / 2].id;
    // The shortest prefix no other session shares.
    let prefix = (8..=target.len())
        .map(|n| &target[..n])
        .find(|p| infos.iter().filter(|i| i.id.starts_with(p)).count() == 1)
        .unwrap_or(target.as_str())
        .to_owned();
    let name = format!("prefix-{}{suffix}", spec.name);
    facts.add(&format!("resolve/{name}"), "sessions", spec.sessions);
    group.bench_function(&name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if cold() {
                    drop_caches();
                }
                let start = Instant::now();
                let found = rt
                    .block_on(Session::resolve(store.clone(), &prefix))
                    .unwrap_or_else(|e| panic!("{e}"));
                total += start.elapsed();
                assert!(found.is_some_and(|s| s.id() == target.as_str()));
            }
            total
        })
    });
    group.finish();
    facts.save();
}

criterion_group!(benches, bench);
criterion_main!(benches);
