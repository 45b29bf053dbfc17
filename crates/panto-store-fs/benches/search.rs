//! `search` over 1,000 sessions of 1 MB, a word said in one of them (issue 49).
//!
//! Targets: at most 1.5 s with a cold page cache, 0.5 s warm. The set is `sessions-1k-1mb`
//! with one session changed: `sessions-1k-1mb-search/` holds a hard link to every file of it
//! but one, and a copy of that one with a prompt saying the word appended through the store, so
//! the variant costs one megabyte of disk and the shared set is never touched.
//!
//! The page cache is warm unless `PANTO_BENCH_COLD=1` (root only): each iteration then first
//! drops the page cache, which also slows everything else on the machine while it runs.

#![allow(clippy::print_stderr)]

mod data;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use panto_core::store::{PersistentMessage, SearchQuery};
use panto_core::{Conversation, Message, Session, SessionStore};
use panto_store_fs::{Durability, JsonlStore};
use panto_testkit::bench::Facts;

/// The word said once, in one session of the set.
const WORD: &str = "quizzaciously";

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

/// The variant of `sessions-1k-1mb` with the word in one session (see the module
/// documentation), built if it is not there or the set it links to was rebuilt.
fn variant(rt: &tokio::runtime::Runtime) -> PathBuf {
    let spec = data::SESSIONS_1K_1MB;
    let source = data::ensure(&spec);
    let dir = data::root().join(format!("{}-search", spec.name));
    let marker = data::root().join(format!("{}-search.ready", spec.name));
    let source_marker = std::fs::read_to_string(data::root().join(format!("{}.ready", spec.name)))
        .unwrap_or_else(|e| panic!("reading the marker of {}: {e}", spec.name));
    let wanted = format!("{WORD}\n{source_marker}");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return dir;
    }
    let _ = std::fs::remove_file(&marker);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("removing {}: {e}", dir.display()));
    }
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&source)
        .unwrap_or_else(|e| panic!("listing {}: {e}", source.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert_eq!(files.len(), spec.sessions, "{}: one file per session", spec.name);
    let chosen = files.len() / 2;
    for (i, file) in files.iter().enumerate() {
        let to = dir.join(file.file_name().unwrap_or_default());
        if i == chosen {
            std::fs::copy(file, &to).unwrap_or_else(|e| panic!("copying {}: {e}", file.display()));
        } else {
            std::fs::hard_link(file, &to).unwrap_or_else(|e| panic!("linking {}: {e}", file.display()));
        }
    }
    let id = files[chosen]
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    rt.block_on(plant(&dir, &id));
    std::fs::write(&marker, &wanted).unwrap_or_else(|e| panic!("writing {}: {e}", marker.display()));
    dir
}

/// Appends a prompt saying [`WORD`] to session `id` of the store over `dir`.
async fn plant(dir: &Path, id: &str) {
    let store = JsonlStore::with_durability(dir, Durability::None);
    let shared: std::sync::Arc<dyn SessionStore> = store.clone();
    let mut session = Session::resolve(shared, id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("session {id} is not in {}", dir.display()));
    let mut conversation = Conversation::new();
    conversation.add_user_message(format!("was that answer {WORD} phrased?"));
    let message: &Message = &conversation.messages[0];
    session
        .append(&[PersistentMessage::new(message, &conversation)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.release_all().await.unwrap_or_else(|e| panic!("{e}"));
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut facts = Facts::new("search");
    let suffix = if cold() { "-cold" } else { "" };
    let dir = variant(&rt);
    let store = JsonlStore::new(&dir);
    let query = SearchQuery::text(WORD);
    let name = format!("{}{suffix}", data::SESSIONS_1K_1MB.name);
    facts.add(&format!("search/{name}"), "sessions", data::SESSIONS_1K_1MB.sessions);

    let mut group = c.benchmark_group("search");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(if cold() { 20 } else { 5 }));
    group.throughput(Throughput::Elements(data::SESSIONS_1K_1MB.sessions as u64));
    group.bench_function(&name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if cold() {
                    drop_caches();
                }
                let start = Instant::now();
                let hits = rt.block_on(store.search(&query)).unwrap_or_else(|e| panic!("{e}"));
                total += start.elapsed();
                assert_eq!(hits.len(), 1, "the word is said once");
            }
            total
        })
    });
    group.finish();
    facts.save();
}

criterion_group!(benches, bench);
criterion_main!(benches);
